//===- LayoutSolverTest.cpp - layout choice against brute force -----------===//

#include "parplan/Cost/LayoutSolver.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <vector>

using namespace parplan;
using namespace parplan::cost;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// Random numbers from the engine's raw output, which the standard fixes,
/// rather than from std::uniform_*_distribution, which it does not: the
/// graphs, and so the figures below, are the same with every library.
class Random {
public:
  explicit Random(uint64_t seed) : engine(seed) {}
  /// Uniform in [0, 1).
  double unit() { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }
  double between(double lo, double hi) { return lo + (hi - lo) * unit(); }
  /// Uniform in [lo, hi].
  int64_t integer(int64_t lo, int64_t hi) {
    return lo +
           static_cast<int64_t>(engine() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return unit() < p; }

private:
  std::mt19937_64 engine;
};

/// The optimum over every choice; the first of equal ones in lexicographic
/// order.
LayoutSolution bruteForce(const LayoutProblem &problem) {
  int64_t n = problem.numNodes();
  std::vector<int64_t> choice(n, 0);
  LayoutSolution best{choice, evaluate(problem, choice)};
  while (true) {
    int64_t i = n - 1;
    while (i >= 0 && choice[i] + 1 == problem.numCandidates(i))
      choice[i--] = 0;
    if (i < 0)
      return best;
    ++choice[i];
    double cost = evaluate(problem, choice);
    if (cost < best.cost)
      best = {choice, cost};
  }
}

std::vector<double> randomCosts(Random &random, int64_t count, double lo = 0,
                                double hi = 1) {
  std::vector<double> costs(count);
  for (double &cost : costs)
    cost = random.between(lo, hi);
  return costs;
}

void addRandomEdge(LayoutProblem &problem, Random &random, int64_t from,
                   int64_t to) {
  problem.addEdge(from, to,
                  randomCosts(random, problem.numCandidates(from) *
                                          problem.numCandidates(to)));
}

LayoutProblem randomNodes(Random &random, int64_t n, int64_t minK,
                          int64_t maxK) {
  LayoutProblem problem;
  for (int64_t i = 0; i < n; ++i)
    problem.addNode(randomCosts(random, random.integer(minK, maxK)));
  return problem;
}

/// The reductions and the descent, without merging or the search: the
/// descent's own answer on what the reductions leave.
LayoutSolverOptions descentOnlyOptions() {
  LayoutSolverOptions options;
  options.mergeNodes = false;
  options.searchResidual = false;
  return options;
}

/// Both solvers against brute force, and the reported costs against
/// evaluate().
void checkAgainstBruteForce(const LayoutProblem &problem) {
  REQUIRE(!checkLayoutProblem(problem));
  LayoutSolution expected = bruteForce(problem);
  LayoutSolution byDescent = solveByCoordinateDescent(problem);
  std::optional<LayoutSolution> exact = solveExactly(problem);
  REQUIRE(exact);
  CHECK(byDescent.cost == evaluate(problem, byDescent.choice));
  CHECK(exact->cost == evaluate(problem, exact->choice));
  CHECK(exact->cost == Approx(expected.cost).epsilon(1e-12));
  CHECK(byDescent.cost == Approx(expected.cost).epsilon(1e-12));
}

} // namespace

TEST_CASE("evaluate sums node costs and edge costs, self-loops on the "
          "diagonal",
          "[solver]") {
  LayoutProblem problem;
  int64_t x = problem.addNode({1, 2});
  int64_t y = problem.addNode({10, 20, 30});
  problem.addEdge(x, y, {0, 100, 200, 300, 400, 500});
  problem.addEdge(y, x, {1000, 2000, 3000, 4000, 5000, 6000});
  problem.addEdge(y, y, {7, 0, 0, 0, 8, 0, 0, 0, 9});
  CHECK(problem.numNodes() == 2);
  // x = 1, y = 2: 2 + 30 + [1][2] 500 + [2][1] 6000 + [2][2] 9.
  CHECK(evaluate(problem, {1, 2}) == 2 + 30 + 500 + 6000 + 9);
  CHECK(evaluate(problem, {0, 0}) == 1 + 10 + 0 + 1000 + 7);
  problem.nodeCosts[x][0] = inf;
  CHECK(evaluate(problem, {0, 0}) == inf);
}

