//===- Sbp.cpp - Split/Broadcast/Partial and slicing math -----------------===//

#include "parplan/Support/Sbp.h"

#include <cassert>

namespace parplan {

const char *toString(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Min:
    return "min";
  case ReduceKind::Prod:
    return "prod";
  }
  return "?";
}

std::optional<ReduceKind> parseReduceKind(const std::string &text) {
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Prod})
    if (text == toString(kind))
      return kind;
  return std::nullopt;
}

bool operator==(const Sbp &a, const Sbp &b) {
  if (a.kind != b.kind)
    return false;
  if (a.isSplit())
    return a.axis == b.axis;
  if (a.isPartial())
    return a.reduce == b.reduce;
  return true;
}

std::string Sbp::str() const {
  switch (kind) {
  case SbpKind::Split:
    return "S(" + std::to_string(axis) + ")";
  case SbpKind::Broadcast:
    return "B";
  case SbpKind::Partial:
    return std::string("P(") + toString(reduce) + ")";
  }
  return "?";
}

std::string toString(const NdSbp &sbp) {
  std::string text = "[";
  for (size_t i = 0; i < sbp.size(); ++i)
    text += (i ? ", " : "") + sbp[i].str();
  return text + "]";
}

int64_t Slice::numElements() const {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  return count;
}

Range balancedShard(int64_t dimSize, int64_t numShards, int64_t index) {
  assert(numShards > 0 && index >= 0 && index < numShards);
  int64_t quotient = dimSize / numShards;
  int64_t remainder = dimSize % numShards;
  int64_t offset = index * quotient + (index < remainder ? index : remainder);
  return {offset, quotient + (index < remainder ? 1 : 0)};
}

int64_t meshSize(const std::vector<int64_t> &meshShape) {
  int64_t size = 1;
  for (int64_t axisSize : meshShape)
    size *= axisSize;
  return size;
}

std::vector<int64_t> meshCoordinate(const std::vector<int64_t> &meshShape,
                                    int64_t linearIndex) {
  std::vector<int64_t> coordinate(meshShape.size());
  for (size_t i = meshShape.size(); i-- > 0;) {
    coordinate[i] = linearIndex % meshShape[i];
    linearIndex /= meshShape[i];
  }
  return coordinate;
}

int64_t meshLinearIndex(const std::vector<int64_t> &meshShape,
                        const std::vector<int64_t> &coordinate) {
  assert(meshShape.size() == coordinate.size());
  int64_t index = 0;
  for (size_t i = 0; i < meshShape.size(); ++i)
    index = index * meshShape[i] + coordinate[i];
  return index;
}

std::optional<std::string> checkLayout(const std::vector<int64_t> &shape,
                                       const std::vector<int64_t> &meshShape,
                                       const NdSbp &sbp) {
  if (sbp.size() != meshShape.size())
    return "nd-SBP " + toString(sbp) + " has " + std::to_string(sbp.size()) +
           " entries but the mesh has " + std::to_string(meshShape.size()) +
           " axes";
  for (size_t i = 0; i < meshShape.size(); ++i)
    if (meshShape[i] <= 0)
      return "mesh axis " + std::to_string(i) + " has non-positive size " +
             std::to_string(meshShape[i]);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 0)
      return "tensor dimension " + std::to_string(d) + " has negative size " +
             std::to_string(shape[d]);
  for (const Sbp &entry : sbp)
    if (entry.isSplit() &&
        (entry.axis < 0 || entry.axis >= static_cast<int64_t>(shape.size())))
      return "split axis " + std::to_string(entry.axis) +
             " is out of range for a tensor of rank " +
             std::to_string(shape.size());
  return std::nullopt;
}

Slice deviceSlice(const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &meshShape, const NdSbp &sbp,
                  const std::vector<int64_t> &coordinate) {
  assert(!checkLayout(shape, meshShape, sbp) && "invalid layout");
  assert(coordinate.size() == meshShape.size());
  Slice slice{std::vector<int64_t>(shape.size(), 0), shape};
  for (size_t meshAxis = 0; meshAxis < sbp.size(); ++meshAxis) {
    if (!sbp[meshAxis].isSplit())
      continue;
    size_t dim = static_cast<size_t>(sbp[meshAxis].axis);
    Range part = balancedShard(slice.sizes[dim], meshShape[meshAxis],
                               coordinate[meshAxis]);
    slice.offsets[dim] += part.offset;
    slice.sizes[dim] = part.size;
  }
  return slice;
}

std::vector<int64_t> localShape(const std::vector<int64_t> &shape,
                                const std::vector<int64_t> &meshShape,
                                const NdSbp &sbp,
                                const std::vector<int64_t> &coordinate) {
  return deviceSlice(shape, meshShape, sbp, coordinate).sizes;
}

bool isCanonicalHolder(const NdSbp &sbp,
                       const std::vector<int64_t> &coordinate) {
  assert(sbp.size() == coordinate.size());
  for (size_t i = 0; i < sbp.size(); ++i)
    if (sbp[i].isBroadcast() && coordinate[i] != 0)
      return false;
  return true;
}

} // namespace parplan
