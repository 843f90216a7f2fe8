//===- KernelSupport.h - helpers shared by the runtime kernels --*- C++ -*-===//
//
// Private to lib/Runtime: strides and broadcasting walks, loading tensors of
// any element type into double scratch and storing them back (the way every
// float kernel supports F16/BF16/F32/F64 with one code path), and the
// geometry of pooling windows, which forward and backward pooling must
// agree on element for element.
//
// All functions are header-inline so the forward and backward kernel files
// share them without another translation unit. Signatures are stable.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_KERNELSUPPORT_H
#define PARPLAN_LIB_RUNTIME_KERNELSUPPORT_H

#include "parplan/Runtime/Kernels.h"
#include "parplan/Runtime/Tensor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace parplan::runtime::detail {

//===----------------------------------------------------------------------===//
// Strides and broadcasting
//===----------------------------------------------------------------------===//

/// Row-major strides, in elements.
inline std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Strides (one per dimension of `target`) that read a tensor of shape
/// `source` broadcast to `target` by numpy rules: shapes aligned at the
/// right, stride 0 where `source` has size 1 or no dimension.
inline std::vector<int64_t> broadcastStrides(const Shape &source,
                                             const Shape &target) {
  std::vector<int64_t> own = stridesOf(source);
  std::vector<int64_t> strides(target.size(), 0);
  int64_t offset =
      static_cast<int64_t>(target.size()) - static_cast<int64_t>(source.size());
  for (size_t d = 0; d < source.size(); ++d)
    if (source[d] != 1 && offset + static_cast<int64_t>(d) >= 0)
      strides[offset + d] = own[d];
  return strides;
}

/// Whether `source` broadcasts to `target` (numpy, one direction).
inline bool broadcastsTo(const Shape &source, const Shape &target) {
  if (source.size() > target.size())
    return false;
  size_t offset = target.size() - source.size();
  for (size_t d = 0; d < source.size(); ++d)
    if (source[d] != 1 && source[d] != target[offset + d])
      return false;
  return true;
}

/// The broadcast of two shapes (numpy), or nullopt.
inline std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape shape(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    shape[i] = da == 1 ? db : da;
  }
  return shape;
}

