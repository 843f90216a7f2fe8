// RUN: parplan-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(nn-untie-parameters))' -verify-diagnostics | FileCheck %s
// RUN: not parplan-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(nn-untie-parameters{untie=zeros}))' 2>/dev/null | FileCheck %s --check-prefix=UNTIE
// RUN: parplan-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(nn-untie-parameters{frozen=zer*}))' | FileCheck %s --check-prefix=FROZEN
// RUN: not parplan-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(nn-untie-parameters{untie=nothing}))' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not parplan-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(nn-untie-parameters{untie=one}))' 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not parplan-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(nn-untie-parameters{untie=ids}))' 2>&1 | FileCheck %s --check-prefix=INTEGER
// INTEGER: error: --untie ids: 'ids' holds 'i64' values, which are not trained: nothing to untie
// RUN: not parplan-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(nn-untie-parameters{untie=zeros}))' 2>/dev/null | FileCheck %s --check-prefix=BN
// RUN: not parplan-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(nn-untie-parameters{untie=zeros}))' 2>&1 | FileCheck %s --check-prefix=ONE-LAYER
// ONE-LAYER: error: --untie zeros: 'zeros' is read in one place only, nothing to untie

// (With untie=zeros the cases where 'zeros' is read by one layer, or is
// missing, fail.)

// One initializer (an exporter's merge of equal zero biases) read by two
// layers: a warning naming it and the layers; --untie gives the second
// layer a copy that loads the same bytes (a part covering the stored
// tensor), and each layer reads its own.
// CHECK-LABEL: func.func @main
// CHECK: nn.param "zeros"
// CHECK-NOT: untied
// UNTIE-LABEL: func.func @main
// UNTIE: %[[Z:.*]] = nn.param "zeros" {source = "initializer@64+16"} : tensor<4xf32>
// UNTIE-NEXT: %[[C:.*]] = nn.param "zeros.untied.1" {part = array<i64: 0, 0, 4>, part_of = "zeros", source = "initializer@64+16"} : tensor<4xf32>
// UNTIE: %[[A:.*]] = nn.add %{{.*}}, %[[Z]]
// UNTIE-NEXT: nn.add %[[A]], %[[Z]]
// UNTIE-NEXT: nn.matmul
// UNTIE-NEXT: nn.add %{{.*}}, %[[C]]
// FROZEN-LABEL: func.func @main
// FROZEN-NOT: untied
// UNKNOWN: error: --untie nothing: the model has no parameter 'nothing'
// expected-warning @+1 {{parameter 'zeros' is read in 2 places ('/layer1', '/layer2') and will be trained as one tied parameter (exporters merge initializers of equal values); --untie zeros gives each place its own copy, --frozen zeros trains it not at all (a buffer such as a mask)}}
func.func @main() -> tensor<2x4xf32> {
  %x = nn.input "x" : tensor<2x4xf32>
  %z = nn.param "zeros" {source = "initializer@64+16"} : tensor<4xf32>
  %w = nn.param "w" : tensor<4x4xf32>
  %a = nn.add %x, %z : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32> loc("/layer1/Add")
  %b = nn.add %a, %z : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32> loc("/layer1/Add_1")
  %m = nn.matmul %b, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc("/layer2/MatMul")
  %y = nn.add %m, %z : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32> loc("/layer2/Add")
  return %y : tensor<2x4xf32>
}

// -----

// Reads within one layer are no tie; nor are integer parameters.
// CHECK-LABEL: func.func @one_layer
func.func @one_layer() -> tensor<2x4xf32> {
  %x = nn.input "x" : tensor<2x4xf32>
  %z = nn.param "zeros" : tensor<4xf32>
  %a = nn.add %x, %z : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32> loc("/layer1/Add")
  %y = nn.mul %a, %z : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32> loc("/layer1/Mul")
  return %y : tensor<2x4xf32>
}

// -----

// A scalar cannot be untied (a part needs a dimension).
// SCALAR: error: --untie one: a scalar parameter cannot be untied (its copies would have no dimension to be a part along)
// expected-warning @+1 {{parameter 'one' is read in 2 places ('/a', '/b')}}
func.func @scalar() -> tensor<2x4xf32> {
  %x = nn.input "x" : tensor<2x4xf32>
  %z = nn.param "one" : tensor<f32>
  %a = nn.add %x, %z : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32> loc("/a/Add")
  %y = nn.add %a, %z : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32> loc("/b/Add")
  return %y : tensor<2x4xf32>
}

// -----

// A zero bias that is also the running mean of the same batch norm (the
// exporters' commonest merge): the statistic is a group of its own, and
// untying gives it a copy the step updates alone.
// CHECK-LABEL: func.func @bias_and_mean
// BN-LABEL: func.func @bias_and_mean
// BN: %[[Z:.*]] = nn.param "zeros" : tensor<3xf32>
// BN-NEXT: %[[C:.*]] = nn.param "zeros.untied.1" {part = array<i64: 0, 0, 3>, part_of = "zeros"} : tensor<3xf32>
// BN: nn.batch_norm %{{.*}}, %{{.*}}, %[[Z]], %[[C]], %{{.*}} :
// expected-warning @+1 {{parameter 'zeros' is read in 2 places ('/bn1', '/bn1' (running statistic)) and will be trained as one tied parameter}}
func.func @bias_and_mean() -> tensor<4x3xf32> {
  %x = nn.input "x" : tensor<4x3xf32>
  %s = nn.param "s" : tensor<3xf32>
  %z = nn.param "zeros" : tensor<3xf32>
  %v = nn.param "v" : tensor<3xf32>
  %y = nn.batch_norm %x, %s, %z, %z, %v : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32> loc("/bn1/BatchNormalization")
  return %y : tensor<4x3xf32>
}

// -----

// Integer parameters are data, not trained: never a tie.
// CHECK-LABEL: func.func @integers
func.func @integers() -> tensor<4xi64> {
  %i = nn.param "ids" : tensor<4xi64>
  %a = nn.add %i, %i : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64> loc("/a/Add")
  %y = nn.add %a, %i : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64> loc("/b/Add")
  return %y : tensor<4xi64>
}
