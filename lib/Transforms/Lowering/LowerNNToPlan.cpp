//===- LowerNNToPlan.cpp - nn ops on one device's blocks ------------------===//
//
// PlanLoweringOpInterface for the nn ops. Most ops run as the kernel of
// their name on the device's blocks: under the signature the search chose,
// the local computation is the logical op's. The exceptions live here,
// beside the op they concern:
// - nn.param, nn.input and nn.constant are buffers holding the device's
//   block of a named tensor, or of the constant's elements;
// - a mean over a split dimension divides by the local count, so the
//   partial means are rescaled to the logical one;
// - a gather on a block of a table split by rows (vocabulary parallelism)
//   runs gather_shard, which reads only the rows the block holds;
// - a sum over micro-batches is an accumulator buffer added to in place;
// - dropout's training form is told where the device's block lies in the
//   logical tensor, which its mask is a function of.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Lowering/DeviceLowering.h"

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/SBP/SBPOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace parplan;

namespace {

/// Calls visit(use) for each use of `value`, looking through changes of
/// layout (single-result sbp ops), which carry the same values.
void forEachUseOfValues(Value value,
                        llvm::function_ref<void(OpOperand &)> visit) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isa<sbp::SBPDialect>(user->getDialect()) && user->getNumResults() == 1)
      forEachUseOfValues(user->getResult(0), visit);
    else
      visit(use);
  }
}

/// The largest integer an input may hold, from how the program reads it:
/// token ids index a table, labels index the classes. None when no use
/// says.
std::optional<int64_t> integerBound(Value input) {
  std::optional<int64_t> bound;
  auto tighten = [&](int64_t value) {
    bound = bound ? std::min(*bound, value) : value;
  };
  forEachUseOfValues(input, [&](OpOperand &use) {
    Operation *user = use.getOwner();
    if (auto gather = dyn_cast<nn::GatherOp>(user);
        gather && use.getOperandNumber() == 1) {
      auto table = gather.getInput().getType();
      tighten(table.getDimSize(*nn::normalizeAxis(
          static_cast<int64_t>(gather.getAxis()), table.getRank())));
    } else if (auto loss = dyn_cast<nn::SoftmaxCrossEntropyOp>(user)) {
      tighten(loss.getLogits().getType().getShape().back());
    } else if (auto grad = dyn_cast<nn::SoftmaxCrossEntropyGradOp>(user)) {
      tighten(grad.getLogits().getType().getShape().back());
    }
  });
  return bound;
}

/// The center of a parameter's synthetic values, from how the program reads
/// it: 1 for a batch norm's running variance (PyTorch's initial value),
/// where values around 0 would be negative and the normalization NaN. None
/// for any other parameter (centered on 0).
std::optional<double> syntheticCenter(Value param) {
  std::optional<double> center;
  forEachUseOfValues(param, [&](OpOperand &use) {
    if (auto norm = dyn_cast<nn::BatchNormOp>(use.getOwner());
        norm && use.get() == norm.getVariance())
      center = 1.0;
  });
  return center;
}

/// The kernel of the op's name on the device's blocks, with the op's own
/// attributes (not the discardable sbp.* and nn.* marks) and `extraAttrs`.
/// Returns the result buffers.
SmallVector<Value> lowerAsKernel(Operation *op, DeviceLowering &lowering,
                                 StringRef kernelName,
                                 ArrayRef<NamedAttribute> extraAttrs = {}) {
  OpBuilder &b = lowering.getBuilder();
  SmallVector<Value> ins;
  for (Value operand : op->getOperands())
    ins.push_back(lowering.lookup(operand));
  SmallVector<Value> outs;
  for (Value result : op->getResults()) {
    Value buffer =
        lowering
            .makeBuffer(
                op->getLoc(),
                lowering.localType(result.getType(), lowering.layoutOf(result)),
                plan::BufferKind::temporary)
            .getResult();
    lowering.map(result, buffer);
    outs.push_back(buffer);
  }
  SmallVector<NamedAttribute> attrs(extraAttrs);
  // Which optional operands are there is the operand list itself (optional
  // operands come last), not an attribute of the kernel.
  if (auto properties =
          dyn_cast_or_null<DictionaryAttr>(op->getPropertiesAsAttribute()))
    for (NamedAttribute property : properties.getValue())
      if (property.getName() != "operandSegmentSizes")
        attrs.push_back(property);
  plan::KernelOp::create(
      b, op->getLoc(), b.getStringAttr(kernelName), ins, outs,
      attrs.empty() ? DictionaryAttr() : b.getDictionaryAttr(attrs));
  return outs;
}

