//===- NNShardingRules.cpp - candidate SBP signatures of every nn op ------===//
//
// ShardableOpInterface::getSbpSignatures: for one mesh axis, the layouts
// (SBP of every operand and result) under which each device can run the op
// on its local parts and produce its local part of the result, OneFlow-style.
// The rules are written out in docs/sharding-rules.md.
//
// Splits of size-1 dimensions are not offered (they cut nothing). Rules that
// map a split through a reshape hold when the mesh axis divides the split
// extents; the search checks divisibility on the mesh it plans for.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/APFloat.h"

using namespace mlir;
using namespace parplan::nn;
using parplan::Sbp;
using parplan::SbpSignature;

namespace {

using Signatures = SmallVectorImpl<SbpSignature>;

Sbp S(int64_t axis) { return Sbp::split(axis); }
const Sbp B = Sbp::broadcast();
const Sbp P = Sbp::partial();

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<ShapedType>(value.getType()).getShape();
}

void add(Signatures &out, std::vector<Sbp> operands, std::vector<Sbp> results) {
  out.push_back(SbpSignature{std::move(operands), std::move(results)});
}

/// Every operand and result Broadcast.
void addReplicated(Operation *op, Signatures &out) {
  add(out, std::vector<Sbp>(op->getNumOperands(), B),
      std::vector<Sbp>(op->getNumResults(), B));
}

/// Every operand and result Partial (ops linear in all their operands).
void addAllPartial(Operation *op, Signatures &out) {
  add(out, std::vector<Sbp>(op->getNumOperands(), P),
      std::vector<Sbp>(op->getNumResults(), P));
}

/// Ops whose result element i depends only on operand elements at the
/// broadcast-aligned index i: split any result dimension, and split each
/// operand along the aligned dimension (or keep it whole where it
/// broadcasts).
void addElementwiseSplits(Operation *op, Signatures &out) {
  ArrayRef<int64_t> result = shapeOf(op->getResult(0));
  int64_t rank = result.size();
  for (int64_t d = 0; d < rank; ++d) {
    if (result[d] == 1)
      continue;
    std::vector<Sbp> operands;
    for (Value operand : op->getOperands()) {
      ArrayRef<int64_t> shape = shapeOf(operand);
      int64_t aligned = d - (rank - static_cast<int64_t>(shape.size()));
      operands.push_back(
          aligned >= 0 && shape[aligned] == result[d] ? S(aligned) : B);
    }
    add(out, operands, std::vector<Sbp>(op->getNumResults(), S(d)));
  }
}

/// Unary and broadcasting elementwise ops that are not linear.
LogicalResult elementwise(Operation *op, Signatures &out) {
  addElementwiseSplits(op, out);
  addReplicated(op, out);
  return success();
}

/// Splits of every dimension `keep` allows, the same on input and result
/// (ops that act along some dimensions only).
void addSameSplits(Operation *op, Signatures &out,
                   function_ref<bool(int64_t)> keep) {
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (shape[d] > 1 && keep(d)) {
      std::vector<Sbp> operands(op->getNumOperands(), B);
      operands[0] = S(d);
      add(out, operands, std::vector<Sbp>(op->getNumResults(), S(d)));
    }
}

/// Axes of verified ops are in range.
int64_t normalized(int64_t axis, int64_t rank) {
  return *normalizeAxis(axis, rank);
}

