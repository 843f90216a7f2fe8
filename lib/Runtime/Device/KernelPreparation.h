//===- KernelPreparation.h - which kernels run on the device ----*- C++ -*-===//
//
// What a backend that runs the device kernels (the CUDA backend, and the CPU
// backend with HostKernels::Device) works out once per program: every
// kernel's attributes as resolveKernelAttrs returns them, and whether a
// device kernel covers it (asked of ProbeLauncher, which launches nothing)
// or its reference kernel must run instead.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_KERNELPREPARATION_H
#define PARPLAN_LIB_RUNTIME_DEVICE_KERNELPREPARATION_H

#include "Device/DeviceTensor.h"
#include "parplan/Runtime/KernelCall.h"
#include "parplan/Runtime/PlanFile.h"

#include <map>
#include <string>
#include <vector>

namespace parplan::runtime::device {

struct KernelPreparation {
  /// By instruction (unset, and empty, for non-kernels).
  std::vector<KernelId> ids;
  std::vector<AttrMap> resolved;
  std::vector<bool> onDevice;
  /// The ops left to the reference kernels, with their counts.
  std::map<std::string, int> referenceCounts;
};

/// Prepares `program`'s kernels; `attrs` are their attributes as the plan
/// gives them and `buffers` the program's buffers (only their types and
/// shapes are read, and nothing is written: the probe launches nothing).
/// Fails, naming the instruction, on attributes the reference kernels would
/// reject.
Status prepareKernels(const plan::Program &program,
                      const std::vector<AttrMap> &attrs,
                      std::vector<DeviceTensor> &buffers,
                      KernelPreparation &preparation);

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_KERNELPREPARATION_H