TEST_CASE("checkLayoutProblem names what is wrong", "[solver]") {
  LayoutProblem problem;
  problem.addNode({1, 2});
  problem.addNode({1});
  CHECK(!checkLayoutProblem(problem));
  problem.edges.push_back({0, 1, {1, 2, 3}});
  CHECK(checkLayoutProblem(problem) ==
        std::string("edge 0 (0 -> 1): 3 costs, expected 2"));
  problem.edges[0] = {0, 2, {1, 2}};
  CHECK(checkLayoutProblem(problem) ==
        std::string("edge 0 (0 -> 2): no node 2"));
  problem.edges[0] = {0, 1, {1, std::nan("")}};
  CHECK(checkLayoutProblem(problem) ==
        std::string("edge 0 (0 -> 1), entry 1: cost NaN"));
  problem.edges.clear();
  problem.nodeCosts[1] = {-1};
  CHECK(checkLayoutProblem(problem) ==
        std::string("node 1, candidate 0: cost -1.000000 is negative"));
  problem.nodeCosts[1] = {};
  CHECK(checkLayoutProblem(problem) == std::string("node 1 has no candidates"));
  problem.nodeCosts[1] = {1};
  problem.hints = {{0}};
  CHECK(checkLayoutProblem(problem) ==
        std::string("hint 0 has 1 choices for 2 nodes"));
  problem.hints = {{0, 0}, {2, 0}};
  CHECK(checkLayoutProblem(problem) ==
        std::string("hint 1 picks candidate 2 of node 0, which has 2"));
}

TEST_CASE("the descent also starts from the hints", "[solver]") {
  // Dense random graphs of 7 nodes (nothing for the reductions), solved by
  // the descent alone: where it misses the optimum, the optimum given as
  // a hint is kept, whichever of the hints it is, and a hint never makes
  // the solution worse.
  LayoutSolverOptions descentOnly = descentOnlyOptions();
  int64_t missed = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Random random(seed);
    LayoutProblem problem = randomNodes(random, 7, 3, 4);
    for (int64_t a = 0; a < 7; ++a)
      for (int64_t b = a + 1; b < 7; ++b)
        addRandomEdge(problem, random, a, b);
    LayoutSolution optimum = bruteForce(problem);
    double alone = solveByCoordinateDescent(problem, nullptr, descentOnly).cost;
    problem.hints = {optimum.choice};
    LayoutSolution hinted =
        solveByCoordinateDescent(problem, nullptr, descentOnly);
    CHECK(hinted.cost <= alone);
    CHECK(hinted.cost == evaluate(problem, hinted.choice));
    if (alone > optimum.cost) {
      ++missed;
      CHECK(hinted.cost == optimum.cost);
      // Second of two hints, the first the descent's own answer.
      LayoutProblem plain = problem;
      plain.hints.clear();
      problem.hints = {
          solveByCoordinateDescent(plain, nullptr, descentOnly).choice,
          optimum.choice};
      CHECK(solveByCoordinateDescent(problem, nullptr, descentOnly).cost ==
            optimum.cost);
    }
  }
  // The case above is not vacuous.
  CHECK(missed > 0);
}

