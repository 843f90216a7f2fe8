//===- NNGradients.cpp - the backward rules of the nn ops -----------------===//
//
// One GradientOpInterface model per differentiable nn op, attached to the
// dialect when nn-autodiff runs (registerNNGradients): the rule beside its
// op's name, as the plan lowerings are. docs/training.md describes them.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/TrainingStep/Differentiator.h"

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"

using namespace mlir;
using namespace parplan;
using namespace parplan::nn;

namespace {

constexpr double kTwoOverSqrtPi = 1.1283791670955126;

void matmulBackward(MatMulOp op, Value dy, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value lhs = op.getLhs(), rhs = op.getRhs();
  auto lhsType = tensorType(lhs), rhsType = tensorType(rhs);
  // Promote 1-D operands as the forward did, and the gradient with them
  // (a 1-D operand carries no transpose flag).
  SmallVector<int64_t> lhsShape(lhsType.getShape()),
      rhsShape(rhsType.getShape());
  if (lhsShape.size() == 1)
    lhsShape.insert(lhsShape.begin(), 1);
  if (rhsShape.size() == 1)
    rhsShape.push_back(1);
  SmallVector<int64_t> dyShape(tensorType(dy).getShape());
  if (lhsType.getRank() == 1)
    dyShape.insert(dyShape.end() - (rhsType.getRank() == 1 ? 0 : 1), 1);
  if (rhsType.getRank() == 1)
    dyShape.push_back(1);
  Value g = d.reshape(dy, dyShape);
  Value a = d.reshape(d.primal(lhs), lhsShape);
  Value w = d.reshape(d.primal(rhs), rhsShape);
  // y = alpha op(a) op(w): d op(a) = alpha g op(w)^T and
  // d op(w) = alpha op(a)^T g, each one product whose transposes are the
  // library's flags, transposed back (operands swapped) where the forward
  // read its operand transposed. No transpose is materialized.
  bool ta = op.getTransposeLhs(), tw = op.getTransposeRhs();
  double alpha = op.getScale();
  auto product = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return MatMulOp::create(b, x, y, tx, ty, alpha);
  };
  if (d.needs(lhs)) {
    Value da = ta ? product(w, g, tw, true) : product(g, w, false, !tw);
    da = d.sumToShape(da, lhsType.clone(lhsShape));
    d.accumulate(lhs, d.reshape(da, lhsType.getShape()));
  }
  if (d.needs(rhs)) {
    Value dw;
    if (rhsShape.size() == 2 && lhsShape.size() > 2 && !ta) {
      // A weight shared by every batch row: one [k, rows] x [rows, n]
      // product instead of a batch of them summed afterwards.
      int64_t k = lhsShape.back(), n = tw ? rhsShape.front() : rhsShape.back();
      int64_t rows = tensorType(a).getNumElements() / k;
      Value a2 = d.reshape(a, {rows, k}), g2 = d.reshape(g, {rows, n});
      dw = tw ? product(g2, a2, true, false) : product(a2, g2, true, false);
    } else {
      dw = tw ? product(g, a, true, ta) : product(a, g, !ta, false);
      dw = d.sumToShape(dw, rhsType.clone(rhsShape));
    }
    d.accumulate(rhs, d.reshape(dw, rhsType.getShape()));
  }
}

void gemmBackward(GemmOp op, Value dy, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  // y = alpha * A B + beta * c with A = op(a), B = op(b):
  // dA = alpha * dy B^T and dB = alpha * A^T dy, transposed back when the
  // forward transposed; each is one gemm.
  bool transA = op.getTransA(), transB = op.getTransB();
  FloatAttr alpha = op.getAlphaAttr();
  FloatAttr one = b.getF32FloatAttr(1.0f);
  Value a = d.primal(op.getA()), w = d.primal(op.getB());
  auto gemm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return GemmOp::create(b, x, y, Value(), alpha, one, b.getBoolAttr(tx),
                          b.getBoolAttr(ty));
  };
  if (d.needs(op.getA()))
    d.accumulate(op.getA(), transA ? gemm(w, dy, transB, true)
                                   : gemm(dy, w, false, !transB));
  if (d.needs(op.getB()))
    d.accumulate(op.getB(), transB ? gemm(dy, a, true, transA)
                                   : gemm(a, dy, !transA, false));
  if (Value c = op.getC(); c && d.needs(c)) {
    double beta = op.getBeta().convertToDouble();
    d.accumulateBroadcast(c, beta == 1.0 ? dy : d.scale(dy, beta));
  }
}

