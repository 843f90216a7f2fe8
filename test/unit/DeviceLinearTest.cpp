//===- DeviceLinearTest.cpp - contraction, row-wise and gather kernels ----===//
//
// The device kernels of Linear.h, Normalization.h, Gather.h and
// Sampling.h, the
// collective packing of Pack.h and the synthetic values of Synthetic.h, run
// on the host through HostLauncher and
// compared element by element with the reference kernels (runKernel) on
// random inputs. The device results start as NaN bytes, so an element a
// kernel forgets to write fails. The attributes go through
// resolveKernelAttrs, as the backend passes them.
//
//===----------------------------------------------------------------------===//

#include "Device/Gather.h"
#include "Device/HostLauncher.h"
#include "Device/Linear.h"
#include "Device/Normalization.h"
#include "Device/Pack.h"
#include "Device/Sampling.h"
#include "Device/Synthetic.h"

#include "parplan/Runtime/Communicator.h"
#include "parplan/Runtime/Initializers.h"
#include "parplan/Runtime/KernelCall.h"
#include "parplan/Sbp/Sbp.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

using namespace parplan;
using namespace parplan::runtime;
using namespace parplan::runtime::device;

namespace {

const DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

/// Uniform values in [low, high), rounded to the element type.
Tensor randomTensor(DType type, Shape shape, uint64_t seed, double low = -2,
                    double high = 2) {
  Tensor tensor(type, std::move(shape));
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i,
               isFloat(type) ? uniform(engine) : std::floor(uniform(engine)));
  return tensor;
}

Tensor indexTensor(DType type, Shape shape,
                   const std::vector<int64_t> &values) {
  Tensor tensor(type, std::move(shape));
  REQUIRE(tensor.numElements() == static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DType::I32)
      tensor.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    else
      tensor.data<int64_t>()[i] = values[i];
  }
  return tensor;
}

DeviceTensor wrap(const Tensor &tensor) {
  DeviceTensor wrapped;
  wrapped.data = const_cast<std::byte *>(tensor.bytes());
  wrapped.dtype = tensor.dtype();
  wrapped.shape = tensor.shape();
  return wrapped;
}

/// A tensor whose every byte is 0xff: NaN for floats, so that an element
/// the kernel does not write cannot match.
Tensor unwritten(DType type, const Shape &shape) {
  Tensor tensor(type, shape);
  if (tensor.byteSize())
    std::memset(tensor.bytes(), 0xff, tensor.byteSize());
  return tensor;
}

/// The spacing of 16-bit floats at magnitude `value`.
double ulpAt(DType type, double value) {
  int exponent = std::ilogb(std::max(std::fabs(value), 0x1p-14));
  return std::ldexp(1.0, exponent - (type == DType::F16 ? 10 : 7));
}

/// Float elements agree to the type's precision (the device computes f32
/// and 16-bit floats in float, the reference in double); other types bit
/// for bit.
void expectClose(const Tensor &expected, const Tensor &actual) {
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.shape() == expected.shape());
  DType type = expected.dtype();
  size_t width = byteWidth(type);
  int64_t mismatches = 0;
  std::ostringstream first;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    bool same;
    if (!isFloat(type)) {
      same = std::memcmp(expected.bytes() + i * width,
                         actual.bytes() + i * width, width) == 0;
    } else {
      double e = expected.get(i), a = actual.get(i);
      double tolerance = 0;
      if (type == DType::F64)
        tolerance = 1e-12 * std::max(std::fabs(e), 1.0);
      else if (type == DType::F32)
        tolerance = 1e-5 * std::max(std::fabs(e), 1.0);
      else
        tolerance = 3 * ulpAt(type, std::max(std::fabs(e), 0x1p-4));
      same = (std::isnan(e) && std::isnan(a)) || e == a ||
             std::fabs(e - a) <= tolerance;
    }
    if (!same && mismatches++ == 0)
      first << "element " << i << ": expected " << expected.get(i) << ", got "
            << actual.get(i);
  }
  INFO(toString(type) << " " << toString(expected.shape()) << ", " << mismatches
                      << " mismatches; first " << first.str());
  CHECK(mismatches == 0);
}

enum class KernelGroup { Linear, Normalization, Gather, Sampling };

template <class L>
bool launchIn(KernelGroup group, L &launcher, const std::string &op,
              const AttrMap &attrs,
              const std::vector<const DeviceTensor *> &operands,
              const std::vector<DeviceTensor *> &results, Launch &launch,
              Status &status) {
  std::optional<KernelId> id = lookupKernelId(op);
  REQUIRE(id);
  switch (group) {
  case KernelGroup::Linear:
    return launchLinear(launcher, *id, attrs, operands, results, launch,
                        status);
  case KernelGroup::Normalization:
    return launchNormalization(launcher, *id, attrs, operands, results, launch,
                               status);
  case KernelGroup::Gather:
    return launchGather(launcher, *id, attrs, operands, results, launch,
                        status);
  case KernelGroup::Sampling:
    return launchSampling(launcher, *id, attrs, operands, results, launch,
                          status);
  }
  return false;
}

struct ResultSpec {
  DType type;
  Shape shape;
};

/// What the device launch of one op did, beside the reference.
struct Outcome {
  Status reference;
  std::vector<Tensor> expected, actual;
  bool inGroup = false;
  Launch launch = Launch::Unsupported;
  Status status;
  int error = 0;
};

/// `parallelism`: the launcher's (HostLauncher::setParallelism); above 1,
/// the kernels take the split paths they take on a GPU. `lanes`: threads
/// per row (HostLauncher::setLanes), as a GPU block's.
Outcome runBoth(KernelGroup group, const std::string &op, const AttrMap &attrs,
                const std::vector<const Tensor *> &operands,
                const std::vector<ResultSpec> &specs, int64_t parallelism = 1,
                int lanes = 1) {
  Outcome outcome;
  std::vector<Tensor *> expectedPtrs, actualPtrs;
  for (const ResultSpec &spec : specs) {
    outcome.expected.emplace_back(spec.type, spec.shape);
    outcome.actual.push_back(unwritten(spec.type, spec.shape));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    expectedPtrs.push_back(&outcome.expected[i]);
    actualPtrs.push_back(&outcome.actual[i]);
  }
  outcome.reference = runKernel(op, attrs, operands, expectedPtrs);

  AttrMap resolved;
  Status resolving =
      resolveKernelAttrs(op, attrs, operands, actualPtrs, resolved);
  INFO(resolving.error);
  REQUIRE(resolving.ok());
  std::vector<DeviceTensor> inputs(operands.size()), outputs(specs.size());
  std::vector<const DeviceTensor *> inputPtrs;
  std::vector<DeviceTensor *> outputPtrs;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i])
      inputs[i] = wrap(*operands[i]);
    inputPtrs.push_back(operands[i] ? &inputs[i] : nullptr);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    outputs[i] = wrap(outcome.actual[i]);
    outputPtrs.push_back(&outputs[i]);
  }
  HostLauncher launcher;
  launcher.setParallelism(parallelism);
  launcher.setLanes(lanes);
  outcome.inGroup = launchIn(group, launcher, op, resolved, inputPtrs,
                             outputPtrs, outcome.launch, outcome.status);
  outcome.error = launcher.takeError();
  return outcome;
}

