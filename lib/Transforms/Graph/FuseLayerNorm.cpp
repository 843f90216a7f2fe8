//===- FuseLayerNorm.cpp - decomposed layer norms to nn.layer_norm --------===//

#include "parplan/Transforms/Graph/Passes.h"

#include "Matchers.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace parplan {
#define GEN_PASS_DEF_NNFUSELAYERNORM
#include "parplan/Transforms/Graph/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan::nn;
namespace match = parplan::nn::match;

namespace {

struct LayerNormParts {
  Value input;
  int64_t axis;
  double epsilon;
};

/// The first normalized axis when `op` averages exactly the dimensions from
/// some axis to the last one, keeping them.
std::optional<int64_t> trailingAxis(ReduceMeanOp op) {
  if (!op.getKeepdims())
    return std::nullopt;
  int64_t rank = op.getInput().getType().getRank();
  if (op.getAxes().empty())
    return 0;
  SmallVector<int64_t> axes;
  for (int64_t axis : op.getAxes())
    axes.push_back(axis < 0 ? axis + rank : axis);
  llvm::sort(axes);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i))
      return std::nullopt;
  return axes.front();
}

/// Matches n = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + epsilon).
std::optional<LayerNormParts> matchNormalized(Value normalized) {
  auto div = normalized.getDefiningOp<DivOp>();
  if (!div)
    return std::nullopt;
  Value centered = div.getLhs();
  auto sqrt = div.getRhs().getDefiningOp<SqrtOp>();
  auto center = centered.getDefiningOp<SubOp>();
  if (!sqrt || !center)
    return std::nullopt;
  auto mean = center.getRhs().getDefiningOp<ReduceMeanOp>();
  Value x = center.getLhs();
  if (!mean || mean.getInput() != x)
    return std::nullopt;
  auto varianceAndEpsilon = match::commutative<AddOp>(
      sqrt.getInput(), [](Value v) { return v.getDefiningOp<ReduceMeanOp>(); });
  if (!varianceAndEpsilon)
    return std::nullopt;
  auto [varianceValue, epsilonValue] = *varianceAndEpsilon;
  std::optional<double> epsilon = match::splat(epsilonValue);
  auto variance = varianceValue.getDefiningOp<ReduceMeanOp>();
  std::optional<int64_t> axis = trailingAxis(mean);
  if (!epsilon || *epsilon < 0 || !axis || trailingAxis(variance) != axis)
    return std::nullopt;
  Value squared = variance.getInput();
  bool isSquare = false;
  if (auto pow = squared.getDefiningOp<PowOp>())
    isSquare = pow.getLhs() == centered && match::isSplat(pow.getRhs(), 2.0);
  else if (auto mul = squared.getDefiningOp<MulOp>())
    isSquare = mul.getLhs() == centered && mul.getRhs() == centered;
  if (!isSquare)
    return std::nullopt;
  // Broadcasting must not have changed the shape anywhere on the way.
  if (centered.getType() != x.getType() || normalized.getType() != x.getType())
    return std::nullopt;
  return LayerNormParts{x, *axis, *epsilon};
}

bool hasNormalizedShape(Value value, const LayerNormParts &parts) {
  auto input = cast<RankedTensorType>(parts.input.getType());
  auto type = cast<RankedTensorType>(value.getType());
  return type.getShape() == input.getShape().drop_front(parts.axis) &&
         type.getElementType() == input.getElementType();
}

/// Matches scaled = n * scale (either order); returns (n's parts, scale).
std::optional<std::pair<LayerNormParts, Value>> matchScaled(Value scaled) {
  auto mul = scaled.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  for (auto [normalized, scale] :
       {std::make_pair(mul.getLhs(), mul.getRhs()),
        std::make_pair(mul.getRhs(), mul.getLhs())}) {
    std::optional<LayerNormParts> parts = matchNormalized(normalized);
    if (parts && hasNormalizedShape(scale, *parts) &&
        scaled.getType() == parts->input.getType())
      return std::make_pair(*parts, scale);
  }
  return std::nullopt;
}

LayerNormOp createLayerNorm(PatternRewriter &rewriter, Operation *root,
                            const LayerNormParts &parts, Value scale,
                            Value bias) {
  return rewriter.replaceOpWithNewOp<LayerNormOp>(
      root, parts.input.getType(), parts.input, scale, bias,
      rewriter.getI64IntegerAttr(parts.axis),
      rewriter.getF32FloatAttr(static_cast<float>(parts.epsilon)));
}

/// y = n * scale + bias.
struct FuseWithBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [scaled, bias] : {std::make_pair(add.getLhs(), add.getRhs()),
                                std::make_pair(add.getRhs(), add.getLhs())}) {
      auto match = matchScaled(scaled);
      if (!match || !hasNormalizedShape(bias, match->first) ||
          add.getType() != match->first.input.getType())
        continue;
      createLayerNorm(rewriter, add, match->first, match->second, bias);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a decomposed layer norm");
  }
};

/// y = n * scale, when no bias follows.
struct FuseWithoutBias : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    auto match = matchScaled(mul.getResult());
    if (!match)
      return rewriter.notifyMatchFailure(mul, "not a decomposed layer norm");
    // Leave an add of a bias to FuseWithBias, which takes it along; any
    // other add (a residual connection) does not stop this fusion.
    for (Operation *user : mul->getUsers()) {
      auto add = dyn_cast<AddOp>(user);
      if (!add)
        continue;
      Value other =
          add.getLhs() == mul.getResult() ? add.getRhs() : add.getLhs();
      if (hasNormalizedShape(other, match->first) &&
          add.getType() == match->first.input.getType())
        return rewriter.notifyMatchFailure(mul, "a bias follows");
    }
    createLayerNorm(rewriter, mul, match->first, match->second, Value());
    return success();
  }
};

struct NNFuseLayerNormPass
    : parplan::impl::NNFuseLayerNormBase<NNFuseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseWithBias, FuseWithoutBias>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
