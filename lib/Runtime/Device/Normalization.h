//===- Normalization.h - row-wise kernels and reductions --------*- C++ -*-===//
//
// The device kernels whose elements depend on a whole slice of their input:
// softmax and log_softmax and their gradients, layer_norm and its gradient,
// batch_norm (inference), reduce_sum and reduce_mean, and the softmax
// cross-entropy loss and its gradient.
//
// Each normalized slice (a row) is one forEachRow row: on a GPU a warp (a
// row of up to 1,024 elements) or a block of threads that share it, each
// summing a strided part, combined in a fixed order (a 50,257-wide
// vocabulary row is 256 threads' work, not one's); on the host one lane,
// the plain loop. Softmax subtracts the row's maximum
// before exponentiating, as the reference does. Sums that cross rows (the
// scale and bias gradients of layer_norm, reductions over leading axes) are
// one thread per result element, split into partial sums over consecutive
// chunks when the launcher's parallelism asks for more threads than there
// are results, then each result's chunk sums added as a row: results do
// not depend on scheduling. The reference accumulates in double; f32 here
// accumulates in float, so the two agree to rounding, not bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_NORMALIZATION_H
#define PARPLAN_LIB_RUNTIME_DEVICE_NORMALIZATION_H

#include "Device/Attrs.h"
#include "Device/DeviceTensor.h"
#include "Kernels/KernelSupport.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace parplan::runtime::device {
namespace normalization_detail {

//===----------------------------------------------------------------------===//
// Broadcasting and reduction geometry
//===----------------------------------------------------------------------===//

/// Where element j (row-major over `shape`) of a broadcast operand lives in
/// the operand: `identity` when the operand has the target's layout.
struct Broadcast {
  Dims shape, strides;
  bool identity = true;
};

PARPLAN_HD int64_t offsetOf(const Broadcast &broadcast, int64_t linear) {
  if (broadcast.identity)
    return linear;
  int64_t offset = 0;
  for (int64_t d = broadcast.shape.rank - 1; d >= 0; --d) {
    offset += (linear % broadcast.shape.size[d]) * broadcast.strides.size[d];
    linear /= broadcast.shape.size[d];
  }
  return offset;
}

/// How `source`, which broadcasts to `target`, is read over `target`. As
/// many elements means the same layout: a broadcast dimension of 1 would
/// leave fewer.
inline Broadcast broadcastOver(const Shape &source, const Shape &target) {
  Broadcast broadcast;
  toDims(target, broadcast.shape);
  toDims(detail::broadcastStrides(source, target), broadcast.strides);
  broadcast.identity = numElements(source) == numElements(target);
  return broadcast;
}

/// A reduction of a row-major tensor: result element o has the kept
/// coordinates of o (row-major over the kept dimensions, the order the
/// result holds them in, keepdims or not) and sums the reducedCount
/// elements over the reduced dimensions.
struct ReducePlan {
  Dims keptSize, keptStride, reducedSize, reducedStride;
  int64_t reducedCount = 1;
};

inline ReducePlan planReduce(const Shape &shape,
                             const std::vector<bool> &reduced) {
  ReducePlan plan;
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    Dims &sizes = reduced[d] ? plan.reducedSize : plan.keptSize;
    Dims &strides = reduced[d] ? plan.reducedStride : plan.keptStride;
    // Neighbours of one kind are one dimension (row-major, the inner one's
    // stride): the odometers step fewer digits, in the same order.
    if (d + 1 < static_cast<int64_t>(shape.size()) &&
        reduced[d] == reduced[d + 1] && sizes.rank > 0) {
      sizes.size[kMaxRank - sizes.rank] *= shape[d];
      if (reduced[d])
        plan.reducedCount *= shape[d];
      stride *= shape[d];
      continue;
    }
    // Filled from the back, then moved to the front below.
    sizes.size[kMaxRank - 1 - sizes.rank] = shape[d];
    strides.size[kMaxRank - 1 - strides.rank] = stride;
    ++sizes.rank;
    ++strides.rank;
    if (reduced[d])
      plan.reducedCount *= shape[d];
    stride *= shape[d];
  }
  for (Dims *dims : {&plan.keptSize, &plan.keptStride, &plan.reducedSize,
                     &plan.reducedStride}) {
    Dims packed;
    packed.rank = dims->rank;
    for (int64_t d = 0; d < dims->rank; ++d)
      packed.size[d] = dims->size[kMaxRank - dims->rank + d];
    *dims = packed;
  }
  return plan;
}

/// Offset of the first element result element `out` sums.
PARPLAN_HD int64_t keptOffset(const ReducePlan &plan, int64_t out) {
  int64_t offset = 0;
  for (int64_t d = plan.keptSize.rank - 1; d >= 0; --d) {
    offset += (out % plan.keptSize.size[d]) * plan.keptStride.size[d];
    out /= plan.keptSize.size[d];
  }
  return offset;
}

/// Steps a row-major odometer over the reduced dimensions, keeping
/// `offset` in step.
PARPLAN_HD void nextReduced(const ReducePlan &plan, int64_t *index,
                            int64_t &offset) {
  for (int64_t d = plan.reducedSize.rank - 1; d >= 0; --d) {
    ++index[d];
    offset += plan.reducedStride.size[d];
    if (index[d] < plan.reducedSize.size[d])
      return;
    offset -= plan.reducedStride.size[d] * plan.reducedSize.size[d];
    index[d] = 0;
  }
}

/// How ReduceFloat reads its input: elements of the tensor's storage type,
/// or sums already in the compute type (layer_norm_grad's workspace).
template <typename T> struct FromStorage {
  using Element = typename T::Storage;
  PARPLAN_HD static typename T::Compute load(const Element *p, int64_t i) {
    return T::load(p, i);
  }
};
template <typename T> struct FromCompute {
  using Element = typename T::Compute;
  PARPLAN_HD static typename T::Compute load(const Element *p, int64_t i) {
    return p[i];
  }
};

