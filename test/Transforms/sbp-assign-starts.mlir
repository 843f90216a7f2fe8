// sbp-assign's `starts` under strategy auto: `all` lays out with the
// search and with every baseline and keeps the least predicted step, the
// others' listed in sbp.plan's baselines; `search` is the search alone,
// `baselines` the baselines alone (the pipeline search lays them out on the
// shape it chose with the search alone, docs/pipeline.md).
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4" | FileCheck %s --check-prefix=ALL
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4 starts=search" | FileCheck %s --check-prefix=SEARCH
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4 starts=baselines" | FileCheck %s --check-prefix=BASELINES
// RUN: not parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4 starts=some" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// A strategy other than auto is one start, whatever `starts` says.
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4 strategy=megatron starts=baselines" | FileCheck %s --check-prefix=MEGATRON

// Large weights, a small batch: the search splits them (megatron's
// layout); data parallelism and replication all-reduce their gradients.
// ALL: sbp.plan = {baselines = {"data-parallel" = {{.*}}, megatron = {{.*}}, replicated = {{.*}}}, {{.*}}start = "auto"{{.*}}strategy = "auto"
// SEARCH: sbp.plan = {baselines = {}, {{.*}}start = "auto"{{.*}}strategy = "auto"
// The least of the baselines is kept, the other two listed; the search is
// not laid out.
// BASELINES: sbp.plan = {baselines = {"data-parallel" = {{.*}}, replicated = {{.*}}}, {{.*}}start = "megatron"{{.*}}strategy = "auto"
// UNKNOWN: error: sbp-assign: starts 'some' is unknown; use all, search or baselines
// MEGATRON: sbp.plan = {baselines = {}, {{.*}}start = "megatron"{{.*}}strategy = "megatron"

// A mixed-precision step reads each weight through its cast to bf16: the
// Megatron layouts pin the weight behind the cast, column- then
// row-parallel, as in float32.
// RUN: parplan-opt %s -nn-autodiff="mixed-precision=bf16" -attach-cluster -sbp-assign="mesh=1x4 strategy=megatron" | FileCheck %s --check-prefix=MEGATRON-BF16
// MEGATRON-BF16: nn.param "w1" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.s<1>]]>}
// MEGATRON-BF16: nn.param "w2" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.s<0>]]>}
func.func @main() -> tensor<16x8192xf32> {
  %x = nn.input "x" : tensor<16x8192xf32>
  %w1 = nn.param "w1" : tensor<8192x32768xf32>
  %w2 = nn.param "w2" : tensor<32768x8192xf32>
  %h = nn.matmul %x, %w1 : tensor<16x8192xf32>, tensor<8192x32768xf32> -> tensor<16x32768xf32>
  %g = nn.gelu %h : tensor<16x32768xf32>
  %y = nn.matmul %g, %w2 : tensor<16x32768xf32>, tensor<32768x8192xf32> -> tensor<16x8192xf32>
  return %y : tensor<16x8192xf32>
}
