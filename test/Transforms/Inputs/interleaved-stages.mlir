// Two stages of two model chunks each (place-stages stages=2 chunks=2):
// a micro-batch goes @a, @b, @a, @b (sbp-assign-stages.mlir).
module attributes {nn.training = {micro_batches = 2 : i64}, sbp.chunks = 2 : i64} {
sbp.mesh @a(shape = 1, devices = [0])
sbp.mesh @b(shape = 1, devices = [4])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.chunk = 0 : i64, sbp.stage = @a} : tensor<8x64xf32>
  %h = nn.mul %x, %x {sbp.chunk = 0 : i64, sbp.stage = @a} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %h2 = nn.mul %h, %h {sbp.chunk = 0 : i64, sbp.stage = @b} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %h3 = nn.mul %h2, %h2 {sbp.chunk = 1 : i64, sbp.stage = @a} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %l = nn.reduce_mean %h3 axes = [0, 1] keepdims = false {sbp.chunk = 1 : i64, sbp.stage = @b} : tensor<8x64xf32> -> tensor<f32>
  %ls = nn.accumulate %l {sbp.chunk = 1 : i64, sbp.stage = @b} : tensor<f32>
  return %ls : tensor<f32>
}
}
