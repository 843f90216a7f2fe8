//===- PlanOps.h - plan dialect operations ----------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_PLAN_PLANOPS_H
#define PARPLAN_DIALECT_PLAN_PLANOPS_H

#include "parplan/Dialect/Plan/PlanDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

#include "parplan/Dialect/Plan/PlanEnums.h.inc"

#define GET_OP_CLASSES
#include "parplan/Dialect/Plan/PlanOps.h.inc"

#endif // PARPLAN_DIALECT_PLAN_PLANOPS_H
