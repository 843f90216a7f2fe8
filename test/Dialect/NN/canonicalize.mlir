// RUN: parplan-opt %s -canonicalize -split-input-file | FileCheck %s
// Folders: shape-computing subgraphs of exported models become constants.

// The chain PyTorch traces for `x.view(b, s, heads, head_dim)`:
// Shape -> Gather -> Unsqueeze -> Concat with constants.
// CHECK-LABEL: func.func @shape_chain
// CHECK-NEXT: %[[C:.*]] = nn.constant dense<[8, 128, 12, 64]> : tensor<4xi64>
// CHECK-NEXT: return %[[C]]
func.func @shape_chain(%x: tensor<8x128x768xf32>) -> tensor<4xi64> {
  %shape = nn.shape %x : tensor<8x128x768xf32> -> tensor<3xi64>
  %i0 = nn.constant dense<0> : tensor<i64>
  %i1 = nn.constant dense<1> : tensor<i64>
  %b = nn.gather %shape, %i0 : tensor<3xi64>, tensor<i64> -> tensor<i64>
  %s = nn.gather %shape, %i1 : tensor<3xi64>, tensor<i64> -> tensor<i64>
  %b1 = nn.reshape %b : tensor<i64> -> tensor<1xi64>
  %s1 = nn.reshape %s : tensor<i64> -> tensor<1xi64>
  %rest = nn.constant dense<[12, 64]> : tensor<2xi64>
  %target = nn.concat %b1, %s1, %rest axis = 0 : tensor<1xi64>, tensor<1xi64>, tensor<2xi64> -> tensor<4xi64>
  return %target : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @integer_arithmetic
// CHECK-DAG: nn.constant dense<[9, 129]> : tensor<2xi64>
// CHECK-DAG: nn.constant dense<[7, 127]> : tensor<2xi64>
// CHECK-DAG: nn.constant dense<[16, 256]> : tensor<2xi64>
// CHECK-DAG: nn.constant dense<[4, 64]> : tensor<2xi64>
// CHECK-DAG: nn.constant dense<[-3, 3]> : tensor<2xi64>
// CHECK-NOT: nn.add
// CHECK-NOT: nn.mul
func.func @integer_arithmetic() -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) {
  %a = nn.constant dense<[8, 128]> : tensor<2xi64>
  %one = nn.constant dense<1> : tensor<1xi64>
  %two = nn.constant dense<2> : tensor<i64>
  %0 = nn.add %a, %one : tensor<2xi64>, tensor<1xi64> -> tensor<2xi64>
  %1 = nn.sub %a, %one : tensor<2xi64>, tensor<1xi64> -> tensor<2xi64>
  %2 = nn.mul %a, %two : tensor<2xi64>, tensor<i64> -> tensor<2xi64>
  %3 = nn.div %a, %two : tensor<2xi64>, tensor<i64> -> tensor<2xi64>
  // Integer division truncates toward zero.
  %n = nn.constant dense<[-7, 7]> : tensor<2xi64>
  %4 = nn.div %n, %two : tensor<2xi64>, tensor<i64> -> tensor<2xi64>
  return %0, %1, %2, %3, %4 : tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>
}

// -----

