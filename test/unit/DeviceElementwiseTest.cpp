//===- DeviceElementwiseTest.cpp - device kernels against the reference ---===//
//
// The CUDA backend's elementwise, data movement and optimizer kernels
// (lib/Runtime/Device), run on the host through HostLauncher and compared
// element by element with the reference kernels that runKernel calls, on
// the same inputs and with the attributes resolveKernelAttrs resolves. The
// device results start filled with a byte pattern (a NaN or a huge value
// in every float type), so an element a kernel fails to write shows up.
//
// Float64 must agree to 1e-12 relative, float32 to 1e-5 (both relative to
// at least a floor, for results that cancel to near zero), and the 16-bit
// types to two units in the last place; data movement, where, integer
// arithmetic and cast must agree bit for bit.
//
// Every successful launch is also probed with ProbeLauncher on tensors
// without memory: it must answer Done as well, so that what the backend
// decides at load time matches what it launches.
//
//===----------------------------------------------------------------------===//

#include "Device/Elementwise.h"
#include "Device/HostLauncher.h"
#include "Device/Movement.h"
#include "Device/Optimizers.h"
#include "parplan/Runtime/KernelCall.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace parplan::runtime;
using namespace parplan::runtime::device;

namespace {

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

constexpr DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16,
                                 DType::BF16};
constexpr DType kAllTypes[] = {DType::F16, DType::BF16, DType::F32, DType::F64,
                               DType::I1,  DType::I8,   DType::I32, DType::I64};
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

/// Uniform floats in [lo, hi), or integers in [lo, hi] (0 or 1 for i1),
/// from `seed`.
Tensor random(DType type, const Shape &shape, uint64_t seed, double lo = -3,
              double hi = 3) {
  Tensor tensor(type, shape);
  std::mt19937_64 rng(seed);
  if (isFloat(type)) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      tensor.set(i, dist(rng));
    return tensor;
  }
  std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo),
                                              static_cast<int64_t>(hi));
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    int64_t value = type == DType::I1 ? dist(rng) & 1 : dist(rng);
    switch (type) {
    case DType::I1:
      tensor.data<uint8_t>()[i] = static_cast<uint8_t>(value);
      break;
    case DType::I8:
      tensor.data<int8_t>()[i] = static_cast<int8_t>(value);
      break;
    case DType::I32:
      tensor.data<int32_t>()[i] = static_cast<int32_t>(value);
      break;
    default:
      tensor.data<int64_t>()[i] = value;
      break;
    }
  }
  return tensor;
}

/// The full range of an integer type, for `random`.
std::pair<double, double> fullRange(DType type) {
  switch (type) {
  case DType::I8:
    return {-128, 127};
  case DType::I32:
    return {-2147483648.0, 2147483647.0};
  case DType::I64:
    // uniform_int_distribution over [lo, hi] needs hi - lo to fit.
    return {-4.6e18, 4.6e18};
  default:
    return {0, 1};
  }
}

/// Overwrites the first elements with `values` (rounded to the type), for
/// special values and boundaries among random ones.
void setLeading(Tensor &tensor, const std::vector<double> &values) {
  for (size_t i = 0; i < values.size() && int64_t(i) < tensor.numElements();
       ++i)
    tensor.set(static_cast<int64_t>(i), values[i]);
}

DeviceTensor view(const Tensor &tensor) {
  return {const_cast<std::byte *>(tensor.bytes()), tensor.dtype(),
          tensor.shape()};
}

/// A tensor for ProbeLauncher: a type and a shape, no memory.
DeviceTensor shapeOnly(DType type, const Shape &shape) {
  return {nullptr, type, shape};
}

std::string describe(const std::string &op, const AttrMap &attrs,
                     const std::vector<const Tensor *> &operands) {
  std::string text = "nn." + op;
  for (const auto &[name, value] : attrs) {
    text += " " + name + "=";
    if (const double *v = value.getFloat())
      text += std::to_string(*v);
    else if (const int64_t *v = value.getInt())
      text += std::to_string(*v);
    else if (const bool *v = value.getBool())
      text += *v ? "true" : "false";
    else if (const std::string *v = value.getString())
      text += *v;
    else if (const std::vector<int64_t> *v = value.getInts())
      text += toString(*v);
  }
  for (const Tensor *operand : operands)
    text += operand ? std::string(" ") + toString(operand->dtype()) +
                          toString(operand->shape())
                    : std::string(" (absent)");
  return text;
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

struct Tolerance {
  double f64Relative = 1e-12, f64Floor = 1e-3;
  double f32Relative = 1e-5, f32Floor = 1e-2;
  int64_t halfUlps = 2;
  double halfFloor = 1e-6;

  /// Bit for bit (NaNs of any payload agree).
  static Tolerance exact() { return {0, 0, 0, 0, 0, 0}; }
  /// For results that cancel (gradients): a larger absolute floor.
  static Tolerance cancelling() {
    Tolerance tolerance;
    tolerance.f64Floor = tolerance.f32Floor = 0.1;
    tolerance.halfFloor = 1e-5;
    return tolerance;
  }
};

/// A 16-bit float's position on the number line, so that neighbours
/// differ by one.
int64_t orderedHalf(uint16_t bits) {
  int64_t magnitude = bits & 0x7fff;
  return bits & 0x8000 ? -magnitude : magnitude;
}

bool elementAgrees(const Tensor &expected, const Tensor &actual, int64_t i,
                   const Tolerance &tolerance) {
  DType type = expected.dtype();
  if (!isFloat(type)) {
    size_t width = byteWidth(type);
    return std::memcmp(expected.bytes() + i * width, actual.bytes() + i * width,
                       width) == 0;
  }
  double e = expected.get(i), a = actual.get(i);
  if (std::isnan(e) || std::isnan(a))
    return std::isnan(e) && std::isnan(a);
  if (e == a)
    return true;
  if (std::isinf(e) || std::isinf(a))
    return false;
  double difference = std::fabs(e - a);
  switch (type) {
  case DType::F64:
    return difference <=
           tolerance.f64Relative * std::max(std::fabs(e), tolerance.f64Floor);
  case DType::F32:
    return difference <=
           tolerance.f32Relative * std::max(std::fabs(e), tolerance.f32Floor);
  default: {
    int64_t ulps = std::abs(orderedHalf(expected.data<uint16_t>()[i]) -
                            orderedHalf(actual.data<uint16_t>()[i]));
    return ulps <= tolerance.halfUlps || difference <= tolerance.halfFloor;
  }
  }
}

/// One CHECK per tensor; the first disagreeing element is named.
void checkAgrees(const Tensor &expected, const Tensor &actual,
                 const Tolerance &tolerance) {
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.shape() == expected.shape());
  int64_t mismatches = 0, first = -1;
  for (int64_t i = 0; i < expected.numElements(); ++i)
    if (!elementAgrees(expected, actual, i, tolerance) && mismatches++ == 0)
      first = i;
  if (first >= 0)
    INFO("element " << first << ": expected " << expected.get(first) << ", got "
                    << actual.get(first));
  CHECK(mismatches == 0);
}

//===----------------------------------------------------------------------===//
// Running both kernels
//===----------------------------------------------------------------------===//

enum class Group { Elementwise, Movement, Optimizers };

template <class L>
bool launchGroup(Group group, L &launcher, const std::string &op,
                 const AttrMap &attrs,
                 const std::vector<const DeviceTensor *> &operands,
                 const std::vector<DeviceTensor *> &results, Launch &launch,
                 Status &status) {
  std::optional<KernelId> id = lookupKernelId(op);
  REQUIRE(id);
  switch (group) {
  case Group::Elementwise:
    return launchElementwise(launcher, *id, attrs, operands, results, launch,
                             status);
  case Group::Movement:
    return launchMovement(launcher, *id, attrs, operands, results, launch,
                          status);
  case Group::Optimizers:
    return launchOptimizers(launcher, *id, attrs, operands, results, launch,
                            status);
  }
  return false;
}

