// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=sgd dropout-seed=7" | FileCheck %s
// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=sgd dropout=off" | FileCheck %s --check-prefix=OFF
// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=sgd micro-batches=2" | FileCheck %s --check-prefix=MICRO
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="dropout=maybe" 2>&1 | FileCheck %s --check-prefix=OPTION

// Training form: the step count (state, counted up at the top, returned
// as its update even with SGD) feeds every dropout, each keyed by its
// position and the seed; the backward pass applies the same mask (same
// step, seed and key) to the cotangent.
// CHECK-LABEL: module attributes {nn.training = {dropout_seed = 7 : i64
// CHECK: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.updates = "optimizer.step"}, tensor<2x4xf32> {nn.updates = "x"}, tensor<4x4xf32> {nn.updates = "w"})
// CHECK: %[[COUNT:.*]] = nn.param "optimizer.step" {source = "zeros"} : tensor<f32>
// CHECK: %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[STEP:.*]] = nn.add %[[COUNT]], %[[ONE]]
// CHECK-NOT: nn.micro_batch
// CHECK: nn.dropout %{{.*}} step %[[STEP]] ratio = 1.000000e-01 {seed = 7 : i64} : tensor<2x4xf32>, tensor<f32>
// CHECK: nn.dropout %{{.*}} step %[[STEP]] {key = 1 : i64, seed = 7 : i64} : tensor<2x4xf32>, tensor<f32>
// CHECK: nn.softmax_cross_entropy_grad
// CHECK: nn.dropout %{{.*}} step %[[STEP]] {key = 1 : i64, seed = 7 : i64}
// CHECK: nn.dropout %{{.*}} step %[[STEP]] ratio = 1.000000e-01 {seed = 7 : i64}
// CHECK: return %{{.*}}, %[[STEP]], %{{.*}}, %{{.*}} :

// Off: the identity, no step count.
// OFF-NOT: nn.dropout
// OFF-NOT: optimizer.step
// OFF: return

// With micro-batches each draws its own masks: the dropouts, forward and
// backward, also read the micro-batch index.
// MICRO: %[[STEP:.*]] = nn.add
// MICRO: %[[MB:.*]] = nn.micro_batch : tensor<i64>
// MICRO: nn.dropout %{{.*}} step %[[STEP]] micro_batch %[[MB]] ratio = 1.000000e-01 : tensor<2x4xf32>, tensor<f32>, tensor<i64>
// MICRO: nn.dropout %{{.*}} step %[[STEP]] micro_batch %[[MB]] {key = 1 : i64} : tensor<2x4xf32>, tensor<f32>, tensor<i64>
// MICRO: nn.dropout %{{.*}} step %[[STEP]] micro_batch %[[MB]] {key = 1 : i64}
// MICRO: nn.dropout %{{.*}} step %[[STEP]] micro_batch %[[MB]] ratio = 1.000000e-01
// OPTION: error: 'func.func' op nn-autodiff: unknown dropout 'maybe' (expected on or off)
func.func @main() -> tensor<2x4xf32> {
  %x = nn.param "x" : tensor<2x4xf32>
  %w = nn.param "w" : tensor<4x4xf32>
  %d = nn.dropout %x ratio = 0.1 : tensor<2x4xf32>
  %m = nn.matmul %d, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %y = nn.dropout %m : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
