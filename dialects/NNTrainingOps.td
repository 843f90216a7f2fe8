//===- NNTrainingOps.td - backward, loss and optimizer ops -*- tablegen -*-===//
//
// The ops that nn-autodiff adds to a forward program to make it a training
// step. Backward ops whose gradient is an ordinary expression (matmul,
// add, tanh, ...) need no op of their own; those here need the forward
// input or output in a way no elementwise expression states cheaply.
// docs/training.md has every formula.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_NN_TRAINING_OPS
#define PARPLAN_NN_TRAINING_OPS

//===----------------------------------------------------------------------===//
// Activation gradients
//===----------------------------------------------------------------------===//

// `grad * f'(input)`: the cotangent of the result and the forward input in,
// the cotangent of the input out.
class NN_ActivationGradOp<string mnemonic, string forward, string derivative>
    : NN_ComputeOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = "Gradient of nn." # forward;
  let description = "`grad * (" # derivative # ")` elementwise, where `x` is "
    # "the input of the forward `nn." # forward # "`.\n\n```mlir\n%dx = nn."
    # mnemonic # " %dy, %x : tensor<32x512xf32>\n```";
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($result)";
}

def NN_ReluGradOp : NN_ActivationGradOp<"relu_grad", "relu", "x > 0 ? 1 : 0">;
def NN_HardSwishGradOp : NN_ActivationGradOp<"hard_swish_grad", "hard_swish",
  "x < -3 ? 0 : x > 3 ? 1 : x / 3 + 1 / 2">;

def NN_LeakyReluGradOp : NN_ComputeOp<"leaky_relu_grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of nn.leaky_relu";
  let description = [{
    `x >= 0 ? grad : alpha * grad`.

    ```mlir
    %dx = nn.leaky_relu_grad %dy, %x alpha = 1.000000e-01 : tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       DefaultValuedAttr<F32Attr, "0.01">:$alpha);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`alpha` `=` $alpha^)? attr-dict `:` type($result)
  }];
}

def NN_HardSigmoidGradOp : NN_ComputeOp<"hard_sigmoid_grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of nn.hard_sigmoid";
  let description = [{
    `0 < alpha * x + beta < 1 ? alpha * grad : 0`.

    ```mlir
    %dx = nn.hard_sigmoid_grad %dy, %x alpha = 0.2 beta = 0.5 : tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       DefaultValuedAttr<F32Attr, "0.2">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.5">:$beta);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`alpha` `=` $alpha^)? (`beta` `=` $beta^)? attr-dict `:`
    type($result)
  }];
}

