//===- LayoutSolver.h - choose one candidate per node -----------*- C++ -*-===//
//
// The combinatorial core of the SBP sharding search, kept free of MLIR so
// that it can be tested and measured on its own: every node of a graph has
// candidates (for the search, the SBP signatures of an op), each with a cost,
// and every edge a cost per pair of candidates (the boxing between a
// producer's layout and a consumer's). Choose one candidate per node so that
// the total is least. docs/layout-solver.md has the algorithms and figures.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_LAYOUTSOLVER_H
#define PARPLAN_COST_LAYOUTSOLVER_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parplan::cost {

/// Costs are seconds or any other additive measure: >= 0, and +infinity
/// where a choice is forbidden (a layout an op cannot take, a transition no
/// collective can make), so that forbidding needs no second mechanism.
struct LayoutProblem {
  /// [node][candidate]; every node has at least one candidate.
  std::vector<std::vector<double>> nodeCosts;

  /// Costs `costs[a * k_to + b]` when `from` picks a and `to` picks b.
  /// Edges may repeat between the same pair, in either direction (an op
  /// reading one value twice), and `from == to` is a self-loop, of which
  /// only the diagonal counts: one node cannot pick two candidates.
  struct Edge {
    int64_t from = 0, to = 0;
    std::vector<double> costs;
  };
  std::vector<Edge> edges;

  /// Choices per node to start the descent from as well (none: empty),
  /// such as layouts known to be good; the solution is never worse than
  /// what the descent makes of any of them.
  std::vector<std::vector<int64_t>> hints;

  /// Appends a node and returns its id (ids count from 0).
  int64_t addNode(std::vector<double> costs);
  void addEdge(int64_t from, int64_t to, std::vector<double> costs);
  int64_t numNodes() const { return static_cast<int64_t>(nodeCosts.size()); }
  int64_t numCandidates(int64_t node) const {
    return static_cast<int64_t>(nodeCosts[node].size());
  }
};

/// What is wrong with `problem`, naming the node or edge: a node without
/// candidates, an edge to a node that does not exist or with a matrix of the
/// wrong size, a cost that is negative or NaN. The solvers and evaluate()
/// require a problem for which this returns nothing.
std::optional<std::string> checkLayoutProblem(const LayoutProblem &problem);

struct LayoutSolution {
  /// [node] -> candidate index.
  std::vector<int64_t> choice;
  /// evaluate(problem, choice); +infinity when every choice is forbidden.
  double cost = 0;
};

/// The total cost of a full choice: node costs plus edge costs, +infinity
/// when any term is. Sums only, so never NaN.
double evaluate(const LayoutProblem &problem,
                const std::vector<int64_t> &choice);

/// What solveByCoordinateDescent did, for tests and for reports of a search.
struct LayoutSolverStats {
  /// Nodes removed by child elimination (one neighbour), node elimination
  /// (two neighbours) or as isolated nodes, merged nodes included: each
  /// takes its best candidate given its neighbours'.
  int64_t eliminatedNodes = 0;
  /// Node merges, each making one node of two.
  int64_t mergedNodes = 0;
  /// Parallel edges merged and self-loops folded into node costs, counting
  /// the parallel edges that node elimination and merging create.
  int64_t mergedEdges = 0;
  /// What neither the reductions nor merging could remove, where coordinate
  /// descent runs.
  int64_t residualNodes = 0;
  int64_t residualEdges = 0;
  /// Single-node and pair sweeps, over both starting points.
  int64_t sweeps = 0;
  /// Connected components of the residual graph, and how many of them
  /// branch and bound searched to the end.
  int64_t residualComponents = 0;
  int64_t provenComponents = 0;
  /// Branch-and-bound steps over all components.
  int64_t searchSteps = 0;

  /// True when the solution is optimal: nothing was left after the
  /// reductions, or branch and bound finished on every component.
  bool provenOptimal() const { return provenComponents == residualComponents; }
};

/// The stages of the default solver past the reductions and the descent,
/// on by default; switched off to measure what each adds.
struct LayoutSolverOptions {
  /// Merge pairs of nodes into one of at most 100 candidates where no
  /// reduction applies, then reduce again (OneFlow's node merging).
  bool mergeNodes = true;
  /// Branch and bound over each connected component of the residual graph,
  /// from the descent's choice, within a budget of steps.
  bool searchResidual = true;
};

/// The default solver, after OneFlow's auto-parallel SbpGraph:
///   1. reduce the graph while a node has at most two neighbours (edge,
///      child and node elimination: exact, and they solve chains, trees and
///      series-parallel graphs completely), merging pairs of small nodes
///      where they are stuck;
///   2. coordinate descent with a pair neighbourhood on what is left, from
///      two starting points;
///   3. branch and bound on each component of what is left, from the
///      descent's choice, within a fixed budget (network graphs leave small,
///      local components, which this solves exactly);
///   4. recover the removed nodes in reverse order.
/// Near-linear in the size of the graph for the chains, skips and diamonds
/// of neural networks. Deterministic: fixed orders everywhere, and every
/// argmin takes the lowest index among equal costs, so a problem whose
/// costs are all equal gets candidate 0 everywhere.
LayoutSolution
solveByCoordinateDescent(const LayoutProblem &problem,
                         LayoutSolverStats *stats = nullptr,
                         const LayoutSolverOptions &options = {});

/// The optimum by branch and bound over the whole problem (not the reduced
/// one, so that it is an oracle for the default solver), started from
/// solveByCoordinateDescent's solution; std::nullopt when it would need more
/// than `maxSteps` search steps (one step: one candidate tried at one node).
/// Exponential in the worst case: for tests, and for graphs of tens of
/// nodes.
std::optional<LayoutSolution> solveExactly(const LayoutProblem &problem,
                                           int64_t maxSteps = 50'000'000);

} // namespace parplan::cost

#endif // PARPLAN_COST_LAYOUTSOLVER_H
