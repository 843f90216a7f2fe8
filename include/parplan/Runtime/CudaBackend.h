//===- CudaBackend.h - run a device's program on a GPU ----------*- C++ -*-===//
//
// The CUDA backend of parplan-run (docs/cuda.md): buffers in GPU memory,
// matmul and gemm through cuBLAS, the other kernels as CUDA kernels
// (lib/Runtime/Device), collectives and messages through NCCL on a stream of
// their own that overlaps the kernels (StreamSchedule.h). An op without a
// CUDA kernel runs its reference kernel on the host, and hostKernels() says
// which. Declared in every build; in a build without CUDA, creating one
// fails with a message saying so. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_CUDABACKEND_H
#define PARPLAN_RUNTIME_CUDABACKEND_H

#include "parplan/Runtime/Backend.h"
#include "parplan/Runtime/Communicator.h"

#include <memory>
#include <string>

namespace parplan::runtime {

struct CudaOptions {
  /// The GPU to use (parplan-run picks the local rank's, modulo the GPUs
  /// the process sees, so that the ranks of a machine spread over them).
  int device = 0;
  /// Let float32 matmuls use TF32 tensor cores (faster, about 1e-3
  /// relative: outside the 1e-4 agreement with the CPU backend).
  bool tf32 = false;
  /// Replay a range of instructions that runs device kernels alone (no
  /// collectives, messages or host kernels) from a CUDA graph captured on
  /// its second run: one launch per step for the host instead of one or
  /// more per instruction. Off: every instruction is launched every step.
  bool graphs = true;
  /// Run the all-reduces of gradients that only updates read
  /// (Collective.feeds_update) on a gradients stream of their own, on
  /// communicators of their own (docs/cuda.md#streams-and-overlap). Off:
  /// on the communication stream, in program order with the other
  /// collectives (NCCL does not promise that collectives on two
  /// communicators over the same GPUs progress at once).
  bool gradientsStream = true;
};

/// Whether this build has the CUDA backend.
bool cudaBackendBuilt();

/// Why the CUDA backend cannot run here ("no CUDA device (cudaGetDeviceCount:
/// CUDA driver version is insufficient for CUDA runtime version)", "this
/// build has no CUDA backend ..."), or empty when a GPU is usable.
std::string cudaUnavailableReason();

/// The GPUs this process sees (0 without CUDA or a driver).
int cudaDeviceCount();
/// GPU `device`'s PCI address ("0000:1B:00.0"), which tells GPUs apart
/// across processes that number them differently; empty if unknown.
std::string cudaDeviceAddress(int device);

/// A CUDA backend on the GPU `options` picks. `world` (rank r of the
/// processes running the plan, one per program, outliving the backend)
/// carries NCCL's set-up; the collectives then go through NCCL. On failure
/// returns null and sets `status`.
std::unique_ptr<Backend>
createCudaBackend(Transport &world, const CudaOptions &options, Status &status);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_CUDABACKEND_H
