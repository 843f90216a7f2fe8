//===- RuntimeGradKernelsTest.cpp - gradients, losses, optimizers ---------===//
//
// Two kinds of checks for the training kernels of Kernels.h. Every backward
// kernel is compared in float64 with central differences of the forward
// kernel it differentiates: for a random cotangent dy, d<dy, f(x)>/dx[i] is
// what the backward kernel returns in dx[i]. Losses, optimizer steps and
// the error paths are checked against values worked out by hand in the
// comments.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Kernels.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <utility>
#include <vector>

using namespace parplan::runtime;

namespace {

Tensor filled(DType type, const Shape &shape,
              const std::vector<double> &values) {
  Tensor tensor(type, shape);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, values[i]);
  return tensor;
}

Tensor f64(const Shape &shape, const std::vector<double> &values) {
  return filled(DType::F64, shape, values);
}

std::vector<double> valuesOf(const Tensor &tensor) {
  std::vector<double> values(tensor.numElements());
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    values[i] = tensor.get(i);
  return values;
}

/// Uniform in [lo, hi), from a fixed seed per test.
Tensor random(const Shape &shape, std::mt19937_64 &rng, double lo = -1,
              double hi = 1) {
  std::uniform_real_distribution<double> uniform(lo, hi);
  Tensor tensor(DType::F64, shape);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, uniform(rng));
  return tensor;
}

/// Distinct values at least 0.1 apart in random order, so that a finite
/// difference step never changes which element of a window is the maximum.
Tensor distinct(const Shape &shape, std::mt19937_64 &rng) {
  Tensor tensor(DType::F64, shape);
  std::vector<int64_t> order(tensor.numElements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, 0.1 * static_cast<double>(order[i]) - 1);
  return tensor;
}

/// A tensor full of a value no gradient has, to prove a kernel overwrites
/// every element of its output rather than accumulating into it.
Tensor garbage(const Shape &shape) {
  Tensor tensor(DType::F64, shape);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, 42.0);
  return tensor;
}

double dot(const Tensor &a, const Tensor &b) {
  REQUIRE(a.shape() == b.shape());
  double sum = 0;
  for (int64_t i = 0; i < a.numElements(); ++i)
    sum += a.get(i) * b.get(i);
  return sum;
}

/// The forward function of one operand, all others held fixed.
using Forward = std::function<Tensor(const Tensor &)>;

/// dx[i] against (<dy, f(x + h e_i)> - <dy, f(x - h e_i)>) / 2h for every
/// element i.
void checkGradient(const char *what, const Forward &forward, const Tensor &x,
                   const Tensor &dy, const Tensor &dx) {
  constexpr double h = 1e-6, tolerance = 1e-6;
  REQUIRE(dx.shape() == x.shape());
  REQUIRE(forward(x).shape() == dy.shape());
  for (int64_t i = 0; i < x.numElements(); ++i) {
    Tensor plus = x, minus = x;
    plus.set(i, x.get(i) + h);
    minus.set(i, x.get(i) - h);
    double numeric =
        (dot(dy, forward(plus)) - dot(dy, forward(minus))) / (2 * h);
    INFO(what << ": element " << i << " of " << toString(x.shape())
              << ", analytic " << dx.get(i) << ", numeric " << numeric);
    CHECK(std::abs(dx.get(i) - numeric) <=
          tolerance * std::max(1.0, std::abs(numeric)));
  }
}

/// Runs a forward kernel into a fresh F64 result of `shape`.
Tensor run(const Shape &shape, const std::function<Status(Tensor &)> &kernel) {
  Tensor result(DType::F64, shape);
  Status status = kernel(result);
  INFO(status.error);
  REQUIRE(status.ok());
  return result;
}

void requireOk(const Status &status) {
  INFO(status.error);
  REQUIRE(status.ok());
}

/// Output extent of a window, written out independently of the kernels:
/// floor or ceil of (padded - span) / stride, plus one; in ceil mode a last
/// window starting in the end padding is dropped.
int64_t extent(int64_t size, int64_t kernel, int64_t stride, int64_t padBegin,
               int64_t padEnd, int64_t dilation, bool ceilMode = false) {
  int64_t steps = size + padBegin + padEnd - dilation * (kernel - 1) - 1;
  int64_t out = (ceilMode ? (steps + stride - 1) / stride : steps / stride) + 1;
  if (ceilMode && (out - 1) * stride >= size + padBegin)
    --out;
  return out;
}

