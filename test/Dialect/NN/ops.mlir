// RUN: parplan-opt %s -split-input-file | parplan-opt -split-input-file | FileCheck %s
// Round trip: every op prints in a form that parses back to itself.

// CHECK-LABEL: func.func @values
func.func @values() -> (tensor<768x3072xf32>, tensor<8x1024xi64>, tensor<2xf32>) {
  // CHECK: nn.param "fc1.weight" {source = "initializer"} : tensor<768x3072xf32>
  %w = nn.param "fc1.weight" {source = "initializer"} : tensor<768x3072xf32>
  // CHECK: nn.input "input_ids" : tensor<8x1024xi64>
  %ids = nn.input "input_ids" : tensor<8x1024xi64>
  // CHECK: nn.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %c = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %w, %ids, %c : tensor<768x3072xf32>, tensor<8x1024xi64>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<8x128x768xf32>, %w: tensor<768x3072xf32>,
                  %v: tensor<768xf32>, %b: tensor<4x1x5x6xf32>,
                  %c: tensor<3x6x2xf32>) -> (tensor<8x128x3072xf32>, tensor<3072xf32>, tensor<8x128xf32>, tensor<4x3x5x2xf32>) {
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : tensor<8x128x768xf32>, tensor<768x3072xf32> -> tensor<8x128x3072xf32>
  %0 = nn.matmul %x, %w : tensor<8x128x768xf32>, tensor<768x3072xf32> -> tensor<8x128x3072xf32>
  // A 1-D left operand loses its promoted row, a 1-D right one its column.
  // CHECK: nn.matmul {{.*}} -> tensor<3072xf32>
  %1 = nn.matmul %v, %w : tensor<768xf32>, tensor<768x3072xf32> -> tensor<3072xf32>
  // CHECK: nn.matmul {{.*}} -> tensor<8x128xf32>
  %2 = nn.matmul %x, %v : tensor<8x128x768xf32>, tensor<768xf32> -> tensor<8x128xf32>
  // Batch dimensions broadcast.
  // CHECK: nn.matmul {{.*}} -> tensor<4x3x5x2xf32>
  %3 = nn.matmul %b, %c : tensor<4x1x5x6xf32>, tensor<3x6x2xf32> -> tensor<4x3x5x2xf32>
  return %0, %1, %2, %3 : tensor<8x128x3072xf32>, tensor<3072xf32>, tensor<8x128xf32>, tensor<4x3x5x2xf32>
}

// -----

// CHECK-LABEL: func.func @gemm
func.func @gemm(%x: tensor<32x784xf32>, %w: tensor<512x784xf32>, %b: tensor<512xf32>,
                %xt: tensor<784x32xf32>, %wt: tensor<784x512xf32>, %c: tensor<32x1xf32>) -> (tensor<32x512xf32>, tensor<32x512xf32>) {
  // CHECK: nn.gemm %{{.*}}, %{{.*}}, %{{.*}} {trans_b = true} : tensor<32x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<32x512xf32>
  %0 = nn.gemm %x, %w, %b {trans_b = true} : tensor<32x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<32x512xf32>
  // CHECK: nn.gemm %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = true} : tensor<784x32xf32>, tensor<784x512xf32>, tensor<32x1xf32> -> tensor<32x512xf32>
  %1 = nn.gemm %xt, %wt, %c {trans_a = true, alpha = 0.5 : f32, beta = 2.0 : f32} : tensor<784x32xf32>, tensor<784x512xf32>, tensor<32x1xf32> -> tensor<32x512xf32>
  return %0, %1 : tensor<32x512xf32>, tensor<32x512xf32>
}

// -----

