// RUN: parplan-opt %s -canonicalize -split-input-file | FileCheck %s

sbp.mesh @mesh(shape = 2x2)

// A boxing between equal layouts moves nothing and folds away.
// CHECK-LABEL: func.func @identity_boxing
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>)
// CHECK-NOT: sbp.boxing
// CHECK: return %[[X]]
func.func @identity_boxing(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = sbp.boxing %x on @mesh [#sbp.s<0>, #sbp.b] -> [#sbp.s<0>, #sbp.b] : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// A real resharding stays.
// CHECK-LABEL: func.func @real_boxing
// CHECK: sbp.boxing %{{.*}} on @mesh [#sbp.p<sum>, #sbp.b] -> [#sbp.b, #sbp.b]
func.func @real_boxing(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = sbp.boxing %x on @mesh [#sbp.p<sum>, #sbp.b] -> [#sbp.b, #sbp.b] : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
