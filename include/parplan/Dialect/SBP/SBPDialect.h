//===- SBPDialect.h - sbp dialect -------------------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_SBP_SBPDIALECT_H
#define PARPLAN_DIALECT_SBP_SBPDIALECT_H

#include "mlir/IR/Dialect.h"

#include "parplan/Dialect/SBP/SBPDialect.h.inc"

#endif // PARPLAN_DIALECT_SBP_SBPDIALECT_H
