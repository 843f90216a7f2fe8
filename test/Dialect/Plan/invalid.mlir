// RUN: parplan-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'plan.group' op needs at least one device}}
plan.group @empty devices = []

// -----

// expected-error @+1 {{'plan.group' op device id -2 is negative}}
plan.group @negative devices = [0, -2]

// -----

// expected-error @+1 {{'plan.group' op device id 1 is listed twice}}
plan.group @twice devices = [1, 0, 1]

// -----

// expected-error @+1 {{'plan.program' op devices must be ascending and non-negative}}
plan.program @negative devices = [-1] {
}

// -----

// expected-error @+1 {{'plan.program' op devices must be ascending and non-negative}}
plan.program @unsorted devices = [1, 0] {
}

// -----

// expected-error @+1 {{'plan.program' op needs at least one device}}
plan.program @nobody devices = [] {
}

// -----

// expected-error @+1 {{'plan.group' op needs either devices or mesh_axes, not both}}
plan.group @both devices = [0] mesh_axes = [0]

// -----

// expected-error @+1 {{'plan.group' op needs either devices or mesh_axes, not neither}}
plan.group @neither

// -----

// expected-error @+1 {{'plan.group' op mesh_axes must be ascending and non-negative}}
plan.group @backwards mesh_axes = [1, 0]

// -----

module attributes {plan.mesh_shape = array<i64: 4>} {
  plan.group @rows mesh_axes = [1]
  plan.program @all devices = [0, 1, 2, 3] {
    %0 = plan.buffer : memref<4xf32>
    // expected-error @+1 {{'plan.all_reduce' op @rows spans mesh axis 1, which the mesh of rank 1 lacks}}
    plan.all_reduce %0 on @rows : memref<4xf32>
  }
}

// -----

func.func @buffer_outside_program() {
  // expected-error @+1 {{'plan.buffer' op expects parent op 'plan.program'}}
  %0 = plan.buffer : memref<4xf32>
  return
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{'plan.buffer' op needs a static shape, got 'memref<?x4xf32>'}}
  %0 = plan.buffer : memref<?x4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{'plan.buffer' op needs the identity layout, got 'memref<4x4xf32, strided<[1, 4]>>'}}
  %0 = plan.buffer : memref<4x4xf32, strided<[1, 4]>>
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{'plan.buffer' op result #0 must be memref of}}
  %0 = plan.buffer : memref<4xcomplex<f32>>
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.kernel' op needs a kernel name}}
  plan.kernel "" outs(%0 : memref<4xf32>)
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.kernel' op kernel 'print' writes no buffer}}
  "plan.kernel"(%0) <{kernel = "print", operandSegmentSizes = array<i32: 1, 0>}> : (memref<4xf32>) -> ()
}

// -----

// The cost model's figures on a kernel are counts: finite, not negative,
// and a type the cluster's peaks are named by.
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.kernel' op kernel 'relu' has flops -1.000000e+00; expected a finite count of at least 0}}
  plan.kernel "relu" ins(%0 : memref<4xf32>) outs(%0 : memref<4xf32>) {flops = -1.0 : f64}
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.kernel' op kernel 'relu' has bytes INF; expected a finite count of at least 0}}
  plan.kernel "relu" ins(%0 : memref<4xf32>) outs(%0 : memref<4xf32>) {bytes = 0x7FF0000000000000 : f64}
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.kernel' op kernel 'relu' computes in 'f8'; expected f64, f32, tf32, bf16, f16 or i8}}
  plan.kernel "relu" ins(%0 : memref<4xf32>) outs(%0 : memref<4xf32>) {compute_type = "f8"}
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.all_reduce' op @missing does not name a plan.group}}
  plan.all_reduce %0 on @missing : memref<4xf32>
}

// -----

plan.group @others devices = [1, 2]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.all_reduce' op runs on device 0, which is not a member of @others}}
  plan.all_reduce %0 on @others : memref<4xf32>
}

// -----

