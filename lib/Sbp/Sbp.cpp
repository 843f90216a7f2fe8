//===- Sbp.cpp - Split/Broadcast/Partial and slicing math -----------------===//

#include "parplan/Sbp/Sbp.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

namespace parplan {

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

//===----------------------------------------------------------------------===//
// SBP text
//===----------------------------------------------------------------------===//

namespace {

/// A cursor over SBP text that records the first error.
class SbpText {
public:
  SbpText(const std::string &text, std::string &error)
      : text(text), error(error) {}

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t'))
      ++pos;
  }
  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }
  /// Skips spaces, then `c` if it comes next.
  bool consume(char c) {
    skipSpace();
    if (peek() != c)
      return false;
    ++pos;
    return true;
  }

  /// "'REST'" (the text from `at`, shortened and with control characters
  /// escaped, so that a message stays one short line) or "end of text".
  std::string show(size_t at) const {
    if (at >= text.size())
      return "end of text";
    constexpr size_t kShown = 24;
    std::string shown;
    size_t i = at;
    // Stop at a character boundary: never inside a UTF-8 sequence.
    for (; i < text.size() &&
           (shown.size() < kShown ||
            (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80);
         ++i) {
      auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c == 0x7F) {
        static const char digits[] = "0123456789abcdef";
        shown += "\\x";
        shown += digits[c >> 4];
        shown += digits[c & 15];
      } else {
        shown += static_cast<char>(c);
      }
    }
    return "'" + shown + (i < text.size() ? "...'" : "'");
  }
  std::string showHere() const { return show(pos); }
  /// The text in [begin, end), of digits or letters, shortened.
  std::string token(size_t begin, size_t end) const {
    constexpr size_t kShown = 24;
    if (end - begin <= kShown)
      return text.substr(begin, end - begin);
    return text.substr(begin, kShown) + "...";
  }

  bool fail(const std::string &message) {
    error = message;
    return false;
  }

  /// One entry: S(<axis>), B, P or P(<reduce>).
  std::optional<Sbp> entry() {
    skipSpace();
    switch (peek()) {
    case 'B':
      ++pos;
      return Sbp::broadcast();
    case 'S': {
      ++pos;
      if (!consume('(')) {
        fail("expected '(' after S at " + showHere());
        return std::nullopt;
      }
      skipSpace();
      size_t start = pos;
      bool negative = peek() == '-';
      if (negative)
        ++pos;
      size_t digitsStart = pos;
      int64_t axis = 0;
      bool tooLarge = false;
      for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos) {
        int digit = text[pos] - '0';
        if (axis > (std::numeric_limits<int64_t>::max() - digit) / 10)
          tooLarge = true;
        else
          axis = axis * 10 + digit;
      }
      if (pos == digitsStart) {
        fail("expected a split axis at " + show(start));
        return std::nullopt;
      }
      if (negative) {
        fail("negative split axis " + token(start, pos));
        return std::nullopt;
      }
      if (tooLarge) {
        fail("split axis " + token(start, pos) + " is too large");
        return std::nullopt;
      }
      if (!consume(')')) {
        fail("expected ')' after the split axis at " + showHere());
        return std::nullopt;
      }
      return Sbp::split(axis);
    }
    case 'P': {
      ++pos;
      size_t afterP = pos;
      if (!consume('(')) {
        pos = afterP; // "P" alone is P(sum)
        return Sbp::partial();
      }
      skipSpace();
      size_t start = pos;
      while (pos < text.size() && ((text[pos] >= 'a' && text[pos] <= 'z') ||
                                   (text[pos] >= 'A' && text[pos] <= 'Z')))
        ++pos;
      std::string name = text.substr(start, pos - start);
      if (name.empty()) {
        fail("expected sum, max, min or prod after 'P(' at " + show(start));
        return std::nullopt;
      }
      std::optional<ReduceKind> reduce = parseReduceKind(name);
      if (!reduce) {
        fail("unknown reduction '" + token(start, pos) +
             "'; expected sum, max, min or prod");
        return std::nullopt;
      }
      if (!consume(')')) {
        fail("expected ')' after the reduction at " + showHere());
        return std::nullopt;
      }
      return Sbp::partial(*reduce);
    }
    default:
      fail("expected S(<axis>), B or P(<reduce>) at " + showHere());
      return std::nullopt;
    }
  }

  /// Checks that only spaces follow what was read (`what`).
  bool end(const std::string &what) {
    skipSpace();
    if (atEnd())
      return true;
    return fail("unexpected " + showHere() + " after " + what);
  }