Shape windowedShape(const Shape &input, int64_t channels,
                    const std::vector<int64_t> &kernel,
                    const std::vector<int64_t> &strides,
                    const std::vector<int64_t> &pads,
                    const std::vector<int64_t> &dilations, bool ceilMode) {
  size_t k = kernel.size();
  Shape out{input[0], channels};
  for (size_t d = 0; d < k; ++d)
    out.push_back(extent(input[2 + d], kernel[d], strides[d], pads[d],
                         pads[k + d], dilations[d], ceilMode));
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Finite differences
//===----------------------------------------------------------------------===//

TEST_CASE("unaryGrad matches finite differences", "[runtime][grad]") {
  std::mt19937_64 rng(1);
  struct Case {
    const char *name;
    UnaryKind kind;
    double alpha, beta;
  };
  // Inputs in [-4, 4) cross every piece: HardSwish's bends at -3 and 3,
  // HardSigmoid's at -2.5 and 2.5 for (0.2, 0.5).
  for (Case c : {Case{"Relu", UnaryKind::Relu, 0, 0},
                 Case{"LeakyRelu", UnaryKind::LeakyRelu, 0.1, 0},
                 Case{"HardSigmoid", UnaryKind::HardSigmoid, 0.2, 0.5},
                 Case{"HardSwish", UnaryKind::HardSwish, 0, 0},
                 Case{"GeluExact", UnaryKind::GeluExact, 0, 0},
                 Case{"GeluTanh", UnaryKind::GeluTanh, 0, 0}}) {
    Shape shape{3, 17};
    Tensor x = random(shape, rng, -4, 4), dy = random(shape, rng);
    Tensor dx = garbage(shape);
    requireOk(unaryGrad(c.kind, dy, x, dx, c.alpha, c.beta));
    checkGradient(
        c.name,
        [&](const Tensor &in) {
          return run(shape, [&](Tensor &out) {
            return unary(c.kind, in, out, c.alpha, c.beta);
          });
        },
        x, dy, dx);
  }
}

TEST_CASE("clipGrad matches finite differences", "[runtime][grad]") {
  std::mt19937_64 rng(2);
  Shape shape{4, 6};
  Tensor x = random(shape, rng), dy = random(shape, rng);
  using Bounds = std::pair<std::optional<double>, std::optional<double>>;
  for (auto [min, max] : std::vector<Bounds>{
           {-0.5, 0.3}, {-0.2, std::nullopt}, {std::nullopt, 0.1}}) {
    Tensor dx = garbage(shape);
    requireOk(clipGrad(dy, x, min, max, dx));
    checkGradient(
        "clip",
        [&](const Tensor &in) {
          return run(shape,
                     [&](Tensor &out) { return clip(in, min, max, out); });
        },
        x, dy, dx);
  }
}

TEST_CASE("softmax gradients match finite differences on a middle axis",
          "[runtime][grad]") {
  std::mt19937_64 rng(3);
  Shape shape{2, 4, 3};
  Tensor x = random(shape, rng, -2, 2), dy = random(shape, rng);

  Tensor y = run(shape, [&](Tensor &out) { return softmax(x, 1, out); });
  Tensor dx = garbage(shape);
  requireOk(softmaxGrad(dy, y, 1, dx));
  checkGradient(
      "softmax",
      [&](const Tensor &in) {
        return run(shape, [&](Tensor &out) { return softmax(in, 1, out); });
      },
      x, dy, dx);

  Tensor logY = run(shape, [&](Tensor &out) { return logSoftmax(x, 1, out); });
  Tensor logDx = garbage(shape);
  // Axis -2 is axis 1 of rank 3: the op's attribute is signed.
  requireOk(logSoftmaxGrad(dy, logY, -2, logDx));
  checkGradient(
      "log_softmax",
      [&](const Tensor &in) {
        return run(shape, [&](Tensor &out) { return logSoftmax(in, 1, out); });
      },
      x, dy, logDx);
}

TEST_CASE("layerNormGrad matches finite differences over two dimensions",
          "[runtime][grad]") {
  std::mt19937_64 rng(4);
  Shape shape{2, 3, 4};
  constexpr double epsilon = 1e-5;
  // Axis 1 with a scale of the normalized shape [3, 4]; axis -2 (signed, as
  // the op's attribute) with a scale [4] broadcast over the 3 rows, whose
  // gradients sum over them.
  for (auto [axis, paramShape] :
       std::vector<std::pair<int64_t, Shape>>{{1, {3, 4}}, {-2, {4}}}) {
    INFO("axis " << axis << ", scale " << toString(paramShape));
    Tensor x = random(shape, rng, -2, 2), dy = random(shape, rng);
    Tensor scale = random(paramShape, rng, 0.5, 1.5);
    Tensor bias = random(paramShape, rng);
    Tensor dInput = garbage(shape), dScale = garbage(paramShape),
           dBias = garbage(paramShape);
    requireOk(
        layerNormGrad(dy, x, scale, axis, epsilon, dInput, dScale, dBias));
    auto forward = [&, axis = axis](const Tensor &in, const Tensor &s,
                                    const Tensor &b) {
      return run(shape, [&](Tensor &out) {
        return layerNorm(in, s, &b, axis, epsilon, out);
      });
    };
    checkGradient(
        "input", [&](const Tensor &in) { return forward(in, scale, bias); }, x,
        dy, dInput);
    checkGradient(
        "scale", [&](const Tensor &s) { return forward(x, s, bias); }, scale,
        dy, dScale);
    checkGradient(
        "bias", [&](const Tensor &b) { return forward(x, scale, b); }, bias, dy,
        dBias);
  }
}

TEST_CASE("conv gradients match finite differences with stride, padding, "
          "dilation and groups",
          "[runtime][grad]") {
  std::mt19937_64 rng(5);
  struct Case {
    const char *name;
    Shape input, weight;
    std::vector<int64_t> strides, pads, dilations;
    int64_t group;
  };
  for (const Case &c : {
           // 2-d: stride 2 leaves rows no window reads, asymmetric pads,
           // dilation 2, two groups of two input channels.
           Case{"conv2d",
                {2, 4, 7, 6},
                {6, 2, 3, 2},
                {2, 1},
                {1, 0, 2, 1},
                {2, 2},
                2},
           // Depthwise with stride 2, as MobileNetV2's: a group per
           // channel, its window over the padding at the far edge.
           Case{"depthwise conv2d",
                {2, 4, 6, 6},
                {4, 1, 3, 3},
                {2, 2},
                {1, 1, 1, 1},
                {1, 1},
                4},
           // 1-d and 3-d, to exercise the N-d indexing.
           Case{"conv1d", {1, 3, 9}, {2, 3, 3}, {2}, {2, 1}, {1}, 1},
           Case{"conv3d",
                {1, 2, 4, 3, 3},
                {2, 1, 2, 2, 2},
                {1, 2, 1},
                {1, 0, 1, 0, 1, 0},
                {2, 1, 1},
                2},
       }) {
    Shape out = windowedShape(c.input, c.weight[0],
                              Shape(c.weight.begin() + 2, c.weight.end()),
                              c.strides, c.pads, c.dilations, false);
    Tensor x = random(c.input, rng), w = random(c.weight, rng);
    Tensor dy = random(out, rng);
    auto forward = [&](const Tensor &in, const Tensor &weight) {
      return run(out, [&](Tensor &result) {
        return conv(in, weight, nullptr, c.strides, c.pads, c.dilations,
                    c.group, result);
      });
    };
    Tensor dInput = garbage(c.input), dWeight = garbage(c.weight);
    requireOk(
        convGradInput(dy, w, c.strides, c.pads, c.dilations, c.group, dInput));
    requireOk(convGradWeight(dy, x, c.strides, c.pads, c.dilations, c.group,
                             dWeight));
    checkGradient(
        c.name, [&](const Tensor &in) { return forward(in, w); }, x, dy,
        dInput);
    checkGradient(
        c.name, [&](const Tensor &weight) { return forward(x, weight); }, w, dy,
        dWeight);
  }
}

TEST_CASE("pool gradients match finite differences with overlapping, padded "
          "windows",
          "[runtime][grad]") {
  std::mt19937_64 rng(6);
  struct Case {
    const char *name;
    Shape input;
    PoolWindow window;
  };
  // Strides below the kernel overlap the windows; ceil mode adds windows
  // that hang past the end padding; dilation spreads them.
  std::vector<Case> cases = {
      {"overlap", {2, 2, 6, 5}, {{3, 2}, {2, 1}, {1, 1, 1, 0}, {1, 1}}},
      {"ceil", {1, 2, 7, 7}, {{3, 3}, {2, 2}, {1, 0, 0, 1}, {1, 1}, true}},
      // Ceil mode dropping a last window that would start in the end
      // padding, in both dimensions.
      {"ceil-drop", {1, 1, 5, 4}, {{2, 2}, {3, 2}, {0, 0, 1, 1}, {1, 1}, true}},
      {"dilated", {1, 1, 7, 6}, {{2, 2}, {1, 2}, {1, 1, 1, 1}, {2, 1}}},
  };
  for (const Case &base : cases)
    for (bool includePad : {false, true}) {
      PoolWindow window = base.window;
      window.countIncludePad = includePad;
      Shape out = windowedShape(base.input, base.input[1], window.kernel,
                                window.strides, window.pads, window.dilations,
                                window.ceilMode);
      INFO(base.name << (includePad ? ", count_include_pad" : ""));
      Tensor x = distinct(base.input, rng), dy = random(out, rng);

      Tensor dMax = garbage(base.input);
      requireOk(maxPoolGrad(dy, x, window, dMax));
      checkGradient(
          "max_pool",
          [&](const Tensor &in) {
            return run(out, [&](Tensor &result) {
              return maxPool(in, window, result);
            });
          },
          x, dy, dMax);

      Tensor dAvg = garbage(base.input);
      requireOk(avgPoolGrad(dy, window, dAvg));
      checkGradient(
          "avg_pool",
          [&](const Tensor &in) {
            return run(out, [&](Tensor &result) {
              return avgPool(in, window, result);
            });
          },
          x, dy, dAvg);
    }
}

TEST_CASE("sliceGrad and gatherGrad match finite differences",
          "[runtime][grad]") {
  std::mt19937_64 rng(7);
  Shape shape{4, 5, 3};

  // Rows 3, 1 (step -2), columns 0, 2, 4, all of the last dimension.
  std::vector<int64_t> starts{3, 0, 0}, steps{-2, 2, 1};
  Shape sizes{2, 3, 3};
  Tensor x = random(shape, rng), dySlice = random(sizes, rng);
  Tensor dSlice = garbage(shape);
  requireOk(sliceGrad(dySlice, starts, steps, dSlice));
  checkGradient(
      "slice",
      [&](const Tensor &in) {
        return run(sizes,
                   [&](Tensor &out) { return slice(in, starts, steps, out); });
      },
      x, dySlice, dSlice);

  // Axis 1, repeated and negative indices (-1 is 4).
  Tensor indices(DType::I64, {2, 3});
  std::vector<int64_t> picks{1, -1, 1, 0, 4, 1};
  std::copy(picks.begin(), picks.end(), indices.data<int64_t>());
  Shape gathered{4, 2, 3, 3};
  Tensor dyGather = random(gathered, rng), dGather = garbage(shape);
  requireOk(gatherGrad(dyGather, indices, 1, dGather));
  checkGradient(
      "gather",
      [&](const Tensor &in) {
        return run(gathered,
                   [&](Tensor &out) { return gather(in, indices, 1, out); });
      },
      x, dyGather, dGather);
}

TEST_CASE("softmaxCrossEntropyGrad matches finite differences",
          "[runtime][grad]") {
  std::mt19937_64 rng(8);
  Shape shape{2, 3, 5}, positions{2, 3};
  Tensor logits = random(shape, rng, -3, 3), dLosses = random(positions, rng);
  for (DType labelType : {DType::I32, DType::I64}) {
    Tensor labels(labelType, positions);
    std::vector<double> classes{0, 4, 2, 3, 1, 4};
    for (int64_t i = 0; i < labels.numElements(); ++i)
      labels.set(i, classes[i]);
    Tensor dLogits = garbage(shape);
    requireOk(softmaxCrossEntropyGrad(dLosses, logits, labels, dLogits));
    checkGradient(
        "cross-entropy",
        [&](const Tensor &in) {
          return run(positions, [&](Tensor &out) {
            return softmaxCrossEntropy(in, labels, out);
          });
        },
        logits, dLosses, dLogits);
  }
}

//===----------------------------------------------------------------------===//
// Hand-computed values
//===----------------------------------------------------------------------===//

TEST_CASE("softmaxCrossEntropy by hand", "[runtime][grad]") {
  // Logits [0, ln 2, ln 5] have softmax [1/8, 2/8, 5/8] and logsumexp
  // ln 8; label 1 costs ln 8 - ln 2 = ln 4.
  Tensor logits = f64({1, 3}, {0, std::log(2.0), std::log(5.0)});
  Tensor labels(DType::I64, {1});
  labels.data<int64_t>()[0] = 1;
  Tensor losses(DType::F64, {1});
  requireOk(softmaxCrossEntropy(logits, labels, losses));
  CHECK(losses.get(0) == Approx(std::log(4.0)).epsilon(1e-14));
  // dlosses 2: 2 * ([1, 2, 5] / 8 - [0, 1, 0]) = [0.25, -1.5, 1.25].
  Tensor dLogits(DType::F64, {1, 3});
  requireOk(softmaxCrossEntropyGrad(f64({1}, {2}), logits, labels, dLogits));
  CHECK(dLogits.get(0) == Approx(0.25).epsilon(1e-14));
  CHECK(dLogits.get(1) == Approx(-1.5).epsilon(1e-14));
  CHECK(dLogits.get(2) == Approx(1.25).epsilon(1e-14));
}

TEST_CASE("a label out of range names the position and the label",
          "[runtime][grad]") {
  Tensor logits(DType::F32, {2, 2, 3});
  Tensor labels(DType::I32, {2, 2});
  std::vector<int32_t> values{0, 2, 3, 1};
  std::copy(values.begin(), values.end(), labels.data<int32_t>());
  Tensor losses = garbage({2, 2});
  Status status = softmaxCrossEntropy(logits, labels, losses);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error ==
        "softmaxCrossEntropy: label 3 at position [1, 0] is outside [0, 3)");
  // Labels are checked before anything is written.
  CHECK(losses.get(0) == 42.0);

  labels.data<int32_t>()[2] = -1;
  Tensor dLogits(DType::F32, {2, 2, 3});
  status = softmaxCrossEntropyGrad(Tensor(DType::F32, {2, 2}), logits, labels,
                                   dLogits);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error == "softmaxCrossEntropyGrad: label -1 at position [1, 0] "
                        "is outside [0, 3)");
}

