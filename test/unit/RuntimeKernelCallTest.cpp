//===- RuntimeKernelCallTest.cpp - kernels called by their nn op name -----===//
//
// runKernel (KernelCall.h) against direct calls of the kernels it wraps:
// attributes given and absent (the .td defaults), optional operands as
// nulls, signed axes, and every way a generic call can be wrong, which must
// come back as a Status naming the op rather than as a crash.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/KernelCall.h"
#include "parplan/Runtime/Kernels.h"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace parplan::runtime;

namespace {

Tensor f32(const Shape &shape, const std::vector<double> &values) {
  Tensor tensor(DType::F32, shape);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, values[i]);
  return tensor;
}

/// 0.1, 0.2, ... minus an offset, so that activations see both signs.
Tensor ramp(const Shape &shape, double offset = 0, DType type = DType::F32) {
  Tensor tensor(type, shape);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, 0.1 * static_cast<double>(i + 1) - offset);
  return tensor;
}

std::vector<double> valuesOf(const Tensor &tensor) {
  std::vector<double> values(tensor.numElements());
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    values[i] = tensor.get(i);
  return values;
}

/// Runs nn.<op> with one result of `shape` and element type `type`.
Tensor runOne(const std::string &op, const AttrMap &attrs,
              const std::vector<const Tensor *> &operands, const Shape &shape,
              DType type = DType::F32) {
  Tensor result(type, shape);
  Status status = runKernel(op, attrs, operands, {&result});
  INFO(status.error);
  REQUIRE(status.ok());
  return result;
}

/// The error of a call expected to fail.
std::string errorOf(const std::string &op, const AttrMap &attrs,
                    const std::vector<const Tensor *> &operands,
                    const std::vector<Tensor *> &results) {
  Status status = runKernel(op, attrs, operands, results);
  REQUIRE_FALSE(status.ok());
  return status.error;
}

} // namespace

TEST_CASE("kernel call: attribute values", "[runtime]") {
  CHECK(AttrValue(int64_t{3}).kind() == AttrValue::Kind::Int);
  CHECK(AttrValue(3).kind() == AttrValue::Kind::Int);
  CHECK(AttrValue(0.5).kind() == AttrValue::Kind::Float);
  CHECK(AttrValue(0.5f).kind() == AttrValue::Kind::Float);
  CHECK(AttrValue(true).kind() == AttrValue::Kind::Bool);
  CHECK(AttrValue("tanh").kind() == AttrValue::Kind::String);
  CHECK(AttrValue(std::string("tanh")).kind() == AttrValue::Kind::String);
  CHECK(AttrValue({1, 2}).kind() == AttrValue::Kind::Ints);
  CHECK(AttrValue(std::vector<int64_t>{}).kind() == AttrValue::Kind::Ints);
  CHECK(*AttrValue(-1).getInt() == -1);
  CHECK(AttrValue(-1).getFloat() == nullptr);
  CHECK(*AttrValue({4, 5}).getInts() == std::vector<int64_t>{4, 5});
  CHECK(AttrValue(1) == AttrValue(int64_t{1}));
  CHECK(AttrValue(1) != AttrValue(1.0));
  CHECK(std::string(toString(AttrValue::Kind::Ints)) == "int list");
}

TEST_CASE("kernel call: signatures", "[runtime]") {
  const KernelSignature *gemm = lookupKernel("gemm");
  REQUIRE(gemm);
  CHECK(gemm->numOperands == 3);
  CHECK(gemm->numOptionalOperands == 1);
  CHECK(gemm->numResults == 1);
  REQUIRE(lookupKernel("concat"));
  CHECK(lookupKernel("concat")->numOperands == -1);
  REQUIRE(lookupKernel("split"));
  CHECK(lookupKernel("split")->numResults == -1);
  REQUIRE(lookupKernel("adam_update"));
  CHECK(lookupKernel("adam_update")->numOperands == 5);
  CHECK(lookupKernel("adam_update")->numResults == 3);
  // Values, not kernels; and the dialect prefix is not part of the name.
  CHECK(lookupKernel("param") == nullptr);
  CHECK(lookupKernel("constant") == nullptr);
  CHECK(lookupKernel("nn.matmul") == nullptr);
}

