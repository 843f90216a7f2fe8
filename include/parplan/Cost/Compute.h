//===- Compute.h - roofline time of computations ----------------*- C++ -*-===//

#ifndef PARPLAN_COST_COMPUTE_H
#define PARPLAN_COST_COMPUTE_H

#include "parplan/Cost/Cluster.h"

#include <optional>

namespace parplan::cost {

/// Roofline time of `flops` FLOPs moving `bytes` bytes of device memory on
/// `device` in `dtype`: max(flops / (peak x efficiency), bytes / memory
/// bandwidth), the efficiency being the device type's
/// (DeviceType::computeEfficiency). std::nullopt when the device has no
/// peak for `dtype`.
std::optional<double> computeTime(double flops, double bytes,
                                  const DeviceType &device, DType dtype);

} // namespace parplan::cost

#endif // PARPLAN_COST_COMPUTE_H
