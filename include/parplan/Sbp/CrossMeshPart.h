//===- CrossMeshPart.h - one device's part of a cross-mesh move -*- C++ -*-===//
//
// A move of a tensor between two meshes is one table for all the devices
// taking part (the tiles and the transfers, in order: plan.cross_mesh, the
// plan file's Move), and each device works out its own part of it: which
// tiles it slices out of its block and sends, which it receives, over which
// broadcasts, and how its block is put together from them. The compiler
// asks this to size the scratch a program reserves for the move; the
// executor asks it to run the move. One answer for both, so that what is
// reserved is what is used.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SUPPORT_CROSSMESHPART_H
#define PARPLAN_SUPPORT_CROSSMESHPART_H

#include "parplan/Sbp/Sbp.h"

#include <cstdint>
#include <vector>

namespace parplan {

/// One transfer of a tile: from `sender` to `receivers` in order (one
/// receiver for a send, a chain for a broadcast). Device ids are the
/// plan's (the cluster's).
struct CrossMeshTransfer {
  int64_t tile = 0;
  int64_t sender = 0;
  std::vector<int64_t> receivers;
};

/// What one device does for a move, in order. Data lives in the device's
/// block (the source block on a sending device, the destination block on
/// a receiving one) or in a slot of the move's scratch.
struct CrossMeshPart {
  /// A step's buffer that is the block, not a slot.
  static constexpr int64_t kBlock = -1;
  /// The scratch bytes a slot starts at (aligned to kAlignment) and the
  /// shape it holds (elements of the tensor's type).
  struct Slot {
    std::vector<int64_t> shape;
    int64_t offset = 0;
  };
  enum class StepKind {
    /// `to` = the tile at `starts` of `from` (the block): a holder's tile.
    Slice,
    /// `from` to device `peer`, with `tag` (the transfer's index).
    Send,
    /// `to` from device `peer`, with `tag`.
    Recv,
    /// `from` broadcast in place over `members` (the sender first, the
    /// root of rank 0): the sender's data, the receivers' buffers.
    Broadcast,
    /// `to` = zeros of the block's shape with `from` at `starts`.
    Pad,
    /// `to` = `from` + `other`, all of the block's shape.
    Add,
  };
  struct Step {
    StepKind kind = StepKind::Slice;
    int64_t from = kBlock, other = kBlock, to = kBlock;
    std::vector<int64_t> starts;
    int64_t peer = -1;
    int64_t tag = 0;
    std::vector<int64_t> members;
  };
  static constexpr int64_t kAlignment = 64;

  std::vector<Slot> slots;
  std::vector<Step> steps;
  /// The bytes the slots take: the scratch the move needs on the device.
  int64_t scratchBytes = 0;
  /// The tiles a receiving device received (0: its block stays unwritten,
  /// which a valid move never does).
  int64_t tilesReceived = 0;
};

/// The part of `device` in the move of `transfers` of `tiles` (regions of
/// the logical tensor), whose elements take `elementBytes`. `block` is the
/// device's block of the tensor on its side of the move; `receiving` says
/// which side that is. `mine`, when given, lists the positions in
/// `transfers` of those the device sends or receives, ascending (else
/// every transfer is read). A sender that holds a tile equal to its block
/// sends the block itself, and a receiver whose tile is its block receives
/// into it; other tiles live in slots. A receiver of several tiles pads
/// each to the block and adds them up, the last sum written into the
/// block. The transfers must be valid for the tiles (checkPlan's and the
/// planner's business).
CrossMeshPart crossMeshPart(const std::vector<Slice> &tiles,
                            const std::vector<CrossMeshTransfer> &transfers,
                            int64_t device, const Slice &block, bool receiving,
                            int64_t elementBytes,
                            const std::vector<size_t> *mine = nullptr);

} // namespace parplan

#endif // PARPLAN_SUPPORT_CROSSMESHPART_H
