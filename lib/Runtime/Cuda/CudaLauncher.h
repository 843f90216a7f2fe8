//===- CudaLauncher.h - launch device kernels on a CUDA stream --*- C++ -*-===//
//
// The launcher of DeviceTensor.h for the GPU: forEach and forEachStaged
// launch grid-stride kernels on the compute stream, forEachRow a warp or a
// block per row, transposeMatrices shared-memory tiles, copy a
// device-to-device copy; gemm calls cublasGemmStridedBatchedEx with
// GemmCall's fields as they are. Include from .cu files only.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_CUDA_CUDALAUNCHER_H
#define PARPLAN_LIB_RUNTIME_CUDA_CUDALAUNCHER_H

#include "Device/DeviceTensor.h"
#include "Device/GemmCall.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace parplan::runtime::device {

template <typename F> __global__ void forEachKernel(int64_t n, F f) {
  int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += step)
    f(i);
}

template <typename F> __global__ void forEachStagedKernel(int64_t n, F f) {
  constexpr int kCount = kStagedElements;
  int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kCount - 1) * step < n; i += kCount * step) {
    typename F::Values values[kCount];
#pragma unroll
    for (int k = 0; k < kCount; ++k)
      values[k] = f.load(i + k * step);
#pragma unroll
    for (int k = 0; k < kCount; ++k)
      f.store(i + k * step, values[k]);
  }
  for (; i < n; i += step)
    f.store(i, f.load(i));
}

/// a + b, or the larger of the two.
template <typename C> PARPLAN_HD C combineTwo(C a, C b, bool maximum) {
  return maximum ? hdMax(a, b) : a + b;
}

/// Combines `value` over the 32 lanes of the calling warp by a butterfly of
/// shuffles: every lane gets the same result.
template <typename C> PARPLAN_HD C combineWarp(C value, bool maximum) {
#if defined(__CUDA_ARCH__)
  for (int offset = 16; offset > 0; offset >>= 1)
    value =
        combineTwo(value, __shfl_xor_sync(0xffffffffu, value, offset), maximum);
#endif
  return value;
}

/// The lanes of a row on the GPU: the threads of one block (a multiple of
/// 32). Combining reduces within each warp by shuffles, then across warps
/// through shared memory in warp order, so every lane gets the same value
/// and the order (hence the rounding) is fixed for a block size.
struct BlockLanes {
  double *shared; // one slot per warp

  // Host and device, as the functors that call them are; only the device
  // ever runs them.
  PARPLAN_HD int64_t lane() const {
#if defined(__CUDA_ARCH__)
    return threadIdx.x;
#else
    return 0;
#endif
  }
  PARPLAN_HD int64_t count() const {
#if defined(__CUDA_ARCH__)
    return blockDim.x;
#else
    return 1;
#endif
  }
  template <typename C> PARPLAN_HD C sum(C value) const {
    return combine(value, false);
  }
  template <typename C> PARPLAN_HD C max(C value) const {
    return combine(value, true);
  }

private:
  template <typename C> PARPLAN_HD C combine(C value, bool maximum) const {
#if defined(__CUDA_ARCH__)
    value = combineWarp(value, maximum);
    // The last combination's readers are done with the slots.
    __syncthreads();
    if ((threadIdx.x & 31) == 0)
      shared[threadIdx.x >> 5] = static_cast<double>(value);
    __syncthreads();
    C result = static_cast<C>(shared[0]);
    for (unsigned warp = 1; warp < blockDim.x >> 5; ++warp)
      result = combineTwo(result, static_cast<C>(shared[warp]), maximum);
    return result;
#else
    return value;
#endif
  }
};

template <typename F> __global__ void forEachRowKernel(int64_t rows, F f) {
  __shared__ double shared[32];
  BlockLanes lanes{shared};
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    f(row, lanes);
}

/// The lanes of a short row on the GPU: the 32 threads of one warp, which
/// combine by shuffles alone (a butterfly, so every lane gets the same
/// value); a block holds several such rows and never synchronizes.
struct WarpLanes {
  PARPLAN_HD int64_t lane() const {
#if defined(__CUDA_ARCH__)
    return threadIdx.x & 31;
#else
    return 0;
#endif
  }
  PARPLAN_HD int64_t count() const { return 32; }
  template <typename C> PARPLAN_HD C sum(C value) const {
    return combineWarp(value, false);
  }
  template <typename C> PARPLAN_HD C max(C value) const {
    return combineWarp(value, true);
  }
};

