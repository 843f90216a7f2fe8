// RUN: parplan-opt %s -split-input-file -verify-diagnostics -sbp-assign="mesh=4" | FileCheck %s
// What no plan fits leaves on the module for the compile driver, as
// numbers: the bytes needed, the device's, the device.
// RUN: not parplan-opt %s -split-input-file -sbp-assign="mesh=4" --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=NO-FIT
// RUN: not parplan-opt %s -split-input-file -sbp-assign="mesh=4" -parplan-debug-only=sbp-assign -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEBUG
// The price of memory, searched on training steps (Adam) that need it.
// RUN: not parplan-opt %s -split-input-file -sbp-assign="mesh=4 training=true optimizer=adam" -parplan-debug-only=sbp-assign -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRICE
// A memory budget below the devices' memory bounds the plans as a smaller
// device would.
// RUN: not parplan-opt %s -split-input-file -sbp-assign="mesh=4 training=true optimizer=adam memory-budget=6e8" -parplan-debug-only=sbp-assign -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// NO-FIT: sbp.no_fit = #sbp.no_fit<needed = 17180917760, capacity = 1000000000, device = 0>

// The cluster, four devices of 1 GB, is carried in the module as the tools
// attach it (parplan cluster show Inputs/small-memory.yaml --format json):
// passes read no file.

// Replicated, the 67M parameters' Adam state (1.07 GB) would not fit in the
// 1 GB of a device, though data parallelism is the fastest plan: the search
// splits the weight instead and fits.
// The baselines that replicate the weight are left out.
// DEBUG: [sbp-assign] start auto: step
// DEBUG-NEXT: [sbp-assign] start data-parallel: left out (no layout fits, or a pin contradicts it)
// DEBUG: [sbp-assign] start replicated: left out
// DEBUG-NEXT: [sbp-assign] kept start auto (step {{.*}} s) of 2 laid out
// CHECK-LABEL: module attributes {sbp.cluster = {{.*}}, sbp.plan = #sbp.layout_plan<
// CHECK-SAME: device_memory_bytes = 1000000000
// CHECK: nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.s<{{0|1}}>]]>}
module attributes {sbp.cluster = #sbp.cluster<json = "{\"name\":\"small-memory\",\"device_types\":[{\"name\":\"tiny\",\"memory\":\"1 GB\",\"memory_bandwidth\":\"1000 GB/s\",\"peak_flops\":{\"f32\":\"10 TFLOP/s\",\"bf16\":\"100 TFLOP/s\"}}],\"nodes\":[{\"name\":\"box\",\"device_type\":\"tiny\",\"devices\":4}],\"links\":{\"intra_node\":{\"bandwidth\":\"100 GB/s\",\"latency\":\"5 us\"}}}">} {
  func.func @main() -> tensor<16384x16384xf32> {
    %x = nn.input "x" : tensor<16384x4096xf32>
    %w = nn.param "w" : tensor<4096x16384xf32>
    %y = nn.matmul %x, %w : tensor<16384x4096xf32>, tensor<4096x16384xf32> -> tensor<16384x16384xf32>
    return %y : tensor<16384x16384xf32>
  }
}

// -----

// 4.3 billion parameters need 17.2 GB per device even split four ways (and 1 MB of activations).
// Under a memory budget, the error names the budget, not the device.
// BUDGET: error: no plan fits in memory: the smallest needs 17,180,917,760 bytes per device; the memory budget is 600,000,000, lacking 16,580,917,760
// expected-error@+2 {{no plan fits in memory: the smallest needs 17,180,917,760 bytes per device; device 0 (tiny) has 1,000,000,000, lacking 16,180,917,760}}
module attributes {sbp.cluster = #sbp.cluster<json = "{\"name\":\"small-memory\",\"device_types\":[{\"name\":\"tiny\",\"memory\":\"1 GB\",\"memory_bandwidth\":\"1000 GB/s\",\"peak_flops\":{\"f32\":\"10 TFLOP/s\",\"bf16\":\"100 TFLOP/s\"}}],\"nodes\":[{\"name\":\"box\",\"device_type\":\"tiny\",\"devices\":4}],\"links\":{\"intra_node\":{\"bandwidth\":\"100 GB/s\",\"latency\":\"5 us\"}}}">} {
  func.func @main() -> tensor<16x65536xf32> {
    %x = nn.input "x" : tensor<16x65536xf32>
    %w = nn.param "w" : tensor<65536x65536xf32>
    %y = nn.matmul %x, %w : tensor<16x65536xf32>, tensor<65536x65536xf32> -> tensor<16x65536xf32>
    return %y : tensor<16x65536xf32>
  }
}

// -----

