//===- NNDialect.h - nn dialect ---------------------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_NN_NNDIALECT_H
#define PARPLAN_DIALECT_NN_NNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "parplan/Dialect/NN/NNDialect.h.inc"

#endif // PARPLAN_DIALECT_NN_NNDIALECT_H
