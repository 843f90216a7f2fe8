//===- Initializers.h - synthetic weights and batches -----------*- C++ -*-===//
//
// Values for parameters and inputs when the plan is run without a model's
// weights or a data set. They are counter based: an element's value depends
// on the seed, the logical tensor's name and the element's index in the
// logical tensor only, so a device filling its block gets exactly the
// values the same block of the whole tensor has, whatever the sharding. A
// plan on N devices and the same model on one device therefore start from
// the same weights and see the same batches, and their losses can be
// compared. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_INITIALIZERS_H
#define PARPLAN_RUNTIME_INITIALIZERS_H

#include "parplan/Runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parplan::runtime {

/// The key of tensor `tensorName`'s values: splitmix64(seed ^ FNV-1a 64 of
/// the name).
uint64_t syntheticKey(uint64_t seed, std::string_view tensorName);

/// The generator's 64 random bits for element `logicalIndex` of tensor
/// `tensorName`: splitmix64 of (syntheticKey + the index).
uint64_t syntheticBits(uint64_t seed, std::string_view tensorName,
                       int64_t logicalIndex);

/// syntheticBits mapped uniformly to [-1, 1) (53 bits of precision).
double syntheticValue(uint64_t seed, std::string_view tensorName,
                      int64_t logicalIndex);

/// Fills `block`, which starts at `offsets` in a logical tensor of
/// `logicalShape`, with the logical tensor's values: for a float block,
/// center + scale * syntheticValue of each element's logical row-major
/// index; for an
/// integer block, floor(u * integerBound) with u the same bits mapped to
/// [0, 1) (so in [0, integerBound); integerBound must be positive). Errors
/// when the block does not fit.
Status fillBlock(Tensor &block, const std::vector<int64_t> &logicalShape,
                 const std::vector<int64_t> &offsets, uint64_t seed,
                 std::string_view name, double scale, int64_t integerBound,
                 double center = 0);

/// The scale of a synthetic parameter of `logicalShape` (one rule for
/// every parameter, since the plan does not say what a parameter is for):
/// 1/sqrt(fan_in), with fan_in = shape[0] for a 2-D weight (nn.matmul's
/// [in, out]) and the product of all but the first dimension for a higher
/// rank (nn.conv's [out, in / group, k...]); 0.02 for rank 0 and 1
/// (biases, norm scales and shifts), which keeps them small but non-zero.
double parameterScale(const std::vector<int64_t> &logicalShape);

/// The name an input's values are drawn under at step `step`
/// ("tokens@step3"), so that every step sees a new batch and every device
/// the same one.
std::string batchName(std::string_view name, int64_t step);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_INITIALIZERS_H
