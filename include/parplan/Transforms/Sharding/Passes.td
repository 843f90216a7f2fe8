//===- Passes.td - Sharding passes -------------------------*- tablegen -*-===//
//
// The Sharding stage: the cluster attached once, a layout chosen for every
// op by the cost model, and every change of layout made an explicit,
// typed resharding.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_SHARDING_PASSES
#define PARPLAN_TRANSFORMS_SHARDING_PASSES

include "mlir/Pass/PassBase.td"

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
    - `memory-budget`: the bytes per device a plan may use, where less than
      a device's memory (default 0: all of it). The compile driver sets it
      when the arena plan-memory lays out misses the cost model's estimate.
    - `shares`: on one mesh whose device types differ along one mesh axis
      (a node of each type), `speed` gives each position along it a part
      of every split in proportion to its devices' speed, in whole rows
      of the batch that end the slowest position soonest (`speedShares`,
      stated as the mesh's `shares`), `even` the same part to every
      device, and `auto` (default) lays the program out both ways and
      keeps the least predicted step (even on a tie). With `mesh` not
      given and whole rows per device unable to follow the speeds, `speed`
      and `auto` also lay it out on the default mesh regrouped, each
      node's devices in groups of k, `[devices / k, k]`, each group taking
      whole rows by its speed, each k whose rows end nearest the speeds
      (`speedGroupedMeshes`; docs/sbp-assign.md). Devices alike whose
      batch the mesh's first axis does not divide take near-even whole
      rows along it, as parts by speed.

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
           "or sequential">,
    Option<"memoryBudget", "memory-budget", "double", "0",
           "Bytes per device the layouts may use, below each device's "
           "memory (0: all of it)">,
    Option<"shares", "shares", "std::string", "\"auto\"",
           "On a mesh of mixed device types (or of one type whose batch "
           "its first axis does not divide): auto, speed or even parts">
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
    A forward value the step returns (the loss) is boxed just before the
    `func.return`, after the backward, unless the forward reads it in that
    layout already: a loss summed across the mesh right after the forward
    would hold each device's communication stream until the slowest
    device reached it.

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

#endif // PARPLAN_TRANSFORMS_SHARDING_PASSES
