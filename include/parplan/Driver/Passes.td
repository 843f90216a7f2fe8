//===- Passes.td - the compile driver as a pass ------------*- tablegen -*-===//
//
// The compile driver (Driver/Compile.h) as one pass over an imported model,
// so that parplan-opt runs what `parplan compile` runs, decisions included.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DRIVER_PASSES
#define PARPLAN_DRIVER_PASSES

include "mlir/Pass/PassBase.td"

def ParplanCompile : Pass<"parplan-compile", "mlir::ModuleOp"> {
  let summary = "An imported model to per-device plan programs, decided as "
                "parplan compile decides them";
  let description = [{
    Runs the compile driver on the module: the training step, the pipeline's
    shape where it is left open (stages, micro-batches, schedule; see
    docs/pipeline.md), the layout search with its baselines, the
    recomputation fallback when no plan fits, the lowering to per-device
    programs, and the check that the plan fits its devices. The module is
    the model at its micro-batch (`parplan import`'s output, with
    `--dim batch=B/M` when micro-batches are given): a search over
    micro-batch counts imports the model again at each, which only `parplan
    compile` can.

    Each option is `parplan compile`'s flag of the same name
    (docs/cli.md#parplan-compile):
    - `cluster`: a preset or cluster file, attached when the module carries
      no `sbp.cluster` (default `dgx-h100`).
    - `mesh`, `strategy`, `annotations`, `tensor`, `pipeline`: the layout.
    - `stages`: a count or `auto` (empty: not given; strategy auto
      pipelines a mesh over several nodes).
    - `micro-batches`: a count or `auto` (empty: not given); `batch`: the
      global batch they divide.
    - `schedule`: the pipeline schedule or `auto` (empty: not given);
      `chunks`: interleaved's chunks per stage (0: not given, 2).
    - `recompute`: none, selective or full (empty: not given, when a step
      that fits nowhere is tried with selective, then full);
      `recompute-layers`.
    - `train`: a training step (default true, as `--train`); false
      compiles an inference plan, the forward pass alone
      (docs/inference.md), which reads none of the training step's options
      below.
    - `loss`, `output-index`, `labels`, `optimizer`, `lr`, `weight-decay`,
      `frozen`, `mixed-precision`, `gradient-sums`, `batch-norm`, `dropout`,
      `dropout-seed`, `untie`: the training step.
    - `stop-after`: `nn`, `sbp` or `plan` (default), as `--emit`.
    - `allow-over-memory`: a plan over the devices' memory is a warning,
      not an error.
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"dgx-h100\"",
           "Cluster preset or file, when the module carries none">,
    Option<"mesh", "mesh", "std::string", "\"\"",
           "Mesh shape, e.g. 2x4 (default: the cluster's)">,
    Option<"strategy", "strategy", "std::string", "\"auto\"",
           "auto, exact, data-parallel, megatron or replicated">,
    Option<"annotations", "annotations", "std::string", "\"\"",
           "File of pinned layouts (docs/sbp-annotations.md)">,
    Option<"stages", "stages", "std::string", "\"\"",
           "Pipeline stages: a count or auto (empty: not given)">,
    Option<"tensor", "tensor", "int64_t", "0",
           "With strategy megatron: the tensor-parallel degree">,
    Option<"pipeline", "pipeline", "int64_t", "0",
           "With strategy megatron: the pipeline stages">,
    Option<"batch", "batch", "int64_t", "0",
           "The global batch the micro-batches divide">,
    Option<"microBatches", "micro-batches", "std::string", "\"\"",
           "Micro-batches: a count or auto (empty: not given)">,
    Option<"schedule", "schedule", "std::string", "\"\"",
           "Pipeline schedule or auto (empty: not given)">,
    Option<"chunks", "chunks", "int64_t", "0",
           "Model chunks of each stage under interleaved (0: not given)">,
    Option<"recompute", "recompute", "std::string", "\"\"",
           "none, selective or full (empty: not given)">,
    Option<"recomputeLayers", "recompute-layers", "int64_t", "-1",
           "With full: the first N layers of each class (-1: all)">,
    Option<"train", "train", "bool", "true",
           "A training step (false: an inference plan)">,
    Option<"loss", "loss", "std::string", "\"cross-entropy\"",
           "cross-entropy or mse">,
    Option<"outputIndex", "output-index", "unsigned", "0",
           "The model output the loss reads">,
    Option<"labels", "labels", "std::string", "\"labels\"",
           "Name of the labels input">,
    Option<"optimizer", "optimizer", "std::string", "\"adam\"",
           "sgd, momentum, adam or adamw">,
    Option<"lr", "lr", "double", "1e-3", "Learning rate">,
    Option<"weightDecay", "weight-decay", "double", "-1",
           "Weight decay (negative: the optimizer's default)">,
    Option<"frozen", "frozen", "std::string", "\"\"",
           "Globs of parameters not trained">,
    Option<"mixedPrecision", "mixed-precision", "std::string", "\"none\"",
           "none, bf16 or fp16">,
    Option<"gradientSums", "gradient-sums", "std::string", "\"f32\"",
           "f32 or low">,
    Option<"batchNorm", "batch-norm", "std::string", "\"batch\"",
           "batch or frozen">,
    Option<"dropout", "dropout", "std::string", "\"on\"", "on or off">,
    Option<"dropoutSeed", "dropout-seed", "int64_t", "0",
           "Seed of the dropout masks">,
    ListOption<"untie", "untie", "std::string",
               "Parameters to give each layer's use a copy of">,
    Option<"stopAfter", "stop-after", "std::string", "\"plan\"",
           "nn, sbp or plan: the stage whose IR the pass leaves">,
    Option<"allowOverMemory", "allow-over-memory", "bool", "false",
           "A plan over the devices' memory is a warning, not an error">,
  ];
}

#endif // PARPLAN_DRIVER_PASSES
