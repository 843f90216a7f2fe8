//===- Passes.td - Pipeline passes -------------------------*- tablegen -*-===//
//
// The Pipeline stage: ops put on the meshes of pipeline stages and every
// move of a value between stages made an explicit op.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_PIPELINE_PASSES
#define PARPLAN_TRANSFORMS_PIPELINE_PASSES

include "mlir/Pass/PassBase.td"

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
    - a sum over micro-batches (`nn.accumulate`) of a gradient with parts
      computed on other stages (a weight several stages read, as a tied
      embedding is by the first and the last) becomes a sum on each stage
      computing a part, added after the micro-batches: the parts move
      once per step rather than once per micro-batch.

    A stage whose globs match nothing is an error.

    With `stages=N` (N > 1) and no stages in the annotations, the pass
    places N stages itself: meshes `@stage0` .. `@stageN-1` cut the first
    axis of the mesh (`mesh`, else the cluster's default) into N equal
    blocks of consecutive devices, and the forward pass is cut between its
    layers into N contiguous runs of balanced time (the op cost's flops
    over the stage's speed: its devices' FLOP/s at the matrix products'
    element type, a mesh of mixed device types at its slowest member's;
    on a cluster of mixed types a stage of faster devices takes more
    layers):
    a layer is the ops reading the parameters of one numbered prefix
    ("transformer.h.3"), or of one module ("fc1") where the names have no
    number, and the ops that follow from them. With numbered layers, the
    head (the ops after the last layer's own, from the first reading a
    parameter of no layer: a final norm, a projection onto a vocabulary)
    is a run of its own, and its stage's mesh gets `sbp.head`. Each forward op's backward
    ops and updates follow it as above. Errors: N not dividing the mesh's
    first axis, fewer layers than stages, a negative N, and stages in both
    the option and the annotations.

    On stages of different speeds whole layers may balance badly. A layer
    can also be cut where no more bytes of the forward's values cross than
    at its start (in a transformer, after attention's residual add). Where
    such cuts shorten the longest stage (FLOPs over speed), with
    `cut-inside-layers` the stages end there (a stage holding part of a
    layer gets `sbp.layer_parts` naming it); without, the module gets
    `sbp.finer_cut`, for the pipeline search to try the option by a trial
    of its own. Stages alike keep whole layers.

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
    - `even-shares`: cut the layers by their FLOPs alone, as if every stage
      were as fast.
    - `cut-inside-layers`: on stages of different speeds, end stages inside
      layers where that balances them better.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "0",
           "Stages to place, cutting the mesh and the layers evenly">,
    Option<"evenShares", "even-shares", "bool", "false",
           "With stages=N: cut the layers by their work alone, not by each "
           "stage's speed">,
    Option<"cutInsideLayers", "cut-inside-layers", "bool", "false",
           "On stages of different speeds: end stages inside layers where "
           "that balances them better">,
    Option<"chunks", "chunks", "int64_t", "1",
           "Model chunks per stage (the interleaved schedule's)">,
    Option<"mesh", "mesh", "std::string", "\"\"",
           "The mesh the stages cut, e.g. 16x8 (default: the cluster's)">,
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

#endif // PARPLAN_TRANSFORMS_PIPELINE_PASSES
