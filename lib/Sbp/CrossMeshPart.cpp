//===- CrossMeshPart.cpp - one device's part of a cross-mesh move ---------===//

#include "parplan/Sbp/CrossMeshPart.h"

#include <algorithm>
#include <map>

using namespace parplan;

namespace {

std::vector<int64_t> minus(const std::vector<int64_t> &a,
                           const std::vector<int64_t> &b) {
  std::vector<int64_t> result(a.size());
  for (size_t d = 0; d < a.size(); ++d)
    result[d] = a[d] - b[d];
  return result;
}

} // namespace

CrossMeshPart
parplan::crossMeshPart(const std::vector<Slice> &tiles,
                       const std::vector<CrossMeshTransfer> &transfers,
                       int64_t device, const Slice &block, bool receiving,
                       int64_t elementBytes, const std::vector<size_t> *mine) {
  using Step = CrossMeshPart::Step;
  using StepKind = CrossMeshPart::StepKind;
  CrossMeshPart part;
  auto newSlot = [&](const std::vector<int64_t> &shape) {
    int64_t offset = part.scratchBytes;
    int64_t elements = 1;
    for (int64_t extent : shape)
      elements *= extent;
    int64_t bytes = elements * elementBytes;
    part.scratchBytes = offset + (bytes + CrossMeshPart::kAlignment - 1) /
                                     CrossMeshPart::kAlignment *
                                     CrossMeshPart::kAlignment;
    part.slots.push_back({shape, offset});
    return static_cast<int64_t>(part.slots.size() - 1);
  };
  // Where each tile the device has lives, and the tiles it received in
  // the order they came.
  std::map<int64_t, int64_t> held;
  std::vector<int64_t> received;
  auto visit = [&](size_t index) {
    const CrossMeshTransfer &transfer = transfers[index];
    bool sender = transfer.sender == device;
    bool receiver =
        std::find(transfer.receivers.begin(), transfer.receivers.end(),
                  device) != transfer.receivers.end();
    if (!sender && !receiver)
      return;
    const Slice &tile = tiles[static_cast<size_t>(transfer.tile)];
    int64_t buffer = CrossMeshPart::kBlock;
    auto found = held.find(transfer.tile);
    if (found != held.end()) {
      buffer = found->second;
    } else if (sender) {
      // A holder: the tile out of its block, or the block itself.
      if (!(tile == block)) {
        buffer = newSlot(tile.sizes);
        Step slice;
        slice.kind = StepKind::Slice;
        slice.to = buffer;
        slice.starts = minus(tile.offsets, block.offsets);
        part.steps.push_back(std::move(slice));
      }
      held[transfer.tile] = buffer;
    } else {
      if (!(receiving && tile == block))
        buffer = newSlot(tile.sizes);
      held[transfer.tile] = buffer;
      received.push_back(transfer.tile);
    }
    Step step;
    step.tag = static_cast<int64_t>(index);
    if (transfer.receivers.size() == 1) {
      step.kind = sender ? StepKind::Send : StepKind::Recv;
      step.peer = sender ? transfer.receivers.front() : transfer.sender;
      (sender ? step.from : step.to) = buffer;
    } else {
      step.kind = StepKind::Broadcast;
      step.from = step.to = buffer;
      step.members.push_back(transfer.sender);
      step.members.insert(step.members.end(), transfer.receivers.begin(),
                          transfer.receivers.end());
    }
    part.steps.push_back(std::move(step));
  };
  if (mine) {
    for (size_t index : *mine)
      visit(index);
  } else {
    for (size_t index = 0; index < transfers.size(); ++index)
      visit(index);
  }
  part.tilesReceived = static_cast<int64_t>(received.size());
  if (!receiving || received.empty() ||
      (received.size() == 1 && held[received.front()] == CrossMeshPart::kBlock))
    return part;

  // The block from its tiles: each padded to the block, summed (tiles do
  // not overlap), the last result written into the block.
  auto pad = [&](int64_t tile, int64_t to) {
    Step step;
    step.kind = StepKind::Pad;
    step.from = held.at(tile);
    step.to = to;
    step.starts =
        minus(tiles[static_cast<size_t>(tile)].offsets, block.offsets);
    part.steps.push_back(std::move(step));
  };
  if (received.size() == 1) {
    pad(received.front(), CrossMeshPart::kBlock);
    return part;
  }
  int64_t sum = newSlot(block.sizes);
  int64_t padded = newSlot(block.sizes);
  int64_t spare = received.size() > 2 ? newSlot(block.sizes) : sum;
  pad(received.front(), sum);
  for (size_t i = 1; i < received.size(); ++i) {
    pad(received[i], padded);
    Step add;
    add.kind = StepKind::Add;
    add.from = sum;
    add.other = padded;
    add.to = i + 1 == received.size() ? CrossMeshPart::kBlock : spare;
    part.steps.push_back(add);
    std::swap(sum, spare);
  }
  return part;
}
