// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=mixed-t4-a100" -sbp-assign="mesh=24 shares=speed" | FileCheck %s --check-prefix=SPEED
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=mixed-t4-a100" -sbp-assign="mesh=24 shares=even" | FileCheck %s --check-prefix=EVEN
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=whale-v100-p100" -sbp-assign="mesh=4x8 shares=speed mixed-precision=false" | FileCheck %s --check-prefix=NODES
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=mixed-a100-v100" -sbp-assign="mixed-precision=false" | FileCheck %s --check-prefix=GROUPS
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=mixed-a100-v100" -sbp-assign="mesh=4x8 mixed-precision=false" | FileCheck %s --check-prefix=GIVEN
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=mixed-a100-v100" -sbp-assign="shares=even mixed-precision=false" | FileCheck %s --check-prefix=GIVEN
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=a100-4node" -sbp-assign="mesh=24 shares=speed" | FileCheck %s --check-prefix=ALIKE
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=a100-4node" -sbp-assign="mesh=8 shares=speed" | FileCheck %s --check-prefix=ALIKE-DIVIDES

// Whole rows by speed on mixed-t4-a100 laid out as one axis of 24 devices
// (an A100 node of 8, four T4 nodes of 4): each device is a position. The
// rows go where they end soonest: an A100 runs these products 4.8 times as
// fast as a T4, so 12 to each A100 and 2 to each T4 (the A100s last, at 12
// rows' time). Rounding the largest remainders gave 11 to each A100 and 3
// to half the T4s, the slowest then a fifth later.
// SPEED: sbp.mesh @mesh(shape = 24, shares = {{\[\[}}12, 12, 12, 12, 12, 12, 12, 12, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]])

// The 128 rows do not divide by the 24 positions, but a split by the
// shares cuts the 65536 rows times sequence after the reshape in the same
// proportion: each device keeps its elements, and the batch stays split.
// SPEED: nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.s<0>]]>}
// SPEED: nn.reshape {{.*}}sbp.sharding = #sbp.sharding<@mesh, {{\[}}[#sbp.s<0>]] -> {{\[}}[#sbp.s<0>]]>

// Even parts of 128 rows by 24 (6 and 5) and of 65536 (2731 and 2730)
// are not the same elements: the reshape cannot carry the split.
// EVEN: sbp.mesh @mesh(shape = 24)
// EVEN-NOT: nn.reshape {{.*}}#sbp.s<0>]] -> {{\[}}[#sbp.s<0>
// EVEN: return

// Devices alike (a100-4node's A100s): the 128 rows do not divide by 24
// devices, which take near-even whole rows, 6 on the first 8 and 5 on
// the rest; 8 devices, which divide them, take even parts.
// ALIKE: sbp.mesh @mesh(shape = 24, shares = {{\[\[}}6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5]])
// ALIKE-DIVIDES: sbp.mesh @mesh(shape = 8){{$}}
func.func @main() -> tensor<65536x1024xf32> {
  %x = nn.input "x" : tensor<128x512x1024xf32>
  %w1 = nn.param "w1" : tensor<1024x1024xf32>
  %w2 = nn.param "w2" : tensor<1024x1024xf32>
  %h = nn.matmul %x, %w1 : tensor<128x512x1024xf32>, tensor<1024x1024xf32> -> tensor<128x512x1024xf32>
  %r = nn.reshape %h : tensor<128x512x1024xf32> -> tensor<65536x1024xf32>
  %y = nn.matmul %r, %w2 : tensor<65536x1024xf32>, tensor<1024x1024xf32> -> tensor<65536x1024xf32>
  %s = nn.relu %y : tensor<65536x1024xf32>
  return %s : tensor<65536x1024xf32>
}

// -----

// Fewer rows than positions: 2 rows cannot give each of 24 positions one,
// so the mesh keeps even parts.
// SPEED: sbp.mesh @mesh(shape = 24)
// SPEED-NEXT: func.func @main() -> tensor<2x1024xf32>
func.func @main() -> tensor<2x1024xf32> {
  %x = nn.input "x" : tensor<2x1024xf32>
  %w = nn.param "w" : tensor<1024x1024xf32>
  %y = nn.matmul %x, %w : tensor<2x1024xf32>, tensor<1024x1024xf32> -> tensor<2x1024xf32>
  return %y : tensor<2x1024xf32>
}

// -----

// On whale-v100-p100 as 4x8 (a node per position, 8 devices each) the
// rows go by whole rows per device: of 256, 80 to each V100 node and 48 to
// each P100 node, 10 and 6 per device. Whole rows per node gave 79 and 49:
// some P100s then held 7 rows, the step waiting for them.
// NODES: sbp.mesh @mesh(shape = 4x8, shares = {{\[\[}}80, 80, 48, 48], []])
// NODES-NEXT: func.func @main() -> tensor<256x1024xf32>
func.func @main() -> tensor<256x1024xf32> {
  %x = nn.input "x" : tensor<256x1024xf32>
  %w = nn.param "w" : tensor<1024x1024xf32>
  %y = nn.matmul %x, %w : tensor<256x1024xf32>, tensor<1024x1024xf32> -> tensor<256x1024xf32>
  return %y : tensor<256x1024xf32>
}

// -----

// 64 rows on mixed-a100-v100's default mesh (4x8: an A100 node and a V100
// node twice), the A100s 1.29 times as fast: the ideal 2.25 : 1.75 rows
// per device are no whole rows per device, and by node in units of 8 rows
// they come out even. The mesh not given is regrouped: 8x4, each group of
// 4 devices of a node taking 9 or 7 rows (speedGroupedMeshes), exactly in
// proportion, and the product's columns split inside each group. Whole
// nodes (18 : 14 rows) are as exact and laid out too; they tie, and the
// fewer devices a group are kept.
// GROUPS-LABEL: start = "auto (parts by speed in groups of 4)"
// GROUPS-SAME: "auto (parts by speed in groups of 8)" =
// GROUPS: sbp.mesh @mesh(shape = 8x4, shares = {{\[\[}}9, 9, 9, 9, 7, 7, 7, 7], []])
// GROUPS: nn.matmul {{.*}}#sbp.sharding<@mesh, {{\[}}[#sbp.b, #sbp.b], [#sbp.s<1>, #sbp.s<1>]] -> {{\[}}[#sbp.s<2>, #sbp.s<2>]]>
// A mesh given (mesh=4x8), or even shares asked for, is kept as it is.
// GIVEN: func.func @main() -> tensor<256x1024xf32>
// GIVEN: start = "auto",
// GIVEN: sbp.mesh @mesh(shape = 4x8)
// GIVEN-NEXT: func.func @main() -> tensor<64x512x1024xf32>
func.func @main() -> tensor<64x512x1024xf32> {
  %x = nn.input "x" : tensor<64x512x1024xf32>
  %w = nn.param "w" : tensor<1024x1024xf32>
  %y = nn.matmul %x, %w : tensor<64x512x1024xf32>, tensor<1024x1024xf32> -> tensor<64x512x1024xf32>
  %s = nn.relu %y : tensor<64x512x1024xf32>
  return %s : tensor<64x512x1024xf32>
}
