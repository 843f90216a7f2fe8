// RUN: parplan-opt %s -test-nn-sbp-rules | FileCheck %s
// Candidate SBP signatures of every nn op along one mesh axis, as
// "(operand SBPs) -> result SBPs" (docs/sharding-rules.md).


// Values entering the program: any split of a dimension larger than 1, or B.
// CHECK-LABEL: func.func @sources
func.func @sources() {
// CHECK: nn.param {{.*}}sbp_rules = {{\[}}"() -> S(0)", "() -> S(2)", "() -> B"]
  %0 = nn.param "w" : tensor<4x1x6xf32>
// CHECK: nn.input {{.*}}sbp_rules = {{\[}}"() -> S(0)", "() -> S(1)", "() -> B"]
  %1 = nn.input "x" : tensor<8x4xf32>
// CHECK: nn.constant {{.*}}sbp_rules = {{\[}}"() -> S(0)", "() -> B"]
  %2 = nn.constant dense<1.0> : tensor<3xf32>
  return
}

// matmul: batch, rows, columns, or the contraction (partial sums); P passes
// through one operand. A 1-D right operand has no columns.
// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<2x8x4xf32>, %w: tensor<4x6xf32>, %v: tensor<4xf32>) {
// CHECK: nn.matmul {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), B) -> S(1)", "(B, S(1)) -> S(2)", "(S(2), S(0)) -> P(sum)", "(B, B) -> B", "(P(sum), B) -> P(sum)", "(B, P(sum)) -> P(sum)"]
  %0 = nn.matmul %x, %w : tensor<2x8x4xf32>, tensor<4x6xf32> -> tensor<2x8x6xf32>
// CHECK: nn.matmul {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), B) -> S(1)", "(S(2), S(0)) -> P(sum)", "(B, B) -> B", "(P(sum), B) -> P(sum)", "(B, P(sum)) -> P(sum)"]
  %1 = nn.matmul %x, %v : tensor<2x8x4xf32>, tensor<4xf32> -> tensor<2x8xf32>
  return
}

// matmul reading its operands transposed: the rows of a transposed left
// operand are its last dimension, the columns of a transposed right operand
// the one before, and the contraction the other two.
// CHECK-LABEL: func.func @matmul_transposed
func.func @matmul_transposed(%xt: tensor<2x4x8xf32>, %wt: tensor<6x4xf32>) {
// CHECK: nn.matmul {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(2), B) -> S(1)", "(B, S(0)) -> S(2)", "(S(1), S(1)) -> P(sum)", "(B, B) -> B", "(P(sum), B) -> P(sum)", "(B, P(sum)) -> P(sum)"]
  %0 = nn.matmul %xt, %wt {transpose_lhs, transpose_rhs, alpha = 5.000000e-01 : f32} : tensor<2x4x8xf32>, tensor<6x4xf32> -> tensor<2x8x6xf32>
  return
}

// gemm with trans_b: the bias follows the columns and joins partial sums on
// one device (B -> P).
// CHECK-LABEL: func.func @gemm
func.func @gemm(%x: tensor<8x4xf32>, %w: tensor<6x4xf32>, %b: tensor<6xf32>) {
// CHECK: nn.gemm {{.*}}sbp_rules = {{\[}}"(S(0), B, B) -> S(0)", "(B, S(0), S(0)) -> S(1)", "(S(1), S(1), P(sum)) -> P(sum)", "(B, B, B) -> B", "(P(sum), B, P(sum)) -> P(sum)", "(B, P(sum), P(sum)) -> P(sum)"]
  %0 = nn.gemm %x, %w, %b {trans_b = true} : tensor<8x4xf32>, tensor<6x4xf32>, tensor<6xf32> -> tensor<8x6xf32>
// CHECK: nn.gemm {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(B, S(0)) -> S(1)", "(S(1), S(1)) -> P(sum)", "(B, B) -> B", "(P(sum), B) -> P(sum)", "(B, P(sum)) -> P(sum)"]
  %1 = nn.gemm %x, %w {trans_b = true} : tensor<8x4xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  return
}

// conv splits the batch, the output channels, or the input channels
// (partial sums); a depthwise conv splits channels.
// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %dx: tensor<2x4x8x8xf32>, %dw: tensor<4x1x3x3xf32>) {
// CHECK: nn.conv {{.*}}sbp_rules = {{\[}}"(S(0), B, B) -> S(0)", "(B, S(0), S(0)) -> S(1)", "(S(1), S(1), P(sum)) -> P(sum)", "(B, B, B) -> B", "(P(sum), B, P(sum)) -> P(sum)"]
  %0 = nn.conv %x, %w, %b strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x8x8xf32>