TEST_CASE("chains, trees and a diamond are solved exactly by the reductions",
          "[solver]") {
  // 0 -> {1, 2} -> 3 -> {4, 5} -> 6, plus a skip 3 -> 6: attention-like
  // diamonds in series and a residual connection.
  const std::vector<std::pair<int64_t, int64_t>> diamonds = {
      {0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {3, 5}, {4, 6}, {5, 6}, {3, 6}};
  Random random(1);
  for (int trial = 0; trial < 20; ++trial) {
    INFO("trial " << trial);
    LayoutSolverStats stats;

    LayoutProblem chain = randomNodes(random, 7, 1, 4);
    for (int64_t i = 0; i + 1 < 7; ++i)
      addRandomEdge(chain, random, i, i + 1);
    checkAgainstBruteForce(chain);
    solveByCoordinateDescent(chain, &stats);
    CHECK(stats.eliminatedNodes == 7);
    CHECK(stats.residualNodes == 0);

    // A tree with edges in both directions.
    LayoutProblem tree = randomNodes(random, 8, 1, 4);
    for (int64_t i = 1; i < 8; ++i) {
      int64_t parent = random.integer(0, i - 1);
      if (random.chance(0.5))
        addRandomEdge(tree, random, parent, i);
      else
        addRandomEdge(tree, random, i, parent);
    }
    checkAgainstBruteForce(tree);
    solveByCoordinateDescent(tree, &stats);
    CHECK(stats.residualNodes == 0);

    // A forest with isolated nodes.
    LayoutProblem forest = randomNodes(random, 7, 1, 4);
    addRandomEdge(forest, random, 0, 1);
    addRandomEdge(forest, random, 1, 2);
    addRandomEdge(forest, random, 4, 5);
    checkAgainstBruteForce(forest);

    LayoutProblem diamond = randomNodes(random, 7, 2, 4);
    for (auto [from, to] : diamonds)
      addRandomEdge(diamond, random, from, to);
    checkAgainstBruteForce(diamond);
    solveByCoordinateDescent(diamond, &stats);
    CHECK(stats.residualNodes == 0);
    CHECK(stats.mergedNodes == 0);
    // Closing a diamond merges the edge node elimination makes with the
    // one already there.
    CHECK(stats.mergedEdges >= 1);
  }
}

TEST_CASE("parallel edges and self-loops", "[solver]") {
  Random random(2);
  for (int trial = 0; trial < 30; ++trial) {
    LayoutProblem problem = randomNodes(random, 5, 1, 4);
    for (int64_t i = 0; i + 1 < 5; ++i)
      addRandomEdge(problem, random, i, i + 1);
    // The same pair in both directions, twice more, and self-loops.
    addRandomEdge(problem, random, 2, 1);
    addRandomEdge(problem, random, 1, 2);
    addRandomEdge(problem, random, 4, 0);
    addRandomEdge(problem, random, 3, 3);
    addRandomEdge(problem, random, 0, 0);
    addRandomEdge(problem, random, 3, 3);
    checkAgainstBruteForce(problem);
  }
  // A self-loop whose off-diagonal is cheap must not be read as a choice of
  // two candidates: only [a][a] counts.
  LayoutProblem problem;
  problem.addNode({1, 1});
  problem.addEdge(0, 0, {5, 0, 0, 7});
  LayoutSolution solution = solveByCoordinateDescent(problem);
  CHECK(solution.choice == std::vector<int64_t>{0});
  CHECK(solution.cost == 6);
}

TEST_CASE("graphs the reductions do not solve: exact against brute force",
          "[solver]") {
  Random random(3);
  for (int trial = 0; trial < 30; ++trial) {
    // Complete graphs and wheels leave every node with three neighbours or
    // more.
    int64_t n = random.integer(4, 6);
    LayoutProblem problem = randomNodes(random, n, 1, 4);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j)
        if (random.chance(0.8) || j == i + 1)
          addRandomEdge(problem, random, i, j);
    REQUIRE(!checkLayoutProblem(problem));
    LayoutSolution expected = bruteForce(problem);
    std::optional<LayoutSolution> exact = solveExactly(problem);
    REQUIRE(exact);
    CHECK(exact->cost == Approx(expected.cost).epsilon(1e-12));
    CHECK(exact->cost == evaluate(problem, exact->choice));
    // Merging and the search over the residual solve graphs this small.
    LayoutSolverStats stats;
    LayoutSolution byDefault = solveByCoordinateDescent(problem, &stats);
    CHECK(stats.provenOptimal());
    CHECK(byDefault.cost == Approx(expected.cost).epsilon(1e-12));
    CHECK(byDefault.cost == evaluate(problem, byDefault.choice));
    // The descent alone may stop above the optimum, never below.
    LayoutSolverOptions descentOnly = descentOnlyOptions();
    LayoutSolution byDescent =
        solveByCoordinateDescent(problem, &stats, descentOnly);
    CHECK(stats.mergedNodes == 0);
    CHECK(stats.searchSteps == 0);
    CHECK(byDescent.cost >= exact->cost);
    CHECK(byDescent.cost == evaluate(problem, byDescent.choice));
  }
}

