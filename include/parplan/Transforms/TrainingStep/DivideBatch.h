//===- DivideBatch.h - micro-batches of a fixed batch -----------*- C++ -*-===//
//
// A model exported with its batch as a number (torch.onnx.export without
// dynamic_axes) is micro-batched as one whose batch is symbolic: the batch
// is found where the inputs share their leading dimension and followed
// through the program by the ops' own sharding rules, the rules that split
// a batch across data-parallel devices; a micro-batch is that split in
// time (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_TRAININGSTEP_DIVIDEBATCH_H
#define PARPLAN_TRANSFORMS_TRAININGSTEP_DIVIDEBATCH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"

namespace parplan {

/// Where the batch lies in a forward program: its size, and for each value
/// that carries it, the dimension it lies along.
struct BatchDimensions {
  int64_t batch = 0;
  llvm::DenseMap<mlir::Value, int64_t> dimensionOf;
};

/// The batch of @main in `module`: the leading dimension every nn.input
/// shares, followed through each op by the first of its sharding
/// signatures that splits the operands carrying the batch along it and
/// keeps the others whole. Fails with one error naming the input or node
/// where the batch cannot be followed.
mlir::FailureOr<BatchDimensions> followBatch(mlir::ModuleOp module);

/// Rewrites @main in `module` for one of `microBatches` micro-batches of
/// its batch: every value that carries the batch gets 1/`microBatches` of
/// it along its dimension (results, slices' sizes, @main's result types).
/// Fails with one error naming the node, leaving `module` unchanged, where
/// the batch cannot be followed or `microBatches` does not divide a
/// dimension.
mlir::LogicalResult divideBatch(mlir::ModuleOp module, int64_t microBatches);

} // namespace parplan

#endif // PARPLAN_TRANSFORMS_TRAININGSTEP_DIVIDEBATCH_H
