// RUN: parplan-opt %s -split-input-file -attach-cluster -insert-cross-mesh -verify-diagnostics | FileCheck %s
// RUN: parplan-opt %s -split-input-file -attach-cluster -insert-cross-mesh="mode=broadcast" -verify-diagnostics | FileCheck %s --check-prefix=FORCED
// RUN: not parplan-opt %s -split-input-file -attach-cluster -insert-cross-mesh="mode=multicast" 2>&1 | FileCheck %s --check-prefix=MODE

// RUN: parplan-opt %s -split-input-file -attach-cluster -insert-cross-mesh -verify-diagnostics -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// RUN: parplan-opt %S/Inputs/mixed-types.mlir -split-input-file -attach-cluster=cluster=whale-v100-p100 -insert-cross-mesh | FileCheck %s --check-prefix=MIXED

// On devices of mixed types each side of a move boxes on its own devices'
// links: the sum of a partial 4096x1024 value over a node of 8 P100s on
// PCIe (16 GB/s) takes 8 times as long as over 8 V100s on NVLink, whichever
// way the value then goes (sbp-assign prices the move alike).
// MIXED-LABEL: func.func @main
// MIXED: sbp.boxing %{{.*}} on @p100 [#sbp.p<sum>] -> [#sbp.b] {time = 9.87504{{[0-9]*}}E-4 : f64}
// MIXED-NEXT: sbp.cross_mesh %{{.*}} from @p100 [#sbp.b] to @v100 [#sbp.b]
// MIXED-LABEL: func.func @main
// MIXED: sbp.boxing %{{.*}} on @v100 [#sbp.p<sum>] -> [#sbp.b] {time = 1.25867{{[0-9]*}}E-4 : f64}
// MIXED-NEXT: sbp.cross_mesh %{{.*}} from @v100 [#sbp.b] to @p100 [#sbp.b]

// MODE: error: insert-cross-mesh: unknown mode 'multicast' (expected cheapest, send-recv, send-recv+all-gather, broadcast)

// A value read on another stage's mesh moves once per layout wanted there,
// right after its producer, with the planner's mode, balancing and time;
// readers on its own mesh read it as it is.
// CHECK-LABEL: func.func @main
// CHECK: %[[X:.*]] = nn.input "x"
// CHECK-NEXT: %[[ROWS:.*]] = sbp.cross_mesh %[[X]] from @a [#sbp.s<0>] to @b [#sbp.s<1>]
// CHECK-NEXT: %[[WHOLE:.*]] = sbp.cross_mesh %[[X]] from @a [#sbp.s<0>] to @b [#sbp.b] {balancing = "{{none|by-bytes|by-order}}", mode = "{{send-recv|send-recv\+all-gather|broadcast}}", time = {{[0-9.eE+-]+}} : f64} : tensor<8x4xf32>
// CHECK-NEXT: nn.relu %[[X]] {sbp.sharding = #sbp.sharding<@a
// CHECK-NEXT: nn.tanh %[[WHOLE]]
// CHECK-NEXT: nn.exp %[[WHOLE]]
// CHECK-NEXT: nn.sqrt %[[ROWS]]
// CHECK-NOT: sbp.cross_mesh
// FORCED-LABEL: func.func @main
// FORCED: sbp.cross_mesh {{.*}} mode = "broadcast"
// FORCED: sbp.cross_mesh {{.*}} mode = "broadcast"
sbp.mesh @a(shape = 2, devices = [0, 1])
sbp.mesh @b(shape = 2, devices = [2, 3])
func.func @main() -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.s<0>]]>} : tensor<8x4xf32>
  %r = nn.relu %x {sbp.sharding = #sbp.sharding<@a, [[#sbp.s<0>]] -> [[#sbp.s<0>]]>} : tensor<8x4xf32>
  %t = nn.tanh %x {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x4xf32>
  %e = nn.exp %x {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<8x4xf32>
  %s = nn.sqrt %x {sbp.sharding = #sbp.sharding<@b, [[#sbp.s<1>]] -> [[#sbp.s<1>]]>} : tensor<8x4xf32>
  return {sbp.sharding = #sbp.sharding<@a, [[#sbp.s<0>], [#sbp.b], [#sbp.b], [#sbp.s<1>]] -> []>} %r, %t, %e, %s : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// A partial source is reduced on its own mesh first; a partial reader gets
// the whole value, made partial on its mesh (the move carries whole
// values).
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = nn.matmul
// CHECK-NEXT: %[[SUM:.*]] = sbp.boxing %[[Y]] on @a [#sbp.p<sum>] -> [#sbp.b] {time
// CHECK-NEXT: %[[MOVED:.*]] = sbp.cross_mesh %[[SUM]] from @a [#sbp.b] to @b [#sbp.b]
// CHECK-NEXT: %[[PART:.*]] = sbp.boxing %[[MOVED]] on @b [#sbp.b] -> [#sbp.p<sum>] {time
// CHECK-NEXT: nn.add %[[PART]], %[[PART]]
sbp.mesh @a(shape = 2, devices = [0, 1])
sbp.mesh @b(shape = 2, devices = [2, 3])
func.func @main() -> tensor<4x4xf32> {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.s<1>]]>} : tensor<4x8xf32>
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.s<0>]]>} : tensor<8x4xf32>
  %y = nn.matmul %x, %w {sbp.sharding = #sbp.sharding<@a, [[#sbp.s<1>], [#sbp.s<0>]] -> [[#sbp.p<sum>]]>} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %z = nn.add %y, %y {sbp.sharding = #sbp.sharding<@b, [[#sbp.p<sum>], [#sbp.p<sum>]] -> [[#sbp.p<sum>]]>} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return {sbp.sharding = #sbp.sharding<@a, [[#sbp.p<sum>]] -> []>} %z : tensor<4x4xf32>
}