// CHECK: nn.conv {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), S(0)) -> S(1)", "(B, B) -> B", "(P(sum), B) -> P(sum)"]
  %1 = nn.conv %dx, %dw strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 4 : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x8x8xf32>
  return
}

// Elementwise ops keep S (aligned through broadcasting) and B; they keep P
// only where linear: add/sub in all operands, mul in one, div in the dividend.
// cast: elementwise; a cast that widens (or keeps) a float is linear and
// passes partial sums through, a narrowing or integer one is not.
// CHECK-LABEL: func.func @cast
func.func @cast(%h: tensor<8x6xf16>, %b: tensor<8x6xbf16>, %f: tensor<8x6xf32>, %i: tensor<8x6xi64>) {
// CHECK: nn.cast {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %0 = nn.cast %h : tensor<8x6xf16> -> tensor<8x6xf32>
// CHECK: nn.cast {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %1 = nn.cast %b : tensor<8x6xbf16> -> tensor<8x6xf32>
// CHECK: nn.cast {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B"]
  %2 = nn.cast %f : tensor<8x6xf32> -> tensor<8x6xf16>
// CHECK: nn.cast {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B"]
  %3 = nn.cast %h : tensor<8x6xf16> -> tensor<8x6xbf16>
// CHECK: nn.cast {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B"]
  %4 = nn.cast %i : tensor<8x6xi64> -> tensor<8x6xf32>
  return
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<8x6xf32>, %b: tensor<6xf32>, %c: tensor<8x1xi1>) {
// CHECK: nn.add {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), S(0)) -> S(1)", "(B, B) -> B", "(P(sum), P(sum)) -> P(sum)"]
  %0 = nn.add %a, %b : tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xf32>
// CHECK: nn.mul {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), S(0)) -> S(1)", "(B, B) -> B", "(P(sum), B) -> P(sum)", "(B, P(sum)) -> P(sum)"]
  %1 = nn.mul %a, %b : tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xf32>
// CHECK: nn.div {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), S(0)) -> S(1)", "(B, B) -> B", "(P(sum), B) -> P(sum)"]
  %2 = nn.div %a, %b : tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xf32>
// CHECK: nn.gelu {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B"]
  %3 = nn.gelu %a : tensor<8x6xf32>
// CHECK: nn.where {{.*}}sbp_rules = {{\[}}"(S(0), S(0), B) -> S(0)", "(B, S(1), S(0)) -> S(1)", "(B, B, B) -> B"]
  %4 = nn.where %c, %a, %b : tensor<8x1xi1>, tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xf32>
// CHECK: nn.sub {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> S(0)", "(S(1), S(1)) -> S(1)", "(B, B) -> B", "(P(sum), P(sum)) -> P(sum)"]
  %5 = nn.sub %a, %a : tensor<8x6xf32>, tensor<8x6xf32> -> tensor<8x6xf32>
  return
}

// Comparisons and logic: elementwise splits of their i1 results, never a
// partial sum (not linear).
// CHECK-LABEL: func.func @compare
func.func @compare(%a: tensor<8x6xf32>, %b: tensor<6xf32>, %c: tensor<8x6xi1>) {
// CHECK: nn.equal {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), S(0)) -> S(1)", "(B, B) -> B"]
  %0 = nn.equal %a, %b : tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xi1>
// CHECK: nn.less {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), S(0)) -> S(1)", "(B, B) -> B"]
  %1 = nn.less %a, %b : tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xi1>
// CHECK: nn.and {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> S(0)", "(S(1), S(1)) -> S(1)", "(B, B) -> B"]
  %2 = nn.and %0, %c : tensor<8x6xi1>, tensor<8x6xi1> -> tensor<8x6xi1>
// CHECK: nn.not {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B"]
  %3 = nn.not %2 : tensor<8x6xi1>
  return
}

// Normalizations split only what they do not normalize over; batch norm
// splits its statistics with the channels; pooling splits batch and channels.
// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x8x6xf32>, %g: tensor<6xf32>, %i: tensor<2x4x5x5xf32>, %s: tensor<4xf32>) {
// CHECK: nn.softmax {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(2)) -> S(2)", "(B) -> B"]
  %0 = nn.softmax %x axis = 1 : tensor<2x8x6xf32>
// CHECK: nn.layer_norm {{.*}}sbp_rules = {{\[}}"(S(0), B, B) -> S(0)", "(S(1), B, B) -> S(1)", "(B, B, B) -> B"]
  %1 = nn.layer_norm %x, %g, %g : tensor<2x8x6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<2x8x6xf32>
// CHECK: nn.batch_norm {{.*}}sbp_rules = {{\[}}"(S(0), B, B, B, B) -> S(0)", "(S(1), S(0), S(0), S(0), S(0)) -> S(1)", "(S(2), B, B, B, B) -> S(2)", "(S(3), B, B, B, B) -> S(3)", "(B, B, B, B, B) -> B"]
  %2 = nn.batch_norm %i, %s, %s, %s, %s : tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x5x5xf32>
