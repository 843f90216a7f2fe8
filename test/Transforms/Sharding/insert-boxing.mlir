// RUN: parplan-opt %s -split-input-file -attach-cluster -insert-boxing | FileCheck %s

// Row-parallel matmul: its Partial result is all-reduced before the relu,
// which reads it replicated.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = nn.matmul
// CHECK-NEXT: %[[R:.*]] = sbp.boxing %[[Y]] on @mesh [#sbp.p<sum>] -> [#sbp.b] {time = {{[0-9.eE+-]+}} : f64} : tensor<16x64xf32>
// CHECK-NEXT: nn.relu %[[R]]
sbp.mesh @mesh(shape = 4)
func.func @main() -> tensor<16x64xf32> {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<1>]]>} : tensor<16x128xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<128x64xf32>
  %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<1>], [#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<16x128xf32>, tensor<128x64xf32> -> tensor<16x64xf32>
  %r = nn.relu %y {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<16x64xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> []>} %r : tensor<16x64xf32>
}

// -----

// Equal layouts need nothing; two users of one layout share one boxing;
// a user of another layout gets its own.
// CHECK-LABEL: func.func @main
// CHECK: %[[X:.*]] = nn.input
// CHECK-NEXT: %[[A2A:.*]] = sbp.boxing %[[X]] on @mesh [#sbp.s<0>] -> [#sbp.s<1>] {time
// CHECK-NEXT: %[[GATHER:.*]] = sbp.boxing %[[X]] on @mesh [#sbp.s<0>] -> [#sbp.b] {time
// CHECK-NEXT: nn.relu %[[X]]
// CHECK-NEXT: nn.tanh %[[GATHER]]
// CHECK-NEXT: nn.exp %[[GATHER]]
// CHECK-NEXT: nn.sqrt %[[A2A]]
// CHECK-NOT: sbp.boxing
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %a = nn.relu %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %b = nn.tanh %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %c = nn.exp %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %d = nn.sqrt %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<1>]] -> [[#sbp.s<1>]]>} : tensor<8x8xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.b], [#sbp.b], [#sbp.s<1>]] -> []>} %a, %b, %c, %d : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Local changes (a slice of a replicated value) move nothing: no time. The returned value is boxed to the layout the return names.
// CHECK-LABEL: func.func @main
// CHECK: sbp.boxing %{{.*}} on @mesh [#sbp.b, #sbp.b] -> [#sbp.s<0>, #sbp.s<1>] {time = 0.000000e+00 : f64}
// CHECK: %[[OUT:.*]] = sbp.boxing %{{.*}} on @mesh [#sbp.s<0>, #sbp.s<1>] -> [#sbp.s<0>, #sbp.b] {time
// CHECK-NEXT: return {{.*}} %[[OUT]]
sbp.mesh @mesh(shape = 2x2)
func.func @main() -> tensor<8x8xf32> {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b, #sbp.b]]>} : tensor<8x8xf32>
  %a = nn.relu %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.s<1>]] -> [[#sbp.s<0>, #sbp.s<1>]]>} : tensor<8x8xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>, #sbp.b]] -> []>} %a : tensor<8x8xf32>
}

// -----

// Without sbp.sharding anywhere the pass changes nothing.
// CHECK-LABEL: func.func @main
// CHECK-NOT: sbp.boxing
func.func @main() -> tensor<4xf32> {
  %x = nn.input "x" : tensor<4xf32>
  %a = nn.relu %x : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// A training step: a forward value the backward pass reads is kept between
// the two at its producer's layout (as the cost model counts it), so its
// backward reader gathers it again right before it reads it instead of
// reading the forward gather, which would be kept as well. Backward values
// (the gradient here) box right after their producer, so that their
// collectives start early.
// CHECK-LABEL: func.func @main
// CHECK: %[[H:.*]] = nn.relu
// CHECK-NEXT: %[[FWD:.*]] = sbp.boxing %[[H]] on @mesh [#sbp.s<0>] -> [#sbp.b]
// CHECK-NEXT: nn.exp %[[FWD]]
// CHECK: %[[G:.*]] = nn.tanh
// CHECK-NEXT: %[[GSUM:.*]] = sbp.boxing %[[G]] on @mesh [#sbp.p<sum>] -> [#sbp.b]
// CHECK-NEXT: nn.log %[[GSUM]]
// CHECK-NEXT: %[[BWD:.*]] = sbp.boxing %[[H]] on @mesh [#sbp.s<0>] -> [#sbp.b]
// CHECK-NEXT: nn.mul %[[GSUM]], %[[BWD]]
// CHECK-NEXT: nn.sqrt %[[BWD]]
// CHECK-NOT: sbp.boxing
module attributes {nn.training = {loss = "cross-entropy"}} {
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %h = nn.relu %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %y = nn.exp %h {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %loss = nn.reduce_sum %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32> -> tensor<f32>
  %g = nn.tanh %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<8x8xf32>
  %n = nn.log %g {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %d = nn.mul %g, %h {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %s = nn.sqrt %h {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b], [#sbp.b], [#sbp.b]] -> []>} %loss, %n, %d, %s : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
}

// -----

// A parameter, like an activation, is boxed anew for its backward reader:
// the forward's gather is not held between the passes.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = nn.param "w"
// CHECK-NEXT: %[[FWD:.*]] = sbp.boxing %[[W]] on @mesh [#sbp.s<0>] -> [#sbp.b]
// CHECK-NEXT: nn.mul %{{.*}}, %[[FWD]]
// CHECK: %[[BWD:.*]] = sbp.boxing %[[W]] on @mesh [#sbp.s<0>] -> [#sbp.b]
// CHECK-NEXT: nn.mul %{{.*}}, %[[BWD]]
module attributes {nn.training = {loss = "cross-entropy"}} {
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<8x8xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %y = nn.mul %x, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %loss = nn.reduce_sum %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32> -> tensor<f32>
  %t = nn.tanh %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %g = nn.mul %t, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %loss, %g : tensor<f32>, tensor<8x8xf32>
}
}

// -----

// Unless sbp-assign keeps it for the backward (sbp.kept_for_backward): the
// backward reader of the layout the forward reads it in reads the
// forward's boxing, one gather for both passes.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = nn.param "w" {sbp.kept_for_backward
// CHECK-NEXT: %[[WHOLE:.*]] = sbp.boxing %[[W]] on @mesh [#sbp.s<0>] -> [#sbp.b]
// CHECK-NEXT: nn.mul %{{.*}}, %[[WHOLE]]
// CHECK-NOT: sbp.boxing
// CHECK: nn.mul %{{.*}}, %[[WHOLE]]
// CHECK-NEXT: %[[COLUMNS:.*]] = sbp.boxing %[[W]] on @mesh [#sbp.s<0>] -> [#sbp.s<1>]
// CHECK-NEXT: nn.exp %[[COLUMNS]]
module attributes {nn.training = {loss = "cross-entropy"}} {
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<8x8xf32>, tensor<8x8xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %w = nn.param "w" {sbp.kept_for_backward, sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %y = nn.mul %x, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %loss = nn.reduce_sum %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32> -> tensor<f32>
  %t = nn.tanh %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %g = nn.mul %t, %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %e = nn.exp %w {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<1>]] -> [[#sbp.s<1>]]>} : tensor<8x8xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b], [#sbp.s<1>]] -> []>} %loss, %g, %e : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>
}
}

// -----

// The loss of a step, partial sums over the batch's parts, is summed across
// the mesh just before the return, after the backward pass, not right after
// the forward: there, the all-reduce would hold each device's communication
// stream (and the backward's boxings behind it) until the slowest device
// reached the loss.
// CHECK-LABEL: func.func @main
// CHECK: %[[LOSS:.*]] = nn.reduce_sum
// CHECK-NEXT: nn.tanh
// CHECK-NEXT: %[[SUMMED:.*]] = sbp.boxing %[[LOSS]] on @mesh [#sbp.p<sum>] -> [#sbp.b]
// CHECK-NEXT: return {{.*}} %[[SUMMED]],
module attributes {nn.training = {loss = "cross-entropy"}} {
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<8x8xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %loss = nn.reduce_sum %x keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<8x8xf32> -> tensor<f32>
  %g = nn.tanh %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.s<0>]] -> []>} %loss, %g : tensor<f32>, tensor<8x8xf32>
}
}

// -----

// A forward value the forward already reads in the layout the step returns
// it in is returned from that boxing: one boxing, right after its producer.
// CHECK-LABEL: func.func @main
// CHECK: %[[H:.*]] = nn.relu
// CHECK-NEXT: %[[WHOLE:.*]] = sbp.boxing %[[H]] on @mesh [#sbp.s<0>] -> [#sbp.b]
// CHECK-NEXT: nn.exp %[[WHOLE]]
// CHECK-NOT: sbp.boxing
// CHECK: return {{.*}} %[[WHOLE]]
module attributes {nn.training = {loss = "cross-entropy"}} {
sbp.mesh @mesh(shape = 2)
func.func @main() -> (tensor<f32> {nn.name = "loss"}, tensor<8x8xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %h = nn.relu %x {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %y = nn.exp %h {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %loss = nn.reduce_sum %y keepdims = false {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32> -> tensor<f32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> []>} %loss, %h : tensor<f32>, tensor<8x8xf32>
}
}

// -----

// Sums over micro-batches are boxed once per step. An all-reduce of a sum
// (in place on its accumulator) comes right after the sum, so that it may
// run under the rest of the last micro-batch's backward; another boxing
// (a reduce-scatter, into a buffer of its own) waits for its first reader.
// CHECK-LABEL: func.func @main
// CHECK: %[[S1:.*]] = nn.accumulate
// CHECK-NEXT: %[[R1:.*]] = sbp.boxing %[[S1]] on @mesh [#sbp.p<sum>] -> [#sbp.b]
// CHECK-NEXT: %[[S2:.*]] = nn.accumulate
// CHECK-NEXT: nn.add
// CHECK-NEXT: nn.sgd_update %{{.*}}, %[[R1]]
// CHECK-NEXT: %[[R2:.*]] = sbp.boxing %[[S2]] on @mesh [#sbp.p<sum>] -> [#sbp.s<0>]
// CHECK-NEXT: nn.sgd_update %{{.*}}, %[[R2]]
sbp.mesh @mesh(shape = 4)
func.func @main() -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %w1 = nn.param "w1" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %w2 = nn.param "w2" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  %g1 = nn.input "g1" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.p<sum>]]>} : tensor<8x8xf32>
  %g2 = nn.input "g2" {sbp.sharding = #sbp.sharding<@mesh, [] -> [[#sbp.p<sum>]]>} : tensor<8x8xf32>
  %s1 = nn.accumulate %g1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<8x8xf32>
  %s2 = nn.accumulate %g2 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<8x8xf32>
  %r = nn.add %g1, %g2 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.p<sum>], [#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %n1 = nn.sgd_update %w1, %s1 lr = 0.1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<8x8xf32>
  %n2 = nn.sgd_update %w2, %s2 lr = 0.1 {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.s<0>], [#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<8x8xf32>
  return {sbp.sharding = #sbp.sharding<@mesh, [[#sbp.p<sum>], [#sbp.b], [#sbp.s<0>]] -> []>} %r, %n1, %n2 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
