// RUN: parplan-opt %s -split-input-file -plan-memory | FileCheck %s
// The time index changes no offset: the same checks hold with buckets of
// one, two and three positions, where placements read the tree over them.
// RUN: parplan-opt %s -split-input-file -plan-memory=bucket-positions=1 | FileCheck %s
// RUN: parplan-opt %s -split-input-file -plan-memory=bucket-positions=2 | FileCheck %s
// RUN: parplan-opt %s -split-input-file -plan-memory=bucket-positions=3 | FileCheck %s
// RUN: parplan-opt %s -split-input-file -plan-memory=reshape-views=false | FileCheck %s --check-prefix=NOVIEWS

// Named buffers live for the whole step, at the bottom of the arena;
// temporaries whose lives do not overlap share bytes (64-byte aligned).
// CHECK-LABEL: plan.program @dev0 devices = [0] attributes {plan.arena_bytes = 4224 : i64}
// CHECK: %[[W:.*]] = plan.buffer kind = {{[a-z]+}} {{{.*}}name = "w", offset = 0 : i64, splits = array<i64: -1>} : memref<32x32xf32>
// CHECK: %[[A:.*]] = plan.buffer {offset = 4096 : i64} : memref<8xf32>
// CHECK: %[[B:.*]] = plan.buffer {offset = 4160 : i64} : memref<8xf32>
// CHECK: %[[C:.*]] = plan.buffer {offset = 4096 : i64} : memref<8xf32>
plan.program @dev0 devices = [0] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 32, 32>, splits = array<i64: -1>} : memref<32x32xf32>
  %a = plan.buffer : memref<8xf32>
  plan.kernel "reduce_sum" ins(%w : memref<32x32xf32>) outs(%a : memref<8xf32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  %b = plan.buffer : memref<8xf32>
  plan.kernel "relu" ins(%a : memref<8xf32>) outs(%b : memref<8xf32>)
  %c = plan.buffer : memref<8xf32>
  plan.kernel "relu" ins(%b : memref<8xf32>) outs(%c : memref<8xf32>)
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%c : memref<8xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64>, keepdims = false}}
  plan.loss %l : memref<f32>
}

// -----

// A forward and backward pass: the activations kept for the backward pass
// (%a1, %a2) live across the larger temporaries between them (%t1, %t2,
// placed first, sharing bytes); the gradients reuse those bytes once the
// temporaries are dead, %g0 those of %g2 once %g2 is read.
// CHECK-LABEL: plan.program @kept
// CHECK-SAME: plan.arena_bytes = 384
// CHECK: plan.buffer kind = {{[a-z]+}} {{{.*}}name = "x", offset = 0 : i64
// CHECK-NEXT: %[[A1:.*]] = plan.buffer {offset = 192 : i64} : memref<16xf32>
// CHECK: %[[T1:.*]] = plan.buffer {offset = 64 : i64} : memref<32xf32>
// CHECK: %[[A2:.*]] = plan.buffer {offset = 256 : i64} : memref<16xf32>
// CHECK: %[[T2:.*]] = plan.buffer {offset = 64 : i64} : memref<32xf32>
// CHECK: %[[L:.*]] = plan.buffer {offset = 320 : i64} : memref<f32>
// CHECK: %[[G2:.*]] = plan.buffer {offset = 64 : i64} : memref<16xf32>
// CHECK: %[[G1:.*]] = plan.buffer {offset = 128 : i64} : memref<16xf32>
// CHECK: %[[G0:.*]] = plan.buffer {offset = 64 : i64} : memref<16xf32>
plan.program @kept devices = [0] {
  %x = plan.buffer kind = input {name = "x", logical_shape = array<i64: 16>, splits = array<i64: -1>} : memref<16xf32>
  %a1 = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%x : memref<16xf32>) outs(%a1 : memref<16xf32>)
  %t1 = plan.buffer : memref<32xf32>
  plan.kernel "concat" ins(%a1, %a1 : memref<16xf32>, memref<16xf32>) outs(%t1 : memref<32xf32>) {attrs = {axis = 0 : i64}}
  %a2 = plan.buffer : memref<16xf32>
  plan.kernel "reduce_sum" ins(%t1 : memref<32xf32>) outs(%a2 : memref<16xf32>) {attrs = {axes = array<i64>, keepdims = false}}
  %t2 = plan.buffer : memref<32xf32>
  plan.kernel "concat" ins(%a2, %a2 : memref<16xf32>, memref<16xf32>) outs(%t2 : memref<32xf32>) {attrs = {axis = 0 : i64}}
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%t2 : memref<32xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.loss %l : memref<f32>
  %g2 = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%a2 : memref<16xf32>) outs(%g2 : memref<16xf32>)
  %g1 = plan.buffer : memref<16xf32>
  plan.kernel "add" ins(%g2, %a1 : memref<16xf32>, memref<16xf32>) outs(%g1 : memref<16xf32>)
  %g0 = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%g1 : memref<16xf32>) outs(%g0 : memref<16xf32>)
}

