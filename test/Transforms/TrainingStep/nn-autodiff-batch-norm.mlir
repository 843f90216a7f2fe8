// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=sgd" | FileCheck %s
// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=sgd batch-norm=frozen" | FileCheck %s --check-prefix=FROZEN
// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=sgd micro-batches=2" | FileCheck %s --check-prefix=MICRO
// RUN: parplan-opt %s -split-input-file -nn-autodiff="optimizer=sgd mixed-precision=bf16" | FileCheck %s --check-prefix=BF16

// Training form (the default): the batch's mean and biased variance over
// N and the spatial dimensions, scale / sqrt(var + eps) per channel, and
// the running statistics updated and returned, marked as such. ONNX's
// momentum 0.8 keeps 0.8 of the running values; the variance's share is
// 0.2 * 32 / 31 (unbiased over 2 x 4 x 4 values).
// CHECK-LABEL: module attributes {nn.training = {batch_norm = "batch"
// CHECK: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<3xf32> {nn.updates = "scale"}, tensor<3xf32> {nn.updates = "bias"}, tensor<3xf32> {nn.running_statistic, nn.updates = "running_mean"}, tensor<3xf32> {nn.running_statistic, nn.updates = "running_var"})
// CHECK: %[[X:.*]] = nn.input "x"
// CHECK: %[[RM:.*]] = nn.param "running_mean"
// CHECK: %[[RV:.*]] = nn.param "running_var"
// CHECK-NOT: nn.batch_norm
// CHECK: %[[MEAN:.*]] = nn.reduce_mean %[[X]] axes = [0, 2, 3] : tensor<2x3x4x4xf32> -> tensor<1x3x1x1xf32>
// CHECK: %[[CENTERED:.*]] = nn.sub %[[X]], %[[MEAN]]
// CHECK: %[[SQUARES:.*]] = nn.mul %[[CENTERED]], %[[CENTERED]]
// CHECK: %[[VAR:.*]] = nn.reduce_mean %[[SQUARES]] axes = [0, 2, 3]
// CHECK: nn.constant dense<9.99999974E-6>
// CHECK: nn.sqrt
// CHECK: %[[FACTOR:.*]] = nn.div {{.*}} : tensor<3x1x1xf32>, tensor<3x1x1xf32> -> tensor<3x1x1xf32>
// CHECK: nn.mul %[[CENTERED]], %[[FACTOR]]
// CHECK: %[[BMEAN:.*]] = nn.reshape %[[MEAN]] : tensor<1x3x1x1xf32> -> tensor<3xf32>
// CHECK: %[[BVAR:.*]] = nn.reshape %[[VAR]] : tensor<1x3x1x1xf32> -> tensor<3xf32>
// CHECK: %[[K1:.*]] = nn.constant dense<8.000000e-01>
// CHECK: %[[KEPT1:.*]] = nn.mul %[[RM]], %[[K1]]
// CHECK: %[[S1:.*]] = nn.constant dense<0.199999988>
// CHECK: %[[ADDED1:.*]] = nn.mul %[[BMEAN]], %[[S1]]
// CHECK: %[[NEWMEAN:.*]] = nn.add %[[KEPT1]], %[[ADDED1]]
// CHECK: nn.mul %[[RV]]
// CHECK: %[[S2:.*]] = nn.constant dense<0.206451595>
// CHECK: nn.mul %[[BVAR]], %[[S2]]
// CHECK: %[[NEWVAR:.*]] = nn.add
// CHECK: return {{.*}}, %[[NEWMEAN]], %[[NEWVAR]] :

// The frozen form: the statistics as given, no gradient, no update.
// FROZEN-LABEL: module attributes {nn.training = {batch_norm = "frozen"
// FROZEN: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<3xf32> {nn.updates = "scale"}, tensor<3xf32> {nn.updates = "bias"})
// FROZEN: nn.batch_norm
// FROZEN-NOT: nn.reduce_mean %{{.*}} axes = [0, 2, 3]
// FROZEN: return

// With micro-batches, the running statistics take the mean of the
// micro-batches' statistics: each is halved and accumulated, then the
// update runs once.
// MICRO: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<3xf32> {nn.updates = "scale"}, tensor<3xf32> {nn.updates = "bias"}, tensor<3xf32> {nn.running_statistic, nn.updates = "running_mean"}, tensor<3xf32> {nn.running_statistic, nn.updates = "running_var"})
// MICRO: nn.sgd_update
// MICRO: nn.sgd_update
// MICRO: %[[HALF:.*]] = nn.constant dense<5.000000e-01> : tensor<f32>
// MICRO: %[[SHARE:.*]] = nn.mul %{{.*}}, %[[HALF]] : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
// MICRO: %[[SUM:.*]] = nn.accumulate %[[SHARE]] : tensor<3xf32>
// MICRO: nn.mul %[[SUM]]

// Under bf16 the statistics are computed in fp32 (from the values before
// their casts down: the input and the scale here), the result cast to
// bf16, and the running statistics updated in fp32.
// BF16: %[[X:.*]] = nn.input "x" : tensor<2x3x4x4xf32>
// BF16: %[[S:.*]] = nn.param "scale" : tensor<3xf32>
// BF16: nn.reduce_mean %[[X]] axes = [0, 2, 3] : tensor<2x3x4x4xf32> -> tensor<1x3x1x1xf32>
// BF16: nn.reshape %[[S]] : tensor<3xf32> -> tensor<3x1x1xf32>
// BF16: %[[Y:.*]] = nn.cast %{{.*}} : tensor<2x3x4x4xf32> -> tensor<2x3x4x4xbf16>
// BF16: nn.reduce_mean %[[Y]] axes = [2, 3] keepdims = false : tensor<2x3x4x4xbf16> -> tensor<2x3xbf16>
// BF16: return {{.*}} : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
func.func @main() -> tensor<2x3xf32> {
  %x = nn.input "x" : tensor<2x3x4x4xf32>
  %s = nn.param "scale" : tensor<3xf32>
  %b = nn.param "bias" : tensor<3xf32>
  %m = nn.param "running_mean" : tensor<3xf32>
  %v = nn.param "running_var" : tensor<3xf32>
  %y = nn.batch_norm %x, %s, %b, %m, %v momentum = 0.8 : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x4x4xf32>
  %p = nn.reduce_mean %y axes = [2, 3] keepdims = false : tensor<2x3x4x4xf32> -> tensor<2x3xf32>
  return %p : tensor<2x3xf32>
}

// -----

// Statistics that are constants are not updated; a 2-D input normalizes
// over its batch alone.
// CHECK-LABEL: func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<3xf32> {nn.updates = "scale"}, tensor<3xf32> {nn.updates = "bias"})
// CHECK: nn.reduce_mean %{{.*}} axes = [0] : tensor<4x3xf32> -> tensor<1x3xf32>
// CHECK: nn.div %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK-NOT: nn.running_statistic
func.func @main() -> tensor<4x3xf32> {
  %x = nn.input "x" : tensor<4x3xf32>
  %s = nn.param "scale" : tensor<3xf32>
  %b = nn.param "bias" : tensor<3xf32>
  %m = nn.constant dense<0.0> : tensor<3xf32>
  %v = nn.constant dense<1.0> : tensor<3xf32>
  %y = nn.batch_norm %x, %s, %b, %m, %v : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
