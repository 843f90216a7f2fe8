// RUN: parplan-opt %s -split-input-file -nn-autodiff | FileCheck %s
// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=SGD
// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=momentum momentum=0.8" | FileCheck %s --check-prefix=MOMENTUM
// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=none loss=mse labels=target" | FileCheck %s --check-prefix=GRADS

// A two-layer MLP. Adam (the default): per parameter an update and two zero
// moments beside it, one step count for all; the step returns the loss
// first, then every updated value marked with the name it replaces.
// CHECK-LABEL: module attributes {nn.training = {labels = "labels", loss = "cross-entropy", lr = 1.000000e-03 : f64, mixed_precision = "none", optimizer = "adam", recompute = "none", weight_decay = 0.000000e+00 : f64}}
// CHECK: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.updates = "optimizer.step"}, tensor<16x32xf32> {nn.updates = "w1"}, tensor<16x32xf32> {nn.updates = "w1.adam.m"}, tensor<16x32xf32> {nn.updates = "w1.adam.v"}, tensor<32x10xf32> {nn.updates = "w2"}, tensor<32x10xf32> {nn.updates = "w2.adam.m"}, tensor<32x10xf32> {nn.updates = "w2.adam.v"})
// CHECK: %[[STEP:.*]] = nn.param "optimizer.step" {source = "zeros"} : tensor<f32>
// CHECK: %[[W1:.*]] = nn.param "w1" : tensor<16x32xf32>
// CHECK-NEXT: %[[M1:.*]] = nn.param "w1.adam.m" {source = "zeros"} : tensor<16x32xf32>
// CHECK-NEXT: %[[V1:.*]] = nn.param "w1.adam.v" {source = "zeros"} : tensor<16x32xf32>
// CHECK: %[[W2:.*]] = nn.param "w2" : tensor<32x10xf32>
// CHECK: nn.relu
// CHECK: %[[LOGITS:.*]] = nn.matmul
// CHECK: %[[LABELS:.*]] = nn.input "labels" : tensor<8xi64>
// CHECK: %[[PER:.*]] = nn.softmax_cross_entropy %[[LOGITS]], %[[LABELS]] : tensor<8x10xf32>, tensor<8xi64> -> tensor<8xf32>
// CHECK: %[[LOSS:.*]] = nn.reduce_mean %[[PER]] keepdims = false : tensor<8xf32> -> tensor<f32>
// CHECK: nn.softmax_cross_entropy_grad
// CHECK: nn.relu_grad
// CHECK: %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[T:.*]] = nn.add %[[STEP]], %[[ONE]]
// The updates run in the order the backward completes their gradients,
// w2's first; the step returns them in the parameters' order.
// CHECK: %[[NEW2:.*]], %[[NEWM2:.*]], %[[NEWV2:.*]] = nn.adam_update %[[W2]], %{{.*}} lr = 1.000000e-03 : tensor<32x10xf32>, tensor<f32>
// CHECK: %[[NEW1:.*]], %[[NEWM1:.*]], %[[NEWV1:.*]] = nn.adam_update %[[W1]], %{{.*}}, %[[M1]], %[[V1]], %[[T]] lr = 1.000000e-03 : tensor<16x32xf32>, tensor<f32>
// CHECK: return %[[LOSS]], %[[T]], %[[NEW1]], %[[NEWM1]], %[[NEWV1]], %[[NEW2]], %[[NEWM2]], %[[NEWV2]] :

// SGD keeps no state.
// SGD: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<16x32xf32> {nn.updates = "w1"}, tensor<32x10xf32> {nn.updates = "w2"})
// SGD: nn.sgd_update %{{.*}}, %{{.*}} lr = 5.000000e-01 : tensor<16x32xf32>
// SGD-NOT: optimizer.step

// MOMENTUM: nn.param "w1.momentum" {source = "zeros"} : tensor<16x32xf32>
// MOMENTUM: nn.momentum_update %{{.*}}, %{{.*}}, %{{.*}} lr = 1.000000e-03 momentum = 8.000000e-01 : tensor<16x32xf32>

