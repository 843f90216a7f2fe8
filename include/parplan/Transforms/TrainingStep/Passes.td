//===- Passes.td - TrainingStep passes ---------------------*- tablegen -*-===//
//
// The TrainingStep stage: the forward program @main made a training step
// (loss, gradients, optimizer, micro-batches, recomputation, casts).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_TRAINING_STEP_PASSES
#define PARPLAN_TRANSFORMS_TRAINING_STEP_PASSES

include "mlir/Pass/PassBase.td"

def NNDivideBatch : Pass<"nn-divide-batch", "::mlir::ModuleOp"> {
  let summary = "One micro-batch of a forward program whose batch is fixed";
  let description = [{
    Rewrites `@main`, a forward program whose batch is a number (an ONNX
    export without a symbolic batch), for one of `micro-batches`
    micro-batches: what importing the model with its batch symbolic and
    bound to `batch / micro-batches` would give.

    The batch is the leading dimension every `nn.input` shares. It is
    followed through each op by the op's own sharding rules: the op takes
    the first of its signatures (`ShardableOpInterface`) that splits every
    operand carrying the batch along its batch dimension and keeps the
    others whole (Broadcast); the results it splits carry the batch on
    along the signature's dimension. A reshape that keeps the batch
    outermost splits it as data parallelism would; one that moves it
    elsewhere, a reduction over it, or a constant of the batch's size
    combined with it stops the pass with one error naming the node. Every
    value that carries the batch then gets `1/micro-batches` of it along
    its dimension (a slice's sizes follow); the pass fails, changing
    nothing, where `micro-batches` does not divide one.

    ```mlir
    // nn-divide-batch="micro-batches=4"
    %x = nn.input "x" : tensor<16x32xf32>      // -> tensor<4x32xf32>
    %y = nn.matmul %x, %w : tensor<16x32xf32>, tensor<32x8xf32>
           -> tensor<16x8xf32>                 // -> tensor<4x8xf32>
    ```

    The compile driver runs it on a fixed-batch model for each micro-batch
    count it builds (docs/pipeline.md).

    Options:
    - `micro-batches`: how many micro-batches the batch is divided into
      (default 1: the batch is only followed, and the pass fails where it
      cannot be).
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches the batch is divided into">,
  ];
}

def NNInferenceStep : Pass<"nn-inference-step", "::mlir::ModuleOp"> {
  let summary = "Make the forward program @main an inference step";
  let description = [{
    Marks `@main`, a forward program, as the step an inference plan runs
    for serving: the forward pass alone, every result an output the plan
    writes. Nothing is added: no loss, no backward pass, no optimizer, so
    no activation is kept beyond its last reader and no parameter has
    state; the sharding search, the stages and the lowering price and run
    it as such (docs/inference.md). Each result keeps the name the
    importer gave it (`nn.output = "NAME"`, the ONNX graph output's
    name); a result without one is named `output<i>`. The module gets
    `nn.inference`, a dictionary of the options used.

    ```mlir
    // nn-inference-step="micro-batches=2"
    module attributes {nn.inference = {micro_batches = 2 : i64}} {
      func.func @main() -> (tensor<4x10xf32> {nn.output = "logits"}) { ... }
    }
    ```

    The pass fails, naming the result or the module, where `@main` is
    already a step (training or inference), where a result is not a
    floating-point or integer tensor of rank 1 or more under micro-batches,
    or where, with micro-batches, a result's dimension 0 is not the
    micro-batch's rows (the inputs' dimension 0): the executor stacks each
    micro-batch's outputs along dimension 0, as it slices the inputs.

    Options:
    - `micro-batches`: M (default 1). With M > 1, `@main` is the program
      of one micro-batch (its inputs are a slice of the batch, 1/M of it)
      and the step runs it M times; pipelined serving overlaps the stages'
      micro-batches. `nn.inference` keeps `micro_batches = M`.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches the step runs the forward pass for">,
  ];
}

def NNAutodiff : Pass<"nn-autodiff", "::mlir::ModuleOp"> {
  let summary = "Make the forward program @main a training step";
  let description = [{
    Rewrites `@main`, a forward program, into one training step: the
    forward ops, a loss on one of its outputs, the reverse-mode derivative
    of the loss with respect to every trainable parameter, and the
    optimizer's update of each parameter and of its state. The step returns
    the loss (result attribute `nn.name = "loss"`) and then every updated
    value, each with `nn.updates = "NAME"` naming the `nn.param` it replaces
    in the next step. Optimizer state are `nn.param`s with
    `source = "zeros"`, named `PARAM.momentum`, `PARAM.adam.m`,
    `PARAM.adam.v`, and the step count `optimizer.step`. The module gets
    `nn.training`, a dictionary of the options used. Formulas, the backward
    rule of every op and the recomputation policies are in
    docs/training.md.

    A parameter is trainable when it has a floating-point type, does not
    match `frozen`, and the loss depends on it through a differentiable
    operand (frozen batch_norm's running statistics, gather's indices and
    where's condition are not). A forward op the pass cannot differentiate is an
    error naming the op.

    Options:
    - `loss`: `cross-entropy` (softmax cross-entropy of the output's last
      axis against integer labels of the output's shape without it, the
      default) or `mse` (mean squared error against targets of the output's
      shape).
    - `output`: the index of the `@main` result the loss reads (default 0);
      the other results are dropped.
    - `labels`: the name of the new `nn.input` of labels or targets
      (default `labels`).
    - `optimizer`: `sgd`, `momentum`, `adam` (default), `adamw`, or
      `none`: the step returns the loss and then each parameter's gradient,
      marked `nn.gradient = "NAME"`, and updates nothing.
    - `lr`: the learning rate (default 1e-3).
    - `momentum` (default 0.9), `beta1` (0.9), `beta2` (0.999), `epsilon`
      (1e-8), `weight-decay` (default 0; AdamW's default is 0.01).
    - `frozen`: comma-separated globs of parameter names not to train (for
      buffers that models export as initializers, such as attention masks).
    - `recompute`: `none` (default), `selective` (the attention core,
      from the score matmul to the softmax, is recomputed in backward) or
      `full` (every layer is recomputed from its input; a layer is the ops
      whose parameters share a name prefix ending in a number, such as
      `transformer.h.3.`). The recomputed layers, by name, are listed in
      `nn.training`'s `recomputed_layers`.
    - `recompute-layers`: with `full`, how many layers of each class (the
      layers whose names differ only in their number, such as
      `transformer.h.N`) are recomputed, the first ones (default -1: all);
      the others keep their activations.
    - `mixed-precision`: `none` (default), `bf16` or `fp16`: the forward and
      backward compute in that type from fp32 master parameters, the loss
      and the optimizer in fp32.
    - `loss-scale`: the static loss scale of `fp16` (default 1024); the
      optimizer divides it out.
    - `gradient-sums`: under mixed precision with micro-batches, the type
      the gradients are summed in over the micro-batches, and so reduced
      in across devices: `f32` (default) or `low`, the mixed precision's
      own (half the bytes, and a sum as precise as that type; Megatron-LM's
      default before `--accumulate-allreduce-grads-in-fp32`); the sum is
      cast to fp32 before its update.
    - `micro-batches`: M (default 1). With M > 1, `@main` is the program
      of one micro-batch (its inputs are a slice of the batch, 1/M of it)
      and the step runs it M times before one update: every gradient is
      summed over the micro-batches by an `nn.accumulate` (in fp32 under
      mixed precision), the backward pass is seeded with 1/M so that the
      sum is the gradient of the mean loss over the whole batch, and the
      returned loss is that mean. The ops reading an accumulated sum (the
      updates and what they need) run once, after the last micro-batch.
      `nn.training` keeps `micro_batches = M`.
    - `batch-norm`: `batch` (default) trains every `nn.batch_norm` as
      PyTorch's `model.train()` does: it normalizes with the batch's mean
      and biased variance over (N, spatial), the gradient flows through
      them, and the step returns the running mean and variance updated
      with the op's `momentum` (the unbiased variance), each marked
      `nn.updates` and `nn.running_statistic`. With micro-batches the
      update takes the mean of the micro-batches' statistics. `frozen`
      keeps the given statistics fixed (fine-tuning).
    - `dropout`: `on` (default) makes every `nn.dropout` of a positive
      ratio the training form, reading the step count (`optimizer.step`,
      the state Adam counts with, added for any optimizer when the model
      has dropout) and keyed by `dropout-seed` and its position among the
      step's dropouts, and with micro-batches reading `nn.micro_batch` so
      that each micro-batch draws its own masks; its gradient is the same
      mask on the cotangent. `off` removes them (the identity).
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"cross-entropy\"",
           "cross-entropy or mse">,
    Option<"output", "output", "unsigned", "0",
           "Index of the @main result the loss reads">,
    Option<"labels", "labels", "std::string", "\"labels\"",
           "Name of the labels (or targets) input">,
    Option<"optimizer", "optimizer", "std::string", "\"adam\"",
           "sgd, momentum, adam, adamw or none">,
    Option<"lr", "lr", "double", "1e-3", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.9", "SGD momentum">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam beta2">,
    Option<"epsilon", "epsilon", "double", "1e-8", "Adam epsilon">,
    Option<"weightDecay", "weight-decay", "double", "-1",
           "Weight decay (default 0, AdamW 0.01)">,
    Option<"frozen", "frozen", "std::string", "\"\"",
           "Comma-separated globs of parameters not to train">,
    Option<"recompute", "recompute", "std::string", "\"none\"",
           "none, selective or full">,
    Option<"recomputeLayers", "recompute-layers", "int64_t", "-1",
           "With full: the first N layers of each class (-1: all)">,
    Option<"mixedPrecision", "mixed-precision", "std::string", "\"none\"",
           "none, bf16 or fp16">,
    Option<"lossScale", "loss-scale", "double", "1024",
           "Static loss scale of fp16">,
    Option<"gradientSums", "gradient-sums", "std::string", "\"f32\"",
           "f32 or low: the type of the gradients' sums over micro-batches">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches the step accumulates gradients over">,
    Option<"batchNorm", "batch-norm", "std::string", "\"batch\"",
           "batch (normalize with the batch's statistics) or frozen">,
    Option<"dropout", "dropout", "std::string", "\"on\"",
           "on (drop elements in training) or off (the identity)">,
    Option<"dropoutSeed", "dropout-seed", "int64_t", "0",
           "Seed of the dropout masks">
  ];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

#endif // PARPLAN_TRANSFORMS_TRAINING_STEP_PASSES
