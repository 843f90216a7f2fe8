//===- Kernels.h - reference CPU kernels for every nn op --------*- C++ -*-===//
//
// One function per `nn` op (dialects/NNOps.td has each op's semantics), on
// plain host tensors, with no MLIR dependency. They are the CPU backend of
// parplan-run and the ground truth the compiler's tests compare against.
//
// Conventions:
// - Every result is preallocated by the caller with its element type and
//   shape (the IR or the plan knows them); a kernel only fills it.
// - Floating-point kernels accept F32 and F64, and F16/BF16 by computing in
//   float and rounding each result element once. Accumulations run in
//   double, so float32 results do not depend on summation order more than a
//   rounding.
// - Shapes and attributes are trusted (the verifier checked them); a fault
//   only the data can reveal (an index or label out of range) comes back as
//   a Status naming the kernel, never as a crash.
// - Negative axes are already normalized by the caller unless a parameter
//   says "signed".
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_KERNELS_H
#define PARPLAN_RUNTIME_KERNELS_H

#include "parplan/Runtime/Tensor.h"

#include <optional>

namespace parplan::runtime {

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

/// alpha * op(lhs) x op(rhs) with numpy's batching (nn.matmul); op swaps
/// an operand's last two dimensions where its flag is set (rank 2 or more).
Status matmul(const Tensor &lhs, const Tensor &rhs, Tensor &result,
              bool transposeLhs = false, bool transposeRhs = false,
              double alpha = 1.0);
Status gemm(const Tensor &a, const Tensor &b, const Tensor *c, double alpha,
            double beta, bool transA, bool transB, Tensor &result);
/// `pads`: the k begin paddings, then the k end paddings.
Status conv(const Tensor &input, const Tensor &weight, const Tensor *bias,
            const std::vector<int64_t> &strides,
            const std::vector<int64_t> &pads,
            const std::vector<int64_t> &dilations, int64_t group,
            Tensor &result);

enum class BinaryKind { Add, Sub, Mul, Div, Pow };
/// Multidirectional (numpy) broadcasting; integer element types too (Div
/// truncates toward zero; division by zero is an error).
Status binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs,
              Tensor &result);
Status where(const Tensor &condition, const Tensor &lhs, const Tensor &rhs,
             Tensor &result);
/// The uniform number in [0, 1) that decides whether dropout keeps element
/// `index` (row-major in the logical tensor) of the op `key` in micro-batch
/// `microBatch` of training step `step` under `seed`: SplitMix64
/// finalizers chained over the five, the top 53 bits as a fraction.
/// Depends on nothing else, so every layout and backend drops the same
/// elements.
double dropoutUniform(uint64_t seed, uint64_t step, uint64_t microBatch,
                      uint64_t key, uint64_t index);
/// nn.dropout's training form on a block of a logical tensor of
/// `logicalShape` starting at `offsets` (empty: the whole tensor):
/// `u >= ratio ? x / (1 - ratio) : 0`.
Status dropout(const Tensor &input, double ratio, int64_t step,
               int64_t microBatch, int64_t seed, int64_t key,
               const std::vector<int64_t> &logicalShape,
               const std::vector<int64_t> &offsets, Tensor &result);

enum class CompareKind { Equal, Less, Greater, And, Or };
/// An I1 result of two operands of one element type, broadcasting (And and
/// Or read I1 operands; floats compare as IEEE: NaN equals nothing).
Status compare(CompareKind kind, const Tensor &lhs, const Tensor &rhs,
               Tensor &result);
Status logicalNot(const Tensor &input, Tensor &result);

enum class UnaryKind {
  Relu,
  Tanh,
  Sqrt,
  Exp,
  Log,
  Sigmoid,
  Erf,
  HardSwish,
  LeakyRelu,   // alpha
  HardSigmoid, // alpha, beta
  GeluExact,
  GeluTanh
};
/// `alpha` and `beta` are used by the kinds that name them.
Status unary(UnaryKind kind, const Tensor &input, Tensor &result,
             double alpha = 0, double beta = 0);
Status clip(const Tensor &input, std::optional<double> min,
            std::optional<double> max, Tensor &result);