/// A value that enters the program may be laid out any way but Partial.
LogicalResult source(Operation *op, Signatures &out) {
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (shape[d] > 1)
      add(out, {}, {S(d)});
  add(out, {}, {B});
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Values entering the program
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::getSbpSignatures(Signatures &out) {
  return source(*this, out);
}
LogicalResult InputOp::getSbpSignatures(Signatures &out) {
  return source(*this, out);
}
// Each device materializes the part it needs.
LogicalResult ConstantOp::getSbpSignatures(Signatures &out) {
  return source(*this, out);
}
LogicalResult ShapeOp::getSbpSignatures(Signatures &out) {
  // The shape of the logical tensor, whatever the input's layout.
  std::vector<Sbp> results = {B};
  ArrayRef<int64_t> shape = shapeOf(getInput());
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (shape[d] > 1)
      add(out, {S(d)}, results);
  add(out, {B}, results);
  add(out, {P}, results);
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  ArrayRef<int64_t> result = shapeOf(getResult());
  int64_t rank = result.size();
  int64_t lhsRank = lhs.size(), rhsRank = rhs.size();
  // Batch dimensions: those of the result before the matrix dimensions.
  int64_t matrixDims = (lhsRank > 1) + (rhsRank > 1);
  for (int64_t d = 0; d < rank - matrixDims; ++d) {
    if (result[d] == 1)
      continue;
    auto aligned = [&](ArrayRef<int64_t> shape) -> Sbp {
      int64_t batchRank = static_cast<int64_t>(shape.size()) - 2;
      int64_t a = d - ((rank - matrixDims) - batchRank);
      return a >= 0 && shape[a] == result[d] ? S(a) : B;
    };
    add(out, {aligned(lhs), aligned(rhs)}, {S(d)});
  }
  // The operands' row, column and contracted dimensions, after the
  // transposes a flag reads them with (flags need rank 2 or more).
  bool transposeLhs = getTransposeLhs(), transposeRhs = getTransposeRhs();
  int64_t lhsRows = lhsRank - (transposeLhs ? 1 : 2);
  int64_t lhsK = lhsRank - (transposeLhs ? 2 : 1);
  int64_t rhsK = rhsRank > 1 ? rhsRank - (transposeRhs ? 1 : 2) : 0;
  int64_t rhsColumns = rhsRank - (transposeRhs ? 2 : 1);
  if (lhsRank > 1 && lhs[lhsRows] > 1) // Rows of the left operand.
    add(out, {S(lhsRows), B}, {S(rank - (rhsRank > 1 ? 2 : 1))});
  if (rhsRank > 1 && rhs[rhsColumns] > 1) // Columns of the right operand.
    add(out, {B, S(rhsColumns)}, {S(rank - 1)});
  if (lhs[lhsK] > 1) // The contraction: partial sums.
    add(out, {S(lhsK), S(rhsK)}, {P});
  add(out, {B, B}, {B});
  add(out, {P, B}, {P});
  add(out, {B, P}, {P});
  return success();
}

LogicalResult GemmOp::getSbpSignatures(Signatures &out) {
  bool transA = getTransA(), transB = getTransB();
  ArrayRef<int64_t> result = shapeOf(getResult());
  std::optional<ArrayRef<int64_t>> c;
  if (getC())
    c = shapeOf(getC());
  // c's layout when the result is split along result dimension `d`.
  auto biasSplit = [&](int64_t d) -> std::vector<Sbp> {
    if (!c)
      return {};
    int64_t aligned = d - (2 - static_cast<int64_t>(c->size()));
    return {aligned >= 0 && (*c)[aligned] == result[d] ? S(aligned) : B};
  };
  auto with = [&](std::vector<Sbp> ab, std::vector<Sbp> bias) {
    ab.insert(ab.end(), bias.begin(), bias.end());
    return ab;
  };
  int64_t k = shapeOf(getA())[transA ? 0 : 1];
  if (result[0] > 1)
    add(out, with({S(transA ? 1 : 0), B}, biasSplit(0)), {S(0)});
  if (result[1] > 1)
    add(out, with({B, S(transB ? 0 : 1)}, biasSplit(1)), {S(1)});
  // The contraction: partial sums; the bias joins on one device (B -> P).
  std::vector<Sbp> partialBias = c ? std::vector<Sbp>{P} : std::vector<Sbp>{};
  if (k > 1)
    add(out, with({S(transA ? 0 : 1), S(transB ? 1 : 0)}, partialBias), {P});
  add(out, with({B, B}, c ? std::vector<Sbp>{B} : std::vector<Sbp>{}), {B});
  add(out, with({P, B}, partialBias), {P});
  add(out, with({B, P}, partialBias), {P});
  return success();
}

LogicalResult ConvOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> input = shapeOf(getInput()), weight = shapeOf(getWeight());
  bool bias = static_cast<bool>(getBias());
  auto with = [&](std::vector<Sbp> xw, Sbp b) {
    if (bias)
      xw.push_back(b);
    return xw;
  };
  int64_t group = getGroup();
  if (input[0] > 1) // The batch.
    add(out, with({S(0), B}, B), {S(0)});
  if (group == 1 && weight[0] > 1) // Output channels.
    add(out, with({B, S(0)}, S(0)), {S(1)});
  if (group == 1 && input[1] > 1) // Input channels: partial sums.
    add(out, with({S(1), S(1)}, P), {P});
  if (group > 1 && group == input[1] && group == weight[0])
    add(out, with({S(1), S(0)}, S(0)), {S(1)}); // Depthwise: channels.
  add(out, with({B, B}, B), {B});
  add(out, with({P, B}, P), {P});
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Sums and differences of partial values are partial.
LogicalResult AddOp::getSbpSignatures(Signatures &out) {
  (void)elementwise(*this, out);
  addAllPartial(*this, out);
  return success();
}
LogicalResult SubOp::getSbpSignatures(Signatures &out) {
  (void)elementwise(*this, out);
  addAllPartial(*this, out);
  return success();
}
// A product is linear in each factor, a quotient in its dividend.
LogicalResult MulOp::getSbpSignatures(Signatures &out) {
  (void)elementwise(*this, out);
  add(out, {P, B}, {P});
  add(out, {B, P}, {P});
  return success();
}
LogicalResult DivOp::getSbpSignatures(Signatures &out) {
  (void)elementwise(*this, out);
  add(out, {P, B}, {P});
  return success();
}
LogicalResult PowOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult WhereOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
// The micro-batch index, a scalar every device holds.
LogicalResult MicroBatchOp::getSbpSignatures(Signatures &out) {
  return source(*this, out);
}
// Dropout scales each element by its mask's factor: linear in its input.
LogicalResult DropoutOp::getSbpSignatures(Signatures &out) {
  (void)elementwise(*this, out);
  std::vector<Sbp> operands(getNumOperands(), B);
  operands[0] = P;
  add(out, operands, {P});
  return success();
}
// Comparisons and logic are elementwise and not linear: no partial sums.
LogicalResult EqualOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult LessOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult GreaterOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult AndOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult OrOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult NotOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult ReluOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult TanhOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult SqrtOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult ExpOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult LogOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult SigmoidOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult ErfOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult HardSwishOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult LeakyReluOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult HardSigmoidOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult ClipOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
LogicalResult GeluOp::getSbpSignatures(Signatures &out) {
  return elementwise(*this, out);
}
// A cast to a float type that holds every value of the input's exactly
// (f16 or bf16 to f32, a float to itself) is linear: the sum of the cast
// parts is the cast sum. Mixed-precision gradients so reach their f32
// accumulators as partial sums, reduced once per step rather than once per
// micro-batch. A narrowing or integer cast rounds each part: no P.
LogicalResult CastOp::getSbpSignatures(Signatures &out) {
  (void)elementwise(*this, out);
  auto from = dyn_cast<FloatType>(getElementTypeOrSelf(getInput()));
  auto to = dyn_cast<FloatType>(getElementTypeOrSelf(getResult()));
  if (from && to &&
      llvm::APFloat::isRepresentableBy(from.getFloatSemantics(),
                                       to.getFloatSemantics()))
    addAllPartial(*this, out);
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations and pooling: split only what they do not normalize over
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::getSbpSignatures(Signatures &out) {
  int64_t axis =
      normalized(static_cast<int64_t>(getAxis()), getType().getRank());
  addSameSplits(*this, out, [&](int64_t d) { return d != axis; });
  addReplicated(*this, out);
  return success();
}
LogicalResult LogSoftmaxOp::getSbpSignatures(Signatures &out) {
  int64_t axis =
      normalized(static_cast<int64_t>(getAxis()), getType().getRank());
  addSameSplits(*this, out, [&](int64_t d) { return d != axis; });
  addReplicated(*this, out);
  return success();
}
LogicalResult LayerNormOp::getSbpSignatures(Signatures &out) {
  int64_t axis =
      normalized(static_cast<int64_t>(getAxis()), getType().getRank());
  // Scale and bias stay whole: they span the normalized dimensions.
  addSameSplits(*this, out, [&](int64_t d) { return d < axis; });
  addReplicated(*this, out);
  return success();
}
LogicalResult BatchNormOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (shape[d] == 1)
      continue;
    // Splitting channels splits the per-channel statistics with them.
    Sbp statistics = d == 1 ? S(0) : B;
    add(out, {S(d), statistics, statistics, statistics, statistics}, {S(d)});
  }
  addReplicated(*this, out);
  return success();
}
// Windows span the spatial dimensions; batch and channels are independent.
LogicalResult MaxPoolOp::getSbpSignatures(Signatures &out) {
  addSameSplits(*this, out, [](int64_t d) { return d < 2; });
  addReplicated(*this, out);
  return success();
}
// Every axis but the one it picks along splits; that one must be whole.
LogicalResult TopKOp::getSbpSignatures(Signatures &out) {
  int64_t axis =
      normalized(getAxisAttr().getInt(), getInput().getType().getRank());
  addSameSplits(*this, out, [&](int64_t d) { return d != axis; });
  addReplicated(*this, out);
  return success();
}

