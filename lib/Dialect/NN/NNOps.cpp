//===- NNOps.cpp - nn dialect operations ----------------------------------===//
//
// Shape rules live in inferReturnTypes where an op's result type follows
// from its operands; the InferTypeOpInterface verifier then checks parsed
// ops against the same rule. Folders cover the ops that exported models use
// to compute shapes (Shape, Gather, Concat, Slice, Cast, arithmetic), so
// those subgraphs fold to constants under canonicalization.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

#include <cmath>

using namespace mlir;
using namespace parplan::nn;

#include "parplan/Dialect/NN/NNEnums.cpp.inc"

#define GET_OP_CLASSES
#include "parplan/Dialect/NN/NNOps.cpp.inc"

namespace {

/// Constants larger than this are not folded: shape arithmetic is tiny, and
/// copying weight-sized constants would only cost memory.
constexpr int64_t kMaxFoldElements = 1 << 12;

/// An error from inferReturnTypes, worded like a verifier's.
template <typename... Args>
LogicalResult inferError(std::optional<Location> location, StringRef opName,
                         Args &&...args) {
  return emitOptionalError(location, "'", opName, "' op ",
                           std::forward<Args>(args)...);
}

RankedTensorType rankedType(Value value) {
  return dyn_cast<RankedTensorType>(value.getType());
}

LogicalResult verifyName(Operation *op, StringRef name) {
  if (name.empty())
    return op->emitOpError() << "needs a non-empty name";
  return success();
}

/// Row-major strides.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// The constant operand of a fold as dense elements small enough to fold.
DenseElementsAttr foldableConstant(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || dense.getNumElements() > kMaxFoldElements)
    return {};
  return dense;
}

/// Builds a constant of `type` by picking, for each result element (in
/// row-major order), the flat index of an input element.
DenseElementsAttr
gatherElements(DenseElementsAttr input, ShapedType type,
               function_ref<int64_t(ArrayRef<int64_t>)> pick) {
  SmallVector<Attribute> values(input.getValues<Attribute>());
  SmallVector<Attribute> result;
  result.reserve(type.getNumElements());
  SmallVector<int64_t> index(type.getRank(), 0);
  for (int64_t flat = 0; flat < type.getNumElements(); ++flat) {
    result.push_back(values[pick(index)]);
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      if (++index[d] < type.getDimSize(d))
        break;
      index[d] = 0;
    }
  }
  return DenseElementsAttr::get(type, result);
}

} // namespace

//===----------------------------------------------------------------------===//
// param, input, constant
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (failed(verifyName(*this, getName())))
    return failure();
  if (static_cast<bool>(getPartOf()) != static_cast<bool>(getPart()))
    return emitOpError() << "needs both part_of and part, or neither";
  if (!getPart())
    return success();
  ArrayRef<int64_t> part = *getPart();
  auto type = getType();
  if (part.size() != 3 || part[0] < 0 || part[0] >= type.getRank())
    return emitOpError() << "part must be [axis, offset, extent] with an axis "
                            "of the rank-"
                         << type.getRank() << " result";
  int64_t size = type.getDimSize(part[0]);
  if (part[1] < 0 || part[2] < 0 || part[1] + size > part[2])
    return emitOpError() << "part of " << size << " elements from " << part[1]
                         << " along axis " << part[0]
                         << " does not fit the stored extent " << part[2];
  return success();
}

LogicalResult InputOp::verify() { return verifyName(*this, getName()); }

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// matmul, gemm, conv
//===----------------------------------------------------------------------===//

