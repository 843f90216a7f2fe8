//===- Compute.cpp - time of computations ---------------------------------===//

#include "parplan/Cost/Compute.h"

std::optional<double> parplan::cost::computeTime(double flops, double bytes,
                                                 const DeviceType &device,
                                                 ComputeType dtype) {
  if (device.memoryBandwidth <= 0)
    return std::nullopt;
  // Memory traffic and arithmetic add up rather than overlap: measured on
  // an H200, cuBLAS's f32, TF32 and bf16 products take their FLOPs' time at
  // the calibrated peak plus about their bytes' time (docs/cost-model.md).
  double time = bytes / device.memoryBandwidth;
  // Only FLOPs need a peak: memory-bound work (a copy, an optimizer step)
  // is priced on any device.
  if (flops > 0) {
    auto peak = device.peakFlops.find(dtype);
    if (peak == device.peakFlops.end() || peak->second <= 0)
      return std::nullopt;
    time += flops / (peak->second * device.computeEfficiency);
  }
  // Work that moves nothing (a view) launches no kernel; a kernel takes
  // its overhead before its work, one after another on a stream.
  if (flops > 0 || bytes > 0)
    return time + device.kernelOverhead;
  return time;
}
