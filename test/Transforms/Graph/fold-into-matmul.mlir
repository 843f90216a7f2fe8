// RUN: parplan-opt %s -split-input-file -nn-fold-into-matmul -canonicalize | FileCheck %s
// RUN: parplan-opt %s -split-input-file -nn-fold-into-matmul -canonicalize -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=LOC

// A transpose of the last two dimensions on either side is the product's
// flag; the transposes go.
// CHECK-LABEL: func.func @transposed_operands
// CHECK-SAME: (%[[A:.*]]: tensor<2x8x4xf32>, %[[B:.*]]: tensor<2x6x8xf32>)
// CHECK-NEXT: %[[Y:.*]] = nn.matmul %[[A]], %[[B]] {transpose_lhs, transpose_rhs} : tensor<2x8x4xf32>, tensor<2x6x8xf32> -> tensor<2x4x6xf32>
// CHECK-NEXT: return %[[Y]]
func.func @transposed_operands(%a: tensor<2x8x4xf32>, %b: tensor<2x6x8xf32>) -> tensor<2x4x6xf32> {
  %at = nn.transpose %a perm = [0, 2, 1] : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  %bt = nn.transpose %b perm = [0, 2, 1] : tensor<2x6x8xf32> -> tensor<2x8x6xf32>
  %y = nn.matmul %at, %bt : tensor<2x4x8xf32>, tensor<2x8x6xf32> -> tensor<2x4x6xf32>
  return %y : tensor<2x4x6xf32>
}

// -----

// A flag already set is toggled: the transpose of a transposed read is the
// stored operand.
// CHECK-LABEL: func.func @toggled
// CHECK-NEXT: %[[Y:.*]] = nn.matmul %arg0, %arg1 : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[Y]]
func.func @toggled(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %bt = nn.transpose %b perm = [1, 0] : tensor<8x6xf32> -> tensor<6x8xf32>
  %y = nn.matmul %a, %bt {transpose_rhs} : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// A transpose with other uses stays for them; the product reads its input.
// CHECK-LABEL: func.func @shared_transpose
// CHECK: %[[T:.*]] = nn.transpose %arg1 perm = [1, 0]
// CHECK: nn.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: return %{{.*}}, %[[T]]
func.func @shared_transpose(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) -> (tensor<4x6xf32>, tensor<8x6xf32>) {
  %bt = nn.transpose %b perm = [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
  %y = nn.matmul %a, %bt : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  return %y, %bt : tensor<4x6xf32>, tensor<8x6xf32>
}

// -----

// Permutations that move a batch dimension are no flag: heads moved next to
// the batch stay a transpose.
// CHECK-LABEL: func.func @head_permute
// CHECK: nn.transpose %arg0 perm = [0, 2, 1, 3]
// CHECK: nn.matmul %{{.*}}, %arg1 : tensor<2x3x4x5xf32>
func.func @head_permute(%q: tensor<2x4x3x5xf32>, %k: tensor<2x3x5x4xf32>) -> tensor<2x3x4x4xf32> {
  %qh = nn.transpose %q perm = [0, 2, 1, 3] : tensor<2x4x3x5xf32> -> tensor<2x3x4x5xf32>
  %s = nn.matmul %qh, %k : tensor<2x3x4x5xf32>, tensor<2x3x5x4xf32> -> tensor<2x3x4x4xf32>
  return %s : tensor<2x3x4x4xf32>
}

// -----

// Attention's scores as exporters write them: q k^T / sqrt(d) before the
// mask. One product, keys read transposed, scaled by 1/8.
// CHECK-LABEL: func.func @attention_scores
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x16x64xf32>, %[[K:.*]]: tensor<2x3x16x64xf32>, %[[M:.*]]: tensor<1x1x16x16xi1>)
// CHECK-NEXT: %[[MIN:.*]] = nn.constant
// CHECK-NEXT: %[[S:.*]] = nn.matmul %[[Q]], %[[K]] {alpha = 1.250000e-01 : f32, transpose_rhs} : tensor<2x3x16x64xf32>, tensor<2x3x16x64xf32> -> tensor<2x3x16x16xf32>
// CHECK-NEXT: nn.where %[[M]], %[[S]], %[[MIN]]
func.func @attention_scores(%q: tensor<2x3x16x64xf32>, %k: tensor<2x3x16x64xf32>, %mask: tensor<1x1x16x16xi1>) -> tensor<2x3x16x16xf32> {
  %kt = nn.transpose %k perm = [0, 1, 3, 2] : tensor<2x3x16x64xf32> -> tensor<2x3x64x16xf32>
  %s = nn.matmul %q, %kt : tensor<2x3x16x64xf32>, tensor<2x3x64x16xf32> -> tensor<2x3x16x16xf32>
  %c = nn.constant dense<8.0> : tensor<f32>
  %scaled = nn.div %s, %c : tensor<2x3x16x16xf32>, tensor<f32> -> tensor<2x3x16x16xf32>
  %min = nn.constant dense<-1.0e4> : tensor<f32>
  %masked = nn.where %mask, %scaled, %min : tensor<1x1x16x16xi1>, tensor<2x3x16x16xf32>, tensor<f32> -> tensor<2x3x16x16xf32>
  return %masked : tensor<2x3x16x16xf32>
}

// -----

// A multiplication by a splat on either side is alpha, and scalings
// compose.
// CHECK-LABEL: func.func @scaled_product
// CHECK-NEXT: %[[Y:.*]] = nn.matmul %arg0, %arg1 {alpha = 1.500000e+00 : f32} : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[Y]]
func.func @scaled_product(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %three = nn.constant dense<3.0> : tensor<4x6xf32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %y = nn.matmul %a, %b : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %z = nn.mul %three, %y : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  %w = nn.mul %z, %half : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  return %w : tensor<4x6xf32>
}

// -----

// A scaled operand with no other use: q / 8 before q k^T.
// CHECK-LABEL: func.func @scaled_operand
// CHECK-NEXT: %[[Y:.*]] = nn.matmul %arg0, %arg1 {alpha = 1.250000e-01 : f32} : tensor<4x8xbf16>, tensor<8x6xbf16> -> tensor<4x6xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @scaled_operand(%q: tensor<4x8xbf16>, %k: tensor<8x6xbf16>) -> tensor<4x6xbf16> {
  %c = nn.constant dense<8.0> : tensor<bf16>
  %qs = nn.div %q, %c : tensor<4x8xbf16>, tensor<bf16> -> tensor<4x8xbf16>
  %y = nn.matmul %qs, %k : tensor<4x8xbf16>, tensor<8x6xbf16> -> tensor<4x6xbf16>
  return %y : tensor<4x6xbf16>
}

