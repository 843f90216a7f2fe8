//===- PlanOps.h - plan dialect operations ----------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_PLAN_PLANOPS_H
#define PARPLAN_DIALECT_PLAN_PLANOPS_H

#include "parplan/Dialect/AttrDouble.h"
#include "parplan/Dialect/Plan/PlanDialect.h"
#include "parplan/Sbp/CrossMeshPart.h"
#include "parplan/Sbp/Sbp.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

#include "parplan/Dialect/Plan/PlanEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "parplan/Dialect/Plan/PlanAttrs.h.inc"

#define GET_OP_CLASSES
#include "parplan/Dialect/Plan/PlanOps.h.inc"

namespace parplan::plan {

/// The dialect's reduction and buffer kinds as the vocabulary's
/// (Support/Vocabulary.h) and back: the only conversions between them.
parplan::ReduceKind toReduceKind(ReduceKind kind);
ReduceKind toPlanReduceKind(parplan::ReduceKind kind);
parplan::BufferKind toBufferKind(BufferKind kind);
BufferKind toPlanBufferKind(parplan::BufferKind kind);

/// The plan's whole mesh, around `op`: the module's `plan.mesh_shape`, or,
/// when it has none, one axis up to the highest device any program lists.
/// Programs and groups naming a plan.mesh read coordinates in that one.
llvm::SmallVector<int64_t> planMeshShape(mlir::Operation *op);

/// The plan's `plan.mesh_shares` for a mesh of `meshShape`, into `shares`
/// (empty without the attribute). True, with `invalid` set to why, where
/// they are not shares of that mesh.
bool planMeshShares(mlir::Operation *op, const std::vector<int64_t> &meshShape,
                    MeshShares &shares, std::string &invalid);

/// The bytes of a buffer of `type` (an i1 takes a byte).
int64_t bufferBytes(mlir::MemRefType type);

/// Whether `op` is a collective marked `feeds_update`, which the executor
/// runs on its gradients stream (an all-reduce, a reduce-scatter, an
/// all-gather or a broadcast).
bool feedsUpdate(mlir::Operation *op);

/// The bytes each device running `op` sends in it (the devices of a
/// program have blocks of the same extents, so send alike), under the ring
/// algorithms the cost model assumes (docs/cost-model.md): an all-gather
/// its output less its own part, a reduce-scatter its input less its own
/// part, an all-reduce 2(n-1)/n of the buffer, an all-to-all its input less
/// the part it keeps, a broadcast or send the buffer; in a part of a
/// cross-mesh move, the tiles the busiest device of the program sends (a
/// broadcast counted once, from its sender). 0 for anything else,
/// and for a collective whose group cannot be found. `symbols` caches the
/// module's symbol table across calls (a lookup without it scans the
/// module's groups, meshes and programs).
double bytesSent(mlir::Operation *op,
                 mlir::SymbolTableCollection *symbols = nullptr);

} // namespace parplan::plan

#endif // PARPLAN_DIALECT_PLAN_PLANOPS_H