//===----------------------------------------------------------------------===//
// Functors
//===----------------------------------------------------------------------===//

/// One thread per result element of a float reduction; a mean divides by
/// `divisor` (-1: a sum; 0 gives NaN, as the reference's mean of nothing),
/// the count of the original reduction when this one
/// adds partial sums.
template <typename T, typename Source> struct ReduceFloat {
  const typename Source::Element *input;
  typename T::Storage *result;
  ReducePlan plan;
  int64_t divisor;
  PARPLAN_HD void operator()(int64_t out) const {
    using C = typename T::Compute;
    int64_t offset = keptOffset(plan, out);
    int64_t index[kMaxRank] = {};
    C sum = 0;
    for (int64_t r = 0; r < plan.reducedCount; ++r) {
      sum += Source::load(input, offset);
      nextReduced(plan, index, offset);
    }
    if (divisor >= 0)
      sum /= static_cast<C>(divisor);
    T::store(result, out, sum);
  }
};

/// Partial sums of a float reduction: thread i sums the reduced elements
/// chunk * perChunk .. of result element out (i = chunk * keptCount + out,
/// so neighbouring threads read neighbouring columns) into
/// partials[out * chunks + chunk], each result's partials a row for
/// ReduceRows to add.
template <typename T> struct ReducePartials {
  const typename T::Storage *input;
  typename T::Compute *partials;
  ReducePlan plan;
  int64_t keptCount, chunks, perChunk;
  PARPLAN_HD void operator()(int64_t i) const {
    using C = typename T::Compute;
    int64_t out = i % keptCount, chunk = i / keptCount;
    int64_t begin = chunk * perChunk;
    int64_t end = hdMin(begin + perChunk, plan.reducedCount);
    // The odometer at `begin`.
    int64_t index[kMaxRank] = {};
    int64_t offset = keptOffset(plan, out);
    for (int64_t d = plan.reducedSize.rank - 1, rest = begin; d >= 0; --d) {
      index[d] = rest % plan.reducedSize.size[d];
      rest /= plan.reducedSize.size[d];
      offset += index[d] * plan.reducedStride.size[d];
    }
    // The offsets of a few elements, then their loads together (in flight
    // at once), then the sum in order.
    C sum = 0;
    int64_t r = begin;
    for (; r + kStagedElements <= end; r += kStagedElements) {
      int64_t at[kStagedElements];
      for (int k = 0; k < kStagedElements; ++k) {
        at[k] = offset;
        nextReduced(plan, index, offset);
      }
      C values[kStagedElements];
      for (int k = 0; k < kStagedElements; ++k)
        values[k] = T::load(input, at[k]);
      for (int k = 0; k < kStagedElements; ++k)
        sum += values[k];
    }
    for (; r < end; ++r) {
      sum += T::load(input, offset);
      nextReduced(plan, index, offset);
    }
    partials[out * chunks + chunk] = sum;
  }
};

/// A float reduction over trailing dimensions, one row per result element:
/// its `length` elements are contiguous from out * length (elements of the
/// tensor's type, or ReducePartials' sums).
template <typename T, typename Source = FromStorage<T>> struct ReduceRows {
  const typename Source::Element *input;
  typename T::Storage *result;
  int64_t length, divisor;
  template <class Lanes>
  PARPLAN_HD void operator()(int64_t out, const Lanes &lanes) const {
    using C = typename T::Compute;
    const typename Source::Element *row = input + out * length;
    C sum = 0;
    forLaneElements(
        lanes, length, [&](int64_t j) { return Source::load(row, j); },
        [&](int64_t, C x) { sum += x; });
    sum = lanes.sum(sum);
    if (divisor >= 0)
      sum /= static_cast<C>(divisor);
    if (lanes.lane() == 0)
      T::store(result, out, sum);
  }
};

/// One thread per result element of an integer reduction: sums wrap (two's
/// complement) and a mean truncates toward zero, as the reference's; i1
/// (`boolean`) reads and writes 0 or 1.
template <typename S> struct ReduceInt {
  const S *input;
  S *result;
  ReducePlan plan;
  bool mean, boolean;
  PARPLAN_HD void operator()(int64_t out) const {
    int64_t offset = keptOffset(plan, out);
    int64_t index[kMaxRank] = {};
    uint64_t sum = 0;
    for (int64_t r = 0; r < plan.reducedCount; ++r) {
      int64_t value = static_cast<int64_t>(input[offset]);
      sum += static_cast<uint64_t>(boolean ? (value != 0 ? 1 : 0) : value);
      nextReduced(plan, index, offset);
    }
    int64_t value = static_cast<int64_t>(sum);
    if (mean && plan.reducedCount > 0)
      value /= plan.reducedCount;
    result[out] =
        boolean ? static_cast<S>(value != 0 ? 1 : 0) : static_cast<S>(value);
  }
};

/// One row per [outer, inner] position: the slice along the axis is `size`
/// elements at stride `inner`.
template <typename T> struct SoftmaxRows {
  const typename T::Storage *input;
  typename T::Storage *result;
  int64_t size, inner;
  bool logarithm;
  template <class Lanes>
  PARPLAN_HD void operator()(int64_t row, const Lanes &lanes) const {
    using C = typename T::Compute;
    int64_t base = (row / inner) * size * inner + row % inner;
    auto element = [&](int64_t j) { return T::load(input, base + j * inner); };
    C max = -static_cast<C>(INFINITY);
    forLaneElements(lanes, size, element,
                    [&](int64_t, C x) { max = hdMax(max, x); });
    max = lanes.max(max);
    C sum = 0;
    forLaneElements(lanes, size, element,
                    [&](int64_t, C x) { sum += hdExp(x - max); });
    sum = lanes.sum(sum);
    C logSum = hdLog(sum);
    forLaneElements(lanes, size, element, [&](int64_t j, C x) {
      C shifted = x - max;
      T::store(result, base + j * inner,
               logarithm ? shifted - logSum : hdExp(shifted) / sum);
    });
  }
};

