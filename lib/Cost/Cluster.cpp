//===- Cluster.cpp - devices, nodes and links of a cluster ----------------===//

#include "parplan/Cost/Cluster.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <tuple>

using namespace parplan::cost;

const char *parplan::cost::toString(ComputeType dtype) {
  switch (dtype) {
  case ComputeType::F64:
    return "f64";
  case ComputeType::F32:
    return "f32";
  case ComputeType::TF32:
    return "tf32";
  case ComputeType::BF16:
    return "bf16";
  case ComputeType::F16:
    return "f16";
  case ComputeType::I8:
    return "i8";
  }
  return "f32";
}

std::optional<ComputeType>
parplan::cost::parseComputeType(const std::string &text) {
  for (ComputeType dtype :
       {ComputeType::F64, ComputeType::F32, ComputeType::TF32,
        ComputeType::BF16, ComputeType::F16, ComputeType::I8})
    if (text == toString(dtype))
      return dtype;
  return std::nullopt;
}

int64_t parplan::cost::byteWidth(ComputeType dtype) {
  switch (dtype) {
  case ComputeType::F64:
    return 8;
  case ComputeType::F32:
  case ComputeType::TF32:
    return 4;
  case ComputeType::BF16:
  case ComputeType::F16:
    return 2;
  case ComputeType::I8:
    return 1;
  }
  return 4;
}

const char *parplan::cost::toString(LinkLevel level) {
  switch (level) {
  case LinkLevel::Local:
    return "local";
  case LinkLevel::IntraNode:
    return "intra-node";
  case LinkLevel::InterNode:
    return "inter-node";
  case LinkLevel::InterRegion:
    return "inter-region";
  }
  return "local";
}

int64_t Cluster::numDevices() const {
  int64_t count = 0;
  for (const Node &node : nodes)
    count += node.devices;
  return count;
}

int64_t Cluster::nodeOf(int64_t device) const {
  if (device < 0)
    return -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (device < nodes[i].devices)
      return static_cast<int64_t>(i);
    device -= nodes[i].devices;
  }
  return -1;
}

int64_t Cluster::firstDevice(int64_t node) const {
  int64_t first = 0;
  for (int64_t i = 0; i < node && i < static_cast<int64_t>(nodes.size()); ++i)
    first += nodes[i].devices;
  return first;
}

const DeviceType *Cluster::findDeviceType(const std::string &typeName) const {
  for (const DeviceType &type : deviceTypes)
    if (type.name == typeName)
      return &type;
  return nullptr;
}

const DeviceType &Cluster::deviceTypeOf(int64_t device) const {
  int64_t node = nodeOf(device);
  const DeviceType *type =
      node < 0 ? nullptr : findDeviceType(nodes[node].deviceType);
  if (!type) {
    // A precondition (checkCluster passes, the device exists) is broken.
    assert(false && "device out of range or device type not defined");
    std::abort();
  }
  return *type;
}

bool Cluster::ofOneType(llvm::ArrayRef<int64_t> devices) const {
  return llvm::all_of(devices, [&](int64_t device) {
    return deviceTypeOf(device).name == deviceTypeOf(devices.front()).name;
  });
}

namespace {

/// The level joining devices `a` and `b` of nodes `nodeA` and `nodeB` (-1
/// for a device off the cluster); `sameRegion` tells whether two nodes of
/// the cluster share a region.
template <typename SameRegion>
LinkLevel levelBetween(int64_t a, int64_t b, int64_t nodeA, int64_t nodeB,
                       SameRegion sameRegion) {
  if (a == b)
    return LinkLevel::Local;
  if (nodeA == nodeB)
    return LinkLevel::IntraNode;
  if (nodeA < 0 || nodeB < 0 || !sameRegion(nodeA, nodeB))
    return LinkLevel::InterRegion;
  return LinkLevel::InterNode;
}

/// The link of a level when no override names the pair.
const Link &levelLink(const Cluster &cluster, LinkLevel level) {
  switch (level) {
  case LinkLevel::Local:
  case LinkLevel::IntraNode:
    return cluster.intraNode;
  case LinkLevel::InterNode:
    return cluster.interNode;
  case LinkLevel::InterRegion:
    return cluster.interRegion;
  }
  return cluster.interRegion;
}

} // namespace

