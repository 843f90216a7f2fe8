// RUN: parplan-opt %s -split-input-file -nn-split-fused-projections | FileCheck %s

// GPT-2's fused query-key-value projection: one matmul, a bias, a split
// along the columns. Each part gets its own block of the weight and bias,
// still read from the stored tensors.
// CHECK-LABEL: func.func @qkv
// CHECK-DAG: %[[WQ:.*]] = nn.param "attn.w[:, 0:4]" {part = array<i64: 1, 0, 12>, part_of = "attn.w"} : tensor<8x4xf32>
// CHECK-DAG: %[[WK:.*]] = nn.param "attn.w[:, 4:8]" {part = array<i64: 1, 4, 12>, part_of = "attn.w"} : tensor<8x4xf32>
// CHECK-DAG: %[[WV:.*]] = nn.param "attn.w[:, 8:12]" {part = array<i64: 1, 8, 12>, part_of = "attn.w"} : tensor<8x4xf32>
// CHECK-DAG: %[[BQ:.*]] = nn.param "attn.b[0:4]" {part = array<i64: 0, 0, 12>, part_of = "attn.b"} : tensor<4xf32>
// CHECK: %[[Q:.*]] = nn.matmul %[[X:.*]], %[[WQ]] : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
// CHECK: %[[QB:.*]] = nn.add %[[Q]], %[[BQ]]
// CHECK: nn.matmul %[[X]], %[[WK]]
// CHECK: nn.matmul %[[X]], %[[WV]]
// CHECK-NOT: nn.split
// CHECK: return %[[QB]],
func.func @qkv(%x: tensor<2x3x8xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %w = nn.param "attn.w" : tensor<8x12xf32>
  %b = nn.param "attn.b" : tensor<12xf32>
  %y = nn.matmul %x, %w : tensor<2x3x8xf32>, tensor<8x12xf32> -> tensor<2x3x12xf32>
  %yb = nn.add %b, %y : tensor<12xf32>, tensor<2x3x12xf32> -> tensor<2x3x12xf32>
  %q, %k, %v = nn.split %yb axis = -1 sizes = [4, 4, 4] : tensor<2x3x12xf32> -> tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
  return %q, %k, %v : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// A linear layer (gemm with trans_b): the weight's rows are the parts; the
// source of the stored weight is kept.
// CHECK-LABEL: func.func @gemm
// CHECK: %[[W0:.*]] = nn.param "w[0:2, :]" {part = array<i64: 0, 0, 6>, part_of = "w", source = "initializer"} : tensor<2x8xf32>
// CHECK: %[[W1:.*]] = nn.param "w[2:6, :]" {part = array<i64: 0, 2, 6>, part_of = "w", source = "initializer"} : tensor<4x8xf32>
// CHECK: nn.gemm %{{.*}}, %[[W0]] {alpha = 5.000000e-01 : f32, trans_b = true} : tensor<5x8xf32>, tensor<2x8xf32> -> tensor<5x2xf32>
// CHECK: nn.gemm %{{.*}}, %[[W1]] {alpha = 5.000000e-01 : f32, trans_b = true} : tensor<5x8xf32>, tensor<4x8xf32> -> tensor<5x4xf32>
func.func @gemm(%x: tensor<5x8xf32>) -> (tensor<5x2xf32>, tensor<5x4xf32>) {
  %w = nn.param "w" {source = "initializer"} : tensor<6x8xf32>
  %y = nn.gemm %x, %w {alpha = 0.5 : f32, trans_b = true} : tensor<5x8xf32>, tensor<6x8xf32> -> tensor<5x6xf32>
  %a, %c = nn.split %y axis = 1 sizes = [2, 4] : tensor<5x6xf32> -> tensor<5x2xf32>, tensor<5x4xf32>
  return %a, %c : tensor<5x2xf32>, tensor<5x4xf32>
}

// -----

// Left alone: the projection's result has another user, the weight is read
// twice, or the split is not along the columns.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: nn.split
// CHECK-NOT: part_of
func.func @kept(%x: tensor<4x8xf32>) -> (tensor<4x6xf32>, tensor<2x6xf32>, tensor<4x6xf32>) {
  %w = nn.param "w" : tensor<8x6xf32>
  %y = nn.matmul %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %a, %b = nn.split %y axis = 1 sizes = [3, 3] : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  %w2 = nn.param "w2" : tensor<8x6xf32>
  %z = nn.matmul %x, %w2 : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %c, %d = nn.split %z axis = 0 sizes = [2, 2] : tensor<4x6xf32> -> tensor<2x6xf32>, tensor<2x6xf32>
  %w3 = nn.param "w3" : tensor<8x6xf32>
  %u = nn.matmul %x, %w3 : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %t = nn.transpose %w3 perm = [1, 0] : tensor<8x6xf32> -> tensor<6x8xf32>
  %e, %f = nn.split %u axis = 1 sizes = [3, 3] : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  return %y, %c, %u : tensor<4x6xf32>, tensor<2x6xf32>, tensor<4x6xf32>
}
