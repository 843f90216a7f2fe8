// RUN: parplan-opt %s -split-input-file -nn-fuse-gelu -canonicalize | FileCheck %s

// PyTorch's exact GELU as torch.onnx.export writes it before opset 20.
// CHECK-LABEL: func.func @erf_form
// CHECK-SAME: (%[[X:.*]]: tensor<8x3072xf32>)
// CHECK-NEXT: %[[Y:.*]] = nn.gelu %[[X]] : tensor<8x3072xf32>
// CHECK-NEXT: return %[[Y]]
func.func @erf_form(%x: tensor<8x3072xf32>) -> tensor<8x3072xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %0 = nn.div %x, %sqrt2 : tensor<8x3072xf32>, tensor<f32> -> tensor<8x3072xf32>
  %1 = nn.erf %0 : tensor<8x3072xf32>
  %2 = nn.add %1, %one : tensor<8x3072xf32>, tensor<f32> -> tensor<8x3072xf32>
  %3 = nn.mul %x, %2 : tensor<8x3072xf32>, tensor<8x3072xf32> -> tensor<8x3072xf32>
  %4 = nn.mul %3, %half : tensor<8x3072xf32>, tensor<f32> -> tensor<8x3072xf32>
  return %4 : tensor<8x3072xf32>
}

// -----

// The same, scaled by 1/sqrt(2) and multiplied in another order.
// CHECK-LABEL: func.func @erf_form_reordered
// CHECK-NEXT: nn.gelu %{{.*}} : tensor<4xf32>
// CHECK-NEXT: return
func.func @erf_form_reordered(%x: tensor<4xf32>) -> tensor<4xf32> {
  %inv = nn.constant dense<0.707106769> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %0 = nn.mul %inv, %x : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %1 = nn.erf %0 : tensor<4xf32>
  %2 = nn.add %one, %1 : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %3 = nn.mul %half, %x : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %4 = nn.mul %3, %2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %4 : tensor<4xf32>
}

// -----

// GPT-2's gelu_new: the tanh approximation, cube as pow.
// CHECK-LABEL: func.func @tanh_form
// CHECK-SAME: (%[[X:.*]]: tensor<8x3072xf32>)
// CHECK-NEXT: %[[Y:.*]] = nn.gelu %[[X]] approximate = tanh : tensor<8x3072xf32>
// CHECK-NEXT: return %[[Y]]
func.func @tanh_form(%x: tensor<8x3072xf32>) -> tensor<8x3072xf32> {
  %three = nn.constant dense<3.0> : tensor<f32>
  %c = nn.constant dense<0.044715> : tensor<f32>
  %k = nn.constant dense<0.797884583> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %0 = nn.pow %x, %three : tensor<8x3072xf32>, tensor<f32> -> tensor<8x3072xf32>
  %1 = nn.mul %c, %0 : tensor<f32>, tensor<8x3072xf32> -> tensor<8x3072xf32>
  %2 = nn.add %x, %1 : tensor<8x3072xf32>, tensor<8x3072xf32> -> tensor<8x3072xf32>
  %3 = nn.mul %k, %2 : tensor<f32>, tensor<8x3072xf32> -> tensor<8x3072xf32>
  %4 = nn.tanh %3 : tensor<8x3072xf32>
  %5 = nn.add %one, %4 : tensor<f32>, tensor<8x3072xf32> -> tensor<8x3072xf32>
  %6 = nn.mul %half, %x : tensor<f32>, tensor<8x3072xf32> -> tensor<8x3072xf32>
  %7 = nn.mul %6, %5 : tensor<8x3072xf32>, tensor<8x3072xf32> -> tensor<8x3072xf32>
  return %7 : tensor<8x3072xf32>
}

// -----

// The tanh form with the cube as x * x * x.
// CHECK-LABEL: func.func @tanh_form_products
// CHECK-NEXT: nn.gelu %{{.*}} approximate = tanh : tensor<4xf32>
// CHECK-NEXT: return
func.func @tanh_form_products(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = nn.constant dense<0.044715> : tensor<f32>
  %k = nn.constant dense<0.797884583> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %xx = nn.mul %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %xxx = nn.mul %xx, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = nn.mul %xxx, %c : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %2 = nn.add %1, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = nn.mul %2, %k : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %4 = nn.tanh %3 : tensor<4xf32>
  %5 = nn.add %4, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %6 = nn.mul %x, %5 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %7 = nn.mul %6, %half : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %7 : tensor<4xf32>
}

// -----

// Wrong constants are not GELU: 0.6 instead of 0.5, and sqrt(3).
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: nn.gelu
// CHECK: return
func.func @near_misses(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %sqrt3 = nn.constant dense<1.73205078> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %six = nn.constant dense<0.6> : tensor<f32>
  %0 = nn.div %x, %sqrt2 : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = nn.erf %0 : tensor<4xf32>
  %2 = nn.add %1, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %3 = nn.mul %x, %2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %4 = nn.mul %3, %six : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %5 = nn.div %x, %sqrt3 : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %6 = nn.erf %5 : tensor<4xf32>
  %7 = nn.add %6, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %8 = nn.mul %x, %7 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %9 = nn.mul %8, %half : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %4, %9 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The erf of another value than the one multiplied is not GELU.
// CHECK-LABEL: func.func @different_operands
// CHECK-NOT: nn.gelu
func.func @different_operands(%x: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %0 = nn.div %z, %sqrt2 : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = nn.erf %0 : tensor<4xf32>
  %2 = nn.add %1, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %3 = nn.mul %x, %2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %4 = nn.mul %3, %half : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %4 : tensor<4xf32>
}

// -----

// A GELU that is then scaled again: the GELU inside is still found.
// CHECK-LABEL: func.func @scaled_gelu
// CHECK: %[[G:.*]] = nn.gelu
// CHECK: nn.mul %[[G]]
func.func @scaled_gelu(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %sqrt2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %0 = nn.div %x, %sqrt2 : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %1 = nn.erf %0 : tensor<4xf32>
  %2 = nn.add %1, %one : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %3 = nn.mul %x, %2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %4 = nn.mul %3, %half : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %5 = nn.mul %4, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %5 : tensor<4xf32>
}
