//===- SBPAttrs.td - Split / Broadcast / Partial attributes ---*- tablegen -*-===//

#ifndef PARPLAN_SBP_ATTRS
#define PARPLAN_SBP_ATTRS

include "SBPBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "Parameters.td"

class SBP_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<SBP_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def SBP_SplitAttr : SBP_Attr<"Split", "s"> {
  let summary = "Split along one tensor dimension";
  let description = [{
    `#sbp.s<d>`: the devices of the mesh axis hold consecutive balanced parts
    of tensor dimension `d`. On a mesh axis of 2 devices, `#sbp.s<0>` and
    `#sbp.s<1>` of a 4x4 tensor are:

    ```
         S(0)                         S(1)
    +-------------+              +------+------+
    |  device 0   |              |      |      |
    +-------------+              | dev 0| dev 1|
    |  device 1   |              |      |      |
    +-------------+              +------+------+
    ```
  }];
  let parameters = (ins "int64_t":$axis);
  let assemblyFormat = "`<` $axis `>`";
  let genVerifyDecl = 1;
}

def SBP_BroadcastAttr : SBP_Attr<"Broadcast", "b"> {
  let summary = "Every device of the mesh axis holds the whole tensor";
  let description = [{
    `#sbp.b`: a replica on every device of the mesh axis.

    ```
    +---------+ +---------+
    | whole x | | whole x |
    +---------+ +---------+
     device 0    device 1
    ```
  }];
}

def SBP_PartialAttr : SBP_Attr<"Partial", "p"> {
  let summary = "Every device holds an addend of the tensor";
  let description = [{
    `#sbp.p<sum>`: every device of the mesh axis holds a tensor of the whole
    shape, and the logical value is their sum (`max`, `min`, `prod` combine
    otherwise). A matmul whose contraction dimension is split produces it:

    ```
    x = x0 + x1
    +---------+ +---------+
    |   x0    | |   x1    |
    +---------+ +---------+
     device 0    device 1
    ```
  }];
  let parameters = (ins "::parplan::sbp::ReduceKind":$reduce);
  let assemblyFormat = "`<` $reduce `>`";
}

def SBP_ShardingAttr : SBP_Attr<"Sharding", "sharding"> {
  let summary = "The nd-SBP of every operand and result of an op on a mesh";
  let description = [{
    The layout the sharding search (`sbp-assign`) chose for an op, attached
    to it as the discardable attribute `sbp.sharding`: the mesh, then one
    nd-SBP per operand and one per result, in order.
    ```mlir
    sbp.mesh @mesh(shape = 1x4)
    %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@mesh,
           [[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<1>]] -> [[#sbp.b, #sbp.s<1>]]>}
         : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    ```
    A column-parallel matmul on the four devices of mesh axis 1: each holds
    the whole `x`, a quarter of the columns of `w`, and computes a quarter of
    the columns of `y`:
    ```
          x (B)          w (S(1))             y (S(1))
      +---------+   +---+---+---+---+    +---+---+---+---+
      | whole x | x | 0 | 1 | 2 | 3 | =  | 0 | 1 | 2 | 3 |
      +---------+   +---+---+---+---+    +---+---+---+---+
                    device d holds column block d of w and y
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$operands,
                        "::mlir::ArrayAttr":$results);
  let assemblyFormat = "`<` $mesh `,` $operands `->` $results `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The nd-SBP of operand `index` / result `index`.
    ::parplan::NdSbp getOperandSbp(unsigned index) const;
    ::parplan::NdSbp getResultSbp(unsigned index) const;
    static ShardingAttr get(::mlir::MLIRContext *context,
                            ::llvm::StringRef mesh,
                            ::llvm::ArrayRef<::parplan::NdSbp> operands,
                            ::llvm::ArrayRef<::parplan::NdSbp> results);
  }];
}

