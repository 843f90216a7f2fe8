//===- NNOpCosts.cpp - FLOPs and bytes of every nn op ---------------------===//
//
// ShardableOpInterface::getCost on logical shapes. Conventions, written out
// in docs/cost-model.md: a multiply-add is 2 FLOPs; elementwise ops count
// their FLOPs per output element (transcendentals as 1: such ops are bound by
// memory, not by FLOPs); bytes read are the operands' bytes and bytes
// written the results', except where an op touches less (a gather reads the
// rows it picks, a reshape is a view and moves nothing). The executor does
// copy a reshape into a buffer of its own; pricing that copy slowed the
// layout search by a quarter on GPT-3 175B (its descents ran out of sweeps
// on the small differences) for 2% of a measured step: aliasing the
// reshape's buffer in plan-memory is the fix that makes both agree.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"

using namespace mlir;
using namespace parplan::nn;
using parplan::OpCost;

namespace {

int64_t elementsOf(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

int64_t product(ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t value : values)
    result *= value;
  return result;
}

/// Reads every operand, writes every result.
OpCost movement(Operation *op, double flops = 0) {
  OpCost cost;
  cost.flops = flops;
  for (Value operand : op->getOperands())
    cost.bytesRead += tensorBytes(operand.getType());
  for (Value result : op->getResults())
    cost.bytesWritten += tensorBytes(result.getType());
  return cost;
}

/// `flopsPerElement` FLOPs per element of the (first) result.
OpCost elementwise(Operation *op, double flopsPerElement) {
  return movement(op, flopsPerElement * elementsOf(op->getResult(0)));
}

OpCost nothing() { return OpCost{}; }

} // namespace

// Values that enter the program cost nothing to produce.
FailureOr<OpCost> ParamOp::getCost() { return nothing(); }
FailureOr<OpCost> InputOp::getCost() { return nothing(); }
FailureOr<OpCost> ConstantOp::getCost() { return nothing(); }
FailureOr<OpCost> MicroBatchOp::getCost() { return nothing(); }
FailureOr<OpCost> ShapeOp::getCost() { return nothing(); }

FailureOr<OpCost> MatMulOp::getCost() {
  // 2 * (result elements) * k, whatever the batching and broadcasting.
  // A transposed operand and alpha are the matrix library's: no pass over
  // memory of their own.
  return movement(*this, 2.0 * elementsOf(getResult()) * getContractedSize());
}

FailureOr<OpCost> GemmOp::getCost() {
  auto a = getA().getType();
  int64_t k = a.getDimSize(getTransA() ? 0 : 1);
  double mn = elementsOf(getResult());
  // alpha * AB: 2k per element; beta * c + (...): 2 more with a c.
  return movement(*this, mn * (2.0 * k + (getC() ? 2.0 : 0.0)));
}

FailureOr<OpCost> ConvOp::getCost() {
  auto weight = getWeight().getType();
  // Each output element: (C / group) * prod(kernel) multiply-adds.
  int64_t perOutput = product(weight.getShape().drop_front(1));
  double flops = 2.0 * elementsOf(getResult()) * perOutput;
  if (getBias())
    flops += elementsOf(getResult());
  return movement(*this, flops);
}

FailureOr<OpCost> AddOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> SubOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> MulOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> DivOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> PowOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> WhereOp::getCost() { return elementwise(*this, 1); }
// A hash per element, a compare and a scale.
FailureOr<OpCost> DropoutOp::getCost() { return elementwise(*this, 4); }
FailureOr<OpCost> EqualOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> LessOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> GreaterOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> AndOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> OrOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> NotOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> ReluOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> TanhOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> SqrtOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> ExpOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> LogOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> SigmoidOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> ErfOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> LeakyReluOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> ClipOp::getCost() { return elementwise(*this, 1); }
// alpha * x + beta, then two clamps.
FailureOr<OpCost> HardSigmoidOp::getCost() { return elementwise(*this, 3); }
// x * hard_sigmoid(x).
FailureOr<OpCost> HardSwishOp::getCost() { return elementwise(*this, 4); }
// 0.5 * x * (1 + erf(x / sqrt 2)): div, erf, add, two muls; the tanh form
// has as many after folding its constants: count 8 for both, like kernels do.
FailureOr<OpCost> GeluOp::getCost() { return elementwise(*this, 8); }
FailureOr<OpCost> CastOp::getCost() { return elementwise(*this, 0); }

// max, subtract, exp, sum, divide (or log).
FailureOr<OpCost> SoftmaxOp::getCost() { return elementwise(*this, 5); }
FailureOr<OpCost> LogSoftmaxOp::getCost() { return elementwise(*this, 5); }

// mean (1), subtract (1), square (1), mean (1), scale by rstd (1), scale
// (1), shift (1), plus the per-row rsqrt, negligible: 7 per element.
FailureOr<OpCost> LayerNormOp::getCost() { return elementwise(*this, 7); }
// (x - mean) * (scale / sqrt(var + eps)) + bias, per-channel terms folded.
FailureOr<OpCost> BatchNormOp::getCost() { return elementwise(*this, 3); }

FailureOr<OpCost> MaxPoolOp::getCost() {
  return elementwise(*this, static_cast<double>(product(getKernel())));
}
// A comparison per input element and log2(k + 1) heap steps.
FailureOr<OpCost> TopKOp::getCost() {
  return movement(*this,
                  static_cast<double>(elementsOf(getInput())) *
                      std::log2(static_cast<double>(getKAttr().getInt()) + 1));
}