/// Runs `op` both ways and expects the device to have launched and to
/// agree with the reference on every result.
void expectSame(KernelGroup group, const std::string &op, const AttrMap &attrs,
                const std::vector<const Tensor *> &operands,
                const std::vector<ResultSpec> &specs, int64_t parallelism = 1,
                int lanes = 1) {
  Outcome outcome =
      runBoth(group, op, attrs, operands, specs, parallelism, lanes);
  INFO("nn." << op);
  {
    INFO(outcome.reference.error);
    REQUIRE(outcome.reference.ok());
  }
  REQUIRE(outcome.inGroup);
  REQUIRE(outcome.launch == Launch::Done);
  INFO(outcome.status.error);
  REQUIRE(outcome.status.ok());
  REQUIRE(outcome.error == 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    INFO("result " << i);
    expectClose(outcome.expected[i], outcome.actual[i]);
  }
}

/// Runs `op` on data the reference rejects (an index or label out of
/// range) and expects the device kernel to report it in the error slot.
void expectDataFault(KernelGroup group, const std::string &op,
                     const AttrMap &attrs,
                     const std::vector<const Tensor *> &operands,
                     const std::vector<ResultSpec> &specs) {
  Outcome outcome = runBoth(group, op, attrs, operands, specs);
  INFO("nn." << op);
  CHECK_FALSE(outcome.reference.ok());
  REQUIRE(outcome.inGroup);
  CHECK(outcome.launch == Launch::Done);
  CHECK(outcome.status.ok());
  CHECK(outcome.error != 0);
}

std::string describe(const Shape &a, const Shape &b) {
  return toString(a) + " x " + toString(b);
}

/// The shape without the dimensions `axes` names (all when empty), or with
/// them as 1 (keepdims).
Shape reducedShape(const Shape &shape, std::vector<int64_t> axes,
                   bool keepdims) {
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t axis : axes)
    reduced[axis < 0 ? axis + rank : axis] = true;
  Shape result;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d])
      result.push_back(shape[d]);
    else if (keepdims)
      result.push_back(1);
  }
  return result;
}

} // namespace

//===----------------------------------------------------------------------===//
// Linear.h
//===----------------------------------------------------------------------===//

TEST_CASE("linear: matmul matches the reference for every rank combination",
          "[device][linear]") {
  struct Case {
    Shape lhs, rhs, result;
  };
  const Case cases[] = {
      {{5}, {5}, {}},                             // 1-D x 1-D
      {{4}, {4, 3}, {3}},                         // 1-D x 2-D
      {{4}, {2, 4, 3}, {2, 3}},                   // 1-D x batched
      {{3, 4}, {4}, {3}},                         // 2-D x 1-D
      {{2, 3, 4}, {4}, {2, 3}},                   // batched x 1-D
      {{3, 4}, {4, 5}, {3, 5}},                   // 2-D
      {{2, 3, 3, 4}, {2, 3, 4, 5}, {2, 3, 3, 5}}, // equal batches
      {{2, 3, 3, 4}, {4, 5}, {2, 3, 3, 5}},       // rhs broadcast
      {{3, 4}, {2, 3, 4, 5}, {2, 3, 3, 5}},       // lhs broadcast
      {{2, 3, 3, 4}, {1, 1, 4, 5}, {2, 3, 3, 5}}, // rhs batch of ones
      {{1, 3, 4}, {2, 4, 5}, {2, 3, 5}},          // lhs batch of one
      {{2, 1, 3, 4}, {1, 3, 4, 5}, {2, 3, 3, 5}}, // both broadcast
      {{3, 1, 3, 4}, {2, 4, 5}, {3, 2, 3, 5}},    // both, unequal ranks
      {{2, 3, 4}, {3, 1, 4, 5}, {3, 2, 3, 5}},    // both, the other way
      {{3, 0}, {0, 2}, {3, 2}},                   // empty contraction: zeros
      {{0, 3, 4}, {4, 5}, {0, 3, 5}},             // empty batch
  };
  uint64_t seed = 1;
  for (DType type : kFloatTypes)
    for (const Case &c : cases) {
      INFO(toString(type) << " " << describe(c.lhs, c.rhs));
      Tensor lhs = randomTensor(type, c.lhs, seed++);
      Tensor rhs = randomTensor(type, c.rhs, seed++);
      expectSame(KernelGroup::Linear, "matmul", {}, {&lhs, &rhs},
                 {{type, c.result}});
    }
}

TEST_CASE("linear: matmul reads transposed operands and scales by alpha "
          "as the reference does",
          "[device][linear]") {
  struct Case {
    Shape lhs, rhs, result;
    bool transposeLhs, transposeRhs;
  };
  const Case cases[] = {
      {{4, 3}, {4, 5}, {3, 5}, true, false},                   // 2-D, lhs
      {{3, 4}, {5, 4}, {3, 5}, false, true},                   // 2-D, rhs
      {{4, 3}, {5, 4}, {3, 5}, true, true},                    // 2-D, both
      {{2, 3, 4, 3}, {2, 3, 4, 5}, {2, 3, 3, 5}, true, false}, // batches
      {{2, 3, 3, 4}, {2, 3, 5, 4}, {2, 3, 3, 5}, false, true}, // scores
      {{2, 3, 3, 4}, {5, 4}, {2, 3, 3, 5}, false, true},       // shared weight
      {{8, 3}, {8, 5}, {3, 5}, true, false},                  // weight gradient
      {{2, 1, 4, 3}, {1, 3, 5, 4}, {2, 3, 3, 5}, true, true}, // broadcast
      {{3}, {5, 3}, {5}, false, true},                        // 1-D lhs
  };
  uint64_t seed = 50;
  for (DType type : kFloatTypes)
    for (const Case &c : cases)
      for (double alpha : {1.0, 0.125}) {
        INFO(toString(type)
             << " " << describe(c.lhs, c.rhs) << " transpose " << c.transposeLhs
             << c.transposeRhs << " alpha " << alpha);
        Tensor lhs = randomTensor(type, c.lhs, seed++);
        Tensor rhs = randomTensor(type, c.rhs, seed++);
        AttrMap attrs;
        if (c.transposeLhs)
          attrs["transpose_lhs"] = true;
        if (c.transposeRhs)
          attrs["transpose_rhs"] = true;
        if (alpha != 1.0)
          attrs["alpha"] = alpha;
        expectSame(KernelGroup::Linear, "matmul", attrs, {&lhs, &rhs},
                   {{type, c.result}});
      }
}

TEST_CASE("linear: gemm matches the reference for transposes, alpha, beta "
          "and every broadcast of c",
          "[device][linear]") {
  const int64_t m = 3, k = 4, n = 5;
  const std::vector<Shape> cShapes = {{},     {1},    {n},   {1, n},
                                      {m, 1}, {1, 1}, {m, n}};
  uint64_t seed = 100;
  for (DType type : kFloatTypes)
    for (bool transA : {false, true})
      for (bool transB : {false, true})
        for (bool scaled : {false, true}) {
          Tensor a =
              randomTensor(type, transA ? Shape{k, m} : Shape{m, k}, seed++);
          Tensor b =
              randomTensor(type, transB ? Shape{n, k} : Shape{k, n}, seed++);
          AttrMap attrs{{"trans_a", transA}, {"trans_b", transB}};
          if (scaled) {
            attrs["alpha"] = 0.5;
            attrs["beta"] = -1.75;
          }
          INFO(toString(type) << " trans_a " << transA << " trans_b " << transB
                              << " scaled " << scaled);
          {
            INFO("without c");
            expectSame(KernelGroup::Linear, "gemm", attrs, {&a, &b, nullptr},
                       {{type, {m, n}}});
          }
          for (const Shape &cShape : cShapes) {
            INFO("c " << toString(cShape));
            Tensor c = randomTensor(type, cShape, seed++);
            expectSame(KernelGroup::Linear, "gemm", attrs, {&a, &b, &c},
                       {{type, {m, n}}});
          }
        }
}

