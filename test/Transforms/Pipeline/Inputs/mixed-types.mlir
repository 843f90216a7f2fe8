// The moves of insert-cross-mesh.mlir's MIXED case: a partial value on each
// type's node, read on the other's.
sbp.mesh @v100(shape = 8, devices = [0, 1, 2, 3, 4, 5, 6, 7])
sbp.mesh @p100(shape = 8, devices = [16, 17, 18, 19, 20, 21, 22, 23])
func.func @main() -> (tensor<4096x1024xf32>, tensor<4096x1024xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@p100, [] -> [[#sbp.s<1>]]>} : tensor<4096x64xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@p100, [] -> [[#sbp.s<0>]]>} : tensor<64x1024xf32>
  %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@p100, [[#sbp.s<1>], [#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4096x64xf32>, tensor<64x1024xf32> -> tensor<4096x1024xf32>
  %a = nn.relu %y {sbp.sharding = #sbp.sharding<@v100, [[#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<4096x1024xf32>
  %b = nn.relu %y {sbp.sharding = #sbp.sharding<@p100, [[#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<4096x1024xf32>
  return {sbp.sharding = #sbp.sharding<@v100, [[#sbp.p<sum>], [#sbp.p<sum>]] -> []>} %a, %b : tensor<4096x1024xf32>, tensor<4096x1024xf32>
}

// -----

sbp.mesh @v100(shape = 8, devices = [0, 1, 2, 3, 4, 5, 6, 7])
sbp.mesh @p100(shape = 8, devices = [16, 17, 18, 19, 20, 21, 22, 23])
func.func @main() -> (tensor<4096x1024xf32>, tensor<4096x1024xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@v100, [] -> [[#sbp.s<1>]]>} : tensor<4096x64xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@v100, [] -> [[#sbp.s<0>]]>} : tensor<64x1024xf32>
  %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@v100, [[#sbp.s<1>], [#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4096x64xf32>, tensor<64x1024xf32> -> tensor<4096x1024xf32>
  %a = nn.relu %y {sbp.sharding = #sbp.sharding<@p100, [[#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<4096x1024xf32>
  %b = nn.relu %y {sbp.sharding = #sbp.sharding<@v100, [[#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<4096x1024xf32>
  return {sbp.sharding = #sbp.sharding<@p100, [[#sbp.p<sum>], [#sbp.p<sum>]] -> []>} %a, %b : tensor<4096x1024xf32>, tensor<4096x1024xf32>
}

