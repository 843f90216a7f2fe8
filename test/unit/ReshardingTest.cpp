//===- ReshardingTest.cpp - SBP transitions as typed steps ----------------===//

#include "parplan/Sbp/Resharding.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace parplan;

namespace {

const Sbp B = Sbp::broadcast();
const Sbp P = Sbp::partial();
const Sbp Pmax = Sbp::partial(ReduceKind::Max);
Sbp S(int64_t axis) { return Sbp::split(axis); }

/// Every step costs 1 plus a little for its axis, so that the plan is the
/// fewest steps and, among those, a fixed one.
double unitCost(const ReshardStep &step) {
  return 1 + 0.001 * static_cast<double>(step.meshAxis);
}

/// Every nd-SBP of entries B, P(sum), P(max), S(0 .. rank-1) over `axes`.
std::vector<NdSbp> allLayouts(size_t axes, int64_t rank) {
  std::vector<Sbp> entries = {B, P, Pmax};
  for (int64_t d = 0; d < rank; ++d)
    entries.push_back(S(d));
  std::vector<NdSbp> layouts = {{}};
  for (size_t axis = 0; axis < axes; ++axis) {
    std::vector<NdSbp> longer;
    for (const NdSbp &prefix : layouts)
      for (const Sbp &entry : entries) {
        longer.push_back(prefix);
        longer.back().push_back(entry);
      }
    layouts = std::move(longer);
  }
  return layouts;
}

std::string describe(const std::vector<ReshardStep> &steps) {
  std::string text;
  for (const ReshardStep &step : steps)
    text += std::string(text.empty() ? "" : ", ") + toString(step.kind) +
            " on " + std::to_string(step.meshAxis);
  return text;
}

} // namespace

TEST_CASE("one step per kind along one mesh axis") {
  CHECK(reshardKind(S(0), B) == ReshardKind::AllGather);
  CHECK(reshardKind(P, S(1)) == ReshardKind::ReduceScatter);
  CHECK(reshardKind(Pmax, B) == ReshardKind::AllReduce);
  CHECK(reshardKind(S(0), S(1)) == ReshardKind::AllToAll);
  CHECK(reshardKind(B, S(2)) == ReshardKind::Slice);
  CHECK(reshardKind(B, P) == ReshardKind::ToPartial);
  CHECK(reshardKind(S(0), P) == ReshardKind::ToPartial);
  CHECK(reshardKind(B, Pmax) == ReshardKind::ToPartial);
  // No single step: equal entries, another reduction, no identity written.
  CHECK_FALSE(reshardKind(S(0), S(0)));
  CHECK_FALSE(reshardKind(P, Pmax));
  CHECK_FALSE(reshardKind(S(0), Pmax));
  CHECK_FALSE(reshardKind(B, Sbp::partial(ReduceKind::Prod)));
}

TEST_CASE("a step on local blocks needs its dimensions unsplit inside") {
  std::vector<int64_t> mesh = {2, 2};
  CHECK_FALSE(checkReshardStep({S(0), S(1)}, {B, S(1)}, 0, mesh));
  CHECK_FALSE(checkReshardStep({S(0), S(0)}, {S(0), B}, 1, mesh));
  // Gathering the outer split of a dimension the inner axis also splits
  // would interleave the parts.
  CHECK(*checkReshardStep({S(0), S(0)}, {B, S(0)}, 0, mesh) ==
        "tensor dimension 0 is also split by the inner mesh axis 1; its parts "
        "along mesh axis 0 are not whole blocks");
  CHECK(checkReshardStep({B, S(0)}, {S(0), S(0)}, 0, mesh));
  CHECK(checkReshardStep({S(1), S(0)}, {S(0), S(0)}, 0, mesh));
  // An inner axis of one device splits nothing.
  CHECK_FALSE(checkReshardStep({S(0), S(0)}, {B, S(0)}, 0, {2, 1}));
  CHECK(*checkReshardStep({S(0), B}, {B, S(0)}, 0, mesh) ==
        "the layouts also differ on mesh axis 1; a step changes one");
  CHECK(*checkReshardStep({P, B}, {Pmax, B}, 0, mesh) ==
        "no single step turns P(sum) into P(max)");
  CHECK(*checkReshardStep({B, B}, {S(0), B}, 2, mesh) ==
        "mesh axis 2 is not an axis of a mesh of 2 axes");
  CHECK(*checkReshardStep({B}, {S(0), B}, 0, mesh) ==
        "the layouts have 1 and 2 entries for a mesh of 2 axes");
}

