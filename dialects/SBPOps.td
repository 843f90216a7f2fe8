//===- SBPOps.td - sbp dialect operations ------------------*- tablegen -*-===//

#ifndef PARPLAN_SBP_OPS
#define PARPLAN_SBP_OPS

include "SBPAttrs.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def SBP_MeshOp : SBP_Op<"mesh", [Symbol]> {
  let summary = "A named logical mesh of devices";
  let description = [{
    Declares a logical mesh: an n-dimensional arrangement of physical devices.
    `shape` gives the number of devices along each mesh axis; `devices`, when
    present, lists the physical device ids in row-major mesh order (the last
    axis varies fastest) and defaults to `0 .. N-1`. Pipeline stages live on
    different meshes.

    ```mlir
    sbp.mesh @node(shape = 2x4)
    sbp.mesh @stage1(shape = 2x2, devices = [4, 5, 6, 7])
    ```

    `@node` above places device ids on mesh coordinates as:

    ```
                 mesh axis 1
                ------------->
              +----+----+----+----+
    mesh   |  |  0 |  1 |  2 |  3 |
    axis 0 |  +----+----+----+----+
           v  |  4 |  5 |  6 |  7 |
              +----+----+----+----+
    ```

    `shares`, when present, lists per mesh axis the weights of its
    positions' parts of every split along it (Whale's hardware-aware
    shares, docs/slicing.md#weighted-shares); an empty list is even shares.
    On a mesh of two fast and two slow nodes, the fast ones take 9 rows of
    every 14 of the batch:

    ```mlir
    sbp.mesh @mesh(shape = 4x8, shares = [[9, 9, 5, 5], []])
    ```

    Along an axis of uneven shares the devices only reduce whole values
    (sbp.all_reduce) and cut their own part (sbp.slice, sbp.to_partial):
    collectives that exchange parts of a split cut balanced parts.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DenseI64ArrayAttr:$shape,
                       OptionalAttr<DenseI64ArrayAttr>:$devices,
                       OptionalAttr<TypedArrayAttrBase<DenseI64ArrayAttr,
                           "shares per mesh axis">>:$shares);
  let assemblyFormat = [{
    $sym_name `(` `shape` `=` custom<DimensionList>($shape)
    `` custom<MeshPlacement>($devices, $shares) `)` attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getRank() { return getShape().size(); }
    /// The weights of each axis's shares (empty: even on every axis).
    ::parplan::MeshShares getMeshShares();
    /// Number of devices in the mesh.
    int64_t getNumDevices();
    /// Physical device id at a linear (row-major) mesh position.
    int64_t getDeviceId(int64_t linearIndex);
  }];
  let hasVerifier = 1;
}

class SBP_LayoutOp<string mnemonic, list<Trait> traits = []>
    : SBP_Op<mnemonic, !listconcat(traits, [Pure,
        AllTypesMatch<["input", "result"]>,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])>;