/// Rows of at most kWarpRowLength elements take a warp each.
inline constexpr int64_t kWarpRowLength = 1024;

template <typename F> __global__ void forEachWarpRowKernel(int64_t rows, F f) {
  int64_t warps = static_cast<int64_t>(blockDim.x >> 5);
  // The whole warp takes each row: its lanes agree on the loop's bounds.
  for (int64_t row = blockIdx.x * warps + (threadIdx.x >> 5); row < rows;
       row += gridDim.x * warps)
    f(row, WarpLanes{});
}

/// Square tiles staged in shared memory (a column of padding keeps a
/// tile's column reads off one bank); 32 x 8 threads, four words each.
template <typename W>
__global__ void transposeMatricesKernel(const W *in, W *out, int64_t rows,
                                        int64_t columns, int64_t tilesDown,
                                        int64_t tilesAcross, int64_t tiles) {
  constexpr int kSide = static_cast<int>(kTransposeTile);
  __shared__ W tile[kSide][kSide + 1];
  int64_t perMatrix = tilesDown * tilesAcross;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t matrix = t / perMatrix, within = t % perMatrix;
    int64_t row0 = (within / tilesAcross) * kSide;
    int64_t column0 = (within % tilesAcross) * kSide;
    const W *source = in + matrix * rows * columns;
    W *target = out + matrix * rows * columns;
    for (int k = threadIdx.y; k < kSide; k += blockDim.y) {
      int64_t r = row0 + k, c = column0 + threadIdx.x;
      if (r < rows && c < columns)
        tile[k][threadIdx.x] = source[r * columns + c];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < kSide; k += blockDim.y) {
      int64_t c = column0 + k, r = row0 + threadIdx.x;
      if (r < rows && c < columns)
        target[c * rows + r] = tile[threadIdx.x][k];
    }
    __syncthreads();
  }
}

class CudaLauncher {
public:
  /// `errorSlot` is a device int the kernels of this launch write
  /// `errorCode` into; `scratch` grows on demand (cudaMallocAsync on the
  /// stream, so it is freed in stream order).
  CudaLauncher(cudaStream_t stream, cublasHandle_t blas, int *errorSlot,
               int errorCode, void **scratch, size_t *scratchBytes,
               bool capturing)
      : stream_(stream), blas_(blas), errorSlot_(errorSlot),
        errorCode_(errorCode), scratch_(scratch), scratchBytes_(scratchBytes),
        capturing_(capturing) {}