void MatMulOp::build(OpBuilder &b, OperationState &state, Value lhs, Value rhs,
                     bool transposeLhs, bool transposeRhs, double alpha) {
  build(b, state, lhs, rhs, transposeLhs ? b.getUnitAttr() : UnitAttr(),
        transposeRhs ? b.getUnitAttr() : UnitAttr(),
        alpha == 1.0 ? FloatAttr() : b.getF32FloatAttr(alpha));
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhsType = rankedType(adaptor.getLhs()),
       rhsType = rankedType(adaptor.getRhs());
  if (!lhsType || !rhsType || lhsType.getRank() == 0 || rhsType.getRank() == 0)
    return inferError(location, getOperationName(),
                      "operands must have rank 1 or more");
  SmallVector<int64_t> lhs(lhsType.getShape()), rhs(rhsType.getShape());
  // op(): the operand read with its last two dimensions swapped.
  auto transposed = [&](SmallVector<int64_t> &shape, bool flag,
                        StringRef name) {
    if (!flag)
      return success();
    if (shape.size() < 2)
      return inferError(location, getOperationName(), name,
                        " needs an operand of rank 2 or more, got rank ",
                        shape.size());
    std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
    return success();
  };
  if (failed(transposed(lhs, adaptor.getTransposeLhs(), "transpose_lhs")) ||
      failed(transposed(rhs, adaptor.getTransposeRhs(), "transpose_rhs")))
    return failure();
  bool lhsIsVector = lhs.size() == 1, rhsIsVector = rhs.size() == 1;
  if (lhsIsVector)
    lhs.insert(lhs.begin(), 1);
  if (rhsIsVector)
    rhs.push_back(1);
  int64_t lhsK = lhs[lhs.size() - 1], rhsK = rhs[rhs.size() - 2];
  if (lhsK != rhsK)
    return inferError(location, getOperationName(),
                      "contracts a dimension of size ", lhsK,
                      " with one of size ", rhsK);
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(ArrayRef(lhs).drop_back(2),
                                          ArrayRef(rhs).drop_back(2), shape))
    return inferError(location, getOperationName(), "batch dimensions ",
                      shapeString(ArrayRef(lhs).drop_back(2)), " and ",
                      shapeString(ArrayRef(rhs).drop_back(2)),
                      " do not broadcast");
  if (!lhsIsVector)
    shape.push_back(lhs[lhs.size() - 2]);
  if (!rhsIsVector)
    shape.push_back(rhs.back());
  inferred.push_back(RankedTensorType::get(shape, lhsType.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto a = rankedType(adaptor.getA()), b = rankedType(adaptor.getB());
  if (!a || !b || a.getRank() != 2 || b.getRank() != 2)
    return inferError(location, getOperationName(),
                      "needs 2-D a and b, got ranks ", a ? a.getRank() : -1,
                      " and ", b ? b.getRank() : -1);
  bool transA = adaptor.getTransA(), transB = adaptor.getTransB();
  int64_t m = a.getDimSize(transA ? 1 : 0), aK = a.getDimSize(transA ? 0 : 1);
  int64_t bK = b.getDimSize(transB ? 1 : 0), n = b.getDimSize(transB ? 0 : 1);
  if (aK != bK)
    return inferError(location, getOperationName(),
                      "contracts a dimension of size ", aK,
                      " with one of size ", bK);
  if (Value c = adaptor.getC()) {
    ArrayRef<int64_t> cShape = cast<ShapedType>(c.getType()).getShape();
    int64_t target[2] = {m, n};
    bool broadcasts = cShape.size() <= 2;
    for (size_t i = 0; broadcasts && i < cShape.size(); ++i) {
      int64_t want = target[2 - cShape.size() + i];
      broadcasts = cShape[i] == want || cShape[i] == 1;
    }
    if (!broadcasts)
      return inferError(location, getOperationName(), "c of shape ",
                        shapeString(cShape), " does not broadcast to ", m, "x",
                        n);
  }
  inferred.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

namespace {

/// Output extent of a window of `kernel` elements over a padded dimension.
/// Returns std::nullopt when the dilated window does not fit.
std::optional<int64_t> windowedExtent(int64_t size, int64_t kernel,
                                      int64_t stride, int64_t padBegin,
                                      int64_t padEnd, int64_t dilation,
                                      bool ceilMode) {
  int64_t span, padded;
  if (__builtin_mul_overflow(dilation, kernel - 1, &span) ||
      __builtin_add_overflow(span, 1, &span) ||
      __builtin_add_overflow(size, padBegin, &padded) ||
      __builtin_add_overflow(padded, padEnd, &padded) || span > padded)
    return std::nullopt;
  int64_t steps = padded - span;
  int64_t extent =
      (ceilMode ? (steps + stride - 1) / stride : steps / stride) + 1;
  // A window may not start in the end padding (PyTorch and ONNX agree).
  if (ceilMode && (extent - 1) * stride >= size + padBegin)
    --extent;
  return extent;
}

/// Checks strides, pads and dilations of a k-dimensional windowed op.
LogicalResult checkWindowAttrs(std::optional<Location> location,
                               StringRef opName, int64_t spatialRank,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> pads,
                               ArrayRef<int64_t> dilations) {
  if (static_cast<int64_t>(strides.size()) != spatialRank ||
      static_cast<int64_t>(dilations.size()) != spatialRank ||
      static_cast<int64_t>(pads.size()) != 2 * spatialRank)
    return inferError(location, opName, "needs ", spatialRank,
                      " strides and dilations and ", 2 * spatialRank,
                      " pads for ", spatialRank, " spatial dimensions");
  if (llvm::any_of(strides, [](int64_t s) { return s <= 0; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d <= 0; }))
    return inferError(location, opName,
                      "strides and dilations must be positive");
  if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return inferError(location, opName, "pads must be non-negative");
  return success();
}

} // namespace

namespace {
/// The result type of a conv of `input` by `weight`: the one shape rule of
/// nn.conv and of its gradients, which state the types it relates.
FailureOr<RankedTensorType>
inferConvType(std::optional<Location> location, StringRef name,
              RankedTensorType input, RankedTensorType weight,
              ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
              ArrayRef<int64_t> dilations, int64_t group) {
  if (!input || !weight || input.getRank() < 3 ||
      weight.getRank() != input.getRank())
    return inferError(
        location, name,
        "needs an input [N, C, D...] and a weight [M, C/group, K...] "
        "of the same rank, 3 or more");
  int64_t spatialRank = input.getRank() - 2;
  if (failed(checkWindowAttrs(location, name, spatialRank, strides, pads,
                              dilations)))
    return failure();
  int64_t channels = input.getDimSize(1), filters = weight.getDimSize(0);
  int64_t groupChannels = 0;
  if (group <= 0 || filters % group != 0 ||
      __builtin_mul_overflow(weight.getDimSize(1), group, &groupChannels) ||
      groupChannels != channels)
    return inferError(location, name, "weight ", shapeString(weight.getShape()),
                      " in ", group, " groups does not match ", channels,
                      " input channels");
  SmallVector<int64_t> shape = {input.getDimSize(0), filters};
  for (int64_t i = 0; i < spatialRank; ++i) {
    std::optional<int64_t> extent = windowedExtent(
        input.getDimSize(2 + i), weight.getDimSize(2 + i), strides[i], pads[i],
        pads[spatialRank + i], dilations[i], /*ceilMode=*/false);
    if (!extent)
      return inferError(location, name,
                        "kernel does not fit spatial dimension ", i,
                        " of the padded input");
    shape.push_back(*extent);
  }
  return RankedTensorType::get(shape, input.getElementType());
}

/// For the gradient ops, which state both the forward operand type and the
/// cotangent type: the forward rule applied to the former must give the
/// latter.
LogicalResult verifyForwardType(Operation *op,
                                FailureOr<RankedTensorType> forward,
                                Type grad) {
  if (failed(forward))
    return failure();
  if (*forward != grad)
    return op->emitOpError()
           << "grad of type " << grad
           << " does not match the forward result type " << *forward;
  return success();
}
} // namespace

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  StringRef name = getOperationName();
  auto weight = rankedType(adaptor.getWeight());
  FailureOr<RankedTensorType> result =
      inferConvType(location, name, rankedType(adaptor.getInput()), weight,
                    adaptor.getStrides(), adaptor.getPads(),
                    adaptor.getDilations(), adaptor.getGroup());
  if (failed(result))
    return failure();
  if (Value bias = adaptor.getBias()) {
    auto biasType = rankedType(bias);
    if (!biasType ||
        biasType.getShape() != ArrayRef<int64_t>{weight.getDimSize(0)})
      return inferError(location, name, "bias must have shape ",
                        weight.getDimSize(0));
  }
  inferred.push_back(*result);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

namespace {

LogicalResult inferBroadcast(std::optional<Location> location, StringRef opName,
                             ValueRange operands, Type elementType,
                             SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (Value operand : operands) {
    auto type = rankedType(operand);
    if (!type)
      return inferError(location, opName, "needs ranked operands");
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(shape, type.getShape(), next))
      return inferError(location, opName, "operand of shape ",
                        shapeString(type.getShape()),
                        " does not broadcast with ", shapeString(shape));
    shape = next;
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

/// Folds an elementwise binary op on two small constants, broadcasting.
template <typename IntFn, typename FloatFn>
OpFoldResult foldBinary(ShapedType resultType, Attribute lhsAttr,
                        Attribute rhsAttr, IntFn intFn, FloatFn floatFn) {
  DenseElementsAttr lhs = foldableConstant(lhsAttr),
                    rhs = foldableConstant(rhsAttr);
  if (!lhs || !rhs || resultType.getNumElements() > kMaxFoldElements)
    return {};
  auto lhsType = cast<ShapedType>(lhs.getType()),
       rhsType = cast<ShapedType>(rhs.getType());
  int64_t rank = resultType.getRank();
  // Flat index of the broadcast source element for a result index.
  auto sourceIndex = [rank](ShapedType type, ArrayRef<int64_t> index) {
    int64_t offset = rank - type.getRank(), flat = 0;
    SmallVector<int64_t> strides = stridesOf(type.getShape());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) != 1)
        flat += index[offset + d] * strides[d];
    return flat;
  };
  SmallVector<int64_t> index(rank, 0);
  // The operands' type decides the arithmetic; the functions' results the
  // result's (i1 for comparisons).
  Type element = lhsType.getElementType();
  using IntResult = typename std::invoke_result_t<IntFn, const APInt &,
                                                  const APInt &>::value_type;
  using FloatResult =
      typename std::invoke_result_t<FloatFn, const APFloat &,
                                    const APFloat &>::value_type;
  SmallVector<IntResult> ints;
  SmallVector<FloatResult> floats;
  SmallVector<APInt> lhsInts, rhsInts;
  SmallVector<APFloat> lhsFloats, rhsFloats;
  bool isInt = isa<IntegerType>(element);
  if (isInt) {
    lhsInts.assign(lhs.getValues<APInt>().begin(),
                   lhs.getValues<APInt>().end());
    rhsInts.assign(rhs.getValues<APInt>().begin(),
                   rhs.getValues<APInt>().end());
  } else if (isa<FloatType>(element)) {
    lhsFloats.assign(lhs.getValues<APFloat>().begin(),
                     lhs.getValues<APFloat>().end());
    rhsFloats.assign(rhs.getValues<APFloat>().begin(),
                     rhs.getValues<APFloat>().end());
  } else {
    return {};
  }
  for (int64_t flat = 0; flat < resultType.getNumElements(); ++flat) {
    int64_t l = sourceIndex(lhsType, index), r = sourceIndex(rhsType, index);
    if (isInt) {
      std::optional<IntResult> value = intFn(lhsInts[l], rhsInts[r]);
      if (!value)
        return {};
      ints.push_back(*value);
    } else {
      std::optional<FloatResult> value = floatFn(lhsFloats[l], rhsFloats[r]);
      if (!value)
        return {};
      floats.push_back(*value);
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < resultType.getDimSize(d))
        break;
      index[d] = 0;
    }
  }
  if (isInt)
    return DenseElementsAttr::get(resultType, ints);
  return DenseElementsAttr::get(resultType, floats);
}

using OptInt = std::optional<APInt>;
using OptFloat = std::optional<APFloat>;

} // namespace

