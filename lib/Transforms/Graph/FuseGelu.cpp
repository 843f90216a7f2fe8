//===- FuseGelu.cpp - decomposed GELU to nn.gelu --------------------------===//

#include "parplan/Transforms/Graph/Passes.h"

#include "Matchers.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace parplan {
#define GEN_PASS_DEF_NNFUSEGELU
#include "parplan/Transforms/Graph/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan::nn;
namespace match = parplan::nn::match;

namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kPi = 3.141592653589793;

/// The factors of a product tree: nested nn.mul ops, a few levels deep.
void collectFactors(Value value, SmallVectorImpl<Value> &factors,
                    int depth = 0) {
  if (auto mul = value.getDefiningOp<MulOp>(); mul && depth < 4) {
    collectFactors(mul.getLhs(), factors, depth + 1);
    collectFactors(mul.getRhs(), factors, depth + 1);
    return;
  }
  factors.push_back(value);
}

/// erf(x / sqrt(2)) or erf(x * (1 / sqrt(2))): returns x.
Value erfArgument(Value value) {
  auto erf = value.getDefiningOp<ErfOp>();
  if (!erf)
    return {};
  Value z = erf.getInput();
  if (auto div = z.getDefiningOp<DivOp>())
    return match::isSplat(div.getRhs(), kSqrt2) ? div.getLhs() : Value();
  auto scaled =
      match::commutative<MulOp>(z, [](Value v) { return !match::splat(v); });
  if (scaled && match::isSplat(scaled->second, 1.0 / kSqrt2))
    return scaled->first;
  return {};
}

/// True when `value` is x^3 written as pow(x, 3) or as a product of three x.
bool isCube(Value value, Value x) {
  if (auto pow = value.getDefiningOp<PowOp>())
    return pow.getLhs() == x && match::isSplat(pow.getRhs(), 3.0);
  SmallVector<Value> factors;
  collectFactors(value, factors);
  return factors.size() == 3 && llvm::all_equal(factors) && factors[0] == x;
}

/// tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)): returns x.
Value tanhArgument(Value value) {
  auto tanh = value.getDefiningOp<TanhOp>();
  if (!tanh)
    return {};
  const double sqrt2OverPi = std::sqrt(2.0 / kPi);
  auto scaled = match::commutative<MulOp>(
      tanh.getInput(), [&](Value v) { return match::isSplat(v, sqrt2OverPi); });
  if (!scaled)
    return {};
  auto sum = scaled->second.getDefiningOp<AddOp>();
  if (!sum)
    return {};
  for (auto [x, term] : {std::make_pair(sum.getLhs(), sum.getRhs()),
                         std::make_pair(sum.getRhs(), sum.getLhs())}) {
    auto cubic = match::commutative<MulOp>(
        term, [](Value v) { return match::isSplat(v, 0.044715); });
    if (cubic && isCube(cubic->second, x))
      return x;
  }
  return {};
}

/// Rewrites x * (f(x) + 1) * 0.5, in any nesting and order, where f is the
/// erf or tanh core of GELU.
struct FuseGeluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> factors;
    collectFactors(mul.getResult(), factors);
    double constant = 1.0;
    SmallVector<Value> variables;
    for (Value factor : factors) {
      if (std::optional<double> value = match::splat(factor))
        constant *= *value;
      else
        variables.push_back(factor);
    }
    if (variables.size() != 2 || std::abs(constant - 0.5) > 1e-6)
      return rewriter.notifyMatchFailure(mul,
                                         "not a product x * (. + 1) * 0.5");
    for (auto [x, shifted] : {std::make_pair(variables[0], variables[1]),
                              std::make_pair(variables[1], variables[0])}) {
      auto plusOne = match::commutative<AddOp>(
          shifted, [](Value v) { return match::isSplat(v, 1.0); });
      if (!plusOne || x.getType() != mul.getType())
        continue;
      Value core = plusOne->second;
      GeluApproximation kind;
      if (erfArgument(core) == x)
        kind = GeluApproximation::none;
      else if (tanhArgument(core) == x)
        kind = GeluApproximation::tanh;
      else
        continue;
      rewriter.replaceOpWithNewOp<GeluOp>(
          mul, x.getType(), x,
          GeluApproximationAttr::get(rewriter.getContext(), kind));
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "no erf or tanh GELU core");
  }
};

struct NNFuseGeluPass : parplan::impl::NNFuseGeluBase<NNFuseGeluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGeluPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
