//===- DropoutMask.h - dropout's counter-based draw ------------*- C++ -*-===//
//
// The uniform number that decides whether dropout keeps an element: the
// reference kernel (Kernels.cpp) and the device kernels (Elementwise.h)
// draw it with this one function, so every backend drops the same
// elements.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_DROPOUTMASK_H
#define PARPLAN_LIB_RUNTIME_DEVICE_DROPOUTMASK_H

#include "Device/DeviceTensor.h"
#include "parplan/Support/Hash.h"

#include <cstdint>

namespace parplan::runtime::device {

/// In [0, 1): the top 53 bits of SplitMix64 (Support/Hash.h) chained over
/// the five (runtime::dropoutUniform documents the arguments).
PARPLAN_HD double dropoutDraw(uint64_t seed, uint64_t step, uint64_t microBatch,
                              uint64_t key, uint64_t index) {
  uint64_t h = splitmix64(
      seed ^
      splitmix64(
          key ^ splitmix64(step ^ splitmix64(microBatch ^ splitmix64(index)))));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_DROPOUTMASK_H