LinkLevel Cluster::level(int64_t a, int64_t b) const {
  return levelBetween(a, b, nodeOf(a), nodeOf(b),
                      [&](int64_t nodeA, int64_t nodeB) {
                        return nodes[nodeA].region == nodes[nodeB].region;
                      });
}

Link Cluster::link(int64_t a, int64_t b) const {
  if (a == b)
    return Link{std::numeric_limits<double>::infinity(), 0.0};
  for (const LinkOverride &override : overrides)
    if ((override.deviceA == a && override.deviceB == b) ||
        (override.deviceA == b && override.deviceB == a))
      return override.link;
  int64_t nodeA = nodeOf(a), nodeB = nodeOf(b);
  for (const NodeLinkOverride &override : nodeOverrides)
    if ((override.nodeA == nodeA && override.nodeB == nodeB) ||
        (override.nodeA == nodeB && override.nodeB == nodeA))
      return override.link;
  if (nodeA >= 0 && nodeB >= 0 && nodeA != nodeB)
    return linkBetweenNodes(nodeA, nodeB);
  return levelLink(*this, level(a, b));
}

Link Cluster::linkBetweenNodes(int64_t nodeA, int64_t nodeB) const {
  const std::string &regionA = nodes[static_cast<size_t>(nodeA)].region;
  const std::string &regionB = nodes[static_cast<size_t>(nodeB)].region;
  for (const RegionLinkOverride &override : regionOverrides)
    if ((override.regionA == regionA && override.regionB == regionB) ||
        (override.regionA == regionB && override.regionB == regionA))
      return override.link;
  return regionA == regionB ? interNode : interRegion;
}

ClusterIndex::ClusterIndex(const Cluster &cluster) : indexed(&cluster) {
  std::map<std::string, int64_t> regionIds;
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    const Node &node = cluster.nodes[n];
    firsts.push_back(static_cast<int64_t>(nodes.size()));
    nodes.insert(nodes.end(),
                 static_cast<size_t>(std::max<int64_t>(node.devices, 0)),
                 static_cast<int64_t>(n));
    regions.push_back(
        regionIds.emplace(node.region, static_cast<int64_t>(regionIds.size()))
            .first->second);
  }
  for (const LinkOverride &override : cluster.overrides)
    deviceLinks.try_emplace(std::minmax(override.deviceA, override.deviceB),
                            override.link);
  for (const NodeLinkOverride &override : cluster.nodeOverrides)
    nodeLinks.try_emplace(std::minmax(override.nodeA, override.nodeB),
                          override.link);
  for (const RegionLinkOverride &override : cluster.regionOverrides) {
    auto a = regionIds.find(override.regionA),
         b = regionIds.find(override.regionB);
    if (a != regionIds.end() && b != regionIds.end())
      regionLinks.try_emplace(std::minmax(a->second, b->second), override.link);
  }
  // The link between two devices of two nodes, looked up once per pair of
  // nodes where they are few enough (placement and the cross-mesh planner
  // ask for it millions of times): from each node's first device to the
  // other's (its second within one node).
  constexpr size_t kTabledNodes = 256;
  size_t count = firsts.size();
  if (count > kTabledNodes)
    return;
  nodePairs.assign(count * count, Link{});
  for (size_t x = 0; x < count; ++x)
    for (size_t y = 0; y < count; ++y) {
      int64_t a = firsts[x], b = firsts[y] + (x == y ? 1 : 0);
      nodePairs[x * count + y] = nodePairLink(a, b);
    }
}

