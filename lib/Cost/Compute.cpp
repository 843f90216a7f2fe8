//===- Compute.cpp - roofline time of computations ------------------------===//

#include "parplan/Cost/Compute.h"

#include <algorithm>

std::optional<double> parplan::cost::computeTime(double flops, double bytes,
                                                 const DeviceType &device,
                                                 DType dtype) {
  if (device.memoryBandwidth <= 0)
    return std::nullopt;
  double roofline = bytes / device.memoryBandwidth;
  // Only FLOPs need a peak: memory-bound work (a copy, an optimizer step)
  // is priced on any device.
  if (flops > 0) {
    auto peak = device.peakFlops.find(dtype);
    if (peak == device.peakFlops.end() || peak->second <= 0)
      return std::nullopt;
    roofline =
        std::max(roofline, flops / (peak->second * device.computeEfficiency));
  }
  // Work that moves nothing (a view) launches no kernel.
  if (flops > 0 || bytes > 0)
    return std::max(roofline, device.kernelOverhead);
  return roofline;
}
