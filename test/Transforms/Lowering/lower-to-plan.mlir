// RUN: parplan-opt %s -split-input-file -attach-cluster -lower-to-plan -verify-diagnostics | FileCheck %s
// RUN: parplan-opt %s -split-input-file -attach-cluster -lower-to-plan=schedule=gpipe -verify-diagnostics | FileCheck %s --check-prefix=GPIPE
// RUN: not parplan-opt %s -split-input-file -attach-cluster -lower-to-plan=schedule=interleaved 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// RUN: parplan-opt %S/../Inputs/lower-to-plan-chunks.mlir -attach-cluster -lower-to-plan=schedule=interleaved | FileCheck %s --check-prefix=CHUNKS
// RUN: not parplan-opt %S/../Inputs/lower-to-plan-chunks.mlir -attach-cluster -lower-to-plan=schedule=gpipe 2>&1 | FileCheck %s --check-prefix=CHUNKS-GPIPE

// A training step on one device: every value that enters becomes a buffer
// saying which tensor it holds (here, all of it: nothing splits it), every
// op a kernel of its name with its attributes, and the loss and the updates
// are named. The optimizer writes its new parameter and state over the old
// ones (no other op reads them after it); the step count, written by an
// add that may not write in place and read after it, is carried by an
// update.
// CHECK-LABEL: module attributes {{{.*}}plan.mesh_shape = array<i64: 1>
// CHECK: plan.program @program0 devices = [0] {
// CHECK: %[[STEP:.*]] = plan.buffer kind = state {logical_shape = array<i64>, name = "optimizer.step", splits = array<i64: -1>} : memref<f32>
// CHECK: %[[W:.*]] = plan.buffer kind = parameter {logical_shape = array<i64: 16, 4>, name = "w[:, 0:4]", part = array<i64: 1, 0, 8>, part_of = "w", source = "initializer", splits = array<i64: -1>} : memref<16x4xf32>
// CHECK: %[[M:.*]] = plan.buffer kind = state {{[{].*}}name = "w[:, 0:4].adam.m"
// CHECK: %[[V:.*]] = plan.buffer kind = state {{[{].*}}name = "w[:, 0:4].adam.v"
// CHECK: %[[X:.*]] = plan.buffer kind = input {logical_shape = array<i64: 2, 16>, name = "x", splits = array<i64: -1>} : memref<2x16xf32>
// CHECK: %[[Y:.*]] = plan.buffer : memref<2x4xf32>
// CHECK: plan.kernel "matmul" ins(%[[X]], %[[W]] : memref<2x16xf32>, memref<16x4xf32>) outs(%[[Y]] : memref<2x4xf32>)
// CHECK: plan.buffer kind = input {logical_shape = array<i64: 2>, name = "labels", splits = array<i64: -1>, value_bound = 4 : i64} : memref<2xi64>
// CHECK: plan.kernel "reduce_mean" ins({{.*}}) outs(%[[LOSS:.*]] : memref<f32>) {attrs = {axes = array<i64>, keepdims = false}
// CHECK: %[[ONE:.*]] = plan.buffer kind = constant {value = dense<1.000000e+00> : tensor<f32>} : memref<f32>
// CHECK: %[[T:.*]] = plan.buffer : memref<f32>
// CHECK: plan.kernel "add" ins(%[[STEP]], %[[ONE]] : memref<f32>, memref<f32>) outs(%[[T]] : memref<f32>)
// CHECK: plan.kernel "adam_update" ins(%[[W]], %{{.*}}, %[[M]], %[[V]], %[[T]] : {{.*}}) outs(%[[W]], %[[M]], %[[V]] : {{.*}}) {attrs = {beta1 = 9.000000e-01 : f64, beta2 = {{.*}} : f64, epsilon = 1.000000e-08 : f64, grad_scale = 1.000000e+00 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64}
// CHECK: plan.loss %[[LOSS]] : memref<f32>
// CHECK-NEXT: plan.update %[[STEP]] from %[[T]] : memref<f32>
// CHECK-NEXT: }
// CHECK-NOT: func.func
module attributes {nn.training = {}} {
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.updates = "optimizer.step"}, tensor<16x4xf32> {nn.updates = "w[:, 0:4]"}, tensor<16x4xf32> {nn.updates = "w[:, 0:4].adam.m"}, tensor<16x4xf32> {nn.updates = "w[:, 0:4].adam.v"}) {
    %step = nn.param "optimizer.step" {source = "zeros"} : tensor<f32>
    %w = nn.param "w[:, 0:4]" {part = array<i64: 1, 0, 8>, part_of = "w", source = "initializer"} : tensor<16x4xf32>
    %m = nn.param "w[:, 0:4].adam.m" {source = "zeros"} : tensor<16x4xf32>
    %v = nn.param "w[:, 0:4].adam.v" {source = "zeros"} : tensor<16x4xf32>
    %x = nn.input "x" : tensor<2x16xf32>
    %y = nn.matmul %x, %w : tensor<2x16xf32>, tensor<16x4xf32> -> tensor<2x4xf32>
    %labels = nn.input "labels" : tensor<2xi64>
    %per = nn.softmax_cross_entropy %y, %labels : tensor<2x4xf32>, tensor<2xi64> -> tensor<2xf32>
    %loss = nn.reduce_mean %per keepdims = false : tensor<2xf32> -> tensor<f32>
    %dper = nn.constant dense<0.5> : tensor<2xf32>
    %dy = nn.softmax_cross_entropy_grad %dper, %y, %labels : tensor<2xf32>, tensor<2x4xf32>, tensor<2xi64>
    %xt = nn.transpose %x perm = [1, 0] : tensor<2x16xf32> -> tensor<16x2xf32>
    %dw = nn.matmul %xt, %dy : tensor<16x2xf32>, tensor<2x4xf32> -> tensor<16x4xf32>
    %one = nn.constant dense<1.0> : tensor<f32>
    %t = nn.add %step, %one : tensor<f32>, tensor<f32> -> tensor<f32>
    %w1, %m1, %v1 = nn.adam_update %w, %dw, %m, %v, %t lr = 1.0e-3 : tensor<16x4xf32>, tensor<f32>
    return %loss, %t, %w1, %m1, %v1 : tensor<f32>, tensor<f32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>
  }
}

// -----

// An update stays an update when the old parameter is read after the
// optimizer (%r), or when the new one is read by another op (%u): writing
// in place would change what those ops read.
// CHECK: // {{-----}}
// CHECK: %[[W:.*]] = plan.buffer kind = parameter {{[{].*}}name = "w"
// CHECK: %[[U:.*]] = plan.buffer kind = parameter {{[{].*}}name = "u"
// CHECK: plan.kernel "sgd_update" ins(%[[W]], %{{.*}} : {{.*}}) outs(%[[NEWW:.*]] : memref<4xf32>)
// CHECK: plan.kernel "relu" ins(%[[W]] : memref<4xf32>)
// CHECK: plan.kernel "sgd_update" ins(%[[U]], %{{.*}} : {{.*}}) outs(%[[NEWU:.*]] : memref<4xf32>)
// CHECK: plan.kernel "relu" ins(%[[NEWU]] : memref<4xf32>)
// CHECK: plan.update %[[W]] from %[[NEWW]] : memref<4xf32>
// CHECK: plan.update %[[U]] from %[[NEWU]] : memref<4xf32>
module attributes {nn.training = {}} {
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}, tensor<4xf32> {nn.updates = "u"}) {
    %w = nn.param "w" : tensor<4xf32>
    %u = nn.param "u" : tensor<4xf32>
    %g = nn.relu %w : tensor<4xf32>
    %w1 = nn.sgd_update %w, %g lr = 1.0e-1 : tensor<4xf32>
    %r = nn.relu %w : tensor<4xf32>
    %u1 = nn.sgd_update %u, %g lr = 1.0e-1 : tensor<4xf32>
    %s = nn.relu %u1 : tensor<4xf32>
    %sum = nn.add %r, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %l = nn.reduce_sum %sum keepdims = false : tensor<4xf32> -> tensor<f32>
    return %l, %w1, %u1 : tensor<f32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// A replicated parameter stepped in halves (its optimizer state split):
// the gather of the new halves writes the parameter itself, as nothing
// after it reads the parameter, rather than wait beside it for an update
// at the step's end.
// CHECK: // {{-----}}
// CHECK: %[[W:.*]] = plan.buffer kind = parameter {{[{].*}}name = "w"
// CHECK: plan.kernel "sgd_update" ins(%{{.*}}, %{{.*}} : memref<2xf32>, memref<2xf32>) outs(%[[HALF:.*]] : memref<2xf32>)
// CHECK-NEXT: plan.all_gather %[[HALF]] into %[[W]] on @axis0 axis = 0 : memref<2xf32> -> memref<4xf32>
// CHECK-NOT: plan.update
// CHECK: // {{-----}}
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
    %g = nn.relu %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
    %l = nn.reduce_sum %g keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
    %wh = sbp.slice %w on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %gh = sbp.slice %g on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %w1h = nn.sgd_update %wh, %gh lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    %w1 = sbp.all_gather %w1h on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// The same with the old parameter read after the gather (%r): the gather
// writes a buffer of its own, and the update stays for the step's end.
// CHECK: %[[W:.*]] = plan.buffer kind = parameter {{[{].*}}name = "w"
// CHECK: plan.all_gather %{{.*}} into %[[NEW:.*]] on @axis0 axis = 0 : memref<2xf32> -> memref<4xf32>
// CHECK: plan.kernel "relu" ins(%[[W]] : memref<4xf32>)
// CHECK: plan.update %[[W]] from %[[NEW]] : memref<4xf32>
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
    %g = nn.relu %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
    %wh = sbp.slice %w on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %gh = sbp.slice %g on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %w1h = nn.sgd_update %wh, %gh lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    %w1 = sbp.all_gather %w1h on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
    %r = nn.relu %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
    %l = nn.reduce_sum %r keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// A laid-out program on a mesh of one device: resharding steps are no-ops.
// CHECK: // {{-----}}
// CHECK-NOT: sbp.
// CHECK: plan.kernel "relu" ins(%[[A:.*]] : memref<4xf32>) outs(%[[B:.*]] : memref<4xf32>)
// CHECK: plan.kernel "relu" ins(%[[B]] : memref<4xf32>)
sbp.mesh @mesh(shape = 1)
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.param "x" : tensor<4xf32>
  %r = nn.relu %x : tensor<4xf32>
  %b = sbp.all_gather %r on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
  %s = nn.relu %b : tensor<4xf32>
  %l = nn.reduce_sum %s keepdims = false : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

sbp.mesh @mesh(shape = 2x4)
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  // expected-error @+1 {{lower-to-plan: 'nn.param' has no sbp.sharding; run sbp-assign and insert-boxing first}}
  %x = nn.param "x" : tensor<f32>
  return %x : tensor<f32>
}

