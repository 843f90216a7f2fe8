// A two-layer MLP on a 2x2 mesh, at the three levels parplan works at.
//
// Mesh axis 0 is data parallel (the batch is split), mesh axis 1 is tensor
// parallel in Megatron's way: fc1 is split by columns, fc2 by rows, so the
// hidden activation never moves and fc2's output is a partial sum that one
// all-reduce along mesh axis 1 completes.
//
//                mesh axis 1 (tensor)
//                 ------------->
//               +-------+-------+
//  mesh axis 0  |   0   |   1   |   batch rows 0..3
//  (data)    |  +-------+-------+
//            v  |   2   |   3   |   batch rows 4..7
//               +-------+-------+

module attributes {plan.mesh_shape = array<i64: 2, 2>} {
  sbp.mesh @mesh(shape = 2x2)

  // 1. The logical program (nn) with the layouts the search would choose (sbp).
  func.func @mlp_forward() -> tensor<8x4xf32> {
    %x = nn.input "x" : tensor<8x16xf32>
    %w1 = nn.param "fc1.weight" : tensor<16x32xf32>
    %w2 = nn.param "fc2.weight" : tensor<32x4xf32>
    %xs = sbp.annotate %x on @mesh [#sbp.s<0>, #sbp.b] : tensor<8x16xf32>
    %w1s = sbp.annotate %w1 on @mesh [#sbp.b, #sbp.s<1>] : tensor<16x32xf32>
    %w2s = sbp.annotate %w2 on @mesh [#sbp.b, #sbp.s<0>] : tensor<32x4xf32>
    %h = nn.matmul %xs, %w1s : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %hs = sbp.annotate %h on @mesh [#sbp.s<0>, #sbp.s<1>] : tensor<8x32xf32>
    %a = nn.relu %hs : tensor<8x32xf32>
    %y = nn.matmul %a, %w2s : tensor<8x32xf32>, tensor<32x4xf32> -> tensor<8x4xf32>
    %yp = sbp.annotate %y on @mesh [#sbp.s<0>, #sbp.p<sum>] : tensor<8x4xf32>
    %yb = sbp.boxing %yp on @mesh [#sbp.s<0>, #sbp.p<sum>] -> [#sbp.s<0>, #sbp.b] : tensor<8x4xf32>
    return %yb : tensor<8x4xf32>
  }

// 2. The program every device runs (plan) on local shapes: each device
//    holds a 4x16 batch block, a 16x16 column block of fc1 and a 16x4 row
//    block of fc2 (which blocks, its mesh coordinate decides: `splits`
//    names the dimension each mesh axis cuts); the devices along mesh axis
//    1 all-reduce fc2's partial output, each over its own row (@tensor).
  plan.group @tensor mesh_axes = [1]

  plan.program @program0 devices = [0, 1, 2, 3] {
    %x = plan.buffer kind = input {name = "x", logical_shape = array<i64: 8, 16>, splits = array<i64: 0, -1>} : memref<4x16xf32>
    %w1 = plan.buffer kind = parameter {name = "fc1.weight", logical_shape = array<i64: 16, 32>, splits = array<i64: -1, 1>} : memref<16x16xf32>
    %w2 = plan.buffer kind = parameter {name = "fc2.weight", logical_shape = array<i64: 32, 4>, splits = array<i64: -1, 0>} : memref<16x4xf32>
    %h = plan.buffer : memref<4x16xf32>
    %y = plan.buffer : memref<4x4xf32>
    plan.kernel "matmul" ins(%x, %w1 : memref<4x16xf32>, memref<16x16xf32>) outs(%h : memref<4x16xf32>)
    plan.kernel "relu" ins(%h : memref<4x16xf32>) outs(%h : memref<4x16xf32>)
    plan.kernel "matmul" ins(%h, %w2 : memref<4x16xf32>, memref<16x4xf32>) outs(%y : memref<4x4xf32>)
    plan.all_reduce %y on @tensor : memref<4x4xf32>
  }
}
