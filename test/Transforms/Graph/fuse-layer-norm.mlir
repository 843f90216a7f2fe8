// RUN: parplan-opt %s -split-input-file -nn-fuse-layer-norm -canonicalize | FileCheck %s

// The nine-op form exporters write before opset 17.
// CHECK-LABEL: func.func @decomposed
// CHECK-SAME: (%[[X:.*]]: tensor<8x128x768xf32>, %[[G:.*]]: tensor<768xf32>, %[[B:.*]]: tensor<768xf32>)
// The default epsilon (1e-5) is not printed; the axis is made positive.
// CHECK-NEXT: %[[Y:.*]] = nn.layer_norm %[[X]], %[[G]], %[[B]] axis = 2 : tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32> -> tensor<8x128x768xf32>
// CHECK-NEXT: return %[[Y]]
func.func @decomposed(%x: tensor<8x128x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<8x128x768xf32> {
  %mean = nn.reduce_mean %x axes = [-1] : tensor<8x128x768xf32> -> tensor<8x128x1xf32>
  %d = nn.sub %x, %mean : tensor<8x128x768xf32>, tensor<8x128x1xf32> -> tensor<8x128x768xf32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %sq = nn.pow %d, %two : tensor<8x128x768xf32>, tensor<f32> -> tensor<8x128x768xf32>
  %var = nn.reduce_mean %sq axes = [-1] : tensor<8x128x768xf32> -> tensor<8x128x1xf32>
  %eps = nn.constant dense<1.0e-5> : tensor<f32>
  %ve = nn.add %var, %eps : tensor<8x128x1xf32>, tensor<f32> -> tensor<8x128x1xf32>
  %std = nn.sqrt %ve : tensor<8x128x1xf32>
  %n = nn.div %d, %std : tensor<8x128x768xf32>, tensor<8x128x1xf32> -> tensor<8x128x768xf32>
  %s = nn.mul %n, %g : tensor<8x128x768xf32>, tensor<768xf32> -> tensor<8x128x768xf32>
  %y = nn.add %s, %b : tensor<8x128x768xf32>, tensor<768xf32> -> tensor<8x128x768xf32>
  return %y : tensor<8x128x768xf32>
}

// -----

// Commuted operands, the square as a product, positive axes, two
// normalized dimensions.
// CHECK-LABEL: func.func @commuted
// CHECK: nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} axis = 1 epsilon = 9.99999996E-13 : tensor<4x6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32> -> tensor<4x6x8xf32>
// CHECK-NOT: nn.reduce_mean
func.func @commuted(%x: tensor<4x6x8xf32>, %g: tensor<6x8xf32>, %b: tensor<6x8xf32>) -> tensor<4x6x8xf32> {
  %mean = nn.reduce_mean %x axes = [2, 1] : tensor<4x6x8xf32> -> tensor<4x1x1xf32>
  %d = nn.sub %x, %mean : tensor<4x6x8xf32>, tensor<4x1x1xf32> -> tensor<4x6x8xf32>
  %sq = nn.mul %d, %d : tensor<4x6x8xf32>, tensor<4x6x8xf32> -> tensor<4x6x8xf32>
  %var = nn.reduce_mean %sq axes = [1, 2] : tensor<4x6x8xf32> -> tensor<4x1x1xf32>
  %eps = nn.constant dense<1.0e-12> : tensor<1xf32>
  %ve = nn.add %eps, %var : tensor<1xf32>, tensor<4x1x1xf32> -> tensor<4x1x1xf32>
  %std = nn.sqrt %ve : tensor<4x1x1xf32>
  %n = nn.div %d, %std : tensor<4x6x8xf32>, tensor<4x1x1xf32> -> tensor<4x6x8xf32>
  %s = nn.mul %g, %n : tensor<6x8xf32>, tensor<4x6x8xf32> -> tensor<4x6x8xf32>
  %y = nn.add %b, %s : tensor<6x8xf32>, tensor<4x6x8xf32> -> tensor<4x6x8xf32>
  return %y : tensor<4x6x8xf32>
}

// -----

// Without a bias.
// CHECK-LABEL: func.func @no_bias
// CHECK: %[[Y:.*]] = nn.layer_norm %{{.*}}, %{{.*}} axis = 1 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @no_bias(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {
  %mean = nn.reduce_mean %x axes = [-1] : tensor<2x4xf32> -> tensor<2x1xf32>
  %d = nn.sub %x, %mean : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %sq = nn.pow %d, %two : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %var = nn.reduce_mean %sq axes = [-1] : tensor<2x4xf32> -> tensor<2x1xf32>
  %eps = nn.constant dense<1.0e-5> : tensor<f32>
  %ve = nn.add %var, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %std = nn.sqrt %ve : tensor<2x1xf32>
  %n = nn.div %d, %std : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %s = nn.mul %n, %g : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}