TEST_CASE("kernel call: ops without attributes", "[runtime]") {
  Tensor a = ramp({2, 3}), b = ramp({3, 2}, 0.3);
  Tensor direct(DType::F32, {2, 2});
  REQUIRE(matmul(a, b, direct).ok());
  CHECK(valuesOf(runOne("matmul", {}, {&a, &b}, {2, 2})) == valuesOf(direct));

  Tensor c = ramp({3}, 0.2);
  Tensor sum(DType::F32, {2, 3});
  REQUIRE(binary(BinaryKind::Add, a, c, sum).ok());
  CHECK(valuesOf(runOne("add", {}, {&a, &c}, {2, 3})) == valuesOf(sum));

  Tensor x = ramp({2, 3}, 0.35);
  Tensor relu(DType::F32, {2, 3});
  REQUIRE(unary(UnaryKind::Relu, x, relu).ok());
  CHECK(valuesOf(runOne("relu", {}, {&x}, {2, 3})) == valuesOf(relu));

  // reshape copies the bytes into the result's shape.
  CHECK(valuesOf(runOne("reshape", {}, {&a}, {3, 2})) == valuesOf(a));

  // shape fills its i64 result with the operand's shape.
  Tensor shape = runOne("shape", {}, {&a}, {2}, DType::I64);
  CHECK(shape.data<int64_t>()[0] == 2);
  CHECK(shape.data<int64_t>()[1] == 3);
  Tensor wrong(DType::I64, {3});
  CHECK(errorOf("shape", {}, {&a}, {&wrong}) ==
        "shape: result must be i64 [2], not i64 [3]");
}

TEST_CASE("kernel call: gemm defaults and the optional c", "[runtime]") {
  Tensor a = ramp({2, 3}), b = ramp({4, 3}, 0.5), c = ramp({4}, 0.1);
  Tensor bt = ramp({3, 4}, 0.5);

  // Absent alpha, beta, trans_a and trans_b are the .td's 1, 1, false,
  // false; an absent c is a null at its position.
  Tensor plain(DType::F32, {2, 4});
  REQUIRE(gemm(a, bt, nullptr, 1, 1, false, false, plain).ok());
  CHECK(valuesOf(runOne("gemm", {}, {&a, &bt, nullptr}, {2, 4})) ==
        valuesOf(plain));
  AttrMap explicitDefaults = {
      {"alpha", 1.0}, {"beta", 1.0}, {"trans_a", false}, {"trans_b", false}};
  CHECK(valuesOf(runOne("gemm", explicitDefaults, {&a, &bt, nullptr},
                        {2, 4})) == valuesOf(plain));

  // Given attributes, with c; F32Attr values are rounded to float as the
  // MLIR attribute holds them.
  Tensor linear(DType::F32, {2, 4});
  REQUIRE(gemm(a, b, &c, static_cast<float>(0.3), static_cast<float>(0.7),
               false, true, linear)
              .ok());
  AttrMap attrs = {{"alpha", 0.3}, {"beta", 0.7}, {"trans_b", true}};
  CHECK(valuesOf(runOne("gemm", attrs, {&a, &b, &c}, {2, 4})) ==
        valuesOf(linear));
}

TEST_CASE("kernel call: float attribute defaults", "[runtime]") {
  // leaky_relu's alpha defaults to the f32 0.01, not the double: in f64
  // the difference shows.
  Tensor x64 = ramp({2, 4}, 0.45, DType::F64);
  Tensor leaky(DType::F64, {2, 4}), leakyDouble(DType::F64, {2, 4});
  REQUIRE(unary(UnaryKind::LeakyRelu, x64, leaky, 0.01f).ok());
  REQUIRE(unary(UnaryKind::LeakyRelu, x64, leakyDouble, 0.01).ok());
  REQUIRE(valuesOf(leaky) != valuesOf(leakyDouble));
  CHECK(valuesOf(runOne("leaky_relu", {}, {&x64}, {2, 4}, DType::F64)) ==
        valuesOf(leaky));
  CHECK(valuesOf(runOne("leaky_relu", {{"alpha", 0.01}}, {&x64}, {2, 4},
                        DType::F64)) == valuesOf(leaky));

  Tensor x = ramp({2, 4}, 0.45);

  Tensor hard(DType::F32, {2, 4});
  REQUIRE(unary(UnaryKind::HardSigmoid, x, hard, 0.2f, 0.5f).ok());
  CHECK(valuesOf(runOne("hard_sigmoid", {}, {&x}, {2, 4})) == valuesOf(hard));

  // Absent clip bounds do not clamp.
  Tensor clipped(DType::F32, {2, 4});
  REQUIRE(clip(x, std::nullopt, 0.25f, clipped).ok());
  CHECK(valuesOf(runOne("clip", {{"max", 0.25}}, {&x}, {2, 4})) ==
        valuesOf(clipped));
  CHECK(valuesOf(runOne("clip", {}, {&x}, {2, 4})) == valuesOf(x));
}

