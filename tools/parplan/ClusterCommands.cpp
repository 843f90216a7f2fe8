//===- ClusterCommands.cpp - parplan clusters, cluster show, generate -----===//

#include "Commands.h"
#include "ModelFiles.h"

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Cost/Presets.h"

#include "llvm/ADT/StringRef.h"

#include <fmt/core.h>

#include <cmath>
#include <set>

using namespace parplan::cost;

namespace {

/// "450 GB/s", "12.5 MB/s".
std::string formatBandwidth(double bytesPerSecond) {
  if (!std::isfinite(bytesPerSecond))
    return "unlimited";
  if (bytesPerSecond >= 1e9)
    return fmt::format("{:g} GB/s", bytesPerSecond / 1e9);
  return fmt::format("{:g} MB/s", bytesPerSecond / 1e6);
}

/// "2 us", "10 ms".
std::string formatLatency(double seconds) {
  if (seconds >= 1)
    return fmt::format("{:g} s", seconds);
  if (seconds >= 1e-3)
    return fmt::format("{:g} ms", seconds * 1e3);
  return fmt::format("{:g} us", seconds * 1e6);
}

std::string formatRange(int64_t first, int64_t count) {
  return count == 1 ? std::to_string(first)
                    : fmt::format("{}-{}", first, first + count - 1);
}

/// Prints an error of the cluster library: "FILE:LINE:COL: error: message"
/// when it has a position in `path`, else "parplan: error: message".
void printError(const std::string &error, const std::string &path) {
  llvm::StringRef rest(error);
  if (!path.empty() && rest.consume_front(path + ":")) {
    unsigned line = 0, column = 0;
    llvm::StringRef lineText, columnText;
    std::tie(lineText, rest) = rest.split(':');
    std::tie(columnText, rest) = rest.split(':');
    if (!lineText.getAsInteger(10, line) &&
        !columnText.getAsInteger(10, column) && rest.consume_front(" ")) {
      fmt::print(stderr, "{}:{}:{}: error: {}\n", path, line, column,
                 rest.str());
      return;
    }
  }
  fmt::print(stderr, "parplan: error: {}\n", error);
}

/// Which levels a cluster's device pairs can cross.
std::set<LinkLevel> usedLevels(const Cluster &cluster) {
  std::set<LinkLevel> levels;
  for (const Node &node : cluster.nodes)
    if (node.devices > 1)
      levels.insert(LinkLevel::IntraNode);
  // A level's default is crossed where some node pair of it has no
  // region link.
  if (nodesOnLevelDefault(cluster, /*sameRegion=*/true))
    levels.insert(LinkLevel::InterNode);
  if (nodesOnLevelDefault(cluster, /*sameRegion=*/false))
    levels.insert(LinkLevel::InterRegion);
  return levels;
}

/// The device types of the nodes, in order, the first two by name.
std::string deviceTypeList(const Cluster &cluster) {
  std::vector<std::string> types;
  std::set<std::string> seen;
  for (const Node &node : cluster.nodes)
    if (seen.insert(node.deviceType).second)
      types.push_back(node.deviceType);
  std::string names;
  for (size_t i = 0; i < types.size() && i < 2; ++i)
    names += (i ? ", " : "") + types[i];
  if (types.size() > 2)
    names += fmt::format(" +{} more", types.size() - 2);
  return names;
}

} // namespace

int parplan::cli::runClusters() {
  std::vector<Cluster> clusters;
  size_t nameWidth = 4, typesWidth = 12;
  for (const std::string &name : presetNames()) {
    clusters.push_back(*preset(name));
    nameWidth = std::max(nameWidth, name.size());
    typesWidth = std::max(typesWidth, deviceTypeList(clusters.back()).size());
  }
  fmt::print("{:<{}}  {:>7}  {:>5}  {:<{}}  {}\n", "NAME", nameWidth, "DEVICES",
             "NODES", "DEVICE TYPES", typesWidth, "DESCRIPTION");
  for (const Cluster &cluster : clusters)
    fmt::print("{:<{}}  {:>7}  {:>5}  {:<{}}  {}\n", cluster.name, nameWidth,
               cluster.numDevices(), cluster.nodes.size(),
               deviceTypeList(cluster), typesWidth, cluster.description);
  fmt::print("\nNAMExN is N copies of preset NAME (N up to {}), joined by its "
             "inter-node link:\ndgx-h100x128 is 128 DGX H100 nodes, 1024 "
             "GPUs, mesh 128x8 by default.\n",
             maxPresetCopies);
  return 0;
}