  template <typename F> void forEach(int64_t n, const F &f) {
    if (n <= 0)
      return;
    constexpr int kThreads = 256;
    // Enough blocks to fill an H100 several times over; the grid-stride
    // loop covers the rest.
    int64_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 65535)
      blocks = 65535;
    forEachKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream_>>>(n,
                                                                           f);
    record(cudaGetLastError(), "kernel launch");
  }

  template <typename F> void forEachStaged(int64_t n, const F &f) {
    if (n <= 0)
      return;
    constexpr int kThreads = 256;
    int64_t perBlock = kThreads * kStagedElements;
    int64_t blocks = (n + perBlock - 1) / perBlock;
    if (blocks > 65535)
      blocks = 65535;
    forEachStagedKernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                          stream_>>>(n, f);
    record(cudaGetLastError(), "kernel launch");
  }

  /// A warp per row of at most kWarpRowLength elements, eight rows to a
  /// block; a block per longer row, of as many lanes as the row has
  /// elements, rounded up to a warp, up to 256.
  template <typename F>
  void forEachRow(int64_t rows, int64_t length, const F &f) {
    if (rows <= 0)
      return;
    if (length <= kWarpRowLength) {
      constexpr int kWarps = 8;
      int64_t blocks = (rows + kWarps - 1) / kWarps;
      if (blocks > 65535)
        blocks = 65535;
      forEachWarpRowKernel<<<static_cast<unsigned>(blocks), kWarps * 32, 0,
                             stream_>>>(rows, f);
      record(cudaGetLastError(), "kernel launch");
      return;
    }
    int threads = 32;
    while (threads < 256 && threads < length)
      threads *= 2;
    int64_t blocks = rows < 65535 ? rows : 65535;
    forEachRowKernel<<<static_cast<unsigned>(blocks), threads, 0, stream_>>>(
        rows, f);
    record(cudaGetLastError(), "kernel launch");
  }

  /// Partial results worth computing at once: enough threads to fill an
  /// H100's 132 multiprocessors (2,048 each) about once.
  int64_t parallelism() const { return int64_t{1} << 18; }

  void copy(void *to, const void *from, size_t bytes) {
    if (bytes && to != from)
      record(
          cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync");
  }

  template <typename W>
  void transposeMatrices(const W *in, W *out, int64_t matrices, int64_t rows,
                         int64_t columns) {
    int64_t tilesDown = (rows + kTransposeTile - 1) / kTransposeTile;
    int64_t tilesAcross = (columns + kTransposeTile - 1) / kTransposeTile;
    int64_t tiles = matrices * tilesDown * tilesAcross;
    if (tiles <= 0)
      return;
    int64_t blocks = tiles < (int64_t{1} << 20) ? tiles : (int64_t{1} << 20);
    transposeMatricesKernel<W>
        <<<static_cast<unsigned>(blocks), dim3(kTransposeTile, 8), 0,
           stream_>>>(in, out, rows, columns, tilesDown, tilesAcross, tiles);
    record(cudaGetLastError(), "kernel launch");
  }

  void *workspace(size_t bytes) {
    if (bytes > *scratchBytes_ && capturing_) {
      record(cudaErrorStreamCaptureUnsupported,
             "scratch growth while capturing a graph");
      return nullptr;
    }
    if (bytes > *scratchBytes_) {
      if (*scratch_)
        record(cudaFreeAsync(*scratch_, stream_), "cudaFreeAsync");
      *scratch_ = nullptr;
      *scratchBytes_ = 0;
      if (!record(cudaMallocAsync(scratch_, bytes, stream_),
                  "cudaMallocAsync (workspace)")) {
        *scratch_ = nullptr;
        return nullptr;
      }
      *scratchBytes_ = bytes;
    }
    return *scratch_;
  }
  int *errorSlot() { return errorSlot_; }
  int errorCode() const { return errorCode_; }

  Status gemm(const GemmCall &call) {
    cudaDataType type;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    float alpha32 = static_cast<float>(call.alpha),
          beta32 = static_cast<float>(call.beta);
    const void *alpha = &alpha32, *beta = &beta32;
    switch (call.type) {
    case DType::F32:
      type = CUDA_R_32F;
      // TF32 tensor cores only when asked (parplan-run --tf32): their
      // 10-bit mantissa is outside float32's 1e-4 agreement with the CPU.
      compute = tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case DType::F64:
      type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      alpha = &call.alpha;
      beta = &call.beta;
      break;
    case DType::F16:
      type = CUDA_R_16F;
      break;
    case DType::BF16:
      type = CUDA_R_16BF;
      break;
    default:
      return Status::failure(std::string("gemm: no product for ") +
                             toString(call.type));
    }
    if (call.m == 0 || call.n == 0 || call.batch == 0)
      return Status::success();
    // cuBLAS's 32-bit interface: larger sizes would wrap.
    for (int64_t size :
         {call.m, call.n, call.k, call.lda, call.ldb, call.ldc, call.batch})
      if (size > INT32_MAX)
        return Status::failure("gemm: a dimension of " + std::to_string(size) +
                               " is beyond cuBLAS's 32-bit sizes");
    cublasStatus_t status = cublasGemmStridedBatchedEx(
        blas_, call.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
        call.transB ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(call.m),
        static_cast<int>(call.n), static_cast<int>(call.k), alpha, call.a, type,
        static_cast<int>(call.lda), call.strideA, call.b, type,
        static_cast<int>(call.ldb), call.strideB, beta, call.c, type,
        static_cast<int>(call.ldc), call.strideC, static_cast<int>(call.batch),
        compute, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS)
      return Status::failure(std::string("cuBLAS: ") +
                             cublasGetStatusString(status));
    return Status::success();
  }

  /// The first launch failure, if any (a kernel that could not start).
  bool ok() const { return ok_; }
  const std::string &launchError() const { return launchError_; }

  void setTf32(bool tf32) { tf32_ = tf32; }

private:
  /// Keeps the first failure; true when `error` is none.
  bool record(cudaError_t error, const char *what) {
    if (error == cudaSuccess)
      return true;
    cudaGetLastError(); // clear it, so that later calls report their own
    if (ok_) {
      ok_ = false;
      launchError_ = std::string(what) + ": " + cudaGetErrorString(error);
    }
    return false;
  }

  bool tf32_ = false;
  cudaStream_t stream_;
  cublasHandle_t blas_;
  int *errorSlot_;
  int errorCode_;
  void **scratch_;
  size_t *scratchBytes_;
  bool capturing_;
  bool ok_ = true;
  std::string launchError_;
};

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_CUDA_CUDALAUNCHER_H
