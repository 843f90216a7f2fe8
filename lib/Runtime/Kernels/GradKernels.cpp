//===- GradKernels.cpp - reference CPU kernels for training ---------------===//
//
// The backward ops, the losses and the optimizer updates of Kernels.h. Every
// kernel computes in double whatever the storage type and rounds each result
// element once when it stores it. Elementwise kernels and the row-wise ones
// (softmax, layer_norm, cross-entropy, gather, pooling) stream through their
// tensors a block, a row or a plane at a time, so their working memory does
// not grow with the tensor: an optimizer step over a large parameter must
// not need several double copies of it. The convolution gradients load
// whole tensors; they are references, not fast paths.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"

#include "parplan/Runtime/Kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace parplan::runtime {
using detail::AxisSplit;
using detail::splitAt;

namespace {

//===----------------------------------------------------------------------===//
// Element access and preconditions
//===----------------------------------------------------------------------===//

/// Elementwise kernels load and store this many elements at a time.
constexpr int64_t kBlock = 4096;

/// Elements [begin, begin + count) of a float tensor, widened to double.
void load(const Tensor &tensor, int64_t begin, int64_t count, double *out) {
  if (count <= 0)
    return; // Empty tensors may have no storage at all.
  switch (tensor.dtype()) {
  case DType::F32: {
    const float *in = tensor.data<float>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = in[i];
    return;
  }
  case DType::F64:
    std::memcpy(out, tensor.data<double>() + begin, count * sizeof(double));
    return;
  case DType::F16: {
    const uint16_t *in = tensor.data<uint16_t>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = halfToFloat(in[i]);
    return;
  }
  case DType::BF16: {
    const uint16_t *in = tensor.data<uint16_t>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = bfloat16ToFloat(in[i]);
    return;
  }
  default:
    // Callers check for float types first; this keeps integers correct
    // should one slip through.
    for (int64_t i = 0; i < count; ++i)
      out[i] = tensor.get(begin + i);
    return;
  }
}

/// Rounds doubles into elements [begin, begin + count). 16-bit floats go
/// through Tensor::set, whose round-to-odd step makes the trip through float
/// a single rounding, as the forward kernels store them.
void store(Tensor &tensor, int64_t begin, int64_t count, const double *in) {
  if (count <= 0)
    return;
  switch (tensor.dtype()) {
  case DType::F32: {
    float *out = tensor.data<float>() + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<float>(in[i]);
    return;
  }
  case DType::F64:
    std::memcpy(tensor.data<double>() + begin, in, count * sizeof(double));
    return;
  default:
    for (int64_t i = 0; i < count; ++i)
      tensor.set(begin + i, in[i]);
    return;
  }
}

std::vector<double> loadAll(const Tensor &tensor) {
  std::vector<double> values(tensor.numElements());
  load(tensor, 0, tensor.numElements(), values.data());
  return values;
}

void storeAll(Tensor &tensor, const std::vector<double> &values) {
  store(tensor, 0, tensor.numElements(), values.data());
}

/// Streams elementwise kernels: fn maps the inputs' element values to the
/// outputs' (all tensors have as many elements). A block is loaded whole
/// before any of it is stored, so an output may be one of the inputs (an
/// optimizer updating its state in place).
template <size_t NumIn, size_t NumOut, typename Fn>
void mapElements(const std::array<const Tensor *, NumIn> &inputs,
                 const std::array<Tensor *, NumOut> &outputs, Fn fn) {
  int64_t total = outputs[0]->numElements();
  std::vector<double> buffer((NumIn + NumOut) * kBlock);
  std::array<double, NumIn> in;
  for (int64_t begin = 0; begin < total; begin += kBlock) {
    int64_t count = std::min(kBlock, total - begin);
    for (size_t k = 0; k < NumIn; ++k)
      load(*inputs[k], begin, count, buffer.data() + k * kBlock);
    for (int64_t i = 0; i < count; ++i) {
      for (size_t k = 0; k < NumIn; ++k)
        in[k] = buffer[k * kBlock + i];
      std::array<double, NumOut> out = fn(in);
      for (size_t k = 0; k < NumOut; ++k)
        buffer[(NumIn + k) * kBlock + i] = out[k];
    }
    for (size_t k = 0; k < NumOut; ++k)
      store(*outputs[k], begin, count, buffer.data() + (NumIn + k) * kBlock);
  }
}

/// Advances a row-major multi-index; returns false after the last one.
bool advance(std::vector<int64_t> &index, const Shape &shape) {
  for (size_t d = index.size(); d-- > 0;) {
    if (++index[d] < shape[d])
      return true;
    index[d] = 0;
  }
  return false;
}

/// "[1, 2]": the multi-index of flat element `flat` of `shape`, for errors
/// that name a position.
std::string positionOf(int64_t flat, const Shape &shape) {
  Shape index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return toString(index);
}

/// The preconditions a kernel checks before touching memory: the first one
/// that fails becomes the kernel's Status. Shapes are trusted (the verifier
/// checked them), but a mismatch that would index out of bounds is cheaper
/// to report than to debug.
class Checks {
public:
  explicit Checks(const char *kernel) : kernel(kernel) {}

  Checks &isFloat(const char *name, const Tensor &tensor) {
    if (!runtime::isFloat(tensor.dtype()))
      fail(std::string(name) + " has element type " + toString(tensor.dtype()) +
           ", not a float type");
    return *this;
  }
  Checks &isIndex(const char *name, const Tensor &tensor) {
    if (tensor.dtype() != DType::I32 && tensor.dtype() != DType::I64)
      fail(std::string(name) + " has element type " + toString(tensor.dtype()) +
           ", expected i32 or i64");
    return *this;
  }
  Checks &hasShape(const char *name, const Tensor &tensor, const Shape &shape) {
    if (tensor.shape() != shape)
      fail(std::string(name) + " has shape " + toString(tensor.shape()) +
           ", expected " + toString(shape));
    return *this;
  }
  Checks &that(bool condition, const std::string &message) {
    if (!condition)
      fail(message);
    return *this;
  }
  Status status() const {
    return error.empty() ? Status::success()
                         : Status::failure(std::string(kernel) + ": " + error);
  }

private:
  void fail(const std::string &message) {
    if (error.empty())
      error = message;
  }
  const char *kernel;
  std::string error;
};

//===----------------------------------------------------------------------===//
// Windows of convolutions and pools
//===----------------------------------------------------------------------===//

/// The windows of a convolution over the spatial dimensions of
/// [N, C, D1..Dk]: for each output position o and kernel offset j (both
/// flat, row-major), the flat spatial input position the window reads, or -1
/// where it reads padding. The table is O*K entries: small next to the
/// tensors for the window sizes networks use, and it lets the scatter loops
/// below ignore the geometry.
struct WindowTable {
  int64_t inSize = 1, outSize = 1, kernelSize = 1;
  std::vector<int64_t> position;