// -----

// Not folded: a product or a scaled operand read elsewhere too, a constant
// that is not a splat, one that broadcasts the product to a larger shape,
// and a division by zero.
// CHECK-LABEL: func.func @kept
// CHECK: %[[Y:.*]] = nn.matmul %arg0, %arg1 : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
// CHECK: nn.div %[[Y]]
// CHECK: nn.mul %[[Y]]
// CHECK: nn.div %[[Y]]
// CHECK: %[[AS:.*]] = nn.mul %arg0
// CHECK: nn.matmul %[[AS]], %arg1 : tensor<4x8xf32>
// CHECK: nn.div %[[Y]]
func.func @kept(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<2x4x6xf32>, tensor<4x8xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %two = nn.constant dense<2.0> : tensor<f32>
  %ramp = nn.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %wide = nn.constant dense<2.0> : tensor<2x4x6xf32>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %y = nn.matmul %a, %b : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %0 = nn.div %y, %two : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  %1 = nn.mul %y, %ramp : tensor<4x6xf32>, tensor<6xf32> -> tensor<4x6xf32>
  %2 = nn.div %y, %wide : tensor<4x6xf32>, tensor<2x4x6xf32> -> tensor<2x4x6xf32>
  %as = nn.mul %a, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %3 = nn.matmul %as, %b : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %4 = nn.div %y, %zero : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  return %0, %1, %2, %as, %3, %4 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<2x4x6xf32>, tensor<4x8xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// Not folded either: alpha is float32, so an f64 product keeps its
// scaling, and so does a product scaled by 0 or beyond float32's range.
// The folded product keeps its own location.
// CHECK-LABEL: func.func @unrepresentable
// CHECK: nn.div %{{.*}} : tensor<4x6xf64>, tensor<f64>
// CHECK: nn.mul %{{.*}} : tensor<4x6xf32>, tensor<f32>
// CHECK: nn.mul %{{.*}} : tensor<4x6xf32>, tensor<f32>
// CHECK: nn.matmul %arg2, %arg3 {alpha = 5.000000e-01 : f32} : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
// LOC: nn.matmul %arg2, %arg3 {alpha = 5.000000e-01 : f32} : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32> loc("/attn/MatMul")
func.func @unrepresentable(%a: tensor<4x8xf64>, %b: tensor<8x6xf64>, %c: tensor<4x8xf32>, %d: tensor<8x6xf32>) -> (tensor<4x6xf64>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %three = nn.constant dense<3.0> : tensor<f64>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %huge = nn.constant dense<1.0e38> : tensor<f32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %y = nn.matmul %a, %b : tensor<4x8xf64>, tensor<8x6xf64> -> tensor<4x6xf64>
  %0 = nn.div %y, %three : tensor<4x6xf64>, tensor<f64> -> tensor<4x6xf64>
  %p = nn.matmul %c, %d : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %1 = nn.mul %p, %zero : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  %q = nn.matmul %c, %d : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %h = nn.mul %q, %huge : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  %2 = nn.mul %h, %huge : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  %r = nn.matmul %c, %d : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32> loc("/attn/MatMul")
  %3 = nn.div %r, %two : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32> loc("/attn/Div")
  return %0, %1, %2, %3 : tensor<4x6xf64>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
