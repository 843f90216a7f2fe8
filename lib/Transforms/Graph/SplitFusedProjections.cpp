//===- SplitFusedProjections.cpp - one projection per part ----------------===//
//
// A fused projection followed by a split is, for the sharding search, one
// weight that cannot be split per part. Splitting the weight itself into
// parameters of their own gives each part its own layout; the parameters
// keep pointing into the stored weight (part_of, part), so loading weights
// does not change.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Transforms/Graph/Passes.h"

#include "mlir/IR/PatternMatch.h"

#include <string>

namespace parplan {
#define GEN_PASS_DEF_NNSPLITFUSEDPROJECTIONS
#include "parplan/Transforms/Graph/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan::nn;

namespace {

/// "w[:, 0:768]" for a part along axis 1 of a 2-D weight, "b[0:768]" for a
/// 1-D one.
std::string partName(StringRef name, int64_t rank, int64_t axis, int64_t begin,
                     int64_t end) {
  std::string text = name.str() + "[";
  for (int64_t d = 0; d < rank; ++d) {
    if (d)
      text += ", ";
    text += d == axis ? std::to_string(begin) + ":" + std::to_string(end)
                      : std::string(":");
  }
  return text + "]";
}

/// A parameter that only `user` reads, and that is not already a part.
ParamOp ownParam(Value value, Operation *user) {
  auto param = value.getDefiningOp<ParamOp>();
  if (!param || param.getPart() || !value.hasOneUse() ||
      *value.getUsers().begin() != user)
    return {};
  return param;
}

/// The parameter holding elements [begin, end) of `param` along `axis`.
Value makePart(OpBuilder &b, ParamOp param, int64_t axis, int64_t begin,
               int64_t end) {
  auto type = param.getType();
  SmallVector<int64_t> shape(type.getShape());
  int64_t extent = shape[axis];
  shape[axis] = end - begin;
  return ParamOp::create(
      b, param.getLoc(), type.clone(shape),
      b.getStringAttr(
          partName(param.getName(), type.getRank(), axis, begin, end)),
      param.getSourceAttr(), param.getNameAttr(),
      b.getDenseI64ArrayAttr({axis, begin, extent}));
}

struct SplitFusedProjectionsPass
    : parplan::impl::NNSplitFusedProjectionsBase<SplitFusedProjectionsPass> {
  void runOnOperation() override {
    SmallVector<SplitOp> splits;
    getOperation().walk([&](SplitOp split) { splits.push_back(split); });
    for (SplitOp split : splits)
      rewrite(split);
  }

  void rewrite(SplitOp split) {
    auto type = cast<RankedTensorType>(split.getInput().getType());
    int64_t axis =
        *normalizeAxis(static_cast<int64_t>(split.getAxis()), type.getRank());
    if (axis != type.getRank() - 1)
      return;
    Value projected = split.getInput();
    if (!projected.hasOneUse())
      return;
    // An optional bias add between the projection and the split.
    ParamOp bias;
    AddOp add = projected.getDefiningOp<AddOp>();
    if (add) {
      Value other;
      for (Value operand : {add.getLhs(), add.getRhs()}) {
        if (auto param = ownParam(operand, add);
            param && param.getType().getRank() == 1 &&
            param.getType().getDimSize(0) == type.getDimSize(axis))
          bias = param;
        else
          other = operand;
      }
      if (!bias || !other || !other.hasOneUse())
        return;
      projected = other;
    }
    Operation *projection = projected.getDefiningOp();
    ParamOp weight;
    int64_t weightAxis = 0;
    if (auto matmul = dyn_cast_or_null<MatMulOp>(projection)) {
      weight = ownParam(matmul.getRhs(), matmul);
      weightAxis = matmul.getTransposeRhs() ? 0 : 1;
      if (!weight || weight.getType().getRank() != 2)
        return;
    } else if (auto gemm = dyn_cast_or_null<GemmOp>(projection)) {
      if (gemm.getC())
        return;
      weight = ownParam(gemm.getB(), gemm);
      weightAxis = gemm.getTransB() ? 0 : 1;
      if (!weight)
        return;
    } else {
      return;
    }

    OpBuilder b(split);
    SmallVector<Value> parts;
    int64_t begin = 0;
    for (auto [result, size] :
         llvm::zip_equal(split.getResults(), split.getSizes())) {
      int64_t end = begin + size;
      b.setInsertionPoint(weight);
      Value weightPart = makePart(b, weight, weightAxis, begin, end);
      Value biasPart = bias ? makePart(b, bias, 0, begin, end) : Value();
      b.setInsertionPoint(split);
      Value part;
      if (auto matmul = dyn_cast<MatMulOp>(projection)) {
        part = MatMulOp::create(b, matmul.getLoc(), matmul.getLhs(), weightPart,
                                matmul.getTransposeLhs(),
                                matmul.getTransposeRhs(), matmul.getScale());
      } else {
        auto gemm = cast<GemmOp>(projection);
        part = GemmOp::create(b, gemm.getLoc(), gemm.getA(), weightPart,
                              Value(), gemm.getAlphaAttr(), gemm.getBetaAttr(),
                              gemm.getTransAAttr(), gemm.getTransBAttr());
      }
      if (bias)
        part = AddOp::create(b, add.getLoc(), part, biasPart);
      result.replaceAllUsesWith(part);
      begin = end;
    }
    split.erase();
    if (add)
      add.erase();
    projection->erase();
    weight.erase();
    if (bias)
      bias.erase();
  }
};

} // namespace
