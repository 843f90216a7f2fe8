// RUN: parplan-opt %s -split-input-file -verify-diagnostics

func.func @param_without_name() {
  // expected-error @+1 {{'nn.param' op needs a non-empty name}}
  %0 = nn.param "" : tensor<4xf32>
  return
}

// -----

func.func @input_without_name() {
  // expected-error @+1 {{'nn.input' op needs a non-empty name}}
  %0 = nn.input "" : tensor<4xf32>
  return
}

// -----

func.func @param_with_dynamic_shape() {
  // expected-error @+1 {{'nn.param' op result #0 must be statically shaped tensor}}
  %0 = nn.param "w" : tensor<?x4xf32>
  return
}

// -----

func.func @constant_type_mismatch() {
  // expected-error @+1 {{'nn.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'nn.matmul' op operands must have rank 1 or more}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<4x3xf32>, %b: tensor<5x2xf32>) {
  // expected-error @+2 {{'nn.matmul' op contracts a dimension of size 3 with one of size 5}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<4x3xf32>, tensor<5x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x3xf32>, %b: tensor<5x3x2xf32>) {
  // expected-error @+2 {{'nn.matmul' op batch dimensions 2 and 5 do not broadcast}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<2x4x3xf32>, tensor<5x3x2xf32> -> tensor<2x4x2xf32>
  return
}

// -----

