//===- PlanDialect.h - plan dialect -----------------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_PLAN_PLANDIALECT_H
#define PARPLAN_DIALECT_PLAN_PLANDIALECT_H

#include "mlir/IR/Dialect.h"

#include "parplan/Dialect/Plan/PlanDialect.h.inc"

#endif // PARPLAN_DIALECT_PLAN_PLANDIALECT_H
