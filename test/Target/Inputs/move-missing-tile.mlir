// Rows 0-1 of a 4x2 tensor reach device 1; rows 2-3 never do.
module attributes {plan.mesh_shape = array<i64: 3>} {
  plan.mesh @a shape = [2] devices = [0, 2]
  plan.mesh @b shape = [1] devices = [1]
  plan.cross_mesh @move0 : tensor<4x2xf32> from @a [0] to @b [-1]
      tile_offsets = [0, 0, 2, 0] tile_sizes = [2, 2, 2, 2]
      transfer_tiles = [0] transfer_senders = [0]
      receiver_counts = [1] receivers = [1]
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
