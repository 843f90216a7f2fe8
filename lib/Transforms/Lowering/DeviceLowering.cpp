//===- DeviceLowering.cpp - one device's program from @main ---------------===//

#include "parplan/Transforms/Lowering/DeviceLowering.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/SBP/SBPOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <numeric>

using namespace mlir;
using namespace parplan;

#include "parplan/Transforms/Lowering/PlanLoweringInterface.cpp.inc"

FlatSymbolRefAttr DeviceGroups::along(FlatSymbolRefAttr mesh,
                                      int64_t meshAxis) {
  std::string meshName = mesh ? mesh.getValue().str() : "";
  auto found = axisGroups.find({meshName, meshAxis});
  if (found != axisGroups.end())
    return found->second;
  std::string name = (mesh ? meshName + "_" : std::string()) + "axis" +
                     std::to_string(meshAxis);
  plan::GroupOp::create(builder, builder.getUnknownLoc(),
                        builder.getStringAttr(name), DenseI64ArrayAttr(),
                        builder.getDenseI64ArrayAttr({meshAxis}), mesh);
  auto ref = FlatSymbolRefAttr::get(builder.getContext(), name);
  axisGroups[{meshName, meshAxis}] = ref;
  return ref;
}

FlatSymbolRefAttr DeviceGroups::ofDevices(ArrayRef<int64_t> devices) {
  std::vector<int64_t> key(devices.begin(), devices.end());
  auto found = listedGroups.find(key);
  if (found != listedGroups.end())
    return found->second;
  std::string name = "devices" + std::to_string(listedGroups.size());
  plan::GroupOp::create(builder, builder.getUnknownLoc(),
                        builder.getStringAttr(name),
                        builder.getDenseI64ArrayAttr(devices),
                        DenseI64ArrayAttr(), FlatSymbolRefAttr());
  auto ref = FlatSymbolRefAttr::get(builder.getContext(), name);
  listedGroups[key] = ref;
  return ref;
}

NdSbp DeviceLowering::layoutOf(Value value) const {
  NdSbp replicated(meshShape.size(), Sbp::broadcast());
  auto result = dyn_cast<OpResult>(value);
  if (!result || !hasMesh)
    return replicated;
  Operation *producer = result.getOwner();
  if (auto boxing = dyn_cast<sbp::BoxingOp>(producer))
    return sbp::toNdSbp(boxing.getDst());
  if (auto move = dyn_cast<sbp::CrossMeshOp>(producer))
    return sbp::toNdSbp(move.getDst());
  if (std::optional<ReshardStep> step = sbp::getReshardStep(producer))
    return step->to;
  auto sharding =
      producer->getAttrOfType<sbp::ShardingAttr>(parplan::kShardingAttrName);
  if (!sharding)
    return replicated;
  return sharding.getResultSbp(result.getResultNumber());
}

NdSbp DeviceLowering::operandLayout(Operation *op, unsigned index) const {
  auto sharding =
      op->getAttrOfType<sbp::ShardingAttr>(parplan::kShardingAttrName);
  if (!sharding || !hasMesh)
    return NdSbp(meshShape.size(), Sbp::broadcast());
  return sharding.getOperandSbp(index);
}

std::vector<int64_t> DeviceLowering::shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return std::vector<int64_t>(tensor.getShape().begin(),
                              tensor.getShape().end());
}

std::vector<int64_t>
DeviceLowering::blockShape(const std::vector<int64_t> &shape,
                           const NdSbp &layout) {
  if (!hasEvenBlocks(shape, meshShape, layout, shares))
    uneven.emplace(shape, toSplits(layout));
  return localShape(shape, meshShape, layout, coordinate, shares);
}

MemRefType DeviceLowering::localType(Type type, const NdSbp &layout) {
  return MemRefType::get(blockShape(type, layout),
                         cast<RankedTensorType>(type).getElementType());
}

DenseI64ArrayAttr DeviceLowering::splitsOf(const NdSbp &layout) {
  return builder.getDenseI64ArrayAttr(toSplits(layout));
}

