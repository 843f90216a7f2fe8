// RUN: parplan-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect -sbp-assign="mesh=1x4"

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