TEST_CASE("gatherGrad accumulates repeated indices and rejects bad ones",
          "[runtime][grad]") {
  // Rows 1, 1, -1 (= 3), 1 of a [4, 2] table: row 1 collects three rows of
  // dy, row 3 one, rows 0 and 2 none (and must be zeroed).
  Tensor indices(DType::I32, {4});
  std::vector<int32_t> rows{1, 1, -1, 1};
  std::copy(rows.begin(), rows.end(), indices.data<int32_t>());
  Tensor dy = f64({4, 2}, {1, 2, 10, 20, 100, 200, 1000, 2000});
  Tensor dInput = garbage({4, 2});
  requireOk(gatherGrad(dy, indices, 0, dInput));
  CHECK(valuesOf(dInput) ==
        std::vector<double>{0, 0, 1011, 2022, 0, 0, 100, 200});

  indices.data<int32_t>()[2] = 4;
  Status status = gatherGrad(dy, indices, 0, dInput);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error == "gatherGrad: index 4 at position [2] is out of range "
                        "for axis 0 of size 4");
  indices.data<int32_t>()[2] = -5;
  CHECK_FALSE(gatherGrad(dy, indices, 0, dInput).ok());
}

TEST_CASE("maxPoolGrad sends ties to the first element and never to padding",
          "[runtime][grad]") {
  // One 2x2 window over equal values: the first in row-major order wins.
  PoolWindow square{{2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}};
  Tensor dInput = garbage({1, 1, 2, 2});
  requireOk(maxPoolGrad(f64({1, 1, 1, 1}, {3}), f64({1, 1, 2, 2}, {1, 1, 1, 1}),
                        square, dInput));
  CHECK(valuesOf(dInput) == std::vector<double>{3, 0, 0, 0});

  // Negative inputs with a padded window: the padding (which is not a
  // zero) never wins. Windows {pad, -1} and {-1, -2} both pick -1.
  PoolWindow padded{{1, 2}, {1, 1}, {0, 1, 0, 0}, {1, 1}};
  Tensor dRow = garbage({1, 1, 1, 2});
  requireOk(maxPoolGrad(f64({1, 1, 1, 2}, {5, 7}), f64({1, 1, 1, 2}, {-1, -2}),
                        padded, dRow));
  CHECK(valuesOf(dRow) == std::vector<double>{12, 0});

  // max_pool propagates the first NaN of a window; the gradient follows.
  PoolWindow row{{1, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}};
  Tensor dNan = garbage({1, 1, 1, 3});
  requireOk(maxPoolGrad(f64({1, 1, 1, 1}, {2}),
                        f64({1, 1, 1, 3}, {1, std::nan(""), 5}), row, dNan));
  CHECK(valuesOf(dNan) == std::vector<double>{0, 2, 0});
}

