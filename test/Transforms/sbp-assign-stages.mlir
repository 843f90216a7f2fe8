// RUN: parplan-opt %s -sbp-assign="cluster=aws-p3-5node training=true" | FileCheck %s

// Four stages on alike meshes (one 4-GPU host each): the search for the
// price of memory sees their alike layers as one, and the plan is refined
// stage by stage. The middle stage @s1 takes its own layout (row-parallel,
// the input arriving split from @s0); @s2 and @s3 lay out alike and each
// stage's figures are its own, equal for the alike @s2 and @s3.
// CHECK-LABEL: module attributes {sbp.plan = {
// CHECK-SAME: search_nodes = 14
// CHECK-SAME: mesh = @s1
// CHECK-SAME: {backward_time = [[BACKWARD:[^ ]+]] : f64, bubble_time = [[BUBBLE:[^ ]+]] : f64, busy_time = [[BUSY:[^ ]+]] : f64, forward_time = [[FORWARD:[^ ]+]] : f64, memory_bytes = {{[0-9]+}} : i64, mesh = @s2
// CHECK-SAME: {backward_time = [[BACKWARD]] : f64, bubble_time = [[BUBBLE]] : f64, busy_time = [[BUSY]] : f64, forward_time = [[FORWARD]] : f64, memory_bytes = {{[0-9]+}} : i64, mesh = @s3
// CHECK: nn.matmul {{.*}}#sbp.sharding<@s0, {{\[}}[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<1>]] -> {{\[}}[#sbp.b, #sbp.s<1>]]>
// CHECK: nn.matmul {{.*}}#sbp.sharding<@s1, {{\[}}[#sbp.b, #sbp.s<1>], [#sbp.b, #sbp.s<0>]] -> {{\[}}[#sbp.b, #sbp.p<sum>]]>
// CHECK: nn.matmul {{.*}}#sbp.sharding<@s2, {{\[}}[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<1>]] -> {{\[}}[#sbp.b, #sbp.s<1>]]>
// CHECK: nn.matmul {{.*}}#sbp.sharding<@s3, {{\[}}[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<1>]] -> {{\[}}[#sbp.b, #sbp.s<1>]]>
sbp.mesh @s0(shape = 1x4, devices = [0, 1, 2, 3])
sbp.mesh @s1(shape = 1x4, devices = [4, 5, 6, 7])
sbp.mesh @s2(shape = 1x4, devices = [8, 9, 10, 11])
sbp.mesh @s3(shape = 1x4, devices = [12, 13, 14, 15])
func.func @main() -> tensor<64x1024xf32> {
  %x = nn.input "x" {sbp.stage = @s0} : tensor<64x1024xf32>
  %w0 = nn.param "w0" {sbp.stage = @s0} : tensor<1024x1024xf32>
  %y0 = nn.matmul %x, %w0 {sbp.stage = @s0} : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %t0 = nn.tanh %y0 {sbp.stage = @s0} : tensor<64x1024xf32>
  %w1 = nn.param "w1" {sbp.stage = @s1} : tensor<1024x1024xf32>
  %y1 = nn.matmul %t0, %w1 {sbp.stage = @s1} : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %t1 = nn.tanh %y1 {sbp.stage = @s1} : tensor<64x1024xf32>
  %w2 = nn.param "w2" {sbp.stage = @s2} : tensor<1024x1024xf32>
  %y2 = nn.matmul %t1, %w2 {sbp.stage = @s2} : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %t2 = nn.tanh %y2 {sbp.stage = @s2} : tensor<64x1024xf32>
  %w3 = nn.param "w3" {sbp.stage = @s3} : tensor<1024x1024xf32>
  %y3 = nn.matmul %t2, %w3 {sbp.stage = @s3} : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %t3 = nn.tanh %y3 {sbp.stage = @s3} : tensor<64x1024xf32>
  return %t3 : tensor<64x1024xf32>
}

