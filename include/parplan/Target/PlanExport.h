//===- PlanExport.h - plan dialect programs to plan.proto -------*- C++ -*-===//
//
// The bridge from the compiler to the executor: a module of plan.program
// ops becomes the plan.proto message that parplan-run reads. Buffers are
// numbered in program order; kernels keep the runtime's form of their
// attributes (the same conversion the interpreter uses).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TARGET_PLANEXPORT_H
#define PARPLAN_TARGET_PLANEXPORT_H

#include "parplan/Runtime/plan.pb.h"

#include "mlir/IR/BuiltinOps.h"

namespace parplan {

/// The plan of `module`'s plan.group and plan.program ops, ordered by
/// their first device. An op the plan cannot express is an error at that
/// op; a plan that fails runtime::checkPlan (a device in no program or in
/// two, a block of the wrong extent) an error at the module.
mlir::FailureOr<plan::Plan> exportPlan(mlir::ModuleOp module);

/// exportPlan into `plan`, which may live on an arena: a plan of 1,024
/// programs is millions of messages, which an arena allocates and frees
/// at once.
mlir::LogicalResult exportPlan(mlir::ModuleOp module, plan::Plan &plan);

} // namespace parplan

#endif // PARPLAN_TARGET_PLANEXPORT_H