#define PARPLAN_BINARY_INFER(OP)                                               \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> location, Adaptor adaptor,        \
      SmallVectorImpl<Type> &inferred) {                                       \
    auto lhs = rankedType(adaptor.getLhs());                                   \
    if (!lhs)                                                                  \
      return inferError(location, getOperationName(),                          \
                        "needs ranked operands");                              \
    return inferBroadcast(location, getOperationName(),                        \
                          {adaptor.getLhs(), adaptor.getRhs()},                \
                          lhs.getElementType(), inferred);                     \
  }
PARPLAN_BINARY_INFER(AddOp)
PARPLAN_BINARY_INFER(SubOp)
PARPLAN_BINARY_INFER(MulOp)
PARPLAN_BINARY_INFER(DivOp)
PARPLAN_BINARY_INFER(PowOp)
#undef PARPLAN_BINARY_INFER

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) -> OptInt { return a + b; },
      [](APFloat a, const APFloat &b) -> OptFloat {
        a.add(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) -> OptInt { return a - b; },
      [](APFloat a, const APFloat &b) -> OptFloat {
        a.subtract(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) -> OptInt { return a * b; },
      [](APFloat a, const APFloat &b) -> OptFloat {
        a.multiply(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  // Integer division truncates toward zero, as in ONNX; by zero: no fold.
  return foldBinary(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) -> OptInt {
        if (b.isZero())
          return std::nullopt;
        return a.sdiv(b);
      },
      [](APFloat a, const APFloat &b) -> OptFloat {
        a.divide(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &, const APInt &) -> OptInt { return std::nullopt; },
      [](const APFloat &a, const APFloat &b) -> OptFloat {
        bool lost = false;
        APFloat result(std::pow(a.convertToDouble(), b.convertToDouble()));
        result.convert(a.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
        return result;
      });
}

//===----------------------------------------------------------------------===//
// Comparisons and logic
//===----------------------------------------------------------------------===//

namespace {
/// Comparisons and logical ops read two operands of one element type (i1
/// for and/or) and give i1.
LogicalResult inferCompare(std::optional<Location> location, StringRef name,
                           Value lhs, Value rhs, bool logical,
                           SmallVectorImpl<Type> &inferred) {
  auto lhsType = rankedType(lhs), rhsType = rankedType(rhs);
  if (!lhsType || !rhsType ||
      lhsType.getElementType() != rhsType.getElementType())
    return inferError(location, name,
                      "needs two ranked operands of one element type");
  Builder b(lhs.getContext());
  bool boolean = lhsType.getElementType().isInteger(1);
  if (logical && !boolean)
    return inferError(location, name, "needs i1 operands");
  // ONNX orders numbers only (an i1 true would be -1 to a signed compare).
  if (!logical && boolean && !name.ends_with("equal"))
    return inferError(location, name, "orders numbers, not i1 values");
  return inferBroadcast(location, name, {lhs, rhs}, b.getI1Type(), inferred);
}

APInt truth(bool value) { return APInt(1, value ? 1 : 0); }

/// Folds a comparison: `intFn` on integers (signed), `floatFn` on the
/// ordering of floats.
template <typename IntFn, typename FloatFn>
OpFoldResult foldCompare(ShapedType type, Attribute lhs, Attribute rhs,
                         IntFn intFn, FloatFn floatFn) {
  return foldBinary(
      type, lhs, rhs,
      [&](const APInt &a, const APInt &b) -> OptInt {
        return truth(intFn(a, b));
      },
      [&](const APFloat &a, const APFloat &b) -> OptInt {
        return truth(floatFn(a.compare(b)));
      });
}
} // namespace

#define PARPLAN_COMPARE_INFER(OP, LOGICAL)                                     \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> location, Adaptor adaptor,        \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferCompare(location, getOperationName(), adaptor.getLhs(),        \
                        adaptor.getRhs(), LOGICAL, inferred);                  \
  }
PARPLAN_COMPARE_INFER(EqualOp, false)
PARPLAN_COMPARE_INFER(LessOp, false)
PARPLAN_COMPARE_INFER(GreaterOp, false)
PARPLAN_COMPARE_INFER(AndOp, true)
PARPLAN_COMPARE_INFER(OrOp, true)
#undef PARPLAN_COMPARE_INFER

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) { return a == b; },
      [](APFloat::cmpResult c) { return c == APFloat::cmpEqual; });
}
OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) { return a.slt(b); },
      [](APFloat::cmpResult c) { return c == APFloat::cmpLessThan; });
}
OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) { return a.sgt(b); },
      [](APFloat::cmpResult c) { return c == APFloat::cmpGreaterThan; });
}
OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) { return !a.isZero() && !b.isZero(); },
      [](APFloat::cmpResult) { return false; });
}
OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldCompare(
      getType(), adaptor.getLhs(), adaptor.getRhs(),
      [](const APInt &a, const APInt &b) { return !a.isZero() || !b.isZero(); },
      [](APFloat::cmpResult) { return false; });
}
OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = foldableConstant(adaptor.getInput());
  if (!input)
    return {};
  SmallVector<APInt> values;
  for (const APInt &value : input.getValues<APInt>())
    values.push_back(truth(value.isZero()));
  return DenseElementsAttr::get(getType(), values);
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr condition = foldableConstant(adaptor.getCondition());
  if (!condition || condition.getNumElements() == 0)
    return {};
  auto values = condition.getValues<APInt>();
  bool first = !(*values.begin()).isZero();
  if (llvm::any_of(values, [&](const APInt &v) { return v.isZero() == first; }))
    return {};
  Value picked = first ? getLhs() : getRhs();
  if (picked.getType() != getType())
    return {};
  return picked;
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto lhs = rankedType(adaptor.getLhs()), rhs = rankedType(adaptor.getRhs());
  if (!lhs || !rhs || lhs.getElementType() != rhs.getElementType())
    return inferError(location, getOperationName(),
                      "needs both branches of one element type");
  return inferBroadcast(
      location, getOperationName(),
      {adaptor.getCondition(), adaptor.getLhs(), adaptor.getRhs()},
      lhs.getElementType(), inferred);
}

