//===- Linear.h - matmul and gemm on the launcher's gemm --------*- C++ -*-===//
//
// The contractions of the device backend: nn.matmul (numpy semantics: rank-1
// operands promoted, batch dimensions broadcast; operands read transposed
// and the product scaled by the GEMM's flags and alpha) and nn.gemm (ONNX:
// alpha, beta, transposes, an optional c broadcast to the result). Both become
// GemmCalls, and nothing else multiplies: the launcher's gemm is cuBLAS on
// the GPU and a loop nest with cuBLAS's meanings on the host, so the tests
// check the argument mapping below without a GPU.
//
// The mapping: a row-major [r, c] matrix is, read column major, its
// transpose with leading dimension c. So the row-major product
// C = op(A) op(B) is the column-major product C^T = op(B)^T op(A)^T, which
// is a cuBLAS call with the operands swapped: m = N, n = M, a = B, b = A,
// each keeping its own transpose flag and its stored row length as leading
// dimension.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_LINEAR_H
#define PARPLAN_LIB_RUNTIME_DEVICE_LINEAR_H

#include "Device/Attrs.h"
#include "Device/DeviceTensor.h"
#include "Device/GemmCall.h"
#include "Kernels/KernelSupport.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace parplan::runtime::device {
namespace linear_detail {

/// result[i, j] = c[i * rowStride + j * columnStride] over an [m, n]
/// result: gemm's c spread to the result's shape (strides 0 where it
/// broadcasts), so that the product can add to it with beta.
template <typename S> struct SpreadMatrix {
  const S *source;
  S *result;
  int64_t columns, rowStride, columnStride;
  PARPLAN_HD void operator()(int64_t i) const {
    result[i] =
        source[(i / columns) * rowStride + (i % columns) * columnStride];
  }
};

/// The GemmCall for row-major C[m, n] = op(A) op(B) with op(A) [m, k] and
/// op(B) [k, n], where aColumns and bColumns are the stored row lengths of
/// A and B (k or m for A, n or k for B, by their transpose flags). cuBLAS
/// wants leading dimensions of at least 1 even where a dimension is 0.
inline GemmCall rowMajorProduct(DType type, int64_t m, int64_t n, int64_t k,
                                const void *a, bool transA, int64_t aColumns,
                                const void *b, bool transB, int64_t bColumns,
                                void *c) {
  auto atLeastOne = [](int64_t value) {
    return value < 1 ? int64_t{1} : value;
  };
  GemmCall call;
  call.type = type;
  call.m = n;
  call.n = m;
  call.k = k;
  call.a = b;
  call.transA = transB;
  call.lda = atLeastOne(bColumns);
  call.b = a;
  call.transB = transA;
  call.ldb = atLeastOne(aColumns);
  call.c = c;
  call.ldc = atLeastOne(n);
  return call;
}

/// `base` advanced by `elements` elements of `width` bytes; null stays null
/// (ProbeLauncher's tensors have no memory to point into).
inline const void *advance(const void *base, int64_t elements, size_t width) {
  return base ? static_cast<const char *>(base) + elements * width : nullptr;
}
inline void *advance(void *base, int64_t elements, size_t width) {
  return base ? static_cast<char *>(base) + elements * width : nullptr;
}

inline bool fitsDims(const DeviceTensor *tensor) {
  return !tensor || tensor->rank() <= kMaxRank;
}

template <class L>
Launch matmul(L &launcher, const DeviceTensor &lhs, const DeviceTensor &rhs,
              bool transposeLhs, bool transposeRhs, double alpha,
              DeviceTensor &result, Status &status) {
  DType type = lhs.dtype;
  if (!isFloat(type) || rhs.dtype != type || result.dtype != type ||
      !fitsDims(&lhs) || !fitsDims(&rhs) || !fitsDims(&result))
    return Launch::Unsupported;
  if (lhs.rank() == 0 || rhs.rank() == 0) {
    status = Status::failure("matmul: operands must have rank 1 or more");
    return Launch::Done;
  }
  if ((transposeLhs && lhs.rank() < 2) || (transposeRhs && rhs.rank() < 2)) {
    status = Status::failure(
        "matmul: a transposed operand must have rank 2 or more");
    return Launch::Done;
  }
  // Promotion adds a dimension of 1, which leaves the layout as it is.
  Shape a = lhs.shape, b = rhs.shape;
  bool promoteLhs = a.size() == 1, promoteRhs = b.size() == 1;
  if (promoteLhs)
    a.insert(a.begin(), 1);
  if (promoteRhs)
    b.push_back(1);
  // m, k and n of op(lhs) [m, k] and op(rhs) [k, n]; the stored rows are
  // what the flags leave of them.
  int64_t m = a[a.size() - (transposeLhs ? 1 : 2)];
  int64_t k = a[a.size() - (transposeLhs ? 2 : 1)];
  int64_t kb = b[b.size() - (transposeRhs ? 1 : 2)];
  int64_t n = b[b.size() - (transposeRhs ? 2 : 1)];
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  std::optional<Shape> broadcast = detail::broadcastShapes(batchA, batchB);
  if (kb != k || !broadcast) {
    status = Status::failure("matmul: cannot multiply " + toString(lhs.shape) +
                             " by " + toString(rhs.shape));
    return Launch::Done;
  }
  const Shape &batch = *broadcast;
  Shape expected = batch;
  if (!promoteLhs)
    expected.push_back(m);
  if (!promoteRhs)
    expected.push_back(n);
  if (result.shape != expected) {
    status = Status::failure("matmul: result shape " + toString(result.shape) +
                             " is not the expected " + toString(expected));
    return Launch::Done;
  }
  int64_t count = numElements(batch);
  if (count == 0 || m == 0 || n == 0)
    return Launch::Done;

  size_t width = byteWidth(type);
  int64_t countA = numElements(batchA), countB = numElements(batchB);
  GemmCall call =
      rowMajorProduct(type, m, n, k, lhs.data, transposeLhs, a.back(), rhs.data,
                      transposeRhs, b.back(), result.data);
  call.alpha = alpha;
  // A side whose batch is the whole batch has the result's layout of
  // matrices; one of a single matrix is reused (stride 0). Then one
  // strided call covers everything.
  if ((countA == count || countA == 1) && (countB == count || countB == 1)) {
    call.strideA = countB == 1 ? 0 : k * n;
    call.strideB = countA == 1 ? 0 : m * k;
    call.strideC = m * n;
    call.batch = count;
    status = launcher.gemm(call);
    return Launch::Done;
  }
  // Both sides broadcast ([2, 1] against [1, 3]): one call per result
  // matrix, each operand found through its broadcast strides (in matrices:
  // the strides of a batch shape).
  std::vector<int64_t> stridesA = detail::broadcastStrides(batchA, batch);
  std::vector<int64_t> stridesB = detail::broadcastStrides(batchB, batch);
  for (int64_t index = 0; index < count; ++index) {
    int64_t rest = index, matrixA = 0, matrixB = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      int64_t coordinate = rest % batch[d];
      rest /= batch[d];
      matrixA += coordinate * stridesA[d];
      matrixB += coordinate * stridesB[d];
    }
    GemmCall one = call;
    one.a = advance(rhs.data, matrixB * k * n, width);
    one.b = advance(lhs.data, matrixA * m * k, width);
    one.c = advance(result.data, index * m * n, width);
    status = launcher.gemm(one);
    if (!status.ok())
      break;
  }
  return Launch::Done;
}

