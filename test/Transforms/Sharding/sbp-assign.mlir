// RUN: parplan-opt %s -split-input-file -attach-cluster -sbp-assign="mesh=1x4" | FileCheck %s
// RUN: parplan-opt %s -split-input-file -attach-cluster -sbp-assign="mesh=1x4 share-layers=false" | FileCheck %s --check-prefix=APART

// Large weights, a small batch: splitting the weights (column, then row)
// moves two small activations; replicating them would all-reduce 537M
// gradients. The activation between the matmuls stays split: no boxing.
// CHECK-LABEL: module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h100">, sbp.plan = #sbp.layout_plan<
// CHECK: sbp.mesh @mesh(shape = 1x4)
// CHECK: nn.param "w1" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.s<1>]]>}
// CHECK: nn.param "w2" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.s<0>]]>}
// CHECK: nn.matmul {{.*}}sbp.sharding = #sbp.sharding<@mesh, {{\[}}[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<1>]] -> {{\[}}[#sbp.b, #sbp.s<1>]]>
// CHECK: nn.gelu {{.*}}sbp.sharding = #sbp.sharding<@mesh, {{\[}}[#sbp.b, #sbp.s<1>]] -> {{\[}}[#sbp.b, #sbp.s<1>]]>
// CHECK: nn.matmul {{.*}}sbp.sharding = #sbp.sharding<@mesh, {{\[}}[#sbp.b, #sbp.s<1>], [#sbp.b, #sbp.s<0>]] -> {{\[}}[#sbp.b, #sbp.p<sum>]]>
func.func @main() -> tensor<16x8192xf32> {
  %x = nn.input "x" : tensor<16x8192xf32>
  %w1 = nn.param "w1" : tensor<8192x32768xf32>
  %w2 = nn.param "w2" : tensor<32768x8192xf32>
  %h = nn.matmul %x, %w1 : tensor<16x8192xf32>, tensor<8192x32768xf32> -> tensor<16x32768xf32>
  %g = nn.gelu %h : tensor<16x32768xf32>
  %y = nn.matmul %g, %w2 : tensor<16x32768xf32>, tensor<32768x8192xf32> -> tensor<16x8192xf32>
  return %y : tensor<16x8192xf32>
}

// -----

// A large batch through small weights: data parallelism. The batch is
// split, the weights replicated; splitting the weights instead would
// gather a large activation between the layers.
// CHECK-LABEL: module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h100">, sbp.plan = #sbp.layout_plan<
// CHECK: nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.s<0>]]>}
// CHECK: nn.param "w1" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.b]]>}
// CHECK: nn.param "w2" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.b]]>}
// CHECK: nn.matmul {{.*}}#sbp.sharding<@mesh, {{\[}}[#sbp.b, #sbp.s<0>], [#sbp.b, #sbp.b]] -> {{\[}}[#sbp.b, #sbp.s<0>]]>
// CHECK: return {{.*}}sbp.sharding = #sbp.sharding<@mesh, {{\[}}[#sbp.b, #sbp.s<0>]] -> []>
func.func @main() -> tensor<65536x256xf32> {
  %x = nn.input "x" : tensor<65536x256xf32>
  %w1 = nn.param "w1" : tensor<256x256xf32>
  %w2 = nn.param "w2" : tensor<256x256xf32>
  %h = nn.matmul %x, %w1 : tensor<65536x256xf32>, tensor<256x256xf32> -> tensor<65536x256xf32>
  %r = nn.relu %h : tensor<65536x256xf32>
  %y = nn.matmul %r, %w2 : tensor<65536x256xf32>, tensor<256x256xf32> -> tensor<65536x256xf32>
  %s = nn.relu %y : tensor<65536x256xf32>
  return %s : tensor<65536x256xf32>
}

// -----