// -----

// Largest first: %big, created last, is placed first at the bottom;
// %small, living at the same time, goes above it; %early, dead before %big
// is created, shares its bytes.
// CHECK-LABEL: plan.program @largest
// CHECK-SAME: plan.arena_bytes = 384
// CHECK: plan.buffer {offset = 0 : i64} : memref<16xf32>
// CHECK: plan.buffer {offset = 256 : i64} : memref<4xf32>
// CHECK: plan.buffer {offset = 0 : i64} : memref<64xf32>
plan.program @largest devices = [0] {
  %early = plan.buffer : memref<16xf32>
  plan.kernel "fill" outs(%early : memref<16xf32>) {attrs = {value = 1.0 : f64}}
  %small = plan.buffer : memref<4xf32>
  plan.kernel "reduce_sum" ins(%early : memref<16xf32>) outs(%small : memref<4xf32>) {attrs = {axes = array<i64>, keepdims = false}}
  %big = plan.buffer : memref<64xf32>
  plan.kernel "concat" ins(%small, %small : memref<4xf32>, memref<4xf32>) outs(%big : memref<64xf32>) {attrs = {axis = 0 : i64}}
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%big, %small : memref<64xf32>, memref<4xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.loss %l : memref<f32>
}

// -----

// Every program has an arena of its own.
// CHECK-LABEL: plan.program @first
// CHECK-SAME: plan.arena_bytes = 64
// CHECK-LABEL: plan.program @second
// CHECK-SAME: plan.arena_bytes = 128
plan.program @first devices = [0] {
  %a = plan.buffer : memref<4xf32>
  plan.kernel "fill" outs(%a : memref<4xf32>) {attrs = {value = 1.0 : f64}}
}
plan.program @second devices = [1] {
  %a = plan.buffer : memref<4xf32>
  plan.kernel "fill" outs(%a : memref<4xf32>) {attrs = {value = 1.0 : f64}}
  %b = plan.buffer : memref<4xf32>
  plan.kernel "relu" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
}

// -----

// A reshape's result is a view of its operand: one offset, one life (the
// union of both), and no bytes of its own; so is a reshape of that view.
// CHECK-LABEL: plan.program @views
// CHECK-SAME: plan.arena_bytes = 128
// CHECK: %[[A:.*]] = plan.buffer {offset = 0 : i64} : memref<4x4xf32>
// CHECK: %[[B:.*]] = plan.buffer {offset = 0 : i64} : memref<16xf32>
// CHECK: %[[C:.*]] = plan.buffer {offset = 0 : i64} : memref<2x8xf32>
// CHECK: plan.buffer {offset = 64 : i64} : memref<16xf32>
// Without views, each takes bytes of its own.
// NOVIEWS-LABEL: plan.program @views
// NOVIEWS-SAME: plan.arena_bytes = 256
// NOVIEWS: plan.buffer {offset = 0 : i64} : memref<4x4xf32>
// NOVIEWS: plan.buffer {offset = 64 : i64} : memref<16xf32>
// NOVIEWS: plan.buffer {offset = 128 : i64} : memref<2x8xf32>
plan.program @views devices = [0] {
  %a = plan.buffer : memref<4x4xf32>
  plan.kernel "fill" outs(%a : memref<4x4xf32>) {attrs = {value = 1.0 : f64}}
  %b = plan.buffer : memref<16xf32>
  plan.kernel "reshape" ins(%a : memref<4x4xf32>) outs(%b : memref<16xf32>)
  %c = plan.buffer : memref<2x8xf32>
  plan.kernel "reshape" ins(%b : memref<16xf32>) outs(%c : memref<2x8xf32>)
  %d = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%b : memref<16xf32>) outs(%d : memref<16xf32>)
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%c, %a : memref<2x8xf32>, memref<4x4xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0, 1>, keepdims = false}}
  plan.loss %l : memref<f32>
}

// -----

