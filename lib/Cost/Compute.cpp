//===- Compute.cpp - roofline time of computations ------------------------===//

#include "parplan/Cost/Compute.h"

#include <algorithm>

std::optional<double> parplan::cost::computeTime(double flops, double bytes,
                                                 const DeviceType &device,
                                                 DType dtype) {
  auto peak = device.peakFlops.find(dtype);
  if (peak == device.peakFlops.end() || peak->second <= 0 ||
      device.memoryBandwidth <= 0)
    return std::nullopt;
  double roofline = std::max(flops / (peak->second * device.computeEfficiency),
                             bytes / device.memoryBandwidth);
  // Work that moves nothing (a view) launches no kernel.
  if (flops > 0 || bytes > 0)
    return std::max(roofline, device.kernelOverhead);
  return roofline;
}