int parplan::cli::runClusterShow(const ClusterShowOptions &options) {
  std::string error;
  std::optional<Cluster> cluster = resolveCluster(options.cluster, error);
  if (!cluster) {
    printError(error, options.cluster);
    return 1;
  }
  if (options.format == "yaml" || options.format == "json") {
    fmt::print("{}", options.format == "yaml" ? writeClusterYaml(*cluster)
                                              : writeClusterJson(*cluster));
    return 0;
  }

  // The mesh first, so that a bad --mesh prints nothing else.
  std::vector<int64_t> shape = defaultMeshShape(*cluster);
  if (!options.mesh.empty()) {
    std::optional<std::vector<int64_t>> parsed =
        parseMeshShape(options.mesh, error);
    if (!parsed) {
      printError(error, "");
      return 1;
    }
    shape = *parsed;
  }
  std::optional<DeviceMesh> mesh = makeMesh(*cluster, shape, error);
  if (!mesh) {
    printError(error + " (cluster " + cluster->name + ")", "");
    return 1;
  }

  int64_t numDevices = cluster->numDevices();
  fmt::print("cluster {}: {} devices on {} node{}\n", cluster->name, numDevices,
             cluster->nodes.size(), cluster->nodes.size() == 1 ? "" : "s");
  if (!cluster->description.empty())
    fmt::print("  {}\n", cluster->description);
  if (!cluster->source.empty())
    fmt::print("  source: {}\n", cluster->source);

  fmt::print("device types:\n");
  for (const DeviceType &type : cluster->deviceTypes) {
    std::string peaks;
    for (const auto &[dtype, flops] : type.peakFlops)
      peaks += fmt::format("{}{} {:g}", peaks.empty() ? "" : ", ",
                           toString(dtype), flops / 1e12);
    std::string overhead = type.kernelOverhead > 0
                               ? fmt::format("; kernel overhead {:g} us",
                                             type.kernelOverhead * 1e6)
                               : "";
    int64_t count = 0;
    for (const Node &node : cluster->nodes)
      if (node.deviceType == type.name)
        count += node.devices;
    fmt::print("  {} ({} device{}): {:g} GB, {}; peak TFLOP/s: {}{}\n",
               type.name, count, count == 1 ? "" : "s", type.memoryBytes / 1e9,
               formatBandwidth(type.memoryBandwidth), peaks, overhead);
  }

  fmt::print("nodes:\n");
  int64_t device = 0;
  for (size_t i = 0; i < cluster->nodes.size();) {
    const Node &node = cluster->nodes[i];
    size_t j = i + 1;
    while (j < cluster->nodes.size() &&
           cluster->nodes[j].deviceType == node.deviceType &&
           cluster->nodes[j].devices == node.devices &&
           cluster->nodes[j].region == node.region)
      ++j;
    int64_t count = static_cast<int64_t>(j - i);
    std::string names = count == 1
                            ? node.name
                            : fmt::format("{} .. {} ({} nodes)", node.name,
                                          cluster->nodes[j - 1].name, count);
    fmt::print("  {}: {} x {}{}, device{} {}{}\n", names, node.devices,
               node.deviceType, count == 1 ? "" : " each",
               count * node.devices == 1 ? "" : "s",
               formatRange(device, count * node.devices),
               node.region.empty() ? "" : ", region " + node.region);
    device += count * node.devices;
    i = j;
  }

  fmt::print("links:\n");
  std::set<LinkLevel> used = usedLevels(*cluster);
  std::pair<LinkLevel, const Link *> levels[] = {
      {LinkLevel::IntraNode, &cluster->intraNode},
      {LinkLevel::InterNode, &cluster->interNode},
      {LinkLevel::InterRegion, &cluster->interRegion}};
  for (auto &[level, link] : levels) {
    std::string name = std::string(toString(level)) + ":";
    if (link->bandwidth <= 0) {
      fmt::print("  {:<14}-\n", name);
      continue;
    }
    fmt::print("  {:<14}{}, {}{}\n", name, formatBandwidth(link->bandwidth),
               formatLatency(link->latency),
               used.count(level) ? "" : " (not crossed)");
  }
  for (const RegionLinkOverride &region : cluster->regionOverrides)
    fmt::print("  {} - {}: {}, {}\n",
               region.regionA.empty() ? "(default region)" : region.regionA,
               region.regionB.empty() ? "(default region)" : region.regionB,
               formatBandwidth(region.link.bandwidth),
               formatLatency(region.link.latency));
  fmt::print("overrides: {} device pair{}, {} node pair{}, {} region pair{}\n",
             cluster->overrides.size(),
             cluster->overrides.size() == 1 ? "" : "s",
             cluster->nodeOverrides.size(),
             cluster->nodeOverrides.size() == 1 ? "" : "s",
             cluster->regionOverrides.size(),
             cluster->regionOverrides.size() == 1 ? "" : "s");

  fmt::print("mesh {}{}:\n", formatMeshShape(mesh->shape),
             mesh->size() == numDevices
                 ? fmt::format(" ({} devices)", mesh->size())
                 : fmt::format(" (devices {} of {})",
                               formatRange(0, mesh->size()), numDevices));
  for (int64_t axis = 0; axis < static_cast<int64_t>(mesh->shape.size());
       ++axis) {
    Link link = axisLink(*cluster, *mesh, axis);
    LinkLevel level = axisLevel(*cluster, *mesh, axis);
    if (level == LinkLevel::Local) {
      fmt::print("  axis {}: size {}, local\n", axis, mesh->shape[axis]);
      continue;
    }
    fmt::print("  axis {}: size {}, {}, {}, {}\n", axis, mesh->shape[axis],
               toString(level), formatBandwidth(link.bandwidth),
               formatLatency(link.latency));
  }
  return 0;
}

int parplan::cli::runClusterGenerate(const ClusterGenerateOptions &options) {
  std::string error;
  std::optional<Cluster> cluster = generateGeoCluster(options.spec, error);
  if (!cluster) {
    printError(error, "");
    return 1;
  }
  bool json =
      options.format.empty()
          ? llvm::StringRef(options.output).ends_with_insensitive(".json")
          : options.format == "json";
  std::string text =
      json ? writeClusterJson(*cluster) : writeClusterYaml(*cluster);
  if (options.output.empty()) {
    fmt::print("{}", text);
    return 0;
  }
  if (!writeFile(options.output, [&](llvm::raw_ostream &out) { out << text; }))
    return 1;
  std::set<std::string> regions;
  for (const Node &node : cluster->nodes)
    regions.insert(node.region);
  fmt::print("wrote {}: cluster '{}', {} machines in {} regions, {} devices\n",
             options.output, cluster->name, cluster->nodes.size(),
             regions.size(), cluster->numDevices());
  return 0;
}
