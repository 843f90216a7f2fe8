//===- SBPAttrs.td - Split / Broadcast / Partial attributes ---*- tablegen -*-===//

#ifndef PARPLAN_SBP_ATTRS
#define PARPLAN_SBP_ATTRS

include "SBPBase.td"
include "mlir/IR/CommonAttrConstraints.td"

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

def SBP_AnySbpAttr : AnyAttrOf<[SBP_SplitAttr, SBP_BroadcastAttr, SBP_PartialAttr]>;

// An nd-SBP: one Split/Broadcast/Partial per mesh axis, outermost axis first.
def SBP_NdSbpAttr : TypedArrayAttrBase<SBP_AnySbpAttr,
    "nd-SBP (array of #sbp.s, #sbp.b, #sbp.p)">;

#endif // PARPLAN_SBP_ATTRS
