// Stages of two model chunks: lower-to-plan.mlir's CHUNKS cases.
module attributes {nn.training = {micro_batches = 2 : i64}, sbp.chunks = 2 : i64} {
sbp.mesh @a(shape = 1, devices = [0])
sbp.mesh @b(shape = 1, devices = [1])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.chunk = 0 : i64, sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %h = nn.mul %x, %x {sbp.chunk = 0 : i64, sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %hm = sbp.cross_mesh %h from @a [#sbp.b] to @b [#sbp.b] {mode = "send-recv", balancing = "none", sbp.chunk = 0 : i64, sbp.destination_chunk = 0 : i64} : tensor<4xf32>
  %h2 = nn.mul %hm, %hm {sbp.chunk = 0 : i64, sbp.sharding = #sbp.sharding<@b, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %back = sbp.cross_mesh %h2 from @b [#sbp.b] to @a [#sbp.b] {mode = "send-recv", balancing = "none", sbp.chunk = 0 : i64, sbp.destination_chunk = 1 : i64} : tensor<4xf32>
  %h3 = nn.mul %back, %back {sbp.chunk = 1 : i64, sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %on = sbp.cross_mesh %h3 from @a [#sbp.b] to @b [#sbp.b] {mode = "send-recv", balancing = "none", sbp.chunk = 1 : i64, sbp.destination_chunk = 1 : i64} : tensor<4xf32>
  %l = nn.reduce_mean %on axes = [0] keepdims = false {sbp.chunk = 1 : i64, sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
  %ls = nn.accumulate %l {sbp.chunk = 1 : i64, sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<f32>
  return {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> []>} %ls : tensor<f32>
}
}
