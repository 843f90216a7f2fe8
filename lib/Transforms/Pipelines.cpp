//===- Pipelines.cpp - pass pipelines over nn programs --------------------===//

#include "parplan/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void parplan::addCanonicalFormPasses(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addNestedPass<mlir::func::FuncOp>(createNNFuseLayerNorm());
  pm.addNestedPass<mlir::func::FuncOp>(createNNFuseGelu());
  // The fused-away decompositions are dead now.
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
  autodiff.mixedPrecision = options.mixedPrecision;
  pm.addPass(createNNAutodiff(autodiff));
}

void parplan::addTrainingStepPasses(mlir::OpPassManager &pm,
                                    const CompilePipelineOptions &options) {
  // Fused projections (GPT-2's query-key-value) become one per part, each
  // free to take its own layout.
  pm.addNestedPass<mlir::func::FuncOp>(createNNSplitFusedProjections());
  addAutodiffPass(pm, options);
}

void parplan::addLayoutPasses(mlir::OpPassManager &pm,
                              const CompilePipelineOptions &options) {
  // The training step states its element types: every pass prices values
  // at their own width (mixed-precision=false), so the boxings written are
  // the ones the search paid for.
  SbpAssignOptions assign;
  assign.cluster = options.cluster;
  assign.mesh = options.mesh;
  assign.strategy = options.strategy;
  assign.annotations = options.annotations;
  assign.explain = options.explain;
  assign.mixedPrecision = false;
  pm.addPass(createSbpAssign(assign));
  InsertBoxingOptions boxing;
  boxing.cluster = options.cluster;
  boxing.mixedPrecision = false;
  pm.addPass(createInsertBoxing(boxing));
  ExpandBoxingOptions steps;
  steps.cluster = options.cluster;
  steps.mixedPrecision = false;
  pm.addPass(createExpandBoxing(steps));
}

void parplan::addLoweringPasses(mlir::OpPassManager &pm) {
  pm.addPass(createLowerToPlan());
  pm.addPass(createPlanMemory());
}

void parplan::buildCompilePipeline(mlir::OpPassManager &pm,
                                   const CompilePipelineOptions &options) {
  addTrainingStepPasses(pm, options);
  addLayoutPasses(pm, options);
  addLoweringPasses(pm);
}

void parplan::registerAllPasses() {
  registerTransformsPasses();
  mlir::PassPipelineRegistration<>(
      "nn-canonical-forms",
      "Fold, then fuse decomposed layer norms and GELUs (what import runs)",
      addCanonicalFormPasses);
  mlir::PassPipelineRegistration<CompilePipelineOptions>(
      "parplan-compile",
      "An imported model to per-device plan programs: the training step, "
      "the layout on the cluster's mesh, the lowering (what parplan compile "
      "runs)",
      buildCompilePipeline);
}
