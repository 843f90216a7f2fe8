//===- TransformsPasses.td - passes over nn programs ------*- tablegen -*-===//
//
// The Transforms stage: rewrites of logical (nn) programs.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_PASSES
#define PARPLAN_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def NNFuseLayerNorm : Pass<"nn-fuse-layer-norm", "::mlir::func::FuncOp"> {
  let summary = "Fuse decomposed layer normalizations into nn.layer_norm";
  let description = [{
    Exporters that predate ONNX's LayerNormalization (opset 17) spell layer
    normalization as nine ops. This pass finds

    ```
    mean = reduce_mean(x, axes = A, keepdims)
    d    = sub(x, mean)
    var  = reduce_mean(pow(d, 2) or mul(d, d), axes = A, keepdims)
    n    = div(d, sqrt(add(var, epsilon)))
    y    = add(mul(n, scale), bias)        (or y = mul(n, scale))
    ```

    where `A` are the trailing dimensions from some axis `k` to the last,
    `epsilon` is a scalar constant and `scale`/`bias` have the normalized
    shape `x.shape[k:]`, and replaces `y` with
    `nn.layer_norm %x, %scale, %bias axis = k epsilon = epsilon`. Operand
    order of the commutative ops does not matter. A candidate that differs in
    any detail is left alone.

    Options: none.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

def NNFuseGelu : Pass<"nn-fuse-gelu", "::mlir::func::FuncOp"> {
  let summary = "Fuse decomposed GELU activations into nn.gelu";
  let description = [{
    Finds the two forms exporters write GELU in and replaces them with one
    `nn.gelu`:

    - erf form (PyTorch's exact GELU before ONNX Gelu, opset 20):
      `x * (erf(x / sqrt(2)) + 1) * 0.5`, the division also written as a
      multiplication by `1 / sqrt(2)`, becomes `nn.gelu %x`;
    - tanh form (GPT-2's `gelu_new`, BERT's TF port):
      `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`, the cube
      written as `pow(x, 3)` or as products of `x`, becomes
      `nn.gelu %x approximate = tanh`.

    Products may be nested and ordered in any way; constants must match to
    a relative 1e-4.

    Options: none.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

#endif // PARPLAN_TRANSFORMS_PASSES