private:
  const std::string &text;
  std::string &error;
  size_t pos = 0;
};

} // namespace

std::optional<Sbp> parseSbp(const std::string &text, std::string &error) {
  SbpText cursor(text, error);
  cursor.skipSpace();
  if (cursor.atEnd()) {
    cursor.fail("empty SBP; expected S(<axis>), B or P(<reduce>)");
    return std::nullopt;
  }
  std::optional<Sbp> sbp = cursor.entry();
  if (!sbp || !cursor.end(sbp->str()))
    return std::nullopt;
  return sbp;
}

std::optional<NdSbp> parseNdSbp(const std::string &text, std::string &error) {
  SbpText cursor(text, error);
  cursor.skipSpace();
  if (cursor.atEnd()) {
    cursor.fail("empty nd-SBP; expected one such as [S(0), B]");
    return std::nullopt;
  }
  if (cursor.peek() != '[') {
    std::optional<Sbp> sbp = cursor.entry();
    if (!sbp || !cursor.end(sbp->str()))
      return std::nullopt;
    return NdSbp{*sbp};
  }
  cursor.consume('[');
  NdSbp sbp;
  if (!cursor.consume(']')) {
    while (true) {
      std::optional<Sbp> entry = cursor.entry();
      if (!entry)
        return std::nullopt;
      sbp.push_back(*entry);
      if (cursor.consume(','))
        continue;
      if (cursor.consume(']'))
        break;
      cursor.fail("expected ',' or ']' at " + cursor.showHere());
      return std::nullopt;
    }
  }
  if (!cursor.end("']'"))
    return std::nullopt;
  return sbp;
}

int64_t Slice::numElements() const {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  return count;
}

bool Slice::contains(const Slice &inner) const {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (inner.offsets[d] < offsets[d] ||
        inner.offsets[d] + inner.sizes[d] > offsets[d] + sizes[d])
      return false;
  return true;
}

bool Slice::overlaps(const Slice &other) const {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (offsets[d] >= other.offsets[d] + other.sizes[d] ||
        other.offsets[d] >= offsets[d] + sizes[d])
      return false;
  return true;
}

Range balancedShard(int64_t dimSize, int64_t numShards, int64_t index) {
  assert(numShards > 0 && index >= 0 && index < numShards);
  int64_t quotient = dimSize / numShards;
  int64_t remainder = dimSize % numShards;
  int64_t offset = index * quotient + (index < remainder ? index : remainder);
  return {offset, quotient + (index < remainder ? 1 : 0)};
}

namespace {
/// The offsets of every part of weightedShard's split (one more than the
/// parts: the last is dimSize).
std::vector<int64_t> weightedOffsets(int64_t dimSize,
                                     const std::vector<int64_t> &weights) {
  int64_t total = 0;
  for (int64_t weight : weights)
    total += weight;
  // Exact integer shares: dimSize * w_i = floor_i * W + remainder_i.
  std::vector<int64_t> sizes(weights.size()), remainders(weights.size());
  int64_t left = dimSize;
  for (size_t i = 0; i < weights.size(); ++i) {
    __int128 scaled = static_cast<__int128>(dimSize) * weights[i];
    sizes[i] = static_cast<int64_t>(scaled / total);
    remainders[i] = static_cast<int64_t>(scaled % total);
    left -= sizes[i];
  }
  std::vector<size_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return remainders[a] > remainders[b];
  });
  for (size_t k = 0; k < static_cast<size_t>(left); ++k)
    ++sizes[order[k]];
  std::vector<int64_t> offsets(weights.size() + 1, 0);
  for (size_t i = 0; i < weights.size(); ++i)
    offsets[i + 1] = offsets[i] + sizes[i];
  return offsets;
}
} // namespace

