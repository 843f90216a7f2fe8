// RUN: parplan-opt %s -split-input-file -nn-autodiff="recompute=full frozen=mask optimizer=sgd" | FileCheck %s --check-prefix=FULL
// RUN: parplan-opt %s -split-input-file -nn-autodiff="recompute=selective frozen=mask optimizer=sgd" | FileCheck %s --check-prefix=SELECTIVE
// RUN: parplan-opt %s -split-input-file -nn-autodiff="recompute=full recompute-layers=1 frozen=mask optimizer=sgd" | FileCheck %s --check-prefix=FIRST
// RUN: parplan-opt %s -split-input-file -nn-autodiff="recompute=full recompute-layers=0 frozen=mask optimizer=sgd" | FileCheck %s --check-prefix=NO-LAYER
// RUN: parplan-opt %s -split-input-file -nn-autodiff="mixed-precision=bf16 frozen=mask optimizer=sgd" | FileCheck %s --check-prefix=BF16
// RUN: parplan-opt %s -split-input-file -nn-autodiff="recompute=full mixed-precision=bf16 frozen=mask optimizer=sgd" | FileCheck %s --check-prefix=COPIES
// RUN: parplan-opt %s -split-input-file -nn-autodiff="mixed-precision=fp16 loss-scale=512 frozen=mask" | FileCheck %s --check-prefix=FP16
// RUN: parplan-opt %s -split-input-file -nn-autodiff="recompute=full mixed-precision=bf16 micro-batches=2 frozen=mask optimizer=sgd" | FileCheck %s --check-prefix=KEPT

