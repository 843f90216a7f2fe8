//===- Movement.h - data movement kernels for any device --------*- C++ -*-===//
//
// The device kernels of the data movement ops: reshape, expand, transpose,
// concat, split, slice, slice_grad and shape. They move elements without
// arithmetic, so they are written on words of the element's byte width
// (1, 2, 4 or 8 bytes) and serve every element type, exactly, as the
// reference kernels' byte copies do.
//
// Also the strided walk the elementwise kernels (Elementwise.h) share: a
// result element's linear index becomes one offset per operand, each
// operand with its own strides (0 where it broadcasts). The host collapses
// dimensions that every operand walks contiguously before launching, so
// that operands of the result's shape walk one dimension without dividing,
// broadcasts divide once per remaining dimension, and a rank above kMaxRank
// that collapses still runs on the device.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_MOVEMENT_H
#define PARPLAN_LIB_RUNTIME_DEVICE_MOVEMENT_H

#include "Device/Attrs.h"
#include "Device/DeviceTensor.h"
#include "Kernels/KernelSupport.h"
#include "parplan/Runtime/KernelCall.h"

#include <array>
#include <string>
#include <vector>

namespace parplan::runtime::device {

//===----------------------------------------------------------------------===//
// Strided walks
//===----------------------------------------------------------------------===//

/// Maps a linear index over `shape` (row major) to an offset into each of
/// N operands: offset[k] = sum over d of index[d] * strides[k].size[d].
/// Below 2^31 elements (`narrow`) the coordinates come from 32-bit
/// FastDivisors; dimension 0's coordinate is what remains after the others,
/// without a division.
template <int N> struct StridedIndex {
  Dims shape;
  Dims strides[N];
  FastDivisor divisors[kMaxRank];
  bool narrow = false;

  PARPLAN_HD void offsets(int64_t linear, int64_t (&offset)[N]) const {
    // One dimension is what operands of one shape collapse to: no division.
    if (shape.rank == 1) {
      for (int k = 0; k < N; ++k)
        offset[k] = linear * strides[k].size[0];
      return;
    }
    for (int k = 0; k < N; ++k)
      offset[k] = 0;
    if (narrow) {
      uint32_t rest = static_cast<uint32_t>(linear);
      for (int64_t d = shape.rank - 1; d > 0; --d) {
        uint32_t quotient = divisors[d].divide(rest);
        int64_t index = rest - quotient * static_cast<uint32_t>(shape.size[d]);
        rest = quotient;
        for (int k = 0; k < N; ++k)
          offset[k] += index * strides[k].size[d];
      }
      for (int k = 0; k < N; ++k)
        offset[k] += static_cast<int64_t>(rest) * strides[k].size[0];
      return;
    }
    for (int64_t d = shape.rank - 1; d >= 0; --d) {
      int64_t size = shape.size[d];
      int64_t index = linear % size;
      linear /= size;
      for (int k = 0; k < N; ++k)
        offset[k] += index * strides[k].size[d];
    }
  }
};

/// The StridedIndex of a walk over `shape` with one stride list per
/// operand (detail::stridesOf and detail::broadcastStrides make them), with
/// size-1 dimensions dropped and neighbours that every operand walks as one
/// dimension merged; false when more than kMaxRank dimensions remain.
template <int N>
bool makeStridedIndex(const Shape &shape,
                      const std::array<std::vector<int64_t>, N> &strides,
                      StridedIndex<N> &index) {
  Shape sizes;
  std::array<std::vector<int64_t>, N> kept;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    // Dimension d continues the previous kept one when, for every operand,
    // a step along the previous one spans all of d.
    bool merges = !sizes.empty();
    for (int k = 0; k < N && merges; ++k)
      merges = kept[k].back() == strides[k][d] * shape[d];
    if (merges) {
      sizes.back() *= shape[d];
      for (int k = 0; k < N; ++k)
        kept[k].back() = strides[k][d];
      continue;
    }
    sizes.push_back(shape[d]);
    for (int k = 0; k < N; ++k)
      kept[k].push_back(strides[k][d]);
  }
  if (!toDims(sizes, index.shape))
    return false;
  for (int k = 0; k < N; ++k) {
    index.strides[k].rank = index.shape.rank;
    for (size_t d = 0; d < sizes.size(); ++d)
      index.strides[k].size[d] = kept[k][d];
  }
  index.narrow = fitsFastDivision(numElements(shape));
  if (index.narrow)
    for (size_t d = 0; d < sizes.size(); ++d)
      index.divisors[d] = FastDivisor::of(sizes[d]);
  return true;
}

