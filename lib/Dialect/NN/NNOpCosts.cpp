//===- NNOpCosts.cpp - FLOPs and bytes of every nn op ---------------------===//
//
// ShardableOpInterface::getCost on logical shapes. Conventions, written out
// in docs/cost-model.md: a multiply-add is 2 FLOPs; elementwise ops count
// their FLOPs per output element (transcendentals as 1: such ops are bound by
// memory, not by FLOPs); bytes read are the operands' bytes and bytes
// written the results', except where an op touches less (a gather reads the
// rows it picks, a reshape is a view and moves nothing).
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"

using namespace mlir;
using namespace parplan::nn;
using parplan::OpCost;

namespace {

int64_t bytesOf(Type type) {
  auto shaped = cast<ShapedType>(type);
  int64_t width = std::max<int64_t>(1, shaped.getElementTypeBitWidth() / 8);
  return shaped.getNumElements() * width;
}

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
    cost.bytesRead += bytesOf(operand.getType());
  for (Value result : op->getResults())
    cost.bytesWritten += bytesOf(result.getType());
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
FailureOr<OpCost> ShapeOp::getCost() { return nothing(); }

FailureOr<OpCost> MatMulOp::getCost() {
  // 2 * (result elements) * k, whatever the batching and broadcasting.
  ArrayRef<int64_t> lhs = getLhs().getType().getShape();
  int64_t k = lhs.back();
  return movement(*this, 2.0 * elementsOf(getResult()) * k);
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

// A reshape is a view of the same bytes.
FailureOr<OpCost> ReshapeOp::getCost() { return nothing(); }
FailureOr<OpCost> ExpandOp::getCost() { return movement(*this); }
FailureOr<OpCost> TransposeOp::getCost() { return movement(*this); }
FailureOr<OpCost> ConcatOp::getCost() { return movement(*this); }
FailureOr<OpCost> SplitOp::getCost() { return movement(*this); }

FailureOr<OpCost> SliceOp::getCost() {
  // Reads only the elements it keeps.
  OpCost cost;
  cost.bytesRead = cost.bytesWritten = bytesOf(getType());
  return cost;
}

FailureOr<OpCost> GatherOp::getCost() {
  // Reads the indices and the rows they pick, not the whole table.
  OpCost cost;
  cost.bytesRead = bytesOf(getIndices().getType()) + bytesOf(getType());
  cost.bytesWritten = bytesOf(getType());
  return cost;
}