TEST_CASE("linear: one strided gemm call unless both batches broadcast",
          "[device][linear]") {
  // Counts the launcher's gemm calls: the batching decision is a
  // performance property the results alone cannot show.
  struct CountingLauncher : HostLauncher {
    int calls = 0;
    Status gemm(const GemmCall &call) {
      ++calls;
      return HostLauncher::gemm(call);
    }
  };
  auto callsFor = [](const Shape &lhsShape, const Shape &rhsShape,
                     const Shape &resultShape) {
    Tensor lhs = randomTensor(DType::F32, lhsShape, 7);
    Tensor rhs = randomTensor(DType::F32, rhsShape, 8);
    Tensor result(DType::F32, resultShape), expected(DType::F32, resultShape);
    REQUIRE(runKernel("matmul", {}, {&lhs, &rhs}, {&expected}).ok());
    DeviceTensor l = wrap(lhs), r = wrap(rhs), out = wrap(result);
    CountingLauncher launcher;
    Launch launch = Launch::Unsupported;
    Status status;
    REQUIRE(launchLinear(launcher, KernelId::MatMul, {}, {&l, &r}, {&out},
                         launch, status));
    REQUIRE(launch == Launch::Done);
    REQUIRE(status.ok());
    expectClose(expected, result);
    return launcher.calls;
  };
  CHECK(callsFor({2, 3, 3, 4}, {2, 3, 4, 5}, {2, 3, 3, 5}) == 1);
  CHECK(callsFor({2, 3, 3, 4}, {4, 5}, {2, 3, 3, 5}) == 1);
  CHECK(callsFor({3, 4}, {2, 3, 4, 5}, {2, 3, 3, 5}) == 1);
  CHECK(callsFor({2, 1, 3, 4}, {1, 3, 4, 5}, {2, 3, 3, 5}) == 6);
}

TEST_CASE("linear: shapes the reference rejects are a failed status",
          "[device][linear]") {
  Tensor lhs = randomTensor(DType::F32, {3, 4}, 1);
  Tensor rhs = randomTensor(DType::F32, {5, 2}, 2);
  Outcome outcome = runBoth(KernelGroup::Linear, "matmul", {}, {&lhs, &rhs},
                            {{DType::F32, {3, 2}}});
  CHECK_FALSE(outcome.reference.ok());
  CHECK(outcome.launch == Launch::Done);
  CHECK_FALSE(outcome.status.ok());
}

//===----------------------------------------------------------------------===//
// Normalization.h
//===----------------------------------------------------------------------===//

TEST_CASE("normalization: softmax and log_softmax on every axis",
          "[device][normalization]") {
  uint64_t seed = 200;
  for (DType type : kFloatTypes)
    for (const char *op : {"softmax", "log_softmax"})
      for (int64_t axis : {0, 1, 2, -1, -2}) {
        INFO(op << " " << toString(type) << " axis " << axis);
        Tensor input = randomTensor(type, {3, 4, 5}, seed++, -4, 4);
        expectSame(KernelGroup::Normalization, op, {{"axis", axis}}, {&input},
                   {{type, {3, 4, 5}}});
      }
  // The default axis is the last.
  Tensor input = randomTensor(DType::F32, {2, 6}, 9);
  expectSame(KernelGroup::Normalization, "softmax", {}, {&input},
             {{DType::F32, {2, 6}}});
  // Logits whose exponentials overflow float: only a softmax that subtracts
  // the row's maximum first gives finite values.
  for (const char *op : {"softmax", "log_softmax"}) {
    Tensor large = randomTensor(DType::F32, {4, 8}, 10, 100, 300);
    expectSame(KernelGroup::Normalization, op, {}, {&large},
               {{DType::F32, {4, 8}}});
  }
}

TEST_CASE("normalization: softmax_grad and log_softmax_grad on every axis",
          "[device][normalization]") {
  uint64_t seed = 300;
  for (DType type : kFloatTypes)
    for (bool logarithm : {false, true})
      for (int64_t axis : {0, 1, 2, -1}) {
        const char *forward = logarithm ? "log_softmax" : "softmax";
        const char *op = logarithm ? "log_softmax_grad" : "softmax_grad";
        INFO(op << " " << toString(type) << " axis " << axis);
        Tensor input = randomTensor(type, {3, 4, 5}, seed++);
        Tensor output(type, {3, 4, 5});
        REQUIRE(runKernel(forward, {{"axis", axis}}, {&input}, {&output}).ok());
        Tensor dy = randomTensor(type, {3, 4, 5}, seed++);
        expectSame(KernelGroup::Normalization, op, {{"axis", axis}},
                   {&dy, &output}, {{type, {3, 4, 5}}});
      }
}

TEST_CASE("normalization: layer_norm over the last axis and over two axes",
          "[device][normalization]") {
  struct Case {
    int64_t axis;
    Shape scale, bias;
    bool withBias;
  };
  const Case cases[] = {
      {-1, {5}, {5}, true},      {-1, {5}, {}, false},
      {2, {1}, {5}, true},       {1, {4, 5}, {4, 5}, true},
      {1, {4, 5}, {}, false},    {1, {5}, {1, 5}, true},
      {1, {4, 1}, {4, 5}, true}, {0, {3, 4, 5}, {5}, true},
  };
  uint64_t seed = 400;
  for (DType type : kFloatTypes)
    for (const Case &c : cases)
      for (bool customEpsilon : {false, true}) {
        INFO(toString(type)
             << " axis " << c.axis << " scale " << toString(c.scale) << " bias "
             << (c.withBias ? toString(c.bias) : "none"));
        Tensor input = randomTensor(type, {3, 4, 5}, seed++);
        Tensor scale = randomTensor(type, c.scale, seed++, 0.5, 1.5);
        Tensor bias = randomTensor(type, c.bias, seed++);
        AttrMap attrs{{"axis", c.axis}};
        if (customEpsilon)
          attrs["epsilon"] = 0.25;
        expectSame(KernelGroup::Normalization, "layer_norm", attrs,
                   {&input, &scale, c.withBias ? &bias : nullptr},
                   {{type, {3, 4, 5}}});
      }
}

TEST_CASE("normalization: layer_norm_grad gives input, scale and bias "
          "gradients, summed over broadcast scales",
          "[device][normalization]") {
  struct Case {
    int64_t axis;
    Shape scale, dScale, dBias;
  };
  const Case cases[] = {
      {-1, {5}, {5}, {5}},
      {1, {4, 5}, {4, 5}, {4, 5}},
      {1, {5}, {5}, {1, 5}},    // scale broadcast over dimension 1
      {1, {4, 5}, {4, 1}, {1}}, // gradients summed to smaller shapes
      {0, {3, 4, 5}, {3, 4, 5}, {4, 5}},
  };
  uint64_t seed = 500;
  for (DType type : kFloatTypes)
    for (const Case &c : cases) {
      INFO(toString(type) << " axis " << c.axis << " scale "
                          << toString(c.scale) << " dScale "
                          << toString(c.dScale) << " dBias "
                          << toString(c.dBias));
      Tensor dy = randomTensor(type, {3, 4, 5}, seed++);
      Tensor input = randomTensor(type, {3, 4, 5}, seed++);
      Tensor scale = randomTensor(type, c.scale, seed++, 0.5, 1.5);
      expectSame(KernelGroup::Normalization, "layer_norm_grad",
                 {{"axis", c.axis}, {"epsilon", 1e-3}}, {&dy, &input, &scale},
                 {{type, {3, 4, 5}}, {type, c.dScale}, {type, c.dBias}});
    }
}

