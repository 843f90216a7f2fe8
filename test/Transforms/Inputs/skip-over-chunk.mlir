// Four layers, the third reading the first's output directly
// (place-stages-even-errors.mlir): on two stages of two chunks, both are
// on stage 0, in chunks 0 and 1.
module {
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    %w1 = nn.param "fc1.weight" : tensor<4x4xf32>
    %w2 = nn.param "fc2.weight" : tensor<4x4xf32>
    %w3 = nn.param "fc3.weight" : tensor<4x4xf32>
    %w4 = nn.param "fc4.weight" : tensor<4x4xf32>
    %1 = nn.matmul %x, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc1/MatMul")
    %2 = nn.matmul %1, %w2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc2/MatMul")
    %3 = nn.matmul %1, %w3 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc3/MatMul")
    %s = nn.add %2, %3 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/Add")
    %4 = nn.matmul %s, %w4 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc4/MatMul")
    return %4 : tensor<4x4xf32>
  }
}