// Every device of a program must be a member.
plan.group @others devices = [1, 2]
plan.program @shared devices = [1, 2, 3] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.all_reduce' op runs on device 3, which is not a member of @others}}
  plan.all_reduce %0 on @others : memref<4xf32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<2x4xf32>
  %1 = plan.buffer : memref<4x4xf16>
  // expected-error @+1 {{'plan.all_gather' op input and output element types differ}}
  plan.all_gather %0 into %1 on @pair axis = 0 : memref<2x4xf32> -> memref<4x4xf16>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<2x4xf32>
  %1 = plan.buffer : memref<16xf32>
  // expected-error @+1 {{'plan.all_gather' op input and output ranks differ}}
  plan.all_gather %0 into %1 on @pair axis = 0 : memref<2x4xf32> -> memref<16xf32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<2x4xf32>
  %1 = plan.buffer : memref<4x4xf32>
  // expected-error @+1 {{'plan.all_gather' op axis 2 is out of range for rank 2}}
  plan.all_gather %0 into %1 on @pair axis = 2 : memref<2x4xf32> -> memref<4x4xf32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<2x4xf32>
  %1 = plan.buffer : memref<4x8xf32>
  // expected-error @+1 {{'plan.all_gather' op input and output differ in dimension 1}}
  plan.all_gather %0 into %1 on @pair axis = 0 : memref<2x4xf32> -> memref<4x8xf32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<3x4xf32>
  %1 = plan.buffer : memref<8x4xf32>
  // expected-error @+1 {{'plan.all_gather' op input has 3 elements along axis 0, not member 0's balanced share (4) of output's 8 over 2 devices}}
  plan.all_gather %0 into %1 on @pair axis = 0 : memref<3x4xf32> -> memref<8x4xf32>
}

// -----

plan.group @triple devices = [0, 1, 2]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<8x4xf32>
  %1 = plan.buffer : memref<1x4xf32>
  // 8 rows over 3 devices are 3, 3, 2.
  // expected-error @+1 {{'plan.reduce_scatter' op output has 1 elements along axis 0, not member 0's balanced share (3) of input's 8 over 3 devices}}
  plan.reduce_scatter %0 into %1 on @triple axis = 0 : memref<8x4xf32> -> memref<1x4xf32>
}

// -----

plan.group @triple devices = [0, 1, 2]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4x4xf32>
  %1 = plan.buffer : memref<12x1xf32>
  // Device 0 keeps part 0 of the 4 columns over 3 devices (2, 1, 1): 2.
  // expected-error @+1 {{'plan.all_to_all' op output shape does not match the input with axis 1 cut into part 0 of 3 and axis 0 gathered from 3 parts}}
  plan.all_to_all %0 into %1 on @triple split_axis = 1 concat_axis = 0 : memref<4x4xf32> -> memref<12x1xf32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4x4xf32>
  %1 = plan.buffer : memref<4x2xf32>
  // expected-error @+1 {{'plan.all_to_all' op output shape does not match the input with axis 1 cut into part 0 of 2 and axis 0 gathered from 2 parts}}
  plan.all_to_all %0 into %1 on @pair split_axis = 1 concat_axis = 0 : memref<4x4xf32> -> memref<4x2xf32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4x4xf32>
  %1 = plan.buffer : memref<4x4xf32>
  // expected-error @+1 {{'plan.all_to_all' op cuts and concatenates the same axis 1}}
  plan.all_to_all %0 into %1 on @pair split_axis = 1 concat_axis = 1 : memref<4x4xf32> -> memref<4x4xf32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4x4xf32>
  %1 = plan.buffer : memref<8x2xf32>
  // expected-error @+1 {{'plan.all_to_all' op axes 2 and 0 must be below the rank 2}}
  plan.all_to_all %0 into %1 on @pair split_axis = 2 concat_axis = 0 : memref<4x4xf32> -> memref<8x2xf32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4x4xf32>
  %1 = plan.buffer : memref<8x2xi32>
  // expected-error @+1 {{'plan.all_to_all' op input and output differ in element type or rank}}
  plan.all_to_all %0 into %1 on @pair split_axis = 1 concat_axis = 0 : memref<4x4xf32> -> memref<8x2xi32>
}

// -----

plan.group @pair devices = [0, 1]
plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.broadcast' op root rank 3 is not a rank of @pair}}
  plan.broadcast %0 on @pair root = 3 : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.send' op names device 0, which runs this program, as the peer}}
  plan.send %0 to 0 tag = 0 : memref<4xf32>
}

// -----

