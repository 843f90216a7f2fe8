//===- Gather.h - gathers and their scatter-add gradients -------*- C++ -*-===//
//
// gather and gather_shard copy rows of a table along an axis, one thread per
// result element, for any element type (they move bits, so one kernel per
// byte width serves all). gather_grad and gather_grad_shard add dy's rows
// back into a zeroed table, one thread per dy element; repeated indices
// meet in the same element, so on the GPU the additions are atomic and a
// float32 sum depends on their order (to rounding; accepted: the reference
// sums in double, index order). 16-bit tables accumulate in a float
// workspace and are rounded once at the end.
//
// Vocabulary parallelism splits a table by rows: a shard holds rows
// [offset, offset + its rows) of `extent`. Indices name rows of the whole
// table; a row another device holds gives a zero row (gather_shard) or is
// skipped (gather_grad_shard), so the devices' results add up to the whole
// op. An index outside the whole table is a data fault (errorSlot), as is
// one outside the table for the unsplit ops; its element is left as is.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_GATHER_H
#define PARPLAN_LIB_RUNTIME_DEVICE_GATHER_H

#include "Device/Attrs.h"
#include "Device/DeviceTensor.h"
#include "Kernels/KernelSupport.h"

#include <string>
#include <vector>

namespace parplan::runtime::device {

namespace gather_detail {

/// The rows of a gather: a table viewed as [outer, rows, inner] and indices
/// (count of them) naming rows of a table of `extent` rows of which this
/// one holds [offset, offset + rows). The unsplit ops have offset 0 and
/// extent = rows. An index outside the table is written to errorSlot.
struct RowMap {
  const void *indices;
  DType indexType;
  int64_t count, rows, inner, offset, extent;
  int *errorSlot;
  int errorCode;
};

/// Splits element i of a [outer, count, inner] tensor (gather's result,
/// gather_grad's dy) into the table position it maps to: the table element
/// at `target`, or -1 when another shard holds the row, or -2 for an index
/// outside the table (reported).
PARPLAN_HD int64_t tableElement(const RowMap &map, int64_t i) {
  int64_t in = i % map.inner;
  int64_t rest = i / map.inner;
  int64_t j = rest % map.count;
  int64_t outer = rest / map.count;
  int64_t index = hdLoadIndex(map.indices, map.indexType, j);
  if (index < -map.extent || index >= map.extent) {
    *map.errorSlot = map.errorCode;
    return -2;
  }
  int64_t row = (index < 0 ? index + map.extent : index) - map.offset;
  if (row < 0 || row >= map.rows)
    return -1;
  return (outer * map.rows + row) * map.inner + in;
}

/// One result element per thread; S is an unsigned integer of the element
/// width, so the copy is of bits.
template <typename S> struct GatherElements {
  const S *table;
  S *result;
  RowMap map;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t element = tableElement(map, i);
    if (element != -2)
      result[i] = element >= 0 ? table[element] : S(0);
  }
};

/// One dy element per thread, added into `sums` (the table itself for f32
/// and f64, a zeroed float workspace for 16-bit tables).
template <typename T, typename A> struct ScatterAdd {
  const typename T::Storage *dy;
  A *sums;
  RowMap map;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t element = tableElement(map, i);
    if (element >= 0)
      hdAtomicAdd(sums + element, static_cast<A>(T::load(dy, i)));
  }
};

/// The table's shape with the axis replaced by the indices' shape: what
/// gather gives and gather_grad takes.
inline Shape gatheredShape(const Shape &table, const Shape &indices,
                           int64_t axis) {
  Shape shape(table.begin(), table.begin() + axis);
  shape.insert(shape.end(), indices.begin(), indices.end());
  shape.insert(shape.end(), table.begin() + axis + 1, table.end());
  return shape;
}

/// Checks the shapes, offset and extent of a gather from `table` (the
/// forward input, or gather_grad's result) and fills `map`, its faults
/// going to the launcher; a failure when the reference would reject them.
template <class L>
bool mapRows(L &launcher, KernelId op, const DeviceTensor &table,
             const DeviceTensor &indices, const DeviceTensor &gathered,
             int64_t axis, bool shard, int64_t offset, int64_t extent,
             RowMap &map, Status &status) {
  if (axis < 0 || axis >= table.rank() ||
      gathered.shape != gatheredShape(table.shape, indices.shape, axis)) {
    status = failure(op, "shapes " + toString(table.shape) + ", " +
                             toString(indices.shape) + " and " +
                             toString(gathered.shape) + " do not fit axis " +
                             std::to_string(axis));
    return false;
  }
  map.indices = indices.data;
  map.indexType = indices.dtype;
  map.count = indices.numElements();
  map.rows = table.shape[axis];
  map.inner = detail::productOf(table.shape, axis + 1, table.rank());
  map.offset = shard ? offset : 0;
  map.extent = shard ? extent : map.rows;
  map.errorSlot = launcher.errorSlot();
  map.errorCode = launcher.errorCode();
  if (shard && (offset < 0 || offset + map.rows > extent)) {
    status =
        failure(op, "a block of " + std::to_string(map.rows) + " rows from " +
                        std::to_string(offset) + " does not fit " +
                        std::to_string(extent) + " rows");
    return false;
  }
  return true;
}