struct ResultSpec {
  DType type;
  Shape shape;
};

/// A tensor whose every byte is 0x7f: NaN in f16 and bf16, about 3e38 in
/// f32, 1.4e306 in f64, a large integer otherwise.
Tensor garbage(const ResultSpec &spec) {
  Tensor tensor(spec.type, spec.shape);
  if (tensor.byteSize())
    std::memset(tensor.bytes(), 0x7f, tensor.byteSize());
  return tensor;
}

/// The reference's results, or a failed status.
Status reference(const std::string &op, const AttrMap &attrs,
                 const std::vector<const Tensor *> &operands,
                 std::vector<Tensor> &results) {
  std::vector<Tensor *> pointers;
  for (Tensor &result : results)
    pointers.push_back(&result);
  return runKernel(op, attrs, operands, pointers);
}

/// What the device kernels did with one op.
struct DeviceRun {
  bool claimed = false;
  Launch launch = Launch::Unsupported;
  Status status;
  int error = 0;
  /// Calls of the launcher's transposeMatrices.
  int64_t transposedMatrices = 0;
  std::vector<Tensor> results;
};

DeviceRun runOnHost(Group group, const std::string &op, const AttrMap &attrs,
                    const std::vector<const Tensor *> &operands,
                    const std::vector<ResultSpec> &specs) {
  DeviceRun run;
  std::vector<Tensor *> resultPointers;
  for (const ResultSpec &spec : specs)
    run.results.push_back(garbage(spec));
  for (Tensor &result : run.results)
    resultPointers.push_back(&result);
  AttrMap resolved;
  Status resolution =
      resolveKernelAttrs(op, attrs, operands, resultPointers, resolved);
  INFO(resolution.error);
  REQUIRE(resolution.ok());

  // Absent optional operands stay null, as the executor passes them.
  std::vector<DeviceTensor> inViews, outViews;
  for (const Tensor *operand : operands)
    inViews.push_back(operand ? view(*operand) : DeviceTensor{});
  for (Tensor &result : run.results)
    outViews.push_back(view(result));
  std::vector<const DeviceTensor *> ins;
  std::vector<DeviceTensor *> outs;
  for (size_t i = 0; i < inViews.size(); ++i)
    ins.push_back(operands[i] ? &inViews[i] : nullptr);
  for (DeviceTensor &out : outViews)
    outs.push_back(&out);
  HostLauncher launcher;
  run.claimed = launchGroup(group, launcher, op, resolved, ins, outs,
                            run.launch, run.status);
  run.error = launcher.takeError();
  run.transposedMatrices = launcher.transposedMatrices();
  return run;
}

/// What ProbeLauncher answers for these types and shapes.
Launch probe(Group group, const std::string &op, const AttrMap &attrs,
             const std::vector<const Tensor *> &operands,
             const std::vector<ResultSpec> &specs) {
  std::vector<Tensor> described;
  std::vector<Tensor *> resultPointers;
  for (const ResultSpec &spec : specs)
    described.push_back(Tensor::withoutStorage(spec.type, spec.shape));
  for (Tensor &result : described)
    resultPointers.push_back(&result);
  std::vector<const Tensor *> operandShapes;
  std::vector<Tensor> operandStorage;
  operandStorage.reserve(operands.size());
  for (const Tensor *operand : operands)
    if (operand)
      operandStorage.push_back(
          Tensor::withoutStorage(operand->dtype(), operand->shape()));
  for (size_t i = 0, stored = 0; i < operands.size(); ++i)
    operandShapes.push_back(operands[i] ? &operandStorage[stored++] : nullptr);
  AttrMap resolved;
  REQUIRE(resolveKernelAttrs(op, attrs, operandShapes, resultPointers, resolved)
              .ok());

  std::vector<DeviceTensor> inViews, outViews;
  for (const Tensor *operand : operands)
    inViews.push_back(operand ? shapeOnly(operand->dtype(), operand->shape())
                              : DeviceTensor{});
  for (const ResultSpec &spec : specs)
    outViews.push_back(shapeOnly(spec.type, spec.shape));
  std::vector<const DeviceTensor *> ins;
  std::vector<DeviceTensor *> outs;
  for (size_t i = 0; i < inViews.size(); ++i)
    ins.push_back(operands[i] ? &inViews[i] : nullptr);
  for (DeviceTensor &out : outViews)
    outs.push_back(&out);
  ProbeLauncher launcher;
  Launch launch = Launch::Unsupported;
  Status status;
  REQUIRE(
      launchGroup(group, launcher, op, resolved, ins, outs, launch, status));
  REQUIRE(status.ok());
  return launch;
}

/// Runs `op` through the reference and the device kernels and compares
/// every result.
void checkOp(Group group, const std::string &op, const AttrMap &attrs,
             const std::vector<const Tensor *> &operands,
             const std::vector<ResultSpec> &specs,
             const Tolerance &tolerance = {}) {
  INFO(describe(op, attrs, operands));
  std::vector<Tensor> expected;
  for (const ResultSpec &spec : specs)
    expected.emplace_back(spec.type, spec.shape);
  Status status = reference(op, attrs, operands, expected);
  INFO("reference: " << status.error);
  REQUIRE(status.ok());

  DeviceRun run = runOnHost(group, op, attrs, operands, specs);
  INFO("device: " << run.status.error);
  REQUIRE(run.claimed);
  REQUIRE(run.status.ok());
  REQUIRE(run.launch == Launch::Done);
  REQUIRE(run.error == 0);
  for (size_t k = 0; k < expected.size(); ++k) {
    INFO("result " << k);
    checkAgrees(expected[k], run.results[k], tolerance);
  }
  CHECK(probe(group, op, attrs, operands, specs) == Launch::Done);
}

/// The op's data reveals a fault: the reference fails, the device kernel
/// launches and writes the launcher's error code.
void checkFault(Group group, const std::string &op, const AttrMap &attrs,
                const std::vector<const Tensor *> &operands,
                const std::vector<ResultSpec> &specs) {
  INFO(describe(op, attrs, operands));
  std::vector<Tensor> expected;
  for (const ResultSpec &spec : specs)
    expected.emplace_back(spec.type, spec.shape);
  CHECK_FALSE(reference(op, attrs, operands, expected).ok());
  DeviceRun run = runOnHost(group, op, attrs, operands, specs);
  CHECK(run.claimed);
  CHECK(run.status.ok());
  CHECK(run.launch == Launch::Done);
  CHECK(run.error == 1);
}

/// The shapes or attributes are inconsistent: both kernels fail, and the
/// device kernel launches nothing (its results keep their pattern).
void checkRejected(Group group, const std::string &op, const AttrMap &attrs,
                   const std::vector<const Tensor *> &operands,
                   const std::vector<ResultSpec> &specs) {
  INFO(describe(op, attrs, operands));
  std::vector<Tensor> expected;
  for (const ResultSpec &spec : specs)
    expected.emplace_back(spec.type, spec.shape);
  CHECK_FALSE(reference(op, attrs, operands, expected).ok());
  DeviceRun run = runOnHost(group, op, attrs, operands, specs);
  CHECK(run.claimed);
  CHECK_FALSE(run.status.ok());
  for (size_t k = 0; k < specs.size(); ++k)
    CHECK(std::memcmp(run.results[k].bytes(), garbage(specs[k]).bytes(),
                      run.results[k].byteSize()) == 0);
}

struct ShapePair {
  Shape lhs, rhs, result;
};

