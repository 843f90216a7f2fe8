//===- Pack.h - balanced parts of a tensor, packed for NCCL -----*- C++ -*-===//
//
// reduce_scatter, all_gather and all_to_all exchange the balanced parts of
// a tensor along an axis (balancedShard in Sbp.h: the first dim % parts
// parts get one index more). NCCL moves one contiguous buffer per member,
// but a part along an inner axis is strided in the tensor, so the backend
// packs the parts one after another, each row major in its own shape (the
// byte strings runtime::cutParts makes, concatenated), and unpacks what
// arrived the same way (placePart for every part).
//
// The kernels move bits, one element per thread, for any element width;
// each thread finds its element's part from its position along the axis
// with the balanced-shard formula, so the functor needs no per-part
// arrays. Where every dimension before the axis is 1 the packed order is
// the tensor's own (isContiguousSplit) and the backend can skip the copy.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_PACK_H
#define PARPLAN_LIB_RUNTIME_DEVICE_PACK_H

#include "Device/DeviceTensor.h"
#include "Device/Movement.h"
#include "Kernels/KernelSupport.h"
#include "parplan/Sbp/Sbp.h"

#include <vector>

namespace parplan::runtime::device {

/// Where each part lies in the packed buffer, in elements.
struct PartLayout {
  std::vector<int64_t> offsets, counts;
};

/// The element offset and count of each of the `parts` balanced parts of a
/// tensor of `shape` along `axis`, packed one after another.
inline PartLayout partLayout(const Shape &shape, int64_t axis, int64_t parts) {
  auto [outer, size, inner] = detail::splitAt(shape, axis);
  PartLayout layout;
  int64_t offset = 0;
  for (int64_t part = 0; part < parts; ++part) {
    int64_t count = outer * balancedShard(size, parts, part).size * inner;
    layout.offsets.push_back(offset);
    layout.counts.push_back(count);
    offset += count;
  }
  return layout;
}

/// Whether the packed parts are the tensor as it is: nothing before `axis`
/// interleaves them.
inline bool isContiguousSplit(const Shape &shape, int64_t axis) {
  for (int64_t d = 0; d < axis; ++d)
    if (shape[d] != 1)
      return false;
  return true;
}

namespace pack_detail {

/// Element i of the tensor, viewed as [outer, dim, inner], and its place in
/// the packed buffer: part p starts after the parts before it, which hold
/// start(p) = p * quotient + min(p, remainder) indices of the axis, each
/// outer * inner elements. S is an unsigned integer of the element width.
template <typename S> struct PackElements {
  const S *source;
  S *destination;
  int64_t dim, inner, outer, parts;
  /// false: tensor to packed; true: packed to tensor.
  bool unpack;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t in = i % inner;
    int64_t rest = i / inner;
    int64_t position = rest % dim;
    int64_t o = rest / dim;
    int64_t quotient = dim / parts, remainder = dim % parts;
    // The first `remainder` parts have quotient + 1 indices.
    int64_t longParts = remainder * (quotient + 1);
    int64_t part, local;
    if (position < longParts) {
      part = position / (quotient + 1);
      local = position - part * (quotient + 1);
    } else {
      part = remainder + (position - longParts) / quotient;
      local = position - longParts - (part - remainder) * quotient;
    }
    int64_t start = part * quotient + (part < remainder ? part : remainder);
    int64_t size = quotient + (part < remainder ? 1 : 0);
    int64_t packed = outer * start * inner + (o * size + local) * inner + in;
    if (unpack)
      destination[i] = source[packed];
    else
      destination[packed] = source[i];
  }
};

template <class L>
void launchPack(L &launcher, const Shape &shape, DType type, int64_t axis,
                int64_t parts, const void *source, void *destination,
                bool unpack) {
  int64_t count = numElements(shape);
  if (count == 0)
    return;
  // Lambdas below capture these, which structured bindings cannot be in C++17.
  detail::AxisSplit split = detail::splitAt(shape, axis);
  int64_t outer = split.outer, size = split.size, inner = split.inner;
  dispatchWord(type, [&](auto word) {
    using S = decltype(word);
    launcher.forEach(count, PackElements<S>{static_cast<const S *>(source),
                                            static_cast<S *>(destination), size,
                                            inner, outer, parts, unpack});
  });
}

} // namespace pack_detail

/// Writes the `parts` balanced parts of `tensor` along `axis` to `packed`
/// (numElements elements), one after another as partLayout places them.
template <class L>
void packParts(L &launcher, const DeviceTensor &tensor, int64_t axis,
               int64_t parts, void *packed) {
  pack_detail::launchPack(launcher, tensor.shape, tensor.dtype, axis, parts,
                          tensor.data, packed, /*unpack=*/false);
}

/// The inverse of packParts: every part of `packed` to its place in
/// `tensor`.
template <class L>
void unpackParts(L &launcher, const void *packed, int64_t axis, int64_t parts,
                 DeviceTensor &tensor) {
  pack_detail::launchPack(launcher, tensor.shape, tensor.dtype, axis, parts,
                          packed, tensor.data, /*unpack=*/true);
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_PACK_H