LinkLevel ClusterIndex::level(int64_t a, int64_t b) const {
  return levelBetween(a, b, nodeOf(a), nodeOf(b),
                      [&](int64_t nodeA, int64_t nodeB) {
                        return regionOf(nodeA) == regionOf(nodeB);
                      });
}

Link ClusterIndex::link(int64_t a, int64_t b) const {
  if (a == b)
    return Link{std::numeric_limits<double>::infinity(), 0.0};
  if (!deviceLinks.empty()) {
    auto found = deviceLinks.find(std::minmax(a, b));
    if (found != deviceLinks.end())
      return found->second;
  }
  int64_t nodeA = nodeOf(a), nodeB = nodeOf(b);
  if (!nodePairs.empty() && nodeA >= 0 && nodeB >= 0)
    return nodePairs[static_cast<size_t>(nodeA) * firsts.size() +
                     static_cast<size_t>(nodeB)];
  return nodePairLink(a, b);
}

double ClusterIndex::leastLatency(const std::vector<int64_t> &from,
                                  const std::vector<int64_t> &to) const {
  double least = std::numeric_limits<double>::infinity();
  if (!deviceLinks.empty()) {
    for (int64_t a : from)
      for (int64_t b : to)
        least = std::min(least, link(a, b).latency);
    return least;
  }
  // A device of each node (its own number for none), and whether the
  // meshes share a device (link() of a device to itself has no latency).
  auto representatives = [&](const std::vector<int64_t> &devices) {
    std::map<int64_t, int64_t> byNode;
    for (int64_t device : devices)
      byNode.try_emplace(nodeOf(device), device);
    return byNode;
  };
  std::map<int64_t, int64_t> fromNodes = representatives(from),
                             toNodes = representatives(to);
  std::vector<int64_t> sorted = from;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t device : to)
    if (std::binary_search(sorted.begin(), sorted.end(), device))
      return 0;
  // Without device-pair overrides, distinct devices of two nodes (or of
  // one) are linked alike.
  for (const auto &[nodeA, a] : fromNodes)
    for (const auto &[nodeB, b] : toNodes)
      least = std::min(least, link(a, b).latency);
  return least;
}

Link ClusterIndex::nodePairLink(int64_t a, int64_t b) const {
  int64_t nodeA = nodeOf(a), nodeB = nodeOf(b);
  if (!nodeLinks.empty()) {
    auto found = nodeLinks.find(std::minmax(nodeA, nodeB));
    if (found != nodeLinks.end())
      return found->second;
  }
  if (!regionLinks.empty() && nodeA >= 0 && nodeB >= 0 && nodeA != nodeB) {
    auto found =
        regionLinks.find(std::minmax(regionOf(nodeA), regionOf(nodeB)));
    if (found != regionLinks.end())
      return found->second;
  }
  return levelLink(*indexed, level(a, b));
}

namespace {

bool positive(double value) { return std::isfinite(value) && value > 0; }

std::optional<std::string> checkLink(const Link &link,
                                     const std::string &what) {
  if (!positive(link.bandwidth))
    return what + ": bandwidth must be positive";
  if (!std::isfinite(link.latency) || link.latency < 0)
    return what + ": latency must be non-negative";
  return std::nullopt;
}

} // namespace

