//===- LayoutSolver.cpp - choose one candidate per node -------------------===//
//
// Costs are added and compared, and subtracted only where a sum keeps its
// infinite terms apart (RemovableSum), so +infinity stays +infinity and no
// NaN can arise (inf - inf). Every argmin takes the lowest index among
// equal values, and every loop runs in an order fixed by node, edge and
// candidate indices: no hash order reaches a result.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/LayoutSolver.h"

#include "llvm/ADT/ArrayRef.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>

using namespace parplan;
using namespace parplan::cost;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Sweeps (single-node or pair) per starting point of the descent. Every
/// sweep that changes a choice lowers the total (by more than rounding, see
/// lowers()), so the descent ends on its own; the bound caps its time on
/// large residual graphs (a sweep is linear in their size). The descents
/// measured in docs/layout-solver.md stay well below it.
constexpr int64_t kMaxSweeps = 100;

/// How much, relative to the cost it replaces, a move of the descent must
/// save to be taken. Two choices of equal cost (alike stages, mirrored
/// layouts) sum their terms in different orders when two different pairs
/// or nodes compare them, and rounding can then make each look the cheaper
/// from its own side: without a margin, a pair sweep flipped such a pair
/// back and forth until kMaxSweeps (GPT-3 175B on 64 stages: 88 of 100
/// sweeps, half of the compile). The sums carry a few ulps of error, far
/// below the margin; a saving below it is worth nothing to a plan.
constexpr double kLeastSaving = 1e-12;

/// Whether `candidate` is cheaper than `current` by more than rounding:
/// any finite cost against an infinite one.
bool lowers(double candidate, double current) {
  if (current == kInf)
    return candidate < kInf;
  return candidate < current - kLeastSaving * std::abs(current);
}

/// The most candidates a merged node may have; OneFlow's SbpGraph uses the
/// same threshold.
constexpr int64_t kMergeLimit = 100;

/// Rounds of merging and reducing. Each round merges every pair it can
/// (disjoint pairs), so a node reaches kMergeLimit within log2(kMergeLimit)
/// of its own merges; the bound keeps a graph of many small nodes from
/// taking one round per pair.
constexpr int64_t kMaxMergeRounds = 32;

/// Branch-and-bound steps per residual component, and for all of them
/// together: a few milliseconds each, whatever the graph.
constexpr int64_t kPolishSteps = 100'000;
constexpr int64_t kPolishBudget = 1'000'000;

/// The index of the least of `values`, the lowest among equals; 0 when all
/// are +infinity.
int64_t argmin(const std::vector<double> &values) {
  int64_t best = 0;
  for (int64_t a = 1, e = static_cast<int64_t>(values.size()); a < e; ++a)
    if (values[a] < values[best])
      best = a;
  return best;
}

/// The least of `values[0..n)`, n >= 1, over four running minima so that
/// the compares do not wait on each other; the minimum is exact, so the
/// order does not change it.
double leastOf(const double *values, int64_t n) {
  double lanes[4] = {kInf, kInf, kInf, kInf};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int lane = 0; lane < 4; ++lane)
      lanes[lane] =
          values[i + lane] < lanes[lane] ? values[i + lane] : lanes[lane];
  double least =
      std::min(std::min(lanes[0], lanes[1]), std::min(lanes[2], lanes[3]));
  for (; i < n; ++i)
    least = values[i] < least ? values[i] : least;
  return least;
}
double leastOf(const std::vector<double> &values) {
  return leastOf(values.data(), static_cast<int64_t>(values.size()));
}

/// The problem with parallel edges merged and self-loops folded into node
/// costs: at most one edge per pair of nodes, which the reductions and the
/// search need to count neighbours. Edges are removed and added as the
/// reductions go. An edge reads the problem's matrix in place until
/// something changes it: the matrices are most of a problem's memory.
class Graph {
public:
  /// An edge between `lo` < `hi`, costs [k_lo][k_hi].
  struct Edge {
    int64_t lo = 0, hi = 0;
    const std::vector<double> *borrowed = nullptr;
    std::vector<double> owned;
    const std::vector<double> &costs() const {
      return borrowed ? *borrowed : owned;
    }
  };

  explicit Graph(const LayoutProblem &problem)
      : nodeCosts(problem.nodeCosts), adjacent(problem.nodeCosts.size()) {
    for (const LayoutProblem::Edge &edge : problem.edges)
      addEdge(edge.from, edge.to, edge.costs, /*mayBorrow=*/true);
  }

  int64_t numNodes() const { return static_cast<int64_t>(nodeCosts.size()); }
  int64_t k(int64_t node) const {
    return static_cast<int64_t>(nodeCosts[node].size());
  }
  int64_t degree(int64_t node) const {
    return static_cast<int64_t>(adjacent[node].size());
  }

  /// Adds costs [k_from][k_to] to the edge between `from` and `to`, to its
  /// diagonal when they are the same node. `costs` must outlive the graph
  /// when `mayBorrow`. Returns true when it merged into something already
  /// there (an edge or the node's own costs).
  bool addEdge(int64_t from, int64_t to, const std::vector<double> &costs,
               bool mayBorrow) {
    int64_t kFrom = k(from), kTo = k(to);
    if (from == to) {
      for (int64_t a = 0; a < kFrom; ++a)
        nodeCosts[from][a] += costs[a * kFrom + a];
      ++mergedEdges;
      return true;
    }
    bool transposed = from > to;
    int64_t lo = std::min(from, to), hi = std::max(from, to);
    int64_t kLo = k(lo), kHi = k(hi);
    auto found = adjacent[lo].find(hi);
    if (found != adjacent[lo].end()) {
      Edge &edge = edges[found->second];
      if (edge.borrowed) {
        edge.owned = *edge.borrowed;
        edge.borrowed = nullptr;
      }
      std::vector<double> &sum = edge.owned;
      if (!transposed) {
        for (size_t i = 0; i < sum.size(); ++i)
          sum[i] += costs[i];
      } else {
        for (int64_t aLo = 0; aLo < kLo; ++aLo)
          for (int64_t aHi = 0; aHi < kHi; ++aHi)
            sum[aLo * kHi + aHi] += costs[aHi * kTo + aLo];
      }
      ++mergedEdges;
      return true;
    }
    Edge edge{lo, hi, nullptr, {}};
    if (!transposed && mayBorrow) {
      edge.borrowed = &costs;
    } else if (!transposed) {
      edge.owned = costs;
    } else {
      edge.owned.resize(costs.size());
      for (int64_t aLo = 0; aLo < kLo; ++aLo)
        for (int64_t aHi = 0; aHi < kHi; ++aHi)
          edge.owned[aLo * kHi + aHi] = costs[aHi * kTo + aLo];
    }
    int64_t id = static_cast<int64_t>(edges.size());
    edges.push_back(std::move(edge));
    adjacent[lo].emplace(hi, id);
    adjacent[hi].emplace(lo, id);
    return false;
  }

