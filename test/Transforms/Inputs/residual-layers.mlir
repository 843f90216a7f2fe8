// Two residual layers of two halves each (a transformer's attention and
// MLP): after a half's add only its sum is live, as between layers
// (place-stages-even.mlir, INSIDE).
module {
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    %a0w = nn.param "h.0.attn.weight" : tensor<4x4xf32>
    %m0w = nn.param "h.0.mlp.weight" : tensor<4x4xf32>
    %a1w = nn.param "h.1.attn.weight" : tensor<4x4xf32>
    %m1w = nn.param "h.1.mlp.weight" : tensor<4x4xf32>
    %a0 = nn.matmul %x, %a0w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.0/attn/MatMul")
    %x0 = nn.add %x, %a0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.0/Add")
    %m0 = nn.matmul %x0, %m0w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.0/mlp/MatMul")
    %y0 = nn.add %x0, %m0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.0/Add_1")
    %a1 = nn.matmul %y0, %a1w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.1/attn/MatMul")
    %x1 = nn.add %y0, %a1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.1/Add")
    %m1 = nn.matmul %x1, %m1w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.1/mlp/MatMul")
    %y1 = nn.add %x1, %m1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.1/Add_1")
    return %y1 : tensor<4x4xf32>
  }
}
