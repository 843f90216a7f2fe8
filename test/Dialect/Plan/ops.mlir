// RUN: parplan-opt %s -split-input-file | parplan-opt -split-input-file | FileCheck %s

// Without plan.mesh_shape the mesh is one axis of the devices listed.
// CHECK: plan.group @pair devices = [0, 1]
// CHECK: plan.group @triple devices = [2, 0, 1]
plan.group @pair devices = [0, 1]
plan.group @triple devices = [2, 0, 1]

// CHECK-LABEL: plan.program @dev0 devices = [0] {
plan.program @dev0 devices = [0] {
  // CHECK: %[[X:.*]] = plan.buffer {name = "x", offset = 0 : i64} : memref<4x8xf32>
  %x = plan.buffer {name = "x", offset = 0} : memref<4x8xf32>
  // CHECK: %[[W:.*]] = plan.buffer : memref<8x4xf32>
  %w = plan.buffer : memref<8x4xf32>
  // CHECK: %[[Y:.*]] = plan.buffer : memref<4x4xf32>
  %y = plan.buffer : memref<4x4xf32>
  %g = plan.buffer : memref<8x4xf32>
  %u = plan.buffer : memref<5x4xf32>
  %v = plan.buffer : memref<2x4xf32>
  // CHECK: plan.kernel "matmul" ins(%[[X]], %[[W]] : memref<4x8xf32>, memref<8x4xf32>) outs(%[[Y]] : memref<4x4xf32>)
  plan.kernel "matmul" ins(%x, %w : memref<4x8xf32>, memref<8x4xf32>) outs(%y : memref<4x4xf32>)
  // CHECK: plan.kernel "fill" outs(%[[Y]] : memref<4x4xf32>) {attrs = {value = 0.000000e+00 : f32}}
  plan.kernel "fill" outs(%y : memref<4x4xf32>) {attrs = {value = 0.0 : f32}}
  // The default reduction (sum) is not printed.
  // CHECK: plan.all_reduce %[[Y]] on @pair : memref<4x4xf32>
  plan.all_reduce %y on @pair reduce = sum : memref<4x4xf32>
  // CHECK: plan.all_reduce %[[Y]] on @pair reduce = max : memref<4x4xf32>
  plan.all_reduce %y on @pair reduce = max : memref<4x4xf32>
  // CHECK: plan.all_gather %[[Y]] into %{{.*}} on @pair axis = 0 : memref<4x4xf32> -> memref<8x4xf32>
  plan.all_gather %y into %g on @pair axis = 0 : memref<4x4xf32> -> memref<8x4xf32>
  // Balanced split: 5 rows over 3 devices are 2, 2, 1; device 0 holds 2.
  // CHECK: plan.all_gather %{{.*}} into %{{.*}} on @triple axis = 0 : memref<2x4xf32> -> memref<5x4xf32>
  plan.all_gather %v into %u on @triple axis = 0 : memref<2x4xf32> -> memref<5x4xf32>
  // CHECK: plan.reduce_scatter %{{.*}} into %[[Y]] on @pair axis = 0 reduce = min : memref<8x4xf32> -> memref<4x4xf32>
  plan.reduce_scatter %g into %y on @pair axis = 0 reduce = min : memref<8x4xf32> -> memref<4x4xf32>
  // CHECK: plan.all_to_all %[[X]] into %[[W]] on @pair split_axis = 1 concat_axis = 0 : memref<4x8xf32> -> memref<8x4xf32>
  plan.all_to_all %x into %w on @pair split_axis = 1 concat_axis = 0 : memref<4x8xf32> -> memref<8x4xf32>
  // Uneven: device 0 is member 1 of @triple; it keeps part 1 of 5 columns
  // (2 of 2, 2, 1) and its 3 rows are part 1 of 8 (3 of 3, 3, 2).
  %a = plan.buffer : memref<3x5xf32>
  %b = plan.buffer : memref<8x2xf32>
  // CHECK: plan.all_to_all %{{.*}} into %{{.*}} on @triple split_axis = 1 concat_axis = 0 : memref<3x5xf32> -> memref<8x2xf32>
  plan.all_to_all %a into %b on @triple split_axis = 1 concat_axis = 0 : memref<3x5xf32> -> memref<8x2xf32>
  // The root is a rank in the group.
  // CHECK: plan.broadcast %[[Y]] on @pair root = 1 : memref<4x4xf32>
  plan.broadcast %y on @pair root = 1 : memref<4x4xf32>
  // CHECK: plan.send %[[Y]] to 1 tag = 0 : memref<4x4xf32>
  plan.send %y to 1 tag = 0 : memref<4x4xf32>
  // CHECK: plan.recv %[[Y]] from 1 tag = 1 : memref<4x4xf32>
  plan.recv %y from 1 tag = 1 : memref<4x4xf32>
}

// CHECK-LABEL: plan.program @dev1 devices = [1, 2] {
// CHECK-NEXT: }
plan.program @dev1 devices = [1, 2] {
}

