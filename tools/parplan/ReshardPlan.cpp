//===- ReshardPlan.cpp - a cross-mesh move as an executable plan ----------===//
//
// `parplan reshard -o`: a planned move written as a plan that parplan-run
// executes and checks. The source blocks are PARAMETER buffers on the
// source mesh (synthetic values, a function of each element's logical
// index), the destination blocks OUTPUT buffers on the destination mesh,
// which `parplan-run --check` compares with those values. Each transfer
// of the schedule is a send/recv (one receiver) or a broadcast over the
// sender and its receivers, in the schedule's order on every device, so
// that the lowest transfer not yet done can always proceed.
//
//===----------------------------------------------------------------------===//

#include "ReshardPlan.h"

#include "parplan/Runtime/PlanFile.h"
#include "parplan/Support/Sbp.h"

#include <map>

using namespace parplan;
using namespace parplan::cost;

namespace {

/// A block's value bound for integer tensors: the synthetic values are
/// then distinct over large blocks.
constexpr int64_t kIntegerBound = int64_t{1} << 30;

struct DeviceBuilder {
  plan::Program *program = nullptr;
  /// The device's block and where it starts in the tensor.
  int64_t block = -1;
  std::vector<int64_t> blockOffsets, blockShape;
  /// The buffer holding each tile the device has (sliced or received).
  std::map<int64_t, int64_t> tiles;
  /// The tiles received, in order: the destination block is made of them.
  std::vector<int64_t> received;
};

int64_t addBuffer(plan::Program &program, plan::DType dtype,
                  const std::vector<int64_t> &shape,
                  plan::Buffer::Kind kind = plan::Buffer::TEMPORARY) {
  plan::Buffer *buffer = program.add_buffers();
  buffer->set_dtype(dtype);
  buffer->set_kind(kind);
  buffer->set_arena_offset(-1);
  for (int64_t size : shape)
    buffer->add_shape(size);
  return program.buffers_size() - 1;
}

void addInts(plan::Kernel &kernel, const std::string &name,
             const std::vector<int64_t> &values) {
  plan::Attr *attr = kernel.add_attrs();
  attr->set_name(name);
  for (int64_t value : values)
    attr->mutable_ints_value()->add_values(value);
}

/// `a - b`, elementwise.
std::vector<int64_t> minus(const std::vector<int64_t> &a,
                           const std::vector<int64_t> &b) {
  std::vector<int64_t> result(a.size());
  for (size_t d = 0; d < a.size(); ++d)
    result[d] = a[d] - b[d];
  return result;
}

} // namespace