LogicalResult reduceBackward(Value input, ArrayRef<int64_t> axes, bool mean,
                             Value dy, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  if (!d.needs(input))
    return success();
  auto inputType = tensorType(input);
  int64_t rank = inputType.getRank();
  SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes)
    reduced[*normalizeAxis(axis, rank)] = true;
  SmallVector<int64_t> kept(inputType.getShape());
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) {
      count *= kept[d];
      kept[d] = 1;
    }
  Value g = d.reshape(dy, kept);
  if (mean)
    g = d.scale(g, 1.0 / static_cast<double>(count));
  if (tensorType(g).getShape() != inputType.getShape())
    g = ExpandOp::create(b, inputType.clone(tensorType(g).getElementType()), g);
  d.accumulate(input, g);
  return success();
}

LogicalResult gradient(MatMulOp matmul, Differentiator &d) {
  Value dy = d.resultGradient(0);
  matmulBackward(matmul, dy, d);
  return success();
}

LogicalResult gradient(GemmOp gemm, Differentiator &d) {
  Value dy = d.resultGradient(0);
  gemmBackward(gemm, dy, d);
  return success();
}

LogicalResult gradient(ConvOp conv, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  if (d.needs(conv.getInput()))
    d.accumulate(
        conv.getInput(),
        ConvGradInputOp::create(b, tensorType(conv.getInput()), dy,
                                d.primal(conv.getWeight()),
                                conv.getStridesAttr(), conv.getPadsAttr(),
                                conv.getDilationsAttr(), conv.getGroupAttr()));
  if (d.needs(conv.getWeight()))
    d.accumulate(
        conv.getWeight(),
        ConvGradWeightOp::create(b, tensorType(conv.getWeight()), dy,
                                 d.primal(conv.getInput()),
                                 conv.getStridesAttr(), conv.getPadsAttr(),
                                 conv.getDilationsAttr(), conv.getGroupAttr()));
  if (Value bias = conv.getBias(); bias && d.needs(bias)) {
    SmallVector<int64_t> axes = {0};
    for (int64_t d = 2; d < tensorType(dy).getRank(); ++d)
      axes.push_back(d);
    d.accumulate(bias, ReduceSumOp::create(b, dy, b.getDenseI64ArrayAttr(axes),
                                           b.getBoolAttr(false)));
  }
  return success();
}

// ConvTranspose (imported as the conv's input gradient) is linear in each
// operand: its input's gradient is the convolution of dy with the weight,
// and the weight's the correlation of its input with dy, the roles of the
// conv's input and result swapped.
LogicalResult gradient(ConvGradInputOp transposed, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  if (d.needs(transposed.getGrad()))
    d.accumulate(transposed.getGrad(),
                 ConvOp::create(
                     b, tensorType(transposed.getGrad()), dy,
                     d.primal(transposed.getWeight()), Value(),
                     transposed.getStridesAttr(), transposed.getPadsAttr(),
                     transposed.getDilationsAttr(), transposed.getGroupAttr()));
  if (d.needs(transposed.getWeight()))
    d.accumulate(transposed.getWeight(),
                 ConvGradWeightOp::create(
                     b, tensorType(transposed.getWeight()),
                     d.primal(transposed.getGrad()), dy,
                     transposed.getStridesAttr(), transposed.getPadsAttr(),
                     transposed.getDilationsAttr(), transposed.getGroupAttr()));
  return success();
}

LogicalResult gradient(ResizeOp resize, Differentiator &d) {
  if (d.needs(resize.getInput()))
    d.accumulate(resize.getInput(),
                 ResizeGradOp::create(d.b, tensorType(resize.getInput()),
                                      d.resultGradient(0), resize.getModeAttr(),
                                      resize.getCoordinatesAttr(),
                                      resize.getRoundingAttr()));
  return success();
}

LogicalResult gradient(AddOp add, Differentiator &d) {
  Value dy = d.resultGradient(0);
  d.accumulateBroadcast(add.getLhs(), dy);
  d.accumulateBroadcast(add.getRhs(), dy);
  return success();
}

LogicalResult gradient(SubOp sub, Differentiator &d) {
  Value dy = d.resultGradient(0);
  d.accumulateBroadcast(sub.getLhs(), dy);
  if (d.needs(sub.getRhs()))
    d.accumulateBroadcast(sub.getRhs(), d.scale(dy, -1.0));
  return success();
}