// CHECK: nn.max_pool {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B"]
  %3 = nn.max_pool %i kernel = [2, 2] strides = [1, 1] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x4x5x5xf32> -> tensor<2x4x4x4xf32>
  return
}

// Reducing a split dimension leaves partial sums; kept dimensions are
// renumbered without keepdims.
// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x8x6xf32>) {
// CHECK: nn.reduce_sum {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> P(sum)", "(S(2)) -> S(2)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %0 = nn.reduce_sum %x axes = [1] : tensor<2x8x6xf32> -> tensor<2x1x6xf32>
// CHECK: nn.reduce_mean {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> P(sum)", "(S(2)) -> S(1)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %1 = nn.reduce_mean %x axes = [1] keepdims = false : tensor<2x8x6xf32> -> tensor<2x6xf32>
  return
}

// Data movement maps splits through: reshape where parts stay contiguous
// (not 128 -> 1024 rows), transpose by perm, gather by rows (vocab parallel:
// partial) or indices, expand on non-broadcast dimensions.
// CHECK-LABEL: func.func @movement
func.func @movement(%x: tensor<8x128x768xf32>, %t: tensor<100x16xf32>, %ids: tensor<8x128xi64>, %e: tensor<1x128xf32>) {
// CHECK: nn.reshape {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(S(2)) -> S(2)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %0 = nn.reshape %x : tensor<8x128x768xf32> -> tensor<8x128x12x64xf32>
// CHECK: nn.reshape {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(2)) -> S(1)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %1 = nn.reshape %x : tensor<8x128x768xf32> -> tensor<1024x768xf32>
// CHECK: nn.transpose {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(2)) -> S(1)", "(S(1)) -> S(2)", "(S(3)) -> S(3)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %2 = nn.transpose %0 perm = [0, 2, 1, 3] : tensor<8x128x12x64xf32> -> tensor<8x12x128x64xf32>
// CHECK: nn.concat {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> S(0)", "(S(1), S(1)) -> S(1)", "(B, B) -> B", "(P(sum), P(sum)) -> P(sum)"]
  %3 = nn.concat %x, %x axis = 2 : tensor<8x128x768xf32>, tensor<8x128x768xf32> -> tensor<8x128x1536xf32>
// CHECK: nn.split {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0), S(0)", "(S(1)) -> S(1), S(1)", "(B) -> B, B", "(P(sum)) -> P(sum), P(sum)"]
  %4:2 = nn.split %x axis = 2 sizes = [256, 512] : tensor<8x128x768xf32> -> tensor<8x128x256xf32>, tensor<8x128x512xf32>
// CHECK: nn.slice {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(2)) -> S(2)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %5 = nn.slice %x starts = [0, 0, 0] sizes = [8, 64, 768] steps = [1, 2, 1] : tensor<8x128x768xf32> -> tensor<8x64x768xf32>
// CHECK: nn.gather {{.*}}sbp_rules = {{\[}}"(S(0), B) -> P(sum)", "(S(1), B) -> S(2)", "(B, S(0)) -> S(0)", "(B, S(1)) -> S(1)", "(B, B) -> B", "(P(sum), B) -> P(sum)"]
  %6 = nn.gather %t, %ids : tensor<100x16xf32>, tensor<8x128xi64> -> tensor<8x128x16xf32>
// CHECK: nn.expand {{.*}}sbp_rules = {{\[}}"(S(1)) -> S(1)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %7 = nn.expand %e : tensor<1x128xf32> -> tensor<8x128xf32>
// CHECK: nn.shape {{.*}}sbp_rules = {{\[}}"(S(0)) -> B", "(S(1)) -> B", "(S(2)) -> B", "(B) -> B", "(P(sum)) -> B"]
  %8 = nn.shape %x : tensor<8x128x768xf32> -> tensor<3xi64>
  return
}


// Gradients of activations and normalizations split what their forward
// op splits; the scale and bias gradients of a split layer_norm are partial
// sums over the rows.
// CHECK-LABEL: func.func @training_grads
func.func @training_grads(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
// CHECK: nn.relu_grad {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> S(0)", "(S(1), S(1)) -> S(1)", "(B, B) -> B", "(P(sum), B) -> P(sum)"]
  %0 = nn.relu_grad %dy, %x : tensor<4x8xf32>
// CHECK: nn.softmax_grad {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> S(0)", "(B, B) -> B"]
  %1 = nn.softmax_grad %dy, %x : tensor<4x8xf32>
// CHECK: nn.layer_norm_grad {{.*}}sbp_rules = {{\[}}"(S(0), S(0), B) -> S(0), P(sum), P(sum)", "(B, B, B) -> B, B, B"]
  %2:3 = nn.layer_norm_grad %dy, %x, %g : tensor<4x8xf32>, tensor<8xf32>
  return
}

