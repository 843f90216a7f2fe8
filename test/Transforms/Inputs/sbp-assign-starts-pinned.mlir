// sbp-assign-starts.mlir's products with w1 pinned whole, which Megatron's
// column-parallel split of it contradicts.
module attributes {sbp.annotations = {file = "pins.yaml", text = "pins:\n  - node: w1\n    results: [\"[B, B]\"]\n"}} {
  func.func @main() -> tensor<16x8192xf32> {
    %x = nn.input "x" : tensor<16x8192xf32>
    %w1 = nn.param "w1" : tensor<8192x32768xf32>
    %w2 = nn.param "w2" : tensor<32768x8192xf32>
    %h = nn.matmul %x, %w1 : tensor<16x8192xf32>, tensor<8192x32768xf32> -> tensor<16x32768xf32>
    %g = nn.gelu %h : tensor<16x32768xf32>
    %y = nn.matmul %g, %w2 : tensor<16x32768xf32>, tensor<32768x8192xf32> -> tensor<16x8192xf32>
    return %y : tensor<16x8192xf32>
  }
}
