//===- NNOps.h - nn dialect operations --------------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_NN_NNOPS_H
#define PARPLAN_DIALECT_NN_NNOPS_H

#include "parplan/Dialect/NN/NNDialect.h"
#include "parplan/Dialect/NN/NNInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "parplan/Dialect/NN/NNEnums.h.inc"

#define GET_OP_CLASSES
#include "parplan/Dialect/NN/NNOps.h.inc"

#endif // PARPLAN_DIALECT_NN_NNOPS_H
