//===- LowerCrossMeshToPlan.cpp - a move between meshes on one device -----===//
//
// PlanLoweringOpInterface for sbp.cross_mesh (the lower-cross-mesh step of
// lower-to-plan). The move is planned again with the mode and balancing
// insert-cross-mesh recorded, by the planner that priced it
// (cost::planCrossMesh, deterministic), once for all the devices taking
// part (CrossMeshMoves), and written once as a plan.cross_mesh: its tiles
// and its transfers in order. Each device's program then holds one
// plan.cross_mesh_send (on the source mesh) or plan.cross_mesh_recv (on the
// destination mesh) of its block, which the executor turns into the
// device's own slices, sends, receives and broadcasts
// (Sbp/CrossMeshPart.h). Nothing in a program names a peer, so the
// devices of a mesh share their programs as they do without moves; a
// program reserves the scratch the busiest of its mesh's devices needs.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Lowering/DeviceLowering.h"

#include "parplan/Cost/CrossMesh.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Sbp/CrossMeshPart.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace parplan;

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
  std::vector<cost::CrossMeshTile> tiles = cost::crossMeshTiles(problem);
  cost::MeshPlacement placement = cost::placeCrossMesh(problem, cluster);
  auto [found, inserted] = schedules.try_emplace(
      placement.key + cost::toString(*mode) + cost::toString(*balancing));
  if (inserted)
    found->second = cost::shiftSchedule(
        cost::planCrossMesh(tiles, cost::ClusterIndex(cluster), *mode,
                            *balancing),
        -placement.deviceShift, -placement.nodeShift);
  cost::CrossMeshSchedule schedule = cost::shiftSchedule(
      found->second, placement.deviceShift, placement.nodeShift);

  // The part of every device of each side, for the scratch its programs
  // reserve: per device the transfers it takes part in, in order.
  std::vector<Slice> regions;
  for (const cost::CrossMeshTile &tile : tiles)
    regions.push_back(tile.region);
  std::map<int64_t, std::vector<size_t>> transfersOf;
  for (auto [index, transfer] : llvm::enumerate(schedule.transfers)) {
    transfersOf[transfer.sender].push_back(index);
    for (int64_t receiver : transfer.receivers)
      if (receiver != transfer.sender)
        transfersOf[receiver].push_back(index);
  }
  std::vector<size_t> none;
  for (int side = 0; side < 2; ++side) {
    const cost::DeviceMesh &mesh =
        side == 0 ? problem.source : problem.destination;
    const NdSbp &layout =
        side == 0 ? problem.sourceLayout : problem.destinationLayout;
    for (int64_t position = 0; position < mesh.size(); ++position) {
      int64_t device = mesh.devices[static_cast<size_t>(position)];
      Slice block = deviceSlice(problem.shape, mesh.shape, layout,
                                meshCoordinate(mesh.shape, position));
      auto mine = transfersOf.find(device);
      CrossMeshPart part =
          crossMeshPart(regions, schedule.transfers, device, block, side == 1,
                        problem.elementBytes,
                        mine == transfersOf.end() ? &none : &mine->second);
      if (side == 1 && part.tilesReceived == 0) {
        move.emitError() << "lower-to-plan: device " << device
                         << " receives no part of " << type
                         << " (an empty tensor cannot be moved)";
        return nullptr;
      }
      result->scratchBytes[side] =
          std::max(result->scratchBytes[side], part.scratchBytes);
    }
  }

  // The table, as the programs and the executor read it.
  SmallVector<int64_t> offsets, sizes, transferTiles, senders, counts,
      receivers;
  for (const Slice &region : regions) {
    offsets.append(region.offsets.begin(), region.offsets.end());
    sizes.append(region.sizes.begin(), region.sizes.end());
  }
  for (const cost::CrossMeshTransfer &transfer : schedule.transfers) {
    transferTiles.push_back(transfer.tile);
    senders.push_back(transfer.sender);
    counts.push_back(static_cast<int64_t>(transfer.receivers.size()));
    receivers.append(transfer.receivers.begin(), transfer.receivers.end());
  }
  auto name = builder.getStringAttr("move" + std::to_string(tableCount++));
  plan::CrossMeshOp::create(
      builder, move.getLoc(), name, TypeAttr::get(type), move.getSrcMeshAttr(),
      builder.getDenseI64ArrayAttr(toSplits(problem.sourceLayout)),
      move.getDstMeshAttr(),
      builder.getDenseI64ArrayAttr(toSplits(problem.destinationLayout)),
      builder.getDenseI64ArrayAttr(offsets),
      builder.getDenseI64ArrayAttr(sizes),
      builder.getDenseI64ArrayAttr(transferTiles),
      builder.getDenseI64ArrayAttr(senders),
      builder.getDenseI64ArrayAttr(counts),
      builder.getDenseI64ArrayAttr(receivers));
  result->table = FlatSymbolRefAttr::get(name);
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
    bool receiving = lowering.getMesh() != move.getSrcMeshAttr();
    const NdSbp &layout =
        receiving ? problem.destinationLayout : problem.sourceLayout;
    auto blockType = MemRefType::get(
        lowering.blockShape(problem.shape, layout),
        cast<RankedTensorType>(move.getType()).getElementType());
    OpBuilder &b = lowering.getBuilder();
    Location loc = move.getLoc();
    Value scratch;
    if (int64_t bytes = planned->scratchBytes[receiving ? 1 : 0])
      scratch = lowering
                    .makeBuffer(loc, MemRefType::get({bytes}, b.getI8Type()),
                                plan::BufferKind::temporary)
                    .getResult();
    if (!receiving) {
      plan::CrossMeshSendOp::create(b, loc, planned->table,
                                    lowering.lookup(move.getInput()), scratch);
      return success();
    }
    Value block =
        lowering.makeBuffer(loc, blockType, plan::BufferKind::temporary)
            .getResult();
    plan::CrossMeshRecvOp::create(b, loc, planned->table, block, scratch);
    lowering.map(move.getResult(), block);
    return success();
  }
};

} // namespace

void parplan::registerCrossMeshPlanLowering(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, sbp::SBPDialect *) {
    sbp::CrossMeshOp::attachInterface<CrossMeshPlanLowering>(*context);
  });
}
