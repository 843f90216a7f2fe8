// RUN: parplan-opt %s -split-input-file -attach-cluster -expand-boxing -verify-diagnostics | FileCheck %s

// Partial sums read replicated: one all-reduce, which the user now reads.
// CHECK-LABEL: func.func @all_reduce
// CHECK: %[[R:.*]] = sbp.all_reduce %arg0 on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b] : tensor<16x64xf32>
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: sbp.boxing
sbp.mesh @mesh(shape = 4)
func.func @all_reduce(%y: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %b = sbp.boxing %y on @mesh [#sbp.p<sum>] -> [#sbp.b] {time = 1.0e-6 : f64} : tensor<16x64xf32>
  return %b : tensor<16x64xf32>
}

// -----

// GPT-3's failing boxing: the inner axis re-cuts the rows the outer one
// left, by one all-to-all on local blocks.
// CHECK-LABEL: func.func @inner_all_to_all
// CHECK: sbp.all_to_all %arg0 on @mesh axis 1 [#sbp.s<0>, #sbp.s<2>] -> [#sbp.s<0>, #sbp.s<0>] : tensor<8x16x32xf32>
// CHECK-NEXT: return
sbp.mesh @mesh(shape = 2x4)
func.func @inner_all_to_all(%x: tensor<8x16x32xf32>) -> tensor<8x16x32xf32> {
  %b = sbp.boxing %x on @mesh [#sbp.s<0>, #sbp.s<2>] -> [#sbp.s<0>, #sbp.s<0>] : tensor<8x16x32xf32>
  return %b : tensor<8x16x32xf32>
}

// -----

// The outer axis changes rows the inner one splits: gather the inner axis,
// change the outer, cut the inner again.
// CHECK-LABEL: func.func @detour
// CHECK: %[[G:.*]] = sbp.all_gather %arg0 on @mesh axis 1 [#sbp.s<0>, #sbp.s<0>] -> [#sbp.s<0>, #sbp.b]
// CHECK-NEXT: %[[A:.*]] = sbp.all_to_all %[[G]] on @mesh axis 0 [#sbp.s<0>, #sbp.b] -> [#sbp.s<1>, #sbp.b]
// CHECK-NEXT: %[[S:.*]] = sbp.slice %[[A]] on @mesh axis 1 [#sbp.s<1>, #sbp.b] -> [#sbp.s<1>, #sbp.s<0>]
// CHECK-NEXT: return %[[S]]
sbp.mesh @mesh(shape = 2x2)
func.func @detour(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %b = sbp.boxing %x on @mesh [#sbp.s<0>, #sbp.s<0>] -> [#sbp.s<1>, #sbp.s<0>] : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}

// -----

// Sums become maxima by completing the sum, then every device keeps it.
// CHECK-LABEL: func.func @relabel
// CHECK: %[[R:.*]] = sbp.all_reduce %arg0 on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.b]
// CHECK-NEXT: sbp.to_partial %[[R]] on @mesh axis 0 [#sbp.b] -> [#sbp.p<max>]
sbp.mesh @mesh(shape = 2)
func.func @relabel(%x: tensor<4xf32>) -> tensor<4xf32> {
  %b = sbp.boxing %x on @mesh [#sbp.p<sum>] -> [#sbp.p<max>] : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// Steps along an axis of one device are written too: the layouts the IR
// states stay exact, and the lowering moves nothing for them.
// CHECK-LABEL: func.func @unit_axis
// CHECK: sbp.all_gather %arg0 on @mesh axis 0 [#sbp.s<0>, #sbp.b] -> [#sbp.b, #sbp.b]
sbp.mesh @mesh(shape = 1x4)
func.func @unit_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  %b = sbp.boxing %x on @mesh [#sbp.s<0>, #sbp.b] -> [#sbp.b, #sbp.b] : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// Nothing writes ones: no sequence of steps reaches P(prod).
sbp.mesh @mesh(shape = 2)
func.func @impossible(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expand-boxing: no sequence of steps turns [B] into [P(prod)] on mesh @mesh}}
  %b = sbp.boxing %x on @mesh [#sbp.b] -> [#sbp.p<prod>] : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// A mesh the cluster cannot hold is named.
// expected-error @+1 {{expand-boxing:}}
sbp.mesh @mesh(shape = 64)
func.func @too_big(%x: tensor<4xf32>) -> tensor<4xf32> {
  %b = sbp.boxing %x on @mesh [#sbp.s<0>] -> [#sbp.b] : tensor<4xf32>
  return %b : tensor<4xf32>
}
