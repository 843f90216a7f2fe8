//===- DeviceLowering.cpp - one device's program from @main ---------------===//

#include "parplan/Transforms/DeviceLowering.h"

#include "parplan/Dialect/SBP/SBPOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace parplan;

#include "parplan/Transforms/PlanLoweringInterface.cpp.inc"

FlatSymbolRefAttr DeviceGroups::along(int64_t meshAxis,
                                      const std::vector<int64_t> &coordinate) {
  std::vector<int64_t> key = coordinate;
  key[meshAxis] = -1;
  key.push_back(meshAxis);
  auto found = groups.find(key);
  if (found != groups.end())
    return found->second;
  SmallVector<int64_t> devices;
  std::vector<int64_t> member = coordinate;
  for (int64_t i = 0; i < meshShape[meshAxis]; ++i) {
    member[meshAxis] = i;
    devices.push_back(meshLinearIndex(meshShape, member));
  }
  std::string name = "axis" + std::to_string(meshAxis);
  for (size_t d = 0; d < coordinate.size(); ++d)
    if (static_cast<int64_t>(d) != meshAxis)
      name += "_" + std::to_string(coordinate[d]);
  plan::GroupOp::create(builder, builder.getUnknownLoc(),
                        builder.getStringAttr(name),
                        builder.getDenseI64ArrayAttr(devices));
  auto ref = FlatSymbolRefAttr::get(builder.getContext(), name);
  groups[key] = ref;
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
  if (std::optional<ReshardStep> step = sbp::getReshardStep(producer))
    return step->to;
  auto sharding = producer->getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
  if (!sharding)
    return replicated;
  return sharding.getResultSbp(result.getResultNumber());
}

NdSbp DeviceLowering::operandLayout(Operation *op, unsigned index) const {
  auto sharding = op->getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
  if (!sharding || !hasMesh)
    return NdSbp(meshShape.size(), Sbp::broadcast());
  return sharding.getOperandSbp(index);
}

std::vector<int64_t> DeviceLowering::shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return std::vector<int64_t>(tensor.getShape().begin(),
                              tensor.getShape().end());
}

Slice DeviceLowering::blockOf(Type type, const NdSbp &layout) const {
  return deviceSlice(shapeOf(type), meshShape, layout, coordinate);
}

MemRefType DeviceLowering::localType(Type type, const NdSbp &layout) const {
  return MemRefType::get(blockOf(type, layout).sizes,
                         cast<RankedTensorType>(type).getElementType());
}

plan::BufferOp DeviceLowering::makeBuffer(Location loc, MemRefType type,
                                          plan::BufferKind kind) {
  OperationState state(loc, plan::BufferOp::getOperationName());
  state.addTypes(type);
  auto buffer = cast<plan::BufferOp>(builder.create(state));
  if (kind != plan::BufferKind::temporary)
    buffer.setKindAttr(builder.getStringAttr(plan::stringifyBufferKind(kind)));
  return buffer;
}

void DeviceLowering::describeBlock(plan::BufferOp buffer, StringRef name,
                                   Type type, const NdSbp &layout) {
  Slice slice = blockOf(type, layout);
  buffer.setNameAttr(builder.getStringAttr(name));
  buffer.setLogicalShapeAttr(builder.getDenseI64ArrayAttr(shapeOf(type)));
  buffer.setBlockOffsetsAttr(builder.getDenseI64ArrayAttr(slice.offsets));
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
