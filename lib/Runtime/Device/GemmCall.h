//===- GemmCall.h - one cuBLAS-style matrix product -------------*- C++ -*-===//
//
// What the contraction kernels (Linear.h) ask a launcher to compute: a
// strided batch of column-major products, with cuBLAS's argument meanings,
// so that CudaLauncher passes the fields to cublasGemmStridedBatchedEx as
// they are and HostLauncher computes the same thing with loops. The tests
// run the row-major-to-column-major mapping of every matmul and gemm case
// through HostLauncher's loops, so a wrong leading dimension or stride fails
// on the host.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_GEMMCALL_H
#define PARPLAN_LIB_RUNTIME_DEVICE_GEMMCALL_H

#include "parplan/Runtime/Tensor.h"

#include <cstdint>

namespace parplan::runtime::device {

/// For b in [0, batch): C_b = alpha * op(A_b) * op(B_b) + beta * C_b, where
/// X_b starts at element b * strideX of X, matrices are column-major,
/// op(A_b) is m x k (A_b is m x k with leading dimension lda, or k x m when
/// transA), op(B_b) is k x n (B_b is k x n, or n x k when transB), and C_b
/// is m x n with leading dimension ldc. Element (i, j) of a column-major
/// matrix with leading dimension ld is at i + j * ld. A stride of 0 reuses
/// one matrix for the whole batch. A, B and C share `type` (F32, F64, F16
/// or BF16); products accumulate in float (double for F64). beta == 0
/// ignores C's old contents (even NaN), as cuBLAS does.
struct GemmCall {
  DType type = DType::F32;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  const void *a = nullptr;
  int64_t lda = 0, strideA = 0;
  const void *b = nullptr;
  int64_t ldb = 0, strideB = 0;
  void *c = nullptr;
  int64_t ldc = 0, strideC = 0;
  int64_t batch = 1;
  double alpha = 1, beta = 0;
};

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_GEMMCALL_H
