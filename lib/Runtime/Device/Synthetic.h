//===- Synthetic.h - synthetic values drawn where a buffer lives -*- C++
//-*-===//
//
// The values Initializers.h's fillBlock makes on the host, made by a kernel
// instead, so that a backend on a GPU draws a step's synthetic batch in
// place rather than making it on the host and copying it. Element i of the
// block gets the value of its logical row-major index, from the same bits
// (Support/Hash.h's splitmix64) and the same conversions: a float is
// scale * (2u - 1) in double, then rounded to f32 or kept in f64; an
// integer is floor(u * bound), at most bound - 1. Other element types
// (16-bit floats, whose host conversion rounds in two steps, i1, i8) are
// left to the host.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_SYNTHETIC_H
#define PARPLAN_LIB_RUNTIME_DEVICE_SYNTHETIC_H

#include "Device/DeviceTensor.h"
#include "parplan/Support/Hash.h"

#include <vector>

namespace parplan::runtime::device {

template <typename S> struct SyntheticElements {
  S *data;
  /// The block's shape, the logical tensor's row-major strides and the
  /// block's offsets in it.
  Dims shape, strides, offsets;
  uint64_t key;
  double scale;
  int64_t integerBound;
  bool floating;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t logical = 0, rest = i;
    for (int64_t d = shape.rank - 1; d >= 0; --d) {
      logical += (offsets.size[d] + rest % shape.size[d]) * strides.size[d];
      rest /= shape.size[d];
    }
    uint64_t bits = splitmix64(key + static_cast<uint64_t>(logical));
    double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;
    if (floating) {
      data[i] = static_cast<S>(scale * (2 * unit - 1));
    } else {
      // Non-negative: truncation is the floor.
      auto value =
          static_cast<int64_t>(unit * static_cast<double>(integerBound));
      data[i] = static_cast<S>(value < integerBound ? value : integerBound - 1);
    }
  }
};

/// Fills `tensor` (a block at `offsets` of a tensor of `logicalShape`) with
/// the synthetic values of `key`; false, launching nothing, for an element
/// type it leaves to the host, a rank above kMaxRank, or an integer tensor
/// without a positive bound.
template <class L>
bool fillSynthetic(L &launcher, const DeviceTensor &tensor,
                   const std::vector<int64_t> &logicalShape,
                   const std::vector<int64_t> &offsets, uint64_t key,
                   double scale, int64_t integerBound) {
  size_t rank = tensor.shape.size();
  if (rank > static_cast<size_t>(kMaxRank) || logicalShape.size() != rank ||
      offsets.size() != rank)
    return false;
  bool floating = tensor.dtype == DType::F32 || tensor.dtype == DType::F64;
  if (!floating && integerBound <= 0)
    return false;
  Dims shape, strides, at;
  toDims(tensor.shape, shape);
  toDims(Shape(offsets.begin(), offsets.end()), at);
  strides.rank = static_cast<int64_t>(rank);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    strides.size[d] = stride;
    stride *= logicalShape[d];
  }
  int64_t count = tensor.numElements();
  auto launch = [&](auto zero) {
    using S = decltype(zero);
    launcher.forEach(count,
                     SyntheticElements<S>{tensor.as<S>(), shape, strides, at,
                                          key, scale, integerBound, floating});
  };
  switch (tensor.dtype) {
  case DType::F32:
    launch(float{});
    return true;
  case DType::F64:
    launch(double{});
    return true;
  case DType::I32:
    launch(int32_t{});
    return true;
  case DType::I64:
    launch(int64_t{});
    return true;
  default:
    return false;
  }
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_SYNTHETIC_H
