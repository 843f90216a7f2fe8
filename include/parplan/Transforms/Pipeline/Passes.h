//===- Passes.h - stages and the moves between them -------------*- C++ -*-===//
//
// The Pipeline stage's passes (Passes.td beside this file), declared and
// registered by registerPipelinePasses().
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_PIPELINE_PASSES_H
#define PARPLAN_TRANSFORMS_PIPELINE_PASSES_H

#include "parplan/Dialect/NN/NNDialect.h"
#include "parplan/Dialect/Plan/PlanDialect.h"
#include "parplan/Dialect/SBP/SBPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace parplan {

#define GEN_PASS_DECL
#include "parplan/Transforms/Pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "parplan/Transforms/Pipeline/Passes.h.inc"

} // namespace parplan

#endif // PARPLAN_TRANSFORMS_PIPELINE_PASSES_H
