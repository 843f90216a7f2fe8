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

#include <cstdint>

namespace parplan::runtime::device {

/// SplitMix64's finalizer of z + the golden-ratio increment.
PARPLAN_HD uint64_t splitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// In [0, 1): the top 53 bits of the finalizers chained over the five
/// (runtime::dropoutUniform documents the arguments).
PARPLAN_HD double dropoutDraw(uint64_t seed, uint64_t step, uint64_t microBatch,
                              uint64_t key, uint64_t index) {
  uint64_t h = splitMix64(
      seed ^
      splitMix64(
          key ^ splitMix64(step ^ splitMix64(microBatch ^ splitMix64(index)))));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_DROPOUTMASK_H
