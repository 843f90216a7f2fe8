// A gather into a parameter before plan.after_micro_batches would write
// it once per micro-batch, as an update there would (plan-to-proto.mlir).
module attributes {plan.mesh_shape = array<i64: 2>, plan.micro_batches = 2 : i64} {
  plan.group @axis0 mesh_axes = [0]
  plan.program @program0 devices = [0, 1] {
    %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 4>, splits = array<i64: -1>} : memref<4xf32>
    %m = plan.buffer kind = state {name = "m", logical_shape = array<i64: 4>, splits = array<i64: 0>} : memref<2xf32>
    plan.all_gather %m into %w on @axis0 axis = 0 : memref<2xf32> -> memref<4xf32>
    plan.after_micro_batches
  }
}