func.func @matmul_transposed_vector(%a: tensor<3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+2 {{'nn.matmul' op transpose_lhs needs an operand of rank 2 or more, got rank 1}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b {transpose_lhs} : tensor<3xf32>, tensor<3x2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @matmul_transposed_contraction(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+2 {{'nn.matmul' op contracts a dimension of size 3 with one of size 2}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b {transpose_rhs} : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+2 {{'nn.matmul' op inferred type(s) 'tensor<4x2xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{'nn.matmul' op failed to infer returned types}}
  %0 = nn.matmul %a, %b : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<4x3xf32>, %b: tensor<3x2xf16>) {
  // expected-error @+1 {{'nn.matmul' op requires the same element type for all operands and results}}
  %0 = nn.matmul %a, %b : tensor<4x3xf32>, tensor<3x2xf16> -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_integer(%a: tensor<4x3xi32>, %b: tensor<3x2xi32>) {
  // expected-error @+1 {{'nn.matmul' op operand #0 must be statically shaped tensor of}}
  %0 = nn.matmul %a, %b : tensor<4x3xi32>, tensor<3x2xi32> -> tensor<4x2xi32>
  return
}

// -----

func.func @gemm_rank(%a: tensor<2x4x3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+2 {{'nn.gemm' op needs 2-D a and b, got ranks 3 and 2}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b : tensor<2x4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @gemm_contraction(%a: tensor<4x3xf32>, %b: tensor<2x3xf32>) {
  // Without trans_b, b is [k, n] = [2, 3].
  // expected-error @+2 {{'nn.gemm' op contracts a dimension of size 3 with one of size 2}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @gemm_bias(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{'nn.gemm' op c of shape 3 does not broadcast to 4x2}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b, %c : tensor<4x3xf32>, tensor<3x2xf32>, tensor<3xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @gemm_bias_rank(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %c: tensor<1x4x2xf32>) {
  // expected-error @+2 {{'nn.gemm' op c of shape 1x4x2 does not broadcast to 4x2}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b, %c : tensor<4x3xf32>, tensor<3x2xf32>, tensor<1x4x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @gemm_result(%a: tensor<3x4xf32>, %b: tensor<2x3xf32>) {
  // trans_a and trans_b make it [4, 3] x [3, 2].
  // expected-error @+2 {{'nn.gemm' op inferred type(s) 'tensor<4x2xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{'nn.gemm' op failed to infer returned types}}
  %0 = nn.gemm %a, %b {trans_a = true, trans_b = true} : tensor<3x4xf32>, tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @binary_not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'nn.add' op operand of shape 4 does not broadcast with 4x3}}
  // expected-error @+1 {{'nn.add' op failed to infer returned types}}
  %0 = nn.add %a, %b : tensor<4x3xf32>, tensor<4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @binary_wrong_result(%a: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'nn.mul' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x4xf32>'}}
  // expected-error @+1 {{'nn.mul' op failed to infer returned types}}
  %0 = nn.mul %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @binary_element_types(%a: tensor<4xf32>, %b: tensor<4xf64>) {
  // expected-error @+1 {{'nn.sub' op requires the same element type for all operands and results}}
  %0 = nn.sub %a, %b : tensor<4xf32>, tensor<4xf64> -> tensor<4xf32>
  return
}

// -----

func.func @unary_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.relu' op requires the same type for all operands and results}}
  %0 = "nn.relu"(%a) : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @gelu_approximation(%a: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %0 = nn.gelu %a approximate = erf : tensor<4xf32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.softmax' op axis -3 is out of range for rank 2}}
  %0 = nn.softmax %a axis = -3 : tensor<4x3xf32>
  return
}

// -----

func.func @layer_norm_axis(%a: tensor<4x3xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op axis 2 is out of range for rank 2}}
  %0 = nn.layer_norm %a, %g axis = 2 : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @layer_norm_scale(%a: tensor<4x3xf32>, %g: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op scale of shape 4x3 does not match the normalized shape 3}}
  %0 = nn.layer_norm %a, %g : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @layer_norm_bias(%a: tensor<4x3xf32>, %g: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op bias of shape 3 does not match the normalized shape 4x3}}
  %0 = nn.layer_norm %a, %g, %b axis = 0 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @layer_norm_result(%a: tensor<4x3xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'nn.layer_norm' op failed to verify that all of {input, result} have same type}}
  %0 = nn.layer_norm %a, %g : tensor<4x3xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @reshape_elements(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.reshape' op cannot reshape 12 elements into 10}}
  %0 = nn.reshape %a : tensor<4x3xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @transpose_length(%a: tensor<4x3xf32>) {
  // expected-error @+2 {{'nn.transpose' op perm has 3 entries for an input of rank 2}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %a perm = [0, 1, 2] : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @transpose_not_a_permutation(%a: tensor<4x3xf32>) {
  // expected-error @+2 {{'nn.transpose' op perm [1, 1] is not a permutation of 0..1}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %a perm = [1, 1] : tensor<4x3xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @transpose_result(%a: tensor<4x3xf32>) {
  // expected-error @+2 {{'nn.transpose' op inferred type(s) 'tensor<3x4xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{'nn.transpose' op failed to infer returned types}}
  %0 = nn.transpose %a perm = [1, 0] : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @reduce_axis_range(%a: tensor<4x3xf32>) {
  // expected-error @+2 {{'nn.reduce_mean' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'nn.reduce_mean' op failed to infer returned types}}
  %0 = nn.reduce_mean %a axes = [2] : tensor<4x3xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_axis_twice(%a: tensor<4x3xf32>) {
  // expected-error @+2 {{'nn.reduce_sum' op reduces dimension 1 twice}}
  // expected-error @+1 {{'nn.reduce_sum' op failed to infer returned types}}
  %0 = nn.reduce_sum %a axes = [1, -1] : tensor<4x3xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_result(%a: tensor<4x3xf32>) {
  // keepdims = false drops the reduced dimension.
  // expected-error @+2 {{'nn.reduce_sum' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'nn.reduce_sum' op failed to infer returned types}}
  %0 = nn.reduce_sum %a axes = [1] keepdims = false : tensor<4x3xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @pow_not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{'nn.pow' op operand of shape 2 does not broadcast with 4x3}}
  // expected-error @+1 {{'nn.pow' op failed to infer returned types}}
  %0 = nn.pow %a, %b : tensor<4x3xf32>, tensor<2xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @where_branches(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{'nn.where' op needs both branches of one element type}}
  // expected-error @+1 {{'nn.where' op failed to infer returned types}}
  %0 = nn.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

func.func @where_condition(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error @+2 {{'nn.where' op operand of shape 4 does not broadcast with 3}}
  // expected-error @+1 {{'nn.where' op failed to infer returned types}}
  %0 = nn.where %c, %a, %a : tensor<3xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @clip_bounds(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.clip' op min 6.000000e+00 is above max 0.000000e+00}}
  %0 = nn.clip %a min = 6.0 max = 0.0 : tensor<4xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<4xi64>) {
  // expected-error @+1 {{'nn.cast' op requires the same shape for all operands and results}}
  %0 = nn.cast %a : tensor<4xi64> -> tensor<5xf32>
  return
}

// -----

func.func @log_softmax_axis(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.log_softmax' op axis 2 is out of range for rank 2}}
  %0 = nn.log_softmax %a axis = 2 : tensor<4x3xf32>
  return
}

// -----

func.func @batch_norm_rank(%a: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'nn.batch_norm' op needs an input [N, C, ...] of rank 2 or more}}
  %0 = nn.batch_norm %a, %s, %s, %s, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @batch_norm_channels(%a: tensor<2x4x8xf32>, %s: tensor<4xf32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{'nn.batch_norm' op mean of shape 8 does not match the 4 channels}}
  %0 = nn.batch_norm %a, %s, %s, %m, %s : tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<8x3xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+2 {{'nn.conv' op needs an input [N, C, D...] and a weight [M, C/group, K...] of the same rank, 3 or more}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w strides = [] pads = [] dilations = [] group = 1 : tensor<8x3xf32>, tensor<4x3xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @conv_attribute_lengths(%x: tensor<8x3x32x32xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'nn.conv' op needs 2 strides and dilations and 4 pads for 2 spatial dimensions}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w strides = [1] pads = [0, 0, 0, 0] dilations = [1, 1] group = 1 : tensor<8x3x32x32xf32>, tensor<4x3x3x3xf32> -> tensor<8x4x30x30xf32>
  return
}

// -----

func.func @conv_stride(%x: tensor<8x3x32x32xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'nn.conv' op strides and dilations must be positive}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w strides = [0, 1] pads = [0, 0, 0, 0] dilations = [1, 1] group = 1 : tensor<8x3x32x32xf32>, tensor<4x3x3x3xf32> -> tensor<8x4x30x30xf32>
  return
}

// -----

func.func @conv_pads(%x: tensor<8x3x32x32xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'nn.conv' op pads must be non-negative}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w strides = [1, 1] pads = [0, -1, 0, 0] dilations = [1, 1] group = 1 : tensor<8x3x32x32xf32>, tensor<4x3x3x3xf32> -> tensor<8x4x30x30xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<8x3x32x32xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{'nn.conv' op weight 4x2x3x3 in 1 groups does not match 3 input channels}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w strides = [1, 1] pads = [0, 0, 0, 0] dilations = [1, 1] group = 1 : tensor<8x3x32x32xf32>, tensor<4x2x3x3xf32> -> tensor<8x4x30x30xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<8x3x32x32xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'nn.conv' op bias must have shape 4}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w, %b strides = [1, 1] pads = [0, 0, 0, 0] dilations = [1, 1] group = 1 : tensor<8x3x32x32xf32>, tensor<4x3x3x3xf32>, tensor<3xf32> -> tensor<8x4x30x30xf32>
  return
}

// -----

func.func @conv_kernel_too_large(%x: tensor<8x3x4x4xf32>, %w: tensor<4x3x3x3xf32>) {
  // Dilation 2 makes the 3x3 kernel span 5 elements.
  // expected-error @+2 {{'nn.conv' op kernel does not fit spatial dimension 0 of the padded input}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w strides = [1, 1] pads = [0, 0, 0, 0] dilations = [2, 2] group = 1 : tensor<8x3x4x4xf32>, tensor<4x3x3x3xf32> -> tensor<8x4x1x1xf32>
  return
}

// -----

func.func @conv_result(%x: tensor<8x3x32x32xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'nn.conv' op inferred type(s) 'tensor<8x4x30x30xf32>' are incompatible with return type(s) of operation 'tensor<8x4x32x32xf32>'}}
  // expected-error @+1 {{'nn.conv' op failed to infer returned types}}
  %0 = nn.conv %x, %w strides = [1, 1] pads = [0, 0, 0, 0] dilations = [1, 1] group = 1 : tensor<8x3x32x32xf32>, tensor<4x3x3x3xf32> -> tensor<8x4x32x32xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<8x3xf32>) {
  // expected-error @+2 {{'nn.max_pool' op needs an input [N, C, D...] of rank 3 or more}}
  // expected-error @+1 {{'nn.max_pool' op failed to infer returned types}}
  %0 = nn.max_pool %x kernel = [] strides = [] pads = [] dilations = [] : tensor<8x3xf32> -> tensor<8x3xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<8x3x32x32xf32>) {
  // expected-error @+2 {{'nn.avg_pool' op needs 2 positive kernel sizes}}
  // expected-error @+1 {{'nn.avg_pool' op failed to infer returned types}}
  %0 = nn.avg_pool %x kernel = [2, 0] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<8x3x32x32xf32> -> tensor<8x3x16x16xf32>
  return
}

// -----

func.func @reshape_not_const_expand(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{'nn.expand' op cannot broadcast 3x4 to 2x4}}
  %0 = nn.expand %a : tensor<3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{'nn.concat' op expected 1 or more operands, but found 0}}
  %0 = "nn.concat"() <{axis = 0 : i64}> : () -> tensor<0xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'nn.concat' op axis -3 is out of range for rank 2}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %a axis = -3 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'nn.concat' op operands must all have rank 2}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<3xf32> -> tensor<5x3xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{'nn.concat' op operand of shape 2x4 differs from 2x3 in dimension 1}}
  // expected-error @+1 {{'nn.concat' op failed to infer returned types}}
  %0 = nn.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @split_axis(%a: tensor<6xf32>) {
  // expected-error @+2 {{'nn.split' op axis 1 is out of range for rank 1}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  %0, %1 = nn.split %a axis = 1 sizes = [3, 3] : tensor<6xf32> -> tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @split_negative(%a: tensor<6xf32>) {
  // expected-error @+2 {{'nn.split' op sizes must be non-negative}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  %0, %1 = nn.split %a axis = 0 sizes = [7, -1] : tensor<6xf32> -> tensor<7xf32>, tensor<0xf32>
  return
}