// An axis whose extent a resize keeps maps every element to itself (the
// rule of nn.resize and of its gradient).
void addResizeSignatures(Operation *op, Value from, Signatures &out) {
  ArrayRef<int64_t> input = shapeOf(from), result = shapeOf(op->getResult(0));
  addSameSplits(op, out, [&](int64_t d) { return input[d] == result[d]; });
  addReplicated(op, out);
}
LogicalResult ResizeOp::getSbpSignatures(Signatures &out) {
  addResizeSignatures(*this, getInput(), out);
  return success();
}
LogicalResult AvgPoolOp::getSbpSignatures(Signatures &out) {
  addSameSplits(*this, out, [](int64_t d) { return d < 2; });
  addReplicated(*this, out);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
/// Kept dimensions stay split (renumbered without keepdims); reducing a
/// split dimension leaves partial sums (the mean divides by the logical
/// extent, so partial means add up too); reductions are linear.
template <typename ReduceOp>
LogicalResult reductionRules(ReduceOp op, Signatures &out) {
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  int64_t rank = shape.size();
  SmallVector<bool> reduced(rank, op.getAxes().empty());
  for (int64_t axis : op.getAxes())
    reduced[normalized(axis, rank)] = true;
  int64_t kept = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t resultDim = op.getKeepdims() ? d : kept;
    if (shape[d] > 1)
      add(out, {S(d)}, {reduced[d] ? P : S(resultDim)});
    if (!reduced[d])
      ++kept;
  }
  add(out, {B}, {B});
  add(out, {P}, {P});
  return success();
}
} // namespace