// CHECK-LABEL: func.func @gemm_without_bias
func.func @gemm_without_bias(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<4x2xf32> {
  // CHECK: nn.gemm %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %0 = nn.gemm %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<8x768xf32>, %b: tensor<768xf32>, %c: tensor<8x1xf32>) -> tensor<8x768xf32> {
  // CHECK: nn.add %{{.*}}, %{{.*}} : tensor<8x768xf32>, tensor<768xf32> -> tensor<8x768xf32>
  %0 = nn.add %a, %b : tensor<8x768xf32>, tensor<768xf32> -> tensor<8x768xf32>
  // CHECK: nn.sub %{{.*}}, %{{.*}} : tensor<8x768xf32>, tensor<8x1xf32> -> tensor<8x768xf32>
  %1 = nn.sub %0, %c : tensor<8x768xf32>, tensor<8x1xf32> -> tensor<8x768xf32>
  // CHECK: nn.mul %{{.*}}, %{{.*}} : tensor<8x1xf32>, tensor<768xf32> -> tensor<8x768xf32>
  %2 = nn.mul %c, %b : tensor<8x1xf32>, tensor<768xf32> -> tensor<8x768xf32>
  // CHECK: nn.div
  %3 = nn.div %1, %2 : tensor<8x768xf32>, tensor<8x768xf32> -> tensor<8x768xf32>
  // CHECK: nn.relu %{{.*}} : tensor<8x768xf32>
  %4 = nn.relu %3 : tensor<8x768xf32>
  // CHECK: nn.tanh %{{.*}} : tensor<8x768xf32>
  %5 = nn.tanh %4 : tensor<8x768xf32>
  // CHECK: nn.gelu %{{.*}} : tensor<8x768xf32>
  %6 = nn.gelu %5 : tensor<8x768xf32>
  // CHECK: nn.gelu %{{.*}} approximate = tanh : tensor<8x768xf32>
  %7 = nn.gelu %6 approximate = tanh : tensor<8x768xf32>
  return %7 : tensor<8x768xf32>
}

// -----

// CHECK-LABEL: func.func @integer_elementwise
func.func @integer_elementwise(%a: tensor<4xi64>, %b: tensor<1xi64>) -> tensor<4xi64> {
  // CHECK: nn.add %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<1xi64> -> tensor<4xi64>
  %0 = nn.add %a, %b : tensor<4xi64>, tensor<1xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @normalizations
func.func @normalizations(%x: tensor<8x128x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>,
                          %g2: tensor<128x768xf32>) -> (tensor<8x128x768xf32>, tensor<8x128x768xf32>, tensor<8x128x768xf32>) {
  // The default axis (-1) is not printed.
  // CHECK: nn.softmax %{{.*}} : tensor<8x128x768xf32>
  %0 = nn.softmax %x axis = -1 : tensor<8x128x768xf32>
  // CHECK: nn.softmax %{{.*}} axis = 1 : tensor<8x128x768xf32>
  %1 = nn.softmax %x axis = 1 : tensor<8x128x768xf32>
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<8x128x768xf32>
  %2 = nn.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-05 : tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<8x128x768xf32>
  // Normalizing over the last two dimensions, without a bias.
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}} axis = 1 epsilon = 9.99999997E-7 : tensor<8x128x768xf32>, tensor<128x768xf32> -> tensor<8x128x768xf32>
  %3 = nn.layer_norm %x, %g2 axis = 1 epsilon = 1.0e-06 : tensor<8x128x768xf32>, tensor<128x768xf32> -> tensor<8x128x768xf32>
  return %1, %2, %3 : tensor<8x128x768xf32>, tensor<8x128x768xf32>, tensor<8x128x768xf32>
}

// -----

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<8x128x768xf32>) -> tensor<8x12x128x64xf32> {
  // CHECK: nn.reshape %{{.*}} : tensor<8x128x768xf32> -> tensor<8x128x12x64xf32>
  %0 = nn.reshape %x : tensor<8x128x768xf32> -> tensor<8x128x12x64xf32>
  // CHECK: nn.transpose %{{.*}} perm = [0, 2, 1, 3] : tensor<8x128x12x64xf32> -> tensor<8x12x128x64xf32>
  %1 = nn.transpose %0 perm = [0, 2, 1, 3] : tensor<8x128x12x64xf32> -> tensor<8x12x128x64xf32>
  return %1 : tensor<8x12x128x64xf32>
}