TEST_CASE("kernel call: gelu's approximate by name", "[runtime]") {
  Tensor x = ramp({5}, 0.3);
  Tensor exact(DType::F32, {5}), approx(DType::F32, {5});
  REQUIRE(unary(UnaryKind::GeluExact, x, exact).ok());
  REQUIRE(unary(UnaryKind::GeluTanh, x, approx).ok());
  CHECK(valuesOf(runOne("gelu", {}, {&x}, {5})) == valuesOf(exact));
  CHECK(valuesOf(runOne("gelu", {{"approximate", "none"}}, {&x}, {5})) ==
        valuesOf(exact));
  CHECK(valuesOf(runOne("gelu", {{"approximate", "tanh"}}, {&x}, {5})) ==
        valuesOf(approx));
  CHECK(valuesOf(runOne("gelu", {{"approximate", "tanh"}}, {&x}, {5})) !=
        valuesOf(exact));

  Tensor dy = ramp({5}), dx(DType::F32, {5});
  REQUIRE(unaryGrad(UnaryKind::GeluTanh, dy, x, dx).ok());
  CHECK(valuesOf(runOne("gelu_grad", {{"approximate", "tanh"}}, {&dy, &x},
                        {5})) == valuesOf(dx));

  Tensor result(DType::F32, {5});
  CHECK(errorOf("gelu", {{"approximate", "erf"}}, {&x}, {&result}) ==
        "nn.gelu: attribute 'approximate' must be \"none\" or \"tanh\", not "
        "\"erf\"");
}

TEST_CASE("kernel call: signed axes", "[runtime]") {
  Tensor x = ramp({2, 3, 4}, 1.1);

  // softmax: absent axis is -1, the last.
  Tensor last(DType::F32, {2, 3, 4}), middle(DType::F32, {2, 3, 4});
  REQUIRE(softmax(x, 2, last).ok());
  REQUIRE(softmax(x, 1, middle).ok());
  CHECK(valuesOf(runOne("softmax", {}, {&x}, {2, 3, 4})) == valuesOf(last));
  CHECK(valuesOf(runOne("softmax", {{"axis", -2}}, {&x}, {2, 3, 4})) ==
        valuesOf(middle));

  // reduce axes: normalized, sorted and deduplicated; empty means all;
  // keepdims is the result's shape, accepted and ignored.
  Tensor direct(DType::F32, {3});
  REQUIRE(reduce(ReduceOp::Sum, x, {0, 2}, direct).ok());
  CHECK(
      valuesOf(runOne("reduce_sum", {{"axes", {-1, 0, 2}}, {"keepdims", false}},
                      {&x}, {3})) == valuesOf(direct));
  Tensor all(DType::F32, {1, 1, 1});
  REQUIRE(reduce(ReduceOp::Mean, x, {}, all).ok());
  CHECK(valuesOf(runOne("reduce_mean", {}, {&x}, {1, 1, 1})) == valuesOf(all));

  // concat's axis counts in the result's rank.
  Tensor a = ramp({2, 2}), b = ramp({2, 3}, 0.5);
  Tensor joined(DType::F32, {2, 5});
  REQUIRE(concat({&a, &b}, 1, joined).ok());
  CHECK(valuesOf(runOne("concat", {{"axis", -1}}, {&a, &b}, {2, 5})) ==
        valuesOf(joined));

  // split has as many results as parts.
  Tensor left(DType::F32, {2, 2}), right(DType::F32, {2, 3});
  Status status = runKernel("split", {{"axis", -1}, {"sizes", {2, 3}}},
                            {&joined}, {&left, &right});
  REQUIRE(status.ok());
  CHECK(valuesOf(left) == valuesOf(a));
  CHECK(valuesOf(right) == valuesOf(b));

  Tensor result(DType::F32, {2, 3, 4});
  CHECK(errorOf("softmax", {{"axis", 3}}, {&x}, {&result}) ==
        "nn.softmax: attribute 'axis' = 3 is out of range for rank 3");
  CHECK(errorOf("log_softmax", {{"axis", -4}}, {&x}, {&result}) ==
        "nn.log_softmax: attribute 'axis' = -4 is out of range for rank 3");
  Tensor reduced(DType::F32, {3});
  CHECK(errorOf("reduce_sum", {{"axes", {0, 7}}}, {&x}, {&reduced}) ==
        "nn.reduce_sum: attribute 'axes' = 7 is out of range for rank 3");
}