  int64_t at(int64_t out, int64_t offset) const {
    return position[out * kernelSize + offset];
  }
};

WindowTable makeWindowTable(const Shape &inSpatial, const Shape &outSpatial,
                            const Shape &kernel,
                            const std::vector<int64_t> &strides,
                            const std::vector<int64_t> &pads,
                            const std::vector<int64_t> &dilations) {
  size_t k = inSpatial.size();
  WindowTable table;
  table.inSize = numElements(inSpatial);
  table.outSize = numElements(outSpatial);
  table.kernelSize = numElements(kernel);
  table.position.assign(table.outSize * table.kernelSize, -1);
  if (table.position.empty())
    return table;
  std::vector<int64_t> out(k, 0), offset(k, 0);
  for (int64_t o = 0; o < table.outSize; ++o, advance(out, outSpatial)) {
    std::fill(offset.begin(), offset.end(), 0);
    for (int64_t j = 0; j < table.kernelSize; ++j, advance(offset, kernel)) {
      int64_t flat = 0;
      bool inside = true;
      for (size_t d = 0; d < k && inside; ++d) {
        int64_t p = out[d] * strides[d] - pads[d] + offset[d] * dilations[d];
        inside = p >= 0 && p < inSpatial[d];
        flat = flat * inSpatial[d] + p;
      }
      if (inside)
        table.position[o * table.kernelSize + j] = flat;
    }
  }
  return table;
}

/// Checks the window attributes and the spatial extents of a windowed op
/// from `in` [N, C, D1..Dk] to `out` [N, M, O1..Ok].
void checkWindow(Checks &checks, const Shape &in, const Shape &out,
                 const Shape &kernel, const std::vector<int64_t> &strides,
                 const std::vector<int64_t> &pads,
                 const std::vector<int64_t> &dilations, bool ceilMode) {
  size_t k = kernel.size();
  checks.that(in.size() == k + 2 && out.size() == k + 2,
              "expected [N, C] and " + std::to_string(k) +
                  " spatial dimensions, got " + toString(in) + " and " +
                  toString(out));
  checks.that(strides.size() == k && dilations.size() == k &&
                  pads.size() == 2 * k,
              "expected " + std::to_string(k) + " strides and dilations and " +
                  std::to_string(2 * k) + " pads");
  if (!checks.status().ok())
    return;
  checks.that(in[0] == out[0],
              "batch sizes differ: " + toString(in) + " and " + toString(out));
  for (size_t d = 0; d < k; ++d) {
    checks.that(strides[d] >= 1 && dilations[d] >= 1 && pads[d] >= 0 &&
                    pads[k + d] >= 0 && kernel[d] >= 1,
                "window attributes out of range in spatial dimension " +
                    std::to_string(d));
    if (!checks.status().ok())
      return;
    int64_t extent =
        detail::slidingOutputSize(in[2 + d], kernel[d], strides[d], pads[d],
                                  pads[k + d], dilations[d], ceilMode);
    checks.that(extent == out[2 + d],
                "spatial dimension " + std::to_string(d) + " of " +
                    toString(out) + " should be " + std::to_string(extent) +
                    " for input " + toString(in));
  }
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

const char *unaryName(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Relu:
    return "Relu";
  case UnaryKind::Tanh:
    return "Tanh";
  case UnaryKind::Sqrt:
    return "Sqrt";
  case UnaryKind::Exp:
    return "Exp";
  case UnaryKind::Log:
    return "Log";
  case UnaryKind::Sigmoid:
    return "Sigmoid";
  case UnaryKind::Erf:
    return "Erf";
  case UnaryKind::HardSwish:
    return "HardSwish";
  case UnaryKind::LeakyRelu:
    return "LeakyRelu";
  case UnaryKind::HardSigmoid:
    return "HardSigmoid";
  case UnaryKind::GeluExact:
    return "GeluExact";
  case UnaryKind::GeluTanh:
    return "GeluTanh";
  }
  return "unknown";
}

/// dx for one element. The piecewise kinds select dy or 0 rather than
/// multiply by a 0/1 derivative, so an infinite dy in a flat region still
/// gives 0 (PyTorch's threshold_backward does the same).
double activationGrad(UnaryKind kind, double dy, double x, double alpha,
                      double beta) {
  constexpr double kSqrt2 = 1.4142135623730951;
  constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2 pi)
  constexpr double kSqrt2OverPi = 0.7978845608028654; // sqrt(2 / pi)
  constexpr double kGeluCubic = 0.044715;
  switch (kind) {
  case UnaryKind::Relu:
    return x > 0 ? dy : 0.0;
  case UnaryKind::LeakyRelu:
    return x >= 0 ? dy : alpha * dy;
  case UnaryKind::HardSigmoid: {
    double t = alpha * x + beta;
    return t > 0 && t < 1 ? alpha * dy : 0.0;
  }
  case UnaryKind::HardSwish:
    if (x < -3)
      return 0.0;
    if (x > 3)
      return dy;
    return dy * (x / 3 + 0.5);
  case UnaryKind::GeluExact: {
    // erfc keeps Phi accurate in the left tail, where 1 + erf cancels.
    double cdf = 0.5 * std::erfc(-x / kSqrt2);
    double pdf = kInvSqrt2Pi * std::exp(-0.5 * x * x);
    return dy * (cdf + x * pdf);
  }
  case UnaryKind::GeluTanh: {
    double u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    double t = std::tanh(u);
    double du = kSqrt2OverPi * (1 + 3 * kGeluCubic * x * x);
    return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du);
  }
  default:
    return 0.0;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

Status unaryGrad(UnaryKind kind, const Tensor &dy, const Tensor &input,
                 Tensor &dx, double alpha, double beta) {
  switch (kind) {
  case UnaryKind::Tanh:
  case UnaryKind::Sqrt:
  case UnaryKind::Exp:
  case UnaryKind::Log:
  case UnaryKind::Sigmoid:
  case UnaryKind::Erf:
    return Status::failure(std::string("unaryGrad: ") + unaryName(kind) +
                           " is differentiated by elementwise ops, not by "
                           "unaryGrad");
  default:
    break;
  }
  Status status = Checks("unaryGrad")
                      .isFloat("dy", dy)
                      .isFloat("input", input)
                      .isFloat("dx", dx)
                      .hasShape("input", input, dy.shape())
                      .hasShape("dx", dx, dy.shape())
                      .status();
  if (!status.ok())
    return status;
  mapElements<2, 1>({&dy, &input}, {&dx}, [&](const std::array<double, 2> &v) {
    return std::array<double, 1>{activationGrad(kind, v[0], v[1], alpha, beta)};
  });
  return Status::success();
}

Status clipGrad(const Tensor &dy, const Tensor &input,
                std::optional<double> min, std::optional<double> max,
                Tensor &dx) {
  Status status = Checks("clipGrad")
                      .isFloat("dy", dy)
                      .isFloat("input", input)
                      .isFloat("dx", dx)
                      .hasShape("input", input, dy.shape())
                      .hasShape("dx", dx, dy.shape())
                      .status();
  if (!status.ok())
    return status;
  mapElements<2, 1>({&dy, &input}, {&dx}, [&](const std::array<double, 2> &v) {
    bool passes = (!min || v[1] >= *min) && (!max || v[1] <= *max);
    return std::array<double, 1>{passes ? v[0] : 0.0};
  });
  return Status::success();
}

namespace {

/// The softmax gradients, one contiguous [size, inner] slab of an outer
/// index at a time: the sums run along the axis, at stride `inner`.
Status softmaxGradImpl(const char *kernel, bool isLog, const Tensor &dy,
                       const Tensor &output, int64_t axis, Tensor &dx) {
  // Signed, as the forward kernels accept it.
  axis = detail::normalizeAxis(axis, dy.rank());
  Status status =
      Checks(kernel)
          .isFloat("dy", dy)
          .isFloat("output", output)
          .isFloat("dx", dx)
          .hasShape("output", output, dy.shape())
          .hasShape("dx", dx, dy.shape())
          .that(axis >= 0 && axis < dy.rank(), "axis " + std::to_string(axis) +
                                                   " out of range for rank " +
                                                   std::to_string(dy.rank()))
          .status();
  if (!status.ok())
    return status;
  AxisSplit split = splitAt(dy.shape(), axis);
  int64_t slab = split.size * split.inner;
  std::vector<double> g(slab), y(slab), sums(split.inner);
  for (int64_t o = 0; o < split.outer; ++o) {
    load(dy, o * slab, slab, g.data());
    load(output, o * slab, slab, y.data());
    std::fill(sums.begin(), sums.end(), 0.0);
    for (int64_t a = 0; a < split.size; ++a)
      for (int64_t i = 0; i < split.inner; ++i) {
        int64_t e = a * split.inner + i;
        sums[i] += isLog ? g[e] : g[e] * y[e];
      }
    for (int64_t a = 0; a < split.size; ++a)
      for (int64_t i = 0; i < split.inner; ++i) {
        int64_t e = a * split.inner + i;
        g[e] =
            isLog ? g[e] - std::exp(y[e]) * sums[i] : y[e] * (g[e] - sums[i]);
      }
    store(dx, o * slab, slab, g.data());
  }
  return Status::success();
}

} // namespace

Status softmaxGrad(const Tensor &dy, const Tensor &output, int64_t axis,
                   Tensor &dx) {
  return softmaxGradImpl("softmaxGrad", /*isLog=*/false, dy, output, axis, dx);
}

Status logSoftmaxGrad(const Tensor &dy, const Tensor &output, int64_t axis,
                      Tensor &dx) {
  return softmaxGradImpl("logSoftmaxGrad", /*isLog=*/true, dy, output, axis,
                         dx);
}

Status layerNormGrad(const Tensor &dy, const Tensor &input, const Tensor &scale,
                     int64_t axis, double epsilon, Tensor &dInput,
                     Tensor &dScale, Tensor &dBias) {
  axis = detail::normalizeAxis(axis, input.rank());
  Checks checks("layerNormGrad");
  checks.isFloat("dy", dy)
      .isFloat("input", input)
      .isFloat("scale", scale)
      .isFloat("dInput", dInput)
      .isFloat("dScale", dScale)
      .isFloat("dBias", dBias)
      .hasShape("dy", dy, input.shape())
      .hasShape("dInput", dInput, input.shape())
      .that(axis >= 0 && axis < input.rank(), "axis " + std::to_string(axis) +
                                                  " out of range for rank " +
                                                  std::to_string(input.rank()));
  if (!checks.status().ok())
    return checks.status();
  Shape normalized(input.shape().begin() + axis, input.shape().end());
  checks
      .that(detail::broadcastsTo(scale.shape(), normalized),
            "scale " + toString(scale.shape()) + " does not broadcast to " +
                toString(normalized))
      .that(detail::broadcastsTo(dScale.shape(), normalized) &&
                detail::broadcastsTo(dBias.shape(), normalized),
            "dScale " + toString(dScale.shape()) + " and dBias " +
                toString(dBias.shape()) + " must broadcast to " +
                toString(normalized));
  if (!checks.status().ok())
    return checks.status();

  int64_t cols = numElements(normalized);
  int64_t rows = cols == 0 ? 0 : input.numElements() / cols;
  // The forward broadcasts scale over the normalized shape; spell it out.
  std::vector<double> ownScale = loadAll(scale), gamma(cols);
  detail::walkStrided<1>(normalized,
                         {detail::broadcastStrides(scale.shape(), normalized)},
                         [&](int64_t i, const std::array<int64_t, 1> &offsets) {
                           gamma[i] = ownScale[offsets[0]];
                         });
  std::vector<double> x(cols), g(cols), xhat(cols), gradScale(cols, 0.0),
      gradBias(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    load(input, r * cols, cols, x.data());
    load(dy, r * cols, cols, g.data());
    double mean = 0;
    for (double v : x)
      mean += v;
    mean /= cols;
    double variance = 0;
    for (double v : x)
      variance += (v - mean) * (v - mean);
    variance /= cols;
    double rstd = 1 / std::sqrt(variance + epsilon);
    // With gs = dy * scale, dx = rstd * (gs - mean(gs) - xhat * mean(gs *
    // xhat)): the two means are the gradient through mean and variance.
    double meanG = 0, meanGX = 0;
    for (int64_t j = 0; j < cols; ++j) {
      xhat[j] = (x[j] - mean) * rstd;
      gradScale[j] += g[j] * xhat[j];
      gradBias[j] += g[j];
      g[j] *= gamma[j];
      meanG += g[j];
      meanGX += g[j] * xhat[j];
    }
    meanG /= cols;
    meanGX /= cols;
    for (int64_t j = 0; j < cols; ++j)
      g[j] = rstd * (g[j] - meanG - xhat[j] * meanGX);
    store(dInput, r * cols, cols, g.data());
  }
  // dScale and dBias have the scale's type (the normalized shape, or one
  // that broadcasts to it), so sum over what the forward broadcast.
  auto reduceInto = [&](const std::vector<double> &full, Tensor &result) {
    std::vector<double> own(result.numElements(), 0.0);
    detail::walkStrided<1>(
        normalized, {detail::broadcastStrides(result.shape(), normalized)},
        [&](int64_t i, const std::array<int64_t, 1> &offsets) {
          own[offsets[0]] += full[i];
        });
    storeAll(result, own);
  };
  reduceInto(gradScale, dScale);
  reduceInto(gradBias, dBias);
  return Status::success();
}

namespace {

/// Checks shared by the two convolution gradients, on the forward shapes:
/// input [N, C, D..], weight [M, C / group, K..], dy [N, M, O..].
Status checkConv(const char *kernel, const Shape &input, const Shape &weight,
                 const Shape &dy, const PoolWindow &window, int64_t group) {
  Checks checks(kernel);
  checks.that(weight.size() >= 2 && input.size() == weight.size() &&
                  dy.size() == weight.size(),
              "input " + toString(input) + ", weight " + toString(weight) +
                  " and dy " + toString(dy) + " must have one rank >= 2");
  if (!checks.status().ok())
    return checks.status();
  checks.that(group >= 1 && weight[0] % group == 0 &&
                  input[1] == weight[1] * group && dy[1] == weight[0],
              "channels of input " + toString(input) + ", weight " +
                  toString(weight) + " and dy " + toString(dy) +
                  " do not match group " + std::to_string(group));
  checkWindow(checks, input, dy, window.kernel, window.strides, window.pads,
              window.dilations, /*ceilMode=*/false);
  return checks.status();
}

/// A convolution's window with absent strides, dilations and pads filled
/// as ONNX defaults them (1, 1 and 0), like a pooling window's.
PoolWindow convWindow(const Shape &weight, const std::vector<int64_t> &strides,
                      const std::vector<int64_t> &pads,
                      const std::vector<int64_t> &dilations) {
  PoolWindow window;
  if (weight.size() >= 2)
    window.kernel.assign(weight.begin() + 2, weight.end());
  window.strides = strides;
  window.pads = pads;
  window.dilations = dilations;
  return detail::completePoolWindow(window, window.kernel.size());
}

WindowTable convTable(const Shape &input, const Shape &dy,
                      const PoolWindow &window) {
  return makeWindowTable(detail::spatialShape(input), detail::spatialShape(dy),
                         window.kernel, window.strides, window.pads,
                         window.dilations);
}

/// What both convolution gradients start with: float operands, shapes that
/// fit a convolution of `input` by `weight` giving dy, and the window table.
Status prepareConvGrad(const char *kernel, const Tensor &dy,
                       const Tensor &other, const char *otherName,
                       const Tensor &result, const char *resultName,
                       const Shape &input, const Shape &weight,
                       const std::vector<int64_t> &strides,
                       const std::vector<int64_t> &pads,
                       const std::vector<int64_t> &dilations, int64_t group,
                       WindowTable &table) {
  Status status = Checks(kernel)
                      .isFloat("dy", dy)
                      .isFloat(otherName, other)
                      .isFloat(resultName, result)
                      .status();
  PoolWindow window = convWindow(weight, strides, pads, dilations);
  if (status.ok())
    status = checkConv(kernel, input, weight, dy.shape(), window, group);
  if (!status.ok())
    return status;
  table = convTable(input, dy.shape(), window);
  return Status::success();
}

} // namespace

Status convGradInput(const Tensor &dy, const Tensor &weight,
                     const std::vector<int64_t> &strides,
                     const std::vector<int64_t> &pads,
                     const std::vector<int64_t> &dilations, int64_t group,
                     Tensor &dInput) {
  WindowTable table;
  if (Status status =
          prepareConvGrad("convGradInput", dy, weight, "weight", dInput,
                          "dInput", dInput.shape(), weight.shape(), strides,
                          pads, dilations, group, table);
      !status.ok())
    return status;
  int64_t batch = dInput.shape()[0], channels = dInput.shape()[1];
  int64_t filters = weight.shape()[0], perGroup = weight.shape()[1];
  int64_t filtersPerGroup = filters / group;
  std::vector<double> g = loadAll(dy), w = loadAll(weight);
  std::vector<double> plane(table.inSize);
  // Each input plane gathers from the filters of its group: the transposed
  // convolution scatters every dy element back through its window.
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      std::fill(plane.begin(), plane.end(), 0.0);
      int64_t firstFilter = c / perGroup * filtersPerGroup;
      for (int64_t m = firstFilter; m < firstFilter + filtersPerGroup; ++m) {
        const double *kernel =
            w.data() + (m * perGroup + c % perGroup) * table.kernelSize;
        const double *grad = g.data() + (n * filters + m) * table.outSize;
        for (int64_t o = 0; o < table.outSize; ++o)
          for (int64_t j = 0; j < table.kernelSize; ++j) {
            int64_t p = table.at(o, j);
            if (p >= 0)
              plane[p] += grad[o] * kernel[j];
          }
      }
      store(dInput, (n * channels + c) * table.inSize, table.inSize,
            plane.data());
    }
  return Status::success();
}

