//===- CudaKernels.h - the device kernels, compiled for CUDA ----*- C++ -*-===//
//
// The entry points of CudaKernels.cu, the one file nvcc compiles the
// kernels of lib/Runtime/Device in: the backend (CudaBackend.cpp, compiled
// by the host compiler) calls these with device pointers.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_CUDA_CUDAKERNELS_H
#define PARPLAN_LIB_RUNTIME_CUDA_CUDAKERNELS_H

#include "Device/DeviceTensor.h"
#include "parplan/Runtime/KernelCall.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace parplan::runtime::device {

/// What a launch needs from the backend: the stream, cuBLAS (bound to the
/// stream), the device int kernels write `errorCode` into on a data fault,
/// and a scratch allocation that grows on demand.
struct CudaLaunchContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  int *errorSlot = nullptr;
  int errorCode = 0;
  void **scratch = nullptr;
  size_t *scratchBytes = nullptr;
  bool tf32 = false;
  /// The stream is being captured into a graph: the scratch may not grow
  /// (an allocation would become the graph's), so a kernel that needs more
  /// fails its launch, and the backend runs the step without a graph.
  bool capturing = false;
};

/// launchDeviceKernel (Dispatch.h) on the GPU. A launch failure (a kernel
/// that could not start, a cuBLAS error) comes back in `status`.
Launch launchCudaKernel(const CudaLaunchContext &context, KernelId op,
                        const AttrMap &attrs,
                        const std::vector<const DeviceTensor *> &operands,
                        const std::vector<DeviceTensor *> &results,
                        Status &status);

/// fillSynthetic (Synthetic.h) on the GPU: false, launching nothing, where
/// it leaves the tensor to the host. A launch failure comes back in
/// `status`.
bool fillSyntheticCuda(const CudaLaunchContext &context,
                       const DeviceTensor &tensor,
                       const std::vector<int64_t> &logicalShape,
                       const std::vector<int64_t> &offsets, uint64_t key,
                       double scale, int64_t integerBound, Status &status);

/// packParts and unpackParts (Pack.h) on the GPU.
Status packPartsCuda(const CudaLaunchContext &context,
                     const DeviceTensor &tensor, int64_t axis, int64_t parts,
                     void *packed);
Status unpackPartsCuda(const CudaLaunchContext &context, const void *packed,
                       int64_t axis, int64_t parts, DeviceTensor &tensor);

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_CUDA_CUDAKERNELS_H
