//===- Mesh.cpp - logical device meshes over a cluster --------------------===//

#include "parplan/Cost/Mesh.h"

#include "parplan/Support/Sbp.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <set>

using namespace parplan::cost;

int64_t DeviceMesh::size() const { return parplan::meshSize(shape); }

std::string parplan::cost::formatMeshShape(const std::vector<int64_t> &shape) {
  std::string text;
  for (int64_t size : shape)
    text += (text.empty() ? "" : "x") + std::to_string(size);
  return text;
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

/// Calls `visit(a, b)` once per distinct pair of devices that share a group
/// along `axis`. Without device-pair overrides, the link and level of a pair
/// depend only on the two devices' nodes, so one pair per node pair is
/// enough.
template <typename Visit>
void forEachAxisPair(const Cluster &cluster, const DeviceMesh &mesh,
                     int64_t axis, Visit visit) {
  bool byNode = cluster.overrides.empty();
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const std::vector<int64_t> &group : axisGroups(mesh, axis))
    for (size_t i = 0; i < group.size(); ++i)
      for (size_t j = i + 1; j < group.size(); ++j) {
        int64_t a = group[i], b = group[j];
        if (byNode) {
          std::pair<int64_t, int64_t> nodes =
              std::minmax(cluster.nodeOf(a), cluster.nodeOf(b));
          if (!seen.insert(nodes).second)
            continue;
        }
        visit(a, b);
      }
}

} // namespace

Link parplan::cost::axisLink(const Cluster &cluster, const DeviceMesh &mesh,
                             int64_t axis) {
  Link slowest{std::numeric_limits<double>::infinity(), 0.0};
  forEachAxisPair(cluster, mesh, axis, [&](int64_t a, int64_t b) {
    Link link = cluster.link(a, b);
    slowest.bandwidth = std::min(slowest.bandwidth, link.bandwidth);
    slowest.latency = std::max(slowest.latency, link.latency);
  });
  return slowest;
}

LinkLevel parplan::cost::axisLevel(const Cluster &cluster,
                                   const DeviceMesh &mesh, int64_t axis) {
  LinkLevel highest = LinkLevel::Local;
  forEachAxisPair(cluster, mesh, axis, [&](int64_t a, int64_t b) {
    highest = std::max(highest, cluster.level(a, b));
  });
  return highest;
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