LogicalResult gradient(MulOp mul, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  if (d.needs(mul.getLhs()))
    d.accumulateBroadcast(mul.getLhs(),
                          MulOp::create(b, dy, d.primal(mul.getRhs())));
  if (d.needs(mul.getRhs()))
    d.accumulateBroadcast(mul.getRhs(),
                          MulOp::create(b, dy, d.primal(mul.getLhs())));
  return success();
}

LogicalResult gradient(DivOp div, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  // d/da = dy / b; d/db = -(dy / b) * (a / b) = -(dy / b) * y.
  Value quotient = DivOp::create(b, dy, d.primal(div.getRhs()));
  d.accumulateBroadcast(div.getLhs(), quotient);
  if (d.needs(div.getRhs()))
    d.accumulateBroadcast(
        div.getRhs(),
        d.scale(MulOp::create(b, quotient, d.primal(div.getResult())), -1.0));
  return success();
}

LogicalResult gradient(PowOp pow, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  Value base = d.primal(pow.getLhs()), exponent = d.primal(pow.getRhs());
  if (d.needs(pow.getLhs())) {
    Value lowered = SubOp::create(b, exponent, d.scalarLike(exponent, 1.0));
    Value derivative =
        MulOp::create(b, exponent, PowOp::create(b, base, lowered));
    d.accumulateBroadcast(pow.getLhs(), MulOp::create(b, dy, derivative));
  }
  if (d.needs(pow.getRhs())) {
    Value derivative =
        MulOp::create(b, d.primal(pow.getResult()), LogOp::create(b, base));
    d.accumulateBroadcast(pow.getRhs(), MulOp::create(b, dy, derivative));
  }
  return success();
}

LogicalResult gradient(WhereOp where, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  // A scalar zero, broadcast by the where: a zeros tensor of dy's
  // shape is a constant as large as the activation (a causal mask's
  // scores), written out whole in every program of the plan.
  Value zeros = d.scalarLike(dy, 0);
  Value condition = d.primal(where.getCondition());
  if (d.needs(where.getLhs()))
    d.accumulateBroadcast(where.getLhs(),
                          WhereOp::create(b, condition, dy, zeros));
  if (d.needs(where.getRhs()))
    d.accumulateBroadcast(where.getRhs(),
                          WhereOp::create(b, condition, zeros, dy));
  return success();
}

LogicalResult gradient(ReluOp op, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(op, ReluGradOp::create(b, dy, d.primal(op->getOperand(0))));
  return success();
}

LogicalResult gradient(LeakyReluOp relu, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(relu,
              LeakyReluGradOp::create(b, dy, d.primal(relu->getOperand(0)),
                                      relu.getAlphaAttr()));
  return success();
}

LogicalResult gradient(HardSigmoidOp sigmoid, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(sigmoid, HardSigmoidGradOp::create(
                           b, dy, d.primal(sigmoid->getOperand(0)),
                           sigmoid.getAlphaAttr(), sigmoid.getBetaAttr()));
  return success();
}

LogicalResult gradient(HardSwishOp op, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(op, HardSwishGradOp::create(b, dy, d.primal(op->getOperand(0))));
  return success();
}

LogicalResult gradient(ClipOp clip, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(clip, ClipGradOp::create(b, dy, d.primal(clip->getOperand(0)),
                                       clip.getMinAttr(), clip.getMaxAttr()));
  return success();
}

LogicalResult gradient(GeluOp gelu, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(gelu, GeluGradOp::create(b, dy, d.primal(gelu->getOperand(0)),
                                       gelu.getApproximateAttr()));
  return success();
}

LogicalResult gradient(TanhOp op, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  Value y = d.primal(op->getResult(0));
  Value square = MulOp::create(b, y, y);
  d.giveInput(
      op, MulOp::create(b, dy, SubOp::create(b, d.scalarLike(y, 1.0), square)));
  return success();
}

LogicalResult gradient(SigmoidOp op, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  Value y = d.primal(op->getResult(0));
  Value slope = MulOp::create(b, y, SubOp::create(b, d.scalarLike(y, 1.0), y));
  d.giveInput(op, MulOp::create(b, dy, slope));
  return success();
}

LogicalResult gradient(SqrtOp op, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(op,
              DivOp::create(b, dy, d.scale(d.primal(op->getResult(0)), 2.0)));
  return success();
}

LogicalResult gradient(ExpOp op, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(op, MulOp::create(b, dy, d.primal(op->getResult(0))));
  return success();
}

LogicalResult gradient(LogOp op, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(op, DivOp::create(b, dy, d.primal(op->getOperand(0))));
  return success();
}

