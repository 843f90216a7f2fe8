//===- NoCudaBackend.cpp - the CUDA backend's entry points without CUDA ---===//
//
// Built when CMake found no nvcc or NCCL (or PARPLAN_ENABLE_CUDA is off), so
// that parplan-run links the same functions and says why --backend cuda
// cannot run.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/CudaBackend.h"

namespace parplan::runtime {

bool cudaBackendBuilt() { return false; }

std::string cudaUnavailableReason() {
  return "this build has no CUDA backend (configure with "
         "-DPARPLAN_ENABLE_CUDA=ON where nvcc and NCCL are installed)";
}

int cudaDeviceCount() { return 0; }

std::string cudaDeviceAddress(int) { return ""; }

std::unique_ptr<Backend> createCudaBackend(Transport &, const CudaOptions &,
                                           Status &status) {
  status = Status::failure(cudaUnavailableReason());
  return nullptr;
}

} // namespace parplan::runtime
