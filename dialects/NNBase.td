//===- NNBase.td - nn dialect definition -------------------*- tablegen -*-===//
//
// The `nn` dialect: tensor ops on logical (whole, unsharded) shapes with ONNX
// semantics. It is what the ONNX importer produces and what the sharding
// search and the cost model read.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_NN_BASE
#define PARPLAN_NN_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::parplan::nn";
  let summary = "Tensor ops on logical shapes, with ONNX semantics";
  let description = [{
    Every value of the `nn` dialect is a statically shaped tensor that stands
    for the whole (logical) tensor, before any parallelization. The ops follow
    the ONNX operators they come from (broadcasting, attributes, defaults), so
    that importing a model is a one-to-one mapping and the numbers an `nn`
    program computes are the numbers ONNX Runtime computes.

    Every op implements `ShardableOpInterface`, through which the sharding
    search, the cost model and the lowering to per-device programs ask it for
    its candidate SBP signatures, its cost and its local shapes.
  }];
  let usePropertiesForAttributes = 1;
  let hasConstantMaterializer = 1;
}

def NN_ResizeMode : I32EnumAttr<"ResizeMode",
    "how nn.resize samples the input", [
      I32EnumAttrCase<"nearest", 0>,
      I32EnumAttrCase<"linear", 1>
    ]> {
  let cppNamespace = "::parplan::nn";
}

def NN_ResizeCoordinates : I32EnumAttr<"ResizeCoordinates",
    "where nn.resize takes an output element from in the input", [
      I32EnumAttrCase<"half_pixel", 0>,
      I32EnumAttrCase<"pytorch_half_pixel", 1>,
      I32EnumAttrCase<"align_corners", 2>,
      I32EnumAttrCase<"asymmetric", 3>,
      I32EnumAttrCase<"tf_half_pixel_for_nn", 4>
    ]> {
  let cppNamespace = "::parplan::nn";
}

def NN_NearestRounding : I32EnumAttr<"NearestRounding",
    "how nearest resizing rounds a coordinate to an index", [
      I32EnumAttrCase<"round_prefer_floor", 0>,
      I32EnumAttrCase<"round_prefer_ceil", 1>,
      I32EnumAttrCase<"floor", 2>,
      I32EnumAttrCase<"ceil", 3>
    ]> {
  let cppNamespace = "::parplan::nn";
}

def NN_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu evaluates the Gaussian CDF", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"tanh", 1>
    ]> {
  let cppNamespace = "::parplan::nn";
}

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

// Tensors of the element types ONNX models train with.
def NN_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def NN_Element : AnyTypeOf<[F16, BF16, F32, F64, I1, I8, I32, I64]>;
def NN_Tensor : StaticShapeTensorOf<[NN_Element]>;
def NN_FloatTensor : StaticShapeTensorOf<[NN_Float]>;

#endif // PARPLAN_NN_BASE