//===----------------------------------------------------------------------===//
// Element types as words
//===----------------------------------------------------------------------===//

/// Calls fn(W{}) with W the unsigned word of `type`'s byte width.
template <typename Fn> void dispatchWord(DType type, Fn &&fn) {
  switch (byteWidth(type)) {
  case 1:
    fn(uint8_t{});
    return;
  case 2:
    fn(uint16_t{});
    return;
  case 4:
    fn(uint32_t{});
    return;
  default:
    fn(uint64_t{});
    return;
  }
}

//===----------------------------------------------------------------------===//
// Functors
//===----------------------------------------------------------------------===//

/// out[i] = in[base + strided offset of i]: expand, transpose and slice.
template <typename W> struct StridedGatherFunctor {
  using Values = W;
  const W *in;
  W *out;
  int64_t base;
  StridedIndex<1> index;
  PARPLAN_HD W load(int64_t i) const {
    int64_t offset[1];
    index.offsets(i, offset);
    return in[base + offset[0]];
  }
  PARPLAN_HD void store(int64_t i, W value) const { out[i] = value; }
};

/// Copies one operand's blocks of a concat or split: element i lies in
/// block i / block of the source, each block `block` elements long; block
/// b of the source starts at b * srcRow + srcAt and lands at
/// b * dstRow + dstAt.
template <typename W> struct BlockCopyFunctor {
  const W *src;
  W *dst;
  int64_t block, srcRow, srcAt, dstRow, dstAt;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t b = i / block, within = i % block;
    dst[b * dstRow + dstAt + within] = src[b * srcRow + srcAt + within];
  }
};

/// One element of slice_grad's result (the forward input's shape): dy's
/// element where the forward slice read this position, else zero. Each
/// result element is written once, so there is no separate zero fill.
template <typename W> struct SliceGradFunctor {
  const W *dy;
  W *dInput;
  Dims full, starts, steps, sizes;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t linear = i, source = 0, stride = 1;
    for (int64_t d = full.rank - 1; d >= 0; --d) {
      int64_t index = linear % full.size[d];
      linear /= full.size[d];
      int64_t distance = index - starts.size[d];
      int64_t taken = distance / steps.size[d];
      if (distance % steps.size[d] != 0 || taken < 0 ||
          taken >= sizes.size[d]) {
        dInput[i] = 0;
        return;
      }
      source += taken * stride;
      stride *= sizes.size[d];
    }
    dInput[i] = dy[source];
  }
};

/// out[i] = the i-th size of a shape baked into the functor: shape.
struct ShapeFunctor {
  int64_t *out;
  Dims shape;
  PARPLAN_HD void operator()(int64_t i) const { out[i] = shape.size[i]; }
};

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

