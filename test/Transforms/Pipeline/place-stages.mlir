// RUN: parplan-opt %s -split-input-file -place-stages -verify-diagnostics | FileCheck %s

// Two stages: the nodes the globs name, then the data flow. The relu reads
// only stage `first`'s value and follows it; the add reads both and goes
// on the later stage; the constant reads nothing and goes where its first
// reader is; an input read by nothing staged goes on the first stage.
// CHECK: sbp.mesh @first(shape = 2, devices = [0, 1])
// CHECK-NEXT: sbp.mesh @second(shape = 2x1, devices = [3, 2])
// CHECK-LABEL: func.func @main
// CHECK: nn.input "x" {sbp.stage = @first}
// CHECK-NEXT: nn.param "fc1.w" {sbp.stage = @first}
// CHECK-NEXT: nn.matmul {{.*}} {sbp.stage = @first}
// CHECK-NEXT: nn.relu {{.*}} {sbp.stage = @first}
// CHECK-NEXT: nn.constant {sbp.stage = @second}
// CHECK-NEXT: nn.tanh {{.*}} {sbp.stage = @second}
// CHECK-NEXT: nn.add {{.*}} {sbp.stage = @second}
// CHECK-NEXT: nn.input "unused" {sbp.stage = @first}
module attributes {sbp.annotations = {file = "stages.yaml", text = "stages:\n  - mesh: first\n    devices: [0, 1]\n    nodes: [\"fc1.*\", \"/fc1/*\"]\n  - mesh: second\n    shape: [2, 1]\n    devices: [3, 2]\n    nodes: [\"/fc2/*\"]\n"}} {
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    %w = nn.param "fc1.w" : tensor<4x4xf32>
    %y = nn.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/fc1/MatMul")
    %r = nn.relu %y : tensor<4x4xf32>
    %c = nn.constant dense<1.0> : tensor<4x4xf32>
    %t = nn.tanh %c : tensor<4x4xf32> loc("/fc2/Tanh")
    %s = nn.add %r, %t : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %u = nn.input "unused" : tensor<4xf32>
    return %s : tensor<4x4xf32>
  }
}

// -----

// Without stages (pins only, or no annotations) nothing changes.
// CHECK-LABEL: func.func @main
// CHECK-NOT: sbp.stage
// CHECK-NOT: sbp.mesh
module attributes {sbp.annotations = {file = "pins.yaml", text = "pins:\n  - node: x\n    results: [B]\n"}} {
  func.func @main() -> tensor<4xf32> {
    %x = nn.input "x" : tensor<4xf32>
    return %x : tensor<4xf32>
  }
}

// -----

// A node two stages name is an error naming both entries.
module attributes {sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: a\n    devices: [0]\n    nodes: [\"x*\"]\n  - mesh: b\n    devices: [1]\n    nodes: [\"*\"]\n"}} {
  func.func @main() -> tensor<4xf32> {
    // expected-error @+1 {{s.yaml:5:5: node 'x' is on stage 'a' and on stage 'b' (s.yaml:2:5)}}
    %x = nn.input "x" : tensor<4xf32>
    return %x : tensor<4xf32>
  }
}

// -----

// Stages run in the order they are listed: a node of the first stage that
// reads what the second computes contradicts the layer order.
module attributes {sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: a\n    devices: [0]\n    nodes: [\"/fc2/*\"]\n  - mesh: b\n    devices: [1]\n    nodes: [\"/fc1/*\"]\n"}} {
  func.func @main() -> tensor<4xf32> {
    %x = nn.input "x" : tensor<4xf32>
    %h = nn.relu %x : tensor<4xf32> loc("/fc1/Relu")
    // The op's location is its ONNX node name alone, which has no line.
    // expected-error @unknown {{s.yaml:2:5: stage 'a' runs '/fc2/Tanh', which reads '/fc1/Relu' of the later stage 'b' (s.yaml:5:5): list the stages in the order of the layers}}
    %y = nn.tanh %h : tensor<4xf32> loc("/fc2/Tanh")
    return %y : tensor<4xf32>
  }
}

// -----

// A stage that matches nothing is an error.
// expected-error @+1 {{s.yaml:5:5: stage 'b' matches no node of @main}}
module attributes {sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: a\n    devices: [0]\n    nodes: [\"x\"]\n  - mesh: b\n    devices: [1]\n    nodes: [\"y\"]\n"}} {
  func.func @main() -> tensor<4xf32> {
    %x = nn.input "x" : tensor<4xf32>
    return %x : tensor<4xf32>
  }
}

// -----

// A stage's mesh may not take a name the module has.
// expected-error @+1 {{s.yaml:2:5: stage 'main': the module already has a symbol @main; place-stages runs once}}
module attributes {sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: main\n    devices: [0]\n    nodes: [\"x\"]\n"}} {
  func.func @main() -> tensor<4xf32> {
    %x = nn.input "x" : tensor<4xf32>
    return %x : tensor<4xf32>
  }
}

// -----

// The file's own errors are reported as the reader words them.
// expected-error @+1 {{s.yaml:3:14: stage 'a': devices must be a non-empty list of integers}}
module attributes {sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: a\n    devices: []\n    nodes: [\"x\"]\n"}} {
  func.func @main() -> tensor<4xf32> {
    %x = nn.input "x" : tensor<4xf32>
    return %x : tensor<4xf32>
  }
}

// -----

