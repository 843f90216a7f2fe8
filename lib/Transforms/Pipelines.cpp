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

void parplan::registerAllPasses() {
  registerTransformsPasses();
  mlir::PassPipelineRegistration<>(
      "nn-canonical-forms",
      "Fold, then fuse decomposed layer norms and GELUs (what import runs)",
      addCanonicalFormPasses);
}