LogicalResult gradient(ErfOp op, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  // 2 / sqrt(pi) * exp(-x^2).
  Value x = d.primal(op->getOperand(0));
  Value gauss = ExpOp::create(b, d.scale(MulOp::create(b, x, x), -1.0));
  d.giveInput(op, MulOp::create(b, dy, d.scale(gauss, kTwoOverSqrtPi)));
  return success();
}

LogicalResult gradient(DropoutOp drop, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  // The same mask (same step, seed and key) on the cotangent.
  d.giveInput(drop, DropoutOp::create(b, dy, drop.getStep(),
                                      drop.getMicroBatch(), drop.getRatioAttr(),
                                      drop.getSeedAttr(), drop.getKeyAttr()));
  return success();
}

LogicalResult gradient(CastOp cast, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(cast, CastOp::create(b, tensorType(cast.getInput()), dy));
  return success();
}

LogicalResult gradient(SoftmaxOp softmax, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(softmax,
              SoftmaxGradOp::create(b, dy, d.primal(softmax->getResult(0)),
                                    softmax.getAxisAttr()));
  return success();
}

LogicalResult gradient(LogSoftmaxOp softmax, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(softmax,
              LogSoftmaxGradOp::create(b, dy, d.primal(softmax->getResult(0)),
                                       softmax.getAxisAttr()));
  return success();
}

LogicalResult gradient(LayerNormOp norm, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  auto grads = LayerNormGradOp::create(
      b, dy, d.primal(norm.getInput()), d.primal(norm.getScale()),
      norm.getAxisAttr(), norm.getEpsilonAttr());
  if (d.needs(norm.getInput()))
    d.accumulate(norm.getInput(), grads.getInputGrad());
  if (d.needs(norm.getScale()))
    d.accumulate(norm.getScale(), grads.getScaleGrad());
  if (Value bias = norm.getBias(); bias && d.needs(bias))
    d.accumulate(bias, grads.getBiasGrad());
  return success();
}