// -----

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<8x128x768xf32>) -> (tensor<8x128x1xf32>, tensor<8x768xf32>, tensor<1x1x1xf32>, tensor<f32>) {
  // CHECK: nn.reduce_mean %{{.*}} axes = [-1] : tensor<8x128x768xf32> -> tensor<8x128x1xf32>
  %0 = nn.reduce_mean %x axes = [-1] : tensor<8x128x768xf32> -> tensor<8x128x1xf32>
  // CHECK: nn.reduce_sum %{{.*}} axes = [1] keepdims = false : tensor<8x128x768xf32> -> tensor<8x768xf32>
  %1 = nn.reduce_sum %x axes = [1] keepdims = false : tensor<8x128x768xf32> -> tensor<8x768xf32>
  // No axes reduces every dimension.
  // CHECK: nn.reduce_mean %{{.*}} : tensor<8x128x768xf32> -> tensor<1x1x1xf32>
  %2 = nn.reduce_mean %x : tensor<8x128x768xf32> -> tensor<1x1x1xf32>
  // CHECK: nn.reduce_sum %{{.*}} keepdims = false : tensor<8x128x768xf32> -> tensor<f32>
  %3 = nn.reduce_sum %x keepdims = false : tensor<8x128x768xf32> -> tensor<f32>
  return %0, %1, %2, %3 : tensor<8x128x1xf32>, tensor<8x768xf32>, tensor<1x1x1xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @more_elementwise
func.func @more_elementwise(%x: tensor<4x8xf32>, %e: tensor<f32>, %c: tensor<4x1xi1>) -> tensor<4x8xf32> {
  // CHECK: nn.pow %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %0 = nn.pow %x, %e : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  // CHECK: nn.sqrt %{{.*}} : tensor<4x8xf32>
  %1 = nn.sqrt %0 : tensor<4x8xf32>
  // CHECK: nn.exp
  %2 = nn.exp %1 : tensor<4x8xf32>
  // CHECK: nn.log
  %3 = nn.log %2 : tensor<4x8xf32>
  // CHECK: nn.sigmoid
  %4 = nn.sigmoid %3 : tensor<4x8xf32>
  // CHECK: nn.erf
  %5 = nn.erf %4 : tensor<4x8xf32>
  // CHECK: nn.hard_swish
  %6 = nn.hard_swish %5 : tensor<4x8xf32>
  // CHECK: nn.leaky_relu %{{.*}} alpha = 1.000000e-01 : tensor<4x8xf32>
  %7 = nn.leaky_relu %6 alpha = 0.1 : tensor<4x8xf32>
  // Defaults (alpha 0.01 / 0.2, beta 0.5) are not printed.
  // CHECK: nn.leaky_relu %{{.*}} : tensor<4x8xf32>
  %8 = nn.leaky_relu %7 : tensor<4x8xf32>
  // CHECK: nn.hard_sigmoid %{{.*}} beta = 6.000000e-01 : tensor<4x8xf32>
  %9 = nn.hard_sigmoid %8 alpha = 0.2 beta = 0.6 : tensor<4x8xf32>
  // CHECK: nn.clip %{{.*}} min = 0.000000e+00 max = 6.000000e+00 : tensor<4x8xf32>
  %10 = nn.clip %9 min = 0.0 max = 6.0 : tensor<4x8xf32>
  // CHECK: nn.clip %{{.*}} max = 1.000000e+00 : tensor<4x8xf32>
  %11 = nn.clip %10 max = 1.0 : tensor<4x8xf32>
  // CHECK: nn.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x1xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %12 = nn.where %c, %11, %e : tensor<4x1xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  // CHECK: nn.log_softmax %{{.*}} axis = 0 : tensor<4x8xf32>
  %13 = nn.log_softmax %12 axis = 0 : tensor<4x8xf32>
  return %13 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @cast
func.func @cast(%x: tensor<8x128xi64>) -> tensor<8x128xf16> {
  // CHECK: nn.cast %{{.*}} : tensor<8x128xi64> -> tensor<8x128xf16>
  %0 = nn.cast %x : tensor<8x128xi64> -> tensor<8x128xf16>
  return %0 : tensor<8x128xf16>
}

// -----

// CHECK-LABEL: func.func @convolution
func.func @convolution(%x: tensor<8x3x224x224xf32>, %w: tensor<64x3x3x3xf32>, %b: tensor<64xf32>,
                       %dw: tensor<64x1x3x3xf32>, %s: tensor<64xf32>, %m: tensor<64xf32>) -> (tensor<8x64x112x112xf32>, tensor<8x64x56x56xf32>, tensor<8x64x1x1xf32>) {
  // CHECK: nn.conv %{{.*}}, %{{.*}}, %{{.*}} strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<8x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32> -> tensor<8x64x224x224xf32>
  %0 = nn.conv %x, %w, %b strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<8x3x224x224xf32>, tensor<64x3x3x3xf32>, tensor<64xf32> -> tensor<8x64x224x224xf32>
  // Depthwise, strided, without bias: (224 + 1 + 1 - 3) / 2 + 1 = 112.
  // CHECK: nn.conv %{{.*}}, %{{.*}} strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 64 : tensor<8x64x224x224xf32>, tensor<64x1x3x3xf32> -> tensor<8x64x112x112xf32>
  %1 = nn.conv %0, %dw strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 64 : tensor<8x64x224x224xf32>, tensor<64x1x3x3xf32> -> tensor<8x64x112x112xf32>
  // CHECK: nn.batch_norm %{{.*}} : tensor<8x64x112x112xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<8x64x112x112xf32>
  %2 = nn.batch_norm %1, %s, %b, %m, %s epsilon = 1.0e-05 : tensor<8x64x112x112xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<8x64x112x112xf32>
  // CHECK: nn.max_pool %{{.*}} kernel = [3, 3] strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] : tensor<8x64x112x112xf32> -> tensor<8x64x56x56xf32>
  %3 = nn.max_pool %2 kernel = [3, 3] strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] : tensor<8x64x112x112xf32> -> tensor<8x64x56x56xf32>
  // ceil_mode rounds up: (56 - 3) / 2 + 1 = 27.5 -> 28.
  // CHECK: nn.avg_pool %{{.*}} kernel = [3, 3] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] {ceil_mode = true, count_include_pad = true} : tensor<8x64x56x56xf32> -> tensor<8x64x28x28xf32>
  %4 = nn.avg_pool %3 kernel = [3, 3] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] {ceil_mode = true, count_include_pad = true} : tensor<8x64x56x56xf32> -> tensor<8x64x28x28xf32>
  // CHECK: nn.avg_pool %{{.*}} kernel = [56, 56] {{.*}} -> tensor<8x64x1x1xf32>
  %5 = nn.avg_pool %3 kernel = [56, 56] strides = [1, 1] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<8x64x56x56xf32> -> tensor<8x64x1x1xf32>
  return %1, %3, %5 : tensor<8x64x112x112xf32>, tensor<8x64x56x56xf32>, tensor<8x64x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @shapes_and_indexing
func.func @shapes_and_indexing(%x: tensor<8x128x2304xf32>, %wte: tensor<50257x768xf32>, %ids: tensor<8x128xi64>, %s: tensor<1x128xf32>) {
  // CHECK: nn.split %{{.*}} axis = -1 sizes = [768, 768, 768] : tensor<8x128x2304xf32> -> tensor<8x128x768xf32>, tensor<8x128x768xf32>, tensor<8x128x768xf32>
  %q, %k, %v = nn.split %x axis = -1 sizes = [768, 768, 768] : tensor<8x128x2304xf32> -> tensor<8x128x768xf32>, tensor<8x128x768xf32>, tensor<8x128x768xf32>
  // CHECK: nn.concat %{{.*}}, %{{.*}} axis = 2 : tensor<8x128x768xf32>, tensor<8x128x768xf32> -> tensor<8x128x1536xf32>
  %qk = nn.concat %q, %k axis = 2 : tensor<8x128x768xf32>, tensor<8x128x768xf32> -> tensor<8x128x1536xf32>
  // CHECK: nn.gather %{{.*}}, %{{.*}} : tensor<50257x768xf32>, tensor<8x128xi64> -> tensor<8x128x768xf32>
  %e = nn.gather %wte, %ids axis = 0 : tensor<50257x768xf32>, tensor<8x128xi64> -> tensor<8x128x768xf32>
  // CHECK: nn.slice %{{.*}} starts = [0, 127, 0] sizes = [8, 64, 768] steps = [1, -2, 1] : tensor<8x128x768xf32> -> tensor<8x64x768xf32>
  %r = nn.slice %e starts = [0, 127, 0] sizes = [8, 64, 768] steps = [1, -2, 1] : tensor<8x128x768xf32> -> tensor<8x64x768xf32>
  // CHECK: nn.shape %{{.*}} : tensor<8x128x768xf32> -> tensor<3xi64>
  %sh = nn.shape %e : tensor<8x128x768xf32> -> tensor<3xi64>
  // CHECK: nn.expand %{{.*}} : tensor<1x128xf32> -> tensor<8x128xf32>
  %x8 = nn.expand %s : tensor<1x128xf32> -> tensor<8x128xf32>
  return
}