  /// Adds an edge the reductions made, taking its matrix.
  void addEdge(int64_t lo, int64_t hi, std::vector<double> &&costs) {
    assert(lo < hi);
    if (adjacent[lo].count(hi)) {
      addEdge(lo, hi, costs, /*mayBorrow=*/false);
      return;
    }
    int64_t id = static_cast<int64_t>(edges.size());
    edges.push_back({lo, hi, nullptr, std::move(costs)});
    adjacent[lo].emplace(hi, id);
    adjacent[hi].emplace(lo, id);
  }

  void removeEdge(int64_t id) {
    Edge &edge = edges[id];
    adjacent[edge.lo].erase(edge.hi);
    adjacent[edge.hi].erase(edge.lo);
    edge.borrowed = nullptr;
    std::vector<double>().swap(edge.owned);
  }

  /// The costs of edge `id` as a [k_node][k_other] matrix: the edge's own
  /// when `node` is its lower end, else transposed into `scratch`.
  const double *costsFrom(int64_t id, int64_t node,
                          std::vector<double> &scratch) const {
    const Edge &edge = edges[id];
    const std::vector<double> &costs = edge.costs();
    if (edge.lo == node)
      return costs.data();
    int64_t kNode = k(node), kOther = k(edge.lo);
    scratch.resize(costs.size());
    for (int64_t b = 0; b < kOther; ++b)
      for (int64_t a = 0; a < kNode; ++a)
        scratch[a * kOther + b] = costs[b * kNode + a];
    return scratch.data();
  }

  /// The cost of edge `id` when `node` picks a and the other end b.
  double cost(int64_t id, int64_t node, int64_t a, int64_t b) const {
    const Edge &edge = edges[id];
    const std::vector<double> &costs = edge.costs();
    return edge.lo == node ? costs[a * k(edge.hi) + b]
                           : costs[b * k(edge.hi) + a];
  }

  /// Replaces `u` and `v` by a new node whose candidates are their pairs,
  /// a_u * k_v + a_v, carrying both nodes' costs, the edge between them if
  /// any, and their edges to the rest (merged where both had one to the
  /// same node). Returns the new node's id.
  int64_t merge(int64_t u, int64_t v) {
    int64_t kU = k(u), kV = k(v), merged = numNodes();
    std::vector<double> costs(kU * kV);
    for (int64_t aU = 0; aU < kU; ++aU)
      for (int64_t aV = 0; aV < kV; ++aV)
        costs[aU * kV + aV] = nodeCosts[u][aU] + nodeCosts[v][aV];
    auto found = adjacent[u].find(v);
    if (found != adjacent[u].end()) {
      for (int64_t aU = 0; aU < kU; ++aU)
        for (int64_t aV = 0; aV < kV; ++aV)
          costs[aU * kV + aV] += cost(found->second, u, aU, aV);
      removeEdge(found->second);
    }
    nodeCosts.push_back(std::move(costs));
    adjacent.emplace_back();
    for (int64_t end : {u, v}) {
      std::vector<std::pair<int64_t, int64_t>> around(adjacent[end].begin(),
                                                      adjacent[end].end());
      for (auto [other, id] : around) {
        // Made as [k_other][k_merged], the merged node being the edge's
        // higher end, so that it is moved in rather than transposed.
        int64_t kOther = k(other), kMerged = kU * kV;
        std::vector<double> costs(kOther * kMerged);
        for (int64_t b = 0; b < kOther; ++b)
          for (int64_t aU = 0; aU < kU; ++aU)
            for (int64_t aV = 0; aV < kV; ++aV)
              costs[b * kMerged + aU * kV + aV] =
                  cost(id, end, end == u ? aU : aV, b);
        removeEdge(id);
        addEdge(other, merged, std::move(costs));
      }
    }
    return merged;
  }

  std::vector<std::vector<double>> nodeCosts;
  std::vector<Edge> edges;
  /// [node]: neighbour -> edge id, ordered by neighbour.
  std::vector<std::map<int64_t, int64_t>> adjacent;
  int64_t mergedEdges = 0;
};

/// row[j] = min(row[j], head + tail[j]), and best[j] = index where that
/// lowers row[j]: the inner loop of node elimination, the k^3 of the
/// reductions. Callers go through candidates in increasing index, so a
/// strict comparison leaves ties to the lowest. The argmin is a double
/// beside the minimum so that the loop is selects of one width over arrays
/// that do not alias, which compilers vectorize.
void relax(double *__restrict row, double *__restrict best,
           const double *__restrict tail, double head, double index,
           int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double least = row[j], at = best[j];
    double total = head + tail[j];
    at = total < least ? index : at;
    least = total < least ? total : least;
    row[j] = least;
    best[j] = at;
  }
}

/// A node removed by the reductions, and how to recover its choice from
/// its neighbours' once they are known.
class Elimination {
public:
  /// `entries` answers, for a node of `k` candidates.
  Elimination(int64_t node, int64_t u, int64_t w, int64_t k, int64_t entries)
      : node(node), u(u), w(w) {
    if (k <= 256)
      small.resize(entries);
    else
      large.resize(entries);
  }

  /// The node's best candidate: [0] when isolated, [a_u] with one
  /// neighbour, [a_u * k_w + a_w] with two.
  int64_t best(int64_t i) const { return large.empty() ? small[i] : large[i]; }
  void setBest(int64_t i, int64_t candidate) {
    if (large.empty())
      small[i] = static_cast<uint8_t>(candidate);
    else
      large[i] = static_cast<int32_t>(candidate);
  }