/// Binary operand shapes: equal, rank 0 and 1, broadcasting on either
/// side and on both, size-1 dimensions, prepended dimensions, empty.
const std::vector<ShapePair> &binaryShapes() {
  static const std::vector<ShapePair> shapes = {
      {{}, {}, {}},
      {{7}, {7}, {7}},
      {{2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}},
      {{2, 1, 4, 1}, {1, 3, 1, 5}, {2, 3, 4, 5}},
      {{3, 1}, {2, 1, 1, 4}, {2, 1, 3, 4}},
      {{4, 5}, {5}, {4, 5}},
      {{5}, {4, 5}, {4, 5}},
      {{2, 3}, {}, {2, 3}},
      {{}, {2, 3}, {2, 3}},
      {{1, 1}, {1}, {1, 1}},
      {{6, 1, 2}, {6, 5, 1}, {6, 5, 2}},
      {{0, 3}, {3}, {0, 3}},
      {{3, 0}, {1, 1}, {3, 0}},
      // By 16-byte vectors for floats of every width (BinaryVectorFunctor):
      // a bias on either side, a residual, a scalar, a bias with a
      // leading 1.
      {{4, 8}, {8}, {4, 8}},
      {{16}, {4, 16}, {4, 16}},
      {{2, 3, 16}, {2, 3, 16}, {2, 3, 16}},
      {{2, 16}, {}, {2, 16}},
      {{3, 8}, {1, 8}, {3, 8}},
  };
  return shapes;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST_CASE("binary float ops match the reference under broadcasting",
          "[device][elementwise]") {
  uint64_t seed = 1;
  for (const char *op : {"add", "sub", "mul", "div", "pow"})
    for (DType type : kFloatTypes)
      for (const ShapePair &shapes : binaryShapes()) {
        bool isPow = std::string(op) == "pow";
        // pow: positive bases, and a negative base with integer exponents.
        Tensor lhs = random(type, shapes.lhs, seed++, isPow ? 0.1 : -3, 3);
        Tensor rhs = random(type, shapes.rhs, seed++, isPow ? -2.5 : -3, 2.5);
        if (isPow && lhs.numElements() > 1 && rhs.numElements() > 1) {
          setLeading(lhs, {-2, 0});
          setLeading(rhs, {3, -1});
        } else if (!isPow) {
          setLeading(rhs, {0, kNaN, kInf}); // div by zero gives infinities
        }
        checkOp(Group::Elementwise, op, {}, {&lhs, &rhs},
                {{type, shapes.result}});
      }
}

TEST_CASE("binary integer ops wrap and truncate like the reference",
          "[device][elementwise]") {
  uint64_t seed = 100;
  for (DType type : {DType::I8, DType::I32, DType::I64, DType::I1})
    for (const ShapePair &shapes : binaryShapes()) {
      auto [lo, hi] = fullRange(type);
      for (const char *op : {"add", "sub", "mul"}) {
        Tensor lhs = random(type, shapes.lhs, seed++, lo, hi);
        Tensor rhs = random(type, shapes.rhs, seed++, lo, hi);
        checkOp(Group::Elementwise, op, {}, {&lhs, &rhs},
                {{type, shapes.result}});
      }
      if (type == DType::I1)
        continue;
      // div: no zero divisors here (a fault, below); the minimum over -1
      // wraps.
      Tensor lhs = random(type, shapes.lhs, seed++, lo, hi);
      Tensor rhs = random(type, shapes.rhs, seed++, 1, 9);
      for (int64_t i = 0; i < rhs.numElements(); i += 2)
        rhs.set(i, -rhs.get(i));
      setLeading(lhs, {lo, -7, 7});
      setLeading(rhs, {-1, 2, -2});
      checkOp(Group::Elementwise, "div", {}, {&lhs, &rhs},
              {{type, shapes.result}});
      // pow: negative exponents of -1, 1 and others, zero to non-negative
      // powers; overflow wraps. No zero meets a negative exponent (a fault,
      // below).
      Tensor base = random(type, shapes.lhs, seed++, 1, 5);
      for (int64_t i = 0; i < base.numElements(); i += 2)
        base.set(i, -base.get(i));
      Tensor exponent = random(type, shapes.rhs, seed++, -3, 40);
      setLeading(base, {-1, 1, 3});
      setLeading(exponent, {-3, -2, -1, 0});
      checkOp(Group::Elementwise, "pow", {}, {&base, &exponent},
              {{type, shapes.result}});
    }
  Tensor zeros(DType::I32, {3});
  Tensor exponents = random(DType::I32, {3}, seed++, 0, 3);
  exponents.set(0, 0);
  checkOp(Group::Elementwise, "pow", {}, {&zeros, &exponents},
          {{DType::I32, {3}}});
}

TEST_CASE("integer faults write the launcher's error code",
          "[device][elementwise]") {
  for (DType type : {DType::I8, DType::I32, DType::I64}) {
    Tensor lhs = random(type, {2, 3}, 7, -50, 50);
    Tensor zeroAmong = random(type, {3}, 8, 1, 5);
    zeroAmong.set(1, 0);
    checkFault(Group::Elementwise, "div", {}, {&lhs, &zeroAmong},
               {{type, {2, 3}}});
    Tensor zeroBase = random(type, {2, 3}, 9, 1, 5);
    zeroBase.set(4, 0);
    Tensor negative = random(type, {}, 10, -3, -1);
    checkFault(Group::Elementwise, "pow", {}, {&zeroBase, &negative},
               {{type, {2, 3}}});
  }
}

TEST_CASE("where selects through a broadcast condition",
          "[device][elementwise]") {
  struct Shapes {
    Shape condition, lhs, rhs, result;
  };
  const Shapes cases[] = {
      {{}, {}, {}, {}},
      {{1, 1, 4, 4}, {2, 3, 4, 4}, {}, {2, 3, 4, 4}},
      {{5}, {3, 1}, {3, 5}, {3, 5}},
      {{2, 1}, {1}, {1, 6}, {2, 6}},
      {{3, 4}, {3, 4}, {3, 4}, {3, 4}},
      {{0, 2}, {2}, {1, 2}, {0, 2}},
      // By 16-byte vectors (WhereVectorFunctor) for every word size: a
      // mask over leading dimensions with a scalar on either side, both
      // operands whole, the condition whole.
      {{1, 1, 8, 8}, {2, 3, 8, 8}, {}, {2, 3, 8, 8}},
      {{8, 8}, {1}, {2, 8, 8}, {2, 8, 8}},
      {{1, 16}, {3, 16}, {3, 16}, {3, 16}},
      {{4, 8}, {4, 8}, {4, 8}, {4, 8}},
      // Not by vectors: a period of 12 elements, a condition broadcast
      // along its last dimension, an operand broadcast along rows.
      {{1, 1, 3, 4}, {2, 3, 4}, {}, {1, 2, 3, 4}},
      {{2, 8, 1}, {2, 8, 8}, {}, {2, 8, 8}},
      {{8, 8}, {8}, {8, 8}, {8, 8}},
  };
  uint64_t seed = 200;
  for (DType type : kAllTypes)
    for (const Shapes &shapes : cases) {
      Tensor condition = random(DType::I1, shapes.condition, seed++, 0, 1);
      Tensor lhs = random(type, shapes.lhs, seed++, -100, 100);
      Tensor rhs = random(type, shapes.rhs, seed++, -100, 100);
      checkOp(Group::Elementwise, "where", {}, {&condition, &lhs, &rhs},
              {{type, shapes.result}}, Tolerance::exact());
    }
}

/// Shapes for the ops whose operands and result share one shape.
const std::vector<Shape> &sameShapes() {
  static const std::vector<Shape> shapes = {{},           {1},       {13},
                                            {2, 3, 4, 5}, {4, 1, 3}, {0, 4}};
  return shapes;
}

/// Special values and boundaries ahead of random ones: signed zeros,
/// infinities, NaN, the tails where gelu and sigmoid lose accuracy if
/// done carelessly, and the kinks of the piecewise activations.
const std::vector<double> kSpecials = {0.0, -0.0, kInf, -kInf, kNaN, -9,
                                       9,   -3,   3,    -2.5,  2.5,  -6,
                                       -40, 40,   1e-6, -1e-6};

TEST_CASE("activations match the reference", "[device][elementwise]") {
  struct Activation {
    const char *op;
    AttrMap attrs;
  };
  const Activation activations[] = {
      {"relu", {}},
      {"tanh", {}},
      {"sqrt", {}},
      {"exp", {}},
      {"log", {}},
      {"sigmoid", {}},
      {"erf", {}},
      {"hard_swish", {}},
      {"leaky_relu", {}}, // default alpha
      {"leaky_relu", {{"alpha", 0.3}}},
      {"hard_sigmoid", {}}, // default alpha and beta
      {"hard_sigmoid", {{"alpha", 0.25}, {"beta", 0.4}}},
      {"gelu", {}}, // default: exact
      {"gelu", {{"approximate", "none"}}},
      {"gelu", {{"approximate", "tanh"}}},
  };
  uint64_t seed = 300;
  for (const Activation &activation : activations)
    for (DType type : kFloatTypes)
      for (const Shape &shape : sameShapes()) {
        Tensor input = random(type, shape, seed++, -4, 4);
        setLeading(input, kSpecials);
        checkOp(Group::Elementwise, activation.op, activation.attrs, {&input},
                {{type, shape}});
      }
}

TEST_CASE("gelu keeps its accuracy in the left tail", "[device][elementwise]") {
  // The reference's (1 + erf) cancels there: in float64 the device's erfc
  // form agrees with it to the reference's own error, absolutely.
  Tensor input(DType::F32, {6});
  setLeading(input, {-5, -6, -7, -8, -9, -10});
  Tensor expected(DType::F32, {6});
  for (int64_t i = 0; i < 6; ++i) {
    double x = input.get(i);
    expected.set(i, 0.5 * x * std::erfc(-x / std::sqrt(2.0)));
  }
  DeviceRun run =
      runOnHost(Group::Elementwise, "gelu", {}, {&input}, {{DType::F32, {6}}});
  REQUIRE(run.launch == Launch::Done);
  Tolerance tolerance;
  tolerance.f32Floor = 0; // relative, however small the values
  checkAgrees(expected, run.results[0], tolerance);
}

TEST_CASE("clip clamps to the bounds that are given", "[device][elementwise]") {
  const AttrMap bounds[] = {
      {},
      {{"min", -1.5}},
      {{"max", 0.7}},
      {{"min", -0.3}, {"max", 0.3}},
      {{"min", 0.1}, {"max", 0.1}},
  };
  uint64_t seed = 400;
  for (const AttrMap &attrs : bounds)
    for (DType type : kFloatTypes)
      for (const Shape &shape : sameShapes()) {
        Tensor input = random(type, shape, seed++, -2, 2);
        setLeading(input, {kNaN, -kInf, kInf, -1.5, 0.7, 0.3});
        checkOp(Group::Elementwise, "clip", attrs, {&input}, {{type, shape}},
                Tolerance::exact());
      }
}

TEST_CASE("dropout drops what the reference drops, on blocks too",
          "[device][elementwise]") {
  // The whole tensor, a row block and a column block of a [6, 40] logical
  // tensor, with and without a micro-batch index, and the inference form
  // (absent optional operands are null, as the executor passes them).
  Tensor step(DType::F32, {});
  step.set(0, 7);
  Tensor microBatch(DType::I64, {});
  microBatch.set(0, 3);
  struct Case {
    Shape block;
    AttrMap attrs;
  };
  const Case cases[] = {
      {{6, 40}, {{"ratio", 0.25}, {"seed", 5}, {"key", 2}}},
      {{3, 40},
       {{"ratio", 0.5}, {"key", 1}, {"shape", {6, 40}}, {"offset", {3, 0}}}},
      {{6, 10},
       {{"ratio", 0.1}, {"seed", 9}, {"shape", {6, 40}}, {"offset", {0, 30}}}},
  };
  uint64_t seed = 450;
  for (DType type : kFloatTypes)
    for (const Case &c : cases) {
      Tensor input = random(type, c.block, seed++, -2, 2);
      checkOp(Group::Elementwise, "dropout", c.attrs, {&input, &step, nullptr},
              {{type, c.block}});
      checkOp(Group::Elementwise, "dropout", c.attrs,
              {&input, &step, &microBatch}, {{type, c.block}});
      checkOp(Group::Elementwise, "dropout", {{"ratio", 0.5}},
              {&input, nullptr, nullptr}, {{type, c.block}},
              Tolerance::exact());
    }
}

TEST_CASE("cast converts between every pair of element types",
          "[device][elementwise]") {
  // Rounding ties, half's overflow and subnormal ranges, float32's and
  // int8's saturation, NaN and infinities.
  std::vector<double> floatSpecials = {
      kNaN,  kInf,   -kInf, 0.5,     -0.5,     2.5,   -2.5,
      127.5, -128.5, 300.7, -300.7,  65504,    65520, 1e-7,
      -1e-7, 3e38,   1e300, -1e300,  1e10,     -1e10, 3e9,
      -3e9,  1e19,   -1e19, 1.0 / 3, 16777217, 0.1,   -0.0};
  // Float64 values within a float32 rounding of an f16 and a bf16 tie,
  // below and above: rounding them to float32 first would land on the tie
  // and round to even, wrongly.
  const double tiny = std::ldexp(1.0, -40);
  for (int bits : {11, 8}) {
    double halfUlp = std::ldexp(1.0, -bits);
    floatSpecials.push_back(1 + 3 * halfUlp - tiny);
    floatSpecials.push_back(-(1 + halfUlp + tiny));
  }
  uint64_t seed = 500;
  for (DType from : kAllTypes)
    for (DType to : kAllTypes)
      for (const Shape &shape : {Shape{}, Shape{40}, Shape{2, 0, 3}}) {
        Tensor input;
        if (isFloat(from)) {
          input = random(from, shape, seed++, -1000, 1000);
          setLeading(input, floatSpecials);
        } else {
          auto [lo, hi] = fullRange(from);
          input = random(from, shape, seed++, lo, hi);
          if (from != DType::I1)
            setLeading(input, {0, -1, 1, lo, hi});
        }
        checkOp(Group::Elementwise, "cast", {}, {&input}, {{to, shape}},
                Tolerance::exact());
      }
  // A cast may reshape, as long as the size stays.
  Tensor input = random(DType::F64, {2, 6}, seed++);
  checkOp(Group::Elementwise, "cast", {}, {&input}, {{DType::BF16, {3, 4}}},
          Tolerance::exact());
}

TEST_CASE("activation gradients match the reference", "[device][elementwise]") {
  struct Gradient {
    const char *op;
    AttrMap attrs;
  };
  const Gradient gradients[] = {
      {"relu_grad", {}},
      {"hard_swish_grad", {}},
      {"leaky_relu_grad", {}},
      {"leaky_relu_grad", {{"alpha", 0.2}}},
      {"hard_sigmoid_grad", {}},
      {"hard_sigmoid_grad", {{"alpha", 0.25}, {"beta", 0.4}}},
      {"clip_grad", {}},
      {"clip_grad", {{"min", -0.5}}},
      {"clip_grad", {{"max", 0.25}}},
      {"clip_grad", {{"min", -1.0}, {"max", 2.5}}},
      {"gelu_grad", {}},
      {"gelu_grad", {{"approximate", "tanh"}}},
  };
  uint64_t seed = 600;
  for (const Gradient &gradient : gradients)
    for (DType type : kFloatTypes)
      for (const Shape &shape : sameShapes()) {
        Tensor dy = random(type, shape, seed++, -2, 2);
        Tensor input = random(type, shape, seed++, -4, 4);
        setLeading(input, {0, -0.0, -3, 3, -2.5, 2.5, -1, 2.5, -0.5, 0.25, kNaN,
                           kInf, -kInf, -9, 9, -0.75});
        setLeading(dy, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, kInf, -kInf});
        checkOp(Group::Elementwise, gradient.op, gradient.attrs, {&dy, &input},
                {{type, shape}}, Tolerance::cancelling());
      }
}

