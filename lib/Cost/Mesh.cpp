//===- Mesh.cpp - logical device meshes over a cluster --------------------===//

#include "parplan/Cost/Mesh.h"

#include "parplan/Sbp/Sbp.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

using namespace parplan::cost;

int64_t DeviceMesh::size() const { return parplan::meshSize(shape); }

std::string parplan::cost::formatMeshShape(const std::vector<int64_t> &shape) {
  std::string text;
  for (int64_t size : shape)
    text += (text.empty() ? "" : "x") + std::to_string(size);
  return text;
}

MeshPlacement
parplan::cost::placeMeshes(const Cluster &cluster,
                           const std::vector<const DeviceMesh *> &meshes) {
  int64_t perNode = cluster.nodes.empty() ? 0 : cluster.nodes.front().devices;
  bool alikeNodes = perNode > 0 && cluster.overrides.empty() &&
                    cluster.nodeOverrides.empty() &&
                    cluster.regionOverrides.empty();
  for (const Node &node : cluster.nodes)
    alikeNodes &= node.devices == perNode;
  int64_t numDevices = perNode * static_cast<int64_t>(cluster.nodes.size());
  MeshPlacement placement;
  std::vector<int64_t> nodes;
  if (alikeNodes) {
    for (const DeviceMesh *mesh : meshes)
      for (int64_t device : mesh->devices)
        nodes.push_back(device >= 0 && device < numDevices ? device / perNode
                                                           : -1);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    if (!nodes.empty() && nodes.front() >= 0) {
      placement.nodeShift = nodes.front();
      placement.deviceShift = placement.nodeShift * perNode;
    } else {
      nodes.clear();
    }
  }
  std::string &key = placement.key;
  for (const DeviceMesh *mesh : meshes) {
    key += formatMeshShape(mesh->shape) + ":";
    for (int64_t device : mesh->devices)
      key += std::to_string(device - placement.deviceShift) + ",";
    key += ";";
  }
  // Which of their nodes share a region: regions numbered by first
  // appearance.
  std::map<std::string, int64_t> regionNumbers;
  key += "regions:";
  for (int64_t node : nodes)
    key +=
        std::to_string(regionNumbers
                           .emplace(cluster.nodes[node].region,
                                    static_cast<int64_t>(regionNumbers.size()))
                           .first->second) +
        ",";
  return placement;
}

std::optional<std::string> parplan::cost::checkMesh(const Cluster &cluster,
                                                    const DeviceMesh &mesh) {
  if (mesh.shape.empty())
    return std::string("the mesh has no axes");
  int64_t size = 1;
  for (size_t i = 0; i < mesh.shape.size(); ++i) {
    if (mesh.shape[i] <= 0)
      return "mesh axis " + std::to_string(i) + " has size " +
             std::to_string(mesh.shape[i]) + "; every axis needs at least " +
             "one device";
    if (size > std::numeric_limits<int64_t>::max() / mesh.shape[i])
      return "mesh " + formatMeshShape(mesh.shape) + " is too large";
    size *= mesh.shape[i];
  }
  int64_t available = cluster.numDevices();
  if (size > available)
    return "mesh " + formatMeshShape(mesh.shape) + " needs " +
           std::to_string(size) + " devices but the cluster has " +
           std::to_string(available);
  if (static_cast<int64_t>(mesh.devices.size()) != size)
    return "mesh " + formatMeshShape(mesh.shape) + " has " +
           std::to_string(size) + " positions but lists " +
           std::to_string(mesh.devices.size()) + " devices";
  std::set<int64_t> seen;
  for (int64_t device : mesh.devices) {
    if (device < 0 || device >= available)
      return "device " + std::to_string(device) +
             " is out of range: the cluster has " + std::to_string(available) +
             " devices (0.." + std::to_string(available - 1) + ")";
    if (!seen.insert(device).second)
      return "device " + std::to_string(device) + " appears twice in the mesh";
  }
  return std::nullopt;
}

std::optional<DeviceMesh> parplan::cost::makeMesh(const Cluster &cluster,
                                                  std::vector<int64_t> shape,
                                                  std::string &error) {
  DeviceMesh mesh;
  mesh.shape = std::move(shape);
  // Fill in devices only for a shape that fits; checkMesh reports the rest.
  int64_t available = cluster.numDevices();
  int64_t size = 1;
  bool fits = !mesh.shape.empty();
  for (int64_t axis : mesh.shape) {
    if (axis <= 0 || size > available / axis) {
      fits = false;
      break;
    }
    size *= axis;
  }
  if (fits)
    for (int64_t device = 0; device < size; ++device)
      mesh.devices.push_back(device);
  if (std::optional<std::string> why = checkMesh(cluster, mesh)) {
    error = *why;
    return std::nullopt;
  }
  return mesh;
}

