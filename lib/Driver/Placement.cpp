//===- Placement.cpp - which machines of a cluster a plan runs on ---------===//

#include "parplan/Driver/Placement.h"

#include "parplan/Cost/Collectives.h"
#include "parplan/Cost/Compute.h"
#include "parplan/Cost/Mesh.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

using namespace parplan;
using namespace parplan::driver;
using cost::Cluster;

namespace {

/// FLOP/s of one device of `type` at `dtype` as the cost model prices a
/// kernel (its efficiency), or at f32 where it has no peak for `dtype`.
double deviceSpeed(const cost::DeviceType &type, cost::ComputeType dtype) {
  std::optional<double> seconds = cost::computeTime(1e12, 0, type, dtype);
  if (!seconds)
    seconds = cost::computeTime(1e12, 0, type, cost::ComputeType::F32);
  return seconds && *seconds > 0 ? 1e12 / *seconds : 0;
}

/// The FLOP/s of one device of `node` (deviceSpeed).
double speedPerDevice(const Cluster &cluster, int64_t node,
                      cost::ComputeType dtype) {
  const cost::DeviceType *type = cluster.findDeviceType(
      cluster.nodes[static_cast<size_t>(node)].deviceType);
  return type ? deviceSpeed(*type, dtype) : 0;
}

} // namespace

double parplan::driver::nodeSpeed(const Cluster &cluster, int64_t node,
                                  cost::ComputeType dtype) {
  return static_cast<double>(cluster.nodes[static_cast<size_t>(node)].devices) *
         speedPerDevice(cluster, node, dtype);
}

std::vector<std::pair<std::string, std::vector<int64_t>>>
parplan::driver::regionsInOrder(const Cluster &cluster,
                                cost::ComputeType type) {
  auto numNodes = static_cast<int64_t>(cluster.nodes.size());
  std::vector<double> perDevice;
  for (int64_t n = 0; n < numNodes; ++n)
    perDevice.push_back(speedPerDevice(cluster, n, type));
  auto before = [&](int64_t a, int64_t b) {
    const cost::Node &x = cluster.nodes[static_cast<size_t>(a)];
    const cost::Node &y = cluster.nodes[static_cast<size_t>(b)];
    return std::make_tuple(-perDevice[static_cast<size_t>(a)], -x.devices,
                           x.name) <
           std::make_tuple(-perDevice[static_cast<size_t>(b)], -y.devices,
                           y.name);
  };
  // By region name, then (stable) by the region's speed.
  std::map<std::string, std::vector<int64_t>> regions;
  for (int64_t n = 0; n < numNodes; ++n)
    regions[cluster.nodes[static_cast<size_t>(n)].region].push_back(n);
  std::vector<std::pair<double, std::pair<std::string, std::vector<int64_t>>>>
      bySpeed;
  for (auto &[region, nodes] : regions) {
    std::sort(nodes.begin(), nodes.end(), before);
    double speed = 0;
    for (int64_t n : nodes)
      speed +=
          static_cast<double>(cluster.nodes[static_cast<size_t>(n)].devices) *
          perDevice[static_cast<size_t>(n)];
    bySpeed.push_back({speed, {region, std::move(nodes)}});
  }
  std::stable_sort(
      bySpeed.begin(), bySpeed.end(),
      [](const auto &a, const auto &b) { return a.first > b.first; });
  std::vector<std::pair<std::string, std::vector<int64_t>>> ordered;
  for (auto &[speed, region] : bySpeed)
    ordered.push_back(std::move(region));
  return ordered;
}

