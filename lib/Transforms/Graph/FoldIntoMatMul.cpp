//===- FoldIntoMatMul.cpp - transposes and scalings into products ---------===//

#include "parplan/Transforms/Graph/Passes.h"

#include "Matchers.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace parplan {
#define GEN_PASS_DEF_NNFOLDINTOMATMUL
#include "parplan/Transforms/Graph/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan::nn;
namespace match = parplan::nn::match;

namespace {

/// The input of a transpose that swaps the last two dimensions and keeps
/// the others in place; null otherwise.
Value swappedLastTwo(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose)
    return {};
  ArrayRef<int64_t> perm = transpose.getPerm();
  int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
    return {};
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != d)
      return {};
  return transpose.getInput();
}

/// `value` as (x, factor) when it is x scaled by a splat constant (x * c,
/// c * x: factor c; x / c: factor 1 / c) of x's own type, so that the
/// constant broadcasts nothing; std::nullopt otherwise.
std::optional<std::pair<Value, double>> scaled(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || !isa<MulOp, DivOp>(op))
    return std::nullopt;
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  auto sameType = [&](Value x) { return x.getType() == value.getType(); };
  if (isa<DivOp>(op)) {
    std::optional<double> c = match::splat(rhs);
    if (!c || *c == 0.0 || !std::isfinite(1.0 / *c) || !sameType(lhs))
      return std::nullopt;
    return std::make_pair(lhs, 1.0 / *c);
  }
  if (std::optional<double> c = match::splat(rhs); c && sameType(lhs))
    return std::make_pair(lhs, *c);
  if (std::optional<double> c = match::splat(lhs); c && sameType(rhs))
    return std::make_pair(rhs, *c);
  return std::nullopt;
}

/// Whether `alpha` scales `product` as its own arithmetic would: a float32
/// alpha (the matrix library's) that is finite and not 0 (cuBLAS skips the
/// product for 0, where 0 * inf would be NaN), on a product of a type
/// float32 rounds no finer than (not f64).
bool representable(MatMulOp product, double alpha) {
  auto single = static_cast<float>(alpha);
  return std::isfinite(single) && single != 0.0f &&
         !product.getType().getElementType().isF64();
}

/// A transpose of the last two dimensions, or a splat scaling with no other
/// use, feeding a product: read by the product's flags and alpha instead.
struct FoldIntoOperands : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp product,
                                PatternRewriter &rewriter) const override {
    Value lhs = product.getLhs(), rhs = product.getRhs();
    bool transposeLhs = product.getTransposeLhs();
    bool transposeRhs = product.getTransposeRhs();
    double alpha = product.getScale();
    bool changed = false;
    auto fold = [&](Value &operand, bool &flag) {
      if (Value input = swappedLastTwo(operand)) {
        operand = input;
        flag = !flag;
        changed = true;
        return;
      }
      if (!operand.hasOneUse())
        return;
      if (std::optional<std::pair<Value, double>> s = scaled(operand);
          s && representable(product, alpha * s->second)) {
        operand = s->first;
        alpha *= s->second;
        changed = true;
      }
    };
    fold(lhs, transposeLhs);
    fold(rhs, transposeRhs);
    if (!changed)
      return failure();
    rewriter.replaceOpWithNewOp<MatMulOp>(product, lhs, rhs, transposeLhs,
                                          transposeRhs, alpha);
    return success();
  }
};

/// A product whose one use scales it by a splat: the scaling is its alpha.
template <typename ScaleOp>
struct FoldScaleOfProduct : OpRewritePattern<ScaleOp> {
  using OpRewritePattern<ScaleOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(ScaleOp scale,
                                PatternRewriter &rewriter) const override {
    std::optional<std::pair<Value, double>> s = scaled(scale.getResult());
    if (!s)
      return failure();
    auto product = s->first.template getDefiningOp<MatMulOp>();
    double alpha = product ? product.getScale() * s->second : 0;
    if (!product || !product->hasOneUse() || !representable(product, alpha))
      return failure();
    // The product keeps its own location: node names (annotations,
    // reports, profiles) name the product, not the scaling.
    rewriter.setInsertionPoint(scale);
    auto scaled = MatMulOp::create(rewriter, product.getLoc(), product.getLhs(),
                                   product.getRhs(), product.getTransposeLhs(),
                                   product.getTransposeRhs(), alpha);
    rewriter.replaceOp(scale, scaled.getResult());
    rewriter.eraseOp(product);
    return success();
  }
};

struct NNFoldIntoMatMulPass
    : parplan::impl::NNFoldIntoMatMulBase<NNFoldIntoMatMulPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldIntoOperands, FoldScaleOfProduct<MulOp>,
                 FoldScaleOfProduct<DivOp>>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
