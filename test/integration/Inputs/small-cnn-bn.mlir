// A small CNN with batch norms and dropout for the plan equivalence test:
// two convolutions, each followed by a batch norm trained on the batch's
// statistics (synchronized over a split batch) and ReLU, then pooling,
// dropout (masks by logical element index, so any layout drops the same
// elements) and a linear classifier. The running statistics are updated
// every step.
func.func @main() -> tensor<8x10xf32> {
  %x = nn.input "image" : tensor<8x3x8x8xf32>
  %w1 = nn.param "conv1.weight" : tensor<8x3x3x3xf32>
  %s1 = nn.param "bn1.weight" : tensor<8xf32>
  %b1 = nn.param "bn1.bias" : tensor<8xf32>
  %m1 = nn.param "bn1.running_mean" : tensor<8xf32>
  %v1 = nn.param "bn1.running_var" : tensor<8xf32>
  %w2 = nn.param "conv2.weight" : tensor<16x8x3x3xf32>
  %s2 = nn.param "bn2.weight" : tensor<16xf32>
  %b2 = nn.param "bn2.bias" : tensor<16xf32>
  %m2 = nn.param "bn2.running_mean" : tensor<16xf32>
  %v2 = nn.param "bn2.running_var" : tensor<16xf32>
  %fc = nn.param "fc.weight" : tensor<10x64xf32>
  %fb = nn.param "fc.bias" : tensor<10xf32>
  %c1 = nn.conv %x, %w1 strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<8x3x8x8xf32>, tensor<8x3x3x3xf32> -> tensor<8x8x8x8xf32>
  %n1 = nn.batch_norm %c1, %s1, %b1, %m1, %v1 : tensor<8x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8x8x8x8xf32>
  %r1 = nn.relu %n1 : tensor<8x8x8x8xf32>
  %p1 = nn.max_pool %r1 kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<8x8x8x8xf32> -> tensor<8x8x4x4xf32>
  %c2 = nn.conv %p1, %w2 strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<8x8x4x4xf32>, tensor<16x8x3x3xf32> -> tensor<8x16x4x4xf32>
  %n2 = nn.batch_norm %c2, %s2, %b2, %m2, %v2 momentum = 0.8 : tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16x4x4xf32>
  %r2 = nn.relu %n2 : tensor<8x16x4x4xf32>
  %p2 = nn.avg_pool %r2 kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<8x16x4x4xf32> -> tensor<8x16x2x2xf32>
  %f = nn.reshape %p2 : tensor<8x16x2x2xf32> -> tensor<8x64xf32>
  %d = nn.dropout %f ratio = 0.25 : tensor<8x64xf32>
  %y = nn.gemm %d, %fc, %fb {trans_b = true} : tensor<8x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}
