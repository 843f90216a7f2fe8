//===- InsertBoxing.cpp - every change of layout an explicit op -----------===//
//
// After sbp-assign, a value's producer states the layout it makes and each
// user the layout it reads; where the two differ this pass inserts the
// sbp.boxing that turns one into the other, priced by the same cost model
// the search used.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Sharding/Passes.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Sbp/Resharding.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"
#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"

namespace parplan {
#define GEN_PASS_DEF_INSERTBOXING
#include "parplan/Transforms/Sharding/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {

struct InsertBoxingPass : parplan::impl::InsertBoxingBase<InsertBoxingPass> {
  using InsertBoxingBase::InsertBoxingBase;

  void runOnOperation() override;
};

/// The layout `value` is produced in, and the mesh: its producer's
/// sbp.sharding result entry, or the destination of an sbp.boxing or
/// sbp.cross_mesh (insert-cross-mesh's); null when it has none.
std::pair<ArrayAttr, FlatSymbolRefAttr> producedLayout(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return {};
  Operation *producer = result.getOwner();
  if (auto boxing = dyn_cast<sbp::BoxingOp>(producer))
    return {boxing.getDst(), boxing.getMeshAttr()};
  if (auto move = dyn_cast<sbp::CrossMeshOp>(producer))
    return {move.getDst(), move.getDstMeshAttr()};
  auto sharding =
      producer->getAttrOfType<sbp::ShardingAttr>(parplan::kShardingAttrName);
  if (!sharding)
    return {};
  return {cast<ArrayAttr>(sharding.getResults()[result.getResultNumber()]),
          sharding.getMesh()};
}

void InsertBoxingPass::runOnOperation() {
  ModuleOp module = getOperation();
  // One cost model per mesh the boxings are on.
  MeshCostModels models(getAnalysis<ClusterAnalysis>().getCluster(),
                        mixedPrecision);
  auto modelOf = [&](Operation *user,
                     FlatSymbolRefAttr meshRef) -> const ShardingCostModel * {
    auto mesh =
        SymbolTable::lookupNearestSymbolFrom<sbp::MeshOp>(user, meshRef);
    if (!mesh) {
      user->emitError() << meshRef << " does not name an sbp.mesh";
      return nullptr;
    }
    std::string error;
    const ShardingCostModel *model = models.get(mesh, error);
    if (!model)
      module.emitError() << error;
    return model;
  };

  // The forward pass of a step (all of an inference step). A value it
  // makes that the
  // backward pass reads is kept between the two at its producer's layout,
  // as the cost model counts it: a backward reader boxes it anew, rather
  // than read a forward boxing's result, which would be kept as well;
  // except a parameter sbp-assign keeps boxed for the backward
  // (sbp.kept_for_backward), where that pays.
  DenseSet<Operation *> forward;
  bool step = parplan::isStep(module);
  if (step)
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        for (Operation *op : parplan::forwardPassOps(function))
          forward.insert(op);

  // One boxing per value, target layout and pass, placed right after the
  // producer, or for a forward value the backward pass reads or the step
  // returns, before the first such reader, so that every later user that
  // needs it can read it. A sum over the micro-batches is boxed before its
  // first reader too: the gradients reduced once per step each become whole
  // just before their update, not all of them at once beside the accumulators.
  DenseMap<std::tuple<Value, Attribute, Attribute, unsigned>, Value> boxed;
  OpBuilder builder(module.getContext());
  WalkResult walk = module.walk([&](Operation *user) {
    auto sharding =
        user->getAttrOfType<sbp::ShardingAttr>(parplan::kShardingAttrName);
    if (!sharding)
      return WalkResult::advance();
    for (OpOperand &operand : user->getOpOperands()) {
      Value value = operand.get();
      auto [src, meshRef] = producedLayout(value);
      if (!src) {
        user->emitError() << "operand " << operand.getOperandNumber()
                          << " has no layout: its producer carries no "
                             "sbp.sharding (run sbp-assign first)";
        return WalkResult::interrupt();
      }
      // A returned value stays on its producer's mesh.
      if (!isa<func::ReturnOp>(user) && meshRef != sharding.getMesh()) {
        user->emitError() << "operand " << operand.getOperandNumber()
                          << " is on " << meshRef << ", this op on "
                          << sharding.getMesh()
                          << " (run insert-cross-mesh first)";
        return WalkResult::interrupt();
      }
      Attribute dst = sharding.getOperands()[operand.getOperandNumber()];
      if (src == dst)
        continue;
      // On interleaved stages, each model chunk boxes for itself: a chunk
      // runs its micro-batches at its own times.
      Attribute chunk = user->getAttr(parplan::kChunkAttrName);
      // Of a forward value, read by the backward pass or returned (the
      // loss): boxed before its reader, as late as it may run. A loss
      // reduced across the mesh right after the forward would hold the
      // communication stream of each device until the slowest reached the
      // loss, and the backward's boxings behind it. A value the forward
      // also reads in the returned layout is returned from that boxing.
      bool backward = step && !forward.contains(user) &&
                      forward.contains(value.getDefiningOp());
      // Of a parameter sbp-assign keeps boxed for the backward: read from
      // the forward's boxing in this layout, the same way.
      Operation *producer = value.getDefiningOp();
      if (backward && (isa<func::ReturnOp>(user) ||
                       (isa_and_nonnull<nn::ParamOp>(producer) &&
                        producer->hasAttr(parplan::kKeptForBackwardAttrName))))
        if (auto read = boxed.find({value, dst, chunk, 0u});
            read != boxed.end()) {
          operand.set(read->second);
          continue;
        }
      auto [it, inserted] =
          boxed.try_emplace({value, dst, chunk, unsigned{backward}}, Value());
      if (inserted) {
        const ShardingCostModel *model = modelOf(user, meshRef);
        if (!model)
          return WalkResult::interrupt();
        const std::optional<cost::BoxingCost> &boxing =
            model->boxing(sbp::toNdSbp(src), sbp::toNdSbp(cast<ArrayAttr>(dst)),
                          value.getType());
        if (!boxing) {
          user->emitError() << "no boxing turns " << src << " into " << dst;
          return WalkResult::interrupt();
        }
        // A sum over micro-batches is boxed once per step. An all-reduce
        // runs in place where the sum is complete, so that it may run
        // under the rest of the last micro-batch's backward; another
        // boxing writes a buffer of its own, which lives from the boxing
        // on: it waits for its first reader.
        if (boxesBeforeReader(
                backward,
                isa_and_nonnull<nn::AccumulateOp>(value.getDefiningOp()),
                sbp::toNdSbp(src), sbp::toNdSbp(cast<ArrayAttr>(dst))))
          builder.setInsertionPoint(user);
        else
          builder.setInsertionPointAfter(value.getDefiningOp());
        auto op = sbp::BoxingOp::create(
            builder, user->getLoc(), value.getType(), value, meshRef, src,
            cast<ArrayAttr>(dst), builder.getF64FloatAttr(boxing->time));
        if (chunk)
          op->setAttr(parplan::kChunkAttrName, chunk);
        it->second = op.getResult();
      }
      operand.set(it->second);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
}

} // namespace