Status convGradWeight(const Tensor &dy, const Tensor &input,
                      const std::vector<int64_t> &strides,
                      const std::vector<int64_t> &pads,
                      const std::vector<int64_t> &dilations, int64_t group,
                      Tensor &dWeight) {
  WindowTable table;
  if (Status status =
          prepareConvGrad("convGradWeight", dy, input, "input", dWeight,
                          "dWeight", input.shape(), dWeight.shape(), strides,
                          pads, dilations, group, table);
      !status.ok())
    return status;
  int64_t batch = input.shape()[0], channels = input.shape()[1];
  int64_t filters = dWeight.shape()[0], perGroup = dWeight.shape()[1];
  int64_t filtersPerGroup = filters / group;
  std::vector<double> g = loadAll(dy), x = loadAll(input);
  std::vector<double> kernel(table.kernelSize);
  for (int64_t m = 0; m < filters; ++m)
    for (int64_t cl = 0; cl < perGroup; ++cl) {
      std::fill(kernel.begin(), kernel.end(), 0.0);
      int64_t c = m / filtersPerGroup * perGroup + cl;
      for (int64_t n = 0; n < batch; ++n) {
        const double *plane = x.data() + (n * channels + c) * table.inSize;
        const double *grad = g.data() + (n * filters + m) * table.outSize;
        for (int64_t o = 0; o < table.outSize; ++o)
          for (int64_t j = 0; j < table.kernelSize; ++j) {
            int64_t p = table.at(o, j);
            if (p >= 0)
              kernel[j] += grad[o] * plane[p];
          }
      }
      store(dWeight, (m * perGroup + cl) * table.kernelSize, table.kernelSize,
            kernel.data());
    }
  return Status::success();
}