TEST_CASE("avgPoolGrad divides by the forward's divisor", "[runtime][grad]") {
  // Input of 3, kernel 2, stride 2, pads 1 and 1: windows {pad, x0},
  // {x1, x2}. Without count_include_pad the first divides by 1.
  PoolWindow window{{2}, {2}, {1, 1}, {1}};
  Tensor dy = f64({1, 1, 2}, {4, 6}), dInput = garbage({1, 1, 3});
  requireOk(avgPoolGrad(dy, window, dInput));
  CHECK(valuesOf(dInput) == std::vector<double>{4, 3, 3});
  window.countIncludePad = true;
  requireOk(avgPoolGrad(dy, window, dInput));
  CHECK(valuesOf(dInput) == std::vector<double>{2, 3, 3});
}

TEST_CASE("unaryGrad leaves the smooth activations to elementwise ops",
          "[runtime][grad]") {
  Tensor x(DType::F32, {2}), dx(DType::F32, {2});
  Status status = unaryGrad(UnaryKind::Tanh, x, x, dx);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error.find("unaryGrad: Tanh") == 0);
}

TEST_CASE("16-bit and 32-bit gradients round the float64 result once",
          "[runtime][grad]") {
  std::mt19937_64 rng(9);
  Shape shape{3, 8};
  Tensor x = random(shape, rng, -3, 3), dy = random(shape, rng);
  Tensor reference(DType::F64, shape);
  requireOk(unaryGrad(UnaryKind::GeluTanh, dy, x, reference));
  for (DType type : {DType::F32, DType::F16, DType::BF16}) {
    // Inputs representable in the narrow type, so that only the result's
    // rounding differs.
    Tensor narrowX = filled(type, shape, valuesOf(x));
    Tensor narrowDy = filled(type, shape, valuesOf(dy));
    Tensor exact(DType::F64, shape);
    requireOk(unaryGrad(UnaryKind::GeluTanh,
                        filled(DType::F64, shape, valuesOf(narrowDy)),
                        filled(DType::F64, shape, valuesOf(narrowX)), exact));
    Tensor dx(type, shape);
    requireOk(unaryGrad(UnaryKind::GeluTanh, narrowDy, narrowX, dx));
    INFO(toString(type));
    CHECK(valuesOf(dx) == valuesOf(filled(type, shape, valuesOf(exact))));
  }
}

