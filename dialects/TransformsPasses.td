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

    Options:
    - `cluster`: a preset name or a cluster file (default `dgx-h100`).
    - `mesh`: the mesh shape, e.g. `1x8` (default: the cluster's default
      shape, `[nodes, devices per node]`).
    - `strategy`: `auto` (graph reduction + coordinate descent, default),
      `exact` (branch and bound; fails on graphs too large for it),
      `data-parallel` (inputs split along the batch on every axis,
      parameters replicated) or `megatron` (column-then-row split of
      attention and MLP on the last mesh axis, data parallel on the others).
    - `training`: cost a training step (forward, backward, gradient
      synchronization, optimizer) rather than inference (default true).
    - `optimizer`: `sgd`, `momentum`, `adam` or `adamw` (default `adam`).
    - `mixed-precision`: bf16/fp16 compute and activations, fp32 master
      weights (default true).
    - `share-layers`: identical repeated layers share one decision (default
      true).
    - `annotations`: a YAML or JSON file of layouts pinned on named nodes
      (docs/sbp-annotations.md); pins that cannot hold are errors.
    - `explain`: attach `sbp.explain` (cost, runner-up, its cost) to every op.
    - `explain-file`: write the JSON summary of the plan to this file.
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"dgx-h100\"",
           "Cluster preset name or cluster file">,
    Option<"mesh", "mesh", "std::string", "\"\"",
           "Mesh shape, e.g. 1x8 (default: the cluster's)">,
    Option<"strategy", "strategy", "std::string", "\"auto\"",
           "auto, exact, data-parallel or megatron">,
    Option<"training", "training", "bool", "true",
           "Cost a training step rather than inference">,
    Option<"optimizer", "optimizer", "std::string", "\"adam\"",
           "sgd, momentum, adam or adamw">,
    Option<"mixedPrecision", "mixed-precision", "bool", "true",
           "bf16/fp16 compute with fp32 master weights">,
    Option<"shareLayers", "share-layers", "bool", "true",
           "Identical repeated layers share one decision">,
    Option<"annotations", "annotations", "std::string", "\"\"",
           "File of pinned layouts">,
    Option<"explain", "explain", "bool", "false",
           "Attach sbp.explain to every op">,
    Option<"explainFile", "explain-file", "std::string", "\"\"",
           "Write the JSON summary of the plan to this file">
  ];
  let dependentDialects = ["::parplan::sbp::SBPDialect"];
}

def InsertBoxing : Pass<"insert-boxing", "::mlir::ModuleOp"> {
  let summary = "Make every change of layout an explicit sbp.boxing";
  let description = [{
    After `sbp-assign`: wherever the layout an op produces (its
    `sbp.sharding` result entry) differs from the layout a user reads it in
    (the user's operand entry), inserts
    `sbp.boxing %v on @mesh src -> dst {steps, time}` carrying the
    collective on each mesh axis (`"all_reduce on axis 1"`) and its
    predicted time on the cluster, and
    makes the user read the boxed value. Users that need the same layout
    share one boxing. A value `@main` returns is boxed to the layout its
    `func.return` operand entry names.

    Options:
    - `cluster`: a preset name or a cluster file, the one `sbp-assign` used
      (default `dgx-h100`).
    - `mixed-precision`: price transfers of floating-point values at 2 bytes
      per element (default true), as `sbp-assign` does.
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"dgx-h100\"",
           "Cluster preset name or cluster file">,
    Option<"mixedPrecision", "mixed-precision", "bool", "true",
           "Floating-point values move at 2 bytes per element">
  ];
  let dependentDialects = ["::parplan::sbp::SBPDialect"];
}

#endif // PARPLAN_TRANSFORMS_PASSES