TEST_CASE("operands of one shape run at any rank", "[device][elementwise]") {
  // Rank 9 collapses to one dimension when nothing broadcasts.
  Shape shape = {2, 1, 2, 3, 1, 2, 2, 1, 3};
  Tensor lhs = random(DType::F32, shape, 700);
  Tensor rhs = random(DType::F32, shape, 701);
  checkOp(Group::Elementwise, "mul", {}, {&lhs, &rhs}, {{DType::F32, shape}});
  checkOp(Group::Elementwise, "tanh", {}, {&lhs}, {{DType::F32, shape}});
  checkOp(Group::Elementwise, "relu_grad", {}, {&lhs, &rhs},
          {{DType::F32, shape}});
  // Rank 9 that broadcasts where both neighbours of a dimension differ
  // still collapses the dimensions that agree.
  Tensor wide = random(DType::F64, {2, 2, 2, 3, 2, 2, 2, 2, 2}, 702);
  Tensor narrow = random(DType::F64, {2, 2, 2, 3, 1, 2, 2, 2, 2}, 703);
  checkOp(Group::Elementwise, "sub", {}, {&wide, &narrow},
          {{DType::F64, wide.shape()}});
}

TEST_CASE("inconsistent elementwise shapes are rejected",
          "[device][elementwise]") {
  Tensor a = random(DType::F32, {2, 3}, 800);
  Tensor b = random(DType::F32, {4, 3}, 801);
  checkRejected(Group::Elementwise, "add", {}, {&a, &b},
                {{DType::F32, {4, 3}}});
  checkRejected(Group::Elementwise, "mul", {}, {&a, &a},
                {{DType::F32, {3, 2}}});
  checkRejected(Group::Elementwise, "relu", {}, {&a}, {{DType::F32, {6}}});
  checkRejected(Group::Elementwise, "gelu_grad", {}, {&a, &b},
                {{DType::F32, {2, 3}}});
  checkRejected(Group::Elementwise, "cast", {}, {&a}, {{DType::F16, {5}}});
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Random contents of any type, for the byte-copying ops.
Tensor anyRandom(DType type, const Shape &shape, uint64_t seed) {
  if (isFloat(type))
    return random(type, shape, seed, -100, 100);
  auto [lo, hi] = fullRange(type);
  return random(type, shape, seed, lo, hi);
}

TEST_CASE("reshape and expand copy every element type exactly",
          "[device][movement]") {
  uint64_t seed = 1000;
  for (DType type : kAllTypes) {
    Tensor input = anyRandom(type, {2, 3, 4}, seed++);
    checkOp(Group::Movement, "reshape", {}, {&input}, {{type, {4, 6}}},
            Tolerance::exact());
    checkOp(Group::Movement, "reshape", {}, {&input}, {{type, {24}}},
            Tolerance::exact());
    Tensor scalar = anyRandom(type, {}, seed++);
    checkOp(Group::Movement, "reshape", {}, {&scalar}, {{type, {1, 1}}},
            Tolerance::exact());
    Tensor empty = anyRandom(type, {0, 3}, seed++);
    checkOp(Group::Movement, "reshape", {}, {&empty}, {{type, {3, 0}}},
            Tolerance::exact());

    struct Expansion {
      Shape from, to;
    };
    for (const Expansion &e :
         {Expansion{{}, {3, 2}}, Expansion{{3}, {2, 3}},
          Expansion{{2, 1, 4}, {3, 2, 5, 4}}, Expansion{{1, 1}, {1, 1}},
          Expansion{{4, 1}, {4, 0}}, Expansion{{2, 3}, {2, 3}}}) {
      Tensor from = anyRandom(type, e.from, seed++);
      checkOp(Group::Movement, "expand", {}, {&from}, {{type, e.to}},
              Tolerance::exact());
    }
  }
}

TEST_CASE("transpose permutes every element type exactly",
          "[device][movement]") {
  struct Permutation {
    Shape shape;
    std::vector<int64_t> perm;
    Shape result;
  };
  const Permutation cases[] = {
      {{}, {}, {}},
      {{5}, {0}, {5}},
      {{3, 4}, {1, 0}, {4, 3}},
      {{2, 3, 4, 5}, {0, 2, 1, 3}, {2, 4, 3, 5}},
      {{2, 3, 4, 5}, {3, 2, 1, 0}, {5, 4, 3, 2}},
      {{2, 1, 3}, {1, 2, 0}, {1, 3, 2}},
      {{0, 3}, {1, 0}, {3, 0}},
  };
  uint64_t seed = 1100;
  for (DType type : kAllTypes)
    for (const Permutation &p : cases) {
      Tensor input = anyRandom(type, p.shape, seed++);
      checkOp(Group::Movement, "transpose", {{"perm", p.perm}}, {&input},
              {{type, p.result}}, Tolerance::exact());
    }
}

TEST_CASE("transposes of whole matrices go through the launcher's tiles",
          "[device][movement]") {
  struct Permutation {
    Shape shape;
    std::vector<int64_t> perm;
    Shape result;
    bool tiled;
  };
  const Permutation cases[] = {
      // A matrix; one of several; heads moved behind the sequence (the
      // moved dimensions merge); a matrix whose sides are not multiples
      // of a tile.
      {{40, 64}, {1, 0}, {64, 40}, true},
      {{3, 35, 64}, {0, 2, 1}, {3, 64, 35}, true},
      {{2, 33, 4, 16}, {0, 2, 3, 1}, {2, 4, 16, 33}, true},
      {{2, 4, 16, 33}, {0, 3, 1, 2}, {2, 33, 4, 16}, true},
      {{1, 97, 1, 45}, {3, 2, 1, 0}, {45, 1, 97, 1}, true},
      // Narrower than a tile, or not a transpose of matrices: the walk.
      {{40, 31}, {1, 0}, {31, 40}, false},
      {{8, 33, 2, 40}, {0, 2, 1, 3}, {8, 2, 33, 40}, false},
      {{33, 34, 35}, {2, 1, 0}, {35, 34, 33}, false},
  };
  uint64_t seed = 1150;
  for (DType type : kAllTypes)
    for (const Permutation &p : cases) {
      Tensor input = anyRandom(type, p.shape, seed++);
      checkOp(Group::Movement, "transpose", {{"perm", p.perm}}, {&input},
              {{type, p.result}}, Tolerance::exact());
      DeviceRun run =
          runOnHost(Group::Movement, "transpose", {{"perm", p.perm}}, {&input},
                    {{type, p.result}});
      INFO(toString(p.shape) << " perm " << toString(p.perm));
      CHECK(run.transposedMatrices == (p.tiled ? 1 : 0));
    }
}

TEST_CASE("fast division agrees with division below 2^31", "[device]") {
  std::mt19937_64 rng(77);
  std::vector<int64_t> divisors = {1,
                                   2,
                                   3,
                                   5,
                                   7,
                                   31,
                                   32,
                                   33,
                                   64,
                                   1000,
                                   4095,
                                   4096,
                                   4097,
                                   65535,
                                   65536,
                                   65537,
                                   (int64_t{1} << 30) - 1,
                                   int64_t{1} << 30,
                                   (int64_t{1} << 30) + 1,
                                   (int64_t{1} << 31) - 1};
  std::uniform_int_distribution<int64_t> anyDivisor(1, (int64_t{1} << 31) - 1);
  for (int k = 0; k < 200; ++k)
    divisors.push_back(anyDivisor(rng));
  std::uniform_int_distribution<uint32_t> anyDividend(0, (1u << 31) - 1);
  for (int64_t divisor : divisors) {
    FastDivisor fast = FastDivisor::of(divisor);
    std::vector<uint32_t> dividends = {0, 1, (1u << 31) - 1, (1u << 31) - 2};
    for (int64_t multiple : {divisor - 1, divisor, divisor + 1, 2 * divisor - 1,
                             2 * divisor, 1000 * divisor})
      if (multiple >= 0 && multiple < (int64_t{1} << 31))
        dividends.push_back(static_cast<uint32_t>(multiple));
    for (int k = 0; k < 2000; ++k)
      dividends.push_back(anyDividend(rng));
    int64_t wrong = 0;
    for (uint32_t n : dividends)
      wrong += fast.divide(n) != n / static_cast<uint64_t>(divisor);
    INFO("divisor " << divisor);
    CHECK(wrong == 0);
  }
}

TEST_CASE("concat and split along every axis, negative ones too",
          "[device][movement]") {
  uint64_t seed = 1200;
  for (DType type : {DType::F32, DType::F16, DType::F64, DType::I8, DType::I1})
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      int64_t normalized = axis < 0 ? axis + 3 : axis;
      Shape whole = {3, 4, 5};
      // Three parts of 2, 0 and the rest along the axis.
      std::vector<Shape> parts(3, whole);
      parts[0][normalized] = 2;
      parts[1][normalized] = 0;
      parts[2][normalized] = whole[normalized] - 2;
      std::vector<Tensor> inputs;
      for (const Shape &part : parts)
        inputs.push_back(anyRandom(type, part, seed++));
      std::vector<const Tensor *> pointers;
      for (const Tensor &input : inputs)
        pointers.push_back(&input);
      checkOp(Group::Movement, "concat", {{"axis", axis}}, pointers,
              {{type, whole}}, Tolerance::exact());

      Tensor input = anyRandom(type, whole, seed++);
      std::vector<ResultSpec> specs;
      std::vector<int64_t> sizes;
      for (const Shape &part : parts) {
        specs.push_back({type, part});
        sizes.push_back(part[normalized]);
      }
      checkOp(Group::Movement, "split", {{"axis", axis}, {"sizes", sizes}},
              {&input}, specs, Tolerance::exact());
    }
  // One operand, and rank 1.
  Tensor single = anyRandom(DType::F32, {7}, seed++);
  checkOp(Group::Movement, "concat", {{"axis", 0}}, {&single},
          {{DType::F32, {7}}}, Tolerance::exact());
  checkOp(Group::Movement, "split", {{"axis", -1}, {"sizes", {3, 4}}},
          {&single}, {{DType::F32, {3}}, {DType::F32, {4}}},
          Tolerance::exact());
}