// -----

// Normalizing over a leading axis is not a layer norm: left alone.
// CHECK-LABEL: func.func @leading_axis
// CHECK-NOT: nn.layer_norm
// CHECK: nn.reduce_mean
func.func @leading_axis(%x: tensor<2x4xf32>, %g: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %mean = nn.reduce_mean %x axes = [0] : tensor<2x4xf32> -> tensor<1x4xf32>
  %d = nn.sub %x, %mean : tensor<2x4xf32>, tensor<1x4xf32> -> tensor<2x4xf32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %sq = nn.pow %d, %two : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %var = nn.reduce_mean %sq axes = [0] : tensor<2x4xf32> -> tensor<1x4xf32>
  %eps = nn.constant dense<1.0e-5> : tensor<f32>
  %ve = nn.add %var, %eps : tensor<1x4xf32>, tensor<f32> -> tensor<1x4xf32>
  %std = nn.sqrt %ve : tensor<1x4xf32>
  %n = nn.div %d, %std : tensor<2x4xf32>, tensor<1x4xf32> -> tensor<2x4xf32>
  %s = nn.mul %n, %g : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %y = nn.add %s, %b : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// A different exponent, or a mean of something else, is not a variance.
// CHECK-LABEL: func.func @cube_is_not_variance
// CHECK-NOT: nn.layer_norm
func.func @cube_is_not_variance(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %mean = nn.reduce_mean %x axes = [-1] : tensor<2x4xf32> -> tensor<2x1xf32>
  %d = nn.sub %x, %mean : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %three = nn.constant dense<3.0> : tensor<f32>
  %sq = nn.pow %d, %three : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %var = nn.reduce_mean %sq axes = [-1] : tensor<2x4xf32> -> tensor<2x1xf32>
  %eps = nn.constant dense<1.0e-5> : tensor<f32>
  %ve = nn.add %var, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %std = nn.sqrt %ve : tensor<2x1xf32>
  %n = nn.div %d, %std : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %s = nn.mul %n, %g : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %y = nn.add %s, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// A scale that broadcasts the output beyond the input's shape is no layer
// norm scale.
// CHECK-LABEL: func.func @scale_broadcasts
// CHECK-NOT: nn.layer_norm
func.func @scale_broadcasts(%x: tensor<2x4xf32>, %g: tensor<3x1x4xf32>) -> tensor<3x2x4xf32> {
  %mean = nn.reduce_mean %x axes = [-1] : tensor<2x4xf32> -> tensor<2x1xf32>
  %d = nn.sub %x, %mean : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %sq = nn.pow %d, %two : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %var = nn.reduce_mean %sq axes = [-1] : tensor<2x4xf32> -> tensor<2x1xf32>
  %eps = nn.constant dense<1.0e-5> : tensor<f32>
  %ve = nn.add %var, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %std = nn.sqrt %ve : tensor<2x1xf32>
  %n = nn.div %d, %std : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %s = nn.mul %n, %g : tensor<2x4xf32>, tensor<3x1x4xf32> -> tensor<3x2x4xf32>
  return %s : tensor<3x2x4xf32>
}

// -----

// Without a bias, followed by a residual connection: the add is not a bias
// (its other operand has the input's shape), so the norm still fuses.
// CHECK-LABEL: func.func @no_bias_then_residual
// CHECK: %[[N:.*]] = nn.layer_norm %{{.*}}, %{{.*}} axis = 1 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK: nn.add %[[N]], %{{.*}} : tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-NOT: nn.reduce_mean
func.func @no_bias_then_residual(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %r: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %mean = nn.reduce_mean %x axes = [-1] : tensor<2x4xf32> -> tensor<2x1xf32>
  %d = nn.sub %x, %mean : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %sq = nn.pow %d, %two : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %var = nn.reduce_mean %sq axes = [-1] : tensor<2x4xf32> -> tensor<2x1xf32>
  %eps = nn.constant dense<1.0e-5> : tensor<f32>
  %ve = nn.add %var, %eps : tensor<2x1xf32>, tensor<f32> -> tensor<2x1xf32>
  %std = nn.sqrt %ve : tensor<2x1xf32>
  %n = nn.div %d, %std : tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x4xf32>
  %s = nn.mul %n, %g : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %y = nn.add %s, %r : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
