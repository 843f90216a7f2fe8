//===- Sbp.h - Split/Broadcast/Partial and slicing math ---------*- C++ -*-===//
//
// The SBP vocabulary and the slicing math that the compiler and the executor
// share. This header has no MLIR dependency: parplan-run links it without
// linking MLIR. The rules are written out in docs/slicing.md.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SUPPORT_SBP_H
#define PARPLAN_SUPPORT_SBP_H

#include "parplan/Support/Vocabulary.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parplan {

enum class SbpKind { Split, Broadcast, Partial };

/// One entry of an nd-SBP: how a tensor is laid out along one mesh axis.
struct Sbp {
  SbpKind kind = SbpKind::Broadcast;
  /// Tensor dimension that is split; meaningful for Split only.
  int64_t axis = 0;
  /// Combination of partial values; meaningful for Partial only.
  ReduceKind reduce = ReduceKind::Sum;

  static Sbp split(int64_t axis) {
    return {SbpKind::Split, axis, ReduceKind::Sum};
  }
  static Sbp broadcast() { return {SbpKind::Broadcast, 0, ReduceKind::Sum}; }
  static Sbp partial(ReduceKind reduce = ReduceKind::Sum) {
    return {SbpKind::Partial, 0, reduce};
  }

  bool isSplit() const { return kind == SbpKind::Split; }
  bool isBroadcast() const { return kind == SbpKind::Broadcast; }
  bool isPartial() const { return kind == SbpKind::Partial; }

  /// OneFlow notation: "S(0)", "B", "P(sum)".
  std::string str() const;

  friend bool operator==(const Sbp &a, const Sbp &b);
  friend bool operator!=(const Sbp &a, const Sbp &b) { return !(a == b); }
};

/// One Sbp per mesh axis, outermost (slowest-varying) mesh axis first.
using NdSbp = std::vector<Sbp>;

/// "[S(0), B]".
std::string toString(const NdSbp &sbp);

/// The inverse of Sbp::str(): parses "S(0)", "B", "P" (= P(sum)) and
/// "P(sum|max|min|prod)", with spaces or tabs allowed around every token
/// ("S ( 1 )"). Names are case-sensitive; a split axis is a non-negative
/// decimal integer (whether it names a tensor dimension is checkLayout's
/// business). On failure returns std::nullopt and sets `error` to a short
/// clause saying what is wrong, e.g. "expected S(<axis>), B or P(<reduce>)
/// at 'Q(1)'"; `error` is left alone on success.
std::optional<Sbp> parseSbp(const std::string &text, std::string &error);

/// The inverse of toString(const NdSbp &): parses "[S(0), B]" (entries
/// separated by commas, "[]" for no entry) or a bare single entry "S(0)" as
/// a one-entry nd-SBP. Errors as for parseSbp.
std::optional<NdSbp> parseNdSbp(const std::string &text, std::string &error);

/// A rectangular part of a tensor: per dimension, where it starts and how many
/// elements it spans.
struct Slice {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;

  int64_t numElements() const;
  /// Whether `inner` (of the same rank) lies within this slice.
  bool contains(const Slice &inner) const;
  /// Whether this slice and `other` (of the same rank) share an element.
  bool overlaps(const Slice &other) const;
  friend bool operator==(const Slice &a, const Slice &b) {
    return a.offsets == b.offsets && a.sizes == b.sizes;
  }
};

/// A contiguous range [offset, offset + size) of one dimension.
struct Range {
  int64_t offset = 0;
  int64_t size = 0;
};

/// Shard `index` of a dimension of `dimSize` elements split over `numShards`
/// devices, balanced: every shard gets dimSize / numShards elements and the
/// first dimSize % numShards shards get one more. Requires numShards > 0 and
/// 0 <= index < numShards.
Range balancedShard(int64_t dimSize, int64_t numShards, int64_t index);

/// Per mesh axis, the weights of its positions' shares of whatever that
/// axis splits (Whale's hardware-aware shares: a fast device takes a larger
/// part of the batch). An empty list, or no entry for the axis, is even
/// shares (balancedShard). Empty: every axis even.
using MeshShares = std::vector<std::vector<int64_t>>;

/// Shard `index` of a dimension of `dimSize` elements split over
/// weights.size() devices in proportion to `weights` (all positive): shard
/// i gets floor(dimSize * w_i / W) elements, and the dimSize minus their
/// sum left over go one each to the shards with the largest remainders of
/// that division, the lower index first on equal remainders. Equal
/// weights give balancedShard's parts.
Range weightedShard(int64_t dimSize, const std::vector<int64_t> &weights,
                    int64_t index);

/// The shard of mesh axis `meshAxis` at `index`: weightedShard by the
/// axis's shares, balancedShard where it has none.
Range axisShard(int64_t dimSize, const std::vector<int64_t> &meshShape,
                const MeshShares &shares, size_t meshAxis, int64_t index);

/// Why `shares` are not shares of a mesh of `meshShape`: more lists than
/// axes, a list whose length is not its axis's size, a weight that is not
/// positive. std::nullopt when they are.
std::optional<std::string> checkShares(const std::vector<int64_t> &meshShape,
                                       const MeshShares &shares);