TEST_CASE("a residual too large for the search keeps the descent's choice",
          "[solver]") {
  // A 3 x 200 grid: neither the reductions nor merging (12 x 12 candidates
  // exceed the limit of 100) take it apart, and branch and bound runs out
  // of steps on it.
  Random random(7);
  const int64_t rows = 3, columns = 200;
  LayoutProblem problem = randomNodes(random, rows * columns, 12, 12);
  for (int64_t c = 0; c < columns; ++c)
    for (int64_t r = 0; r < rows; ++r) {
      if (c + 1 < columns)
        addRandomEdge(problem, random, c * rows + r, (c + 1) * rows + r);
      if (r + 1 < rows)
        addRandomEdge(problem, random, c * rows + r, c * rows + r + 1);
    }
  LayoutSolverStats stats;
  LayoutSolution solution = solveByCoordinateDescent(problem, &stats);
  CHECK(stats.residualNodes > 500);
  CHECK(stats.residualComponents == 1);
  CHECK(stats.provenComponents == 0);
  CHECK(!stats.provenOptimal());
  CHECK(stats.searchSteps == 100'000);
  CHECK(solution.cost == evaluate(problem, solution.choice));
  LayoutSolverOptions noSearch;
  noSearch.searchResidual = false;
  CHECK(solution.cost <=
        solveByCoordinateDescent(problem, nullptr, noSearch).cost);
  CHECK(!solveExactly(problem, 1000));
}

TEST_CASE("forbidden choices are avoided when possible", "[solver]") {
  SECTION("a chain whose cheapest nodes meet at a forbidden pair") {
    LayoutProblem problem;
    problem.addNode({0, 5});
    problem.addNode({0, 5});
    problem.addNode({0, 5});
    problem.addEdge(0, 1, {inf, 0, 0, 0});
    problem.addEdge(1, 2, {inf, 0, 0, 0});
    LayoutSolution solution = solveByCoordinateDescent(problem);
    CHECK(solution.choice == std::vector<int64_t>{0, 1, 0});
    CHECK(solution.cost == 5);
  }
  SECTION("random graphs with forbidden entries") {
    Random random(4);
    for (int trial = 0; trial < 40; ++trial) {
      LayoutProblem problem = randomNodes(random, 6, 1, 3);
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = i + 1; j < 6; ++j)
          if (j == i + 1 || random.chance(0.4))
            addRandomEdge(problem, random, i, j);
      for (LayoutProblem::Edge &edge : problem.edges)
        for (double &cost : edge.costs)
          if (random.chance(0.3))
            cost = inf;
      for (std::vector<double> &costs : problem.nodeCosts)
        for (double &cost : costs)
          if (random.chance(0.1))
            cost = inf;
      LayoutSolution expected = bruteForce(problem);
      std::optional<LayoutSolution> exact = solveExactly(problem);
      REQUIRE(exact);
      CHECK(exact->cost == Approx(expected.cost).epsilon(1e-12));
      LayoutSolverStats stats;
      LayoutSolution byDefault = solveByCoordinateDescent(problem, &stats);
      CHECK(!std::isnan(byDefault.cost));
      CHECK(byDefault.cost == evaluate(problem, byDefault.choice));
      CHECK(stats.provenOptimal());
      CHECK(byDefault.cost == Approx(expected.cost).epsilon(1e-12));
      // The descent alone: never NaN, never below the optimum.
      LayoutSolverOptions descentOnly = descentOnlyOptions();
      LayoutSolution byDescent =
          solveByCoordinateDescent(problem, nullptr, descentOnly);
      CHECK(!std::isnan(byDescent.cost));
      CHECK(byDescent.cost >= exact->cost);
    }
  }
  SECTION("when every choice is forbidden, a choice still comes back") {
    for (bool dense : {false, true}) {
      LayoutProblem problem;
      for (int64_t i = 0; i < 5; ++i)
        problem.addNode({inf, inf, inf});
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = i + 1; j < 5; ++j)
          if (dense || j == i + 1)
            problem.addEdge(i, j, std::vector<double>(9, inf));
      LayoutSolution solution = solveByCoordinateDescent(problem);
      CHECK(solution.choice.size() == 5);
      CHECK(solution.cost == inf);
      CHECK(!std::isnan(solution.cost));
      std::optional<LayoutSolution> exact = solveExactly(problem);
      REQUIRE(exact);
      CHECK(exact->cost == inf);
    }
  }
}