/// From the forward output y: softmax dx = y * (dy - sum(dy * y));
/// log_softmax dx = dy - exp(y) * sum(dy); one row per slice.
template <typename T> struct SoftmaxGradRows {
  const typename T::Storage *dy, *output;
  typename T::Storage *dx;
  int64_t size, inner;
  bool logarithm;
  template <class Lanes>
  PARPLAN_HD void operator()(int64_t row, const Lanes &lanes) const {
    using C = typename T::Compute;
    int64_t base = (row / inner) * size * inner + row % inner;
    struct Element {
      C g, y;
    };
    auto element = [&](int64_t j) {
      int64_t e = base + j * inner;
      return Element{T::load(dy, e), T::load(output, e)};
    };
    C sum = 0;
    forLaneElements(lanes, size, element, [&](int64_t, Element e) {
      sum += logarithm ? e.g : e.g * e.y;
    });
    sum = lanes.sum(sum);
    forLaneElements(lanes, size, element, [&](int64_t j, Element e) {
      T::store(dx, base + j * inner,
               logarithm ? e.g - hdExp(e.y) * sum : e.y * (e.g - sum));
    });
  }
};

/// Mean and reciprocal standard deviation of a row of `columns` elements
/// (two passes, as the reference).
template <typename T, class Lanes>
PARPLAN_HD void rowMoments(const typename T::Storage *row, int64_t columns,
                           typename T::Compute epsilon, const Lanes &lanes,
                           typename T::Compute &mean,
                           typename T::Compute &rstd) {
  using C = typename T::Compute;
  auto element = [&](int64_t j) { return T::load(row, j); };
  mean = 0;
  forLaneElements(lanes, columns, element, [&](int64_t, C x) { mean += x; });
  mean = lanes.sum(mean) / static_cast<C>(columns);
  C variance = 0;
  forLaneElements(lanes, columns, element, [&](int64_t, C x) {
    C centered = x - mean;
    variance += centered * centered;
  });
  variance = lanes.sum(variance) / static_cast<C>(columns);
  rstd = C(1) / hdSqrt(variance + epsilon);
}

/// One row of the [rows, columns] view (columns: the product of the
/// normalized dimensions) per forEachRow row.
template <typename T> struct LayerNormRows {
  const typename T::Storage *input, *scale, *bias;
  typename T::Storage *result;
  Broadcast scaleAt, biasAt;
  int64_t columns;
  typename T::Compute epsilon;
  template <class Lanes>
  PARPLAN_HD void operator()(int64_t r, const Lanes &lanes) const {
    using C = typename T::Compute;
    const typename T::Storage *row = input + r * columns;
    C mean, rstd;
    rowMoments<T>(row, columns, epsilon, lanes, mean, rstd);
    forLaneElements(
        lanes, columns, [&](int64_t j) { return T::load(row, j); },
        [&](int64_t j, C x) {
          C value = (x - mean) * rstd * T::load(scale, offsetOf(scaleAt, j));
          if (bias)
            value += T::load(bias, offsetOf(biasAt, j));
          T::store(result, r * columns + j, value);
        });
  }
};

/// The input gradient of layer_norm, a forEachRow row per row; leaves each
/// row's mean and rstd in `moments` (2 per row) for LayerNormGradColumns.
/// With gs = dy * scale: dx = rstd * (gs - mean(gs) - xhat * mean(gs *
/// xhat)).
template <typename T> struct LayerNormGradRows {
  const typename T::Storage *dy, *input, *scale;
  typename T::Storage *dInput;
  typename T::Compute *moments;
  Broadcast scaleAt;
  int64_t columns;
  typename T::Compute epsilon;
  template <class Lanes>
  PARPLAN_HD void operator()(int64_t r, const Lanes &lanes) const {
    using C = typename T::Compute;
    const typename T::Storage *row = input + r * columns;
    const typename T::Storage *grad = dy + r * columns;
    C mean, rstd;
    rowMoments<T>(row, columns, epsilon, lanes, mean, rstd);
    if (lanes.lane() == 0) {
      moments[2 * r] = mean;
      moments[2 * r + 1] = rstd;
    }
    struct Element {
      C g, x;
    };
    auto element = [&](int64_t j) {
      return Element{T::load(grad, j) * T::load(scale, offsetOf(scaleAt, j)),
                     T::load(row, j)};
    };
    C meanG = 0, meanGX = 0;
    forLaneElements(lanes, columns, element, [&](int64_t, Element e) {
      meanG += e.g;
      meanGX += e.g * (e.x - mean) * rstd;
    });
    meanG = lanes.sum(meanG) / static_cast<C>(columns);
    meanGX = lanes.sum(meanGX) / static_cast<C>(columns);
    forLaneElements(lanes, columns, element, [&](int64_t j, Element e) {
      C xhat = (e.x - mean) * rstd;
      T::store(dInput, r * columns + j, rstd * (e.g - meanG - xhat * meanGX));
    });
  }
};