// -----

func.func @split_sizes(%a: tensor<6xf32>) {
  // expected-error @+2 {{'nn.split' op sizes [3, 2] do not add up to dimension 0 of size 6}}
  // expected-error @+1 {{'nn.split' op failed to infer returned types}}
  %0, %1 = nn.split %a axis = 0 sizes = [3, 2] : tensor<6xf32> -> tensor<3xf32>, tensor<2xf32>
  return
}

// -----

func.func @slice_lengths(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{'nn.slice' op needs one start, size and step per input dimension}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %a starts = [0] sizes = [4] steps = [1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @slice_step(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{'nn.slice' op dimension 1: steps must be non-zero and sizes non-negative}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %a starts = [0, 0] sizes = [4, 8] steps = [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_range(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{'nn.slice' op dimension 1: 3 elements from 6 by 1 leave the range 0..7}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %a starts = [0, 6] sizes = [4, 3] steps = [1, 1] : tensor<4x8xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @gather_axis(%a: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{'nn.gather' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'nn.gather' op failed to infer returned types}}
  %0 = nn.gather %a, %i axis = 2 : tensor<4x8xf32>, tensor<2xi64> -> tensor<4x2xf32>
  return
}

// -----

func.func @gather_scalar(%a: tensor<f32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{'nn.gather' op needs a ranked input of rank 1 or more and ranked indices}}
  // expected-error @+1 {{'nn.gather' op failed to infer returned types}}
  %0 = nn.gather %a, %i : tensor<f32>, tensor<2xi64> -> tensor<2xf32>
  return
}

// -----

func.func @gather_float_indices(%a: tensor<4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'nn.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = nn.gather %a, %i : tensor<4xf32>, tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @shape_result(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{'nn.shape' op inferred type(s) 'tensor<2xi64>' are incompatible with return type(s) of operation 'tensor<3xi64>'}}
  // expected-error @+1 {{'nn.shape' op failed to infer returned types}}
  %0 = nn.shape %a : tensor<4x8xf32> -> tensor<3xi64>
  return
}

// -----

func.func @slice_overflow(%a: tensor<1xf32>) {
  // (size - 1) * step overflows int64: out of range, not valid.
  // expected-error @+2 {{'nn.slice' op dimension 0: 4611686018427387905 elements from 0 by 4 leave the range 0..0}}
  // expected-error @+1 {{'nn.slice' op failed to infer returned types}}
  %0 = nn.slice %a starts = [0] sizes = [4611686018427387905] steps = [4] : tensor<1xf32> -> tensor<4611686018427387905xf32>
  return
}

// -----

func.func @softmax_grad_axis(%dy: tensor<4x8xf32>, %y: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.softmax_grad' op axis 2 is out of range for rank 2}}
  %0 = nn.softmax_grad %dy, %y axis = 2 : tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_grad_scale(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'nn.layer_norm_grad' op scale of shape 4 does not match the normalized shape 8}}
  %0:3 = nn.layer_norm_grad %dy, %x, %g : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @conv_grad_input_shape(%dy: tensor<2x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'nn.conv_grad_input' op grad of type 'tensor<2x4x8x8xf32>' does not match the forward result type 'tensor<2x4x4x4xf32>'}}
  %0 = nn.conv_grad_input %dy, %w strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
  return
}

// -----

func.func @conv_grad_weight_groups(%dy: tensor<2x4x8x8xf32>, %x: tensor<2x3x8x8xf32>) {
  // expected-error @+1 {{'nn.conv_grad_weight' op weight 4x2x3x3 in 1 groups does not match 3 input channels}}
  %0 = nn.conv_grad_weight %dy, %x strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32> -> tensor<4x2x3x3xf32>
  return
}

// -----

func.func @max_pool_grad_shape(%dy: tensor<2x3x3x3xf32>, %x: tensor<2x3x8x8xf32>) {
  // expected-error @+1 {{'nn.max_pool_grad' op grad of type 'tensor<2x3x3x3xf32>' does not match the forward result type 'tensor<2x3x4x4xf32>'}}
  %0 = nn.max_pool_grad %dy, %x kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x3x3x3xf32>, tensor<2x3x8x8xf32>
  return
}

// -----

func.func @avg_pool_grad_kernel(%dy: tensor<2x3x4x4xf32>) {
  // expected-error @+1 {{'nn.avg_pool_grad' op needs 2 positive kernel sizes}}
  %0 = nn.avg_pool_grad %dy kernel = [2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x3x4x4xf32> -> tensor<2x3x8x8xf32>
  return
}

// -----

func.func @slice_grad_out_of_range(%dy: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.slice_grad' op dimension 1: 3 elements from 4 by 2 leave the range 0..7}}
  %0 = nn.slice_grad %dy starts = [0, 4] steps = [1, 2] : tensor<4x3xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @gather_grad_shape(%dy: tensor<8x16xf32>, %ids: tensor<8x4xi64>) {
  // expected-error @+1 {{'nn.gather_grad' op grad of shape 8x16 does not match the gather result shape 8x4x16}}
  %0 = nn.gather_grad %dy, %ids : tensor<8x16xf32>, tensor<8x4xi64> -> tensor<100x16xf32>
  return
}

// -----

func.func @cross_entropy_labels(%logits: tensor<8x10xf32>, %labels: tensor<10xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy' op labels of shape 10 do not match the logits 8x10 without their class dimension}}
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<10xi64> -> tensor<10xf32>
  return
}

// -----

func.func @cross_entropy_grad_type(%dl: tensor<8xf16>, %logits: tensor<8x10xf32>, %labels: tensor<8xi64>) {
  // expected-error @+1 {{'nn.softmax_cross_entropy_grad' op grad of type 'tensor<8xf16>' must have the labels' shape and the logits' element type}}
  %0 = nn.softmax_cross_entropy_grad %dl, %logits, %labels : tensor<8xf16>, tensor<8x10xf32>, tensor<8xi64>
  return
}

// -----

func.func @adam_step_type(%w: tensor<16xf32>, %t: tensor<1xf32>) {
  // expected-error @+1 {{'nn.adam_update' op operand #4 must be 0D tensor of 32-bit float values}}
  %0:3 = nn.adam_update %w, %w, %w, %w, %t lr = 1.0e-3 : tensor<16xf32>, tensor<1xf32>
  return
}

// -----

func.func @param_part_without_part_of() {
  // expected-error @+1 {{'nn.param' op needs both part_of and part, or neither}}
  %0 = nn.param "w[0:4]" {part = array<i64: 0, 0, 8>} : tensor<4xf32>
  return
}

// -----

func.func @param_part_out_of_range() {
  // expected-error @+1 {{'nn.param' op part of 4 elements from 6 along axis 0 does not fit the stored extent 8}}
  %0 = nn.param "w[6:10]" {part = array<i64: 0, 6, 8>, part_of = "w"} : tensor<4xf32>
  return
}

// -----

func.func @param_part_axis() {
  // expected-error @+1 {{'nn.param' op part must be [axis, offset, extent] with an axis of the rank-1 result}}
  %0 = nn.param "w[0:4]" {part = array<i64: 1, 0, 8>, part_of = "w"} : tensor<4xf32>
  return
}

// -----

func.func @and_of_floats(%a: tensor<3xf32>) {
  // expected-error @+2 {{'nn.and' op needs i1 operands}}
  // expected-error @+1 {{'nn.and' op failed to infer returned types}}
  %0 = nn.and %a, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xi1>
  return
}

// -----

func.func @compare_types(%a: tensor<3xf32>, %b: tensor<3xi64>) {
  // expected-error @+2 {{'nn.equal' op needs two ranked operands of one element type}}
  // expected-error @+1 {{'nn.equal' op failed to infer returned types}}
  %0 = nn.equal %a, %b : tensor<3xf32>, tensor<3xi64> -> tensor<3xi1>
  return
}

// -----

func.func @compare_result(%a: tensor<3xf32>) {
  // expected-error @+1 {{'nn.less' op result #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = nn.less %a, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @less_of_booleans(%a: tensor<3xi1>) {
  // expected-error @+2 {{'nn.less' op orders numbers, not i1 values}}
  // expected-error @+1 {{'nn.less' op failed to infer returned types}}
  %0 = nn.less %a, %a : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
  return
}