LogicalResult DropoutOp::verify() {
  if (getMicroBatch() && !getStep())
    return emitOpError() << "reads a micro_batch index without a step: the "
                            "inference form has neither";
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0)) {
    return emitOpError() << "ratio " << numberString(ratio)
                         << " is outside [0, 1) (the probability of "
                            "dropping an element)";
  }
  return success();
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  // The inference form is the identity too, but stays until a training step
  // decides (nn-autodiff's dropout option).
  if (getRatio().isZero())
    return getInput();
  return {};
}

/// nn.resize's and nn.resize_grad's shapes: `from` resized into `to`.
static LogicalResult verifyResizeShapes(Operation *op, RankedTensorType from,
                                        RankedTensorType to) {
  if (from.getRank() != to.getRank())
    return op->emitOpError() << "resizes a tensor of rank " << from.getRank()
                             << " into one of rank " << to.getRank();
  for (int64_t d = 0; d < from.getRank(); ++d)
    if (from.getDimSize(d) == 0 || to.getDimSize(d) == 0)
      return op->emitOpError()
             << "resizes axis " << d << " from " << from.getDimSize(d) << " to "
             << to.getDimSize(d) << " elements; neither may be empty";
  return success();
}

LogicalResult TopKOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t signedAxis = getAxisAttr().getInt(), k = getKAttr().getInt();
  std::optional<int64_t> axis = normalizeAxis(signedAxis, input.getRank());
  if (!axis)
    return emitOpError() << "axis " << signedAxis
                         << " is out of range for rank " << input.getRank();
  if (k < 0 || k > input.getDimSize(*axis))
    return emitOpError() << "k " << k << " is not between 0 and axis " << *axis
                         << "'s " << input.getDimSize(*axis) << " elements";
  SmallVector<int64_t> shape(input.getShape());
  shape[*axis] = k;
  for (Value result : {getValues(), getIndices()})
    if (cast<RankedTensorType>(result.getType()).getShape() !=
        ArrayRef<int64_t>(shape))
      return emitOpError() << "results must be of shape "
                           << RankedTensorType::get(shape,
                                                    input.getElementType())
                           << ", not " << result.getType();
  if (getValues().getType().getElementType() != input.getElementType())
    return emitOpError() << "values must be of the input's element type";
  return success();
}