namespace {

/// The hops a path through regions pays: `next[a][b]` from a to the next
/// region b, and where the last stage sends back to the first (weights
/// tied between them), `back[last][first]` (empty: nothing sent back).
struct Hops {
  std::vector<std::vector<double>> next, back;
  size_t count() const { return next.size(); }
};

/// A path's cost: its slowest hop, then its hops summed.
struct PathCost {
  double slowest = 0, total = 0;
  bool operator<(const PathCost &other) const {
    return std::tie(slowest, total) < std::tie(other.slowest, other.total);
  }
};

PathCost costOf(const std::vector<size_t> &path, const Hops &hops) {
  PathCost cost;
  auto add = [&](double seconds) {
    cost.slowest = std::max(cost.slowest, seconds);
    cost.total += seconds;
  };
  for (size_t i = 1; i < path.size(); ++i)
    add(hops.next[path[i - 1]][path[i]]);
  if (!hops.back.empty() && path.size() > 1)
    add(hops.back[path.back()][path.front()]);
  return cost;
}

/// The path through every region whose hops, each at most `bound`, sum
/// least (Held-Karp's dynamic program over subsets, from each first
/// region); with !sumsToo, any path under the bound. Empty where none
/// keeps every hop under it; ties go to lower indices.
std::vector<size_t> leastPathUnder(const Hops &hops, double bound,
                                   bool sumsToo) {
  size_t count = hops.count();
  size_t subsets = size_t(1) << count;
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<size_t> best;
  double bestSum = kNone;
  // least[set][last]: the least sum of a path through `set` ending at
  // `last`.
  std::vector<double> least(subsets * count);
  std::vector<uint8_t> before(subsets * count);
  // Paths from any first region at once; with a hop back, which region is
  // first matters to the last hop: from each in turn.
  std::vector<std::optional<size_t>> firsts = {std::nullopt};
  if (!hops.back.empty()) {
    firsts.clear();
    for (size_t first = 0; first < count; ++first)
      firsts.push_back(first);
  }
  for (std::optional<size_t> first : firsts) {
    std::fill(least.begin(), least.end(), kNone);
    for (size_t p = 0; p < count; ++p)
      if (!first || p == *first)
        least[(size_t(1) << p) * count + p] = 0;
    for (size_t set = 1; set < subsets; ++set) {
      if (first && !(set & (size_t(1) << *first)))
        continue;
      for (size_t last = 0; last < count; ++last) {
        double here = least[set * count + last];
        if (here == kNone)
          continue;
        for (size_t next = 0; next < count; ++next) {
          double hop = hops.next[last][next];
          if (set & (size_t(1) << next) || hop > bound)
            continue;
          size_t grown = (set | (size_t(1) << next)) * count + next;
          double sum = sumsToo ? here + hop : 0;
          if (sum < least[grown]) {
            least[grown] = sum;
            before[grown] = static_cast<uint8_t>(last);
          }
        }
      }
    }
    size_t full = subsets - 1;
    for (size_t last = 0; last < count; ++last) {
      double sum = least[full * count + last];
      if (sum == kNone)
        continue;
      if (first && count > 1) {
        double back = hops.back[last][*first];
        if (back > bound)
          continue;
        sum += sumsToo ? back : 0;
      }
      if (sum >= bestSum)
        continue;
      bestSum = sum;
      best.clear();
      for (size_t set = full, at = last;;) {
        best.push_back(at);
        size_t rest = set & ~(size_t(1) << at);
        if (!rest)
          break;
        at = before[set * count + at];
        set = rest;
      }
      std::reverse(best.begin(), best.end());
      if (!sumsToo)
        return best;
    }
  }
  return best;
}

/// The path through every region of least PathCost: exact up to
/// kExactRegions, else the best nearest-neighbour path.
std::vector<size_t> leastPath(const Hops &hops) {
  constexpr size_t kExactRegions = 12;
  size_t count = hops.count();
  if (count <= kExactRegions) {
    // The least bound some path keeps every hop under, then the least sum
    // under it.
    std::vector<double> bounds;
    for (const auto *matrix : {&hops.next, &hops.back})
      for (size_t a = 0; a < matrix->size(); ++a)
        for (size_t b = 0; b < count; ++b)
          if (a != b)
            bounds.push_back((*matrix)[a][b]);
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    size_t low = 0, high = bounds.size() - 1;
    while (low < high) {
      size_t middle = (low + high) / 2;
      if (leastPathUnder(hops, bounds[middle], /*sumsToo=*/false).empty())
        low = middle + 1;
      else
        high = middle;
    }
    return leastPathUnder(hops, bounds[low], /*sumsToo=*/true);
  }
  std::vector<size_t> best;
  PathCost bestCost;
  for (size_t start = 0; start < count; ++start) {
    std::vector<size_t> path = {start};
    std::vector<bool> visited(count, false);
    visited[start] = true;
    while (path.size() < count) {
      std::optional<size_t> next;
      for (size_t p = 0; p < count; ++p)
        if (!visited[p] && (!next || hops.next[path.back()][p] <
                                         hops.next[path.back()][*next]))
          next = p;
      visited[*next] = true;
      path.push_back(*next);
    }
    PathCost cost = costOf(path, hops);
    if (best.empty() || cost < bestCost) {
      best = std::move(path);
      bestCost = cost;
    }
  }
  return best;
}

} // namespace