struct SliceCase {
  Shape input;
  std::vector<int64_t> starts, steps;
  Shape sizes;
};

/// Forward steps, backward steps, whole dimensions, single elements,
/// rank 0 and empty slices.
const std::vector<SliceCase> &sliceCases() {
  static const std::vector<SliceCase> cases = {
      {{}, {}, {}, {}},
      {{10}, {2}, {3}, {3}},
      {{10}, {9}, {-2}, {5}},
      {{4, 8}, {0, 2}, {1, 2}, {4, 3}},
      {{4, 8}, {3, 7}, {-1, -3}, {4, 3}},
      {{3, 4, 5, 6}, {1, 0, 4, 1}, {1, 1, -1, 2}, {2, 4, 3, 3}},
      {{3, 4, 5}, {2, 3, 4}, {1, 1, 1}, {1, 1, 1}},
      {{3, 4}, {0, 0}, {1, 1}, {0, 4}},
      {{3, 4}, {1, 0}, {1, 0}, {2, 0}},
  };
  return cases;
}

TEST_CASE("slice and slice_grad match the reference", "[device][movement]") {
  uint64_t seed = 1300;
  for (DType type : kAllTypes)
    for (const SliceCase &c : sliceCases()) {
      if (std::count(c.steps.begin(), c.steps.end(), 0) == 0) {
        Tensor input = anyRandom(type, c.input, seed++);
        checkOp(Group::Movement, "slice",
                {{"starts", c.starts}, {"sizes", c.sizes}, {"steps", c.steps}},
                {&input}, {{type, c.sizes}}, Tolerance::exact());
      }
      Tensor dy = anyRandom(type, c.sizes, seed++);
      checkOp(Group::Movement, "slice_grad",
              {{"starts", c.starts}, {"steps", c.steps}}, {&dy},
              {{type, c.input}}, Tolerance::exact());
    }
}

