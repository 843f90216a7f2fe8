//===- LowerToPlan.cpp - @main to per-device plan programs ----------------===//
//
// The last step before the executor: logical tensors become the blocks
// that each device holds (the slicing math of docs/slicing.md), ops become
// kernels on those blocks, boxings become collectives over the device
// groups along mesh axes, and what a step leaves behind (the loss, the
// updated parameters) is named. Every logical fact the executor still
// needs (which block of which tensor a buffer holds) is written on the
// buffer.
//
// A kernel on local blocks computes the local part of the op's result
// under the signature the search chose; the exceptions are handled here:
// a mean over a split dimension is rescaled to the logical count. Layouts
// whose local computation needs more (the gather of an outer mesh axis
// across an inner split of the same dimension) are refused with an error
// naming the op rather than lowered wrongly. A gather on a block of a table
// split by rows (vocabulary parallelism) runs the runtime's gather_shard, which
// reads only the rows the block holds.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Support/Sbp.h"
#include "parplan/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

#include <map>

namespace parplan {
#define GEN_PASS_DEF_LOWERTOPLAN
#include "parplan/Transforms/Passes.h.inc"
} // namespace parplan

using namespace mlir;
namespace nn = parplan::nn;
namespace plan = parplan::plan;
namespace sbp = parplan::sbp;
using parplan::NdSbp;
using parplan::Sbp;

namespace {

std::vector<int64_t> shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return std::vector<int64_t>(tensor.getShape().begin(),
                              tensor.getShape().end());
}

/// The largest integer an input may hold, from how the program reads it:
/// token ids index a table, labels index the classes. None when no use
/// says.
std::optional<int64_t> integerBound(Value input) {
  std::optional<int64_t> bound;
  auto tighten = [&](int64_t value) {
    bound = bound ? std::min(*bound, value) : value;
  };
  for (OpOperand &use : input.getUses()) {
    Operation *user = use.getOwner();
    // Through a change of layout, the same values.
    if (auto boxing = dyn_cast<sbp::BoxingOp>(user)) {
      if (std::optional<int64_t> through = integerBound(boxing.getResult()))
        tighten(*through);
      continue;
    }
    if (auto gather = dyn_cast<nn::GatherOp>(user);
        gather && use.getOperandNumber() == 1) {
      auto table = gather.getInput().getType();
      tighten(table.getDimSize(*parplan::nn::normalizeAxis(
          static_cast<int64_t>(gather.getAxis()), table.getRank())));
    } else if (auto loss = dyn_cast<nn::SoftmaxCrossEntropyOp>(user)) {
      tighten(loss.getLogits().getType().getShape().back());
    } else if (auto grad = dyn_cast<nn::SoftmaxCrossEntropyGradOp>(user)) {
      tighten(grad.getLogits().getType().getShape().back());
    }
  }
  return bound;
}

/// The elements of `value` inside `slice`, as a constant of the slice's
/// shape.
DenseElementsAttr sliceConstant(DenseElementsAttr value,
                                const parplan::Slice &slice) {
  auto type = cast<ShapedType>(value.getType());
  if (slice.sizes ==
      std::vector<int64_t>(type.getShape().begin(), type.getShape().end()))
    return value;
  auto blockType = RankedTensorType::get(slice.sizes, type.getElementType());
  if (value.isSplat())
    return value.resizeSplat(blockType);
  SmallVector<Attribute> all(value.getValues<Attribute>());
  SmallVector<Attribute> block;
  int64_t rank = type.getRank();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * type.getDimSize(d + 1);
  SmallVector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < slice.numElements(); ++n) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat += (slice.offsets[d] + index[d]) * strides[d];
    block.push_back(all[flat]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < slice.sizes[d])
        break;
      index[d] = 0;
    }
  }
  return DenseElementsAttr::get(blockType, block);
}

struct LowerToPlanPass : parplan::impl::LowerToPlanBase<LowerToPlanPass> {
  void runOnOperation() override;

private:
  /// The device group along mesh axis `axis` that holds `coordinate`,
  /// created on first use.
  FlatSymbolRefAttr groupAlong(int64_t axis,
                               const std::vector<int64_t> &coordinate);

  std::vector<int64_t> meshShape;
  OpBuilder *moduleBuilder = nullptr;
  std::map<std::vector<int64_t>, FlatSymbolRefAttr> groups;
};