namespace movement {

inline bool sameTypes(const std::vector<const DeviceTensor *> &operands,
                      const std::vector<DeviceTensor *> &results) {
  DType type = results[0]->dtype;
  for (const DeviceTensor *operand : operands)
    if (operand->dtype != type)
      return false;
  for (const DeviceTensor *result : results)
    if (result->dtype != type)
      return false;
  return true;
}

/// result[i] = input[base + index's walk of i] over the result's elements.
template <class L>
void gatherWalk(L &launcher, const DeviceTensor &input,
                const DeviceTensor &result, const StridedIndex<1> &index,
                int64_t base) {
  dispatchWord(result.dtype, [&](auto word) {
    using W = decltype(word);
    launcher.forEachStaged(result.numElements(),
                           StridedGatherFunctor<W>{input.as<const W>(),
                                                   result.as<W>(), base,
                                                   index});
  });
}

/// result[i] = input[base + walk(i)] over the result's elements.
template <class L>
Launch gatherStrided(L &launcher, const DeviceTensor &input,
                     const DeviceTensor &result,
                     const std::vector<int64_t> &strides, int64_t base) {
  StridedIndex<1> index;
  if (!makeStridedIndex<1>(result.shape, {strides}, index))
    return Launch::Unsupported;
  gatherWalk(launcher, input, result, index, base);
  return Launch::Done;
}

/// slice's and slice_grad's check that every taken position lies inside
/// the full shape, as the reference kernels check it: slice refuses a zero
/// step anywhere, slice_grad only where it takes elements.
inline Status checkSlice(KernelId op, const Shape &full, const Shape &sizes,
                         const std::vector<int64_t> &starts,
                         const std::vector<int64_t> &steps) {
  size_t rank = full.size();
  if (sizes.size() != rank || starts.size() != rank || steps.size() != rank)
    return failure(op, "starts, steps and both shapes must have one rank");
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0 && (op == KernelId::Slice || sizes[d] != 0))
      return failure(op, "step 0 in dimension " + std::to_string(d));
    if (sizes[d] == 0)
      continue;
    int64_t last = starts[d] + (sizes[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= full[d] || last < 0 || last >= full[d])
      return failure(op, "dimension " + std::to_string(d) + ": " +
                             std::to_string(sizes[d]) + " elements from " +
                             std::to_string(starts[d]) + " by step " +
                             std::to_string(steps[d]) + " leave [0, " +
                             std::to_string(full[d]) + ")");
  }
  return Status::success();
}

/// The sizes of every operand (concat) or result (split) must match `whole`
/// but along `axis`, where they add up to whole's size.
inline Status checkParts(KernelId op, const Shape &whole,
                         const std::vector<Shape> &parts, int64_t axis) {
  int64_t total = 0;
  for (const Shape &part : parts) {
    Shape expected = whole;
    expected[axis] = part.size() == whole.size() ? part[axis] : -1;
    if (part != expected)
      return failure(op, toString(part) + " does not fit " + toString(whole) +
                             " along axis " + std::to_string(axis));
    total += part[axis];
  }
  if (total != whole[axis])
    return failure(op, "sizes along the axis do not add up");
  return Status::success();
}

/// concat (`intoWhole`: each part copied to its place in `whole`) and split
/// (`whole` copied out to the parts): the parts lie one after another along
/// `axis` of `whole`.
template <class L, class Part>
Launch copyParts(L &launcher, KernelId op, const DeviceTensor &whole,
                 const std::vector<Part *> &parts, int64_t axis, bool intoWhole,
                 Status &status) {
  std::vector<Shape> shapes;
  for (const DeviceTensor *part : parts)
    shapes.push_back(part->shape);
  if (status = checkParts(op, whole.shape, shapes, axis); !status.ok())
    return Launch::Done;
  int64_t inner = detail::productOf(whole.shape, axis + 1, whole.rank());
  int64_t wholeRow = whole.shape[axis] * inner, at = 0;
  dispatchWord(whole.dtype, [&](auto word) {
    using W = decltype(word);
    for (const DeviceTensor *part : parts) {
      int64_t row = part->shape[axis] * inner;
      if (row)
        launcher.forEach(
            part->numElements(),
            intoWhole ? BlockCopyFunctor<W>{part->as<const W>(), whole.as<W>(),
                                            row, row, 0, wholeRow, at}
                      : BlockCopyFunctor<W>{whole.as<const W>(), part->as<W>(),
                                            row, wholeRow, at, row, 0});
      at += row;
    }
  });
  return Launch::Done;
}