/// Partial scale and bias gradients of layer_norm: thread i = chunk *
/// columns + j sums column j over rows chunk * perChunk .. into
/// partials[j * chunks + chunk] (scale) and partials[(columns + j) * chunks
/// + chunk] (bias): rows of chunk sums for LayerNormGradChunkSums.
template <typename T> struct LayerNormGradPartials {
  const typename T::Storage *dy, *input;
  const typename T::Compute *moments;
  typename T::Compute *partials;
  int64_t rows, columns, chunks, perChunk;
  PARPLAN_HD void operator()(int64_t i) const {
    using C = typename T::Compute;
    int64_t j = i % columns, chunk = i / columns, begin = chunk * perChunk;
    int64_t end = hdMin(begin + perChunk, rows);
    C sumScale = 0, sumBias = 0;
    for (int64_t r = begin; r < end; ++r) {
      int64_t e = r * columns + j;
      C g = T::load(dy, e);
      C xhat = (T::load(input, e) - moments[2 * r]) * moments[2 * r + 1];
      sumScale += g * xhat;
      sumBias += g;
    }
    partials[j * chunks + chunk] = sumScale;
    partials[(columns + j) * chunks + chunk] = sumBias;
  }
};

/// Where layer_norm_grad's column sums go: straight to dScale and dBias
/// when they have the normalized shape's layout, else to compute-type sums
/// that ReduceFloat folds into the result's (broadcast) shape.
template <typename T> struct LayerNormGradSums {
  typename T::Storage *dScale, *dBias;
  typename T::Compute *scaleSums, *biasSums;
  bool scaleDirect, biasDirect;
  PARPLAN_HD void scale(int64_t j, typename T::Compute sum) const {
    if (scaleDirect)
      T::store(dScale, j, sum);
    else
      scaleSums[j] = sum;
  }
  PARPLAN_HD void bias(int64_t j, typename T::Compute sum) const {
    if (biasDirect)
      T::store(dBias, j, sum);
    else
      biasSums[j] = sum;
  }
};

/// The scale and bias gradients of layer_norm over the normalized shape, a
/// column per thread summing over the rows in order (deterministic, no
/// atomics).
template <typename T> struct LayerNormGradColumns {
  const typename T::Storage *dy, *input;
  const typename T::Compute *moments;
  LayerNormGradSums<T> sums;
  int64_t rows, columns;
  PARPLAN_HD void operator()(int64_t j) const {
    using C = typename T::Compute;
    C sumScale = 0, sumBias = 0;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t e = r * columns + j;
      C g = T::load(dy, e);
      C xhat = (T::load(input, e) - moments[2 * r]) * moments[2 * r + 1];
      sumScale += g * xhat;
      sumBias += g;
    }
    sums.scale(j, sumScale);
    sums.bias(j, sumBias);
  }
};

/// The same gradients from LayerNormGradPartials' chunk sums: row r < columns
/// adds the scale's chunks of column r, row columns + r the bias's.
template <typename T> struct LayerNormGradChunkSums {
  const typename T::Compute *partials;
  LayerNormGradSums<T> sums;
  int64_t columns, chunks;
  template <class Lanes>
  PARPLAN_HD void operator()(int64_t row, const Lanes &lanes) const {
    typename T::Compute sum = 0;
    for (int64_t k = lanes.lane(); k < chunks; k += lanes.count())
      sum += partials[row * chunks + k];
    sum = lanes.sum(sum);
    if (lanes.lane() != 0)
      return;
    if (row < columns)
      sums.scale(row, sum);
    else
      sums.bias(row - columns, sum);
  }
};

/// Inference batch_norm, per element: channel statistics of dimension 1.
template <typename T> struct BatchNormElements {
  const typename T::Storage *input, *scale, *bias, *mean, *variance;
  typename T::Storage *result;
  int64_t channels, inner;
  typename T::Compute epsilon;
  PARPLAN_HD void operator()(int64_t i) const {
    using C = typename T::Compute;
    int64_t c = (i / inner) % channels;
    C factor = T::load(scale, c) / hdSqrt(T::load(variance, c) + epsilon);
    T::store(result, i,
             (T::load(input, i) - T::load(mean, c)) * factor +
                 T::load(bias, c));
  }
};

/// The labels of a cross-entropy, one per row of `classes` logits (i32 or
/// i64), and where a label out of range is reported.
struct Labels {
  const void *data;
  DType type;
  int64_t classes;
  int *errorSlot;
  int errorCode;
};

/// Row i of a cross-entropy's [rows, classes] logits as both kernels read
/// it: its logits and label, and the max and sum of exp(x - max) of the
/// logits. A label outside [0, classes) is a data fault: reported, and the
/// row left unwritten.
template <typename T> struct LabeledRow {
  using C = typename T::Compute;
  const typename T::Storage *logits;
  int64_t label;
  C max, sum;

  /// Reads row i of `all` with its lanes; false (the fault reported, and
  /// the same answer in every lane) for a label out of range.
  template <class Lanes>
  PARPLAN_HD bool read(const typename T::Storage *all, const Labels &labels,
                       int64_t i, const Lanes &lanes) {
    label = hdLoadIndex(labels.data, labels.type, i);
    if (label < 0 || label >= labels.classes) {
      if (lanes.lane() == 0)
        *labels.errorSlot = labels.errorCode;
      return false;
    }
    logits = all + i * labels.classes;
    max = -static_cast<C>(INFINITY);
    for (int64_t c = lanes.lane(); c < labels.classes; c += lanes.count())
      max = hdMax(max, T::load(logits, c));
    max = lanes.max(max);
    sum = 0;
    for (int64_t c = lanes.lane(); c < labels.classes; c += lanes.count())
      sum += hdExp(T::load(logits, c) - max);
    sum = lanes.sum(sum);
    return true;
  }
};

/// loss = logsumexp(row) - row[label], a forEachRow row per row.
template <typename T> struct CrossEntropyRows {
  const typename T::Storage *logits;
  Labels labels;
  typename T::Storage *losses;
  template <class Lanes>
  PARPLAN_HD void operator()(int64_t i, const Lanes &lanes) const {
    LabeledRow<T> row;
    if (row.read(logits, labels, i, lanes) && lanes.lane() == 0)
      T::store(losses, i,
               row.max + hdLog(row.sum) - T::load(row.logits, row.label));
  }
};

