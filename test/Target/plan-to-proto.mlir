// RUN: parplan-translate %s -split-input-file --plan-to-proto -o %t.pb
// RUN: not parplan-translate %S/Inputs/overlapping-meshes.mlir --plan-to-proto -o %t.bad 2>&1 | FileCheck %s --check-prefix=OVERLAP
// RUN: not parplan-translate %S/Inputs/update-per-micro-batch.mlir --plan-to-proto -o %t.bad 2>&1 | FileCheck %s --check-prefix=MICRO-BATCH
// RUN: not parplan-translate %S/Inputs/gather-per-micro-batch.mlir --plan-to-proto -o %t.bad 2>&1 | FileCheck %s --check-prefix=GATHER-MICRO-BATCH
// RUN: not parplan-translate %S/Inputs/send-against-stages.mlir --plan-to-proto -o %t.bad 2>&1 | FileCheck %s --check-prefix=AGAINST-STAGES
// RUN: not parplan-translate %S/Inputs/move-missing-tile.mlir --plan-to-proto -o %t.bad 2>&1 | FileCheck %s --check-prefix=MISSING-TILE

// Named meshes reach the plan file: the runtime's checkPlan, which the
// export runs, reads each program's blocks in its mesh (this plan passes)
// and rejects meshes sharing a device, which the dialect does not check
// (Inputs/overlapping-meshes.mlir).
// OVERLAP: the plan is invalid: plan meshes[1] 'b' lists device 1, which mesh 'a' holds too
// A plan of micro-batches updates its parameters once, after them.
// MICRO-BATCH: the plan is invalid: program 0 instruction 0 writes parameter buffer 0 'w' once per micro-batch (before update_begin 1)
// So would a collective writing it (a gathered update).
// GATHER-MICRO-BATCH: the plan is invalid: program 0 instruction 0 writes parameter buffer 0 'w' once per micro-batch (before update_begin 1)
// A schedule runs stages' micro-batches in their own orders: backwards send
// to earlier stages only.
// A cross-mesh move's table is checked whole: every destination block is
// made of the tiles it receives.
// MISSING-TILE: the plan is invalid: plan cross_mesh_moves[0] 'move0': device 1 receives 4 of the 8 elements of its destination block
// AGAINST-STAGES: the plan is invalid: program 0 instruction 0 (stage 0) sends to device 1 from stage 0 to stage 1 in a micro-batch's backward: with a schedule, forwards go to later stages and backwards to earlier ones (stages placed against the layer order? compile with --schedule sequential)
module attributes {plan.mesh_shape = array<i64: 4>} {
  plan.mesh @a shape = [2] devices = [0, 1]
  plan.mesh @b shape = [2] devices = [3, 2]
  plan.group @b.axis0 mesh_axes = [0] mesh = @b
  plan.program @first devices = [0] mesh = @a {
    %x = plan.buffer kind = parameter {name = "x", logical_shape = array<i64: 5, 4>, splits = array<i64: 0>} : memref<3x4xf32>
  }
  plan.program @fourth devices = [1] mesh = @a {
    %x = plan.buffer kind = parameter {name = "x", logical_shape = array<i64: 5, 4>, splits = array<i64: 0>} : memref<2x4xf32>
    %out = plan.buffer kind = output {name = "x", logical_shape = array<i64: 5, 4>, splits = array<i64: 0>} : memref<2x4xf32>
  }
  plan.program @second devices = [3] mesh = @b {
    %y = plan.buffer kind = parameter {name = "y", logical_shape = array<i64: 5, 4>, splits = array<i64: 0>} : memref<3x4xf32>
    %all = plan.buffer : memref<5x4xf32>
    plan.all_gather %y into %all on @b.axis0 axis = 0 : memref<3x4xf32> -> memref<5x4xf32>
  }
  plan.program @third devices = [2] mesh = @b {
    %y = plan.buffer kind = parameter {name = "y", logical_shape = array<i64: 5, 4>, splits = array<i64: 0>} : memref<2x4xf32>
    %all = plan.buffer : memref<5x4xf32>
    plan.all_gather %y into %all on @b.axis0 axis = 0 : memref<2x4xf32> -> memref<5x4xf32>
  }
}

// -----

// A cross-mesh move reaches the plan file as one table the programs of both
// meshes read (this plan passes checkPlan).
module attributes {plan.mesh_shape = array<i64: 3>} {
  plan.mesh @a shape = [2] devices = [0, 2]
  plan.mesh @b shape = [1] devices = [1]
  plan.cross_mesh @move0 : tensor<4x2xf32> from @a [0] to @b [-1]
      tile_offsets = [0, 0, 2, 0] tile_sizes = [2, 2, 2, 2]
      transfer_tiles = [0, 1] transfer_senders = [0, 2]
      receiver_counts = [1, 1] receivers = [1, 1]
  plan.program @sources devices = [0, 2] mesh = @a {
    %x = plan.buffer kind = parameter {logical_shape = array<i64: 4, 2>, name = "x", splits = array<i64: 0>} : memref<2x2xf32>
    plan.cross_mesh_send @move0 %x : memref<2x2xf32>
  }
  plan.program @destination devices = [1] mesh = @b {
    %s = plan.buffer : memref<256xi8>
    %y = plan.buffer : memref<4x2xf32>
    plan.cross_mesh_recv @move0 %y scratch %s : memref<4x2xf32>, memref<256xi8>
  }
}
