//===- SBPBase.td - sbp dialect definition -----------------*- tablegen -*-===//

#ifndef PARPLAN_SBP_BASE
#define PARPLAN_SBP_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def SBP_Dialect : Dialect {
  let name = "sbp";
  let cppNamespace = "::parplan::sbp";
  let summary = "Split / Broadcast / Partial-sum sharding over device meshes";
  let description = [{
    The sharding dialect, after OneFlow's SBP. A tensor laid out over a mesh
    of devices is described per mesh axis by one of:

    - `#sbp.s<d>` (Split): the tensor is cut along its dimension `d` into as
      many balanced parts as the mesh axis has devices;
    - `#sbp.b` (Broadcast): every device of the axis holds the whole tensor;
    - `#sbp.p<sum>` (Partial): every device holds a tensor of the whole shape,
      and the true value is their sum (or max, min, prod).

    An nd-SBP is the list of these, one per mesh axis, outermost axis first:
    `[#sbp.s<0>, #sbp.b]` on a `2x4` mesh splits dimension 0 in two halves,
    each replicated on the 4 devices of a mesh row. The slicing math is in
    docs/slicing.md.

    Discardable attributes the sharding passes attach to `nn` ops:
    `sbp.sharding` (`#sbp.sharding`, the chosen layouts, checked against the
    op's operands, results and the mesh) and `sbp.explain` (a dictionary: the
    chosen layout's cost, the runner-up and its cost); on the module,
    `sbp.plan` (`#sbp.layout_plan`: the predicted step, compute and
    communication time, memory per device, the baselines, each stage's
    figures and the size of the search) and `sbp.cluster`
    (`#sbp.cluster`, the cluster the program is laid out for: attached once,
    read by every pass through `ClusterAnalysis`) and `sbp.annotations` (`{file, text}` of the pinned layouts, likewise).
  }];
  let useDefaultAttributePrinterParser = 1;
  // Checks `sbp.sharding` against the op it is attached to.
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Defined beside the attribute storage classes, in SBPAttrs.cpp.
    void registerAttributes();
    /// The context's one copy of `cluster` as its JSON text reads back
    /// (#sbp.cluster holds it): equal clusters share one.
    const ::parplan::cost::Cluster *
    internCluster(const ::parplan::cost::Cluster &cluster);

  private:
    std::shared_ptr<detail::ClusterTable> clusters;

  public:
  }];
  let usePropertiesForAttributes = 1;
}

def SBP_ReduceKind : I32EnumAttr<"ReduceKind",
    "how partial values combine", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>,
      I32EnumAttrCase<"prod", 3>
    ]> {
  let cppNamespace = "::parplan::sbp";
  let genSpecializedAttr = 0;
}

def SBP_ReduceKindAttr : EnumAttr<SBP_Dialect, SBP_ReduceKind, "reduce_kind">;

class SBP_Op<string mnemonic, list<Trait> traits = []>
    : Op<SBP_Dialect, mnemonic, traits>;

#endif // PARPLAN_SBP_BASE