template <class L>
Launch gather(L &launcher, KernelId op, const DeviceTensor &table,
              const DeviceTensor &indices, int64_t axis, bool shard,
              int64_t offset, int64_t extent, DeviceTensor &result,
              Status &status) {
  if (result.dtype != table.dtype)
    return Launch::Unsupported;
  RowMap map;
  if (!mapRows(launcher, op, table, indices, result, axis, shard, offset,
               extent, map, status))
    return Launch::Done;
  auto launchWidth = [&](auto zero) {
    using S = decltype(zero);
    launcher.forEach(result.numElements(),
                     GatherElements<S>{table.template as<const S>(),
                                       result.template as<S>(), map});
  };
  switch (byteWidth(table.dtype)) {
  case 1:
    launchWidth(uint8_t{});
    return Launch::Done;
  case 2:
    launchWidth(uint16_t{});
    return Launch::Done;
  case 4:
    launchWidth(uint32_t{});
    return Launch::Done;
  case 8:
    launchWidth(uint64_t{});
    return Launch::Done;
  default:
    return Launch::Unsupported;
  }
}

template <class L>
Launch gatherGrad(L &launcher, KernelId op, const DeviceTensor &dy,
                  const DeviceTensor &indices, int64_t axis, bool shard,
                  int64_t offset, int64_t extent, DeviceTensor &dTable,
                  Status &status) {
  if (!isFloat(dy.dtype) || dTable.dtype != dy.dtype)
    return Launch::Unsupported;
  RowMap map;
  if (!mapRows(launcher, op, dTable, indices, dy, axis, shard, offset, extent,
               map, status))
    return Launch::Done;
  int64_t size = dTable.numElements();
  dispatchFloat(dy.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    if constexpr (sizeof(S) == sizeof(C)) {
      // f32 and f64 add into the result itself.
      launcher.forEach(size, ZeroFill<C>{dTable.template as<C>()});
      launcher.forEach(dy.numElements(),
                       ScatterAdd<T, C>{dy.template as<const S>(),
                                        dTable.template as<C>(), map});
    } else {
      auto *sums = static_cast<float *>(
          launcher.workspace(static_cast<size_t>(size) * sizeof(float)));
      if (!sums)
        return; // ProbeLauncher, or out of memory (the launcher says so)
      launcher.forEach(size, ZeroFill<float>{sums});
      launcher.forEach(
          dy.numElements(),
          ScatterAdd<T, float>{dy.template as<const S>(), sums, map});
      launcher.forEach(size, StoreSums<T>{sums, dTable.template as<S>()});
    }
  });
  return Launch::Done;
}

} // namespace gather_detail

/// gather, gather_shard (any element type), gather_grad and
/// gather_grad_shard (float types, dy of the result's type), with i32 or
/// i64 indices (Dispatch.h). Other index types, which the reference
/// rejects, and ranks above kMaxRank are Unsupported, so the reference
/// reports them.
template <class L>
bool launchGather(L &launcher, KernelId op, const AttrMap &attrs,
                  const std::vector<const DeviceTensor *> &operands,
                  const std::vector<DeviceTensor *> &results, Launch &launch,
                  Status &status) {
  bool forward = op == KernelId::Gather || op == KernelId::GatherShard;
  bool backward = op == KernelId::GatherGrad || op == KernelId::GatherGradShard;
  if (!forward && !backward)
    return false;
  launch = Launch::Unsupported;
  if (operands.size() != 2 || results.size() != 1 || !operands[0] ||
      !operands[1] || !results[0])
    return true;
  const DeviceTensor &first = *operands[0], &indices = *operands[1];
  DeviceTensor &result = *results[0];
  if (first.rank() > kMaxRank || indices.rank() > kMaxRank ||
      result.rank() > kMaxRank ||
      (indices.dtype != DType::I32 && indices.dtype != DType::I64))
    return true;
  bool shard = op == KernelId::GatherShard || op == KernelId::GatherGradShard;
  int64_t axis = attrInt(attrs, "axis");
  int64_t offset = shard ? attrInt(attrs, "offset") : 0;
  int64_t extent = shard ? attrInt(attrs, "extent") : 0;
  launch =
      forward
          ? gather_detail::gather(launcher, op, first, indices, axis, shard,
                                  offset, extent, result, status)
          : gather_detail::gatherGrad(launcher, op, first, indices, axis, shard,
                                      offset, extent, result, status);
  return true;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_GATHER_H
