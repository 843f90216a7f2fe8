// RUN: parplan-opt %s -split-input-file -verify-diagnostics -nn-divide-batch="micro-batches=4" | FileCheck %s
// RUN: parplan-opt %s -split-input-file -verify-diagnostics -nn-divide-batch | FileCheck %s --check-prefix=WHOLE
// RUN: not parplan-opt %s -split-input-file -nn-divide-batch="micro-batches=3" 2>&1 | FileCheck %s --check-prefix=THREE
// RUN: not parplan-opt %s -split-input-file -nn-divide-batch="micro-batches=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// Three micro-batches do not divide 16 rows; the module is left unchanged.
// THREE: error: the batch: 3 micro-batches do not divide dimension 0 (16) of nn.input (node 'x')
// ZERO: error: nn-divide-batch: micro-batches must be positive, not 0

// A batch of 16 fixed in the model, as a plain export writes it: four
// micro-batches of 4 rows. The weights keep their shapes; every value the
// inputs reach carries the batch along dimension 0, @main's results too.
// micro-batches=1 follows the batch and changes nothing.
// CHECK-LABEL: func.func @main() -> tensor<4x8xf32>
// CHECK: nn.input "x" : tensor<4x32xf32>
// CHECK: nn.param "w" : tensor<32x8xf32>
// CHECK: nn.matmul {{.*}} : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
// CHECK: nn.add {{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
// CHECK: nn.relu {{.*}} : tensor<4x8xf32>
// CHECK: return {{.*}} : tensor<4x8xf32>
// WHOLE-LABEL: func.func @main() -> tensor<16x8xf32>
// WHOLE: nn.input "x" : tensor<16x32xf32>
func.func @main() -> tensor<16x8xf32> {
  %x = nn.input "x" : tensor<16x32xf32>
  %w = nn.param "w" : tensor<32x8xf32>
  %b = nn.param "b" : tensor<8xf32>
  %y = nn.matmul %x, %w : tensor<16x32xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %z = nn.add %y, %b : tensor<16x8xf32>, tensor<8xf32> -> tensor<16x8xf32>
  %r = nn.relu %z : tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

// A reshape that keeps the batch outermost (the tokens of every sequence
// as rows) splits it as data parallelism does: 16 sequences of 8 tokens
// are 128 rows, a micro-batch's 4 sequences 32. A slice along another
// dimension keeps its batch whole.
// CHECK-LABEL: func.func @main() -> tensor<32x2xf32>
// CHECK: nn.input "tokens" : tensor<4x8x4xf32>
// CHECK: nn.reshape {{.*}} : tensor<4x8x4xf32> -> tensor<32x4xf32>
// CHECK: nn.slice {{.*}} starts = [0, 1] sizes = [32, 2] steps = [1, 1] : tensor<32x4xf32> -> tensor<32x2xf32>
func.func @main() -> tensor<128x2xf32> {
  %t = nn.input "tokens" : tensor<16x8x4xf32>
  %rows = nn.reshape %t : tensor<16x8x4xf32> -> tensor<128x4xf32>
  %s = nn.slice %rows starts = [0, 1] sizes = [128, 2] steps = [1, 1] : tensor<128x4xf32> -> tensor<128x2xf32>
  return %s : tensor<128x2xf32>
}

// -----

// The data inputs and the labels share the batch: both divide.
// CHECK-LABEL: func.func @main() -> (tensor<4x10xf32>, tensor<4xi64>)
// CHECK: nn.input "labels" : tensor<4xi64>
func.func @main() -> (tensor<16x10xf32>, tensor<16xi64>) {
  %x = nn.input "x" : tensor<16x10xf32>
  %l = nn.input "labels" : tensor<16xi64>
  return %x, %l : tensor<16x10xf32>, tensor<16xi64>
}

// -----

func.func @main() -> tensor<16x8xf32> {
  %x = nn.input "x" : tensor<16x8xf32>
  // expected-error @+1 {{the batch: input 'mask' has 8 rows at dimension 0, input 'x' 16: the inputs share no batch dimension}}
  %m = nn.input "mask" : tensor<8x8xf32>
  return %x : tensor<16x8xf32>
}

// -----

// A constant of the batch's size added to the batch is not the batch: a
// micro-batch would need its own rows of it.
func.func @main() -> tensor<16x8xf32> {
  %x = nn.input "x" : tensor<16x8xf32>
  %c = nn.constant dense<1.0> : tensor<16x8xf32>
  // expected-error @+1 {{the batch cannot be followed through nn.add: no sharding rule splits the operands that carry the batch along it while the others stay whole}}
  %y = nn.add %x, %c : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

// -----

// A mean over the batch in the model (each micro-batch would take its own).
func.func @main() -> tensor<1x8xf32> {
  %x = nn.input "x" : tensor<16x8xf32>
  // expected-error @+1 {{the batch cannot be followed through nn.reduce_mean: no sharding rule splits}}
  %m = nn.reduce_mean %x axes = [0] : tensor<16x8xf32> -> tensor<1x8xf32>
  return %m : tensor<1x8xf32>
}

// -----

// A token every sequence gets (ViT's class token): a parameter expanded to
// the batch and joined with it is the batch too, and a micro-batch's share
// is the same token expanded to fewer rows.
// CHECK-LABEL: func.func @main() -> tensor<4x5x8xf32>
// CHECK: nn.expand {{.*}} : tensor<1x1x8xf32> -> tensor<4x1x8xf32>
// CHECK: nn.concat {{.*}} : tensor<4x1x8xf32>, tensor<4x4x8xf32> -> tensor<4x5x8xf32>
func.func @main() -> tensor<16x5x8xf32> {
  %x = nn.input "patches" : tensor<16x4x8xf32>
  %token = nn.param "class_token" : tensor<1x1x8xf32>
  %tokens = nn.expand %token : tensor<1x1x8xf32> -> tensor<16x1x8xf32>
  %joined = nn.concat %tokens, %x axis = 1 : tensor<16x1x8xf32>, tensor<16x4x8xf32> -> tensor<16x5x8xf32>
  return %joined : tensor<16x5x8xf32>
}