LogicalResult ReduceMeanOp::getSbpSignatures(Signatures &out) {
  return reductionRules(*this, out);
}
LogicalResult ReduceSumOp::getSbpSignatures(Signatures &out) {
  return reductionRules(*this, out);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::getSbpSignatures(Signatures &out) {
  // A split of input dimension d maps to output dimension d' when both start
  // at the same element offset (equal products of the dimensions before
  // them) and one extent is a multiple of the other: the devices' contiguous
  // parts are then the same elements.
  ArrayRef<int64_t> in = shapeOf(getInput()), result = shapeOf(getResult());
  int64_t before = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
    int64_t outBefore = 1;
    for (int64_t e = 0; e < static_cast<int64_t>(result.size()); ++e) {
      if (outBefore == before && in[d] > 1 && result[e] > 1 &&
          (in[d] % result[e] == 0 || result[e] % in[d] == 0)) {
        add(out, {S(d)}, {S(e)});
        break;
      }
      outBefore *= result[e];
      if (outBefore > before)
        break;
    }
    before *= in[d];
  }
  add(out, {B}, {B});
  add(out, {P}, {P});
  return success();
}

LogicalResult TransposeOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> perm = getPerm();
  ArrayRef<int64_t> result = shapeOf(getResult());
  for (int64_t d = 0; d < static_cast<int64_t>(perm.size()); ++d)
    if (result[d] > 1)
      add(out, {S(perm[d])}, {S(d)});
  add(out, {B}, {B});
  add(out, {P}, {P});
  return success();
}

