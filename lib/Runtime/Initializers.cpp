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

/// The per-tensor key, computed once per block rather than per element.
static uint64_t tensorKey(uint64_t seed, std::string_view name) {
  return splitmix64(seed ^ fnv1a64(name));
}

/// The top 53 bits as a double in [0, 1).
static double unitInterval(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

uint64_t syntheticBits(uint64_t seed, std::string_view tensorName,
                       int64_t logicalIndex) {
  return splitmix64(tensorKey(seed, tensorName) +
                    static_cast<uint64_t>(logicalIndex));
}

double syntheticValue(uint64_t seed, std::string_view tensorName,
                      int64_t logicalIndex) {
  return 2 * unitInterval(syntheticBits(seed, tensorName, logicalIndex)) - 1;
}

Status fillBlock(Tensor &block, const std::vector<int64_t> &logicalShape,
                 const std::vector<int64_t> &offsets, uint64_t seed,
                 std::string_view name, double scale, int64_t integerBound) {
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
  uint64_t key = tensorKey(seed, name);
  // Row-major strides of the logical tensor.
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * logicalShape[d];
  std::vector<int64_t> index(rank, 0);
  int64_t count = block.numElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t logical = 0;
    for (size_t d = 0; d < rank; ++d)
      logical += (offsets[d] + index[d]) * strides[d];
    uint64_t bits = splitmix64(key + static_cast<uint64_t>(logical));
    if (floating) {
      block.set(i, scale * (2 * unitInterval(bits) - 1));
    } else {
      auto value = static_cast<int64_t>(
          std::floor(unitInterval(bits) * static_cast<double>(integerBound)));
      block.set(i, static_cast<double>(std::min(value, integerBound - 1)));
    }
    // The next element in row-major order.
    for (size_t d = rank; d-- > 0;) {
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
