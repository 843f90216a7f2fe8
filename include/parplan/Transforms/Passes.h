//===- Passes.h - passes over nn programs -----------------------*- C++ -*-===//

#ifndef PARPLAN_TRANSFORMS_PASSES_H
#define PARPLAN_TRANSFORMS_PASSES_H

#include "parplan/Dialect/NN/NNDialect.h"
#include "parplan/Dialect/Plan/PlanDialect.h"
#include "parplan/Dialect/SBP/SBPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace parplan {

#define GEN_PASS_DECL
#include "parplan/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "parplan/Transforms/Passes.h.inc"

/// The canonical form of an imported program: folding and dead-code removal
/// (canonicalize), then nn-fuse-layer-norm and nn-fuse-gelu. Registered as
/// the pipeline `nn-canonical-forms`.
void addCanonicalFormPasses(mlir::OpPassManager &pm);

/// Registers every pass above (registerTransformsPasses, generated) and the
/// `nn-canonical-forms` pipeline.
void registerAllPasses();

} // namespace parplan

#endif // PARPLAN_TRANSFORMS_PASSES_H
