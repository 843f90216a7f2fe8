// RUN: parplan-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{split axis must be non-negative, got -1}}
func.func @negative_split_axis() attributes {sbp = #sbp.s<-1>} {
  return
}

// -----

// expected-error @+2 {{expected one of [sum, max, min, prod] for how partial values combine, got: mean}}
// expected-error @+1 {{failed to parse SBP_PartialAttr parameter 'reduce'}}
func.func @unknown_reduction() attributes {sbp = #sbp.p<mean>} {
  return
}

// -----

// expected-error @+1 {{'sbp.mesh' op needs at least one mesh axis}}
"sbp.mesh"() <{shape = array<i64>, sym_name = "empty"}> : () -> ()

// -----

// expected-error @+1 {{'sbp.mesh' op mesh axis 1 has size 0; every axis needs at least one device}}
sbp.mesh @zero(shape = 2x0)

// -----

// expected-error @+1 {{'sbp.mesh' op mesh axis 0 has size ?; every axis needs at least one device}}
sbp.mesh @dynamic(shape = ?x2)

// -----

// expected-error @+1 {{'sbp.mesh' op has 4 positions but 3 device ids}}
sbp.mesh @short(shape = 2x2, devices = [0, 1, 2])

// -----

// expected-error @+1 {{'sbp.mesh' op device id -1 is negative}}
sbp.mesh @negative(shape = 2, devices = [-1, 0])

// -----

// expected-error @+1 {{'sbp.mesh' op device id 3 is listed twice}}
sbp.mesh @twice(shape = 2x2, devices = [0, 3, 2, 3])

// -----

// expected-error @+1 {{'sbp.mesh' op shares: mesh axis 0 has 2 devices but 3 shares}}
sbp.mesh @short_shares(shape = 2x4, shares = [[3, 1, 1], []])

// -----

// expected-error @+1 {{'sbp.mesh' op shares: share 0 of mesh axis 1 is not in 1 .. 2^31}}
sbp.mesh @zero_share(shape = 2x2, shares = [[], [1, 0]])

// -----

// expected-error @+1 {{'sbp.mesh' op shares: shares for 2 mesh axes on a mesh of rank 1}}
sbp.mesh @extra_shares(shape = 2, shares = [[1, 2], []])

// -----

// expected-error @+1 {{'sbp.mesh' op lists devices and shares: shares are the plan's own mesh's; a mesh over listed devices (a stage) splits evenly}}
sbp.mesh @stage_shares(shape = 2, devices = [2, 3], shares = [[3, 1]])

// -----

sbp.mesh @shared(shape = 2x2, shares = [[3, 1], []])
func.func @gather_uneven(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'sbp.all_gather' op exchanges parts along mesh axis 0 of @shared, whose shares are uneven; there devices only reduce whole values or cut their own part}}
  %0 = sbp.all_gather %x on @shared axis 0 [#sbp.s<0>, #sbp.b] -> [#sbp.b, #sbp.b] : tensor<8x4xf32>
  return
}

// -----

sbp.mesh @shared(shape = 2x2, shares = [[3, 1], []])
func.func @scatter_uneven(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'sbp.reduce_scatter' op exchanges parts along mesh axis 0 of @shared}}
  %0 = sbp.reduce_scatter %x on @shared axis 0 [#sbp.p<sum>, #sbp.b] -> [#sbp.s<1>, #sbp.b] : tensor<8x4xf32>
  return
}

// -----

func.func @no_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.annotate' op @missing does not name an sbp.mesh}}
  %0 = sbp.annotate %x on @missing [#sbp.b] : tensor<4xf32>
  return
}

// -----

