//===- Passes.td - Lowering passes -------------------------*- tablegen -*-===//
//
// The Lowering stage: @main lowered to one plan.program per device, each
// buffer placed in the device's arena.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_LOWERING_PASSES
#define PARPLAN_TRANSFORMS_LOWERING_PASSES

include "mlir/Pass/PassBase.td"

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
    A step of a gradient's boxing that is an all-reduce, a reduce-scatter
    or an all-gather, whose result only optimizer updates read, directly,
    through the boxing's later such steps or through a slice, is marked
    `feeds_update`: the executor runs it on its gradients stream
    (docs/cuda.md#streams-and-overlap); the slice is lowered just before
    the update it feeds. So is, in a step, an all-gather of a parameter's
    boxing for the forward that only all-gathers (a sharded parameter
    gathered at the step's start): on the gradients stream, idle until
    the backward, it does not hold the activations' boxings behind it.
    On one mesh of uneven shares without micro-batches, a gradient's
    leading steps within the positions (stepsWithinPositions) after the
    last boxing of an activation stay unmarked, on the communication
    stream: a faster position runs them at once, not behind the gradients
    stream's all-reduces that wait for the slowest.

    Program order follows @main's, but for two rules that keep it the
    order sbp-assign's timeline prices: a slice a boxing takes after a
    collective is lowered just before its first reader (right after the
    collective, the compute stream would wait there for it); and in each
    run of boxing steps between two ops, the steps the next op reads come
    first (the communication stream runs collectives in order, and a
    boxing placed after its producer for a later reader would hold the
    next op back).

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
    greedy, at the lowest offset that overlaps no placed buffer alive at
    the same time (64-byte aligned), in two orders, the smaller arena kept
    (the first on a tie): the largest buffer first, and the largest in
    bytes times positions lived first. The arena is at least the peak of
    live bytes and usually close to it.

    A reduce-scatter, all-gather or all-to-all keeps its input until its
    output is first read; on the gradients stream (`feeds_update`), until
    the first instruction off that stream reads what the stream makes of
    it (the update), as the stream may run behind its place; and what such
    a collective writes of its own (a scattered part) is reserved from the
    last instruction before it that touches its input (the gradient's last
    sum), as the stream may also run ahead of its place. On the
    communication stream, what such a collective writes from a buffer of
    the whole step (a parameter gathered again for the backward) is
    reserved from just after the collective before it on that stream (or
    the last instruction before it that writes its input; never before
    the marker that begins its range, `plan.forward_begin` and the like):
    the collective may start there, and a kernel in between given its bytes
    would hold it back (the cost model's timeline starts it there too).

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

#endif // PARPLAN_TRANSFORMS_LOWERING_PASSES