TEST_CASE("deterministic, ties to the lowest index", "[solver]") {
  SECTION("all costs equal: every node picks candidate 0") {
    for (bool dense : {false, true}) {
      LayoutProblem problem;
      for (int64_t i = 0; i < 6; ++i)
        problem.addNode(std::vector<double>(4, 1));
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = i + 1; j < 6; ++j)
          if (dense || j == i + 1)
            problem.addEdge(i, j, std::vector<double>(16, 0.5));
      CHECK(solveByCoordinateDescent(problem).choice ==
            std::vector<int64_t>(6, 0));
      CHECK(solveExactly(problem)->choice == std::vector<int64_t>(6, 0));
    }
  }
  SECTION("a tie between candidates 1 and 2 goes to 1") {
    LayoutProblem problem;
    problem.addNode({3, 1, 1});
    problem.addNode({0, 0});
    problem.addEdge(0, 1, std::vector<double>(6, 0));
    CHECK(solveByCoordinateDescent(problem).choice ==
          std::vector<int64_t>{1, 0});
    CHECK(solveExactly(problem)->choice == std::vector<int64_t>{1, 0});
  }
  SECTION("the same problem twice gives the same choice") {
    Random random(5);
    LayoutProblem problem = randomNodes(random, 40, 2, 6);
    for (int64_t i = 0; i < 40; ++i)
      for (int64_t j = i + 1; j < std::min<int64_t>(40, i + 6); ++j)
        if (j == i + 1 || random.chance(0.5))
          addRandomEdge(problem, random, i, j);
    LayoutSolverStats stats;
    LayoutSolution first = solveByCoordinateDescent(problem, &stats);
    LayoutSolution second = solveByCoordinateDescent(problem);
    CHECK(stats.residualNodes > 0);
    CHECK(first.choice == second.choice);
    CHECK(first.cost == second.cost);
    CHECK(first.cost == evaluate(problem, first.choice));
  }
}

namespace {

/// A dataflow graph like a small network's: a chain, skip connections
/// (residuals), and nodes whose value feeds two or three later ones
/// (attention's query, key, value). Candidates carry a layout label; an
/// edge is free between equal labels and costs a transition otherwise,
/// with about 5% of the entries forbidden.
LayoutProblem layoutLikeGraph(Random &random) {
  const double scale = 1.0;
  const int64_t labels = 4;
  int64_t n = random.integer(6, 14);
  LayoutProblem problem;
  std::vector<std::vector<int64_t>> label(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = random.integer(2, 8);
    problem.addNode(randomCosts(random, k, 0, scale));
    for (int64_t a = 0; a < k; ++a)
      label[i].push_back(random.integer(0, labels - 1));
  }
  auto connect = [&](int64_t from, int64_t to) {
    int64_t kFrom = problem.numCandidates(from),
            kTo = problem.numCandidates(to);
    std::vector<double> costs(kFrom * kTo);
    for (int64_t a = 0; a < kFrom; ++a)
      for (int64_t b = 0; b < kTo; ++b) {
        double cost = label[from][a] == label[to][b]
                          ? 0
                          : random.between(0.2, 3.0) * scale;
        costs[a * kTo + b] = random.chance(0.05) ? inf : cost;
      }
    problem.addEdge(from, to, std::move(costs));
  };
  for (int64_t i = 0; i + 1 < n; ++i)
    connect(i, i + 1);
  for (int64_t i = 0; i + 2 < n; ++i) {
    if (random.chance(0.25))
      connect(i, random.integer(i + 2, std::min(n - 1, i + 5)));
    if (random.chance(0.2)) {
      int64_t fanOut = random.integer(1, 2);
      for (int64_t j = 0; j < fanOut; ++j)
        connect(i, random.integer(i + 2, n - 1));
    }
  }
  return problem;
}

/// How close one configuration of the solver came to the optimum.
struct Figures {
  int optimal = 0, within5 = 0;
  double worstGap = 0;

  void add(double cost, double optimum) {
    double gap = 0;
    if (cost != optimum)
      gap = optimum == 0 || optimum == inf ? inf : (cost - optimum) / optimum;
    optimal += gap <= 1e-12;
    within5 += gap <= 0.05;
    worstGap = std::max(worstGap, gap);
  }
};

std::ostream &operator<<(std::ostream &os, const Figures &figures) {
  return os << figures.optimal << " optimal, " << figures.within5
            << " within 5%, worst gap " << 100 * figures.worstGap << "%";
}

} // namespace