TEST_CASE("gradient kernels reject inconsistent shapes instead of crashing",
          "[runtime][grad]") {
  // conv [1, 1, 5] * [1, 1, 3] gives 3 outputs, not 4.
  Tensor dInput(DType::F32, {1, 1, 5});
  Status conv =
      convGradInput(Tensor(DType::F32, {1, 1, 4}),
                    Tensor(DType::F32, {1, 1, 3}), {1}, {0, 0}, {1}, 1, dInput);
  CHECK(conv.error.find("convGradInput: ") == 0);
  // Two pads for a 2-d window.
  PoolWindow window{{2, 2}, {1, 1}, {0, 0}, {1, 1}};
  Tensor plane(DType::F32, {1, 1, 3, 3});
  CHECK_FALSE(
      avgPoolGrad(Tensor(DType::F32, {1, 1, 2, 2}), window, plane).ok());
  // Rows 1, 3, 5 of 4.
  Tensor rows(DType::F32, {4});
  CHECK(sliceGrad(Tensor(DType::F32, {3}), {1}, {2}, rows)
            .error.find("sliceGrad: ") == 0);
  Tensor x(DType::F32, {2, 3}), dScale(DType::F32, {2}), dBias(DType::F32, {3});
  CHECK_FALSE(
      layerNormGrad(x, x, Tensor(DType::F32, {3}), 1, 1e-5, x, dScale, dBias)
          .ok());
  Tensor ints(DType::I32, {2, 3});
  CHECK(unaryGrad(UnaryKind::Relu, ints, ints, ints).error ==
        "unaryGrad: dy has element type i32, not a float type");
}

