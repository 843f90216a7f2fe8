// sbp-assign's `starts` under strategy auto: `all` lays out with the
// search and with every baseline and keeps the least predicted step, the
// others' listed in sbp.plan's baselines; `search` is the search alone,
// `baselines` the baselines alone (the pipeline search lays them out on the
// shape it chose with the search alone, docs/pipeline.md).
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4" | FileCheck %s --check-prefix=ALL
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4 starts=search" | FileCheck %s --check-prefix=SEARCH
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4 starts=baselines" | FileCheck %s --check-prefix=BASELINES
// RUN: not parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4 starts=some" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// -parplan-debug-only=sbp-assign explains each start and which was kept.
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4" -parplan-debug-only=sbp-assign -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEBUG
// RUN: not parplan-opt %s -parplan-debug-only=sbp-assign,layouts 2>&1 | FileCheck %s --check-prefix=DEBUG-UNKNOWN
// The starts laid out on two threads (each on its own copies of the cost
// models) keep what one thread keeps, the starts sharing them.
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4" -o %t.two
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4" --mlir-disable-threading -o %t.one
// RUN: diff %t.one %t.two
// A strategy other than auto is one start, whatever `starts` says.
// RUN: parplan-opt %s -attach-cluster -sbp-assign="mesh=1x4 strategy=megatron starts=baselines" | FileCheck %s --check-prefix=MEGATRON

// Large weights, a small batch: the search splits them (megatron's
// layout); data parallelism and replication all-reduce their gradients.
// ALL: sbp.plan = #sbp.layout_plan<{{.*}}strategy = "auto", start = "auto"{{.*}}baselines = {"data-parallel" = {{.*}}, megatron = {{.*}}, replicated = {{.*}}}
// SEARCH: sbp.plan = #sbp.layout_plan<{{.*}}strategy = "auto", start = "auto"{{.*}}baselines = {}
// The least of the baselines is kept, the other two listed; the search is
// not laid out.
// BASELINES: sbp.plan = #sbp.layout_plan<{{.*}}strategy = "auto", start = "megatron"{{.*}}baselines = {"data-parallel" = {{.*}}, replicated = {{.*}}}
// DEBUG: [sbp-assign] start auto: 7 nodes in 7 classes; least time {{[0-9.e+-]+}} s at {{[0-9,]+}} bytes per device of 80,000,000,000
// DEBUG-NEXT: [sbp-assign] start auto: step [[AUTO:[0-9.e+-]+]] s (compute {{[0-9.e+-]+}}, communication {{[0-9.e+-]+}}), {{[0-9,]+}} bytes per device{{$}}
// DEBUG: [sbp-assign] start data-parallel: step
// DEBUG: [sbp-assign] start megatron: step
// DEBUG: [sbp-assign] start replicated: step
// DEBUG-NEXT: [sbp-assign] kept start auto (step [[AUTO]] s) of 4 laid out
// DEBUG-UNKNOWN: for the --parplan-debug-only option: 'layouts' is not a search that explains itself; use sbp-assign, pipeline-search, recompute
// UNKNOWN: error: sbp-assign: starts 'some' is unknown; use all, search or baselines
// MEGATRON: sbp.plan = #sbp.layout_plan<{{.*}}strategy = "megatron", start = "megatron"{{.*}}baselines = {}

// A pin the baselines contradict (w1 whole, which Megatron splits by
// columns): each baseline keeps it and lays out the rest its way, and
// Megatron's, w2 split by rows after the whole w1, is kept.
// RUN: parplan-opt %S/../Inputs/sbp-assign-starts-pinned.mlir -attach-cluster -sbp-assign="mesh=1x4 starts=baselines" | FileCheck %s --check-prefix=PINNED
// PINNED: sbp.plan = #sbp.layout_plan<{{.*}}start = "megatron"{{.*}}baselines = {"data-parallel" = {{.*}}, replicated = {{.*}}}
// PINNED: nn.param "w1" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.b]]>}
// PINNED: nn.param "w2" {sbp.sharding = #sbp.sharding<@mesh, [] -> {{\[}}[#sbp.b, #sbp.s<0>]]>}
// Asked for by name, Megatron contradicts the pin: one line.
// RUN: not parplan-opt %S/../Inputs/sbp-assign-starts-pinned.mlir -attach-cluster -sbp-assign="mesh=1x4 strategy=megatron" 2>&1 | FileCheck %s --check-prefix=PINNED-MEGATRON
// PINNED-MEGATRON: error: conflicting pins on nn.param (node 'w1'): result 0 is [B, B] by pins.yaml:2:5

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