LogicalResult lowerOp(nn::ParamOp param, DeviceLowering &lowering) {
  bool state = param.getSource() && *param.getSource() == "zeros";
  NdSbp layout = lowering.layoutOf(param.getResult());
  auto buffer = lowering.makeBuffer(
      param.getLoc(), lowering.localType(param.getType(), layout),
      state ? plan::BufferKind::state : plan::BufferKind::parameter);
  lowering.describeBlock(buffer, param.getName(), param.getType(), layout);
  if (!state && param.getSource())
    buffer.setSourceAttr(param.getSourceAttr());
  if (std::optional<double> center = syntheticCenter(param.getResult());
      center && !state)
    buffer.setSyntheticCenterAttr(
        lowering.getBuilder().getF64FloatAttr(*center));
  if (param.getPart()) {
    buffer.setPartOfAttr(param.getPartOfAttr());
    buffer.setPartAttr(param.getPartAttr());
  }
  lowering.map(param.getResult(), buffer.getResult());
  return success();
}

LogicalResult lowerOp(nn::InputOp input, DeviceLowering &lowering) {
  NdSbp layout = lowering.layoutOf(input.getResult());
  auto buffer = lowering.makeBuffer(input.getLoc(),
                                    lowering.localType(input.getType(), layout),
                                    plan::BufferKind::input);
  lowering.describeBlock(buffer, input.getName(), input.getType(), layout);
  if (!isa<FloatType>(input.getType().getElementType()))
    if (std::optional<int64_t> bound = integerBound(input.getResult()))
      buffer.setValueBoundAttr(lowering.getBuilder().getI64IntegerAttr(*bound));
  lowering.map(input.getResult(), buffer.getResult());
  return success();
}

LogicalResult lowerOp(nn::ConstantOp constant, DeviceLowering &lowering) {
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return constant.emitError()
           << "lower-to-plan: a constant that is not dense";
  NdSbp layout = lowering.layoutOf(constant.getResult());
  MemRefType local = lowering.localType(constant.getType(), layout);
  auto buffer =
      lowering.makeBuffer(constant.getLoc(), local, plan::BufferKind::constant);
  // A split constant carries the logical elements; each device keeps its
  // block (docs/plan-format.md).
  buffer.setValueAttr(dense);
  if (local.getShape() != constant.getType().getShape()) {
    buffer.setLogicalShapeAttr(lowering.getBuilder().getDenseI64ArrayAttr(
        DeviceLowering::shapeOf(constant.getType())));
    buffer.setSplitsAttr(lowering.splitsOf(layout));
  }
  lowering.map(constant.getResult(), buffer.getResult());
  return success();
}

/// A gather (or its gradient) on a block of a table split by rows reads,
/// or writes, only the rows the block holds.
template <typename GatherLike>
LogicalResult lowerGather(GatherLike op, DeviceLowering &lowering, Value table,
                          const NdSbp &tableLayout, StringRef shardKernel) {
  OpBuilder &b = lowering.getBuilder();
  int64_t rank = cast<ShapedType>(table.getType()).getRank();
  int64_t axis = *nn::normalizeAxis(static_cast<int64_t>(op.getAxis()), rank);
  bool rowsSplit = false;
  for (auto [meshAxis, entry] : llvm::enumerate(tableLayout))
    rowsSplit |= entry.isSplit() && entry.axis == axis &&
                 lowering.getMeshShape()[meshAxis] > 1;
  if (!rowsSplit) {
    lowerAsKernel(op, lowering, op->getName().stripDialect());
    return success();
  }
  NamedAttribute attrs[] = {
      b.getNamedAttr("offset", lowering.blockOffset(
                                   DeviceLowering::shapeOf(table.getType()),
                                   tableLayout, axis)),
      b.getNamedAttr("extent", b.getI64IntegerAttr(DeviceLowering::shapeOf(
                                   table.getType())[axis]))};
  lowerAsKernel(op, lowering, shardKernel, attrs);
  return success();
}

LogicalResult lowerOp(nn::GatherOp gather, DeviceLowering &lowering) {
  return lowerGather(gather, lowering, gather.getInput(),
                     lowering.operandLayout(gather, 0), "gather_shard");
}

LogicalResult lowerOp(nn::GatherGradOp grad, DeviceLowering &lowering) {
  return lowerGather(grad, lowering, grad.getResult(),
                     lowering.layoutOf(grad.getResult()), "gather_grad_shard");
}