def SBP_AnnotateOp : SBP_LayoutOp<"annotate"> {
  let summary = "States how a value is laid out over a mesh";
  let description = [{
    Attaches an nd-SBP to a value: the layout chosen by the sharding search,
    or one the user pinned (Whale's `replicate` and `split`). The value is
    unchanged; only its layout is stated.

    ```mlir
    sbp.mesh @mesh(shape = 2x2)
    %1 = sbp.annotate %0 on @mesh [#sbp.s<0>, #sbp.b] : tensor<4x4xf32>
    ```

    Dimension 0 is split over mesh axis 0 and replicated along mesh axis 1:

    ```
                     +-------------+
    devices 0 and 1  | rows 0 .. 1 |
                     +-------------+
    devices 2 and 3  | rows 2 .. 3 |
                     +-------------+
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       SBP_NdSbpAttr:$sbp);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `on` $mesh $sbp attr-dict `:` type($result)";
}

def SBP_BoxingOp : SBP_LayoutOp<"boxing"> {
  let summary = "Resharding of a value within one mesh";
  let description = [{
    Changes the layout of a value from `src` to `dst` on the same mesh; the
    logical value is unchanged. Each mesh axis whose entry changes needs a
    collective over the devices along that axis (OneFlow's boxing):

    | from -> to    | collective     |
    |---------------|----------------|
    | S(i) -> B     | all-gather     |
    | P -> B        | all-reduce     |
    | P -> S(i)     | reduce-scatter |
    | S(i) -> S(j)  | all-to-all     |
    | B -> S(i)     | local slice    |

    `insert-boxing` records `time`, the predicted seconds of the forward
    transfer; `expand-boxing` replaces the op by its typed steps (below),
    which the cost model priced and the lowering emits.

    ```mlir
    sbp.mesh @mesh(shape = 2)
    %1 = sbp.boxing %0 on @mesh [#sbp.p<sum>] -> [#sbp.b] : tensor<2x2xf32>
    ```

    Input (each device holds an addend), then result:

    ```
      device 0     device 1                 devices 0 and 1
    +---------+  +---------+               +---------+
    |  1   2  |  | 10  20  |   all-reduce  | 11  22  |
    |  3   4  |  | 30  40  |  ---------->  | 33  44  |
    +---------+  +---------+               +---------+
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       SBP_NdSbpAttr:$src, SBP_NdSbpAttr:$dst,
                       OptionalAttr<F64Attr>:$time);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $src `->` $dst attr-dict `:` type($result)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Resharding steps: what expand-boxing turns an sbp.boxing into
//===----------------------------------------------------------------------===//

// One step of a resharding: along mesh axis `mesh_axis`, the layout `src`
// becomes `dst`, which differs from it on that axis only. The entries say
// which tensor dimension moves and how partial values combine; the kind of
// step is the op. Verified by checkReshardStep (Sbp/Resharding.h), the
// rule the cost model and the lowering share.
class SBP_ReshardStepOp<string mnemonic, string kind>
    : SBP_LayoutOp<mnemonic> {
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$mesh_axis,
                       SBP_NdSbpAttr:$src, SBP_NdSbpAttr:$dst);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axis` $mesh_axis $src `->` $dst attr-dict `:`
    type($result)
  }];
  let extraClassDeclaration = [{
    /// The step as the Support library states it.
    ::parplan::ReshardStep getStep() {
      return {::parplan::ReshardKind::}] # kind # [{,
              static_cast<int64_t>(getMeshAxis()),
              ::parplan::sbp::toNdSbp(getSrc()),
              ::parplan::sbp::toNdSbp(getDst())};
    }
  }];
}

def SBP_AllGatherOp : SBP_ReshardStepOp<"all_gather", "AllGather"> {
  let summary = "S(d) -> B along one mesh axis: an all-gather";
  let description = [{
    The devices along `mesh_axis` hold the balanced parts of one block along
    tensor dimension `d`; afterwards each holds the whole block.

    ```mlir
    sbp.mesh @mesh(shape = 2x2)
    %1 = sbp.all_gather %0 on @mesh axis 1 [#sbp.b, #sbp.s<0>]
           -> [#sbp.b, #sbp.b] : tensor<4x2xf32>
    ```

    ```
      mesh axis 1 ->   device 0    device 1            devices 0 and 1
                      +--------+  +--------+            +--------+
                      | rows   |  | rows   |  gather    | rows   |
                      | 0 .. 1 |  | 2 .. 3 |  ------->  | 0 .. 3 |
                      +--------+  +--------+            +--------+
    ```
  }];
}

def SBP_ReduceScatterOp : SBP_ReshardStepOp<"reduce_scatter", "ReduceScatter"> {
  let summary = "P(r) -> S(d) along one mesh axis: a reduce-scatter";
  let description = [{
    The devices along `mesh_axis` hold addends (combined by `r`) of one
    block; afterwards device `i` holds balanced part `i` of the combined
    block along tensor dimension `d`.

    ```mlir
    sbp.mesh @mesh(shape = 2)
    %1 = sbp.reduce_scatter %0 on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.s<0>]
           : tensor<2x2xf32>
    ```

    ```
      device 0    device 1                     device 0    device 1
    +---------+  +---------+                 +---------+  +---------+
    |  1   2  |  | 10  20  |  reduce-scatter | 11  22  |  | 33  44  |
    |  3   4  |  | 30  40  |  -------------> +---------+  +---------+
    +---------+  +---------+
    ```
  }];
}

def SBP_AllReduceOp : SBP_ReshardStepOp<"all_reduce", "AllReduce"> {
  let summary = "P(r) -> B along one mesh axis: an all-reduce";
  let description = [{
    The devices along `mesh_axis` hold addends (combined by `r`: sum, max,
    min or prod) of one block; afterwards each holds the combined block.

    ```mlir
    sbp.mesh @mesh(shape = 2)
    %1 = sbp.all_reduce %0 on @mesh axis 0 [#sbp.p<max>] -> [#sbp.b]
           : tensor<2xf32>
    ```

    ```
      device 0    device 1               devices 0 and 1
    +--------+  +--------+               +--------+
    |  1  20 |  | 10   2 |  all-reduce   | 10  20 |
    +--------+  +--------+  -- max -->   +--------+
    ```
  }];
}

def SBP_AllToAllOp : SBP_ReshardStepOp<"all_to_all", "AllToAll"> {
  let summary = "S(c) -> S(d) along one mesh axis: an all-to-all";
  let description = [{
    Each device along `mesh_axis` cuts its part of the block (split along
    tensor dimension `c`) into balanced parts along `d`, sends part `j` to
    device `j` of the axis, and concatenates what arrives along `c`.

    ```mlir
    sbp.mesh @mesh(shape = 2)
    %1 = sbp.all_to_all %0 on @mesh axis 0 [#sbp.s<0>] -> [#sbp.s<1>]
           : tensor<2x2xf32>
    ```

    ```
           S(0)                      S(1)
    +---------+---------+     +---------+---------+
    | a (d 0) | b (d 0) |     | a (d 0) | b (d 1) |
    +---------+---------+ --> +---------+---------+
    | c (d 1) | e (d 1) |     | c (d 0) | e (d 1) |
    +---------+---------+     +---------+---------+
    ```
  }];
}

def SBP_SliceOp : SBP_ReshardStepOp<"slice", "Slice"> {
  let summary = "B -> S(d) along one mesh axis: each device keeps its part";
  let description = [{
    Every device along `mesh_axis` holds the whole block; afterwards device
    `i` keeps balanced part `i` of it along tensor dimension `d`. Local: no
    data moves.

    ```mlir
    sbp.mesh @mesh(shape = 2)
    %1 = sbp.slice %0 on @mesh axis 0 [#sbp.b] -> [#sbp.s<1>]
           : tensor<2x4xf32>
    ```

    ```
      devices 0 and 1             device 0    device 1
    +-----------------+          +--------+  +--------+
    | 1  2  3  4      |  slice   | 1  2   |  | 3  4   |
    | 5  6  7  8      |  ----->  | 5  6   |  | 7  8   |
    +-----------------+          +--------+  +--------+
    ```
  }];
}

def SBP_ToPartialOp : SBP_ReshardStepOp<"to_partial", "ToPartial"> {
  let summary = "S(d) or B -> P along one mesh axis, locally";
  let description = [{
    Turns parts or copies into addends without moving data. Into P(sum):
    from S(d), each device places its part in a block of zeros; from B,
    device 0 of the axis keeps the block and the others hold zeros. Into
    P(max) or P(min), from B only: every device keeps the block, since
    max(x, x) = x.

    ```mlir
    sbp.mesh @mesh(shape = 2)
    %1 = sbp.to_partial %0 on @mesh axis 0 [#sbp.s<0>] -> [#sbp.p<sum>]
           : tensor<2x2xf32>
    ```

    ```
      device 0    device 1               device 0     device 1
    +--------+  +--------+             +---------+  +---------+
    |  1  2  |  |  3  4  |  to_partial |  1   2  |  |  0   0  |
    +--------+  +--------+  ---------> |  0   0  |  |  3   4  |
                                       +---------+  +---------+
    ```
  }];
}

def SBP_CrossMeshOp : SBP_LayoutOp<"cross_mesh"> {
  let summary = "Moves a value from one mesh to another (between pipeline stages)";
  let description = [{
    Resharding across meshes: the value laid out by `src` on `src_mesh` is
    delivered laid out by `dst` on `dst_mesh`. Every device of the
    destination needs the parts of its slice from the source devices that hold
    them: a many-to-many multicast, lowered later to load-balanced broadcasts.

    `insert-cross-mesh` records how the cross-mesh planner
    (docs/cross-mesh.md) moves it, which the lowering plans again and emits:
    `mode` (`send-recv`, `send-recv+all-gather` or `broadcast`),
    `balancing` (`none` or `by-bytes`) and `time`, the predicted seconds.
    Neither layout may hold Partial entries: the planner moves whole
    values. Without a mode the lowering takes `broadcast` with `by-bytes`.

    ```mlir
    sbp.mesh @stage0(shape = 2, devices = [0, 1])
    sbp.mesh @stage1(shape = 2, devices = [2, 3])
    %1 = sbp.cross_mesh %0 from @stage0 [#sbp.s<0>] to @stage1 [#sbp.b]
           {mode = "broadcast", balancing = "by-bytes"} : tensor<4x4xf32>
    ```

    ```
      @stage0                     @stage1
    +-----------+             +-------------+  +-------------+
    | rows 0..1 | device 0 -> |             |  |             |
    +-----------+    \   /    |  rows 0..3  |  |  rows 0..3  |
    | rows 2..3 | device 1 -> |             |  |             |
    +-----------+             +-------------+  +-------------+
                                 device 2         device 3
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       FlatSymbolRefAttr:$src_mesh, SBP_NdSbpAttr:$src,
                       FlatSymbolRefAttr:$dst_mesh, SBP_NdSbpAttr:$dst,
                       OptionalAttr<StrAttr>:$mode,
                       OptionalAttr<StrAttr>:$balancing,
                       OptionalAttr<F64Attr>:$time);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `from` $src_mesh $src `to` $dst_mesh $dst attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // PARPLAN_SBP_OPS