/// dlogits = dloss * (softmax(row) - onehot(label)), a forEachRow row per
/// row.
template <typename T> struct CrossEntropyGradRows {
  const typename T::Storage *dLosses, *logits;
  Labels labels;
  typename T::Storage *dLogits;
  template <class Lanes>
  PARPLAN_HD void operator()(int64_t i, const Lanes &lanes) const {
    using C = typename T::Compute;
    LabeledRow<T> row;
    if (!row.read(logits, labels, i, lanes))
      return;
    C dLoss = T::load(dLosses, i);
    for (int64_t c = lanes.lane(); c < labels.classes; c += lanes.count()) {
      C probability = hdExp(T::load(row.logits, c) - row.max) / row.sum;
      if (c == row.label)
        probability -= C(1);
      T::store(dLogits, i * labels.classes + c, dLoss * probability);
    }
  }
};

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

/// How many consecutive chunks to split each of `results` sums of `length`
/// elements into: enough threads for the launcher's parallelism, in chunks
/// of at least kLeastChunk elements; 1 (no split) on the host. The second
/// pass adds each result's chunk sums as a row (forEachRow), so many short
/// chunks cost it little, and short chunks keep the first pass's threads
/// from waiting on long chains of loads.
inline constexpr int64_t kLeastChunk = 8;
template <class L>
int64_t chunksFor(const L &launcher, int64_t results, int64_t length) {
  int64_t wanted = launcher.parallelism() / (results > 0 ? results : 1);
  int64_t most = length / kLeastChunk;
  int64_t chunks = wanted < most ? wanted : most;
  return chunks > 1 ? chunks : 1;
}

/// Whether every present tensor is a float of `type`.
inline bool allFloatOf(DType type,
                       std::initializer_list<const DeviceTensor *> tensors) {
  if (!isFloat(type))
    return false;
  for (const DeviceTensor *tensor : tensors)
    if (tensor && tensor->dtype != type)
      return false;
  return true;
}

template <class L>
Launch softmax(L &launcher, KernelId op, const DeviceTensor &input,
               int64_t axis, bool logarithm, DeviceTensor &result,
               Status &status) {
  if (!allFloatOf(input.dtype, {&result}))
    return Launch::Unsupported;
  if (result.shape != input.shape || axis < 0 || axis >= input.rank()) {
    status = failure(op, "result " + toString(result.shape) + " or axis " +
                             std::to_string(axis) + " does not fit " +
                             toString(input.shape));
    return Launch::Done;
  }
  // Lambdas below capture these, which structured bindings cannot be in C++17.
  detail::AxisSplit split = detail::splitAt(input.shape, axis);
  int64_t outer = split.outer, size = split.size, inner = split.inner;
  if (size == 0)
    return Launch::Done;
  dispatchFloat(input.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    launcher.forEachRow(outer * inner, size,
                        SoftmaxRows<T>{input.template as<const S>(),
                                       result.template as<S>(), size, inner,
                                       logarithm});
  });
  return Launch::Done;
}

template <class L>
Launch softmaxGrad(L &launcher, KernelId op, const DeviceTensor &dy,
                   const DeviceTensor &output, int64_t axis, bool logarithm,
                   DeviceTensor &dx, Status &status) {
  if (!allFloatOf(dy.dtype, {&output, &dx}))
    return Launch::Unsupported;
  if (output.shape != dy.shape || dx.shape != dy.shape || axis < 0 ||
      axis >= dy.rank()) {
    status = failure(op, "shapes or axis do not fit " + toString(dy.shape));
    return Launch::Done;
  }
  // Lambdas below capture these, which structured bindings cannot be in C++17.
  detail::AxisSplit split = detail::splitAt(dy.shape, axis);
  int64_t outer = split.outer, size = split.size, inner = split.inner;
  if (size == 0)
    return Launch::Done;
  dispatchFloat(dy.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    launcher.forEachRow(outer * inner, size,
                        SoftmaxGradRows<T>{dy.template as<const S>(),
                                           output.template as<const S>(),
                                           dx.template as<S>(), size, inner,
                                           logarithm});
  });
  return Launch::Done;
}

template <class L>
Launch layerNorm(L &launcher, const DeviceTensor &input,
                 const DeviceTensor &scale, const DeviceTensor *bias,
                 int64_t axis, double epsilon, DeviceTensor &result,
                 Status &status) {
  if (!allFloatOf(input.dtype, {&scale, bias, &result}))
    return Launch::Unsupported;
  if (result.shape != input.shape || axis < 0 || axis >= input.rank()) {
    status = failure(KernelId::LayerNorm, "result " + toString(result.shape) +
                                              " or axis does not fit " +
                                              toString(input.shape));
    return Launch::Done;
  }
  Shape normalized(input.shape.begin() + axis, input.shape.end());
  if (!detail::broadcastsTo(scale.shape, normalized) ||
      (bias && !detail::broadcastsTo(bias->shape, normalized))) {
    status =
        failure(KernelId::LayerNorm,
                "scale or bias does not broadcast to " + toString(normalized));
    return Launch::Done;
  }
  int64_t columns = numElements(normalized);
  if (columns == 0)
    return Launch::Done;
  Broadcast scaleAt = broadcastOver(scale.shape, normalized);
  Broadcast biasAt = bias ? broadcastOver(bias->shape, normalized) : scaleAt;
  dispatchFloat(input.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    launcher.forEachRow(
        input.numElements() / columns, columns,
        LayerNormRows<T>{input.template as<const S>(),
                         scale.template as<const S>(),
                         bias ? bias->template as<const S>() : nullptr,
                         result.template as<S>(), scaleAt, biasAt, columns,
                         static_cast<C>(epsilon)});
  });
  return Launch::Done;
}

