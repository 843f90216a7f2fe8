//===- InsertCrossMesh.cpp - every move between stages an explicit op -----===//
//
// After sbp-assign on a program whose ops sit on the meshes of several
// stages: wherever an op reads a value produced on another mesh, this pass
// inserts the move sbp-assign priced (ShardingCostModel::crossMesh): a
// boxing that reduces a partial source on its own mesh, the sbp.cross_mesh
// with the planner's mode and balancing, and a boxing into the reader's
// layout on its mesh. insert-boxing then boxes the rest within each mesh.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Pipeline/Passes.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

namespace parplan {
#define GEN_PASS_DEF_INSERTCROSSMESH
#include "parplan/Transforms/Pipeline/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {

struct InsertCrossMeshPass
    : parplan::impl::InsertCrossMeshBase<InsertCrossMeshPass> {
  using InsertCrossMeshBase::InsertCrossMeshBase;

  void runOnOperation() override;
};

void InsertCrossMeshPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<cost::CrossMeshMode> forced;
  if (mode != "cheapest") {
    forced = cost::parseCrossMeshMode(mode);
    if (!forced) {
      module.emitError() << "insert-cross-mesh: unknown mode '" << mode
                         << "' (expected cheapest, "
                         << llvm::join(cost::crossMeshModeNames(), ", ") << ")";
      return signalPassFailure();
    }
  }
  MeshCostModels models(getAnalysis<ClusterAnalysis>().getCluster(),
                        mixedPrecision);
  DenseMap<std::tuple<Value, Attribute, Attribute, Attribute>, Value> moved;
  OpBuilder builder(module.getContext());
  WalkResult walk = module.walk([&](Operation *user) {
    auto sharding =
        user->getAttrOfType<sbp::ShardingAttr>(parplan::kShardingAttrName);
    if (!sharding || isa<func::ReturnOp>(user))
      return WalkResult::advance();
    for (OpOperand &operand : user->getOpOperands()) {
      Value value = operand.get();
      auto result = dyn_cast<OpResult>(value);
      auto produced = result
                          ? result.getOwner()->getAttrOfType<sbp::ShardingAttr>(
                                parplan::kShardingAttrName)
                          : sbp::ShardingAttr();
      if (!produced || produced.getMesh() == sharding.getMesh())
        continue;
      auto src =
          cast<ArrayAttr>(produced.getResults()[result.getResultNumber()]);
      auto dst =
          cast<ArrayAttr>(sharding.getOperands()[operand.getOperandNumber()]);
      // On interleaved stages, each model chunk that reads the value gets
      // its own move, received where the chunk runs its micro-batch.
      Attribute chunk = user->getAttr(parplan::kChunkAttrName);
      Attribute sourceChunk =
          result.getOwner()->getAttr(parplan::kChunkAttrName);
      auto [it, inserted] =
          moved.try_emplace({value, sharding.getMesh(), dst, chunk}, Value());
      if (inserted) {
        auto source = SymbolTable::lookupNearestSymbolFrom<sbp::MeshOp>(
            user, produced.getMesh());
        auto destination = SymbolTable::lookupNearestSymbolFrom<sbp::MeshOp>(
            user, sharding.getMesh());
        if (!source || !destination) {
          user->emitError()
              << "insert-cross-mesh: "
              << (source ? sharding.getMesh() : produced.getMesh())
              << " does not name an sbp.mesh";
          return WalkResult::interrupt();
        }
        std::string error;
        // Each side's boxing is priced on its own mesh's devices, as
        // sbp-assign priced it; the source's model plans the move. A
        // destination off the cluster has no model: the planner says why.
        const ShardingCostModel *model = models.get(source, error);
        if (!model) {
          module.emitError() << "insert-cross-mesh: " << error;
          return WalkResult::interrupt();
        }
        std::string offCluster;
        const ShardingCostModel *receiver = models.get(destination, offCluster);
        std::optional<CrossMeshCost> move =
            model->crossMesh(deviceMeshOf(source), sbp::toNdSbp(src),
                             deviceMeshOf(destination), sbp::toNdSbp(dst),
                             value.getType(), forced, error, {model, receiver});
        if (!move) {
          user->emitError()
              << "insert-cross-mesh: operand " << operand.getOperandNumber()
              << " from " << produced.getMesh() << " to " << sharding.getMesh()
              << ": " << error;
          return WalkResult::interrupt();
        }
        MLIRContext *context = module.getContext();
        // A move is named after what it moves (its producer's node, or
        // the parameter), not after its first reader: a critical path or
        // trace then reads forward, from the value to where it goes.
        Location loc = result.getOwner()->getLoc();
        builder.setInsertionPointAfter(result.getOwner());
        Value current = value;
        auto boxTo = [&](FlatSymbolRefAttr mesh, ArrayAttr from, ArrayAttr to) {
          if (from == to)
            return;
          const ShardingCostModel &side =
              mesh == produced.getMesh() || !receiver ? *model : *receiver;
          const std::optional<cost::BoxingCost> &boxing = side.boxing(
              sbp::toNdSbp(from), sbp::toNdSbp(to), value.getType());
          auto op = sbp::BoxingOp::create(
              builder, loc, value.getType(), current, mesh, from, to,
              builder.getF64FloatAttr(boxing->time));
          if (Attribute side = mesh == produced.getMesh() ? sourceChunk : chunk)
            op->setAttr(parplan::kChunkAttrName, side);
          current = op.getResult();
        };
        ArrayAttr sent = sbp::getNdSbpAttr(context, move->sent);
        ArrayAttr received = sbp::getNdSbpAttr(context, move->received);
        boxTo(produced.getMesh(), src, sent);
        auto crossing = sbp::CrossMeshOp::create(
            builder, loc, value.getType(), current, produced.getMesh(), sent,
            sharding.getMesh(), received,
            builder.getStringAttr(cost::toString(move->mode)),
            builder.getStringAttr(cost::toString(move->balancing)),
            builder.getF64FloatAttr(move->moveTime));
        // The sending side runs in the producer's chunk, the receiving
        // side in the reader's.
        if (sourceChunk)
          crossing->setAttr(parplan::kChunkAttrName, sourceChunk);
        if (chunk)
          crossing->setAttr(parplan::kDestinationChunkAttrName, chunk);
        current = crossing.getResult();
        boxTo(sharding.getMesh(), received, dst);
        it->second = current;
      }
      operand.set(it->second);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
}

} // namespace
