module attributes {plan.mesh_shape = array<i64: 3>} {
  plan.mesh @a shape = [2] devices = [0, 1]
  plan.mesh @b shape = [2] devices = [1, 2]
  plan.program @first devices = [0, 1] mesh = @a {
  }
  plan.program @second devices = [2] mesh = @b {
  }
}