// Not a view where either is written after the reshape (an all-reduce in
// place on the result), where the result is written before it, or where
// the operand lives across steps: each takes bytes of its own.
// CHECK-LABEL: plan.program @not_views
// CHECK: plan.buffer kind = {{[a-z]+}} {{{.*}}name = "w", offset = 0 : i64
// CHECK: plan.buffer {offset = [[A:[0-9]+]] : i64} : memref<4x4xf32>
// CHECK-NOT: offset = [[A]] :
// CHECK: plan.loss
plan.group @g devices = [0, 1]
plan.program @not_views devices = [0] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 16>, splits = array<i64: -1>} : memref<16xf32>
  %a = plan.buffer : memref<4x4xf32>
  plan.kernel "fill" outs(%a : memref<4x4xf32>) {attrs = {value = 1.0 : f64}}
  %b = plan.buffer : memref<16xf32>
  plan.kernel "reshape" ins(%a : memref<4x4xf32>) outs(%b : memref<16xf32>)
  plan.all_reduce %b on @g reduce = sum : memref<16xf32>
  %c = plan.buffer : memref<16xf32>
  plan.kernel "fill" outs(%c : memref<16xf32>) {attrs = {value = 1.0 : f64}}
  plan.kernel "reshape" ins(%a : memref<4x4xf32>) outs(%c : memref<16xf32>)
  %d = plan.buffer : memref<4x4xf32>
  plan.kernel "reshape" ins(%w : memref<16xf32>) outs(%d : memref<4x4xf32>)
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%b, %c, %d, %a : memref<16xf32>, memref<16xf32>, memref<4x4xf32>, memref<4x4xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.loss %l : memref<f32>
}

// -----

// A gather's input lives until the gather's output is first read: the
// gather runs on the communication stream, and a kernel given the input's
// bytes before then would wait for it, where the kernels between the
// gather and its reader (writing %c and %d) can run under it.
// CHECK-LABEL: plan.program @gather_ahead
// CHECK: %[[X:.*]] = plan.buffer {offset = [[XOFF:[0-9]+]] : i64} : memref<16xf32>
// CHECK: plan.all_gather %[[X]]
// CHECK-NOT: offset = [[XOFF]] :
// CHECK: plan.kernel "reduce_sum" ins(%{{.*}} : memref<32xf32>)
plan.group @g2 devices = [0, 1]
plan.program @gather_ahead devices = [0] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 16>, splits = array<i64: -1>} : memref<16xf32>
  %x = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%w : memref<16xf32>) outs(%x : memref<16xf32>)
  %y = plan.buffer : memref<32xf32>
  plan.all_gather %x into %y on @g2 axis = 0 : memref<16xf32> -> memref<32xf32>
  %c = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%w : memref<16xf32>) outs(%c : memref<16xf32>)
  %d = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%c : memref<16xf32>) outs(%d : memref<16xf32>)
  %s = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%y : memref<32xf32>) outs(%s : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  %e = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%d : memref<16xf32>) outs(%e : memref<16xf32>)
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%e : memref<16xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.loss %l : memref<f32>
}

// -----

