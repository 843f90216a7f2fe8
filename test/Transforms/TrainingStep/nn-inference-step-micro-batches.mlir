// RUN: parplan-opt %s -split-input-file -verify-diagnostics -nn-inference-step="micro-batches=2"
// Micro-batches slice every input along dimension 0 and stack every output
// along it: a step whose inputs or outputs do not have the micro-batch's
// rows there is refused, naming the input or output.

module {
  // expected-error @+1 {{nn-inference-step: output 'scores' has 8 rows at dimension 0, not the micro-batch's 4: micro-batches stack the outputs along dimension 0, as they slice the inputs}}
  func.func @main() -> (tensor<8x4xf32> {nn.output = "scores"}) {
    %x = nn.input "x" : tensor<4x32xf32>
    %w = nn.param "w" : tensor<32x8xf32>
    %y = nn.matmul %x, %w : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    %t = nn.transpose %y perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    return %t : tensor<8x4xf32>
  }
}

// -----

module {
  // expected-error @+1 {{nn-inference-step: output 'total' has no dimension 0, not the micro-batch's 4}}
  func.func @main() -> (tensor<f32> {nn.output = "total"}) {
    %x = nn.input "x" : tensor<4x32xf32>
    %s = nn.reduce_sum %x keepdims = false : tensor<4x32xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

module {
  func.func @main() -> (tensor<4x8xf32> {nn.output = "y"}) {
    %x = nn.input "x" : tensor<4x32xf32>
    // expected-error @+1 {{nn-inference-step: input 'mask' has 6 rows at dimension 0, not the other inputs' 4: micro-batches slice every input along dimension 0}}
    %m = nn.input "mask" : tensor<6x8xf32>
    %w = nn.param "w" : tensor<32x8xf32>
    %y = nn.matmul %x, %w : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

module {
  // expected-error @+1 {{nn-inference-step: micro-batches=2 slice the inputs, and @main has none}}
  func.func @main() -> (tensor<4x8xf32> {nn.output = "y"}) {
    %w = nn.param "w" : tensor<4x8xf32>
    return %w : tensor<4x8xf32>
  }
}