LogicalResult ResizeOp::verify() {
  return verifyResizeShapes(*this, getInput().getType(), getType());
}

LogicalResult ResizeGradOp::verify() {
  return verifyResizeShapes(*this, getType(), getGrad().getType());
}

LogicalResult ClipOp::verify() {
  if (getMin() && getMax() &&
      getMin()->convertToFloat() > getMax()->convertToFloat())
    return emitOpError() << "min " << getMin()->convertToFloat()
                         << " is above max " << getMax()->convertToFloat();
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = foldableConstant(adaptor.getInput());
  if (!input)
    return {};
  auto type = getType();
  Type from = input.getElementType(), to = type.getElementType();
  if (from == to)
    return input;
  auto toInt = dyn_cast<IntegerType>(to);
  auto toFloat = dyn_cast<FloatType>(to);
  if (isa<IntegerType>(from)) {
    unsigned width = cast<IntegerType>(from).getWidth();
    SmallVector<APInt> ints;
    SmallVector<APFloat> floats;
    for (const APInt &value : input.getValues<APInt>()) {
      // i1 is a boolean: 0 or 1, never -1.
      bool isSigned = width != 1;
      if (toInt && toInt.getWidth() == 1)
        ints.push_back(APInt(1, value.isZero() ? 0 : 1));
      else if (toInt)
        ints.push_back(isSigned ? value.sextOrTrunc(toInt.getWidth())
                                : value.zextOrTrunc(toInt.getWidth()));
      else if (toFloat) {
        APFloat result(toFloat.getFloatSemantics());
        result.convertFromAPInt(value, isSigned, APFloat::rmNearestTiesToEven);
        floats.push_back(result);
      }
    }
    if (toInt)
      return DenseElementsAttr::get(type, ints);
    if (toFloat)
      return DenseElementsAttr::get(type, floats);
    return {};
  }
  if (!isa<FloatType>(from))
    return {};
  SmallVector<APInt> ints;
  SmallVector<APFloat> floats;
  for (APFloat value : input.getValues<APFloat>()) {
    if (toInt && toInt.getWidth() == 1) {
      ints.push_back(APInt(1, value.isZero() ? 0 : 1));
    } else if (toInt) {
      APSInt result(toInt.getWidth(), /*isUnsigned=*/false);
      bool exact = false;
      value.convertToInteger(result, APFloat::rmTowardZero, &exact);
      ints.push_back(result);
    } else if (toFloat) {
      bool lost = false;
      value.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lost);
      floats.push_back(value);
    }
  }
  if (toInt)
    return DenseElementsAttr::get(type, ints);
  if (toFloat)
    return DenseElementsAttr::get(type, floats);
  return {};
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifySoftmaxAxis(Operation *op, int64_t axis, int64_t rank) {
  if (!normalizeAxis(axis, rank))
    return op->emitOpError()
           << "axis " << axis << " is out of range for rank " << rank;
  return success();
}
} // namespace

// I64Attr hands values back as uint64_t; ONNX axes are signed.
LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, static_cast<int64_t>(getAxis()),
                           getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, static_cast<int64_t>(getAxis()),
                           getType().getRank());
}

namespace {
/// Layer norm's operands that span the normalized dimensions (scale, bias,
/// their gradients) have the shape `input.shape[axis:]`.
LogicalResult
verifyNormalizedShapes(Operation *op, RankedTensorType input,
                       int64_t signedAxis,
                       ArrayRef<std::pair<Value, StringRef>> operands) {
  std::optional<int64_t> axis = normalizeAxis(signedAxis, input.getRank());
  if (!axis)
    return op->emitOpError() << "axis " << signedAxis
                             << " is out of range for rank " << input.getRank();
  ArrayRef<int64_t> normalized = input.getShape().drop_front(*axis);
  for (auto [operand, role] : operands) {
    if (!operand)
      continue;
    ArrayRef<int64_t> shape = cast<ShapedType>(operand.getType()).getShape();
    if (shape != normalized)
      return op->emitOpError() << role << " of shape " << shapeString(shape)
                               << " does not match the normalized shape "
                               << shapeString(normalized);
  }
  return success();
}
} // namespace

LogicalResult LayerNormOp::verify() {
  return verifyNormalizedShapes(*this, getInput().getType(), getAxis(),
                                {{getScale(), "scale"}, {getBias(), "bias"}});
}