plan.program @dev2 devices = [2] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.recv' op names device 2, which runs this program, as the peer}}
  plan.recv %0 from 2 tag = 0 : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.send' op attribute 'tag' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  plan.send %0 to 1 tag = -1 : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [temporary, parameter, input, state, constant, output, accumulator, micro_batch]}}
  %0 = plan.buffer kind = weights : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{'plan.buffer' op a parameter buffer needs a name, a logical_shape and splits}}
  %0 = plan.buffer kind = parameter {name = "w"} : memref<4xf32>
}

// -----

module attributes {plan.mesh_shape = array<i64: 2>} {
  plan.program @both devices = [0, 1] {
    // expected-error @+1 {{'plan.buffer' op device 0's block of the logical shape has extent [4], not the buffer's}}
    %0 = plan.buffer kind = input {name = "x", logical_shape = array<i64: 8>, splits = array<i64: 0>} : memref<3xf32>
  }
}

// -----

// 7 rows over 2 devices: 4 and 3. Device 0 alone may hold 4; device 1 may
// not share its program.
module attributes {plan.mesh_shape = array<i64: 2>} {
  plan.program @both devices = [0, 1] {
    // expected-error @+1 {{'plan.buffer' op device 1's block of the logical shape has extent [3], not the buffer's}}
    %0 = plan.buffer kind = input {name = "x", logical_shape = array<i64: 7>, splits = array<i64: 0>} : memref<4xf32>
  }
}

// -----

// Shares 3 : 1 cut 8 rows 6 and 2: device 1 holds 2, not the balanced 4.
module attributes {plan.mesh_shape = array<i64: 2>, plan.mesh_shares = [array<i64: 3, 1>]} {
  plan.program @fast devices = [0] {
    %0 = plan.buffer kind = input {name = "x", logical_shape = array<i64: 8>, splits = array<i64: 0>} : memref<6xf32>
  }
  plan.program @slow devices = [1] {
    // expected-error @+1 {{'plan.buffer' op device 1's block of the logical shape has extent [2], not the buffer's}}
    %0 = plan.buffer kind = input {name = "x", logical_shape = array<i64: 8>, splits = array<i64: 0>} : memref<4xf32>
  }
}

// -----

// Shares that are not the plan mesh's.
module attributes {plan.mesh_shape = array<i64: 4>, plan.mesh_shares = [array<i64: 3, 1>]} {
  // expected-error @+1 {{'plan.program' op reads the plan's plan.mesh_shares: mesh axis 0 has 4 devices but 2 shares}}
  plan.program @all devices = [0, 1, 2, 3] {
    %0 = plan.buffer kind = input {name = "x", logical_shape = array<i64: 8>, splits = array<i64: 0>} : memref<2xf32>
  }
}

// -----

module attributes {plan.mesh_shape = array<i64: 2>, plan.mesh_shares = [3, 1]} {
  // expected-error @+1 {{'plan.program' op reads the plan's plan.mesh_shares: an entry is not an array<i64> of weights}}
  plan.program @all devices = [0, 1] {
  }
}

// -----

// Collectives cut balanced parts: none exchanges parts along an axis of
// uneven shares.
module attributes {plan.mesh_shape = array<i64: 2>, plan.mesh_shares = [array<i64: 3, 1>]} {
  plan.group @line mesh_axes = [0]
  plan.program @fast devices = [0] {
    %0 = plan.buffer : memref<6xf32>
    %1 = plan.buffer : memref<8xf32>
    // expected-error @+1 {{'plan.all_gather' op exchanges parts along mesh axis 0, whose shares are uneven; parts are balanced}}
    plan.all_gather %0 into %1 on @line axis = 0 : memref<6xf32> -> memref<8xf32>
  }
}

// -----

module attributes {plan.mesh_shape = array<i64: 2, 2>} {
  plan.program @all devices = [0, 1, 2, 3] {
    // expected-error @+1 {{'plan.buffer' op splits need one entry per axis of the mesh (2)}}
    %0 = plan.buffer kind = state {name = "m", logical_shape = array<i64: 8>, splits = array<i64: 0>} : memref<4xf32>
  }
}

// -----