namespace {

/// Checks a pooling from `input` to `dy` with `window` already completed
/// (detail::completePoolWindow: absent strides, pads and dilations filled).
Status checkPool(const char *kernel, const Shape &input, const Shape &dy,
                 const PoolWindow &window) {
  Checks checks(kernel);
  checkWindow(checks, input, dy, window.kernel, window.strides, window.pads,
              window.dilations, window.ceilMode);
  if (checks.status().ok())
    checks.that(input[1] == dy[1],
                "channels differ: " + toString(input) + " and " + toString(dy));
  return checks.status();
}

/// The pooling windows as the forward kernels walk them (KernelSupport.h),
/// so both pick the same maximum and the same divisor: the in-plane
/// offsets of each window's in-bounds elements, flattened with their start
/// per output position, and each window's divisor.
struct PoolGeometry {
  std::vector<int64_t> begin, offsets;
  std::vector<double> divisor;
};

PoolGeometry poolGeometry(const PoolWindow &window, const Shape &input,
                          const Shape &dy) {
  PoolGeometry geometry;
  geometry.begin.push_back(0);
  detail::forEachPoolWindow(
      window, detail::spatialShape(input), detail::spatialShape(dy),
      [&](int64_t, const detail::PoolWindowElements &elements) {
        geometry.offsets.insert(geometry.offsets.end(),
                                elements.offsets.begin(),
                                elements.offsets.end());
        geometry.begin.push_back(static_cast<int64_t>(geometry.offsets.size()));
        geometry.divisor.push_back(static_cast<double>(
            window.countIncludePad
                ? elements.paddedCount
                : static_cast<int64_t>(elements.offsets.size())));
      });
  return geometry;
}

} // namespace