TEST_CASE("normalization: batch_norm with per-channel statistics",
          "[device][normalization]") {
  uint64_t seed = 600;
  for (DType type : kFloatTypes)
    for (const Shape &shape : {Shape{2, 3, 4, 2}, Shape{4, 3}}) {
      INFO(toString(type) << " " << toString(shape));
      Tensor input = randomTensor(type, shape, seed++);
      Tensor scale = randomTensor(type, {3}, seed++);
      Tensor bias = randomTensor(type, {3}, seed++);
      Tensor mean = randomTensor(type, {3}, seed++);
      Tensor variance = randomTensor(type, {3}, seed++, 0.5, 1.5);
      expectSame(KernelGroup::Normalization, "batch_norm", {{"epsilon", 0.01}},
                 {&input, &scale, &bias, &mean, &variance}, {{type, shape}});
    }
}

TEST_CASE("normalization: reduce_sum and reduce_mean over axis sets",
          "[device][normalization]") {
  const std::vector<std::vector<int64_t>> axisSets = {
      {}, {0}, {1}, {2}, {-1}, {0, 2}, {1, -1}, {0, 1, 2}, {2, 0, 2}};
  const DType types[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                         DType::I32, DType::I64, DType::I8,  DType::I1};
  uint64_t seed = 700;
  for (DType type : types)
    for (const char *op : {"reduce_sum", "reduce_mean"})
      for (const std::vector<int64_t> &axes : axisSets)
        for (bool keepdims : {false, true}) {
          Shape shape{3, 4, 5};
          Tensor input = type == DType::I1
                             ? randomTensor(type, shape, seed++, 0, 2)
                             : randomTensor(type, shape, seed++, -50, 50);
          INFO(op << " " << toString(type) << " axes " << toString(axes)
                  << " keepdims " << keepdims);
          AttrMap attrs{{"keepdims", keepdims}};
          if (!axes.empty())
            attrs["axes"] = axes;
          expectSame(KernelGroup::Normalization, op, attrs, {&input},
                     {{type, reducedShape(shape, axes, keepdims)}});
        }
}

TEST_CASE("normalization: sums split for a launcher that wants many threads "
          "add their chunks in order",
          "[device][normalization]") {
  // Parallelism 64: reductions to few results split their sums into chunks
  // of at least 8 elements (partials, then a row per result over them); a
  // sum over trailing dimensions of 64 elements or more is a row of lanes.
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {
      {{256, 4}, {0}},       // 4 results, 16 chunks of 16 rows
      {{64, 3, 70}, {0, 2}}, // 3 results, 21 chunks across two axes
      {{50, 3}, {0}},        // 6 chunks, the last shorter than the others
      {{4, 128}, {-1}},      // rows of lanes
      {{2, 3, 20}, {1, 2}},  // trailing but short: one thread per result
  };
  uint64_t seed = 750;
  for (DType type : {DType::F32, DType::F64, DType::BF16})
    for (const char *op : {"reduce_sum", "reduce_mean"})
      for (const Case &c : cases) {
        INFO(op << " " << toString(type) << " " << toString(c.shape) << " axes "
                << toString(c.axes));
        Tensor input = randomTensor(type, c.shape, seed++, -50, 50);
        expectSame(KernelGroup::Normalization, op, {{"axes", c.axes}}, {&input},
                   {{type, reducedShape(c.shape, c.axes, false)}}, 64);
      }
  // Trailing, but too few results for a block each (a loss's mean): 64
  // chunks each.
  for (const char *op : {"reduce_sum", "reduce_mean"}) {
    INFO(op << " to few results");
    Tensor input = randomTensor(DType::F32, {2, 512}, seed++, -50, 50);
    expectSame(KernelGroup::Normalization, op,
               {{"axes", std::vector<int64_t>{-1}}}, {&input},
               {{DType::F32, {2}}}, 4096);
  }
  // The scale and bias gradients of 64 rows of 5 columns: 8 chunks.
  for (DType type : {DType::F32, DType::F64}) {
    INFO(toString(type));
    Tensor dy = randomTensor(type, {64, 5}, seed++);
    Tensor input = randomTensor(type, {64, 5}, seed++);
    Tensor scale = randomTensor(type, {5}, seed++, 0.5, 1.5);
    expectSame(KernelGroup::Normalization, "layer_norm_grad",
               {{"axis", int64_t{-1}}, {"epsilon", 1e-3}},
               {&dy, &input, &scale},
               {{type, {64, 5}}, {type, {5}}, {type, {5}}}, 64);
    // Scale gradients summed further, to a broadcast shape.
    Tensor dy3 = randomTensor(type, {40, 4, 5}, seed++);
    Tensor input3 = randomTensor(type, {40, 4, 5}, seed++);
    Tensor scale3 = randomTensor(type, {4, 5}, seed++, 0.5, 1.5);
    expectSame(KernelGroup::Normalization, "layer_norm_grad",
               {{"axis", int64_t{1}}, {"epsilon", 1e-3}},
               {&dy3, &input3, &scale3},
               {{type, {40, 4, 5}}, {type, {4, 1}}, {type, {1}}}, 64);
  }
}