Range weightedShard(int64_t dimSize, const std::vector<int64_t> &weights,
                    int64_t index) {
  assert(!weights.empty() && index >= 0 &&
         index < static_cast<int64_t>(weights.size()));
  // The search prices layouts by this for every block of every candidate,
  // of a few dimensions and one mesh's shares: the last splits worked out,
  // per thread, are kept.
  struct Split {
    int64_t dimSize = -1;
    std::vector<int64_t> weights, offsets;
  };
  constexpr size_t kKept = 8;
  thread_local std::array<Split, kKept> kept;
  thread_local size_t next = 0;
  const Split *split = nullptr;
  for (const Split &entry : kept)
    if (entry.dimSize == dimSize && entry.weights == weights) {
      split = &entry;
      break;
    }
  if (!split) {
    Split &entry = kept[next];
    next = (next + 1) % kKept;
    entry.dimSize = dimSize;
    entry.weights = weights;
    entry.offsets = weightedOffsets(dimSize, weights);
    split = &entry;
  }
  auto at = static_cast<size_t>(index);
  return {split->offsets[at], split->offsets[at + 1] - split->offsets[at]};
}

Range axisShard(int64_t dimSize, const std::vector<int64_t> &meshShape,
                const MeshShares &shares, size_t meshAxis, int64_t index) {
  if (meshAxis < shares.size() && !shares[meshAxis].empty())
    return weightedShard(dimSize, shares[meshAxis], index);
  return balancedShard(dimSize, meshShape[meshAxis], index);
}

std::optional<std::string> checkShares(const std::vector<int64_t> &meshShape,
                                       const MeshShares &shares) {
  if (shares.size() > meshShape.size())
    return "shares for " + std::to_string(shares.size()) +
           " mesh axes on a mesh of rank " + std::to_string(meshShape.size());
  for (size_t axis = 0; axis < shares.size(); ++axis) {
    const std::vector<int64_t> &weights = shares[axis];
    if (weights.empty())
      continue;
    if (static_cast<int64_t>(weights.size()) != meshShape[axis])
      return "mesh axis " + std::to_string(axis) + " has " +
             std::to_string(meshShape[axis]) + " devices but " +
             std::to_string(weights.size()) + " shares";
    for (int64_t weight : weights)
      if (weight <= 0 || weight > (int64_t(1) << 31))
        return "share " + std::to_string(weight) + " of mesh axis " +
               std::to_string(axis) + " is not in 1 .. 2^31";
  }
  return std::nullopt;
}

bool hasUnevenShares(const MeshShares &shares, size_t meshAxis) {
  if (meshAxis >= shares.size() || shares[meshAxis].empty())
    return false;
  const std::vector<int64_t> &weights = shares[meshAxis];
  return std::adjacent_find(weights.begin(), weights.end(),
                            std::not_equal_to<>()) != weights.end();
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
                  const std::vector<int64_t> &coordinate,
                  const MeshShares &shares) {
  assert(!checkLayout(shape, meshShape, sbp) && "invalid layout");
  assert(coordinate.size() == meshShape.size());
  assert(!checkShares(meshShape, shares) && "invalid shares");
  Slice slice{std::vector<int64_t>(shape.size(), 0), shape};
  for (size_t meshAxis = 0; meshAxis < sbp.size(); ++meshAxis) {
    if (!sbp[meshAxis].isSplit())
      continue;
    size_t dim = static_cast<size_t>(sbp[meshAxis].axis);
    Range part = axisShard(slice.sizes[dim], meshShape, shares, meshAxis,
                           coordinate[meshAxis]);
    slice.offsets[dim] += part.offset;
    slice.sizes[dim] = part.size;
  }
  return slice;
}

int64_t axesRank(const std::vector<int64_t> &meshShape,
                 const std::vector<int64_t> &axes, int64_t device) {
  std::vector<int64_t> coordinate = meshCoordinate(meshShape, device);
  int64_t rank = 0;
  for (int64_t axis : axes)
    rank = rank * meshShape[axis] + coordinate[axis];
  return rank;
}