// -----

// Data parallel on two devices: each holds half the batch and the whole
// weight; the partial product of the contraction is all-reduced over the
// group of the mesh axis, in place: nothing reads the partial sum after.
// The halves are even, so both devices share one program, the block of x
// each holds said by its splits.
// CHECK: plan.group @axis0 mesh_axes = [0]
// CHECK: plan.program @program0 devices = [0, 1] {
// CHECK: %[[X0:.*]] = plan.buffer kind = input {logical_shape = array<i64: 4, 6>, name = "x", splits = array<i64: 0>} : memref<2x6xf32>
// CHECK: %[[W0:.*]] = plan.buffer kind = parameter {logical_shape = array<i64: 6>, name = "w", splits = array<i64: -1>} : memref<6xf32>
// CHECK: plan.kernel "matmul" ins(%[[X0]], %[[W0]] : memref<2x6xf32>, memref<6xf32>) outs(%[[Y0:.*]] : memref<2xf32>)
// CHECK: plan.kernel "reduce_sum" ins(%[[Y0]] : memref<2xf32>) outs(%[[S0:.*]] : memref<f32>)
// CHECK-NOT: "reshape"
// CHECK: plan.all_reduce %[[S0]] on @axis0 : memref<f32>
// CHECK: plan.loss %[[S0]] : memref<f32>
// CHECK-NOT: plan.program
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x6xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<6xf32>
  %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.b]] -> [[#sbp.s<0>]]>} : tensor<4x6xf32>, tensor<6xf32> -> tensor<4xf32>
  %s = nn.reduce_sum %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4xf32> -> tensor<f32>
  %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> []>} %l : tensor<f32>
}

// -----

// Shares 3 : 1 (a fast device and a slow one): device 0 holds 3 of x's 4
// rows, device 1 one, so each has a program of its own; the plan says the
// shares, by which each device finds where its rows start (the slice of
// the whole y). The figures of each kernel are its own device's work.
// CHECK: module attributes {{{.*}}plan.mesh_shares = {{\[}}array<i64: 3, 1>]
// CHECK: plan.program @program0 devices = [0] {
// CHECK: plan.buffer kind = input {logical_shape = array<i64: 4, 6>, name = "x", splits = array<i64: 0>} : memref<3x6xf32>
// CHECK: plan.kernel "matmul" {{.*}} outs(%{{.*}} : memref<3xf32>) {{{.*}}flops = 3.600000e+01 : f64}
// CHECK: plan.kernel "slice" {{.*}} outs(%{{.*}} : memref<3xf32>) {attrs = {sizes = array<i64: 3>, starts = #plan.block_offset<shape = [4], splits = [0], dim = -1>
// CHECK: plan.program @program1 devices = [1] {
// CHECK: plan.buffer kind = input {logical_shape = array<i64: 4, 6>, name = "x", splits = array<i64: 0>} : memref<1x6xf32>
// CHECK: plan.kernel "matmul" {{.*}} outs(%{{.*}} : memref<1xf32>) {{{.*}}flops = 1.200000e+01 : f64}
// CHECK: plan.kernel "slice" {{.*}} outs(%{{.*}} : memref<1xf32>) {attrs = {sizes = array<i64: 1>
sbp.mesh @mesh(shape = 2, shares = [[3, 1]])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x6xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<6xf32>
  %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.b]] -> [[#sbp.s<0>]]>} : tensor<4x6xf32>, tensor<6xf32> -> tensor<4xf32>
  %e = nn.param "e" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %c = sbp.slice %e on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
  %sum = nn.add %y, %c {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = nn.reduce_sum %sum keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4xf32> -> tensor<f32>
  %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> []>} %l : tensor<f32>
}

// -----

// Splits that do not divide evenly: shares 5 : 3 of x's 8 rows along the
// nodes, then each node's rows split in two, the first part the larger (3
// and 2 of 5, 2 and 1 of 3). Each kernel's figures are its own device's
// block of the work, not the mean (the simulator times each device by
// them).
// CHECK: plan.program @program0 devices = [0] {
// CHECK: plan.kernel "matmul" {{.*}} outs(%{{.*}} : memref<3xf32>) {{{.*}}flops = 3.600000e+01 : f64}
// CHECK: plan.program @program1 devices = [1, 2] {
// CHECK: plan.kernel "matmul" {{.*}} outs(%{{.*}} : memref<2xf32>) {{{.*}}flops = 2.400000e+01 : f64}
// CHECK: plan.program @program2 devices = [3] {
// CHECK: plan.kernel "matmul" {{.*}} outs(%{{.*}} : memref<1xf32>) {{{.*}}flops = 1.200000e+01 : f64}
sbp.mesh @mesh(shape = 2x2, shares = [[5, 3], []])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<8x6xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.b]]>} : tensor<6xf32>
  %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>], [#sbp.b, #sbp.b]] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<8x6xf32>, tensor<6xf32> -> tensor<8xf32>
  %s = nn.reduce_sum %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<8xf32> -> tensor<f32>
  %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.b, #sbp.p<sum>] : tensor<f32>
  %m = sbp.all_reduce %l on @mesh axis 1 [#sbp.b, #sbp.p<sum>] -> [#sbp.b, #sbp.b] : tensor<f32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b]] -> []>} %m : tensor<f32>
}

// -----

// A whole value made a partial sum along an axis of shares 3 : 1: the
// device at coordinate 0 keeps it, the other adds zeros. The constant that
// says which is split by the shares too (3 elements and 1 of 4), each
// device's block summed to one element.
// CHECK: plan.program @program0 devices = [0] {
// CHECK: %[[C0:.*]] = plan.buffer kind = constant {logical_shape = array<i64: 4>, splits = array<i64: 0>, value = dense<[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<4xf32>} : memref<3xf32>
// CHECK: plan.kernel "reduce_sum" ins(%[[C0]] : memref<3xf32>) outs(%[[K0:.*]] : memref<1xf32>) {attrs = {axes = array<i64>, keepdims = true}}
// CHECK: plan.kernel "mul" ins(%{{.*}}, %[[K0]] : memref<6xf32>, memref<1xf32>)
// CHECK: plan.program @program1 devices = [1] {
// CHECK: plan.buffer kind = constant {{.*}} : memref<1xf32>
sbp.mesh @mesh(shape = 2, shares = [[3, 1]])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<6xf32>
  %p = sbp.to_partial %w on @mesh axis 0 [#sbp.b] -> [#sbp.p<sum>] : tensor<6xf32>
  %s = nn.reduce_sum %p keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<6xf32> -> tensor<f32>
  %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> []>} %l : tensor<f32>
}

// -----

// The all-reduce runs on a copy where the partial sum is read after it
// (here by a second reduction of the sum, doubled): the copy keeps the
// addend whole for that reader.
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<2xf32>) outs(%[[P:.*]] : memref<f32>)
// CHECK: plan.kernel "reshape" ins(%[[P]] : memref<f32>) outs(%[[C:.*]] : memref<f32>)
// CHECK: plan.all_reduce %[[C]] on @axis0 : memref<f32>
// CHECK: plan.kernel "add" ins(%[[P]], %[[P]] : memref<f32>, memref<f32>)
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x6xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<6xf32>
  %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.b]] -> [[#sbp.s<0>]]>} : tensor<4x6xf32>, tensor<6xf32> -> tensor<4xf32>
  %s = nn.reduce_sum %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4xf32> -> tensor<f32>
  %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
  %d = nn.add %s, %s {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.p<sum>], [#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<f32>, tensor<f32> -> tensor<f32>
  %m = sbp.all_reduce %d on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
  %t = nn.add %l, %m {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<f32>, tensor<f32> -> tensor<f32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> []>} %t : tensor<f32>
}

// -----

func.func @main() -> tensor<4xf32> {
  %x = nn.input "x" : tensor<4xf32>
  %r = nn.relu %x : tensor<4xf32>
  // expected-error @+1 {{lower-to-plan: result 0 of @main is neither the loss nor an update; inference plans are not lowered yet}}
  return %r : tensor<4xf32>
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<4xf32> {nn.updates = "w"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %x = nn.param "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4xf32>
  // expected-error @+1 {{lower-to-plan: an sbp.boxing remains; run expand-boxing first}}
  %y = sbp.boxing %x on @mesh [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> []>} %y : tensor<4xf32>
}

// -----

// An all-gather of uneven parts: 3 and 2 of 5 elements. The blocks differ
// in extent, so each device has a program of its own.
// CHECK: // {{-----}}
// CHECK: plan.group @axis0 mesh_axes = [0]
// CHECK: plan.program @program0 devices = [0]
// CHECK: plan.all_gather %{{.*}} into %{{.*}} on @axis0 axis = 0 : memref<3xf32> -> memref<5xf32>
// CHECK: plan.program @program1 devices = [1]
// CHECK: plan.all_gather %{{.*}} into %{{.*}} on @axis0 axis = 0 : memref<2xf32> -> memref<5xf32>
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<5xf32> {nn.updates = "w"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<5xf32>
  %x = nn.param "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<5xf32>
  %y = sbp.all_gather %x on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<5xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> []>} %y : tensor<5xf32>
}

// -----

// Partial maxima become a reduce-scatter by max over the inner axis; the
// group is each device's row of the 2x2 mesh.
// CHECK: // {{-----}}
// CHECK: plan.group @axis1 mesh_axes = [1]
// CHECK: plan.program @program0 devices = [0, 1, 2, 3]
// CHECK: plan.buffer kind = parameter {logical_shape = array<i64: 4, 6>, name = "w", splits = array<i64: 0, 1>} : memref<2x3xf32>
// CHECK: plan.reduce_scatter %{{.*}} into %{{.*}} on @axis1 axis = 1 reduce = max : memref<2x6xf32> -> memref<2x3xf32>
// CHECK-NOT: plan.program
sbp.mesh @mesh(shape = 2x2)
func.func @main() -> (tensor<4x6xf32> {nn.updates = "w"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.s<1>]]>} : tensor<4x6xf32>
  %x = nn.param "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.p<max>]]>} : tensor<4x6xf32>
  %y = sbp.reduce_scatter %x on @mesh axis 1 [#sbp.s<0>, #sbp.p<max>] -> [#sbp.s<0>, #sbp.s<1>] : tensor<4x6xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<1>]] -> []>} %y : tensor<4x6xf32>
}

// -----

// An all-to-all of uneven parts, and an all-reduce by min on a copy.
// CHECK: // {{-----}}
// CHECK: plan.program @program0 devices = [0]
// CHECK: plan.all_to_all %{{.*}} into %{{.*}} on @axis0 split_axis = 1 concat_axis = 0 : memref<2x5xf32> -> memref<3x3xf32>
// CHECK: plan.kernel "reshape" ins(%[[P:.*]] : memref<3x3xf32>) outs(%[[C:.*]] : memref<3x3xf32>)
// CHECK: plan.all_reduce %[[C]] on @axis0 reduce = min : memref<3x3xf32>
// CHECK: plan.program @program1 devices = [1]
// CHECK: plan.all_to_all %{{.*}} into %{{.*}} on @axis0 split_axis = 1 concat_axis = 0 : memref<1x5xf32> -> memref<3x2xf32>
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<3x5xf32> {nn.updates = "w"}, tensor<3x3xf32> {nn.updates = "v"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<1>]]>} : tensor<3x5xf32>
  %x = nn.param "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<3x5xf32>
  %y = sbp.all_to_all %x on @mesh axis 0 [#sbp.s<0>] -> [#sbp.s<1>] : tensor<3x5xf32>
  %v = nn.param "v" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<3x3xf32>
  %p = nn.param "p" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.p<min>]]>} : tensor<3x3xf32>
  %r = sbp.all_reduce %p on @mesh axis 0 [#sbp.p<min>] -> [#sbp.b] : tensor<3x3xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<1>], [#sbp.b]] -> []>} %y, %r : tensor<3x5xf32>, tensor<3x3xf32>
}

