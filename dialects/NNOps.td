//===- NNOps.td - nn dialect operations --------------------*- tablegen -*-===//

#ifndef PARPLAN_NN_OPS
#define PARPLAN_NN_OPS

include "NNBase.td"
include "NNInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class NN_ComputeOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat(traits,
        [Pure, DeclareOpInterfaceMethods<NN_ShardableOpInterface>])>;

//===----------------------------------------------------------------------===//
// Values that enter the program
//===----------------------------------------------------------------------===//

def NN_ParamOp : NN_Op<"param", [
    DeclareOpInterfaceMethods<NN_ShardableOpInterface>]> {
  let summary = "A trainable parameter (weight) of the model";
  let description = [{
    Names a parameter of the model by its ONNX initializer name. The bytes
    never enter the IR: `source`, when present, says where they live (for
    example `initializer`, `external:weights.bin@1024`), and the executor
    reads them from there. A parameter is one logical tensor; where it is
    stored on the devices is decided later by the sharding search.

    ```mlir
    %w = nn.param "encoder.fc1.weight" : tensor<768x3072xf32>
    %b = nn.param "encoder.fc1.bias" {source = "initializer"} : tensor<3072xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<StrAttr>:$source);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_InputOp : NN_Op<"input", [
    DeclareOpInterfaceMethods<NN_ShardableOpInterface>]> {
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

def NN_MatMulOp : NN_ComputeOp<"matmul", [SameOperandsAndResultElementType]> {
  let summary = "Matrix product with numpy semantics (ONNX MatMul)";
  let description = [{
    `[..., m, k] x [..., k, n] -> [..., m, n]`; leading (batch) dimensions
    broadcast. A 1-D left operand is promoted to `[1, k]` and a 1-D right
    operand to `[k, 1]`; the promoted dimension is removed from the result.

    ```mlir
    %y = nn.matmul %x, %w : tensor<8x128x768xf32>, tensor<768x3072xf32>
           -> tensor<8x128x3072xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$lhs, NN_FloatTensor:$rhs);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_GemmOp : NN_ComputeOp<"gemm", [SameOperandsAndResultElementType]> {
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
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string onnx>
    : NN_ComputeOp<mnemonic, [ResultsBroadcastableShape,
                               SameOperandsAndResultElementType]> {
  let summary = "Elementwise " # mnemonic # " with multidirectional broadcasting (ONNX " # onnx # ")";
  let description = [{
    The operands broadcast to the result shape as in numpy: shapes are aligned
    from the right, and a dimension of size 1 stretches to the other.

    ```mlir
    %y = nn.}] # mnemonic # [{ %a, %b : tensor<8x768xf32>, tensor<768xf32> -> tensor<8x768xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def NN_AddOp : NN_BinaryOp<"add", "Add">;
def NN_SubOp : NN_BinaryOp<"sub", "Sub">;
def NN_MulOp : NN_BinaryOp<"mul", "Mul">;
def NN_DivOp : NN_BinaryOp<"div", "Div">;

class NN_UnaryOp<string mnemonic, string onnx, list<Trait> traits = []>
    : NN_ComputeOp<mnemonic, !listconcat(traits, [SameOperandsAndResultType])> {
  let summary = "Elementwise " # mnemonic # " (ONNX " # onnx # ")";
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def NN_ReluOp : NN_UnaryOp<"relu", "Relu"> {
  let description = [{
    `max(x, 0)`.

    ```mlir
    %y = nn.relu %x : tensor<32x512xf32>
    ```
  }];
}

def NN_TanhOp : NN_UnaryOp<"tanh", "Tanh"> {
  let description = [{
    ```mlir
    %y = nn.tanh %x : tensor<32x512xf32>
    ```
  }];
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

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

def NN_SoftmaxOp : NN_ComputeOp<"softmax", [SameOperandsAndResultType]> {
  let summary = "Softmax along one axis (ONNX Softmax, opset 13)";
  let description = [{
    `exp(x) / sum(exp(x), axis)`. `axis` may be negative (counted from the
    end) and defaults to the last dimension.

    ```mlir
    %p = nn.softmax %scores axis = -1 : tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input (`axis` `=` $axis^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def NN_LayerNormOp : NN_ComputeOp<"layer_norm", [SameOperandsAndResultElementType]> {
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

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def NN_ReshapeOp : NN_ComputeOp<"reshape", [SameOperandsAndResultElementType]> {
  let summary = "Reshape to a static shape (ONNX Reshape, shape folded)";
  let description = [{
    The shape operand of ONNX Reshape is folded at import; the target shape
    is the result type, which must hold as many elements as the input.

    ```mlir
    %y = nn.reshape %x : tensor<8x128x768xf32> -> tensor<8x128x12x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$input);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def NN_TransposeOp : NN_ComputeOp<"transpose", [SameOperandsAndResultElementType]> {
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
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class NN_ReduceOp<string mnemonic, string onnx>
    : NN_ComputeOp<mnemonic, [SameOperandsAndResultElementType]> {
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
  let hasVerifier = 1;
}

def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "ReduceMean">;
def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "ReduceSum">;

#endif // PARPLAN_NN_OPS