  int64_t node;
  /// Neighbours at the time, -1 when absent.
  int64_t u, w;

private:
  /// One byte per answer while the node has at most 256 candidates: the
  /// tables of node elimination are k^2 entries per node, most of the
  /// reductions' memory.
  std::vector<uint8_t> small;
  std::vector<int32_t> large;
};

/// Two nodes merged into `node`: its candidate a_u * k_w + a_w is u's a_u
/// and w's a_w.
struct Merge {
  int64_t node, u, w;
};

/// Edge, child and node elimination until none applies, lowest node id
/// first, over the nodes that are `alive`. What is left has only nodes of
/// three or more neighbours.
void reduce(Graph &graph, std::vector<char> &alive,
            std::vector<Elimination> &eliminations) {
  // Nodes of at most one neighbour go first: child elimination costs k^2,
  // node elimination k^3. Degrees never grow (node elimination trades a
  // neighbour for another), so a node is queued again whenever its degree
  // drops and a stale entry is skipped.
  using Queue =
      std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>>;
  Queue leaves, middles;
  auto push = [&](int64_t node) {
    if (graph.degree(node) <= 1)
      leaves.push(node);
    else if (graph.degree(node) == 2)
      middles.push(node);
  };
  for (int64_t node = 0; node < graph.numNodes(); ++node)
    if (alive[node])
      push(node);
  while (!leaves.empty() || !middles.empty()) {
    bool fromLeaves = !leaves.empty();
    Queue &queue = fromLeaves ? leaves : middles;
    int64_t node = queue.top();
    queue.pop();
    int64_t degree = graph.degree(node);
    if (!alive[node] || (fromLeaves ? degree > 1 : degree != 2))
      continue;
    alive[node] = 0;
    const std::vector<double> &own = graph.nodeCosts[node];
    int64_t kNode = graph.k(node);
    if (degree == 0) {
      Elimination elimination(node, -1, -1, kNode, 1);
      elimination.setBest(0, argmin(own));
      eliminations.push_back(std::move(elimination));
    } else if (degree == 1) {
      // Child elimination: the neighbour's candidate a_u pays for the
      // node's best answer to it.
      auto [u, edgeId] = *graph.adjacent[node].begin();
      int64_t kU = graph.k(u);
      std::vector<double> scratch;
      const double *edge = graph.costsFrom(edgeId, node, scratch);
      Elimination elimination(node, u, -1, kNode, kU);
      std::vector<double> added(kU, kInf);
      for (int64_t a = 0; a < kNode; ++a) {
        if (own[a] == kInf)
          continue;
        for (int64_t aU = 0; aU < kU; ++aU) {
          double total = own[a] + edge[a * kU + aU];
          if (total < added[aU]) {
            added[aU] = total;
            elimination.setBest(aU, a);
          }
        }
      }
      graph.removeEdge(edgeId);
      for (int64_t aU = 0; aU < kU; ++aU)
        graph.nodeCosts[u][aU] += added[aU];
      push(u);
      eliminations.push_back(std::move(elimination));
    } else {
      // Node elimination: an edge u-w whose cost for (a_u, a_w) is the
      // node's best answer to both, a (min, +) product.
      auto first = graph.adjacent[node].begin();
      auto [u, edgeU] = *first;
      auto [w, edgeW] = *std::next(first);
      int64_t kU = graph.k(u), kW = graph.k(w);
      std::vector<double> scratchU, scratchW;
      const double *toU = graph.costsFrom(edgeU, node, scratchU);
      const double *toW = graph.costsFrom(edgeW, node, scratchW);
      Elimination elimination(node, u, w, kNode, kU * kW);
      std::vector<double> product(kU * kW, kInf);
      std::vector<double> bestRow(kW);
      for (int64_t aU = 0; aU < kU; ++aU) {
        double *row = &product[aU * kW];
        std::fill(bestRow.begin(), bestRow.end(), 0.0);
        for (int64_t a = 0; a < kNode; ++a) {
          double head = own[a] + toU[a * kU + aU];
          if (head != kInf)
            relax(row, bestRow.data(), &toW[a * kW], head,
                  static_cast<double>(a), kW);
        }
        for (int64_t aW = 0; aW < kW; ++aW)
          elimination.setBest(aU * kW + aW, static_cast<int64_t>(bestRow[aW]));
      }
      graph.removeEdge(edgeU);
      graph.removeEdge(edgeW);
      graph.addEdge(u, w, std::move(product));
      push(u);
      push(w);
      eliminations.push_back(std::move(elimination));
    }
  }
}

/// The neighbourhoods of some nodes of a graph that no longer changes,
/// copied out of their maps into one array in the same (ascending) order:
/// the merge picking and the descent read them many times over.
class Neighbourhoods {
public:
  template <typename Nodes>
  Neighbourhoods(const Graph &graph, const Nodes &nodes)
      : first(graph.numNodes() + 1, 0) {
    for (int64_t node : nodes)
      first[node + 1] = graph.degree(node);
    for (int64_t node = 0; node < graph.numNodes(); ++node)
      first[node + 1] += first[node];
    pairs.resize(first.back());
    for (int64_t node : nodes)
      std::copy(graph.adjacent[node].begin(), graph.adjacent[node].end(),
                pairs.begin() + first[node]);
  }

  /// (neighbour, edge id) of `node`, ascending; empty for a node left out.
  llvm::ArrayRef<std::pair<int64_t, int64_t>> of(int64_t node) const {
    return llvm::ArrayRef(pairs).slice(first[node],
                                       first[node + 1] - first[node]);
  }

private:
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<int64_t> first;
};

