// gathered-update.mlir's step on one device (plan-equivalence.sh).
module attributes {nn.training = {}} {
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" : tensor<4xf32>
    %g = nn.exp %w : tensor<4xf32>
    %l = nn.reduce_sum %g keepdims = false : tensor<4xf32> -> tensor<f32>
    %w1 = nn.sgd_update %w, %g lr = 1.0e-1 : tensor<4xf32>
    return %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}
