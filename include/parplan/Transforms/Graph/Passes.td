//===- Passes.td - Graph passes ----------------------------*- tablegen -*-===//
//
// The Graph stage: rewrites of the program as imported (fusions, folds,
// untying and splitting parameters), before the training step is built.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_GRAPH_PASSES
#define PARPLAN_TRANSFORMS_GRAPH_PASSES

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

def NNFoldIntoMatMul : Pass<"nn-fold-into-matmul", "::mlir::func::FuncOp"> {
  let summary = "Fold transposes and scalar scalings into the products";
  let description = [{
    A matrix library reads an operand transposed and scales a product for
    free; a transpose or a scaling written as its own op is a pass over
    memory. This pass rewrites

    ```
    matmul(transpose(x, [..., r-1, r-2]), y)  -> matmul(x, y) {transpose_lhs}
    matmul(x, transpose(y, [..., r-1, r-2]))  -> matmul(x, y) {transpose_rhs}
    div(matmul(x, y), c), mul(matmul(x, y), c)
                                      -> matmul(x, y) {alpha = 1/c, or c}
    matmul(div(x, c), y), matmul(mul(x, c), y), and on the right
                                      -> matmul(x, y) {alpha = 1/c, or c}
    ```

    where the transpose swaps the last two dimensions only (a flag already
    set is toggled), `c` is a splat constant that does not broadcast the
    other operand to a larger shape, and the scaled product, or the scaled
    operand, has no other use. Attention as exporters write it,
    `softmax(where(mask, q k^T / sqrt(d), -inf)) v`, becomes products with
    flags and alpha, and the tied LM head's `matmul(x, transpose(wte))` reads
    the embedding as it is stored. A transpose left without uses is erased
    by the canonicalizer that follows.

    Options: none.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

def NNUntieParameters : Pass<"nn-untie-parameters", "::mlir::func::FuncOp"> {
  let summary = "Warn of a parameter shared by layers; give each use a copy";
  let description = [{
    `torch.onnx.export` merges initializers of equal values: the zero biases
    and unit norm weights of a freshly initialized model become one
    initializer read by many layers, which a training step would then train
    as one tied parameter. An `nn.param` of a floating-point type read by
    ops of more than one layer is such a tie; the layer of an op is its node
    name up to the last `/` (`/layer1/layer1.0/bn1/BatchNormalization` is in
    `/layer1/layer1.0/bn1`), or the whole name when it has none. A batch
    norm's running statistics are a group of their own within the layer
    (the step updates them itself): a zero bias that is also the running
    mean of the same batch norm is a tie too. The pass warns of each, in
    one line naming the parameter and its groups.

    A parameter listed in `untie` gets a copy per group instead: the first
    keeps the parameter, the K-th other one reads `NAME.untied.K`, a part
    (`part_of`, `part`) covering the whole stored tensor, so every copy
    loads the same bytes and is trained (or updated) on its own. A name in
    `untie` that is no parameter, is read by one group only, or is a
    scalar, is an error.

    Options:
    - `untie`: comma-separated parameter names to untie.
    - `frozen`: comma-separated globs of parameters not trained
      (nn-autodiff's): not warned of.
  }];
  let options = [
    ListOption<"untie", "untie", "std::string",
               "Parameters to give each layer's use a copy of">,
    Option<"frozen", "frozen", "std::string", "\"\"",
           "Comma-separated globs of parameters not trained">
  ];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

def NNSplitFusedProjections : Pass<"nn-split-fused-projections",
                                   "::mlir::func::FuncOp"> {
  let summary = "Split fused projections into one per part";
  let description = [{
    GPT-2 computes queries, keys and values with one projection and splits
    its result:

    ```
    y = matmul(x, W) [+ b]        W: [k, n1 + n2 + n3] parameter
    q, k, v = split(y, axis = -1, sizes = [n1, n2, n3])
    ```

    The sharding search cannot split the columns of `W` for each part (a
    column split of `y` cuts across the parts), so Megatron's
    column-parallel attention is out of its reach. This pass rewrites the
    pattern into one projection per part, each with its own parameters:
    `q = matmul(x, W[:, 0:n1]) [+ b[0:n1]]`, and so on. The parts are
    `nn.param`s with `part_of` (the stored weight) and `part` (where in it),
    so weights are still read from the model's initializer, each part from
    its block. Optimizers are elementwise, so training the parts trains the
    fused weight.

    Also `gemm` (with or without `trans_b`, `alpha` and `beta` kept) whose
    result is split along its columns. A projection whose result has other
    users, or whose weight has, is left alone.

    Options: none.
  }];
  let dependentDialects = ["::parplan::nn::NNDialect"];
}

#endif // PARPLAN_TRANSFORMS_GRAPH_PASSES