TEST_CASE("slices that leave the input are rejected", "[device][movement]") {
  Tensor input = random(DType::F32, {4, 8}, 1400);
  checkRejected(Group::Movement, "slice",
                {{"starts", {0, 6}}, {"sizes", {4, 2}}, {"steps", {1, 2}}},
                {&input}, {{DType::F32, {4, 2}}});
  checkRejected(Group::Movement, "slice",
                {{"starts", {0, 1}}, {"sizes", {4, 3}}, {"steps", {1, -1}}},
                {&input}, {{DType::F32, {4, 3}}});
  checkRejected(Group::Movement, "slice",
                {{"starts", {0, 0}}, {"sizes", {4, 2}}, {"steps", {1, 0}}},
                {&input}, {{DType::F32, {4, 2}}});
  Tensor dy = random(DType::F32, {2, 5}, 1401);
  checkRejected(Group::Movement, "slice_grad",
                {{"starts", {3, 0}}, {"steps", {1, 1}}}, {&dy},
                {{DType::F32, {4, 8}}});
  Tensor a = random(DType::F32, {2, 3}, 1402);
  Tensor b = random(DType::F32, {2, 4}, 1403);
  checkRejected(Group::Movement, "concat", {{"axis", 0}}, {&a, &b},
                {{DType::F32, {4, 3}}});
  checkRejected(Group::Movement, "split", {{"axis", 1}, {"sizes", {1, 2}}},
                {&b}, {{DType::F32, {2, 1}}, {DType::F32, {2, 2}}});
  checkRejected(Group::Movement, "expand", {}, {&b}, {{DType::F32, {2, 2}}});
  checkRejected(Group::Movement, "reshape", {}, {&b}, {{DType::F32, {7}}});
  checkRejected(Group::Movement, "transpose", {{"perm", {0, 1}}}, {&a},
                {{DType::F32, {3, 2}}});
}

