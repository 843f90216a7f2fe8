//===- SbpTest.cpp - slicing math -----------------------------------------===//

#include "parplan/Sbp/Sbp.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>

using namespace parplan;

namespace {

using Shape = std::vector<int64_t>;

int64_t numElements(const Shape &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<>());
}

/// Row-major strides of a dense tensor.
Shape strides(const Shape &shape) {
  Shape result(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    result[i - 1] = result[i] * shape[i];
  return result;
}

/// Calls `visit(flatIndexInWhole)` for every element of `slice`.
void forEachElement(const Shape &shape, const Slice &slice,
                    const std::function<void(int64_t)> &visit) {
  if (slice.numElements() == 0)
    return;
  Shape stride = strides(shape);
  Shape index(shape.size(), 0);
  while (true) {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      flat += (slice.offsets[d] + index[d]) * stride[d];
    visit(flat);
    size_t d = shape.size();
    while (d-- > 0) {
      if (++index[d] < slice.sizes[d])
        break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      return;
  }
}

/// Every nd-SBP over `meshRank` axes for a tensor of `rank`.
std::vector<NdSbp> allNdSbps(int64_t rank, size_t meshRank) {
  std::vector<Sbp> entries = {Sbp::broadcast(), Sbp::partial()};
  for (int64_t axis = 0; axis < rank; ++axis)
    entries.push_back(Sbp::split(axis));
  std::vector<NdSbp> result = {{}};
  for (size_t i = 0; i < meshRank; ++i) {
    std::vector<NdSbp> next;
    for (const NdSbp &prefix : result)
      for (const Sbp &entry : entries) {
        NdSbp extended = prefix;
        extended.push_back(entry);
        next.push_back(extended);
      }
    result = next;
  }
  return result;
}

} // namespace

TEST_CASE("balanced split gives the first dim % n shards one more element") {
  // 10 over 4: 3, 3, 2, 2.
  std::vector<Range> expected = {{0, 3}, {3, 3}, {6, 2}, {8, 2}};
  for (int64_t i = 0; i < 4; ++i) {
    Range shard = balancedShard(10, 4, i);
    CHECK(shard.offset == expected[i].offset);
    CHECK(shard.size == expected[i].size);
  }
  // Even split and more shards than elements.
  CHECK(balancedShard(8, 4, 3).offset == 6);
  CHECK(balancedShard(8, 4, 3).size == 2);
  CHECK(balancedShard(2, 4, 1).size == 1);
  CHECK(balancedShard(2, 4, 2).size == 0);
  CHECK(balancedShard(2, 4, 3).offset == 2);
}

TEST_CASE("weighted split: parts in proportion to the shares", "[sbp]") {
  auto sizes = [](int64_t dim, const std::vector<int64_t> &weights) {
    std::vector<int64_t> parts;
    int64_t next = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      Range shard = weightedShard(dim, weights, static_cast<int64_t>(i));
      CHECK(shard.offset == next); // consecutive, from 0
      next += shard.size;
      parts.push_back(shard.size);
    }
    CHECK(next == dim); // the parts cover the dimension
    return parts;
  };
  // 64 rows over two fast and two slow devices, 9 : 5.
  CHECK(sizes(64, {9, 9, 5, 5}) == std::vector<int64_t>{21, 21, 11, 11});
  // Leftovers go to the largest remainders: 10 * 3/7 = 4.29, 10 * 4/7 = 5.71.
  CHECK(sizes(10, {3, 4}) == std::vector<int64_t>{4, 6});
  // Equal remainders: the lower index first, as balancedShard does.
  CHECK(sizes(6, {1, 1, 2}) == std::vector<int64_t>{2, 1, 3});
  CHECK(sizes(0, {5, 1}) == std::vector<int64_t>{0, 0});
  CHECK(sizes(1, {1, 5}) == std::vector<int64_t>{0, 1});
  // Products past 64 bits are exact.
  CHECK(sizes(int64_t{1} << 62, {3, 1}) ==
        std::vector<int64_t>{int64_t{3} << 60, int64_t{1} << 60});
  // More shares than the stack holds: each within one row of its
  // proportion.
  std::vector<int64_t> many(70);
  std::iota(many.begin(), many.end(), 1);
  std::vector<int64_t> parts = sizes(1000, many);
  for (size_t i = 0; i < many.size(); ++i) {
    double ideal = 1000.0 * static_cast<double>(many[i]) / (70.0 * 71.0 / 2);
    CHECK(std::abs(static_cast<double>(parts[i]) - ideal) < 1.0);
  }
  // Equal weights are balanced shards, for every size.
  for (int64_t dim = 0; dim <= 13; ++dim)
    for (int64_t n = 1; n <= 5; ++n)
      for (int64_t i = 0; i < n; ++i) {
        Range weighted = weightedShard(
            dim, std::vector<int64_t>(static_cast<size_t>(n), 7), i);
        Range balanced = balancedShard(dim, n, i);
        CHECK(weighted.offset == balanced.offset);
        CHECK(weighted.size == balanced.size);
      }
}

