//===- NNOps.cpp - nn dialect operations ----------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace parplan::nn;

#include "parplan/Dialect/NN/NNEnums.cpp.inc"

#define GET_OP_CLASSES
#include "parplan/Dialect/NN/NNOps.cpp.inc"

namespace {

/// "8x128x768"; "scalar" for rank 0.
std::string shapeString(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(shape, os, "x");
  return text;
}

/// ONNX axis in [-rank, rank) to [0, rank); std::nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

LogicalResult verifyResultShape(Operation *op, ArrayRef<int64_t> expected) {
  auto result = cast<ShapedType>(op->getResult(0).getType());
  if (result.getShape() == expected)
    return success();
  return op->emitOpError() << "result shape " << shapeString(result.getShape())
                           << " does not match the expected "
                           << shapeString(expected);
}

LogicalResult verifyName(Operation *op, StringRef name) {
  if (name.empty())
    return op->emitOpError() << "needs a non-empty name";
  return success();
}

/// Shared by reduce_mean and reduce_sum.
LogicalResult verifyReduction(Operation *op, ShapedType input,
                              ArrayRef<int64_t> axes, bool keepdims) {
  int64_t rank = input.getRank();
  llvm::SmallBitVector reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    std::optional<int64_t> dim = normalizeAxis(axis, rank);
    if (!dim)
      return op->emitOpError()
             << "axis " << axis << " is out of range for rank " << rank;
    if (reduced.test(*dim))
      return op->emitOpError() << "reduces dimension " << *dim << " twice";
    reduced.set(*dim);
  }
  SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced.test(d))
      expected.push_back(input.getDimSize(d));
    else if (keepdims)
      expected.push_back(1);
  }
  return verifyResultShape(op, expected);
}

} // namespace

//===----------------------------------------------------------------------===//
// param, input, constant
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() { return verifyName(*this, getName()); }

LogicalResult InputOp::verify() { return verifyName(*this, getName()); }

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// matmul, gemm
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::verify() {
  SmallVector<int64_t> lhs(getLhs().getType().getShape());
  SmallVector<int64_t> rhs(getRhs().getType().getShape());
  if (lhs.empty() || rhs.empty())
    return emitOpError() << "operands must have rank 1 or more";
  bool lhsIsVector = lhs.size() == 1, rhsIsVector = rhs.size() == 1;
  if (lhsIsVector)
    lhs.insert(lhs.begin(), 1);
  if (rhsIsVector)
    rhs.push_back(1);
  int64_t lhsK = lhs[lhs.size() - 1], rhsK = rhs[rhs.size() - 2];
  if (lhsK != rhsK)
    return emitOpError() << "contracts a dimension of size " << lhsK
                         << " with one of size " << rhsK;
  SmallVector<int64_t> expected;
  if (!OpTrait::util::getBroadcastedShape(ArrayRef(lhs).drop_back(2),
                                          ArrayRef(rhs).drop_back(2), expected))
    return emitOpError() << "batch dimensions "
                         << shapeString(ArrayRef(lhs).drop_back(2)) << " and "
                         << shapeString(ArrayRef(rhs).drop_back(2))
                         << " do not broadcast";
  if (!lhsIsVector)
    expected.push_back(lhs[lhs.size() - 2]);
  if (!rhsIsVector)
    expected.push_back(rhs.back());
  return verifyResultShape(*this, expected);
}

LogicalResult GemmOp::verify() {
  auto a = getA().getType(), b = getB().getType();
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOpError() << "needs 2-D a and b, got ranks " << a.getRank()
                         << " and " << b.getRank();
  int64_t m = a.getDimSize(getTransA() ? 1 : 0);
  int64_t aK = a.getDimSize(getTransA() ? 0 : 1);
  int64_t bK = b.getDimSize(getTransB() ? 1 : 0);
  int64_t n = b.getDimSize(getTransB() ? 0 : 1);
  if (aK != bK)
    return emitOpError() << "contracts a dimension of size " << aK
                         << " with one of size " << bK;
  if (Value c = getC()) {
    ArrayRef<int64_t> cShape = cast<ShapedType>(c.getType()).getShape();
    int64_t target[2] = {m, n};
    bool broadcasts = cShape.size() <= 2;
    for (size_t i = 0; broadcasts && i < cShape.size(); ++i) {
      int64_t want = target[2 - cShape.size() + i];
      broadcasts = cShape[i] == want || cShape[i] == 1;
    }
    if (!broadcasts)
      return emitOpError() << "c of shape " << shapeString(cShape)
                           << " does not broadcast to " << m << "x" << n;
  }
  return verifyResultShape(*this, {m, n});
}

//===----------------------------------------------------------------------===//
// softmax, layer_norm
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  // I64Attr hands the value back as uint64_t; ONNX axes are signed.
  int64_t axis = getAxis(), rank = getType().getRank();
  if (!normalizeAxis(axis, rank))
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto input = getInput().getType();
  int64_t signedAxis = getAxis();
  std::optional<int64_t> axis = normalizeAxis(signedAxis, input.getRank());
  if (!axis)
    return emitOpError() << "axis " << signedAxis
                         << " is out of range for rank " << input.getRank();
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  auto check = [&](Value operand, StringRef role) -> LogicalResult {
    ArrayRef<int64_t> shape = cast<ShapedType>(operand.getType()).getShape();
    if (shape == normalized)
      return success();
    return emitOpError() << role << " of shape " << shapeString(shape)
                         << " does not match the normalized shape "
                         << shapeString(normalized);
  };
  if (failed(check(getScale(), "scale")))
    return failure();
  if (getBias() && failed(check(getBias(), "bias")))
    return failure();
  return verifyResultShape(*this, input.getShape());
}

//===----------------------------------------------------------------------===//
// reshape, transpose
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  int64_t from = getInput().getType().getNumElements();
  int64_t to = getType().getNumElements();
  if (from != to)
    return emitOpError() << "cannot reshape " << from << " elements into "
                         << to;
  return success();
}

LogicalResult TransposeOp::verify() {
  auto input = getInput().getType();
  ArrayRef<int64_t> perm = getPerm();
  if (static_cast<int64_t>(perm.size()) != input.getRank())
    return emitOpError() << "perm has " << perm.size()
                         << " entries for an input of rank " << input.getRank();
  llvm::SmallBitVector seen(perm.size());
  SmallVector<int64_t> expected;
  for (int64_t dim : perm) {
    if (dim < 0 || dim >= input.getRank() || seen.test(dim)) {
      InFlightDiagnostic diag = emitOpError() << "perm [";
      llvm::interleaveComma(perm, diag);
      return diag << "] is not a permutation of 0.." << input.getRank() - 1;
    }
    seen.set(dim);
    expected.push_back(input.getDimSize(dim));
  }
  return verifyResultShape(*this, expected);
}

//===----------------------------------------------------------------------===//
// reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceMeanOp::verify() {
  return verifyReduction(*this, getInput().getType(), getAxes(), getKeepdims());
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduction(*this, getInput().getType(), getAxes(), getKeepdims());
}
