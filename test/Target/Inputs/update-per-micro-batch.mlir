// An update before plan.after_micro_batches would step the parameter once
// per micro-batch (plan-to-proto.mlir).
module attributes {plan.mesh_shape = array<i64: 1>, plan.micro_batches = 2 : i64} {
  plan.program @program0 devices = [0] {
    %w = plan.buffer kind = parameter {name = "w", logical_shape = array<i64: 4>, splits = array<i64: -1>} : memref<4xf32>
    %g = plan.buffer kind = accumulator : memref<4xf32>
    plan.kernel "sgd_update" ins(%w, %g : memref<4xf32>, memref<4xf32>) outs(%w : memref<4xf32>) {attrs = {lr = 0.1 : f64}}
    plan.after_micro_batches
  }
}