LogicalResult gradient(BatchNormOp norm, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  // Inference form: per channel, y = (x - mean) * rstd * scale + bias
  // with fixed statistics, which get no gradient.
  auto inputType = tensorType(norm.getInput());
  int64_t rank = inputType.getRank(), channels = inputType.getDimSize(1);
  SmallVector<int64_t> channelShape(rank - 1, 1);
  channelShape[0] = channels;
  SmallVector<int64_t> axes = {0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  Value variance = d.primal(norm.getVariance());
  Value rstd = DivOp::create(
      b, d.scalarLike(variance, 1.0),
      SqrtOp::create(
          b, AddOp::create(
                 b, variance,
                 d.scalarLike(variance, norm.getEpsilon().convertToDouble()))));
  Value rstdColumn = d.reshape(rstd, channelShape);
  if (d.needs(norm.getInput())) {
    Value factor = MulOp::create(
        b, d.reshape(d.primal(norm.getScale()), channelShape), rstdColumn);
    d.accumulate(norm.getInput(), MulOp::create(b, dy, factor));
  }
  auto channelSum = [&](Value value) -> Value {
    return ReduceSumOp::create(b, value, b.getDenseI64ArrayAttr(axes),
                               b.getBoolAttr(false));
  };
  if (d.needs(norm.getScale())) {
    Value centered =
        SubOp::create(b, d.primal(norm.getInput()),
                      d.reshape(d.primal(norm.getMean()), channelShape));
    Value normalized = MulOp::create(b, centered, rstdColumn);
    d.accumulate(norm.getScale(), channelSum(MulOp::create(b, dy, normalized)));
  }
  if (d.needs(norm.getBias()))
    d.accumulate(norm.getBias(), channelSum(dy));
  return success();
}

LogicalResult gradient(MaxPoolOp pool, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(pool, MaxPoolGradOp::create(
                        b, tensorType(pool.getInput()), dy,
                        d.primal(pool->getOperand(0)), pool.getKernelAttr(),
                        pool.getStridesAttr(), pool.getPadsAttr(),
                        pool.getDilationsAttr(), pool.getCeilModeAttr()));
  return success();
}

LogicalResult gradient(AvgPoolOp pool, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(pool, AvgPoolGradOp::create(
                        b, tensorType(pool.getInput()), dy,
                        pool.getKernelAttr(), pool.getStridesAttr(),
                        pool.getPadsAttr(), pool.getDilationsAttr(),
                        pool.getCeilModeAttr(), pool.getCountIncludePadAttr()));
  return success();
}

LogicalResult gradient(ReshapeOp reshapeOp, Differentiator &d) {
  Value dy = d.resultGradient(0);
  d.giveInput(reshapeOp,
              d.reshape(dy, tensorType(reshapeOp.getInput()).getShape()));
  return success();
}

LogicalResult gradient(ExpandOp expand, Differentiator &d) {
  Value dy = d.resultGradient(0);
  d.accumulateBroadcast(expand.getInput(), dy);
  return success();
}

LogicalResult gradient(TransposeOp transpose, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  ArrayRef<int64_t> perm = transpose.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  d.giveInput(transpose,
              TransposeOp::create(b, dy, b.getDenseI64ArrayAttr(inverse)));
  return success();
}

LogicalResult gradient(ConcatOp concat, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  int64_t axis = *normalizeAxis(static_cast<int64_t>(concat.getAxis()),
                                tensorType(dy).getRank());
  SmallVector<int64_t> sizes;
  for (Value input : concat.getInputs())
    sizes.push_back(tensorType(input).getDimSize(axis));
  auto parts = SplitOp::create(b, dy, b.getI64IntegerAttr(axis),
                               b.getDenseI64ArrayAttr(sizes));
  for (auto [input, part] :
       llvm::zip_equal(concat.getInputs(), parts.getResults()))
    if (d.needs(input))
      d.accumulate(input, part);
  return success();
}

LogicalResult gradient(SplitOp split, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  if (!d.needs(split.getInput()))
    return success();
  SmallVector<Value> parts;
  for (auto [result, grad] :
       llvm::zip_equal(split.getResults(), d.getResultGradients()))
    parts.push_back(grad ? grad : d.zerosLike(tensorType(result)));
  d.accumulate(split.getInput(),
               ConcatOp::create(b, parts, split.getAxisAttr()));
  return success();
}

LogicalResult gradient(SliceOp slice, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  d.giveInput(slice,
              SliceGradOp::create(b, tensorType(slice.getInput()), dy,
                                  slice.getStartsAttr(), slice.getStepsAttr()));
  return success();
}

LogicalResult gradient(GatherOp gather, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  if (d.needs(gather.getInput()))
    d.accumulate(gather.getInput(),
                 GatherGradOp::create(b, tensorType(gather.getInput()), dy,
                                      d.primal(gather.getIndices()),
                                      gather.getAxisAttr()));
  return success();
}

LogicalResult gradient(ReduceSumOp reduce, Differentiator &d) {
  Value dy = d.resultGradient(0);
  return reduceBackward(reduce.getInput(), reduce.getAxes(), /*mean=*/false, dy,
                        d);
}

LogicalResult gradient(ReduceMeanOp reduce, Differentiator &d) {
  Value dy = d.resultGradient(0);
  return reduceBackward(reduce.getInput(), reduce.getAxes(), /*mean=*/true, dy,
                        d);
}

LogicalResult gradient(SoftmaxCrossEntropyOp loss, Differentiator &d) {
  ImplicitLocOpBuilder &b = d.b;
  Value dy = d.resultGradient(0);
  if (d.needs(loss.getLogits()))
    d.accumulate(loss.getLogits(), SoftmaxCrossEntropyGradOp::create(
                                       b, dy, d.primal(loss.getLogits()),
                                       d.primal(loss.getLabels())));
  return success();
}

template <typename Op>
struct NNGradient : GradientOpInterface::ExternalModel<NNGradient<Op>, Op> {
  LogicalResult buildGradient(Operation *op, Differentiator &d) const {
    return gradient(cast<Op>(op), d);
  }
};

template <typename... Ops> void attachToAll(MLIRContext *context) {
  (Ops::template attachInterface<NNGradient<Ops>>(*context), ...);
}

} // namespace

void parplan::registerNNGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, NNDialect *) {
    attachToAll<MatMulOp, GemmOp, ConvOp, ConvGradInputOp, ResizeOp, AddOp,
                SubOp, MulOp, DivOp, PowOp, WhereOp, ReluOp, LeakyReluOp,
                HardSigmoidOp, HardSwishOp, ClipOp, GeluOp, TanhOp, SigmoidOp,
                SqrtOp, ExpOp, LogOp, ErfOp, DropoutOp, CastOp, SoftmaxOp,
                LogSoftmaxOp, LayerNormOp, BatchNormOp, MaxPoolOp, AvgPoolOp,
                ReshapeOp, ExpandOp, TransposeOp, ConcatOp, SplitOp, SliceOp,
                GatherOp, ReduceSumOp, ReduceMeanOp, SoftmaxCrossEntropyOp>(
        context);
  });
}