std::vector<int64_t> parplan::cost::defaultMeshShape(const Cluster &cluster) {
  int64_t perNode = cluster.nodes.empty() ? 0 : cluster.nodes.front().devices;
  bool uniform =
      std::all_of(cluster.nodes.begin(), cluster.nodes.end(),
                  [&](const Node &node) { return node.devices == perNode; });
  if (cluster.nodes.size() > 1 && uniform && perNode > 1)
    return {static_cast<int64_t>(cluster.nodes.size()), perNode};
  return {cluster.numDevices()};
}

std::vector<std::vector<int64_t>>
parplan::cost::axisGroups(const DeviceMesh &mesh, int64_t axis) {
  assert(axis >= 0 && axis < static_cast<int64_t>(mesh.shape.size()));
  std::vector<std::vector<int64_t>> groups;
  int64_t size = mesh.size();
  for (int64_t index = 0; index < size; ++index) {
    std::vector<int64_t> coordinate = meshCoordinate(mesh.shape, index);
    if (coordinate[axis] != 0)
      continue;
    std::vector<int64_t> group;
    for (int64_t k = 0; k < mesh.shape[axis]; ++k) {
      coordinate[axis] = k;
      group.push_back(mesh.devices[meshLinearIndex(mesh.shape, coordinate)]);
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

namespace {

using NodePair = std::pair<int64_t, int64_t>;

/// What the groups along one axis cross: the slowest link and the highest
/// level over every pair of devices of every group.
struct AxisSummary {
  Link slowest{std::numeric_limits<double>::infinity(), 0.0};
  LinkLevel highest = LinkLevel::Local;

  void add(const Link &link) {
    slowest.bandwidth = std::min(slowest.bandwidth, link.bandwidth);
    slowest.latency = std::max(slowest.latency, link.latency);
  }
};

/// The reference walk over every device pair of one group, for groups with a
/// device the cluster does not have (checkMesh rejects such meshes).
void walkPairs(const Cluster &cluster, const std::vector<int64_t> &group,
               AxisSummary &summary) {
  for (size_t i = 0; i < group.size(); ++i)
    for (size_t j = i + 1; j < group.size(); ++j) {
      summary.add(cluster.link(group[i], group[j]));
      summary.highest =
          std::max(summary.highest, cluster.level(group[i], group[j]));
    }
}

/// Summarizes the groups along `axis` without visiting every device pair.
///
/// The link of a device pair is its device-pair override if one names it,
/// else its node pair's link (a node-pair override, else its regions'
/// override, else the default of the level). So a node pair's link is
/// crossed when the group holds more device pairs across those two nodes
/// than device-pair overrides name; a region pair's link (its override or
/// its level's default) is crossed when the group holds more node pairs
/// across those regions than those with a node-pair override or with
/// every device pair overridden.
/// Per group this costs its size plus the overrides within it (or the
/// square of its distinct nodes, when that is less than the node-pair
/// overrides).
AxisSummary summarizeAxis(const Cluster &cluster, const DeviceMesh &mesh,
                          int64_t axis) {
  AxisSummary summary;
  std::vector<std::vector<int64_t>> groups = axisGroups(mesh, axis);

  // Device -> node by binary search over the nodes' last device ids.
  std::vector<int64_t> ends;
  int64_t total = 0;
  for (const Node &node : cluster.nodes)
    ends.push_back(total += node.devices);
  auto nodeOf = [&](int64_t device) -> int64_t {
    if (device < 0)
      return -1;
    auto it = std::upper_bound(ends.begin(), ends.end(), device);
    return it == ends.end() ? -1 : it - ends.begin();
  };
  std::map<std::string, int64_t> regionIds;
  std::vector<int64_t> regionOf;
  for (const Node &node : cluster.nodes)
    regionOf.push_back(
        regionIds.emplace(node.region, regionIds.size()).first->second);

  // The overrides that Cluster::link uses: the first of each pair.
  std::map<NodePair, Link> nodeLinks;
  for (const NodeLinkOverride &override : cluster.nodeOverrides)
    nodeLinks.emplace(std::minmax(override.nodeA, override.nodeB),
                      override.link);
  std::map<NodePair, Link> deviceLinks;
  for (const LinkOverride &override : cluster.overrides)
    if (override.deviceA != override.deviceB)
      deviceLinks.emplace(std::minmax(override.deviceA, override.deviceB),
                          override.link);
  // Device-pair overrides by the group that holds both devices.
  std::vector<std::vector<std::pair<NodePair, Link>>> groupDeviceLinks(
      groups.size());
  if (!deviceLinks.empty()) {
    std::unordered_map<int64_t, int64_t> groupOf;
    for (const auto &[devices, link] : deviceLinks) {
      groupOf.emplace(devices.first, -1);
      groupOf.emplace(devices.second, -1);
    }
    for (size_t g = 0; g < groups.size(); ++g)
      for (int64_t device : groups[g]) {
        auto it = groupOf.find(device);
        if (it != groupOf.end())
          it->second = static_cast<int64_t>(g);
      }
    for (const auto &[devices, link] : deviceLinks) {
      int64_t g = groupOf.at(devices.first);
      if (g >= 0 && g == groupOf.at(devices.second))
        groupDeviceLinks[g].emplace_back(devices, link);
    }
  }

  // A node pair's link without a node-pair override: its regions'
  // override, else the level's default.
  std::map<NodePair, Link> regionLinks;
  for (const RegionLinkOverride &override : cluster.regionOverrides) {
    auto a = regionIds.find(override.regionA),
         b = regionIds.find(override.regionB);
    if (a != regionIds.end() && b != regionIds.end())
      regionLinks.emplace(std::minmax(a->second, b->second), override.link);
  }
  auto regionLink = [&](int64_t regionA, int64_t regionB) -> const Link & {
    auto found = regionLinks.find(std::minmax(regionA, regionB));
    if (found != regionLinks.end())
      return found->second;
    return regionA == regionB ? cluster.interNode : cluster.interRegion;
  };
  auto defaultLink = [&](int64_t a, int64_t b) -> const Link & {
    if (a == b)
      return cluster.intraNode;
    return regionLink(regionOf[a], regionOf[b]);
  };

  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<int64_t> &group = groups[g];
    if (group.size() < 2)
      continue;
    // Devices of the group per node, distinct nodes per region.
    std::unordered_map<int64_t, int64_t> devicesOn;
    bool valid = true;
    for (int64_t device : group) {
      int64_t node = nodeOf(device);
      if (node < 0) {
        valid = false;
        break;
      }
      ++devicesOn[node];
    }
    if (!valid) {
      walkPairs(cluster, group, summary);
      continue;
    }
    std::map<int64_t, int64_t> nodesIn;
    int64_t multiDeviceNodes = 0;
    for (const auto &[node, count] : devicesOn) {
      ++nodesIn[regionOf[node]];
      multiDeviceNodes += count > 1;
    }
    int64_t numNodes = static_cast<int64_t>(devicesOn.size());
    // Node pairs per region pair: each pair's default link is its
    // regions' (regionLink).
    std::map<NodePair, int64_t> regionPairs;
    for (auto a = nodesIn.begin(); a != nodesIn.end(); ++a)
      for (auto b = a; b != nodesIn.end(); ++b) {
        int64_t pairs =
            a == b ? a->second * (a->second - 1) / 2 : a->second * b->second;
        if (pairs > 0)
          regionPairs[{a->first, b->first}] = pairs;
      }
    summary.highest =
        std::max(summary.highest, nodesIn.size() > 1 ? LinkLevel::InterRegion
                                  : numNodes > 1     ? LinkLevel::InterNode
                                                     : LinkLevel::IntraNode);

    // Node pairs whose link is not simply the level default: device-pair
    // overrides cover some of their device pairs, or a node-pair override
    // replaces the default.
    std::map<NodePair, int64_t> covered;
    for (const auto &[devices, link] : groupDeviceLinks[g]) {
      summary.add(link);
      ++covered[std::minmax(nodeOf(devices.first), nodeOf(devices.second))];
    }
    std::map<NodePair, const Link *> special;
    for (const auto &[nodes, count] : covered)
      special.emplace(nodes, nullptr);
    if (!nodeLinks.empty()) {
      if (numNodes * (numNodes + 1) / 2 <
          static_cast<int64_t>(nodeLinks.size())) {
        std::vector<int64_t> nodes;
        for (const auto &[node, count] : devicesOn)
          nodes.push_back(node);
        for (size_t i = 0; i < nodes.size(); ++i)
          for (size_t j = i; j < nodes.size(); ++j) {
            auto it = nodeLinks.find(std::minmax(nodes[i], nodes[j]));
            if (it != nodeLinks.end())
              special[it->first] = &it->second;
          }
      } else {
        for (const auto &[nodes, link] : nodeLinks)
          if (devicesOn.count(nodes.first) && devicesOn.count(nodes.second))
            special[nodes] = &link;
      }
    }
    int64_t specialIntra = 0;
    std::map<NodePair, int64_t> specialInRegions;
    for (const auto &[nodes, link] : special) {
      auto [a, b] = nodes;
      int64_t pairs = a == b ? devicesOn[a] * (devicesOn[a] - 1) / 2
                             : devicesOn[a] * devicesOn[b];
      if (pairs == 0)
        continue;
      if (a == b)
        ++specialIntra;
      else
        ++specialInRegions[std::minmax(regionOf[a], regionOf[b])];
      auto it = covered.find(nodes);
      if (pairs > (it == covered.end() ? 0 : it->second))
        summary.add(link ? *link : defaultLink(a, b));
    }
    if (multiDeviceNodes > specialIntra)
      summary.add(cluster.intraNode);
    for (const auto &[regions, pairs] : regionPairs) {
      auto it = specialInRegions.find(regions);
      if (pairs > (it == specialInRegions.end() ? 0 : it->second))
        summary.add(regionLink(regions.first, regions.second));
    }
  }
  return summary;
}

} // namespace

Link parplan::cost::axisLink(const Cluster &cluster, const DeviceMesh &mesh,
                             int64_t axis) {
  return summarizeAxis(cluster, mesh, axis).slowest;
}

LinkLevel parplan::cost::axisLevel(const Cluster &cluster,
                                   const DeviceMesh &mesh, int64_t axis) {
  return summarizeAxis(cluster, mesh, axis).highest;
}

DeviceMesh parplan::cost::subMesh(const DeviceMesh &mesh, int64_t axis,
                                  int64_t index) {
  assert(axis >= 0 && axis < static_cast<int64_t>(mesh.shape.size()));
  assert(index >= 0 && index < mesh.shape[axis]);
  DeviceMesh sub;
  sub.shape = mesh.shape;
  sub.shape.erase(sub.shape.begin() + axis);
  int64_t size = mesh.size();
  for (int64_t linear = 0; linear < size; ++linear)
    if (meshCoordinate(mesh.shape, linear)[axis] == index)
      sub.devices.push_back(mesh.devices[linear]);
  return sub;
}

std::optional<std::vector<DeviceMesh>>
parplan::cost::splitMesh(const DeviceMesh &mesh, int64_t parts,
                         std::string &error) {
  if (mesh.shape.empty()) {
    error = "a mesh without axes has no first axis to split";
    return std::nullopt;
  }
  if (parts < 1 || mesh.shape.front() % parts != 0) {
    error = std::to_string(parts) + " parts do not divide the first axis of " +
            "mesh " + formatMeshShape(mesh.shape) + " (" +
            std::to_string(mesh.shape.front()) + ") into equal blocks";
    return std::nullopt;
  }
  // Row-major: the devices at first coordinate c are one contiguous run.
  int64_t block = mesh.size() / parts;
  std::vector<DeviceMesh> blocks(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    blocks[p].shape = mesh.shape;
    blocks[p].shape.front() /= parts;
    blocks[p].devices.assign(mesh.devices.begin() + p * block,
                             mesh.devices.begin() + (p + 1) * block);
  }
  return blocks;
}

std::optional<std::vector<int64_t>>
parplan::cost::parseMeshShape(const std::string &text, std::string &error) {
  std::vector<int64_t> shape;
  size_t start = 0;
  while (true) {
    size_t end = text.find('x', start);
    std::string part = text.substr(
        start, end == std::string::npos ? std::string::npos : end - start);
    bool digits = !part.empty() && part.size() <= 12 &&
                  std::all_of(part.begin(), part.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      error = "invalid mesh shape '" + text +
              "': expected positive sizes separated by 'x', such as 2x4";
      return std::nullopt;
    }
    int64_t size = std::stoll(part);
    if (size <= 0) {
      error = "invalid mesh shape '" + text + "': axis " +
              std::to_string(shape.size()) + " has size 0";
      return std::nullopt;
    }
    shape.push_back(size);
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return shape;
}
