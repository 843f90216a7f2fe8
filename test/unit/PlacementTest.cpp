//===- PlacementTest.cpp - groups of nodes a plan may be placed on --------===//

#include "parplan/Driver/Placement.h"
#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Collectives.h"
#include "parplan/Cost/Presets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

using namespace parplan;
using namespace parplan::driver;
using cost::Cluster;

namespace {

Cluster hulk() {
  std::string error;
  std::optional<Cluster> cluster = cost::resolveCluster("hulk-geo", error);
  REQUIRE(cluster);
  return *cluster;
}

/// `cluster` with its nodes listed in another order, the links that name
/// nodes following them.
Cluster shuffled(const Cluster &cluster, unsigned seed) {
  std::vector<int64_t> order(cluster.nodes.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  std::mt19937 random(seed);
  std::shuffle(order.begin(), order.end(), random);
  return cost::subCluster(cluster, order, cluster.name);
}

/// `regions` regions of two one-GPU machines each, the links between
/// regions of random bandwidth and latency (the same for the same seed).
Cluster randomWorld(size_t regions, unsigned seed) {
  Cluster world = hulk();
  world.name = "random world";
  world.nodes.clear();
  world.overrides.clear();
  world.nodeOverrides.clear();
  world.regionOverrides.clear();
  world.deviceTypes.resize(1);
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> gbits(0.1, 2), ms(5, 250);
  for (size_t r = 0; r < regions; ++r) {
    std::string region = "r" + std::to_string(r);
    for (int machine = 0; machine < 2; ++machine)
      world.nodes.push_back({region + "-" + std::to_string(machine),
                             world.deviceTypes.front().name, 1, region});
    for (size_t other = 0; other < r; ++other)
      world.regionOverrides.push_back(
          {"r" + std::to_string(other), region,
           cost::Link{gbits(random) * 1e9 / 8, ms(random) * 1e-3}});
  }
  REQUIRE_FALSE(cost::checkCluster(world));
  return world;
}

/// The regions of `along` by name.
std::vector<std::string> regionNames(
    const std::vector<std::pair<std::string, std::vector<int64_t>>> &along) {
  std::vector<std::string> names;
  for (const auto &[region, nodes] : along)
    names.push_back(region);
  return names;
}

/// A path's slowest hop and its hops summed, as regionsAlongPath weighs
/// them.
std::pair<double, double> pathCost(const cost::ClusterIndex &index,
                                   const std::vector<int64_t> &firstNodes,
                                   double bytes, double backBytes = 0) {
  double slowest = 0, total = 0;
  auto add = [&](int64_t from, int64_t to, double sent) {
    cost::Link link =
        index.link(index.firstDevice(from), index.firstDevice(to));
    double hop = link.latency + sent / link.bandwidth;
    slowest = std::max(slowest, hop);
    total += hop;
  };
  for (size_t i = 1; i < firstNodes.size(); ++i)
    add(firstNodes[i - 1], firstNodes[i], bytes);
  if (backBytes > 0)
    add(firstNodes.back(), firstNodes.front(), backBytes);
  return {slowest, total};
}

/// Each candidate as the names of its nodes, in its order.
std::vector<std::vector<std::string>>
namesOf(const Cluster &cluster,
        const std::vector<PlacementCandidate> &candidates) {
  std::vector<std::vector<std::string>> names;
  for (const PlacementCandidate &candidate : candidates) {
    names.emplace_back();
    for (int64_t node : candidate.nodes)
      names.back().push_back(cluster.nodes[static_cast<size_t>(node)].name);
  }
  return names;
}

} // namespace

TEST_CASE("subCluster keeps the links between the chosen devices",
          "[placement][cluster]") {
  Cluster cluster = hulk();
  // Nodes of three cities, out of order.
  std::vector<int64_t> nodes = {44, 3, 0, 30, 43};
  Cluster sub = cost::subCluster(cluster, nodes, "part");
  REQUIRE_FALSE(cost::checkCluster(sub));
  REQUIRE(sub.nodes.size() == nodes.size());
  std::vector<int64_t> original;
  for (int64_t node : nodes)
    for (int64_t d = 0; d < cluster.nodes[static_cast<size_t>(node)].devices;
         ++d)
      original.push_back(cluster.firstDevice(node) + d);
  REQUIRE(sub.numDevices() == static_cast<int64_t>(original.size()));
  for (int64_t a = 0; a < sub.numDevices(); ++a)
    for (int64_t b = 0; b < sub.numDevices(); ++b) {
      INFO("devices " << a << ", " << b);
      cost::Link mine = sub.link(a, b),
                 theirs = cluster.link(original[a], original[b]);
      CHECK(mine.bandwidth == theirs.bandwidth);
      CHECK(mine.latency == theirs.latency);
      CHECK(sub.deviceTypeOf(a).name == cluster.deviceTypeOf(original[a]).name);
    }
  // Only the device types its nodes use.
  std::set<std::string> used;
  for (const cost::Node &node : sub.nodes)
    used.insert(node.deviceType);
  CHECK(sub.deviceTypes.size() == used.size());
}

TEST_CASE("placement candidates do not depend on the order of the nodes",
          "[placement]") {
  Cluster cluster = hulk();
  StepWork work;
  work.crossingBytes = 100e6;
  std::vector<PlacementCandidate> candidates =
      placementCandidates(cost::ClusterIndex(cluster), work);
  // Every node alone, each region, each region's types, and everything.
  size_t nodes = 0, regions = 0, everything = 0;
  for (const PlacementCandidate &candidate : candidates) {
    nodes += candidate.kind == PlacementCandidate::Kind::Node;
    regions += candidate.kind == PlacementCandidate::Kind::Region;
    everything += candidate.kind == PlacementCandidate::Kind::Everything;
  }
  CHECK(nodes == cluster.nodes.size());
  CHECK(everything == 1);
  CHECK(regions > 0);
  CHECK(candidates.back().devices == cluster.numDevices());
  // No two groups of the same nodes.
  std::set<std::vector<int64_t>> distinct;
  for (PlacementCandidate candidate : candidates) {
    std::sort(candidate.nodes.begin(), candidate.nodes.end());
    CHECK(distinct.insert(candidate.nodes).second);
  }
  for (unsigned seed : {1u, 2u, 3u}) {
    Cluster other = shuffled(cluster, seed);
    CHECK(
        namesOf(other, placementCandidates(cost::ClusterIndex(other), work)) ==
        namesOf(cluster, candidates));
  }
}

TEST_CASE("quick estimates rank faster and better linked groups first",
          "[placement]") {
  Cluster cluster = hulk();
  cost::ClusterIndex index(cluster);
  StepWork work;
  work.flops = 1e14;
  work.parameterBytes = 1e9;
  // rome-44: 8 A100 80GB on NVLink; rome-41: 3 A40 on PCIe.
  double a100 = quickEstimate(index, {44}, work);
  double a40 = quickEstimate(index, {41}, work);
  CHECK(a100 < a40);
  // Two Rome nodes halve the compute but add a ring over 10 Gbit/s, longer
  // here; Rome and Beijing one over 100 Mbit/s: longer still.
  double rome = quickEstimate(index, {44, 43}, work);
  double world = quickEstimate(index, {44, 3}, work);
  CHECK(rome > a100);
  CHECK(world > rome);
  // A group whose memory cannot hold four copies of the parameters.
  work.parameterBytes = 1e12;
  CHECK(std::isinf(quickEstimate(index, {41}, work)));
}

TEST_CASE("quick estimates price a pipeline through nodes of one type",
          "[placement]") {
  Cluster cluster = hulk();
  cost::ClusterIndex index(cluster);
  StepWork work;
  work.flops = 1e16;
  work.parameterBytes = 20e9;
  // berlin-30 and berlin-31: 12 V100 each on NVLink, 10 Gbit/s between;
  // paris-37: 12 V100 in another country (100 Mbit/s).
  // Without what crosses a cut (crossingBytes 0), the ring's alone.
  double node = quickEstimate(index, {30}, work);
  double ringOnly = quickEstimate(index, {30, 31}, work);
  // The pipeline's terms as documented: the compute on every device, each
  // node's half of the gradients reduced on its own ring, a hop both ways.
  double compute = work.flops / (nodeSpeed(cluster, 30, work.type) +
                                 nodeSpeed(cluster, 31, work.type));
  int64_t first = index.firstDevice(30);
  double reduce = cost::collectiveTime(cost::Collective::AllReduce, 12,
                                       0.5 * work.parameterBytes,
                                       index.link(first, first + 1));
  auto hop = [&](int64_t a, int64_t b, double bytes) {
    cost::Link link = index.link(index.firstDevice(a), index.firstDevice(b));
    return 2 * (link.latency + bytes / link.bandwidth);
  };
  work.crossingBytes = 50e6;
  double piped = quickEstimate(index, {30, 31}, work);
  CHECK(piped < ringOnly);
  CHECK(piped < 0.6 * node);
  // A hop under the compute hides behind it.
  CHECK(hop(30, 31, work.crossingBytes) < compute);
  CHECK(piped == Approx(compute + reduce));
  // A hop over the compute bounds the step, both ways.
  work.crossingBytes = 30e9;
  REQUIRE(hop(30, 31, work.crossingBytes) > compute);
  double bounded = quickEstimate(index, {30, 31}, work);
  CHECK(bounded < ringOnly);
  CHECK(bounded == Approx(hop(30, 31, work.crossingBytes) + reduce));
  // A tied parameter's gradient and value cross back, exposed.
  work.loopBytes = 200e6;
  CHECK(quickEstimate(index, {30, 31}, work) ==
        Approx(bounded + hop(31, 30, work.loopBytes)));
  work.loopBytes = 0;
  // Between countries: a hop of 2 GB bounds the step and still beats the
  // ring over 100 Mbit/s; one of 20 GB does not, and the ring stands.
  work.crossingBytes = 0;
  double abroadRing = quickEstimate(index, {30, 37}, work);
  work.crossingBytes = 2e9;
  CHECK(quickEstimate(index, {30, 37}, work) ==
        Approx(hop(30, 37, work.crossingBytes) + reduce));
  CHECK(quickEstimate(index, {30, 37}, work) < abroadRing);
  work.crossingBytes = 20e9;
  CHECK(quickEstimate(index, {30, 37}, work) == abroadRing);
  // Nodes of two types: no pipeline estimate, the ring's alone.
  work.crossingBytes = 50e6;
  double mixed = quickEstimate(index, {44, 45}, work);
  work.crossingBytes = 0;
  CHECK(quickEstimate(index, {44, 45}, work) == mixed);
}

TEST_CASE("the groups laid out: a node, a group in a region, the next best",
          "[placement]") {
  Cluster cluster = hulk();
  cost::ClusterIndex index(cluster);
  StepWork work;
  work.flops = 1e15;
  work.parameterBytes = 500e6;
  std::vector<PlacementCandidate> candidates = placementCandidates(index, work);
  for (PlacementCandidate &candidate : candidates)
    candidate.estimate = quickEstimate(index, candidate.nodes, work);
  std::vector<PlacementCandidate> tried = placementsToTry(index, candidates, 3);
  REQUIRE(tried.size() == 3);
  CHECK(std::is_sorted(
      tried.begin(), tried.end(),
      [](const PlacementCandidate &a, const PlacementCandidate &b) {
        return a.estimate < b.estimate;
      }));
  CHECK(std::any_of(tried.begin(), tried.end(), [](const auto &c) {
    return c.kind == PlacementCandidate::Kind::Node;
  }));
  CHECK(std::any_of(tried.begin(), tried.end(), [](const auto &c) {
    return c.kind == PlacementCandidate::Kind::Region ||
           c.kind == PlacementCandidate::Kind::RegionType;
  }));
  // The best single node by estimate is among them.
  double bestNode = INFINITY;
  for (const PlacementCandidate &c : candidates)
    if (c.kind == PlacementCandidate::Kind::Node)
      bestNode = std::min(bestNode, c.estimate);
  CHECK(std::any_of(tried.begin(), tried.end(),
                    [&](const auto &c) { return c.estimate == bestNode; }));
  // Nothing that cannot fit.
  for (PlacementCandidate &candidate : candidates)
    candidate.estimate = INFINITY;
  CHECK(placementsToTry(index, candidates, 3).empty());
}

TEST_CASE("the regions along the path of fastest links", "[placement]") {
  std::string error;
  std::optional<Cluster> world = cost::resolveCluster(
      PARPLAN_SOURCE_DIR "/examples/clusters/world-8x8.yaml", error);
  REQUIRE(world);
  cost::ClusterIndex index(*world);
  StepWork work;
  work.crossingBytes = 134e6;
  // A model whose embedding is tied to its output layer sends it back from
  // the last stage to the first.
  bool tied = GENERATE(false, true);
  work.loopBytes = tied ? 131e6 : 0;
  INFO((tied ? "tied" : "untied") << " weights");
  auto along = regionsAlongPath(index, work);
  REQUIRE(along.size() == 8);
  std::vector<int64_t> firstNodes;
  for (const auto &[region, nodes] : along) {
    CHECK(nodes.size() == 8);
    firstNodes.push_back(nodes.front());
  }
  // Exact: no order of the 8 regions has a faster slowest hop, or the same
  // and faster hops in all.
  std::pair<double, double> found =
      pathCost(index, firstNodes, work.crossingBytes, work.loopBytes);
  std::vector<int64_t> order = firstNodes;
  std::sort(order.begin(), order.end());
  size_t orders = 0;
  do {
    std::pair<double, double> other =
        pathCost(index, order, work.crossingBytes, work.loopBytes);
    CHECK_FALSE(other.first < found.first * (1 - 1e-12));
    if (other.first == found.first)
      CHECK_FALSE(other.second < found.second * (1 - 1e-12));
    ++orders;
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(orders == 40320);
  // The file's order (oregon, virginia, ohio, tokyo, seoul, london, ...)
  // crosses Seoul-London at 0.3 Gbit/s; the path never takes a 0.3 link,
  // nor does the hop back from its last region to its first.
  CHECK(found.first < 131e6 / (0.3e9 / 8));
  // The same machines listed otherwise give the same path.
  for (unsigned seed : {1u, 2u}) {
    Cluster other = shuffled(*world, seed);
    CHECK(regionNames(regionsAlongPath(cost::ClusterIndex(other), work)) ==
          regionNames(along));
  }
  // Every node once, region by region.
  std::vector<int64_t> nodes = nodesAlongPath(index, work);
  REQUIRE(nodes.size() == world->nodes.size());
  std::vector<int64_t> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(world->nodes.size());
  std::iota(all.begin(), all.end(), 0);
  CHECK(sorted == all);
}

TEST_CASE("the path through many regions: nearest neighbours, no worse than "
          "any region order tried at random",
          "[placement]") {
  for (size_t regions : {size_t(9), size_t(20)}) {
    INFO(regions << " regions");
    Cluster world = randomWorld(regions, 7);
    cost::ClusterIndex index(world);
    StepWork work;
    work.crossingBytes = 50e6;
    auto along = regionsAlongPath(index, work);
    REQUIRE(along.size() == regions);
    std::vector<int64_t> firstNodes;
    for (const auto &[region, nodes] : along)
      firstNodes.push_back(nodes.front());
    std::pair<double, double> found =
        pathCost(index, firstNodes, work.crossingBytes);
    std::mt19937 random(11);
    std::vector<int64_t> order = firstNodes;
    for (int trial = 0; trial < 2000; ++trial) {
      std::shuffle(order.begin(), order.end(), random);
      std::pair<double, double> other =
          pathCost(index, order, work.crossingBytes);
      // Exact up to 14 regions; beyond, better than random orders.
      if (regions <= 14)
        CHECK_FALSE(other < found);
      else
        CHECK_FALSE(other.first < found.first);
    }
    CHECK(regionNames(regionsAlongPath(cost::ClusterIndex(shuffled(world, 3)),
                                       work)) == regionNames(along));
  }
}

TEST_CASE("nodes grouped by device type, the fastest type first",
          "[placement]") {
  std::string error;
  std::optional<Cluster> whale = cost::resolveCluster("whale-v100-p100", error);
  REQUIRE(whale);
  // Listed so already: nothing to regroup.
  CHECK(nodesGroupedByType(*whale, cost::ComputeType::F32).empty());
  // Two copies list V100, V100, P100, P100, then the same again.
  std::optional<Cluster> twice =
      cost::resolveCluster("whale-v100-p100x2", error);
  REQUIRE(twice);
  std::vector<int64_t> grouped =
      nodesGroupedByType(*twice, cost::ComputeType::F32);
  CHECK(grouped == std::vector<int64_t>{0, 1, 4, 5, 2, 3, 6, 7});
  // Listed P100 first: the V100s come first all the same, each type's
  // nodes in their listed order.
  Cluster reversed =
      cost::subCluster(*twice, {7, 6, 5, 4, 3, 2, 1, 0}, twice->name);
  std::vector<int64_t> regrouped =
      nodesGroupedByType(reversed, cost::ComputeType::F32);
  CHECK(regrouped == std::vector<int64_t>{2, 3, 6, 7, 0, 1, 4, 5});
  for (size_t i = 0; i < regrouped.size(); ++i)
    CHECK(reversed.nodes[static_cast<size_t>(regrouped[i])].deviceType ==
          (i < 4 ? "V100-SXM2-32GB" : "P100-PCIe-16GB"));
  // The whale preset listed P100s first, as a file of its nodes would.
  Cluster p100First = cost::subCluster(*whale, {2, 3, 0, 1}, whale->name);
  CHECK(nodesGroupedByType(p100First, cost::ComputeType::F32) ==
        std::vector<int64_t>{2, 3, 0, 1});
}

TEST_CASE("nodes grouped by device type: speed at the step's type, ties by "
          "name",
          "[placement]") {
  // A P100 outruns a T4 in f32 (9.3 against 8.1 TFLOP/s), a T4 the P100
  // in f16 (65 against 18.7); two types of one speed go by name.
  std::string error;
  std::optional<Cluster> cluster = cost::parseCluster(R"(name: mixed
device_types:
  - {name: T4, memory: 16 GB, memory_bandwidth: 320 GB/s, peak_flops: {f32: 8.1 TFLOP/s, f16: 65 TFLOP/s}}
  - {name: P100, memory: 16 GB, memory_bandwidth: 732 GB/s, peak_flops: {f32: 9.3 TFLOP/s, f16: 18.7 TFLOP/s}}
  - {name: B-twin, memory: 16 GB, memory_bandwidth: 320 GB/s, peak_flops: {f32: 1 TFLOP/s, f16: 1 TFLOP/s}}
  - {name: A-twin, memory: 16 GB, memory_bandwidth: 320 GB/s, peak_flops: {f32: 1 TFLOP/s, f16: 1 TFLOP/s}}
nodes:
  - {name: t4, device_type: T4, devices: 4}
  - {name: b, device_type: B-twin, devices: 1}
  - {name: p100, device_type: P100, devices: 4}
  - {name: a, device_type: A-twin, devices: 1}
links:
  intra_node: {bandwidth: 16 GB/s, latency: 5 us}
  inter_node: {bandwidth: 12.5 GB/s, latency: 5 us}
)",
                                                      "mixed.yaml", error);
  INFO(error);
  REQUIRE(cluster);
  CHECK(nodesGroupedByType(*cluster, cost::ComputeType::F32) ==
        std::vector<int64_t>{2, 0, 3, 1});
  CHECK(nodesGroupedByType(*cluster, cost::ComputeType::F16) ==
        std::vector<int64_t>{0, 2, 3, 1});
}