plan::Plan parplan::cli::buildReshardPlan(
    const CrossMeshProblem &problem, const std::vector<CrossMeshTile> &tiles,
    const CrossMeshSchedule &schedule, runtime::DType dtype) {
  plan::Plan result;
  result.set_model("reshard " + problem.tensor);
  int64_t devices = 0;
  for (const DeviceMesh *mesh : {&problem.source, &problem.destination})
    for (int64_t device : mesh->devices)
      devices = std::max(devices, device + 1);
  result.add_mesh_shape(devices);
  plan::DType planType = runtime::toPlanDType(dtype);

  std::vector<DeviceBuilder> builders(static_cast<size_t>(devices));
  for (int64_t device = 0; device < devices; ++device) {
    plan::Program *program = result.add_programs();
    program->add_devices(device);
    program->set_loss(-1);
    builders[static_cast<size_t>(device)].program = program;
  }
  // The blocks: PARAMETER on the source, OUTPUT on the destination.
  for (auto [mesh, layout, name, kind] :
       {std::tuple{&problem.source, &problem.sourceLayout, "source",
                   plan::Buffer::PARAMETER},
        std::tuple{&problem.destination, &problem.destinationLayout,
                   "destination", plan::Buffer::OUTPUT}}) {
    plan::Mesh *declared = result.add_meshes();
    declared->set_name(name);
    for (int64_t extent : mesh->shape)
      declared->add_shape(extent);
    for (int64_t device : mesh->devices)
      declared->add_devices(device);
    std::vector<int64_t> splits = toSplits(*layout);
    for (size_t index = 0; index < mesh->devices.size(); ++index) {
      DeviceBuilder &builder =
          builders[static_cast<size_t>(mesh->devices[index])];
      builder.program->set_mesh(name);
      Slice block =
          deviceSlice(problem.shape, mesh->shape, *layout,
                      meshCoordinate(mesh->shape, static_cast<int64_t>(index)));
      builder.blockOffsets = block.offsets;
      builder.blockShape = block.sizes;
      builder.block = addBuffer(*builder.program, planType, block.sizes, kind);
      plan::Buffer &buffer =
          *builder.program->mutable_buffers(static_cast<int>(builder.block));
      buffer.set_name(problem.tensor);
      for (int64_t size : problem.shape)
        buffer.add_logical_shape(size);
      for (int64_t split : splits)
        buffer.add_splits(split);
      if (!runtime::isFloat(dtype))
        buffer.set_value_bound(kIntegerBound);
    }
  }

  // The transfers, in the schedule's order on every device taking part.
  for (size_t k = 0; k < schedule.transfers.size(); ++k) {
    const CrossMeshTransfer &transfer = schedule.transfers[k];
    const CrossMeshTile &tile = tiles[static_cast<size_t>(transfer.tile)];
    DeviceBuilder &sender = builders[static_cast<size_t>(transfer.sender)];
    auto held = sender.tiles.find(transfer.tile);
    if (held == sender.tiles.end()) {
      // A holder of the source: the tile out of its block.
      int64_t buffer = addBuffer(*sender.program, planType, tile.region.sizes);
      plan::Kernel *slice = runtime::appendKernel(*sender.program, "slice",
                                                  {sender.block}, {buffer});
      addInts(*slice, "starts",
              minus(tile.region.offsets, sender.blockOffsets));
      addInts(*slice, "steps",
              std::vector<int64_t>(tile.region.sizes.size(), 1));
      held = sender.tiles.emplace(transfer.tile, buffer).first;
    }
    std::vector<int64_t> into;
    for (int64_t receiver : transfer.receivers) {
      DeviceBuilder &builder = builders[static_cast<size_t>(receiver)];
      int64_t buffer = addBuffer(*builder.program, planType, tile.region.sizes);
      builder.tiles[transfer.tile] = buffer;
      builder.received.push_back(transfer.tile);
      into.push_back(buffer);
    }
    auto tag = static_cast<int64_t>(k);
    if (transfer.receivers.size() == 1) {
      plan::Send *send = sender.program->add_instructions()->mutable_send();
      send->set_buffer(held->second);
      send->set_peer(transfer.receivers.front());
      send->set_tag(tag);
      plan::Recv *recv =
          builders[static_cast<size_t>(transfer.receivers.front())]
              .program->add_instructions()
              ->mutable_recv();
      recv->set_buffer(into.front());
      recv->set_peer(transfer.sender);
      recv->set_tag(tag);
      continue;
    }
    // A broadcast from the sender (rank 0) over it and its receivers.
    plan::Group *group = result.add_groups();
    group->set_name("transfer" + std::to_string(k));
    group->add_devices(transfer.sender);
    for (int64_t receiver : transfer.receivers)
      group->add_devices(receiver);
    auto broadcast = [&](plan::Program &program, int64_t buffer) {
      plan::Collective *collective =
          program.add_instructions()->mutable_collective();
      collective->set_kind(plan::Collective::BROADCAST);
      collective->set_group(group->name());
      collective->set_input(buffer);
      collective->set_output(buffer);
      collective->set_root(0);
    };
    broadcast(*sender.program, held->second);
    for (size_t r = 0; r < transfer.receivers.size(); ++r)
      broadcast(*builders[static_cast<size_t>(transfer.receivers[r])].program,
                into[r]);
  }

  // Each destination block is the sum of its tiles, each padded with zeros
  // to the block (tiles do not overlap, so every element is one tile's).
  for (int64_t device : problem.destination.devices) {
    DeviceBuilder &builder = builders[static_cast<size_t>(device)];
    plan::Program &program = *builder.program;
    int64_t sum = -1;
    for (size_t i = 0; i < builder.received.size(); ++i) {
      int64_t tileIndex = builder.received[i];
      const CrossMeshTile &tile = tiles[static_cast<size_t>(tileIndex)];
      bool last = i + 1 == builder.received.size();
      bool alone = sum < 0 && last;
      int64_t padded = alone ? builder.block
                             : addBuffer(program, planType, builder.blockShape);
      plan::Kernel *pad = runtime::appendKernel(
          program, "slice_grad", {builder.tiles.at(tileIndex)}, {padded});
      addInts(*pad, "starts", minus(tile.region.offsets, builder.blockOffsets));
      addInts(*pad, "steps", std::vector<int64_t>(tile.region.sizes.size(), 1));
      if (sum < 0) {
        sum = padded;
        continue;
      }
      int64_t next = last ? builder.block
                          : addBuffer(program, planType, builder.blockShape);
      runtime::appendKernel(program, "add", {sum, padded}, {next});
      sum = next;
    }
  }
  return result;
}