LogicalResult BatchNormOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 2)
    return emitOpError() << "needs an input [N, C, ...] of rank 2 or more";
  int64_t channels = input.getDimSize(1);
  Value statistics[] = {getScale(), getBias(), getMean(), getVariance()};
  StringRef roles[] = {"scale", "bias", "mean", "variance"};
  for (auto [operand, role] : llvm::zip_equal(statistics, roles)) {
    ArrayRef<int64_t> shape = cast<ShapedType>(operand.getType()).getShape();
    if (shape != ArrayRef<int64_t>{channels})
      return emitOpError() << role << " of shape " << shapeString(shape)
                           << " does not match the " << channels << " channels";
  }
  double momentum = getMomentum().convertToDouble();
  if (!(momentum >= 0.0 && momentum <= 1.0)) {
    return emitOpError() << "momentum " << numberString(momentum)
                         << " is outside [0, 1] (the weight of the running "
                            "statistics in their update)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {
FailureOr<RankedTensorType>
inferPoolType(std::optional<Location> location, StringRef name,
              RankedTensorType input, ArrayRef<int64_t> kernel,
              ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
              ArrayRef<int64_t> dilations, bool ceilMode) {
  if (!input || input.getRank() < 3)
    return inferError(location, name,
                      "needs an input [N, C, D...] of rank 3 or more");
  int64_t spatialRank = input.getRank() - 2;
  if (static_cast<int64_t>(kernel.size()) != spatialRank ||
      llvm::any_of(kernel, [](int64_t k) { return k <= 0; }))
    return inferError(location, name, "needs ", spatialRank,
                      " positive kernel sizes");
  if (failed(checkWindowAttrs(location, name, spatialRank, strides, pads,
                              dilations)))
    return failure();
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  for (int64_t i = 0; i < spatialRank; ++i) {
    std::optional<int64_t> extent =
        windowedExtent(input.getDimSize(2 + i), kernel[i], strides[i], pads[i],
                       pads[spatialRank + i], dilations[i], ceilMode);
    if (!extent)
      return inferError(location, name,
                        "kernel does not fit spatial dimension ", i,
                        " of the padded input");
    shape.push_back(*extent);
  }
  return RankedTensorType::get(shape, input.getElementType());
}

template <typename Adaptor>
LogicalResult inferPool(std::optional<Location> location, StringRef name,
                        Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> result = inferPoolType(
      location, name, rankedType(adaptor.getInput()), adaptor.getKernel(),
      adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
      adaptor.getCeilMode());
  if (failed(result))
    return failure();
  inferred.push_back(*result);
  return success();
}
} // namespace

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool(location, getOperationName(), adaptor, inferred);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool(location, getOperationName(), adaptor, inferred);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  int64_t from = getInput().getType().getNumElements();
  int64_t to = getType().getNumElements();
  if (from != to)
    return emitOpError() << "cannot reshape " << from << " elements into "
                         << to;
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto input = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return input.reshape(getType());
  return {};
}

