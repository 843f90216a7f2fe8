// Four layers without numbers (place-stages-even.mlir).
module {
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    %w1 = nn.param "fc1.weight" : tensor<4x4xf32>
    %w2 = nn.param "fc2.weight" : tensor<4x4xf32>
    %w3 = nn.param "fc3.weight" : tensor<4x4xf32>
    %w4 = nn.param "fc4.weight" : tensor<4x4xf32>
    %1 = nn.matmul %x, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc1/MatMul")
    %r = nn.relu %1 : tensor<4x4xf32> loc("/Relu")
    %2 = nn.matmul %r, %w2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc2/MatMul")
    %3 = nn.matmul %2, %w3 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc3/MatMul")
    %4 = nn.matmul %3, %w4 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc4/MatMul")
    return %4 : tensor<4x4xf32>
  }
}
