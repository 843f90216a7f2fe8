// RUN: parplan-opt %s -split-input-file -attach-cluster -place-stages="stages=2 mesh=4x2" -verify-diagnostics | FileCheck %s
// RUN: parplan-opt %S/../Inputs/four-layers.mlir -attach-cluster -place-stages="stages=2 chunks=2 mesh=4x2" | FileCheck %s --check-prefix=CHUNKS
// RUN: parplan-opt %S/../Inputs/four-layers.mlir -attach-cluster="cluster=whale-v100-p100" -place-stages="stages=2 mesh=4x8" | FileCheck %s --check-prefix=BY-SPEED
// RUN: parplan-opt %S/../Inputs/four-layers.mlir -attach-cluster="cluster=whale-v100-p100" -place-stages="stages=2 mesh=4x8 even-shares=true" | FileCheck %s --check-prefix=EVEN-SHARES
// RUN: parplan-opt %S/../Inputs/residual-layers.mlir -attach-cluster="cluster=whale-v100-p100" -place-stages="stages=2 mesh=4x8 cut-inside-layers=true" | FileCheck %s --check-prefix=INSIDE
// RUN: parplan-opt %S/../Inputs/residual-layers.mlir -attach-cluster="cluster=whale-v100-p100" -place-stages="stages=2 mesh=4x8" | FileCheck %s --check-prefix=FINER
// RUN: parplan-opt %S/../Inputs/residual-layers.mlir -attach-cluster="cluster=whale-v100-p100" -place-stages="stages=2 mesh=4x8 even-shares=true cut-inside-layers=true" | FileCheck %s --check-prefix=ALIKE
// RUN: parplan-opt %S/../Inputs/residual-layers.mlir -attach-cluster -place-stages="stages=2 mesh=4x2 cut-inside-layers=true" | FileCheck %s --check-prefix=ALIKE

// A model without numbered layers: each module's parameters ("fc1", "fc2",
// ...) are a layer. Four equal layers on two stages: two each. The meshes
// cut the 4x2 mesh's first axis: devices 0-3 and 4-7, 2x2 each. The relu
// follows its operand into fc1's run; the input goes where its reader is.
// CHECK: sbp.mesh @stage0(shape = 2x2, devices = [0, 1, 2, 3])
// CHECK-NEXT: sbp.mesh @stage1(shape = 2x2, devices = [4, 5, 6, 7])
// CHECK-LABEL: func.func @main
// CHECK: nn.input "x" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "fc1.weight" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "fc2.weight" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "fc3.weight" {sbp.stage = @stage1}
// CHECK-NEXT: nn.param "fc4.weight" {sbp.stage = @stage1}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.relu {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage1}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage1}
module {
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    %w1 = nn.param "fc1.weight" : tensor<4x4xf32>
    %w2 = nn.param "fc2.weight" : tensor<4x4xf32>
    %w3 = nn.param "fc3.weight" : tensor<4x4xf32>
    %w4 = nn.param "fc4.weight" : tensor<4x4xf32>
    %1 = nn.matmul %x, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc1/MatMul")
    %r = nn.relu %1 : tensor<4x4xf32> loc("/Relu")
    %2 = nn.matmul %r, %w2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc2/MatMul")
    %3 = nn.matmul %2, %w3 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc3/MatMul")
    %4 = nn.matmul %3, %w4 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc4/MatMul")
    return %4 : tensor<4x4xf32>
  }
}

// -----