module attributes {plan.mesh_shape = array<i64: 2>} {
  plan.program @all devices = [0, 1] {
    // expected-error @+1 {{'plan.buffer' op splits entry 1 is neither -1 nor a dimension}}
    %0 = plan.buffer kind = state {name = "m", logical_shape = array<i64: 8>, splits = array<i64: 1>} : memref<4xf32>
  }
}

// -----

module attributes {plan.mesh_shape = array<i64: 2>} {
  plan.program @all devices = [0, 1] {
    // expected-error @+1 {{'plan.buffer' op a split constant buffer needs a value of its logical_shape and element type}}
    %0 = plan.buffer kind = constant {logical_shape = array<i64: 4>, splits = array<i64: 0>, value = dense<1.0> : tensor<2xf32>} : memref<2xf32>
  }
}

// -----

module attributes {plan.mesh_shape = array<i64: 2, 2>} {
  plan.program @all devices = [0, 1, 2, 3] {
    %0 = plan.buffer : memref<4xf32>
    %1 = plan.buffer : memref<2xf32>
    // expected-error @+1 {{'plan.kernel' op attribute 'starts' needs one splits entry per mesh axis (2)}}
    plan.kernel "slice" ins(%0 : memref<4xf32>) outs(%1 : memref<2xf32>) {attrs = {starts = #plan.block_offset<shape = [4], splits = [0], dim = -1>}}
  }
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  %1 = plan.buffer : memref<2xf32>
  // expected-error @+1 {{block_offset dim 1 is neither -1 nor a dimension of the rank-1 shape}}
  plan.kernel "slice" ins(%0 : memref<4xf32>) outs(%1 : memref<2xf32>) {attrs = {starts = #plan.block_offset<shape = [4], splits = [0], dim = 1>}}
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{'plan.buffer' op a constant buffer needs a value of its shape and element type}}
  %0 = plan.buffer kind = constant {value = dense<1.0> : tensor<2xf32>} : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.loss' op needs a scalar buffer, got 'memref<4xf32>'}}
  plan.loss %0 : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  %0 = plan.buffer : memref<4xf32>
  %1 = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.update' op needs a parameter or state buffer as its target}}
  plan.update %0 from %1 : memref<4xf32>
}

// -----

// Shared by both devices of a mesh axis of 2, a gather of 3 elements needs
// parts of 2 and 1: no one extent serves both.
module attributes {plan.mesh_shape = array<i64: 2>} {
  plan.group @axis0 mesh_axes = [0]
  plan.program @both devices = [0, 1] {
    %0 = plan.buffer : memref<2xf32>
    %1 = plan.buffer : memref<3xf32>
    // expected-error @+1 {{'plan.all_gather' op input has 2 elements along axis 0, not member 1's balanced share (1) of output's 3 over 2 devices}}
    plan.all_gather %0 into %1 on @axis0 axis = 0 : memref<2xf32> -> memref<3xf32>
  }
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{'plan.buffer' op a temporary buffer has no splits or logical_shape}}
  %0 = plan.buffer {splits = array<i64: 3>} : memref<4xf32>
}

// -----

// expected-error @+1 {{'plan.mesh' op lists 3 devices for a shape of 4}}
plan.mesh @short shape = [2, 2] devices = [0, 1, 2]

// -----

// expected-error @+1 {{'plan.mesh' op needs a shape of positive axes}}
plan.mesh @flat shape = [0] devices = []

// -----

// expected-error @+1 {{'plan.mesh' op device id 1 is listed twice}}
plan.mesh @twice shape = [2] devices = [1, 1]

// -----

// expected-error @+1 {{'plan.program' op names @nowhere, which is no plan.mesh}}
plan.program @lost devices = [0] mesh = @nowhere {
}

// -----

plan.mesh @stage shape = [2] devices = [2, 3]
// expected-error @+1 {{'plan.program' op runs on device 1, which @stage does not hold}}
plan.program @outside devices = [1, 2] mesh = @stage {
}

// -----

plan.mesh @stage shape = [2] devices = [2, 3]
// expected-error @+1 {{'plan.group' op names a mesh but no mesh_axes}}
plan.group @fixed devices = [2, 3] mesh = @stage

// -----

// Device 3 is the first of @stage: rows 0..2 of 5, not the 2 rows the
// buffer has (device 2 would hold those).
module attributes {plan.mesh_shape = array<i64: 4>} {
  plan.mesh @stage shape = [2] devices = [3, 2]
  plan.program @p devices = [3] mesh = @stage {
    // expected-error @+1 {{'plan.buffer' op device 3's block of the logical shape has extent [3, 4], not the buffer's}}
    %x = plan.buffer kind = parameter {name = "x", logical_shape = array<i64: 5, 4>, splits = array<i64: 0>} : memref<2x4xf32>
  }
  plan.program @rest devices = [0, 1, 2] {
  }
}

// -----

module attributes {plan.mesh_shape = array<i64: 4>} {
  plan.mesh @a shape = [2] devices = [0, 1]
  plan.mesh @b shape = [2] devices = [2, 3]
  plan.group @b.axis0 mesh_axes = [0] mesh = @b
  plan.program @p devices = [0, 1] mesh = @a {
    %x = plan.buffer : memref<4xf32>
    // expected-error @+1 {{'plan.all_reduce' op runs on device 0, which is not a member of @b.axis0}}
    plan.all_reduce %x on @b.axis0 : memref<4xf32>
  }
  plan.program @q devices = [2, 3] mesh = @b {
  }
}

// -----

plan.program @p devices = [0] {
  // expected-error @+1 {{'plan.buffer' op an output buffer needs a name, a logical_shape and splits}}
  %o = plan.buffer kind = output : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{'plan.buffer' op an accumulator buffer has no splits or logical_shape}}
  %0 = plan.buffer kind = accumulator {logical_shape = array<i64: 4>, splits = array<i64: -1>} : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  plan.after_micro_batches
  // expected-error @+1 {{'plan.after_micro_batches' op appears more than once in @dev0}}
  plan.after_micro_batches
}

// -----

plan.program @dev0 devices = [0] {
  plan.backward_begin
  // expected-error @+1 {{'plan.backward_begin' op appears more than once in @dev0}}
  plan.backward_begin
}

// -----

plan.program @dev0 devices = [0] {
  plan.after_micro_batches
  // expected-error @+1 {{'plan.backward_begin' op comes after plan.after_micro_batches: the backward is part of a micro-batch}}
  plan.backward_begin
}

// -----

plan.program @dev0 devices = [0] {
  plan.forward_begin
  // expected-error @+1 {{'plan.forward_begin' op appears more than once in @dev0}}
  plan.forward_begin
}

// -----

plan.program @dev0 devices = [0] {
  plan.backward_begin
  // expected-error @+1 {{'plan.forward_begin' op comes after 'plan.backward_begin': the once-per-step part it ends comes before the micro-batches}}
  plan.forward_begin
}

// -----

plan.program @dev0 devices = [0] {
  plan.chunk 0
  // expected-error @+1 {{'plan.forward_begin' op comes after 'plan.chunk': the once-per-step part it ends comes before the micro-batches}}
  plan.forward_begin
}

// -----

plan.mesh @a shape = [1] devices = [0]
plan.mesh @b shape = [1] devices = [1]
// expected-error @+1 {{'plan.cross_mesh' op needs tile_offsets and tile_sizes of 2 entries per tile}}
plan.cross_mesh @move0 : tensor<4x2xf32> from @a [-1] to @b [-1]
    tile_offsets = [0, 0] tile_sizes = [4] transfer_tiles = [0]
    transfer_senders = [0] receiver_counts = [1] receivers = [1]

// -----

plan.mesh @a shape = [1] devices = [0]
plan.mesh @b shape = [1] devices = [1]
// expected-error @+1 {{'plan.cross_mesh' op moves tile 1, not one of its 1}}
plan.cross_mesh @move0 : tensor<4xf32> from @a [-1] to @b [-1]
    tile_offsets = [0] tile_sizes = [4] transfer_tiles = [1]
    transfer_senders = [0] receiver_counts = [1] receivers = [1]

// -----

plan.mesh @a shape = [1] devices = [0]
plan.mesh @b shape = [1] devices = [1]
// expected-error @+1 {{'plan.cross_mesh' op counts 2 receivers but lists 1}}
plan.cross_mesh @move0 : tensor<4xf32> from @a [-1] to @b [-1]
    tile_offsets = [0] tile_sizes = [4] transfer_tiles = [0]
    transfer_senders = [0] receiver_counts = [2] receivers = [1]

// -----

plan.mesh @a shape = [1] devices = [0]
plan.mesh @b shape = [1] devices = [1]
// expected-error @+1 {{'plan.cross_mesh' op has a transfer without receivers}}
plan.cross_mesh @move0 : tensor<4xf32> from @a [-1] to @b [-1]
    tile_offsets = [0] tile_sizes = [4] transfer_tiles = [0]
    transfer_senders = [0] receiver_counts = [0] receivers = []

// -----

plan.mesh @a shape = [1] devices = [0]
// expected-error @+1 {{'plan.cross_mesh' op moves from @a to itself}}
plan.cross_mesh @move0 : tensor<4xf32> from @a [-1] to @a [-1]
    tile_offsets = [0] tile_sizes = [4] transfer_tiles = [0]
    transfer_senders = [0] receiver_counts = [1] receivers = [0]

// -----

plan.mesh @a shape = [1] devices = [0]
plan.mesh @b shape = [1] devices = [1]
// expected-error @+1 {{'plan.cross_mesh' op needs one split per axis of @b}}
plan.cross_mesh @move0 : tensor<4xf32> from @a [-1] to @b [-1, 0]
    tile_offsets = [0] tile_sizes = [4] transfer_tiles = [0]
    transfer_senders = [0] receiver_counts = [1] receivers = [1]

// -----

plan.mesh @a shape = [1] devices = [0]
// expected-error @+1 {{'plan.cross_mesh' op names @c, which is no plan.mesh}}
plan.cross_mesh @move0 : tensor<4xf32> from @a [-1] to @c [-1]
    tile_offsets = [0] tile_sizes = [4] transfer_tiles = [0]
    transfer_senders = [0] receiver_counts = [1] receivers = [1]

// -----

plan.mesh @a shape = [1] devices = [0]
plan.mesh @b shape = [1] devices = [1]
plan.cross_mesh @move0 : tensor<4xf32> from @a [-1] to @b [-1]
    tile_offsets = [0] tile_sizes = [4] transfer_tiles = [0]
    transfer_senders = [0] receiver_counts = [1] receivers = [1]
plan.program @program0 devices = [0] mesh = @a {
  %x = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.cross_mesh_recv' op runs in a program on @a, not on @move0's destination @b}}
  plan.cross_mesh_recv @move0 %x : memref<4xf32>
}