/// The dimensions of `target` that a gradient of shape `source` (which
/// broadcasts to it) sums over: those `source` lacks or has as 1.
inline std::vector<bool> summedDimensions(const Shape &source,
                                          const Shape &target) {
  std::vector<bool> summed(target.size(), true);
  size_t offset = target.size() - source.size();
  for (size_t d = 0; d < source.size(); ++d)
    summed[offset + d] = source[d] == 1 && target[offset + d] != 1;
  return summed;
}

template <class L>
Launch layerNormGrad(L &launcher, const DeviceTensor &dy,
                     const DeviceTensor &input, const DeviceTensor &scale,
                     int64_t axis, double epsilon, DeviceTensor &dInput,
                     DeviceTensor &dScale, DeviceTensor &dBias,
                     Status &status) {
  if (!allFloatOf(input.dtype, {&dy, &scale, &dInput, &dScale, &dBias}))
    return Launch::Unsupported;
  if (dy.shape != input.shape || dInput.shape != input.shape || axis < 0 ||
      axis >= input.rank()) {
    status = failure(KernelId::LayerNormGrad,
                     "shapes or axis do not fit " + toString(input.shape));
    return Launch::Done;
  }
  Shape normalized(input.shape.begin() + axis, input.shape.end());
  if (!detail::broadcastsTo(scale.shape, normalized) ||
      !detail::broadcastsTo(dScale.shape, normalized) ||
      !detail::broadcastsTo(dBias.shape, normalized)) {
    status = failure(KernelId::LayerNormGrad,
                     "scale, dScale or dBias does not broadcast to " +
                         toString(normalized));
    return Launch::Done;
  }
  int64_t columns = numElements(normalized);
  if (columns == 0)
    return Launch::Done;
  int64_t rows = input.numElements() / columns;
  Broadcast scaleAt = broadcastOver(scale.shape, normalized);
  bool scaleDirect = dScale.numElements() == columns;
  bool biasDirect = dBias.numElements() == columns;
  dispatchFloat(input.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    // Column sums over chunks of rows when there are too few columns to
    // fill the launcher.
    int64_t chunks = chunksFor(launcher, columns, rows), perChunk = rows;
    if (chunks > 1) {
      perChunk = (rows + chunks - 1) / chunks;
      chunks = (rows + perChunk - 1) / perChunk;
    }
    // Row moments, the column sums that do not go straight to their result,
    // then the chunks' partial sums.
    size_t count = 2 * static_cast<size_t>(rows) +
                   (scaleDirect ? 0 : static_cast<size_t>(columns)) +
                   (biasDirect ? 0 : static_cast<size_t>(columns)) +
                   (chunks > 1 ? 2 * static_cast<size_t>(chunks * columns) : 0);
    auto *workspace = static_cast<C *>(launcher.workspace(count * sizeof(C)));
    if (!workspace)
      return; // ProbeLauncher, or out of memory (the launcher says so)
    C *moments = workspace;
    C *scaleSums = moments + 2 * rows;
    C *biasSums = scaleSums + (scaleDirect ? 0 : columns);
    C *partials = chunks > 1 ? biasSums + (biasDirect ? 0 : columns) : nullptr;
    launcher.forEachRow(
        rows, columns,
        LayerNormGradRows<T>{
            dy.template as<const S>(), input.template as<const S>(),
            scale.template as<const S>(), dInput.template as<S>(), moments,
            scaleAt, columns, static_cast<C>(epsilon)});
    if (partials)
      launcher.forEach(chunks * columns,
                       LayerNormGradPartials<T>{dy.template as<const S>(),
                                                input.template as<const S>(),
                                                moments, partials, rows,
                                                columns, chunks, perChunk});
    LayerNormGradSums<T> sums{dScale.template as<S>(),
                              dBias.template as<S>(),
                              scaleSums,
                              biasSums,
                              scaleDirect,
                              biasDirect};
    if (partials)
      launcher.forEachRow(
          2 * columns, chunks,
          LayerNormGradChunkSums<T>{partials, sums, columns, chunks});
    else
      launcher.forEach(columns,
                       LayerNormGradColumns<T>{dy.template as<const S>(),
                                               input.template as<const S>(),
                                               moments, sums, rows, columns});
    if (!scaleDirect)
      launcher.forEach(dScale.numElements(),
                       ReduceFloat<T, FromCompute<T>>{
                           scaleSums, dScale.template as<S>(),
                           planReduce(normalized, summedDimensions(dScale.shape,
                                                                   normalized)),
                           -1});
    if (!biasDirect)
      launcher.forEach(
          dBias.numElements(),
          ReduceFloat<T, FromCompute<T>>{
              biasSums, dBias.template as<S>(),
              planReduce(normalized, summedDimensions(dBias.shape, normalized)),
              -1});
  });
  return Launch::Done;
}

template <class L>
Launch batchNorm(L &launcher, const std::vector<const DeviceTensor *> &in,
                 double epsilon, DeviceTensor &result, Status &status) {
  const DeviceTensor &input = *in[0];
  if (!allFloatOf(input.dtype, {in[1], in[2], in[3], in[4], &result}))
    return Launch::Unsupported;
  if (result.shape != input.shape || input.rank() < 2) {
    status = failure(KernelId::BatchNorm, "expected an [N, C, ...] input and a "
                                          "result of its shape");
    return Launch::Done;
  }
  int64_t channels = input.shape[1];
  for (size_t k = 1; k < 5; ++k)
    if (in[k]->numElements() != channels) {
      status =
          failure(KernelId::BatchNorm,
                  "statistics " + toString(in[k]->shape) + " do not have " +
                      std::to_string(channels) + " elements");
      return Launch::Done;
    }
  int64_t inner = detail::productOf(input.shape, 2, input.rank());
  dispatchFloat(input.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    launcher.forEach(
        input.numElements(),
        BatchNormElements<T>{
            input.template as<const S>(), in[1]->template as<const S>(),
            in[2]->template as<const S>(), in[3]->template as<const S>(),
            in[4]->template as<const S>(), result.template as<S>(), channels,
            inner, static_cast<C>(epsilon)});
  });
  return Launch::Done;
}