Status maxPoolGrad(const Tensor &dy, const Tensor &input,
                   const PoolWindow &window, Tensor &dInput) {
  PoolWindow full = detail::completePoolWindow(window, window.kernel.size());
  Status status = Checks("maxPoolGrad")
                      .isFloat("dy", dy)
                      .isFloat("input", input)
                      .isFloat("dInput", dInput)
                      .hasShape("dInput", dInput, input.shape())
                      .status();
  if (status.ok())
    status = checkPool("maxPoolGrad", input.shape(), dy.shape(), full);
  if (!status.ok())
    return status;
  PoolGeometry geometry = poolGeometry(full, input.shape(), dy.shape());
  int64_t inSize = numElements(detail::spatialShape(input.shape()));
  int64_t outSize = numElements(detail::spatialShape(dy.shape()));
  int64_t planes = input.shape()[0] * input.shape()[1];
  std::vector<double> x(inSize), g(outSize), plane(inSize);
  for (int64_t q = 0; q < planes; ++q) {
    load(input, q * inSize, inSize, x.data());
    load(dy, q * outSize, outSize, g.data());
    std::fill(plane.begin(), plane.end(), 0.0);
    for (int64_t o = 0; o < outSize; ++o) {
      // The element max_pool's scan picks: the first maximum in row-major
      // window order, padding excluded, or the first NaN, which the forward
      // propagates.
      int64_t best = -1;
      for (int64_t e = geometry.begin[o]; e < geometry.begin[o + 1]; ++e) {
        int64_t p = geometry.offsets[e];
        if (std::isnan(x[p])) {
          best = p;
          break;
        }
        if (best < 0 || x[p] > x[best])
          best = p;
      }
      if (best >= 0)
        plane[best] += g[o];
    }
    store(dInput, q * inSize, inSize, plane.data());
  }
  return Status::success();
}