def NN_ClipGradOp : NN_ComputeOp<"clip_grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of nn.clip";
  let description = [{
    `min <= x <= max ? grad : 0`; an absent bound does not clamp.

    ```mlir
    %dx = nn.clip_grad %dy, %x min = 0.0 max = 6.0 : tensor<32x512xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       OptionalAttr<F32Attr>:$min, OptionalAttr<F32Attr>:$max);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`min` `=` $min^)? (`max` `=` $max^)? attr-dict `:`
    type($result)
  }];
}

def NN_GeluGradOp : NN_ComputeOp<"gelu_grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of nn.gelu";
  let description = [{
    `grad * d/dx (x * Phi(x))` with the same `approximate` as the forward op:
    `Phi(x) + x * phi(x)` when exact.

    ```mlir
    %dx = nn.gelu_grad %dy, %x approximate = tanh : tensor<8x128x3072xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
      DefaultValuedAttr<NN_GeluApproximation,
                        "::parplan::nn::GeluApproximation::none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`approximate` `=` $approximate^)? attr-dict `:`
    type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Normalization gradients
//===----------------------------------------------------------------------===//

class NN_SoftmaxGradBase<string mnemonic, string forward, string formula>
    : NN_ComputeOp<mnemonic, [SameOperandsAndResultType]> {
  let summary = "Gradient of nn." # forward # " from its output";
  let description = "`" # formula # "`, where `y` is the output of the "
    # "forward `nn." # forward # "` and the sum runs along `axis`.\n\n"
    # "```mlir\n%dx = nn." # mnemonic
    # " %dy, %y axis = -1 : tensor<8x12x128x128xf32>\n```";
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$output,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $output (`axis` `=` $axis^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def NN_SoftmaxGradOp : NN_SoftmaxGradBase<"softmax_grad", "softmax",
  "y * (grad - sum(grad * y))">;
def NN_LogSoftmaxGradOp : NN_SoftmaxGradBase<"log_softmax_grad", "log_softmax",
  "grad - exp(y) * sum(grad)">;

def NN_LayerNormGradOp : NN_ComputeOp<"layer_norm_grad", [
    AllTypesMatch<["grad", "input", "input_grad"]>,
    AllTypesMatch<["scale", "scale_grad", "bias_grad"]>]> {
  let summary = "Gradient of nn.layer_norm";
  let description = [{
    The cotangents of the input, the scale and the bias of a
    `nn.layer_norm` with the same `axis` and `epsilon`; the scale and bias
    gradients are summed over the leading (unnormalized) dimensions. With
    `xhat = (x - mean) / sqrt(var + epsilon)` and `g = grad * scale`:
    `dx = (g - mean(g) - xhat * mean(g * xhat)) / sqrt(var + epsilon)`,
    `dscale = sum(grad * xhat)`, `dbias = sum(grad)`.

    ```mlir
    %dx, %dscale, %dbias = nn.layer_norm_grad %dy, %x, %gamma axis = -1
        epsilon = 1.0e-05 : tensor<8x128x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       NN_FloatTensor:$scale,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon);
  let results = (outs NN_FloatTensor:$input_grad, NN_FloatTensor:$scale_grad,
                      NN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $scale (`axis` `=` $axis^)? (`epsilon` `=` $epsilon^)?
    attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling gradients
//===----------------------------------------------------------------------===//

def NN_ConvGradInputOp : NN_ComputeOp<"conv_grad_input", [SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.conv with respect to its input";
  let description = [{
    The transposed convolution of `grad` (the cotangent of the conv's result)
    with the conv's weight. The result type is the conv's input type, which
    the strides cannot always recover, so it is stated.

    ```mlir
    %dx = nn.conv_grad_input %dy, %w strides = [2, 2] pads = [1, 1, 1, 1]
            dilations = [1, 1] group = 1
            : tensor<8x64x112x112xf32>, tensor<64x3x3x3xf32> -> tensor<8x3x224x224xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$weight,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight `strides` `=` $strides `pads` `=` $pads `dilations` `=`
    $dilations `group` `=` $group attr-dict `:` type($grad) `,` type($weight)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_ConvGradWeightOp : NN_ComputeOp<"conv_grad_weight", [SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.conv with respect to its weight";
  let description = [{
    The correlation of the conv's input with `grad`, summed over the batch.

    ```mlir
    %dw = nn.conv_grad_weight %dy, %x strides = [2, 2] pads = [1, 1, 1, 1]
            dilations = [1, 1] group = 1
            : tensor<8x64x112x112xf32>, tensor<8x3x224x224xf32> -> tensor<64x3x3x3xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `strides` `=` $strides `pads` `=` $pads `dilations` `=`
    $dilations `group` `=` $group attr-dict `:` type($grad) `,` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_MaxPoolGradOp : NN_ComputeOp<"max_pool_grad", [SameOperandsAndResultElementType,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Gradient of nn.max_pool";
  let description = [{
    Each window's cotangent goes to the element `nn.max_pool` picked (the
    first maximum in the window), summed where windows overlap.

    ```mlir
    %dx = nn.max_pool_grad %dy, %x kernel = [2, 2] strides = [2, 2]
            pads = [0, 0, 0, 0] dilations = [1, 1]
            : tensor<8x64x112x112xf32>, tensor<8x64x224x224xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$input,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input `kernel` `=` $kernel `strides` `=` $strides `pads` `=`
    $pads `dilations` `=` $dilations attr-dict `:` type($grad) `,` type($input)
  }];
  let hasVerifier = 1;
}

def NN_AvgPoolGradOp : NN_ComputeOp<"avg_pool_grad", [SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.avg_pool";
  let description = [{
    Each window's cotangent spread evenly over the elements the forward
    averaged. The result type is the forward input's.

    ```mlir
    %dx = nn.avg_pool_grad %dy kernel = [2, 2] strides = [2, 2]
            pads = [0, 0, 0, 0] dilations = [1, 1]
            : tensor<8x64x112x112xf32> -> tensor<8x64x224x224xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `kernel` `=` $kernel `strides` `=` $strides `pads` `=` $pads
    `dilations` `=` $dilations attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_ResizeGradOp : NN_ComputeOp<"resize_grad", [SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.resize";
  let description = [{
    Each output element's cotangent added back to the input elements it
    sampled, with the weights it sampled them by. The result type is the
    forward input's.

    ```mlir
    %dx = nn.resize_grad %dy mode = linear coordinates = half_pixel
            : tensor<1x64x64x64xf32> -> tensor<1x64x32x32xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad,
      DefaultValuedAttr<NN_ResizeMode, "::parplan::nn::ResizeMode::nearest">:$mode,
      DefaultValuedAttr<NN_ResizeCoordinates,
                        "::parplan::nn::ResizeCoordinates::half_pixel">:$coordinates,
      DefaultValuedAttr<NN_NearestRounding,
                        "::parplan::nn::NearestRounding::round_prefer_floor">:$rounding);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad (`mode` `=` $mode^)? (`coordinates` `=` $coordinates^)?
    (`rounding` `=` $rounding^)? attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement gradients
//===----------------------------------------------------------------------===//

def NN_SliceGradOp : NN_ComputeOp<"slice_grad", [SameOperandsAndResultElementType]> {
  let summary = "Gradient of nn.slice";
  let description = [{
    Zeros of the forward input's shape (the result type), with `grad` placed
    at the positions the forward `nn.slice` read (same `starts` and `steps`;
    the sizes are `grad`'s shape).

    ```mlir
    %dx = nn.slice_grad %dy starts = [0, 2] steps = [1, 2]
            : tensor<4x3xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = [{
    $grad `starts` `=` $starts `steps` `=` $steps attr-dict `:` type($grad)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def NN_GatherGradOp : NN_ComputeOp<"gather_grad"> {
  let summary = "Gradient of nn.gather: a scatter-add";
  let description = [{
    Zeros of the forward input's shape (the result type), to which every
    slice of `grad` is added at the index the forward read:
    `result[i.., indices[j..], k..] += grad[i.., j.., k..]`. Repeated indices
    (a token seen twice) accumulate.

    ```mlir
    %dwte = nn.gather_grad %dy, %ids axis = 0
              : tensor<8x128x768xf32>, tensor<8x128xi64> -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad,
                       StaticShapeTensorOf<[I32, I64]>:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices (`axis` `=` $axis^)? attr-dict `:` type($grad) `,`
    type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def NN_SoftmaxCrossEntropyOp : NN_ComputeOp<"softmax_cross_entropy"> {
  let summary = "Softmax cross-entropy against integer labels, per position";
  let description = [{
    `logsumexp(logits[i, :]) - logits[i, labels[i]]` for every position `i`
    of the leading dimensions; the class axis is the last. The result has
    the labels' shape; the training loss is its mean (`nn.reduce_mean`), so
    that a batch split over devices stays a split, not a partial value.

    ```mlir
    %l = nn.softmax_cross_entropy %logits, %labels
           : tensor<8x128x50257xf32>, tensor<8x128xi64> -> tensor<8x128xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits,
                       StaticShapeTensorOf<[I32, I64]>:$labels);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def NN_SoftmaxCrossEntropyGradOp : NN_ComputeOp<"softmax_cross_entropy_grad", [
    AllTypesMatch<["logits", "result"]>]> {
  let summary = "Gradient of nn.softmax_cross_entropy with respect to the logits";
  let description = [{
    `grad[i] * (softmax(logits[i, :]) - onehot(labels[i]))`.

    ```mlir
    %dlogits = nn.softmax_cross_entropy_grad %dl, %logits, %labels
                 : tensor<8x128xf32>, tensor<8x128x50257xf32>, tensor<8x128xi64>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$grad, NN_FloatTensor:$logits,
                       StaticShapeTensorOf<[I32, I64]>:$labels);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels attr-dict `:` type($grad) `,` type($logits)
    `,` type($labels)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Micro-batches
//===----------------------------------------------------------------------===//

def NN_MicroBatchOp : NN_ComputeOp<"micro_batch"> {
  let summary = "The index of the micro-batch the step is running";
  let description = [{
    0 to M - 1 in a step of M micro-batches (the module's `nn.training`
    `micro_batches`); 0 in a program run whole. The executor writes it
    before each micro-batch's forward and backward (a `micro_batch`
    buffer), so that what differs by micro-batch, dropout's masks, does.

    ```mlir
    %m = nn.micro_batch : tensor<i64>
    ```
  }];
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def NN_AccumulateOp : NN_ComputeOp<"accumulate", [SameOperandsAndResultType]> {
  let summary = "The sum of a value over the micro-batches of a step";
  let description = [{
    A step of M micro-batches (the module's `nn.training` says
    `micro_batches = M`) runs the ops that read no `nn.accumulate` result
    once per micro-batch, each on its slice of the batch, and the rest once,
    after the last. `result` is the sum of `input` over the M runs: the
    gradients a step accumulates before its optimizer update, and its loss
    (over the micro-batches, of the loss divided by M).

    ```
    micro-batch   0      1      2      3
    %g          [g0]   [g1]   [g2]   [g3]
                  \      \      \      \
    %acc         g0 -> +g1 -> +g2 -> +g3 = %acc, read by the update
    ```

    Being a sum, it takes any layout, Partial included: data-parallel
    gradients accumulate their partial sums on each device and are reduced
    once per step.

    ```mlir
    %acc = nn.accumulate %dw : tensor<768x3072xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$input);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def NN_SgdUpdateOp : NN_ComputeOp<"sgd_update", [
    AllTypesMatch<["param", "grad", "result"]>]> {
  let summary = "One plain SGD step";
  let description = [{
    `g = grad / grad_scale + weight_decay * param`;
    `result = param - lr * g`.

    ```mlir
    %w1 = nn.sgd_update %w, %dw lr = 0.1 : tensor<768x3072xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0">:$grad_scale);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = [{
    $param `,` $grad `lr` `=` $lr (`weight_decay` `=` $weight_decay^)?
    (`grad_scale` `=` $grad_scale^)? attr-dict `:` type($result)
  }];
}

def NN_MomentumUpdateOp : NN_ComputeOp<"momentum_update", [
    AllTypesMatch<["param", "grad", "velocity", "new_param", "new_velocity"]>]> {
  let summary = "One SGD step with momentum (PyTorch's form)";
  let description = [{
    `g = grad / grad_scale + weight_decay * param`;
    `new_velocity = momentum * velocity + g`;
    `new_param = param - lr * (nesterov ? g + momentum * new_velocity : new_velocity)`.

    ```mlir
    %w1, %v1 = nn.momentum_update %w, %dw, %v lr = 0.1 momentum = 0.9
                 : tensor<768x3072xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       NN_FloatTensor:$velocity, F64Attr:$lr,
                       F64Attr:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<F64Attr, "1.0">:$grad_scale);
  let results = (outs NN_FloatTensor:$new_param, NN_FloatTensor:$new_velocity);
  let assemblyFormat = [{
    $param `,` $grad `,` $velocity `lr` `=` $lr `momentum` `=` $momentum
    (`weight_decay` `=` $weight_decay^)? (`grad_scale` `=` $grad_scale^)?
    attr-dict `:` type($param)
  }];
}

def NN_AdamUpdateOp : NN_ComputeOp<"adam_update", [
    AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>]> {
  let summary = "One Adam or AdamW step";
  let description = [{
    With `t` the value of `step` (this update's number, from 1) and
    `g = grad / grad_scale` (plus `weight_decay * param` unless `decoupled`):
    `new_m = beta1 * m + (1 - beta1) * g`,
    `new_v = beta2 * v + (1 - beta2) * g^2`,
    `new_param = param' - lr * (new_m / (1 - beta1^t)) / (sqrt(new_v / (1 - beta2^t)) + epsilon)`
    where `param' = param * (1 - lr * weight_decay)` when `decoupled`
    (AdamW) and `param` otherwise.

    ```mlir
    %w1, %m1, %v1 = nn.adam_update %w, %dw, %m, %v, %t lr = 1.0e-03
                      weight_decay = 1.0e-02 decoupled : tensor<768x3072xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad,
                       NN_FloatTensor:$m, NN_FloatTensor:$v,
                       0DTensorOf<[F32]>:$step, F64Attr:$lr,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-08">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$decoupled,
                       DefaultValuedAttr<F64Attr, "1.0">:$grad_scale);
  let results = (outs NN_FloatTensor:$new_param, NN_FloatTensor:$new_m,
                      NN_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $step `lr` `=` $lr
    (`beta1` `=` $beta1^)? (`beta2` `=` $beta2^)? (`epsilon` `=` $epsilon^)?
    (`weight_decay` `=` $weight_decay^)? (`decoupled` $decoupled^)?
    (`grad_scale` `=` $grad_scale^)? attr-dict `:` type($param) `,` type($step)
  }];
}

#endif // PARPLAN_NN_TRAINING_OPS