Cluster parplan::cost::subCluster(const Cluster &cluster,
                                  const std::vector<int64_t> &nodes,
                                  const std::string &name) {
  Cluster sub;
  sub.name = name;
  sub.description = cluster.description;
  sub.source = cluster.source;
  sub.intraNode = cluster.intraNode;
  sub.interNode = cluster.interNode;
  sub.interRegion = cluster.interRegion;
  // Old node and device ids to new ones.
  ClusterIndex index(cluster);
  std::map<int64_t, int64_t> nodeIds, deviceIds;
  std::set<std::string> regions;
  int64_t devices = 0;
  for (int64_t node : nodes) {
    if (!nodeIds.emplace(node, static_cast<int64_t>(sub.nodes.size())).second)
      continue;
    sub.nodes.push_back(cluster.nodes[static_cast<size_t>(node)]);
    regions.insert(sub.nodes.back().region);
    for (int64_t d = 0; d < sub.nodes.back().devices; ++d)
      deviceIds.emplace(index.firstDevice(node) + d, devices++);
  }
  // In the order its nodes first use them: the same nodes in the same
  // order give the same cluster, whatever order `cluster` lists its types.
  for (const Node &node : sub.nodes)
    if (const DeviceType *type = cluster.findDeviceType(node.deviceType);
        type && !sub.findDeviceType(node.deviceType))
      sub.deviceTypes.push_back(*type);
  for (const LinkOverride &link : cluster.overrides) {
    auto a = deviceIds.find(link.deviceA), b = deviceIds.find(link.deviceB);
    if (a != deviceIds.end() && b != deviceIds.end())
      sub.overrides.push_back({std::min(a->second, b->second),
                               std::max(a->second, b->second), link.link});
  }
  for (const NodeLinkOverride &link : cluster.nodeOverrides) {
    auto a = nodeIds.find(link.nodeA), b = nodeIds.find(link.nodeB);
    if (a != nodeIds.end() && b != nodeIds.end())
      sub.nodeOverrides.push_back({std::min(a->second, b->second),
                                   std::max(a->second, b->second), link.link});
  }
  for (const RegionLinkOverride &link : cluster.regionOverrides)
    if (regions.count(link.regionA) && regions.count(link.regionB))
      sub.regionOverrides.push_back({std::min(link.regionA, link.regionB),
                                     std::max(link.regionA, link.regionB),
                                     link.link});
  // Links by the pairs they join (each written lesser end first), not by
  // the order `cluster` lists them (stable: of two naming one pair, the
  // first still wins).
  std::stable_sort(sub.overrides.begin(), sub.overrides.end(),
                   [](const LinkOverride &x, const LinkOverride &y) {
                     return std::tie(x.deviceA, x.deviceB) <
                            std::tie(y.deviceA, y.deviceB);
                   });
  std::stable_sort(sub.nodeOverrides.begin(), sub.nodeOverrides.end(),
                   [](const NodeLinkOverride &x, const NodeLinkOverride &y) {
                     return std::tie(x.nodeA, x.nodeB) <
                            std::tie(y.nodeA, y.nodeB);
                   });
  std::stable_sort(
      sub.regionOverrides.begin(), sub.regionOverrides.end(),
      [](const RegionLinkOverride &x, const RegionLinkOverride &y) {
        return std::tie(x.regionA, x.regionB) < std::tie(y.regionA, y.regionB);
      });
  return sub;
}

std::optional<std::pair<int64_t, int64_t>>
parplan::cost::nodesOnLevelDefault(const Cluster &cluster, bool sameRegion) {
  std::set<std::pair<std::string, std::string>> covered;
  for (const RegionLinkOverride &override : cluster.regionOverrides)
    covered.insert(std::minmax(override.regionA, override.regionB));
  // Per region, its first node, in order of first appearance.
  std::map<std::string, int64_t> firstIn;
  std::vector<int64_t> firsts;
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    const std::string &region = cluster.nodes[n].region;
    auto [it, inserted] = firstIn.emplace(region, static_cast<int64_t>(n));
    if (inserted)
      firsts.push_back(static_cast<int64_t>(n));
    else if (sameRegion && !covered.count({region, region}))
      return std::make_pair(it->second, static_cast<int64_t>(n));
  }
  if (sameRegion)
    return std::nullopt;
  for (size_t i = 0; i < firsts.size(); ++i)
    for (size_t j = i + 1; j < firsts.size(); ++j)
      if (!covered.count(std::minmax(
              cluster.nodes[static_cast<size_t>(firsts[i])].region,
              cluster.nodes[static_cast<size_t>(firsts[j])].region)))
        return std::make_pair(firsts[i], firsts[j]);
  return std::nullopt;
}