template <class L>
Launch reduce(L &launcher, KernelId op, const DeviceTensor &input,
              const std::vector<int64_t> &axes, DeviceTensor &result,
              Status &status) {
  DType type = input.dtype;
  if (result.dtype != type)
    return Launch::Unsupported;
  std::vector<bool> reduced(input.shape.size(), axes.empty());
  int64_t keptCount = 1;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= input.rank()) {
      status = failure(op, "axis " + std::to_string(axis) +
                               " out of range for " + toString(input.shape));
      return Launch::Done;
    }
    reduced[axis] = true;
  }
  for (size_t d = 0; d < reduced.size(); ++d)
    if (!reduced[d])
      keptCount *= input.shape[d];
  if (result.numElements() != keptCount) {
    status = failure(op, "result " + toString(result.shape) +
                             " does not hold the reduction of " +
                             toString(input.shape));
    return Launch::Done;
  }
  ReducePlan plan = planReduce(input.shape, reduced);
  bool mean = op == KernelId::ReduceMean;
  int64_t length = plan.reducedCount, divisor = mean ? length : -1;
  // Trailing dimensions: each result sums a contiguous row.
  size_t firstReduced = 0;
  while (firstReduced < reduced.size() && !reduced[firstReduced])
    ++firstReduced;
  bool trailing = true;
  for (size_t d = firstReduced; d < reduced.size(); ++d)
    trailing = trailing && reduced[d];
  bool isFloatType = dispatchFloat(type, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    const S *in = input.template as<const S>();
    S *out = result.template as<S>();
    // A block per result where there are results enough to fill the
    // launcher; a reduction to few results (a loss's mean) splits instead.
    if (trailing && length >= 64 && launcher.parallelism() > 1 &&
        keptCount * 256 >= launcher.parallelism()) {
      launcher.forEachRow(keptCount, length,
                          ReduceRows<T>{in, out, length, divisor});
      return;
    }
    int64_t chunks = chunksFor(launcher, keptCount, length);
    if (chunks == 1) {
      launcher.forEach(keptCount,
                       ReduceFloat<T, FromStorage<T>>{in, out, plan, divisor});
      return;
    }
    int64_t perChunk = (length + chunks - 1) / chunks;
    chunks = (length + perChunk - 1) / perChunk;
    auto *partials = static_cast<C *>(launcher.workspace(
        static_cast<size_t>(chunks * keptCount) * sizeof(C)));
    if (!partials)
      return; // ProbeLauncher, or out of memory (the launcher says so)
    launcher.forEach(
        chunks * keptCount,
        ReducePartials<T>{in, partials, plan, keptCount, chunks, perChunk});
    launcher.forEachRow(
        keptCount, chunks,
        ReduceRows<T, FromCompute<T>>{partials, out, chunks, divisor});
  });
  if (isFloatType)
    return Launch::Done;
  auto launchInt = [&](auto zero, bool boolean) {
    using S = decltype(zero);
    launcher.forEach(keptCount, ReduceInt<S>{input.template as<const S>(),
                                             result.template as<S>(), plan,
                                             mean, boolean});
  };
  switch (type) {
  case DType::I1:
    launchInt(uint8_t{}, true);
    return Launch::Done;
  case DType::I8:
    launchInt(int8_t{}, false);
    return Launch::Done;
  case DType::I32:
    launchInt(int32_t{}, false);
    return Launch::Done;
  case DType::I64:
    launchInt(int64_t{}, false);
    return Launch::Done;
  default:
    return Launch::Unsupported;
  }
}

/// Checks shared by both cross-entropy kernels: labels (i32 or i64) and the
/// per-position tensor have the logits' shape without the class dimension.
inline bool crossEntropyFits(KernelId op, const DeviceTensor &logits,
                             const DeviceTensor &labels,
                             const DeviceTensor &perPosition,
                             const DeviceTensor *dLogits, Status &status) {
  Shape positions;
  if (logits.rank() >= 1)
    positions.assign(logits.shape.begin(), logits.shape.end() - 1);
  if (logits.rank() < 1 || labels.shape != positions ||
      perPosition.shape != positions ||
      (dLogits && dLogits->shape != logits.shape)) {
    status = failure(op, "labels " + toString(labels.shape) + " and " +
                             toString(perPosition.shape) + " do not fit " +
                             "logits " + toString(logits.shape));
    return false;
  }
  return true;
}

inline bool isIndexType(DType type) {
  return type == DType::I32 || type == DType::I64;
}

/// The labels of rows of `logits`, their faults reported to the launcher.
template <class L>
Labels labelsOf(L &launcher, const DeviceTensor &logits,
                const DeviceTensor &labels) {
  return Labels{labels.data, labels.dtype, logits.shape.back(),
                launcher.errorSlot(), launcher.errorCode()};
}

template <class L>
Launch crossEntropy(L &launcher, const DeviceTensor &logits,
                    const DeviceTensor &labels, DeviceTensor &losses,
                    Status &status) {
  if (!allFloatOf(logits.dtype, {&losses}) || !isIndexType(labels.dtype))
    return Launch::Unsupported;
  if (!crossEntropyFits(KernelId::SoftmaxCrossEntropy, logits, labels, losses,
                        nullptr, status))
    return Launch::Done;
  Labels rowLabels = labelsOf(launcher, logits, labels);
  dispatchFloat(logits.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    launcher.forEachRow(labels.numElements(), logits.shape.back(),
                        CrossEntropyRows<T>{logits.template as<const S>(),
                                            rowLabels,
                                            losses.template as<S>()});
  });
  return Launch::Done;
}