/// Walks the elements of `shape` in row-major order and calls
/// fn(linearIndex, offsets) where, for each operand k,
/// offsets[k] = base[k] + sum_d index[d] * strides[k][d]. Every strides[k]
/// has one entry per dimension of `shape`. Offsets are updated
/// incrementally, so a walk costs O(1) per element amortized.
template <size_t N, typename Fn>
void walkStrided(const Shape &shape,
                 const std::array<std::vector<int64_t>, N> &strides, Fn &&fn,
                 std::array<int64_t, N> base = {}) {
  int64_t total = numElements(shape);
  if (total <= 0)
    return;
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> index(shape.size(), 0);
  std::array<int64_t, N> offsets = base;
  for (int64_t linear = 0; linear < total; ++linear) {
    fn(linear, static_cast<const std::array<int64_t, N> &>(offsets));
    for (int64_t d = rank - 1; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (index[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

/// A signed axis (negative counts from the end) as an index in [0, rank).
inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Product of shape[begin, end).
inline int64_t productOf(const Shape &shape, int64_t begin, int64_t end) {
  int64_t product = 1;
  for (int64_t d = begin; d < end; ++d)
    product *= shape[d];
  return product;
}

/// The [outer, axis, inner] view of a shape around one axis.
struct AxisSplit {
  int64_t outer, size, inner;
};
inline AxisSplit splitAt(const Shape &shape, int64_t axis) {
  int64_t rank = static_cast<int64_t>(shape.size());
  return {productOf(shape, 0, axis), shape[axis],
          productOf(shape, axis + 1, rank)};
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// "softmax: expected a floating-point tensor, got i32" unless `tensor` is
/// F16, BF16, F32 or F64.
inline Status requireFloat(const char *kernel, const Tensor &tensor) {
  if (isFloat(tensor.dtype()))
    return Status::success();
  return Status::failure(std::string(kernel) +
                         ": expected a floating-point tensor, got " +
                         toString(tensor.dtype()));
}

/// "matmul: element types f32 and f64 differ" unless both match.
inline Status requireSameType(const char *kernel, const Tensor &a,
                              const Tensor &b) {
  if (a.dtype() == b.dtype())
    return Status::success();
  return Status::failure(std::string(kernel) + ": element types " +
                         toString(a.dtype()) + " and " + toString(b.dtype()) +
                         " differ");
}

/// Every element as a double (exact for all types but I64 beyond 2^53).
inline std::vector<double> loadDoubles(const Tensor &tensor) {
  int64_t count = tensor.numElements();
  std::vector<double> values(static_cast<size_t>(count));
  switch (tensor.dtype()) {
  case DType::F32: {
    const float *data = tensor.data<float>();
    for (int64_t i = 0; i < count; ++i)
      values[i] = data[i];
    break;
  }
  case DType::F64:
    if (count)
      std::memcpy(values.data(), tensor.bytes(), count * sizeof(double));
    break;
  default:
    for (int64_t i = 0; i < count; ++i)
      values[i] = tensor.get(i);
    break;
  }
  return values;
}

/// Stores `values` (one per element) into `tensor`, rounding each once to
/// its element type (integers: truncated toward zero, saturated).
inline void storeDoubles(const double *values, Tensor &tensor) {
  int64_t count = tensor.numElements();
  switch (tensor.dtype()) {
  case DType::F32: {
    float *data = tensor.data<float>();
    for (int64_t i = 0; i < count; ++i)
      data[i] = static_cast<float>(values[i]);
    break;
  }
  case DType::F64:
    if (count)
      std::memcpy(tensor.bytes(), values, count * sizeof(double));
    break;
  default:
    for (int64_t i = 0; i < count; ++i)
      tensor.set(i, values[i]);
    break;
  }
}
inline void storeDoubles(const std::vector<double> &values, Tensor &tensor) {
  storeDoubles(values.data(), tensor);
}

/// Every element of an integer (or I1) tensor as an int64, exactly (float
/// elements truncate toward zero and saturate).
inline std::vector<int64_t> loadInts(const Tensor &tensor) {
  int64_t count = tensor.numElements();
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    switch (tensor.dtype()) {
    case DType::I1:
      values[i] = tensor.data<uint8_t>()[i] ? 1 : 0;
      break;
    case DType::I8:
      values[i] = tensor.data<int8_t>()[i];
      break;
    case DType::I32:
      values[i] = tensor.data<int32_t>()[i];
      break;
    case DType::I64:
      values[i] = tensor.data<int64_t>()[i];
      break;
    default: {
      // Float input: truncate, with NaN as 0 and saturation, since the
      // plain conversion is undefined out of range.
      double value = std::trunc(tensor.get(i));
      values[i] = std::isnan(value)                 ? 0
                  : value <= -9.2233720368547758e18 ? INT64_MIN
                  : value >= 9.2233720368547758e18
                      ? INT64_MAX
                      : static_cast<int64_t>(value);
      break;
    }
    }
  }
  return values;
}

/// Stores int64 values into an integer tensor, wrapping (two's complement)
/// to narrower types as numpy does; I1 stores value != 0. Float tensors get
/// the value converted.
inline void storeInts(const std::vector<int64_t> &values, Tensor &tensor) {
  int64_t count = tensor.numElements();
  for (int64_t i = 0; i < count; ++i) {
    switch (tensor.dtype()) {
    case DType::I1:
      tensor.data<uint8_t>()[i] = values[i] != 0 ? 1 : 0;
      break;
    case DType::I8:
      tensor.data<int8_t>()[i] = static_cast<int8_t>(values[i]);
      break;
    case DType::I32:
      tensor.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
      break;
    case DType::I64:
      tensor.data<int64_t>()[i] = values[i];
      break;
    default:
      tensor.set(i, static_cast<double>(values[i]));
      break;
    }
  }
}

/// Index tensors (gather, labels): I32 or I64 element i as int64.
inline int64_t indexAt(const Tensor &indices, int64_t i) {
  if (indices.dtype() == DType::I32)
    return indices.data<int32_t>()[i];
  if (indices.dtype() == DType::I64)
    return indices.data<int64_t>()[i];
  return static_cast<int64_t>(indices.get(i));
}

//===----------------------------------------------------------------------===//
// Sliding windows (conv and pooling)
//===----------------------------------------------------------------------===//

/// Output size of one spatial dimension under ONNX rules. In ceil mode a
/// last window that would start in the end padding is dropped.
inline int64_t slidingOutputSize(int64_t input, int64_t kernel, int64_t stride,
                                 int64_t padBegin, int64_t padEnd,
                                 int64_t dilation, bool ceilMode) {
  int64_t span = input + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t count = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceilMode && (count - 1) * stride >= input + padBegin)
    --count;
  return count;
}

/// A PoolWindow with every list filled for `spatialRank` dimensions:
/// strides and dilations default to 1, pads to 0.
inline PoolWindow completePoolWindow(const PoolWindow &window,
                                     size_t spatialRank) {
  PoolWindow full = window;
  if (full.strides.empty())
    full.strides.assign(spatialRank, 1);
  if (full.dilations.empty())
    full.dilations.assign(spatialRank, 1);
  if (full.pads.empty())
    full.pads.assign(2 * spatialRank, 0);
  return full;
}

/// The elements of one pooling window.
struct PoolWindowElements {
  /// In-bounds elements as linear indices within one [spatial...] plane of
  /// the input, in row-major kernel order (the order max_pool scans, so the
  /// first maximum is well defined).
  std::vector<int64_t> offsets;
  /// Window positions inside the padded input, [-padBegin, size + padEnd)
  /// per dimension: the count_include_pad divisor. Positions past the end
  /// padding (ceil mode) count in neither divisor.
  int64_t paddedCount = 0;
};

/// Fills `elements` for the window at output position `outPosition` (one
/// index per spatial dimension) over an input plane of shape `inSpatial`.
/// `window` must be complete (completePoolWindow).
inline void poolWindowElements(const PoolWindow &window, const Shape &inSpatial,
                               const std::vector<int64_t> &outPosition,
                               PoolWindowElements &elements) {
  size_t rank = inSpatial.size();
  elements.offsets.clear();
  elements.paddedCount = 1;
  // Per dimension, the in-bounds input coordinates of the window.
  std::vector<std::vector<int64_t>> coords(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t start = outPosition[d] * window.strides[d] - window.pads[d];
    int64_t padded = 0;
    for (int64_t k = 0; k < window.kernel[d]; ++k) {
      int64_t pos = start + k * window.dilations[d];
      if (pos >= -window.pads[d] && pos < inSpatial[d] + window.pads[rank + d])
        ++padded;
      if (pos >= 0 && pos < inSpatial[d])
        coords[d].push_back(pos);
    }
    elements.paddedCount *= padded;
  }
  std::vector<int64_t> strides = stridesOf(inSpatial);
  Shape counts(rank);
  for (size_t d = 0; d < rank; ++d)
    counts[d] = static_cast<int64_t>(coords[d].size());
  // A small odometer over the per-dimension coordinate lists.
  int64_t total = numElements(counts);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += coords[d][index[d]] * strides[d];
    elements.offsets.push_back(offset);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < counts[d])
        break;
      index[d] = 0;
    }
  }
}

/// Calls fn(outLinear, elements) for every output position of a pooling
/// over planes of shape `inSpatial` giving planes of shape `outSpatial`
/// (outLinear: row-major within one output plane). The window geometry
/// does not depend on the batch or channel, so callers compute it once per
/// position and apply it to every [n, c] plane.
template <typename Fn>
void forEachPoolWindow(const PoolWindow &window, const Shape &inSpatial,
                       const Shape &outSpatial, Fn &&fn) {
  PoolWindow full = completePoolWindow(window, inSpatial.size());
  PoolWindowElements elements;
  std::vector<int64_t> position(outSpatial.size(), 0);
  int64_t total = numElements(outSpatial);
  for (int64_t linear = 0; linear < total; ++linear) {
    poolWindowElements(full, inSpatial, position, elements);
    fn(linear, static_cast<const PoolWindowElements &>(elements));
    for (int64_t d = static_cast<int64_t>(outSpatial.size()) - 1; d >= 0; --d) {
      if (++position[d] < outSpatial[d])
        break;
      position[d] = 0;
    }
  }
}

/// The shape without its first two (batch and channel) dimensions.
inline Shape spatialShape(const Shape &shape) {
  return Shape(shape.begin() + 2, shape.end());
}

} // namespace parplan::runtime::detail

#endif // PARPLAN_LIB_RUNTIME_KERNELSUPPORT_H