// Without an optimizer the step returns the gradients; mse reads targets
// of the output's type.
// GRADS: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<16x32xf32> {nn.gradient = "w1"}, tensor<32x10xf32> {nn.gradient = "w2"})
// GRADS: %[[TARGET:.*]] = nn.input "target" : tensor<8x10xf32>
// GRADS: nn.sub %{{.*}}, %[[TARGET]]
// GRADS-NOT: update
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

// A weight used twice (tied embeddings): its gradients add up. The table
// gets a scatter-add; the token ids get nothing.
// CHECK-LABEL: {nn.updates = "wte"}
// CHECK: %[[WTE:.*]] = nn.param "wte" : tensor<50x8xf32>
// CHECK: %[[IDS:.*]] = nn.input "ids" : tensor<2x4xi64>
// CHECK: %[[SCATTER:.*]] = nn.gather_grad %{{.*}}, %[[IDS]] : tensor<2x4x8xf32>, tensor<2x4xi64> -> tensor<50x8xf32>
// CHECK: %[[SUM:.*]] = nn.add %{{.*}}, %[[SCATTER]] : tensor<50x8xf32>, tensor<50x8xf32> -> tensor<50x8xf32>
// CHECK: nn.adam_update %[[WTE]], %[[SUM]]
func.func @main() -> tensor<2x4x50xf32> {
  %wte = nn.param "wte" : tensor<50x8xf32>
  %ids = nn.input "ids" : tensor<2x4xi64>
  %e = nn.gather %wte, %ids : tensor<50x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %t = nn.transpose %wte perm = [1, 0] : tensor<50x8xf32> -> tensor<8x50xf32>
  %y = nn.matmul %e, %t : tensor<2x4x8xf32>, tensor<8x50xf32> -> tensor<2x4x50xf32>
  return %y : tensor<2x4x50xf32>
}

// -----

// The tied embedding is the first parameter but its gradient completes
// last (the lookup's scatter-add at the end of the backward): its update
// runs after the layer's, whose gradient completes before; the results
// stay in the parameters' order.
// CHECK-LABEL: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.updates = "optimizer.step"}, tensor<50x8xf32> {nn.updates = "wte"}, tensor<50x8xf32> {nn.updates = "wte.adam.m"}, tensor<50x8xf32> {nn.updates = "wte.adam.v"}, tensor<8x8xf32> {nn.updates = "w"}
// CHECK: %[[W:.*]] = nn.param "w" : tensor<8x8xf32>
// CHECK: nn.gather_grad
// CHECK: %[[NEWW:.*]], %{{.*}}, %{{.*}} = nn.adam_update %[[W]],
// CHECK: %[[NEWWTE:.*]], %{{.*}}, %{{.*}} = nn.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr = 1.000000e-03 : tensor<50x8xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[NEWWTE]], %{{.*}}, %{{.*}}, %[[NEWW]],
func.func @main() -> tensor<2x4x50xf32> {
  %wte = nn.param "wte" : tensor<50x8xf32>
  %w = nn.param "w" : tensor<8x8xf32>
  %ids = nn.input "ids" : tensor<2x4xi64>
  %e = nn.gather %wte, %ids : tensor<50x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %h = nn.matmul %e, %w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %t = nn.transpose %wte perm = [1, 0] : tensor<50x8xf32> -> tensor<8x50xf32>
  %y = nn.matmul %h, %t : tensor<2x4x8xf32>, tensor<8x50xf32> -> tensor<2x4x50xf32>
  return %y : tensor<2x4x50xf32>
}

// -----