TEST_CASE("normalization: rows shared by several lanes, as on a GPU",
          "[device][normalization]") {
  // 3 and 4 threads per row (HostLauncher::setLanes): every lane takes a
  // strided part of the row, and the sums and maxima combine across lanes.
  uint64_t seed = 900;
  for (int lanes : {3, 4}) {
    INFO(lanes << " lanes");
    for (const char *op : {"softmax", "log_softmax"}) {
      Tensor input = randomTensor(DType::F32, {3, 4, 37}, seed++, -4, 4);
      expectSame(KernelGroup::Normalization, op, {{"axis", int64_t{-1}}},
                 {&input}, {{DType::F32, {3, 4, 37}}}, 1, lanes);
      // Strided rows: the slice along axis 1.
      expectSame(KernelGroup::Normalization, op, {{"axis", int64_t{1}}},
                 {&input}, {{DType::F32, {3, 4, 37}}}, 1, lanes);
      Tensor output(DType::F32, {3, 4, 37});
      REQUIRE(runKernel(op, {{"axis", int64_t{-1}}}, {&input}, {&output}).ok());
      Tensor dy = randomTensor(DType::F32, {3, 4, 37}, seed++);
      expectSame(KernelGroup::Normalization, std::string(op) + "_grad",
                 {{"axis", int64_t{-1}}}, {&dy, &output},
                 {{DType::F32, {3, 4, 37}}}, 1, lanes);
    }
    Tensor input = randomTensor(DType::F32, {6, 41}, seed++);
    Tensor scale = randomTensor(DType::F32, {41}, seed++, 0.5, 1.5);
    Tensor bias = randomTensor(DType::F32, {41}, seed++);
    expectSame(KernelGroup::Normalization, "layer_norm", {{"axis", int64_t{1}}},
               {&input, &scale, &bias}, {{DType::F32, {6, 41}}}, 1, lanes);
    Tensor dy = randomTensor(DType::F32, {6, 41}, seed++);
    expectSame(KernelGroup::Normalization, "layer_norm_grad",
               {{"axis", int64_t{1}}, {"epsilon", 1e-3}}, {&dy, &input, &scale},
               {{DType::F32, {6, 41}}, {DType::F32, {41}}, {DType::F32, {41}}},
               1, lanes);
    Tensor logits = randomTensor(DType::F32, {5, 29}, seed++, -3, 3);
    Tensor labels(DType::I64, {5});
    for (int64_t i = 0; i < 5; ++i)
      labels.set(i, static_cast<double>((7 * i + 3) % 29));
    Tensor dLoss = randomTensor(DType::F32, {5}, seed++);
    expectSame(KernelGroup::Normalization, "softmax_cross_entropy", {},
               {&logits, &labels}, {{DType::F32, {5}}}, 1, lanes);
    expectSame(KernelGroup::Normalization, "softmax_cross_entropy_grad", {},
               {&dLoss, &logits, &labels}, {{DType::F32, {5, 29}}}, 1, lanes);
    // A row per result of a reduction over trailing dimensions (64 or more
    // elements, parallelism 64).
    Tensor wide = randomTensor(DType::F32, {4, 130}, seed++, -50, 50);
    for (const char *reduce : {"reduce_sum", "reduce_mean"})
      expectSame(KernelGroup::Normalization, reduce,
                 {{"axes", std::vector<int64_t>{-1}}}, {&wide},
                 {{DType::F32, {4}}}, 64, lanes);
    // Chunk sums added as rows of lanes: a reduction over leading axes and
    // layer_norm_grad's scale and bias (parallelism 64: 16 and 8 chunks).
    Tensor tall = randomTensor(DType::F32, {256, 4}, seed++, -50, 50);
    for (const char *reduce : {"reduce_sum", "reduce_mean"})
      expectSame(KernelGroup::Normalization, reduce,
                 {{"axes", std::vector<int64_t>{0}}}, {&tall},
                 {{DType::F32, {4}}}, 64, lanes);
    Tensor dyTall = randomTensor(DType::F32, {64, 5}, seed++);
    Tensor inputTall = randomTensor(DType::F32, {64, 5}, seed++);
    Tensor scaleTall = randomTensor(DType::F32, {5}, seed++, 0.5, 1.5);
    expectSame(KernelGroup::Normalization, "layer_norm_grad",
               {{"axis", int64_t{-1}}, {"epsilon", 1e-3}},
               {&dyTall, &inputTall, &scaleTall},
               {{DType::F32, {64, 5}}, {DType::F32, {5}}, {DType::F32, {5}}},
               64, lanes);
  }
}

TEST_CASE("normalization: i1 reductions read any non-zero byte as true",
          "[device][normalization]") {
  // A mean of the raw bytes would round {0, 7, 0} and {2, 0, 2} to true.
  Tensor flags(DType::I1, {2, 3});
  const uint8_t bytes[] = {0, 7, 0, 2, 0, 2};
  std::memcpy(flags.bytes(), bytes, sizeof(bytes));
  for (const char *op : {"reduce_sum", "reduce_mean"}) {
    INFO(op);
    expectSame(KernelGroup::Normalization, op, {{"axes", {1}}}, {&flags},
               {{DType::I1, {2}}});
  }
}

TEST_CASE("normalization: softmax_cross_entropy and its gradient",
          "[device][normalization]") {
  uint64_t seed = 800;
  for (DType type : kFloatTypes)
    for (DType labelType : {DType::I32, DType::I64}) {
      INFO(toString(type) << " labels " << toString(labelType));
      Tensor logits = randomTensor(type, {2, 3, 5}, seed++, -4, 4);
      Tensor labels = indexTensor(labelType, {2, 3}, {0, 4, 2, 1, 4, 3});
      Tensor dLosses = randomTensor(type, {2, 3}, seed++);
      expectSame(KernelGroup::Normalization, "softmax_cross_entropy", {},
                 {&logits, &labels}, {{type, {2, 3}}});
      expectSame(KernelGroup::Normalization, "softmax_cross_entropy_grad", {},
                 {&dLosses, &logits, &labels}, {{type, {2, 3, 5}}});
    }
  // Logits whose exponentials overflow float.
  Tensor large = randomTensor(DType::F32, {3, 6}, 11, 100, 300);
  Tensor someLabels = indexTensor(DType::I32, {3}, {0, 5, 2});
  Tensor someDLosses = randomTensor(DType::F32, {3}, 12);
  expectSame(KernelGroup::Normalization, "softmax_cross_entropy", {},
             {&large, &someLabels}, {{DType::F32, {3}}});
  expectSame(KernelGroup::Normalization, "softmax_cross_entropy_grad", {},
             {&someDLosses, &large, &someLabels}, {{DType::F32, {3, 6}}});
  // One position without a leading dimension: logits [classes].
  Tensor logits = randomTensor(DType::F32, {7}, 3);
  Tensor label = indexTensor(DType::I64, {}, {6});
  expectSame(KernelGroup::Normalization, "softmax_cross_entropy", {},
             {&logits, &label}, {{DType::F32, {}}});
}

TEST_CASE("normalization: a label out of range sets the error slot",
          "[device][normalization]") {
  Tensor logits = randomTensor(DType::F32, {4, 5}, 1);
  Tensor dLosses = randomTensor(DType::F32, {4}, 2);
  for (int64_t bad : {5, -1}) {
    INFO("label " << bad);
    Tensor labels = indexTensor(DType::I32, {4}, {0, 1, bad, 3});
    expectDataFault(KernelGroup::Normalization, "softmax_cross_entropy", {},
                    {&logits, &labels}, {{DType::F32, {4}}});
    expectDataFault(KernelGroup::Normalization, "softmax_cross_entropy_grad",
                    {}, {&dLosses, &logits, &labels}, {{DType::F32, {4, 5}}});
  }
}

//===----------------------------------------------------------------------===//
// Gather.h
//===----------------------------------------------------------------------===//

TEST_CASE("gather: every axis, negative indices, any element type",
          "[device][gather]") {
  const Shape table{5, 3, 4};
  const DType types[] = {DType::F32,  DType::F64, DType::F16,
                         DType::BF16, DType::I64, DType::I8};
  uint64_t seed = 900;
  for (DType type : types)
    for (DType indexType : {DType::I32, DType::I64})
      for (int64_t axis : {0, 1, 2, -1}) {
        int64_t rank = static_cast<int64_t>(table.size());
        int64_t bound = table[axis < 0 ? axis + rank : axis];
        INFO(toString(type)
             << " indices " << toString(indexType) << " axis " << axis);
        Tensor input = randomTensor(type, table, seed++, -100, 100);
        Tensor indices =
            indexTensor(indexType, {2, 3}, {0, bound - 1, -1, -bound, 1, 0});
        Shape result(table);
        int64_t at = axis < 0 ? axis + rank : axis;
        result.erase(result.begin() + at);
        result.insert(result.begin() + at, {2, 3});
        expectSame(KernelGroup::Gather, "gather", {{"axis", axis}},
                   {&input, &indices}, {{type, result}});
      }
}