std::vector<std::pair<std::string, std::vector<int64_t>>>
parplan::driver::regionsAlongPath(const cost::ClusterIndex &index,
                                  const StepWork &work) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> regions =
      regionsInOrder(index.cluster(), work.type);
  if (regions.size() < 3 && work.loopBytes <= 0)
    return regions;
  size_t count = regions.size();
  Hops hops;
  hops.next.assign(count, std::vector<double>(count, 0));
  if (work.loopBytes > 0)
    hops.back.assign(count, std::vector<double>(count, 0));
  for (size_t a = 0; a < count; ++a)
    for (size_t b = 0; b < count; ++b) {
      if (a == b)
        continue;
      cost::Link link =
          index.link(index.firstDevice(regions[a].second.front()),
                     index.firstDevice(regions[b].second.front()));
      auto seconds = [&](double bytes) {
        return link.latency + (link.bandwidth > 0
                                   ? bytes / link.bandwidth
                                   : std::numeric_limits<double>::max());
      };
      hops.next[a][b] = seconds(work.crossingBytes);
      if (!hops.back.empty())
        hops.back[a][b] = seconds(work.loopBytes);
    }
  std::vector<size_t> path = leastPath(hops);
  // The end regionsInOrder lists first (the faster) leads.
  if (path.back() < path.front())
    std::reverse(path.begin(), path.end());
  std::vector<std::pair<std::string, std::vector<int64_t>>> along;
  for (size_t region : path)
    along.push_back(std::move(regions[region]));
  return along;
}

std::vector<int64_t>
parplan::driver::nodesAlongPath(const cost::ClusterIndex &index,
                                const StepWork &work) {
  std::vector<int64_t> nodes;
  for (const auto &[region, inRegion] : regionsAlongPath(index, work))
    nodes.insert(nodes.end(), inRegion.begin(), inRegion.end());
  return nodes;
}

