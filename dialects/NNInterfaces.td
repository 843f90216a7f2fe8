//===- NNInterfaces.td - the nn op interface ---------------*- tablegen -*-===//

#ifndef PARPLAN_NN_INTERFACES
#define PARPLAN_NN_INTERFACES

include "mlir/IR/OpBase.td"

def NN_ShardableOpInterface : OpInterface<"ShardableOpInterface"> {
  let cppNamespace = "::parplan::nn";
  let description = [{
    The one interface through which every `nn` op serves the three consumers
    of the logical program:

    - the sharding search asks for the op's candidate SBP signatures along one
      mesh axis (n-D signatures are built per mesh axis from these);
    - the cost model asks for its FLOPs and the bytes it moves;
    - the lowering to per-device programs asks for its local result shapes
      under a chosen nd-SBP.

    An op that reports no signature has no sharding rule: the search must
    reject it with an error naming the op, never replicate it silently.
  }];

  let methods = [
    InterfaceMethod<[{
        Appends the op's candidate signatures along one mesh axis: for each,
        the SBP of every operand and every result. Fails when the op has no
        sharding rule.
      }],
      "::llvm::LogicalResult", "getSbpSignatures",
      (ins "::llvm::SmallVectorImpl<::parplan::SbpSignature> &":$signatures),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return ::mlir::failure(); }]>,
    InterfaceMethod<[{
        FLOPs and bytes moved by the op on its logical shapes. Fails when the
        op has no cost rule.
      }],
      "::llvm::FailureOr<::parplan::OpCost>", "getCost", (ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return ::mlir::failure(); }]>,
    InterfaceMethod<[{
        The local (per-device) result types when the results are laid out by
        `resultSbps` over a mesh of `meshShape`, on the device at mesh
        `coordinate`. The default slices each logical result with the shared
        slicing math (docs/slicing.md).
      }],
      "::llvm::LogicalResult", "getLocalResultTypes",
      (ins "::llvm::ArrayRef<::parplan::NdSbp>":$resultSbps,
           "::llvm::ArrayRef<int64_t>":$meshShape,
           "::llvm::ArrayRef<int64_t>":$coordinate,
           "::llvm::SmallVectorImpl<::mlir::Type> &":$localTypes),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::parplan::nn::detail::sliceResultTypes(
            $_op, resultSbps, meshShape, coordinate, localTypes);
      }]>
  ];
}

#endif // PARPLAN_NN_INTERFACES
