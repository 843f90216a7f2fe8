//===- LowerCrossMeshToPlan.cpp - a move between meshes on one device -----===//
//
// PlanLoweringOpInterface for sbp.cross_mesh (the lower-cross-mesh step of
// lower-to-plan). The move is planned again with the mode and balancing
// insert-cross-mesh recorded, by the planner that priced it
// (cost::planCrossMesh, deterministic), once for all the devices taking
// part (CrossMeshMoves), and each device emits its part of
// the schedule in the schedule's order: a holder slices the tile out of
// its block; a transfer to one receiver is a send and a recv, to several a
// broadcast from the sender over a group of the sender and its receivers;
// a receiver that forwards a tile sends what it received. Every device of
// both meshes follows the one order, so the lowest transfer not yet done
// can always proceed. A destination block is the sum of its tiles, each
// padded with zeros to the block (tiles do not overlap). The peers differ
// from device to device: each device gets its own program.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/DeviceLowering.h"

#include "parplan/Cost/CrossMesh.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Transforms/ShardingCostModel.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace parplan;

namespace {

/// `a - b`, elementwise.
SmallVector<int64_t> minus(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  SmallVector<int64_t> result;
  for (auto [x, y] : llvm::zip(a, b))
    result.push_back(x - y);
  return result;
}

} // namespace

const CrossMeshMoves::Move *CrossMeshMoves::plan(Operation *op) {
  std::unique_ptr<Move> &planned = moves[op];
  if (planned)
    return planned.get();
  auto move = cast<sbp::CrossMeshOp>(op);
  std::optional<cost::CrossMeshMode> mode = cost::parseCrossMeshMode(
      move.getMode() ? move.getMode()->str() : "broadcast");
  std::optional<cost::CrossMeshBalancing> balancing =
      cost::parseCrossMeshBalancing(
          move.getBalancing() ? move.getBalancing()->str() : "by-bytes");
  if (!mode || !balancing) {
    move.emitError()
        << "lower-to-plan: unknown "
        << (!mode
                ? "mode '" + move.getMode()->str() + "' (expected " +
                      llvm::join(cost::crossMeshModeNames(), ", ") + ")"
                : "balancing '" + move.getBalancing()->str() + "' (expected " +
                      llvm::join(cost::crossMeshBalancingNames(), ", ") + ")");
    return nullptr;
  }
  auto type = cast<RankedTensorType>(move.getType());
  auto result = std::make_unique<Move>();
  cost::CrossMeshProblem &problem = result->problem;
  problem.shape = DeviceLowering::shapeOf(type);
  problem.elementBytes =
      std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  problem.source =
      deviceMeshOf(SymbolTable::lookupNearestSymbolFrom<sbp::MeshOp>(
          move, move.getSrcMeshAttr()));
  problem.destination =
      deviceMeshOf(SymbolTable::lookupNearestSymbolFrom<sbp::MeshOp>(
          move, move.getDstMeshAttr()));
  problem.sourceLayout = sbp::toNdSbp(move.getSrc());
  problem.destinationLayout = sbp::toNdSbp(move.getDst());
  if (std::optional<std::string> why = cost::checkCrossMesh(problem, cluster)) {
    move.emitError() << "lower-to-plan: " << *why;
    return nullptr;
  }
  result->tiles = cost::crossMeshTiles(problem);
  cost::MeshPlacement placement = cost::placeCrossMesh(problem, cluster);
  auto [found, inserted] = schedules.try_emplace(
      placement.key + cost::toString(*mode) + cost::toString(*balancing));
  if (inserted)
    found->second = cost::shiftSchedule(
        cost::planCrossMesh(problem, cluster, *mode, *balancing),
        -placement.deviceShift, -placement.nodeShift);
  result->schedule = cost::shiftSchedule(found->second, placement.deviceShift,
                                         placement.nodeShift);
  for (auto [index, transfer] : llvm::enumerate(result->schedule.transfers)) {
    result->transfersOf[transfer.sender].push_back(index);
    for (int64_t receiver : transfer.receivers)
      if (receiver != transfer.sender)
        result->transfersOf[receiver].push_back(index);
  }
  planned = std::move(result);
  return planned.get();
}

