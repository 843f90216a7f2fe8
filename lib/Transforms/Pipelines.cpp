//===- Pipelines.cpp - pass pipelines over nn programs --------------------===//

#include "parplan/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void parplan::addCanonicalFormPasses(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addNestedPass<mlir::func::FuncOp>(createNNFuseLayerNorm());
  pm.addNestedPass<mlir::func::FuncOp>(createNNFuseGelu());
  pm.addNestedPass<mlir::func::FuncOp>(createNNFoldIntoMatMul());
  // The fused-away decompositions and folded transposes are dead now.
  pm.addPass(mlir::createCanonicalizerPass());
}

void parplan::addAutodiffPass(mlir::OpPassManager &pm,
                              const CompilePipelineOptions &options) {
  NNAutodiffOptions autodiff;
  autodiff.loss = options.loss;
  autodiff.output = options.output;
  autodiff.labels = options.labels;
  autodiff.optimizer = options.optimizer;
  autodiff.lr = options.lr;
  autodiff.weightDecay = options.weightDecay;
  autodiff.frozen = options.frozen;
  autodiff.recompute = options.recompute;
  autodiff.recomputeLayers = options.recomputeLayers;
  autodiff.mixedPrecision = options.mixedPrecision;
  autodiff.microBatches = options.microBatches;
  autodiff.gradientSums = options.gradientSums;
  autodiff.batchNorm = options.batchNorm;
  autodiff.dropout = options.dropout;
  autodiff.dropoutSeed = options.dropoutSeed;
  NNUntieParametersOptions untie;
  untie.untie.assign(options.untie.begin(), options.untie.end());
  untie.frozen = options.frozen;
  pm.addNestedPass<mlir::func::FuncOp>(createNNUntieParameters(untie));
  pm.addPass(createNNAutodiff(autodiff));
}

void parplan::addStepPasses(mlir::OpPassManager &pm,
                            const CompilePipelineOptions &options) {
  // Fused projections (GPT-2's query-key-value) become one per part, each
  // free to take its own layout.
  pm.addNestedPass<mlir::func::FuncOp>(createNNSplitFusedProjections());
  if (!options.inference) {
    addAutodiffPass(pm, options);
    return;
  }
  NNInferenceStepOptions step;
  step.microBatches = options.microBatches;
  pm.addPass(createNNInferenceStep(step));
}

namespace {

/// sbp-assign's options of the layout options both pipelines share.
template <typename Derived>
parplan::SbpAssignOptions
assignOptions(const parplan::LayoutPipelineOptions<Derived> &layout) {
  parplan::SbpAssignOptions assign;
  assign.mesh = layout.mesh;
  assign.strategy = layout.strategy;
  assign.shares = layout.shares;
  return assign;
}

/// place-stages' options in a layout pipeline: the stages cut from the
/// mesh sbp-assign would search.
template <typename Derived>
parplan::PlaceStagesOptions
placeOptions(const parplan::LayoutPipelineOptions<Derived> &layout) {
  parplan::PlaceStagesOptions place;
  place.stages = layout.stages;
  place.chunks = layout.chunks;
  place.evenShares = layout.shares == "even";
  place.cutInsideLayers = layout.cutInsideLayers;
  place.mesh = layout.mesh;
  return place;
}

/// place-stages with `place`, then sbp-assign with `assign` (on the
/// stages' meshes when there are some).
void addSearchPasses(mlir::OpPassManager &pm,
                     const parplan::PlaceStagesOptions &place,
                     parplan::SbpAssignOptions assign) {
  // Stages put ops on their meshes first; the moves between them are
  // priced by the search and written before the boxings.
  pm.addPass(parplan::createPlaceStages(place));
  if (place.stages > 1)
    assign.mesh.clear();
  pm.addPass(parplan::createSbpAssign(assign));
}

/// insert-cross-mesh, insert-boxing and expand-boxing pricing alike, so
/// that the moves and boxings written are the ones the search paid for.
void addBoxingPasses(mlir::OpPassManager &pm,
                     const parplan::SbpAssignOptions &assign) {
  parplan::InsertCrossMeshOptions moves;
  moves.mixedPrecision = assign.mixedPrecision;
  pm.addPass(parplan::createInsertCrossMesh(moves));
  parplan::InsertBoxingOptions boxing;
  boxing.mixedPrecision = assign.mixedPrecision;
  pm.addPass(parplan::createInsertBoxing(boxing));
  parplan::ExpandBoxingOptions steps;
  steps.mixedPrecision = assign.mixedPrecision;
  pm.addPass(parplan::createExpandBoxing(steps));
}

/// addSearchPasses, then addBoxingPasses.
void addSearchAndBoxingPasses(mlir::OpPassManager &pm,
                              const parplan::PlaceStagesOptions &place,
                              const parplan::SbpAssignOptions &assign) {
  addSearchPasses(pm, place, assign);
  addBoxingPasses(pm, assign);
}

/// sbp-assign's options in the compile pipeline. The training step states
/// its element types: every pass prices values at their own width
/// (mixed-precision=false).
parplan::SbpAssignOptions
compileAssignOptions(const parplan::CompilePipelineOptions &options) {
  parplan::SbpAssignOptions assign = assignOptions(options);
  assign.explain = options.explain;
  assign.starts = options.starts;
  assign.mixedPrecision = false;
  assign.schedule = options.schedule;
  assign.memoryBudget = options.memoryBudget;
  return assign;
}

} // namespace

void parplan::addLayoutPasses(mlir::OpPassManager &pm,
                              const CompilePipelineOptions &options) {
  addSearchAndBoxingPasses(pm, placeOptions(options),
                           compileAssignOptions(options));
}

void parplan::addLayoutSearchPasses(mlir::OpPassManager &pm,
                                    const CompilePipelineOptions &options) {
  addSearchPasses(pm, placeOptions(options), compileAssignOptions(options));
}

void parplan::addLayoutBoxingPasses(mlir::OpPassManager &pm,
                                    const CompilePipelineOptions &options) {
  addBoxingPasses(pm, compileAssignOptions(options));
}

void parplan::addLoweringPasses(mlir::OpPassManager &pm,
                                const std::string &schedule) {
  LowerToPlanOptions lowering;
  lowering.schedule = schedule;
  pm.addPass(createLowerToPlan(lowering));
  pm.addPass(createPlanMemory());
}

void parplan::buildShardPipeline(mlir::OpPassManager &pm,
                                 const ShardPipelineOptions &options) {
  if (!options.cluster.empty())
    pm.addPass(createAttachCluster({options.cluster}));
  pm.addNestedPass<mlir::func::FuncOp>(createNNSplitFusedProjections());
  SbpAssignOptions assign = assignOptions(options);
  assign.training = options.training;
  assign.optimizer = options.optimizer;
  assign.mixedPrecision = options.mixedPrecision;
  assign.explain = options.explain;
  addSearchAndBoxingPasses(pm, placeOptions(options), assign);
}

void parplan::registerAllPasses() {
  registerGraphPasses();
  registerTrainingStepPasses();
  registerShardingPasses();
  registerPipelinePasses();
  registerLoweringPasses();
  mlir::PassPipelineRegistration<>(
      "nn-canonical-forms",
      "Fold, then fuse decomposed layer norms and GELUs (what import runs)",
      addCanonicalFormPasses);
  mlir::PassPipelineRegistration<ShardPipelineOptions>(
      "parplan-shard",
      "A layout for the model as imported, every boxing written as typed "
      "steps (what parplan shard runs)",
      buildShardPipeline);
}