template <class L>
Launch transpose(L &launcher, const DeviceTensor &input,
                 const DeviceTensor &result, const std::vector<int64_t> &perm,
                 Status &status) {
  size_t rank = input.shape.size();
  Shape expected(rank);
  std::vector<int64_t> own = detail::stridesOf(input.shape), strides(rank);
  bool valid = perm.size() == rank;
  for (size_t d = 0; d < rank && valid; ++d) {
    valid = perm[d] >= 0 && perm[d] < input.rank();
    if (valid) {
      expected[d] = input.shape[perm[d]];
      strides[d] = own[perm[d]];
    }
  }
  if (!valid) {
    status =
        failure(KernelId::Transpose, "perm is not a permutation of " +
                                         std::to_string(rank) + " dimensions");
    return Launch::Done;
  }
  if (result.shape != expected) {
    status = failure(KernelId::Transpose,
                     "result shape " + toString(result.shape) +
                         " is not the expected " + toString(expected));
    return Launch::Done;
  }
  StridedIndex<1> index;
  if (!makeStridedIndex<1>(result.shape, {strides}, index))
    return Launch::Unsupported;
  // A batch of matrices transposed whole (the product's operands, heads
  // moved behind the sequence): the launcher's tiles read and write whole
  // rows, where the strided walk would read one word per row.
  const Dims &size = index.shape, &stride = index.strides[0];
  int64_t matrices = 0, rows = 0, columns = 0;
  if (size.rank == 2 && stride.size[0] == 1 && stride.size[1] == size.size[0]) {
    matrices = 1;
    rows = size.size[1];
    columns = size.size[0];
  } else if (size.rank == 3 && stride.size[1] == 1 &&
             stride.size[2] == size.size[1] &&
             stride.size[0] == size.size[1] * size.size[2]) {
    matrices = size.size[0];
    rows = size.size[2];
    columns = size.size[1];
  }
  if (matrices > 0 && rows >= kTransposeTile && columns >= kTransposeTile) {
    dispatchWord(result.dtype, [&](auto word) {
      using W = decltype(word);
      launcher.transposeMatrices(input.as<const W>(), result.as<W>(), matrices,
                                 rows, columns);
    });
    return Launch::Done;
  }
  gatherWalk(launcher, input, result, index, 0);
  return Launch::Done;
}

template <class L>
Launch slice(L &launcher, const DeviceTensor &input, const DeviceTensor &result,
             const std::vector<int64_t> &starts,
             const std::vector<int64_t> &steps, Status &status) {
  status =
      checkSlice(KernelId::Slice, input.shape, result.shape, starts, steps);
  if (!status.ok() || result.numElements() == 0)
    return Launch::Done;
  std::vector<int64_t> own = detail::stridesOf(input.shape),
                       strides(own.size());
  int64_t base = 0;
  for (size_t d = 0; d < own.size(); ++d) {
    base += starts[d] * own[d];
    strides[d] = steps[d] * own[d];
  }
  return gatherStrided(launcher, input, result, strides, base);
}

template <class L>
Launch sliceGrad(L &launcher, const DeviceTensor &dy,
                 const DeviceTensor &dInput, const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &steps, Status &status) {
  status =
      checkSlice(KernelId::SliceGrad, dInput.shape, dy.shape, starts, steps);
  if (!status.ok())
    return Launch::Done;
  SliceGradFunctor<uint8_t> geometry{};
  if (!toDims(dInput.shape, geometry.full) ||
      !toDims(dy.shape, geometry.sizes) || !toDims(starts, geometry.starts) ||
      !toDims(steps, geometry.steps))
    return Launch::Unsupported;
  // An empty dy may come with zero steps; the functor divides by them and
  // needs only the empty size to write zeros everywhere.
  for (int64_t d = 0; d < geometry.steps.rank; ++d)
    if (geometry.steps.size[d] == 0)
      geometry.steps.size[d] = 1;
  dispatchWord(dy.dtype, [&](auto word) {
    using W = decltype(word);
    launcher.forEach(dInput.numElements(),
                     SliceGradFunctor<W>{dy.as<const W>(), dInput.as<W>(),
                                         geometry.full, geometry.starts,
                                         geometry.steps, geometry.sizes});
  });
  return Launch::Done;
}

} // namespace movement