TEST_CASE("absent pool strides, pads and dilations default like the forward",
          "[runtime][grad]") {
  // Kernel 2 alone: stride 1, no padding. Windows {x0, x1}, {x1, x2}.
  PoolWindow window;
  window.kernel = {2};
  Tensor dInput = garbage({1, 1, 3});
  requireOk(avgPoolGrad(f64({1, 1, 2}, {2, 4}), window, dInput));
  CHECK(valuesOf(dInput) == std::vector<double>{1, 3, 2});
}

TEST_CASE("empty index sets zero the gradient", "[runtime][grad]") {
  Tensor dInput = garbage({3, 2});
  requireOk(gatherGrad(Tensor(DType::F64, {0, 2}), Tensor(DType::I64, {0}), 0,
                       dInput));
  CHECK(valuesOf(dInput) == std::vector<double>(6, 0.0));
}

//===----------------------------------------------------------------------===//
// Optimizer updates, by hand
//===----------------------------------------------------------------------===//

TEST_CASE("sgdUpdate with weight decay and a loss scale", "[runtime][grad]") {
  // grad / 2 = [0.25, 0.125]; + 0.01 * param = [0.26, 0.105];
  // param - 0.1 * g = [1 - 0.026, -2 - 0.0105] = [0.974, -2.0105].
  Tensor param = f64({2}, {1, -2});
  requireOk(sgdUpdate(param, f64({2}, {0.5, 0.25}), /*lr=*/0.1,
                      /*weightDecay=*/0.01, /*gradScale=*/2, param));
  CHECK(param.get(0) == Approx(0.974).epsilon(1e-14));
  CHECK(param.get(1) == Approx(-2.0105).epsilon(1e-14));

  Status status = sgdUpdate(param, param, 0.1, 0, /*gradScale=*/0, param);
  CHECK_FALSE(status.ok());
}

