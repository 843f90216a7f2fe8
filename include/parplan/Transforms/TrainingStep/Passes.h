//===- Passes.h - the forward program made a training step ------*- C++ -*-===//
//
// The TrainingStep stage's passes (Passes.td beside this file), declared and
// registered by registerTrainingStepPasses().
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_TRAINING_STEP_PASSES_H
#define PARPLAN_TRANSFORMS_TRAINING_STEP_PASSES_H

#include "parplan/Dialect/NN/NNDialect.h"
#include "parplan/Dialect/Plan/PlanDialect.h"
#include "parplan/Dialect/SBP/SBPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace parplan {

#define GEN_PASS_DECL
#include "parplan/Transforms/TrainingStep/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "parplan/Transforms/TrainingStep/Passes.h.inc"

} // namespace parplan

#endif // PARPLAN_TRANSFORMS_TRAINING_STEP_PASSES_H