/// Whether mesh axis `meshAxis` has shares that are not all equal.
bool hasUnevenShares(const MeshShares &shares, size_t meshAxis);

/// Why a list of device ids is not one (a negative id, an id listed
/// twice); nullopt when it is.
std::optional<std::string> checkDeviceIds(const std::vector<int64_t> &ids);

/// Number of devices in a mesh (the product of its axis sizes).
int64_t meshSize(const std::vector<int64_t> &meshShape);

/// Row-major mesh coordinate of the device at `linearIndex` (the last mesh
/// axis varies fastest) and its inverse.
std::vector<int64_t> meshCoordinate(const std::vector<int64_t> &meshShape,
                                    int64_t linearIndex);
int64_t meshLinearIndex(const std::vector<int64_t> &meshShape,
                        const std::vector<int64_t> &coordinate);

/// A mesh placed on devices: its shape and the device at each row-major
/// position (empty: the device id is the position, the plan's whole
/// mesh). A plan's named meshes (plan.mesh, Plan.meshes) are these.
struct PlacedMesh {
  std::vector<int64_t> shape;
  std::vector<int64_t> devices;
  /// The shares its splits give each position (empty: even).
  MeshShares shares = {};

  /// The row-major position of `device`; -1 when the mesh lacks it.
  int64_t indexOf(int64_t device) const;
  int64_t deviceAt(int64_t index) const;
  /// `device`'s mesh coordinate (the mesh must hold it).
  std::vector<int64_t> coordinate(int64_t device) const;
  /// The members of `device`'s group along `axes`, as devices, in rank
  /// order, and `device`'s rank among them (-1 when the mesh lacks it).
  std::vector<int64_t> group(const std::vector<int64_t> &axes,
                             int64_t device) const;
  int64_t rank(const std::vector<int64_t> &axes, int64_t device) const;
};

/// The group of `device` along mesh axes `axes` (ascending, in range): the
/// devices sharing its coordinate on every other axis, in row-major order
/// over `axes` (plan.group's mesh_axes). axesRank is `device`'s rank in it.
int64_t axesRank(const std::vector<int64_t> &meshShape,
                 const std::vector<int64_t> &axes, int64_t device);
std::vector<int64_t> axesGroup(const std::vector<int64_t> &meshShape,
                               const std::vector<int64_t> &axes,
                               int64_t device);

/// Checks that `sbp` can lay out a tensor of `shape` over `meshShape`: the
/// nd-SBP has one entry per mesh axis, every mesh axis is positive, every
/// tensor dimension is non-negative and every split axis names a tensor
/// dimension. Returns the reason when it cannot, std::nullopt when it can.
std::optional<std::string> checkLayout(const std::vector<int64_t> &shape,
                                       const std::vector<int64_t> &meshShape,
                                       const NdSbp &sbp);

/// The part of a tensor of logical `shape` that the device at mesh
/// `coordinate` holds under `sbp`. Mesh axes that split the same tensor
/// dimension split it in turn, outer mesh axis first, each one splitting the
/// part the previous ones left (balanced at every level). Broadcast and
/// Partial axes do not cut the tensor. A mesh axis with `shares` cuts by
/// them (axisShard). Requires checkLayout() to pass.
Slice deviceSlice(const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &meshShape, const NdSbp &sbp,
                  const std::vector<int64_t> &coordinate,
                  const MeshShares &shares = {});

/// A layout as a plan file gives a block (Buffer.splits): per mesh axis the
/// tensor dimension it splits, or -1 where it does not (B and P both hold
/// the whole extent). fromSplits gives S(d) or B.
std::vector<int64_t> toSplits(const NdSbp &sbp);
NdSbp fromSplits(const std::vector<int64_t> &splits);

/// Whether every device's block has the same extent: each split cuts an
/// extent its mesh axis divides, along an axis of even shares.
bool hasEvenBlocks(const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &meshShape, const NdSbp &sbp,
                   const MeshShares &shares = {});

/// Whether every device's block holds at least one element: each split
/// dimension has at least as many elements as the devices splitting it.
bool hasNonEmptyBlocks(const std::vector<int64_t> &shape,
                       const std::vector<int64_t> &meshShape, const NdSbp &sbp);

/// The local (per-device) shape: deviceSlice(...).sizes.
std::vector<int64_t> localShape(const std::vector<int64_t> &shape,
                                const std::vector<int64_t> &meshShape,
                                const NdSbp &sbp,
                                const std::vector<int64_t> &coordinate,
                                const MeshShares &shares = {});

/// True when the device at `coordinate` is the canonical holder of its slice:
/// its index is 0 along every Broadcast axis. Copies on the other devices of
/// a Broadcast axis are identical replicas; along Partial axes every device
/// is a holder, because each holds a different addend.
bool isCanonicalHolder(const NdSbp &sbp,
                       const std::vector<int64_t> &coordinate);

} // namespace parplan

#endif // PARPLAN_SUPPORT_SBP_H
