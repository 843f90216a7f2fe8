//===- Initializers.cpp - synthetic weights and batches -------------------===//
//
// splitmix64 is a bijection with good avalanche, so hashing (key + index)
// gives independent-looking values per element without any generator state
// to advance: the property that makes blocks shard-independent.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Initializers.h"

#include "parplan/Support/Hash.h"

#include <algorithm>
#include <cmath>

namespace parplan::runtime {

uint64_t syntheticKey(uint64_t seed, std::string_view tensorName) {
  return splitmix64(seed ^ fnv1a64(tensorName));
}

/// The top 53 bits as a double in [0, 1).
static double unitInterval(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

uint64_t syntheticBits(uint64_t seed, std::string_view tensorName,
                       int64_t logicalIndex) {
  return splitmix64(syntheticKey(seed, tensorName) +
                    static_cast<uint64_t>(logicalIndex));
}

double syntheticValue(uint64_t seed, std::string_view tensorName,
                      int64_t logicalIndex) {
  return 2 * unitInterval(syntheticBits(seed, tensorName, logicalIndex)) - 1;
}

Status fillBlock(Tensor &block, const std::vector<int64_t> &logicalShape,
                 const std::vector<int64_t> &offsets, uint64_t seed,
                 std::string_view name, double scale, int64_t integerBound,
                 double center) {
  const Shape &shape = block.shape();
  size_t rank = shape.size();
  std::string what = "synthetic values for '" + std::string(name) + "': ";
  if (logicalShape.size() != rank || offsets.size() != rank)
    return Status::failure(what + "block " + toString(shape) + " at offsets " +
                           toString(offsets) + " of another rank than " +
                           toString(logicalShape));
  for (size_t d = 0; d < rank; ++d)
    if (offsets[d] < 0 || offsets[d] + shape[d] > logicalShape[d])
      return Status::failure(what + "block " + toString(shape) +
                             " at offsets " + toString(offsets) +
                             " does not fit in " + toString(logicalShape));
  bool floating = isFloat(block.dtype());
  if (!floating && integerBound <= 0)
    return Status::failure(what + "an integer tensor needs a positive bound");
  uint64_t key = syntheticKey(seed, name);
  // Row-major strides of the logical tensor.
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * logicalShape[d];
  // Row by row of the last dimension: the logical index of a row's first
  // element once, then consecutive ones. Floats of f32 and f64 (batches of
  // millions of elements, every step) are stored directly; other types
  // through Tensor::set's conversions.
  int64_t count = block.numElements();
  int64_t length = rank == 0 ? 1 : shape[rank - 1];
  if (count == 0 || length == 0)
    return Status::success();
  auto *f32 = block.dtype() == DType::F32 ? block.data<float>() : nullptr;
  auto *f64 = block.dtype() == DType::F64 ? block.data<double>() : nullptr;
  std::vector<int64_t> index(rank, 0);
  for (int64_t first = 0; first < count; first += length) {
    int64_t logical = 0;
    for (size_t d = 0; d < rank; ++d)
      logical += (offsets[d] + index[d]) * strides[d];
    for (int64_t j = 0; j < length; ++j) {
      uint64_t bits = splitmix64(key + static_cast<uint64_t>(logical + j));
      if (floating) {
        double value = center + scale * (2 * unitInterval(bits) - 1);
        if (f32)
          f32[first + j] = static_cast<float>(value);
        else if (f64)
          f64[first + j] = value;
        else
          block.set(first + j, value);
      } else {
        auto value = static_cast<int64_t>(
            std::floor(unitInterval(bits) * static_cast<double>(integerBound)));
        block.set(first + j,
                  static_cast<double>(std::min(value, integerBound - 1)));
      }
    }
    // The next row in row-major order (a scalar is one row).
    for (size_t d = rank > 0 ? rank - 1 : 0; d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return Status::success();
}

double parameterScale(const std::vector<int64_t> &logicalShape) {
  if (logicalShape.size() < 2)
    return 0.02;
  int64_t fanIn = logicalShape[0];
  if (logicalShape.size() > 2) {
    fanIn = 1;
    for (size_t d = 1; d < logicalShape.size(); ++d)
      fanIn *= logicalShape[d];
  }
  return 1 / std::sqrt(static_cast<double>(std::max<int64_t>(fanIn, 1)));
}

std::string batchName(std::string_view name, int64_t step) {
  return std::string(name) + "@step" + std::to_string(step);
}

} // namespace parplan::runtime