// -----

// One program for the four devices of a 2x2 mesh: what differs between
// them is said by coordinates.
module attributes {plan.mesh_shape = array<i64: 2, 2>} {
  // CHECK: plan.group @axis1 mesh_axes = [1]
  plan.group @axis1 mesh_axes = [1]
  // CHECK: plan.group @whole mesh_axes = [0, 1]
  plan.group @whole mesh_axes = [0, 1]

  // CHECK-LABEL: plan.program @step devices = [0, 1, 2, 3] {
  // CHECK: %[[W:.*]] = plan.buffer kind = parameter {logical_shape = array<i64: 8, 8>, name = "w", source = "initializer", splits = array<i64: -1, 1>} : memref<8x4xf32>
  // CHECK: plan.buffer kind = input {logical_shape = array<i64: 4>, name = "ids", splits = array<i64: 0, -1>, value_bound = 100 : i64} : memref<2xi64>
  // CHECK: plan.buffer kind = constant {value = dense<5.000000e-01> : tensor<f32>} : memref<f32>
  // CHECK: plan.buffer kind = constant {logical_shape = array<i64: 2>, splits = array<i64: 0, -1>, value = dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>} : memref<1xf32>
  // CHECK: plan.all_gather %{{.*}} into %{{.*}} on @axis1 axis = 1 : memref<8x4xf32> -> memref<8x8xf32>
  // CHECK: plan.kernel "slice" {{.*}}starts = #plan.block_offset<shape = [8, 8], splits = [-1, 1], dim = -1>
  // CHECK: plan.all_reduce %{{.*}} on @whole : memref<f32>
  // CHECK: plan.loss %{{.*}} : memref<f32>
  // CHECK: plan.update %[[W]] from %{{.*}} : memref<8x4xf32>
  plan.program @step devices = [0, 1, 2, 3] {
    %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 8, 8>, splits = array<i64: -1, 1>, source = "initializer"} : memref<8x4xf32>
    %ids = plan.buffer kind = input {name = "ids", logical_shape = array<i64: 4>, splits = array<i64: 0, -1>, value_bound = 100} : memref<2xi64>
    %half = plan.buffer kind = constant {value = dense<0.5> : tensor<f32>} : memref<f32>
    %first = plan.buffer kind = constant {logical_shape = array<i64: 2>, splits = array<i64: 0, -1>, value = dense<[1.0, 0.0]> : tensor<2xf32>} : memref<1xf32>
    %full = plan.buffer : memref<8x8xf32>
    %again = plan.buffer : memref<8x4xf32>
    %loss = plan.buffer : memref<f32>
    %w1 = plan.buffer : memref<8x4xf32>
    plan.all_gather %w into %full on @axis1 axis = 1 : memref<8x4xf32> -> memref<8x8xf32>
    plan.kernel "slice" ins(%full : memref<8x8xf32>) outs(%again : memref<8x4xf32>) {attrs = {starts = #plan.block_offset<shape = [8, 8], splits = [-1, 1], dim = -1>, steps = array<i64: 1, 1>}}
    plan.kernel "mul" ins(%again, %half : memref<8x4xf32>, memref<f32>) outs(%w1 : memref<8x4xf32>)
    plan.kernel "reduce_sum" ins(%w1 : memref<8x4xf32>) outs(%loss : memref<f32>) {attrs = {axes = array<i64>, keepdims = false}}
    plan.all_reduce %loss on @whole : memref<f32>
    plan.loss %loss : memref<f32>
    plan.update %w from %w1 : memref<8x4xf32>
  }
}

// -----

// Programs and groups on named meshes: a device's coordinate is its
// position in its mesh's devices. On @stage1, device 5 is at [1, 0], so
// its block of rows split over axis 0 is rows 2..3 (checked by the buffer's
// verifier), and @stage1.rows of device 5 is [5, 1].
// CHECK: plan.mesh @stage0 shape = [2] devices = [0, 2]
// CHECK: plan.mesh @stage1 shape = [2, 2] devices = [7, 3, 5, 1]
// CHECK: plan.group @stage1.cols mesh_axes = [1] mesh = @stage1
// CHECK: plan.program @first devices = [0, 2] mesh = @stage0 {
// CHECK: plan.program @second devices = [1, 3, 5, 7] mesh = @stage1 {
module attributes {plan.mesh_shape = array<i64: 8>} {
  plan.mesh @stage0 shape = [2] devices = [0, 2]
  plan.mesh @stage1 shape = [2, 2] devices = [7, 3, 5, 1]
  plan.group @stage1.cols mesh_axes = [1] mesh = @stage1
  plan.program @first devices = [0, 2] mesh = @stage0 {
    %x = plan.buffer kind = parameter {name = "x", logical_shape = array<i64: 4, 6>, splits = array<i64: 0>} : memref<2x6xf32>
  }
  plan.program @second devices = [1, 3, 5, 7] mesh = @stage1 {
    %x = plan.buffer kind = parameter {name = "y", logical_shape = array<i64: 4, 6>, splits = array<i64: 0, 1>} : memref<2x3xf32>
    %all = plan.buffer : memref<2x6xf32>
    plan.all_gather %x into %all on @stage1.cols axis = 1 : memref<2x3xf32> -> memref<2x6xf32>
  }
  // CHECK: plan.buffer kind = output {{[{].*}}name = "z"
  plan.program @idle devices = [4, 6] {
    %z = plan.buffer kind = output {name = "z", logical_shape = array<i64: 3>, splits = array<i64: -1>} : memref<3xf32>
  }
}

// -----

// A step of micro-batches: a copy of the parameter every micro-batch
// reads, made once before them, the backward, a sum in an accumulator,
// then the update.
// CHECK-LABEL: plan.program @accumulating
// CHECK: plan.kernel "cast"
// CHECK-NEXT: plan.forward_begin
// CHECK: plan.backward_begin
// CHECK-NEXT: %[[SUM:.*]] = plan.buffer kind = accumulator : memref<4xf32>
// CHECK: plan.kernel "accumulate" ins(%[[SUM]], %{{.*}} : memref<4xf32>, memref<4xf32>) outs(%[[SUM]] : memref<4xf32>)
// CHECK-NEXT: plan.after_micro_batches
// CHECK-NEXT: plan.kernel "sgd_update"
plan.program @accumulating devices = [0] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 4>, splits = array<i64: -1>} : memref<4xf32>
  %wb = plan.buffer : memref<4xbf16>
  plan.kernel "cast" ins(%w : memref<4xf32>) outs(%wb : memref<4xbf16>)
  plan.forward_begin
  %g = plan.buffer : memref<4xf32>
  plan.backward_begin
  %sum = plan.buffer kind = accumulator : memref<4xf32>
  plan.kernel "accumulate" ins(%sum, %g : memref<4xf32>, memref<4xf32>) outs(%sum : memref<4xf32>)
  plan.after_micro_batches
  plan.kernel "sgd_update" ins(%w, %sum : memref<4xf32>, memref<4xf32>) outs(%w : memref<4xf32>) {attrs = {lr = 0.1 : f64}}
}

