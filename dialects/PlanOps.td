//===- PlanOps.td - plan dialect operations ----------------*- tablegen -*-===//

#ifndef PARPLAN_PLAN_OPS
#define PARPLAN_PLAN_OPS

include "PlanBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/SymbolInterfaces.td"

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Plan_MeshOp : Plan_Op<"mesh", [Symbol]> {
  let summary = "A named mesh over some of the plan's devices";
  let description = [{
    A mesh of `shape` placed on `devices` (row-major), for programs that run
    on part of the plan's devices: the two sides of a cross-mesh move, the
    stages of a pipeline. A program or group naming it reads its splits,
    block offsets and mesh axes in it; a device's coordinate is its
    position in `devices`. Named meshes hold disjoint devices.

    ```mlir
    plan.mesh @stage1 shape = [2, 2] devices = [7, 3, 5, 1]
    ```

    ```
              mesh axis 1 ->
    axis 0  +---+---+
      |     | 7 | 3 |   device 5: coordinate [1, 0]
      v     +---+---+
            | 5 | 1 |
            +---+---+
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DenseI64ArrayAttr:$shape,
                       DenseI64ArrayAttr:$devices);
  let assemblyFormat = [{
    $sym_name `shape` `=` $shape `devices` `=` $devices attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::parplan::PlacedMesh getPlacedMesh();
  }];
}

def Plan_GroupOp : Plan_Op<"group", [Symbol]> {
  let summary = "A named group of devices that a collective runs over";
  let description = [{
    The devices taking part in a collective, in rank order within the group:
    either a fixed list of device ids, or `mesh_axes`, a group per device
    (the devices whose coordinates equal the member's on every other mesh
    axis, in row-major order over these axes), which is how every device of
    a shared program names its own group. On a 2x4 mesh:

    ```mlir
    plan.group @axis1 mesh_axes = [1]      // {0, 1, 2, 3} for devices 0-3,
                                            // {4, 5, 6, 7} for devices 4-7
    plan.group @row0 devices = [0, 1, 2, 3]
    ```

    ```
              mesh axis 1 ->
    axis 0  +---+---+---+---+
      |     | 0 | 1 | 2 | 3 |   @axis1 of device 2: [0, 1, 2, 3]
      v     +---+---+---+---+
            | 4 | 5 | 6 | 7 |   @axis1 of device 6: [4, 5, 6, 7]
            +---+---+---+---+
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<DenseI64ArrayAttr>:$devices,
                       OptionalAttr<DenseI64ArrayAttr>:$mesh_axes,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh);
  let assemblyFormat = [{
    $sym_name (`devices` `=` $devices^)? (`mesh_axes` `=` $mesh_axes^)?
    (`mesh` `=` $mesh^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The mesh its mesh_axes are of: the named one, or the plan's.
    ::parplan::PlacedMesh getPlacedMesh();
    /// The number of members.
    int64_t getSize();
    /// The rank of `device` in its group; -1 when it is no member. `mesh`
    /// is getPlacedMesh(), worked out once by callers asking for many
    /// devices.
    int64_t rankOf(int64_t device, const ::parplan::PlacedMesh &mesh);
  }];
}

def Plan_ProgramOp : Plan_Op<"program", [
    Symbol, NoTerminator, SingleBlock, IsolatedFromAbove]> {
  let summary = "The program a set of devices runs";
  let description = [{
    The ops that each device of `devices` executes, in order, on its own
    local buffers. The devices differ only in their mesh coordinates (the
    module's `plan.mesh_shape`), which decide their blocks (`splits`),
    their groups (`mesh_axes`) and `#plan.block_offset` attributes.

    ```mlir
    plan.program @program0 devices = [0, 1, 2, 3] {
      %x = plan.buffer : memref<4x8xf32>
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DenseI64ArrayAttr:$devices,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh);
  let regions = (region MaxSizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `devices` `=` $devices (`mesh` `=` $mesh^)?
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The mesh its devices' coordinates are in: the named `mesh`, or the
    /// plan's (planMeshShape).
    ::parplan::PlacedMesh getPlacedMesh();
    /// That mesh's shape.
    llvm::SmallVector<int64_t> getMeshShape();
  }];
}

//===----------------------------------------------------------------------===//
// Buffers and kernels
//===----------------------------------------------------------------------===//

def Plan_BufferOp : Plan_Op<"buffer", [HasParent<"ProgramOp">]> {
  let summary = "A buffer in device memory";
  let description = [{
    A statically shaped buffer of the device. `offset`, once memory planning
    has run, is its byte offset in the device's arena; buffers whose live
    ranges do not overlap share bytes.

    `kind` says where the contents come from:

    | kind | contents | attributes |
    |---|---|---|
    | `temporary` (default) | written by an op of the step | |
    | `parameter` | a block of a model parameter: loaded once, updated by the step | `name`, `logical_shape`, `splits`, `source`, `part_of`/`part`, `synthetic_center` (1 for a batch norm's running variance: where synthetic values are centered) |
    | `input` | a block of a batch tensor, fed at every step | `name`, `logical_shape`, `splits`, `value_bound` for integers |
    | `state` | optimizer state: zeros, then updated | `name`, `logical_shape`, `splits` |
    | `constant` | fixed elements | `value`; with `logical_shape` and `splits`, `value` is the logical tensor and each device keeps its block |
    | `output` | a block of a tensor the step leaves behind (a resharding's destination), which `parplan-run --check` compares with the tensor's values | `name`, `logical_shape`, `splits` |
    | `accumulator` | a sum over the step's micro-batches (`nn.accumulate`): zeros at the start of every step, added to by its `accumulate` kernel | |

    `splits` has one entry per mesh axis: the dimension of the logical
    tensor that axis splits, or -1. Each device's block is the balanced part
    of its coordinate (docs/slicing.md); the buffer's shape is its extent,
    the same on every device of the program.

    ```mlir
    %w = plan.buffer {name = "fc1.weight", offset = 0} : memref<784x256xf32>
    // On a mesh of 2: device 0 holds rows 0-3, device 1 rows 4-7.
    %x = plan.buffer kind = input {name = "x", logical_shape = array<i64: 8, 784>,
                                   splits = array<i64: 0>} : memref<4x784xf32>
    ```
  }];
  let arguments = (ins OptionalAttr<StrAttr>:$name,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$offset,
                       DefaultValuedAttr<Plan_BufferKind,
                         "::parplan::plan::BufferKind::temporary">:$kind,
                       OptionalAttr<DenseI64ArrayAttr>:$logical_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$splits,
                       OptionalAttr<StrAttr>:$source,
                       OptionalAttr<StrAttr>:$part_of,
                       OptionalAttr<DenseI64ArrayAttr>:$part,
                       OptionalAttr<I64Attr>:$value_bound,
                       OptionalAttr<F64Attr>:$synthetic_center,
                       OptionalAttr<ElementsAttr>:$value);
  let results = (outs Plan_Buffer:$result);
  let assemblyFormat = [{
    (`kind` `=` $kind^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Plan_KernelOp : Plan_Op<"kernel", [HasParent<"ProgramOp">, AttrSizedOperandSegments]> {
  let summary = "A compute kernel on local buffers";
  let description = [{
    Runs the kernel `kernel` (a name the executor's backends resolve, such as
    `matmul` or `gelu_backward`) reading `ins` and writing `outs`. Attributes
    the kernel needs (transposes, axes, epsilon) ride in `attrs`.

    ```mlir
    plan.kernel "matmul" ins(%x, %w : memref<4x784xf32>, memref<784x256xf32>)
                         outs(%y : memref<4x256xf32>)
    ```

    A kernel lowered from an nn op carries the cost model's figures for the
    device's share of it (ShardingCostModel::localWork): `flops`, the `bytes`
    of device memory it moves and the `compute_type` it runs in ("bf16",
    "f32", ...). The simulator times the kernel by them on each device's type
    (docs/simulate.md); a kernel without them (a helper a lowering adds) is
    timed by the bytes of its buffers.

    ```mlir
    plan.kernel "matmul" ins(%x, %w : memref<4x784xf32>, memref<784x256xf32>)
                         outs(%y : memref<4x256xf32>)
                         {bytes = 8.4e+05 : f64, compute_type = "f32",
                          flops = 1.6e+06 : f64}
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<Plan_Buffer>:$ins,
                       Variadic<Plan_Buffer>:$outs,
                       OptionalAttr<DictionaryAttr>:$attrs,
                       OptionalAttr<F64Attr>:$flops,
                       OptionalAttr<F64Attr>:$bytes,
                       OptionalAttr<StrAttr>:$compute_type);
  let builders = [
    // A kernel without the cost model's figures (lower-to-plan adds them).
    OpBuilder<(ins "::mlir::StringAttr":$kernel, "::mlir::ValueRange":$ins,
                   "::mlir::ValueRange":$outs, "::mlir::DictionaryAttr":$attrs), [{
      build($_builder, $_state, kernel, ins, outs, attrs, nullptr, nullptr,
            nullptr);
    }]>
  ];
  let assemblyFormat = [{
    $kernel (`ins` `(` $ins^ `:` type($ins) `)`)? `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//
// `feeds_update` marks a collective (all-reduce, reduce-scatter,
// all-gather, broadcast) whose result only parameter updates read (a
// gradient's reduction, through the other steps of its boxing, such as a
// hierarchical all-reduce's reduce-scatter, all-reduce and all-gather):
// the executor runs it on a stream of its own, so that the collectives the
// forward and backward wait for never queue behind it, and plan-memory
// keeps its buffers until the update (docs/cuda.md#streams-and-overlap).
//===----------------------------------------------------------------------===//

class Plan_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Plan_Op<mnemonic, !listconcat(traits, [HasParent<"ProgramOp">,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])>;

def Plan_AllReduceOp : Plan_CollectiveOp<"all_reduce"> {
  let summary = "All-reduce in place over a device group";
  let description = [{
    Every device of `group` ends with the elementwise reduction of all the
    devices' buffers (P -> B).

    ```mlir
    plan.all_reduce %g on @dp reduce = sum : memref<2x2xf32>
    ```

    ```
      device 0     device 1                 devices 0 and 1
    +---------+  +---------+               +---------+
    |  1   2  |  | 10  20  |   all-reduce  | 11  22  |
    |  3   4  |  | 30  40  |  ---------->  | 33  44  |
    +---------+  +---------+               +---------+
    ```
  }];
  let arguments = (ins Plan_Buffer:$buffer, FlatSymbolRefAttr:$group,
                       DefaultValuedAttr<Plan_ReduceKind,
                         "::parplan::plan::ReduceKind::sum">:$reduce,
                       UnitAttr:$feeds_update);
  let assemblyFormat = [{
    $buffer `on` $group (`reduce` `=` $reduce^)? attr-dict `:` type($buffer)
  }];
}

def Plan_AllGatherOp : Plan_CollectiveOp<"all_gather"> {
  let summary = "All-gather over a device group";
  let description = [{
    Concatenates the devices' `input` slices along `axis`, in group order,
    into `output` on every device (S(axis) -> B). Slices may differ by one
    element along `axis` (balanced split: docs/slicing.md), so the input
    extent is `output / n` rounded down or up.

    ```mlir
    plan.all_gather %x into %y on @tp axis = 0 : memref<1x4xf32> -> memref<2x4xf32>
    ```

    ```
    device 0 -> | 1 2 3 4 |            +---------+
                                        | 1 2 3 4 |  on devices 0 and 1
    device 1 -> | 5 6 7 8 |            | 5 6 7 8 |
                                        +---------+
    ```
  }];
  let arguments = (ins Plan_Buffer:$input, Plan_Buffer:$output,
                       FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       UnitAttr:$feeds_update);
  let assemblyFormat = [{
    $input `into` $output `on` $group `axis` `=` $axis attr-dict `:`
    type($input) `->` type($output)
  }];
}

def Plan_ReduceScatterOp : Plan_CollectiveOp<"reduce_scatter"> {
  let summary = "Reduce-scatter over a device group";
  let description = [{
    Reduces the devices' `input` buffers elementwise and leaves on device `i`
    of the group its balanced part `i` of the result along `axis`
    (P -> S(axis)).

    ```mlir
    plan.reduce_scatter %g into %s on @dp axis = 0 reduce = sum
      : memref<4x4xf32> -> memref<2x4xf32>
    ```
  }];
  let arguments = (ins Plan_Buffer:$input, Plan_Buffer:$output,
                       FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       DefaultValuedAttr<Plan_ReduceKind,
                         "::parplan::plan::ReduceKind::sum">:$reduce,
                       UnitAttr:$feeds_update);
  let assemblyFormat = [{
    $input `into` $output `on` $group `axis` `=` $axis
    (`reduce` `=` $reduce^)? attr-dict `:` type($input) `->` type($output)
  }];
}

def Plan_AllToAllOp : Plan_CollectiveOp<"all_to_all"> {
  let summary = "All-to-all over a device group";
  let description = [{
    Cuts `input` into n balanced parts along `split_axis` (docs/slicing.md),
    sends part `j` to group member `j`, and concatenates what arrives along
    `concat_axis` (S(concat_axis) -> S(split_axis)). Member `i` keeps part
    `i` of the split axis and holds part `i` of the concatenated one, so
    parts may differ by one element on both.

    ```mlir
    plan.all_to_all %x into %y on @tp split_axis = 1 concat_axis = 0
      : memref<2x4xf32> -> memref<4x2xf32>
    ```
  }];
  let arguments = (ins Plan_Buffer:$input, Plan_Buffer:$output,
                       FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$split_axis,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$concat_axis);
  let assemblyFormat = [{
    $input `into` $output `on` $group `split_axis` `=` $split_axis
    `concat_axis` `=` $concat_axis attr-dict `:` type($input) `->` type($output)
  }];
}

def Plan_BroadcastOp : Plan_CollectiveOp<"broadcast"> {
  let summary = "Broadcast in place from one device of a group";
  let description = [{
    The member of rank `root` in `group` sends its buffer
    to every other member, which overwrite theirs.

    ```mlir
    plan.broadcast %w on @all root = 0 : memref<784x256xf32>
    ```
  }];
  let arguments = (ins Plan_Buffer:$buffer, FlatSymbolRefAttr:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$root,
                       UnitAttr:$feeds_update);
  let assemblyFormat = [{
    $buffer `on` $group `root` `=` $root attr-dict `:` type($buffer)
  }];
}

//===----------------------------------------------------------------------===//
// What a step leaves behind
//===----------------------------------------------------------------------===//

def Plan_LossOp : Plan_Op<"loss", [HasParent<"ProgramOp">]> {
  let summary = "The buffer holding the step's loss";
  let description = [{
    A scalar; the executor reports it after every step.

    ```mlir
    plan.loss %l : memref<f32>
    ```
  }];
  let arguments = (ins Plan_Buffer:$buffer);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Plan_AfterMicroBatchesOp : Plan_Op<"after_micro_batches", [
    HasParent<"ProgramOp">]> {
  let summary = "Where the once-per-step part of a program begins";
  let description = [{
    In a plan of M micro-batches (the module's `plan.micro_batches`), each
    device runs the ops before this one M times, each time on the next
    slice of the batch, and the ops after it once: the updates, which read
    the `accumulator` buffers the micro-batches added to. A program without
    it runs every op once per micro-batch.

    ```
    micro-batch 0 | micro-batch 1 | ... | micro-batch M-1 | after
    [fwd bwd acc] | [fwd bwd acc] | ... | [fwd bwd acc]   | [all_reduce update]
    ```

    ```mlir
    plan.kernel "accumulate"(%dw_sum, %dw) -> (%dw_sum) : ...
    plan.after_micro_batches
    plan.all_reduce %dw_sum over @axis0_0 : memref<16x32xf32>
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Plan_ForwardBeginOp : Plan_Op<"forward_begin", [
    HasParent<"ProgramOp">]> {
  let summary = "Where a micro-batch begins: the ops before run once per step, first";
  let description = [{
    In a plan of M micro-batches, the ops before this one run once per
    step, before the first micro-batch: values of the parameters alone
    that every micro-batch reads the same (a weight's low-precision copy
    under mixed precision, a transposed weight), kept for the whole step
    rather than computed again by each micro-batch. A program without it
    has none.

    ```
    before | micro-batch 0 | ... | micro-batch M-1 | after
    [cast] | [fwd bwd acc] | ... | [fwd bwd acc]   | [all_reduce update]
    ```

    ```mlir
    plan.kernel "cast"(%w) -> (%w_bf16) : ...
    plan.forward_begin
    plan.kernel "matmul"(%x, %w_bf16) -> (%y) : ...
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Plan_BackwardBeginOp : Plan_Op<"backward_begin", [
    HasParent<"ProgramOp">]> {
  let summary = "Where a micro-batch's backward begins";
  let description = [{
    In a plan of M micro-batches on pipeline stages, the ops before this
    one are a micro-batch's forward and those after it, up to
    `plan.after_micro_batches`, its backward. A schedule (the plan file's
    `schedule`) runs a stage's forwards and backwards of different
    micro-batches in its own order: stage 0 of two under 1F1B runs the
    forwards of micro-batches 0 and 1 before the backward of 0.

    ```
    stage 0 | F0 F1 B0 F2 B1 F3 B2 B3 | after
    stage 1 |    F0 B0 F1 B1 F2 B2 F3 B3 | after
    ```

    ```mlir
    plan.send %h to 2 tag 3 : memref<4x8xf32>
    plan.backward_begin
    plan.recv %dh from 2 tag 4 : memref<4x8xf32>
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Plan_ChunkOp : Plan_Op<"chunk", [HasParent<"ProgramOp">]> {
  let summary = "Where a model chunk's part of a micro-batch begins";
  let description = [{
    On stages of several model chunks (the interleaved schedule), a
    micro-batch's forward is each chunk's forward in turn, and so is its
    backward: the ops after `plan.chunk c`, up to the next marker, are
    chunk c's part of the forward (before `plan.backward_begin`) or of the
    backward (after it). The schedule runs a chunk's forward or backward of
    one micro-batch at a time, virtual stage c * P + s on stage s. A
    program of chunks marks each of them, 0 to V - 1, once in the forward
    and once in the backward.

    ```
    stage 0 of 2, 2 chunks: F0a F1a F0b F1b F2a B0b F3a B1b ... (a, b: chunk 0, 1)
    ```

    ```mlir
    plan.chunk 0
    plan.kernel "matmul" ...
    plan.cross_mesh_send @move0 %h : memref<4x64xf32>
    plan.chunk 1
    plan.cross_mesh_recv @move2 %h3 : memref<4x64xf32>
    ...
    plan.backward_begin
    plan.chunk 0
    ...
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$chunk);
  let assemblyFormat = "$chunk attr-dict";
  let hasVerifier = 1;
}

def Plan_UpdateOp : Plan_Op<"update", [HasParent<"ProgramOp">,
    AllTypesMatch<["target", "source"]>]> {
  let summary = "Carries an updated value into the next step";
  let description = [{
    After the step, `source` (an updated parameter or optimizer state) is
    copied into `target` (the `parameter` or `state` buffer the next step
    reads).

    ```mlir
    plan.update %w1 from %w1_new : memref<16x32xf32>
    ```
  }];
  let arguments = (ins Plan_Buffer:$target, Plan_Buffer:$source);
  let assemblyFormat = [{
    $target `from` $source attr-dict `:` type($target)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

def Plan_SendOp : Plan_Op<"send", [HasParent<"ProgramOp">]> {
  let summary = "Sends a buffer to another device";
  let description = [{
    Matched by a `plan.recv` with the same `tag` in the program of device
    `peer`.

    ```mlir
    plan.send %act to 4 tag = 0 : memref<4x1024xf32>
    ```
  }];
  let arguments = (ins Plan_Buffer:$buffer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let assemblyFormat = "$buffer `to` $peer `tag` `=` $tag attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Plan_RecvOp : Plan_Op<"recv", [HasParent<"ProgramOp">]> {
  let summary = "Receives a buffer from another device";
  let description = [{
    ```mlir
    plan.recv %act from 0 tag = 0 : memref<4x1024xf32>
    ```
  }];
  let arguments = (ins Plan_Buffer:$buffer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let assemblyFormat = "$buffer `from` $peer `tag` `=` $tag attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Cross-mesh moves
//===----------------------------------------------------------------------===//

def Plan_CrossMeshOp : Plan_Op<"cross_mesh", [Symbol,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A tensor's move between two named meshes, for all devices";
  let description = [{
    One table for every device taking part in the move of a tensor of
    `type` from mesh `from`, laid out by `from_splits`, to mesh `to`, laid
    out by `to_splits` (per mesh axis the dimension it splits, or -1). The
    tiles are the regions a source block and a destination block share
    (tile k: `tile_offsets` and `tile_sizes` [k * rank, (k + 1) * rank); a
    scalar is one tile of no entries).
    Transfer t sends tile `transfer_tiles[t]` from device
    `transfer_senders[t]` to the next `receiver_counts[t]` devices of
    `receivers`: to one, a send and a receive (tag t); to several, a
    broadcast over the sender then the receivers. Every device runs the
    transfers it takes part in, in order (`plan.cross_mesh_send` on `from`,
    `plan.cross_mesh_recv` on `to`), so that the devices of a mesh share
    their programs whoever their peers are.

    A 4x2 tensor split by rows over two devices, broadcast to two others
    (transfer 0 sends tile 0 from device 0 to devices 2 and 3):

    ```mlir
    plan.cross_mesh @move0 : tensor<4x2xf32> from @a [0] to @b [-1]
        tile_offsets = [0, 0, 2, 0] tile_sizes = [2, 2, 2, 2]
        transfer_tiles = [0, 1] transfer_senders = [0, 1]
        receiver_counts = [2, 2] receivers = [2, 3, 2, 3]
    ```

    ```
      @a [S(0)]           @b [B]
    +----------+        +----------+----------+
    | dev 0    | ---+-> | dev 2    | dev 3    |
    | rows 0-1 |    |   | rows 0-3 | rows 0-3 |
    +----------+    |   +----------+----------+
    | dev 1    | ---+   tile 0 (rows 0-1) from 0, tile 1 (rows 2-3)
    | rows 2-3 |        from 1, each broadcast to 2 and 3
    +----------+
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       FlatSymbolRefAttr:$from, DenseI64ArrayAttr:$from_splits,
                       FlatSymbolRefAttr:$to, DenseI64ArrayAttr:$to_splits,
                       DenseI64ArrayAttr:$tile_offsets,
                       DenseI64ArrayAttr:$tile_sizes,
                       DenseI64ArrayAttr:$transfer_tiles,
                       DenseI64ArrayAttr:$transfer_senders,
                       DenseI64ArrayAttr:$receiver_counts,
                       DenseI64ArrayAttr:$receivers);
  let assemblyFormat = [{
    $sym_name `:` $type `from` $from $from_splits `to` $to $to_splits
    `tile_offsets` `=` $tile_offsets `tile_sizes` `=` $tile_sizes
    `transfer_tiles` `=` $transfer_tiles
    `transfer_senders` `=` $transfer_senders
    `receiver_counts` `=` $receiver_counts `receivers` `=` $receivers
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// A scalar is one tile (of no entries).
    int64_t getNumTiles() {
      auto rank = ::mlir::cast<::mlir::RankedTensorType>(getType()).getRank();
      return rank == 0 ? 1
                       : static_cast<int64_t>(getTileOffsets().size()) / rank;
    }
    /// Tile `index` as a region of the tensor.
    ::parplan::Slice getTile(int64_t index);
    /// The tiles and transfers as the executor reads them.
    std::vector<::parplan::Slice> getTiles();
    std::vector<::parplan::CrossMeshTransfer> getTransfers();
  }];
}

class Plan_CrossMeshPartOp<string mnemonic> : Plan_Op<mnemonic, [
    HasParent<"ProgramOp">, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let arguments = (ins FlatSymbolRefAttr:$move, Plan_Buffer:$block,
                       Optional<MemRefRankOf<[I8], [1]>>:$scratch);
  let assemblyFormat = [{
    $move $block (`scratch` $scratch^)? attr-dict `:` type($block)
    (`,` type($scratch)^)?
  }];
}

def Plan_CrossMeshSendOp : Plan_CrossMeshPartOp<"cross_mesh_send"> {
  let summary = "A source device's part of a cross-mesh move";
  let description = [{
    Each device of the program, on `plan.cross_mesh @move`'s source mesh,
    runs the transfers of the move it sends: it slices a tile it holds out
    of `block` (its block of the tensor) into `scratch` and sends or
    broadcasts it. `scratch` holds the slots of the part of every device of
    the program (none where every tile sent is a whole block).

    ```mlir
    plan.cross_mesh_send @move0 %x scratch %s : memref<2x2xf32>, memref<128xi8>
    ```
  }];
}

def Plan_CrossMeshRecvOp : Plan_CrossMeshPartOp<"cross_mesh_recv"> {
  let summary = "A destination device's part of a cross-mesh move";
  let description = [{
    Each device of the program, on `plan.cross_mesh @move`'s destination
    mesh, runs the transfers of the move it receives or passes on, and
    writes `block`, its block of the tensor, from its tiles: a tile that is
    the whole block is received into it; several are received into
    `scratch`, each padded to the block, and summed.

    ```mlir
    plan.cross_mesh_recv @move0 %y : memref<4x2xf32>
    ```
  }];
}

#endif // PARPLAN_PLAN_OPS