std::vector<PlacementCandidate>
parplan::driver::placementCandidates(const cost::ClusterIndex &index,
                                     const StepWork &work) {
  using Kind = PlacementCandidate::Kind;
  const Cluster &cluster = index.cluster();
  std::vector<std::pair<std::string, std::vector<int64_t>>> ordered =
      regionsInOrder(cluster, work.type);
  auto regionName = [](const std::string &region) {
    return region.empty() ? std::string("the default region")
                          : "region " + region;
  };

  std::vector<PlacementCandidate> candidates;
  std::set<std::vector<int64_t>> seen;
  auto add = [&](Kind kind, std::vector<int64_t> nodes, std::string what) {
    std::vector<int64_t> key = nodes;
    std::sort(key.begin(), key.end());
    if (!seen.insert(key).second)
      return;
    PlacementCandidate candidate;
    candidate.kind = kind;
    candidate.nodes = std::move(nodes);
    candidate.what = std::move(what);
    for (int64_t n : candidate.nodes)
      candidate.devices += cluster.nodes[static_cast<size_t>(n)].devices;
    candidates.push_back(std::move(candidate));
  };
  for (const auto &[region, nodes] : ordered)
    for (int64_t n : nodes)
      add(Kind::Node, {n},
          "node " + cluster.nodes[static_cast<size_t>(n)].name);
  for (const auto &[region, nodes] : ordered) {
    // The region's device types, fastest first (its nodes' order).
    std::vector<std::string> types;
    for (int64_t n : nodes) {
      const std::string &t = cluster.nodes[static_cast<size_t>(n)].deviceType;
      if (std::find(types.begin(), types.end(), t) == types.end())
        types.push_back(t);
    }
    for (const std::string &t : types) {
      std::vector<int64_t> ofType;
      for (int64_t n : nodes)
        if (cluster.nodes[static_cast<size_t>(n)].deviceType == t)
          ofType.push_back(n);
      add(Kind::RegionType, ofType, regionName(region) + "'s " + t);
    }
    add(Kind::Region, nodes, regionName(region));
  }
  add(Kind::Everything, nodesAlongPath(index, work),
      "every node, region by region");
  return candidates;
}

cost::ComputeType
parplan::driver::stepComputeType(const std::string &mixedPrecision) {
  if (mixedPrecision == "bf16")
    return cost::ComputeType::BF16;
  if (mixedPrecision == "fp16")
    return cost::ComputeType::F16;
  return cost::ComputeType::F32;
}

std::vector<int64_t> parplan::driver::fastestTypeNodes(const Cluster &cluster,
                                                       cost::ComputeType type) {
  std::string fastest;
  double best = -1;
  for (const cost::DeviceType &device : cluster.deviceTypes) {
    bool used = llvm::any_of(cluster.nodes, [&](const cost::Node &node) {
      return node.deviceType == device.name;
    });
    double speed = deviceSpeed(device, type);
    if (used && (speed > best || (speed == best && device.name < fastest))) {
      best = speed;
      fastest = device.name;
    }
  }
  std::vector<int64_t> nodes;
  for (const auto &[region, inRegion] : regionsInOrder(cluster, type))
    for (int64_t node : inRegion)
      if (cluster.nodes[static_cast<size_t>(node)].deviceType == fastest)
        nodes.push_back(node);
  if (nodes.size() == cluster.nodes.size())
    nodes.clear();
  return nodes;
}

