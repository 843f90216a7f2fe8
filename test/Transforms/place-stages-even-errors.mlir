// RUN: parplan-opt %s -split-input-file -place-stages="stages=3 mesh=4x2" -verify-diagnostics
// RUN: not parplan-opt %s -place-stages="stages=2 mesh=4x4" 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: not parplan-opt %s -place-stages="stages=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// Three stages do not cut a first axis of 4 evenly.
module {
  // expected-error @+1 {{stages=3: 3 parts do not divide the first axis of mesh 4x2 (4) into equal blocks}}
  func.func @main() -> tensor<4x4xf32> {
    %x = nn.input "x" : tensor<4x4xf32>
    return %x : tensor<4x4xf32>
  }
}

// A mesh larger than the cluster (dgx-h100: 8 devices).
// OFF: error: stages=2: mesh 4x4 needs 16 devices but the cluster has 8

// A negative count.
// NEGATIVE: error: stages=-1: the number of stages cannot be negative