// Numbered layers: "h.0" .. "h.2" are the layers; the embedding and the
// mask, outside every layer, start none. The embedding's gather comes
// before the first layer and goes where its reader is; the mask's add
// stays in the layer reading it (h.1), so no cut falls inside a layer.
// h.0 is twice as heavy as each other layer (a second matmul), so the
// balanced cut is h.0 | h.1, h.2.
// CHECK-LABEL: func.func @main
// CHECK: nn.param "wte" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "mask" {sbp.stage = @stage1}
// CHECK-NEXT: nn.param "h.0.w" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "h.1.w" {sbp.stage = @stage1}
// CHECK-NEXT: nn.param "h.2.w" {sbp.stage = @stage1}
// CHECK-NEXT: nn.gather {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage1}
// CHECK-NEXT: nn.add {{.*}} {sbp.stage = @stage1}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage1}
module {
  func.func @main() -> tensor<4x4xf32> {
    %ids = nn.input "ids" : tensor<4xi64>
    %wte = nn.param "wte" : tensor<16x4xf32>
    %mask = nn.param "mask" : tensor<4x4xf32>
    %w0 = nn.param "h.0.w" : tensor<4x4xf32>
    %w1 = nn.param "h.1.w" : tensor<4x4xf32>
    %w2 = nn.param "h.2.w" : tensor<4x4xf32>
    %e = nn.gather %wte, %ids {axis = 0 : i64} : tensor<16x4xf32>, tensor<4xi64> -> tensor<4x4xf32> loc("/wte/Gather")
    %0 = nn.matmul %e, %w0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.0/MatMul")
    %1 = nn.matmul %0, %w0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.0/MatMul_1")
    %2 = nn.matmul %1, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.1/MatMul")
    %m = nn.add %2, %mask : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.1/Add")
    %3 = nn.matmul %m, %w2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.2/MatMul")
    return %3 : tensor<4x4xf32>
  }
}

// -----

// The head: the ops after the last layer's own, from the first reading a
// weight of no layer (the final norm's scale, a language model's
// projection onto its vocabulary), are a run of their own, so that a
// stage may hold them alone; the last layer keeps its residual add. The
// head's projection outweighs the two layers together: h.0, h.1 |
// head. The final norm's parameter is the head's; the embedding, read
// first by the gather, stays on the first stage (never updated here, the
// head's stage reads a copy of its own). The stage holding the
// head says so (sbp.head); its layer count leaves the head out.
// CHECK: sbp.mesh @stage0(shape = 2x2, devices = [0, 1, 2, 3]) {sbp.layers = 2 : i64}
// CHECK-NEXT: sbp.mesh @stage1(shape = 2x2, devices = [4, 5, 6, 7]) {sbp.head}
// CHECK-LABEL: func.func @main
// CHECK: nn.param "wte" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "wte" {sbp.stage = @stage1}
// CHECK-NEXT: nn.param "ln_f.w" {sbp.stage = @stage1}
// CHECK-NEXT: nn.param "h.0.w" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "h.1.w" {sbp.stage = @stage0}
// CHECK-NEXT: nn.gather {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.add {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.mul {{.*}} {sbp.stage = @stage1}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage1, transpose_rhs}
module {
  func.func @main() -> tensor<4x16xf32> {
    %ids = nn.input "ids" : tensor<4xi64>
    %wte = nn.param "wte" : tensor<16x4xf32>
    %lnf = nn.param "ln_f.w" : tensor<4x4xf32>
    %w0 = nn.param "h.0.w" : tensor<4x4xf32>
    %w1 = nn.param "h.1.w" : tensor<4x4xf32>
    %e = nn.gather %wte, %ids {axis = 0 : i64} : tensor<16x4xf32>, tensor<4xi64> -> tensor<4x4xf32> loc("/wte/Gather")
    %0 = nn.matmul %e, %w0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.0/MatMul")
    %1 = nn.matmul %0, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.1/MatMul")
    %2 = nn.add %1, %0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/h.1/Add")
    %3 = nn.mul %2, %lnf : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/ln_f/Mul")
    %4 = nn.matmul %3, %wte {transpose_rhs} : tensor<4x4xf32>, tensor<16x4xf32> -> tensor<4x16xf32> loc("/lm_head/MatMul")
    return %4 : tensor<4x16xf32>
  }
}

// -----

// Fewer layers than stages.
module {
  // expected-error @+1 {{stages=2: @main has 1 layer to place, fewer than the stages}}
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    %w = nn.param "fc1.weight" : tensor<4x4xf32>
    %1 = nn.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc1/MatMul")
    return %1 : tensor<4x4xf32>
  }
}

