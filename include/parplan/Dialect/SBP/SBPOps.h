//===- SBPOps.h - sbp dialect operations ------------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_SBP_SBPOPS_H
#define PARPLAN_DIALECT_SBP_SBPOPS_H

#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Dialect/SBP/SBPDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "parplan/Dialect/SBP/SBPOps.h.inc"

#endif // PARPLAN_DIALECT_SBP_SBPOPS_H
