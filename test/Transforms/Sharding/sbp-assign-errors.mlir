// RUN: parplan-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect -attach-cluster -sbp-assign="mesh=1x4"

// The cluster is the module's (attach-cluster): without one, one line.
// RUN: not parplan-opt %s -split-input-file -allow-unregistered-dialect -sbp-assign 2>&1 | FileCheck %s --check-prefix=NO-CLUSTER
// NO-CLUSTER: error: sbp-assign: the module carries no cluster (sbp.cluster); attach one with --attach-cluster="cluster=NAME" or compile with parplan compile --cluster
// Scaled presets need no file.
// RUN: not parplan-opt %s -split-input-file -allow-unregistered-dialect -attach-cluster="cluster=dgx-h100x2" -sbp-assign="mesh=2x8" 2>&1 | FileCheck %s --check-prefix=SCALED
// SCALED: error: 'test.op' is not an nn op

func.func @main() -> tensor<4xf32> {
  // expected-error@+1 {{'test.op' is not an nn op: sbp-assign has no sharding rule for it}}
  %x = "test.op"() : () -> tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{sbp-assign plans functions without arguments (inputs are nn.input ops); @main has 1}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}


// -----

// Stages lie on meshes of one shape, which is the one searched.
sbp.mesh @a(shape = 1x4, devices = [0, 1, 2, 3])
sbp.mesh @b(shape = 2x2, devices = [4, 5, 6, 7])
// expected-error @+1 {{sbp-assign lays out stages on meshes of one shape; @a is 1x4, @b 2x2}}
func.func @main() -> tensor<4xf32> {
  %x = nn.input "x" {sbp.stage = @a} : tensor<4xf32>
  %t = nn.tanh %x {sbp.stage = @b} : tensor<4xf32>
  return %t : tensor<4xf32>
}

// -----

// expected-error @+1 {{mesh '1x4': the stages' meshes are 2}}
module {
  sbp.mesh @a(shape = 2, devices = [0, 1])
  func.func @main() -> tensor<4xf32> {
    %x = nn.input "x" {sbp.stage = @a} : tensor<4xf32>
    return %x : tensor<4xf32>
  }
}

// -----

sbp.mesh @a(shape = 1x4, devices = [0, 1, 2, 3])
func.func @main() -> tensor<4xf32> {
  %x = nn.input "x" {sbp.stage = @a} : tensor<4xf32>
  // expected-error @+1 {{sbp-assign: this op has no sbp.stage while others have one (place-stages marks every op)}}
  %t = nn.tanh %x : tensor<4xf32>
  return %t : tensor<4xf32>
}

// -----

// expected-error @+1 {{stage mesh @a on cluster 'dgx-h100': }}
module {
  sbp.mesh @a(shape = 1x4, devices = [6, 7, 8, 9])
  func.func @main() -> tensor<4xf32> {
    %x = nn.input "x" {sbp.stage = @a} : tensor<4xf32>
    return %x : tensor<4xf32>
  }
}