Attribute DeviceLowering::blockOffset(const std::vector<int64_t> &shape,
                                      const NdSbp &layout, int64_t dim) {
  return plan::BlockOffsetAttr::get(builder.getContext(),
                                    builder.getDenseI64ArrayAttr(shape),
                                    splitsOf(layout), dim);
}

plan::BufferOp DeviceLowering::makeBuffer(Location loc, MemRefType type,
                                          plan::BufferKind kind) {
  OperationState state(loc, plan::BufferOp::getOperationName());
  state.addTypes(type);
  auto buffer = cast<plan::BufferOp>(builder.create(state));
  if (kind != plan::BufferKind::temporary)
    buffer.setKind(kind);
  return buffer;
}

void DeviceLowering::describeBlock(plan::BufferOp buffer, StringRef name,
                                   Type type, const NdSbp &layout) {
  buffer.setNameAttr(builder.getStringAttr(name));
  buffer.setLogicalShapeAttr(builder.getDenseI64ArrayAttr(shapeOf(type)));
  buffer.setSplitsAttr(splitsOf(layout));
  named[name] = buffer.getResult();
}

Value DeviceLowering::kernel(Location loc, StringRef name, ValueRange ins,
                             MemRefType resultType, DictionaryAttr attrs) {
  Value out =
      makeBuffer(loc, resultType, plan::BufferKind::temporary).getResult();
  plan::KernelOp::create(builder, loc, builder.getStringAttr(name), ins,
                         ValueRange{out}, attrs);
  return out;
}

Value DeviceLowering::scalarConstant(Location loc, Type elementType,
                                     double value) {
  auto type = RankedTensorType::get({}, elementType);
  auto buffer = makeBuffer(loc, MemRefType::get({}, elementType),
                           plan::BufferKind::constant);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(builder.getFloatAttr(elementType, value))
                          : Attribute(builder.getIntegerAttr(
                                elementType, static_cast<int64_t>(value)));
  buffer.setValueAttr(DenseElementsAttr::get(type, element));
  return buffer.getResult();
}

Value DeviceLowering::firstAlongAxis(Location loc, Type elementType,
                                     int64_t meshAxis, bool scalar) {
  // One element per device, split along the axis: the first holds 1. On
  // an axis of uneven shares a split cuts by the weights, so the constant
  // has their sum (over their common divisor) of elements, each device's
  // block its weight of them, summed to one.
  bool weighted = hasUnevenShares(shares, static_cast<size_t>(meshAxis));
  int64_t n = meshShape[meshAxis];
  if (weighted) {
    const std::vector<int64_t> &weights = shares[static_cast<size_t>(meshAxis)];
    int64_t common = 0;
    for (int64_t weight : weights)
      common = std::gcd(common, weight);
    n = std::accumulate(weights.begin(), weights.end(), int64_t{0}) / common;
  }
  NdSbp layout(meshShape.size(), Sbp::broadcast());
  layout[meshAxis] = Sbp::split(0);
  auto logical = RankedTensorType::get({n}, elementType);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < n; ++i)
    values.push_back(
        isa<FloatType>(elementType)
            ? Attribute(builder.getFloatAttr(elementType, i == 0 ? 1.0 : 0.0))
            : Attribute(builder.getIntegerAttr(elementType, i == 0 ? 1 : 0)));
  auto buffer =
      makeBuffer(loc, localType(logical, layout), plan::BufferKind::constant);
  buffer.setLogicalShapeAttr(builder.getDenseI64ArrayAttr({n}));
  buffer.setSplitsAttr(splitsOf(layout));
  buffer.setValueAttr(DenseElementsAttr::get(logical, values));
  if (weighted)
    return kernel(
        loc, "reduce_sum", buffer.getResult(),
        MemRefType::get(scalar ? ArrayRef<int64_t>() : ArrayRef<int64_t>{1},
                        elementType),
        builder.getDictionaryAttr(
            {builder.getNamedAttr("axes", builder.getDenseI64ArrayAttr({})),
             builder.getNamedAttr("keepdims", builder.getBoolAttr(!scalar))}));
  if (!scalar)
    return buffer.getResult();
  return kernel(loc, "reshape", buffer.getResult(),
                MemRefType::get({}, elementType));
}