TEST_CASE("shape writes the input's shape as i64", "[device][movement]") {
  for (const Shape &shape :
       {Shape{}, Shape{7}, Shape{2, 0, 3, 5}, Shape{1, 2, 3, 4, 5, 6, 7, 8}}) {
    Tensor input = Tensor::withoutStorage(DType::F16, shape);
    checkOp(Group::Movement, "shape", {}, {&input},
            {{DType::I64, {static_cast<int64_t>(shape.size())}}},
            Tolerance::exact());
  }
  Tensor input = random(DType::F32, {2, 3}, 1500);
  checkRejected(Group::Movement, "shape", {}, {&input}, {{DType::I32, {2}}});
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// A 0-d step tensor holding t.
Tensor stepTensor(double t, DType type = DType::F32) {
  Tensor step(type, {});
  step.set(0, t);
  return step;
}

TEST_CASE("sgd and momentum updates match the reference",
          "[device][optimizers]") {
  const AttrMap sgd[] = {
      {{"lr", 0.1}}, // defaults: no decay, scale 1
      {{"lr", 0.01}, {"weight_decay", 0.05}, {"grad_scale", 1024.0}},
      {{"lr", 0.3}, {"weight_decay", 0.0}, {"grad_scale", 3.0}},
  };
  const AttrMap momentum[] = {
      {{"lr", 0.1}, {"momentum", 0.9}},
      {{"lr", 0.05}, {"momentum", 0.8}, {"nesterov", true}},
      {{"lr", 0.02},
       {"momentum", 0.95},
       {"weight_decay", 0.01},
       {"nesterov", false},
       {"grad_scale", 65536.0}},
      {{"lr", 0.02},
       {"momentum", 0.5},
       {"weight_decay", 0.1},
       {"nesterov", true},
       {"grad_scale", 7.0}},
  };
  uint64_t seed = 2000;
  for (DType type : kFloatTypes)
    for (const Shape &shape : {Shape{}, Shape{17}, Shape{3, 4, 5}, Shape{0}}) {
      Tensor param = random(type, shape, seed++, -1, 1);
      Tensor grad = random(type, shape, seed++, -1, 1);
      Tensor velocity = random(type, shape, seed++, -0.5, 0.5);
      for (const AttrMap &attrs : sgd)
        checkOp(Group::Optimizers, "sgd_update", attrs, {&param, &grad},
                {{type, shape}}, Tolerance::cancelling());
      for (const AttrMap &attrs : momentum)
        checkOp(Group::Optimizers, "momentum_update", attrs,
                {&param, &grad, &velocity}, {{type, shape}, {type, shape}},
                Tolerance::cancelling());
    }
}

TEST_CASE("adam and adamw updates match the reference",
          "[device][optimizers]") {
  const AttrMap options[] = {
      {{"lr", 1e-3}}, // defaults
      {{"lr", 1e-2},
       {"beta1", 0.8},
       {"beta2", 0.99},
       {"epsilon", 1e-6},
       {"weight_decay", 0.01}},
      {{"lr", 1e-2}, {"weight_decay", 0.1}, {"decoupled", true}},
      {{"lr", 3e-4},
       {"weight_decay", 0.05},
       {"decoupled", false},
       {"grad_scale", 512.0}},
      {{"lr", 1e-3}, {"decoupled", true}, {"grad_scale", 3.0}},
  };
  uint64_t seed = 2100;
  for (DType type : kFloatTypes)
    for (const Shape &shape : {Shape{}, Shape{33}, Shape{2, 3, 4}, Shape{0, 2}})
      for (double t : {1.0, 2.0, 10.0, 1000.0}) {
        Tensor param = random(type, shape, seed++, -1, 1);
        Tensor grad = random(type, shape, seed++, -1, 1);
        Tensor m = random(type, shape, seed++, -0.1, 0.1);
        Tensor v = random(type, shape, seed++, 0, 0.01);
        Tensor step = stepTensor(t);
        for (const AttrMap &attrs : options)
          checkOp(Group::Optimizers, "adam_update", attrs,
                  {&param, &grad, &m, &v, &step},
                  {{type, shape}, {type, shape}, {type, shape}},
                  Tolerance::cancelling());
      }
  // A step of another float type.
  Tensor param = random(DType::F32, {5}, seed++, -1, 1);
  Tensor grad = random(DType::F32, {5}, seed++, -1, 1);
  Tensor m = random(DType::F32, {5}, seed++, -0.1, 0.1);
  Tensor v = random(DType::F32, {5}, seed++, 0, 0.01);
  Tensor step = stepTensor(3, DType::BF16);
  checkOp(Group::Optimizers, "adam_update", {{"lr", 1e-3}},
          {&param, &grad, &m, &v, &step},
          {{DType::F32, {5}}, {DType::F32, {5}}, {DType::F32, {5}}});
}

TEST_CASE("adam with a step below 1 writes the error code and updates nothing",
          "[device][optimizers]") {
  Tensor param = random(DType::F32, {4}, 2200, -1, 1);
  Tensor grad = random(DType::F32, {4}, 2201, -1, 1);
  Tensor m = random(DType::F32, {4}, 2202, -0.1, 0.1);
  Tensor v = random(DType::F32, {4}, 2203, 0, 0.01);
  const std::vector<ResultSpec> specs(3, ResultSpec{DType::F32, {4}});
  for (double t : {0.0, -1.0, 0.5, kNaN}) {
    Tensor step = stepTensor(t);
    checkFault(Group::Optimizers, "adam_update", {{"lr", 1e-3}},
               {&param, &grad, &m, &v, &step}, specs);
    DeviceRun run = runOnHost(Group::Optimizers, "adam_update", {{"lr", 1e-3}},
                              {&param, &grad, &m, &v, &step}, specs);
    for (size_t k = 0; k < specs.size(); ++k)
      CHECK(std::memcmp(run.results[k].bytes(), garbage(specs[k]).bytes(),
                        run.results[k].byteSize()) == 0);
  }
}

TEST_CASE("updates may write their state in place", "[device][optimizers]") {
  Tensor param = random(DType::F32, {64}, 2300, -1, 1);
  Tensor grad = random(DType::F32, {64}, 2301, -1, 1);
  Tensor m = random(DType::F32, {64}, 2302, -0.1, 0.1);
  Tensor v = random(DType::F32, {64}, 2303, 0, 0.01);
  Tensor step = stepTensor(7);
  AttrMap attrs = {{"lr", 1e-2}, {"weight_decay", 0.1}, {"decoupled", true}};
  std::vector<Tensor> expected(3, Tensor(DType::F32, {64}));
  REQUIRE(
      reference("adam_update", attrs, {&param, &grad, &m, &v, &step}, expected)
          .ok());

  AttrMap resolved;
  std::vector<Tensor *> outs = {&param, &m, &v};
  REQUIRE(resolveKernelAttrs("adam_update", attrs,
                             {&param, &grad, &m, &v, &step}, outs, resolved)
              .ok());
  DeviceTensor p = view(param), g = view(grad), mv = view(m), vv = view(v),
               s = view(step);
  HostLauncher launcher;
  Launch launch = Launch::Unsupported;
  Status status;
  REQUIRE(launchOptimizers(launcher, KernelId::AdamUpdate, resolved,
                           {&p, &g, &mv, &vv, &s}, {&p, &mv, &vv}, launch,
                           status));
  REQUIRE(launch == Launch::Done);
  checkAgrees(expected[0], param, {});
  checkAgrees(expected[1], m, {});
  checkAgrees(expected[2], v, {});
}

TEST_CASE("inconsistent updates are rejected", "[device][optimizers]") {
  Tensor param = random(DType::F32, {4}, 2400);
  Tensor grad = random(DType::F32, {5}, 2401);
  checkRejected(Group::Optimizers, "sgd_update", {{"lr", 0.1}}, {&param, &grad},
                {{DType::F32, {4}}});
  checkRejected(Group::Optimizers, "sgd_update",
                {{"lr", 0.1}, {"grad_scale", 0.0}}, {&param, &param},
                {{DType::F32, {4}}});
  Tensor step = random(DType::F32, {2}, 2402, 1, 5);
  checkRejected(Group::Optimizers, "adam_update", {{"lr", 0.1}},
                {&param, &param, &param, &param, &step},
                {{DType::F32, {4}}, {DType::F32, {4}}, {DType::F32, {4}}});
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

/// What ProbeLauncher answers, for operands and results given by type and
/// shape only: it must not touch memory (the views hold none).
Launch probeOnly(Group group, const std::string &op, const AttrMap &attrs,
                 const std::vector<ResultSpec> &operands,
                 const std::vector<ResultSpec> &results) {
  std::vector<Tensor> operandStorage;
  for (const ResultSpec &spec : operands)
    operandStorage.push_back(Tensor::withoutStorage(spec.type, spec.shape));
  std::vector<const Tensor *> pointers;
  for (const Tensor &operand : operandStorage)
    pointers.push_back(&operand);
  return probe(group, op, attrs, pointers, results);
}

TEST_CASE("the probe refuses types and ranks without a kernel",
          "[device][dispatch]") {
  Shape rank9 = {2, 1, 2, 1, 2, 1, 2, 1, 2};
  Shape rank9Other = {1, 2, 1, 2, 1, 2, 1, 2, 1};
  Shape rank9Result = {2, 2, 2, 2, 2, 2, 2, 2, 2};
  using E = Group;
  // Broadcasting that does not collapse below kMaxRank dimensions.
  CHECK(probeOnly(E::Elementwise, "add", {},
                  {{DType::F32, rank9}, {DType::F32, rank9Other}},
                  {{DType::F32, rank9Result}}) == Launch::Unsupported);
  CHECK(probeOnly(
            E::Elementwise, "where", {},
            {{DType::I1, rank9}, {DType::F32, rank9Other}, {DType::F32, {}}},
            {{DType::F32, rank9Result}}) == Launch::Unsupported);
  // Eight dimensions that do not collapse still run.
  CHECK(probeOnly(E::Elementwise, "add", {},
                  {{DType::F32, {2, 1, 2, 1, 2, 1, 2, 1}},
                   {DType::F32, {1, 2, 1, 2, 1, 2, 1, 2}}},
                  {{DType::F32, {2, 2, 2, 2, 2, 2, 2, 2}}}) == Launch::Done);
  // Rank 9 of one shape collapses.
  CHECK(probeOnly(E::Elementwise, "add", {},
                  {{DType::F32, rank9Result}, {DType::F32, rank9Result}},
                  {{DType::F32, rank9Result}}) == Launch::Done);
  CHECK(probeOnly(E::Elementwise, "sigmoid", {}, {{DType::BF16, rank9}},
                  {{DType::BF16, rank9}}) == Launch::Done);

  Shape reversed9 = {2, 3, 2, 3, 2, 3, 2, 3, 2};
  std::vector<int64_t> reverse = {8, 7, 6, 5, 4, 3, 2, 1, 0};
  CHECK(probeOnly(E::Movement, "transpose", {{"perm", reverse}},
                  {{DType::F32, reversed9}},
                  {{DType::F32, reversed9}}) == Launch::Unsupported);
  CHECK(probeOnly(E::Movement, "expand", {}, {{DType::F32, rank9}},
                  {{DType::F32, rank9Result}}) == Launch::Unsupported);
  std::vector<int64_t> zeros(9, 0), ones(9, 1);
  CHECK(probeOnly(E::Movement, "slice_grad",
                  {{"starts", zeros}, {"steps", ones}}, {{DType::F32, rank9}},
                  {{DType::F32, rank9}}) == Launch::Unsupported);
  CHECK(probeOnly(E::Movement, "shape", {}, {{DType::F32, rank9}},
                  {{DType::I64, {9}}}) == Launch::Unsupported);
  CHECK(probeOnly(E::Movement, "reshape", {}, {{DType::F32, rank9}},
                  {{DType::F32, {32}}}) == Launch::Done);
  CHECK(probeOnly(E::Movement, "concat", {{"axis", 8}},
                  {{DType::I8, rank9}, {DType::I8, rank9}},
                  {{DType::I8, {2, 1, 2, 1, 2, 1, 2, 1, 4}}}) == Launch::Done);

  // Float-only ops refuse integers; where refuses a float condition.
  for (const char *op : {"relu", "tanh", "gelu", "clip", "leaky_relu"})
    CHECK(probeOnly(E::Elementwise, op, {}, {{DType::I32, {4}}},
                    {{DType::I32, {4}}}) == Launch::Unsupported);
  CHECK(probeOnly(E::Elementwise, "relu_grad", {},
                  {{DType::I64, {4}}, {DType::I64, {4}}},
                  {{DType::I64, {4}}}) == Launch::Unsupported);
  CHECK(probeOnly(E::Elementwise, "where", {},
                  {{DType::F32, {4}}, {DType::F32, {4}}, {DType::F32, {4}}},
                  {{DType::F32, {4}}}) == Launch::Unsupported);
  CHECK(probeOnly(E::Elementwise, "add", {},
                  {{DType::I32, {4}}, {DType::I32, {4}}},
                  {{DType::I32, {4}}}) == Launch::Done);
  CHECK(probeOnly(E::Optimizers, "sgd_update", {{"lr", 0.1}},
                  {{DType::I32, {4}}, {DType::I32, {4}}},
                  {{DType::I32, {4}}}) == Launch::Unsupported);
  CHECK(probeOnly(E::Optimizers, "adam_update", {{"lr", 0.1}},
                  {{DType::F16, {4}},
                   {DType::F16, {4}},
                   {DType::F16, {4}},
                   {DType::F16, {4}},
                   {DType::F32, {}}},
                  {{DType::F16, {4}}, {DType::F16, {4}}, {DType::F16, {4}}}) ==
        Launch::Done);
}

TEST_CASE("each group claims its own ops only", "[device][dispatch]") {
  const std::vector<std::string> elementwise = {"add",
                                                "sub",
                                                "mul",
                                                "div",
                                                "pow",
                                                "where",
                                                "relu",
                                                "tanh",
                                                "sqrt",
                                                "exp",
                                                "log",
                                                "sigmoid",
                                                "erf",
                                                "hard_swish",
                                                "leaky_relu",
                                                "hard_sigmoid",
                                                "gelu",
                                                "clip",
                                                "cast",
                                                "relu_grad",
                                                "hard_swish_grad",
                                                "leaky_relu_grad",
                                                "hard_sigmoid_grad",
                                                "clip_grad",
                                                "gelu_grad"};
  const std::vector<std::string> movement = {
      "reshape", "expand", "transpose",  "concat",
      "split",   "slice",  "slice_grad", "shape"};
  const std::vector<std::string> optimizers = {"sgd_update", "momentum_update",
                                               "adam_update"};
  const std::vector<std::string> others = {"matmul",
                                           "gemm",
                                           "softmax",
                                           "layer_norm",
                                           "gather",
                                           "reduce_sum",
                                           "softmax_cross_entropy",
                                           "conv",
                                           "max_pool"};
  struct Claim {
    Group group;
    const std::vector<std::string> *ops;
  };
  const Claim claims[] = {{Group::Elementwise, &elementwise},
                          {Group::Movement, &movement},
                          {Group::Optimizers, &optimizers}};
  // Enough operands and results for any op; ProbeLauncher launches
  // nothing, and an op a group does not claim must not be looked at.
  std::vector<DeviceTensor> views(5, shapeOnly(DType::F32, {4}));
  std::vector<const DeviceTensor *> ins = {&views[0], &views[1], &views[2],
                                           &views[3], &views[4]};
  std::vector<DeviceTensor *> outs = {&views[0], &views[1], &views[2]};
  for (const Claim &claim : claims)
    for (const Claim &other : claims)
      for (const std::string &op : *other.ops) {
        ProbeLauncher launcher;
        Launch launch = Launch::Unsupported;
        Status status;
        INFO(op);
        CHECK(launchGroup(claim.group, launcher, op, {}, ins, outs, launch,
                          status) == (claim.group == other.group));
      }
  // An op the group does not claim leaves the out-parameters alone.
  for (const Claim &claim : claims)
    for (const std::string &op : others) {
      ProbeLauncher launcher;
      Launch launch = Launch::Unsupported;
      Status status = Status::failure("untouched");
      INFO(op);
      CHECK_FALSE(launchGroup(claim.group, launcher, op, {}, ins, outs, launch,
                              status));
      CHECK(launch == Launch::Unsupported);
      CHECK(status.error == "untouched");
    }
}

} // namespace
