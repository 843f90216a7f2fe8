// RUN: parplan-opt %s -attach-cluster="cluster=mixed-a100-v100" -sbp-assign="mesh=4x8 shares=speed" | FileCheck %s --check-prefix=SPEED
// RUN: parplan-opt %s -attach-cluster="cluster=mixed-a100-v100" -sbp-assign="mesh=4x8 shares=even" | FileCheck %s --check-prefix=EVEN
// RUN: parplan-opt %s -attach-cluster="cluster=mixed-a100-v100" -sbp-assign="mesh=4x8" | FileCheck %s --check-prefix=AUTO
// RUN: parplan-opt %s -attach-cluster="cluster=mixed-a100-v100" -sbp-assign="mesh=4x8 shares=speed" -insert-boxing -expand-boxing | FileCheck %s --check-prefix=STEPS
// RUN: parplan-opt %s -attach-cluster="cluster=dgx-h100" -sbp-assign="mesh=2x4 shares=speed" | FileCheck %s --check-prefix=ALIKE
// RUN: not parplan-opt %s -attach-cluster="cluster=mixed-a100-v100" -sbp-assign="mesh=4x8 shares=fast" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// Data parallelism on mixed-a100-v100 as 4x8: two nodes of A100s, then two
// of V100s, one node per position of mesh axis 0. With shares=speed each
// node takes a part of the batch by its devices' speed: the 65536 rows as
// two equal A100 parts and two equal, smaller V100 parts (the shares are
// rows, so that the batch splits exactly by them). The starts are labelled.
// SPEED: sbp.plan = #sbp.layout_plan<{{.*}}start = "auto (parts by speed)"
// SPEED-SAME: baselines = {"data-parallel (parts by speed)" =
// SPEED: sbp.mesh @mesh(shape = 4x8, shares = {{\[\[}}[[A100:[0-9]+]], [[A100]], [[V100:[0-9]+]], [[V100]]], []])
// SPEED: nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.s<0>, #sbp.s<0>]]>}

// Even parts: the mesh states no shares.
// EVEN: start = "auto",
// EVEN: sbp.mesh @mesh(shape = 4x8)

// By default both are laid out and the least predicted step kept: here
// the parts by speed, the even plan's starts listed beside it.
// AUTO: start = "auto (parts by speed)", {{.*}}baselines = {auto = {{[^,]*}}, "data-parallel" =
// AUTO: sbp.mesh @mesh(shape = 4x8, shares = {{\[\[}}{{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}], []])

// No step exchanges parts along the axis of uneven shares.
// STEPS: sbp.mesh @mesh(shape = 4x8, shares =
// STEPS-NOT: sbp.all_gather {{.*}} axis 0
// STEPS-NOT: sbp.reduce_scatter {{.*}} axis 0
// STEPS-NOT: sbp.all_to_all {{.*}} axis 0
// STEPS: return

// Devices all alike: nothing to share by speed.
// ALIKE: sbp.mesh @mesh(shape = 2x4)

// UNKNOWN: error: unknown shares 'fast' (expected auto, speed or even)
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
