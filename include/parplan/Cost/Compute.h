//===- Compute.h - roofline time of computations ----------------*- C++ -*-===//

#ifndef PARPLAN_COST_COMPUTE_H
#define PARPLAN_COST_COMPUTE_H

#include "parplan/Cost/Cluster.h"

#include <optional>

namespace parplan::cost {

/// Fraction of peak FLOP/s that kernels reach; large GEMMs reach 0.7 to 0.8
/// on recent GPUs, elementwise kernels are bound by memory anyway.
constexpr double kDefaultComputeEfficiency = 0.7;

/// Roofline time of `flops` FLOPs moving `bytes` bytes of device memory on
/// `device` in `dtype`: max(flops / (peak x efficiency), bytes / memory
/// bandwidth). std::nullopt when the device has no peak for `dtype`.
std::optional<double>
computeTime(double flops, double bytes, const DeviceType &device, DType dtype,
            double efficiency = kDefaultComputeEfficiency);

} // namespace parplan::cost

#endif // PARPLAN_COST_COMPUTE_H
