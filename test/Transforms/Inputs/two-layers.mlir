// Two layers (place-stages-even-errors.mlir).
module {
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    %w1 = nn.param "fc1.weight" : tensor<4x4xf32>
    %w2 = nn.param "fc2.weight" : tensor<4x4xf32>
    %1 = nn.matmul %x, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc1/MatMul")
    %2 = nn.matmul %1, %w2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc2/MatMul")
    return %2 : tensor<4x4xf32>
  }
}
