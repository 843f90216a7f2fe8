// A small CNN for the plan equivalence test: two convolutions with ReLU and
// max pooling, then a linear classifier.
func.func @main() -> tensor<8x10xf32> {
  %x = nn.input "image" : tensor<8x3x8x8xf32>
  %w1 = nn.param "conv1.weight" : tensor<8x3x3x3xf32>
  %b1 = nn.param "conv1.bias" : tensor<8xf32>
  %w2 = nn.param "conv2.weight" : tensor<16x8x3x3xf32>
  %fc = nn.param "fc.weight" : tensor<10x64xf32>
  %fb = nn.param "fc.bias" : tensor<10xf32>
  %c1 = nn.conv %x, %w1, %b1 strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<8x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xf32> -> tensor<8x8x8x8xf32>
  %r1 = nn.relu %c1 : tensor<8x8x8x8xf32>
  %p1 = nn.max_pool %r1 kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<8x8x8x8xf32> -> tensor<8x8x4x4xf32>
  %c2 = nn.conv %p1, %w2 strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<8x8x4x4xf32>, tensor<16x8x3x3xf32> -> tensor<8x16x4x4xf32>
  %r2 = nn.relu %c2 : tensor<8x16x4x4xf32>
  %p2 = nn.avg_pool %r2 kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<8x16x4x4xf32> -> tensor<8x16x2x2xf32>
  %f = nn.reshape %p2 : tensor<8x16x2x2xf32> -> tensor<8x64xf32>
  %y = nn.gemm %f, %fc, %fb {trans_b = true} : tensor<8x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}