std::vector<int64_t> axesGroup(const std::vector<int64_t> &meshShape,
                               const std::vector<int64_t> &axes,
                               int64_t device) {
  std::vector<int64_t> coordinate = meshCoordinate(meshShape, device);
  for (int64_t axis : axes)
    coordinate[axis] = 0;
  std::vector<int64_t> members;
  // Row-major over the group's axes: the last one varies fastest.
  while (true) {
    members.push_back(meshLinearIndex(meshShape, coordinate));
    size_t i = axes.size();
    while (i > 0 && ++coordinate[axes[i - 1]] == meshShape[axes[i - 1]])
      coordinate[axes[--i]] = 0;
    if (i == 0)
      return members;
  }
}

std::optional<std::string> checkDeviceIds(const std::vector<int64_t> &ids) {
  std::set<int64_t> seen;
  for (int64_t id : ids) {
    if (id < 0)
      return "device id " + std::to_string(id) + " is negative";
    if (!seen.insert(id).second)
      return "device id " + std::to_string(id) + " is listed twice";
  }
  return std::nullopt;
}

bool hasEvenBlocks(const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &meshShape, const NdSbp &sbp,
                   const MeshShares &shares) {
  std::vector<int64_t> sizes = shape;
  for (size_t axis = 0; axis < sbp.size(); ++axis) {
    if (!sbp[axis].isSplit())
      continue;
    int64_t &size = sizes[static_cast<size_t>(sbp[axis].axis)];
    if (size % meshShape[axis] != 0 || hasUnevenShares(shares, axis))
      return false;
    size /= meshShape[axis];
  }
  return true;
}

bool hasNonEmptyBlocks(const std::vector<int64_t> &shape,
                       const std::vector<int64_t> &meshShape,
                       const NdSbp &sbp) {
  // Balanced splits in turn: the smallest block of a dimension is its
  // extent over the product of its splits, rounded down.
  std::vector<int64_t> shards(shape.size(), 1);
  for (size_t axis = 0; axis < sbp.size(); ++axis)
    if (sbp[axis].isSplit())
      shards[static_cast<size_t>(sbp[axis].axis)] *= meshShape[axis];
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < shards[d])
      return false;
  return true;
}

std::vector<int64_t> toSplits(const NdSbp &sbp) {
  std::vector<int64_t> splits;
  splits.reserve(sbp.size());
  for (const Sbp &entry : sbp)
    splits.push_back(entry.isSplit() ? entry.axis : -1);
  return splits;
}

NdSbp fromSplits(const std::vector<int64_t> &splits) {
  NdSbp sbp;
  sbp.reserve(splits.size());
  for (int64_t dim : splits)
    sbp.push_back(dim < 0 ? Sbp::broadcast() : Sbp::split(dim));
  return sbp;
}

std::vector<int64_t> localShape(const std::vector<int64_t> &shape,
                                const std::vector<int64_t> &meshShape,
                                const NdSbp &sbp,
                                const std::vector<int64_t> &coordinate,
                                const MeshShares &shares) {
  return deviceSlice(shape, meshShape, sbp, coordinate, shares).sizes;
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

int64_t parplan::PlacedMesh::indexOf(int64_t device) const {
  if (devices.empty())
    return device >= 0 && device < meshSize(shape) ? device : -1;
  auto found = std::find(devices.begin(), devices.end(), device);
  return found == devices.end() ? -1 : found - devices.begin();
}

int64_t parplan::PlacedMesh::deviceAt(int64_t index) const {
  return devices.empty() ? index : devices[static_cast<size_t>(index)];
}

std::vector<int64_t> parplan::PlacedMesh::coordinate(int64_t device) const {
  return meshCoordinate(shape, indexOf(device));
}

std::vector<int64_t>
parplan::PlacedMesh::group(const std::vector<int64_t> &axes,
                           int64_t device) const {
  std::vector<int64_t> members = axesGroup(shape, axes, indexOf(device));
  for (int64_t &member : members)
    member = deviceAt(member);
  return members;
}

int64_t parplan::PlacedMesh::rank(const std::vector<int64_t> &axes,
                                  int64_t device) const {
  int64_t index = indexOf(device);
  if (index < 0)
    return -1;
  for (int64_t axis : axes)
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
      return -1;
  return axesRank(shape, axes, index);
}
