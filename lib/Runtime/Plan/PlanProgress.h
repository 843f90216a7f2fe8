//===- PlanProgress.h - a step that cannot hang -----------------*- C++ -*-===//
//
// Private to the runtime: checkPlan's last check (PlanProgress.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_PLANPROGRESS_H
#define PARPLAN_LIB_RUNTIME_PLANPROGRESS_H

#include "parplan/Runtime/PlanFile.h"

namespace parplan::runtime::detail {

/// Whether every device finishes a step of `plan` in the executor's order,
/// under the plan's schedule and one micro-batch after another (a backend
/// that runs no schedules): the reason it would wait forever, or success.
/// The plan must have passed the rest of checkPlan.
Status checkProgress(const plan::Plan &plan);

} // namespace parplan::runtime::detail

#endif // PARPLAN_LIB_RUNTIME_PLANPROGRESS_H
