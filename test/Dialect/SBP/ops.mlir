// RUN: parplan-opt %s -split-input-file | parplan-opt -split-input-file | FileCheck %s

// CHECK: sbp.mesh @node(shape = 2x4)
// CHECK: sbp.mesh @stage1(shape = 2x2, devices = [4, 5, 6, 7])
// CHECK: sbp.mesh @line(shape = 8)
// CHECK: sbp.mesh @mixed(shape = 2x4, shares = {{\[\[}}9, 5], []])
sbp.mesh @node(shape = 2x4)
sbp.mesh @stage1(shape = 2x2, devices = [4, 5, 6, 7])
sbp.mesh @line(shape = 8)
sbp.mesh @mixed(shape = 2x4, shares = [[9, 5], []])

// Along an axis of uneven shares the devices reduce whole values and cut
// their own parts; along the even axis anything goes.
// CHECK-LABEL: func.func @uneven_shares
func.func @uneven_shares(%x: tensor<14x8xf32>) -> tensor<14x8xf32> {
  // CHECK: sbp.slice %{{.*}} on @mixed axis 0 [#sbp.b, #sbp.b] -> [#sbp.s<0>, #sbp.b]
  %0 = sbp.slice %x on @mixed axis 0 [#sbp.b, #sbp.b] -> [#sbp.s<0>, #sbp.b] : tensor<14x8xf32>
  // CHECK: sbp.all_gather %{{.*}} on @mixed axis 1 [#sbp.s<0>, #sbp.s<1>] -> [#sbp.s<0>, #sbp.b]
  %1 = sbp.slice %0 on @mixed axis 1 [#sbp.s<0>, #sbp.b] -> [#sbp.s<0>, #sbp.s<1>] : tensor<14x8xf32>
  %2 = sbp.all_gather %1 on @mixed axis 1 [#sbp.s<0>, #sbp.s<1>] -> [#sbp.s<0>, #sbp.b] : tensor<14x8xf32>
  // CHECK: sbp.to_partial %{{.*}} on @mixed axis 0 [#sbp.s<0>, #sbp.b] -> [#sbp.p<sum>, #sbp.b]
  %3 = sbp.to_partial %2 on @mixed axis 0 [#sbp.s<0>, #sbp.b] -> [#sbp.p<sum>, #sbp.b] : tensor<14x8xf32>
  // CHECK: sbp.all_reduce %{{.*}} on @mixed axis 0 [#sbp.p<sum>, #sbp.b] -> [#sbp.b, #sbp.b]
  %4 = sbp.all_reduce %3 on @mixed axis 0 [#sbp.p<sum>, #sbp.b] -> [#sbp.b, #sbp.b] : tensor<14x8xf32>
  return %4 : tensor<14x8xf32>
}

// CHECK-LABEL: func.func @annotate
func.func @annotate(%x: tensor<8x768xf32>) -> tensor<8x768xf32> {
  // CHECK: sbp.annotate %{{.*}} on @node [#sbp.s<0>, #sbp.b] : tensor<8x768xf32>
  %0 = sbp.annotate %x on @node [#sbp.s<0>, #sbp.b] : tensor<8x768xf32>
  // Two mesh axes may split the same dimension.
  // CHECK: sbp.annotate %{{.*}} on @node [#sbp.s<1>, #sbp.s<1>] : tensor<8x768xf32>
  %1 = sbp.annotate %0 on @node [#sbp.s<1>, #sbp.s<1>] : tensor<8x768xf32>
  // CHECK: sbp.annotate %{{.*}} on @line [#sbp.p<max>] : tensor<8x768xf32>
  %2 = sbp.annotate %1 on @line [#sbp.p<max>] : tensor<8x768xf32>
  return %2 : tensor<8x768xf32>
}

// CHECK-LABEL: func.func @boxing
func.func @boxing(%x: tensor<8x768xf32>) -> tensor<8x768xf32> {
  // CHECK: sbp.boxing %{{.*}} on @node [#sbp.p<sum>, #sbp.s<1>] -> [#sbp.b, #sbp.s<0>] : tensor<8x768xf32>
  %0 = sbp.boxing %x on @node [#sbp.p<sum>, #sbp.s<1>] -> [#sbp.b, #sbp.s<0>] : tensor<8x768xf32>
  // CHECK: sbp.boxing %{{.*}} on @line [#sbp.p<prod>] -> [#sbp.p<min>] : tensor<8x768xf32>
  %1 = sbp.boxing %0 on @line [#sbp.p<prod>] -> [#sbp.p<min>] : tensor<8x768xf32>
  return %1 : tensor<8x768xf32>
}

// Resharding steps: one mesh axis each, the kind stated by the op.
// CHECK-LABEL: func.func @steps
func.func @steps(%x: tensor<8x768xf32>) -> tensor<8x768xf32> {
  // CHECK: sbp.all_gather %{{.*}} on @node axis 1 [#sbp.s<0>, #sbp.s<1>] -> [#sbp.s<0>, #sbp.b] : tensor<8x768xf32>
  %0 = sbp.all_gather %x on @node axis 1 [#sbp.s<0>, #sbp.s<1>] -> [#sbp.s<0>, #sbp.b] : tensor<8x768xf32>
  // CHECK: sbp.slice %{{.*}} on @node axis 1 [#sbp.s<0>, #sbp.b] -> [#sbp.s<0>, #sbp.s<0>] : tensor<8x768xf32>
  %1 = sbp.slice %0 on @node axis 1 [#sbp.s<0>, #sbp.b] -> [#sbp.s<0>, #sbp.s<0>] : tensor<8x768xf32>
  // CHECK: sbp.all_to_all %{{.*}} on @node axis 1 [#sbp.s<0>, #sbp.s<0>] -> [#sbp.s<0>, #sbp.s<1>] : tensor<8x768xf32>
  %2 = sbp.all_to_all %1 on @node axis 1 [#sbp.s<0>, #sbp.s<0>] -> [#sbp.s<0>, #sbp.s<1>] : tensor<8x768xf32>
  // CHECK: sbp.to_partial %{{.*}} on @node axis 0 [#sbp.s<0>, #sbp.s<1>] -> [#sbp.p<sum>, #sbp.s<1>] : tensor<8x768xf32>
  %3 = sbp.to_partial %2 on @node axis 0 [#sbp.s<0>, #sbp.s<1>] -> [#sbp.p<sum>, #sbp.s<1>] : tensor<8x768xf32>
  // CHECK: sbp.reduce_scatter %{{.*}} on @node axis 0 [#sbp.p<sum>, #sbp.s<1>] -> [#sbp.s<0>, #sbp.s<1>] : tensor<8x768xf32>
  %4 = sbp.reduce_scatter %3 on @node axis 0 [#sbp.p<sum>, #sbp.s<1>] -> [#sbp.s<0>, #sbp.s<1>] : tensor<8x768xf32>
  // CHECK: sbp.to_partial %{{.*}} on @line axis 0 [#sbp.b] -> [#sbp.p<max>] : tensor<8x768xf32>
  %5 = sbp.to_partial %x on @line axis 0 [#sbp.b] -> [#sbp.p<max>] : tensor<8x768xf32>
  // CHECK: sbp.all_reduce %{{.*}} on @line axis 0 [#sbp.p<max>] -> [#sbp.b] : tensor<8x768xf32>
  %6 = sbp.all_reduce %5 on @line axis 0 [#sbp.p<max>] -> [#sbp.b] : tensor<8x768xf32>
  return %6 : tensor<8x768xf32>
}

// CHECK-LABEL: func.func @cross_mesh
func.func @cross_mesh(%x: tensor<8x768xf32>) -> tensor<8x768xf32> {
  // CHECK: sbp.cross_mesh %{{.*}} from @node [#sbp.s<0>, #sbp.b] to @stage1 [#sbp.b, #sbp.s<1>] : tensor<8x768xf32>
  %0 = sbp.cross_mesh %x from @node [#sbp.s<0>, #sbp.b] to @stage1 [#sbp.b, #sbp.s<1>] : tensor<8x768xf32>
  // Meshes of different rank.
  // CHECK: sbp.cross_mesh %{{.*}} from @stage1 [#sbp.b, #sbp.s<1>] to @line [#sbp.s<0>] : tensor<8x768xf32>
  %1 = sbp.cross_mesh %0 from @stage1 [#sbp.b, #sbp.s<1>] to @line [#sbp.s<0>] : tensor<8x768xf32>
  return %1 : tensor<8x768xf32>
}

// -----

// The attributes stand on their own too.
// CHECK-LABEL: func.func @attributes
// CHECK-SAME: sbp = [#sbp.s<2>, #sbp.b, #sbp.p<sum>]
func.func @attributes() attributes {sbp = [#sbp.s<2>, #sbp.b, #sbp.p<sum>]} {
  return
}

// -----

// sbp-assign's figures read back to the same values: seconds bit for bit
// (0.1 is no binary fraction), a stage's figures, the baselines by start.
// CHECK-LABEL: module attributes {sbp.plan = #sbp.layout_plan<cluster = "dgx-h100x2", strategy = "auto", start = "megatron", training = true, step_time = 1.000000e-01, compute_time = 0.033333333333333333, communication_time = 6.000000e-02, overlap_time = 2.000000e-02, memory_bytes = 4000000000, device_memory_bytes = 80000000000, baselines = {"data-parallel" = 2.000000e-01 : f64}, stages = [#sbp.stage_figures<mesh = @s0, forward_time = 1.000000e-03, backward_time = 2.000000e-03, update_time = 1.000000e-04, send_forward_time = 1.000000e-05, send_backward_time = 1.000000e-05, busy_time = 1.200000e-02, bubble_time = 3.000000e-03, memory_bytes = 4000000000, activation_bytes = 1000000000>], schedule = "1f1b", search_nodes = 12>}
module attributes {sbp.plan = #sbp.layout_plan<cluster = "dgx-h100x2", strategy = "auto", start = "megatron", training = true, step_time = 0.1, compute_time = 0.033333333333333333, communication_time = 0.06, overlap_time = 0.02, memory_bytes = 4000000000, device_memory_bytes = 80000000000, baselines = {"data-parallel" = 0.2 : f64}, stages = [#sbp.stage_figures<mesh = @s0, forward_time = 1.0e-03, backward_time = 2.0e-03, update_time = 1.0e-04, send_forward_time = 1.0e-05, send_backward_time = 1.0e-05, busy_time = 1.2e-02, bubble_time = 3.0e-03, memory_bytes = 4000000000, activation_bytes = 1000000000>], schedule = "1f1b", search_nodes = 12>} {
  sbp.mesh @s0(shape = 2, devices = [0, 1])
}

// -----

// A parameter whose forward boxing sbp-assign keeps for the backward.
// CHECK-LABEL: func.func @kept_for_backward
// CHECK: nn.param "w" {sbp.kept_for_backward}
func.func @kept_for_backward() -> tensor<4xf32> {
  %0 = nn.param "w" {sbp.kept_for_backward} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
