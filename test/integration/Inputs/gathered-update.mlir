// A replicated parameter stepped in halves on two devices (its optimizer
// state split, as ZeRO's first stage does) and gathered back whole: the
// gather writes the parameter itself (lower-to-plan). plan-equivalence.sh
// runs it against gathered-update-one.mlir, the same step on one device.
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
    %g = nn.exp %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
    %l = nn.reduce_sum %g keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
    %wh = sbp.slice %w on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %gh = sbp.slice %g on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %w1h = nn.sgd_update %wh, %gh lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    %w1 = sbp.all_gather %w1h on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}