LogicalResult ExpandOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> in = shapeOf(getInput()), result = shapeOf(getResult());
  int64_t offset = result.size() - in.size();
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (in[d] > 1) // Not a broadcast dimension.
      add(out, {S(d)}, {S(d + offset)});
  add(out, {B}, {B});
  add(out, {P}, {P});
  return success();
}

LogicalResult ConcatOp::getSbpSignatures(Signatures &out) {
  int64_t axis =
      normalized(static_cast<int64_t>(getAxis()), getType().getRank());
  ArrayRef<int64_t> shape = shapeOf(getResult());
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != axis && shape[d] > 1)
      add(out, std::vector<Sbp>(getNumOperands(), S(d)), {S(d)});
  addReplicated(*this, out);
  addAllPartial(*this, out);
  return success();
}

LogicalResult SplitOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  int64_t axis = normalized(static_cast<int64_t>(getAxis()), shape.size());
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != axis && shape[d] > 1)
      add(out, {S(d)}, std::vector<Sbp>(getNumResults(), S(d)));
  addReplicated(*this, out);
  addAllPartial(*this, out);
  return success();
}

LogicalResult SliceOp::getSbpSignatures(Signatures &out) {
  // Dimensions the slice keeps whole may stay split.
  ArrayRef<int64_t> shape = shapeOf(getInput());
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (shape[d] > 1 && getStarts()[d] == 0 && getSteps()[d] == 1 &&
        getSizes()[d] == shape[d])
      add(out, {S(d)}, {S(d)});
  add(out, {B}, {B});
  add(out, {P}, {P});
  return success();
}

LogicalResult GatherOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> data = shapeOf(getInput()), indices = shapeOf(getIndices());
  int64_t axis = normalized(static_cast<int64_t>(getAxis()), data.size());
  int64_t indexRank = indices.size();
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) {
    if (data[d] == 1)
      continue;
    if (d == axis) // A table split by rows: each device looks up its rows,
      add(out, {S(d), B}, {P}); // zeros for the others (vocab parallel).
    else
      add(out, {S(d), B}, {S(d < axis ? d : d - 1 + indexRank)});
  }
  for (int64_t j = 0; j < indexRank; ++j)
    if (indices[j] > 1)
      add(out, {B, S(j)}, {S(axis + j)});
  add(out, {B, B}, {B});
  add(out, {P, B}, {P});
  return success();
}

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

// Activation gradients: elementwise in grad and input together. Linear in
// grad, but the input decides which elements pass, so grad may be partial
// only against a whole input.
namespace {
LogicalResult activationGradRules(Operation *op, Signatures &out) {
  (void)elementwise(op, out);
  add(out, {P, B}, {P});
  return success();
}
} // namespace

LogicalResult ReluGradOp::getSbpSignatures(Signatures &out) {
  return activationGradRules(*this, out);
}
LogicalResult LeakyReluGradOp::getSbpSignatures(Signatures &out) {
  return activationGradRules(*this, out);
}
LogicalResult HardSigmoidGradOp::getSbpSignatures(Signatures &out) {
  return activationGradRules(*this, out);
}
LogicalResult HardSwishGradOp::getSbpSignatures(Signatures &out) {
  return activationGradRules(*this, out);
}
LogicalResult ClipGradOp::getSbpSignatures(Signatures &out) {
  return activationGradRules(*this, out);
}
LogicalResult GeluGradOp::getSbpSignatures(Signatures &out) {
  return activationGradRules(*this, out);
}

