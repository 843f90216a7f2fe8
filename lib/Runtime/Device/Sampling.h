//===- Sampling.h - resize, its gradient and top_k --------------*- C++ -*-===//
//
// The ops that read their input at computed positions rather than by a
// layout: resize (nearest or n-linear, ONNX's coordinate modes), its
// gradient, and top_k.
//
// resize runs a thread per result element: it finds, per axis, the input's
// indices around its coordinate and the weight of the upper one with the
// reference kernel's own function (ResizeSample.h, in double),
// then sums the corners in the reference's order, in double, so a float32
// result is the reference's to the bit. resize_grad runs a thread per dy
// element adding its weighted share into each input element it read,
// atomically (nearest-upsampled maps meet several dy elements in one
// input element): a float32 sum in any order, to rounding; 16-bit types
// accumulate in a float workspace, rounded once at the end (as
// gather_grad).
//
// top_k runs a thread per row along the axis, selecting the k results one
// after another: the j-th is the element that comes first, in the order
// "larger (smaller) value first, then lower index", among those after the
// (j-1)-th in that order. O(n k) per row, no scratch memory, and the
// reference's order (partial_sort by the same comparison) exactly.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_SAMPLING_H
#define PARPLAN_LIB_RUNTIME_DEVICE_SAMPLING_H

#include "Device/Attrs.h"
#include "Device/DeviceTensor.h"
#include "Device/ResizeSample.h"
#include "Kernels/KernelSupport.h"

#include <string>
#include <vector>

namespace parplan::runtime::device {

namespace sampling_detail {

/// What a resize reads: the input's and result's shapes and how a result
/// index maps to the input along each axis.
struct ResizeGeometry {
  Dims in, out;
  ResizeMode mode;
};

/// Calls visit(source, weight) for each input element result element i
/// reads with a weight that is not zero, in the reference's order (corners
/// by their bits, axis 0 the lowest).
template <typename Visit>
PARPLAN_HD void forEachSample(const ResizeGeometry &geometry, int64_t i,
                              Visit &visit) {
  int64_t rank = geometry.out.rank;
  int64_t low[kMaxRank], high[kMaxRank], stride[kMaxRank];
  double weight[kMaxRank];
  int64_t rest = i;
  for (int64_t d = rank - 1; d >= 0; --d) {
    int64_t x = rest % geometry.out.size[d];
    rest /= geometry.out.size[d];
    resizeAxisSample(geometry.mode, geometry.in.size[d], geometry.out.size[d],
                     x, low[d], high[d], weight[d]);
  }
  int64_t running = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    stride[d] = running;
    running *= geometry.in.size[d];
  }
  int64_t corners = int64_t{1} << (geometry.mode.linear ? rank : 0);
  for (int64_t corner = 0; corner < corners; ++corner) {
    double cornerWeight = 1;
    int64_t source = 0;
    for (int64_t d = 0; d < rank && cornerWeight != 0; ++d) {
      bool upper = (corner >> d) & 1;
      cornerWeight *= upper ? weight[d] : 1 - weight[d];
      source += (upper ? high[d] : low[d]) * stride[d];
    }
    if (cornerWeight != 0)
      visit(source, cornerWeight);
  }
}

/// One result element of resize per thread, summed in double.
template <typename T> struct ResizeFunctor {
  using S = typename T::Storage;
  const S *input;
  S *result;
  ResizeGeometry geometry;
  PARPLAN_HD void operator()(int64_t i) const {
    double sum = 0;
    auto add = [&](int64_t source, double weight) {
      sum += weight * static_cast<double>(T::load(input, source));
    };
    forEachSample(geometry, i, add);
    T::store(result, i, static_cast<typename T::Compute>(sum));
  }
};

/// One dy element per thread, its weighted share added into each input
/// element the forward read (into `sums`, of the accumulation type A).
template <typename T, typename A> struct ResizeScatterFunctor {
  const typename T::Storage *dy;
  A *sums;
  ResizeGeometry geometry;
  PARPLAN_HD void operator()(int64_t i) const {
    double value = static_cast<double>(T::load(dy, i));
    auto add = [&](int64_t source, double weight) {
      hdAtomicAdd(sums + source, static_cast<A>(weight * value));
    };
    forEachSample(geometry, i, add);
  }
};

/// One row of top_k per thread: rows are [outer, n, inner] with the axis
/// in the middle, results [outer, k, inner].
template <typename T> struct TopKFunctor {
  using S = typename T::Storage;
  using C = typename T::Compute;
  const S *input;
  S *values;
  int64_t *indices;
  int64_t n, k, inner;
  bool largest;
  /// Whether (a, ia) comes before (b, ib) in the results' order.
  PARPLAN_HD bool before(C a, int64_t ia, C b, int64_t ib) const {
    if (a != b)
      return largest ? a > b : a < b;
    return ia < ib;
  }
  PARPLAN_HD void operator()(int64_t row) const {
    int64_t outer = row / inner, in = row % inner;
    int64_t first = outer * n * inner + in;
    C previous = C(0);
    int64_t previousIndex = -1;
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      C bestValue = C(0);
      for (int64_t t = 0; t < n; ++t) {
        C value = T::load(input, first + t * inner);
        if (previousIndex >= 0 && !before(previous, previousIndex, value, t))
          continue;
        if (best < 0 || before(value, t, bestValue, best)) {
          best = t;
          bestValue = value;
        }
      }
      int64_t at = (outer * k + j) * inner + in;
      // A row of NaNs orders nothing: the reference's sort leaves some
      // order too; take the next index rather than none.
      if (best < 0)
        best = previousIndex + 1 < n ? previousIndex + 1 : n - 1;
      values[at] = input[first + best * inner];
      indices[at] = best;
      previous = T::load(input, first + best * inner);
      previousIndex = best;
    }
  }
};