TEST_CASE("a mesh axis with shares cuts every split by them", "[sbp]") {
  Sbp s0 = Sbp::split(0), s1 = Sbp::split(1), b = Sbp::broadcast();
  MeshShares shares = {{3, 1}, {}};
  // [S(0), S(0)] on 2x2: axis 0 cuts 8 rows 6 + 2, axis 1 halves each.
  CHECK(deviceSlice({8, 4}, {2, 2}, {s0, s0}, {0, 1}, shares) ==
        Slice{{3, 0}, {3, 4}});
  CHECK(deviceSlice({8, 4}, {2, 2}, {s0, s0}, {1, 0}, shares) ==
        Slice{{6, 0}, {1, 4}});
  // A broadcast along the weighted axis does not cut.
  CHECK(localShape({8, 4}, {2, 2}, {b, s1}, {1, 1}, shares) ==
        std::vector<int64_t>{8, 2});
  CHECK_FALSE(hasEvenBlocks({8, 4}, {2, 2}, {s0, s1}, shares));
  CHECK(hasEvenBlocks({8, 4}, {2, 2}, {b, s1}, shares));
  CHECK(hasEvenBlocks({8, 4}, {2, 2}, {s0, s1}, {{2, 2}, {}}));
  CHECK(hasUnevenShares(shares, 0));
  CHECK_FALSE(hasUnevenShares(shares, 1));
  CHECK_FALSE(hasUnevenShares({{4, 4}}, 0));

  CHECK_FALSE(checkShares({2, 2}, shares));
  CHECK_FALSE(checkShares({2, 2}, {}));
  CHECK(*checkShares({2, 2}, {{1, 1, 1}}) ==
        "mesh axis 0 has 2 devices but 3 shares");
  CHECK(*checkShares({2}, {{1, 0}}) == "share 0 of mesh axis 0 is not in 1 .. "
                                       "2^31");
  CHECK(*checkShares({2}, {{}, {}}) == "shares for 2 mesh axes on a mesh of "
                                       "rank 1");
}

TEST_CASE("hasNonEmptyBlocks: every device holds an element") {
  Sbp s0 = Sbp::split(0), s1 = Sbp::split(1), b = Sbp::broadcast();
  CHECK(hasNonEmptyBlocks({8, 3}, {8}, {s0}));
  CHECK(hasNonEmptyBlocks({5, 3}, {4}, {s0})); // 2, 1, 1 and 1 rows
  CHECK_FALSE(hasNonEmptyBlocks({3, 3}, {4}, {s0}));
  // Two axes on one dimension need their product.
  CHECK(hasNonEmptyBlocks({32, 1}, {4, 8}, {s0, s0}));
  CHECK_FALSE(hasNonEmptyBlocks({32, 1}, {8, 8}, {s0, s0}));
  CHECK(hasNonEmptyBlocks({32, 8}, {8, 8}, {s0, s1}));
  CHECK(hasNonEmptyBlocks({1, 1}, {8, 8}, {b, Sbp::partial()}));
  // Each block of every device, by deviceSlice, agrees.
  for (int64_t rows = 1; rows <= 9; ++rows) {
    bool empty = false;
    for (int64_t i = 0; i < 8; ++i)
      empty |= deviceSlice({rows}, {2, 4}, {s0, s0}, meshCoordinate({2, 4}, i))
                   .sizes[0] == 0;
    CHECK(hasNonEmptyBlocks({rows}, {2, 4}, {s0, s0}) == !empty);
  }
}

