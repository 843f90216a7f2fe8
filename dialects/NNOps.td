//===- NNOps.td - nn dialect operations --------------------*- tablegen -*-===//

#ifndef PARPLAN_NN_OPS
#define PARPLAN_NN_OPS

include "NNBase.td"
include "NNInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Every op reports its cost (lib/Dialect/NN/NNOpCosts.cpp) and its sharding
// rules (lib/Dialect/NN/NNShardingRules.cpp).
class NN_ComputeOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat(traits,
        [Pure, DeclareOpInterfaceMethods<NN_ShardableOpInterface, ["getCost", "getSbpSignatures"]>])>;

// Ops whose result types follow from their operands and attributes. The one
// shape rule serves both the verifier and the builders without result types.
class NN_InferredOp<string mnemonic, list<Trait> traits = []>
    : NN_ComputeOp<mnemonic, !listconcat(traits, [InferTypeOpAdaptor])>;

//===----------------------------------------------------------------------===//
// Values that enter the program
//===----------------------------------------------------------------------===//

def NN_ParamOp : NN_Op<"param", [
    DeclareOpInterfaceMethods<NN_ShardableOpInterface, ["getCost", "getSbpSignatures"]>]> {
  let summary = "A trainable parameter (weight) of the model";
  let description = [{
    Names a parameter of the model by its ONNX initializer name. The bytes
    never enter the IR: `source`, when present, says where they live, and the
    executor reads them from there:

    | source                          | bytes                                    |
    |---------------------------------|------------------------------------------|
    | `initializer`                   | the initializer's data in the .onnx file |
    | `external:FILE@OFFSET+LENGTH`   | an external data file beside the model   |
    | `constant:NODE`                 | a Constant node's tensor                 |
    | `input`                         | a graph input that has an initializer    |
    | `zeros`                         | none: starts at zero (optimizer state)   |

    A parameter is one logical tensor; where it is stored on the devices is
    decided later by the sharding search.

    A parameter may be a block of a stored tensor: `part_of` names the
    stored tensor (as ONNX knows it) and `part = [axis, offset, extent]`
    says that this parameter is its elements `offset ..
    offset + size - 1` along `axis`, where `extent` is the stored tensor's
    size there. `nn-split-fused-projections` makes such parts of fused
    weights (GPT-2's query-key-value projection) so that each can be laid
    out on its own.

    ```mlir
    %w = nn.param "encoder.fc1.weight" : tensor<768x3072xf32>
    %b = nn.param "encoder.fc1.bias" {source = "initializer"} : tensor<3072xf32>
    %q = nn.param "h.0.attn.c_attn.weight[:, 0:768]"
           {part = array<i64: 1, 0, 2304>, part_of = "h.0.attn.c_attn.weight"}
           : tensor<768x768xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<StrAttr>:$source,
                       OptionalAttr<StrAttr>:$part_of,
                       OptionalAttr<DenseI64ArrayAttr>:$part);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_InputOp : NN_Op<"input", [
    DeclareOpInterfaceMethods<NN_ShardableOpInterface, ["getCost", "getSbpSignatures"]>]> {
  let summary = "A graph input fed with data at every step";
  let description = [{
    A non-parameter graph input of the model (a batch of features, token ids,
    labels), named as in the ONNX graph.

    ```mlir
    %x = nn.input "input_ids" : tensor<8x1024xi64>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_ConstantOp : NN_ComputeOp<"constant", [ConstantLike,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor";
  let description = [{
    ```mlir
    %c = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def NN_MatMulOp : NN_InferredOp<"matmul", [SameOperandsAndResultElementType]> {
  let summary = "Matrix product with numpy semantics (ONNX MatMul)";
  let description = [{
    `alpha * op(lhs) x op(rhs)`: `[..., m, k] x [..., k, n] -> [..., m, n]`;
    leading (batch) dimensions broadcast. A 1-D left operand is promoted to
    `[1, k]` and a 1-D right operand to `[k, 1]`; the promoted dimension is
    removed from the result.

    `transpose_lhs` / `transpose_rhs` read an operand with its last two
    dimensions swapped (`op`), as a matrix library reads a transposed
    operand, without a copy; they need an operand of rank 2 or more.
    `alpha` scales the product (1 when absent). Import writes neither: `nn-fold-into-matmul`
    folds the transposes and scalar scalings around a product into them,
    and the backward pass writes its products with them.

    ```mlir
    %y = nn.matmul %x, %w : tensor<8x128x768xf32>, tensor<768x3072xf32>
           -> tensor<8x128x3072xf32>
    // q k^T / 8: the scores of attention, keys [b, heads, s, d] read
    // transposed.
    %s = nn.matmul %q, %k {transpose_rhs, alpha = 1.250000e-01 : f32}
           : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       OptionalAttr<F32Attr>:$alpha);
  let results = (outs NN_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs,
                   CArg<"bool", "false">:$transposeLhs,
                   CArg<"bool", "false">:$transposeRhs,
                   CArg<"double", "1.0">:$alpha)>
  ];
  let extraClassDeclaration = [{
    /// The scale of the product: `alpha`, 1 when absent.
    double getScale() {
      return getAlpha() ? getAlpha()->convertToDouble() : 1.0;
    }
    /// The size of the contracted dimension.
    int64_t getContractedSize() {
      llvm::ArrayRef<int64_t> lhs = getLhs().getType().getShape();
      return getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
    }
  }];
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def NN_GemmOp : NN_InferredOp<"gemm", [SameOperandsAndResultElementType]> {
  let summary = "General matrix multiply, a linear layer (ONNX Gemm)";
  let description = [{
    `alpha * op(a) x op(b) + beta * c` where `op` transposes when `trans_a` /
    `trans_b` is set; `a` and `b` are 2-D and `c`, when present, broadcasts
    (unidirectionally) to the `[m, n]` result. A PyTorch `nn.Linear` exports
    as `gemm` with `trans_b`.

    ```mlir
    %y = nn.gemm %x, %w, %b {trans_b = true}
           : tensor<32x784xf32>, tensor<512x784xf32>, tensor<512xf32>
           -> tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$a, NN_FloatTensor:$b,
                       Optional<NN_FloatTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` type($a) `,` type($b) (`,` type($c)^)?
    `->` type($result)
  }];
}

def NN_ConvOp : NN_InferredOp<"conv", [SameOperandsAndResultElementType]> {
  let summary = "N-d convolution (ONNX Conv)";
  let description = [{
    `input [N, C, D1..Dk] * weight [M, C / group, K1..Kk] (+ bias [M])
    -> [N, M, O1..Ok]` with, per spatial dimension `i`,
    `O = floor((D + pad_begin + pad_end - dilation * (K - 1) - 1) / stride) + 1`.
    `pads` lists the k begin paddings then the k end paddings; ONNX's
    `auto_pad` is resolved to explicit pads at import.

    ```mlir
    %y = nn.conv %x, %w, %b strides = [1, 1] pads = [1, 1, 1, 1]
           dilations = [1, 1] group = 1
           : tensor<8x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>
           -> tensor<8x64x224x224xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$weight,
                       Optional<NN_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `strides` `=` $strides `pads` `=` $pads
    `dilations` `=` $dilations `group` `=` $group attr-dict `:` type($input)
    `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string onnx>
    : NN_InferredOp<mnemonic, [SameOperandsAndResultElementType]> {
  let summary = "Elementwise " # mnemonic # " with multidirectional broadcasting (ONNX " # onnx # ")";
  let description = [{
    The operands broadcast to the result shape as in numpy: shapes are aligned
    from the right, and a dimension of size 1 stretches to the other. Folds
    when both operands are constants.

    ```mlir
    %y = nn.}] # mnemonic # [{ %a, %b : tensor<8x768xf32>, tensor<768xf32> -> tensor<8x768xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

def NN_AddOp : NN_BinaryOp<"add", "Add">;
def NN_SubOp : NN_BinaryOp<"sub", "Sub">;
def NN_MulOp : NN_BinaryOp<"mul", "Mul">;
def NN_DivOp : NN_BinaryOp<"div", "Div">;
def NN_PowOp : NN_BinaryOp<"pow", "Pow">;

class NN_CompareOp<string mnemonic, string onnx, string formula>
    : NN_InferredOp<mnemonic> {
  let summary = "Elementwise " # mnemonic # " with broadcasting (ONNX " # onnx # ")";
  let description = "`" # formula # "` elementwise, true or false (`i1`), "
    # "the operands broadcasting as in numpy; both of one element type. "
    # "Folds when both are constants: exported models assert on static "
    # "shapes this way (torchvision's `torch._assert`).\n\n```mlir\n%b = nn."
    # mnemonic # " %a, %c : tensor<8x128xi64>, tensor<i64> -> "
    # "tensor<8x128xi1>\n```";
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs StaticShapeTensorOf<[I1]>:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

def NN_EqualOp : NN_CompareOp<"equal", "Equal", "lhs == rhs">;
def NN_LessOp : NN_CompareOp<"less", "Less", "lhs < rhs">;
def NN_GreaterOp : NN_CompareOp<"greater", "Greater", "lhs > rhs">;
def NN_AndOp : NN_CompareOp<"and", "And", "lhs and rhs, of i1 operands">;
def NN_OrOp : NN_CompareOp<"or", "Or", "lhs or rhs, of i1 operands">;

def NN_NotOp : NN_ComputeOp<"not", [SameOperandsAndResultType]> {
  let summary = "Elementwise logical not (ONNX Not)";
  let description = [{
    `!x` of an `i1` tensor. Folds on constants.

    ```mlir
    %n = nn.not %b : tensor<8x128xi1>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I1]>:$input);
  let results = (outs StaticShapeTensorOf<[I1]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasFolder = 1;
}

def NN_WhereOp : NN_InferredOp<"where"> {
  let summary = "Elementwise select with broadcasting (ONNX Where)";
  let description = [{
    `condition ? lhs : rhs`, the three operands broadcasting together.
    Folds to the branch a constant condition picks everywhere, when that
    branch already has the result's type.

    ```mlir
    %y = nn.where %mask, %scores, %minus_inf
           : tensor<1x1x128x128xi1>, tensor<8x12x128x128xf32>, tensor<f32>
           -> tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I1]>:$condition, NN_Tensor:$lhs,
                       NN_Tensor:$rhs);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs)
    `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

class NN_UnaryOp<string mnemonic, string onnx, string formula>
    : NN_ComputeOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = "Elementwise " # mnemonic # " (ONNX " # onnx # ")";
  let description = "`" # formula # "`, elementwise.\n\n"
    # "```mlir\n%y = nn." # mnemonic # " %x : tensor<32x512xf32>\n```";
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def NN_ReluOp : NN_UnaryOp<"relu", "Relu", "max(x, 0)">;
def NN_TanhOp : NN_UnaryOp<"tanh", "Tanh", "tanh(x)">;
def NN_SqrtOp : NN_UnaryOp<"sqrt", "Sqrt", "sqrt(x)">;
def NN_ExpOp : NN_UnaryOp<"exp", "Exp", "e^x">;
def NN_LogOp : NN_UnaryOp<"log", "Log", "ln(x)">;
def NN_SigmoidOp : NN_UnaryOp<"sigmoid", "Sigmoid", "1 / (1 + e^-x)">;
def NN_ErfOp : NN_UnaryOp<"erf", "Erf", "erf(x)">;
def NN_HardSwishOp : NN_UnaryOp<"hard_swish", "HardSwish", "x * max(0, min(1, x / 6 + 1 / 2))">;

def NN_LeakyReluOp : NN_ComputeOp<"leaky_relu", [SameOperandsAndResultType]> {
  let summary = "Leaky rectifier (ONNX LeakyRelu)";
  let description = [{
    `x >= 0 ? x : alpha * x`.

    ```mlir
    %y = nn.leaky_relu %x alpha = 1.000000e-01 : tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F32Attr, "0.01">:$alpha);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input (`alpha` `=` $alpha^)? attr-dict `:` type($result)";
}

def NN_HardSigmoidOp : NN_ComputeOp<"hard_sigmoid", [SameOperandsAndResultType]> {
  let summary = "Piecewise-linear sigmoid (ONNX HardSigmoid)";
  let description = [{
    `max(0, min(1, alpha * x + beta))`.

    ```mlir
    %y = nn.hard_sigmoid %x alpha = 0.2 beta = 0.5 : tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<F32Attr, "0.2">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.5">:$beta);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`alpha` `=` $alpha^)? (`beta` `=` $beta^)? attr-dict `:` type($result)
  }];
}

def NN_ClipOp : NN_ComputeOp<"clip", [SameOperandsAndResultType]> {
  let summary = "Clamp to a range (ONNX Clip)";
  let description = [{
    `min(max(x, min), max)`; an absent bound does not clamp. ONNX's bound
    inputs (opset 11 and later) must be constants and become attributes.

    ```mlir
    %y = nn.clip %x min = 0.0 max = 6.0 : tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, OptionalAttr<F32Attr>:$min,
                       OptionalAttr<F32Attr>:$max);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`min` `=` $min^)? (`max` `=` $max^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def NN_GeluOp : NN_ComputeOp<"gelu", [SameOperandsAndResultType]> {
  let summary = "Gaussian error linear unit (ONNX Gelu, opset 20)";
  let description = [{
    `x * Phi(x)`, with the exact CDF `0.5 * (1 + erf(x / sqrt(2)))` when
    `approximate = none` (the default) and the tanh approximation
    `0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))` when
    `approximate = tanh`.

    ```mlir
    %y = nn.gelu %x : tensor<8x128x3072xf32>
    %z = nn.gelu %x approximate = tanh : tensor<8x128x3072xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
      DefaultValuedAttr<NN_GeluApproximation,
                        "::parplan::nn::GeluApproximation::none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` `=` $approximate^)? attr-dict `:` type($result)
  }];
}

def NN_DropoutOp : NN_ComputeOp<"dropout", [AllTypesMatch<["input", "result"]>,
    AttrSizedOperandSegments]> {
  let summary = "Dropout (ONNX Dropout)";
  let description = [{
    Without `step`, the inference form as imported: the identity. With
    `step` (a training step's count, from 1; nn-autodiff adds it), each
    element is kept with probability `1 - ratio` and scaled by
    `1 / (1 - ratio)`, or zeroed:

    ```
    y[i] = u(seed, step, micro_batch, key, i) >= ratio ? x[i] / (1 - ratio) : 0
    ```

    where `i` is the element's row-major index in the logical tensor,
    `micro_batch` the `nn.micro_batch` index (0 when absent) and `u` a
    counter-based uniform number in [0, 1) (docs/training.md): the mask
    depends on no device's block, so any layout drops the same elements as
    one device. Its gradient is the same op on the result's cotangent.
    Folds to its input when `ratio` is 0.

    ```mlir
    %y = nn.dropout %x ratio = 1.000000e-01 : tensor<8x128x768xf32>
    %t = nn.dropout %x step %step micro_batch %m ratio = 1.000000e-01
           {key = 3 : i64} : tensor<8x128x768xf32>, tensor<f32>, tensor<i64>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       Optional<0DTensorOf<[F32]>>:$step,
                       Optional<0DTensorOf<[I64]>>:$micro_batch,
                       DefaultValuedAttr<F32Attr, "0.5">:$ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$key);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`step` $step^)? (`micro_batch` $micro_batch^)?
    (`ratio` `=` $ratio^)? attr-dict `:` type($input) (`,` type($step)^)?
    (`,` type($micro_batch)^)?
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_CastOp : NN_ComputeOp<"cast", [SameOperandsAndResultShape]> {
  let summary = "Element type conversion (ONNX Cast)";
  let description = [{
    Converts every element to the result's element type. Folds on constants.

    ```mlir
    %y = nn.cast %x : tensor<8x128xi64> -> tensor<8x128xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

class NN_SoftmaxBase<string mnemonic, string onnx, string formula>
    : NN_ComputeOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = onnx # " along one axis (ONNX " # onnx # ", opset 13)";
  let description = "`" # formula # "`. `axis` may be negative (counted "
    # "from the end) and defaults to the last dimension.\n\n```mlir\n%p = nn."
    # mnemonic # " %scores axis = -1 : tensor<8x12x128x128xf32>\n```";
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input (`axis` `=` $axis^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_SoftmaxOp : NN_SoftmaxBase<"softmax", "Softmax", "exp(x) / sum(exp(x), axis)">;
def NN_LogSoftmaxOp : NN_SoftmaxBase<"log_softmax", "LogSoftmax", "x - log(sum(exp(x), axis))">;

def NN_LayerNormOp : NN_ComputeOp<"layer_norm", [SameOperandsAndResultElementType,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Layer normalization (ONNX LayerNormalization)";
  let description = [{
    Normalizes over the dimensions from `axis` to the last one, then scales
    and shifts: `(x - mean) / sqrt(var + epsilon) * scale + bias`. `scale`
    and `bias` have the normalized shape `input.shape[axis:]`.

    ```mlir
    %y = nn.layer_norm %x, %gamma, %beta axis = -1 epsilon = 1.0e-05
           : tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32>
           -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? (`axis` `=` $axis^)?
    (`epsilon` `=` $epsilon^)? attr-dict `:` type($input) `,` type($scale)
    (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_BatchNormOp : NN_ComputeOp<"batch_norm", [SameOperandsAndResultElementType,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Batch normalization with given statistics (ONNX BatchNormalization)";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias` with per-channel
    (dimension 1) statistics: the inference form. In a training step
    nn-autodiff replaces it by the training form (`batch-norm=batch`, the
    default): the batch's own mean and biased variance over (N, spatial),
    and the running statistics `mean` and `variance` updated as
    `running * momentum + batch * (1 - momentum)` (ONNX's momentum, 0.9
    for PyTorch's default 0.1; the unbiased variance). docs/training.md
    has the formulas.

    ```mlir
    %y = nn.batch_norm %x, %scale, %bias, %mean, %var epsilon = 1.0e-05
           : tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>,
             tensor<64xf32>, tensor<64xf32> -> tensor<8x64x56x56xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, NN_FloatTensor:$scale,
                       NN_FloatTensor:$bias, NN_FloatTensor:$mean,
                       NN_FloatTensor:$variance,
                       DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9">:$momentum);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance
    (`epsilon` `=` $epsilon^)? (`momentum` `=` $momentum^)? attr-dict `:`
    type($input) `,` type($scale) `,` type($bias) `,` type($mean) `,`
    type($variance) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

class NN_PoolOp<string mnemonic, string onnx> : NN_InferredOp<mnemonic,
    [SameOperandsAndResultElementType]> {
  let summary = onnx # " over the spatial dimensions (ONNX " # onnx # ")";
  let description = [{
    Windows of `kernel` elements with `strides`, `pads` (k begin paddings
    then k end paddings) and `dilations` over `[N, C, D1..Dk]`; per spatial
    dimension the output has
    `(D + pad_begin + pad_end - dilation * (K - 1) - 1) / stride + 1`
    elements, rounded down, or up when `ceil_mode` is set (a last window that
    would start in the end padding is dropped). For average pooling,
    `count_include_pad` counts padded elements in the divisor.
    GlobalAveragePool imports as `nn.reduce_mean` over the spatial axes.

    ```mlir
    %y = nn.}] # mnemonic # [{ %x kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0]
           dilations = [1, 1] : tensor<8x64x224x224xf32> -> tensor<8x64x112x112xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` `=` $kernel `strides` `=` $strides `pads` `=` $pads
    `dilations` `=` $dilations attr-dict `:` type($input) `->` type($result)
  }];
}

def NN_MaxPoolOp : NN_PoolOp<"max_pool", "MaxPool">;
def NN_AvgPoolOp : NN_PoolOp<"avg_pool", "AveragePool">;

def NN_TopKOp : NN_ComputeOp<"top_k"> {
  let summary = "The k largest (or smallest) elements along an axis (ONNX TopK)";
  let description = [{
    Along `axis` (signed), the `k` largest elements (the smallest, with
    `largest = false`) in order, largest (smallest) first, and their
    indices; of equal elements the one of the lower index comes first.
    `sorted = false` lets ONNX return them in any order: they come sorted
    all the same. Forward only: a training step cannot differentiate it.

    ```mlir
    %values, %indices = nn.top_k %logits axis = -1 k = 5
      : tensor<8x1000xf32> -> tensor<8x5xf32>, tensor<8x5xi64>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input, I64Attr:$axis, I64Attr:$k,
                       DefaultValuedAttr<BoolAttr, "true">:$largest,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs NN_FloatTensor:$values,
                      StaticShapeTensorOf<[I64]>:$indices);
  let assemblyFormat = [{
    $input `axis` `=` $axis `k` `=` $k attr-dict `:` type($input) `->`
    type($values) `,` type($indices)
  }];
  let hasVerifier = 1;
}

def NN_ResizeOp : NN_ComputeOp<"resize", [SameOperandsAndResultElementType]> {
  let summary = "Resize by nearest or n-linear sampling (ONNX Resize)";
  let description = [{
    Every output element samples the input at a coordinate per axis, from
    its index `x` and the axis's scale `s = out / in` (the result type says
    the extents):

    | `coordinates` | coordinate in the input |
    |---|---|
    | `half_pixel` | `(x + 0.5) / s - 0.5` |
    | `pytorch_half_pixel` | as `half_pixel`, or 0 where `out` is 1 |
    | `align_corners` | `x * (in - 1) / (out - 1)`, or 0 where `out` is 1 |
    | `asymmetric` | `x / s` |
    | `tf_half_pixel_for_nn` | `(x + 0.5) / s` |

    `nearest` takes the element at that coordinate rounded by `rounding`
    (half to the lower index, half to the higher, down or up); `linear`
    interpolates between the two elements around it on each axis whose
    extent changes. Coordinates outside the input take its edge. An axis
    of unchanged extent is the identity under every mode, so the batch and
    channels of an image split freely.

    ```mlir
    %y = nn.resize %x mode = linear coordinates = half_pixel
           : tensor<1x64x32x32xf32> -> tensor<1x64x64x64xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
      DefaultValuedAttr<NN_ResizeMode, "::parplan::nn::ResizeMode::nearest">:$mode,
      DefaultValuedAttr<NN_ResizeCoordinates,
                        "::parplan::nn::ResizeCoordinates::half_pixel">:$coordinates,
      DefaultValuedAttr<NN_NearestRounding,
                        "::parplan::nn::NearestRounding::round_prefer_floor">:$rounding);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`mode` `=` $mode^)? (`coordinates` `=` $coordinates^)?
    (`rounding` `=` $rounding^)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def NN_ReshapeOp : NN_ComputeOp<"reshape", [SameOperandsAndResultElementType]> {
  let summary = "Reshape to a static shape (ONNX Reshape, Flatten, Squeeze, Unsqueeze)";
  let description = [{
    The target shape is the result type, which must hold as many elements as
    the input; ONNX's shape operand (with its 0 and -1 entries), Flatten's
    axis and Squeeze/Unsqueeze's axes are resolved at import. Folds on
    constants and when the shape does not change.

    ```mlir
    %y = nn.reshape %x : tensor<8x128x768xf32> -> tensor<8x128x12x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_ExpandOp : NN_ComputeOp<"expand", [SameOperandsAndResultElementType]> {
  let summary = "Broadcast to a larger shape (ONNX Expand)";
  let description = [{
    The input broadcasts (numpy rules) to the result shape, which ONNX's shape
    operand determines at import.

    ```mlir
    %y = nn.expand %x : tensor<1x1x128xf32> -> tensor<8x12x128xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NN_TransposeOp : NN_InferredOp<"transpose", [SameOperandsAndResultElementType]> {
  let summary = "Permute dimensions (ONNX Transpose)";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`.

    ```mlir
    %y = nn.transpose %x perm = [0, 2, 1, 3]
           : tensor<8x128x12x64xf32> -> tensor<8x12x128x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $input `perm` `=` $perm attr-dict `:` type($input) `->` type($result)
  }];
}

def NN_ConcatOp : NN_InferredOp<"concat", [SameOperandsAndResultElementType]> {
  let summary = "Join tensors along one axis (ONNX Concat)";
  let description = [{
    All operands have the same rank and agree on every dimension but `axis`
    (signed). Folds when every operand is a constant.

    ```mlir
    %y = nn.concat %a, %b axis = 0 : tensor<2xi64>, tensor<2xi64> -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Variadic<NN_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasFolder = 1;
}

def NN_SplitOp : NN_InferredOp<"split", [SameOperandsAndResultElementType]> {
  let summary = "Cut a tensor into parts along one axis (ONNX Split)";
  let description = [{
    Result `i` holds `sizes[i]` consecutive elements along `axis` (signed);
    the sizes add up to the dimension.

    ```mlir
    %q, %k, %v = nn.split %qkv axis = -1 sizes = [768, 768, 768]
      : tensor<8x128x2304xf32> -> tensor<8x128x768xf32>, tensor<8x128x768xf32>, tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<NN_Tensor>:$results);
  let assemblyFormat = [{
    $input `axis` `=` $axis `sizes` `=` $sizes attr-dict `:` type($input)
    `->` type($results)
  }];
}

def NN_SliceOp : NN_InferredOp<"slice", [SameOperandsAndResultElementType]> {
  let summary = "A strided box of a tensor (ONNX Slice)";
  let description = [{
    Per dimension `d`, the result takes `sizes[d]` elements starting at index
    `starts[d]` with step `steps[d]` (non-zero; negative walks backwards).
    ONNX's starts, ends, axes and steps (clamped, negative indices resolved)
    are normalized to this full-rank form at import. Folds on constants.

    ```mlir
    %y = nn.slice %x starts = [0, 2] sizes = [4, 3] steps = [1, 2]
           : tensor<4x8xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$steps);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $input `starts` `=` $starts `sizes` `=` $sizes `steps` `=` $steps attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def NN_GatherOp : NN_InferredOp<"gather"> {
  let summary = "Index along one axis (ONNX Gather)";
  let description = [{
    `result[i0.., j0.., k0..] = input[i0.., indices[j0..], k0..]` with the
    indices taken along `axis` (signed): the result shape is
    `input.shape[:axis] + indices.shape + input.shape[axis+1:]`. An embedding
    lookup is a gather on axis 0. Negative indices count from the end.
    Folds on constants.

    ```mlir
    %e = nn.gather %wte, %ids axis = 0
           : tensor<50257x768xf32>, tensor<8x128xi64> -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input,
                       StaticShapeTensorOf<[I32, I64]>:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $indices (`axis` `=` $axis^)? attr-dict `:` type($input) `,`
    type($indices) `->` type($result)
  }];
  let hasFolder = 1;
}

def NN_ShapeOp : NN_InferredOp<"shape"> {
  let summary = "The shape of a tensor as a tensor (ONNX Shape)";
  let description = [{
    Shapes are static, so this always folds to a constant; it exists so that
    the shape-computing subgraphs of exported models (Shape, Gather, Concat,
    ... feeding Reshape) fold by canonicalization.

    ```mlir
    %s = nn.shape %x : tensor<8x128x768xf32> -> tensor<3xi64>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class NN_ReduceOp<string mnemonic, string onnx>
    : NN_InferredOp<mnemonic, [SameOperandsAndResultElementType]> {
  let summary = "Reduce with " # mnemonic # " over axes (ONNX " # onnx # ")";
  let description = [{
    Reduces over `axes` (negative values count from the end; empty means all
    dimensions), keeping them as size-1 dimensions when `keepdims` is true
    (the ONNX default).

    ```mlir
    %m = nn.}] # mnemonic # [{ %x axes = [-1] : tensor<8x128x768xf32> -> tensor<8x128x1xf32>
    %s = nn.}] # mnemonic # [{ %x axes = [1] keepdims = false : tensor<8x128x768xf32> -> tensor<8x768xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $input (`axes` `=` $axes^)? (`keepdims` `=` $keepdims^)? attr-dict `:`
    type($input) `->` type($result)
  }];
}

def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "ReduceMean">;
def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "ReduceSum">;

include "NNTrainingOps.td"

#endif // PARPLAN_NN_OPS