inline bool parseGeometry(const AttrMap &attrs, const Shape &in,
                          const Shape &out, ResizeGeometry &geometry) {
  geometry.mode =
      resizeMode(attrString(attrs, "mode"), attrString(attrs, "coordinates"),
                 attrString(attrs, "rounding"));
  return toDims(in, geometry.in) && toDims(out, geometry.out);
}

template <class L>
Launch resize(L &launcher, KernelId op, const AttrMap &attrs,
              const DeviceTensor &from, DeviceTensor &to, Status &status) {
  bool forward = op == KernelId::Resize;
  // resize reads `from` (the input) into `to`; resize_grad reads dy
  // (`from`, the forward's result shape) into dx (`to`, its input shape).
  const Shape &inShape = forward ? from.shape : to.shape;
  const Shape &outShape = forward ? to.shape : from.shape;
  if (!isFloat(from.dtype) || to.dtype != from.dtype)
    return Launch::Unsupported;
  if (inShape.size() != outShape.size()) {
    status = failure(op, "an input of rank " + std::to_string(inShape.size()) +
                             " and a result of rank " +
                             std::to_string(outShape.size()));
    return Launch::Done;
  }
  ResizeGeometry geometry;
  if (!parseGeometry(attrs, inShape, outShape, geometry))
    return Launch::Unsupported;
  int64_t inElements = runtime::numElements(inShape),
          outElements = runtime::numElements(outShape);
  dispatchFloat(from.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    if (forward) {
      if (inElements > 0 && outElements > 0)
        launcher.forEach(outElements,
                         ResizeFunctor<T>{from.template as<const S>(),
                                          to.template as<S>(), geometry});
      return;
    }
    if constexpr (sizeof(S) == sizeof(C)) {
      // f32 and f64 add into the result itself.
      launcher.forEach(inElements, ZeroFill<C>{to.template as<C>()});
      if (inElements > 0 && outElements > 0)
        launcher.forEach(outElements, ResizeScatterFunctor<T, C>{
                                          from.template as<const S>(),
                                          to.template as<C>(), geometry});
    } else {
      auto *sums = static_cast<float *>(
          launcher.workspace(static_cast<size_t>(inElements) * sizeof(float)));
      if (!sums)
        return; // ProbeLauncher, or out of memory (the launcher says so)
      launcher.forEach(inElements, ZeroFill<float>{sums});
      if (inElements > 0 && outElements > 0)
        launcher.forEach(outElements,
                         ResizeScatterFunctor<T, float>{
                             from.template as<const S>(), sums, geometry});
      launcher.forEach(inElements, StoreSums<T>{sums, to.template as<S>()});
    }
  });
  return Launch::Done;
}

template <class L>
Launch topK(L &launcher, const AttrMap &attrs, const DeviceTensor &input,
            DeviceTensor &values, DeviceTensor &indices, Status &status) {
  if (!isFloat(input.dtype) || values.dtype != input.dtype ||
      indices.dtype != DType::I64)
    return Launch::Unsupported;
  int64_t axis = attrInt(attrs, "axis");
  int64_t rank = input.rank();
  if (axis < 0 || axis >= rank || values.shape != indices.shape ||
      values.rank() != rank) {
    status = failure(KernelId::TopK, "values and i64 indices of one shape, "
                                     "along an axis of the input, expected");
    return Launch::Done;
  }
  auto at = static_cast<size_t>(axis);
  int64_t n = input.shape[at], k = values.shape[at];
  Shape expected = input.shape;
  expected[at] = k;
  if (values.shape != expected || k > n) {
    status = failure(KernelId::TopK,
                     "results of shape " + toString(values.shape) +
                         " do not take the top of " + toString(input.shape) +
                         " along axis " + std::to_string(axis));
    return Launch::Done;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= input.shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= input.shape[static_cast<size_t>(d)];
  if (outer * inner == 0 || k == 0)
    return Launch::Done;
  bool largest = attrBool(attrs, "largest", true);
  dispatchFloat(input.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    launcher.forEach(
        outer * inner,
        TopKFunctor<T>{input.template as<const S>(), values.template as<S>(),
                       indices.template as<int64_t>(), n, k, inner, largest});
  });
  return Launch::Done;
}

} // namespace sampling_detail

/// resize and resize_grad (float types, one for operand and result) and
/// top_k (float values, i64 indices) (Dispatch.h); ranks above kMaxRank are
/// Unsupported.
template <class L>
bool launchSampling(L &launcher, KernelId op, const AttrMap &attrs,
                    const std::vector<const DeviceTensor *> &operands,
                    const std::vector<DeviceTensor *> &results, Launch &launch,
                    Status &status) {
  if (op != KernelId::Resize && op != KernelId::ResizeGrad &&
      op != KernelId::TopK)
    return false;
  launch = Launch::Unsupported;
  status = Status::success();
  size_t resultCount = op == KernelId::TopK ? 2 : 1;
  if (operands.size() != 1 || !operands[0] || results.size() != resultCount ||
      !results[0] || !results.back())
    return true;
  const DeviceTensor &input = *operands[0];
  for (const DeviceTensor *result : results)
    if (result->rank() > kMaxRank)
      return true;
  if (input.rank() > kMaxRank)
    return true;
  launch = op == KernelId::TopK
               ? sampling_detail::topK(launcher, attrs, input, *results[0],
                                       *results[1], status)
               : sampling_detail::resize(launcher, op, attrs, input,
                                         *results[0], status);
  return true;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_SAMPLING_H