namespace {

struct CrossMeshPlanLowering
    : public PlanLoweringOpInterface::ExternalModel<CrossMeshPlanLowering,
                                                    sbp::CrossMeshOp> {
  LogicalResult lowerToDevice(Operation *op, DeviceLowering &lowering) const {
    auto move = cast<sbp::CrossMeshOp>(op);
    CrossMeshMoves *moves = lowering.getCrossMeshMoves();
    if (!moves)
      return move.emitError() << "lower-to-plan: no cluster to plan the "
                                 "move on";
    const CrossMeshMoves::Move *planned = moves->plan(move);
    if (!planned)
      return failure();
    const cost::CrossMeshProblem &problem = planned->problem;
    const std::vector<cost::CrossMeshTile> &tiles = planned->tiles;
    const cost::CrossMeshSchedule &schedule = planned->schedule;
    auto type = cast<RankedTensorType>(move.getType());

    bool sending = lowering.getMesh() == move.getSrcMeshAttr();
    const NdSbp &layout =
        sending ? problem.sourceLayout : problem.destinationLayout;
    Slice block = deviceSlice(problem.shape, lowering.getMeshShape(), layout,
                              lowering.getCoordinate());
    lowering.requireOwnProgram();
    OpBuilder &b = lowering.getBuilder();
    Location loc = move.getLoc();
    Type element = type.getElementType();
    int64_t me = lowering.getDevice();
    auto steps = [&](size_t rank) {
      return b.getNamedAttr(
          "steps", b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 1)));
    };
    // The buffer of every tile the device has, and the tiles it received.
    std::map<int64_t, Value> held;
    std::vector<int64_t> received;
    auto mine = planned->transfersOf.find(me);
    for (size_t index : mine == planned->transfersOf.end()
                            ? ArrayRef<size_t>()
                            : ArrayRef<size_t>(mine->second)) {
      const cost::CrossMeshTransfer &transfer = schedule.transfers[index];
      const cost::CrossMeshTile &tile =
          tiles[static_cast<size_t>(transfer.tile)];
      auto tag = static_cast<int64_t>(index);
      bool sender = transfer.sender == me;
      auto position = llvm::find(transfer.receivers, me);
      bool receiver = position != transfer.receivers.end();
      if (!sender && !receiver)
        continue;
      auto tileType = MemRefType::get(tile.region.sizes, element);
      Value buffer;
      if (sender) {
        auto found = held.find(transfer.tile);
        if (found == held.end()) {
          // A holder: the tile out of its block, or the block itself.
          Value whole = lowering.lookup(move.getInput());
          buffer = tile.region == block
                       ? whole
                       : lowering.kernel(
                             loc, "slice", whole, tileType,
                             b.getDictionaryAttr(
                                 {b.getNamedAttr(
                                      "starts",
                                      b.getDenseI64ArrayAttr(minus(
                                          tile.region.offsets, block.offsets))),
                                  steps(tile.region.sizes.size())}));
          found = held.emplace(transfer.tile, buffer).first;
        }
        buffer = found->second;
      } else {
        buffer = lowering.makeBuffer(loc, tileType, plan::BufferKind::temporary)
                     .getResult();
        held[transfer.tile] = buffer;
        received.push_back(transfer.tile);
      }
      if (transfer.receivers.size() == 1) {
        if (sender)
          plan::SendOp::create(b, loc, buffer, transfer.receivers.front(), tag);
        else
          plan::RecvOp::create(b, loc, buffer, transfer.sender, tag);
        continue;
      }
      SmallVector<int64_t> members = {transfer.sender};
      members.append(transfer.receivers.begin(), transfer.receivers.end());
      plan::BroadcastOp::create(b, loc, buffer,
                                lowering.getGroups().ofDevices(members),
                                b.getI64IntegerAttr(0));
    }
    if (sending)
      return success();

    // The destination block: its tiles, each padded to the block, summed.
    if (received.empty())
      return move.emitError()
             << "lower-to-plan: device " << me << " receives no part of "
             << type << " (an empty tensor cannot be moved)";
    auto blockType = MemRefType::get(block.sizes, element);
    Value sum;
    for (int64_t index : received) {
      const cost::CrossMeshTile &tile = tiles[static_cast<size_t>(index)];
      Value padded = held.at(index);
      if (!(tile.region == block))
        padded = lowering.kernel(
            loc, "slice_grad", padded, blockType,
            b.getDictionaryAttr(
                {b.getNamedAttr("starts",
                                b.getDenseI64ArrayAttr(
                                    minus(tile.region.offsets, block.offsets))),
                 steps(tile.region.sizes.size())}));
      sum =
          sum ? lowering.kernel(loc, "add", ValueRange{sum, padded}, blockType)
              : padded;
    }
    lowering.map(move.getResult(), sum);
    return success();
  }
};

} // namespace

void parplan::registerCrossMeshPlanLowering(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, sbp::SBPDialect *) {
    sbp::CrossMeshOp::attachInterface<CrossMeshPlanLowering>(*context);
  });
}
