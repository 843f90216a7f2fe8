//===- TrainingStep.h - what a training step holds and computes -*- C++ -*-===//
//
// Reads a training step that nn-autodiff built: which ops are the forward
// pass, which recompute it, which are backward and which update, the
// values kept from the forward to the backward pass, and the FLOPs and
// bytes of each part. The sharding search prices saved activations with
// it; `parplan train-step` prints it.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_TRAININGSTEP_H
#define PARPLAN_TRANSFORMS_TRAININGSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseSet.h"

#include <cstdint>

namespace parplan {

/// Whether `op` is a source of the step (a parameter, an input or a
/// constant): what it reads rather than computes.
bool isSourceOp(mlir::Operation *op);

/// Whether `module` holds a step: a training step (nn-autodiff's output,
/// `nn.training`) or an inference step (nn-inference-step's,
/// `nn.inference`). A step states its passes, element types and
/// micro-batches; a forward program as imported states none of them.
bool isStep(mlir::ModuleOp module);
/// "a training step", "an inference step", or "" for a module that is no
/// step: what a pass that builds one says it was given.
llvm::StringRef describeStep(mlir::ModuleOp module);

/// The forward pass: the ops the named results (the loss, or an inference
/// step's outputs) depend on, and `alsoOf` with the ops they depend on.
llvm::DenseSet<mlir::Operation *>
forwardPassOps(mlir::func::FuncOp function,
               llvm::ArrayRef<mlir::Operation *> alsoOf = {});

/// Forward values (results of computing ops the loss depends on) that an op
/// outside the forward pass reads: the activations a step keeps alive from
/// its forward to its backward pass. Empty unless `function` has a result
/// marked `nn.name = "loss"`.
llvm::DenseSet<mlir::Value> savedActivations(mlir::func::FuncOp function);

/// The micro-batches a step runs (nn-autodiff's or nn-inference-step's
/// `micro-batches`, kept as nn.training's or nn.inference's
/// `micro_batches`): 1 when the module says none.
int64_t microBatchCount(mlir::ModuleOp module);

/// The ops a step of several micro-batches runs once, after the last
/// micro-batch: those reading an nn.accumulate result, directly or through
/// others (the updates, and the boxing and casts before them), and those
/// read by such ops alone that read nothing of the batch (a replicated
/// weight's slice into its sharded update's layout), but a cross-mesh move.
/// The others run once per micro-batch. Fails, naming the op, when one of the
/// once-run ops reads a value of the batch other than through an nn.accumulate:
/// it would see the last micro-batch alone.
mlir::FailureOr<llvm::DenseSet<mlir::Operation *>>
opsAfterMicroBatches(mlir::func::FuncOp function);

/// Whether `op` is an optimizer's update of a parameter (nn.sgd_update,
/// nn.momentum_update, nn.adam_update).
bool isOptimizerUpdate(mlir::Operation *op);

/// Whether `reader` reads a value for parameter updates alone: an
/// optimizer's update, or a cast that only such readers read (mixed
/// precision's gradient in the master weights' type). A gradient's
/// reduction read so runs on the executor's gradients stream, behind the
/// backward.
bool readsForUpdatesOnly(mlir::Operation *reader);

/// The ops a step of one micro-batch runs after its backward: the
/// optimizer's updates and the ops reading their results. On a stage of a
/// pipeline they run while the stages before it are still in their
/// backward (opsAfterMicroBatches is their counterpart with micro-batches).
llvm::DenseSet<mlir::Operation *>
updateOpsOfOneMicroBatch(mlir::func::FuncOp function);

/// Of a step's backward, the ops whose result is a parameter's gradient or
/// a part of it: outside `forward` (forwardPassOps) and `after` (the
/// updates), of one result shaped as some parameter, read by one op, of
/// `after` or another of them (a weight's gradient product, a tied
/// weight's parts and their sum, their casts). The backward of an
/// activation reads on to more than one op, or has its shape. Moved to
/// another stage, such a part waits for no stage's backward, only for the
/// update.
llvm::DenseSet<mlir::Operation *>
parameterGradientOps(mlir::func::FuncOp function,
                     const llvm::DenseSet<mlir::Operation *> &forward,
                     const llvm::DenseSet<mlir::Operation *> &after);

/// Of `ops` (in program order), those computing a copy of the parameters
/// alone: an nn op reading at least one nn.param, directly or through
/// others of them, and otherwise nn.constants only, whose results are no
/// larger than its operands (a weight's low-precision copy, a transposed
/// or sliced weight; not an expand to the batch's shape, which is cheaper
/// to compute where it is read than to keep), or of any size with
/// `anySize`. Layout ops of the sbp dialect between them pass a copy on: a
/// boxing, and a cross-mesh move (a weight read on another stage, such as
/// a tied embedding on the last).
llvm::DenseSet<mlir::Operation *>
parameterCopies(llvm::ArrayRef<mlir::Operation *> ops, bool anySize = false);

/// The ops a step of several micro-batches runs once, before the first
/// micro-batch: the parameter copies of its micro-batch part (not of
/// `after`, opsAfterMicroBatches), which every micro-batch reads the same
/// and the step keeps, as Megatron-LM keeps its fp16 weights beside the
/// fp32 master copy. A boxing among them runs there only for a copy read
/// there; one that serves a micro-batch's op (a sharded copy's gather
/// ahead of its forward) runs once per micro-batch, but a slice, whose part
/// is no larger than the copy it cuts. A cross-mesh move
/// among them runs there whatever reads it: its stage keeps what it
/// received for the step, rather than receive it every micro-batch.
llvm::DenseSet<mlir::Operation *>
opsBeforeMicroBatches(mlir::func::FuncOp function,
                      const llvm::DenseSet<mlir::Operation *> &after);

struct TrainingStepStats {
  /// FLOPs (ShardableOpInterface::getCost) of each part of the step.
  double forwardFlops = 0, recomputeFlops = 0, backwardFlops = 0,
         optimizerFlops = 0;
  /// Of the forward FLOPs and the whole step, those of matrix products
  /// (matmul and gemm): the terms of Megatron-LM's FLOPs formula.
  double forwardMatmulFlops = 0, matmulFlops = 0;
  int64_t parameters = 0; // elements of the trained parameters
  int64_t parameterTensors = 0;
  int64_t untrainedTensors = 0; // float parameters frozen or without gradient
  /// Batch norms' running means and variances the step updates.
  int64_t runningStatisticTensors = 0;
  int64_t parameterBytes = 0; // every nn.param but optimizer state
  int64_t stateBytes = 0;     // nn.params with source = "zeros"
  int64_t savedActivationBytes = 0;
  /// The FLOPs above are of one micro-batch's program: the parts before
  /// the updates run this many times a step.
  int64_t microBatches = 1;
};

/// The figures of a training step (nn-autodiff's output).
TrainingStepStats analyzeTrainingStep(mlir::func::FuncOp function);

} // namespace parplan

#endif // PARPLAN_TRANSFORMS_TRAININGSTEP_H
