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
  // expected-error @+1 {{'nn.matmul' op operands must have rank 1 or more}}
  %0 = nn.matmul %a, %b : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<4x3xf32>, %b: tensor<5x2xf32>) {
  // expected-error @+1 {{'nn.matmul' op contracts a dimension of size 3 with one of size 5}}
  %0 = nn.matmul %a, %b : tensor<4x3xf32>, tensor<5x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x3xf32>, %b: tensor<5x3x2xf32>) {
  // expected-error @+1 {{'nn.matmul' op batch dimensions 2 and 5 do not broadcast}}
  %0 = nn.matmul %a, %b : tensor<2x4x3xf32>, tensor<5x3x2xf32> -> tensor<2x4x2xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+1 {{'nn.matmul' op result shape 4x3 does not match the expected 4x2}}
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
  // expected-error @+1 {{'nn.gemm' op needs 2-D a and b, got ranks 3 and 2}}
  %0 = nn.gemm %a, %b : tensor<2x4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @gemm_contraction(%a: tensor<4x3xf32>, %b: tensor<2x3xf32>) {
  // Without trans_b, b is [k, n] = [2, 3].
  // expected-error @+1 {{'nn.gemm' op contracts a dimension of size 3 with one of size 2}}
  %0 = nn.gemm %a, %b : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @gemm_bias(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{'nn.gemm' op c of shape 3 does not broadcast to 4x2}}
  %0 = nn.gemm %a, %b, %c : tensor<4x3xf32>, tensor<3x2xf32>, tensor<3xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @gemm_bias_rank(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %c: tensor<1x4x2xf32>) {
  // expected-error @+1 {{'nn.gemm' op c of shape 1x4x2 does not broadcast to 4x2}}
  %0 = nn.gemm %a, %b, %c : tensor<4x3xf32>, tensor<3x2xf32>, tensor<1x4x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @gemm_result(%a: tensor<3x4xf32>, %b: tensor<2x3xf32>) {
  // trans_a and trans_b make it [4, 3] x [3, 2].
  // expected-error @+1 {{'nn.gemm' op result shape 3x2 does not match the expected 4x2}}
  %0 = nn.gemm %a, %b {trans_a = true, trans_b = true} : tensor<3x4xf32>, tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @binary_not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'nn.add' op operands don't have broadcast-compatible shapes}}
  %0 = nn.add %a, %b : tensor<4x3xf32>, tensor<4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @binary_wrong_result(%a: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'nn.mul' op result type '4x4' not broadcast compatible with broadcasted operands's shapes '4x3'}}
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
  // expected-error @+1 {{'nn.layer_norm' op result shape 3x4 does not match the expected 4x3}}
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
  // expected-error @+1 {{'nn.transpose' op perm has 3 entries for an input of rank 2}}
  %0 = nn.transpose %a perm = [0, 1, 2] : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @transpose_not_a_permutation(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.transpose' op perm [1, 1] is not a permutation of 0..1}}
  %0 = nn.transpose %a perm = [1, 1] : tensor<4x3xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @transpose_result(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.transpose' op result shape 4x3 does not match the expected 3x4}}
  %0 = nn.transpose %a perm = [1, 0] : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @reduce_axis_range(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.reduce_mean' op axis 2 is out of range for rank 2}}
  %0 = nn.reduce_mean %a axes = [2] : tensor<4x3xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_axis_twice(%a: tensor<4x3xf32>) {
  // expected-error @+1 {{'nn.reduce_sum' op reduces dimension 1 twice}}
  %0 = nn.reduce_sum %a axes = [1, -1] : tensor<4x3xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_result(%a: tensor<4x3xf32>) {
  // keepdims = false drops the reduced dimension.
  // expected-error @+1 {{'nn.reduce_sum' op result shape 4x1 does not match the expected 4}}
  %0 = nn.reduce_sum %a axes = [1] keepdims = false : tensor<4x3xf32> -> tensor<4x1xf32>
  return
}