// -----

// Ops on one mesh need nothing.
// CHECK-LABEL: func.func @main
// CHECK-NOT: sbp.cross_mesh
sbp.mesh @a(shape = 2, devices = [0, 1])
func.func @main() -> tensor<4xf32> {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.s<0>]]>} : tensor<4xf32>
  %r = nn.relu %x {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  return {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> []>} %r : tensor<4xf32>
}

// -----

// Meshes the planner cannot move between (a device the cluster lacks)
// are an error naming the operand and the meshes.
sbp.mesh @a(shape = 2, devices = [0, 1])
sbp.mesh @b(shape = 2, devices = [8, 9])
func.func @main() -> tensor<4xf32> {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.s<0>]]>} : tensor<4xf32>
  // expected-error @+1 {{insert-cross-mesh: operand 0 from @a to @b: moving 'tensor<4xf32>' from mesh 2 on devices 0..1 to mesh 2 on devices 8..9: the destination device 8 is out of range}}
  %r = nn.relu %x {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>
  return {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> []>} %r : tensor<4xf32>
}

// -----

// A move carries its value's location (the producer's node: a parameter's
// name, a layer's last op), not its first reader's, so that a trace or a
// critical path names it after what it moves.
// CHECK-LABEL: func.func @named
// CHECK-COUNT-2: sbp.cross_mesh
// LOC-LABEL: func.func @named
// LOC: %[[W:.*]] = nn.param "w" {{.*}} loc(#[[WEIGHT:loc[0-9]*]])
// LOC-NEXT: sbp.cross_mesh %[[W]] {{.*}} loc(#[[WEIGHT]])
// LOC-NEXT: %[[R:.*]] = nn.relu {{.*}} loc(#[[PRODUCER:loc[0-9]*]])
// LOC-NEXT: sbp.cross_mesh %[[R]] {{.*}} loc(#[[PRODUCER]])
// LOC-NEXT: nn.add {{.*}} loc(#[[READER:loc[0-9]*]])
// LOC-DAG: #[[WEIGHT]] = loc("w")
// LOC-DAG: #[[PRODUCER]] = loc("/h.0/Relu")
// LOC-DAG: #[[READER]] = loc("/h.1/Add")
sbp.mesh @a(shape = 2, devices = [0, 1])
sbp.mesh @b(shape = 2, devices = [2, 3])
func.func @named() -> tensor<4xf32> {
  %x = nn.input "x" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.s<0>]]>} : tensor<4xf32> loc("x")
  %w = nn.param "w" {sbp.sharding = #sbp.sharding<@a, [] -> [[#sbp.b]]>} : tensor<4xf32> loc("w")
  %r = nn.relu %x {sbp.sharding = #sbp.sharding<@a, [[#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32> loc("/h.0/Relu")
  %y = nn.add %r, %w {sbp.sharding = #sbp.sharding<@b, [[#sbp.b], [#sbp.b]] -> [[#sbp.b]]>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("/h.1/Add")
  return {sbp.sharding = #sbp.sharding<@b, [[#sbp.b]] -> []>} %y : tensor<4xf32>
}
