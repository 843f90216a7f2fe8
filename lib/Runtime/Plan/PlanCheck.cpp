//===- PlanCheck.cpp - checkPlan: everything the executor relies on -------===//
//
// checkPlan validates everything the executor indexes or allocates with, so
// that the executor itself can index without checking: the meshes and
// groups, the cross-mesh moves, each program's buffers, instructions and
// arena, the messages between devices, the schedule and the model chunks,
// and last that a step cannot hang (PlanProgress.cpp).
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/PlanFile.h"

#include "PlanGroups.h"
#include "PlanProgress.h"
#include "parplan/Runtime/CrossMeshSteps.h"
#include "parplan/Runtime/KernelCall.h"
#include "parplan/Runtime/StreamSchedule.h"
#include "parplan/Runtime/WeightFile.h"
#include "parplan/Sbp/Sbp.h"
#include "parplan/Schedule/Pipeline.h"
#include "parplan/Support/Hash.h"
#include "parplan/Support/Text.h"
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace parplan::runtime {

using detail::groupDevices;
using detail::meshView;
using detail::rankInGroup;
using detail::toVector;

namespace {

/// The largest buffer a plan may declare: far beyond any device's memory,
/// and small enough that element counts times byte widths cannot overflow.
constexpr int64_t kMaxBufferElements = int64_t{1} << 48;
/// The largest mesh a plan may declare (the checker keeps a word per
/// device).
constexpr int64_t kMaxDevices = int64_t{1} << 24;
/// More micro-batches than any step takes: a corrupt field, not a plan.
constexpr int64_t kMaxMicroBatches = int64_t{1} << 24;
/// The most memory a device's program may hold (its arena, or its buffers
/// when it has none): 1 TiB, beyond any accelerator's and most hosts'
/// memory, so that an absurd size is refused before the executor tries
/// to allocate it.
constexpr int64_t kMaxDeviceBytes = int64_t{1} << 40;

class PlanChecker {
public:
  explicit PlanChecker(const plan::Plan &planMessage) : plan_(planMessage) {}

  Status check() {
    if (plan_.micro_batches() < 0 || plan_.micro_batches() > kMaxMicroBatches)
      return Status::failure(
          "plan micro_batches " + std::to_string(plan_.micro_batches()) +
          " is outside 0 to " + std::to_string(kMaxMicroBatches));
    if (Status status = checkMesh(); !status.ok())
      return status;
    if (Status status = checkGroups(); !status.ok())
      return status;
    if (Status status = checkCrossMeshMoves(); !status.ok())
      return status;
    for (int i = 0; i < plan_.programs_size(); ++i)
      if (Status status = checkProgram(i); !status.ok())
        return status;
    if (Status status = checkMessages(); !status.ok())
      return status;
    if (Status status = checkGradientsStream(); !status.ok())
      return status;
    if (Status status = checkSchedule(); !status.ok())
      return status;
    return detail::checkProgress(plan_);
  }

private:
  /// The programs that run collectives over one group mark them
  /// feeds_update alike, call by call: the CUDA backend runs the marked
  /// ones on communicators of their own, which every member of the group
  /// opens, and a member calling a collective on the other communicator
  /// than its peers would wait for them forever.
  Status checkGradientsStream() {
    // By group: the first program's marks, call by call, and its index.
    std::map<std::string, std::pair<std::vector<bool>, int>> marks;
    for (int p = 0; p < plan_.programs_size(); ++p) {
      std::map<std::string, std::vector<bool>> own;
      const plan::Program &program = plan_.programs(p);
      for (int i = 0; i < program.instructions_size(); ++i) {
        if (!program.instructions(i).has_collective())
          continue;
        const plan::Collective &collective =
            program.instructions(i).collective();
        std::vector<bool> &calls = own[collective.group()];
        auto [first, inserted] =
            marks.try_emplace(collective.group(), std::vector<bool>(), p);
        if (!inserted && first->second.second != p &&
            calls.size() < first->second.first.size() &&
            first->second.first[calls.size()] != collective.feeds_update())
          return Status::failure(
              "program " + std::to_string(p) + " instruction " +
              std::to_string(i) + ": " + collectiveName(collective.kind()) +
              " over group '" + collective.group() + "' is " +
              (collective.feeds_update() ? "" : "not ") +
              "marked feeds_update, but program " +
              std::to_string(first->second.second) + "'s call " +
              std::to_string(calls.size()) + " over that group is" +
              (collective.feeds_update() ? " not" : "") +
              ": every member of a group runs its calls on the same "
              "stream");
        calls.push_back(collective.feeds_update());
      }
      for (auto &[group, calls] : own)
        if (std::pair<std::vector<bool>, int> &first = marks[group];
            first.second == p)
          first.first = std::move(calls);
    }
    return Status::success();
  }

  /// The mesh, and every device in exactly one program.
  Status checkMesh() {
    if (plan_.programs_size() == 0)
      return Status::failure("plan has no programs");
    if (plan_.mesh_shape_size() == 0)
      return Status::failure("plan has no mesh_shape");
    int64_t devices = 1;
    for (int i = 0; i < plan_.mesh_shape_size(); ++i) {
      int64_t axis = plan_.mesh_shape(i);
      if (axis <= 0 || axis > kMaxDevices / devices)
        return Status::failure("plan mesh_shape " +
                               toString(toVector(plan_.mesh_shape())) +
                               ": axes must be positive, with at most " +
                               std::to_string(kMaxDevices) + " devices");
      devices *= axis;
    }
    meshShape_ = toVector(plan_.mesh_shape());
    if (std::optional<std::string> error =
            checkShares(meshShape_, meshView(plan_, "").shares))
      return Status::failure("plan mesh_shares: " + *error);
    owner_.assign(static_cast<size_t>(devices), -1);
    for (int p = 0; p < plan_.programs_size(); ++p) {
      const plan::Program &program = plan_.programs(p);
      std::string where = "program " + std::to_string(p);
      if (program.devices_size() == 0)
        return Status::failure(where + " lists no devices");
      for (int i = 0; i < program.devices_size(); ++i) {
        int64_t device = program.devices(i);
        if (device < 0 || device >= devices)
          return Status::failure(where + " lists device " +
                                 std::to_string(device) + ", not one of the " +
                                 std::to_string(devices) + " devices of mesh " +
                                 toString(meshShape_));
        if (i > 0 && device <= program.devices(i - 1))
          return Status::failure(where +
                                 " lists its devices out of ascending order");
        if (owner_[device] >= 0)
          return Status::failure(where + " lists device " +
                                 std::to_string(device) + ", which program " +
                                 std::to_string(owner_[device]) + " runs too");
        owner_[device] = p;
      }
    }
    for (int64_t device = 0; device < devices; ++device)
      if (owner_[device] < 0)
        return Status::failure("no program runs device " +
                               std::to_string(device) + " of mesh " +
                               toString(meshShape_));
    return checkNamedMeshes();
  }

  /// Named meshes: shapes that hold their device lists, over disjoint
  /// devices of the plan; a program naming one runs on devices it holds.
  Status checkNamedMeshes() {
    int64_t devices = static_cast<int64_t>(owner_.size());
    meshes_[""] = meshView(plan_, "");
    std::vector<int> holder(static_cast<size_t>(devices), -1);
    for (int m = 0; m < plan_.meshes_size(); ++m) {
      const plan::Mesh &mesh = plan_.meshes(m);
      std::string where =
          "plan meshes[" + std::to_string(m) + "] '" + mesh.name() + "'";
      if (mesh.name().empty())
        return Status::failure(where + " has no name");
      if (meshes_.count(mesh.name()))
        return Status::failure(where + " has the name of an earlier mesh");
      Shape shape = toVector(mesh.shape());
      int64_t size = 1;
      for (int64_t axis : shape) {
        if (axis <= 0 || axis > kMaxDevices / size)
          return Status::failure(where + " shape " + toString(shape) +
                                 ": axes must be positive");
        size *= axis;
      }
      if (shape.empty() || size != mesh.devices_size())
        return Status::failure(where + " lists " +
                               std::to_string(mesh.devices_size()) +
                               " devices for its shape " + toString(shape));
      for (int64_t device : mesh.devices()) {
        if (device < 0 || device >= devices)
          return Status::failure(where + " lists device " +
                                 std::to_string(device) + ", not one of the " +
                                 std::to_string(devices) +
                                 " devices of the plan");
        int &meshHolding = holder[static_cast<size_t>(device)];
        if (meshHolding >= 0)
          return Status::failure(
              where + " lists device " + std::to_string(device) +
              (meshHolding == m
                   ? " twice"
                   : ", which mesh '" + plan_.meshes(meshHolding).name() +
                         "' holds too"));
        meshHolding = m;
      }
      meshes_[mesh.name()] = PlacedMesh{shape, toVector(mesh.devices())};
    }
    for (int p = 0; p < plan_.programs_size(); ++p) {
      const plan::Program &program = plan_.programs(p);
      if (program.mesh().empty())
        continue;
      std::string where = "program " + std::to_string(p);
      auto mesh = meshes_.find(program.mesh());
      if (mesh == meshes_.end())
        return Status::failure(where + " names mesh '" + program.mesh() +
                               "', which the plan does not declare");
      for (int64_t device : program.devices())
        if (mesh->second.indexOf(device) < 0)
          return Status::failure(where + " lists device " +
                                 std::to_string(device) + ", which its mesh '" +
                                 program.mesh() + "' does not hold");
    }
    return Status::success();
  }

  const PlacedMesh &meshOf(const plan::Program &program) const {
    return meshes_.at(program.mesh());
  }

  Status checkGroups() {
    int64_t devices = static_cast<int64_t>(owner_.size());
    for (int g = 0; g < plan_.groups_size(); ++g) {
      const plan::Group &group = plan_.groups(g);
      std::string where =
          "plan groups[" + std::to_string(g) + "] '" + group.name() + "'";
      if (group.name().empty())
        return Status::failure(where + " has no name");
      if (!groups_.emplace(group.name(), &group).second)
        return Status::failure(where + " has the name of an earlier group");
      if ((group.devices_size() == 0) == (group.mesh_axes_size() == 0))
        return Status::failure(where +
                               " needs either devices or mesh_axes, not " +
                               (group.devices_size() ? "both" : "neither"));
      std::set<int64_t> seen;
      for (int64_t device : group.devices()) {
        if (device < 0 || device >= devices)
          return Status::failure(where + " names device " +
                                 std::to_string(device) + ", not one of the " +
                                 std::to_string(devices) + " devices");
        if (!seen.insert(device).second)
          return Status::failure(where + " names device " +
                                 std::to_string(device) + " twice");
      }
      if (!group.mesh().empty() && group.mesh_axes_size() == 0)
        return Status::failure(where + " names mesh '" + group.mesh() +
                               "' but no mesh_axes");
      auto mesh = meshes_.find(group.mesh());
      if (mesh == meshes_.end())
        return Status::failure(where + " names mesh '" + group.mesh() +
                               "', which the plan does not declare");
      const Shape &meshShape = mesh->second.shape;
      for (int i = 0; i < group.mesh_axes_size(); ++i) {
        int64_t axis = group.mesh_axes(i);
        if (axis < 0 || axis >= static_cast<int64_t>(meshShape.size()) ||
            (i > 0 && axis <= group.mesh_axes(i - 1)))
          return Status::failure(
              where + " mesh_axes " + toString(toVector(group.mesh_axes())) +
              " are not ascending axes of mesh " + toString(meshShape));
      }
    }
    return Status::success();
  }

  /// The cross-mesh moves' tables: two named meshes, layouts valid for the
  /// tensor on each, tiles inside it, and transfers that can be run in
  /// order: each from a device holding the tile (a source device whose
  /// block holds it, or a destination device that received it before) to
  /// destination devices whose blocks hold it, every destination block
  /// made exactly of the tiles it receives.
  /// A move's table as read, the transfers each device takes part in
  /// (indexed by device), and how many parts of it each device's program
  /// runs.
  struct MoveTable {
    CrossMeshTable table;
    std::vector<std::vector<size_t>> transfersOf;
    std::vector<int64_t> runs;
  };

  Status checkCrossMeshMoves() {
    for (int m = 0; m < plan_.cross_mesh_moves_size(); ++m)
      if (Status status = checkCrossMeshMove(m); !status.ok())
        return status;
    return Status::success();
  }

  /// Each device's block of a move's tensor on either side (0: source,
  /// 1: destination), worked out once per device.
  class MoveBlocks {
  public:
    MoveBlocks(const plan::CrossMeshMove &move, const Shape &logical,
               const PlacedMesh *source, const PlacedMesh *destination)
        : logical(logical), meshes{source, destination},
          splits{fromSplits(toVector(move.source_splits())),
                 fromSplits(toVector(move.destination_splits()))} {}

    const Slice &of(int side, int64_t device) {
      auto found = blocks[side].find(device);
      if (found == blocks[side].end())
        found =
            blocks[side]
                .emplace(device,
                         deviceSlice(logical, meshes[side]->shape, splits[side],
                                     meshes[side]->coordinate(device)))
                .first;
      return found->second;
    }

  private:
    const Shape &logical;
    const PlacedMesh *meshes[2];
    NdSbp splits[2];
    std::map<int64_t, Slice> blocks[2];
  };

  /// Cross-mesh move `m`: its dtype, shape, meshes and splits, tiles that
  /// are regions of the tensor, transfers that only send what the sender
  /// holds, and destination blocks covered exactly once.
  Status checkCrossMeshMove(int m) {
    const plan::CrossMeshMove &move = plan_.cross_mesh_moves(m);
    std::string where = "plan cross_mesh_moves[" + std::to_string(m) + "] '" +
                        move.name() + "'";
    if (!toRuntimeDType(move.dtype()))
      return Status::failure(where + " has no valid dtype (" +
                             std::to_string(move.dtype()) + ")");
    Shape logical = toVector(move.logical_shape());
    int64_t elements = 1;
    for (int64_t size : logical) {
      if (size <= 0 || elements > kMaxBufferElements / size)
        return Status::failure(where +
                               " has a logical_shape that is not "
                               "positive or too large " +
                               toString(logical));
      elements *= size;
    }
    const PlacedMesh *sides[2] = {nullptr, nullptr};
    for (int side = 0; side < 2; ++side) {
      const std::string &name =
          side == 0 ? move.source_mesh() : move.destination_mesh();
      auto mesh = meshes_.find(name);
      if (name.empty() || mesh == meshes_.end())
        return Status::failure(where + " moves " + (side == 0 ? "from" : "to") +
                               " mesh '" + name +
                               "', which the plan does not declare");
      sides[side] = &mesh->second;
      std::vector<int64_t> splits = side == 0
                                        ? toVector(move.source_splits())
                                        : toVector(move.destination_splits());
      if (Status status =
              checkSplits(splits, logical, mesh->second,
                          where + (side == 0 ? " source" : " destination"));
          !status.ok())
        return status;
    }
    if (move.source_mesh() == move.destination_mesh())
      return Status::failure(where + " moves from mesh '" + move.source_mesh() +
                             "' to itself");
    MoveTable checked;
    checked.table = readCrossMeshMove(move);
    checked.transfersOf.resize(owner_.size());
    checked.runs.assign(owner_.size(), 0);
    int64_t rank = static_cast<int64_t>(logical.size());
    for (size_t t = 0; t < checked.table.tiles.size(); ++t) {
      const Slice &tile = checked.table.tiles[t];
      bool inside = static_cast<int64_t>(tile.offsets.size()) == rank &&
                    static_cast<int64_t>(tile.sizes.size()) == rank;
      for (int64_t d = 0; inside && d < rank; ++d)
        inside = tile.offsets[d] >= 0 && tile.sizes[d] > 0 &&
                 tile.sizes[d] <= logical[d] - tile.offsets[d];
      if (!inside)
        return Status::failure(where + " tile " + std::to_string(t) + " at " +
                               toString(tile.offsets) + " of " +
                               toString(tile.sizes) + " is not a region of " +
                               toString(logical));
    }
    MoveBlocks blocks(move, logical, sides[0], sides[1]);
    std::map<int64_t, std::vector<int64_t>> received;
    if (Status status =
            checkMoveTransfers(move, where, sides, blocks, checked, received);
        !status.ok())
      return status;
    if (Status status = checkMoveCoverage(where, *sides[1], blocks,
                                          checked.table, received);
        !status.ok())
      return status;
    moves_.push_back(std::move(checked));
    return Status::success();
  }

  /// A move's transfers: each of a tile the sender holds (in its source
  /// block, or received before) to destination devices whose blocks hold
  /// it and that have it from no one else. Fills `checked.transfersOf` and
  /// the tiles each destination device receives.
  Status checkMoveTransfers(const plan::CrossMeshMove &move,
                            const std::string &where,
                            const PlacedMesh *const sides[2],
                            MoveBlocks &blocks, MoveTable &checked,
                            std::map<int64_t, std::vector<int64_t>> &received) {
    std::set<std::pair<int64_t, int64_t>> has;
    for (size_t i = 0; i < checked.table.transfers.size(); ++i) {
      const CrossMeshTransfer &transfer = checked.table.transfers[i];
      std::string at = where + " transfer " + std::to_string(i);
      if (transfer.tile < 0 ||
          transfer.tile >= static_cast<int64_t>(checked.table.tiles.size()))
        return Status::failure(
            at + " moves tile " + std::to_string(transfer.tile) +
            ", not one of the " + std::to_string(checked.table.tiles.size()) +
            " tiles");
      const Slice &tile =
          checked.table.tiles[static_cast<size_t>(transfer.tile)];
      int64_t sender = transfer.sender;
      bool fromSource = sides[0]->indexOf(sender) >= 0;
      if (!fromSource && sides[1]->indexOf(sender) < 0)
        return Status::failure(at + ": sender " + std::to_string(sender) +
                               " is on neither mesh");
      if (fromSource ? !blocks.of(0, sender).contains(tile)
                     : !has.count({sender, transfer.tile}))
        return Status::failure(
            at + ": sender " + std::to_string(sender) + " does not hold tile " +
            std::to_string(transfer.tile) +
            (fromSource ? " in its block" : " (it has not received it)"));
      if (transfer.receivers.empty())
        return Status::failure(at + " has no receivers");
      checked.transfersOf[static_cast<size_t>(sender)].push_back(i);
      for (int64_t receiver : transfer.receivers) {
        if (sides[1]->indexOf(receiver) < 0)
          return Status::failure(at + ": receiver " + std::to_string(receiver) +
                                 " is not on the destination mesh '" +
                                 move.destination_mesh() + "'");
        if (!blocks.of(1, receiver).contains(tile))
          return Status::failure(at + ": receiver " + std::to_string(receiver) +
                                 "'s block does not hold tile " +
                                 std::to_string(transfer.tile));
        if (!has.insert({receiver, transfer.tile}).second)
          return Status::failure(at + ": receiver " + std::to_string(receiver) +
                                 " has tile " + std::to_string(transfer.tile) +
                                 " already (or sends it)");
        checked.transfersOf[static_cast<size_t>(receiver)].push_back(i);
        received[receiver].push_back(transfer.tile);
      }
    }
    return Status::success();
  }

  /// Destination blocks: exactly their tiles, which do not overlap.
  Status checkMoveCoverage(const std::string &where,
                           const PlacedMesh &destination, MoveBlocks &blocks,
                           const CrossMeshTable &table,
                           std::map<int64_t, std::vector<int64_t>> &received) {
    for (int64_t device : destination.devices) {
      const Slice &own = blocks.of(1, device);
      int64_t covered = 0;
      const std::vector<int64_t> &tiles = received[device];
      for (size_t a = 0; a < tiles.size(); ++a) {
        const Slice &tile = table.tiles[static_cast<size_t>(tiles[a])];
        covered += tile.numElements();
        for (size_t b = 0; b < a; ++b) {
          const Slice &other = table.tiles[static_cast<size_t>(tiles[b])];
          if (tile.overlaps(other))
            return Status::failure(
                where + ": device " + std::to_string(device) +
                " receives tiles " + std::to_string(tiles[b]) + " and " +
                std::to_string(tiles[a]) + ", which overlap");
        }
      }
      if (covered != own.numElements())
        return Status::failure(where + ": device " + std::to_string(device) +
                               " receives " + std::to_string(covered) +
                               " of the " + std::to_string(own.numElements()) +
                               " elements of its destination block");
    }
    return Status::success();
  }

  /// A cross_mesh_send or cross_mesh_recv of `program`: a move whose side
  /// is the program's mesh, a block buffer of the move's dtype and of the
  /// device's block extent, and a scratch holding every device's slots.
  Status checkCrossMeshPart(const plan::Program &program,
                            const plan::CrossMeshPart &part, bool receiving,
                            const std::string &at) {
    const char *what = receiving ? "cross_mesh_recv" : "cross_mesh_send";
    if (part.move() < 0 || part.move() >= plan_.cross_mesh_moves_size())
      return Status::failure(at + ": " + what + " of move " +
                             std::to_string(part.move()) + ", not one of the " +
                             std::to_string(plan_.cross_mesh_moves_size()) +
                             " cross_mesh_moves");
    const plan::CrossMeshMove &move =
        plan_.cross_mesh_moves(static_cast<int>(part.move()));
    MoveTable &checked = moves_[static_cast<size_t>(part.move())];
    const std::string &side =
        receiving ? move.destination_mesh() : move.source_mesh();
    if (program.mesh() != side)
      return Status::failure(
          at + ": " + what + " of move '" + move.name() + "' runs on mesh '" +
          program.mesh() + "', not its " +
          (receiving ? "destination" : "source") + " '" + side + "'");
    if (Status status =
            checkIndex(program, part.block(), at + " " + what + " block");
        !status.ok())
      return status;
    const plan::Buffer &block = program.buffers(static_cast<int>(part.block()));
    if (block.dtype() != move.dtype())
      return Status::failure(at + ": " + what + " block buffer " +
                             std::to_string(part.block()) +
                             " is not of the move's dtype");
    const plan::Buffer *scratch = nullptr;
    if (part.scratch() != -1) {
      if (Status status =
              checkIndex(program, part.scratch(), at + " " + what + " scratch");
          !status.ok())
        return status;
      scratch = &program.buffers(static_cast<int>(part.scratch()));
      if (scratch->kind() != plan::Buffer::TEMPORARY ||
          scratch->dtype() != plan::I8 || scratch->shape_size() != 1)
        return Status::failure(at + ": " + what + " scratch buffer " +
                               std::to_string(part.scratch()) +
                               " is not a temporary of i8 of rank 1");
    }
    const PlacedMesh &mesh = meshOf(program);
    Shape logical = toVector(move.logical_shape());
    NdSbp layout = fromSplits(receiving ? toVector(move.destination_splits())
                                        : toVector(move.source_splits()));
    for (int64_t device : program.devices()) {
      std::vector<int64_t> coordinate = mesh.coordinate(device);
      Shape extent =
          localShape(logical, mesh.shape, layout, coordinate, mesh.shares);
      if (extent != toVector(block.shape()))
        return Status::failure(at + ": device " + std::to_string(device) +
                               "'s block of move '" + move.name() + "' is " +
                               toString(extent) + ", not the buffer's shape " +
                               toString(toVector(block.shape())));
      CrossMeshPart own = crossMeshPartOf(
          move, checked.table, device, mesh.shape, coordinate, receiving,
          &checked.transfersOf[static_cast<size_t>(device)]);
      int64_t room = scratch ? bufferBytes(*scratch) : 0;
      if (own.scratchBytes > room)
        return Status::failure(
            at + ": device " + std::to_string(device) + "'s part of move '" +
            move.name() + "' needs " + std::to_string(own.scratchBytes) +
            " bytes of scratch, but has " + std::to_string(room));
      ++checked.runs[static_cast<size_t>(device)];
    }
    return Status::success();
  }

  /// `splits` (one entry per mesh axis, -1 or a dimension of a tensor of
  /// `shape`) at `where`.
  Status checkSplits(const std::vector<int64_t> &splits, const Shape &shape,
                     const PlacedMesh &mesh, const std::string &where) {
    if (splits.size() != mesh.shape.size())
      return Status::failure(where + " splits " + toString(splits) +
                             " need one entry per axis of mesh " +
                             toString(mesh.shape));
    for (int64_t dim : splits)
      if (dim < -1 || dim >= static_cast<int64_t>(shape.size()))
        return Status::failure(where + " splits " + toString(splits) +
                               " name no dimension of " + toString(shape));
    return Status::success();
  }

  /// The devices of `program` whose blocks of a tensor of `shape` split by
  /// `splits` need checking: all of them, or the first when the split is
  /// even (every device's block then has the same extent).
  std::vector<int64_t> devicesToCheck(const plan::Program &program,
                                      const Shape &shape,
                                      const std::vector<int64_t> &splits) {
    if (hasEvenBlocks(shape, meshOf(program).shape, fromSplits(splits),
                      meshOf(program).shares))
      return {program.devices(0)};
    return toVector(program.devices());
  }

  /// A buffer holding a block of a logical tensor: its logical_shape and
  /// splits, and that every device of `program` has a block of the
  /// buffer's extent.
  Status checkBlock(const plan::Program &program, const plan::Buffer &buffer,
                    const std::string &where) {
    Shape shape = toVector(buffer.shape());
    Shape logical = toVector(buffer.logical_shape());
    if (logical.size() != shape.size())
      return Status::failure(where + " has shape " + toString(shape) +
                             " but logical_shape " + toString(logical) +
                             " of another rank");
    int64_t logicalElements = 1;
    for (int64_t size : logical) {
      if (size < 0 ||
          (size != 0 && logicalElements > kMaxBufferElements / size))
        return Status::failure(where +
                               " has a logical_shape that is negative or "
                               "too large " +
                               toString(logical));
      logicalElements *= size;
    }
    std::vector<int64_t> splits = toVector(buffer.splits());
    const PlacedMesh &mesh = meshOf(program);
    if (Status status = checkSplits(splits, logical, mesh, where); !status.ok())
      return status;
    NdSbp layout = fromSplits(splits);
    for (int64_t device : devicesToCheck(program, logical, splits)) {
      Shape block = localShape(logical, mesh.shape, layout,
                               mesh.coordinate(device), mesh.shares);
      if (block != shape)
        return Status::failure(
            where + ": device " + std::to_string(device) + "'s block of " +
            toString(logical) + " split by " + toString(splits) + " is " +
            toString(block) + ", not the buffer's shape " + toString(shape));
    }
    return Status::success();
  }

  Status checkBuffer(const plan::Program &program, const plan::Buffer &buffer,
                     const std::string &where) {
    if (!toRuntimeDType(buffer.dtype()))
      return Status::failure(where + " has no valid dtype (" +
                             std::to_string(buffer.dtype()) + ")");
    if (!plan::Buffer::Kind_IsValid(buffer.kind()))
      return Status::failure(where + " has an unknown kind (" +
                             std::to_string(buffer.kind()) + ")");
    int64_t elements = 1;
    for (int d = 0; d < buffer.shape_size(); ++d) {
      int64_t size = buffer.shape(d);
      if (size < 0)
        return Status::failure(where + " has a negative dimension " +
                               toString(toVector(buffer.shape())));
      if (size != 0 && elements > kMaxBufferElements / size)
        return Status::failure(where + " is too large " +
                               toString(toVector(buffer.shape())));
      elements *= size;
    }
    if (buffer.offsets_size() != 0)
      return Status::failure(where + " has offsets; a plan file gives "
                                     "splits, and the executor works the "
                                     "offsets out");
    if (buffer.shared_data() != 0 && buffer.kind() != plan::Buffer::CONSTANT)
      return Status::failure(where + " has shared_data but is not a constant");
    if (buffer.kind() == plan::Buffer::MICRO_BATCH &&
        (buffer.shape_size() != 0 || buffer.dtype() != plan::I64))
      return Status::failure(where + " is the micro-batch index, which is an "
                                     "int64 scalar");
    if (buffer.kind() == plan::Buffer::PARAMETER) {
      // The byte range is read at load, by every rank: a hostile one is
      // refused before anything is allocated.
      std::optional<WeightRange> range;
      if (Status status = parseWeightSource(buffer.source(), range);
          !status.ok())
        return Status::failure(where + ": " + status.error);
      if (range && range->location.empty() && plan_.model_bytes() != 0 &&
          static_cast<uint64_t>(range->offset +
                                std::max<int64_t>(range->length, 0)) >
              plan_.model_bytes())
        return Status::failure(where + "'s weights ('" + buffer.source() +
                               "') lie past the end of the model's " +
                               std::to_string(plan_.model_bytes()) + " bytes");
    }
    if (buffer.kind() == plan::Buffer::TEMPORARY ||
        buffer.kind() == plan::Buffer::ACCUMULATOR ||
        buffer.kind() == plan::Buffer::MICRO_BATCH) {
      if (buffer.splits_size() != 0 || buffer.logical_shape_size() != 0)
        return Status::failure(
            where + " is " +
            (buffer.kind() == plan::Buffer::TEMPORARY     ? "a temporary"
             : buffer.kind() == plan::Buffer::ACCUMULATOR ? "an accumulator"
                                                          : "the micro-batch "
                                                            "index") +
            " with splits or a logical_shape; only blocks of named tensors "
            "and constants have them");
      return Status::success();
    }
    if (buffer.kind() != plan::Buffer::CONSTANT || buffer.splits_size() != 0)
      if (Status status = checkBlock(program, buffer, where); !status.ok())
        return status;
    if (buffer.kind() == plan::Buffer::CONSTANT) {
      int64_t stored = buffer.splits_size() != 0
                           ? numElements(toVector(buffer.logical_shape()))
                           : elements;
      size_t expected = static_cast<size_t>(stored) *
                        byteWidth(*toRuntimeDType(buffer.dtype()));
      if (buffer.shared_data() != 0) {
        if (buffer.shared_data() < 0 ||
            buffer.shared_data() > plan_.constant_data_size())
          return Status::failure(
              where + " has shared_data " +
              std::to_string(buffer.shared_data()) + " but the plan has " +
              std::to_string(plan_.constant_data_size()) + " shared constants");
        if (!buffer.data().empty())
          return Status::failure(where + " has both data and shared data");
      }
      const std::string &data = constantData(plan_, buffer);
      if (data.size() != expected)
        return Status::failure(
            where + " is a constant of " + std::to_string(expected) +
            " bytes but " +
            (buffer.shared_data() != 0 ? "its shared data" : "data") + " has " +
            std::to_string(data.size()));
      return Status::success();
    }
    if (buffer.name().empty())
      return Status::failure(where + " names no logical tensor");
    if (!buffer.part_of().empty() && buffer.part_size() != 3)
      return Status::failure(where + " is part of '" + buffer.part_of() +
                             "' but part has " +
                             std::to_string(buffer.part_size()) +
                             " entries, not [axis, offset, extent]");
    if (!std::isfinite(buffer.synthetic_center()))
      return Status::failure(where + " has a synthetic_center that is not a "
                                     "finite number");
    if (buffer.kind() == plan::Buffer::INPUT &&
        !isFloat(*toRuntimeDType(buffer.dtype())) && buffer.value_bound() <= 0)
      return Status::failure(where + " is an integer input without a "
                                     "positive value_bound");
    // Micro-batches slice the batch along dimension 0.
    if (buffer.kind() == plan::Buffer::INPUT && plan_.micro_batches() > 1 &&
        (buffer.logical_shape_size() == 0 ||
         buffer.logical_shape(0) > kMaxBufferElements / plan_.micro_batches()))
      return Status::failure(where + " is an input of logical shape " +
                             toString(toVector(buffer.logical_shape())) +
                             ", which " +
                             std::to_string(plan_.micro_batches()) +
                             " micro-batches cannot slice along dimension 0");
    return Status::success();
  }

  /// A buffer index of program `program` at `where`.
  Status checkIndex(const plan::Program &program, int64_t index,
                    const std::string &where) {
    if (index < 0 || index >= program.buffers_size())
      return Status::failure(
          where + " is buffer " + std::to_string(index) + ", not one of the " +
          std::to_string(program.buffers_size()) + " buffers");
    return Status::success();
  }

  Status checkKernel(const plan::Program &program, const plan::Kernel &kernel,
                     const std::string &where) {
    const KernelSignature *signature = lookupKernel(kernel.op());
    if (!signature)
      return Status::failure(where + ": no kernel for nn." + kernel.op());
    int operands = kernel.operands_size();
    if (signature->numOperands < 0 ? operands < 1
                                   : operands != signature->numOperands)
      return Status::failure(where + ": nn." + kernel.op() + " takes " +
                             (signature->numOperands < 0
                                  ? std::string("one or more")
                                  : std::to_string(signature->numOperands)) +
                             " operands, not " + std::to_string(operands));
    for (int i = 0; i < operands; ++i) {
      std::string field = where + " operands[" + std::to_string(i) + "]";
      if (kernel.operands(i) == -1) {
        if (signature->numOperands < 0 ||
            i < signature->numOperands - signature->numOptionalOperands)
          return Status::failure(field + " of nn." + kernel.op() +
                                 " is absent but not optional");
        continue;
      }
      if (Status status = checkIndex(program, kernel.operands(i), field);
          !status.ok())
        return status;
    }
    int results = kernel.results_size();
    if (signature->numResults < 0 ? results < 1
                                  : results != signature->numResults)
      return Status::failure(where + ": nn." + kernel.op() + " has " +
                             (signature->numResults < 0
                                  ? std::string("one or more")
                                  : std::to_string(signature->numResults)) +
                             " results, not " + std::to_string(results));
    for (int i = 0; i < results; ++i)
      if (Status status =
              checkIndex(program, kernel.results(i),
                         where + " results[" + std::to_string(i) + "]");
          !status.ok())
        return status;
    // A result written over an operand only where the kernel reads each
    // element before writing it (an optimizer stepping in place).
    for (int i = 0; i < results; ++i)
      for (int j = 0; j < operands; ++j)
        if (kernel.results(i) == kernel.operands(j) &&
            !(static_cast<size_t>(i) < signature->inPlaceOperand.size() &&
              signature->inPlaceOperand[static_cast<size_t>(i)] == j))
          return Status::failure(
              where + " results[" + std::to_string(i) + "] is operands[" +
              std::to_string(j) + "] (buffer " +
              std::to_string(kernel.results(i)) + "), which nn." + kernel.op() +
              " may not write in place");
    std::set<std::string> names;
    for (const plan::Attr &attr : kernel.attrs()) {
      if (!names.insert(attr.name()).second)
        return Status::failure(where + ": attribute '" + attr.name() +
                               "' appears twice");
      if (attr.value_case() == plan::Attr::VALUE_NOT_SET)
        return Status::failure(where + ": attribute '" + attr.name() +
                               "' has no value");
      if (attr.has_block_offset()) {
        const plan::BlockOffset &offset = attr.block_offset();
        Shape shape = toVector(offset.shape());
        std::string at = where + ": attribute '" + attr.name() + "'";
        for (int64_t size : shape)
          if (size < 0)
            return Status::failure(at + " has a negative shape " +
                                   toString(shape));
        if (Status status = checkSplits(toVector(offset.splits()), shape,
                                        meshOf(program), at);
            !status.ok())
          return status;
        if (offset.dim() < -1 ||
            offset.dim() >= static_cast<int64_t>(shape.size()))
          return Status::failure(at + " dim " + std::to_string(offset.dim()) +
                                 " is not -1 or a dimension of " +
                                 toString(shape));
      }
    }
    return Status::success();
  }

  Status checkCollective(const plan::Program &program,
                         const plan::Collective &collective,
                         const std::string &where) {
    std::string name = collectiveName(collective.kind());
    if (!plan::Collective::Kind_IsValid(collective.kind()))
      return Status::failure(where + " has an unknown collective kind (" +
                             std::to_string(collective.kind()) + ")");
    if (!plan::Reduction_IsValid(collective.reduce()))
      return Status::failure(where + " has an unknown reduce kind (" +
                             std::to_string(collective.reduce()) + ")");
    // The gradients stream carries a gradient's reduction: all-reduces,
    // broadcasts, and a hierarchical all-reduce's scatter and gather.
    if (collective.feeds_update() &&
        collective.kind() != plan::Collective::ALL_REDUCE &&
        collective.kind() != plan::Collective::REDUCE_SCATTER &&
        collective.kind() != plan::Collective::ALL_GATHER &&
        collective.kind() != plan::Collective::BROADCAST)
      return Status::failure(where + ": " + name +
                             " with feeds_update: only an all_reduce, a "
                             "reduce_scatter, an all_gather or a broadcast "
                             "runs on the gradients stream");
    auto found = groups_.find(collective.group());
    if (found == groups_.end())
      return Status::failure(where + ": " + name + " over group '" +
                             collective.group() + "', which the plan lacks");
    const plan::Group &group = *found->second;
    int64_t n = groupSize(group);
    bool exchangesParts =
        collective.kind() == plan::Collective::ALL_GATHER ||
        collective.kind() == plan::Collective::REDUCE_SCATTER ||
        collective.kind() == plan::Collective::ALL_TO_ALL;
    if (exchangesParts && group.devices_size() == 0)
      for (int64_t axis : group.mesh_axes())
        if (hasUnevenShares(meshView(plan_, group.mesh()).shares,
                            static_cast<size_t>(axis)))
          return Status::failure(
              where + ": " + name + " over group '" + group.name() +
              "' exchanges parts along mesh "
              "axis " +
              std::to_string(axis) + ", whose mesh_shares are uneven");
    std::vector<int64_t> ranks;
    if (Status status = memberRanks(program, group, ranks); !status.ok())
      return Status::failure(where + ": " + name + " over group '" +
                             group.name() + "', " + status.error);
    if (Status status =
            checkIndex(program, collective.input(), where + " input");
        !status.ok())
      return status;
    if (Status status =
            checkIndex(program, collective.output(), where + " output");
        !status.ok())
      return status;
    const plan::Buffer &in = program.buffers(collective.input());
    const plan::Buffer &out = program.buffers(collective.output());
    if (in.dtype() != out.dtype())
      return Status::failure(where + ": " + name +
                             " between buffers of different dtypes");
    Shape inShape = toVector(in.shape()), outShape = toVector(out.shape());
    std::string shapes = " (input " + toString(inShape) + ", output " +
                         toString(outShape) + ", group of " +
                         std::to_string(n) + ")";
    auto checkAxis = [&](int64_t axis, const char *field) {
      if (axis < 0 || axis >= static_cast<int64_t>(inShape.size()) ||
          inShape.size() != outShape.size())
        return Status::failure(where + ": " + name + " " + field + " " +
                               std::to_string(axis) +
                               " is not a dimension of both buffers" + shapes);
      return Status::success();
    };
    // Parts are balanced (Sbp.h balancedShard), as the slicing math cuts
    // them; member `me` holds or receives part `me`. Every rank the
    // program's devices hold in the group is checked.
    int64_t me = 0;
    auto part = [&](int64_t size) { return balancedShard(size, n, me).size; };
    auto mismatch = [&]() {
      return Status::failure(where + ": " + name +
                             " shapes do not agree with its group" + shapes);
    };
    auto checkRank = [&]() -> Status {
      switch (collective.kind()) {
      case plan::Collective::ALL_REDUCE:
      case plan::Collective::BROADCAST:
        if (collective.output() != collective.input())
          return Status::failure(
              where + ": " + name + " works in place, but output " +
              std::to_string(collective.output()) + " is not input " +
              std::to_string(collective.input()));
        if (collective.kind() == plan::Collective::BROADCAST &&
            (collective.root() < 0 || collective.root() >= n))
          return Status::failure(where + ": broadcast root " +
                                 std::to_string(collective.root()) +
                                 " is not a rank of group '" + group.name() +
                                 "' (" + std::to_string(n) + " devices)");
        return Status::success();
      case plan::Collective::ALL_GATHER:
      case plan::Collective::REDUCE_SCATTER: {
        if (Status status = checkAxis(collective.axis(), "axis"); !status.ok())
          return status;
        int64_t axis = collective.axis();
        bool gather = collective.kind() == plan::Collective::ALL_GATHER;
        const Shape &whole = gather ? outShape : inShape;
        const Shape &piece = gather ? inShape : outShape;
        for (size_t d = 0; d < whole.size(); ++d)
          if (static_cast<int64_t>(d) == axis ? piece[d] != part(whole[d])
                                              : piece[d] != whole[d])
            return mismatch();
        return Status::success();
      }
      case plan::Collective::ALL_TO_ALL: {
        if (Status status = checkAxis(collective.axis(), "axis"); !status.ok())
          return status;
        if (Status status = checkAxis(collective.concat_axis(), "concat_axis");
            !status.ok())
          return status;
        int64_t split = collective.axis(), concat = collective.concat_axis();
        if (split == concat)
          return Status::failure(where +
                                 ": all_to_all cuts and concatenates "
                                 "the same dimension " +
                                 std::to_string(split));
        for (int64_t d = 0; d < static_cast<int64_t>(inShape.size()); ++d) {
          bool ok = d == split    ? outShape[d] == part(inShape[d])
                    : d == concat ? inShape[d] == part(outShape[d])
                                  : inShape[d] == outShape[d];
          if (!ok)
            return mismatch();
        }
        return Status::success();
      }
      default:
        return Status::success();
      }
    };
    for (int64_t rank : ranks) {
      me = rank;
      if (Status status = checkRank(); !status.ok())
        return status;
    }
    return Status::success();
  }

  /// Members of `group`: its size.
  int64_t groupSize(const plan::Group &group) const {
    if (group.devices_size() != 0)
      return group.devices_size();
    const Shape &meshShape = meshes_.at(group.mesh()).shape;
    int64_t n = 1;
    for (int64_t axis : group.mesh_axes())
      n *= meshShape[static_cast<size_t>(axis)];
    return n;
  }

  /// The distinct ranks in `group` of the devices running `program`
  /// (memoized per program and group); fails if a device is no member.
  Status memberRanks(const plan::Program &program, const plan::Group &group,
                     std::vector<int64_t> &ranks) {
    auto key = std::make_pair(&program, &group);
    auto found = ranks_.find(key);
    if (found != ranks_.end()) {
      ranks = found->second;
      return Status::success();
    }
    std::set<int64_t> distinct;
    for (int64_t device : program.devices()) {
      int64_t rank = rankInGroup(group, meshes_.at(group.mesh()), device);
      if (rank < 0)
        return Status::failure("which does not contain device " +
                               std::to_string(device));
      distinct.insert(rank);
    }
    ranks.assign(distinct.begin(), distinct.end());
    ranks_.emplace(key, ranks);
    return Status::success();
  }

  /// Program `index`: its buffers, each instruction, the micro-batch
  /// split, the loss, the updates and the arena.
  Status checkProgram(int index) {
    const plan::Program &program = plan_.programs(index);
    std::string where = "program " + std::to_string(index);
    for (int b = 0; b < program.buffers_size(); ++b)
      if (Status status =
              checkBuffer(program, program.buffers(b),
                          where + " buffer " + std::to_string(b) + " '" +
                              program.buffers(b).name() + "'");
          !status.ok())
        return status;
    int64_t deviceBytes = 0;
    for (const plan::Buffer &buffer : program.buffers())
      deviceBytes += bufferBytes(buffer);
    if (program.arena_bytes() > 0)
      deviceBytes = program.arena_bytes();
    if (deviceBytes > kMaxDeviceBytes)
      return Status::failure(
          where + " holds " + std::to_string(deviceBytes) + " bytes " +
          (program.arena_bytes() > 0 ? "of arena" : "of buffers") +
          " per device, more than the " + std::to_string(kMaxDeviceBytes) +
          " (1 TiB) a plan may ask of a device");
    if (Status status = checkInstructions(index, where); !status.ok())
      return status;
    if (Status status = checkUpdateBegin(program, where); !status.ok())
      return status;
    if (Status status = checkLossAndUpdates(program, where); !status.ok())
      return status;
    return checkArena(program, where);
  }

  Status checkInstructions(int index, const std::string &where) {
    const plan::Program &program = plan_.programs(index);
    for (int i = 0; i < program.instructions_size(); ++i) {
      const plan::Instruction &instruction = program.instructions(i);
      std::string at = where + " instruction " + std::to_string(i);
      Status status;
      switch (instruction.op_case()) {
      case plan::Instruction::kKernel:
        status = checkKernel(program, instruction.kernel(), at);
        break;
      case plan::Instruction::kCollective:
        status = checkCollective(program, instruction.collective(), at);
        break;
      case plan::Instruction::kSend:
      case plan::Instruction::kRecv:
        status = checkPointToPoint(index, instruction, at);
        break;
      case plan::Instruction::kCrossMeshSend:
        status = checkCrossMeshPart(program, instruction.cross_mesh_send(),
                                    false, at);
        break;
      case plan::Instruction::kCrossMeshRecv:
        status = checkCrossMeshPart(program, instruction.cross_mesh_recv(),
                                    true, at);
        break;
      case plan::Instruction::OP_NOT_SET:
        status = Status::failure(at + " is empty (no kernel, collective, "
                                      "send, recv or cross-mesh part)");
        break;
      }
      if (!status.ok())
        return status;
    }
    return Status::success();
  }

  /// A send or a recv: a buffer of the program, another device as the
  /// peer, a tag MPI takes; the message is matched with its other end in
  /// checkMessages.
  Status checkPointToPoint(int index, const plan::Instruction &instruction,
                           const std::string &at) {
    const plan::Program &program = plan_.programs(index);
    bool send = instruction.op_case() == plan::Instruction::kSend;
    int64_t buffer =
        send ? instruction.send().buffer() : instruction.recv().buffer();
    int64_t peer = send ? instruction.send().peer() : instruction.recv().peer();
    int64_t tag = send ? instruction.send().tag() : instruction.recv().tag();
    const char *what = send ? "send" : "recv";
    if (Status status =
            checkIndex(program, buffer, at + " " + what + " buffer");
        !status.ok())
      return status;
    if (peer < 0 || peer >= static_cast<int64_t>(owner_.size()) ||
        owner_[peer] == index)
      return Status::failure(at + ": " + what + " peer " +
                             std::to_string(peer) + " is not another device");
    if (tag < 0 || tag > INT32_MAX)
      return Status::failure(at + ": " + what + " tag " + std::to_string(tag) +
                             " is out of range");
    const plan::Buffer &data = program.buffers(buffer);
    Message message{data.dtype(), toVector(data.shape())};
    for (int64_t device : program.devices()) {
      if (send)
        sends_[{device, peer, tag}].push_back(message);
      else
        recvs_[{peer, device, tag}].push_back(message);
    }
    return Status::success();
  }

  /// With micro-batches: update_begin an instruction index, and no
  /// parameter or state written before it.
  Status checkUpdateBegin(const plan::Program &program,
                          const std::string &where) {
    if (plan_.micro_batches() <= 1) {
      if (program.forward_begin() != 0)
        return Status::failure(where + " forward_begin " +
                               std::to_string(program.forward_begin()) +
                               " without micro-batches (a step of one runs "
                               "everything once)");
      return Status::success();
    }
    if (program.update_begin() < 0 ||
        program.update_begin() > program.instructions_size())
      return Status::failure(where + " update_begin " +
                             std::to_string(program.update_begin()) +
                             " is not an instruction index (0 to " +
                             std::to_string(program.instructions_size()) + ")");
    // The once-per-step part before the micro-batches ends where a
    // micro-batch's forward begins.
    if (program.forward_begin() < 0 ||
        program.forward_begin() > backwardBeginOf(program))
      return Status::failure(where + " forward_begin " +
                             std::to_string(program.forward_begin()) +
                             " is not an instruction index before the "
                             "backward (0 to " +
                             std::to_string(backwardBeginOf(program)) + ")");
    // A parameter written in place before update_begin would be updated
    // once per micro-batch: by a kernel, a collective or a message alike.
    std::vector<int64_t> reads, writes;
    for (int i = 0; i < program.update_begin(); ++i) {
      instructionBuffers(program.instructions(i), reads, writes);
      for (int64_t result : writes) {
        if (result < 0 || result >= program.buffers_size())
          continue; // checkInstructions names it
        plan::Buffer::Kind kind = program.buffers(result).kind();
        if (kind == plan::Buffer::PARAMETER || kind == plan::Buffer::STATE)
          return Status::failure(
              where + " instruction " + std::to_string(i) + " writes " +
              (kind == plan::Buffer::PARAMETER ? "parameter" : "state") +
              " buffer " + std::to_string(result) + " '" +
              program.buffers(result).name() +
              "' once per micro-batch (before update_begin " +
              std::to_string(program.update_begin()) + ")");
      }
    }
    return Status::success();
  }

  /// The loss a float scalar; each update from a buffer of the target's
  /// shape and type into a parameter or state.
  Status checkLossAndUpdates(const plan::Program &program,
                             const std::string &where) {
    if (program.loss() != -1) {
      if (Status status = checkIndex(program, program.loss(), where + " loss");
          !status.ok())
        return status;
      const plan::Buffer &loss = program.buffers(program.loss());
      if (!isFloat(*toRuntimeDType(loss.dtype())) ||
          numElements(toVector(loss.shape())) != 1)
        return Status::failure(where + " loss buffer " +
                               std::to_string(program.loss()) +
                               " is not a float scalar");
    }
    for (int u = 0; u < program.updates_size(); ++u) {
      const plan::Update &update = program.updates(u);
      std::string at = where + " updates[" + std::to_string(u) + "]";
      if (Status status = checkIndex(program, update.target(), at + " target");
          !status.ok())
        return status;
      if (Status status = checkIndex(program, update.source(), at + " source");
          !status.ok())
        return status;
      const plan::Buffer &target = program.buffers(update.target());
      const plan::Buffer &source = program.buffers(update.source());
      if (target.kind() != plan::Buffer::PARAMETER &&
          target.kind() != plan::Buffer::STATE)
        return Status::failure(at + ": target buffer " +
                               std::to_string(update.target()) +
                               " is neither a parameter nor state");
      if (target.dtype() != source.dtype() ||
          toVector(target.shape()) != toVector(source.shape()))
        return Status::failure(
            at + ": target buffer " + std::to_string(update.target()) + " " +
            toString(toVector(target.shape())) + " and source buffer " +
            std::to_string(update.source()) + " " +
            toString(toVector(source.shape())) + " differ in shape or dtype");
    }
    return Status::success();
  }

  /// Arena offsets (plan-memory), where a program has any: every buffer
  /// inside arena_bytes, buffers that live across steps (all but
  /// temporaries) alone in their bytes, and temporaries sharing bytes only
  /// when one's last use comes before the other's first, or when one is a
  /// reshape's view of the other (the reshape's operand and result are
  /// temporaries of one size at one offset: they count as one buffer over
  /// both lives). A backend that places buffers by these offsets (the CUDA
  /// one) trusts this: a wrong offset would give wrong numbers, not an
  /// error.
  Status checkArena(const plan::Program &program, const std::string &where) {
    int64_t count = program.buffers_size();
    bool planned = false;
    for (const plan::Buffer &buffer : program.buffers())
      planned = planned || buffer.arena_offset() >= 0;
    if (!planned)
      return Status::success();
    // First and last instruction that touches each buffer; an update's
    // source is read after the last instruction.
    std::vector<int64_t> first(count, INT64_MAX), last(count, -1);
    std::vector<int64_t> reads, writes;
    int64_t steps = program.instructions_size();
    for (int64_t i = 0; i < steps; ++i) {
      instructionBuffers(program.instructions(i), reads, writes);
      for (const std::vector<int64_t> *list : {&reads, &writes})
        for (int64_t b : *list) {
          first[b] = std::min(first[b], i);
          last[b] = std::max(last[b], i);
        }
    }
    // What the step leaves behind is read after its last instruction.
    auto readAtEnd = [&](int64_t b) {
      first[b] = std::min(first[b], steps);
      last[b] = steps;
    };
    for (const plan::Update &update : program.updates())
      readAtEnd(update.source());
    if (program.loss() >= 0)
      readAtEnd(program.loss());
    for (int64_t b = 0; b < count; ++b) {
      const plan::Buffer &buffer = program.buffers(b);
      int64_t bytes = bufferBytes(buffer);
      std::string at = where + " buffer " + std::to_string(b);
      if (buffer.arena_offset() < 0)
        return Status::failure(at + " has no arena offset, but others do");
      if (buffer.arena_offset() > program.arena_bytes() - bytes)
        return Status::failure(
            at + " at arena offset " + std::to_string(buffer.arena_offset()) +
            " (" + std::to_string(bytes) + " bytes) ends beyond arena_bytes " +
            std::to_string(program.arena_bytes()));
    }
    auto temporary = [&](int64_t b) {
      return program.buffers(b).kind() == plan::Buffer::TEMPORARY;
    };
    // Reshape views: each joins its operand's group, whose root stands for
    // the group over the union of the lives. A view's result is untouched
    // before its reshape, as plan-memory makes them, so it was no one's
    // operand yet: a root never joins another group, and viewOf is one
    // step.
    std::vector<int64_t> viewOf(count, -1);
    auto root = [&](int64_t b) { return viewOf[b] >= 0 ? viewOf[b] : b; };
    // Where each group was first joined: a write to the group's bytes after
    // it would change a view's value behind its reader, but for the
    // reshape that made each view (joinedAt).
    std::vector<int64_t> joined(count, -1), joinedAt(count, -1);
    for (int64_t i = 0; i < steps; ++i) {
      const plan::Instruction &instruction = program.instructions(i);
      if (!instruction.has_kernel() || instruction.kernel().op() != "reshape" ||
          instruction.kernel().operands_size() != 1 ||
          instruction.kernel().results_size() != 1)
        continue;
      int64_t from = instruction.kernel().operands(0),
              to = instruction.kernel().results(0);
      if (from < 0 || from >= count || to < 0 || to >= count || from == to ||
          !temporary(from) || !temporary(to) ||
          program.buffers(from).arena_offset() !=
              program.buffers(to).arena_offset() ||
          bufferBytes(program.buffers(from)) !=
              bufferBytes(program.buffers(to)) ||
          first[to] != i)
        continue;
      int64_t group = root(from);
      viewOf[to] = group;
      joinedAt[to] = i;
      if (joined[group] < 0)
        joined[group] = i;
      first[group] = std::min(first[group], first[to]);
      last[group] = std::max(last[group], last[to]);
    }
    for (int64_t i = 0; i < steps; ++i) {
      const plan::Instruction &instruction = program.instructions(i);
      instructionBuffers(instruction, reads, writes);
      for (int64_t b : writes) {
        int64_t group = root(b);
        if (joined[group] >= 0 && i > joined[group] && joinedAt[b] != i)
          return Status::failure(where + ": instruction " + std::to_string(i) +
                                 " writes buffer " + std::to_string(b) +
                                 ", which shares its arena bytes with a " +
                                 "reshape's view made at instruction " +
                                 std::to_string(joined[group]));
      }
    }
    return checkLiveBytes(program, where, first, last, viewOf);
  }

  /// A sweep over time: the buffers live at a moment (`first` to `last`,
  /// reshape views counted in their group's root) must have pairwise
  /// disjoint bytes, so each newly live buffer is checked against its
  /// neighbours by offset among the live ones (O(n log n), where listing
  /// every pair that shares bytes is quadratic). A buffer that lives
  /// across steps is live throughout; a temporary no instruction touches,
  /// never.
  Status checkLiveBytes(const plan::Program &program, const std::string &where,
                        std::vector<int64_t> &first, std::vector<int64_t> &last,
                        const std::vector<int64_t> &viewOf) {
    int64_t count = program.buffers_size();
    int64_t steps = program.instructions_size();
    auto temporary = [&](int64_t b) {
      return program.buffers(b).kind() == plan::Buffer::TEMPORARY;
    };
    struct Event {
      int64_t time, buffer;
      bool operator<(const Event &other) const {
        return time != other.time ? time < other.time : buffer < other.buffer;
      }
    };
    std::vector<Event> starts, ends;
    for (int64_t b = 0; b < count; ++b) {
      if (bufferBytes(program.buffers(b)) == 0 || viewOf[b] >= 0)
        continue;
      if (!temporary(b)) {
        first[b] = -1;
        last[b] = steps + 1;
      } else if (last[b] < 0) {
        continue;
      }
      starts.push_back({first[b], b});
      ends.push_back({last[b], b});
    }
    std::sort(starts.begin(), starts.end());
    std::sort(ends.begin(), ends.end());
    auto conflict = [&](int64_t a, int64_t b) {
      if (a > b)
        std::swap(a, b);
      const plan::Buffer &x = program.buffers(a), &y = program.buffers(b);
      int64_t begin = std::max(x.arena_offset(), y.arena_offset());
      int64_t end = std::min(x.arena_offset() + bufferBytes(x),
                             y.arena_offset() + bufferBytes(y));
      std::string shared =
          "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
      if (!temporary(a) || !temporary(b))
        return Status::failure(
            where + ": buffers " + std::to_string(a) + " and " +
            std::to_string(b) + " share arena bytes " + shared +
            ", but buffer " + std::to_string(temporary(a) ? b : a) +
            " lives across steps");
      return Status::failure(
          where + ": buffers " + std::to_string(a) + " and " +
          std::to_string(b) + " share arena bytes " + shared +
          " while both are live (instructions " + std::to_string(first[a]) +
          " to " + std::to_string(last[a]) + " and " +
          std::to_string(first[b]) + " to " + std::to_string(last[b]) + ")");
    };
    // Live buffers by arena offset.
    std::map<int64_t, int64_t> live;
    size_t ended = 0;
    for (const Event &start : starts) {
      for (; ended < ends.size() && ends[ended].time < start.time; ++ended) {
        auto found =
            live.find(program.buffers(ends[ended].buffer).arena_offset());
        if (found != live.end() && found->second == ends[ended].buffer)
          live.erase(found);
      }
      int64_t b = start.buffer;
      int64_t offset = program.buffers(b).arena_offset();
      int64_t end = offset + bufferBytes(program.buffers(b));
      auto next = live.lower_bound(offset);
      if (next != live.end() && next->first < end)
        return conflict(b, next->second);
      if (next != live.begin()) {
        auto previous = std::prev(next);
        if (previous->first + bufferBytes(program.buffers(previous->second)) >
            offset)
          return conflict(b, previous->second);
      }
      live.emplace(offset, b);
    }
    return Status::success();
  }

  /// Every send has a receive of the same type and shape, in the same
  /// order for the same (sender, receiver, tag).
  Status checkMessages() {
    for (const auto &[key, messages] : sends_) {
      auto found = recvs_.find(key);
      if (found == recvs_.end() || found->second != messages)
        return Status::failure(
            "device " + std::to_string(std::get<0>(key)) + " sends " +
            std::to_string(messages.size()) + " message(s) with tag " +
            std::to_string(std::get<2>(key)) + " to device " +
            std::to_string(std::get<1>(key)) +
            " that it does not receive alike");
    }
    for (const auto &[key, messages] : recvs_)
      if (!sends_.count(key))
        return Status::failure(
            "device " + std::to_string(std::get<1>(key)) +
            " receives a message with tag " + std::to_string(std::get<2>(key)) +
            " from device " + std::to_string(std::get<0>(key)) +
            " that it never sends");
    // Every device a move's transfers name runs its part as often as the
    // others.
    for (size_t m = 0; m < moves_.size(); ++m) {
      const MoveTable &checked = moves_[m];
      const plan::CrossMeshMove &move =
          plan_.cross_mesh_moves(static_cast<int>(m));
      std::optional<std::pair<int64_t, int64_t>> first;
      for (size_t device = 0; device < checked.transfersOf.size(); ++device) {
        if (checked.transfersOf[device].empty())
          continue;
        int64_t runs = checked.runs[device];
        if (runs == 0)
          return Status::failure("device " + std::to_string(device) +
                                 " takes part in move '" + move.name() +
                                 "' (cross_mesh_moves[" + std::to_string(m) +
                                 "]), but its program runs no part of it");
        if (!first)
          first.emplace(static_cast<int64_t>(device), runs);
        else if (first->second != runs)
          return Status::failure(
              "device " + std::to_string(device) + " runs its part of move '" +
              move.name() + "' " + std::to_string(runs) +
              " time(s), but device " + std::to_string(first->first) + " " +
              std::to_string(first->second));
      }
    }
    return Status::success();
  }

  /// A schedule runs a stage's forwards and backwards of different
  /// micro-batches in its own order, so messages between stages can only
  /// match if each pair of stages talks one way per pass: forwards to the
  /// same or later stages, backwards to the same or earlier ones (a
  /// broadcast from its root). Collectives spanning stages other than
  /// broadcasts would need every stage at them at once.
  Status checkSchedule() {
    if (Status status = checkChunks(); !status.ok())
      return status;
    if (plan_.schedule().empty() || plan_.schedule() == "sequential")
      return Status::success();
    std::optional<schedule::PipelineSchedule> schedule =
        schedule::parsePipelineSchedule(plan_.schedule());
    if (!schedule)
      return Status::failure("plan schedule '" + plan_.schedule() +
                             "' is unknown to the executor; it runs " +
                             executorScheduleList());
    // One micro-batch runs its forward and backward in turn whatever the
    // schedule.
    if (plan_.micro_batches() <= 1)
      return Status::success();
    if (std::optional<std::string> why =
            schedule::checkScheduleChunks(plan_.schedule(), chunks_))
      return Status::failure("plan " + *why);
    if (std::optional<std::string> why = schedule::checkPipeline(
            *schedule,
            {std::max(1, plan_.meshes_size()), plan_.micro_batches(), chunks_}))
      return Status::failure("plan schedule '" + plan_.schedule() +
                             "': " + *why);
    if (chunks_ > 1)
      return checkChunkDirections();
    std::vector<int64_t> programStages;
    for (const plan::Program &program : plan_.programs())
      programStages.push_back(programStage(plan_, program));
    std::vector<int64_t> stage(owner_.size(), 0);
    for (size_t device = 0; device < owner_.size(); ++device)
      stage[device] = programStages[static_cast<size_t>(owner_[device])];
    for (int p = 0; p < plan_.programs_size(); ++p) {
      const plan::Program &program = plan_.programs(p);
      std::string where = "program " + std::to_string(p);
      int64_t perMicroBatch = program.update_begin();
      int64_t backwardBegin = backwardBeginOf(program);
      if (program.mesh().empty() && plan_.meshes_size() > 0)
        return Status::failure(
            where + " names no mesh, but a schedule runs the plan's meshes "
                    "as its stages");
      if (backwardBegin < 0 || backwardBegin > perMicroBatch)
        return Status::failure(
            where + " backward_begin " + std::to_string(backwardBegin) +
            " is not an instruction index of the micro-batch (0 to " +
            std::to_string(perMicroBatch) + ")");
      int64_t own = stage[static_cast<size_t>(program.devices(0))];
      for (int i = 0; i < perMicroBatch; ++i) {
        const plan::Instruction &instruction = program.instructions(i);
        bool forward = i < backwardBegin;
        // The stages a message of this instruction comes from and goes to.
        int64_t from = own, to = own;
        std::string what;
        if (instruction.has_send()) {
          to = stage[static_cast<size_t>(instruction.send().peer())];
          what = "sends to device " + std::to_string(instruction.send().peer());
        } else if (instruction.has_recv()) {
          from = stage[static_cast<size_t>(instruction.recv().peer())];
          what = "receives from device " +
                 std::to_string(instruction.recv().peer());
        } else if (const plan::CrossMeshPart *part =
                       CrossMeshParts::partOf(instruction)) {
          const plan::CrossMeshMove &move =
              plan_.cross_mesh_moves(static_cast<int>(part->move()));
          from = meshStage(move.source_mesh());
          to = meshStage(move.destination_mesh());
          what = "takes part in move '" + move.name() + "'";
        } else if (instruction.has_collective()) {
          const plan::Collective &collective = instruction.collective();
          const plan::Group &group = *groups_.at(collective.group());
          if (group.devices_size() == 0)
            continue; // Over axes of the program's mesh: one stage.
          std::set<int64_t> stages;
          for (int64_t device : group.devices())
            stages.insert(stage[static_cast<size_t>(device)]);
          if (stages.size() == 1)
            continue;
          if (collective.kind() != plan::Collective::BROADCAST)
            return Status::failure(
                where + " instruction " + std::to_string(i) + " runs " +
                collectiveName(collective.kind()) + " over '" +
                collective.group() +
                "', whose devices are on several stages: with a schedule, "
                "only a broadcast may cross stages");
          int64_t root = group.devices(static_cast<int>(collective.root()));
          from = stage[static_cast<size_t>(root)];
          to = from == own ? (forward ? *stages.rbegin() : *stages.begin())
                           : own;
          what = "is at a broadcast from device " + std::to_string(root) +
                 " over '" + collective.group() + "'";
        } else {
          continue;
        }
        if (forward ? from > to : from < to)
          return Status::failure(
              where + " instruction " + std::to_string(i) + " (stage " +
              std::to_string(own) + ") " + what + " from stage " +
              std::to_string(from) + " to stage " + std::to_string(to) +
              " in a micro-batch's " + (forward ? "forward" : "backward") +
              ": with a schedule, forwards go to later stages and backwards "
              "to earlier ones (stages placed against the layer order? "
              "compile with --schedule sequential)");
      }
    }
    return Status::success();
  }

  /// Model chunks (the programs' forward_chunks and backward_chunks): every
  /// program of a plan of micro-batches marks the same number V, 0 or V >
  /// 1, the forward's in order from forward_begin up to backward_begin and
  /// the backward's in reverse from backward_begin up to update_begin; and
  /// no temporary used by two chunks (a schedule runs the chunks of a
  /// micro-batch at different times, each keeping only what its own
  /// backward reads).
  Status checkChunks() {
    chunks_ = 1;
    std::optional<int> marked;
    for (int p = 0; p < plan_.programs_size(); ++p) {
      const plan::Program &program = plan_.programs(p);
      std::string where = "program " + std::to_string(p);
      int forward = program.forward_chunks_size();
      int backward = program.backward_chunks_size();
      if (forward != backward || forward == 1)
        return Status::failure(
            where + " marks " + std::to_string(forward) + " forward and " +
            std::to_string(backward) +
            " backward chunks; a program of chunks marks V > 1 of each");
      if (marked && *marked != forward)
        return Status::failure(where + " marks " + std::to_string(forward) +
                               " chunks, another program " +
                               std::to_string(*marked));
      marked = forward;
      if (forward == 0)
        continue;
      if (plan_.micro_batches() <= 1 || !program.has_backward_begin())
        return Status::failure(where +
                               " marks chunks without micro-batches and a "
                               "backward_begin");
      int64_t backwardBegin = program.backward_begin();
      int64_t updateBegin = program.update_begin();
      bool ordered = program.forward_chunks(0) == program.forward_begin() &&
                     program.backward_chunks(forward - 1) == backwardBegin &&
                     program.forward_chunks(forward - 1) <= backwardBegin &&
                     program.backward_chunks(0) <= updateBegin;
      for (int c = 1; c < forward && ordered; ++c)
        ordered = program.forward_chunks(c - 1) <= program.forward_chunks(c) &&
                  program.backward_chunks(c - 1) >= program.backward_chunks(c);
      if (!ordered)
        return Status::failure(
            where + " forward_chunks " +
            toString(toVector(program.forward_chunks())) +
            " and backward_chunks " +
            toString(toVector(program.backward_chunks())) +
            " are not the forward's chunks in order from 0 and the "
            "backward's in reverse from backward_begin " +
            std::to_string(backwardBegin) + " to update_begin " +
            std::to_string(updateBegin));
      // Each temporary belongs to the one chunk whose passes use it.
      ChunkRanges ranges = chunkRanges(program, updateBegin);
      std::vector<int> user(static_cast<size_t>(program.buffers_size()), -1);
      std::vector<int64_t> reads, writes;
      // What the once-per-step part before the micro-batches writes lives
      // for the whole step: any chunk may read it.
      constexpr int kWholeStep = -2;
      for (int64_t i = 0; i < program.forward_begin(); ++i) {
        instructionBuffers(program.instructions(static_cast<int>(i)), reads,
                           writes);
        for (int64_t b : writes)
          user[static_cast<size_t>(b)] = kWholeStep;
      }
      for (int c = 0; c < forward; ++c)
        for (const auto &range : {ranges.forward[c], ranges.backward[c]})
          for (int64_t i = range.first; i < range.second; ++i) {
            instructionBuffers(program.instructions(static_cast<int>(i)), reads,
                               writes);
            reads.insert(reads.end(), writes.begin(), writes.end());
            for (int64_t b : reads) {
              if (program.buffers(static_cast<int>(b)).kind() !=
                  plan::Buffer::TEMPORARY)
                continue;
              int &owner = user[static_cast<size_t>(b)];
              if (owner == kWholeStep)
                continue;
              if (owner < 0)
                owner = c;
              if (owner != c)
                return Status::failure(
                    where + " instruction " + std::to_string(i) + " of chunk " +
                    std::to_string(c) + " uses buffer " + std::to_string(b) +
                    ", which chunk " + std::to_string(owner) +
                    " uses too: a schedule runs a micro-batch's chunks at "
                    "different times, so a temporary is one chunk's");
            }
          }
    }
    chunks_ = marked && *marked > 0 ? *marked : 1;
    return Status::success();
  }

  /// On stages of chunks, a move goes the way of its pass by virtual stage
  /// (chunk x stages + stage): a forward's to a later one, a backward's to
  /// an earlier one; nothing else crosses stages.
  Status checkChunkDirections() {
    auto stages = static_cast<int64_t>(std::max(1, plan_.meshes_size()));
    // Per move: the virtual stage and pass of its sending and receiving
    // parts.
    struct Side {
      int64_t virtualStage = -1;
      bool forward = true;
    };
    std::map<int64_t, std::pair<Side, Side>> sides;
    for (int p = 0; p < plan_.programs_size(); ++p) {
      const plan::Program &program = plan_.programs(p);
      int64_t stage = programStage(plan_, program);
      ChunkRanges ranges = chunkRanges(program, program.update_begin());
      for (int c = 0; c < static_cast<int>(ranges.forward.size()); ++c)
        for (bool forward : {true, false}) {
          auto [begin, end] = forward ? ranges.forward[c] : ranges.backward[c];
          for (int64_t i = begin; i < end; ++i) {
            const plan::Instruction &instruction =
                program.instructions(static_cast<int>(i));
            std::string at = "program " + std::to_string(p) + " instruction " +
                             std::to_string(i);
            if (instruction.has_send() || instruction.has_recv() ||
                instruction.has_collective()) {
              const std::string *group = instruction.has_collective()
                                             ? &instruction.collective().group()
                                             : nullptr;
              if (!group || groups_.at(*group)->devices_size() != 0)
                return Status::failure(
                    at + ": on stages of chunks, stages exchange data by "
                         "cross-mesh moves only");
              continue;
            }
            const plan::CrossMeshPart *part =
                CrossMeshParts::partOf(instruction);
            if (!part)
              continue;
            auto &pair = sides[part->move()];
            Side &side =
                instruction.has_cross_mesh_send() ? pair.first : pair.second;
            side = {c * stages + stage, forward};
          }
        }
    }
    for (const auto &[move, pair] : sides) {
      const auto &[send, recv] = pair;
      const plan::CrossMeshMove &table =
          plan_.cross_mesh_moves(static_cast<int>(move));
      if (send.virtualStage < 0 || recv.virtualStage < 0)
        continue;
      bool onward = send.virtualStage < recv.virtualStage;
      if (send.forward != recv.forward || send.forward != onward)
        return Status::failure(
            "move '" + table.name() + "' goes from virtual stage " +
            std::to_string(send.virtualStage) + " (" +
            (send.forward ? "forward" : "backward") + ") to virtual stage " +
            std::to_string(recv.virtualStage) + " (" +
            (recv.forward ? "forward" : "backward") +
            "): on stages of chunks, forwards go to later virtual stages and "
            "backwards to earlier ones");
    }
    return Status::success();
  }

  /// The stage a named mesh is: its position among the plan's meshes.
  int64_t meshStage(const std::string &name) const {
    for (int m = 0; m < plan_.meshes_size(); ++m)
      if (plan_.meshes(m).name() == name)
        return m;
    return 0;
  }

  std::vector<MoveTable> moves_;
  /// The model chunks of each stage (checkChunks).
  int64_t chunks_ = 1;

  struct Message {
    int dtype;
    Shape shape;
    bool operator==(const Message &other) const {
      return dtype == other.dtype && shape == other.shape;
    }
    bool operator!=(const Message &other) const { return !(*this == other); }
  };
  using MessageKey = std::tuple<int64_t, int64_t, int64_t>;

  const plan::Plan &plan_;
  std::map<std::string, const plan::Group *> groups_;
  Shape meshShape_;
  /// The named meshes and, as "", mesh_shape.
  std::map<std::string, PlacedMesh> meshes_;
  /// The program each device runs.
  std::vector<int> owner_;
  std::map<std::pair<const plan::Program *, const plan::Group *>,
           std::vector<int64_t>>
      ranks_;
  std::map<MessageKey, std::vector<Message>> sends_, recvs_;
};

} // namespace

Status checkPlan(const plan::Plan &planMessage) {
  Status status = PlanChecker(planMessage).check();
  status.error = oneLine(status.error);
  return status;
}

} // namespace parplan::runtime