/// Pairs of alive nodes to merge, OneFlow's node merging: where no
/// reduction applies, two nodes become one of k_u * k_v candidates, which
/// loses nothing (the merged node still has every combination) and removes
/// an edge for each neighbour they share and for the edge between them,
/// which may let the reductions go on. Only pairs of at most kMergeLimit
/// candidates, so that a node elimination among merged nodes stays within
/// kMergeLimit^3 steps. Candidates are adjacent pairs and pairs with a
/// common neighbour; most edges removed first, then the smaller product,
/// then the lower ids; each node in one pair at most.
std::vector<std::pair<int64_t, int64_t>>
pickMerges(const Graph &graph, const std::vector<char> &alive) {
  std::vector<int64_t> aliveNodes;
  for (int64_t node = 0; node < graph.numNodes(); ++node)
    if (alive[node])
      aliveNodes.push_back(node);
  Neighbourhoods neighbourhoods(graph, aliveNodes);
  // (-edges removed, product, u, v)
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> candidates;
  auto consider = [&](int64_t u, int64_t v) {
    int64_t product = graph.k(u) * graph.k(v);
    if (product > kMergeLimit)
      return;
    llvm::ArrayRef<std::pair<int64_t, int64_t>> x = neighbourhoods.of(u),
                                                y = neighbourhoods.of(v);
    int64_t removed = graph.adjacent[u].count(v) ? 1 : 0;
    for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
      if (x[i].first < y[j].first) {
        ++i;
      } else if (y[j].first < x[i].first) {
        ++j;
      } else {
        ++removed;
        ++i;
        ++j;
      }
    }
    candidates.emplace_back(-removed, product, u, v);
  };
  // seenFrom[v] == u: the pair (u, v) was considered.
  std::vector<int64_t> seenFrom(graph.numNodes(), -1);
  auto firstTime = [&](int64_t u, int64_t v) {
    if (seenFrom[v] == u)
      return false;
    seenFrom[v] = u;
    return true;
  };
  for (int64_t node : aliveNodes) {
    // Neighbours, and nodes two steps away.
    for (auto [other, id] : neighbourhoods.of(node)) {
      (void)id;
      if (node < other && firstTime(node, other))
        consider(node, other);
      for (auto [far, farId] : neighbourhoods.of(other)) {
        (void)farId;
        if (node < far && firstTime(node, far))
          consider(node, far);
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<char> used(graph.numNodes(), 0);
  for (auto [removed, product, u, v] : candidates) {
    (void)removed;
    (void)product;
    if (used[u] || used[v])
      continue;
    used[u] = used[v] = 1;
    pairs.emplace_back(u, v);
  }
  return pairs;
}

/// Coordinate descent over the nodes the reductions left.
class Descent {
public:
  Descent(const Graph &graph, std::vector<int64_t> nodes)
      : graph(graph), nodes(std::move(nodes)),
        neighbourhoods(graph, this->nodes) {
    for (int64_t node : this->nodes)
      for (auto [other, id] : around(node))
        if (node < other)
          edgeIds.push_back(id);
    std::sort(edgeIds.begin(), edgeIds.end());
    transposedCosts.resize(graph.edges.size());
    rowLeastCosts.resize(graph.edges.size());
  }

  int64_t numEdges() const { return static_cast<int64_t>(edgeIds.size()); }

  /// Each node's best given its neighbours chosen so far, in node order.
  void startGreedy(std::vector<int64_t> &choice) const {
    std::vector<char> chosen(graph.numNodes(), 0);
    for (int64_t node : nodes) {
      std::vector<double> &local = scratch;
      local.assign(graph.nodeCosts[node].begin(), graph.nodeCosts[node].end());
      for (auto [other, id] : around(node))
        if (chosen[other])
          addEdgeCosts(local, node, id, choice[other]);
      choice[node] = argmin(local);
      chosen[node] = 1;
    }
  }

  /// Each node's best given its own costs alone.
  void startAlone(std::vector<int64_t> &choice) const {
    for (int64_t node : nodes)
      choice[node] = argmin(graph.nodeCosts[node]);
  }

  /// Single-node sweeps until one changes nothing, then a pair sweep, until
  /// a pair sweep changes nothing too or kMaxSweeps is reached. Returns the
  /// number of sweeps.
  int64_t descend(std::vector<int64_t> &choice) const {
    stale.assign(graph.numNodes(), 0);
    for (int64_t node : nodes)
      stale[node] = 1;
    changedAt.assign(graph.numNodes(), 0);
    checkedAt.assign(graph.edges.size(), -1);
    clock = 0;
    int64_t sweeps = 0;
    while (sweeps < kMaxSweeps) {
      bool changed = true;
      while (changed && sweeps < kMaxSweeps) {
        changed = singleSweep(choice);
        ++sweeps;
      }
      if (sweeps >= kMaxSweeps)
        break;
      ++sweeps;
      if (!pairSweep(choice))
        break;
    }
    return sweeps;
  }

  /// The cost of the residual graph under `choice`.
  double total(const std::vector<int64_t> &choice) const {
    double sum = 0;
    for (int64_t node : nodes)
      sum += graph.nodeCosts[node][choice[node]];
    for (int64_t id : edgeIds) {
      const Graph::Edge &edge = graph.edges[id];
      sum += graph.cost(id, edge.lo, choice[edge.lo], choice[edge.hi]);
    }
    return sum;
  }

private:
  /// local[a] += cost of edge `id` when `node` picks a and the other end b:
  /// a row of the edge's costs, of their transpose when `node` is the low
  /// end, so that the sweeps read memory in order.
  void addEdgeCosts(std::vector<double> &local, int64_t node, int64_t id,
                    int64_t b) const {
    const Graph::Edge &edge = graph.edges[id];
    int64_t k = static_cast<int64_t>(local.size());
    const double *row;
    if (edge.hi == node) {
      row = edge.costs().data() + b * k;
    } else {
      std::vector<double> &transposed = transposedCosts[id];
      if (transposed.empty()) {
        const std::vector<double> &costs = edge.costs();
        int64_t kHi = graph.k(edge.hi);
        transposed.resize(costs.size());
        // In tiles, so that neither side walks memory a row apart.
        constexpr int64_t kTile = 16;
        for (int64_t a0 = 0; a0 < k; a0 += kTile)
          for (int64_t c0 = 0; c0 < kHi; c0 += kTile)
            for (int64_t a = a0, aEnd = std::min(a0 + kTile, k); a < aEnd; ++a)
              for (int64_t c = c0, cEnd = std::min(c0 + kTile, kHi); c < cEnd;
                   ++c)
                transposed[c * k + a] = costs[a * kHi + c];
      }
      row = transposed.data() + b * k;
    }
    for (int64_t a = 0; a < k; ++a)
      local[a] += row[a];
  }

  /// Sets `local` to the cost of each candidate of `node` given every
  /// neighbour's choice except `skip`'s.
  void localCosts(std::vector<double> &local, int64_t node,
                  const std::vector<int64_t> &choice, int64_t skip = -1) const {
    local.assign(graph.nodeCosts[node].begin(), graph.nodeCosts[node].end());
    for (auto [other, id] : around(node))
      if (other != skip)
        addEdgeCosts(local, node, id, choice[other]);
  }

  /// `node` and its neighbours may no longer hold their best candidate.
  void markAround(int64_t node) const {
    stale[node] = 1;
    for (auto [other, id] : around(node))
      stale[other] = 1;
  }

  /// A node none of whose neighbours changed since it last took its best
  /// candidate still holds it: only stale nodes are looked at, which
  /// changes nothing but the time a sweep takes.
  bool singleSweep(std::vector<int64_t> &choice) const {
    bool changed = false;
    for (int64_t node : nodes) {
      if (!stale[node])
        continue;
      stale[node] = 0;
      localCosts(scratch, node, choice);
      int64_t best = argmin(scratch);
      if (lowers(scratch[best], scratch[choice[node]])) {
        choice[node] = best;
        changedAt[node] = ++clock;
        changed = true;
        for (auto [other, id] : around(node))
          stale[other] = 1;
      }
    }
    return changed;
  }

  /// Whether a node of edge `id`, or a neighbour of one, changed since the
  /// edge was last looked at.
  bool changedAround(int64_t id) const {
    const Graph::Edge &edge = graph.edges[id];
    for (int64_t end : {edge.lo, edge.hi}) {
      if (changedAt[end] > checkedAt[id])
        return true;
      for (auto [other, otherId] : around(end))
        if (changedAt[other] > checkedAt[id])
          return true;
    }
    return false;
  }

  /// For each edge, the joint best of its two ends given the rest. An edge
  /// around which nothing changed since it was last looked at still has its
  /// ends at their joint best: it is skipped, which changes nothing but the
  /// time a sweep takes.
  bool pairSweep(std::vector<int64_t> &choice) const {
    bool changed = false;
    std::vector<double> &alone = scratch, &other = pairScratch;
    for (int64_t id : edgeIds) {
      if (!changedAround(id))
        continue;
      checkedAt[id] = clock;
      const Graph::Edge &edge = graph.edges[id];
      int64_t lo = edge.lo, hi = edge.hi, kHi = graph.k(hi);
      localCosts(alone, lo, choice, hi);
      localCosts(other, hi, choice, lo);
      auto joint = [&](int64_t a, int64_t b) {
        return alone[a] + other[b] + edge.costs()[a * kHi + b];
      };
      int64_t bestLo = choice[lo], bestHi = choice[hi];
      double current = joint(bestLo, bestHi), best = current;
      // A row whose least possible sum is no less than the best so far
      // holds nothing better: rounding is monotone, so the bound is never
      // above a sum of the row, and the choice is the one the full scan
      // makes.
      const std::vector<double> &rowLeast = rowMinima(id);
      double otherLeast = leastOf(other);
      for (int64_t a = 0, kLo = graph.k(lo); a < kLo; ++a) {
        if (alone[a] == kInf || !(alone[a] + otherLeast + rowLeast[a] < best))
          continue;
        for (int64_t b = 0; b < kHi; ++b) {
          double value = joint(a, b);
          if (value < best) {
            best = value;
            bestLo = a;
            bestHi = b;
          }
        }
      }
      if (lowers(best, current)) {
        if (choice[lo] != bestLo)
          changedAt[lo] = ++clock;
        if (choice[hi] != bestHi)
          changedAt[hi] = ++clock;
        choice[lo] = bestLo;
        choice[hi] = bestHi;
        markAround(lo);
        markAround(hi);
        changed = true;
      }
    }
    return changed;
  }

  /// The neighbours of residual node `node` and the edges to them,
  /// ascending.
  llvm::ArrayRef<std::pair<int64_t, int64_t>> around(int64_t node) const {
    return neighbourhoods.of(node);
  }

  const Graph &graph;
  /// Residual nodes, ascending: the sweep order.
  std::vector<int64_t> nodes;
  Neighbourhoods neighbourhoods;
  /// Residual edges, ascending.
  std::vector<int64_t> edgeIds;
  /// Per node: a neighbour changed since it last took its best candidate.
  mutable std::vector<char> stale;
  /// When each node's choice last changed (0: not since the start) and each
  /// edge was last looked at by a pair sweep (-1: never, so that it is), on
  /// a clock that ticks at every change.
  mutable std::vector<int64_t> changedAt, checkedAt;
  mutable int64_t clock = 0;
  /// Per edge id: its costs transposed, [k_hi][k_lo], made on first use.
  mutable std::vector<std::vector<double>> transposedCosts;
  /// Per edge id: the least cost of each row, [k_lo], made on first use.
  mutable std::vector<std::vector<double>> rowLeastCosts;
  const std::vector<double> &rowMinima(int64_t id) const {
    std::vector<double> &least = rowLeastCosts[id];
    if (least.empty()) {
      const Graph::Edge &edge = graph.edges[id];
      const std::vector<double> &costs = edge.costs();
      int64_t kHi = graph.k(edge.hi);
      least.resize(graph.k(edge.lo));
      for (size_t a = 0; a < least.size(); ++a)
        least[a] = leastOf(costs.data() + a * kHi, kHi);
    }
    return least;
  }
  /// Local costs, kept to save an allocation per node and sweep.
  mutable std::vector<double> scratch, pairScratch;
};

/// A sum of costs that may hold +infinity terms and from which terms can be
/// removed again: the finite ones are summed, the infinite ones counted.
struct RemovableSum {
  double finite = 0;
  int64_t infinite = 0;
  void add(double value) {
    if (value == kInf)
      ++infinite;
    else
      finite += value;
  }
  void remove(double value) {
    if (value == kInf)
      --infinite;
    else
      finite -= value;
  }
  double value() const { return infinite ? kInf : finite; }
};

/// The cost of `choice` over `nodes` and the edges among them.
double costOver(const Graph &graph, const std::vector<int64_t> &nodes,
                const std::vector<int64_t> &choice) {
  double sum = 0;
  for (int64_t node : nodes) {
    sum += graph.nodeCosts[node][choice[node]];
    for (auto [other, id] : graph.adjacent[node])
      if (node < other)
        sum += graph.cost(id, node, choice[node], choice[other]);
  }
  return sum;
}

/// Branch and bound over some nodes of a graph, whose edges stay among
/// them. The order assigns next the node with most neighbours already
/// assigned (most edges closing), then the one of highest degree, then the
/// lowest id. The bound adds to the cost so far each unassigned node's
/// least cost given its assigned neighbours, and each edge between
/// unassigned nodes' least entry.
class BranchAndBound {
public:
  /// `nodes` ascending. Works in local indices (positions in `nodes`), so
  /// that a small component of a large graph costs only its own size.
  BranchAndBound(const Graph &graph, std::vector<int64_t> nodes)
      : graph(graph), nodes(std::move(nodes)),
        n(static_cast<int64_t>(this->nodes.size())) {
    auto localOf = [&](int64_t node) {
      return std::lower_bound(this->nodes.begin(), this->nodes.end(), node) -
             this->nodes.begin();
    };
    std::vector<int64_t> assignedNeighbours(n, 0);
    std::vector<char> placed(n, 0);
    using Key = std::tuple<int64_t, int64_t, int64_t>;
    std::set<Key> open;
    for (int64_t i = 0; i < n; ++i)
      open.emplace(0, -graph.degree(this->nodes[i]), i);
    order.reserve(n);
    while (!open.empty()) {
      int64_t i = std::get<2>(*open.begin());
      open.erase(open.begin());
      placed[i] = 1;
      order.push_back(i);
      for (auto [other, id] : graph.adjacent[this->nodes[i]]) {
        (void)id;
        int64_t j = localOf(other);
        if (placed[j])
          continue;
        int64_t degree = graph.degree(other);
        open.erase(Key{-assignedNeighbours[j], -degree, j});
        ++assignedNeighbours[j];
        open.emplace(-assignedNeighbours[j], -degree, j);
      }
    }
    std::vector<int64_t> position(n);
    for (int64_t d = 0; d < n; ++d)
      position[order[d]] = d;
    forward.resize(n);
    std::vector<double> edgeBoundAt(n + 1, 0);
    for (int64_t d = 0; d < n; ++d) {
      for (auto [other, id] : graph.adjacent[this->nodes[order[d]]]) {
        int64_t j = localOf(other);
        if (position[j] < d)
          continue;
        const std::vector<double> &costs = graph.edges[id].costs();
        forward[d].push_back({j, id});
        edgeBoundAt[d] += leastOf(costs);
      }
    }
    // edgeBound[d]: the least the edges between unassigned nodes can cost
    // once order[0..d) are assigned.
    edgeBound.assign(n + 1, 0);
    for (int64_t d = n - 1; d >= 0; --d)
      edgeBound[d] = edgeBound[d + 1] + edgeBoundAt[d];
    given.resize(n);
    least.resize(n);
  }

  /// Looks for a choice of the nodes cheaper than `cost`, the cost of
  /// `choice` over them, and writes each better one found into both.
  /// Returns false when it stopped after `maxSteps` steps, before it could
  /// tell that nothing is cheaper. Adds the steps taken to `steps`.
  bool search(std::vector<int64_t> &choice, double &cost, int64_t maxSteps,
              int64_t &steps) {
    if (n == 0)
      return true;
    RemovableSum unassigned;
    for (int64_t i = 0; i < n; ++i) {
      given[i] = graph.nodeCosts[nodes[i]];
      least[i] = leastOf(given[i]);
      unassigned.add(least[i]);
    }
    std::vector<Frame> frames(n);
    std::vector<int64_t> current(n, 0);
    int64_t taken = 0;
    int64_t depth = 0;
    enter(frames[0], 0, 0, unassigned);
    while (depth >= 0) {
      Frame &frame = frames[depth];
      int64_t i = order[depth];
      if (frame.next == frame.candidates.size()) {
        restore(frame, depth);
        --depth;
        continue;
      }
      int64_t a = frame.candidates[frame.next++];
      if (++taken > maxSteps) {
        steps += maxSteps;
        return false;
      }
      restore(frame, depth);
      double partial = frame.partial + given[i][a];
      // Without the edges to later nodes, the bound grows with a's cost:
      // once it fails, it fails for the rest of the candidates.
      RemovableSum rest = frame.unassigned;
      rest.remove(least[i]);
      if (partial + rest.value() + edgeBound[depth] >= cost) {
        frame.next = frame.candidates.size();
        continue;
      }
      for (const Forward &next : forward[depth]) {
        std::vector<double> &costs = given[next.local];
        const Graph::Edge &edge = graph.edges[next.edge];
        const double *matrix = edge.costs().data();
        auto e = static_cast<int64_t>(costs.size());
        // graph.cost(next.edge, nodes[i], a, b): a row of the matrix, or a
        // column when this node is its higher end.
        if (edge.lo == nodes[i]) {
          const double *row = matrix + a * e;
          for (int64_t b = 0; b < e; ++b)
            costs[b] += row[b];
        } else {
          int64_t kHi = graph.k(edge.hi);
          for (int64_t b = 0; b < e; ++b)
            costs[b] += matrix[b * kHi + a];
        }
        rest.remove(least[next.local]);
        least[next.local] = leastOf(costs);
        rest.add(least[next.local]);
      }
      if (partial + rest.value() + edgeBound[depth + 1] >= cost)
        continue;
      current[i] = a;
      if (depth + 1 == n) {
        for (int64_t j = 0; j < n; ++j)
          choice[nodes[j]] = current[j];
        cost = partial;
        continue;
      }
      ++depth;
      enter(frames[depth], depth, partial, rest);
    }
    steps += taken;
    return true;
  }

private:
  /// An edge from order[depth] to a later node.
  struct Forward {
    int64_t local, edge;
  };

  /// The state at depth d before any candidate of order[d] is tried: the
  /// later neighbours' costs, to restore between candidates.
  struct Frame {
    std::vector<int64_t> candidates;
    size_t next = 0;
    double partial = 0;
    RemovableSum unassigned;
    std::vector<std::vector<double>> savedGiven;
    std::vector<double> savedLeast;
  };

  /// Candidates cheapest first given the assigned neighbours, so that good
  /// choices are found early and the bound can stop the loop.
  void enter(Frame &frame, int64_t depth, double partial,
             const RemovableSum &unassigned) {
    const std::vector<double> &costs = given[order[depth]];
    frame.candidates.resize(costs.size());
    for (size_t a = 0; a < costs.size(); ++a)
      frame.candidates[a] = static_cast<int64_t>(a);
    // Ties by index, so that the order is total and the lowest index of
    // equal candidates is tried first.
    std::sort(frame.candidates.begin(), frame.candidates.end(),
              [&](int64_t x, int64_t y) {
                return costs[x] < costs[y] || (costs[x] == costs[y] && x < y);
              });
    frame.next = 0;
    frame.partial = partial;
    frame.unassigned = unassigned;
    // Into the frame's vectors of its last visit: no allocation per step.
    const std::vector<Forward> &list = forward[depth];
    frame.savedGiven.resize(list.size());
    frame.savedLeast.resize(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      frame.savedGiven[i].assign(given[list[i].local].begin(),
                                 given[list[i].local].end());
      frame.savedLeast[i] = least[list[i].local];
    }
  }

  void restore(const Frame &frame, int64_t depth) {
    const std::vector<Forward> &list = forward[depth];
    for (size_t i = 0; i < list.size(); ++i) {
      given[list[i].local] = frame.savedGiven[i];
      least[list[i].local] = frame.savedLeast[i];
    }
  }

  const Graph &graph;
  /// Global ids, ascending; everything else is indexed by position here.
  std::vector<int64_t> nodes;
  int64_t n;
  /// Local indices in the order of assignment.
  std::vector<int64_t> order;
  /// [depth]: edges from order[depth] to later nodes.
  std::vector<std::vector<Forward>> forward;
  std::vector<double> edgeBound;
  /// [local]: the node's cost per candidate plus its edges to assigned
  /// nodes.
  std::vector<std::vector<double>> given;
  /// [local]: the least of given.
  std::vector<double> least;
};

/// The connected components of the graph over `nodes`, each ascending,
/// ordered by their lowest node.
std::vector<std::vector<int64_t>>
components(const Graph &graph, const std::vector<int64_t> &nodes) {
  std::vector<char> seen(graph.numNodes(), 0);
  std::vector<std::vector<int64_t>> result;
  for (int64_t start : nodes) {
    if (seen[start])
      continue;
    std::vector<int64_t> component{start};
    seen[start] = 1;
    for (size_t i = 0; i < component.size(); ++i)
      for (auto [other, id] : graph.adjacent[component[i]]) {
        (void)id;
        if (!seen[other]) {
          seen[other] = 1;
          component.push_back(other);
        }
      }
    std::sort(component.begin(), component.end());
    result.push_back(std::move(component));
  }
  return result;
}

} // namespace

int64_t LayoutProblem::addNode(std::vector<double> costs) {
  assert(!costs.empty() && "a node needs a candidate");
  nodeCosts.push_back(std::move(costs));
  return numNodes() - 1;
}

void LayoutProblem::addEdge(int64_t from, int64_t to,
                            std::vector<double> costs) {
  assert(from >= 0 && from < numNodes() && to >= 0 && to < numNodes());
  assert(static_cast<int64_t>(costs.size()) ==
         numCandidates(from) * numCandidates(to));
  edges.push_back({from, to, std::move(costs)});
}

std::optional<std::string>
parplan::cost::checkLayoutProblem(const LayoutProblem &problem) {
  auto badCost = [](double cost) -> std::optional<std::string> {
    if (std::isnan(cost))
      return std::string("NaN");
    if (cost < 0)
      return std::to_string(cost) + " is negative";
    return std::nullopt;
  };
  for (int64_t node = 0; node < problem.numNodes(); ++node) {
    const std::vector<double> &costs = problem.nodeCosts[node];
    if (costs.empty())
      return "node " + std::to_string(node) + " has no candidates";
    for (size_t a = 0; a < costs.size(); ++a)
      if (std::optional<std::string> bad = badCost(costs[a]))
        return "node " + std::to_string(node) + ", candidate " +
               std::to_string(a) + ": cost " + *bad;
  }
  for (size_t id = 0; id < problem.edges.size(); ++id) {
    const LayoutProblem::Edge &edge = problem.edges[id];
    std::string name = "edge " + std::to_string(id) + " (" +
                       std::to_string(edge.from) + " -> " +
                       std::to_string(edge.to) + ")";
    for (int64_t end : {edge.from, edge.to})
      if (end < 0 || end >= problem.numNodes())
        return name + ": no node " + std::to_string(end);
    int64_t expected =
        problem.numCandidates(edge.from) * problem.numCandidates(edge.to);
    if (static_cast<int64_t>(edge.costs.size()) != expected)
      return name + ": " + std::to_string(edge.costs.size()) +
             " costs, expected " + std::to_string(expected);
    for (size_t i = 0; i < edge.costs.size(); ++i)
      if (std::optional<std::string> bad = badCost(edge.costs[i]))
        return name + ", entry " + std::to_string(i) + ": cost " + *bad;
  }
  for (size_t h = 0; h < problem.hints.size(); ++h) {
    const std::vector<int64_t> &hint = problem.hints[h];
    std::string name = "hint " + std::to_string(h);
    if (static_cast<int64_t>(hint.size()) != problem.numNodes())
      return name + " has " + std::to_string(hint.size()) + " choices for " +
             std::to_string(problem.numNodes()) + " nodes";
    for (int64_t node = 0; node < problem.numNodes(); ++node)
      if (hint[node] < 0 || hint[node] >= problem.numCandidates(node))
        return name + " picks candidate " + std::to_string(hint[node]) +
               " of node " + std::to_string(node) + ", which has " +
               std::to_string(problem.numCandidates(node));
  }
  return std::nullopt;
}

double parplan::cost::evaluate(const LayoutProblem &problem,
                               const std::vector<int64_t> &choice) {
  assert(static_cast<int64_t>(choice.size()) == problem.numNodes());
  double total = 0;
  for (int64_t node = 0; node < problem.numNodes(); ++node)
    total += problem.nodeCosts[node][choice[node]];
  for (const LayoutProblem::Edge &edge : problem.edges)
    total += edge.costs[choice[edge.from] * problem.numCandidates(edge.to) +
                        choice[edge.to]];
  return total;
}

LayoutSolution
parplan::cost::solveByCoordinateDescent(const LayoutProblem &problem,
                                        LayoutSolverStats *stats,
                                        const LayoutSolverOptions &options) {
  assert(!checkLayoutProblem(problem) && "invalid layout problem");
  Graph graph(problem);
  std::vector<char> alive(graph.numNodes(), 1);
  std::vector<Elimination> eliminations;
  // Merges and eliminations interleave; recovery undoes them in reverse.
  std::vector<std::pair<bool, size_t>> history;
  std::vector<Merge> merges;
  auto reduceAll = [&] {
    size_t before = eliminations.size();
    reduce(graph, alive, eliminations);
    for (size_t i = before; i < eliminations.size(); ++i) {
      alive[eliminations[i].node] = 0;
      history.emplace_back(false, i);
    }
  };
  reduceAll();
  for (int64_t round = 0; options.mergeNodes && round < kMaxMergeRounds;
       ++round) {
    std::vector<std::pair<int64_t, int64_t>> pairs = pickMerges(graph, alive);
    if (pairs.empty())
      break;
    for (auto [u, v] : pairs) {
      int64_t merged = graph.merge(u, v);
      alive[u] = alive[v] = 0;
      alive.push_back(1);
      history.emplace_back(true, merges.size());
      merges.push_back({merged, u, v});
    }
    reduceAll();
  }

  std::vector<int64_t> residual;
  for (int64_t node = 0; node < graph.numNodes(); ++node)
    if (alive[node])
      residual.push_back(node);

  std::vector<int64_t> choice(graph.numNodes(), 0);
  Descent descent(graph, residual);
  int64_t sweeps = 0;
  if (!residual.empty()) {
    // Two starting points; the greedy one wins ties.
    std::vector<int64_t> alone = choice;
    descent.startGreedy(choice);
    sweeps += descent.descend(choice);
    descent.startAlone(alone);
    sweeps += descent.descend(alone);
    if (descent.total(alone) < descent.total(choice))
      choice = std::move(alone);
    for (const std::vector<int64_t> &hint : problem.hints) {
      // The hint on the nodes merging made: the pair of its ends' choices.
      std::vector<int64_t> hinted(graph.numNodes(), 0);
      std::copy(hint.begin(), hint.end(), hinted.begin());
      for (const Merge &merge : merges)
        hinted[merge.node] =
            hinted[merge.u] * graph.k(merge.w) + hinted[merge.w];
      sweeps += descent.descend(hinted);
      if (descent.total(hinted) < descent.total(choice))
        choice = std::move(hinted);
    }
  }

  // Branch and bound on each residual component from the descent's
  // choice: the residuals of network graphs are small and local, and this
  // proves most of them optimal or finds their optimum.
  int64_t polishSteps = 0, provenComponents = 0;
  std::vector<std::vector<int64_t>> parts = components(graph, residual);
  for (const std::vector<int64_t> &part : parts) {
    if (!options.searchResidual)
      break;
    int64_t budget = std::min(kPolishSteps, kPolishBudget - polishSteps);
    if (budget <= 0)
      break;
    double cost = costOver(graph, part, choice);
    BranchAndBound search(graph, part);
    if (search.search(choice, cost, budget, polishSteps))
      ++provenComponents;
  }

  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    if (it->first) {
      const Merge &merge = merges[it->second];
      int64_t kW = graph.k(merge.w);
      choice[merge.u] = choice[merge.node] / kW;
      choice[merge.w] = choice[merge.node] % kW;
      continue;
    }
    const Elimination &elimination = eliminations[it->second];
    if (elimination.u < 0)
      choice[elimination.node] = elimination.best(0);
    else if (elimination.w < 0)
      choice[elimination.node] = elimination.best(choice[elimination.u]);
    else
      choice[elimination.node] =
          elimination.best(choice[elimination.u] * graph.k(elimination.w) +
                           choice[elimination.w]);
  }
  choice.resize(problem.numNodes());

  if (stats) {
    stats->eliminatedNodes = static_cast<int64_t>(eliminations.size());
    stats->mergedNodes = static_cast<int64_t>(merges.size());
    stats->mergedEdges = graph.mergedEdges;
    stats->residualNodes = static_cast<int64_t>(residual.size());
    stats->residualEdges = descent.numEdges();
    stats->sweeps = sweeps;
    stats->residualComponents = static_cast<int64_t>(parts.size());
    stats->provenComponents = provenComponents;
    stats->searchSteps = polishSteps;
  }
  double cost = evaluate(problem, choice);
  return {std::move(choice), cost};
}

std::optional<LayoutSolution>
parplan::cost::solveExactly(const LayoutProblem &problem, int64_t maxSteps) {
  LayoutSolution best = solveByCoordinateDescent(problem);
  // Over the whole problem, not the reduced one: an oracle that shares
  // only the merging of parallel edges with the default solver.
  Graph graph(problem);
  std::vector<int64_t> nodes(graph.numNodes());
  for (int64_t node = 0; node < graph.numNodes(); ++node)
    nodes[node] = node;
  double cost = costOver(graph, nodes, best.choice);
  int64_t steps = 0;
  BranchAndBound search(graph, std::move(nodes));
  if (!search.search(best.choice, cost, maxSteps, steps))
    return std::nullopt;
  best.cost = evaluate(problem, best.choice);
  return best;
}
