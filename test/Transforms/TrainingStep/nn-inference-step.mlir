// RUN: parplan-opt %s -split-input-file -verify-diagnostics -nn-inference-step | FileCheck %s
// RUN: parplan-opt %s -split-input-file -verify-diagnostics -nn-inference-step="micro-batches=2" | FileCheck %s --check-prefix=TWO
// RUN: not parplan-opt %s -split-input-file -nn-inference-step="micro-batches=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: nn-inference-step: micro-batches=0 is not a count of micro-batches (1 or more)

// The forward program is the step: nothing is added or removed, the
// outputs keep the importer's names and the module says it is a step.
// CHECK-LABEL: module attributes {nn.inference = {}}
// CHECK: func.func @main() -> (tensor<4x8xf32> {nn.output = "logits"})
// CHECK-NEXT: nn.input "x"
// CHECK-NEXT: nn.param "w"
// CHECK-NEXT: nn.matmul
// CHECK-NEXT: return
// TWO-LABEL: module attributes {nn.inference = {micro_batches = 2 : i64}}
module {
  func.func @main() -> (tensor<4x8xf32> {nn.output = "logits"}) {
    %x = nn.input "x" : tensor<4x32xf32>
    %w = nn.param "w" : tensor<32x8xf32>
    %y = nn.matmul %x, %w : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// A result without a name (IR written by hand) is named by its place; a
// model of several outputs serves them all.
// CHECK-LABEL: module attributes {nn.inference = {}}
// CHECK: func.func @main() -> (tensor<4x8xf32> {nn.output = "output0"}, tensor<4x8xf32> {nn.output = "probabilities"})
// TWO-LABEL: module attributes {nn.inference = {micro_batches = 2 : i64}}
// TWO: func.func @main() -> (tensor<4x8xf32> {nn.output = "output0"}, tensor<4x8xf32> {nn.output = "probabilities"})
module {
  func.func @main() -> (tensor<4x8xf32>, tensor<4x8xf32> {nn.output = "probabilities"}) {
    %x = nn.input "x" : tensor<4x32xf32>
    %w = nn.param "w" : tensor<32x8xf32>
    %y = nn.matmul %x, %w : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    %p = nn.softmax %y axis = -1 : tensor<4x8xf32>
    return %y, %p : tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// An inference step is a step: nn-autodiff's output is refused, and so is
// a second nn-inference-step.
// expected-error @+1 {{nn-inference-step: @main is already a training step}}
module attributes {nn.training = {loss = "cross-entropy"}} {
  func.func @main() -> tensor<f32> {
    %c = nn.constant dense<1.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// expected-error @+1 {{nn-inference-step: @main is already an inference step}}
module attributes {nn.inference = {}} {
  func.func @main() -> tensor<f32> {
    %c = nn.constant dense<1.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// expected-error @+1 {{nn-inference-step: the module has no function @main of one block}}
module {
  func.func @other() -> tensor<f32> {
    %c = nn.constant dense<1.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{nn-inference-step: @main has no result to serve}}
  func.func @main() {
    return
  }
}
