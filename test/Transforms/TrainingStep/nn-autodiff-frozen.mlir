// RUN: parplan-opt %s -split-input-file -nn-autodiff="frozen=w1,wq*" -verify-diagnostics | FileCheck %s

// `frozen` globs name parameters not to train: w1 keeps its value and
// gets no gradient, w2 is trained. A glob that matches no parameter (a
// typo, or a buffer the model does not have) freezes nothing, and says so:
// the parameter it was meant for would be trained unseen.
// CHECK-LABEL: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.updates = "optimizer.step"}, tensor<32x10xf32> {nn.updates = "w2"}, tensor<32x10xf32> {nn.updates = "w2.adam.m"}, tensor<32x10xf32> {nn.updates = "w2.adam.v"})
// CHECK-NOT: w1.adam
// CHECK: nn.adam_update
// CHECK-NOT: nn.adam_update
// CHECK: return
// expected-warning @+1 {{frozen pattern 'wq*' matches no parameter of @main; it freezes nothing}}
func.func @main() -> tensor<8x10xf32> {
  %x = nn.input "x" : tensor<8x16xf32>
  %w1 = nn.param "w1" : tensor<16x32xf32>
  %w2 = nn.param "w2" : tensor<32x10xf32>
  %h = nn.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %a = nn.relu %h : tensor<8x32xf32>
  %y = nn.matmul %a, %w2 : tensor<8x32xf32>, tensor<32x10xf32> -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}

// -----

// Every glob is looked at on its own: one matching does not excuse another.
// expected-warning @+2 {{frozen pattern 'w1' matches no parameter of @main; it freezes nothing}}
// expected-warning @+1 {{frozen pattern 'wq*' matches no parameter of @main; it freezes nothing}}
func.func @main() -> tensor<8x10xf32> {
  %x = nn.input "x" : tensor<8x10xf32>
  %w = nn.param "w" : tensor<10xf32>
  %y = nn.mul %x, %w : tensor<8x10xf32>, tensor<10xf32> -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}