TEST_CASE("momentumUpdate with and without nesterov", "[runtime][grad]") {
  // v' = 0.9 * [0.2, 0.1] + [0.5, -1] = [0.68, -0.91].
  // Plain: param' = [1, 2] - 0.1 * v' = [0.932, 2.091].
  // Nesterov: d = g + 0.9 * v' = [1.112, -1.819];
  //           param' = [1 - 0.1112, 2 + 0.1819] = [0.8888, 2.1819].
  Tensor param = f64({2}, {1, 2}), grad = f64({2}, {0.5, -1}),
         velocity = f64({2}, {0.2, 0.1});
  for (bool nesterov : {false, true}) {
    Tensor newParam = garbage({2}), newVelocity = garbage({2});
    requireOk(momentumUpdate(param, grad, velocity, /*lr=*/0.1,
                             /*momentum=*/0.9, /*weightDecay=*/0, nesterov,
                             /*gradScale=*/1, newParam, newVelocity));
    INFO("nesterov " << nesterov);
    CHECK(newVelocity.get(0) == Approx(0.68).epsilon(1e-14));
    CHECK(newVelocity.get(1) == Approx(-0.91).epsilon(1e-14));
    CHECK(newParam.get(0) == Approx(nesterov ? 0.8888 : 0.932).epsilon(1e-14));
    CHECK(newParam.get(1) == Approx(nesterov ? 2.1819 : 2.091).epsilon(1e-14));
  }
}