/// A mean over a split dimension divides by the local count; the partial
/// means must divide by the logical one.
LogicalResult lowerOp(nn::ReduceMeanOp mean, DeviceLowering &lowering) {
  Value out = lowerAsKernel(mean, lowering, "reduce_mean").front();
  auto inputType = mean.getInput().getType();
  std::vector<int64_t> logical = DeviceLowering::shapeOf(inputType);
  std::vector<int64_t> local =
      lowering.blockShape(inputType, lowering.operandLayout(mean, 0));
  SmallVector<bool> reduced(inputType.getRank(), mean.getAxes().empty());
  for (int64_t axis : mean.getAxes())
    reduced[*nn::normalizeAxis(axis, inputType.getRank())] = true;
  double localCount = 1, logicalCount = 1;
  for (int64_t d = 0; d < inputType.getRank(); ++d)
    if (reduced[d]) {
      localCount *= static_cast<double>(local[d]);
      logicalCount *= static_cast<double>(logical[d]);
    }
  if (localCount == logicalCount)
    return success();
  Value scale = lowering.scalarConstant(
      mean.getLoc(), inputType.getElementType(), localCount / logicalCount);
  lowering.map(mean.getResult(),
               lowering.kernel(mean.getLoc(), "mul", ValueRange{out, scale},
                               cast<MemRefType>(out.getType())));
  return success();
}

/// The micro-batch index is a buffer the executor writes.
LogicalResult lowerOp(nn::MicroBatchOp index, DeviceLowering &lowering) {
  auto buffer = lowering.makeBuffer(
      index.getLoc(), MemRefType::get({}, lowering.getBuilder().getI64Type()),
      plan::BufferKind::micro_batch);
  lowering.map(index.getResult(), buffer.getResult());
  return success();
}

/// Dropout's mask is a function of the logical element index: the kernel
/// on a block needs where the block lies in the logical tensor.
LogicalResult lowerOp(nn::DropoutOp dropout, DeviceLowering &lowering) {
  if (!dropout.getStep()) {
    lowerAsKernel(dropout, lowering, "dropout");
    return success();
  }
  OpBuilder &b = lowering.getBuilder();
  std::vector<int64_t> shape = DeviceLowering::shapeOf(dropout.getType());
  NamedAttribute attrs[] = {
      b.getNamedAttr(
          "offset",
          lowering.blockOffset(shape, lowering.operandLayout(dropout, 0), -1)),
      b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape))};
  lowerAsKernel(dropout, lowering, "dropout", attrs);
  return success();
}

/// A sum over micro-batches lives in an accumulator buffer (zeros at the
/// start of each step) that its kernel adds the micro-batch's value to.
LogicalResult lowerOp(nn::AccumulateOp accumulate, DeviceLowering &lowering) {
  OpBuilder &b = lowering.getBuilder();
  Value sum = lowering
                  .makeBuffer(accumulate.getLoc(),
                              lowering.localType(
                                  accumulate.getType(),
                                  lowering.layoutOf(accumulate.getResult())),
                              plan::BufferKind::accumulator)
                  .getResult();
  plan::KernelOp::create(
      b, accumulate.getLoc(), b.getStringAttr("accumulate"),
      ValueRange{sum, lowering.lookup(accumulate.getInput())}, ValueRange{sum},
      DictionaryAttr());
  lowering.map(accumulate.getResult(), sum);
  return success();
}

/// Every other op: the kernel of its name.
LogicalResult lowerOp(Operation *op, DeviceLowering &lowering) {
  lowerAsKernel(op, lowering, op->getName().stripDialect());
  return success();
}

template <typename Op>
struct NNPlanLowering
    : PlanLoweringOpInterface::ExternalModel<NNPlanLowering<Op>, Op> {
  // Overload resolution picks the op's own lowerOp, or the generic one.
  LogicalResult lowerToDevice(Operation *op, DeviceLowering &lowering) const {
    return lowerOp(cast<Op>(op), lowering);
  }
};

template <typename... Ops> void attachToAll(MLIRContext *context) {
  (Ops::template attachInterface<NNPlanLowering<Ops>>(*context), ...);
}

} // namespace

void parplan::registerNNPlanLowering(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, nn::NNDialect *) {
    attachToAll<
#define GET_OP_LIST
#include "parplan/Dialect/NN/NNOps.cpp.inc"
        >(context);
  });
}