// A returned value is never Partial: the contraction split of the last
// matmul must be reduced before it leaves.
// CHECK-LABEL: module attributes
// CHECK: return {{.*}}sbp.sharding = #sbp.sharding<@mesh, {{\[}}[#sbp.b, #sbp.{{b|s<0>|s<1>}}]] -> []>
func.func @main() -> tensor<4x4xf32> {
  %x = nn.input "x" : tensor<4x65536xf32>
  %w = nn.param "w" : tensor<65536x4xf32>
  %y = nn.matmul %x, %w : tensor<4x65536xf32>, tensor<65536x4xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Identical layers share one decision: six residual blocks are searched as
// the blocks near the ends plus one class for the middle ones.
// CHECK-LABEL: module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h100">, sbp.plan = #sbp.layout_plan<
// CHECK-SAME: search_nodes = 21
// Kept apart, every op and the returned value is a node of its own.
// APART: search_nodes = 26
func.func @main() -> tensor<64x1024xf32> {
  %x = nn.input "x" : tensor<64x1024xf32>
  %w0 = nn.param "w0" : tensor<1024x1024xf32>
  %w1 = nn.param "w1" : tensor<1024x1024xf32>
  %w2 = nn.param "w2" : tensor<1024x1024xf32>
  %w3 = nn.param "w3" : tensor<1024x1024xf32>
  %w4 = nn.param "w4" : tensor<1024x1024xf32>
  %w5 = nn.param "w5" : tensor<1024x1024xf32>
  %m0 = nn.matmul %x, %w0 : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %r0 = nn.relu %m0 : tensor<64x1024xf32>
  %a0 = nn.add %x, %r0 : tensor<64x1024xf32>, tensor<64x1024xf32> -> tensor<64x1024xf32>
  %m1 = nn.matmul %a0, %w1 : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %r1 = nn.relu %m1 : tensor<64x1024xf32>
  %a1 = nn.add %a0, %r1 : tensor<64x1024xf32>, tensor<64x1024xf32> -> tensor<64x1024xf32>
  %m2 = nn.matmul %a1, %w2 : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %r2 = nn.relu %m2 : tensor<64x1024xf32>
  %a2 = nn.add %a1, %r2 : tensor<64x1024xf32>, tensor<64x1024xf32> -> tensor<64x1024xf32>
  %m3 = nn.matmul %a2, %w3 : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %r3 = nn.relu %m3 : tensor<64x1024xf32>
  %a3 = nn.add %a2, %r3 : tensor<64x1024xf32>, tensor<64x1024xf32> -> tensor<64x1024xf32>
  %m4 = nn.matmul %a3, %w4 : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %r4 = nn.relu %m4 : tensor<64x1024xf32>
  %a4 = nn.add %a3, %r4 : tensor<64x1024xf32>, tensor<64x1024xf32> -> tensor<64x1024xf32>
  %m5 = nn.matmul %a4, %w5 : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
  %r5 = nn.relu %m5 : tensor<64x1024xf32>
  %a5 = nn.add %a4, %r5 : tensor<64x1024xf32>, tensor<64x1024xf32> -> tensor<64x1024xf32>
  return %a5 : tensor<64x1024xf32>
}

// -----

// Ops placed on stages (place-stages) are laid out on their stage's mesh:
// each sharding names it, and no @mesh is added. The use across stages is
// priced as a cross-mesh move, not a boxing.
// CHECK-LABEL: module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h100">, sbp.plan = #sbp.layout_plan<
// CHECK-NOT: sbp.mesh @mesh
// CHECK: nn.input "x" {sbp.sharding = #sbp.sharding<@a,
// CHECK: nn.param "w" {sbp.sharding = #sbp.sharding<@a,
// CHECK: nn.matmul {{.*}}sbp.sharding = #sbp.sharding<@a,
// CHECK: nn.tanh {{.*}}sbp.sharding = #sbp.sharding<@b,
// CHECK: return {sbp.sharding = #sbp.sharding<@a,
// CHECK-NOT: sbp.stage
sbp.mesh @a(shape = 1x4, devices = [0, 1, 2, 3])
sbp.mesh @b(shape = 1x4, devices = [4, 5, 6, 7])
func.func @main() -> tensor<64x256xf32> {
  %x = nn.input "x" {sbp.stage = @a} : tensor<64x128xf32>
  %w = nn.param "w" {sbp.stage = @a} : tensor<128x256xf32>
  %y = nn.matmul %x, %w {sbp.stage = @a} : tensor<64x128xf32>, tensor<128x256xf32> -> tensor<64x256xf32>
  %t = nn.tanh %y {sbp.stage = @b} : tensor<64x256xf32>
  return %t : tensor<64x256xf32>
}