template <class L>
Launch crossEntropyGrad(L &launcher, const DeviceTensor &dLosses,
                        const DeviceTensor &logits, const DeviceTensor &labels,
                        DeviceTensor &dLogits, Status &status) {
  if (!allFloatOf(logits.dtype, {&dLosses, &dLogits}) ||
      !isIndexType(labels.dtype))
    return Launch::Unsupported;
  if (!crossEntropyFits(KernelId::SoftmaxCrossEntropyGrad, logits, labels,
                        dLosses, &dLogits, status))
    return Launch::Done;
  Labels rowLabels = labelsOf(launcher, logits, labels);
  dispatchFloat(logits.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    launcher.forEachRow(labels.numElements(), logits.shape.back(),
                        CrossEntropyGradRows<T>{dLosses.template as<const S>(),
                                                logits.template as<const S>(),
                                                rowLabels,
                                                dLogits.template as<S>()});
  });
  return Launch::Done;
}

/// The operand and result counts of each op of the group.
inline bool hasArity(KernelId op,
                     const std::vector<const DeviceTensor *> &operands,
                     const std::vector<DeviceTensor *> &results) {
  size_t numOperands = 1, numResults = 1, optional = 0;
  if (op == KernelId::SoftmaxGrad || op == KernelId::LogSoftmaxGrad ||
      op == KernelId::SoftmaxCrossEntropy)
    numOperands = 2;
  else if (op == KernelId::LayerNorm)
    numOperands = 3, optional = 1;
  else if (op == KernelId::LayerNormGrad)
    numOperands = 3, numResults = 3;
  else if (op == KernelId::SoftmaxCrossEntropyGrad)
    numOperands = 3;
  else if (op == KernelId::BatchNorm)
    numOperands = 5;
  if (operands.size() != numOperands || results.size() != numResults)
    return false;
  for (size_t i = 0; i < numOperands - optional; ++i)
    if (!operands[i])
      return false;
  for (const DeviceTensor *result : results)
    if (!result)
      return false;
  for (const DeviceTensor *operand : operands)
    if (operand && operand->rank() > kMaxRank)
      return false;
  for (const DeviceTensor *result : results)
    if (result->rank() > kMaxRank)
      return false;
  return true;
}

} // namespace normalization_detail

/// softmax, log_softmax and their gradients, layer_norm and
/// layer_norm_grad, batch_norm, reduce_sum and reduce_mean,
/// softmax_cross_entropy and its gradient (Dispatch.h). Float element types
/// (F32, F64, F16, BF16), one per op, with i32 or i64 labels; the
/// reductions take integer types too (I1, I8, I32, I64). Other types and
/// ranks above kMaxRank are Unsupported.
template <class L>
bool launchNormalization(L &launcher, KernelId op, const AttrMap &attrs,
                         const std::vector<const DeviceTensor *> &operands,
                         const std::vector<DeviceTensor *> &results,
                         Launch &launch, Status &status) {
  using namespace normalization_detail;
  static constexpr KernelId kOps[] = {KernelId::Softmax,
                                      KernelId::LogSoftmax,
                                      KernelId::SoftmaxGrad,
                                      KernelId::LogSoftmaxGrad,
                                      KernelId::LayerNorm,
                                      KernelId::LayerNormGrad,
                                      KernelId::BatchNorm,
                                      KernelId::ReduceSum,
                                      KernelId::ReduceMean,
                                      KernelId::SoftmaxCrossEntropy,
                                      KernelId::SoftmaxCrossEntropyGrad};
  bool inGroup = false;
  for (KernelId member : kOps)
    inGroup = inGroup || op == member;
  if (!inGroup)
    return false;
  launch = Launch::Unsupported;
  if (!hasArity(op, operands, results))
    return true;
  const DeviceTensor &first = *operands[0];
  DeviceTensor &result = *results[0];
  if (op == KernelId::Softmax || op == KernelId::LogSoftmax)
    launch = softmax(launcher, op, first, attrInt(attrs, "axis"),
                     op == KernelId::LogSoftmax, result, status);
  else if (op == KernelId::SoftmaxGrad || op == KernelId::LogSoftmaxGrad)
    launch =
        softmaxGrad(launcher, op, first, *operands[1], attrInt(attrs, "axis"),
                    op == KernelId::LogSoftmaxGrad, result, status);
  else if (op == KernelId::LayerNorm)
    launch = layerNorm(launcher, first, *operands[1], operands[2],
                       attrInt(attrs, "axis"), attrFloat(attrs, "epsilon"),
                       result, status);
  else if (op == KernelId::LayerNormGrad)
    launch = layerNormGrad(launcher, first, *operands[1], *operands[2],
                           attrInt(attrs, "axis"), attrFloat(attrs, "epsilon"),
                           result, *results[1], *results[2], status);
  else if (op == KernelId::BatchNorm)
    launch = batchNorm(launcher, operands, attrFloat(attrs, "epsilon"), result,
                       status);
  else if (op == KernelId::ReduceSum || op == KernelId::ReduceMean)
    launch =
        reduce(launcher, op, first, attrInts(attrs, "axes"), result, status);
  else if (op == KernelId::SoftmaxCrossEntropy)
    launch = crossEntropy(launcher, first, *operands[1], result, status);
  else
    launch = crossEntropyGrad(launcher, first, *operands[1], *operands[2],
                              result, status);
  return true;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_NORMALIZATION_H