TEST_CASE("the failing GPT-3 boxings are single steps on the inner axis") {
  std::vector<int64_t> mesh = {128, 8};
  for (auto [from, to] : {std::pair{NdSbp{S(0), S(2)}, NdSbp{S(0), S(0)}},
                          std::pair{NdSbp{S(0), S(0)}, NdSbp{S(0), S(2)}},
                          std::pair{NdSbp{S(0), S(1)}, NdSbp{S(0), S(0)}}}) {
    auto steps = planResharding(from, to, mesh, unitCost);
    REQUIRE(steps);
    REQUIRE(steps->size() == 1);
    CHECK((*steps)[0].kind == ReshardKind::AllToAll);
    CHECK((*steps)[0].meshAxis == 1);
    CHECK((*steps)[0].tensorAxis() == to[1].axis);
    CHECK((*steps)[0].concatAxis() == from[1].axis);
  }
}

TEST_CASE("an outer axis changes a dimension the inner splits by a detour") {
  std::vector<int64_t> mesh = {2, 2};
  auto steps = planResharding({S(0), S(0)}, {S(1), S(0)}, mesh, unitCost);
  REQUIRE(steps);
  CHECK(describe(*steps) == "all_gather on 1, all_to_all on 0, slice on 1");
  auto gathered = planResharding({S(0), S(0)}, {B, B}, mesh, unitCost);
  REQUIRE(gathered);
  CHECK(describe(*gathered) == "all_gather on 1, all_gather on 0");
  auto swapped = planResharding({S(0), S(1)}, {S(1), S(0)}, mesh, unitCost);
  REQUIRE(swapped);
  CHECK(swapped->size() == 3);
  // P(sum) -> P(max) completes the sum first.
  auto relabel = planResharding({P}, {Pmax}, {4}, unitCost);
  REQUIRE(relabel);
  CHECK(describe(*relabel) == "all_reduce on 0, to_partial on 0");
}

TEST_CASE("along an axis of uneven shares, parts move only as whole sums") {
  // Axis 0's devices hold parts of other sizes than balanced ones: no
  // all-gather, reduce-scatter or all-to-all there, but a split is gathered
  // as its zero-padded part summed, and a sum scattered by cutting it.
  std::vector<int64_t> mesh = {2, 2};
  std::vector<bool> wholeOnly = {true, false};
  auto gathered = planResharding({S(0), B}, {B, B}, mesh, unitCost, wholeOnly);
  REQUIRE(gathered);
  CHECK(describe(*gathered) == "to_partial on 0, all_reduce on 0");
  auto scattered = planResharding({P, B}, {S(1), B}, mesh, unitCost, wholeOnly);
  REQUIRE(scattered);
  CHECK(describe(*scattered) == "all_reduce on 0, slice on 0");
  auto moved = planResharding({S(0), B}, {S(1), B}, mesh, unitCost, wholeOnly);
  REQUIRE(moved);
  CHECK(describe(*moved) == "to_partial on 0, all_reduce on 0, slice on 0");
  // The even axis keeps its collectives.
  auto inner = planResharding({B, S(0)}, {B, B}, mesh, unitCost, wholeOnly);
  REQUIRE(inner);
  CHECK(describe(*inner) == "all_gather on 1");
  // Without the mark, the one-step collective.
  CHECK(describe(*planResharding({S(0), B}, {B, B}, mesh, unitCost)) ==
        "all_gather on 0");
  // Every pair of layouts still has a sequence where it had one, and no
  // step of it exchanges parts along axis 0.
  for (const NdSbp &from : allLayouts(2, 2))
    for (const NdSbp &to : allLayouts(2, 2)) {
      bool plain = planResharding(from, to, mesh, unitCost).has_value();
      auto steps = planResharding(from, to, mesh, unitCost, wholeOnly);
      INFO(toString(from) << " -> " << toString(to));
      CHECK(steps.has_value() == plain);
      if (steps)
        for (const ReshardStep &step : *steps)
          CHECK_FALSE((step.meshAxis == 0 && exchangesParts(step.kind)));
    }
}

TEST_CASE("a gradient's steps within the positions of uneven shares") {
  using K = ReshardKind;
  // A hierarchical all-reduce of a gradient on a 2x2 mesh: scattered
  // within each position along axis 1, summed across them along axis 0,
  // gathered back within each.
  std::vector<ReshardStep> hierarchical = {
      {K::ReduceScatter, 1, {P, P}, {P, S(0)}},
      {K::AllReduce, 0, {P, S(0)}, {B, S(0)}},
      {K::AllGather, 1, {B, S(0)}, {B, B}}};
  // Shares along axis 0: the scatter stays within the positions.
  CHECK(stepsWithinPositions(hierarchical, 0) == 1);
  // Along axis 1: its first step joins them already.
  CHECK(stepsWithinPositions(hierarchical, 1) == 0);
  // Nothing joins the positions: nothing to tell apart.
  CHECK(stepsWithinPositions({hierarchical.front()}, 0) == 0);
  // A step that is no reduction ahead of the joining one.
  std::vector<ReshardStep> exchanged = {
      {K::AllToAll, 1, {P, S(0)}, {P, S(1)}},
      {K::AllReduce, 0, {P, S(1)}, {B, S(1)}}};
  CHECK(stepsWithinPositions(exchanged, 0) == 0);
}

