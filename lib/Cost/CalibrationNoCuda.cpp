//===- CalibrationNoCuda.cpp - parplan calibrate without CUDA -------------===//
//
// The ParplanCalibration library of a build without CUDA (no nvcc or NCCL,
// or -DPARPLAN_ENABLE_CUDA=OFF): nothing can be measured, and both entry
// points say why.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/Calibration.h"

namespace {

const char *const kNoCuda =
    "this parplan was built without CUDA (configure with "
    "-DPARPLAN_ENABLE_CUDA=ON where nvcc and NCCL are installed)";

} // namespace

std::optional<std::string>
parplan::cost::listLocalGpus(std::vector<GpuInfo> &gpus) {
  gpus.clear();
  return std::string(kNoCuda);
}

std::optional<std::string>
parplan::cost::measureLocalGpus(const CalibrationOptions &,
                                GpuMeasurements &gpus) {
  gpus = GpuMeasurements();
  return std::string(kNoCuda);
}
