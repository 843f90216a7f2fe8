//===- InsertBoxing.cpp - every change of layout an explicit op -----------===//
//
// After sbp-assign, a value's producer states the layout it makes and each
// user the layout it reads; where the two differ this pass inserts the
// sbp.boxing that turns one into the other, priced by the same cost model
// the search used.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Passes.h"

#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Transforms/ShardingCostModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"

namespace parplan {
#define GEN_PASS_DEF_INSERTBOXING
#include "parplan/Transforms/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {

struct InsertBoxingPass : parplan::impl::InsertBoxingBase<InsertBoxingPass> {
  using InsertBoxingBase::InsertBoxingBase;

  void runOnOperation() override;
};

void InsertBoxingPass::runOnOperation() {
  ModuleOp module = getOperation();
  // The mesh every sharding names must be one: boxing moves data within it.
  sbp::MeshOp mesh;
  WalkResult walk = module.walk([&](Operation *op) {
    auto sharding = op->getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
    if (!sharding)
      return WalkResult::advance();
    auto named = SymbolTable::lookupNearestSymbolFrom<sbp::MeshOp>(
        op, sharding.getMesh());
    if (mesh && named != mesh) {
      op->emitError() << "insert-boxing handles one mesh; this op is on "
                      << sharding.getMesh() << ", others on @"
                      << mesh.getSymName();
      return WalkResult::interrupt();
    }
    mesh = named;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();
  if (!mesh)
    return; // Nothing was laid out.
  if (mesh.getDevices()) {
    mesh.emitError() << "insert-boxing prices meshes over the cluster's first "
                        "devices; @"
                     << mesh.getSymName() << " lists its own";
    return signalPassFailure();
  }
  std::string error;
  std::optional<ShardingCostModel> model = ShardingCostModel::load(
      module, cluster,
      std::vector<int64_t>(mesh.getShape().begin(), mesh.getShape().end()),
      mixedPrecision, error);
  if (!model) {
    module.emitError() << error;
    return signalPassFailure();
  }
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());

  // One boxing per value and target layout, placed right after the
  // producer so every user that needs it can read it.
  DenseMap<std::pair<Value, Attribute>, Value> boxed;
  OpBuilder builder(module.getContext());
  walk = module.walk([&](Operation *user) {
    auto sharding = user->getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
    if (!sharding)
      return WalkResult::advance();
    for (OpOperand &operand : user->getOpOperands()) {
      Value value = operand.get();
      auto result = dyn_cast<OpResult>(value);
      auto produced = result
                          ? result.getOwner()->getAttrOfType<sbp::ShardingAttr>(
                                "sbp.sharding")
                          : sbp::ShardingAttr();
      if (!produced) {
        user->emitError() << "operand " << operand.getOperandNumber()
                          << " has no layout: its producer carries no "
                             "sbp.sharding (run sbp-assign first)";
        return WalkResult::interrupt();
      }
      Attribute src = produced.getResults()[result.getResultNumber()];
      Attribute dst = sharding.getOperands()[operand.getOperandNumber()];
      if (src == dst)
        continue;
      auto [it, inserted] = boxed.try_emplace({value, dst}, Value());
      if (inserted) {
        const std::optional<cost::BoxingCost> &boxing =
            model->boxing(sbp::toNdSbp(cast<ArrayAttr>(src)),
                          sbp::toNdSbp(cast<ArrayAttr>(dst)), value.getType());
        if (!boxing) {
          user->emitError() << "no boxing turns " << src << " into " << dst;
          return WalkResult::interrupt();
        }
        builder.setInsertionPointAfter(result.getOwner());
        auto op = sbp::BoxingOp::create(
            builder, user->getLoc(), value.getType(), value, meshRef,
            cast<ArrayAttr>(src), cast<ArrayAttr>(dst),
            builder.getF64FloatAttr(boxing->time));
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