func.func @not_a_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.annotate' op @not_a_mesh does not name an sbp.mesh}}
  %0 = sbp.annotate %x on @not_a_mesh [#sbp.b] : tensor<4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2x2)
func.func @too_few_entries(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.annotate' op layout on @mesh: nd-SBP [S(0)] has 1 entries but the mesh has 2 axes}}
  %0 = sbp.annotate %x on @mesh [#sbp.s<0>] : tensor<4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @split_axis_out_of_range(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'sbp.annotate' op layout on @mesh: split axis 2 is out of range for a tensor of rank 2}}
  %0 = sbp.annotate %x on @mesh [#sbp.s<2>] : tensor<4x4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @not_sbp_entries(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.annotate' op attribute 'sbp' failed to satisfy constraint: nd-SBP (array of #sbp.s, #sbp.b, #sbp.p)}}
  %0 = sbp.annotate %x on @mesh [0 : i64] : tensor<4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @annotate_type_change(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.annotate' op failed to verify that all of {input, result} have same type}}
  %0 = "sbp.annotate"(%x) <{mesh = @mesh, sbp = [#sbp.b]}> : (tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2x2)
func.func @boxing_source(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.boxing' op source layout on @mesh: nd-SBP [P(sum)] has 1 entries but the mesh has 2 axes}}
  %0 = sbp.boxing %x on @mesh [#sbp.p<sum>] -> [#sbp.b, #sbp.b] : tensor<4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2x2)
func.func @boxing_destination(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.boxing' op destination layout on @mesh: split axis 1 is out of range for a tensor of rank 1}}
  %0 = sbp.boxing %x on @mesh [#sbp.p<sum>, #sbp.b] -> [#sbp.b, #sbp.s<1>] : tensor<4xf32>
  return
}

// -----

func.func @boxing_no_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.boxing' op @mesh does not name an sbp.mesh}}
  %0 = sbp.boxing %x on @mesh [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @cross_mesh_same_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.cross_mesh' op moves a value from @mesh to itself; use sbp.boxing within one mesh}}
  %0 = sbp.cross_mesh %x from @mesh [#sbp.s<0>] to @mesh [#sbp.b] : tensor<4xf32>
  return
}

// -----

sbp.mesh @a(shape = 2)
func.func @cross_mesh_no_destination(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.cross_mesh' op @b does not name an sbp.mesh}}
  %0 = sbp.cross_mesh %x from @a [#sbp.s<0>] to @b [#sbp.b] : tensor<4xf32>
  return
}

// -----

sbp.mesh @a(shape = 2)
sbp.mesh @b(shape = 2x2)
func.func @cross_mesh_source(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.cross_mesh' op source layout on @a: nd-SBP [S(0), B] has 2 entries but the mesh has 1 axes}}
  %0 = sbp.cross_mesh %x from @a [#sbp.s<0>, #sbp.b] to @b [#sbp.b, #sbp.b] : tensor<4xf32>
  return
}

// -----

sbp.mesh @a(shape = 2)
sbp.mesh @b(shape = 2x2)
func.func @cross_mesh_destination(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.cross_mesh' op destination layout on @b: nd-SBP [B] has 1 entries but the mesh has 2 axes}}
  %0 = sbp.cross_mesh %x from @a [#sbp.s<0>] to @b [#sbp.b] : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'sbp.mesh' op has more devices than int64 can count}}
sbp.mesh @huge(shape = 4294967296x4294967296)

// -----

sbp.mesh @mesh(shape = 2x2)
func.func @step_two_axes(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'sbp.all_gather' op is not one step along mesh axis 0: the layouts also differ on mesh axis 1; a step changes one}}
  %0 = sbp.all_gather %x on @mesh axis 0 [#sbp.s<0>, #sbp.s<1>] -> [#sbp.b, #sbp.b] : tensor<4x4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2x2)
func.func @step_inner_split(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'sbp.all_gather' op is not one step along mesh axis 0: tensor dimension 0 is also split by the inner mesh axis 1; its parts along mesh axis 0 are not whole blocks}}
  %0 = sbp.all_gather %x on @mesh axis 0 [#sbp.s<0>, #sbp.s<0>] -> [#sbp.b, #sbp.s<0>] : tensor<4x4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @step_wrong_kind(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'sbp.all_gather' op turns S(0) into S(1) along mesh axis 0, which is sbp.all_to_all}}
  %0 = sbp.all_gather %x on @mesh axis 0 [#sbp.s<0>] -> [#sbp.s<1>] : tensor<4x4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @step_no_single_step(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.to_partial' op is not one step along mesh axis 0: no single step turns S(0) into P(max)}}
  %0 = sbp.to_partial %x on @mesh axis 0 [#sbp.s<0>] -> [#sbp.p<max>] : tensor<4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @step_unchanged(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.slice' op is not one step along mesh axis 0: no single step turns B into B}}
  %0 = sbp.slice %x on @mesh axis 0 [#sbp.b] -> [#sbp.b] : tensor<4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @step_axis_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.slice' op is not one step along mesh axis 1: mesh axis 1 is not an axis of a mesh of 1 axes}}
  %0 = sbp.slice %x on @mesh axis 1 [#sbp.b] -> [#sbp.s<0>] : tensor<4xf32>
  return
}

// -----

sbp.mesh @mesh(shape = 2)
func.func @step_bad_layout(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.slice' op destination layout on @mesh: split axis 1 is out of range for a tensor of rank 1}}
  %0 = sbp.slice %x on @mesh axis 0 [#sbp.b] -> [#sbp.s<1>] : tensor<4xf32>
  return
}

// -----

func.func @step_no_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.reduce_scatter' op @mesh does not name an sbp.mesh}}
  %0 = sbp.reduce_scatter %x on @mesh axis 0 [#sbp.p<sum>] -> [#sbp.s<0>] : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'builtin.module' op sbp.cluster must be a #sbp.cluster on a module}}
module attributes {sbp.cluster = 3 : i64} {
}

// -----

// The cluster as a string, as modules carried it before it was typed.
// expected-error @+1 {{'builtin.module' op sbp.cluster must be a #sbp.cluster on a module}}
module attributes {sbp.cluster = "{\"name\": \"x\"}"} {
}

// -----

// expected-error @+1 {{#sbp.cluster: unknown cluster preset 'dgx-h1000' (parplan clusters lists them)}}
module attributes {sbp.cluster = #sbp.cluster<preset = "dgx-h1000">} {
}

// -----

// expected-error @+1 {{#sbp.cluster: sbp.cluster.json:1:1: the cluster file: missing required field 'device_types'}}
module attributes {sbp.cluster = #sbp.cluster<json = "{\"name\": \"x\"}">} {
}

// -----

// expected-error @+1 {{#sbp.cluster: expected 'preset' or 'json', not 'file'}}
module attributes {sbp.cluster = #sbp.cluster<file = "cluster.yaml">} {
}

// -----

func.func @cluster_on_an_op() {
  // expected-error @+1 {{'func.return' op sbp.cluster must be a #sbp.cluster on a module}}
  return {sbp.cluster = #sbp.cluster<preset = "dgx-h100">}
}

// -----

// expected-error @+1 {{'builtin.module' op sbp.no_fit must be a #sbp.no_fit on a module}}
module attributes {sbp.no_fit = 3 : i64} {
}

// -----

// expected-error @+1 {{'func.func' op sbp.no_fit must be a #sbp.no_fit on a module}}
func.func @f() attributes {sbp.no_fit = #sbp.no_fit<needed = 2, capacity = 1, device = 0>} {
  return
}

// -----

// expected-error @+1 {{'builtin.module' op sbp.annotations must be a dictionary of strings `file` and `text` on a module}}
module attributes {sbp.annotations = {file = "pins.yaml"}} {
}

// -----

sbp.mesh @a(shape = 2, devices = [0, 1])
sbp.mesh @b(shape = 2, devices = [2, 3])
func.func @cross_mesh_partial(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.cross_mesh' op has a partial source layout [P(sum)]; reduce it on its mesh first (the move carries whole values)}}
  %0 = sbp.cross_mesh %x from @a [#sbp.p<sum>] to @b [#sbp.b] : tensor<4xf32>
  return
}

// -----

sbp.mesh @a(shape = 2, devices = [0, 1])
sbp.mesh @b(shape = 2, devices = [2, 3])
func.func @cross_mesh_partial_destination(%x: tensor<4xf32>) {
  // expected-error @+1 {{'sbp.cross_mesh' op has a partial destination layout [P(max)]}}
  %0 = sbp.cross_mesh %x from @a [#sbp.b] to @b [#sbp.p<max>] : tensor<4xf32>
  return
}

// -----

func.func @stage_not_a_symbol(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.relu' op sbp.stage must name an sbp.mesh}}
  %0 = nn.relu %x {sbp.stage = "first"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sbp.mesh @first(shape = 2, devices = [0, 1])
func.func @stage_no_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.relu' op sbp.stage: @second does not name an sbp.mesh}}
  %0 = nn.relu %x {sbp.stage = @second} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'builtin.module' op sbp.plan must be a #sbp.layout_plan on a module}}
module attributes {sbp.plan = {step_time = 1.0 : f64}} {
}

// -----

// expected-error @+1 {{baseline 'megatron' must be a float (its predicted seconds)}}
module attributes {sbp.plan = #sbp.layout_plan<cluster = "c", strategy = "auto", start = "auto", training = false, step_time = 1.0, compute_time = 1.0, communication_time = 0.0, overlap_time = 0.0, memory_bytes = 1, device_memory_bytes = 2, baselines = {megatron = "fast"}, stages = [], schedule = "sequential", search_nodes = 1>} {
}

// -----

// expected-error @+1 {{overlap_time must be at least 0 seconds, not -1.000000e-03}}
module attributes {sbp.plan = #sbp.layout_plan<cluster = "c", strategy = "auto", start = "auto", training = false, step_time = 1.0, compute_time = 1.0, communication_time = 0.0, overlap_time = -0.001, memory_bytes = 1, device_memory_bytes = 2, baselines = {}, stages = [], schedule = "sequential", search_nodes = 1>} {
}

// -----

// expected-error @+1 {{stages must be #sbp.stage_figures, not 3 : i64}}
module attributes {sbp.plan = #sbp.layout_plan<cluster = "c", strategy = "auto", start = "auto", training = false, step_time = 1.0, compute_time = 1.0, communication_time = 0.0, overlap_time = 0.0, memory_bytes = 1, device_memory_bytes = 2, baselines = {}, stages = [3], schedule = "sequential", search_nodes = 1>} {
}

// -----

// expected-error @+2 {{expected floating point literal}}
// expected-error @+1 {{failed to parse SBP_LayoutPlanAttr parameter 'step_time'}}
module attributes {sbp.plan = #sbp.layout_plan<cluster = "c", strategy = "auto", start = "auto", training = false, step_time = "1 s", compute_time = 1.0, communication_time = 0.0, overlap_time = 0.0, memory_bytes = 1, device_memory_bytes = 2, baselines = {}, stages = [], schedule = "sequential", search_nodes = 1>} {
}

// -----

// A stage's layer count (place-stages' stages=N) is on its mesh.
// expected-error @+1 {{'sbp.mesh' op sbp.layers must be a positive integer on an sbp.mesh}}
sbp.mesh @stage0(shape = 2, devices = [0, 1]) {sbp.layers = 0 : i64}

// -----

func.func @layers_not_on_a_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.relu' op sbp.layers must be a positive integer on an sbp.mesh}}
  %0 = nn.relu %x {sbp.layers = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The layers a stage holds part of are named, on its mesh.
// expected-error @+1 {{'sbp.mesh' op sbp.layer_parts must be a non-empty array of layer names on an sbp.mesh}}
sbp.mesh @stage0(shape = 2, devices = [0, 1]) {sbp.layer_parts = []}

// -----

// expected-error @+1 {{'sbp.mesh' op sbp.layer_parts must be a non-empty array of layer names on an sbp.mesh}}
sbp.mesh @stage0(shape = 2, devices = [0, 1]) {sbp.layer_parts = ["h.1", 3]}

// -----

func.func @layer_parts_not_on_a_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.relu' op sbp.layer_parts must be a non-empty array of layer names on an sbp.mesh}}
  %0 = nn.relu %x {sbp.layer_parts = ["h.1"]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A finer cut found by place-stages is said on the module.
// expected-error @+1 {{'sbp.mesh' op sbp.finer_cut must be a unit attribute on a module}}
sbp.mesh @stage0(shape = 2, devices = [0, 1]) {sbp.finer_cut}

// -----

// expected-error @+1 {{'builtin.module' op sbp.finer_cut must be a unit attribute on a module}}
module attributes {sbp.finer_cut = 1 : i64} {
}

// -----

// The stage holding the model's head says so on its mesh.
// expected-error @+1 {{'sbp.mesh' op sbp.head must be a unit attribute on an sbp.mesh}}
sbp.mesh @stage0(shape = 2, devices = [0, 1]) {sbp.head = 1 : i64}

// -----

func.func @head_not_on_a_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.relu' op sbp.head must be a unit attribute on an sbp.mesh}}
  %0 = nn.relu %x {sbp.head} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// sbp-assign keeps a parameter's forward boxing for the backward: said on
// the parameter.
func.func @kept_not_on_a_parameter(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.relu' op sbp.kept_for_backward must be a unit attribute on an nn.param}}
  %0 = nn.relu %x {sbp.kept_for_backward} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @kept_not_a_unit() -> tensor<4xf32> {
  // expected-error @+1 {{'nn.param' op sbp.kept_for_backward must be a unit attribute on an nn.param}}
  %0 = nn.param "w" {sbp.kept_for_backward = 1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