// A gradient with parts on two stages (a weight both read, as a tied
// embedding is by the first and the last) is summed over the micro-batches
// on each, after its last part there, and the sums added once: the
// second stage's part does not move every micro-batch.
// CHECK-LABEL: sbp.mesh @a1(shape = 1, devices = [0])
// CHECK: func.func @main
// CHECK: %[[S1:.*]] = nn.accumulate %{{.*}} {sbp.stage = @a1}
// CHECK-NEXT: %[[P2:.*]] = nn.matmul {{.*}} {sbp.stage = @b1}
// CHECK-NEXT: %[[S2:.*]] = nn.accumulate %[[P2]] {sbp.stage = @b1}
// CHECK-NEXT: %[[SUM:.*]] = nn.add %[[S1]], %[[S2]] {sbp.stage = @a1}
// CHECK-NEXT: return %{{.*}}, %[[SUM]]
module attributes {nn.training = {micro_batches = 2 : i64}, sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: a1\n    devices: [0]\n    nodes: [\"w\", \"/embed/*\"]\n  - mesh: b1\n    devices: [1]\n    nodes: [\"/head/*\"]\n"}} {
  func.func @main() -> (tensor<4x4xf32> {nn.name = "h"}, tensor<4x4xf32>) {
    %x = nn.input "x" : tensor<4x4xf32>
    %w = nn.param "w" : tensor<4x4xf32>
    %e = nn.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/embed/MatMul")
    %h = nn.matmul %e, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/head/MatMul")
    %p1 = nn.matmul %x, %e : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/embed/MatMul")
    %p2 = nn.matmul %e, %h : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/head/MatMul")
    %g = nn.add %p1, %p2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/embed/MatMul")
    %sum = nn.accumulate %g : tensor<4x4xf32> loc("w")
    return %h, %sum : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Through the casts back to the sum's precision: each stage casts its own
// part. Parts on one stage are added there first.
// CHECK-LABEL: sbp.mesh @a2(shape = 1, devices = [0])
// CHECK: func.func @main
// CHECK: %[[C1:.*]] = nn.cast %{{.*}} {sbp.stage = @a2} : tensor<4x4xbf16> -> tensor<4x4xf32>
// CHECK-NEXT: %[[S1:.*]] = nn.accumulate %[[C1]] {sbp.stage = @a2}
// CHECK: %[[A2:.*]] = nn.add %{{.*}}, %{{.*}} {sbp.stage = @b2}
// CHECK-NEXT: %[[C2:.*]] = nn.cast %[[A2]] {sbp.stage = @b2}
// CHECK-NEXT: %[[S2:.*]] = nn.accumulate %[[C2]] {sbp.stage = @b2}
// CHECK-NEXT: %[[SUM:.*]] = nn.add %[[S1]], %[[S2]] {sbp.stage = @a2}
// CHECK-NEXT: return %{{.*}}, %[[SUM]]
module attributes {nn.training = {micro_batches = 2 : i64}, sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: a2\n    devices: [0]\n    nodes: [\"w\", \"/embed/*\"]\n  - mesh: b2\n    devices: [1]\n    nodes: [\"/head/*\"]\n"}} {
  func.func @main() -> (tensor<4x4xbf16> {nn.name = "h"}, tensor<4x4xf32>) {
    %x = nn.input "x" : tensor<4x4xbf16>
    %w = nn.param "w" : tensor<4x4xbf16>
    %e = nn.matmul %x, %w : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc("/embed/MatMul")
    %h = nn.matmul %e, %w : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc("/head/MatMul")
    %p1 = nn.matmul %x, %e : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc("/embed/MatMul")
    %p2 = nn.matmul %e, %h : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc("/head/MatMul")
    %p3 = nn.matmul %h, %h : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc("/head/MatMul")
    %a = nn.add %p1, %p2 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc("/embed/MatMul")
    %g = nn.add %a, %p3 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc("/embed/MatMul")
    %c = nn.cast %g : tensor<4x4xbf16> -> tensor<4x4xf32> loc("w")
    %sum = nn.accumulate %c : tensor<4x4xf32> loc("w")
    return %h, %sum : tensor<4x4xbf16>, tensor<4x4xf32>
  }
}

// -----

// A gradient computed on another stage than its parameter's is summed
// there, and the sum moves once. One computed on the sum's own stage, in
// parts or not, stays as it is.
// CHECK-LABEL: sbp.mesh @a3(shape = 1, devices = [0])
// CHECK: func.func @main
// CHECK: %[[S:.*]] = nn.accumulate %{{.*}} {sbp.stage = @b3}
// CHECK: %[[Q:.*]] = nn.add {{.*}} {sbp.stage = @a3}
// CHECK-NEXT: %[[T:.*]] = nn.accumulate %[[Q]] {sbp.stage = @a3}
// CHECK-NEXT: return %{{.*}}, %[[S]], %[[T]]
module attributes {nn.training = {micro_batches = 2 : i64}, sbp.annotations = {file = "s.yaml", text = "stages:\n  - mesh: a3\n    devices: [0]\n    nodes: [\"w\", \"v\", \"/embed/*\"]\n  - mesh: b3\n    devices: [1]\n    nodes: [\"/head/*\"]\n"}} {
  func.func @main() -> (tensor<4x4xf32> {nn.name = "h"}, tensor<4x4xf32>, tensor<4x4xf32>) {
    %x = nn.input "x" : tensor<4x4xf32>
    %w = nn.param "w" : tensor<4x4xf32>
    %e = nn.matmul %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/embed/MatMul")
    %h = nn.matmul %e, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/head/MatMul")
    %p = nn.matmul %e, %h : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/head/MatMul")
    %sum = nn.accumulate %p : tensor<4x4xf32> loc("w")
    %q1 = nn.matmul %x, %e : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/embed/MatMul")
    %q = nn.add %q1, %e : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc("/embed/MatMul")
    %sum2 = nn.accumulate %q : tensor<4x4xf32> loc("v")
    return %h, %sum, %sum2 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}
