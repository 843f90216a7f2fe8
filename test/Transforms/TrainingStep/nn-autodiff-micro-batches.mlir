// RUN: parplan-opt %s -split-input-file -nn-autodiff="micro-batches=4 optimizer=sgd" | FileCheck %s
// RUN: parplan-opt %s -split-input-file -nn-autodiff="micro-batches=2 optimizer=adam" | FileCheck %s --check-prefix=ADAM
// RUN: parplan-opt %s -split-input-file -nn-autodiff="micro-batches=2 optimizer=none" | FileCheck %s --check-prefix=GRADS
// RUN: parplan-opt %s -split-input-file -nn-autodiff="micro-batches=2 optimizer=sgd mixed-precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: parplan-opt %s -split-input-file -nn-autodiff="micro-batches=1 optimizer=sgd" | FileCheck %s --check-prefix=ONE
// RUN: parplan-opt %s -split-input-file -nn-autodiff="micro-batches=2 optimizer=sgd mixed-precision=bf16 gradient-sums=low" | FileCheck %s --check-prefix=LOW
// RUN: not parplan-opt %s -split-input-file -nn-autodiff="micro-batches=2 gradient-sums=f16" 2>&1 | FileCheck %s --check-prefix=BAD-SUMS

// A two-layer MLP whose program is one micro-batch of 8 rows. The backward
// pass is seeded with 1/4, each gradient is summed over the micro-batches
// right where the backward pass completes it, and the update reads the
// sum; the loss returned is the sum of the micro-batches' losses over 4.
// CHECK-LABEL: module attributes {nn.training = {{{.*}}micro_batches = 4 : i64
// CHECK: %[[W1:.*]] = nn.param "w1" : tensor<16x32xf32>
// CHECK: %[[W2:.*]] = nn.param "w2" : tensor<32x10xf32>
// CHECK: %[[LOSS:.*]] = nn.reduce_mean
// CHECK-NEXT: %[[SEED:.*]] = nn.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT: nn.reshape %[[SEED]]
// CHECK: nn.softmax_cross_entropy_grad
// CHECK: %[[G2:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<8x32xf32>, tensor<8x10xf32> -> tensor<32x10xf32>
// CHECK-NEXT: %[[G2_SUM:.*]] = nn.accumulate %[[G2]] : tensor<32x10xf32>
// CHECK: nn.relu_grad
// CHECK: %[[G1:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT: %[[G1_SUM:.*]] = nn.accumulate %[[G1]] : tensor<16x32xf32>
// CHECK-NEXT: %[[QUARTER:.*]] = nn.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT: %[[SHARE:.*]] = nn.mul %[[LOSS]], %[[QUARTER]]
// CHECK-NEXT: %[[LOSS_SUM:.*]] = nn.accumulate %[[SHARE]] : tensor<f32>
// The updates in the order their sums complete, w2's first.
// CHECK: %[[NEW2:.*]] = nn.sgd_update %[[W2]], %[[G2_SUM]]
// CHECK: %[[NEW1:.*]] = nn.sgd_update %[[W1]], %[[G1_SUM]]
// CHECK: return %[[LOSS_SUM]], %[[NEW1]], %[[NEW2]]

// The step count is no sum: Adam reads it as it is, its moments the sums.
// ADAM: nn.param "optimizer.step"
// ADAM-COUNT-2: nn.accumulate %{{.*}} : tensor<{{16x32|32x10}}xf32>
// ADAM: %[[T:.*]] = nn.add %{{.*}}, %{{.*}} : tensor<f32>
// ADAM-NOT: nn.accumulate
// ADAM: nn.adam_update
// ADAM-SAME: %[[T]] lr

// Without an optimizer, the step returns the summed gradients.
// GRADS: %[[G2:.*]] = nn.accumulate %{{.*}} : tensor<32x10xf32>
// GRADS: %[[G1:.*]] = nn.accumulate %{{.*}} : tensor<16x32xf32>
// GRADS: return %{{.*}}, %[[G1]], %[[G2]] : tensor<f32>, tensor<16x32xf32>, tensor<32x10xf32>

// Under bf16, a gradient comes back to f32 through its parameter's cast,
// moved to where the bf16 gradient is complete (not the end of the
// backward, where its parameter's cast is), and is summed in f32 right
// after it.
// BF16: %[[D2:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<8x32xbf16>, tensor<8x10xbf16> -> tensor<32x10xbf16>
// BF16-NEXT: %[[G2:.*]] = nn.cast %[[D2]] : tensor<32x10xbf16> -> tensor<32x10xf32>
// BF16-NEXT: nn.accumulate %[[G2]] : tensor<32x10xf32>
// BF16-NEXT: nn.relu_grad
// BF16-NEXT: %[[D1:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<8x16xbf16>, tensor<8x32xbf16> -> tensor<16x32xbf16>
// BF16-NEXT: %[[G1:.*]] = nn.cast %[[D1]] : tensor<16x32xbf16> -> tensor<16x32xf32>
// BF16-NEXT: nn.accumulate %[[G1]] : tensor<16x32xf32>

// With gradient-sums=low, the bf16 gradient is summed in bf16 where it is
// complete, and the sum cast to f32 just before its update.
// LOW: gradient_sums = "low"
// LOW: %[[D2:.*]] = nn.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<8x32xbf16>, tensor<8x10xbf16> -> tensor<32x10xbf16>
// LOW-NEXT: %[[S2:.*]] = nn.accumulate %[[D2]] : tensor<32x10xbf16>
// LOW: %[[G2:.*]] = nn.cast %[[S2]] : tensor<32x10xbf16> -> tensor<32x10xf32>
// LOW-NEXT: nn.sgd_update %{{.*}}, %[[G2]]
// BAD-SUMS: nn-autodiff: unknown gradient-sums 'f16' (expected f32 or low)

// One micro-batch: no sum, no marker.
// ONE-NOT: micro_batches
// ONE-NOT: nn.accumulate
// ONE: nn.sgd_update

func.func @main() -> tensor<8x10xf32> {
  %x = nn.input "x" : tensor<8x16xf32>
  %w1 = nn.param "w1" : tensor<16x32xf32>
  %w2 = nn.param "w2" : tensor<32x10xf32>
  %h = nn.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %a = nn.relu %h : tensor<8x32xf32>
  %y = nn.matmul %a, %w2 : tensor<8x32xf32>, tensor<32x10xf32> -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}