// Convolution gradients: the transposes of conv's rules (a split batch
// leaves the weight gradient partial; split output channels leave the input
// gradient partial); pooling gradients split batch and channels.
// CHECK-LABEL: func.func @training_windows
func.func @training_windows(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %p: tensor<2x3x4x4xf32>) {
// CHECK: nn.conv_grad_input {{.*}}sbp_rules = {{\[}}"(S(0), B) -> S(0)", "(S(1), S(0)) -> P(sum)", "(B, S(1)) -> S(1)", "(B, B) -> B", "(P(sum), B) -> P(sum)"]
  %0 = nn.conv_grad_input %dy, %w strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
// CHECK: nn.conv_grad_weight {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> P(sum)", "(S(1), B) -> S(0)", "(B, S(1)) -> S(1)", "(B, B) -> B", "(P(sum), B) -> P(sum)"]
  %1 = nn.conv_grad_weight %dy, %x strides = [2, 2] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32> -> tensor<4x3x3x3xf32>
// CHECK: nn.max_pool_grad {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> S(0)", "(S(1), S(1)) -> S(1)", "(B, B) -> B"]
  %2 = nn.max_pool_grad %p, %x kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
// CHECK: nn.avg_pool_grad {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(S(1)) -> S(1)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %3 = nn.avg_pool_grad %p kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x3x4x4xf32> -> tensor<2x3x8x8xf32>
  return
}

// slice_grad keeps splits of the dimensions the slice kept whole;
// gather_grad scatters into a table split like the forward table (rows:
// vocabulary parallel), or into partial sums where the indices were split.
// CHECK-LABEL: func.func @training_movement
func.func @training_movement(%dy: tensor<4x3xf32>, %de: tensor<8x16x32xf32>, %ids: tensor<8x16xi64>) {
// CHECK: nn.slice_grad {{.*}}sbp_rules = {{\[}}"(S(0)) -> S(0)", "(B) -> B", "(P(sum)) -> P(sum)"]
  %0 = nn.slice_grad %dy starts = [0, 2] steps = [1, 2] : tensor<4x3xf32> -> tensor<4x8xf32>
// CHECK: nn.gather_grad {{.*}}sbp_rules = {{\[}}"(B, B) -> S(0)", "(S(2), B) -> S(1)", "(S(0), S(0)) -> P(sum)", "(S(1), S(1)) -> P(sum)", "(B, B) -> B", "(P(sum), B) -> P(sum)"]
  %1 = nn.gather_grad %de, %ids : tensor<8x16x32xf32>, tensor<8x16xi64> -> tensor<1000x32xf32>
  return
}

// Losses split positions, never the class axis.
// CHECK-LABEL: func.func @training_losses
func.func @training_losses(%logits: tensor<8x16x50xf32>, %labels: tensor<8x16xi64>, %dl: tensor<8x16xf32>) {
// CHECK: nn.softmax_cross_entropy {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> S(0)", "(S(1), S(1)) -> S(1)", "(B, B) -> B"]
  %0 = nn.softmax_cross_entropy %logits, %labels : tensor<8x16x50xf32>, tensor<8x16xi64> -> tensor<8x16xf32>
// CHECK: nn.softmax_cross_entropy_grad {{.*}}sbp_rules = {{\[}}"(S(0), S(0), S(0)) -> S(0)", "(S(1), S(1), S(1)) -> S(1)", "(B, B, B) -> B", "(P(sum), B, B) -> P(sum)"]
  %1 = nn.softmax_cross_entropy_grad %dl, %logits, %labels : tensor<8x16xf32>, tensor<8x16x50xf32>, tensor<8x16xi64>
  return
}

// Updates keep the parameter, its gradient and its state in one layout;
// the step count stays whole.
// CHECK-LABEL: func.func @training_updates
func.func @training_updates(%w: tensor<16x32xf32>, %t: tensor<f32>) {
// CHECK: nn.sgd_update {{.*}}sbp_rules = {{\[}}"(S(0), S(0)) -> S(0)", "(S(1), S(1)) -> S(1)", "(B, B) -> B"]
  %0 = nn.sgd_update %w, %w lr = 0.1 : tensor<16x32xf32>
// CHECK: nn.adam_update {{.*}}sbp_rules = {{\[}}"(S(0), S(0), S(0), S(0), B) -> S(0), S(0), S(0)", "(S(1), S(1), S(1), S(1), B) -> S(1), S(1), S(1)", "(B, B, B, B, B) -> B, B, B"]
  %1:3 = nn.adam_update %w, %w, %w, %w, %t lr = 1.0e-3 : tensor<16x32xf32>, tensor<f32>
  return
}