// The row sums run along the softmax axis, which must stay whole.
namespace {
template <typename SoftmaxGrad>
LogicalResult softmaxGradRules(SoftmaxGrad op, Signatures &out) {
  int64_t axis =
      normalized(static_cast<int64_t>(op.getAxis()), op.getType().getRank());
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != axis && shape[d] > 1)
      add(out, {S(d), S(d)}, {S(d)});
  addReplicated(op, out);
  return success();
}
} // namespace

LogicalResult SoftmaxGradOp::getSbpSignatures(Signatures &out) {
  return softmaxGradRules(*this, out);
}
LogicalResult LogSoftmaxGradOp::getSbpSignatures(Signatures &out) {
  return softmaxGradRules(*this, out);
}

// Rows (the unnormalized dimensions) are independent; the scale and bias
// gradients sum over rows, so split rows leave them partial.
LogicalResult LayerNormGradOp::getSbpSignatures(Signatures &out) {
  int64_t rank = getInput().getType().getRank();
  int64_t axis = normalized(static_cast<int64_t>(getAxis()), rank);
  ArrayRef<int64_t> shape = shapeOf(getInput());
  for (int64_t d = 0; d < axis; ++d)
    if (shape[d] > 1)
      add(out, {S(d), S(d), B}, {S(d), P, P});
  addReplicated(*this, out);
  return success();
}

// conv_grad_input(dy [N, M, O...], w [M, C/g, K...]) -> [N, C, D...]: the
// batch carries through, a split of output channels leaves partial sums,
// and (without groups) a split of input channels splits the result.
LogicalResult ConvGradInputOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> grad = shapeOf(getGrad()), weight = shapeOf(getWeight());
  int64_t group = getGroup();
  if (grad[0] > 1)
    add(out, {S(0), B}, {S(0)});
  if (group == 1 && grad[1] > 1)
    add(out, {S(1), S(0)}, {P});
  if (group == 1 && weight[1] > 1)
    add(out, {B, S(1)}, {S(1)});
  if (group > 1 && group == grad[1] && group == weight[0])
    add(out, {S(1), S(0)}, {S(1)}); // Depthwise: channels.
  add(out, {B, B}, {B});
  add(out, {P, B}, {P});
  return success();
}

// conv_grad_weight(dy [N, M, O...], x [N, C, D...]) -> [M, C/g, K...]: the
// batch sums away (partial), output channels split the weight's rows and
// (without groups) input channels its columns.
LogicalResult ConvGradWeightOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> grad = shapeOf(getGrad()), input = shapeOf(getInput());
  int64_t group = getGroup();
  if (grad[0] > 1)
    add(out, {S(0), S(0)}, {P});
  if (group == 1 && grad[1] > 1)
    add(out, {S(1), B}, {S(0)});
  if (group == 1 && input[1] > 1)
    add(out, {B, S(1)}, {S(1)});
  if (group > 1 && group == grad[1] && group == input[1])
    add(out, {S(1), S(1)}, {S(0)}); // Depthwise: channels.
  add(out, {B, B}, {B});
  add(out, {P, B}, {P});
  return success();
}

LogicalResult ResizeGradOp::getSbpSignatures(Signatures &out) {
  addResizeSignatures(*this, getGrad(), out);
  return success();
}

// Windows span the spatial dimensions; batch and channels are independent.
LogicalResult MaxPoolGradOp::getSbpSignatures(Signatures &out) {
  for (int64_t d = 0; d < 2; ++d)
    if (shapeOf(getInput())[d] > 1)
      add(out, {S(d), S(d)}, {S(d)});
  addReplicated(*this, out);
  return success();
}
LogicalResult AvgPoolGradOp::getSbpSignatures(Signatures &out) {
  addSameSplits(*this, out, [](int64_t d) { return d < 2; });
  addReplicated(*this, out);
  addAllPartial(*this, out);
  return success();
}