TEST_CASE("adamUpdate: one Adam step and one AdamW step", "[runtime][grad]") {
  // Step t = 2, lr 0.01, beta1 0.9, beta2 0.99, eps 1e-8, weight decay 0.1,
  // param 2, grad 0.2, m 0.1, v 0.01. Bias corrections: 1 - 0.9^2 = 0.19,
  // 1 - 0.99^2 = 0.0199.
  AdamOptions options;
  options.lr = 0.01;
  options.beta1 = 0.9;
  options.beta2 = 0.99;
  options.epsilon = 1e-8;
  options.weightDecay = 0.1;
  Tensor step = f64({}, {2});
  Tensor m = f64({1}, {0.1}), v = f64({1}, {0.01});

  SECTION("Adam: the decay joins the gradient") {
    // g = 0.2 + 0.1 * 2 = 0.4; m' = 0.09 + 0.04 = 0.13;
    // v' = 0.0099 + 0.01 * 0.16 = 0.0115;
    // m'/0.19 = 0.684210526..., sqrt(v'/0.0199) = 0.760190401...;
    // param' = 2 - 0.01 * 0.900051507... = 1.990999484924451.
    Tensor param = f64({1}, {2}), newM = garbage({1}), newV = garbage({1});
    requireOk(adamUpdate(param, f64({1}, {0.2}), m, v, step, options, param,
                         newM, newV));
    CHECK(newM.get(0) == Approx(0.13).epsilon(1e-14));
    CHECK(newV.get(0) == Approx(0.0115).epsilon(1e-14));
    CHECK(param.get(0) == Approx(1.990999484924451).epsilon(1e-14));
  }

  SECTION("AdamW: the decay scales the weights; the loss scale divides "
          "the gradient") {
    // A gradient of 0.8 under loss scale 4 is 0.2. m' = 0.09 + 0.02 = 0.11;
    // v' = 0.0099 + 0.01 * 0.04 = 0.0103; the weights decay to
    // 2 * (1 - 0.01 * 0.1) = 1.998; m'/0.19 = 0.578947368...,
    // sqrt(v'/0.0199) = 0.719435848...;
    // param' = 1.998 - 0.01 * 0.804724... = 1.9899527590707453.
    options.decoupled = true;
    options.gradScale = 4;
    Tensor param = f64({1}, {2}), newM = garbage({1}), newV = garbage({1});
    requireOk(adamUpdate(param, f64({1}, {0.8}), m, v, step, options, param,
                         newM, newV));
    CHECK(newM.get(0) == Approx(0.11).epsilon(1e-14));
    CHECK(newV.get(0) == Approx(0.0103).epsilon(1e-14));
    CHECK(param.get(0) == Approx(1.9899527590707453).epsilon(1e-14));
  }

  SECTION("the step count starts at 1") {
    Tensor param = f64({1}, {2}), newM = garbage({1}), newV = garbage({1});
    Status status = adamUpdate(param, f64({1}, {0.2}), m, v, f64({}, {0}),
                               options, param, newM, newV);
    REQUIRE_FALSE(status.ok());
    CHECK(status.error.find("adamUpdate: step") == 0);
  }
}

TEST_CASE("gatherShard and gatherGradShard: the blocks of a table split by "
          "rows add up to the whole gather",
          "[runtime][grad]") {
  // A 5x2 table split into rows [0, 3) and [3, 5); indices include a
  // negative one and repeats.
  Tensor table(DType::F64, {5, 2});
  for (int64_t i = 0; i < 10; ++i)
    table.set(i, 1.5 * i - 2);
  Tensor indices(DType::I64, {2, 3});
  int64_t ids[] = {4, 0, -1, 3, 3, 1};
  for (int64_t i = 0; i < 6; ++i)
    indices.set(i, static_cast<double>(ids[i]));
  Tensor whole(DType::F64, {2, 3, 2});
  REQUIRE(gather(table, indices, 0, whole).ok());
  Tensor dy(DType::F64, {2, 3, 2});
  for (int64_t i = 0; i < 12; ++i)
    dy.set(i, 0.25 * i + 1);
  Tensor dWhole(DType::F64, {5, 2});
  REQUIRE(gatherGrad(dy, indices, 0, dWhole).ok());

  Tensor sum(DType::F64, {2, 3, 2});
  for (auto [offset, rows] : {std::pair<int64_t, int64_t>{0, 3}, {3, 2}}) {
    Tensor block(DType::F64, {rows, 2});
    for (int64_t i = 0; i < rows * 2; ++i)
      block.set(i, table.get(offset * 2 + i));
    Tensor part(DType::F64, {2, 3, 2});
    REQUIRE(gatherShard(block, indices, 0, offset, 5, part).ok());
    for (int64_t i = 0; i < 12; ++i)
      sum.set(i, sum.get(i) + part.get(i));
    Tensor dBlock(DType::F64, {rows, 2});
    REQUIRE(gatherGradShard(dy, indices, 0, offset, 5, dBlock).ok());
    for (int64_t i = 0; i < rows * 2; ++i)
      CHECK(dBlock.get(i) == dWhole.get(offset * 2 + i));
  }
  for (int64_t i = 0; i < 12; ++i)
    CHECK(sum.get(i) == whole.get(i));

  Tensor block(DType::F64, {2, 2}), part(DType::F64, {2, 3, 2});
  CHECK(gatherShard(block, indices, 0, 2, 4, part).error ==
        "gatherShard: index 4 out of range [-4, 4)");
  CHECK(gatherShard(block, indices, 0, 4, 5, part).error ==
        "gatherShard: a block of 2 rows from 4 does not fit 5 rows");
}
