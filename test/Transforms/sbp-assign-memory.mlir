// RUN: parplan-opt %s -split-input-file -verify-diagnostics -sbp-assign="cluster=%S/Inputs/small-memory.yaml mesh=4" | FileCheck %s

// Replicated, the 67M parameters' Adam state (1.07 GB) would not fit in the
// 1 GB of a device, though data parallelism is the fastest plan: the search
// splits the weight instead and fits.
// CHECK-LABEL: module attributes {sbp.plan = {
// CHECK-SAME: device_memory_bytes = 1000000000
// CHECK: nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.s<{{0|1}}>]]>}
func.func @main() -> tensor<16384x16384xf32> {
  %x = nn.input "x" : tensor<16384x4096xf32>
  %w = nn.param "w" : tensor<4096x16384xf32>
  %y = nn.matmul %x, %w : tensor<16384x4096xf32>, tensor<4096x16384xf32> -> tensor<16384x16384xf32>
  return %y : tensor<16384x16384xf32>
}

// -----

// 4.3 billion parameters need 17.2 GB per device even split four ways (and 1 MB of activations).
// expected-error@+1 {{no plan fits in memory: the smallest needs 17,180,917,760 bytes per device; device 0 (tiny) has 1,000,000,000, lacking 16,180,917,760}}
func.func @main() -> tensor<16x65536xf32> {
  %x = nn.input "x" : tensor<16x65536xf32>
  %w = nn.param "w" : tensor<65536x65536xf32>
  %y = nn.matmul %x, %w : tensor<16x65536xf32>, tensor<65536x65536xf32> -> tensor<16x65536xf32>
  return %y : tensor<16x65536xf32>
}
