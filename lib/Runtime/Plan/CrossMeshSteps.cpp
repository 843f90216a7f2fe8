//===- CrossMeshSteps.cpp - a cross-mesh move as a device's instructions --===//

#include "parplan/Runtime/CrossMeshSteps.h"

#include "parplan/Runtime/PlanFile.h"

namespace parplan::runtime {

namespace {

template <typename List> std::vector<int64_t> toVector(const List &list) {
  return std::vector<int64_t>(list.begin(), list.end());
}

void addInts(plan::Kernel &kernel, const std::string &name,
             const std::vector<int64_t> &values) {
  plan::Attr *attr = kernel.add_attrs();
  attr->set_name(name);
  attr->mutable_ints_value()->mutable_values()->Assign(values.begin(),
                                                       values.end());
}

} // namespace

CrossMeshTable readCrossMeshMove(const plan::CrossMeshMove &move) {
  CrossMeshTable table;
  table.tiles.reserve(static_cast<size_t>(move.tiles_size()));
  for (const plan::CrossMeshTile &tile : move.tiles())
    table.tiles.push_back({toVector(tile.offsets()), toVector(tile.sizes())});
  table.transfers.reserve(static_cast<size_t>(move.transfers_size()));
  for (const plan::CrossMeshTransfer &transfer : move.transfers())
    table.transfers.push_back(
        {transfer.tile(), transfer.sender(), toVector(transfer.receivers())});
  std::optional<DType> type = toRuntimeDType(move.dtype());
  table.elementBytes = type ? static_cast<int64_t>(byteWidth(*type)) : 0;
  return table;
}

CrossMeshPart crossMeshPartOf(const plan::CrossMeshMove &move,
                              const CrossMeshTable &table, int64_t device,
                              const std::vector<int64_t> &meshShape,
                              const std::vector<int64_t> &coordinate,
                              bool receiving, const std::vector<size_t> *mine) {
  Slice block =
      deviceSlice(toVector(move.logical_shape()), meshShape,
                  fromSplits(receiving ? toVector(move.destination_splits())
                                       : toVector(move.source_splits())),
                  coordinate);
  return crossMeshPart(table.tiles, table.transfers, device, block, receiving,
                       table.elementBytes, mine);
}

const plan::CrossMeshPart *
CrossMeshParts::partOf(const plan::Instruction &instruction) {
  if (instruction.has_cross_mesh_send())
    return &instruction.cross_mesh_send();
  if (instruction.has_cross_mesh_recv())
    return &instruction.cross_mesh_recv();
  return nullptr;
}

CrossMeshPart CrossMeshParts::of(const plan::Instruction &instruction,
                                 int64_t device,
                                 const std::vector<int64_t> &meshShape,
                                 const std::vector<int64_t> &coordinate) {
  const plan::CrossMeshPart &part = *partOf(instruction);
  const plan::CrossMeshMove &move = moveOf(part);
  auto table = tables.find(part.move());
  if (table == tables.end())
    table = tables.emplace(part.move(), readCrossMeshMove(move)).first;
  return crossMeshPartOf(move, table->second, device, meshShape, coordinate,
                         instruction.has_cross_mesh_recv());
}

std::string crossMeshGroupName(const std::vector<int64_t> &members) {
  std::string name = "cross-mesh";
  for (int64_t device : members)
    name += (name.size() == 10 ? ":" : ",") + std::to_string(device);
  return name;
}

std::map<std::string, std::vector<int64_t>>
crossMeshGroups(const plan::Plan &plan) {
  std::map<std::string, std::vector<int64_t>> groups;
  for (const plan::CrossMeshMove &move : plan.cross_mesh_moves())
    for (const plan::CrossMeshTransfer &transfer : move.transfers()) {
      if (transfer.receivers_size() < 2)
        continue;
      std::vector<int64_t> members = {transfer.sender()};
      members.insert(members.end(), transfer.receivers().begin(),
                     transfer.receivers().end());
      groups.emplace(crossMeshGroupName(members), std::move(members));
    }
  return groups;
}

void appendCrossMeshPart(const CrossMeshPart &part,
                         const plan::CrossMeshMove &move, int64_t block,
                         const plan::Buffer *scratch, plan::Program &program) {
  // The slots' buffers, after the program's.
  std::vector<int64_t> slotBuffer;
  for (const CrossMeshPart::Slot &slot : part.slots) {
    slotBuffer.push_back(program.buffers_size());
    plan::Buffer *buffer = program.add_buffers();
    buffer->set_dtype(move.dtype());
    buffer->mutable_shape()->Assign(slot.shape.begin(), slot.shape.end());
    buffer->set_kind(plan::Buffer::TEMPORARY);
    buffer->set_arena_offset(scratch && scratch->arena_offset() >= 0
                                 ? scratch->arena_offset() + slot.offset
                                 : -1);
  }
  auto bufferOf = [&](int64_t slot) {
    return slot == CrossMeshPart::kBlock
               ? block
               : slotBuffer[static_cast<size_t>(slot)];
  };
  auto steps = [](const std::vector<int64_t> &starts) {
    return std::vector<int64_t>(starts.size(), 1);
  };
  for (const CrossMeshPart::Step &step : part.steps) {
    switch (step.kind) {
    case CrossMeshPart::StepKind::Slice:
    case CrossMeshPart::StepKind::Pad: {
      plan::Kernel *kernel = appendKernel(
          program,
          step.kind == CrossMeshPart::StepKind::Slice ? "slice" : "slice_grad",
          {bufferOf(step.from)}, {bufferOf(step.to)});
      addInts(*kernel, "starts", step.starts);
      addInts(*kernel, "steps", steps(step.starts));
      // nn.slice's result extents (the part's shape), as the op has them.
      if (step.kind == CrossMeshPart::StepKind::Slice) {
        const auto &shape = program.buffers(bufferOf(step.to)).shape();
        addInts(*kernel, "sizes",
                std::vector<int64_t>(shape.begin(), shape.end()));
      }
      break;
    }
    case CrossMeshPart::StepKind::Add:
      appendKernel(program, "add", {bufferOf(step.from), bufferOf(step.other)},
                   {bufferOf(step.to)});
      break;
    case CrossMeshPart::StepKind::Send: {
      plan::Send *send = program.add_instructions()->mutable_send();
      send->set_buffer(bufferOf(step.from));
      send->set_peer(step.peer);
      send->set_tag(step.tag);
      break;
    }
    case CrossMeshPart::StepKind::Recv: {
      plan::Recv *recv = program.add_instructions()->mutable_recv();
      recv->set_buffer(bufferOf(step.to));
      recv->set_peer(step.peer);
      recv->set_tag(step.tag);
      break;
    }
    case CrossMeshPart::StepKind::Broadcast: {
      plan::Collective *broadcast =
          program.add_instructions()->mutable_collective();
      broadcast->set_kind(plan::Collective::BROADCAST);
      broadcast->set_group(crossMeshGroupName(step.members));
      broadcast->set_input(bufferOf(step.from));
      broadcast->set_output(bufferOf(step.from));
      broadcast->set_root(0);
      break;
    }
    }
  }
}

} // namespace parplan::runtime
