// RUN: parplan-opt %s -split-input-file -attach-cluster -place-stages="stages=3 mesh=4x2" -verify-diagnostics
// RUN: not parplan-opt %s -attach-cluster -place-stages="stages=2 mesh=4x4" 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: not parplan-opt %s -attach-cluster -place-stages="stages=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not parplan-opt %s -attach-cluster -place-stages="chunks=2" 2>&1 | FileCheck %s --check-prefix=CHUNKS-ALONE
// RUN: not parplan-opt %s -attach-cluster -place-stages="stages=2 chunks=0 mesh=4x2" 2>&1 | FileCheck %s --check-prefix=CHUNKS-ZERO
// RUN: not parplan-opt %S/../Inputs/two-layers.mlir -attach-cluster -place-stages="stages=2 chunks=4 mesh=4x2" 2>&1 | FileCheck %s --check-prefix=CHUNKS-LAYERS
// RUN: not parplan-opt %S/../Inputs/skip-over-chunk.mlir -attach-cluster -place-stages="stages=2 chunks=2 mesh=4x2" 2>&1 | FileCheck %s --check-prefix=CHUNKS-SKIP

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

// Chunks are cut from stages the option places.
// CHUNKS-ALONE: error: chunks=2: chunks are cut from stages=N, N > 1
// CHUNKS-ZERO: error: chunks=0: a stage holds at least one chunk


// Two layers cannot fill two stages of four chunks.
// CHUNKS-LAYERS: error: stages=2 chunks=4: @main has 2 layers to place, fewer than the stages times the chunks

// A value computed in one chunk and read by another chunk of the same
// stage would be another micro-batch's by then.
// CHUNKS-SKIP: error: loc("/fc3/MatMul"): chunks=2: '/fc3/MatMul' (chunk 1 of stage 'stage0') reads '/fc1/MatMul' of chunk 0 on the same stage: the stage runs a micro-batch's chunks at different times, so a value goes from chunk to chunk through another stage only