// A gradient's hierarchical all-reduce on the gradients stream
// (feeds_update) may run late by as long as the stream lags: the gradient
// %g and its scattered part %h live until the update reads what the stream
// makes of them, so neither the gathered %f nor the kernels before the
// update (%c, %d, %l) take their bytes. Unmarked, %f takes %g's.
// CHECK-LABEL: plan.program @gradients_stream
// CHECK: %[[G:.*]] = plan.buffer {offset = [[GOFF:[0-9]+]] : i64} : memref<16xf32>
// CHECK: %[[H:.*]] = plan.buffer {offset = [[HOFF:[0-9]+]] : i64} : memref<8xf32>
// CHECK-NOT: offset = [[GOFF]] :
// CHECK-NOT: offset = [[HOFF]] :
// CHECK: plan.kernel "sgd_update"
// CHECK-LABEL: plan.program @gradients_unmarked
// CHECK: %[[G:.*]] = plan.buffer {offset = [[GOFF:[0-9]+]] : i64} : memref<16xf32>
// CHECK: plan.buffer {offset = [[GOFF]] : i64} : memref<16xf32>
// CHECK-NEXT: plan.all_gather
plan.group @g2 devices = [0, 1]
plan.program @gradients_stream devices = [0] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 16>, splits = array<i64: -1>} : memref<16xf32>
  %g = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%w : memref<16xf32>) outs(%g : memref<16xf32>)
  %h = plan.buffer : memref<8xf32>
  plan.reduce_scatter %g into %h on @g2 axis = 0 {feeds_update} : memref<16xf32> -> memref<8xf32>
  plan.all_reduce %h on @g2 {feeds_update} : memref<8xf32>
  %f = plan.buffer : memref<16xf32>
  plan.all_gather %h into %f on @g2 axis = 0 {feeds_update} : memref<8xf32> -> memref<16xf32>
  %c = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%w : memref<16xf32>) outs(%c : memref<16xf32>)
  %d = plan.buffer : memref<8xf32>
  plan.kernel "reduce_sum" ins(%c : memref<16xf32>) outs(%d : memref<8xf32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%d : memref<8xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.kernel "sgd_update" ins(%w, %f : memref<16xf32>, memref<16xf32>) outs(%w : memref<16xf32>) {attrs = {lr = 1.0e-1 : f64}}
  plan.loss %l : memref<f32>
}
plan.program @gradients_unmarked devices = [1] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 16>, splits = array<i64: -1>} : memref<16xf32>
  %g = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%w : memref<16xf32>) outs(%g : memref<16xf32>)
  %h = plan.buffer : memref<8xf32>
  plan.reduce_scatter %g into %h on @g2 axis = 0 : memref<16xf32> -> memref<8xf32>
  plan.all_reduce %h on @g2 : memref<8xf32>
  %f = plan.buffer : memref<16xf32>
  plan.all_gather %h into %f on @g2 axis = 0 : memref<8xf32> -> memref<16xf32>
  %c = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%w : memref<16xf32>) outs(%c : memref<16xf32>)
  %d = plan.buffer : memref<8xf32>
  plan.kernel "reduce_sum" ins(%c : memref<16xf32>) outs(%d : memref<8xf32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%d : memref<8xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.kernel "sgd_update" ins(%w, %f : memref<16xf32>, memref<16xf32>) outs(%w : memref<16xf32>) {attrs = {lr = 1.0e-1 : f64}}
  plan.loss %l : memref<f32>
}

// -----

// What the step computes before the micro-batches (%wb, before
// plan.forward_begin) lives until plan.after_micro_batches, though the
// micro-batch's last reader of it comes first: the next micro-batch reads
// it again, so %t, written after that reader, does not take its bytes.
// CHECK-LABEL: plan.program @kept_for_micro_batches
// CHECK: %[[WB:.*]] = plan.buffer {offset = [[WBOFF:[0-9]+]] : i64} : memref<16xf32>
// CHECK: plan.forward_begin
// CHECK-NOT: offset = [[WBOFF]] :
// CHECK: plan.after_micro_batches
plan.program @kept_for_micro_batches devices = [0] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 16>, splits = array<i64: -1>} : memref<16xf32>
  %wb = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%w : memref<16xf32>) outs(%wb : memref<16xf32>)
  plan.forward_begin
  %x = plan.buffer kind = input {name = "x", logical_shape = array<i64: 16>, splits = array<i64: -1>} : memref<16xf32>
  %y = plan.buffer : memref<16xf32>
  plan.kernel "add" ins(%x, %wb : memref<16xf32>, memref<16xf32>) outs(%y : memref<16xf32>)
  %t = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%y : memref<16xf32>) outs(%t : memref<16xf32>)
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%t : memref<16xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  %sum = plan.buffer kind = accumulator : memref<f32>
  plan.kernel "accumulate" ins(%sum, %l : memref<f32>, memref<f32>) outs(%sum : memref<f32>)
  plan.after_micro_batches
  plan.loss %sum : memref<f32>
}

// -----