Status avgPoolGrad(const Tensor &dy, const PoolWindow &window, Tensor &dInput) {
  PoolWindow full = detail::completePoolWindow(window, window.kernel.size());
  Status status = Checks("avgPoolGrad")
                      .isFloat("dy", dy)
                      .isFloat("dInput", dInput)
                      .status();
  if (status.ok())
    status = checkPool("avgPoolGrad", dInput.shape(), dy.shape(), full);
  if (!status.ok())
    return status;
  PoolGeometry geometry = poolGeometry(full, dInput.shape(), dy.shape());
  int64_t inSize = numElements(detail::spatialShape(dInput.shape()));
  int64_t outSize = numElements(detail::spatialShape(dy.shape()));
  int64_t planes = dInput.shape()[0] * dInput.shape()[1];
  std::vector<double> g(outSize), plane(inSize);
  for (int64_t q = 0; q < planes; ++q) {
    load(dy, q * outSize, outSize, g.data());
    std::fill(plane.begin(), plane.end(), 0.0);
    for (int64_t o = 0; o < outSize; ++o) {
      // A window of padding only read nothing and passes nothing back.
      if (geometry.divisor[o] == 0)
        continue;
      double share = g[o] / geometry.divisor[o];
      for (int64_t e = geometry.begin[o]; e < geometry.begin[o + 1]; ++e)
        plane[geometry.offsets[e]] += share;
    }
    store(dInput, q * inSize, inSize, plane.data());
  }
  return Status::success();
}

Status sliceGrad(const Tensor &dy, const std::vector<int64_t> &starts,
                 const std::vector<int64_t> &steps, Tensor &dInput) {
  size_t rank = dInput.shape().size();
  Checks checks("sliceGrad");
  checks
      .that(dy.dtype() == dInput.dtype(),
            std::string("dy is ") + toString(dy.dtype()) + " but dInput is " +
                toString(dInput.dtype()))
      .that(dy.shape().size() == rank && starts.size() == rank &&
                steps.size() == rank,
            "dy " + toString(dy.shape()) +
                ", starts and steps must have "
                "the rank of dInput " +
                toString(dInput.shape()));
  if (!checks.status().ok())
    return checks.status();
  const Shape &full = dInput.shape(), &sizes = dy.shape();
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] == 0)
      continue;
    int64_t last = starts[d] + (sizes[d] - 1) * steps[d];
    checks.that(steps[d] != 0 && starts[d] >= 0 && starts[d] < full[d] &&
                    last >= 0 && last < full[d],
                "dimension " + std::to_string(d) + ": " +
                    std::to_string(sizes[d]) + " elements from " +
                    std::to_string(starts[d]) + " with step " +
                    std::to_string(steps[d]) + " leave [0, " +
                    std::to_string(full[d]) + ")");
  }
  if (!checks.status().ok())
    return checks.status();

  // A slice's gradient moves elements without arithmetic, so it copies
  // bytes: exact for every element type. Distinct dy elements land on
  // distinct positions, hence no accumulation.
  if (dInput.byteSize() != 0)
    std::memset(dInput.bytes(), 0, dInput.byteSize());
  if (dy.numElements() == 0)
    return Status::success();
  size_t width = byteWidth(dy.dtype());
  std::vector<int64_t> strides(rank, 1), index(rank, 0);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * full[d];
  int64_t e = 0;
  do {
    int64_t target = 0;
    for (size_t d = 0; d < rank; ++d)
      target += (starts[d] + index[d] * steps[d]) * strides[d];
    std::memcpy(dInput.bytes() + target * width, dy.bytes() + e * width, width);
    ++e;
  } while (advance(index, sizes));
  return Status::success();
}

Status gatherGrad(const Tensor &dy, const Tensor &indices, int64_t axis,
                  Tensor &dInput) {
  Checks checks("gatherGrad");
  checks.isFloat("dy", dy)
      .isFloat("dInput", dInput)
      .isIndex("indices", indices)
      .that(axis >= -dInput.rank() && axis < dInput.rank(),
            "axis " + std::to_string(axis) + " out of range for rank " +
                std::to_string(dInput.rank()));
  if (!checks.status().ok())
    return checks.status();
  if (axis < 0)
    axis += dInput.rank();
  const Shape &full = dInput.shape();
  Shape expected(full.begin(), full.begin() + axis);
  expected.insert(expected.end(), indices.shape().begin(),
                  indices.shape().end());
  expected.insert(expected.end(), full.begin() + axis + 1, full.end());
  checks.hasShape("dy", dy, expected);
  if (!checks.status().ok())
    return checks.status();

  // Group the index positions by the row they name (a counting sort that
  // keeps each row's positions in order), so every dInput row is summed
  // once, in double, and written once: no dInput-sized double buffer, which
  // for an embedding table would be as large as the table again.
  AxisSplit split = splitAt(full, axis);
  int64_t count = indices.numElements();
  std::vector<int64_t> rowOf(count), begin(split.size + 1, 0);
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = detail::indexAt(indices, j);
    int64_t row = index < 0 ? index + split.size : index;
    if (row < 0 || row >= split.size)
      return Status::failure(
          "gatherGrad: index " + std::to_string(index) + " at position " +
          positionOf(j, indices.shape()) + " is out of range for axis " +
          std::to_string(axis) + " of size " + std::to_string(split.size));
    rowOf[j] = row;
    ++begin[row + 1];
  }
  for (int64_t a = 0; a < split.size; ++a)
    begin[a + 1] += begin[a];
  std::vector<int64_t> order(count), fill(begin.begin(), begin.end() - 1);
  for (int64_t j = 0; j < count; ++j)
    order[fill[rowOf[j]]++] = j;

  std::vector<double> sum(split.inner), row(split.inner);
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t a = 0; a < split.size; ++a) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t k = begin[a]; k < begin[a + 1]; ++k) {
        load(dy, (o * count + order[k]) * split.inner, split.inner, row.data());
        for (int64_t i = 0; i < split.inner; ++i)
          sum[i] += row[i];
      }
      store(dInput, (o * split.size + a) * split.inner, split.inner,
            sum.data());
    }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