LogicalResult ExpandOp::verify() {
  ArrayRef<int64_t> from = getInput().getType().getShape();
  ArrayRef<int64_t> to = getType().getShape();
  bool broadcasts = from.size() <= to.size();
  for (size_t i = 0; broadcasts && i < from.size(); ++i) {
    int64_t source = from[from.size() - 1 - i], target = to[to.size() - 1 - i];
    broadcasts = source == target || source == 1;
  }
  if (!broadcasts)
    return emitOpError() << "cannot broadcast " << shapeString(from) << " to "
                         << shapeString(to);
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = rankedType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (!input || static_cast<int64_t>(perm.size()) != input.getRank())
    return inferError(location, getOperationName(), "perm has ", perm.size(),
                      " entries for an input of rank ",
                      input ? input.getRank() : -1);
  llvm::SmallBitVector seen(perm.size());
  SmallVector<int64_t> shape;
  for (int64_t dim : perm) {
    if (dim < 0 || dim >= input.getRank() || seen.test(dim))
      return inferError(location, getOperationName(), "perm ", listString(perm),
                        " is not a permutation of 0..", input.getRank() - 1);
    seen.set(dim);
    shape.push_back(input.getDimSize(dim));
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  StringRef name = getOperationName();
  if (adaptor.getInputs().empty())
    return inferError(location, name, "needs at least one operand");
  auto first = rankedType(adaptor.getInputs().front());
  if (!first)
    return inferError(location, name, "needs ranked operands");
  std::optional<int64_t> axis =
      normalizeAxis(static_cast<int64_t>(adaptor.getAxis()), first.getRank());
  if (!axis)
    return inferError(location, name, "axis ",
                      static_cast<int64_t>(adaptor.getAxis()),
                      " is out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value operand : adaptor.getInputs()) {
    auto type = rankedType(operand);
    if (!type || type.getRank() != first.getRank())
      return inferError(location, name, "operands must all have rank ",
                        first.getRank());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != *axis && type.getDimSize(d) != first.getDimSize(d))
        return inferError(location, name, "operand of shape ",
                          shapeString(type.getShape()), " differs from ",
                          shapeString(first.getShape()), " in dimension ", d);
    shape[*axis] += type.getDimSize(*axis);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  SmallVector<DenseElementsAttr> parts;
  for (Attribute attr : adaptor.getInputs()) {
    DenseElementsAttr part = foldableConstant(attr);
    if (!part)
      return {};
    parts.push_back(part);
  }
  auto type = getType();
  if (type.getNumElements() > kMaxFoldElements)
    return {};
  int64_t axis =
      *normalizeAxis(static_cast<int64_t>(getAxis()), type.getRank());
  // Every part contributes, per outer index, a run of (its axis extent x
  // inner size) elements.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= type.getDimSize(d);
  for (int64_t d = axis + 1; d < type.getRank(); ++d)
    inner *= type.getDimSize(d);
  SmallVector<SmallVector<Attribute>> values;
  for (DenseElementsAttr part : parts)
    values.emplace_back(part.getValues<Attribute>());
  SmallVector<Attribute> result;
  for (int64_t o = 0; o < outer; ++o)
    for (auto [part, partValues] : llvm::zip_equal(parts, values)) {
      int64_t run = cast<ShapedType>(part.getType()).getDimSize(axis) * inner;
      result.append(partValues.begin() + o * run,
                    partValues.begin() + (o + 1) * run);
    }
  return DenseElementsAttr::get(type, result);
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  StringRef name = getOperationName();
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return inferError(location, name, "needs a ranked operand");
  std::optional<int64_t> axis =
      normalizeAxis(static_cast<int64_t>(adaptor.getAxis()), input.getRank());
  if (!axis)
    return inferError(location, name, "axis ",
                      static_cast<int64_t>(adaptor.getAxis()),
                      " is out of range for rank ", input.getRank());
  int64_t total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0 || __builtin_add_overflow(total, size, &total))
      return inferError(location, name, "sizes must be non-negative");
  }
  if (adaptor.getSizes().empty() || total != input.getDimSize(*axis))
    return inferError(location, name, "sizes ", listString(adaptor.getSizes()),
                      " do not add up to dimension ", *axis, " of size ",
                      input.getDimSize(*axis));
  for (int64_t size : adaptor.getSizes()) {
    SmallVector<int64_t> shape(input.getShape());
    shape[*axis] = size;
    inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  StringRef name = getOperationName();
  auto input = rankedType(adaptor.getInput());
  ArrayRef<int64_t> starts = adaptor.getStarts(), sizes = adaptor.getSizes(),
                    steps = adaptor.getSteps();
  if (!input || static_cast<int64_t>(starts.size()) != input.getRank() ||
      sizes.size() != starts.size() || steps.size() != starts.size())
    return inferError(location, name,
                      "needs one start, size and step per input dimension");
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t dim = input.getDimSize(d);
    if (steps[d] == 0 || sizes[d] < 0)
      return inferError(location, name, "dimension ", d,
                        ": steps must be non-zero and sizes non-negative");
    int64_t last = 0;
    bool overflows = __builtin_mul_overflow(sizes[d] - 1, steps[d], &last) ||
                     __builtin_add_overflow(starts[d], last, &last);
    if (sizes[d] > 0 && (overflows || starts[d] < 0 || starts[d] >= dim ||
                         last < 0 || last >= dim))
      return inferError(location, name, "dimension ", d, ": ", sizes[d],
                        " elements from ", starts[d], " by ", steps[d],
                        " leave the range 0..", dim - 1);
  }
  inferred.push_back(RankedTensorType::get(sizes, input.getElementType()));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  auto type = getType();
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  if (type == getInput().getType() &&
      llvm::all_of(starts, [](int64_t s) { return s == 0; }) &&
      llvm::all_of(steps, [](int64_t s) { return s == 1; }))
    return getInput();
  DenseElementsAttr input = foldableConstant(adaptor.getInput());
  // The result is no larger than the input, which is small.
  if (!input || type.getNumElements() > input.getNumElements())
    return {};
  SmallVector<int64_t> strides = stridesOf(getInput().getType().getShape());
  return gatherElements(input, type, [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    for (size_t d = 0; d < index.size(); ++d)
      flat += (starts[d] + index[d] * steps[d]) * strides[d];
    return flat;
  });
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = rankedType(adaptor.getInput()),
       indices = rankedType(adaptor.getIndices());
  if (!input || !indices || input.getRank() == 0)
    return inferError(
        location, getOperationName(),
        "needs a ranked input of rank 1 or more and ranked indices");
  std::optional<int64_t> axis =
      normalizeAxis(static_cast<int64_t>(adaptor.getAxis()), input.getRank());
  if (!axis)
    return inferError(location, getOperationName(), "axis ",
                      static_cast<int64_t>(adaptor.getAxis()),
                      " is out of range for rank ", input.getRank());
  SmallVector<int64_t> shape(input.getShape().take_front(*axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, input.getShape().drop_front(*axis + 1));
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = foldableConstant(adaptor.getInput());
  DenseElementsAttr indices = foldableConstant(adaptor.getIndices());
  if (!input || !indices || getType().getNumElements() > kMaxFoldElements)
    return {};
  auto inputType = getInput().getType();
  int64_t axis =
      *normalizeAxis(static_cast<int64_t>(getAxis()), inputType.getRank());
  int64_t axisSize = inputType.getDimSize(axis);
  SmallVector<int64_t> positions;
  for (const APInt &value : indices.getValues<APInt>()) {
    int64_t position = value.getSExtValue();
    if (position < -axisSize || position >= axisSize)
      return {}; // Out-of-range indices are left for the runtime to report.
    positions.push_back(position < 0 ? position + axisSize : position);
  }
  int64_t indicesRank = cast<ShapedType>(indices.getType()).getRank();
  SmallVector<int64_t> indexStrides =
      stridesOf(cast<ShapedType>(indices.getType()).getShape());
  SmallVector<int64_t> strides = stridesOf(inputType.getShape());
  return gatherElements(input, getType(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0, indexFlat = 0;
    for (int64_t d = 0; d < axis; ++d)
      flat += index[d] * strides[d];
    for (int64_t d = 0; d < indicesRank; ++d)
      indexFlat += index[axis + d] * indexStrides[d];
    flat += positions[indexFlat] * strides[axis];
    for (int64_t d = axis + 1; d < inputType.getRank(); ++d)
      flat += index[d - 1 + indicesRank] * strides[d];
    return flat;
  });
}

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return inferError(location, getOperationName(), "needs a ranked operand");
  inferred.push_back(
      RankedTensorType::get({input.getRank()}, IntegerType::get(context, 64)));
  return success();
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  return DenseElementsAttr::get(getType(), getInput().getType().getShape());
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
template <typename Adaptor>
LogicalResult inferReduction(std::optional<Location> location, StringRef name,
                             Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto input = rankedType(adaptor.getInput());
  if (!input)
    return inferError(location, name, "needs a ranked operand");
  int64_t rank = input.getRank();
  ArrayRef<int64_t> axes = adaptor.getAxes();
  llvm::SmallBitVector reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    std::optional<int64_t> dim = normalizeAxis(axis, rank);
    if (!dim)
      return inferError(location, name, "axis ", axis,
                        " is out of range for rank ", rank);
    if (reduced.test(*dim))
      return inferError(location, name, "reduces dimension ", *dim, " twice");
    reduced.set(*dim);
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced.test(d))
      shape.push_back(input.getDimSize(d));
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}
} // namespace

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return inferReduction(location, getOperationName(), adaptor, inferred);
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferReduction(location, getOperationName(), adaptor, inferred);
}