TEST_CASE("kernel call: conv and layer_norm without bias", "[runtime]") {
  Tensor x = ramp({1, 2, 4, 4}, 1.5), w = ramp({3, 2, 3, 3}, 0.9);
  Tensor direct(DType::F32, {1, 3, 4, 4});
  REQUIRE(conv(x, w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, direct).ok());
  AttrMap attrs = {
      {"strides", {1, 1}}, {"pads", {1, 1, 1, 1}}, {"dilations", {1, 1}}};
  // group absent: the .td's 1.
  CHECK(valuesOf(runOne("conv", attrs, {&x, &w, nullptr}, {1, 3, 4, 4})) ==
        valuesOf(direct));

  // The window must fit the spatial rank: the forward kernels trust it.
  Tensor result(DType::F32, {1, 3, 4, 4});
  AttrMap shortWindow = {
      {"strides", {1}}, {"pads", {1, 1}}, {"dilations", {1}}};
  CHECK(errorOf("conv", shortWindow, {&x, &w, nullptr}, {&result}) ==
        "nn.conv: needs 2 strides and dilations and 4 pads for 2 spatial "
        "dimensions");
  AttrMap zeroStride = {
      {"strides", {0, 1}}, {"pads", {1, 1, 1, 1}}, {"dilations", {1, 1}}};
  CHECK(errorOf("conv", zeroStride, {&x, &w, nullptr}, {&result}) ==
        "nn.conv: kernel sizes, strides and dilations must be positive and "
        "pads non-negative");
  Tensor pooled(DType::F32, {1, 2, 2, 2});
  AttrMap pool = {{"kernel", {2}},
                  {"strides", {2, 2}},
                  {"pads", {0, 0, 0, 0}},
                  {"dilations", {1, 1}}};
  CHECK(errorOf("max_pool", pool, {&x}, {&pooled}) ==
        "nn.max_pool: needs 2 kernel sizes, strides and dilations and 4 pads "
        "for 2 spatial dimensions");

  Tensor y = ramp({2, 3, 4}, 1.0), scale = ramp({4}, -0.5);
  Tensor normed(DType::F32, {2, 3, 4});
  REQUIRE(layerNorm(y, scale, nullptr, 2, 1.0e-05f, normed).ok());
  CHECK(valuesOf(runOne("layer_norm", {}, {&y, &scale, nullptr}, {2, 3, 4})) ==
        valuesOf(normed));
}