// -----

// A cross-mesh move: one table, and each side's part of it.
// CHECK: plan.cross_mesh @move0 : tensor<4x2xf32> from @a [0] to @b [-1] tile_offsets = [0, 0, 2, 0] tile_sizes = [2, 2, 2, 2] transfer_tiles = [0, 1] transfer_senders = [0, 1] receiver_counts = [2, 2] receivers = [2, 3, 2, 3]
// CHECK: plan.cross_mesh_send @move0 %{{.*}} : memref<2x2xf32>
// CHECK: plan.cross_mesh_recv @move0 %[[B:.*]] scratch %[[S:.*]] : memref<4x2xf32>, memref<256xi8>
plan.mesh @a shape = [2] devices = [0, 1]
plan.mesh @b shape = [2] devices = [2, 3]
plan.cross_mesh @move0 : tensor<4x2xf32> from @a [0] to @b [-1]
    tile_offsets = [0, 0, 2, 0] tile_sizes = [2, 2, 2, 2]
    transfer_tiles = [0, 1] transfer_senders = [0, 1]
    receiver_counts = [2, 2] receivers = [2, 3, 2, 3]
plan.program @program0 devices = [0, 1] mesh = @a {
  %x = plan.buffer : memref<2x2xf32>
  plan.cross_mesh_send @move0 %x : memref<2x2xf32>
}
plan.program @program1 devices = [2, 3] mesh = @b {
  %s = plan.buffer : memref<256xi8>
  %y = plan.buffer : memref<4x2xf32>
  plan.cross_mesh_recv @move0 %y scratch %s : memref<4x2xf32>, memref<256xi8>
}

// -----

// A program of two model chunks: the forward marks them in order, the
// backward in reverse.
// CHECK-LABEL: plan.program @chunks devices = [0] {
// CHECK-NEXT: plan.chunk 0
// CHECK-NEXT: plan.chunk 1
// CHECK-NEXT: plan.backward_begin
// CHECK-NEXT: plan.chunk 1
// CHECK-NEXT: plan.chunk 0
// CHECK-NEXT: plan.after_micro_batches
plan.program @chunks devices = [0] {
  plan.chunk 0
  plan.chunk 1
  plan.backward_begin
  plan.chunk 1
  plan.chunk 0
  plan.after_micro_batches
}

// -----

// The search's prediction on a plan module reads back as written.
// CHECK-LABEL: module attributes {plan.prediction = #plan.prediction<step_time = 3.000000e+00, compute_time = 1.250000e+00, communication_time = 1.750000e+00>}
module attributes {plan.prediction = #plan.prediction<step_time = 3.0, compute_time = 1.25, communication_time = 1.75>} {
}
