//===- RuntimeInitializersTest.cpp - synthetic weights and batches --------===//
//
// The property the executor relies on: a block filled on its own holds the
// same values as that block of the whole tensor, for splits along any axis;
// and values are deterministic and within their bounds.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Initializers.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <set>

using namespace parplan::runtime;

TEST_CASE("blocks hold the values of the whole tensor", "[initializers]") {
  for (DType type : {DType::F32, DType::F64, DType::I64, DType::I32}) {
    Tensor whole(type, {4, 6});
    REQUIRE(fillBlock(whole, {4, 6}, {0, 0}, 42, "w", 0.5, 10).ok());
    // 2x3 blocks, and 4x3 and 2x6 blocks (splits along one axis).
    for (auto [rows, cols] :
         {std::pair<int64_t, int64_t>{2, 3}, {4, 3}, {2, 6}})
      for (int64_t r0 = 0; r0 < 4; r0 += rows)
        for (int64_t c0 = 0; c0 < 6; c0 += cols) {
          Tensor block(type, {rows, cols});
          REQUIRE(fillBlock(block, {4, 6}, {r0, c0}, 42, "w", 0.5, 10).ok());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c)
              CHECK(block.get(r * cols + c) ==
                    whole.get((r0 + r) * 6 + c0 + c));
        }
  }
}

TEST_CASE("element i of a tensor is syntheticValue(seed, name, i), scaled",
          "[initializers]") {
  for (DType type : {DType::F32, DType::F64, DType::BF16})
    for (const Shape &shape : {Shape{}, Shape{7}, Shape{3, 2, 5}}) {
      INFO(toString(type) << " " << toString(shape));
      Tensor whole(type, shape);
      REQUIRE(fillBlock(whole, shape, std::vector<int64_t>(shape.size(), 0), 7,
                        "x@step3", 0.25, 0)
                  .ok());
      Tensor expected(type, shape);
      for (int64_t i = 0; i < whole.numElements(); ++i)
        expected.set(i, 0.25 * syntheticValue(7, "x@step3", i));
      for (int64_t i = 0; i < whole.numElements(); ++i)
        CHECK(whole.get(i) == expected.get(i));
    }
}

TEST_CASE("synthetic values are deterministic and keyed", "[initializers]") {
  CHECK(syntheticValue(1, "w", 5) == syntheticValue(1, "w", 5));
  CHECK(syntheticValue(1, "w", 5) != syntheticValue(2, "w", 5));
  CHECK(syntheticValue(1, "w", 5) != syntheticValue(1, "v", 5));
  CHECK(syntheticValue(1, "w", 5) != syntheticValue(1, "w", 6));
  CHECK(batchName("x", 3) == "x@step3");
  Tensor a(DType::F32, {3, 5}), b(DType::F32, {3, 5});
  REQUIRE(fillBlock(a, {3, 5}, {0, 0}, 9, "x", 1, 0).ok());
  REQUIRE(fillBlock(b, {3, 5}, {0, 0}, 9, "x", 1, 0).ok());
  double sum = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    CHECK(a.get(i) == b.get(i));
    CHECK(a.get(i) >= -1);
    CHECK(a.get(i) < 1);
    sum += std::abs(a.get(i));
  }
  CHECK(sum > 0);
}

TEST_CASE("values are uniform over their range", "[initializers]") {
  double sum = 0, sumSquares = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    double value = syntheticValue(3, "u", i);
    sum += value;
    sumSquares += value * value;
  }
  CHECK(std::abs(sum / n) < 0.01);
  CHECK(std::abs(sumSquares / n - 1.0 / 3) < 0.01);
}

TEST_CASE("integer values stay within their bound", "[initializers]") {
  Tensor labels(DType::I64, {1000});
  REQUIRE(fillBlock(labels, {1000}, {0}, 5, "labels", 1, 7).ok());
  std::set<int64_t> seen;
  for (int64_t i = 0; i < labels.numElements(); ++i) {
    auto value = static_cast<int64_t>(labels.get(i));
    CHECK(value >= 0);
    CHECK(value < 7);
    seen.insert(value);
  }
  CHECK(seen.size() == 7);
  Tensor flags(DType::I1, {100});
  REQUIRE(fillBlock(flags, {100}, {0}, 5, "mask", 1, 2).ok());
  for (int64_t i = 0; i < flags.numElements(); ++i)
    CHECK((flags.get(i) == 0 || flags.get(i) == 1));
}

TEST_CASE("fillBlock rejects blocks that do not fit", "[initializers]") {
  Tensor block(DType::F32, {2, 3});
  CHECK(fillBlock(block, {4, 6}, {3, 0}, 1, "w", 1, 0).error ==
        "synthetic values for 'w': block [2, 3] at offsets [3, 0] does not "
        "fit in [4, 6]");
  CHECK(!fillBlock(block, {4}, {0}, 1, "w", 1, 0).ok());
  Tensor labels(DType::I32, {2});
  CHECK(!fillBlock(labels, {2}, {0}, 1, "y", 1, 0).ok());
}

TEST_CASE("parameter scales follow the fan-in", "[initializers]") {
  CHECK(parameterScale({16, 4}) == Approx(0.25));
  CHECK(parameterScale({8, 4, 2, 2}) == Approx(1 / 4.0));
  CHECK(parameterScale({8}) == 0.02);
  CHECK(parameterScale({}) == 0.02);
}
