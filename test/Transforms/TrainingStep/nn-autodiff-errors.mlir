// RUN: parplan-opt %s -split-input-file -nn-autodiff -verify-diagnostics
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="optimizer=adagrad" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="loss=hinge" 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="output=3" 2>&1 | FileCheck %s --check-prefix=OUTPUT
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="frozen=[w" 2>&1 | FileCheck %s --check-prefix=FROZEN
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="recompute=some" 2>&1 | FileCheck %s --check-prefix=RECOMPUTE
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="mixed-precision=fp8" 2>&1 | FileCheck %s --check-prefix=PRECISION
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="recompute=full recompute-layers=-2" 2>&1 | FileCheck %s --check-prefix=LAYERS
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="recompute=selective recompute-layers=1" 2>&1 | FileCheck %s --check-prefix=LAYERS-POLICY
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="micro-batches=0" 2>&1 | FileCheck %s --check-prefix=MICRO-BATCHES
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="batch-norm=eval" 2>&1 | FileCheck %s --check-prefix=BATCH-NORM

// LAYERS: error: 'func.func' op nn-autodiff: recompute-layers must be -1 (all) or a count, got -2
// LAYERS-POLICY: error: 'func.func' op nn-autodiff: recompute-layers needs recompute=full (got recompute=selective)
// OPTIMIZER: error: 'func.func' op nn-autodiff: unknown optimizer 'adagrad' (expected sgd, momentum, adam, adamw or none)
// LOSS: error: nn-autodiff: unknown loss 'hinge' (expected cross-entropy or mse)
// OUTPUT: error: 'func.func' op nn-autodiff: output 3 is out of range: @main returns 1 values
// FROZEN: error: 'func.func' op nn-autodiff: frozen pattern '[w': invalid glob pattern
// RECOMPUTE: error: 'func.func' op nn-autodiff: unknown recompute 'some' (expected none, selective or full)
// PRECISION: error: 'func.func' op nn-autodiff: unknown mixed-precision 'fp8' (expected none, bf16 or fp16)
// MICRO-BATCHES: error: 'func.func' op nn-autodiff: micro-batches must be at least 1, got 0
// BATCH-NORM: error: 'func.func' op nn-autodiff: unknown batch-norm 'eval' (expected batch or frozen)

func.func @main() -> tensor<4x3xf32> {
  %x = nn.input "x" : tensor<4x5xf32>
  %w = nn.param "w" : tensor<5x3xf32>
  %y = nn.matmul %x, %w : tensor<4x5xf32>, tensor<5x3xf32> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// expected-error @+1 {{nn-autodiff: the module has no function @main}}
module {
  func.func @forward() {
    return
  }
}

// -----

// expected-error @+1 {{nn-autodiff: @main is already a training step}}
module attributes {nn.training = {}} {
  func.func @main() {
    return
  }
}

// -----

// An inference step (nn-inference-step's) is no forward program to train.
// expected-error @+1 {{nn-autodiff: @main is already an inference step}}
module attributes {nn.inference = {}} {
  func.func @main() {
    return
  }
}

// -----

// expected-error @+1 {{'func.func' op nn-autodiff: the loss depends on no trainable parameter}}
func.func @main() -> tensor<4x3xf32> {
  %x = nn.input "x" : tensor<4x3xf32>
  %y = nn.relu %x : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @main() -> tensor<4xi64> {
  %w = nn.param "w" : tensor<4x3xf32>
  %s = nn.shape %w : tensor<4x3xf32> -> tensor<2xi64>
  %c = nn.concat %s, %s axis = 0 : tensor<2xi64>, tensor<2xi64> -> tensor<4xi64>
  // expected-error @+1 {{nn-autodiff: output 0 of @main is a 'tensor<4xi64>', not a floating-point tensor, so no loss can be built on it}}
  return %c : tensor<4xi64>
}

// -----

func.func @main() -> tensor<4x3xf32> {
  %w = nn.param "w" : tensor<4x3xf32>
  // expected-error @+1 {{'nn.input' op has the name 'labels' that nn-autodiff gives the labels; choose another with labels=NAME}}
  %l = nn.input "labels" : tensor<4x3xf32>
  %y = nn.mul %w, %l : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @main() -> tensor<4x3xf32> {
  %w = nn.param "w" : tensor<4x3xf32>
  %y = nn.param "w.adam.m" : tensor<4x3xf32>
  %z = nn.add %w, %y : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  // expected-error @-4 {{'func.func' op nn-autodiff: the optimizer state 'w.adam.m' has the name of an existing parameter}}
  return %z : tensor<4x3xf32>
}

// -----

func.func @main() -> tensor<4x3xf32> {
  %w = nn.param "w" : tensor<4x3xf32>
  // expected-error @+1 {{'nn.relu_grad' op has no backward rule: nn-autodiff cannot differentiate it}}
  %y = nn.relu_grad %w, %w : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A batch of one value per channel has no unbiased variance (PyTorch
// refuses it in training too).
func.func @main() -> tensor<1x3xf32> {
  %x = nn.input "x" : tensor<1x3xf32>
  %s = nn.param "s" : tensor<3xf32>
  %b = nn.param "b" : tensor<3xf32>
  %m = nn.param "m" : tensor<3xf32>
  %v = nn.param "v" : tensor<3xf32>
  // expected-error @+1 {{'nn.batch_norm' op normalizes 1 value per channel: a training step needs more than one (N x spatial) for the batch's variance; train it with --batch-norm frozen}}
  %y = nn.batch_norm %x, %s, %b, %m, %v : tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1x3xf32>
  return %y : tensor<1x3xf32>
}

// -----

// One initializer as a trained bias and the running mean of two batch
// norms (torch.onnx.export merges initializers of equal values) cannot take
// every update.
// expected-error @+1 {{'func.func' op nn-autodiff: 'zeros3' would be updated twice in a step (by the optimizer and as a batch norm's running statistic): it is one initializer shared by several uses; give each use its own copy with --untie zeros3}}
func.func @main() -> tensor<4x3xf32> {
  %x = nn.input "x" : tensor<4x3xf32>
  %s = nn.param "s" : tensor<3xf32>
  %z = nn.param "zeros3" : tensor<3xf32>
  %v = nn.param "v" : tensor<3xf32>
  %w = nn.param "w" : tensor<3xf32>
  %y = nn.batch_norm %x, %s, %z, %z, %v : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %r = nn.batch_norm %y, %s, %z, %z, %w : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