// -----

// Stages in the annotations and in the option.
// expected-error @+1 {{stages=2: the annotations place stages too (s.yaml:2:5); give one of the two}}
module attributes {sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: a\n    devices: [0]\n    nodes: [\"x\"]\n"}} {
  func.func @main() -> tensor<4xf32> {
    %x = nn.input "x" : tensor<4xf32>
    return %x : tensor<4xf32>
  }
}

// With two chunks a stage, the four layers are four virtual stages, chunk
// c of stage s being virtual stage 2c + s: fc1 on stage 0 and fc2 on stage
// 1 (chunk 0), fc3 on stage 0 and fc4 on stage 1 (chunk 1).
// CHUNKS: module attributes {sbp.chunks = 2 : i64, sbp.cluster = #sbp.cluster<preset = "dgx-h100">}
// CHUNKS: nn.input "x" {sbp.chunk = 0 : i64, sbp.stage = @stage0}
// CHUNKS-NEXT: nn.param "fc1.weight" {sbp.chunk = 0 : i64, sbp.stage = @stage0}
// CHUNKS-NEXT: nn.param "fc2.weight" {sbp.chunk = 0 : i64, sbp.stage = @stage1}
// CHUNKS-NEXT: nn.param "fc3.weight" {sbp.chunk = 1 : i64, sbp.stage = @stage0}
// CHUNKS-NEXT: nn.param "fc4.weight" {sbp.chunk = 1 : i64, sbp.stage = @stage1}
// CHUNKS-NEXT: nn.matmul {{.*}} {sbp.chunk = 0 : i64, sbp.stage = @stage0}
// CHUNKS-NEXT: nn.relu {{.*}} {sbp.chunk = 0 : i64, sbp.stage = @stage0}
// CHUNKS-NEXT: nn.matmul {{.*}} {sbp.chunk = 0 : i64, sbp.stage = @stage1}
// CHUNKS-NEXT: nn.matmul {{.*}} {sbp.chunk = 1 : i64, sbp.stage = @stage0}
// CHUNKS-NEXT: nn.matmul {{.*}} {sbp.chunk = 1 : i64, sbp.stage = @stage1}

// -----