TEST_CASE("gather: an index out of range sets the error slot",
          "[device][gather]") {
  Tensor input = randomTensor(DType::F32, {5, 3}, 1);
  for (int64_t bad : {5, -6}) {
    INFO("index " << bad);
    Tensor indices = indexTensor(DType::I64, {3}, {0, bad, 4});
    expectDataFault(KernelGroup::Gather, "gather", {}, {&input, &indices},
                    {{DType::F32, {3, 3}}});
    Tensor dy = randomTensor(DType::F32, {3, 3}, 2);
    expectDataFault(KernelGroup::Gather, "gather_grad", {}, {&dy, &indices},
                    {{DType::F32, {5, 3}}});
  }
}

TEST_CASE("gather: gather_grad adds repeated indices", "[device][gather]") {
  uint64_t seed = 1000;
  for (DType type : kFloatTypes)
    for (int64_t axis : {0, 1, -1}) {
      INFO(toString(type) << " axis " << axis);
      Shape table{5, 4, 5};
      int64_t at = axis < 0 ? axis + 3 : axis;
      // Row 1 three times (once as -4 or -3), row 0 once, the rest never.
      int64_t bound = table[at];
      Tensor indices =
          indexTensor(DType::I32, {2, 3}, {1, 3, 1, 1 - bound, 0, 3});
      Shape dyShape(table);
      dyShape.erase(dyShape.begin() + at);
      dyShape.insert(dyShape.begin() + at, {2, 3});
      Tensor dy = randomTensor(type, dyShape, seed++);
      expectSame(KernelGroup::Gather, "gather_grad", {{"axis", axis}},
                 {&dy, &indices}, {{type, table}});
    }
}

TEST_CASE("gather: shards give zero rows and skip rows they do not hold",
          "[device][gather]") {
  // A block of rows [2, 4) of a 6-row table, split along the axis.
  const int64_t offset = 2, extent = 6, rows = 2;
  uint64_t seed = 1100;
  for (DType type : kFloatTypes)
    for (int64_t axis : {0, 1}) {
      INFO(toString(type) << " axis " << axis);
      Shape block = axis == 0 ? Shape{rows, 3} : Shape{3, rows};
      Tensor table = randomTensor(type, block, seed++);
      Tensor indices = indexTensor(DType::I64, {5}, {2, 0, 3, -3, 5});
      Shape gathered = axis == 0 ? Shape{5, 3} : Shape{3, 5};
      AttrMap attrs{{"axis", axis}, {"offset", offset}, {"extent", extent}};
      expectSame(KernelGroup::Gather, "gather_shard", attrs, {&table, &indices},
                 {{type, gathered}});
      Tensor dy = randomTensor(type, gathered, seed++);
      expectSame(KernelGroup::Gather, "gather_grad_shard", attrs,
                 {&dy, &indices}, {{type, block}});
    }
  Tensor table = randomTensor(DType::F32, {rows, 3}, 1);
  Tensor dy = randomTensor(DType::F32, {2, 3}, 2);
  AttrMap attrs{{"offset", offset}, {"extent", extent}};
  SECTION("an index outside the whole table is a data fault") {
    Tensor indices = indexTensor(DType::I32, {2}, {3, 6});
    expectDataFault(KernelGroup::Gather, "gather_shard", attrs,
                    {&table, &indices}, {{DType::F32, {2, 3}}});
    expectDataFault(KernelGroup::Gather, "gather_grad_shard", attrs,
                    {&dy, &indices}, {{DType::F32, {rows, 3}}});
  }
  SECTION("a block that does not fit the table is a failed status") {
    Tensor indices = indexTensor(DType::I32, {2}, {3, 1});
    AttrMap past{{"offset", int64_t{5}}, {"extent", extent}};
    Outcome outcome = runBoth(KernelGroup::Gather, "gather_shard", past,
                              {&table, &indices}, {{DType::F32, {2, 3}}});
    CHECK_FALSE(outcome.reference.ok());
    CHECK(outcome.launch == Launch::Done);
    CHECK_FALSE(outcome.status.ok());
  }
}

//===----------------------------------------------------------------------===//
// Synthetic.h
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Sampling.h
//===----------------------------------------------------------------------===//

namespace {

/// Resizes that upsample, downsample and keep axes at once, by whole and
/// fractional ratios, at ranks 1 to 4, one extent 1 (align_corners' and
/// pytorch_half_pixel's special case).
const std::vector<std::pair<Shape, Shape>> &resizeShapes() {
  static const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5}, {12}},
      {{7}, {3}},
      {{2, 3, 4}, {2, 6, 3}},
      {{1, 2, 5, 7}, {1, 2, 10, 3}},
      {{2, 1, 4, 4}, {2, 1, 8, 1}},
      {{1, 3, 3}, {1, 7, 5}},
  };
  return shapes;
}

const char *const kCoordinateModes[] = {"half_pixel", "pytorch_half_pixel",
                                        "align_corners", "asymmetric",
                                        "tf_half_pixel_for_nn"};
const char *const kRoundings[] = {"round_prefer_floor", "round_prefer_ceil",
                                  "floor", "ceil"};

} // namespace

TEST_CASE("sampling: resize, nearest and linear, every coordinate mode",
          "[device][sampling]") {
  uint64_t seed = 1200;
  for (DType type : kFloatTypes)
    for (const auto &[in, out] : resizeShapes())
      for (const char *coordinates : kCoordinateModes) {
        INFO(toString(type) << " " << describe(in, out) << " " << coordinates);
        Tensor input = randomTensor(type, in, seed++);
        expectSame(KernelGroup::Sampling, "resize",
                   {{"mode", "linear"}, {"coordinates", coordinates}}, {&input},
                   {{type, out}});
        for (const char *rounding : kRoundings) {
          INFO(rounding);
          expectSame(KernelGroup::Sampling, "resize",
                     {{"mode", "nearest"},
                      {"coordinates", coordinates},
                      {"rounding", rounding}},
                     {&input}, {{type, out}});
        }
      }
}

TEST_CASE("sampling: resize_grad adds every share back, nearest and linear",
          "[device][sampling]") {
  uint64_t seed = 1300;
  for (DType type : kFloatTypes)
    for (const auto &[in, out] : resizeShapes())
      for (const char *coordinates : {"half_pixel", "asymmetric"})
        for (const char *mode : {"nearest", "linear"}) {
          INFO(toString(type) << " " << describe(in, out) << " " << mode << " "
                              << coordinates);
          Tensor dy = randomTensor(type, out, seed++);
          // A whole-ratio nearest upsampling meets several dy elements in
          // one input element: the atomic adds.
          expectSame(KernelGroup::Sampling, "resize_grad",
                     {{"mode", mode}, {"coordinates", coordinates}}, {&dy},
                     {{type, in}}, /*parallelism=*/3);
        }
}

TEST_CASE("sampling: top_k along every axis, ties to the lower index",
          "[device][sampling]") {
  uint64_t seed = 1400;
  const Shape shape{3, 6, 4};
  for (DType type : kFloatTypes)
    for (int64_t axis : {0, 1, 2, -1})
      for (bool largest : {true, false}) {
        int64_t at = axis < 0 ? axis + 3 : axis;
        // Whole numbers in [-3, 3): many ties within a row.
        Tensor input = randomTensor(type, shape, seed++, -3, 3);
        for (int64_t i = 0; i < input.numElements(); ++i)
          input.set(i, std::floor(input.get(i)));
        for (int64_t k : {int64_t{1}, shape[at] / 2, shape[at]}) {
          INFO(toString(type) << " axis " << axis << " k " << k
                              << (largest ? " largest" : " smallest"));
          Shape result(shape);
          result[at] = k;
          expectSame(KernelGroup::Sampling, "top_k",
                     {{"axis", axis}, {"k", k}, {"largest", largest}}, {&input},
                     {{type, result}, {DType::I64, result}});
        }
      }
}