// -----

plan.mesh @a shape = [1] devices = [0]
plan.mesh @b shape = [1] devices = [1]
plan.cross_mesh @move0 : tensor<4xf32> from @a [-1] to @b [-1]
    tile_offsets = [0] tile_sizes = [4] transfer_tiles = [0]
    transfer_senders = [0] receiver_counts = [1] receivers = [1]
plan.program @program0 devices = [0] mesh = @a {
  %x = plan.buffer : memref<4xi32>
  // expected-error @+1 {{'plan.cross_mesh_send' op block is not of @move0's element type}}
  plan.cross_mesh_send @move0 %x : memref<4xi32>
}

// -----

plan.mesh @a shape = [1] devices = [0]
plan.program @program0 devices = [0] mesh = @a {
  %x = plan.buffer : memref<4xf32>
  // expected-error @+1 {{'plan.cross_mesh_send' op @move9 does not name a plan.cross_mesh}}
  plan.cross_mesh_send @move9 %x : memref<4xf32>
}

// -----

plan.program @dev0 devices = [0] {
  // expected-error @+1 {{'plan.chunk' op marks chunk 1 after none in the forward: the forward marks chunks 0, 1, ... in order, the backward in reverse}}
  plan.chunk 1
}

// -----

plan.program @dev0 devices = [0] {
  plan.chunk 0
  plan.chunk 1
  plan.backward_begin
  plan.chunk 0
  // expected-error @+1 {{'plan.chunk' op marks chunk 1 after chunk 0 in the backward: the forward marks chunks 0, 1, ... in order, the backward in reverse}}
  plan.chunk 1
}

// -----

plan.program @dev0 devices = [0] {
  plan.chunk 0
  plan.after_micro_batches
  // expected-error @+1 {{'plan.chunk' op comes after plan.after_micro_batches: a chunk is part of a micro-batch}}
  plan.chunk 1
}
