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

// 2. The per-device programs (plan) on local shapes: each device holds a
//    4x16 batch slice, a 16x16 column block of fc1 and a 16x4 row block of
//    fc2; the devices along mesh axis 1 all-reduce fc2's partial output.
plan.group @tensor_row0 devices = [0, 1]
plan.group @tensor_row1 devices = [2, 3]

plan.program @device0 device = 0 {
  %x = plan.buffer {name = "x"} : memref<4x16xf32>
  %w1 = plan.buffer {name = "fc1.weight"} : memref<16x16xf32>
  %w2 = plan.buffer {name = "fc2.weight"} : memref<16x4xf32>
  %h = plan.buffer : memref<4x16xf32>
  %y = plan.buffer : memref<4x4xf32>
  plan.kernel "matmul" ins(%x, %w1 : memref<4x16xf32>, memref<16x16xf32>) outs(%h : memref<4x16xf32>)
  plan.kernel "relu" ins(%h : memref<4x16xf32>) outs(%h : memref<4x16xf32>)
  plan.kernel "matmul" ins(%h, %w2 : memref<4x16xf32>, memref<16x4xf32>) outs(%y : memref<4x4xf32>)
  plan.all_reduce %y on @tensor_row0 : memref<4x4xf32>
}

plan.program @device1 device = 1 {
  %x = plan.buffer {name = "x"} : memref<4x16xf32>
  %w1 = plan.buffer {name = "fc1.weight"} : memref<16x16xf32>
  %w2 = plan.buffer {name = "fc2.weight"} : memref<16x4xf32>
  %h = plan.buffer : memref<4x16xf32>
  %y = plan.buffer : memref<4x4xf32>
  plan.kernel "matmul" ins(%x, %w1 : memref<4x16xf32>, memref<16x16xf32>) outs(%h : memref<4x16xf32>)
  plan.kernel "relu" ins(%h : memref<4x16xf32>) outs(%h : memref<4x16xf32>)
  plan.kernel "matmul" ins(%h, %w2 : memref<4x16xf32>, memref<16x4xf32>) outs(%y : memref<4x4xf32>)
  plan.all_reduce %y on @tensor_row0 : memref<4x4xf32>
}

plan.program @device2 device = 2 {
  %x = plan.buffer {name = "x"} : memref<4x16xf32>
  %w1 = plan.buffer {name = "fc1.weight"} : memref<16x16xf32>
  %w2 = plan.buffer {name = "fc2.weight"} : memref<16x4xf32>
  %h = plan.buffer : memref<4x16xf32>
  %y = plan.buffer : memref<4x4xf32>
  plan.kernel "matmul" ins(%x, %w1 : memref<4x16xf32>, memref<16x16xf32>) outs(%h : memref<4x16xf32>)
  plan.kernel "relu" ins(%h : memref<4x16xf32>) outs(%h : memref<4x16xf32>)
  plan.kernel "matmul" ins(%h, %w2 : memref<4x16xf32>, memref<16x4xf32>) outs(%y : memref<4x4xf32>)
  plan.all_reduce %y on @tensor_row1 : memref<4x4xf32>
}

plan.program @device3 device = 3 {
  %x = plan.buffer {name = "x"} : memref<4x16xf32>
  %w1 = plan.buffer {name = "fc1.weight"} : memref<16x16xf32>
  %w2 = plan.buffer {name = "fc2.weight"} : memref<16x4xf32>
  %h = plan.buffer : memref<4x16xf32>
  %y = plan.buffer : memref<4x4xf32>
  plan.kernel "matmul" ins(%x, %w1 : memref<4x16xf32>, memref<16x16xf32>) outs(%h : memref<4x16xf32>)
  plan.kernel "relu" ins(%h : memref<4x16xf32>) outs(%h : memref<4x16xf32>)
  plan.kernel "matmul" ins(%h, %w2 : memref<4x16xf32>, memref<16x4xf32>) outs(%y : memref<4x4xf32>)
  plan.all_reduce %y on @tensor_row1 : memref<4x4xf32>
}