TEST_CASE("mesh coordinates are row-major") {
  Shape mesh = {2, 3, 4};
  CHECK(meshSize(mesh) == 24);
  CHECK(meshCoordinate(mesh, 0) == Shape{0, 0, 0});
  CHECK(meshCoordinate(mesh, 1) == Shape{0, 0, 1});
  CHECK(meshCoordinate(mesh, 4) == Shape{0, 1, 0});
  CHECK(meshCoordinate(mesh, 23) == Shape{1, 2, 3});
  for (int64_t i = 0; i < 24; ++i)
    CHECK(meshLinearIndex(mesh, meshCoordinate(mesh, i)) == i);
}

TEST_CASE("1-D mesh slices") {
  Shape shape = {6, 4};
  Shape mesh = {4};
  SECTION("S(0) with an uneven split") {
    NdSbp sbp = {Sbp::split(0)};
    CHECK(deviceSlice(shape, mesh, sbp, {0}) == Slice{{0, 0}, {2, 4}});
    CHECK(deviceSlice(shape, mesh, sbp, {1}) == Slice{{2, 0}, {2, 4}});
    CHECK(deviceSlice(shape, mesh, sbp, {2}) == Slice{{4, 0}, {1, 4}});
    CHECK(deviceSlice(shape, mesh, sbp, {3}) == Slice{{5, 0}, {1, 4}});
  }
  SECTION("S(1)") {
    NdSbp sbp = {Sbp::split(1)};
    CHECK(localShape(shape, mesh, sbp, {3}) == Shape{6, 1});
    CHECK(deviceSlice(shape, mesh, sbp, {3}).offsets == Shape{0, 3});
  }
  SECTION("B and P hold the whole shape") {
    for (const Sbp &entry : {Sbp::broadcast(), Sbp::partial()})
      for (int64_t device = 0; device < 4; ++device)
        CHECK(deviceSlice(shape, mesh, {entry}, {device}) ==
              Slice{{0, 0}, {6, 4}});
  }
}

TEST_CASE("2-D mesh slices") {
  Shape mesh = {2, 4};
  SECTION("[S(0), S(1)] tiles the tensor") {
    Slice slice =
        deviceSlice({4, 8}, mesh, {Sbp::split(0), Sbp::split(1)}, {1, 2});
    CHECK(slice == Slice{{2, 4}, {2, 2}});
  }
  SECTION("[S(0), B] replicates halves along the inner axis") {
    for (int64_t inner = 0; inner < 4; ++inner)
      CHECK(deviceSlice({4, 8}, mesh, {Sbp::split(0), Sbp::broadcast()},
                        {1, inner}) == Slice{{2, 0}, {2, 8}});
  }
  SECTION("[S(0), S(0)] splits the outer part again, unevenly") {
    // 7 rows: outer halves of 4 and 3 rows, then 4 -> 1,1,1,1 and 3 -> 1,1,1,0.
    Shape mesh23 = {2, 3};
    NdSbp sbp = {Sbp::split(0), Sbp::split(0)};
    CHECK(deviceSlice({7}, mesh23, sbp, {0, 0}) == Slice{{0}, {2}});
    CHECK(deviceSlice({7}, mesh23, sbp, {0, 2}) == Slice{{3}, {1}});
    CHECK(deviceSlice({7}, mesh23, sbp, {1, 0}) == Slice{{4}, {1}});
    CHECK(deviceSlice({7}, mesh23, sbp, {1, 2}) == Slice{{6}, {1}});
  }
  SECTION("[P, S(1)] splits columns and keeps addends whole") {
    CHECK(deviceSlice({4, 8}, mesh, {Sbp::partial(), Sbp::split(1)}, {1, 3}) ==
          Slice{{0, 6}, {4, 2}});
  }
}