// One attention layer ("h.0") between an embedding and a head outside any
// layer.
//
// Full recomputation clones the layer's forward ops (its two projections,
// the scores, the softmax and the value product) into the backward program
// once, reading the saved layer input; the head is not recomputed (but
// for its transposed embedding, a value of parameters alone: COPIES).
// FULL: %[[X:.*]] = nn.gather
// FULL: %[[P:.*]] = nn.softmax
// FULL: nn.softmax_cross_entropy_grad
// FULL-NEXT: nn.matmul %[[X]], %{{.*}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// FULL-NEXT: nn.matmul %[[X]], %{{.*}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// FULL: %[[P2:.*]] = nn.softmax
// FULL-NOT: nn.softmax %
// FULL: nn.softmax_grad %{{.*}}, %[[P2]]
//
// Selective recomputation clones only the attention core, from the score
// product to the softmax.
// SELECTIVE: %[[QT:.*]] = nn.transpose %[[Q:.*]] perm = [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
// SELECTIVE: %[[S:.*]] = nn.matmul %[[Q]], %[[QT]]
// SELECTIVE: nn.softmax_cross_entropy_grad
// SELECTIVE: %[[S2:.*]] = nn.matmul %[[Q]], %[[QT]]
// SELECTIVE-NEXT: %[[M2:.*]] = nn.add %[[S2]], %{{.*}}
// SELECTIVE-NEXT: %[[P2:.*]] = nn.softmax %[[M2]]
// SELECTIVE: nn.softmax_grad %{{.*}}, %[[P2]]
//
// Recomputation computes values of parameters alone again where the
// backward reads them, from the parameters, rather than keeping the
// forward's (a pipeline schedule would keep them once per micro-batch in
// flight): under bf16 a parameter's low-precision copy, and the head's
// transposed embedding, a copy of a copy. With recompute-layers=0 they
// are all that is computed again (NO-LAYER below).
// COPIES: %[[W:.*]] = nn.param "wte" : tensor<16x8xf32>
// COPIES: nn.softmax_cross_entropy_grad
// COPIES: %[[C:.*]] = nn.cast %[[W]] {nn.recomputed} : tensor<16x8xf32> -> tensor<16x8xbf16>
// COPIES-NEXT: nn.transpose %[[C]] perm = [1, 0] {nn.recomputed} : tensor<16x8xbf16> -> tensor<8x16xbf16>
//
// With micro-batches, those copies are made once before the micro-batches
// and kept for the step (docs/training.md): the backward reads the
// forward's, and the layers recomputed read them too.
// KEPT: %[[W:.*]] = nn.param "wte" : tensor<16x8xf32>
// KEPT-NEXT: %[[C:.*]] = nn.cast %[[W]] : tensor<16x8xf32> -> tensor<16x8xbf16>
// KEPT: %[[T:.*]] = nn.transpose %[[C]] perm = [1, 0] : tensor<16x8xbf16> -> tensor<8x16xbf16>
// KEPT: nn.softmax_cross_entropy_grad
// KEPT-NOT: nn.cast %[[W]]
// KEPT-NOT: nn.transpose %[[C]]
// KEPT-NOT: nn.cast %{{.*}} {nn.recomputed} : tensor<8x8xf32>
// KEPT: nn.matmul %{{.*}}, %[[T]] {transpose_rhs}
// KEPT: nn.accumulate
//
// bf16: parameters are cast where they enter, everything computes in bf16,
// the loss in f32; gradients come back to f32 through the casts and the
// update is in f32. The frozen mask is cast but never updated.
// BF16: %[[W:.*]] = nn.param "wte" : tensor<16x8xf32>
// BF16-NEXT: %[[WL:.*]] = nn.cast %[[W]] : tensor<16x8xf32> -> tensor<16x8xbf16>
// BF16: nn.gather %[[WL]], %{{.*}} : tensor<16x8xbf16>, tensor<2x4xi64> -> tensor<2x4x8xbf16>
// BF16: nn.softmax %{{.*}} : tensor<2x4x4xbf16>
// BF16: %[[LOGITS:.*]] = nn.cast %{{.*}} : tensor<2x4x16xbf16> -> tensor<2x4x16xf32>
// BF16: nn.softmax_cross_entropy %[[LOGITS]]
// Each fp32 gradient is cast just before its update, so that one at a time
// lives beside the bf16 gradients; the updates in the order the backward
// completes their bf16 gradients (v's, q's, then the embedding's).
// BF16: %[[GV:.*]] = nn.cast %{{.*}} : tensor<8x8xbf16> -> tensor<8x8xf32>
// BF16-NEXT: nn.sgd_update %{{.*}}, %[[GV]] lr = 1.000000e-03 : tensor<8x8xf32>
// BF16-NEXT: %[[GQ:.*]] = nn.cast %{{.*}} : tensor<8x8xbf16> -> tensor<8x8xf32>
// BF16-NEXT: nn.sgd_update %{{.*}}, %[[GQ]] lr = 1.000000e-03 : tensor<8x8xf32>
// BF16-NEXT: %[[GW:.*]] = nn.cast %{{.*}} : tensor<16x8xbf16> -> tensor<16x8xf32>
// BF16-NEXT: nn.sgd_update %[[W]], %[[GW]] lr = 1.000000e-03 : tensor<16x8xf32>
// BF16-NOT: {nn.updates = "mask"}
//
// fp16: the loss is scaled before backward and unscaled by the optimizer.
// FP16: loss_scale = 5.120000e+02
// FP16: %[[SEED:.*]] = nn.constant dense<5.120000e+02> : tensor<f32>
// FP16: nn.adam_update {{.*}} grad_scale = 5.120000e+02 : tensor<16x8xf32>, tensor<f32>
func.func @main() -> tensor<2x4x16xf32> {
  %wte = nn.param "wte" : tensor<16x8xf32>
  %ids = nn.input "ids" : tensor<2x4xi64>
  %mask = nn.param "mask" : tensor<1x4x4xf32>
  %wq = nn.param "h.0.q" : tensor<8x8xf32>
  %wv = nn.param "h.0.v" : tensor<8x8xf32>
  %x = nn.gather %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %q = nn.matmul %x, %wq : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %v = nn.matmul %x, %wv : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  %qt = nn.transpose %q perm = [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %s = nn.matmul %q, %qt : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  %m = nn.add %s, %mask : tensor<2x4x4xf32>, tensor<1x4x4xf32> -> tensor<2x4x4xf32>
  %p = nn.softmax %m : tensor<2x4x4xf32>
  %a = nn.matmul %p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %r = nn.add %x, %a : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %head = nn.transpose %wte perm = [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  %y = nn.matmul %r, %head : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// Two layers of one class: full recomputation recomputes both, the step
// names them; with recompute-layers=1 only the first is recomputed (its
// relu cloned into the backward program), the second keeps its
// activations; with 0, none. The first layer's output is the second's
// input, saved for the second's recomputation: the second's backward reads
// it saved too, and the first recomputes only what its own backward reads
// (its matmul), in its own backward.
// FULL-LABEL: nn.training = {{{.*}}recompute = "full", recomputed_layers = ["h.0", "h.1"]
// FULL: %[[R0:.*]] = nn.relu
// FULL: nn.matmul %[[R0]], %{{.*}} {nn.recomputed}
// FULL-NEXT: nn.relu %{{.*}} {nn.recomputed}
// FULL: nn.matmul %[[R0]], %{{.*}} {transpose_lhs}
// FULL: nn.matmul %{{.*}}, %{{.*}} {nn.recomputed}
// FULL-NEXT: nn.relu_grad
// FIRST-LABEL: nn.training = {{{.*}}recompute = "full", recomputed_layers = ["h.0"]
// FIRST: %[[W0:.*]] = nn.param "h.0.w"
// FIRST: nn.matmul %{{.*}}, %[[W0]] {nn.recomputed}
// FIRST-NEXT: nn.relu %{{.*}} {nn.recomputed}
// FIRST-NOT: {nn.recomputed}
// NO-LAYER-LABEL: nn.training = {{{.*}}recompute = "full", recomputed_layers = []
// NO-LAYER: nn.transpose %{{.*}} perm = [1, 0] {nn.recomputed} : tensor<16x8xf32> -> tensor<8x16xf32>
// NO-LAYER-NOT: {nn.recomputed}
func.func @main() -> tensor<2x4xf32> {
  %x = nn.input "x" : tensor<2x4xf32>
  %w0 = nn.param "h.0.w" : tensor<4x4xf32>
  %w1 = nn.param "h.1.w" : tensor<4x4xf32>
  %a0 = nn.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %r0 = nn.relu %a0 : tensor<2x4xf32>
  %a1 = nn.matmul %r0, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %r1 = nn.relu %a1 : tensor<2x4xf32>
  return %r1 : tensor<2x4xf32>
}