TEST_CASE("sampling: shapes the reference rejects are a failed status",
          "[device][sampling]") {
  Tensor input = randomTensor(DType::F32, {2, 5}, 1);
  Outcome outcome = runBoth(KernelGroup::Sampling, "top_k",
                            {{"axis", int64_t{1}}, {"k", int64_t{6}}}, {&input},
                            {{DType::F32, {2, 6}}, {DType::I64, {2, 6}}});
  CHECK_FALSE(outcome.reference.ok());
  CHECK(outcome.inGroup);
  CHECK_FALSE(outcome.status.ok());
}

TEST_CASE("synthetic: a block drawn by a launcher holds fillBlock's values",
          "[device][synthetic]") {
  const std::vector<int64_t> logical{6, 5, 4};
  const std::vector<int64_t> offsets{3, 0, 2};
  const Shape blockShape{3, 5, 2};
  for (DType type : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    INFO(toString(type));
    Tensor expected(type, blockShape);
    REQUIRE(fillBlock(expected, logical, offsets, 11, "x@step2", 0.5, 7).ok());
    Tensor actual = unwritten(type, blockShape);
    HostLauncher launcher;
    REQUIRE(fillSynthetic(launcher, wrap(actual), logical, offsets,
                          syntheticKey(11, "x@step2"), 0.5, 7));
    for (int64_t i = 0; i < expected.numElements(); ++i)
      CHECK(std::memcmp(actual.bytes() + i * byteWidth(type),
                        expected.bytes() + i * byteWidth(type),
                        byteWidth(type)) == 0);
  }
  // Left to the host: 16-bit floats (rounded in two steps there), an
  // integer without a positive bound, a rank the functor cannot hold.
  HostLauncher launcher;
  Tensor half(DType::BF16, blockShape), ints(DType::I32, blockShape);
  CHECK_FALSE(fillSynthetic(launcher, wrap(half), logical, offsets, 1, 1, 0));
  CHECK_FALSE(fillSynthetic(launcher, wrap(ints), logical, offsets, 1, 1, 0));
  Tensor deep(DType::F32, Shape(kMaxRank + 1, 1));
  std::vector<int64_t> ones(kMaxRank + 1, 1), zeros(kMaxRank + 1, 0);
  CHECK_FALSE(fillSynthetic(launcher, wrap(deep), ones, zeros, 1, 1, 0));
}

//===----------------------------------------------------------------------===//
// Pack.h
//===----------------------------------------------------------------------===//

namespace {

/// The parts of runtime::cutParts (Communicator.cpp), concatenated: what
/// the CPU backend's collectives send.
std::vector<std::byte> cutPartsConcatenated(const Tensor &tensor, int64_t axis,
                                            int64_t parts) {
  std::vector<std::byte> bytes;
  for (const std::vector<std::byte> &part : cutParts(tensor, axis, parts))
    bytes.insert(bytes.end(), part.begin(), part.end());
  return bytes;
}

} // namespace

TEST_CASE("pack: packParts concatenates cutParts and unpackParts inverts it",
          "[device][pack]") {
  struct Case {
    Shape shape;
    int64_t axis, parts;
  };
  const Case cases[] = {
      {{7, 3, 2}, 0, 3},              // uneven along the first axis
      {{2, 7, 3}, 1, 3},              // uneven along a middle axis
      {{2, 3, 7}, 2, 3},              // uneven along the last axis
      {{4, 6, 2}, 1, 2},              // even
      {{2, 2, 3}, 1, 4},              // more parts than indices: two are empty
      {{3, 2}, 1, 5},    {{5}, 0, 1}, // one part
  };
  const DType types[] = {DType::I8, DType::F16, DType::F32, DType::F64};
  uint64_t seed = 1200;
  for (DType type : types)
    for (const Case &c : cases) {
      INFO(toString(type) << " " << toString(c.shape) << " axis " << c.axis
                          << " into " << c.parts);
      Tensor tensor = randomTensor(type, c.shape, seed++, -100, 100);
      std::vector<std::byte> expected =
          cutPartsConcatenated(tensor, c.axis, c.parts);
      REQUIRE(expected.size() == tensor.byteSize());

      std::vector<std::byte> packed(tensor.byteSize(), std::byte{0xff});
      HostLauncher launcher;
      packParts(launcher, wrap(tensor), c.axis, c.parts, packed.data());
      CHECK(packed == expected);

      // partLayout places each part where the concatenation has it.
      PartLayout layout = partLayout(c.shape, c.axis, c.parts);
      REQUIRE(layout.offsets.size() == static_cast<size_t>(c.parts));
      REQUIRE(layout.counts.size() == static_cast<size_t>(c.parts));
      int64_t next = 0;
      for (int64_t p = 0; p < c.parts; ++p) {
        Range range = balancedShard(c.shape[c.axis], c.parts, p);
        int64_t perIndex = tensor.numElements() / c.shape[c.axis];
        CHECK(layout.offsets[p] == next);
        CHECK(layout.counts[p] == range.size * perIndex);
        next += layout.counts[p];
      }
      CHECK(next == tensor.numElements());

      Tensor back = unwritten(type, c.shape);
      DeviceTensor backWrapped = wrap(back);
      unpackParts(launcher, packed.data(), c.axis, c.parts, backWrapped);
      CHECK(std::memcmp(back.bytes(), tensor.bytes(), tensor.byteSize()) == 0);
    }
}

TEST_CASE("pack: a split with nothing before its axis needs no packing",
          "[device][pack]") {
  CHECK(isContiguousSplit({6, 4}, 0));
  CHECK(isContiguousSplit({1, 1, 6, 4}, 2));
  CHECK_FALSE(isContiguousSplit({2, 6, 4}, 1));
  CHECK_FALSE(isContiguousSplit({1, 2, 6}, 2));
  // Where it says so, packing is the identity.
  Tensor tensor = randomTensor(DType::F32, {1, 7, 2}, 5);
  std::vector<std::byte> packed(tensor.byteSize());
  HostLauncher launcher;
  packParts(launcher, wrap(tensor), 1, 3, packed.data());
  CHECK(std::memcmp(packed.data(), tensor.bytes(), tensor.byteSize()) == 0);
}

//===----------------------------------------------------------------------===//
// Dispatch without memory (ProbeLauncher) and group membership
//===----------------------------------------------------------------------===//