TEST_CASE("reassembling every device's slice gives back the whole tensor") {
  // Splits cover every element exactly once among the canonical holders;
  // partial axes add one addend per device, summing to the value.
  std::vector<Shape> shapes = {{7}, {5, 3}, {4, 6}, {3, 1, 5}};
  std::vector<Shape> meshes = {{1}, {3}, {4}, {2, 2}, {2, 3}, {3, 2}};
  int checked = 0;
  for (const Shape &shape : shapes) {
    for (const Shape &mesh : meshes) {
      for (const NdSbp &sbp :
           allNdSbps(static_cast<int64_t>(shape.size()), mesh.size())) {
        REQUIRE_FALSE(checkLayout(shape, mesh, sbp));
        int64_t addends = 1;
        for (size_t axis = 0; axis < mesh.size(); ++axis)
          if (sbp[axis].isPartial())
            addends *= mesh[axis];

        std::vector<double> whole(numElements(shape));
        std::iota(whole.begin(), whole.end(), 1.0);
        std::vector<double> rebuilt(whole.size(), 0.0);
        std::vector<int> coverage(whole.size(), 0);
        for (int64_t device = 0; device < meshSize(mesh); ++device) {
          Shape coord = meshCoordinate(mesh, device);
          if (!isCanonicalHolder(sbp, coord))
            continue;
          // The first device of every partial axis holds the value, the
          // others zero: B -> P as OneFlow defines it.
          bool holdsValue = true;
          for (size_t axis = 0; axis < mesh.size(); ++axis)
            if (sbp[axis].isPartial() && coord[axis] != 0)
              holdsValue = false;
          Slice slice = deviceSlice(shape, mesh, sbp, coord);
          forEachElement(shape, slice, [&](int64_t flat) {
            rebuilt[flat] += holdsValue ? whole[flat] : 0.0;
            ++coverage[flat];
          });
        }
        INFO("shape rank " << shape.size() << ", mesh rank " << mesh.size()
                           << ", sbp " << toString(sbp));
        REQUIRE(rebuilt == whole);
        REQUIRE(std::all_of(coverage.begin(), coverage.end(),
                            [&](int count) { return count == addends; }));
        ++checked;
      }
    }
  }
  // Per shape, 3 meshes of rank 1 and 3 of rank 2 over e = rank + 2 entries
  // (B, P, S(0..rank-1)): 3e + 3e^2 layouts; ranks 1, 2, 2, 3 give 246.
  CHECK(checked == 246);
}

TEST_CASE("invalid layouts are reported") {
  CHECK(*checkLayout({4, 4}, {2, 2}, {Sbp::split(0)}) ==
        "nd-SBP [S(0)] has 1 entries but the mesh has 2 axes");
  CHECK(*checkLayout({4, 4}, {2}, {Sbp::split(2)}) ==
        "split axis 2 is out of range for a tensor of rank 2");
  CHECK(*checkLayout({4}, {0}, {Sbp::broadcast()}) ==
        "mesh axis 0 has non-positive size 0");
  CHECK(*checkLayout({-1}, {2}, {Sbp::broadcast()}) ==
        "tensor dimension 0 has negative size -1");
  CHECK_FALSE(checkLayout({}, {2}, {Sbp::partial(ReduceKind::Max)}));
}

TEST_CASE("SBP notation") {
  CHECK(toString(NdSbp{Sbp::split(1), Sbp::broadcast(),
                       Sbp::partial(ReduceKind::Max)}) == "[S(1), B, P(max)]");
  CHECK(parseReduceKind("prod") == ReduceKind::Prod);
  CHECK_FALSE(parseReduceKind("mean"));
  CHECK(Sbp::split(1) != Sbp::split(0));
  CHECK(Sbp::partial(ReduceKind::Sum) != Sbp::partial(ReduceKind::Max));
  CHECK(Sbp::broadcast() == Sbp::broadcast());
}

//===----------------------------------------------------------------------===//
// SBP text
//===----------------------------------------------------------------------===//

namespace {

/// The error of parsing `text` as an nd-SBP (and checks that it fails).
std::string ndSbpError(const std::string &text) {
  std::string error;
  std::optional<NdSbp> sbp = parseNdSbp(text, error);
  CHECK_FALSE(sbp);
  CHECK_FALSE(error.empty());
  CHECK(error.find('\n') == std::string::npos);
  return error;
}

std::string sbpError(const std::string &text) {
  std::string error;
  std::optional<Sbp> sbp = parseSbp(text, error);
  CHECK_FALSE(sbp);
  CHECK_FALSE(error.empty());
  CHECK(error.find('\n') == std::string::npos);
  return error;
}

} // namespace