template <class L>
Launch gemm(L &launcher, const DeviceTensor &a, const DeviceTensor &b,
            const DeviceTensor *c, double alpha, double beta, bool transA,
            bool transB, DeviceTensor &result, Status &status) {
  DType type = a.dtype;
  if (!isFloat(type) || b.dtype != type || result.dtype != type ||
      (c && c->dtype != type) || !fitsDims(&a) || !fitsDims(&b) ||
      !fitsDims(c) || !fitsDims(&result))
    return Launch::Unsupported;
  if (a.rank() != 2 || b.rank() != 2) {
    status = Status::failure("gemm: operands must be 2-D");
    return Launch::Done;
  }
  int64_t m = transA ? a.shape[1] : a.shape[0];
  int64_t k = transA ? a.shape[0] : a.shape[1];
  int64_t kb = transB ? b.shape[1] : b.shape[0];
  int64_t n = transB ? b.shape[0] : b.shape[1];
  Shape expected{m, n};
  if (k != kb || result.shape != expected) {
    status =
        Status::failure("gemm: cannot multiply " + toString(a.shape) + " by " +
                        toString(b.shape) + " into " + toString(result.shape));
    return Launch::Done;
  }
  // c aligned at the right of [m, n]; a dimension of 1 broadcasts.
  int64_t rowStride = 0, columnStride = 0;
  if (c) {
    const Shape &shape = c->shape;
    int64_t rows = shape.size() == 2 ? shape[0] : 1;
    int64_t columns = shape.empty() ? 1 : shape.back();
    if (shape.size() > 2 || (rows != 1 && rows != m) ||
        (columns != 1 && columns != n)) {
      status = Status::failure("gemm: c " + toString(shape) +
                               " does not broadcast to " + toString(expected));
      return Launch::Done;
    }
    rowStride = rows == 1 ? 0 : columns;
    columnStride = columns == 1 ? 0 : 1;
  }
  if (m == 0 || n == 0)
    return Launch::Done;

  if (c)
    dispatchFloat(type, [&](auto traits) {
      using T = decltype(traits);
      using S = typename T::Storage;
      launcher.forEach(m * n, SpreadMatrix<S>{c->template as<const S>(),
                                              result.template as<S>(), n,
                                              rowStride, columnStride});
    });
  GemmCall call = rowMajorProduct(type, m, n, k, a.data, transA, a.shape[1],
                                  b.data, transB, b.shape[1], result.data);
  call.alpha = alpha;
  call.beta = c ? beta : 0.0;
  status = launcher.gemm(call);
  return Launch::Done;
}

} // namespace linear_detail

/// nn.matmul and nn.gemm (Dispatch.h): float element types (F32, F64, F16,
/// BF16) of one type throughout; integer ones and ranks above kMaxRank are
/// Unsupported.
template <class L>
bool launchLinear(L &launcher, KernelId op, const AttrMap &attrs,
                  const std::vector<const DeviceTensor *> &operands,
                  const std::vector<DeviceTensor *> &results, Launch &launch,
                  Status &status) {
  if (op == KernelId::MatMul) {
    launch = Launch::Unsupported;
    if (operands.size() == 2 && results.size() == 1 && operands[0] &&
        operands[1] && results[0])
      launch = linear_detail::matmul(
          launcher, *operands[0], *operands[1],
          attrBool(attrs, "transpose_lhs"), attrBool(attrs, "transpose_rhs"),
          attrFloat(attrs, "alpha", 1.0), *results[0], status);
    return true;
  }
  if (op == KernelId::Gemm) {
    launch = Launch::Unsupported;
    if (operands.size() == 3 && results.size() == 1 && operands[0] &&
        operands[1] && results[0])
      launch = linear_detail::gemm(
          launcher, *operands[0], *operands[1], operands[2],
          attrFloat(attrs, "alpha", 1.0), attrFloat(attrs, "beta", 1.0),
          attrBool(attrs, "trans_a"), attrBool(attrs, "trans_b"), *results[0],
          status);
    return true;
  }
  return false;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_LINEAR_H