//===----------------------------------------------------------------------===//
// Training: gradients, losses (optimizer updates need no verifier beyond
// their type constraints)
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxGradOp::verify() {
  return verifySoftmaxAxis(*this, static_cast<int64_t>(getAxis()),
                           getType().getRank());
}

LogicalResult LogSoftmaxGradOp::verify() {
  return verifySoftmaxAxis(*this, static_cast<int64_t>(getAxis()),
                           getType().getRank());
}

LogicalResult LayerNormGradOp::verify() {
  return verifyNormalizedShapes(*this, getInput().getType(), getAxis(),
                                {{getScale(), "scale"}});
}

LogicalResult ConvGradInputOp::verify() {
  return verifyForwardType(*this,
                           inferConvType(getLoc(), getOperationName(),
                                         getType(), getWeight().getType(),
                                         getStrides(), getPads(),
                                         getDilations(), getGroup()),
                           getGrad().getType());
}

LogicalResult ConvGradWeightOp::verify() {
  return verifyForwardType(*this,
                           inferConvType(getLoc(), getOperationName(),
                                         getInput().getType(), getType(),
                                         getStrides(), getPads(),
                                         getDilations(), getGroup()),
                           getGrad().getType());
}

LogicalResult MaxPoolGradOp::verify() {
  return verifyForwardType(*this,
                           inferPoolType(getLoc(), getOperationName(),
                                         getInput().getType(), getKernel(),
                                         getStrides(), getPads(),
                                         getDilations(), getCeilMode()),
                           getGrad().getType());
}

LogicalResult AvgPoolGradOp::verify() {
  return verifyForwardType(
      *this,
      inferPoolType(getLoc(), getOperationName(), getType(), getKernel(),
                    getStrides(), getPads(), getDilations(), getCeilMode()),
      getGrad().getType());
}

LogicalResult SliceGradOp::verify() {
  auto input = getType();
  SmallVector<int64_t> sizes(getGrad().getType().getShape());
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  if (static_cast<int64_t>(starts.size()) != input.getRank() ||
      steps.size() != starts.size() ||
      getGrad().getType().getRank() != input.getRank())
    return emitOpError()
           << "needs one start and step per dimension of the rank-"
           << input.getRank() << " result and a grad of the same rank";
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t dim = input.getDimSize(d), size = sizes[d];
    if (steps[d] == 0)
      return emitOpError() << "dimension " << d << ": steps must be non-zero";
    int64_t last = 0;
    bool overflows = __builtin_mul_overflow(size - 1, steps[d], &last) ||
                     __builtin_add_overflow(starts[d], last, &last);
    if (size > 0 && (overflows || starts[d] < 0 || starts[d] >= dim ||
                     last < 0 || last >= dim))
      return emitOpError() << "dimension " << d << ": " << size
                           << " elements from " << starts[d] << " by "
                           << steps[d] << " leave the range 0.." << dim - 1;
  }
  return success();
}

LogicalResult GatherGradOp::verify() {
  auto input = getType(), indices = getIndices().getType();
  if (input.getElementType() != getGrad().getType().getElementType())
    return emitOpError() << "grad and result must have one element type";
  std::optional<int64_t> axis =
      normalizeAxis(static_cast<int64_t>(getAxis()), input.getRank());
  if (!axis)
    return emitOpError() << "axis " << static_cast<int64_t>(getAxis())
                         << " is out of range for rank " << input.getRank();
  SmallVector<int64_t> shape(input.getShape().take_front(*axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, input.getShape().drop_front(*axis + 1));
  if (ArrayRef<int64_t>(shape) != getGrad().getType().getShape())
    return emitOpError() << "grad of shape "
                         << shapeString(getGrad().getType().getShape())
                         << " does not match the gather result shape "
                         << shapeString(shape);
  return success();
}

namespace {
/// logits [..., classes], labels [...], per-position values [...].
LogicalResult verifyCrossEntropyShapes(Operation *op, ShapedType logits,
                                       ShapedType labels, ShapedType values,
                                       StringRef valuesRole) {
  if (logits.getRank() < 1)
    return op->emitOpError() << "needs logits with a class dimension";
  ArrayRef<int64_t> positions = logits.getShape().drop_back();
  if (labels.getShape() != positions)
    return op->emitOpError()
           << "labels of shape " << shapeString(labels.getShape())
           << " do not match the logits " << shapeString(logits.getShape())
           << " without their class dimension";
  if (values.getShape() != positions ||
      values.getElementType() != logits.getElementType())
    return op->emitOpError()
           << valuesRole << " of type " << Type(values)
           << " must have the labels' shape and the logits' element type";
  return success();
}
} // namespace

LogicalResult SoftmaxCrossEntropyOp::verify() {
  return verifyCrossEntropyShapes(*this, getLogits().getType(),
                                  getLabels().getType(), getType(), "result");
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  return verifyCrossEntropyShapes(*this, getLogits().getType(),
                                  getLabels().getType(), getGrad().getType(),
                                  "grad");
}
