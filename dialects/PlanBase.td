//===- PlanBase.td - plan dialect definition ---------------*- tablegen -*-===//

#ifndef PARPLAN_PLAN_BASE
#define PARPLAN_PLAN_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "Parameters.td"

def Plan_Dialect : Dialect {
  let name = "plan";
  let cppNamespace = "::parplan::plan";
  let summary = "Per-device programs on local shapes";
  let description = [{
    The output of the compiler before serialization to plan.proto: one
    `plan.program` per distinct program, run by the devices it lists, each a
    straight-line list of kernels, collectives over named device groups,
    point-to-point transfers and the buffers they read and write. All shapes
    are local (per-device) shapes. What differs between the devices of a
    program is said in terms of their mesh coordinates, as SPMD programs
    do: a buffer's `splits`, a group's `mesh_axes`, a `#plan.block_offset`
    kernel attribute. The executor works those out for its device without
    MLIR.
  }];
  let usePropertiesForAttributes = 1;
  let useDefaultAttributePrinterParser = 1;
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
      I32EnumAttrCase<"constant", 4>,
      I32EnumAttrCase<"output", 5>,
      I32EnumAttrCase<"accumulator", 6>,
      I32EnumAttrCase<"micro_batch", 7>
    ]> {
  let cppNamespace = "::parplan::plan";
}

class Plan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Plan_Dialect, mnemonic, traits>;

def Plan_BlockOffsetAttr : AttrDef<Plan_Dialect, "BlockOffset"> {
  let mnemonic = "block_offset";
  let summary = "Where the device's block of a tensor starts";
  let description = [{
    A kernel attribute whose value depends on the device running the
    program: where its block of a tensor of `shape`, split by `splits` (one
    entry per mesh axis: the dimension that axis splits, or -1), starts
    along dimension `dim`, or along every dimension (a list) when `dim` is
    -1. Blocks are balanced parts (docs/slicing.md).

    On a mesh of 4 devices, `splits = [0]` cuts the 8 rows of a 8x2 tensor
    into blocks of 2 rows:

    ```
    #plan.block_offset<shape = [8, 2], splits = [0], dim = 0>
      device 0 -> 0, device 1 -> 2, device 2 -> 4, device 3 -> 6
    ```
  }];
  let parameters = (ins "::mlir::DenseI64ArrayAttr":$shape,
                        "::mlir::DenseI64ArrayAttr":$splits,
                        "int64_t":$dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Plan_PredictionAttr : AttrDef<Plan_Dialect, "Prediction"> {
  let mnemonic = "prediction";
  let summary = "The search's predicted step";
  let description = [{
    On a plan module, as the discardable attribute `plan.prediction`: the
    step the sharding search predicted, its compute and its communication,
    in seconds, as plan.proto's `prediction` carries them to `parplan
    simulate` and `parplan-run --profile`.
    ```mlir
    module attributes {plan.prediction = #plan.prediction<step_time = 3.0,
        compute_time = 1.0, communication_time = 2.0>} { ... }
    ```
  }];
  let parameters = (ins
      Parplan_DoubleParameter<"seconds per step">:$step_time,
      Parplan_DoubleParameter<"seconds per step">:$compute_time,
      Parplan_DoubleParameter<"seconds per step">:$communication_time);
  let assemblyFormat = "`<` struct(params) `>`";
}

// Device buffers: statically shaped memrefs with the identity layout.
def Plan_Buffer : MemRefOf<[F16, BF16, F32, F64, I1, I8, I32, I64]>;

#endif // PARPLAN_PLAN_BASE