namespace {

/// Checks shapes and every label before any output is written, so a bad
/// label leaves the outputs as they were.
Status checkCrossEntropy(const char *kernel, const Tensor &logits,
                         const Tensor &labels, const Tensor &perPosition,
                         const char *perPositionName, const Tensor *dLogits) {
  Checks checks(kernel);
  checks.isFloat("logits", logits)
      .isFloat(perPositionName, perPosition)
      .isIndex("labels", labels)
      .that(logits.rank() >= 1, "logits must have a class dimension");
  if (dLogits)
    checks.isFloat("dLogits", *dLogits)
        .hasShape("dLogits", *dLogits, logits.shape());
  if (!checks.status().ok())
    return checks.status();
  Shape positions(logits.shape().begin(), logits.shape().end() - 1);
  checks.hasShape("labels", labels, positions)
      .hasShape(perPositionName, perPosition, positions);
  if (!checks.status().ok())
    return checks.status();
  int64_t classes = logits.shape().back();
  for (int64_t i = 0; i < labels.numElements(); ++i) {
    int64_t label = detail::indexAt(labels, i);
    if (label < 0 || label >= classes)
      return Status::failure(std::string(kernel) + ": label " +
                             std::to_string(label) + " at position " +
                             positionOf(i, positions) + " is outside [0, " +
                             std::to_string(classes) + ")");
  }
  return Status::success();
}

/// Turns a row of logits into its softmax in place; returns logsumexp.
double softmaxRow(std::vector<double> &row) {
  double max = -std::numeric_limits<double>::infinity();
  for (double v : row)
    max = std::max(max, v);
  double sum = 0;
  for (double &v : row) {
    v = std::exp(v - max);
    sum += v;
  }
  for (double &v : row)
    v /= sum;
  return max + std::log(sum);
}

} // namespace

Status softmaxCrossEntropy(const Tensor &logits, const Tensor &labels,
                           Tensor &losses) {
  Status status = checkCrossEntropy("softmaxCrossEntropy", logits, labels,
                                    losses, "losses", nullptr);
  if (!status.ok())
    return status;
  int64_t classes = logits.shape().back();
  std::vector<double> row(classes);
  for (int64_t i = 0; i < labels.numElements(); ++i) {
    load(logits, i * classes, classes, row.data());
    double target = row[detail::indexAt(labels, i)];
    double loss = softmaxRow(row) - target;
    store(losses, i, 1, &loss);
  }
  return Status::success();
}