FlatSymbolRefAttr
LowerToPlanPass::groupAlong(int64_t axis,
                            const std::vector<int64_t> &coordinate) {
  std::vector<int64_t> key = coordinate;
  key[axis] = -1;
  key.push_back(axis);
  auto it = groups.find(key);
  if (it != groups.end())
    return it->second;
  SmallVector<int64_t> devices;
  std::vector<int64_t> member = coordinate;
  for (int64_t i = 0; i < meshShape[axis]; ++i) {
    member[axis] = i;
    devices.push_back(parplan::meshLinearIndex(meshShape, member));
  }
  std::string name = "axis" + std::to_string(axis);
  for (size_t d = 0; d < coordinate.size(); ++d)
    if (static_cast<int64_t>(d) != axis)
      name += "_" + std::to_string(coordinate[d]);
  plan::GroupOp::create(*moduleBuilder, moduleBuilder->getUnknownLoc(),
                        moduleBuilder->getStringAttr(name),
                        moduleBuilder->getDenseI64ArrayAttr(devices));
  auto ref = FlatSymbolRefAttr::get(moduleBuilder->getContext(), name);
  groups[key] = ref;
  return ref;
}

void LowerToPlanPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto function = module.lookupSymbol<func::FuncOp>("main");
  if (!function || function.isExternal() || !function.getBody().hasOneBlock()) {
    module.emitError() << "lower-to-plan: the module has no function @main "
                          "of one block";
    return signalPassFailure();
  }
  meshShape = {1};
  auto mesh = module.lookupSymbol<sbp::MeshOp>("mesh");
  if (mesh)
    meshShape.assign(mesh.getShape().begin(), mesh.getShape().end());
  int64_t devices = parplan::meshSize(meshShape);

  MLIRContext *context = &getContext();
  // Groups go before the programs, in the order they are first used.
  OpBuilder groupBuilder(context);
  groupBuilder.setInsertionPoint(function);
  moduleBuilder = &groupBuilder;

  // The layout of every value, and of every operand as its user reads it.
  auto resultLayout = [&](Value value) -> NdSbp {
    auto result = dyn_cast<OpResult>(value);
    if (!result || !mesh)
      return NdSbp(meshShape.size(), Sbp::broadcast());
    if (auto boxing = dyn_cast<sbp::BoxingOp>(result.getOwner()))
      return sbp::toNdSbp(boxing.getDst());
    auto sharding =
        result.getOwner()->getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
    if (!sharding)
      return NdSbp(meshShape.size(), Sbp::broadcast());
    return sharding.getResultSbp(result.getResultNumber());
  };
  if (devices > 1) {
    // Every op must carry its layout: lowering a partly laid-out program
    // would guess.
    for (Operation &op : function.front())
      if (!isa<func::ReturnOp, sbp::BoxingOp>(op) &&
          !op.hasAttr("sbp.sharding")) {
        op.emitError() << "lower-to-plan: '" << op.getName()
                       << "' has no sbp.sharding; run sbp-assign and "
                          "insert-boxing first";
        return signalPassFailure();
      }
  }

  SmallVector<plan::ProgramOp> programs;
  for (int64_t device = 0; device < devices; ++device) {
    std::vector<int64_t> coordinate =
        parplan::meshCoordinate(meshShape, device);
    OpBuilder b(context);
    b.setInsertionPointToEnd(module.getBody());
    auto program = plan::ProgramOp::create(
        b, function.getLoc(),
        b.getStringAttr("device" + std::to_string(device)),
        b.getI64IntegerAttr(device));
    program.getBody().push_back(new Block());
    b.setInsertionPointToEnd(&program.getBody().front());
    programs.push_back(program);

    DenseMap<Value, Value> bufferOf;
    llvm::StringMap<Value> namedBuffers;
    auto localType = [&](Value value, const NdSbp &layout) {
      auto tensor = cast<RankedTensorType>(value.getType());
      std::vector<int64_t> local =
          parplan::localShape(shapeOf(tensor), meshShape, layout, coordinate);
      return MemRefType::get(local, tensor.getElementType());
    };
    auto makeBuffer = [&](Location loc, MemRefType type,
                          plan::BufferKind kind) -> plan::BufferOp {
      OperationState state(loc, plan::BufferOp::getOperationName());
      state.addTypes(type);
      auto buffer = cast<plan::BufferOp>(b.create(state));
      if (kind != plan::BufferKind::temporary)
        buffer.setKindAttr(b.getStringAttr(plan::stringifyBufferKind(kind)));
      return buffer;
    };
    auto describeBlock = [&](plan::BufferOp buffer, StringRef name, Value value,
                             const NdSbp &layout) {
      std::vector<int64_t> shape = shapeOf(value.getType());
      parplan::Slice slice =
          parplan::deviceSlice(shape, meshShape, layout, coordinate);
      buffer.setNameAttr(b.getStringAttr(name));
      buffer.setLogicalShapeAttr(b.getDenseI64ArrayAttr(shape));
      buffer.setBlockOffsetsAttr(b.getDenseI64ArrayAttr(slice.offsets));
      namedBuffers[name] = buffer.getResult();
    };
    auto kernel = [&](Location loc, StringRef name, ValueRange ins,
                      MemRefType resultType,
                      DictionaryAttr attrs = {}) -> Value {
      Value out =
          makeBuffer(loc, resultType, plan::BufferKind::temporary).getResult();
      plan::KernelOp::create(b, loc, b.getStringAttr(name), ins,
                             ValueRange{out}, attrs);
      return out;
    };
    auto scalarConstant = [&](Location loc, Type elementType, double value) {
      auto type = RankedTensorType::get({}, elementType);
      auto buffer = makeBuffer(loc, MemRefType::get({}, elementType),
                               plan::BufferKind::constant);
      buffer.setValueAttr(
          DenseElementsAttr::get(type, b.getFloatAttr(elementType, value)));
      return buffer.getResult();
    };

    // One mesh axis of a boxing: from `from` to `to` along `axis`, on a
    // local block of logical type `logical` laid out as `current`.
    auto boxAxis = [&](Location loc, Value block, Value logical, NdSbp &current,
                       int64_t axis, const Sbp &to) -> FailureOr<Value> {
      Sbp from = current[axis];
      if (from == to || meshShape[axis] == 1) {
        current[axis] = to;
        return block;
      }
      NdSbp next = current;
      next[axis] = to;
      MemRefType nextType = localType(logical, next);
      auto innerSplitOf = [&](int64_t dim) {
        for (size_t other = axis + 1; other < current.size(); ++other)
          if (current[other].isSplit() && current[other].axis == dim &&
              meshShape[other] > 1)
            return true;
        return false;
      };
      FlatSymbolRefAttr group = groupAlong(axis, coordinate);
      Value out;
      if (from.isSplit() && to.isBroadcast()) {
        if (innerSplitOf(from.axis))
          return failure();
        out = makeBuffer(loc, nextType, plan::BufferKind::temporary);
        plan::AllGatherOp::create(b, loc, block, out, group,
                                  b.getI64IntegerAttr(from.axis));
      } else if (from.isPartial() && to.isBroadcast()) {
        out = kernel(loc, "reshape", block, nextType);
        plan::AllReduceOp::create(
            b, loc, out, group,
            plan::ReduceKindAttr::get(context, plan::ReduceKind::sum));
      } else if (from.isPartial() && to.isSplit()) {
        if (innerSplitOf(to.axis))
          return failure();
        out = makeBuffer(loc, nextType, plan::BufferKind::temporary);
        plan::ReduceScatterOp::create(
            b, loc, block, out, group, b.getI64IntegerAttr(to.axis),
            plan::ReduceKindAttr::get(context, plan::ReduceKind::sum));
      } else if (from.isSplit() && to.isSplit()) {
        if (innerSplitOf(from.axis) || innerSplitOf(to.axis))
          return failure();
        // Exchanged in equal parts only.
        auto blockType = cast<MemRefType>(block.getType());
        int64_t n = meshShape[axis];
        if (blockType.getDimSize(to.axis) % n != 0 ||
            nextType.getDimSize(from.axis) !=
                blockType.getDimSize(from.axis) * n)
          return failure();
        out = makeBuffer(loc, nextType, plan::BufferKind::temporary);
        plan::AllToAllOp::create(b, loc, block, out, group,
                                 b.getI64IntegerAttr(to.axis),
                                 b.getI64IntegerAttr(from.axis));
      } else if (from.isBroadcast() && to.isSplit()) {
        if (innerSplitOf(to.axis))
          return failure();
        // This device's part of the block it holds: a local slice.
        auto blockType = cast<MemRefType>(block.getType());
        SmallVector<int64_t> starts(blockType.getRank(), 0),
            steps(blockType.getRank(), 1);
        starts[to.axis] =
            parplan::balancedShard(blockType.getDimSize(to.axis),
                                   meshShape[axis], coordinate[axis])
                .offset;
        SmallVector<NamedAttribute> attrs = {
            b.getNamedAttr("starts", b.getDenseI64ArrayAttr(starts)),
            b.getNamedAttr("sizes",
                           b.getDenseI64ArrayAttr(nextType.getShape())),
            b.getNamedAttr("steps", b.getDenseI64ArrayAttr(steps))};
        out = kernel(loc, "slice", block, nextType, b.getDictionaryAttr(attrs));
      } else if (from.isSplit() && to.isPartial()) {
        if (innerSplitOf(from.axis))
          return failure();
        // The part in its place, zeros elsewhere: the parts add up to the
        // whole.
        auto blockType = cast<MemRefType>(block.getType());
        SmallVector<int64_t> starts(blockType.getRank(), 0),
            steps(blockType.getRank(), 1);
        starts[from.axis] =
            parplan::balancedShard(nextType.getDimSize(from.axis),
                                   meshShape[axis], coordinate[axis])
                .offset;
        SmallVector<NamedAttribute> attrs = {
            b.getNamedAttr("starts", b.getDenseI64ArrayAttr(starts)),
            b.getNamedAttr("steps", b.getDenseI64ArrayAttr(steps))};
        out = kernel(loc, "slice_grad", block, nextType,
                     b.getDictionaryAttr(attrs));
      } else if (from.isBroadcast() && to.isPartial()) {
        // One device of the axis keeps the value, the others add zeros.
        Type element = cast<MemRefType>(block.getType()).getElementType();
        if (!isa<FloatType>(element))
          return failure();
        Value keep = scalarConstant(loc, element, coordinate[axis] == 0);
        out = kernel(loc, "mul", ValueRange{block, keep}, nextType);
      } else {
        return failure();
      }
      current = next;
      return out;
    };

    for (Operation &op : function.front()) {
      Location loc = op.getLoc();
      if (auto param = dyn_cast<nn::ParamOp>(op)) {
        bool state = param.getSource() && *param.getSource() == "zeros";
        NdSbp layout = resultLayout(param.getResult());
        auto buffer = makeBuffer(loc, localType(param.getResult(), layout),
                                 state ? plan::BufferKind::state
                                       : plan::BufferKind::parameter);
        describeBlock(buffer, param.getName(), param.getResult(), layout);
        if (!state && param.getSource())
          buffer.setSourceAttr(param.getSourceAttr());
        if (param.getPart()) {
          buffer.setPartOfAttr(param.getPartOfAttr());
          buffer.setPartAttr(param.getPartAttr());
        }
        bufferOf[param.getResult()] = buffer.getResult();
        continue;
      }
      if (auto input = dyn_cast<nn::InputOp>(op)) {
        NdSbp layout = resultLayout(input.getResult());
        auto buffer = makeBuffer(loc, localType(input.getResult(), layout),
                                 plan::BufferKind::input);
        describeBlock(buffer, input.getName(), input.getResult(), layout);
        if (!isa<FloatType>(input.getType().getElementType()))
          if (std::optional<int64_t> bound = integerBound(input.getResult()))
            buffer.setValueBoundAttr(b.getI64IntegerAttr(*bound));
        bufferOf[input.getResult()] = buffer.getResult();
        continue;
      }
      if (auto constant = dyn_cast<nn::ConstantOp>(op)) {
        NdSbp layout = resultLayout(constant.getResult());
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (!dense) {
          op.emitError() << "lower-to-plan: a constant that is not dense";
          return signalPassFailure();
        }
        parplan::Slice slice = parplan::deviceSlice(
            shapeOf(constant.getType()), meshShape, layout, coordinate);
        auto buffer = makeBuffer(loc, localType(constant.getResult(), layout),
                                 plan::BufferKind::constant);
        buffer.setValueAttr(sliceConstant(dense, slice));
        bufferOf[constant.getResult()] = buffer.getResult();
        continue;
      }
      if (auto boxing = dyn_cast<sbp::BoxingOp>(op)) {
        NdSbp current = sbp::toNdSbp(boxing.getSrc()),
              target = sbp::toNdSbp(boxing.getDst());
        Value block = bufferOf.lookup(boxing.getInput());
        // Collectives in the order the cost model priced them ("all_gather
        // on axis 1", ...), then the local steps (slices, zeros).
        std::vector<int64_t> order;
        if (std::optional<ArrayAttr> steps = boxing.getSteps())
          for (Attribute step : *steps) {
            StringRef text = cast<StringAttr>(step).getValue();
            int64_t axis = 0;
            if (!text.rsplit(' ').second.getAsInteger(10, axis))
              order.push_back(axis);
          }
        for (int64_t axis = 0; axis < static_cast<int64_t>(meshShape.size());
             ++axis)
          if (!llvm::is_contained(order, axis))
            order.push_back(axis);
        // A step that would cut across an inner split of the same
        // dimension waits until that split is undone (gathers run inner
        // axis first, whatever order the cost model listed).
        while (!order.empty()) {
          bool progressed = false;
          for (auto it = order.begin(); it != order.end(); ++it) {
            FailureOr<Value> next = boxAxis(loc, block, boxing.getInput(),
                                            current, *it, target[*it]);
            if (failed(next))
              continue;
            block = *next;
            order.erase(it);
            progressed = true;
            break;
          }
          if (!progressed) {
            // Blocked by an inner split of the same dimension: gather the
            // inner axes whole first (innermost first), then redo their
            // splits after the outer step, by local slices.
            int64_t blocked = order.front();
            auto conflicts = [&](const Sbp &inner) {
              return inner.isSplit() &&
                     ((current[blocked].isSplit() &&
                       current[blocked].axis == inner.axis) ||
                      (target[blocked].isSplit() &&
                       target[blocked].axis == inner.axis));
            };
            for (int64_t inner = static_cast<int64_t>(meshShape.size()) - 1;
                 inner > blocked; --inner) {
              if (!conflicts(current[inner]) || meshShape[inner] == 1)
                continue;
              FailureOr<Value> next = boxAxis(loc, block, boxing.getInput(),
                                              current, inner, Sbp::broadcast());
              if (failed(next))
                break;
              block = *next;
              progressed = true;
              if (!llvm::is_contained(order, inner) &&
                  target[inner] != current[inner])
                order.push_back(inner);
            }
          }
          if (!progressed) {
            op.emitError() << "lower-to-plan: the boxing "
                           << parplan::toString(sbp::toNdSbp(boxing.getSrc()))
                           << " -> " << parplan::toString(target)
                           << " needs a step along mesh axis " << order.front()
                           << " that is not lowered yet";
            return signalPassFailure();
          }
        }
        bufferOf[boxing.getResult()] = block;
        continue;
      }
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
          unsigned i = static_cast<unsigned>(index);
          Value buffer = bufferOf.lookup(value);
          if (function.getResultAttr(i, "nn.name")) {
            plan::LossOp::create(b, loc, buffer);
            continue;
          }
          if (auto name =
                  function.getResultAttrOfType<StringAttr>(i, "nn.updates")) {
            Value target = namedBuffers.lookup(name.getValue());
            if (!target) {
              ret.emitError()
                  << "lower-to-plan: result " << i << " updates '"
                  << name.getValue() << "', which is no parameter of @main";
              return signalPassFailure();
            }
            if (target.getType() != buffer.getType()) {
              ret.emitError() << "lower-to-plan: result " << i << " updates '"
                              << name.getValue()
                              << "' in another layout than the parameter's";
              return signalPassFailure();
            }
            plan::UpdateOp::create(b, loc, target, buffer);
            continue;
          }
          ret.emitError() << "lower-to-plan: result " << i
                          << " of @main is neither the loss nor an update; "
                             "inference plans are not lowered yet";
          return signalPassFailure();
        }
        continue;
      }
      if (op.getDialect() != context->getLoadedDialect<nn::NNDialect>()) {
        op.emitError() << "lower-to-plan: '" << op.getName()
                       << "' is not an nn op and has no kernel";
        return signalPassFailure();
      }
      auto sharding = op.getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
      // Local computations that differ from the logical op's: a gather on
      // a block of a table split by rows reads the rows it holds.
      StringRef kernelName = op.getName().stripDialect();
      SmallVector<NamedAttribute> extraAttrs;
      if (sharding && isa<nn::GatherOp, nn::GatherGradOp>(op)) {
        bool forward = isa<nn::GatherOp>(op);
        Value table = forward ? op.getOperand(0) : op.getResult(0);
        NdSbp layout =
            forward ? sharding.getOperandSbp(0) : sharding.getResultSbp(0);
        int64_t rank = cast<ShapedType>(table.getType()).getRank();
        int64_t signedAxis =
            forward
                ? static_cast<int64_t>(cast<nn::GatherOp>(op).getAxis())
                : static_cast<int64_t>(cast<nn::GatherGradOp>(op).getAxis());
        int64_t axis = *parplan::nn::normalizeAxis(signedAxis, rank);
        bool rowsSplit = false;
        for (auto [meshAxis, entry] : llvm::enumerate(layout))
          rowsSplit |=
              entry.isSplit() && entry.axis == axis && meshShape[meshAxis] > 1;
        if (rowsSplit) {
          std::vector<int64_t> logical = shapeOf(table.getType());
          parplan::Slice slice =
              parplan::deviceSlice(logical, meshShape, layout, coordinate);
          kernelName = forward ? "gather_shard" : "gather_grad_shard";
          extraAttrs = {
              b.getNamedAttr("offset",
                             b.getI64IntegerAttr(slice.offsets[axis])),
              b.getNamedAttr("extent", b.getI64IntegerAttr(logical[axis]))};
        }
      }
      SmallVector<Value> ins;
      for (Value operand : op.getOperands())
        ins.push_back(bufferOf.lookup(operand));
      SmallVector<Value> outs;
      for (Value result : op.getResults()) {
        NdSbp layout = resultLayout(result);
        Value buffer = makeBuffer(loc, localType(result, layout),
                                  plan::BufferKind::temporary)
                           .getResult();
        bufferOf[result] = buffer;
        outs.push_back(buffer);
      }
      // The op's own attributes (not the discardable sbp.* and nn.* marks).
      SmallVector<NamedAttribute> attrs(extraAttrs);
      if (auto properties =
              dyn_cast_or_null<DictionaryAttr>(op.getPropertiesAsAttribute()))
        llvm::append_range(attrs, properties.getValue());
      plan::KernelOp::create(b, loc, b.getStringAttr(kernelName), ins, outs,
                             attrs.empty() ? DictionaryAttr()
                                           : b.getDictionaryAttr(attrs));
      // A mean over a split dimension divides by the local count; the
      // partial means must divide by the logical one.
      if (auto mean = dyn_cast<nn::ReduceMeanOp>(op); mean && sharding) {
        auto inputType = mean.getInput().getType();
        std::vector<int64_t> logical = shapeOf(inputType);
        std::vector<int64_t> local = parplan::localShape(
            logical, meshShape, sharding.getOperandSbp(0), coordinate);
        SmallVector<bool> reduced(inputType.getRank(), mean.getAxes().empty());
        for (int64_t axis : mean.getAxes())
          reduced[*parplan::nn::normalizeAxis(axis, inputType.getRank())] =
              true;
        double localCount = 1, logicalCount = 1;
        for (int64_t d = 0; d < inputType.getRank(); ++d)
          if (reduced[d]) {
            localCount *= static_cast<double>(local[d]);
            logicalCount *= static_cast<double>(logical[d]);
          }
        if (localCount != logicalCount) {
          Value scale = scalarConstant(loc, inputType.getElementType(),
                                       localCount / logicalCount);
          Value scaled = kernel(loc, "mul", ValueRange{outs.front(), scale},
                                cast<MemRefType>(outs.front().getType()));
          bufferOf[mean.getResult()] = scaled;
        }
      }
    }
  }

  module->setAttr("plan.mesh_shape",
                  OpBuilder(context).getDenseI64ArrayAttr(meshShape));
  function.erase();
  if (mesh)
    mesh.erase();
}

} // namespace