TEST_CASE("a sum turned whole may pass through a split of scatterDim") {
  std::vector<int64_t> mesh = {2, 4};
  // Axis 0 is dear (10 per step), axis 1 cheap (1), and a collective on
  // a part of the tensor costs half: the hierarchical all-reduce's three
  // steps (1 + 5 + 1) beat the two all-reduces (10 + 1).
  auto cost = [](const ReshardStep &step) {
    double base = step.meshAxis == 0 ? 10 : 1;
    auto split = [](const Sbp &sbp) { return sbp.isSplit(); };
    bool onPart = std::any_of(step.from.begin(), step.from.end(), split) ||
                  std::any_of(step.to.begin(), step.to.end(), split);
    return step.kind != ReshardKind::AllGather &&
                   step.kind != ReshardKind::ReduceScatter && onPart
               ? base / 2
               : base;
  };
  auto steps = planResharding({P, P}, {B, B}, mesh, cost, {}, 1);
  REQUIRE(steps);
  CHECK(describe(*steps) ==
        "reduce_scatter on 1, all_reduce on 0, all_gather on 1");
  CHECK((*steps)[0].to == NdSbp{P, S(1)});
  // Without scatterDim, no split on the way.
  CHECK(describe(*planResharding({P, P}, {B, B}, mesh, cost)) ==
        "all_reduce on 1, all_reduce on 0");
  // Beside an axis of uneven shares (its all-reduce works on the part),
  // but not along one, where no step exchanges parts.
  CHECK(
      describe(*planResharding({P, P}, {B, B}, mesh, cost, {true, false}, 1)) ==
      "reduce_scatter on 1, all_reduce on 0, all_gather on 1");
  CHECK(describe(*planResharding({P, P}, {B, B}, mesh, cost, {false, true},
                                 1)) == "all_reduce on 1, all_reduce on 0");
}

TEST_CASE("the cheapest sequence wins, and ties resolve the same way") {
  std::vector<int64_t> mesh = {2, 4};
  // Axis 0 is dear: an all-gather there costs 10, elsewhere 1.
  auto dearOuter = [](const ReshardStep &step) {
    return isCollective(step.kind) ? (step.meshAxis == 0 ? 10.0 : 1.0) : 0.0;
  };
  auto steps = planResharding({S(0), P}, {B, B}, mesh, dearOuter);
  REQUIRE(steps);
  CHECK(steps->size() == 2);
  auto again = planResharding({S(0), P}, {B, B}, mesh, dearOuter);
  CHECK(describe(*steps) == describe(*again));
  // Equal layouts need nothing; a layout of the wrong size is refused.
  CHECK(planResharding({S(0), P}, {S(0), P}, mesh, unitCost)->empty());
  CHECK_FALSE(planResharding({S(0)}, {B, B}, mesh, unitCost));
}

TEST_CASE("every pair of layouts of rank 1 to 3 on small meshes decomposes") {
  for (std::vector<int64_t> mesh :
       {std::vector<int64_t>{4}, {2, 2}, {2, 3}, {2, 2, 2}, {1, 2}}) {
    for (int64_t rank = 1; rank <= 3; ++rank) {
      std::vector<NdSbp> layouts = allLayouts(mesh.size(), rank);
      for (const NdSbp &from : layouts)
        for (const NdSbp &to : layouts) {
          INFO(toString(from) << " -> " << toString(to));
          auto steps = planResharding(from, to, mesh, unitCost);
          REQUIRE(steps);
          NdSbp state = from;
          for (const ReshardStep &step : *steps) {
            REQUIRE(step.from == state);
            CHECK_FALSE(
                checkReshardStep(step.from, step.to, step.meshAxis, mesh));
            CHECK(reshardKind(step.from[step.meshAxis],
                              step.to[step.meshAxis]) == step.kind);
            state = step.to;
          }
          CHECK(state == to);
          // No axis changes more than twice: source, B, destination.
          CHECK(steps->size() <= 2 * mesh.size() + 2);
        }
    }
  }
}
