// RUN: parplan-opt %s -split-input-file -plan-memory | FileCheck %s

// Named buffers live for the whole step, at the bottom of the arena;
// temporaries whose lives do not overlap share bytes (64-byte aligned).
// CHECK-LABEL: plan.program @dev0 devices = [0] attributes {plan.arena_bytes = 4224 : i64}
// CHECK: %[[W:.*]] = plan.buffer {{{.*}}name = "w", offset = 0 : i64, splits = array<i64: -1>} : memref<32x32xf32>
// CHECK: %[[A:.*]] = plan.buffer {offset = 4096 : i64} : memref<8xf32>
// CHECK: %[[B:.*]] = plan.buffer {offset = 4160 : i64} : memref<8xf32>
// CHECK: %[[C:.*]] = plan.buffer {offset = 4096 : i64} : memref<8xf32>
plan.program @dev0 devices = [0] {
  %w = plan.buffer {kind = "parameter", name = "w", logical_shape = array<i64: 32, 32>, splits = array<i64: -1>} : memref<32x32xf32>
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