// Trained with Adam, two 8192x8192 weights need 688 MB per device in the
// fastest plan and 587 MB in the plan of least memory (by both sums it is
// solved by: the faster of the two is kept); 637 MB lie between.
// On 600 MB the price walks the hull: the first price is where the fastest
// and the least-memory plans cost the same (the plan of 637 MB comes out
// there, and does not fit), the second where it and the least-memory plan
// do (it comes out again: nothing lies between), and the third just above
// that, where the 587 MB plan wins. Three probes where bisecting from
// 1e-15 s per byte took twenty.
// PRICE: start auto: 6 nodes in 6 classes; least time 1.429351e-02 s at 687,865,856 bytes per device of 600,000,000
// PRICE-NEXT: start auto: least memory by kept bytes: 587,202,560 bytes per device
// PRICE-NEXT: start auto: least memory by every value's bytes: 587,202,560 bytes per device
// PRICE-NEXT: start auto: price 1.029802e-11 s per byte: 1.429351e-02 s at 637,534,208 bytes per device
// PRICE-NEXT: start auto: price 2.059605e-11 s per byte: 1.429351e-02 s at 637,534,208 bytes per device
// PRICE-NEXT: start auto: price 2.060634e-11 s per byte: 1.533014e-02 s at 587,202,560 bytes per device
// PRICE-NEXT: start auto: step 1.533014e-02 s ({{.*}}), 587,202,560 bytes per device at a price of 2.060634e-11 s per byte
module attributes {sbp.cluster = #sbp.cluster<json = "{\"name\":\"small-memory\",\"device_types\":[{\"name\":\"tiny\",\"memory\":\"600 MB\",\"memory_bandwidth\":\"1000 GB/s\",\"peak_flops\":{\"f32\":\"10 TFLOP/s\",\"bf16\":\"100 TFLOP/s\"}}],\"nodes\":[{\"name\":\"box\",\"device_type\":\"tiny\",\"devices\":4}],\"links\":{\"intra_node\":{\"bandwidth\":\"100 GB/s\",\"latency\":\"5 us\"}}}">} {
  func.func @main() -> tensor<4096x8192xf32> {
    %x = nn.input "x" : tensor<4096x8192xf32>
    %w1 = nn.param "w1" : tensor<8192x8192xf32>
    %w2 = nn.param "w2" : tensor<8192x8192xf32>
    %h = nn.matmul %x, %w1 : tensor<4096x8192xf32>, tensor<8192x8192xf32> -> tensor<4096x8192xf32>
    %y = nn.matmul %h, %w2 : tensor<4096x8192xf32>, tensor<8192x8192xf32> -> tensor<4096x8192xf32>
    return %y : tensor<4096x8192xf32>
  }
}

// -----

// On 650 MB the plan of 637 MB fits, and is as fast as the fastest plan:
// nothing fitting is faster, and the search stops at the price it came at.
// On 650 MB devices with a budget of 600 MB, the plan of 600 MB devices
// (the case above too).
// BUDGET: start auto: step 1.533014e-02 s ({{.*}}), 587,202,560 bytes per device
// BUDGET: start auto: 6 nodes in 6 classes; least time 1.429351e-02 s at 687,865,856 bytes per device of 600,000,000
// BUDGET: start auto: step 1.533014e-02 s ({{.*}}), 587,202,560 bytes per device
// PRICE: start auto: 6 nodes in 6 classes; least time 1.429351e-02 s at 687,865,856 bytes per device of 650,000,000
// PRICE-NEXT: start auto: least memory by kept bytes: 587,202,560 bytes per device
// PRICE-NEXT: start auto: least memory by every value's bytes: 587,202,560 bytes per device
// PRICE-NEXT: start auto: price 1.029802e-11 s per byte: 1.429351e-02 s at 637,534,208 bytes per device
// PRICE-NEXT: start auto: step 1.429351e-02 s ({{.*}}), 637,534,208 bytes per device at a price of 1.029802e-11 s per byte
module attributes {sbp.cluster = #sbp.cluster<json = "{\"name\":\"small-memory\",\"device_types\":[{\"name\":\"tiny\",\"memory\":\"650 MB\",\"memory_bandwidth\":\"1000 GB/s\",\"peak_flops\":{\"f32\":\"10 TFLOP/s\",\"bf16\":\"100 TFLOP/s\"}}],\"nodes\":[{\"name\":\"box\",\"device_type\":\"tiny\",\"devices\":4}],\"links\":{\"intra_node\":{\"bandwidth\":\"100 GB/s\",\"latency\":\"5 us\"}}}">} {
  func.func @main() -> tensor<4096x8192xf32> {
    %x = nn.input "x" : tensor<4096x8192xf32>
    %w1 = nn.param "w1" : tensor<8192x8192xf32>
    %w2 = nn.param "w2" : tensor<8192x8192xf32>
    %h = nn.matmul %x, %w1 : tensor<4096x8192xf32>, tensor<8192x8192xf32> -> tensor<4096x8192xf32>
    %y = nn.matmul %h, %w2 : tensor<4096x8192xf32>, tensor<8192x8192xf32> -> tensor<4096x8192xf32>
    return %y : tensor<4096x8192xf32>
  }
}