def SBP_NoFitAttr : SBP_Attr<"NoFit", "no_fit"> {
  let summary = "Why no layout of a program fits its devices' memory";
  let description = [{
    What `sbp-assign` leaves on the module, as the discardable attribute
    `sbp.no_fit`, when even the layout of least memory does not fit: the
    bytes per device it needs, the device of least memory and its bytes,
    and on stages the fullest stage's mesh. The compile driver decides on
    these numbers (more stages, more micro-batches, recomputation); the
    error the pass emits is for people.
    ```mlir
    module attributes {sbp.no_fit = #sbp.no_fit<needed = 96000000000,
        capacity = 80000000000, device = 0, stage = "stage1">} { ... }
    ```
  }];
  let parameters = (ins "int64_t":$needed, "int64_t":$capacity,
                        "int64_t":$device,
                        StringRefParameter<"the fullest stage's mesh", "\"\"">:$stage);
  let assemblyFormat = "`<` struct(params) `>`";
}

def SBP_StageFiguresAttr : SBP_Attr<"StageFigures", "stage_figures"> {
  let summary = "A pipeline stage's predicted seconds and bytes";
  let description = [{
    One stage of a `#sbp.layout_plan`: the mesh it runs on, per micro-batch
    its forward, backward and its sends of activations (forward) and
    gradients (backward) to the next stage, the optimizer's update once per
    step, then the stage's busy and idle (bubble) time in the step, its
    peak memory per device and the activations of that peak, and what it
    runs and receives once before its first micro-batch (its parameters'
    copies, a weight another stage holds), which holds its first task back
    (`prologue_time`, left out when 0).
    ```mlir
    #sbp.stage_figures<mesh = @stage0, forward_time = 1.0e-03,
        backward_time = 2.0e-03, update_time = 1.0e-04,
        send_forward_time = 1.0e-05, send_backward_time = 1.0e-05,
        busy_time = 1.2e-02, bubble_time = 3.0e-03,
        memory_bytes = 4000000000, activation_bytes = 1000000000>
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
      Parplan_DoubleParameter<"seconds per micro-batch">:$forward_time,
      Parplan_DoubleParameter<"seconds per micro-batch">:$backward_time,
      Parplan_DoubleParameter<"seconds per step">:$update_time,
      Parplan_DoubleParameter<"seconds per micro-batch">:$send_forward_time,
      Parplan_DoubleParameter<"seconds per micro-batch">:$send_backward_time,
      Parplan_DoubleParameter<"seconds per step">:$busy_time,
      Parplan_DoubleParameter<"seconds per step">:$bubble_time,
      "int64_t":$memory_bytes, "int64_t":$activation_bytes,
      Parplan_DoubleParameterOrZero<"seconds per step">:$prologue_time);
  let assemblyFormat = "`<` struct(params) `>`";
}

def SBP_LayoutPlanAttr : SBP_Attr<"LayoutPlan", "layout_plan"> {
  let summary = "What the sharding search chose and what it predicts";
  let description = [{
    What `sbp-assign` leaves on the module, as the discardable attribute
    `sbp.plan`: the cluster it priced on, the strategy asked for and the
    start that won, whether the program is a training step, the predicted
    step and its compute and communication, the peak memory per device and
    the device's memory (the step is compute and communication less what
    the executor's two streams overlap, `overlap_time`,
    docs/cost-model.md#overlap), how much slower the layouts are than the
    fastest where those do not fit (`memory_slowdown`, a fraction of the
    fastest layouts' summed op and boxing times, docs/sbp-assign.md#memory;
    left out where the fastest fit), the step each other
    start predicts (`baselines`,
    by start), the figures of each stage (`#sbp.stage_figures`, in the order
    of the meshes), the pipeline schedule (`sequential` without stages) and
    the number of nodes searched. The compile driver decides on these
    numbers and the tools print them; each is computed once, here.
    ```mlir
    module attributes {sbp.plan = #sbp.layout_plan<cluster = "dgx-h100",
        strategy = "auto", start = "auto", training = true,
        step_time = 1.2e-02, compute_time = 1.0e-02,
        communication_time = 2.0e-03, overlap_time = 0.0,
        memory_bytes = 4000000000,
        device_memory_bytes = 80000000000,
        baselines = {"data-parallel" = 1.3e-02 : f64}, stages = [],
        schedule = "sequential", search_nodes = 12>} { ... }
    ```
  }];
  let parameters = (ins StringRefParameter<"the cluster's name">:$cluster,
      StringRefParameter<"the strategy asked for">:$strategy,
      StringRefParameter<"the start whose layouts were kept">:$start,
      "::mlir::BoolAttr":$training,
      Parplan_DoubleParameter<"seconds per step">:$step_time,
      Parplan_DoubleParameter<"seconds per step">:$compute_time,
      Parplan_DoubleParameter<"seconds per step">:$communication_time,
      Parplan_DoubleParameter<"seconds per step">:$overlap_time,
      "int64_t":$memory_bytes, "int64_t":$device_memory_bytes,
      Parplan_DoubleParameterOrZero<"a fraction">:$memory_slowdown,
      "::mlir::DictionaryAttr":$baselines,
      "::mlir::ArrayAttr":$stages,
      StringRefParameter<"the pipeline schedule">:$schedule,
      "int64_t":$search_nodes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The figures of each stage, in the order of their meshes.
    auto getStageFigures() const {
      return getStages().getAsRange<StageFiguresAttr>();
    }
    /// The step start `name` predicts, if it was tried.
    std::optional<double> getBaseline(::llvm::StringRef name) const;
    /// This plan with start `name`'s step recorded as `seconds`.
    LayoutPlanAttr withBaseline(::llvm::StringRef name, double seconds) const;
  }];
}