// A parameter gathered for a later reader may start once the communication
// stream is past the collective before it (the cost model's timeline
// starts it there): its output is reserved from then on, so it does not
// take the bytes of %v, which the kernel writing %u still reads (the
// gather would wait for that kernel). %t, dead before the all-reduce, may
// share bytes with it. A temporary's gather is not reserved so (below):
// its input is written just before it anyway.
// CHECK-LABEL: plan.program @parameter_gathered_ahead
// CHECK: plan.buffer {offset = [[TOFF:[0-9]+]] : i64} : memref<32xf32>
// CHECK-NEXT: plan.kernel "fill"
// CHECK-NEXT: plan.buffer {offset = [[VOFF:[0-9]+]] : i64} : memref<32xf32>
// CHECK-NOT: offset = [[VOFF]] :
// CHECK: plan.all_gather
// CHECK-LABEL: plan.program @temporary_gathered
// CHECK: plan.buffer {offset = [[VOFF:[0-9]+]] : i64} : memref<16xf32>
// CHECK: plan.buffer {offset = [[VOFF]] : i64} : memref<32xf32>
// CHECK-NEXT: plan.all_gather
module attributes {plan.mesh_shape = array<i64: 2>} {
plan.group @g2 mesh_axes = [0]
plan.program @parameter_gathered_ahead devices = [0, 1] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 32>, splits = array<i64: 0>} : memref<16xf32>
  %t = plan.buffer : memref<32xf32>
  plan.kernel "fill" outs(%t : memref<32xf32>) {attrs = {value = 1.0 : f64}}
  %v = plan.buffer : memref<32xf32>
  plan.kernel "relu" ins(%t : memref<32xf32>) outs(%v : memref<32xf32>)
  plan.all_reduce %v on @g2 : memref<32xf32>
  %u = plan.buffer : memref<32xf32>
  plan.kernel "relu" ins(%v : memref<32xf32>) outs(%u : memref<32xf32>)
  %g = plan.buffer : memref<32xf32>
  plan.all_gather %w into %g on @g2 axis = 0 : memref<16xf32> -> memref<32xf32>
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%g, %u : memref<32xf32>, memref<32xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.loss %l : memref<f32>
}
plan.program @temporary_gathered devices = [0, 1] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 32>, splits = array<i64: 0>} : memref<16xf32>
  %v = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%w : memref<16xf32>) outs(%v : memref<16xf32>)
  plan.all_reduce %v on @g2 : memref<16xf32>
  %x = plan.buffer : memref<16xf32>
  plan.kernel "relu" ins(%v : memref<16xf32>) outs(%x : memref<16xf32>)
  %g = plan.buffer : memref<32xf32>
  plan.all_gather %x into %g on @g2 axis = 0 : memref<16xf32> -> memref<32xf32>
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%g : memref<32xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.loss %l : memref<f32>
}
}

// -----

// With micro-batches no reservation reaches back before the range its
// collective runs in: a gather of a parameter first on the communication
// stream in a micro-batch's forward is reserved from plan.forward_begin
// on, not from the step's start, where the part before the micro-batches
// would keep it to their end. %c, dead before the marker, shares its bytes.
// CHECK-LABEL: plan.program @gather_after_forward_begin
// CHECK: plan.buffer {offset = [[COFF:[0-9]+]] : i64} : memref<32xf32>
// CHECK: plan.forward_begin
// CHECK-NEXT: plan.buffer {offset = [[COFF]] : i64} : memref<32xf32>
// CHECK-NEXT: plan.all_gather
module attributes {plan.mesh_shape = array<i64: 2>} {
plan.group @g2 mesh_axes = [0]
plan.program @gather_after_forward_begin devices = [0, 1] {
  %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 32>, splits = array<i64: 0>} : memref<16xf32>
  %c = plan.buffer : memref<32xf32>
  plan.kernel "fill" outs(%c : memref<32xf32>) {attrs = {value = 1.0 : f64}}
  %s = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%c : memref<32xf32>) outs(%s : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.forward_begin
  %g = plan.buffer : memref<32xf32>
  plan.all_gather %w into %g on @g2 axis = 0 : memref<16xf32> -> memref<32xf32>
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%g : memref<32xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.loss %l : memref<f32>
  plan.after_micro_batches
}
}

// -----

// Two greedy orders, the least arena kept: largest first would put %a, %b
// and %d (256 bytes each) at the bottom and %c, living beside %b and %d,
// above both (704 bytes); the largest in bytes times positions lived first
// puts %c at the bottom, and the others pack above it (512 bytes).
// CHECK-LABEL: plan.program @by_area
// CHECK-SAME: plan.arena_bytes = 512
// CHECK: plan.buffer {offset = 0 : i64} : memref<48xf32>
plan.program @by_area devices = [0] {
  %a = plan.buffer : memref<64xf32>
  plan.kernel "fill" outs(%a : memref<64xf32>) {attrs = {value = 1.0 : f64}}
  %b = plan.buffer : memref<64xf32>
  plan.kernel "relu" ins(%a : memref<64xf32>) outs(%b : memref<64xf32>)
  %c = plan.buffer : memref<48xf32>
  plan.kernel "slice" ins(%b : memref<64xf32>) outs(%c : memref<48xf32>) {attrs = {starts = array<i64: 0>, sizes = array<i64: 48>, steps = array<i64: 1>}}
  %d = plan.buffer : memref<64xf32>
  plan.kernel "fill" outs(%d : memref<64xf32>) {attrs = {value = 1.0 : f64}}
  %l = plan.buffer : memref<f32>
  plan.kernel "reduce_sum" ins(%c, %d : memref<48xf32>, memref<64xf32>) outs(%l : memref<f32>) {attrs = {axes = array<i64: 0>, keepdims = false}}
  plan.loss %l : memref<f32>
}