std::optional<std::string> parplan::cost::checkCluster(const Cluster &cluster) {
  std::set<std::string> typeNames;
  for (const DeviceType &type : cluster.deviceTypes) {
    std::string what = "device type '" + type.name + "'";
    if (type.name.empty())
      return std::string("a device type has no name");
    if (!typeNames.insert(type.name).second)
      return what + " is defined twice";
    if (!positive(type.memoryBytes))
      return what + ": memory must be positive";
    if (!positive(type.memoryBandwidth))
      return what + ": memory bandwidth must be positive";
    if (!std::isfinite(type.kernelOverhead) || type.kernelOverhead < 0)
      return what + ": kernel overhead must be non-negative";
    if (type.peakFlops.empty())
      return what + ": no peak FLOP/s given";
    for (const auto &[dtype, flops] : type.peakFlops)
      if (!positive(flops))
        return what + ": peak " + toString(dtype) + " FLOP/s must be positive";
  }
  if (cluster.nodes.empty())
    return std::string("the cluster has no nodes");
  std::set<std::string> nodeNames, regions;
  bool multiDeviceNode = false, sharedRegion = false;
  for (const Node &node : cluster.nodes) {
    std::string what = "node '" + node.name + "'";
    if (node.name.empty())
      return std::string("a node has no name");
    if (!nodeNames.insert(node.name).second)
      return what + " is defined twice";
    if (node.devices <= 0)
      return what + ": device count must be positive";
    if (!cluster.findDeviceType(node.deviceType))
      return what + ": device type '" + node.deviceType + "' is not defined";
    multiDeviceNode |= node.devices > 1;
    sharedRegion |= !regions.insert(node.region).second;
  }
  if (multiDeviceNode)
    if (auto error = checkLink(cluster.intraNode, "intra-node link"))
      return error;
  if (sharedRegion && nodesOnLevelDefault(cluster, /*sameRegion=*/true))
    if (auto error = checkLink(cluster.interNode, "inter-node link"))
      return error;
  if (regions.size() > 1 && nodesOnLevelDefault(cluster, /*sameRegion=*/false))
    if (auto error = checkLink(cluster.interRegion, "inter-region link"))
      return error;
  std::set<std::pair<std::string, std::string>> regionPairs;
  for (const RegionLinkOverride &override : cluster.regionOverrides) {
    std::string what =
        "region link '" + override.regionA + "'-'" + override.regionB + "'";
    for (const std::string *region : {&override.regionA, &override.regionB})
      if (!regions.count(*region))
        return what + ": no node is in region '" + *region + "'";
    if (!regionPairs.insert(std::minmax(override.regionA, override.regionB))
             .second)
      return what + " is given twice";
    if (auto error = checkLink(override.link, what))
      return error;
  }
  int64_t devices = cluster.numDevices();
  for (const LinkOverride &override : cluster.overrides) {
    std::string what = "device link " + std::to_string(override.deviceA) + "-" +
                       std::to_string(override.deviceB);
    for (int64_t device : {override.deviceA, override.deviceB})
      if (device < 0 || device >= devices)
        return what + ": device " + std::to_string(device) +
               " is out of range (the cluster has " + std::to_string(devices) +
               " devices)";
    if (override.deviceA == override.deviceB)
      return what + " joins a device to itself";
    if (auto error = checkLink(override.link, what))
      return error;
  }
  int64_t numNodes = static_cast<int64_t>(cluster.nodes.size());
  for (const NodeLinkOverride &override : cluster.nodeOverrides) {
    std::string what = "node link " + std::to_string(override.nodeA) + "-" +
                       std::to_string(override.nodeB);
    for (int64_t node : {override.nodeA, override.nodeB})
      if (node < 0 || node >= numNodes)
        return what + ": node " + std::to_string(node) +
               " is out of range (the cluster has " + std::to_string(numNodes) +
               " nodes)";
    if (auto error = checkLink(override.link, what))
      return error;
  }
  return std::nullopt;
}
