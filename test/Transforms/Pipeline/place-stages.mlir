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
