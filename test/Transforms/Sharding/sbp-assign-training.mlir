// RUN: parplan-opt %s -nn-autodiff -attach-cluster -sbp-assign="mesh=8 strategy=data-parallel" -insert-boxing | FileCheck %s --check-prefix=DP
// RUN: parplan-opt %s -nn-autodiff -attach-cluster -sbp-assign="mesh=2x4" -insert-boxing | FileCheck %s --check-prefix=MIXED
// RUN: parplan-opt %s -nn-autodiff="micro-batches=4" -attach-cluster -sbp-assign="mesh=8 strategy=data-parallel" -insert-boxing | FileCheck %s --check-prefix=MICRO

// A training step (nn-autodiff's output) is laid out like any program: the
// gradient synchronization is the boxing that the layouts of a parameter
// and of its gradient require, with no code of its own.
//
// Data parallel: replicated parameters, a split batch. Each weight
// gradient is a partial sum over the batch, all-reduced into the update;
// the updated weights come back replicated, as the next step reads them.
// The updates run in the order the backward completes their gradients.
// DP: nn.param "fc1.weight" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b]]>}
// DP: %[[G2:.*]] = sbp.boxing %{{.*}} on @mesh [#sbp.p<sum>] -> [#sbp.b] {time{{.*}}} : tensor<1024x16xf32>
// DP: %[[G1:.*]] = sbp.boxing %{{.*}} on @mesh [#sbp.p<sum>] -> [#sbp.b] {time{{.*}}} : tensor<1024x1024xf32>
// DP: nn.adam_update %{{.*}}, %[[G2]],
// DP: nn.adam_update %{{.*}}, %[[G1]], {{.*}}#sbp.sharding<@mesh, {{\[}}[#sbp.b], [#sbp.b], [#sbp.b], [#sbp.b], [#sbp.b]] -> {{\[}}[#sbp.b], [#sbp.b], [#sbp.b]]>
// DP-NOT: sbp.boxing
// DP: return
//
// On 2x4 (with a batch large enough that splitting it beats splitting
// the weights 8 ways) the first mesh axis takes the batch and the second
// splits the weights: each gradient is all-reduced over the first axis in
// place, right after the backward op that completes it, where the rest of
// the backward runs under it. The prediction leaves out what the two
// streams overlap (overlap_time), which puts these layouts ahead of
// ZeRO's (the state split over the first axis, the gradients
// reduce-scattered and the weights gathered back after the update: more
// bytes, and a gather no kernel runs under).
// MIXED: sbp.plan = #sbp.layout_plan<{{.*}} overlap_time = {{[1-9][0-9.]*}}E-{{[0-9]+}},
// MIXED: sbp.boxing %{{.*}} on @mesh [#sbp.p<sum>, #sbp.s<0>] -> [#sbp.b, #sbp.s<0>] {time
// MIXED: sbp.boxing %{{.*}} on @mesh [#sbp.p<sum>, #sbp.s<1>] -> [#sbp.b, #sbp.s<1>] {time
// MIXED: nn.adam_update {{.*}}-> {{\[}}[#sbp.b, #sbp.s<0>], [#sbp.b, #sbp.s<0>], [#sbp.b, #sbp.s<0>]]>
// MIXED: nn.adam_update {{.*}}-> {{\[}}[#sbp.b, #sbp.s<1>], [#sbp.b, #sbp.s<1>], [#sbp.b, #sbp.s<1>]]>
// MIXED-NOT: sbp.boxing
//
// With 4 micro-batches, each device sums its partial gradients over them
// and the all-reduce runs once, after the last, on the sums: each right
// where its sum is complete (in place, so that it may run under the rest
// of the last backward), in the order the backward completes them.
// MICRO: %[[S2:.*]] = nn.accumulate %{{.*}} {sbp.sharding = #sbp.sharding<@mesh, {{\[}}[#sbp.p<sum>]] -> {{\[}}[#sbp.p<sum>]]>} : tensor<1024x16xf32>
// MICRO-NEXT: %[[R2:.*]] = sbp.boxing %[[S2]] on @mesh [#sbp.p<sum>] -> [#sbp.b]
// MICRO: %[[S1:.*]] = nn.accumulate %{{.*}} {sbp.sharding = #sbp.sharding<@mesh, {{\[}}[#sbp.p<sum>]] -> {{\[}}[#sbp.p<sum>]]>} : tensor<1024x1024xf32>
// MICRO-NEXT: %[[R1:.*]] = sbp.boxing %[[S1]] on @mesh [#sbp.p<sum>] -> [#sbp.b]
// MICRO: nn.adam_update %{{.*}}, %[[R2]],
// MICRO-NEXT: nn.adam_update %{{.*}}, %[[R1]],
func.func @main() -> tensor<16384x16xf32> {
  %x = nn.input "x" : tensor<16384x1024xf32>
  %w1 = nn.param "fc1.weight" : tensor<1024x1024xf32>
  %w2 = nn.param "fc2.weight" : tensor<1024x16xf32>
  %h = nn.matmul %x, %w1 : tensor<16384x1024xf32>, tensor<1024x1024xf32> -> tensor<16384x1024xf32>
  %a = nn.relu %h : tensor<16384x1024xf32>
  %y = nn.matmul %a, %w2 : tensor<16384x1024xf32>, tensor<1024x16xf32> -> tensor<16384x16xf32>
  return %y : tensor<16384x16xf32>
}