namespace {

/// A tensor with a type and a shape and no memory: a kernel that touched
/// it would crash.
DeviceTensor shapeOnly(DType type, Shape shape) {
  DeviceTensor tensor;
  tensor.dtype = type;
  tensor.shape = std::move(shape);
  return tensor;
}

/// Probes `op` with the attributes resolveKernelAttrs gives for these
/// operand and result types and shapes.
Launch probe(KernelGroup group, const std::string &op, const AttrMap &attrs,
             const std::vector<const DeviceTensor *> &operands,
             const std::vector<DeviceTensor *> &results) {
  std::vector<Tensor> inputs, outputs;
  inputs.reserve(operands.size());
  outputs.reserve(results.size());
  std::vector<const Tensor *> inputPtrs;
  std::vector<Tensor *> outputPtrs;
  for (const DeviceTensor *operand : operands) {
    if (operand)
      inputs.push_back(Tensor::withoutStorage(operand->dtype, operand->shape));
    inputPtrs.push_back(operand ? &inputs.back() : nullptr);
  }
  for (DeviceTensor *result : results) {
    outputs.push_back(Tensor::withoutStorage(result->dtype, result->shape));
    outputPtrs.push_back(&outputs.back());
  }
  AttrMap resolved;
  Status resolving =
      resolveKernelAttrs(op, attrs, inputPtrs, outputPtrs, resolved);
  INFO(resolving.error);
  REQUIRE(resolving.ok());
  ProbeLauncher launcher;
  Launch launch = Launch::Unsupported;
  Status status;
  REQUIRE(launchIn(group, launcher, op, resolved, operands, results, launch,
                   status));
  CHECK(status.ok());
  return launch;
}

} // namespace

TEST_CASE("probe: supported cases launch nothing, others are Unsupported",
          "[device][probe]") {
  DeviceTensor a = shapeOnly(DType::F32, {2, 3, 4});
  DeviceTensor b = shapeOnly(DType::F32, {4, 5});
  DeviceTensor ab = shapeOnly(DType::F32, {2, 3, 5});
  CHECK(probe(KernelGroup::Linear, "matmul", {}, {&a, &b}, {&ab}) ==
        Launch::Done);

  DeviceTensor ai = shapeOnly(DType::I32, {2, 3, 4});
  DeviceTensor bi = shapeOnly(DType::I32, {4, 5});
  DeviceTensor abi = shapeOnly(DType::I32, {2, 3, 5});
  CHECK(probe(KernelGroup::Linear, "matmul", {}, {&ai, &bi}, {&abi}) ==
        Launch::Unsupported);

  DeviceTensor g = shapeOnly(DType::BF16, {3, 4});
  DeviceTensor h = shapeOnly(DType::BF16, {4, 5});
  DeviceTensor c = shapeOnly(DType::BF16, {5});
  DeviceTensor gh = shapeOnly(DType::BF16, {3, 5});
  CHECK(probe(KernelGroup::Linear, "gemm", {}, {&g, &h, &c}, {&gh}) ==
        Launch::Done);

  Shape rank9{1, 1, 1, 1, 1, 1, 1, 2, 3};
  DeviceTensor deep = shapeOnly(DType::F32, rank9);
  DeviceTensor deepOut = shapeOnly(DType::F32, rank9);
  CHECK(probe(KernelGroup::Normalization, "softmax", {}, {&deep}, {&deepOut}) ==
        Launch::Unsupported);
  DeviceTensor deepSum = shapeOnly(DType::F32, {});
  CHECK(probe(KernelGroup::Normalization, "reduce_sum", {}, {&deep},
              {&deepSum}) == Launch::Unsupported);
  DeviceTensor deepRhs = shapeOnly(DType::F32, {3, 2});
  DeviceTensor deepProduct = shapeOnly(DType::F32, {1, 1, 1, 1, 1, 1, 1, 2, 2});
  CHECK(probe(KernelGroup::Linear, "matmul", {}, {&deep, &deepRhs},
              {&deepProduct}) == Launch::Unsupported);

  DeviceTensor x = shapeOnly(DType::F16, {3, 4, 5});
  DeviceTensor scale = shapeOnly(DType::F16, {5});
  DeviceTensor dx = shapeOnly(DType::F16, {3, 4, 5});
  DeviceTensor dScale = shapeOnly(DType::F16, {5});
  DeviceTensor dBias = shapeOnly(DType::F16, {5});
  CHECK(probe(KernelGroup::Normalization, "layer_norm_grad", {},
              {&x, &x, &scale}, {&dx, &dScale, &dBias}) == Launch::Done);

  DeviceTensor ints = shapeOnly(DType::I32, {3, 4});
  DeviceTensor intSum = shapeOnly(DType::I32, {4});
  CHECK(probe(KernelGroup::Normalization, "reduce_sum", {{"axes", {0}}},
              {&ints}, {&intSum}) == Launch::Done);

  DeviceTensor logits = shapeOnly(DType::F32, {4, 5});
  DeviceTensor labels = shapeOnly(DType::I32, {4});
  DeviceTensor losses = shapeOnly(DType::F32, {4});
  CHECK(probe(KernelGroup::Normalization, "softmax_cross_entropy", {},
              {&logits, &labels}, {&losses}) == Launch::Done);

  DeviceTensor table = shapeOnly(DType::BF16, {6, 3});
  DeviceTensor indices = shapeOnly(DType::I64, {4});
  DeviceTensor rows = shapeOnly(DType::BF16, {4, 3});
  CHECK(probe(KernelGroup::Gather, "gather_grad", {}, {&rows, &indices},
              {&table}) == Launch::Done);
  CHECK(probe(KernelGroup::Gather, "gather", {}, {&table, &indices}, {&rows}) ==
        Launch::Done);
  DeviceTensor smallIndices = shapeOnly(DType::I8, {4});
  CHECK(probe(KernelGroup::Gather, "gather", {}, {&table, &smallIndices},
              {&rows}) == Launch::Unsupported);
}

TEST_CASE("probe: each group claims its own ops only", "[device][probe]") {
  ProbeLauncher launcher;
  Launch launch = Launch::Done;
  Status status;
  auto claims = [&](KernelGroup group, const std::string &op) {
    return launchIn(group, launcher, op, {}, {}, {}, launch, status);
  };
  for (const char *op : {"matmul", "gemm"}) {
    CHECK(claims(KernelGroup::Linear, op));
    CHECK_FALSE(claims(KernelGroup::Normalization, op));
    CHECK_FALSE(claims(KernelGroup::Gather, op));
  }
  for (const char *op :
       {"softmax", "log_softmax", "softmax_grad", "log_softmax_grad",
        "layer_norm", "layer_norm_grad", "batch_norm", "reduce_sum",
        "reduce_mean", "softmax_cross_entropy", "softmax_cross_entropy_grad"}) {
    CHECK(claims(KernelGroup::Normalization, op));
    CHECK_FALSE(claims(KernelGroup::Linear, op));
    CHECK_FALSE(claims(KernelGroup::Gather, op));
  }
  for (const char *op :
       {"gather", "gather_grad", "gather_shard", "gather_grad_shard"}) {
    CHECK(claims(KernelGroup::Gather, op));
    CHECK_FALSE(claims(KernelGroup::Linear, op));
    CHECK_FALSE(claims(KernelGroup::Normalization, op));
  }
  for (const char *op : {"resize", "resize_grad", "top_k"}) {
    CHECK(claims(KernelGroup::Sampling, op));
    CHECK_FALSE(claims(KernelGroup::Linear, op));
    CHECK_FALSE(claims(KernelGroup::Gather, op));
  }
  for (const char *op : {"add", "conv", "transpose", "adam_update"}) {
    CHECK_FALSE(claims(KernelGroup::Linear, op));
    CHECK_FALSE(claims(KernelGroup::Normalization, op));
    CHECK_FALSE(claims(KernelGroup::Gather, op));
    CHECK_FALSE(claims(KernelGroup::Sampling, op));
  }
  // A claimed op with the wrong operand count launches nothing.
  CHECK(claims(KernelGroup::Linear, "matmul"));
  CHECK(launch == Launch::Unsupported);
}
