//===- Compute.h - time of computations -------------------------*- C++ -*-===//

#ifndef PARPLAN_COST_COMPUTE_H
#define PARPLAN_COST_COMPUTE_H

#include "parplan/Cost/Cluster.h"

#include <optional>

namespace parplan::cost {

/// Time of `flops` FLOPs moving `bytes` bytes of device memory on
/// `device` in `dtype`: flops / (peak x efficiency) + bytes / memory
/// bandwidth + kernel overhead, the efficiency and overhead being the
/// device type's (DeviceType::computeEfficiency, kernelOverhead; no
/// overhead for work of no FLOPs and no bytes, which launches nothing).
/// The terms add: a kernel's traffic does not all hide behind its
/// arithmetic, and kernels on a stream run one after another, each
/// starting after its launch. std::nullopt when there are FLOPs and the
/// device has no peak for `dtype`, or the device has no memory bandwidth.
std::optional<double> computeTime(double flops, double bytes,
                                  const DeviceType &device, ComputeType dtype);

} // namespace parplan::cost

#endif // PARPLAN_COST_COMPUTE_H