// The other result of @main is dropped with the ops only it needed
// (batch norm in training: nn-autodiff-batch-norm.mlir).
// CHECK-LABEL: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.updates = "optimizer.step"}, tensor<4xf32> {nn.updates = "scale"}, tensor<4xf32> {nn.updates = "scale.adam.m"}, tensor<4xf32> {nn.updates = "scale.adam.v"})
// CHECK-NOT: nn.sigmoid
// CHECK: return
func.func @main() -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %x = nn.input "x" : tensor<2x3x4x4xf32>
  %s = nn.param "scale" : tensor<4xf32>
  %y = nn.mul %x, %s : tensor<2x3x4x4xf32>, tensor<4xf32> -> tensor<2x3x4x4xf32>
  %p = nn.reduce_mean %y axes = [2, 3] keepdims = false : tensor<2x3x4x4xf32> -> tensor<2x3xf32>
  %z = nn.sigmoid %p : tensor<2x3xf32>
  return %p, %z : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A where's gradient flows to the branch each element took; the other gets
// a scalar zero the where broadcasts, never a constant of the activation's
// shape (a causal mask's scores: a zeros tensor that large is written out
// whole in every program of the plan).
// CHECK-LABEL: {nn.updates = "w"}
// CHECK: %[[MASK:.*]] = nn.constant dense<{{.*}}> : tensor<1x4x4xi1>
// CHECK-NOT: nn.constant dense<0.000000e+00> : tensor<2x4x4xf32>
// CHECK: %[[ZERO:.*]] = nn.constant dense<0.000000e+00> : tensor<f32>
// CHECK: nn.where %[[MASK]], %{{.*}}, %[[ZERO]] : tensor<1x4x4xi1>, tensor<2x4x4xf32>, tensor<f32> -> tensor<2x4x4xf32>
// CHECK-NOT: nn.constant dense<0.000000e+00> : tensor<2x4x4xf32>
// CHECK: nn.adam_update
func.func @main() -> tensor<2x4x4xf32> {
  %x = nn.input "x" : tensor<2x4x4xf32>
  %w = nn.param "w" : tensor<4x4xf32>
  %mask = nn.constant dense<[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]> : tensor<1x4x4xi1>
  %low = nn.constant dense<-1.000000e+04> : tensor<f32>
  %scores = nn.matmul %x, %w : tensor<2x4x4xf32>, tensor<4x4xf32> -> tensor<2x4x4xf32>
  %masked = nn.where %mask, %scores, %low : tensor<1x4x4xi1>, tensor<2x4x4xf32>, tensor<f32> -> tensor<2x4x4xf32>
  return %masked : tensor<2x4x4xf32>
}

// -----

// A bias added to a [batch, seq, features] activation: its gradient is the
// sum over the leading axes, in the bias's own shape with no reshape after
// it, so that the update reads the sum itself (a reduction of it over the
// mesh then runs on the gradients stream). A bias of kept unit axes sums
// with keepdims and is reshaped to its shape.
// GRADS-LABEL: {nn.gradient = "b"}
// GRADS: %[[C:.*]] = nn.reduce_sum %{{.*}} axes = [0, 2] : tensor<2x4x8xf32> -> tensor<1x4x1xf32>
// GRADS-NEXT: %[[CSHAPED:.*]] = nn.reshape %[[C]] : tensor<1x4x1xf32> -> tensor<4x1xf32>
// GRADS-NEXT: %[[B:.*]] = nn.reduce_sum %{{.*}} axes = [0, 1] keepdims = false : tensor<2x4x8xf32> -> tensor<8xf32>
// GRADS-NEXT: return %{{.*}}, %[[B]], %[[CSHAPED]] :
func.func @main() -> tensor<2x4x8xf32> {
  %x = nn.input "x" : tensor<2x4x8xf32>
  %b = nn.param "b" : tensor<8xf32>
  %c = nn.param "c" : tensor<4x1xf32>
  %y = nn.add %x, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  %z = nn.add %y, %c : tensor<2x4x8xf32>, tensor<4x1xf32> -> tensor<2x4x8xf32>
  return %z : tensor<2x4x8xf32>
}
