// Under a schedule, a micro-batch's backward sends to earlier stages only:
// stage 0 sending on to stage 1 there would wait on stage 1's backward,
// which waits on it (plan-to-proto.mlir).
module attributes {plan.mesh_shape = array<i64: 2>, plan.micro_batches = 2 : i64, plan.schedule = "1f1b"} {
  plan.mesh @a shape = [1] devices = [0]
  plan.mesh @b shape = [1] devices = [1]
  plan.program @first devices = [0] mesh = @a {
    %x = plan.buffer kind = input {name = "x", logical_shape = array<i64: 4>, splits = array<i64: -1>} : memref<4xf32>
    plan.backward_begin
    plan.send %x to 1 tag = 0 : memref<4xf32>
    plan.after_micro_batches
  }
  plan.program @second devices = [1] mesh = @b {
    %y = plan.buffer : memref<4xf32>
    plan.backward_begin
    plan.recv %y from 0 tag = 0 : memref<4xf32>
    plan.after_micro_batches
  }
}