// The input elements an output element of a resize between `from` and
// `to` reads: two per resized axis under linear, one under nearest.
double resizeSamples(ResizeMode mode, ShapedType from, ShapedType to) {
  double corners = 1;
  if (mode == ResizeMode::linear)
    for (auto [in, out] : llvm::zip_equal(from.getShape(), to.getShape()))
      corners *= in == out ? 1 : 2;
  return corners;
}

// Nearest copies an element; linear weighs its samples.
FailureOr<OpCost> ResizeOp::getCost() {
  double samples = resizeSamples(getMode(), getInput().getType(), getType());
  return elementwise(*this, samples > 1 ? 2 * samples : 0);
}
FailureOr<OpCost> AvgPoolOp::getCost() {
  return elementwise(*this, static_cast<double>(product(getKernel())));
}

// One add per input element.
FailureOr<OpCost> ReduceMeanOp::getCost() {
  return movement(*this, static_cast<double>(elementsOf(getInput())));
}
FailureOr<OpCost> ReduceSumOp::getCost() {
  return movement(*this, static_cast<double>(elementsOf(getInput())));
}

// A view of the same bytes (see the file comment).
FailureOr<OpCost> ReshapeOp::getCost() { return nothing(); }
FailureOr<OpCost> ExpandOp::getCost() { return movement(*this); }
FailureOr<OpCost> TransposeOp::getCost() { return movement(*this); }
FailureOr<OpCost> ConcatOp::getCost() { return movement(*this); }
FailureOr<OpCost> SplitOp::getCost() { return movement(*this); }

FailureOr<OpCost> SliceOp::getCost() {
  // Reads only the elements it keeps.
  OpCost cost;
  cost.bytesRead = cost.bytesWritten = tensorBytes(getType());
  return cost;
}

FailureOr<OpCost> GatherOp::getCost() {
  // Reads the indices and the rows they pick, not the whole table.
  OpCost cost;
  cost.bytesRead = tensorBytes(getIndices().getType()) + tensorBytes(getType());
  cost.bytesWritten = tensorBytes(getType());
  return cost;
}

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

// A compare and a select (or a multiply) per element.
FailureOr<OpCost> ReluGradOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> LeakyReluGradOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> ClipGradOp::getCost() { return elementwise(*this, 2); }
FailureOr<OpCost> HardSigmoidGradOp::getCost() { return elementwise(*this, 3); }
FailureOr<OpCost> HardSwishGradOp::getCost() { return elementwise(*this, 4); }
// Phi(x) + x * phi(x), times grad: the forward's work and a few more.
FailureOr<OpCost> GeluGradOp::getCost() { return elementwise(*this, 12); }

// grad * y, row sum, subtract, multiply.
FailureOr<OpCost> SoftmaxGradOp::getCost() { return elementwise(*this, 4); }
// exp(y), row sum of grad, multiply-subtract.
FailureOr<OpCost> LogSoftmaxGradOp::getCost() { return elementwise(*this, 4); }
// Recompute xhat (4), g = grad * scale (1), two row means (2), the input
// gradient (3), two column sums for scale and bias (2).
FailureOr<OpCost> LayerNormGradOp::getCost() { return elementwise(*this, 12); }

// Each gradient of a convolution is as many multiply-adds as the forward.
FailureOr<OpCost> ConvGradInputOp::getCost() {
  auto weight = getWeight().getType();
  int64_t perOutput = product(weight.getShape().drop_front(1));
  return movement(*this, 2.0 * elementsOf(getGrad()) * perOutput);
}
FailureOr<OpCost> ConvGradWeightOp::getCost() {
  auto weight = getType();
  int64_t perOutput = product(weight.getShape().drop_front(1));
  return movement(*this, 2.0 * elementsOf(getGrad()) * perOutput);
}
// A multiply-add per sample of the forward, scattered back.
FailureOr<OpCost> ResizeGradOp::getCost() {
  return movement(*this,
                  2 * resizeSamples(getMode(), getType(), getGrad().getType()) *
                      elementsOf(getGrad()));
}

// Each window compares again to find its maximum.
FailureOr<OpCost> MaxPoolGradOp::getCost() {
  return movement(
      *this, static_cast<double>(elementsOf(getGrad()) * product(getKernel())));
}
FailureOr<OpCost> AvgPoolGradOp::getCost() {
  return movement(
      *this, static_cast<double>(elementsOf(getGrad()) * product(getKernel())));
}

// Zero-fills the result, then writes the slice.
FailureOr<OpCost> SliceGradOp::getCost() { return movement(*this); }
// Zero-fills the table, then adds each row of grad into it.
FailureOr<OpCost> GatherGradOp::getCost() {
  return movement(*this, static_cast<double>(elementsOf(getGrad())));
}

// Per class: max, subtract, exp, sum; then log and pick the label.
FailureOr<OpCost> SoftmaxCrossEntropyOp::getCost() {
  return movement(*this, 4.0 * elementsOf(getLogits()));
}
// Softmax again (4) and the scaled difference (2).
FailureOr<OpCost> SoftmaxCrossEntropyGradOp::getCost() {
  return movement(*this, 6.0 * elementsOf(getLogits()));
}

// Per element: unscale, decay, step (SGD); plus the velocity (momentum);
// the two moments, bias corrections, sqrt and divide (Adam).
// One add per element and micro-batch, the sum updated in place.
FailureOr<OpCost> AccumulateOp::getCost() { return elementwise(*this, 1); }
FailureOr<OpCost> SgdUpdateOp::getCost() { return elementwise(*this, 4); }
FailureOr<OpCost> MomentumUpdateOp::getCost() { return elementwise(*this, 6); }
FailureOr<OpCost> AdamUpdateOp::getCost() { return elementwise(*this, 14); }