// -----

// A slice on the inner axis cuts the block the outer axis left: columns
// 0..2 of 6 on mesh row 0, of which device 1 keeps the last. Where the
// part starts in the block is the device's block offset in a 4x3 tensor
// split over the inner axis: 0 on column 0 of the mesh, 2 on column 1. The
// mesh rows share programs: their blocks have the same extents.
// CHECK: // {{-----}}
// CHECK: plan.program @program0 devices = [0, 2]
// CHECK: plan.kernel "slice" ins(%{{.*}} : memref<4x3xf32>) outs(%{{.*}} : memref<4x2xf32>) {attrs = {sizes = array<i64: 4, 2>, starts = #plan.block_offset<shape = [4, 3], splits = [-1, 1], dim = -1>, steps = array<i64: 1, 1>}
// CHECK: plan.program @program1 devices = [1, 3]
// CHECK: plan.kernel "slice" ins(%{{.*}} : memref<4x3xf32>) outs(%{{.*}} : memref<4x1xf32>) {attrs = {sizes = array<i64: 4, 1>, starts = #plan.block_offset<shape = [4, 3], splits = [-1, 1], dim = -1>, steps = array<i64: 1, 1>}
sbp.mesh @mesh(shape = 2x2)
func.func @main() -> (tensor<4x6xf32> {nn.updates = "w"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<1>, #sbp.s<1>]]>} : tensor<4x6xf32>
  %x = nn.param "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<1>, #sbp.b]]>} : tensor<4x6xf32>
  %y = sbp.slice %x on @mesh axis 1 [#sbp.s<1>, #sbp.b] -> [#sbp.s<1>, #sbp.s<1>] : tensor<4x6xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<1>, #sbp.s<1>]] -> []>} %y : tensor<4x6xf32>
}

// -----

// Into partial sums: a part is placed in zeros (slice_grad) where the
// device's block starts; a copy is kept by device 0 only: times its element
// of [1, 0] split over the axis, in the element type. Into partial maxima
// every device keeps its copy and nothing runs.
// CHECK: // {{-----}}
// CHECK: plan.program @program0 devices = [0]
// CHECK: plan.kernel "slice_grad" ins(%{{.*}} : memref<3xf32>) outs(%{{.*}} : memref<5xf32>) {attrs = {starts = #plan.block_offset<shape = [5], splits = [0], dim = -1>, steps = array<i64: 1>}
// CHECK: %[[KEEP:.*]] = plan.buffer kind = constant {logical_shape = array<i64: 2>, splits = array<i64: 0>, value = dense<[1, 0]> : tensor<2xi32>} : memref<1xi32>
// CHECK: plan.kernel "mul" ins(%{{.*}}, %[[KEEP]] : memref<5xi32>, memref<1xi32>)
// CHECK-NOT: plan.kernel
// CHECK: plan.update
// CHECK: plan.program @program1 devices = [1]
// CHECK: plan.kernel "slice_grad" ins(%{{.*}} : memref<2xf32>) outs(%{{.*}} : memref<5xf32>) {attrs = {starts = #plan.block_offset<shape = [5], splits = [0], dim = -1>, steps = array<i64: 1>}
// CHECK: %[[KEEP1:.*]] = plan.buffer kind = constant {logical_shape = array<i64: 2>, splits = array<i64: 0>, value = dense<[1, 0]> : tensor<2xi32>} : memref<1xi32>
// CHECK: plan.kernel "mul" ins(%{{.*}}, %[[KEEP1]] : memref<5xi32>, memref<1xi32>)
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<5xf32> {nn.updates = "a"}, tensor<5xi32> {nn.updates = "b"}, tensor<5xf32> {nn.updates = "c"}) {
  %a = nn.param "a" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.p<sum>]]>} : tensor<5xf32>
  %x = nn.param "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<5xf32>
  %pa = sbp.to_partial %x on @mesh axis 0 [#sbp.s<0>] -> [#sbp.p<sum>] : tensor<5xf32>
  %b = nn.param "b" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.p<sum>]]>} : tensor<5xi32>
  %i = nn.param "i" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<5xi32>
  %pb = sbp.to_partial %i on @mesh axis 0 [#sbp.b] -> [#sbp.p<sum>] : tensor<5xi32>
  %c = nn.param "c" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.p<max>]]>} : tensor<5xf32>
  %r = nn.param "r" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<5xf32>
  %pc = sbp.to_partial %r on @mesh axis 0 [#sbp.b] -> [#sbp.p<max>] : tensor<5xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.p<sum>], [#sbp.p<sum>], [#sbp.p<max>]] -> []>} %pa, %pb, %pc : tensor<5xf32>, tensor<5xi32>, tensor<5xf32>
}

// -----

// A scalar copy kept by device 0 only: the [1]-shaped element of [1, 0] is
// reshaped to a scalar first. Evenly split, the 2x4 mesh is one program.
// CHECK: // {{-----}}
// CHECK: plan.program @program0 devices = [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK: %[[KEEP:.*]] = plan.buffer kind = constant {logical_shape = array<i64: 4>, splits = array<i64: -1, 0>, value = dense<[1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<4xf32>} : memref<1xf32>
// CHECK: plan.kernel "reshape" ins(%[[KEEP]] : memref<1xf32>) outs(%[[SCALAR:.*]] : memref<f32>)
// CHECK: plan.kernel "mul" ins(%{{.*}}, %[[SCALAR]] : memref<f32>, memref<f32>)
// CHECK-NOT: plan.program
sbp.mesh @mesh(shape = 2x4)
func.func @main() -> (tensor<f32> {nn.updates = "a"}) {
  %a = nn.param "a" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.p<sum>]]>} : tensor<f32>
  %i = nn.param "i" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.b]]>} : tensor<f32>
  %p = sbp.to_partial %i on @mesh axis 1 [#sbp.b, #sbp.b] -> [#sbp.b, #sbp.p<sum>] : tensor<f32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.p<sum>]] -> []>} %p : tensor<f32>
}

// -----

