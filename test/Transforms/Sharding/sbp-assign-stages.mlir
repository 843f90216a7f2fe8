// RUN: parplan-opt %s -attach-cluster="cluster=aws-p3-5node" -sbp-assign="training=true" | FileCheck %s
// RUN: parplan-opt %S/../Inputs/interleaved-stages.mlir -attach-cluster="cluster=aws-p3-5node" -sbp-assign="schedule=interleaved" | FileCheck %s --check-prefix=INTERLEAVED
// RUN: not parplan-opt %S/../Inputs/interleaved-stages.mlir -attach-cluster="cluster=aws-p3-5node" -sbp-assign="schedule=1f1b" 2>&1 | FileCheck %s --check-prefix=CHUNKS-1F1B
// RUN: sed 's/micro_batches = 2/micro_batches = 3/' %S/../Inputs/interleaved-stages.mlir | not parplan-opt -attach-cluster="cluster=aws-p3-5node" -sbp-assign="schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=CHUNKS-ROUNDS
// RUN: not parplan-opt %s -attach-cluster="cluster=aws-p3-5node" -sbp-assign="training=true schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=NO-CHUNKS
// RUN: parplan-opt %S/../Inputs/mixed-stages.mlir -attach-cluster="cluster=whale-v100-p100" -sbp-assign="training=true" | FileCheck %s --check-prefix=MIXED
// RUN: parplan-opt %S/../Inputs/mixed-stages.mlir -attach-cluster="cluster=whale-v100-p100" -sbp-assign="training=true" | grep -o 'mesh = @[vp], forward_time = [^,]*' | awk '{ t[$3] = $6 } END { printf "P100 stage / V100 stage = %%s\n", (t["@p,"] / t["@v,"] > 1.5 ? "slower" : "as fast") }' | FileCheck %s --check-prefix=MIXED-RATIO

// Each stage priced by its own devices (its cost model: their types,
// memory and links): the same layer on a node of P100s (fp32 9.3 TFLOP/s,
// PCIe) takes over 1.5 times what it takes on a node of V100s (15.7,
// NVLink), and the two stages, on devices of different types, are not
// one kind whose layers the search shares.
// MIXED: #sbp.stage_figures<mesh = @v, forward_time = [[V:[^,]+]],
// MIXED-NOT: forward_time = [[V]],
// MIXED: #sbp.stage_figures<mesh = @p,
// MIXED-RATIO: P100 stage / V100 stage = slower

// Stages of two model chunks run by the interleaved schedule: a
// micro-batch goes @a, @b, @a, @b, and each boundary it crosses (the two
// from @a to @b and the one back) carries its activation. @a's sends to
// the next stage are its chunks' average, @b's none (it is the last).
// INTERLEAVED: sbp.plan = #sbp.layout_plan<
// INTERLEAVED-SAME: #sbp.stage_figures<mesh = @a, forward_time = {{[^,]+}}, backward_time = {{[^,]+}}, update_time = {{[^,]+}}, send_forward_time = {{[1-9][0-9.]*[eE]-[0-9]+}},
// INTERLEAVED-SAME: #sbp.stage_figures<mesh = @b, forward_time = {{[^,]+}}, backward_time = {{[^,]+}}, update_time = {{[^,]+}}, send_forward_time = 0.000000e+00, send_backward_time = 0.000000e+00,
// INTERLEAVED-SAME: schedule = "interleaved"
// CHUNKS-1F1B: error: sbp-assign: schedule '1f1b' runs stages of one model chunk, but they hold 2: use interleaved (sbp.chunks)
// CHUNKS-ROUNDS: error: sbp-assign: interleaved schedule: 3 micro-batches are not a multiple of the 2 stages
// NO-CHUNKS: error: sbp-assign: schedule 'interleaved' needs stages of several model chunks (sbp.chunks)

// Four stages on alike meshes (one 4-GPU host each): the search for the
// price of memory sees their alike layers as one, and the plan is refined
// stage by stage: every stage keeps the column-parallel layout (a
// row-parallel @s1, taking its input split from @s0, would sum partial
// results), and each stage's figures are its own, equal for the alike @s2
// and @s3.
// CHECK-LABEL: module attributes {sbp.cluster = #sbp.cluster<preset = "aws-p3-5node">, sbp.plan = #sbp.layout_plan<
// CHECK-SAME: mesh = @s1
// CHECK-SAME: #sbp.stage_figures<mesh = @s2, forward_time = [[FORWARD:[^,]+]], backward_time = [[BACKWARD:[^,]+]], update_time = {{[^,]+}}, send_forward_time = {{[^,]+}}, send_backward_time = {{[^,]+}}, busy_time = [[BUSY:[^,]+]], bubble_time = [[BUBBLE:[^,]+]], memory_bytes = {{[0-9]+}}
// CHECK-SAME: #sbp.stage_figures<mesh = @s3, forward_time = [[FORWARD]], backward_time = [[BACKWARD]], update_time = {{[^,]+}}, send_forward_time = {{[^,]+}}, send_backward_time = {{[^,]+}}, busy_time = [[BUSY]], bubble_time = [[BUBBLE]], memory_bytes = {{[0-9]+}}
// CHECK-SAME: search_nodes = 14
// CHECK: nn.matmul {{.*}}#sbp.sharding<@s0, {{\[}}[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<1>]] -> {{\[}}[#sbp.b, #sbp.s<1>]]>
// CHECK: nn.matmul {{.*}}#sbp.sharding<@s1, {{\[}}[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<1>]] -> {{\[}}[#sbp.b, #sbp.s<1>]]>
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