TEST_CASE("every printed SBP parses back equal", "[sbp-text]") {
  std::vector<Sbp> all = {Sbp::broadcast(),
                          Sbp::split(0),
                          Sbp::split(1),
                          Sbp::split(12345),
                          Sbp::split(std::numeric_limits<int64_t>::max()),
                          Sbp::partial(ReduceKind::Sum),
                          Sbp::partial(ReduceKind::Max),
                          Sbp::partial(ReduceKind::Min),
                          Sbp::partial(ReduceKind::Prod)};
  std::string error;
  for (const Sbp &sbp : all) {
    INFO(sbp.str());
    std::optional<Sbp> parsed = parseSbp(sbp.str(), error);
    REQUIRE(parsed);
    CHECK(*parsed == sbp);
    CHECK(parsed->str() == sbp.str());
    // A bare entry is a one-entry nd-SBP.
    std::optional<NdSbp> single = parseNdSbp(sbp.str(), error);
    REQUIRE(single);
    CHECK(*single == NdSbp{sbp});
  }
  // Every nd-SBP of up to three entries over these.
  std::vector<NdSbp> layouts = {{}};
  for (int rank = 1; rank <= 3; ++rank) {
    std::vector<NdSbp> longer;
    for (const NdSbp &layout : layouts)
      if (static_cast<int>(layout.size()) == rank - 1)
        for (const Sbp &sbp : all) {
          NdSbp next = layout;
          next.push_back(sbp);
          longer.push_back(next);
        }
    layouts.insert(layouts.end(), longer.begin(), longer.end());
  }
  CHECK(layouts.size() == 1 + 9 + 81 + 729);
  for (const NdSbp &layout : layouts) {
    INFO(toString(layout));
    std::optional<NdSbp> parsed = parseNdSbp(toString(layout), error);
    REQUIRE(parsed);
    CHECK(*parsed == layout);
    CHECK(toString(*parsed) == toString(layout));
  }
  CHECK(error.empty()); // left alone on success
}

TEST_CASE("SBP text: spaces, P without a reduction", "[sbp-text]") {
  std::string error;
  CHECK(parseSbp("P", error) == Sbp::partial(ReduceKind::Sum));
  CHECK(parseSbp("  S ( 3 )\t", error) == Sbp::split(3));
  CHECK(parseSbp("P ( max )", error) == Sbp::partial(ReduceKind::Max));
  CHECK(parseSbp("S(007)", error) == Sbp::split(7));
  CHECK(parseNdSbp("[S(0),B]", error) ==
        NdSbp{Sbp::split(0), Sbp::broadcast()});
  CHECK(parseNdSbp(" [ P , S(1) , P(min) ] ", error) ==
        NdSbp{Sbp::partial(), Sbp::split(1), Sbp::partial(ReduceKind::Min)});
  CHECK(parseNdSbp("[ ]", error) == NdSbp{});
  CHECK(parseNdSbp(" B ", error) == NdSbp{Sbp::broadcast()});
  CHECK(error.empty());
}

TEST_CASE("malformed SBP text gives an error, not a crash", "[sbp-text]") {
  CHECK(ndSbpError("") == "empty nd-SBP; expected one such as [S(0), B]");
  CHECK(ndSbpError("   ") == "empty nd-SBP; expected one such as [S(0), B]");
  CHECK(sbpError("") == "empty SBP; expected S(<axis>), B or P(<reduce>)");
  CHECK(ndSbpError("[") ==
        "expected S(<axis>), B or P(<reduce>) at end of text");
  CHECK(ndSbpError("S(") == "expected a split axis at end of text");
  CHECK(ndSbpError("S") == "expected '(' after S at end of text");
  CHECK(ndSbpError("S(x)") == "expected a split axis at 'x)'");
  CHECK(ndSbpError("S(-1)") == "negative split axis -1");
  CHECK(ndSbpError("S(99999999999999999999)") ==
        "split axis 99999999999999999999 is too large");
  CHECK(ndSbpError("S(9223372036854775808)") ==
        "split axis 9223372036854775808 is too large");
  CHECK(ndSbpError("S(" + std::string(1000, '9') + ")") ==
        "split axis 999999999999999999999999... is too large");
  CHECK(ndSbpError("S(0") ==
        "expected ')' after the split axis at end of text");
  CHECK(ndSbpError("P(avg)") ==
        "unknown reduction 'avg'; expected sum, max, min or prod");
  CHECK(ndSbpError("P()") ==
        "expected sum, max, min or prod after 'P(' at ')'");
  CHECK(ndSbpError("P(sum") ==
        "expected ')' after the reduction at end of text");
  CHECK(ndSbpError("[B,,B]") ==
        "expected S(<axis>), B or P(<reduce>) at ',B]'");
  CHECK(ndSbpError("[B,]") == "expected S(<axis>), B or P(<reduce>) at ']'");
  CHECK(ndSbpError("[B B]") == "expected ',' or ']' at 'B]'");
  CHECK(ndSbpError("[S(0), B") == "expected ',' or ']' at end of text");
  CHECK(ndSbpError("[S(0)] x") == "unexpected 'x' after ']'");
  CHECK(ndSbpError("[B]]") == "unexpected ']' after ']'");
  CHECK(ndSbpError("S(0)x") == "unexpected 'x' after S(0)");
  CHECK(ndSbpError("Q(1)") == "expected S(<axis>), B or P(<reduce>) at 'Q(1)'");
  CHECK(ndSbpError("s(0)") == "expected S(<axis>), B or P(<reduce>) at 's(0)'");
  CHECK(sbpError("[B]") == "expected S(<axis>), B or P(<reduce>) at '[B]'");
  CHECK(sbpError("B, B") == "unexpected ', B' after B");
  // Long and odd text is shortened and escaped: one short line.
  CHECK(ndSbpError("[B, " + std::string(100000, 'x')) ==
        "expected S(<axis>), B or P(<reduce>) at "
        "'xxxxxxxxxxxxxxxxxxxxxxxx...'");
  CHECK(ndSbpError("B\n\x01") == "unexpected '\\x0a\\x01' after B");
  CHECK(ndSbpError(std::string("B\0", 2)) == "unexpected '\\x00' after B");
  // Deep brackets do not recurse.
  CHECK(ndSbpError(std::string(100000, '[')) ==
        "expected S(<axis>), B or P(<reduce>) at "
        "'[[[[[[[[[[[[[[[[[[[[[[[[...'");
}