// The dimensions the slice kept whole may stay split; zero-padding is linear.
LogicalResult SliceGradOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> grad = shapeOf(getGrad()), shape = shapeOf(getResult());
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (shape[d] > 1 && getStarts()[d] == 0 && getSteps()[d] == 1 &&
        grad[d] == shape[d])
      add(out, {S(d)}, {S(d)});
  add(out, {B}, {B});
  add(out, {P}, {P});
  return success();
}

// The transpose of gather's rules: where the forward split the table along
// a non-gathered dimension, the scatter splits it the same way; where it
// split the indices, each device scatters its part into a whole table of
// partial sums; where it split the table by rows (vocabulary parallel),
// each device keeps the rows it owns.
LogicalResult GatherGradOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> data = shapeOf(getResult()),
                    indices = shapeOf(getIndices());
  int64_t axis = normalized(static_cast<int64_t>(getAxis()), data.size());
  int64_t indexRank = indices.size();
  for (int64_t d = 0; d < static_cast<int64_t>(data.size()); ++d) {
    if (data[d] == 1)
      continue;
    if (d == axis)
      add(out, {B, B}, {S(d)});
    else
      add(out, {S(d < axis ? d : d - 1 + indexRank), B}, {S(d)});
  }
  for (int64_t j = 0; j < indexRank; ++j)
    if (indices[j] > 1)
      add(out, {S(axis + j), S(j)}, {P});
  add(out, {B, B}, {B});
  add(out, {P, B}, {P});
  return success();
}

// Positions are independent; the class axis (the last) stays whole, since
// each position's logsumexp runs over all classes.
LogicalResult SoftmaxCrossEntropyOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> labels = shapeOf(getLabels());
  for (int64_t d = 0; d < static_cast<int64_t>(labels.size()); ++d)
    if (labels[d] > 1)
      add(out, {S(d), S(d)}, {S(d)});
  addReplicated(*this, out);
  return success();
}
LogicalResult SoftmaxCrossEntropyGradOp::getSbpSignatures(Signatures &out) {
  ArrayRef<int64_t> labels = shapeOf(getLabels());
  for (int64_t d = 0; d < static_cast<int64_t>(labels.size()); ++d)
    if (labels[d] > 1)
      add(out, {S(d), S(d), S(d)}, {S(d)});
  addReplicated(*this, out);
  add(out, {P, B, B}, {P});
  return success();
}

// A sum over micro-batches is linear: partial sums stay partial.
LogicalResult AccumulateOp::getSbpSignatures(Signatures &out) {
  (void)elementwise(*this, out);
  addAllPartial(*this, out);
  return success();
}

// Updates are elementwise over the parameter and its state, which share
// one layout: a split parameter is updated where it lives (ZeRO), a
// replicated one everywhere. The step count is a whole scalar.
namespace {
LogicalResult updateRules(Operation *op, Signatures &out, bool hasStep) {
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  size_t tensors = op->getNumOperands() - (hasStep ? 1 : 0);
  auto with = [&](Sbp sbp) {
    std::vector<Sbp> operands(tensors, sbp);
    if (hasStep)
      operands.push_back(B);
    return operands;
  };
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (shape[d] > 1)
      add(out, with(S(d)), std::vector<Sbp>(op->getNumResults(), S(d)));
  add(out, with(B), std::vector<Sbp>(op->getNumResults(), B));
  return success();
}
} // namespace

LogicalResult SgdUpdateOp::getSbpSignatures(Signatures &out) {
  return updateRules(*this, out, /*hasStep=*/false);
}
LogicalResult MomentumUpdateOp::getSbpSignatures(Signatures &out) {
  return updateRules(*this, out, /*hasStep=*/false);
}
LogicalResult AdamUpdateOp::getSbpSignatures(Signatures &out) {
  return updateRules(*this, out, /*hasStep=*/true);
}
