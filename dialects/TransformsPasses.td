//===- TransformsPasses.td - passes over nn programs ------*- tablegen -*-===//
//
// The Transforms stage: rewrites of logical (nn) programs.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_PASSES
#define PARPLAN_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def NNFuseLayerNorm : Pass<"nn-fuse-layer-norm", "::mlir::func::FuncOp"> {
  let summary = "Fuse decomposed layer normalizations into nn.layer_norm";
  let description = [{
    Exporters that predate ONNX's LayerNormalization (opset 17) spell layer
    normalization as nine ops. This pass finds

    ```
    mean = reduce_mean(x, axes = A, keepdims)
    d    = sub(x, mean)
    var  = reduce_mean(pow(d, 2) or mul(d, d), axes = A, keepdims)
    n    = div(d, sqrt(add(var, epsilon)))
    y    = add(mul(n, scale), bias)        (or y = mul(n, scale))
    ```

    where `A` are the trailing dimensions from some axis `k` to the last,
    `epsilon` is a scalar constant and `scale`/`bias` have the normalized
    shape `x.shape[k:]`, and replaces `y` with
    `nn.layer_norm %x, %scale, %bias axis = k epsilon = epsilon`. Operand
    order of the commutative ops does not matter. A candidate that differs in
    any detail is left alone.

    Options: none.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

def NNFuseGelu : Pass<"nn-fuse-gelu", "::mlir::func::FuncOp"> {
  let summary = "Fuse decomposed GELU activations into nn.gelu";
  let description = [{
    Finds the two forms exporters write GELU in and replaces them with one
    `nn.gelu`:

    - erf form (PyTorch's exact GELU before ONNX Gelu, opset 20):
      `x * (erf(x / sqrt(2)) + 1) * 0.5`, the division also written as a
      multiplication by `1 / sqrt(2)`, becomes `nn.gelu %x`;
    - tanh form (GPT-2's `gelu_new`, BERT's TF port):
      `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`, the cube
      written as `pow(x, 3)` or as products of `x`, becomes
      `nn.gelu %x approximate = tanh`.

    Products may be nested and ordered in any way; constants must match to
    a relative 1e-4.

    Options: none.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

def NNFoldIntoMatMul : Pass<"nn-fold-into-matmul", "::mlir::func::FuncOp"> {
  let summary = "Fold transposes and scalar scalings into the products";
  let description = [{
    A matrix library reads an operand transposed and scales a product for
    free; a transpose or a scaling written as its own op is a pass over
    memory. This pass rewrites

    ```
    matmul(transpose(x, [..., r-1, r-2]), y)  -> matmul(x, y) {transpose_lhs}
    matmul(x, transpose(y, [..., r-1, r-2]))  -> matmul(x, y) {transpose_rhs}
    div(matmul(x, y), c), mul(matmul(x, y), c)
                                      -> matmul(x, y) {alpha = 1/c, or c}
    matmul(div(x, c), y), matmul(mul(x, c), y), and on the right
                                      -> matmul(x, y) {alpha = 1/c, or c}
    ```

    where the transpose swaps the last two dimensions only (a flag already
    set is toggled), `c` is a splat constant that does not broadcast the
    other operand to a larger shape, and the scaled product, or the scaled
    operand, has no other use. Attention as exporters write it,
    `softmax(where(mask, q k^T / sqrt(d), -inf)) v`, becomes products with
    flags and alpha, and the tied LM head's `matmul(x, transpose(wte))` reads
    the embedding as it is stored. A transpose left without uses is erased
    by the canonicalizer that follows.

    Options: none.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

def NNUntieParameters : Pass<"nn-untie-parameters", "::mlir::func::FuncOp"> {
  let summary = "Warn of a parameter shared by layers; give each use a copy";
  let description = [{
    `torch.onnx.export` merges initializers of equal values: the zero biases
    and unit norm weights of a freshly initialized model become one
    initializer read by many layers, which a training step would then train
    as one tied parameter. An `nn.param` of a floating-point type read by
    ops of more than one layer is such a tie; the layer of an op is its node
    name up to the last `/` (`/layer1/layer1.0/bn1/BatchNormalization` is in
    `/layer1/layer1.0/bn1`), or the whole name when it has none. A batch
    norm's running statistics are a group of their own within the layer
    (the step updates them itself): a zero bias that is also the running
    mean of the same batch norm is a tie too. The pass warns of each, in
    one line naming the parameter and its groups.

    A parameter listed in `untie` gets a copy per group instead: the first
    keeps the parameter, the K-th other one reads `NAME.untied.K`, a part
    (`part_of`, `part`) covering the whole stored tensor, so every copy
    loads the same bytes and is trained (or updated) on its own. A name in
    `untie` that is no parameter, is read by one group only, or is a
    scalar, is an error.

    Options:
    - `untie`: comma-separated parameter names to untie.
    - `frozen`: comma-separated globs of parameters not trained
      (nn-autodiff's): not warned of.
  }];
  let options = [
    ListOption<"untie", "untie", "std::string",
               "Parameters to give each layer's use a copy of">,
    Option<"frozen", "frozen", "std::string", "\"\"",
           "Comma-separated globs of parameters not trained">
  ];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

def NNSplitFusedProjections : Pass<"nn-split-fused-projections",
                                   "::mlir::func::FuncOp"> {
  let summary = "Split fused projections into one per part";
  let description = [{
    GPT-2 computes queries, keys and values with one projection and splits
    its result:

    ```
    y = matmul(x, W) [+ b]        W: [k, n1 + n2 + n3] parameter
    q, k, v = split(y, axis = -1, sizes = [n1, n2, n3])
    ```

    The sharding search cannot split the columns of `W` for each part (a
    column split of `y` cuts across the parts), so Megatron's
    column-parallel attention is out of its reach. This pass rewrites the
    pattern into one projection per part, each with its own parameters:
    `q = matmul(x, W[:, 0:n1]) [+ b[0:n1]]`, and so on. The parts are
    `nn.param`s with `part_of` (the stored weight) and `part` (where in it),
    so weights are still read from the model's initializer, each part from
    its block. Optimizers are elementwise, so training the parts trains the
    fused weight.

    Also `gemm` (with or without `trans_b`, `alpha` and `beta` kept) whose
    result is split along its columns. A projection whose result has other
    users, or whose weight has, is left alone.

    Options: none.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
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

def AttachCluster : Pass<"attach-cluster", "::mlir::ModuleOp"> {
  let summary = "Attach the cluster the passes lay the program out for";
  let description = [{
    Resolves a cluster (a built-in preset, or a cluster file read here, once)
    and attaches it to the module as `sbp.cluster` (`#sbp.cluster`), in
    place of any the module carried. Every pass that prices layouts, places
    stages or plans moves (place-stages, sbp-assign, insert-cross-mesh,
    insert-boxing, expand-boxing, lower-to-plan) reads the cluster from
    there, through `ClusterAnalysis`, and fails with one line on a module
    that carries none. `parplan compile` and `parplan-compile` attach the
    cluster of `--cluster` themselves.

    ```mlir
    // parplan-opt --attach-cluster="cluster=dgx-h100x2"
    module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h100x2">} {}
    ```

    Options:
    - `cluster`: a preset name (`parplan clusters` lists them) or the path
      of a cluster file (docs/cluster.md); default `dgx-h100`.
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"dgx-h100\"",
           "A cluster preset or the path of a cluster file">,
  ];
  let dependentDialects = ["::parplan::sbp::SBPDialect"];
}

def PlaceStages : Pass<"place-stages", "::mlir::ModuleOp"> {
  let summary = "Put every op on the mesh of the stage the annotations name";
  let description = [{
    Reads the `stages` of the module's `sbp.annotations`
    (docs/sbp-annotations.md): each names a mesh (shape, cluster devices)
    and globs over node names. Declares `sbp.mesh @NAME(shape = ...,
    devices = [...])` per stage and marks every op of `@main` with
    `sbp.stage = @NAME`:

    - a node whose name a stage's glob matches is on that stage (a name two
      stages match is an error naming both); backward ops carry their
      forward node's name and an optimizer update its parameter's, so they
      follow;
    - any other op reading staged values is on the latest of their stages,
      or, outside a training step's forward pass, on the earliest (gradients
      flow back);
    - what is left (an input, a constant) is on the earliest stage of its
      users, or the first stage;
    - a source the step never updates (a frozen parameter, a constant, a
      batch input: the same values by name on every device) gets a copy on
      each other stage reading it, rather than a move.

    A stage whose globs match nothing is an error.

    With `stages=N` (N > 1) and no stages in the annotations, the pass
    places N stages itself: meshes `@stage0` .. `@stageN-1` cut the first
    axis of the mesh (`mesh`, else the cluster's default) into N equal
    blocks of consecutive devices, and the forward pass is cut between its
    layers into N contiguous runs of balanced work (the op cost's flops):
    a layer is the ops reading the parameters of one numbered prefix
    ("transformer.h.3"), or of one module ("fc1") where the names have no
    number, and the ops that follow from them. Each forward op's backward
    ops and updates follow it as above. Errors: N not dividing the mesh's
    first axis, fewer layers than stages, a negative N, and stages in both
    the option and the annotations.

    With `chunks=V` (V > 1, with `stages=N`), each stage holds V model
    chunks for the interleaved schedule (Megatron-LM 2021): the layers are
    cut into N x V runs, run v on virtual stage v, which is chunk v / N of
    stage v mod N. Ops are ordered by virtual stage where the rules above
    say latest or earliest, every op gets `sbp.chunk = c`, and the module
    `sbp.chunks = V`. Errors: chunks below 1, chunks with annotated stages
    or without stages, fewer layers than N x V.

    Without stages the pass does nothing. `sbp-assign` then lays out each
    op on its stage's mesh and `insert-cross-mesh` moves values between
    stages.

    Cutting stages evenly reads the cluster from the module's `sbp.cluster`
    (attach-cluster) for the default mesh; pinned stages need none.

    Options:
    - `stages`: the number of stages to place (0 or 1: only the
      annotations' stages).
    - `chunks`: the model chunks of each stage (1: one run of layers each).
    - `mesh`: the mesh the stages cut, e.g. 16x8 (default: the cluster's).
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "0",
           "Stages to place, cutting the mesh and the layers evenly">,
    Option<"chunks", "chunks", "int64_t", "1",
           "Model chunks per stage (the interleaved schedule's)">,
    Option<"mesh", "mesh", "std::string", "\"\"",
           "The mesh the stages cut, e.g. 16x8 (default: the cluster's)">,
  ];
  let dependentDialects = ["::parplan::sbp::SBPDialect"];
}

def SbpAssign : Pass<"sbp-assign", "::mlir::ModuleOp"> {
  let summary = "Choose an nd-SBP sharding for every op by the cost model";
  let description = [{
    Lays the program `@main` out over a device mesh: for every op and every
    mesh axis it chooses one of the op's candidate SBP signatures
    (`ShardableOpInterface::getSbpSignatures`; an n-D signature is one 1-D
    signature per mesh axis) so that the predicted step time, compute of
    the local shards plus the resharding (boxing) on every edge, is least
    and the per-device memory fits. It adds `sbp.mesh @mesh` and attaches
    `sbp.sharding` to every op; the values returned by `@main` are laid out
    without Partial entries. The cost model and the search are described in
    docs/sbp-assign.md.

    An op without a sharding rule stops the pass with an error naming it and
    its ONNX node. Ops of identical repeated layers (same op, attributes,
    types and neighbourhood) share one decision, so the search does not grow
    with depth.

    The cluster is the module's `sbp.cluster` (attach-cluster): the pass
    fails with one line on a module without one.

    Options:
    - `mesh`: the mesh shape, e.g. `1x8` (default: the cluster's default
      shape, `[nodes, devices per node]`).
    - `strategy`: `auto` (graph reduction + coordinate descent, default;
      every baseline below is planned too, and the least predicted step
      wins), `exact` (branch and bound; fails on graphs too large for it),
      `data-parallel` (inputs split along the batch on every axis,
      parameters replicated), `megatron` (column-then-row split of
      attention and MLP on the last mesh axis, data parallel on the others)
      or `replicated` (inputs and parameters whole on every device).
    - `training`: cost a training step (forward, backward, gradient
      synchronization, optimizer) rather than inference (default true).
    - `optimizer`: `sgd`, `momentum`, `adam` or `adamw` (default `adam`).
    - `mixed-precision`: bf16/fp16 compute and activations, fp32 master
      weights (default true).
    - `share-layers`: identical repeated layers share one decision (default
      true).
    - `starts`: with `auto`, `all` (default) lays out with the search and
      with every baseline and keeps the least predicted step; `search` the
      search alone (what the pipeline search compares shapes by,
      docs/pipeline.md); `baselines` the baselines alone (the rest of `all`
      on a shape the search alone laid out already).
    - `explain`: attach `sbp.explain` (cost, runner-up, its cost) to every op.
    - `schedule`: on stages with micro-batches, the order the stages run
      them in (`gpipe`, `1f1b`, default, `eager-1f1b` or `sequential`):
      each stage keeps the activations of as many micro-batches as the
      schedule has in flight on it, and the predicted step is the
      schedule's timeline (docs/pipeline.md).

    Layouts pinned on named nodes (docs/sbp-annotations.md) come from the
    module's `sbp.annotations` (`{file, text}`, attached by the tools'
    `--annotations FILE`); pins that cannot hold are errors. The plan's
    figures go into the module's `sbp.plan`, from which the tools print
    summaries and write `--explain-json`.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", "\"\"",
           "Mesh shape, e.g. 1x8 (default: the cluster's)">,
    Option<"strategy", "strategy", "std::string", "\"auto\"",
           "auto, exact, data-parallel, megatron or replicated">,
    Option<"training", "training", "bool", "true",
           "Cost a training step rather than inference">,
    Option<"optimizer", "optimizer", "std::string", "\"adam\"",
           "sgd, momentum, adam or adamw">,
    Option<"mixedPrecision", "mixed-precision", "bool", "true",
           "bf16/fp16 compute with fp32 master weights">,
    Option<"shareLayers", "share-layers", "bool", "true",
           "Identical repeated layers share one decision">,
    Option<"starts", "starts", "std::string", "\"all\"",
           "With auto: all (the search and every baseline), search or "
           "baselines">,
    Option<"explain", "explain", "bool", "false",
           "Attach sbp.explain to every op">,
    Option<"schedule", "schedule", "std::string",
           "::parplan::schedule::kDefaultPipelineScheduleName",
           "The order stages run micro-batches in: gpipe, 1f1b, eager-1f1b "
           "or sequential">
  ];
  let dependentDialects = ["::parplan::sbp::SBPDialect"];
}

def InsertCrossMesh : Pass<"insert-cross-mesh", "::mlir::ModuleOp"> {
  let summary = "Make every move of a value between stages an explicit op";
  let description = [{
    After `sbp-assign` on a program placed on stages (`place-stages`):
    wherever an op reads a value produced on another mesh, inserts the move
    the search priced (docs/cross-mesh.md):

    - `sbp.boxing` on the source mesh when the source layout holds Partial
      entries (reduced to Broadcast: the move carries whole values);
    - `sbp.cross_mesh %v from @src [...] to @dst [...]` with the planner's
      `mode`, `balancing` and predicted `time`;
    - `sbp.boxing` on the destination mesh into the reader's layout when
      that holds Partial entries.

    Readers on one mesh wanting one layout share one move. Values `@main`
    returns stay on their producer's mesh. Run before `insert-boxing`, which
    rejects a use across meshes.

    Moves are planned on the module's `sbp.cluster`, the cluster
    `sbp-assign` priced them on.

    Options:
    - `mode`: `cheapest` (default: the least predicted of the three modes,
      each with either balancing), or `send-recv`, `send-recv+all-gather`
      or `broadcast` to force one (its cheaper balancing).
    - `mixed-precision`: price floating-point values at 2 bytes per element
      (default true), as `sbp-assign` does.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"cheapest\"",
           "cheapest, send-recv, send-recv+all-gather or broadcast">,
    Option<"mixedPrecision", "mixed-precision", "bool", "true",
           "Floating-point values move at 2 bytes per element">
  ];
  let dependentDialects = ["::parplan::sbp::SBPDialect"];
}

def InsertBoxing : Pass<"insert-boxing", "::mlir::ModuleOp"> {
  let summary = "Make every change of layout an explicit sbp.boxing";
  let description = [{
    After `sbp-assign`: wherever the layout an op produces (its
    `sbp.sharding` result entry) differs from the layout a user reads it in
    (the user's operand entry), inserts
    `sbp.boxing %v on @mesh src -> dst {time}` carrying its predicted time
    on the cluster (the price of the steps `planResharding` chooses, which
    `expand-boxing` writes out), and makes the user read the boxed value. Users that need the same layout
    share one boxing, placed right after the producer. A value `@main`
    returns is boxed to the layout its `func.return` operand entry names.

    In a training step (`nn.training`), a forward value that the backward
    pass reads is kept from the one to the other at the layout its producer
    makes, as `sbp-assign` counts saved activations: its backward readers
    share a boxing of their own, placed before the first of them, rather
    than read the forward pass's boxed copy, which would then be kept too
    (a gathered activation per micro-batch in flight instead of a shard).

    Boxings are priced on the module's `sbp.cluster`, the cluster
    `sbp-assign` priced them on.

    Options:
    - `mixed-precision`: price transfers of floating-point values at 2 bytes
      per element (default true), as `sbp-assign` does.
  }];
  let options = [
    Option<"mixedPrecision", "mixed-precision", "bool", "true",
           "Floating-point values move at 2 bytes per element">
  ];
  let dependentDialects = ["::parplan::sbp::SBPDialect"];
}

def ExpandBoxing : Pass<"expand-boxing", "::mlir::ModuleOp"> {
  let summary = "Write every sbp.boxing as its typed resharding steps";
  let description = [{
    After `insert-boxing`: replaces each `sbp.boxing` by the chain of step
    ops that the cost model priced for it (`sbp.all_gather`,
    `sbp.reduce_scatter`, `sbp.all_reduce`, `sbp.all_to_all`, `sbp.slice`,
    `sbp.to_partial`), one mesh axis each, from `planResharding`
    (Sbp/Resharding.h): the cheapest sequence on the cluster, detouring
    through B where an outer mesh axis must change a dimension an inner one
    splits. A boxing no sequence can perform is an error naming its layouts.

    Steps are chosen on the module's `sbp.cluster`, the cluster
    `insert-boxing` priced them on.

    Options:
    - `mixed-precision`: price transfers of floating-point values at 2 bytes
      per element (default true), as `insert-boxing` does.
  }];
  let options = [
    Option<"mixedPrecision", "mixed-precision", "bool", "true",
           "Floating-point values move at 2 bytes per element">
  ];
  let dependentDialects = ["::parplan::sbp::SBPDialect"];
}

def LowerToPlan : Pass<"lower-to-plan", "::mlir::ModuleOp"> {
  let summary = "Lower @main to one plan.program per device";
  let description = [{
    Turns the laid-out, boxing-explicit program `@main` (after `sbp-assign`
    and `insert-boxing`, or a program without layouts, which runs on one
    device) into one `plan.program` per mesh device on local shapes, plus
    the `plan.group`s its collectives run over, and removes `@main`:

    - `nn.param` becomes a `parameter` buffer (`state` for optimizer state),
      `nn.input` an `input` buffer, `nn.constant` a `constant` buffer; each
      names the logical tensor and the block of it the device holds;
    - every other nn op becomes a `plan.kernel` of its name, reading and
      writing buffers of its local result types, its attributes in `attrs`;
    - the returned loss becomes `plan.loss`, every value marked
      `nn.updates = "NAME"` a `plan.update` of the buffer of `NAME`, and
      every value marked `nn.output = "NAME"` an `output` buffer holding
      the device's block of the tensor `NAME` (which `parplan-run --check`
      verifies: what `parplan reshard -o` writes).

    On a mesh of several devices every op must carry its `sbp.sharding`:
    each device gets the block of every value its layout gives it (the
    slicing math of docs/slicing.md), and every `sbp.boxing` becomes, per
    mesh axis, a collective over the device group along that axis (S -> B
    all-gather, P -> B all-reduce, P -> S reduce-scatter, S -> S
    all-to-all) or a local step (B -> S slice, B -> P and S -> P zeros but
    on one device), in the order the cost model priced, except that a step
    never cuts across an inner split of the same dimension. A mean over a
    split dimension is rescaled to the logical count, and a gather on a
    block of a table split by rows runs `gather_shard` (vocabulary
    parallelism). A layout change it cannot express (an uneven all-to-all)
    is an error naming the op, never a wrong plan. A result of `@main` that
    is neither the loss nor an update (an inference output) is refused.

    A program placed on stages (`place-stages`, `insert-cross-mesh`) has its
    ops on named meshes over disjoint devices that together are the plan's
    devices `0 .. N-1` (the plan's mesh is `[N]`): each becomes a
    `plan.mesh`, each device runs the ops of its mesh in a program naming
    it, and every `sbp.cross_mesh` becomes the planner's schedule in its
    recorded mode (lower-cross-mesh): slices of the source blocks,
    `plan.send`/`plan.recv` to one receiver or `plan.broadcast` over a group
    of the listed devices, and the destination block summed from its tiles.
    A device taking part in a move has a program of its own.

    A step of M micro-batches (nn.training's `micro_batches`) lowers the
    ops that run once per micro-batch first: the forward (what the loss
    depends on), then `plan.backward_begin` and the backward, then
    `plan.after_micro_batches` and the ops run once per step (the updates).
    On stages, the module's `plan.schedule` names the order each stage runs
    its micro-batches' forwards and backwards in.

    Cross-mesh tables and the kernels' figures come from the module's
    `sbp.cluster`, which goes with the plan as `plan.cluster` (JSON);
    stages need it, a single mesh lowers without (its kernels without
    figures).

    Options:
    - `schedule`: on stages with micro-batches, `gpipe`, `1f1b` (default),
      `eager-1f1b` or `sequential` (a micro-batch's forward and backward
      before the next one's); `interleaved` is refused (its stages would
      hold several model chunks).
  }];
  let options = [
    Option<"schedule", "schedule", "std::string",
           "::parplan::schedule::kDefaultPipelineScheduleName",
           "Pipeline schedule of stages with micro-batches">
  ];
  let dependentDialects = ["::parplan::plan::PlanDialect"];
}

def PlanMemory : Pass<"plan-memory", "::mlir::ModuleOp"> {
  let summary = "Place every buffer of every device program in an arena";
  let description = [{
    Gives every `plan.buffer` its byte `offset` in its device's arena and
    each `plan.program` the arena's size (`plan.arena_bytes`): parameters,
    optimizer state, inputs and constants live for the whole step and sit
    at the bottom; a temporary lives from its creation to its last use, and
    temporaries whose lives do not overlap share bytes. Placement is
    greedy, largest buffer first, at the lowest offset that overlaps no
    placed buffer alive at the same time (64-byte aligned), so the arena is
    at least the peak of live bytes and usually close to it.

    A reshape's result is a view of its operand: when both are
    temporaries, the result is not touched before the reshape and nothing
    writes either after it (only kernels that read them, sends, the loss
    and updates that copy from them), the two share one offset and one
    life (the union of theirs), and the executor's reshape copies nothing.
    The plan file's checks accept exactly that sharing: a reshape whose
    operand and result sit at one offset.

    Placed buffers are indexed by time in buckets of positions, with a tree
    over the buckets, so that the activations and gradients live at once
    are read as merged byte ranges rather than one by one: packing time
    grows linearly with depth. The index changes no offset.

    Options:
    - `bucket-positions`: program positions per time bucket (default 256);
      any value gives the same offsets, tests use small ones to exercise
      the index on small programs.
    - `reshape-views`: place a reshape's result on its operand where it may
      (default true); false gives every buffer bytes of its own.
  }];
  let options = [
    Option<"bucketPositions", "bucket-positions", "int64_t", "256",
           "Program positions per time bucket of the placement index">,
    Option<"reshapeViews", "reshape-views", "bool", "true",
           "Place a reshape's result on its operand where nothing writes "
           "either after it">,
  ];
  let dependentDialects = ["::parplan::plan::PlanDialect"];
}

#endif // PARPLAN_TRANSFORMS_PASSES