def SBP_ClusterAttr : SBP_Attr<"Cluster", "cluster"> {
  let summary = "The cluster a program is laid out for";
  let description = [{
    The hardware every pass prices layouts, stages and moves on, attached
    once to the module as the discardable attribute `sbp.cluster` (by
    `attach-cluster`, `parplan-compile` or the tools) and read by the passes
    through `ClusterAnalysis`. A built-in preset prints by its name, any
    other cluster as the JSON of its cluster file (docs/cluster.md):
    ```mlir
    module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h100x2">} {}
    module attributes {sbp.cluster = #sbp.cluster<json = "{\"name\": ...}">} {}
    ```
    The attribute holds the parsed cluster: `getCluster()` is the figures
    the printed form reads back to, so a module printed and parsed again is
    priced the same. Clusters are interned per context by their JSON text.
  }];
  let parameters = (ins
    StringRefParameter<"the preset's name; empty for a cluster file", "\"\"">:$preset,
    "const ::parplan::cost::Cluster *":$cluster);
  let hasCustomAssemblyFormat = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    AttrBuilder<(ins "const ::parplan::cost::Cluster &":$cluster,
                     CArg<"::llvm::StringRef", "\"\"">:$preset)>
  ];
  let extraClassDeclaration = [{
    /// The preset named `name`, or a null attribute with `error` set.
    static ClusterAttr fromPreset(::mlir::MLIRContext *context,
                                  ::llvm::StringRef name, std::string &error);
    /// A preset name or the path of a cluster file (cost::resolveCluster),
    /// or a null attribute with `error` set.
    static ClusterAttr resolve(::mlir::MLIRContext *context,
                               ::llvm::StringRef nameOrPath,
                               std::string &error);
  }];
}

def SBP_AnySbpAttr : AnyAttrOf<[SBP_SplitAttr, SBP_BroadcastAttr, SBP_PartialAttr]>;

// An nd-SBP: one Split/Broadcast/Partial per mesh axis, outermost axis first.
def SBP_NdSbpAttr : TypedArrayAttrBase<SBP_AnySbpAttr,
    "nd-SBP (array of #sbp.s, #sbp.b, #sbp.p)">;

#endif // PARPLAN_SBP_ATTRS