Status softmaxCrossEntropyGrad(const Tensor &dLosses, const Tensor &logits,
                               const Tensor &labels, Tensor &dLogits) {
  Status status = checkCrossEntropy("softmaxCrossEntropyGrad", logits, labels,
                                    dLosses, "dLosses", &dLogits);
  if (!status.ok())
    return status;
  int64_t classes = logits.shape().back();
  std::vector<double> row(classes);
  for (int64_t i = 0; i < labels.numElements(); ++i) {
    load(logits, i * classes, classes, row.data());
    double dLoss;
    load(dLosses, i, 1, &dLoss);
    softmaxRow(row);
    row[detail::indexAt(labels, i)] -= 1;
    for (double &v : row)
      v *= dLoss;
    store(dLogits, i * classes, classes, row.data());
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

namespace {

/// The checks every update shares: float tensors of the parameter's shape
/// and a usable loss scale.
Checks checkUpdate(
    const char *kernel,
    std::initializer_list<std::pair<const char *, const Tensor *>> tensors,
    double gradScale) {
  Checks checks(kernel);
  const Shape &shape = tensors.begin()->second->shape();
  for (const auto &[name, tensor] : tensors)
    checks.isFloat(name, *tensor).hasShape(name, *tensor, shape);
  checks.that(gradScale != 0 && std::isfinite(gradScale),
              "gradScale must be finite and non-zero, got " +
                  std::to_string(gradScale));
  return checks;
}

} // namespace

Status sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay, double gradScale, Tensor &newParam) {
  Status status =
      checkUpdate("sgdUpdate",
                  {{"param", &param}, {"grad", &grad}, {"newParam", &newParam}},
                  gradScale)
          .status();
  if (!status.ok())
    return status;
  mapElements<2, 1>({&param, &grad}, {&newParam},
                    [&](const std::array<double, 2> &v) {
                      double g = v[1] / gradScale + weightDecay * v[0];
                      return std::array<double, 1>{v[0] - lr * g};
                    });
  return Status::success();
}

Status momentumUpdate(const Tensor &param, const Tensor &grad,
                      const Tensor &velocity, double lr, double momentum,
                      double weightDecay, bool nesterov, double gradScale,
                      Tensor &newParam, Tensor &newVelocity) {
  Status status = checkUpdate("momentumUpdate",
                              {{"param", &param},
                               {"grad", &grad},
                               {"velocity", &velocity},
                               {"newParam", &newParam},
                               {"newVelocity", &newVelocity}},
                              gradScale)
                      .status();
  if (!status.ok())
    return status;
  mapElements<3, 2>({&param, &grad, &velocity}, {&newParam, &newVelocity},
                    [&](const std::array<double, 3> &v) {
                      double g = v[1] / gradScale + weightDecay * v[0];
                      double velocity = momentum * v[2] + g;
                      double step =
                          nesterov ? g + momentum * velocity : velocity;
                      return std::array<double, 2>{v[0] - lr * step, velocity};
                    });
  return Status::success();
}

Status adamUpdate(const Tensor &param, const Tensor &grad, const Tensor &m,
                  const Tensor &v, const Tensor &step,
                  const AdamOptions &options, Tensor &newParam, Tensor &newM,
                  Tensor &newV) {
  Checks checks = checkUpdate("adamUpdate",
                              {{"param", &param},
                               {"grad", &grad},
                               {"m", &m},
                               {"v", &v},
                               {"newParam", &newParam},
                               {"newM", &newM},
                               {"newV", &newV}},
                              options.gradScale);
  checks.isFloat("step", step)
      .that(step.numElements() == 1,
            "step must hold one element, has shape " + toString(step.shape()));
  if (!checks.status().ok())
    return checks.status();
  double t;
  load(step, 0, 1, &t);
  // Bias correction divides by 1 - beta^t, zero at t = 0.
  checks.that(t >= 1, "step must be >= 1, got " + std::to_string(t));
  if (!checks.status().ok())
    return checks.status();

  const AdamOptions &o = options;
  double correction1 = 1 - std::pow(o.beta1, t);
  double correction2 = 1 - std::pow(o.beta2, t);
  double coupledDecay = o.decoupled ? 0.0 : o.weightDecay;
  double decoupledFactor = o.decoupled ? 1 - o.lr * o.weightDecay : 1.0;
  mapElements<4, 3>({&param, &grad, &m, &v}, {&newParam, &newM, &newV},
                    [&](const std::array<double, 4> &x) {
                      double g = x[1] / o.gradScale + coupledDecay * x[0];
                      double m1 = o.beta1 * x[2] + (1 - o.beta1) * g;
                      double v1 = o.beta2 * x[3] + (1 - o.beta2) * g * g;
                      double update = (m1 / correction1) /
                                      (std::sqrt(v1 / correction2) + o.epsilon);
                      return std::array<double, 3>{
                          x[0] * decoupledFactor - o.lr * update, m1, v1};
                    });
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Gathers on a block of a table split by rows
//===----------------------------------------------------------------------===//

namespace {
/// The block-relative row of each index, or -1 where the row is another
/// device's; an index outside the whole table is an error.
Status blockRows(const char *kernel, const Tensor &indices, int64_t offset,
                 int64_t blockRows, int64_t extent,
                 std::vector<int64_t> &rows) {
  if (indices.dtype() != DType::I32 && indices.dtype() != DType::I64)
    return Status::failure(std::string(kernel) +
                           ": indices must be i32 or i64");
  if (offset < 0 || blockRows < 0 || offset + blockRows > extent)
    return Status::failure(std::string(kernel) + ": a block of " +
                           std::to_string(blockRows) + " rows from " +
                           std::to_string(offset) + " does not fit " +
                           std::to_string(extent) + " rows");
  rows.resize(static_cast<size_t>(indices.numElements()));
  for (int64_t j = 0; j < indices.numElements(); ++j) {
    int64_t index = detail::indexAt(indices, j);
    if (index < -extent || index >= extent)
      return Status::failure(std::string(kernel) + ": index " +
                             std::to_string(index) + " out of range [" +
                             std::to_string(-extent) + ", " +
                             std::to_string(extent) + ")");
    int64_t row = (index < 0 ? index + extent : index) - offset;
    rows[j] = row >= 0 && row < blockRows ? row : -1;
  }
  return Status::success();
}
} // namespace

Status gatherShard(const Tensor &block, const Tensor &indices, int64_t axis,
                   int64_t offset, int64_t extent, Tensor &result) {
  const char *kernel = "gatherShard";
  if (axis < 0)
    axis += block.rank();
  if (axis < 0 || axis >= block.rank() || block.dtype() != result.dtype())
    return Status::failure(std::string(kernel) +
                           ": axis or element types do not fit");
  Shape expected(block.shape().begin(), block.shape().begin() + axis);
  expected.insert(expected.end(), indices.shape().begin(),
                  indices.shape().end());
  expected.insert(expected.end(), block.shape().begin() + axis + 1,
                  block.shape().end());
  if (result.shape() != expected)
    return Status::failure(std::string(kernel) + ": result shape " +
                           toString(result.shape()) + " is not " +
                           toString(expected));
  std::vector<int64_t> rows;
  int64_t rowsHere = block.shape()[axis];
  if (Status s = blockRows(kernel, indices, offset, rowsHere, extent, rows);
      !s.ok())
    return s;
  result = Tensor(result.dtype(), result.shape());
  size_t width = byteWidth(block.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= block.shape()[d];
  for (int64_t d = axis + 1; d < block.rank(); ++d)
    inner *= block.shape()[d];
  size_t chunk = static_cast<size_t>(inner) * width;
  int64_t count = indices.numElements();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      if (rows[j] >= 0)
        std::memcpy(result.bytes() + (o * count + j) * chunk,
                    block.bytes() + (o * rowsHere + rows[j]) * chunk, chunk);
  return Status::success();
}

Status gatherGradShard(const Tensor &dy, const Tensor &indices, int64_t axis,
                       int64_t offset, int64_t extent, Tensor &dBlock) {
  const char *kernel = "gatherGradShard";
  if (axis < 0)
    axis += dBlock.rank();
  if (axis < 0 || axis >= dBlock.rank() || !isFloat(dy.dtype()) ||
      !isFloat(dBlock.dtype()))
    return Status::failure(std::string(kernel) +
                           ": axis or element types do not fit");
  Shape expected(dBlock.shape().begin(), dBlock.shape().begin() + axis);
  expected.insert(expected.end(), indices.shape().begin(),
                  indices.shape().end());
  expected.insert(expected.end(), dBlock.shape().begin() + axis + 1,
                  dBlock.shape().end());
  if (dy.shape() != expected)
    return Status::failure(std::string(kernel) + ": dy shape " +
                           toString(dy.shape()) + " is not " +
                           toString(expected));
  std::vector<int64_t> rows;
  int64_t rowsHere = dBlock.shape()[axis];
  if (Status s = blockRows(kernel, indices, offset, rowsHere, extent, rows);
      !s.ok())
    return s;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= dBlock.shape()[d];
  for (int64_t d = axis + 1; d < dBlock.rank(); ++d)
    inner *= dBlock.shape()[d];
  int64_t count = indices.numElements();
  // Summed in double in index order, rounded once per element.
  std::vector<double> sums(static_cast<size_t>(dBlock.numElements()), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      if (rows[j] >= 0)
        for (int64_t i = 0; i < inner; ++i)
          sums[(o * rowsHere + rows[j]) * inner + i] +=
              dy.get((o * count + j) * inner + i);
  for (int64_t e = 0; e < dBlock.numElements(); ++e)
    dBlock.set(e, sums[e]);
  return Status::success();
}

} // namespace parplan::runtime