/// nn.top_k: the k largest (smallest) elements along `axis` and their
/// indices, first the largest (smallest), of equal ones the lower index;
/// k is `values`' extent along `axis`.
Status topK(const Tensor &input, int64_t axis, bool largest, Tensor &values,
            Tensor &indices);
/// nn.resize: `result`'s extents say the scales; `mode` ("nearest" or
/// "linear"), `coordinates` and `rounding` are the op's case names.
Status resize(const Tensor &input, const std::string &mode,
              const std::string &coordinates, const std::string &rounding,
              Tensor &result);
/// nn.resize_grad: `dy`'s elements added back to the elements of `dx` (the
/// forward input's shape) that nn.resize sampled, by the same weights.
Status resizeGrad(const Tensor &dy, const std::string &mode,
                  const std::string &coordinates, const std::string &rounding,
                  Tensor &dx);
/// Any element type to any other (floats round to nearest even; float to
/// integer truncates toward zero; anything non-zero becomes true).
Status cast(const Tensor &input, Tensor &result);

Status softmax(const Tensor &input, int64_t axis, Tensor &result);
Status logSoftmax(const Tensor &input, int64_t axis, Tensor &result);
/// Normalizes over dimensions [axis, rank); `bias` may be null.
Status layerNorm(const Tensor &input, const Tensor &scale, const Tensor *bias,
                 int64_t axis, double epsilon, Tensor &result);
/// Inference form, per-channel (dimension 1) statistics.
Status batchNorm(const Tensor &input, const Tensor &scale, const Tensor &bias,
                 const Tensor &mean, const Tensor &variance, double epsilon,
                 Tensor &result);

struct PoolWindow {
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
  bool countIncludePad = false;
};
Status maxPool(const Tensor &input, const PoolWindow &window, Tensor &result);
Status avgPool(const Tensor &input, const PoolWindow &window, Tensor &result);

/// Reshape is a copy of the bytes into the result's shape.
Status reshape(const Tensor &input, Tensor &result);
/// Numpy broadcasting of the input to the result's shape.
Status expand(const Tensor &input, Tensor &result);
Status transpose(const Tensor &input, const std::vector<int64_t> &perm,
                 Tensor &result);
Status concat(const std::vector<const Tensor *> &inputs, int64_t axis,
              Tensor &result);
Status split(const Tensor &input, int64_t axis,
             const std::vector<Tensor *> &results);
/// Full-rank form: per dimension, sizes[d] elements from starts[d] with step
/// steps[d] (non-zero, may be negative); sizes are the result's shape.
Status slice(const Tensor &input, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &steps, Tensor &result);
/// Indices (I32 or I64) may be negative (count from the end); one out of
/// range is an error.
Status gather(const Tensor &input, const Tensor &indices, int64_t axis,
              Tensor &result);

enum class ReduceOp { Sum, Mean };
/// `axes` normalized and sorted; an empty list reduces every dimension. The
/// result's shape (keepdims or not) holds the same elements in order.
Status reduce(ReduceOp op, const Tensor &input,
              const std::vector<int64_t> &axes, Tensor &result);

//===----------------------------------------------------------------------===//
// Backward ops: gradients with respect to an op's inputs
//===----------------------------------------------------------------------===//

/// d(activation)/dx times dy, for the activations whose gradient needs the
/// forward input: Relu, LeakyRelu, HardSigmoid, HardSwish, GeluExact,
/// GeluTanh (the other unary kinds are differentiated with elementwise ops).
Status unaryGrad(UnaryKind kind, const Tensor &dy, const Tensor &input,
                 Tensor &dx, double alpha = 0, double beta = 0);
/// dy where min <= x <= max (bounds that are absent do not clamp), else 0.
Status clipGrad(const Tensor &dy, const Tensor &input,
                std::optional<double> min, std::optional<double> max,
                Tensor &dx);
/// From the forward output y: softmax dx = y * (dy - sum(dy * y, axis));
/// log_softmax dx = dy - exp(y) * sum(dy, axis).
Status softmaxGrad(const Tensor &dy, const Tensor &output, int64_t axis,
                   Tensor &dx);
Status logSoftmaxGrad(const Tensor &dy, const Tensor &output, int64_t axis,
                      Tensor &dx);
