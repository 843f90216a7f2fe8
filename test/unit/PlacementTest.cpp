//===- PlacementTest.cpp - groups of nodes a plan may be placed on --------===//

#include "parplan/Driver/Placement.h"
#include "parplan/Cost/Presets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
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
  std::vector<PlacementCandidate> candidates =
      placementCandidates(cluster, cost::ComputeType::F32);
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
    CHECK(namesOf(other, placementCandidates(other, cost::ComputeType::F32)) ==
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

TEST_CASE("the groups laid out: a node, a group in a region, the next best",
          "[placement]") {
  Cluster cluster = hulk();
  cost::ClusterIndex index(cluster);
  StepWork work;
  work.flops = 1e15;
  work.parameterBytes = 500e6;
  std::vector<PlacementCandidate> candidates =
      placementCandidates(cluster, work.type);
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