// A source the step never updates (a frozen mask, a batch input, a
// constant) holds the same values on every stage by its name: each other
// stage reading it gets its own copy, rather than a move every
// micro-batch. The parameter the step updates stays one.
// CHECK-LABEL: func.func @main
// CHECK: nn.input "x" {sbp.stage = @stage0}
// CHECK-NEXT: nn.input "x" {sbp.stage = @stage1}
// CHECK-NEXT: nn.param "mask" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "mask" {sbp.stage = @stage1}
// CHECK-NEXT: nn.param "fc1.weight" {sbp.stage = @stage0}
// CHECK-NEXT: nn.param "fc2.weight" {sbp.stage = @stage1}
// CHECK-NOT: nn.param "fc1.weight"
module {
  func.func @main() -> (tensor<4x4xf32>, tensor<4x4xf32> {nn.updates = "fc1.weight"}) {
    %x = nn.input "x" : tensor<4x4xf32>
    %mask = nn.param "mask" : tensor<4x4xf32>
    %w1 = nn.param "fc1.weight" : tensor<4x4xf32>
    %w2 = nn.param "fc2.weight" : tensor<4x4xf32>
    %1 = nn.matmul %x, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc1/MatMul")
    %m1 = nn.add %1, %mask : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc1/Add")
    %2 = nn.matmul %m1, %w2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc2/MatMul")
    %m2 = nn.add %2, %mask : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc2/Add")
    %s = nn.add %m2, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc2/Add_1")
    %u = nn.mul %w1, %w1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc2/Update")
    return %s, %u : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// A layer whose projections all read the previous layer's output (BERT's
// query, key and value): once the query opens layer 1, its key and value
// stay in layer 1's run, though the output they read is layer 0's. On a
// split layer, the backward would send a gradient to a later stage.
// CHECK-LABEL: func.func @main
// CHECK: nn.matmul {{.*}} {sbp.stage = @stage0}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage1}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage1}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @stage1}
// CHECK-NEXT: nn.add {{.*}} {sbp.stage = @stage1}
module {
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    %w0 = nn.param "layer.0.dense.weight" : tensor<4x4xf32>
    %q = nn.param "layer.1.query.weight" : tensor<4x4xf32>
    %k = nn.param "layer.1.key.weight" : tensor<4x4xf32>
    %v = nn.param "layer.1.value.weight" : tensor<4x4xf32>
    %h = nn.matmul %x, %w0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/layer.0/dense/MatMul")
    %hq = nn.matmul %h, %q : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/layer.1/query/MatMul")
    %hk = nn.matmul %h, %k : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/layer.1/key/MatMul")
    %hv = nn.matmul %h, %v : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/layer.1/value/MatMul")
    %s = nn.add %hq, %hk : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/layer.1/Add")
    %t = nn.add %s, %hv : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/layer.1/Add_1")
    return %t : tensor<4x4xf32>
  }
}

// On a cluster of mixed types the layers are cut by each stage's speed:
// the stage of V100s (15.7 TFLOP/s in f32) takes three of the four equal
// layers, the stage of P100s (9.3) one; with even-shares, two each.
// BY-SPEED: sbp.mesh @stage0(shape = 2x8, devices = [0,
// BY-SPEED: nn.param "fc3.weight" {sbp.stage = @stage0}
// BY-SPEED-NEXT: nn.param "fc4.weight" {sbp.stage = @stage1}
// EVEN-SHARES: nn.param "fc2.weight" {sbp.stage = @stage0}
// EVEN-SHARES-NEXT: nn.param "fc3.weight" {sbp.stage = @stage1}

// Two residual layers of two halves on whale-v100-p100: whole layers give
// each stage one (the P100s' two halves at 9.3 TFLOP/s are the longest);
// cut after h.1's first half, the V100s (15.7) take three halves and the
// P100s one, shorter. With cut-inside-layers the stages end there, each
// naming the layer it holds part of; without, the module says the cut
// exists for the pipeline search to try. Stages alike (even shares, or a
// cluster of one type) keep whole layers.
// INSIDE-NOT: sbp.finer_cut
// INSIDE: sbp.mesh @stage0({{.*}}) {sbp.layer_parts = ["h.1"], sbp.layers = 1 : i64}
// INSIDE-NEXT: sbp.mesh @stage1({{.*}}) {sbp.layer_parts = ["h.1"]}
// INSIDE: %[[ATTN:.*]] = nn.param "h.1.attn.weight" {sbp.stage = @stage0}
// INSIDE-NEXT: %[[MLP:.*]] = nn.param "h.1.mlp.weight" {sbp.stage = @stage1}
// INSIDE: nn.matmul %{{.*}}, %[[ATTN]] {sbp.stage = @stage0}
// INSIDE-NEXT: nn.add {{.*}} {sbp.stage = @stage0}
// INSIDE-NEXT: nn.matmul %{{.*}}, %[[MLP]] {sbp.stage = @stage1}
// INSIDE-NEXT: nn.add {{.*}} {sbp.stage = @stage1}
// INSIDE-NEXT: return
// FINER: module attributes {{{.*}}sbp.finer_cut}
// FINER: sbp.mesh @stage0({{.*}}) {sbp.layers = 1 : i64}
// FINER-NEXT: sbp.mesh @stage1({{.*}}) {sbp.layers = 1 : i64}
// FINER: nn.param "h.1.attn.weight" {sbp.stage = @stage1}
// ALIKE-NOT: sbp.finer_cut
// ALIKE: sbp.mesh @stage0({{.*}}) {sbp.layers = 1 : i64}
// ALIKE-NEXT: sbp.mesh @stage1({{.*}}) {sbp.layers = 1 : i64}
// ALIKE-NOT: sbp.layer_parts