TEST_CASE("random SBP text never crashes", "[sbp-text]") {
  const std::string alphabet = "SBP()[], -0123456789sumaxinprod\t";
  std::mt19937 random(7);
  std::string error;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    size_t length = random() % 16;
    for (size_t k = 0; k < length; ++k)
      text += alphabet[random() % alphabet.size()];
    error.clear();
    std::optional<NdSbp> sbp = parseNdSbp(text, error);
    INFO(text);
    if (sbp) {
      // What parses prints to a canonical form that parses back equal.
      std::optional<NdSbp> again = parseNdSbp(toString(*sbp), error);
      REQUIRE(again);
      CHECK(*again == *sbp);
    } else {
      CHECK_FALSE(error.empty());
    }
  }
}

TEST_CASE("groups along mesh axes", "[sbp]") {
  // Device 5 of a 2x2x2 mesh is at (1, 0, 1).
  std::vector<int64_t> mesh = {2, 2, 2};
  CHECK(axesGroup(mesh, {1}, 5) == std::vector<int64_t>{5, 7});
  CHECK(axesRank(mesh, {1}, 5) == 0);
  // Row-major over axes 0 and 2: the last varies fastest.
  CHECK(axesGroup(mesh, {0, 2}, 5) == std::vector<int64_t>{0, 1, 4, 5});
  CHECK(axesRank(mesh, {0, 2}, 5) == 3);
  CHECK(axesGroup(mesh, {}, 5) == std::vector<int64_t>{5});
  CHECK(axesGroup(mesh, {0, 1, 2}, 5).size() == 8);
}

TEST_CASE("a placed mesh maps devices to positions", "[sbp]") {
  // 2x2 on devices 7, 3 (row 0) and 5, 1 (row 1).
  PlacedMesh mesh{{2, 2}, {7, 3, 5, 1}};
  CHECK(mesh.indexOf(5) == 2);
  CHECK(mesh.indexOf(4) == -1);
  CHECK(mesh.deviceAt(1) == 3);
  CHECK(mesh.coordinate(1) == std::vector<int64_t>{1, 1});
  CHECK(mesh.group({1}, 5) == std::vector<int64_t>{5, 1});
  CHECK(mesh.group({0}, 3) == std::vector<int64_t>{3, 1});
  CHECK(mesh.rank({1}, 1) == 1);
  CHECK(mesh.rank({0, 1}, 5) == 2);
  CHECK(mesh.rank({1}, 4) == -1);
  CHECK(mesh.rank({2}, 7) == -1);
  // Without devices, a device is its position.
  PlacedMesh whole{{2, 4}, {}};
  CHECK(whole.indexOf(6) == 6);
  CHECK(whole.indexOf(8) == -1);
  CHECK(whole.group({0}, 6) == std::vector<int64_t>{2, 6});
}
