//===- Compute.h - roofline time of computations ----------------*- C++ -*-===//

#ifndef PARPLAN_COST_COMPUTE_H
#define PARPLAN_COST_COMPUTE_H

#include "parplan/Cost/Cluster.h"

#include <optional>

namespace parplan::cost {

/// Roofline time of `flops` FLOPs moving `bytes` bytes of device memory on
/// `device` in `dtype`: max(flops / (peak x efficiency), bytes / memory
/// bandwidth, kernel overhead), the efficiency and overhead being the
/// device type's (DeviceType::computeEfficiency, kernelOverhead; no
/// overhead for work of no FLOPs and no bytes, which launches nothing). A
/// stream of kernels each shorter than the overhead runs at one per
/// overhead: launches overlap the kernels before them. std::nullopt when
/// there are FLOPs and the device has no peak for `dtype`, or the device
/// has no memory bandwidth.
std::optional<double> computeTime(double flops, double bytes,
                                  const DeviceType &device, DType dtype);

} // namespace parplan::cost

#endif // PARPLAN_COST_COMPUTE_H