std::vector<int64_t>
parplan::driver::nodesGroupedByType(const Cluster &cluster,
                                    cost::ComputeType type) {
  std::vector<std::pair<double, std::string>> types;
  for (const cost::Node &node : cluster.nodes)
    if (llvm::none_of(types, [&](const auto &known) {
          return known.second == node.deviceType;
        })) {
      const cost::DeviceType *device = cluster.findDeviceType(node.deviceType);
      types.emplace_back(device ? deviceSpeed(*device, type) : 0,
                         node.deviceType);
    }
  // Fastest first, then by name, whatever order the file lists them in:
  // the fast devices' stages first (whale-v100-p100 listed P100s first
  // gave all 32 devices no plan faster than the V100s' alone, 193.25 ms
  // predicted, where V100s first predict 148.69 ms).
  llvm::sort(types, [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<int64_t> nodes;
  for (const auto &[speed, name] : types)
    for (size_t n = 0; n < cluster.nodes.size(); ++n)
      if (cluster.nodes[n].deviceType == name)
        nodes.push_back(static_cast<int64_t>(n));
  bool listedSo = true;
  for (size_t i = 0; i < nodes.size(); ++i)
    listedSo &= nodes[i] == static_cast<int64_t>(i);
  if (listedSo)
    nodes.clear();
  return nodes;
}

namespace {

/// A ring all-reduce of `bytes` over `node`'s devices at the slowest link
/// between two of them, as axisLink finds it, pair by pair from the index
/// (axisLink walks the whole cluster's overrides per call, and placement
/// asks per node of thousands).
double nodeAllReduceTime(const cost::ClusterIndex &index, int64_t node,
                         double bytes) {
  int64_t first = index.firstDevice(node);
  int64_t devices = index.cluster().nodes[static_cast<size_t>(node)].devices;
  if (devices < 2)
    return 0;
  cost::Link slowest{std::numeric_limits<double>::infinity(), 0};
  for (int64_t a = first; a < first + devices; ++a)
    for (int64_t b = a + 1; b < first + devices; ++b) {
      cost::Link link = index.link(a, b);
      slowest.bandwidth = std::min(slowest.bandwidth, link.bandwidth);
      slowest.latency = std::max(slowest.latency, link.latency);
    }
  return cost::collectiveTime(cost::Collective::AllReduce, devices, bytes,
                              slowest);
}

/// quickEstimate of a pipeline through `nodes` (two or more, of one device
/// type) in their order, a stage or more per node: every device busy,
/// since stages split the layers rather than the batch; each node's share
/// of the gradients reduced within it; the activations sent over every hop
/// both ways per step, behind the other micro-batches' compute, so the
/// slowest hop bounds the step rather than adds to it; and a tied
/// parameter's gradient and value exchanged between the last node and the
/// first, exposed. Infinite where the work does not say what crosses a cut
/// (crossingBytes 0), and on nodes of several types, whose stages by type
/// and memory the estimate cannot balance (region r1 of a generated
/// cluster, 35 devices of four types, came out at 3.1 s, where its plan
/// takes 14.8 s). `speed` and `bandwidth` are the nodes' together.
double pipelinedEstimate(const cost::ClusterIndex &index,
                         const std::vector<int64_t> &nodes,
                         const StepWork &work, double speed, double bandwidth) {
  const Cluster &cluster = index.cluster();
  auto typeOf = [&](int64_t node) -> const std::string & {
    return cluster.nodes[static_cast<size_t>(node)].deviceType;
  };
  if (nodes.size() < 2 || work.crossingBytes <= 0 ||
      llvm::any_of(nodes, [&](int64_t node) {
        return typeOf(node) != typeOf(nodes.front());
      }))
    return std::numeric_limits<double>::infinity();
  double compute = work.flops / speed + work.bytes / bandwidth;
  auto sent = [&](int64_t from, int64_t to, double bytes) {
    cost::Link link =
        index.link(index.firstDevice(from), index.firstDevice(to));
    return link.bandwidth > 0 ? link.latency + bytes / link.bandwidth
                              : std::numeric_limits<double>::infinity();
  };
  double slowestHop = 0, reduce = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i + 1 < nodes.size())
      slowestHop = std::max(
          slowestHop, 2 * sent(nodes[i], nodes[i + 1], work.crossingBytes));
    double share = nodeSpeed(cluster, nodes[i], work.type) / speed;
    reduce = std::max(reduce, nodeAllReduceTime(index, nodes[i],
                                                share * work.parameterBytes));
  }
  double loop = work.loopBytes > 0
                    ? 2 * sent(nodes.back(), nodes.front(), work.loopBytes)
                    : 0;
  return std::max(compute, slowestHop) + reduce + loop;
}

} // namespace

