//===- RuntimeKernelsTest.cpp - the forward reference kernels -------------===//
//
// Every expected value here is worked out by hand (or from the closed form
// in the comment beside it), on tensors small enough to check on paper:
// these kernels are the ground truth the compiler is tested against, so
// they must not be tested against themselves.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Kernels.h"

#include <catch2/catch.hpp>

#include <tuple>

#include <cmath>
#include <limits>

using namespace parplan::runtime;

namespace {

Tensor make(DType type, Shape shape, const std::vector<double> &values) {
  Tensor tensor(type, std::move(shape));
  REQUIRE(static_cast<int64_t>(values.size()) == tensor.numElements());
  for (size_t i = 0; i < values.size(); ++i)
    tensor.set(static_cast<int64_t>(i), values[i]);
  return tensor;
}

Tensor f32(Shape shape, const std::vector<double> &values) {
  return make(DType::F32, std::move(shape), values);
}

void expectValues(const Tensor &tensor, const std::vector<double> &expected,
                  double margin = 1e-6) {
  REQUIRE(tensor.numElements() == static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    if (std::isnan(expected[i]))
      CHECK(std::isnan(tensor.get(static_cast<int64_t>(i))));
    else if (std::isinf(expected[i]))
      CHECK(tensor.get(static_cast<int64_t>(i)) == expected[i]);
    else
      CHECK(tensor.get(static_cast<int64_t>(i)) ==
            Approx(expected[i]).margin(margin).epsilon(0));
  }
}

void expectOk(const Status &status) {
  INFO(status.error);
  REQUIRE(status.ok());
}

std::vector<double> iota(int64_t count, double first = 1) {
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[i] = first + static_cast<double>(i);
  return values;
}

} // namespace

TEST_CASE("kernels: tensor basics", "[runtime]") {
  Tensor t(DType::I32, {2, 3});
  CHECK(t.numElements() == 6);
  CHECK(t.byteSize() == 24);
  for (int64_t i = 0; i < 6; ++i)
    CHECK(t.get(i) == 0);
  CHECK(byteWidth(DType::BF16) == 2);
  CHECK(byteWidth(DType::I1) == 1);
  CHECK(byteWidth(DType::F64) == 8);
  CHECK(isFloat(DType::BF16));
  CHECK_FALSE(isFloat(DType::I64));
  CHECK(std::string(toString(DType::BF16)) == "bf16");
  CHECK(parseDType("i1") == DType::I1);
  CHECK(parseDType("f64") == DType::F64);
  CHECK_FALSE(parseDType("f8").has_value());
  CHECK(toString(Shape{2, 3, 4}) == "[2, 3, 4]");
  CHECK(toString(Shape{}) == "[]");
  CHECK(numElements(Shape{}) == 1);

  // Integers truncate toward zero and saturate; I1 is "non-zero".
  t.set(0, -2.7);
  t.set(1, 3e10);
  t.set(2, std::nan(""));
  CHECK(t.data<int32_t>()[0] == -2);
  CHECK(t.data<int32_t>()[1] == 2147483647);
  CHECK(t.data<int32_t>()[2] == 0);
  Tensor flag(DType::I1, {2});
  flag.set(0, 0.25);
  CHECK(flag.data<uint8_t>()[0] == 1);
  CHECK(flag.data<uint8_t>()[1] == 0);

  Tensor r = f32({2, 2}, {1, 2, 3, 4}).reshaped({4});
  CHECK(r.shape() == Shape{4});
  CHECK(r.get(3) == 4);
}