TEST_CASE("kernel call: pooling", "[runtime]") {
  Tensor x = ramp({1, 1, 4, 4}, 0.8);
  PoolWindow window{{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, true};
  Tensor direct(DType::F32, {1, 1, 2, 2});
  REQUIRE(avgPool(x, window, direct).ok());
  AttrMap attrs = {{"kernel", {3, 3}},
                   {"strides", {2, 2}},
                   {"pads", {1, 1, 1, 1}},
                   {"dilations", {1, 1}},
                   {"count_include_pad", true}};
  CHECK(valuesOf(runOne("avg_pool", attrs, {&x}, {1, 1, 2, 2})) ==
        valuesOf(direct));
  // Without count_include_pad (default false) the border windows differ.
  attrs.erase("count_include_pad");
  CHECK(valuesOf(runOne("avg_pool", attrs, {&x}, {1, 1, 2, 2})) !=
        valuesOf(direct));
}

TEST_CASE("kernel call: optimizer defaults", "[runtime]") {
  Tensor param = ramp({4}, 0.2), grad = ramp({4}, 0.3);
  Tensor m = ramp({4}, 0.1), v = ramp({4}), step = f32({}, {3});

  AdamOptions options;
  options.lr = 0.01;
  Tensor p1(DType::F32, {4}), m1(DType::F32, {4}), v1(DType::F32, {4});
  REQUIRE(adamUpdate(param, grad, m, v, step, options, p1, m1, v1).ok());
  // Absent: beta1 0.9, beta2 0.999, epsilon 1e-8, weight_decay 0, not
  // decoupled, grad_scale 1.
  Tensor p2(DType::F32, {4}), m2(DType::F32, {4}), v2(DType::F32, {4});
  REQUIRE(runKernel("adam_update", {{"lr", 0.01}},
                    {&param, &grad, &m, &v, &step}, {&p2, &m2, &v2})
              .ok());
  CHECK(valuesOf(p2) == valuesOf(p1));
  CHECK(valuesOf(m2) == valuesOf(m1));
  CHECK(valuesOf(v2) == valuesOf(v1));

  options.weightDecay = 0.1;
  options.decoupled = true;
  REQUIRE(adamUpdate(param, grad, m, v, step, options, p1, m1, v1).ok());
  REQUIRE(runKernel("adam_update",
                    {{"lr", 0.01}, {"weight_decay", 0.1}, {"decoupled", true}},
                    {&param, &grad, &m, &v, &step}, {&p2, &m2, &v2})
              .ok());
  CHECK(valuesOf(p2) == valuesOf(p1));

  Tensor velocity = ramp({4}, 0.4);
  Tensor q1(DType::F32, {4}), w1(DType::F32, {4});
  REQUIRE(
      momentumUpdate(param, grad, velocity, 0.1, 0.9, 0, true, 2, q1, w1).ok());
  Tensor q2(DType::F32, {4}), w2(DType::F32, {4});
  REQUIRE(runKernel("momentum_update",
                    {{"lr", 0.1},
                     {"momentum", 0.9},
                     {"nesterov", true},
                     {"grad_scale", 2.0}},
                    {&param, &grad, &velocity}, {&q2, &w2})
              .ok());
  CHECK(valuesOf(q2) == valuesOf(q1));
  CHECK(valuesOf(w2) == valuesOf(w1));

  Tensor sgd(DType::F32, {4});
  REQUIRE(sgdUpdate(param, grad, 0.5, 0, 1, sgd).ok());
  CHECK(valuesOf(runOne("sgd_update", {{"lr", 0.5}}, {&param, &grad}, {4})) ==
        valuesOf(sgd));
}

TEST_CASE("kernel call: errors", "[runtime]") {
  Tensor a = ramp({2, 3}), b = ramp({3, 2});
  Tensor result(DType::F32, {2, 2});

  CHECK(errorOf("frobnicate", {}, {&a}, {&result}) ==
        "no kernel for nn.frobnicate");
  CHECK(errorOf("constant", {}, {}, {&result}) == "no kernel for nn.constant");

  // Operand and result counts, nulls.
  CHECK(errorOf("matmul", {}, {&a}, {&result}) ==
        "nn.matmul: expects 2 operands, got 1");
  CHECK(errorOf("gemm", {}, {&a, &b}, {&result}) ==
        "nn.gemm: expects 3 operands (absent optional ones as null), got 2");
  CHECK(errorOf("matmul", {}, {&a, nullptr}, {&result}) ==
        "nn.matmul: operand 1 is null");
  CHECK(errorOf("gemm", {}, {nullptr, &b, nullptr}, {&result}) ==
        "nn.gemm: operand 0 is null");
  CHECK(errorOf("matmul", {}, {&a, &b}, {}) ==
        "nn.matmul: expects 1 result, got 0");
  CHECK(errorOf("matmul", {}, {&a, &b}, {nullptr}) ==
        "nn.matmul: result 0 is null");
  CHECK(errorOf("concat", {{"axis", 0}}, {}, {&result}) ==
        "nn.concat: expects one or more operands, got 0");
  CHECK(errorOf("split", {{"axis", 0}}, {&a}, {}) ==
        "nn.split: expects one or more results, got 0");

  // Attributes: missing, of the wrong kind, unknown.
  Tensor transposed(DType::F32, {3, 2});
  CHECK(errorOf("transpose", {}, {&a}, {&transposed}) ==
        "nn.transpose: missing attribute 'perm'");
  CHECK(errorOf("sgd_update", {}, {&a, &a}, {&transposed}) ==
        "nn.sgd_update: missing attribute 'lr'");
  CHECK(errorOf("gemm", {{"trans_a", 1}}, {&a, &b, nullptr}, {&result}) ==
        "nn.gemm: attribute 'trans_a' must be a bool, not int");
  CHECK(errorOf("gemm", {{"alpha", 2}}, {&a, &b, nullptr}, {&result}) ==
        "nn.gemm: attribute 'alpha' must be a float, not int");
  CHECK(errorOf("softmax", {{"axis", 1.0}}, {&a}, {&result}) ==
        "nn.softmax: attribute 'axis' must be an int, not float");
  CHECK(errorOf("transpose", {{"perm", "1,0"}}, {&a}, {&transposed}) ==
        "nn.transpose: attribute 'perm' must be an int list, not string");
  CHECK(errorOf("matmul", {{"trans_b", true}}, {&a, &b}, {&result}) ==
        "nn.matmul: unknown attribute 'trans_b'");

  // A fault only the data reveals is the kernel's Status, passed through.
  Tensor logits = ramp({2, 3}), losses(DType::F32, {2});
  Tensor labels(DType::I64, {2});
  labels.data<int64_t>()[0] = 1;
  labels.data<int64_t>()[1] = 3;
  Status direct = softmaxCrossEntropy(logits, labels, losses);
  REQUIRE_FALSE(direct.ok());
  CHECK(errorOf("softmax_cross_entropy", {}, {&logits, &labels}, {&losses}) ==
        direct.error);
  // So is a shape the operands do not imply.
  Tensor bad(DType::F32, {3, 3});
  Status mismatch = matmul(a, b, bad);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(errorOf("matmul", {}, {&a, &b}, {&bad}) == mismatch.error);
}

TEST_CASE("kernel call: resolved attributes", "[runtime]") {
  // What the device backends read: every attribute with its default, axes
  // normalized, F32 values rounded, enums by name; nothing runs.
  Tensor x = Tensor::withoutStorage(DType::F32, {2, 3, 4});
  Tensor y = Tensor::withoutStorage(DType::F32, {2, 3, 4});
  CHECK(x.byteSize() == 0);
  CHECK(x.numElements() == 24);
  AttrMap resolved;

  SECTION("defaults and a signed axis") {
    REQUIRE(resolveKernelAttrs("softmax", {{"axis", -2}}, {&x}, {&y}, resolved)
                .ok());
    CHECK(resolved == AttrMap{{"axis", int64_t{1}}});
    REQUIRE(resolveKernelAttrs("softmax", {}, {&x}, {&y}, resolved).ok());
    CHECK(resolved == AttrMap{{"axis", int64_t{2}}});
  }
  SECTION("F32 defaults rounded to float, unit attributes as bools") {
    Tensor scale = Tensor::withoutStorage(DType::F32, {4});
    REQUIRE(resolveKernelAttrs("layer_norm", {}, {&x, &scale, nullptr}, {&y},
                               resolved)
                .ok());
    CHECK(*resolved.at("axis").getInt() == 2);
    CHECK(*resolved.at("epsilon").getFloat() == static_cast<double>(1e-5f));
    Tensor a = Tensor::withoutStorage(DType::F32, {3, 4});
    Tensor b = Tensor::withoutStorage(DType::F32, {4, 5});
    Tensor c = Tensor::withoutStorage(DType::F32, {3, 5});
    REQUIRE(resolveKernelAttrs("gemm", {{"alpha", 0.1}}, {&a, &b, nullptr},
                               {&c}, resolved)
                .ok());
    CHECK(*resolved.at("alpha").getFloat() == static_cast<double>(0.1f));
    CHECK(*resolved.at("beta").getFloat() == 1.0);
    CHECK(*resolved.at("trans_a").getBool() == false);
    CHECK(*resolved.at("trans_b").getBool() == false);
  }
  SECTION("reduce axes sorted, unique, normalized; enums by name") {
    Tensor r = Tensor::withoutStorage(DType::F32, {3});
    REQUIRE(resolveKernelAttrs("reduce_sum", {{"axes", {-1, 0, 2}}}, {&x}, {&r},
                               resolved)
                .ok());
    CHECK(*resolved.at("axes").getInts() == std::vector<int64_t>{0, 2});
    REQUIRE(resolveKernelAttrs("gelu", {}, {&x}, {&y}, resolved).ok());
    CHECK(*resolved.at("approximate").getString() == "none");
  }
  SECTION("clip's bounds only when given") {
    REQUIRE(
        resolveKernelAttrs("clip", {{"max", 2.5}}, {&x}, {&y}, resolved).ok());
    CHECK(resolved.count("min") == 0);
    CHECK(*resolved.at("max").getFloat() == 2.5);
  }
  SECTION("the errors runKernel gives") {
    CHECK(resolveKernelAttrs("softmax", {{"axis", 3}}, {&x}, {&y}, resolved)
              .error == "nn.softmax: attribute 'axis' = 3 is out of range for "
                        "rank 3");
    CHECK(resolveKernelAttrs("softmax", {{"axes", 1}}, {&x}, {&y}, resolved)
              .error == "nn.softmax: unknown attribute 'axes'");
    CHECK(resolveKernelAttrs("frobnicate", {}, {&x}, {&y}, resolved).error ==
          "no kernel for nn.frobnicate");
  }
}