// Division by zero is left for the runtime.
// CHECK-LABEL: func.func @division_by_zero
// CHECK: nn.div
func.func @division_by_zero() -> tensor<2xi64> {
  %a = nn.constant dense<[8, 128]> : tensor<2xi64>
  %z = nn.constant dense<0> : tensor<i64>
  %0 = nn.div %a, %z : tensor<2xi64>, tensor<i64> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @float_arithmetic
// CHECK: nn.constant dense<[{{\[}}1.000000e+00, 4.000000e+00], [9.000000e+00, 1.600000e+01]]> : tensor<2x2xf32>
// CHECK: nn.constant dense<8.000000e+00> : tensor<f32>
func.func @float_arithmetic() -> (tensor<2x2xf32>, tensor<f32>) {
  %a = nn.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %0 = nn.pow %a, %two : tensor<2x2xf32>, tensor<f32> -> tensor<2x2xf32>
  %1 = nn.pow %two, %two : tensor<f32>, tensor<f32> -> tensor<f32>
  %2 = nn.mul %1, %two : tensor<f32>, tensor<f32> -> tensor<f32>
  return %0, %2 : tensor<2x2xf32>, tensor<f32>
}

// -----

// Operands that are not constants stay.
// CHECK-LABEL: func.func @not_constant
// CHECK: nn.add
func.func @not_constant(%x: tensor<2xi64>) -> tensor<2xi64> {
  %one = nn.constant dense<1> : tensor<i64>
  %0 = nn.add %x, %one : tensor<2xi64>, tensor<i64> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @casts
// CHECK-DAG: nn.constant dense<[1.000000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: nn.constant dense<[1, -2]> : tensor<2xi32>
// CHECK-DAG: nn.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: nn.constant dense<[2, -1]> : tensor<2xi64>
// CHECK-NOT: nn.cast
func.func @casts() -> (tensor<2xf32>, tensor<2xi32>, tensor<2xi1>, tensor<2xi64>) {
  %a = nn.constant dense<[1, -2]> : tensor<2xi64>
  %0 = nn.cast %a : tensor<2xi64> -> tensor<2xf32>
  %1 = nn.cast %a : tensor<2xi64> -> tensor<2xi32>
  %f = nn.constant dense<[2.7, 0.0]> : tensor<2xf32>
  %2 = nn.cast %f : tensor<2xf32> -> tensor<2xi1>
  // Float to integer truncates toward zero.
  %g = nn.constant dense<[2.7, -1.5]> : tensor<2xf32>
  %3 = nn.cast %g : tensor<2xf32> -> tensor<2xi64>
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xi32>, tensor<2xi1>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @slices_and_gathers
// CHECK-DAG: nn.constant dense<[{{\[}}7, 5], [3, 1]]> : tensor<2x2xi64>
// CHECK-DAG: nn.constant dense<[{{\[}}4, 5, 6, 7], [0, 1, 2, 3]]> : tensor<2x4xi64>
// CHECK-DAG: nn.constant dense<[3, 7]> : tensor<2xi64>
func.func @slices_and_gathers() -> (tensor<2x2xi64>, tensor<2x4xi64>, tensor<2xi64>) {
  %a = nn.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>
  // Rows backwards, every other column backwards from 3.
  %0 = nn.slice %a starts = [1, 3] sizes = [2, 2] steps = [-1, -2] : tensor<2x4xi64> -> tensor<2x2xi64>
  %i = nn.constant dense<[1, 0]> : tensor<2xi64>
  %1 = nn.gather %a, %i axis = 0 : tensor<2x4xi64>, tensor<2xi64> -> tensor<2x4xi64>
  // Negative indices count from the end.
  %j = nn.constant dense<-1> : tensor<i64>
  %2 = nn.gather %a, %j axis = 1 : tensor<2x4xi64>, tensor<i64> -> tensor<2xi64>
  return %0, %1, %2 : tensor<2x2xi64>, tensor<2x4xi64>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @concat_inner_axis
// CHECK: nn.constant dense<[{{\[}}0, 1, 9], [2, 3, 9]]> : tensor<2x3xi64>
func.func @concat_inner_axis() -> tensor<2x3xi64> {
  %a = nn.constant dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>
  %b = nn.constant dense<9> : tensor<2x1xi64>
  %0 = nn.concat %a, %b axis = -1 : tensor<2x2xi64>, tensor<2x1xi64> -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// Ops that change nothing fold to their input.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = nn.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = nn.slice %x starts = [0, 0] sizes = [4, 8] steps = [1, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = nn.concat %x axis = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Large constants are not copied by folding.
// CHECK-LABEL: func.func @large_constants_stay
// CHECK: nn.add
func.func @large_constants_stay() -> tensor<8192xf32> {
  %a = nn.constant dense<1.0> : tensor<8192xf32>
  %0 = nn.add %a, %a : tensor<8192xf32>, tensor<8192xf32> -> tensor<8192xf32>
  return %0 : tensor<8192xf32>
}
