// RUN: parplan-opt %s -split-input-file | parplan-opt -split-input-file | FileCheck %s
// The backward, loss and optimizer ops print and parse back unchanged.

// CHECK-LABEL: func.func @activation_grads
func.func @activation_grads(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) {
  // CHECK: nn.relu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = nn.relu_grad %dy, %x : tensor<4x8xf32>
  // CHECK: nn.leaky_relu_grad %{{.*}}, %{{.*}} alpha = 2.000000e-01 : tensor<4x8xf32>
  %1 = nn.leaky_relu_grad %dy, %x alpha = 0.2 : tensor<4x8xf32>
  // CHECK: nn.hard_sigmoid_grad %{{.*}}, %{{.*}} alpha = 3.000000e-01 : tensor<4x8xf32>
  %2 = nn.hard_sigmoid_grad %dy, %x alpha = 0.3 : tensor<4x8xf32>
  // CHECK: nn.hard_swish_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %3 = nn.hard_swish_grad %dy, %x : tensor<4x8xf32>
  // CHECK: nn.clip_grad %{{.*}}, %{{.*}} min = 0.000000e+00 : tensor<4x8xf32>
  %4 = nn.clip_grad %dy, %x min = 0.0 : tensor<4x8xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} approximate = tanh : tensor<4x8xf32>
  %5 = nn.gelu_grad %dy, %x approximate = tanh : tensor<4x8xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %6 = nn.gelu_grad %dy, %x : tensor<4x8xf32>
  return
}

// -----

// CHECK-LABEL: func.func @normalization_grads
func.func @normalization_grads(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %g2: tensor<4x8xf32>) {
  // CHECK: nn.softmax_grad %{{.*}}, %{{.*}} axis = 1 : tensor<2x4x8xf32>
  %0 = nn.softmax_grad %dy, %x axis = 1 : tensor<2x4x8xf32>
  // CHECK: nn.log_softmax_grad %{{.*}}, %{{.*}} : tensor<2x4x8xf32>
  %1 = nn.log_softmax_grad %dy, %x : tensor<2x4x8xf32>
  // CHECK: nn.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} axis = 1 epsilon = 1.000000e-03 : tensor<2x4x8xf32>, tensor<4x8xf32>
  %2:3 = nn.layer_norm_grad %dy, %x, %g2 axis = 1 epsilon = 1.0e-3 : tensor<2x4x8xf32>, tensor<4x8xf32>
  return
}

// -----

// CHECK-LABEL: func.func @window_grads
func.func @window_grads(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %p: tensor<2x3x4x4xf32>) {
  // CHECK: nn.conv_grad_input %{{.*}}, %{{.*}} strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
  %0 = nn.conv_grad_input %dy, %w strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
  // CHECK: nn.conv_grad_weight %{{.*}}, %{{.*}} strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<4x3x3x3xf32>
  %1 = nn.conv_grad_weight %dy, %x strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<4x3x3x3xf32>
  // CHECK: nn.max_pool_grad %{{.*}}, %{{.*}} kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  %2 = nn.max_pool_grad %p, %x kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  // CHECK: nn.avg_pool_grad %{{.*}} kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] {count_include_pad = true} : tensor<2x3x4x4xf32> -> tensor<2x3x8x8xf32>
  %3 = nn.avg_pool_grad %p kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] {count_include_pad = true} : tensor<2x3x4x4xf32> -> tensor<2x3x8x8xf32>
  return
}

// -----

// CHECK-LABEL: func.func @movement_grads
func.func @movement_grads(%dy: tensor<4x3xf32>, %de: tensor<8x128x16xf32>, %ids: tensor<8x128xi64>) {
  // CHECK: nn.slice_grad %{{.*}} starts = [0, 2] steps = [1, 2] : tensor<4x3xf32> -> tensor<4x8xf32>
  %0 = nn.slice_grad %dy starts = [0, 2] steps = [1, 2] : tensor<4x3xf32> -> tensor<4x8xf32>
  // CHECK: nn.gather_grad %{{.*}}, %{{.*}} : tensor<8x128x16xf32>, tensor<8x128xi64> -> tensor<1000x16xf32>
  %1 = nn.gather_grad %de, %ids : tensor<8x128x16xf32>, tensor<8x128xi64> -> tensor<1000x16xf32>
  return
}

// -----

// CHECK-LABEL: func.func @losses
func.func @losses(%logits: tensor<8x128x500xf32>, %labels: tensor<8x128xi64>, %dl: tensor<8x128xf32>) {
  // CHECK: nn.softmax_cross_entropy %{{.*}}, %{{.*}} : tensor<8x128x500xf32>, tensor<8x128xi64> -> tensor<8x128xf32>
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<8x128x500xf32>, tensor<8x128xi64> -> tensor<8x128xf32>
  // CHECK: nn.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x128xf32>, tensor<8x128x500xf32>, tensor<8x128xi64>
  %1 = nn.softmax_cross_entropy_grad %dl, %logits, %labels : tensor<8x128xf32>, tensor<8x128x500xf32>, tensor<8x128xi64>
  return
}

// -----

// CHECK-LABEL: func.func @updates
func.func @updates(%w: tensor<16x32xf32>, %g: tensor<16x32xf32>, %m: tensor<16x32xf32>, %v: tensor<16x32xf32>, %t: tensor<f32>) {
  // CHECK: nn.sgd_update %{{.*}}, %{{.*}} lr = 1.000000e-01 weight_decay = 1.000000e-02 : tensor<16x32xf32>
  %0 = nn.sgd_update %w, %g lr = 0.1 weight_decay = 0.01 : tensor<16x32xf32>
  // CHECK: nn.momentum_update %{{.*}}, %{{.*}}, %{{.*}} lr = 1.000000e-01 momentum = 9.000000e-01 {nesterov = true} : tensor<16x32xf32>
  %1:2 = nn.momentum_update %w, %g, %m lr = 0.1 momentum = 0.9 {nesterov = true} : tensor<16x32xf32>
  // CHECK: nn.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr = 1.000000e-03 weight_decay = 1.000000e-02 decoupled grad_scale = 1.024000e+03 : tensor<16x32xf32>, tensor<f32>
  %2:3 = nn.adam_update %w, %g, %m, %v, %t lr = 1.0e-3 weight_decay = 0.01 decoupled grad_scale = 1024.0 : tensor<16x32xf32>, tensor<f32>
  return
}

// -----

// Optimizer state starts at zero.
// CHECK-LABEL: func.func @state
func.func @state() -> tensor<16xf32> {
  // CHECK: nn.param "w.adam.m" {source = "zeros"} : tensor<16xf32>
  %0 = nn.param "w.adam.m" {source = "zeros"} : tensor<16xf32>
  return %0 : tensor<16xf32>
}
