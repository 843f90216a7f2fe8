//===- PlanBase.td - plan dialect definition ---------------*- tablegen -*-===//

#ifndef PARPLAN_PLAN_BASE
#define PARPLAN_PLAN_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Plan_Dialect : Dialect {
  let name = "plan";
  let cppNamespace = "::parplan::plan";
  let summary = "Per-device programs on local shapes";
  let description = [{
    The output of the compiler before serialization to plan.proto: one
    `plan.program` per device, each a straight-line list of kernels,
    collectives over named device groups, point-to-point transfers and the
    buffers they read and write. All shapes are local (per-device) shapes;
    nothing here refers to logical tensors or SBP any more, so the executor
    can run a program without MLIR.
  }];
  let usePropertiesForAttributes = 1;
}

def Plan_ReduceKind : I32EnumAttr<"ReduceKind", "how a collective combines values", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>,
      I32EnumAttrCase<"prod", 3>
    ]> {
  let cppNamespace = "::parplan::plan";
}

def Plan_BufferKind : I32EnumAttr<"BufferKind", "what a buffer holds", [
      I32EnumAttrCase<"temporary", 0>,
      I32EnumAttrCase<"parameter", 1>,
      I32EnumAttrCase<"input", 2>,
      I32EnumAttrCase<"state", 3>,
      I32EnumAttrCase<"constant", 4>
    ]> {
  let cppNamespace = "::parplan::plan";
}

class Plan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Plan_Dialect, mnemonic, traits>;

// Device buffers: statically shaped memrefs with the identity layout.
def Plan_Buffer : MemRefOf<[F16, BF16, F32, F64, I1, I8, I32, I64]>;

#endif // PARPLAN_PLAN_BASE