// A gather from a table split by rows reads only its block's rows: the
// offset of the block is the device's, the extent the table's. A constant
// split by rows carries its logical elements, of which each device keeps
// its block.
// CHECK: // {{-----}}
// CHECK: plan.program @program0 devices = [0, 1]
// CHECK: %[[TABLE:.*]] = plan.buffer kind = parameter {logical_shape = array<i64: 6, 2>, name = "table", splits = array<i64: 0>} : memref<3x2xf32>
// CHECK: plan.kernel "gather_shard" ins(%[[TABLE]], %{{.*}} : memref<3x2xf32>, memref<4xi64>) outs(%{{.*}} : memref<4x2xf32>) {attrs = {axis = 0 : i64, extent = 6 : i64, offset = #plan.block_offset<shape = [6, 2], splits = [0], dim = 0>}
// CHECK: plan.buffer kind = constant {logical_shape = array<i64: 4, 2>, splits = array<i64: 0>, value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<4x2xf32>} : memref<2x2xf32>
// CHECK-NOT: plan.program
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<6x2xf32> {nn.updates = "table"}, tensor<4x2xf32> {nn.updates = "out"}) {
  %table = nn.param "table" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<6x2xf32>
  %ids = nn.input "ids" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xi64>
  %rows = nn.gather %table, %ids axis = 0 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.b]] -> [[#sbp.p<sum>]]>} : tensor<6x2xf32>, tensor<4xi64> -> tensor<4x2xf32>
  %c = nn.constant {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %out = nn.param "out" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x2xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> []>} %table, %c : tensor<6x2xf32>, tensor<4x2xf32>
}

// -----

// Two stages: the devices of each mesh share a program naming the mesh. The
// move is one plan.cross_mesh before the programs: rows split over @a go
// whole to both devices of @b by send-recv, four transfers in the
// planner's order, each of one tile (rows 0-1 from device 0, rows 2-3 from
// device 1) to one receiver. Each program holds its part, which names no
// peer: a sender's is its block, a receiver's its block and the scratch
// its tiles and their sum take (two 2x2 tiles and two 4x2 blocks of f32,
// each rounded up to 64 bytes). The plan's devices are the meshes'
// together; a named mesh may list its devices in any order.
// CHECK-LABEL: module attributes {{{.*}}plan.mesh_shape = array<i64: 4>}
// CHECK: plan.mesh @a shape = [2] devices = [0, 1]
// CHECK-NEXT: plan.mesh @b shape = [2] devices = [3, 2]
// CHECK-NEXT: plan.cross_mesh @move0 : tensor<4x2xf32> from @a [0] to @b [-1] tile_offsets = [0, 0, 2, 0] tile_sizes = [2, 2, 2, 2] transfer_tiles = [0, 0, 1, 1] transfer_senders = [0, 0, 1, 1] receiver_counts = [1, 1, 1, 1] receivers = [2, 3, 2, 3]
// CHECK: plan.program @program0 devices = [0, 1] mesh = @a {
// CHECK-NEXT: %[[X:.*]] = plan.buffer kind = input {logical_shape = array<i64: 4, 2>, name = "x", splits = array<i64: 0>} : memref<2x2xf32>
// CHECK-NEXT: plan.cross_mesh_send @move0 %[[X]] : memref<2x2xf32>
// CHECK-NEXT: }
// CHECK: plan.program @program1 devices = [2, 3] mesh = @b {
// CHECK-NEXT: %[[S:.*]] = plan.buffer : memref<256xi8>
// CHECK-NEXT: %[[M:.*]] = plan.buffer : memref<4x2xf32>
// CHECK-NEXT: plan.cross_mesh_recv @move0 %[[M]] scratch %[[S]] : memref<4x2xf32>, memref<256xi8>
// CHECK-NEXT: %[[MEAN:.*]] = plan.buffer : memref<f32>
// CHECK-NEXT: plan.kernel "reduce_mean" ins(%[[M]] : memref<4x2xf32>)
// CHECK-NEXT: plan.loss %[[MEAN]] : memref<f32>
// CHECK-NOT: plan.program
sbp.mesh @a(shape = 2, devices = [0, 1])
sbp.mesh @b(shape = 2, devices = [3, 2])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.s<0>]]>} : tensor<4x2xf32>
  %m = sbp.cross_mesh %x from @a [#sbp.s<0>] to @b [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<4x2xf32>
  %s = nn.reduce_mean %m axes = [0, 1] keepdims = false {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4x2xf32> -> tensor<f32>
  return {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> []>} %s : tensor<f32>
}

// -----

// Uneven blocks: three rows over two devices are two rows and one, so the
// sources are two programs; the table is the same for both.
// CHECK-LABEL: module attributes {{{.*}}plan.mesh_shape = array<i64: 3>}
// CHECK: plan.cross_mesh @move0 : tensor<3x2xf32> from @a [0] to @b [-1] tile_offsets = [0, 0, 2, 0] tile_sizes = [2, 2, 1, 2]
// CHECK: plan.program @program0 devices = [0] mesh = @a {
// CHECK: plan.cross_mesh_send @move0 %{{.*}} : memref<2x2xf32>
// CHECK: plan.program @program1 devices = [1] mesh = @a {
// CHECK: plan.cross_mesh_send @move0 %{{.*}} : memref<1x2xf32>
// CHECK: plan.program @program2 devices = [2] mesh = @b {
// CHECK: plan.cross_mesh_recv @move0 %{{.*}} scratch %{{.*}} : memref<3x2xf32>, memref<256xi8>
sbp.mesh @a(shape = 2, devices = [0, 1])
sbp.mesh @b(shape = 1, devices = [2])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.s<0>]]>} : tensor<3x2xf32>
  %m = sbp.cross_mesh %x from @a [#sbp.s<0>] to @b [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<3x2xf32>
  %s = nn.reduce_mean %m axes = [0, 1] keepdims = false {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<3x2xf32> -> tensor<f32>
  return {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> []>} %s : tensor<f32>
}

// -----

// A tile for several receivers in broadcast mode: one transfer to two
// receivers, which the executor runs as a broadcast from the holder. The
// receivers' tile is their whole block: they need no scratch.
// CHECK-LABEL: module attributes {{{.*}}plan.mesh_shape = array<i64: 3>}
// CHECK: plan.cross_mesh @move0 : tensor<4x2xf32> from @a [-1] to @b [-1] tile_offsets = [0, 0] tile_sizes = [4, 2] transfer_tiles = [0] transfer_senders = [0] receiver_counts = [2] receivers = [1, 2]
// CHECK: plan.program @program0 devices = [0] mesh = @a {
// CHECK-NEXT: %[[X:.*]] = plan.buffer kind = input
// CHECK-NEXT: plan.cross_mesh_send @move0 %[[X]] : memref<4x2xf32>
// CHECK: plan.program @program1 devices = [1, 2] mesh = @b {
// CHECK-NEXT: %[[B:.*]] = plan.buffer : memref<4x2xf32>
// CHECK-NEXT: plan.cross_mesh_recv @move0 %[[B]] : memref<4x2xf32>
// CHECK-NEXT: plan.buffer : memref<f32>
// CHECK-NEXT: plan.kernel "reduce_mean" ins(%[[B]]
sbp.mesh @a(shape = 1, devices = [0])
sbp.mesh @b(shape = 2, devices = [1, 2])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4x2xf32>
  %m = sbp.cross_mesh %x from @a [#sbp.b] to @b [#sbp.b] {mode = "broadcast", balancing = "by-bytes"} : tensor<4x2xf32>
  %s = nn.reduce_mean %m axes = [0, 1] keepdims = false {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4x2xf32> -> tensor<f32>
  return {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> []>} %s : tensor<f32>
}

// -----

// The stages' meshes must hold the plan's devices 0 .. N-1.
// expected-error @+1 {{lower-to-plan: device 1 is on no mesh, but device 3 is: the stages' meshes must hold devices 0 to N-1}}
module {
  sbp.mesh @a(shape = 1, devices = [0])
  sbp.mesh @b(shape = 2, devices = [2, 3])
  func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<f32>
    return {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> []>} %x : tensor<f32>
  }
}

// -----

sbp.mesh @a(shape = 1, devices = [0])
sbp.mesh @b(shape = 1, devices = [1])
func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  // expected-error @+1 {{lower-to-plan: unknown mode 'multicast' (expected send-recv, send-recv+all-gather, broadcast)}}
  %m = sbp.cross_mesh %x from @a [#sbp.b] to @b [#sbp.b] {mode = "multicast"} : tensor<4xf32>
  %s = nn.reduce_mean %m axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
  return {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> []>} %s : tensor<f32>
}

// -----

// A result marked nn.output is the device's block of that tensor, an
// output buffer the run checks (what `parplan reshard -o` lowers).
// CHECK-LABEL: module attributes {{{.*}}plan.mesh_shape = array<i64: 2>}
// CHECK: plan.program @program1 devices = [1] mesh = @b {
// CHECK-NEXT: %[[T:.*]] = plan.buffer kind = output {logical_shape = array<i64: 4>, name = "t", splits = array<i64: -1>} : memref<4xf32>
// CHECK-NEXT: plan.cross_mesh_recv @move0 %[[T]] : memref<4xf32>
// CHECK-NEXT: }
sbp.mesh @a(shape = 1, devices = [0])
sbp.mesh @b(shape = 1, devices = [1])
func.func @main() -> (tensor<4xf32> {nn.output = "t"}) {
  %x = nn.param "t" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %m = sbp.cross_mesh %x from @a [#sbp.b] to @b [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<4xf32>
  return %m : tensor<4xf32>
}

// -----

// A batch norm's running variance, read directly or through a change of
// layout, draws its synthetic values around 1, not 0 (a model served
// without its weights would take the square root of a negative number);
// the other statistics and parameters keep the default center.
// CHECK-LABEL: module attributes {{{.*}}plan.mesh_shape = array<i64: 2>}
// CHECK: plan.buffer kind = parameter {logical_shape = array<i64: 4>, name = "scale", splits = array<i64: -1>} : memref<4xf32>
// CHECK: plan.buffer kind = parameter {logical_shape = array<i64: 4>, name = "bias", splits = array<i64: -1>} : memref<4xf32>
// CHECK: plan.buffer kind = parameter {logical_shape = array<i64: 4>, name = "mean", splits = array<i64: -1>} : memref<4xf32>
// CHECK: plan.buffer kind = parameter {logical_shape = array<i64: 4>, name = "var", splits = array<i64: 0>, synthetic_center = 1.000000e+00 : f64} : memref<2xf32>
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<2x4x3xf32> {nn.output = "y"}) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<2x4x3xf32>
  %scale = nn.param "scale" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %bias = nn.param "bias" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %mean = nn.param "mean" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %var = nn.param "var" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4xf32>
  %varb = sbp.all_gather %var on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
  %y = nn.batch_norm %x, %scale, %bias, %mean, %varb {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.b], [#sbp.b], [#sbp.b], [#sbp.b]] -> [[#sbp.s<0>]]>} : tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// An output must be computed by the step: a parameter is not.
sbp.mesh @a(shape = 1, devices = [0])
sbp.mesh @b(shape = 1, devices = [1])
func.func @main() -> (tensor<4xf32> {nn.output = "t"}) {
  %x = nn.param "t" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  // expected-error @+1 {{lower-to-plan: result 0 ('t') is no value the step computes}}
  return %x : tensor<4xf32>
}

// -----

// A step of 2 micro-batches: the ops before plan.after_micro_batches run
// once per micro-batch, those reading an accumulated sum once after the
// last, whatever their order in @main (the loss's sum here comes after the
// update). A micro-batch's forward (what the loss depends on) comes first,
// then plan.backward_begin and the rest. Each sum is an accumulator buffer
// its kernel adds to in place; the update reads the sum.
// CHECK-LABEL: module attributes {{{.*}}plan.micro_batches = 2 : i64
// CHECK: %[[X:.*]] = plan.buffer kind = input {logical_shape = array<i64: 3, 4>, name = "x"
// CHECK-NEXT: %[[L:.*]] = plan.buffer : memref<f32>
// CHECK-NEXT: plan.kernel "reduce_mean" ins(%[[X]] : memref<3x4xf32>) outs(%[[L]] : memref<f32>)
// CHECK-NEXT: %[[LS:.*]] = plan.buffer kind = accumulator : memref<f32>
// CHECK-NEXT: plan.kernel "accumulate" ins(%[[LS]], %[[L]] : memref<f32>, memref<f32>) outs(%[[LS]] : memref<f32>)
// CHECK-NEXT: plan.backward_begin
// CHECK-NEXT: %[[W:.*]] = plan.buffer kind = parameter {{[{].*}}name = "w"
// CHECK: plan.kernel "reduce_sum" ins(%[[X]] : memref<3x4xf32>) outs(%[[G:.*]] : memref<4xf32>)
// CHECK: %[[GS:.*]] = plan.buffer kind = accumulator : memref<4xf32>
// CHECK-NEXT: plan.kernel "accumulate" ins(%[[GS]], %[[G]] : memref<4xf32>, memref<4xf32>) outs(%[[GS]] : memref<4xf32>)
// CHECK-NEXT: plan.after_micro_batches
// CHECK-NEXT: plan.kernel "sgd_update" ins(%[[W]], %[[GS]] : memref<4xf32>, memref<4xf32>) outs(%[[W]] : memref<4xf32>)
// CHECK-NEXT: plan.loss %[[LS]] : memref<f32>
// CHECK-NEXT: }
module attributes {nn.training = {micro_batches = 2 : i64}} {
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" : tensor<4xf32>
    %x = nn.input "x" : tensor<3x4xf32>
    %loss = nn.reduce_mean %x keepdims = false : tensor<3x4xf32> -> tensor<f32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false : tensor<3x4xf32> -> tensor<4xf32>
    %sum = nn.accumulate %g : tensor<4xf32>
    %w1 = nn.sgd_update %w, %sum lr = 0.1 : tensor<4xf32>
    %losses = nn.accumulate %loss : tensor<f32>
    return %losses, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// A copy of a parameter (its bf16 cast, then a transpose of that) is the
// same in every micro-batch: it runs once, before them (then
// plan.forward_begin), and every micro-batch's forward and backward read
// it. An op of the batch (the input's cast) and a copy larger than what it
// copies (an expand to the batch's rows) stay in the micro-batch.
// CHECK-LABEL: module attributes {{{.*}}plan.micro_batches = 2 : i64
// CHECK: %[[W:.*]] = plan.buffer kind = parameter {{[{].*}}name = "w"
// CHECK-NEXT: %[[WB:.*]] = plan.buffer : memref<4x4xbf16>
// CHECK-NEXT: plan.kernel "cast" ins(%[[W]] : memref<4x4xf32>) outs(%[[WB]] : memref<4x4xbf16>)
// CHECK-NEXT: %[[WT:.*]] = plan.buffer : memref<4x4xbf16>
// CHECK-NEXT: plan.kernel "transpose" ins(%[[WB]] : memref<4x4xbf16>) outs(%[[WT]] : memref<4x4xbf16>)
// CHECK-NEXT: plan.forward_begin
// CHECK-NOT: plan.kernel "cast" ins(%[[W]]
// CHECK: plan.kernel "expand"
// CHECK: plan.kernel "cast" ins(%{{.*}} : memref<3x4xf32>)
// CHECK: plan.kernel "matmul" ins(%{{.*}}, %[[WT]] :
// CHECK: plan.backward_begin
// CHECK: plan.kernel "matmul" ins(%{{.*}}, %[[WB]] :
// CHECK: plan.after_micro_batches
module attributes {nn.training = {micro_batches = 2 : i64}} {
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4x4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" : tensor<4x4xf32>
    %b = nn.param "b" : tensor<4xf32>
    %x = nn.input "x" : tensor<3x4xf32>
    %wb = nn.cast %w : tensor<4x4xf32> -> tensor<4x4xbf16>
    %wt = nn.transpose %wb perm = [1, 0] : tensor<4x4xbf16> -> tensor<4x4xbf16>
    %bb = nn.expand %b : tensor<4xf32> -> tensor<3x4xf32>
    %xb = nn.cast %x : tensor<3x4xf32> -> tensor<3x4xbf16>
    %y = nn.matmul %xb, %wt : tensor<3x4xbf16>, tensor<4x4xbf16> -> tensor<3x4xbf16>
    %yf = nn.cast %y : tensor<3x4xbf16> -> tensor<3x4xf32>
    %z = nn.add %yf, %bb : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
    %loss = nn.reduce_mean %z keepdims = false : tensor<3x4xf32> -> tensor<f32>
    %dx = nn.matmul %y, %wb : tensor<3x4xbf16>, tensor<4x4xbf16> -> tensor<3x4xbf16>
    %dxf = nn.cast %dx : tensor<3x4xbf16> -> tensor<3x4xf32>
    %g = nn.matmul %x, %dxf {transpose_lhs} : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<4x4xf32>
    %sum = nn.accumulate %g : tensor<4x4xf32>
    %w1 = nn.sgd_update %w, %sum lr = 0.1 : tensor<4x4xf32>
    %losses = nn.accumulate %loss : tensor<f32>
    return %losses, %w1 : tensor<f32>, tensor<4x4xf32>
  }
}

// -----

// A slice of a replicated weight runs once per step wherever it is read: a
// micro-batch's matmul reads its part (once, before plan.forward_begin: the
// step keeps the weight it cuts), the sharded update the other part (once,
// after plan.after_micro_batches, the update alone reading it). Per
// micro-batch each would cut the same part M times.
// CHECK-LABEL: module attributes {{{.*}}plan.micro_batches = 2 : i64
// CHECK: %[[W:.*]] = plan.buffer kind = parameter {{[{].*}}name = "w"
// CHECK-NEXT: %[[WS:.*]] = plan.buffer : memref<4x2xf32>
// CHECK-NEXT: plan.kernel "slice" ins(%[[W]] : memref<4x4xf32>) outs(%[[WS]] : memref<4x2xf32>)
// CHECK-NEXT: plan.forward_begin
// CHECK-NOT: plan.kernel "slice"
// CHECK: plan.kernel "matmul" ins(%{{.*}}, %[[WS]] :
// CHECK-NOT: plan.kernel "slice"
// CHECK: plan.after_micro_batches
// CHECK-NEXT: %[[W0:.*]] = plan.buffer : memref<2x4xf32>
// CHECK-NEXT: plan.kernel "slice" ins(%[[W]] : memref<4x4xf32>) outs(%[[W0]] : memref<2x4xf32>)
// CHECK: plan.kernel "sgd_update" ins(%[[W0]],
module attributes {nn.training = {micro_batches = 2 : i64}} {
sbp.mesh @m(shape = 2, devices = [0, 1])
func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4x4xf32> {nn.updates = "w"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@m, [] -> [[#sbp.b]]>} : tensor<4x4xf32>
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@m, [] -> [[#sbp.b]]>} : tensor<3x4xf32>
  %l = nn.reduce_mean %x keepdims = false {sbp.sharding = #sbp.sharding<@m, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<3x4xf32> -> tensor<f32>
  %ls = nn.accumulate %l {sbp.sharding = #sbp.sharding<@m, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<f32>
  %ws = sbp.slice %w on @m axis 0 [#sbp.b] -> [#sbp.s<1>] : tensor<4x4xf32>
  %y = nn.matmul %x, %ws {sbp.sharding = #sbp.sharding<@m, [[#sbp.b], [#sbp.s<1>]] -> [[#sbp.s<1>]]>} : tensor<3x4xf32>, tensor<4x4xf32> -> tensor<3x4xf32>
  %g = nn.matmul %y, %x {transpose_lhs, sbp.sharding = #sbp.sharding<@m, [[#sbp.s<1>], [#sbp.b]] -> [[#sbp.s<0>]]>} : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<4x4xf32>
  %gs = nn.accumulate %g {sbp.sharding = #sbp.sharding<@m, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4x4xf32>
  %w0 = sbp.slice %w on @m axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4x4xf32>
  %w1 = nn.sgd_update %w0, %gs lr = 0.1 {sbp.sharding = #sbp.sharding<@m, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4x4xf32>
  %wg = sbp.all_gather %w1 on @m axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4x4xf32>
  return {sbp.sharding = #sbp.sharding<@m, [[#sbp.b], [#sbp.b]] -> []>} %ls, %wg : tensor<f32>, tensor<4x4xf32>
}
}

// -----

// After the micro-batches, what waits for a move from another stage (w's
// gradient part from @b, sent after @b's last backward) comes last in the
// program: v's update, after it in @main, runs while the part travels.
// Moves keep @main's order: the send of v's sum to @b stays after the
// receive, as @b's program pairs them.
// CHECK-LABEL: module attributes {{{.*}}plan.micro_batches = 2 : i64
// CHECK: plan.program @program0 devices = [0] mesh = @a {
// CHECK: %[[W:.*]] = plan.buffer kind = parameter {{[{].*}}name = "w"
// CHECK: %[[V:.*]] = plan.buffer kind = parameter {{[{].*}}name = "v"
// CHECK: plan.after_micro_batches
// CHECK-NEXT: plan.kernel "sgd_update" ins(%[[V]],
// CHECK-NEXT: %[[G:.*]] = plan.buffer : memref<4xf32>
// CHECK-NEXT: plan.cross_mesh_recv @move1 %[[G]]
// CHECK-NEXT: %[[GW:.*]] = plan.buffer : memref<4xf32>
// CHECK-NEXT: plan.kernel "add" ins(%{{.*}}, %[[G]] :
// CHECK-NEXT: plan.kernel "sgd_update" ins(%[[W]], %[[GW]] :
// CHECK-NEXT: plan.cross_mesh_send @move2
module attributes {nn.training = {micro_batches = 2 : i64}} {
sbp.mesh @a(shape = 1, devices = [0])
sbp.mesh @b(shape = 1, devices = [1])
func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}, tensor<4xf32> {nn.updates = "v"}, tensor<4xf32> {nn.updates = "u"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %v = nn.param "v" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %u = nn.param "u" {sbp.sharding = #sbp.sharding<@b, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %h = nn.mul %x, %w {sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %hm = sbp.cross_mesh %h from @a [#sbp.b] to @b [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<4xf32>
  %l = nn.reduce_mean %hm axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
  %ls = nn.accumulate %l {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<f32>
  %gb = nn.mul %hm, %hm {sbp.sharding = #sbp.sharding<@b, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %gbs = nn.accumulate %gb {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  %g = sbp.cross_mesh %gbs from @b [#sbp.b] to @a [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<4xf32>
  %ga = nn.mul %x, %x {sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %gas = nn.accumulate %ga {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  %gw = nn.add %gas, %g {sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %w1 = nn.sgd_update %w, %gw lr = 0.1 {sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  %gv = nn.mul %x, %v {sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %gvs = nn.accumulate %gv {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  %v1 = nn.sgd_update %v, %gvs lr = 0.1 {sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  %gvm = sbp.cross_mesh %gvs from @a [#sbp.b] to @b [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<4xf32>
  %gu = nn.add %gvm, %gbs {sbp.sharding = #sbp.sharding<@b, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %u1 = nn.sgd_update %u, %gu lr = 0.1 {sbp.sharding = #sbp.sharding<@b, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  return {sbp.sharding = #sbp.sharding<@b, [[#sbp.b], [#sbp.b], [#sbp.b], [#sbp.b]] -> []>} %ls, %w1, %v1, %u1 : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
}

// -----

// A sum over the micro-batches runs in each of them even where what it
// sums reads no batch (a constant's gradient): once after them, it would
// count one micro-batch of the M. What reads it alone runs once.
// CHECK-LABEL: module attributes {{{.*}}plan.micro_batches = 2 : i64
// CHECK: plan.backward_begin
// CHECK: plan.kernel "mul" ins(%[[C:.*]], %[[C]] :
// CHECK: plan.kernel "accumulate"
// CHECK: plan.after_micro_batches
// CHECK-NEXT: plan.kernel "sgd_update"
module attributes {nn.training = {micro_batches = 2 : i64}} {
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" : tensor<4xf32>
    %x = nn.input "x" : tensor<3x4xf32>
    %c = nn.constant dense<0.5> : tensor<4xf32>
    %loss = nn.reduce_mean %x keepdims = false : tensor<3x4xf32> -> tensor<f32>
    %g = nn.mul %c, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %sum = nn.accumulate %g : tensor<4xf32>
    %w1 = nn.sgd_update %w, %sum lr = 0.1 : tensor<4xf32>
    %losses = nn.accumulate %loss : tensor<f32>
    return %losses, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// Once run after the micro-batches, an op would see only the last one's
// batch.
module attributes {nn.training = {micro_batches = 2 : i64}} {
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" : tensor<4xf32>
    %x = nn.input "x" : tensor<3x4xf32>
    %loss = nn.reduce_mean %x keepdims = false : tensor<3x4xf32> -> tensor<f32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false : tensor<3x4xf32> -> tensor<4xf32>
    %sum = nn.accumulate %g : tensor<4xf32>
    // expected-error @+1 {{'nn.add' runs once after the micro-batches but reads a value of the batch ('nn.reduce_sum') that is not accumulated: it would see the last micro-batch alone}}
    %both = nn.add %sum, %g : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %w1 = nn.sgd_update %w, %both lr = 0.1 : tensor<4xf32>
    %losses = nn.accumulate %loss : tensor<f32>
    return %losses, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// On stages, a move to a later stage is part of the forward though only the
// backward reads it (%xm): in the backward it would wait for the later
// stage's backward, which waits for it. The module names the schedule.
// CHECK-LABEL: module attributes {{{.*}}plan.micro_batches = 2 : i64, plan.schedule = "1f1b"}
// CHECK: plan.cross_mesh @move0 : tensor<4xf32> from @a
// CHECK-NEXT: plan.cross_mesh @move1 : tensor<4xf32> from @a
// CHECK-NEXT: plan.cross_mesh @move2 : tensor<4xf32> from @b [-1] to @a [-1]
// CHECK: plan.program @program0 devices = [0] mesh = @a {
// CHECK: plan.kernel "mul"
// CHECK-NEXT: plan.cross_mesh_send @move0
// CHECK-NEXT: plan.cross_mesh_send @move1
// CHECK-NEXT: plan.backward_begin
// CHECK: plan.cross_mesh_recv @move2
// CHECK: plan.after_micro_batches
// CHECK: plan.program @program1 devices = [1] mesh = @b {
// CHECK: plan.cross_mesh_recv @move0
// CHECK: plan.kernel "accumulate"
// CHECK: plan.cross_mesh_recv @move1 %[[XM:.*]] :
// CHECK-NEXT: plan.backward_begin
// CHECK: plan.kernel "mul" ins(%[[XM]], %[[XM]]
// CHECK-NEXT: plan.cross_mesh_send @move2
// CHECK-NEXT: plan.after_micro_batches
// GPIPE: plan.schedule = "gpipe"
// INTERLEAVED: lower-to-plan: schedule 'interleaved' needs stages of several model chunks (sbp.chunks)
module attributes {nn.training = {micro_batches = 2 : i64}} {
sbp.mesh @a(shape = 1, devices = [0])
sbp.mesh @b(shape = 1, devices = [1])
func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32>
  %h = nn.mul %x, %w {sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %hm = sbp.cross_mesh %h from @a [#sbp.b] to @b [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<4xf32>
  %l = nn.reduce_mean %hm axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
  %ls = nn.accumulate %l {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<f32>
  %xm = sbp.cross_mesh %x from @a [#sbp.b] to @b [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<4xf32>
  %gb = nn.mul %xm, %xm {sbp.sharding = #sbp.sharding<@b, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %g = sbp.cross_mesh %gb from @b [#sbp.b] to @a [#sbp.b] {mode = "send-recv", balancing = "none"} : tensor<4xf32>
  %gs = nn.accumulate %g {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  %w1 = nn.sgd_update %w, %gs lr = 0.1 {sbp.sharding = #sbp.sharding<@a, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  return {sbp.sharding = #sbp.sharding<@b, [[#sbp.b], [#sbp.b]] -> []>} %ls, %w1 : tensor<f32>, tensor<4xf32>
}
}


// Stages of two model chunks (sbp.chunks, the interleaved schedule): each
// pass of a micro-batch is each chunk's part in turn, marked by
// plan.chunk, the forward's in order and the backward's in reverse. A
// move's sending part goes in its producer's chunk (sbp.chunk), its
// receiving part in its reader's (sbp.destination_chunk): here chunk 0 of
// @b sends back to chunk 1 of @a, the next virtual stage.
// CHUNKS-LABEL: module attributes {{{.*}}plan.schedule = "interleaved"}
// CHUNKS: plan.program @program0 devices = [0] mesh = @a {
// CHUNKS-NEXT: plan.chunk 0
// CHUNKS-NEXT: plan.buffer kind = input
// CHUNKS-NEXT: plan.buffer
// CHUNKS-NEXT: plan.kernel "mul"
// CHUNKS-NEXT: plan.cross_mesh_send @move0
// CHUNKS-NEXT: plan.chunk 1
// CHUNKS-NEXT: plan.buffer
// CHUNKS-NEXT: plan.cross_mesh_recv @move1
// CHUNKS: plan.cross_mesh_send @move2
// CHUNKS-NEXT: plan.backward_begin
// CHUNKS-NEXT: plan.chunk 1
// CHUNKS-NEXT: plan.chunk 0
// CHUNKS-NEXT: plan.after_micro_batches
// CHUNKS: plan.program @program1 devices = [1] mesh = @b {
// CHUNKS-NEXT: plan.chunk 0
// CHUNKS: plan.cross_mesh_recv @move0
// CHUNKS: plan.cross_mesh_send @move1
// CHUNKS-NEXT: plan.chunk 1
// CHUNKS: plan.cross_mesh_recv @move2
// CHUNKS: plan.kernel "accumulate"
// CHUNKS-NEXT: plan.backward_begin
// CHUNKS-GPIPE: lower-to-plan: schedule 'gpipe' runs stages of one model chunk, but they hold 2: use interleaved (sbp.chunks)

// -----

// Each kernel lowered from an nn op carries the cost model's figures for
// the device's share (ShardingCostModel::localWork, what sbp-assign priced
// the op by), for the simulator: rows split over two devices halve a
// matmul's 2 x 8 x 16 x 4 FLOPs and the bytes it reads and writes
// ((8x16 + 16x4 + 8x4) x 4 bytes); a relu on a replicated tensor is whole.
// The scale a mean over split rows adds is a helper, without figures. The
// plan carries the cluster it was priced on (the preset without one) and
// the search's prediction.
// CHECK-LABEL: module attributes {
// CHECK-SAME: plan.cluster = "{{.*}}dgx-h100{{.*}}plan.prediction = #plan.prediction<step_time = 3.000000e+00, compute_time = 1.000000e+00, communication_time = 2.000000e+00>
// CHECK: plan.kernel "matmul" ins({{.*}}) outs({{.*}} : memref<4x4xf32>) {bytes = 4.480000e+02 : f64, compute_type = "f32", flops = 5.120000e+02 : f64}
// CHECK: plan.kernel "relu" ins({{.*}} : memref<16x4xf32>) outs({{.*}}) {bytes = 5.120000e+02 : f64, compute_type = "f32", flops = 6.400000e+01 : f64}
// CHECK: plan.kernel "reduce_mean" ins({{.*}}) outs({{.*}}) {attrs = {axes = array<i64>, keepdims = false}, bytes = 6.600000e+01 : f64, compute_type = "f32", flops = 1.600000e+01 : f64}
// CHECK-NEXT: plan.buffer kind = constant
// CHECK-NEXT: plan.buffer
// CHECK-NEXT: plan.kernel "mul" ins({{.*}}) outs({{.*}} : memref<f32>){{$}}
module attributes {sbp.plan = #sbp.layout_plan<cluster = "dgx-h100", strategy = "auto", start = "auto", training = true, step_time = 3.0, compute_time = 1.0, communication_time = 2.0, overlap_time = 0.0, memory_bytes = 0, device_memory_bytes = 80000000000, baselines = {}, stages = [], schedule = "sequential", search_nodes = 1>} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<16x4xf32> {nn.updates = "w"}) {
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<8x16xf32>
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<16x4xf32>
    %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.b]] -> [[#sbp.s<0>]]>} : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    %r = nn.relu %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<16x4xf32>
    %m = nn.reduce_mean %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<8x4xf32> -> tensor<f32>
    %s = sbp.all_reduce %m on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %s, %r : tensor<f32>, tensor<16x4xf32>
  }
}

// -----

// A gradient's all-reduce that only the update reads feeds_update: the
// executor runs it on its gradients stream. The loss's all-reduce, which
// the step returns, does not.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<2x4xf32>) outs(%[[G:.*]] : memref<4xf32>)
// CHECK: plan.all_reduce %[[G]] on @axis0 {feeds_update} : memref<4xf32>
// CHECK: plan.all_reduce %{{.*}} on @axis0 : memref<f32>
// CHECK: plan.kernel "sgd_update" ins(%{{.*}}, %[[G]] : memref<4xf32>, memref<4xf32>)
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x4xf32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<4xf32>
    %gb = sbp.all_reduce %g on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<4xf32>
    %s = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<f32>
    %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
    %w1 = nn.sgd_update %w, %gb lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// Mixed precision: the bf16 gradient's all-reduce is read by the cast to
// the f32 master weights' type, which only the update reads: it feeds the
// update as well, and the cast runs where @main has it, before the update.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<2x4xbf16>) outs(%[[G:.*]] : memref<4xbf16>)
// CHECK: plan.all_reduce %[[G]] on @axis0 {feeds_update} : memref<4xbf16>
// CHECK: plan.all_reduce %{{.*}} on @axis0 : memref<f32>
// CHECK: plan.kernel "cast" ins(%[[G]] : memref<4xbf16>) outs(%[[F:.*]] : memref<4xf32>)
// CHECK: plan.kernel "sgd_update" ins(%{{.*}}, %[[F]] : memref<4xf32>, memref<4xf32>)
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x4xbf16>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xbf16> -> tensor<4xbf16>
    %gb = sbp.all_reduce %g on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<4xbf16>
    %xf = nn.cast %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4x4xbf16> -> tensor<4x4xf32>
    %s = nn.reduce_sum %xf keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<f32>
    %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
    %gf = nn.cast %gb {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xbf16> -> tensor<4xf32>
    %w1 = nn.sgd_update %w, %gf lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// And where the update runs on a shard, the cast's part is sliced out
// after it (insert-boxing's slice, read by the update alone): the
// all-reduce still feeds the update, as sbp-assign priced it before the
// slice was there.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<2x4xbf16>) outs(%[[G:.*]] : memref<4xbf16>)
// CHECK: plan.all_reduce %[[G]] on @axis0 {feeds_update} : memref<4xbf16>
// CHECK: plan.kernel "cast" ins(%[[G]] : memref<4xbf16>) outs(%[[F:.*]] : memref<4xf32>)
// CHECK: plan.kernel "slice" ins(%[[F]] : memref<4xf32>) outs(%[[H:.*]] : memref<2xf32>)
// CHECK: plan.kernel "sgd_update" ins(%{{.*}}, %[[H]] : memref<2xf32>, memref<2xf32>)
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x4xbf16>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xbf16> -> tensor<4xbf16>
    %gb = sbp.all_reduce %g on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<4xbf16>
    %xf = nn.cast %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4x4xbf16> -> tensor<4x4xf32>
    %s = nn.reduce_sum %xf keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<f32>
    %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
    %gf = nn.cast %gb {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xbf16> -> tensor<4xf32>
    %gh = sbp.slice %gf on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %w1 = nn.sgd_update %w, %gh lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.s<0>]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// Read by a kernel besides the update (%r), the all-reduce stays on the
// communication stream: the kernel waits for it wherever it runs.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<2x4xf32>) outs(%[[G:.*]] : memref<4xf32>)
// CHECK-NOT: feeds_update
// CHECK: plan.kernel "sgd_update"
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x4xf32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<4xf32>
    %gb = sbp.all_reduce %g on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<4xf32>
    %r = nn.reduce_sum %gb keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
    %w1 = nn.sgd_update %w, %gb lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %r, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// On a mesh of uneven shares (3 : 1 rows along axis 0), a gradient's
// reduce-scatter within each position (along axis 1) after the last
// boxing of an activation runs on the communication stream, idle by then,
// and the all-reduce that joins the positions on the gradients stream: a
// faster position would otherwise scatter only once the gradients
// stream's earlier all-reduces were done, which wait for the slowest.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<3x8xf32>) outs(%[[G:.*]] : memref<8xf32>)
// CHECK: plan.reduce_scatter %[[G]] into %[[H:.*]] on @axis1 axis = 0 : memref<8xf32> -> memref<4xf32>
// CHECK-NEXT: plan.all_reduce %[[H]] on @axis0 {feeds_update} : memref<4xf32>
// CHECK: plan.kernel "sgd_update"
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2x2, shares = [[3, 1], []])
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<8xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.s<0>]]>} : tensor<8xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<8x8xf32>
    %s = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<8x8xf32> -> tensor<f32>
    %s0 = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.b, #sbp.p<sum>] : tensor<f32>
    %l = sbp.all_reduce %s0 on @mesh axis 1 [#sbp.b, #sbp.p<sum>] -> [#sbp.b, #sbp.b] : tensor<f32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<8x8xf32> -> tensor<8xf32>
    %gs = sbp.reduce_scatter %g on @mesh axis 1 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.p<sum>, #sbp.s<0>] : tensor<8xf32>
    %gr = sbp.all_reduce %gs on @mesh axis 0 [#sbp.p<sum>, #sbp.s<0>] -> [#sbp.b, #sbp.s<0>] : tensor<8xf32>
    %w1 = nn.sgd_update %w, %gr lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.s<0>], [#sbp.b, #sbp.s<0>]] -> [[#sbp.b, #sbp.s<0>]]>} : tensor<8xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<0>]] -> []>} %l, %w1 : tensor<f32>, tensor<8xf32>
  }
}

// -----

// The same with a boxing of an activation after it (the loss summed
// along axis 0, then along axis 1): the reduce-scatter stays on the
// gradients stream, not to hold that boxing behind it.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.reduce_scatter %{{.*}} into %[[H:.*]] on @axis1 axis = 0 {feeds_update} : memref<8xf32> -> memref<4xf32>
// CHECK-NEXT: plan.all_reduce %[[H]] on @axis0 {feeds_update} : memref<4xf32>
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2x2, shares = [[3, 1], []])
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<8xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.s<0>]]>} : tensor<8xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<8x8xf32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<8x8xf32> -> tensor<8xf32>
    %gs = sbp.reduce_scatter %g on @mesh axis 1 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.p<sum>, #sbp.s<0>] : tensor<8xf32>
    %gr = sbp.all_reduce %gs on @mesh axis 0 [#sbp.p<sum>, #sbp.s<0>] -> [#sbp.b, #sbp.s<0>] : tensor<8xf32>
    %s = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<8x8xf32> -> tensor<f32>
    %s0 = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.b, #sbp.p<sum>] : tensor<f32>
    %l = sbp.all_reduce %s0 on @mesh axis 1 [#sbp.b, #sbp.p<sum>] -> [#sbp.b, #sbp.b] : tensor<f32>
    %w1 = nn.sgd_update %w, %gr lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.s<0>], [#sbp.b, #sbp.s<0>]] -> [[#sbp.b, #sbp.s<0>]]>} : tensor<8xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<0>]] -> []>} %l, %w1 : tensor<f32>, tensor<8xf32>
  }
}

// -----

// A split parameter gathered for the forward runs on the gradients stream
// (feeds_update), idle until the backward, so that it does not hold the
// activations' boxings behind it; gathered again for the backward (%wb),
// it stays on the communication stream, where it runs before its reader.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.all_gather %[[W:.*]] into %{{.*}} on @axis0 axis = 0 {feeds_update} : memref<2xf32> -> memref<4xf32>
// CHECK: plan.kernel "add"
// CHECK: plan.all_gather %[[W]] into %{{.*}} on @axis0 axis = 0 : memref<2xf32> -> memref<4xf32>
// CHECK: plan.kernel "sgd_update"
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    %wf = sbp.all_gather %w on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
    %xb = sbp.all_gather %x on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
    %y = nn.add %xb, %wf {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %l = nn.reduce_sum %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> -> tensor<f32>
    %wb = sbp.all_gather %w on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
    %g = nn.add %wb, %xb {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %gh = sbp.slice %g on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %w1 = nn.sgd_update %w, %gh lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.s<0>]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// Sliced after its all-reduce (the parameter's half updated on each
// device): the all-reduce is marked, and the slice is lowered just before
// the update, after the loss's reduce_sum, not where @main places it, so
// that the compute stream does not wait there for the gradients stream.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<2x4xf32>) outs(%[[G:.*]] : memref<4xf32>)
// CHECK-NEXT: plan.all_reduce %[[G]] on @axis0 {feeds_update} : memref<4xf32>
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<2x4xf32>) outs(%{{.*}} : memref<f32>)
// CHECK: plan.kernel "slice" ins(%[[G]] : memref<4xf32>) outs(%[[H:.*]] : memref<2xf32>)
// CHECK: plan.kernel "sgd_update" ins(%{{.*}}, %[[H]] : memref<2xf32>, memref<2xf32>)
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x4xf32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<4xf32>
    %gb = sbp.all_reduce %g on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<4xf32>
    %gh = sbp.slice %gb on @mesh axis 0 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
    %s = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<f32>
    %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
    %w1 = nn.sgd_update %w, %gh lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.s<0>]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// Sliced between two reductions (summed across the outer axis, the
// outer axis's part sliced out, then reduce-scattered along the inner
// one): the slice and the reduce-scatter after it are lowered just before
// the update, after the loss's reduce_sum, so that the compute stream does
// not wait mid-backward for the all-reduce, which therefore stays on the
// communication stream. The reduce-scatter, issued at the end, runs there
// too rather than behind the gradients stream's reductions of the
// backward.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<1x4xf32>) outs(%[[G:.*]] : memref<4xf32>)
// CHECK-NEXT: plan.all_reduce %[[G]] on @axis0 : memref<4xf32>
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<1x4xf32>) outs(%{{.*}} : memref<f32>)
// CHECK: plan.kernel "slice" ins(%[[G]] : memref<4xf32>) outs(%[[H:.*]] : memref<2xf32>)
// CHECK: plan.reduce_scatter %[[H]] into %[[Q:.*]] on @axis1 axis = 0 : memref<2xf32> -> memref<1xf32>
// CHECK: plan.kernel "sgd_update" ins(%{{.*}}, %[[Q]] : memref<1xf32>, memref<1xf32>)
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2x2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<4x4xf32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<4xf32>
    %gb = sbp.all_reduce %g on @mesh axis 0 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.b, #sbp.p<sum>] : tensor<4xf32>
    %gh = sbp.slice %gb on @mesh axis 0 [#sbp.b, #sbp.p<sum>] -> [#sbp.s<0>, #sbp.p<sum>] : tensor<4xf32>
    %gq = sbp.reduce_scatter %gh on @mesh axis 1 [#sbp.s<0>, #sbp.p<sum>] -> [#sbp.s<0>, #sbp.s<0>] : tensor<4xf32>
    %s = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<f32>
    %l0 = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.b, #sbp.p<sum>] : tensor<f32>
    %l = sbp.all_reduce %l0 on @mesh axis 1 [#sbp.b, #sbp.p<sum>] -> [#sbp.b, #sbp.b] : tensor<f32>
    %w1 = nn.sgd_update %w, %gq lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>], [#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b], [#sbp.s<0>, #sbp.s<0>]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}
// -----

// Reduced along both axes of a 2x2 mesh, a reduce-scatter then an
// all-reduce: both run on the gradients stream.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.reduce_scatter %{{.*}} into %[[H:.*]] on @axis1 axis = 0 {feeds_update} : memref<4xf32> -> memref<2xf32>
// CHECK-NEXT: plan.all_reduce %[[H]] on @axis0 {feeds_update} : memref<2xf32>
// CHECK: plan.kernel "sgd_update"
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2x2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.s<0>]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<4x4xf32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<4xf32>
    %gs = sbp.reduce_scatter %g on @mesh axis 1 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.p<sum>, #sbp.s<0>] : tensor<4xf32>
    %gb = sbp.all_reduce %gs on @mesh axis 0 [#sbp.p<sum>, #sbp.s<0>] -> [#sbp.b, #sbp.s<0>] : tensor<4xf32>
    %s = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<f32>
    %l0 = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.b, #sbp.p<sum>] : tensor<f32>
    %l = sbp.all_reduce %l0 on @mesh axis 1 [#sbp.b, #sbp.p<sum>] -> [#sbp.b, #sbp.b] : tensor<f32>
    %w1 = nn.sgd_update %w, %gb lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.s<0>], [#sbp.b, #sbp.s<0>]] -> [[#sbp.b, #sbp.s<0>]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b], [#sbp.b, #sbp.s<0>]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// An all-reduce then a gather before the update (a hierarchical
// all-reduce's second half): both run on the gradients stream; the loss's
// all-reduce does not.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.all_reduce %[[R:.*]] on @axis0 {feeds_update} : memref<2xf32>
// CHECK: plan.all_gather %[[R]] into %{{.*}} on @axis1 axis = 0 {feeds_update} : memref<2xf32> -> memref<4xf32>
// CHECK: plan.all_reduce %{{.*}} on @axis0 : memref<f32>
// CHECK: plan.kernel "sgd_update"
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2x2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.b]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.b]]>} : tensor<4x4xf32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.b]] -> [[#sbp.p<sum>, #sbp.s<0>]]>} : tensor<4x4xf32> -> tensor<4xf32>
    %gr = sbp.all_reduce %g on @mesh axis 0 [#sbp.p<sum>, #sbp.s<0>] -> [#sbp.b, #sbp.s<0>] : tensor<4xf32>
    %gb = sbp.all_gather %gr on @mesh axis 1 [#sbp.b, #sbp.s<0>] -> [#sbp.b, #sbp.b] : tensor<4xf32>
    %s = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.b]] -> [[#sbp.p<sum>, #sbp.b]]>} : tensor<4x4xf32> -> tensor<f32>
    %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>, #sbp.b] -> [#sbp.b, #sbp.b] : tensor<f32>
    %w1 = nn.sgd_update %w, %gb lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b], [#sbp.b, #sbp.b]] -> [[#sbp.b, #sbp.b]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b], [#sbp.b, #sbp.b]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// A hierarchical all-reduce of a gradient (reduce-scatter within a node,
// all-reduce of the parts, all-gather): all three on the gradients
// stream, and the all-gather writes the gradient's own buffer, which
// nothing reads after the reduce-scatter, instead of a second copy.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<1x4xf32>) outs(%[[G:.*]] : memref<4xf32>)
// CHECK-NEXT: %[[H:.*]] = plan.buffer : memref<2xf32>
// CHECK-NEXT: plan.reduce_scatter %[[G]] into %[[H]] on @axis1 axis = 0 {feeds_update} : memref<4xf32> -> memref<2xf32>
// CHECK-NEXT: plan.all_reduce %[[H]] on @axis0 {feeds_update} : memref<2xf32>
// CHECK-NEXT: plan.all_gather %[[H]] into %[[G]] on @axis1 axis = 0 {feeds_update} : memref<2xf32> -> memref<4xf32>
// CHECK: plan.kernel "sgd_update" ins(%{{.*}}, %[[G]] : memref<4xf32>, memref<4xf32>)
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2x2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<4xf32> {nn.updates = "w"}) {
    %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.b]]>} : tensor<4xf32>
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>, #sbp.s<0>]]>} : tensor<4x4xf32>
    %g = nn.reduce_sum %x axes = [0] keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<4xf32>
    %gs = sbp.reduce_scatter %g on @mesh axis 1 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.p<sum>, #sbp.s<0>] : tensor<4xf32>
    %gr = sbp.all_reduce %gs on @mesh axis 0 [#sbp.p<sum>, #sbp.s<0>] -> [#sbp.b, #sbp.s<0>] : tensor<4xf32>
    %gb = sbp.all_gather %gr on @mesh axis 1 [#sbp.b, #sbp.s<0>] -> [#sbp.b, #sbp.b] : tensor<4xf32>
    %s = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<0>]] -> [[#sbp.p<sum>, #sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<f32>
    %l0 = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>, #sbp.p<sum>] -> [#sbp.b, #sbp.p<sum>] : tensor<f32>
    %l = sbp.all_reduce %l0 on @mesh axis 1 [#sbp.b, #sbp.p<sum>] -> [#sbp.b, #sbp.b] : tensor<f32>
    %w1 = nn.sgd_update %w, %gb lr = 1.0e-1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b], [#sbp.b, #sbp.b]] -> [[#sbp.b, #sbp.b]]>} : tensor<4xf32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b, #sbp.b], [#sbp.b, #sbp.b]] -> []>} %l, %w1 : tensor<f32>, tensor<4xf32>
  }
}

// -----

// In a run of boxings between two ops, the next op's (the gather of %x
// that %b reads) comes before the previous op's result boxed for a later
// reader (the gather of %a that %d reads): the communication stream runs
// them in order, and %b need not wait behind the other, as sbp-assign's
// timeline prices it. A slice after a gather runs just before its reader
// (%e), not right after the gather, where the compute stream would wait
// for the gather before %b and %c.
// CHECK: // {{-----}}
// CHECK: plan.program @program0
// CHECK: plan.kernel "relu" ins(%[[X:[0-9]+]] : memref<2x4xf32>)
// CHECK-NEXT: %[[XG:[0-9]+]] = plan.buffer : memref<4x4xf32>
// CHECK-NEXT: plan.all_gather %[[X]] into %[[XG]] on @axis0 axis = 0 : memref<2x4xf32> -> memref<4x4xf32>
// CHECK-NEXT: %[[AG:[0-9]+]] = plan.buffer : memref<4x4xf32>
// CHECK-NEXT: plan.all_gather %{{[0-9]+}} into %[[AG]] on @axis0 axis = 0 : memref<2x4xf32> -> memref<4x4xf32>
// CHECK-NEXT: plan.buffer
// CHECK-NEXT: plan.kernel "relu" ins(%[[XG]] : memref<4x4xf32>)
// CHECK-NEXT: plan.buffer
// CHECK-NEXT: plan.kernel "relu"
// CHECK-NEXT: plan.buffer
// CHECK-NEXT: plan.kernel "add"
// CHECK-NEXT: plan.buffer
// CHECK-NEXT: plan.kernel "slice"
// CHECK-NEXT: plan.buffer
// CHECK-NEXT: plan.kernel "slice" ins(%[[AG]] : memref<4x4xf32>)
// CHECK-NEXT: plan.buffer
// CHECK-NEXT: plan.kernel "add"
module attributes {nn.training = {}} {
  sbp.mesh @mesh(shape = 2)
  func.func @main() -> (tensor<f32> {nn.name = "loss"}) {
    %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<4x4xf32>
    %a = nn.relu %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<4x4xf32>
    %ag = sbp.all_gather %a on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4x4xf32>
    %as = sbp.slice %ag on @mesh axis 0 [#sbp.b] -> [#sbp.s<1>] : tensor<4x4xf32>
    %xg = sbp.all_gather %x on @mesh axis 0 [#sbp.s<0>] -> [#sbp.b] : tensor<4x4xf32>
    %b = nn.relu %xg {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4x4xf32>
    %c = nn.relu %b {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4x4xf32>
    %d = nn.add %c, %b {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %ds = sbp.slice %d on @mesh axis 0 [#sbp.b] -> [#sbp.s<1>] : tensor<4x4xf32>
    %e = nn.add %as, %ds {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<1>], [#sbp.s<1>]] -> [[#sbp.s<1>]]>} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %s = nn.reduce_sum %e keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<1>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32> -> tensor<f32>
    %l = sbp.all_reduce %s on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<f32>
    return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> []>} %l : tensor<f32>
  }
}
