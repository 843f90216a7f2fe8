// Two stages of the same layer, one on a node of V100s and one on a node
// of P100s of whale-v100-p100 (sbp-assign-stages.mlir, MIXED).
sbp.mesh @v(shape = 1x8, devices = [0, 1, 2, 3, 4, 5, 6, 7])
sbp.mesh @p(shape = 1x8, devices = [16, 17, 18, 19, 20, 21, 22, 23])
func.func @main() -> tensor<64x4096xf32> {
  %x = nn.input "x" {sbp.stage = @v} : tensor<64x4096xf32>
  %w0 = nn.param "w0" {sbp.stage = @v} : tensor<4096x4096xf32>
  %y0 = nn.matmul %x, %w0 {sbp.stage = @v} : tensor<64x4096xf32>, tensor<4096x4096xf32> -> tensor<64x4096xf32>
  %t0 = nn.tanh %y0 {sbp.stage = @v} : tensor<64x4096xf32>
  %w1 = nn.param "w1" {sbp.stage = @p} : tensor<4096x4096xf32>
  %y1 = nn.matmul %t0, %w1 {sbp.stage = @p} : tensor<64x4096xf32>, tensor<4096x4096xf32> -> tensor<64x4096xf32>
  %t1 = nn.tanh %y1 {sbp.stage = @p} : tensor<64x4096xf32>
  return %t1 : tensor<64x4096xf32>
}
