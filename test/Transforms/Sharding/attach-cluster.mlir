// RUN: parplan-opt %s -split-input-file -attach-cluster | FileCheck %s
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=aws-p3-5node" | FileCheck %s --check-prefix=PRESET
// A cluster file is read once, here, and carried as its JSON; printed and
// parsed again, the module is laid out the same.
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=%S/../Inputs/small-memory.yaml" | FileCheck %s --check-prefix=FILE
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=%S/../Inputs/small-memory.yaml" | parplan-opt -split-input-file | FileCheck %s --check-prefix=FILE
// RUN: parplan-opt %s -split-input-file -attach-cluster="cluster=%S/../Inputs/small-memory.yaml" -sbp-assign="mesh=4" | FileCheck %s --check-prefix=FILE-PRICED
// RUN: not parplan-opt %s -split-input-file -attach-cluster="cluster=no-such-cluster" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not parplan-opt %s -split-input-file -attach-cluster="cluster=%S/../Inputs/missing.yaml" 2>&1 | FileCheck %s --check-prefix=MISSING

// The default is the single DGX H100 node.
// CHECK: module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h100">}
// PRESET: module attributes {sbp.cluster = #sbp.cluster<preset = "aws-p3-5node">}
// FILE: module attributes {sbp.cluster = #sbp.cluster<json = "{\22name\22:\22small-memory\22,\22device_types\22:[{
// FILE-SAME: \22memory\22:\221 GB\22,
// FILE-PRICED: cluster = "small-memory"
// FILE-PRICED-SAME: device_memory_bytes = 1000000000
// UNKNOWN: error: attach-cluster: unknown cluster 'no-such-cluster': neither a preset nor a file; presets: dgx-h100,
// MISSING: error: attach-cluster: cannot read '{{.*}}missing.yaml'
func.func @main() -> tensor<8x4xf32> {
  %x = nn.input "x" : tensor<8x4xf32>
  %y = nn.relu %x : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A cluster the module carries is replaced: the option says which.
// CHECK: module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h100">}
// PRESET: module attributes {sbp.cluster = #sbp.cluster<preset = "aws-p3-5node">}
module attributes {sbp.cluster = #sbp.cluster<preset = "a100-4node">} {
  func.func @main() -> tensor<8x4xf32> {
    %x = nn.input "x" : tensor<8x4xf32>
    return %x : tensor<8x4xf32>
  }
}
