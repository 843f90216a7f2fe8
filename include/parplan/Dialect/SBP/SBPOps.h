//===- SBPOps.h - sbp dialect operations ------------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_SBP_SBPOPS_H
#define PARPLAN_DIALECT_SBP_SBPOPS_H

#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Dialect/SBP/SBPDialect.h"
#include "parplan/Sbp/Resharding.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "parplan/Dialect/SBP/SBPOps.h.inc"

namespace parplan::sbp {
/// The step `op` performs when it is a resharding step op (sbp.all_gather,
/// ..., sbp.to_partial); std::nullopt for any other op.
std::optional<ReshardStep> getReshardStep(mlir::Operation *op);
} // namespace parplan::sbp

namespace parplan::sbp::detail {
/// Checks that `sbp` lays out a value of `type` over `mesh` (one entry per
/// mesh axis, split axes within the tensor's rank); `role` names the layout
/// in the message emitted on `op`. Values that are not ranked tensors pass.
mlir::LogicalResult verifyLayout(mlir::Operation *op, MeshOp mesh,
                                 mlir::ArrayAttr sbp, mlir::Type type,
                                 llvm::StringRef role);
} // namespace parplan::sbp::detail

#endif // PARPLAN_DIALECT_SBP_SBPOPS_H