/// Gradients of layer_norm with respect to input, scale and bias (the
/// latter two summed over the leading, unnormalized dimensions).
Status layerNormGrad(const Tensor &dy, const Tensor &input, const Tensor &scale,
                     int64_t axis, double epsilon, Tensor &dInput,
                     Tensor &dScale, Tensor &dBias);
/// The transposed convolution: d(conv)/d(input) applied to dy.
Status convGradInput(const Tensor &dy, const Tensor &weight,
                     const std::vector<int64_t> &strides,
                     const std::vector<int64_t> &pads,
                     const std::vector<int64_t> &dilations, int64_t group,
                     Tensor &dInput);
/// d(conv)/d(weight): the correlation of the input with dy.
Status convGradWeight(const Tensor &dy, const Tensor &input,
                      const std::vector<int64_t> &strides,
                      const std::vector<int64_t> &pads,
                      const std::vector<int64_t> &dilations, int64_t group,
                      Tensor &dWeight);
/// Each window's dy goes to the first maximal element of its window (the
/// element max_pool picked), summed where windows overlap.
Status maxPoolGrad(const Tensor &dy, const Tensor &input,
                   const PoolWindow &window, Tensor &dInput);
/// Each window's dy spread evenly over the window's divisor.
Status avgPoolGrad(const Tensor &dy, const PoolWindow &window, Tensor &dInput);
/// dInput is zero except at the sliced positions, which receive dy.
Status sliceGrad(const Tensor &dy, const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &steps, Tensor &dInput);
/// Scatter-add: dInput[.., indices[j..], ..] += dy[.., j.., ..].
Status gatherGrad(const Tensor &dy, const Tensor &indices, int64_t axis,
                  Tensor &dInput);

/// gather and gatherGrad on one device's block of a table split along
/// `axis` (vocabulary parallelism): the block holds the table's rows
/// [offset, offset + block rows) of `extent`. Indices name rows of the
/// whole table (negative ones count from its end); those outside the block
/// give zero rows (gather) or are skipped (gatherGrad), so the devices'
/// results add up to the whole gather.
Status gatherShard(const Tensor &block, const Tensor &indices, int64_t axis,
                   int64_t offset, int64_t extent, Tensor &result);
Status gatherGradShard(const Tensor &dy, const Tensor &indices, int64_t axis,
                       int64_t offset, int64_t extent, Tensor &dBlock);

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Per position: logsumexp(logits[i, :]) - logits[i, label[i]] over the
/// last (class) axis; labels (I32 or I64) have the logits' shape without its
/// last dimension. A label outside [0, classes) is an error.
Status softmaxCrossEntropy(const Tensor &logits, const Tensor &labels,
                           Tensor &losses);
/// dlogits[i, c] = dlosses[i] * (softmax(logits)[i, c] - (c == label[i])).
Status softmaxCrossEntropyGrad(const Tensor &dLosses, const Tensor &logits,
                               const Tensor &labels, Tensor &dLogits);

//===----------------------------------------------------------------------===//
// Optimizer updates (PyTorch's formulas; docs/training.md)
//===----------------------------------------------------------------------===//

/// g = grad / gradScale + weightDecay * param; param' = param - lr * g.
Status sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay, double gradScale, Tensor &newParam);
/// g as for SGD; v' = momentum * v + g; d = nesterov ? g + momentum * v' : v';
/// param' = param - lr * d.
Status momentumUpdate(const Tensor &param, const Tensor &grad,
                      const Tensor &velocity, double lr, double momentum,
                      double weightDecay, bool nesterov, double gradScale,
                      Tensor &newParam, Tensor &newVelocity);
struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double weightDecay = 0;
  /// AdamW: decay the weights (param *= 1 - lr * weightDecay) instead of
  /// adding weightDecay * param to the gradient.
  bool decoupled = false;
  double gradScale = 1;
};
/// `step` is a 0-d float tensor holding t >= 1 (this update's number):
/// m' = b1 m + (1 - b1) g; v' = b2 v + (1 - b2) g^2;
/// param' = param - lr * (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps).
Status adamUpdate(const Tensor &param, const Tensor &grad, const Tensor &m,
                  const Tensor &v, const Tensor &step,
                  const AdamOptions &options, Tensor &newParam, Tensor &newM,
                  Tensor &newV);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_KERNELS_H
