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
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DenseI64ArrayAttr:$shape,
                       OptionalAttr<DenseI64ArrayAttr>:$devices);
  let assemblyFormat = [{
    $sym_name `(` `shape` `=` custom<DimensionList>($shape)
    (`,` `devices` `=` $devices^)? `)` attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getRank() { return getShape().size(); }
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

    `insert-boxing` records what the change costs: `steps`, the collective
    on each mesh axis in the order they run (`"all_reduce on axis 1"`), and
    `time`, the predicted seconds of the forward transfer.

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
                       OptionalAttr<StrArrayAttr>:$steps,
                       OptionalAttr<F64Attr>:$time);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $src `->` $dst attr-dict `:` type($result)
  }];
  let hasFolder = 1;
}

def SBP_CrossMeshOp : SBP_LayoutOp<"cross_mesh"> {
  let summary = "Moves a value from one mesh to another (between pipeline stages)";
  let description = [{
    Resharding across meshes: the value laid out by `src` on `src_mesh` is
    delivered laid out by `dst` on `dst_mesh`. Every device of the
    destination needs the parts of its slice from the source devices that hold
    them: a many-to-many multicast, lowered later to load-balanced broadcasts.

    ```mlir
    sbp.mesh @stage0(shape = 2, devices = [0, 1])
    sbp.mesh @stage1(shape = 2, devices = [2, 3])
    %1 = sbp.cross_mesh %0 from @stage0 [#sbp.s<0>] to @stage1 [#sbp.b]
           : tensor<4x4xf32>
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
                       FlatSymbolRefAttr:$dst_mesh, SBP_NdSbpAttr:$dst);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `from` $src_mesh $src `to` $dst_mesh $dst attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // PARPLAN_SBP_OPS