TEST_CASE("acceptance: within 5% of the optimum on 95% of 200 random "
          "network-like graphs",
          "[solver]") {
  Random random(20240601);
  const int graphs = 200;
  LayoutSolverOptions descentOnly = descentOnlyOptions(), withMerging;
  withMerging.searchResidual = false;
  Figures byDescentOnly, byMerging, byDefault;
  int withResidual = 0, mergedResidual = 0;
  for (int i = 0; i < graphs; ++i) {
    LayoutProblem problem = layoutLikeGraph(random);
    REQUIRE(!checkLayoutProblem(problem));
    std::optional<LayoutSolution> optimum = solveExactly(problem);
    REQUIRE(optimum);
    CHECK(optimum->cost == evaluate(problem, optimum->choice));

    LayoutSolverStats stats;
    LayoutSolution solution = solveByCoordinateDescent(problem, &stats);
    CHECK(solution.cost == evaluate(problem, solution.choice));
    REQUIRE(!std::isnan(solution.cost));
    REQUIRE(solution.cost >= optimum->cost);
    byDefault.add(solution.cost, optimum->cost);
    // Finished branch and bound on every component means optimal.
    if (stats.provenComponents == stats.residualComponents)
      CHECK(solution.cost == Approx(optimum->cost).epsilon(1e-12));

    LayoutSolverStats merged;
    LayoutSolution partial =
        solveByCoordinateDescent(problem, &merged, withMerging);
    byMerging.add(partial.cost, optimum->cost);
    // The search starts from this choice and only improves on it.
    CHECK(solution.cost <= partial.cost);
    mergedResidual += merged.residualNodes > 0;

    LayoutSolverStats plain;
    byDescentOnly.add(
        solveByCoordinateDescent(problem, &plain, descentOnly).cost,
        optimum->cost);
    withResidual += plain.residualNodes > 0;
  }
  WARN("layout solver, " << graphs << " graphs:\n  reductions and descent: "
                         << byDescentOnly << " (" << withResidual
                         << " left a residual graph)\n  + node merging: "
                         << byMerging << " (" << mergedResidual
                         << " left a residual graph)\n  default: "
                         << byDefault);
  CHECK(byDefault.within5 >= 190);
}

TEST_CASE("a 10,000-node network solves in well under a second",
          "[.][solver-perf]") {
  // A chain with a residual skip every other node and k = 36; not a timed
  // test (machines differ), it prints the time.
  Random random(6);
  const int64_t n = 10'000, k = 36;
  LayoutProblem problem = randomNodes(random, n, k, k);
  for (int64_t i = 0; i + 1 < n; ++i) {
    addRandomEdge(problem, random, i, i + 1);
    if (i % 2 == 0 && i + 3 < n)
      addRandomEdge(problem, random, i, i + 3);
  }
  auto start = std::chrono::steady_clock::now();
  LayoutSolverStats stats;
  LayoutSolution solution = solveByCoordinateDescent(problem, &stats);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  WARN("10,000 nodes, k = 36: " << seconds << " s, " << stats.residualNodes
                                << " residual nodes");
  CHECK(solution.cost == evaluate(problem, solution.choice));
  CHECK(stats.residualNodes == 0);
}

TEST_CASE("ties that rounding breaks both ways end the descent", "[solver]") {
  // Costs in tenths: many choices cost the same, and their sums, added in
  // different orders by different nodes and pairs, round apart by an ulp
  // either way. A move must save more than rounding: without the margin,
  // pair sweeps flipped such ties back and forth until the sweep limit
  // (100 per start) on most of these graphs.
  LayoutSolverOptions descentOnly = descentOnlyOptions();
  int64_t most = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Random random(seed);
    const int64_t rows = 3, columns = 30, k = 4;
    auto tenths = [&](int64_t count) {
      std::vector<double> costs(count);
      for (double &cost : costs)
        cost = 0.1 * static_cast<double>(random.integer(0, 4));
      return costs;
    };
    LayoutProblem problem;
    for (int64_t i = 0; i < rows * columns; ++i)
      problem.addNode(tenths(k));
    for (int64_t c = 0; c < columns; ++c)
      for (int64_t r = 0; r < rows; ++r) {
        if (c + 1 < columns)
          problem.addEdge(c * rows + r, (c + 1) * rows + r, tenths(k * k));
        if (r + 1 < rows)
          problem.addEdge(c * rows + r, c * rows + r + 1, tenths(k * k));
      }
    LayoutSolverStats stats;
    LayoutSolution solution =
        solveByCoordinateDescent(problem, &stats, descentOnly);
    CHECK(solution.cost == evaluate(problem, solution.choice));
    most = std::max(most, stats.sweeps);
  }
  INFO("most sweeps over both starts: " << most);
  CHECK(most < 40);
}