double parplan::driver::quickEstimate(const cost::ClusterIndex &index,
                                      const std::vector<int64_t> &nodes,
                                      const StepWork &work) {
  const Cluster &cluster = index.cluster();
  double speed = 0, memory = 0, bandwidth = 0;
  int64_t devices = 0;
  for (int64_t n : nodes) {
    const cost::Node &node = cluster.nodes[static_cast<size_t>(n)];
    speed += nodeSpeed(cluster, n, work.type);
    if (const cost::DeviceType *type =
            cluster.findDeviceType(node.deviceType)) {
      memory += static_cast<double>(node.devices) * type->memoryBytes;
      bandwidth += static_cast<double>(node.devices) * type->memoryBandwidth;
    }
    devices += node.devices;
  }
  if (speed <= 0 || bandwidth <= 0 || memory < 4 * work.parameterBytes)
    return std::numeric_limits<double>::infinity();
  double pipelined = pipelinedEstimate(index, nodes, work, speed, bandwidth);
  if (work.batch > 0) {
    int64_t busy = std::max<int64_t>(1, std::min(devices, work.batch));
    while (work.batch % busy != 0)
      --busy;
    double used = static_cast<double>(busy) / static_cast<double>(devices);
    speed *= used;
    bandwidth *= used;
  }
  double seconds = work.flops / speed + work.bytes / bandwidth;
  // The gradients' ring all-reduce over the slowest link of the ring: the
  // node's devices, or one device of each node.
  if (nodes.size() == 1)
    return seconds +
           nodeAllReduceTime(index, nodes.front(), work.parameterBytes);
  cost::DeviceMesh ring;
  for (int64_t n : nodes)
    ring.devices.push_back(index.firstDevice(n));
  ring.shape = {static_cast<int64_t>(ring.devices.size())};
  return std::min(
      pipelined,
      seconds + cost::collectiveTime(cost::Collective::AllReduce,
                                     ring.shape.front(), work.parameterBytes,
                                     cost::axisLink(cluster, ring, 0)));
}

std::vector<PlacementCandidate>
parplan::driver::placementsToTry(const cost::ClusterIndex &index,
                                 std::vector<PlacementCandidate> candidates,
                                 size_t count) {
  const Cluster &cluster = index.cluster();
  using Kind = PlacementCandidate::Kind;
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const PlacementCandidate &a, const PlacementCandidate &b) {
        return a.estimate < b.estimate;
      });
  std::vector<PlacementCandidate> chosen;
  std::vector<bool> taken(candidates.size(), false);
  // A node alike one taken would lay out the same plan.
  std::set<std::tuple<std::string, int64_t, double, double>> nodesTaken;
  auto alike = [&](const PlacementCandidate &candidate) {
    if (candidate.kind != Kind::Node)
      return std::make_tuple(std::string(), int64_t(-1), 0.0, 0.0);
    const cost::Node &node =
        cluster.nodes[static_cast<size_t>(candidate.nodes.front())];
    int64_t first = index.firstDevice(candidate.nodes.front());
    cost::Link within =
        node.devices > 1 ? index.link(first, first + 1) : cost::Link{};
    return std::make_tuple(node.deviceType, node.devices, within.bandwidth,
                           within.latency);
  };
  auto take = [&](auto matches) {
    for (size_t i = 0; i < candidates.size() && chosen.size() < count; ++i)
      if (!taken[i] && std::isfinite(candidates[i].estimate) &&
          matches(candidates[i]) &&
          (candidates[i].kind != Kind::Node ||
           !nodesTaken.count(alike(candidates[i])))) {
        taken[i] = true;
        if (candidates[i].kind == Kind::Node)
          nodesTaken.insert(alike(candidates[i]));
        chosen.push_back(candidates[i]);
        return;
      }
  };
  take([](const PlacementCandidate &c) { return c.kind == Kind::Node; });
  take([](const PlacementCandidate &c) {
    return c.kind == Kind::RegionType || c.kind == Kind::Region;
  });
  while (chosen.size() < count) {
    size_t before = chosen.size();
    take([](const PlacementCandidate &) { return true; });
    if (chosen.size() == before)
      break;
  }
  std::stable_sort(
      chosen.begin(), chosen.end(),
      [](const PlacementCandidate &a, const PlacementCandidate &b) {
        return a.estimate < b.estimate;
      });
  return chosen;
}