TEST_CASE("kernels: half and bfloat16 conversions", "[runtime]") {
  CHECK(floatToHalf(1.0f) == 0x3c00);
  CHECK(floatToHalf(-2.0f) == 0xc000);
  CHECK(floatToHalf(65504.0f) == 0x7bff);
  CHECK(floatToHalf(65519.0f) == 0x7bff);
  CHECK(floatToHalf(65520.0f) == 0x7c00); // rounds up to infinity
  CHECK(floatToHalf(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(floatToHalf(std::ldexp(1.0f, -25)) == 0x0000);        // tie to even 0
  CHECK(floatToHalf(std::ldexp(3.0f, -25)) == 0x0002);        // tie to even 2
  CHECK(floatToHalf(std::ldexp(1.0f, -14)) == 0x0400);        // smallest normal
  CHECK(floatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00); // tie
  CHECK(floatToHalf(1.0f + std::ldexp(3.0f, -11)) == 0x3c02); // tie
  CHECK(floatToHalf(1.0f + std::ldexp(1.0f, -11) + 1e-6f) == 0x3c01);
  CHECK(floatToHalf(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(floatToHalf(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  CHECK(halfToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(halfToFloat(0x7bff) == 65504.0f);
  CHECK(halfToFloat(0xc000) == -2.0f);
  CHECK(halfToFloat(0x3555) == Approx(0.333251953125));
  CHECK(std::isinf(halfToFloat(0x7c00)));

  CHECK(floatToBFloat16(1.0f) == 0x3f80);
  CHECK(floatToBFloat16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80); // tie
  CHECK(floatToBFloat16(1.0f + std::ldexp(3.0f, -8)) == 0x3f82); // tie
  CHECK(floatToBFloat16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(floatToBFloat16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(std::isnan(bfloat16ToFloat(floatToBFloat16(std::nanf("")))));
  CHECK(bfloat16ToFloat(0x4049) == 3.140625f);

  // A double just above a half tie rounds up: rounding it to float first
  // would land on the tie and round down to 1.
  Tensor h(DType::F16, {1});
  h.set(0, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40));
  CHECK(h.data<uint16_t>()[0] == 0x3c01);
}

TEST_CASE("kernels: matmul", "[runtime]") {
  SECTION("2-D") {
    Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
    Tensor y(DType::F32, {2, 2});
    expectOk(matmul(a, b, y));
    expectValues(y, {58, 64, 139, 154});
  }
  SECTION("batch broadcasting") {
    // [2, 2, 2] x [2, 2]: the right operand is shared by both batches.
    Tensor a = f32({2, 2, 2}, {1, 0, 0, 1, 1, 2, 3, 4});
    Tensor b = f32({2, 2}, {5, 6, 7, 8});
    Tensor y(DType::F32, {2, 2, 2});
    expectOk(matmul(a, b, y));
    expectValues(y, {5, 6, 7, 8, 19, 22, 43, 50});
    // [2, 1, 1, 2] x [3, 2, 1] -> [2, 3, 1, 1].
    Tensor c = f32({2, 1, 1, 2}, {1, 2, 3, 4});
    Tensor d = f32({3, 2, 1}, {1, 1, 1, -1, 2, 0});
    Tensor z(DType::F32, {2, 3, 1, 1});
    expectOk(matmul(c, d, z));
    expectValues(z, {3, -1, 2, 7, -1, 6});
  }
  SECTION("transposed operands and alpha") {
    // op(a) = [[1, 2, 3], [4, 5, 6]] stored transposed, op(b) =
    // [[7, 8], [9, 10], [11, 12]] stored transposed: the 2-D product above,
    // halved.
    Tensor at = f32({3, 2}, {1, 4, 2, 5, 3, 6});
    Tensor bt = f32({2, 3}, {7, 9, 11, 8, 10, 12});
    Tensor y(DType::F32, {2, 2});
    expectOk(matmul(at, bt, y, true, true, 0.5));
    expectValues(y, {29, 32, 69.5, 77});
    // A batch against a shared transposed weight: [2, 2, 2] x [2, 2]^T.
    Tensor a = f32({2, 2, 2}, {1, 0, 0, 1, 1, 2, 3, 4});
    Tensor wt = f32({2, 2}, {5, 7, 6, 8});
    Tensor z(DType::F32, {2, 2, 2});
    expectOk(matmul(a, wt, z, false, true));
    expectValues(z, {5, 6, 7, 8, 19, 22, 43, 50});
    Tensor vector = f32({2}, {1, 2});
    Tensor bad(DType::F32, {2});
    CHECK_FALSE(matmul(vector, wt, bad, true, false).ok());
  }
  SECTION("1-D promotion") {
    Tensor v = f32({3}, {1, 2, 3});
    Tensor m = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    Tensor vm(DType::F32, {2});
    expectOk(matmul(v, m, vm));
    expectValues(vm, {22, 28});
    Tensor mt = f32({2, 3}, {1, 3, 5, 2, 4, 6});
    Tensor mv(DType::F32, {2});
    expectOk(matmul(mt, v, mv));
    expectValues(mv, {22, 28});
    Tensor dot(DType::F32, {});
    expectOk(matmul(v, v, dot));
    expectValues(dot, {14});
    // A batched matrix times a vector: [2, 2, 3] x [3] -> [2, 2].
    Tensor bm = f32({2, 2, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
    Tensor bv(DType::F32, {2, 2});
    expectOk(matmul(bm, v, bv));
    expectValues(bv, {1, 2, 3, 6});
  }
  SECTION("errors") {
    Tensor a = f32({2, 3}, iota(6));
    Tensor y(DType::F32, {2, 2});
    Status status = matmul(a, a, y);
    CHECK(status.error == "matmul: cannot multiply [2, 3] by [2, 3]");
    Tensor b = f32({3, 2}, iota(6));
    Tensor wrong(DType::F32, {2, 3});
    CHECK(matmul(a, b, wrong).error ==
          "matmul: result shape [2, 3] is not the expected [2, 2]");
    Tensor i(DType::I32, {3, 2});
    CHECK(matmul(a, i, y).error.rfind("matmul: expected a floating-point", 0) ==
          0);
  }
}

TEST_CASE("kernels: gemm", "[runtime]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor at = f32({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor bt = f32({2, 3}, {7, 9, 11, 8, 10, 12});
  Tensor row = f32({2}, {1, -1});
  Tensor y(DType::F32, {2, 2});
  // a x b = [58, 64, 139, 154].
  expectOk(gemm(a, b, nullptr, 1, 1, false, false, y));
  expectValues(y, {58, 64, 139, 154});
  expectOk(gemm(at, bt, nullptr, 1, 1, true, true, y));
  expectValues(y, {58, 64, 139, 154});
  // alpha 0.5, beta 2, c [2] broadcast across rows.
  expectOk(gemm(a, bt, &row, 0.5, 2, false, true, y));
  expectValues(y, {31, 30, 71.5, 75});
  // c as a column [2, 1] and as a scalar.
  Tensor column = f32({2, 1}, {10, 20});
  expectOk(gemm(at, b, &column, 1, 1, true, false, y));
  expectValues(y, {68, 74, 159, 174});
  Tensor scalar = f32({}, {3});
  expectOk(gemm(a, b, &scalar, -1, 1, false, false, y));
  expectValues(y, {-55, -61, -136, -151});
}

TEST_CASE("kernels: conv", "[runtime]") {
  Tensor x = f32({1, 1, 3, 3}, iota(9));
  Tensor ones = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  SECTION("plain") {
    Tensor y(DType::F32, {1, 1, 2, 2});
    expectOk(conv(x, ones, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, y));
    expectValues(y, {12, 16, 24, 28});
  }
  SECTION("padding, stride and bias") {
    // Windows start at -1 and 1 in each dimension.
    Tensor bias = f32({1}, {10});
    Tensor y(DType::F32, {1, 1, 2, 2});
    expectOk(conv(x, ones, &bias, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, y));
    expectValues(y, {11, 15, 21, 38});
  }
  SECTION("asymmetric padding") {
    // Only end padding: windows at 0 and 2 (the latter half in padding).
    Tensor y(DType::F32, {1, 1, 2, 2});
    expectOk(conv(x, ones, nullptr, {2, 2}, {0, 0, 1, 1}, {1, 1}, 1, y));
    expectValues(y, {12, 9, 15, 9});
  }
  SECTION("dilation") {
    Tensor y(DType::F32, {1, 1, 1, 1});
    expectOk(conv(x, ones, nullptr, {1, 1}, {0, 0, 0, 0}, {2, 2}, 1, y));
    expectValues(y, {1 + 3 + 7 + 9});
  }
  SECTION("groups and channel mixing") {
    Tensor in = f32({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
    Tensor grouped = f32({2, 1, 1, 1}, {2, 3});
    Tensor y(DType::F32, {1, 2, 2, 2});
    expectOk(conv(in, grouped, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2, y));
    expectValues(y, {2, 4, 6, 8, 30, 60, 90, 120});
    Tensor mixing = f32({1, 2, 1, 1}, {1, -1});
    Tensor z(DType::F32, {1, 1, 2, 2});
    expectOk(conv(in, mixing, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, z));
    expectValues(z, {-9, -18, -27, -36});
  }
  SECTION("1-D, two images") {
    Tensor in = f32({2, 1, 5}, {1, 2, 3, 4, 5, 5, 4, 3, 2, 1});
    Tensor w = f32({1, 1, 3}, {1, 0, -1});
    Tensor y(DType::F32, {2, 1, 5});
    expectOk(conv(in, w, nullptr, {1}, {1, 1}, {1}, 1, y));
    expectValues(y, {-2, -2, -2, -2, 4, -4, 2, 2, 2, 2});
  }
}

TEST_CASE("kernels: binary float", "[runtime]") {
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({3}, {10, 20, 40});
  Tensor y(DType::F32, {2, 3});
  expectOk(binary(BinaryKind::Add, a, b, y));
  expectValues(y, {11, 21, 41, 12, 22, 42});
  expectOk(binary(BinaryKind::Sub, a, b, y));
  expectValues(y, {-9, -19, -39, -8, -18, -38});
  expectOk(binary(BinaryKind::Mul, a, b, y));
  expectValues(y, {10, 20, 40, 20, 40, 80});
  expectOk(binary(BinaryKind::Div, a, b, y));
  expectValues(y, {0.1, 0.05, 0.025, 0.2, 0.1, 0.05});
  Tensor e = f32({3}, {0, 0.5, 3});
  expectOk(binary(BinaryKind::Pow, a, e, y));
  expectValues(y, {1, 1, 1, 1, std::sqrt(2.0), 8});
  // A scalar operand and division by zero (IEEE, not an error).
  Tensor zero = f32({}, {0});
  Tensor q(DType::F32, {2, 1});
  expectOk(binary(BinaryKind::Div, a, zero, q));
  expectValues(q, {std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::infinity()});
  Tensor bad(DType::F32, {2, 2});
  CHECK(binary(BinaryKind::Add, f32({2}, {1, 2}), b, bad).error ==
        "add: [2] and [3] do not broadcast");
}

TEST_CASE("kernels: binary integer", "[runtime]") {
  Tensor a = make(DType::I32, {4}, {-7, 7, 7, -7});
  Tensor b = make(DType::I32, {4}, {2, -2, 2, -2});
  Tensor y(DType::I32, {4});
  expectOk(binary(BinaryKind::Div, a, b, y));
  CHECK(y.data<int32_t>()[0] == -3); // truncates toward zero
  CHECK(y.data<int32_t>()[1] == -3);
  CHECK(y.data<int32_t>()[2] == 3);
  CHECK(y.data<int32_t>()[3] == 3);
  Tensor zero = make(DType::I32, {}, {0});
  CHECK(binary(BinaryKind::Div, a, zero, y).error ==
        "div: integer division by zero at element 0");

  // I8 wraps like the hardware type.
  Tensor c = make(DType::I8, {2}, {100, -100});
  Tensor d = make(DType::I8, {2}, {100, -100});
  Tensor s(DType::I8, {2});
  expectOk(binary(BinaryKind::Add, c, d, s));
  CHECK(s.data<int8_t>()[0] == -56);
  CHECK(s.data<int8_t>()[1] == 56);

  Tensor base = make(DType::I64, {3}, {2, -2, 3});
  Tensor exps = make(DType::I64, {3}, {10, 3, -1});
  Tensor p(DType::I64, {3});
  expectOk(binary(BinaryKind::Pow, base, exps, p));
  CHECK(p.data<int64_t>()[0] == 1024);
  CHECK(p.data<int64_t>()[1] == -8);
  CHECK(p.data<int64_t>()[2] == 0);

  // I64 beyond 2^53 stays exact.
  Tensor big(DType::I64, {1}), one(DType::I64, {1}), sum(DType::I64, {1});
  big.data<int64_t>()[0] = (int64_t{1} << 60) + 1;
  one.data<int64_t>()[0] = 2;
  expectOk(binary(BinaryKind::Add, big, one, sum));
  CHECK(sum.data<int64_t>()[0] == (int64_t{1} << 60) + 3);
  expectOk(binary(BinaryKind::Mul, big, one, sum));
  CHECK(sum.data<int64_t>()[0] == (int64_t{1} << 61) + 2);
}

TEST_CASE("kernels: where", "[runtime]") {
  Tensor cond = make(DType::I1, {2, 1}, {1, 0});
  Tensor lhs = f32({2, 3}, iota(6));
  Tensor rhs = f32({}, {-1});
  Tensor y(DType::F32, {2, 3});
  expectOk(where(cond, lhs, rhs, y));
  expectValues(y, {1, 2, 3, -1, -1, -1});
  // The condition broadcasts along the other axis; I64 values copy exactly.
  Tensor rowCond = make(DType::I1, {3}, {0, 1, 0});
  Tensor li(DType::I64, {1}), ri(DType::I64, {2, 1});
  li.data<int64_t>()[0] = (int64_t{1} << 62) + 1;
  ri.data<int64_t>()[0] = 5;
  ri.data<int64_t>()[1] = 6;
  Tensor z(DType::I64, {2, 3});
  expectOk(where(rowCond, li, ri, z));
  const int64_t *out = z.data<int64_t>();
  CHECK(out[0] == 5);
  CHECK(out[1] == (int64_t{1} << 62) + 1);
  CHECK(out[2] == 5);
  CHECK(out[3] == 6);
  CHECK(out[4] == (int64_t{1} << 62) + 1);
  CHECK(out[5] == 6);
}

TEST_CASE("kernels: comparisons and logic", "[runtime]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, std::nan("")});
  Tensor b = f32({3}, {2, 2, 2});
  Tensor e(DType::I1, {2, 3}), l(DType::I1, {2, 3}), g(DType::I1, {2, 3});
  expectOk(compare(CompareKind::Equal, a, b, e));
  expectOk(compare(CompareKind::Less, a, b, l));
  expectOk(compare(CompareKind::Greater, a, b, g));
  // NaN is neither equal to, below nor above anything.
  expectValues(e, {0, 1, 0, 0, 0, 0});
  expectValues(l, {1, 0, 0, 0, 0, 0});
  expectValues(g, {0, 0, 1, 1, 1, 0});
  Tensor n(DType::I1, {2, 3}), both(DType::I1, {2, 3}),
      either(DType::I1, {2, 3});
  expectOk(logicalNot(e, n));
  expectValues(n, {1, 0, 1, 1, 1, 1});
  expectOk(compare(CompareKind::And, n, g, both));
  expectValues(both, {0, 0, 1, 1, 1, 0});
  expectOk(compare(CompareKind::Or, e, l, either));
  expectValues(either, {1, 1, 0, 0, 0, 0});
  // Integers compare exactly, beyond a double's 53 bits.
  Tensor big(DType::I64, {1}), bigger(DType::I64, {1}), out(DType::I1, {1});
  big.data<int64_t>()[0] = (int64_t{1} << 62) + 1;
  bigger.data<int64_t>()[0] = (int64_t{1} << 62) + 2;
  expectOk(compare(CompareKind::Less, big, bigger, out));
  expectValues(out, {1});
  // Logic needs booleans; the result must be i1.
  CHECK_FALSE(compare(CompareKind::And, a, a, e).ok());
  Tensor wrong(DType::F32, {2, 3});
  CHECK_FALSE(compare(CompareKind::Equal, a, b, wrong).ok());
}

TEST_CASE("kernels: dropout masks depend on the logical index alone",
          "[runtime]") {
  // A [6, 40] tensor of ones, whole, then as two row blocks and as four
  // column blocks: every element keeps the whole tensor's value.
  Tensor ones = f32({6, 40}, std::vector<double>(240, 1.0));
  Tensor whole(DType::F32, {6, 40});
  expectOk(dropout(ones, 0.25, 3, 0, 11, 2, {}, {}, whole));
  int64_t kept = 0;
  for (int64_t i = 0; i < 240; ++i) {
    double v = whole.get(i);
    CHECK((v == 0.0 || v == Approx(1.0 / 0.75)));
    kept += v != 0.0;
  }
  // About three quarters kept (240 draws: 180 expected, sd ~6.7).
  CHECK(kept > 150);
  CHECK(kept < 210);
  for (int64_t row = 0; row < 6; row += 3) {
    Tensor block = f32({3, 40}, std::vector<double>(120, 1.0));
    Tensor out(DType::F32, {3, 40});
    expectOk(dropout(block, 0.25, 3, 0, 11, 2, {6, 40}, {row, 0}, out));
    for (int64_t i = 0; i < 120; ++i)
      CHECK(out.get(i) == whole.get(row * 40 + i));
  }
  for (int64_t col = 0; col < 40; col += 10) {
    Tensor block = f32({6, 10}, std::vector<double>(60, 1.0));
    Tensor out(DType::F32, {6, 10});
    expectOk(dropout(block, 0.25, 3, 0, 11, 2, {6, 40}, {0, col}, out));
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t c = 0; c < 10; ++c)
        CHECK(out.get(r * 10 + c) == whole.get(r * 40 + col + c));
  }
  // Another step, micro-batch, key or seed draws another mask.
  for (auto [step, microBatch, seed, key] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{4, 0, 11, 2},
        {3, 1, 11, 2},
        {3, 0, 12, 2},
        {3, 0, 11, 3}}) {
    Tensor other(DType::F32, {6, 40});
    expectOk(dropout(ones, 0.25, step, microBatch, seed, key, {}, {}, other));
    int64_t differ = 0;
    for (int64_t i = 0; i < 240; ++i)
      differ += other.get(i) != whole.get(i);
    CHECK(differ > 20);
  }
  // A block that leaves the logical tensor is refused.
  Tensor block = f32({3, 40}, std::vector<double>(120, 1.0));
  Tensor out(DType::F32, {3, 40});
  CHECK_FALSE(dropout(block, 0.25, 3, 0, 11, 2, {6, 40}, {4, 0}, out).ok());
}

TEST_CASE("kernels: unary activations", "[runtime]") {
  auto run = [](UnaryKind kind, std::vector<double> in, double alpha = 0,
                double beta = 0) {
    Tensor x = make(DType::F64, {static_cast<int64_t>(in.size())}, in);
    Tensor y(DType::F64, x.shape());
    expectOk(unary(kind, x, y, alpha, beta));
    return y;
  };
  expectValues(run(UnaryKind::Relu, {-1, 0, 2}), {0, 0, 2});
  expectValues(run(UnaryKind::Tanh, {0.5, -0.5}),
               {0.46211715726000974, -0.46211715726000974}, 1e-12);
  expectValues(run(UnaryKind::Sqrt, {4, 2.25}), {2, 1.5});
  expectValues(run(UnaryKind::Exp, {0, 1}), {1, std::exp(1.0)}, 1e-12);
  expectValues(run(UnaryKind::Log, {1, std::exp(2.0)}), {0, 2}, 1e-12);
  expectValues(run(UnaryKind::Sigmoid, {0, -2, 2, -800}),
               {0.5, 0.11920292202211755, 0.88079707797788245, 0}, 1e-12);
  expectValues(run(UnaryKind::Erf, {0.5}), {0.5204998778130465}, 1e-12);
  // x * clamp(x / 6 + 1/2, 0, 1).
  expectValues(run(UnaryKind::HardSwish, {-4, 1, 4}), {0, 2.0 / 3, 4}, 1e-12);
  expectValues(run(UnaryKind::LeakyRelu, {-2, 3}, 0.1), {-0.2, 3}, 1e-12);
  expectValues(run(UnaryKind::HardSigmoid, {1, -5, 5}, 0.2, 0.5), {0.7, 0, 1},
               1e-12);
  // 0.5 x (1 + erf(x / sqrt 2)) and its tanh approximation.
  expectValues(run(UnaryKind::GeluExact, {1, -1, 0}),
               {0.8413447460685429, -0.15865525393145707, 0}, 1e-12);
  expectValues(run(UnaryKind::GeluTanh, {1}), {0.8411919906082768}, 1e-12);
  Tensor bad(DType::I32, {1}), out(DType::I32, {1});
  CHECK(unary(UnaryKind::Relu, bad, out).error ==
        "relu: expected a floating-point tensor, got i32");
}

TEST_CASE("kernels: clip", "[runtime]") {
  Tensor x = f32({5}, {-3, -1, 0.5, 2, std::nan("")});
  Tensor y(DType::F32, {5});
  expectOk(clip(x, -1.5, 1, y));
  expectValues(y, {-1.5, -1, 0.5, 1, std::nan("")});
  expectOk(clip(x, std::nullopt, 0, y));
  expectValues(y, {-3, -1, 0, 0, std::nan("")});
  expectOk(clip(x, 0, std::nullopt, y));
  expectValues(y, {0, 0, 0.5, 2, std::nan("")});
}

TEST_CASE("kernels: resize and its gradient", "[runtime]") {
  Tensor x = f32({1, 4}, {0, 10, 20, 30});
  Tensor y(DType::F32, {1, 8});
  // PyTorch's interpolate(scale_factor=2), nearest and bilinear with
  // align_corners=False: half-pixel coordinates, edges clamped.
  expectOk(resize(x, "nearest", "half_pixel", "round_prefer_floor", y));
  expectValues(y, {0, 0, 10, 10, 20, 20, 30, 30});
  expectOk(resize(x, "linear", "half_pixel", "round_prefer_floor", y));
  expectValues(y, {0, 2.5, 7.5, 12.5, 17.5, 22.5, 27.5, 30});
  Tensor seven(DType::F32, {1, 7});
  expectOk(resize(x, "linear", "align_corners", "round_prefer_floor", seven));
  expectValues(seven, {0, 5, 10, 15, 20, 25, 30});
  // Upsample's: the element at or before x / scale; downsampling too.
  expectOk(resize(x, "nearest", "asymmetric", "floor", y));
  expectValues(y, {0, 0, 10, 10, 20, 20, 30, 30});
  Tensor two(DType::F32, {1, 2});
  expectOk(resize(x, "nearest", "asymmetric", "floor", two));
  expectValues(two, {0, 20});
  expectOk(resize(x, "nearest", "half_pixel", "round_prefer_ceil", two));
  expectValues(two, {10, 30});
  // The gradient is the adjoint: <resize(a), b> = <a, resize_grad(b)>.
  Tensor a(DType::F64, {1, 2, 3, 3}), b(DType::F64, {1, 2, 6, 5});
  for (int64_t i = 0; i < a.numElements(); ++i)
    a.set(i, std::sin(static_cast<double>(i) + 0.5));
  for (int64_t i = 0; i < b.numElements(); ++i)
    b.set(i, std::cos(0.7 * static_cast<double>(i)));
  for (const char *mode : {"nearest", "linear"}) {
    Tensor resized(DType::F64, b.shape()), back(DType::F64, a.shape());
    expectOk(resize(a, mode, "half_pixel", "round_prefer_floor", resized));
    expectOk(resizeGrad(b, mode, "half_pixel", "round_prefer_floor", back));
    double forward = 0, adjoint = 0;
    for (int64_t i = 0; i < b.numElements(); ++i)
      forward += resized.get(i) * b.get(i);
    for (int64_t i = 0; i < a.numElements(); ++i)
      adjoint += a.get(i) * back.get(i);
    INFO(mode);
    CHECK(forward == Approx(adjoint).epsilon(1e-12));
  }
  Tensor flat(DType::F32, {8});
  CHECK(resize(x, "nearest", "half_pixel", "floor", flat).error ==
        "resize: an input of rank 2 and a result of rank 1");
}

TEST_CASE("kernels: top_k", "[runtime]") {
  // Along the last axis, and along the first; ties keep the lower index.
  Tensor x = f32({2, 4}, {3, 1, 3, 2, -1, 5, 0, 5});
  Tensor values(DType::F32, {2, 2}), indices(DType::I64, {2, 2});
  expectOk(topK(x, 1, true, values, indices));
  expectValues(values, {3, 3, 5, 5});
  expectValues(indices, {0, 2, 1, 3});
  expectOk(topK(x, 1, false, values, indices));
  expectValues(values, {1, 2, -1, 0});
  expectValues(indices, {1, 3, 0, 2});
  Tensor column(DType::F32, {1, 4}), where(DType::I64, {1, 4});
  expectOk(topK(x, 0, true, column, where));
  expectValues(column, {3, 5, 3, 5});
  expectValues(where, {0, 1, 0, 1});
  Tensor tooMany(DType::F32, {2, 5}), tooManyIndices(DType::I64, {2, 5});
  CHECK(!topK(x, 1, true, tooMany, tooManyIndices).ok());
}

TEST_CASE("kernels: cast", "[runtime]") {
  SECTION("to bf16 and f16 round to nearest even") {
    Tensor x = f32({4}, {1 + std::ldexp(1.0, -8), 1 + std::ldexp(3.0, -8),
                         -1 - std::ldexp(5.0, -9), 3.0e38});
    Tensor b(DType::BF16, {4});
    expectOk(cast(x, b));
    const uint16_t *bits = b.data<uint16_t>();
    CHECK(bits[0] == 0x3f80); // tie: stays at 1
    CHECK(bits[1] == 0x3f82); // tie: up to the even 1 + 2^-6
    CHECK(bits[2] == 0xbf81); // 1.25 ulps: down to 1 + 2^-7
    CHECK(bits[3] == 0x7f62); // 3e38 = 1.7632 * 2^127 -> 226 / 128
    Tensor h = f32({4}, {2049, 2051, 70000, 0.1});
    Tensor hf(DType::F16, {4});
    expectOk(cast(h, hf));
    expectValues(hf, {2048, 2052, std::numeric_limits<double>::infinity(),
                      0.0999755859375});
  }
  SECTION("float to integer truncates; to bool tests non-zero") {
    Tensor x = f32({4}, {-2.7, 2.7, 0, 0.5});
    Tensor i(DType::I32, {4});
    expectOk(cast(x, i));
    CHECK(i.data<int32_t>()[0] == -2);
    CHECK(i.data<int32_t>()[1] == 2);
    CHECK(i.data<int32_t>()[2] == 0);
    CHECK(i.data<int32_t>()[3] == 0);
    Tensor flags(DType::I1, {4});
    expectOk(cast(x, flags));
    CHECK(flags.data<uint8_t>()[0] == 1);
    CHECK(flags.data<uint8_t>()[2] == 0);
    CHECK(flags.data<uint8_t>()[3] == 1);
  }
  SECTION("between integers wraps, exactly") {
    Tensor x(DType::I64, {2});
    x.data<int64_t>()[0] = (int64_t{1} << 32) + 5;
    x.data<int64_t>()[1] = (int64_t{1} << 62) + 1;
    Tensor i(DType::I32, {2});
    expectOk(cast(x, i));
    CHECK(i.data<int32_t>()[0] == 5);
    CHECK(i.data<int32_t>()[1] == 1);
    Tensor f(DType::F64, {2});
    expectOk(cast(x, f));
    CHECK(f.data<double>()[0] == 4294967301.0);
    Tensor back(DType::I8, {1});
    expectOk(cast(make(DType::I32, {1}, {300}), back));
    CHECK(back.data<int8_t>()[0] == 44);
  }
  SECTION("f64 to f16 rounds once") {
    Tensor x(DType::F64, {1});
    x.data<double>()[0] = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    Tensor h(DType::F16, {1});
    expectOk(cast(x, h));
    CHECK(h.data<uint16_t>()[0] == 0x3c01);
  }
}

TEST_CASE("kernels: softmax and log_softmax", "[runtime]") {
  const std::vector<double> p{0.09003057317038046, 0.24472847105479764,
                              0.6652409557748218};
  const std::vector<double> logp{-2.40760596444438, -1.4076059644443804,
                                 -0.40760596444438046};
  // Shifted by 1000: exp would overflow without subtracting the max.
  Tensor x = make(DType::F64, {2, 3}, {1, 2, 3, 1001, 1002, 1003});
  Tensor y(DType::F64, {2, 3});
  expectOk(softmax(x, 1, y));
  expectValues(y, {p[0], p[1], p[2], p[0], p[1], p[2]}, 1e-12);
  expectOk(logSoftmax(x, -1, y));
  expectValues(y, {logp[0], logp[1], logp[2], logp[0], logp[1], logp[2]}, 1e-9);
  // Along axis 0 of [3, 2].
  Tensor c = f32({3, 2}, {1, 0, 2, 0, 3, 0});
  Tensor s(DType::F32, {3, 2});
  expectOk(softmax(c, 0, s));
  expectValues(s, {p[0], 1.0 / 3, p[1], 1.0 / 3, p[2], 1.0 / 3});
  // Masked entries (-inf) get probability 0.
  Tensor m = f32({3}, {0, -std::numeric_limits<double>::infinity(), 0});
  Tensor ms(DType::F32, {3});
  expectOk(softmax(m, 0, ms));
  expectValues(ms, {0.5, 0, 0.5});
}

TEST_CASE("kernels: layer_norm", "[runtime]") {
  const double r = 1.224744871391589; // 1 / sqrt(2/3)
  Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 6});
  Tensor scale = f32({3}, {1, 2, 3});
  Tensor bias = f32({3}, {0.5, 0.5, 0.5});
  Tensor y(DType::F32, {2, 3});
  // Row 1: mean 2, biased variance 2/3; row 2: mean 4, variance 8/3.
  expectOk(layerNorm(x, scale, &bias, 1, 0, y));
  expectValues(y, {0.5 - r, 0.5, 0.5 + 3 * r, 0.5 - r, 0.5, 0.5 + 3 * r});
  expectOk(layerNorm(x, scale, nullptr, -1, 0, y));
  expectValues(y, {-r, 0, 3 * r, -r, 0, 3 * r});
  // Over both axes: mean 3, variance 8/3; epsilon 4/3 makes the root 2.
  Tensor ones = f32({2, 3}, {1, 1, 1, 1, 1, 1});
  expectOk(layerNorm(x, ones, nullptr, 0, 4.0 / 3, y));
  expectValues(y, {-1, -0.5, 0, -0.5, 0.5, 1.5});
}

TEST_CASE("kernels: batch_norm", "[runtime]") {
  Tensor x = f32({1, 2, 2}, {1, 3, 5, 7});
  Tensor scale = f32({2}, {2, 1}), bias = f32({2}, {0, 1});
  Tensor mean = f32({2}, {2, 6}), var = f32({2}, {1, 4});
  Tensor y(DType::F32, {1, 2, 2});
  expectOk(batchNorm(x, scale, bias, mean, var, 0, y));
  expectValues(y, {-2, 2, 0.5, 1.5});
  // Epsilon: var + eps = 4 and 7.
  expectOk(batchNorm(x, scale, bias, mean, var, 3, y));
  expectValues(y, {-1, 1, 1 - 1 / std::sqrt(7.0), 1 + 1 / std::sqrt(7.0)});
}

TEST_CASE("kernels: pooling", "[runtime]") {
  auto window = [](std::vector<int64_t> kernel, std::vector<int64_t> strides,
                   std::vector<int64_t> pads, std::vector<int64_t> dilations,
                   bool ceil = false, bool includePad = false) {
    PoolWindow w;
    w.kernel = std::move(kernel);
    w.strides = std::move(strides);
    w.pads = std::move(pads);
    w.dilations = std::move(dilations);
    w.ceilMode = ceil;
    w.countIncludePad = includePad;
    return w;
  };
  SECTION("2-D max and average") {
    Tensor x = f32({1, 1, 4, 4}, iota(16));
    Tensor y(DType::F32, {1, 1, 2, 2});
    PoolWindow w = window({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1});
    expectOk(maxPool(x, w, y));
    expectValues(y, {6, 8, 14, 16});
    expectOk(avgPool(x, w, y));
    expectValues(y, {3.5, 5.5, 11.5, 13.5});
  }
  SECTION("max picks fractions and propagates NaN") {
    Tensor x = f32({1, 1, 4}, {0.25, 0.5, 0.125, std::nan("")});
    Tensor y(DType::F32, {1, 1, 3});
    expectOk(maxPool(x, window({2}, {1}, {0, 0}, {1}), y));
    expectValues(y, {0.5, 0.5, std::nan("")});
  }
  SECTION("padding: excluded from max, optional in the average") {
    Tensor x = f32({1, 1, 4}, {-1, -2, -3, 7});
    Tensor y(DType::F32, {1, 1, 4});
    PoolWindow w = window({3}, {1}, {1, 1}, {1});
    expectOk(maxPool(x, w, y));
    expectValues(y, {-1, -1, 7, 7});
    Tensor a = f32({1, 1, 4}, {1, 2, 3, 4});
    expectOk(avgPool(a, w, y)); // sums 3, 6, 9, 7
    expectValues(y, {1.5, 2, 3, 3.5});
    w.countIncludePad = true;
    expectOk(avgPool(a, w, y));
    expectValues(y, {1, 2, 3, 7.0 / 3});
  }
  SECTION("ceil mode") {
    // 5 elements, kernel 2, stride 2: ceil gives a third, partial window.
    Tensor x = f32({1, 1, 5}, iota(5));
    Tensor y(DType::F32, {1, 1, 3});
    PoolWindow w = window({2}, {2}, {0, 0}, {1}, true);
    expectOk(maxPool(x, w, y));
    expectValues(y, {2, 4, 5});
    expectOk(avgPool(x, w, y));
    expectValues(y, {1.5, 3.5, 5});
    Tensor floorShape(DType::F32, {1, 1, 2});
    w.ceilMode = false;
    expectOk(maxPool(x, w, floorShape));
    expectValues(floorShape, {2, 4});
    // 6 elements, begin pad 1: windows at -1, 1, 3, 5; the last reaches
    // past the input and its (zero) end padding, which no divisor counts.
    Tensor six = f32({1, 1, 6}, iota(6));
    Tensor z(DType::F32, {1, 1, 4});
    PoolWindow p = window({2}, {2}, {1, 0}, {1}, true, true);
    expectOk(avgPool(six, p, z));
    expectValues(z, {0.5, 2.5, 4.5, 6});
    p.countIncludePad = false;
    expectOk(avgPool(six, p, z));
    expectValues(z, {1, 2.5, 4.5, 6});
    expectOk(maxPool(six, p, z));
    expectValues(z, {1, 3, 5, 6});
    // 5 elements, pads 1 and 1: the ceil window would start at 5, in the
    // end padding, so it is dropped and the result has 3 windows.
    Tensor five = f32({1, 1, 5}, iota(5));
    PoolWindow q = window({2}, {2}, {1, 1}, {1}, true);
    Tensor three(DType::F32, {1, 1, 3});
    expectOk(maxPool(five, q, three));
    expectValues(three, {1, 3, 5});
    Tensor four(DType::F32, {1, 1, 4});
    CHECK(maxPool(five, q, four).error ==
          "max_pool: result shape [1, 1, 4] is not the expected [1, 1, 3]");
  }
  SECTION("dilation, channels and batches") {
    Tensor x = f32({2, 2, 5}, iota(20));
    Tensor y(DType::F32, {2, 2, 3});
    PoolWindow w = window({2}, {1}, {0, 0}, {2});
    expectOk(maxPool(x, w, y));
    expectValues(y, {3, 4, 5, 8, 9, 10, 13, 14, 15, 18, 19, 20});
    expectOk(avgPool(x, w, y));
    expectValues(y, {2, 3, 4, 7, 8, 9, 12, 13, 14, 17, 18, 19});
  }
}

TEST_CASE("kernels: reshape, expand, transpose", "[runtime]") {
  Tensor x = f32({2, 3}, iota(6));
  Tensor r(DType::F32, {3, 2});
  expectOk(reshape(x, r));
  expectValues(r, iota(6));
  Tensor wrong(DType::F32, {4});
  CHECK_FALSE(reshape(x, wrong).ok());

  Tensor col = f32({2, 1}, {1, 2});
  Tensor e(DType::F32, {2, 2, 3});
  expectOk(expand(col, e));
  expectValues(e, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});

  Tensor t(DType::F32, {3, 2});
  expectOk(transpose(x, {1, 0}, t));
  expectValues(t, {1, 4, 2, 5, 3, 6});
  // [2, 3, 2] with perm [2, 0, 1]: result[i][j][k] = x[j][k][i].
  Tensor x3 = make(DType::I64, {2, 3, 2}, iota(12, 0));
  Tensor t3(DType::I64, {2, 2, 3});
  expectOk(transpose(x3, {2, 0, 1}, t3));
  expectValues(t3, {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11});
}

TEST_CASE("kernels: concat and split", "[runtime]") {
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({2, 2}, {3, 4, 5, 6});
  Tensor y(DType::F32, {2, 3});
  expectOk(concat({&a, &b}, 1, y));
  expectValues(y, {1, 3, 4, 2, 5, 6});
  Tensor rows(DType::F32, {4, 2});
  expectOk(concat({&b, &b}, -2, rows));
  expectValues(rows, {3, 4, 5, 6, 3, 4, 5, 6});

  Tensor p(DType::F32, {2, 1}), q(DType::F32, {2, 2});
  expectOk(split(y, 1, {&p, &q}));
  expectValues(p, {1, 2});
  expectValues(q, {3, 4, 5, 6});
  Tensor bad(DType::F32, {2, 1});
  CHECK_FALSE(split(y, 1, {&p, &bad}).ok());
}

TEST_CASE("kernels: slice", "[runtime]") {
  Tensor x = f32({2, 4}, iota(8, 0));
  Tensor y(DType::F32, {2, 2});
  // Rows 1, 0 and columns 3, 1: both steps negative.
  expectOk(slice(x, {1, 3}, {-1, -2}, y));
  expectValues(y, {7, 5, 3, 1});
  Tensor z(DType::F32, {1, 2});
  expectOk(slice(x, {1, 0}, {1, 3}, z));
  expectValues(z, {4, 7});
  Tensor too(DType::F32, {1, 3});
  CHECK(slice(x, {1, 0}, {1, 2}, too).error ==
        "slice: dimension 1: 3 elements from 0 by step 2 leave [0, 4)");
}

TEST_CASE("kernels: gather", "[runtime]") {
  Tensor table = f32({3, 2}, {10, 11, 20, 21, 30, 31});
  SECTION("embedding lookup with a negative index") {
    Tensor ids = make(DType::I64, {1, 2}, {0, -1});
    Tensor y(DType::F32, {1, 2, 2});
    expectOk(gather(table, ids, 0, y));
    expectValues(y, {10, 11, 30, 31});
  }
  SECTION("along axis 1 with i32 indices") {
    Tensor ids = make(DType::I32, {3}, {1, 1, -2});
    Tensor y(DType::F32, {3, 3});
    expectOk(gather(table, ids, 1, y));
    expectValues(y, {11, 11, 10, 21, 21, 20, 31, 31, 30});
  }
  SECTION("out of range") {
    Tensor ids = make(DType::I64, {2}, {1, 3});
    Tensor y(DType::F32, {2, 2});
    CHECK(gather(table, ids, 0, y).error ==
          "gather: index 3 out of range [-3, 3)");
    Tensor low = make(DType::I64, {1}, {-4});
    Tensor one(DType::F32, {1, 2});
    CHECK(gather(table, low, 0, one).error ==
          "gather: index -4 out of range [-3, 3)");
  }
}

TEST_CASE("kernels: reduce", "[runtime]") {
  Tensor x = f32({2, 3}, iota(6));
  Tensor rows(DType::F32, {2, 1});
  expectOk(reduce(ReduceOp::Sum, x, {1}, rows));
  expectValues(rows, {6, 15});
  Tensor cols(DType::F32, {3}); // keepdims = false
  expectOk(reduce(ReduceOp::Mean, x, {0}, cols));
  expectValues(cols, {2.5, 3.5, 4.5});
  Tensor all(DType::F32, {});
  expectOk(reduce(ReduceOp::Mean, x, {}, all));
  expectValues(all, {3.5});
  Tensor x3 = f32({2, 2, 2}, iota(8));
  Tensor mid(DType::F32, {1, 2, 1});
  expectOk(reduce(ReduceOp::Sum, x3, {0, 2}, mid));
  expectValues(mid, {1 + 2 + 5 + 6, 3 + 4 + 7 + 8});
  Tensor last(DType::F32, {2, 2});
  expectOk(reduce(ReduceOp::Mean, x3, {-1}, last));
  expectValues(last, {1.5, 3.5, 5.5, 7.5});
  Tensor one(DType::F32, {1});
  CHECK(reduce(ReduceOp::Sum, x3, {3}, one).error ==
        "reduce_sum: axis 3 out of range for [2, 2, 2]");
  Tensor xi = make(DType::I32, {2, 2}, {1, 2, 3, 5});
  Tensor si(DType::I32, {2});
  expectOk(reduce(ReduceOp::Sum, xi, {1}, si));
  CHECK(si.data<int32_t>()[0] == 3);
  CHECK(si.data<int32_t>()[1] == 8);
  expectOk(reduce(ReduceOp::Mean, xi, {1}, si));
  CHECK(si.data<int32_t>()[1] == 4); // 8 / 2; 3 / 2 truncates to 1
  CHECK(si.data<int32_t>()[0] == 1);
}

TEST_CASE("kernels: f64, f16 and bf16 paths", "[runtime]") {
  // 2^52 + 1 is exact in f64 and not in f32.
  double big = std::ldexp(1.0, 52);
  Tensor a = make(DType::F64, {1}, {big}), one = make(DType::F64, {1}, {1});
  Tensor y(DType::F64, {1});
  expectOk(binary(BinaryKind::Add, a, one, y));
  CHECK(y.data<double>()[0] == big + 1);
  Tensor af = f32({1}, {big}), onef = f32({1}, {1});
  Tensor yf(DType::F32, {1});
  expectOk(binary(BinaryKind::Add, af, onef, yf));
  CHECK(yf.data<float>()[0] == static_cast<float>(big));

  // f16: 1 + 2^-11 is a tie and rounds to 1; 1 + 2^-10 is exact.
  Tensor h = make(DType::F16, {2}, {1, 1});
  Tensor d =
      make(DType::F16, {2}, {std::ldexp(1.0, -11), std::ldexp(1.0, -10)});
  Tensor hs(DType::F16, {2});
  expectOk(binary(BinaryKind::Add, h, d, hs));
  CHECK(hs.data<uint16_t>()[0] == 0x3c00);
  CHECK(hs.data<uint16_t>()[1] == 0x3c01);

  // bf16 matmul: the dot product accumulates before its single rounding
  // (256 + 1 + 1 = 258 exactly representable; 256 + 1 alone is a tie).
  Tensor l = make(DType::BF16, {1, 3}, {256, 1, 1});
  Tensor r = make(DType::BF16, {3, 1}, {1, 1, 1});
  Tensor m(DType::BF16, {1, 1});
  expectOk(matmul(l, r, m));
  CHECK(m.get(0) == 258);
  Tensor l2 = make(DType::BF16, {1, 2}, {256, 1});
  Tensor r2 = make(DType::BF16, {2, 1}, {1, 1});
  expectOk(matmul(l2, r2, m));
  CHECK(m.get(0) == 256);

  // Softmax in f16: probabilities rounded once to half.
  Tensor s = make(DType::F16, {3}, {1, 2, 3});
  Tensor sp(DType::F16, {3});
  expectOk(softmax(s, 0, sp));
  CHECK(sp.data<uint16_t>()[2] == floatToHalf(0.6652409557748218f));
  CHECK(sp.get(0) == Approx(0.09003057317038046).epsilon(1e-3));
}

TEST_CASE("kernels: a GPT-sized matmul is quick and matches a dot product",
          "[runtime]") {
  // [2, 128, 64] x [64, 256]: the size of one MLP projection in the tests.
  Tensor x(DType::F32, {2, 128, 64}), w(DType::F32, {64, 256});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.set(i, static_cast<double>((i * 7) % 13) - 6);
  for (int64_t i = 0; i < w.numElements(); ++i)
    w.set(i, static_cast<double>((i * 5) % 11) / 8 - 0.5);
  Tensor y(DType::F32, {2, 128, 256});
  expectOk(matmul(x, w, y));
  // Element [1, 5, 9]: an explicit dot product of row (1, 5) and column 9.
  double expected = 0;
  for (int64_t p = 0; p < 64; ++p)
    expected += x.get((128 + 5) * 64 + p) * w.get(p * 256 + 9);
  CHECK(y.get((128 + 5) * 256 + 9) == Approx(expected));
}