/// The data movement ops (Dispatch.h): every element type, since they copy
/// words; rank is unlimited for reshape, concat and split, and at most
/// kMaxRank after collapsing (expand, transpose, slice) or before it
/// (slice_grad, shape) for the others.
template <class L>
bool launchMovement(L &launcher, KernelId op, const AttrMap &attrs,
                    const std::vector<const DeviceTensor *> &operands,
                    const std::vector<DeviceTensor *> &results, Launch &launch,
                    Status &status) {
  static constexpr KernelId kOps[] = {KernelId::Reshape,   KernelId::Expand,
                                      KernelId::Transpose, KernelId::Concat,
                                      KernelId::Split,     KernelId::Slice,
                                      KernelId::SliceGrad, KernelId::Shape};
  bool known = false;
  for (KernelId member : kOps)
    known = known || op == member;
  if (!known)
    return false;
  launch = Launch::Done;
  status = Status::success();

  const DeviceTensor &input = *operands[0];
  const DeviceTensor &result = *results[0];
  if (op == KernelId::Shape) {
    if (result.dtype != DType::I64 || result.shape != Shape{input.rank()}) {
      status = failure(KernelId::Shape, "result must be i64 [" +
                                            std::to_string(input.rank()) +
                                            "], not " + toString(result.dtype) +
                                            " " + toString(result.shape));
      return true;
    }
    ShapeFunctor functor{result.as<int64_t>(), {}};
    if (!toDims(input.shape, functor.shape))
      launch = Launch::Unsupported;
    else
      launcher.forEach(input.rank(), functor);
    return true;
  }
  if (!movement::sameTypes(operands, results)) {
    status = failure(op, "operand and result element types differ");
    return true;
  }

  if (op == KernelId::Reshape) {
    if (input.numElements() != result.numElements()) {
      status =
          failure(KernelId::Reshape, "cannot reshape " + toString(input.shape) +
                                         " to " + toString(result.shape));
      return true;
    }
    launcher.copy(result.data, input.data,
                  static_cast<size_t>(input.numElements()) *
                      static_cast<size_t>(byteWidth(input.dtype)));
  } else if (op == KernelId::Expand) {
    if (!detail::broadcastsTo(input.shape, result.shape)) {
      status = failure(KernelId::Expand, toString(input.shape) +
                                             " does not broadcast to " +
                                             toString(result.shape));
      return true;
    }
    launch = movement::gatherStrided(
        launcher, input, result,
        detail::broadcastStrides(input.shape, result.shape), 0);
  } else if (op == KernelId::Transpose) {
    launch = movement::transpose(launcher, input, result,
                                 attrInts(attrs, "perm"), status);
  } else if (op == KernelId::Concat) {
    launch =
        movement::copyParts(launcher, op, result, operands,
                            attrInt(attrs, "axis"), /*intoWhole=*/true, status);
  } else if (op == KernelId::Split) {
    launch = movement::copyParts(launcher, op, input, results,
                                 attrInt(attrs, "axis"), /*intoWhole=*/false,
                                 status);
  } else if (op == KernelId::Slice) {
    launch = movement::slice(launcher, input, result, attrInts(attrs, "starts"),
                             attrInts(attrs, "steps"), status);
  } else {
    launch =
        movement::sliceGrad(launcher, input, result, attrInts(attrs, "starts"),
                            attrInts(attrs, "steps"), status);
  }
  return true;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_MOVEMENT_H
