//===- ExpandBoxing.cpp - every boxing as its typed steps -----------------===//
//
// insert-boxing states what must change; this pass writes how, as the step
// ops the cost model priced: the same planResharding call, memoized in the
// same ShardingCostModel, so the IR holds exactly the sequence the search
// paid for.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Sharding/Passes.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace parplan {
#define GEN_PASS_DEF_EXPANDBOXING
#include "parplan/Transforms/Sharding/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {

template <typename StepOp>
Value createStep(OpBuilder &builder, Location loc, Value input,
                 FlatSymbolRefAttr mesh, const ReshardStep &step) {
  MLIRContext *context = builder.getContext();
  return StepOp::create(builder, loc, input.getType(), input, mesh,
                        builder.getI64IntegerAttr(step.meshAxis),
                        sbp::getNdSbpAttr(context, step.from),
                        sbp::getNdSbpAttr(context, step.to));
}

/// The op of one step, reading `input`.
Value createStep(OpBuilder &builder, Location loc, Value input,
                 FlatSymbolRefAttr mesh, const ReshardStep &step) {
  switch (step.kind) {
  case ReshardKind::AllGather:
    return createStep<sbp::AllGatherOp>(builder, loc, input, mesh, step);
  case ReshardKind::ReduceScatter:
    return createStep<sbp::ReduceScatterOp>(builder, loc, input, mesh, step);
  case ReshardKind::AllReduce:
    return createStep<sbp::AllReduceOp>(builder, loc, input, mesh, step);
  case ReshardKind::AllToAll:
    return createStep<sbp::AllToAllOp>(builder, loc, input, mesh, step);
  case ReshardKind::Slice:
    return createStep<sbp::SliceOp>(builder, loc, input, mesh, step);
  case ReshardKind::ToPartial:
    return createStep<sbp::ToPartialOp>(builder, loc, input, mesh, step);
  }
  return input;
}

struct ExpandBoxingPass : parplan::impl::ExpandBoxingBase<ExpandBoxingPass> {
  using ExpandBoxingBase::ExpandBoxingBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<sbp::BoxingOp> boxings;
    module.walk([&](sbp::BoxingOp op) { boxings.push_back(op); });
    if (boxings.empty())
      return;
    // One cost model per mesh the boxings name.
    MeshCostModels models(getAnalysis<ClusterAnalysis>().getCluster(),
                          mixedPrecision);
    for (sbp::BoxingOp boxing : boxings) {
      auto mesh = SymbolTable::lookupNearestSymbolFrom<sbp::MeshOp>(
          boxing, boxing.getMeshAttr());
      if (!mesh) {
        boxing.emitError() << "expand-boxing: " << boxing.getMeshAttr()
                           << " does not name an sbp.mesh";
        return signalPassFailure();
      }
      std::string error;
      const ShardingCostModel *model = models.get(mesh, error);
      if (!model) {
        mesh.emitError() << "expand-boxing: " << error;
        return signalPassFailure();
      }
      NdSbp from = sbp::toNdSbp(boxing.getSrc()),
            to = sbp::toNdSbp(boxing.getDst());
      const std::optional<cost::BoxingCost> &cost =
          model->boxing(from, to, boxing.getType());
      if (!cost) {
        boxing.emitError() << "expand-boxing: no sequence of steps turns "
                           << toString(from) << " into " << toString(to)
                           << " on mesh @" << mesh.getSymName();
        return signalPassFailure();
      }
      OpBuilder builder(boxing);
      Value value = boxing.getInput();
      // The steps run in the boxing's model chunk (interleaved stages).
      Attribute chunk = boxing->getAttr(parplan::kChunkAttrName);
      for (const cost::BoxingStep &step : cost->steps) {
        value = createStep(builder, boxing.getLoc(), value,
                           boxing.getMeshAttr(), step.step);
        if (chunk && value != boxing.getInput())
          value.getDefiningOp()->setAttr(parplan::kChunkAttrName, chunk);
      }
      boxing.getResult().replaceAllUsesWith(value);
      boxing.erase();
    }
  }
};

} // namespace
