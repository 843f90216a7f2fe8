//===- ClusterFile.cpp - cluster descriptions in YAML or JSON -------------===//
//
// Two passes: parseYamlTree (parplan/Cost/YamlTree.h) turns the text into a
// small tree that keeps the source position of every node, so that the
// checks below can look fields up in any order, then the tree is read into a
// Cluster, field by field, with units.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/YamlTree.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

using namespace parplan::cost;
using llvm::StringRef;

namespace {

/// The shared reader (parplan/Cost/YamlTree.h), under this file's names.
using Tree = YamlTree;
using Diagnostics = YamlDiagnostics;

//===----------------------------------------------------------------------===//
// Quantities
//===----------------------------------------------------------------------===//

enum class Quantity { Bandwidth, Time, Memory, Flops };

struct Unit {
  const char *name;
  double scale;
};

const std::vector<Unit> &unitsOf(Quantity quantity) {
  static const std::vector<Unit> bandwidth = {{"B/s", 1},
                                              {"KB/s", 1e3},
                                              {"MB/s", 1e6},
                                              {"GB/s", 1e9},
                                              {"TB/s", 1e12},
                                              {"KiB/s", 1024.0},
                                              {"MiB/s", 1048576.0},
                                              {"GiB/s", 1073741824.0},
                                              {"TiB/s", 1099511627776.0},
                                              // Bits, as networks are quoted.
                                              {"bit/s", 1 / 8.0},
                                              {"Kbit/s", 1e3 / 8},
                                              {"Mbit/s", 1e6 / 8},
                                              {"Gbit/s", 1e9 / 8},
                                              {"Tbit/s", 1e12 / 8},
                                              {"bps", 1 / 8.0},
                                              {"Kbps", 1e3 / 8},
                                              {"Mbps", 1e6 / 8},
                                              {"Gbps", 1e9 / 8},
                                              {"Tbps", 1e12 / 8}};
  static const std::vector<Unit> time = {{"s", 1},
                                         {"ms", 1e-3},
                                         {"us", 1e-6},
                                         {"\xc2\xb5s", 1e-6}, // µs
                                         {"ns", 1e-9}};
  static const std::vector<Unit> memory = {
      {"B", 1},           {"KB", 1e3},           {"MB", 1e6},
      {"GB", 1e9},        {"TB", 1e12},          {"KiB", 1024.0},
      {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  static const std::vector<Unit> flops = {
      {"FLOP/s", 1},     {"KFLOP/s", 1e3},  {"MFLOP/s", 1e6}, {"GFLOP/s", 1e9},
      {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {"FLOPS", 1},     {"GFLOPS", 1e9},
      {"TFLOPS", 1e12},  {"PFLOPS", 1e15},  {"OP/s", 1},      {"GOP/s", 1e9},
      {"TOP/s", 1e12},   {"POP/s", 1e15},   {"TOPS", 1e12},   {"POPS", 1e15}};
  switch (quantity) {
  case Quantity::Bandwidth:
    return bandwidth;
  case Quantity::Time:
    return time;
  case Quantity::Memory:
    return memory;
  case Quantity::Flops:
    return flops;
  }
  return bandwidth;
}

const char *quantityName(Quantity quantity) {
  switch (quantity) {
  case Quantity::Bandwidth:
    return "bandwidth";
  case Quantity::Time:
    return "time";
  case Quantity::Memory:
    return "memory size";
  case Quantity::Flops:
    return "FLOP/s";
  }
  return "quantity";
}

const char *quantityExample(Quantity quantity) {
  switch (quantity) {
  case Quantity::Bandwidth:
    return "900 GB/s";
  case Quantity::Time:
    return "5 us";
  case Quantity::Memory:
    return "80 GB";
  case Quantity::Flops:
    return "312 TFLOP/s";
  }
  return "";
}

/// The longest prefix of `text` that is a decimal number: [+-]digits[.digits]
/// [e[+-]digits].
size_t numberLength(StringRef text) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < text.size() && llvm::isDigit(text[i]))
      ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-'))
    ++i;
  size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0)
    return 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t save = i++;
    if (i < text.size() && (text[i] == '+' || text[i] == '-'))
      ++i;
    if (digits() == 0)
      i = save;
  }
  return i;
}

//===----------------------------------------------------------------------===//
// The reader
//===----------------------------------------------------------------------===//

class Reader {
public:
  Reader(Diagnostics &diags) : diags(diags) {}

  std::optional<Cluster> read(const Tree &root);

private:
  bool readLinkLevels(const Tree *links, const Tree &root, Cluster &cluster);
  const Tree *
  readNamePair(const Tree &entry, const std::string &what, const char *key,
               const std::string &pairOf, const std::vector<std::string> &names,
               const std::function<bool(const std::string &)> &known,
               const std::function<std::string(const std::string &)> &unknown,
               std::string (&ends)[2]);
  bool readRegionLinks(const Tree *regionLinks, Cluster &cluster);
  bool readNodeLinks(const Tree *nodeLinks, Cluster &cluster);
  bool readDeviceLinks(const Tree *deviceLinks, Cluster &cluster);

  /// The fields of one mapping, checked against the known ones.
  class Fields {
  public:
    Fields(Reader &reader, const Tree &tree, std::string what)
        : reader(reader), tree(tree), what(std::move(what)) {}

    /// "KIND 'NAME'" when the mapping has a scalar name, else "KIND INDEX",
    /// so that errors found before the name is read can name the entry.
    static std::string entryName(const Tree &tree, const std::string &kind,
                                 size_t index) {
      if (tree.kind == Tree::Mapping)
        for (size_t i = 0; i < tree.keys.size(); ++i)
          if (tree.keys[i].first == "name" &&
              tree.children[i].kind == Tree::Scalar &&
              !tree.children[i].value.empty())
            return kind + " '" + tree.children[i].value + "'";
      return kind + " " + std::to_string(index);
    }

    /// Checks that `tree` is a mapping of known fields only.
    bool check(const std::vector<std::string> &known) {
      return checkFields(tree, what, known, reader.diags);
    }
    const Tree *get(StringRef key) const { return tree.get(key); }
    const Tree *require(StringRef key) const {
      if (const Tree *value = get(key))
        return value;
      reader.diags.fail(tree.loc,
                        what + ": missing required field '" + key + "'");
      return nullptr;
    }

    Reader &reader;
    const Tree &tree;
    std::string what;
  };

  bool readString(const Tree *tree, const std::string &what, std::string &out) {
    if (tree->kind != Tree::Scalar)
      return diags.fail(tree->loc,
                        what + " must be a string, not " + tree->kindName());
    out = tree->value;
    if (out.empty())
      return diags.fail(tree->loc, what + " must not be empty");
    return true;
  }

  /// A decimal integer of at least `minimum` (0 or 1).
  bool readCount(const Tree *tree, const std::string &what, int64_t &out,
                 int64_t minimum) {
    const char *kind =
        minimum > 0 ? "a positive integer" : "a non-negative integer";
    if (tree->kind != Tree::Scalar)
      return diags.fail(tree->loc, what + " must be " + kind + ", not " +
                                       tree->kindName());
    StringRef text(tree->value);
    StringRef digits = text;
    digits.consume_front("-");
    if (digits.empty() || !llvm::all_of(digits, llvm::isDigit) ||
        text.getAsInteger(10, out) || out < minimum || out > (int64_t(1) << 40))
      return diags.fail(tree->valueLoc,
                        what + " must be " + kind + ", not '" + text + "'");
    return true;
  }

  /// "900 GB/s": a number and one of the quantity's units.
  bool readQuantity(const Tree *tree, const std::string &what,
                    Quantity quantity, double &out, bool allowZero = false) {
    if (tree->kind != Tree::Scalar)
      return diags.fail(tree->loc, what + " must be a " +
                                       quantityName(quantity) + " such as '" +
                                       quantityExample(quantity) + "', not " +
                                       tree->kindName());
    StringRef text(tree->value);
    size_t length = numberLength(text);
    if (length == 0)
      return diags.fail(tree->valueLoc, what + ": expected a number and a " +
                                            "unit, such as '" +
                                            quantityExample(quantity) +
                                            "', not '" + text + "'");
    StringRef unitText = text.drop_front(length).ltrim(' ');
    const char *unitLoc = tree->valueLoc + (text.size() - unitText.size());
    if (unitText.empty())
      return diags.fail(tree->valueLoc, what + ": missing unit after '" +
                                            text.take_front(length) +
                                            "', write e.g. '" +
                                            quantityExample(quantity) + "'");
    const Unit *unit = nullptr;
    std::vector<std::string> names;
    for (const Unit &candidate : unitsOf(quantity)) {
      names.push_back(candidate.name);
      if (unitText == candidate.name)
        unit = &candidate;
    }
    if (!unit) {
      std::string close = closestName(unitText, names);
      return diags.fail(
          unitLoc, what + ": unknown " + quantityName(quantity) + " unit '" +
                       unitText + "'" +
                       (close.empty() ? "; expected one of " + joinNames(names)
                                      : " (did you mean '" + close + "'?)"));
    }
    double number = 0;
    if (text.take_front(length).getAsDouble(number) || !std::isfinite(number))
      return diags.fail(tree->valueLoc, what + ": invalid number '" +
                                            text.take_front(length) + "'");
    out = number * unit->scale;
    if (out < 0 || (!allowZero && out == 0) || !std::isfinite(out))
      return diags.fail(tree->valueLoc,
                        what + " must be " +
                            (allowZero ? "non-negative" : "positive") +
                            ", not '" + text + "'");
    return true;
  }

  bool readLink(const Tree &tree, const std::string &what, Link &link,
                const std::vector<std::string> &extraFields = {}) {
    Fields fields(*this, tree, what);
    std::vector<std::string> known = {"bandwidth", "latency"};
    known.insert(known.end(), extraFields.begin(), extraFields.end());
    if (!fields.check(known))
      return false;
    const Tree *bandwidth = fields.require("bandwidth");
    if (!bandwidth || !readQuantity(bandwidth, what + ": bandwidth",
                                    Quantity::Bandwidth, link.bandwidth))
      return false;
    const Tree *latency = fields.require("latency");
    return latency && readQuantity(latency, what + ": latency", Quantity::Time,
                                   link.latency,
                                   /*allowZero=*/true);
  }

  bool readList(const Tree *tree, const std::string &what, bool nonEmpty) {
    if (tree->kind != Tree::Sequence)
      return diags.fail(tree->loc,
                        what + " must be a list, not " + tree->kindName());
    if (nonEmpty && tree->children.empty())
      return diags.fail(tree->loc, what + ": at least one entry is required");
    return true;
  }

  bool readDeviceType(const Tree &tree, size_t index, Cluster &cluster,
                      std::map<std::string, const char *> &seen);
  bool readNode(const Tree &tree, size_t index, Cluster &cluster,
                std::map<std::string, const char *> &seen);

  Diagnostics &diags;
  /// The devices of the nodes read so far.
  int64_t devicesSoFar = 0;
};

bool Reader::readDeviceType(const Tree &tree, size_t index, Cluster &cluster,
                            std::map<std::string, const char *> &seen) {
  DeviceType type;
  std::string what = Fields::entryName(tree, "device type", index);
  Fields fields(*this, tree, what);
  if (!fields.check({"name", "memory", "memory_bandwidth", "peak_flops",
                     "compute_efficiency", "kernel_overhead"}))
    return false;
  const Tree *name = fields.require("name");
  if (!name || !readString(name, what + ": name", type.name))
    return false;
  what = "device type '" + type.name + "'";
  fields.what = what;
  auto [it, inserted] = seen.emplace(type.name, name->loc);
  if (!inserted)
    return diags.fail(name->valueLoc, what + " is defined twice (first at " +
                                          diags.lineColumn(it->second) + ")");
  const Tree *memory = fields.require("memory");
  if (!memory || !readQuantity(memory, what + ": memory", Quantity::Memory,
                               type.memoryBytes))
    return false;
  const Tree *bandwidth = fields.require("memory_bandwidth");
  if (!bandwidth || !readQuantity(bandwidth, what + ": memory_bandwidth",
                                  Quantity::Bandwidth, type.memoryBandwidth))
    return false;
  if (const Tree *efficiency = fields.get("compute_efficiency")) {
    StringRef text = efficiency->kind == Tree::Scalar
                         ? StringRef(efficiency->value)
                         : StringRef();
    double value = 0;
    if (efficiency->kind != Tree::Scalar || text.empty() ||
        numberLength(text) != text.size() || text.getAsDouble(value) ||
        !(value > 0 && value <= 1))
      return diags.fail(efficiency->valueLoc,
                        what +
                            ": compute_efficiency must be a number in "
                            "(0, 1], not '" +
                            text + "'");
    type.computeEfficiency = value;
  }
  if (const Tree *overhead = fields.get("kernel_overhead"))
    if (!readQuantity(overhead, what + ": kernel_overhead", Quantity::Time,
                      type.kernelOverhead, /*allowZero=*/true))
      return false;
  const Tree *peaks = fields.require("peak_flops");
  if (!peaks)
    return false;
  std::vector<std::string> dtypes;
  for (ComputeType dtype :
       {ComputeType::F64, ComputeType::F32, ComputeType::TF32,
        ComputeType::BF16, ComputeType::F16, ComputeType::I8})
    dtypes.push_back(toString(dtype));
  Fields peakFields(*this, *peaks, what + ": peak_flops");
  if (!peakFields.check(dtypes))
    return false;
  if (peaks->keys.empty())
    return diags.fail(peaks->loc,
                      what + ": peak_flops needs at least one element type");
  for (size_t i = 0; i < peaks->keys.size(); ++i) {
    double flops = 0;
    if (!readQuantity(&peaks->children[i],
                      what + ": peak " + peaks->keys[i].first, Quantity::Flops,
                      flops))
      return false;
    type.peakFlops[*parseComputeType(peaks->keys[i].first)] = flops;
  }
  cluster.deviceTypes.push_back(std::move(type));
  return true;
}

bool Reader::readNode(const Tree &tree, size_t index, Cluster &cluster,
                      std::map<std::string, const char *> &seen) {
  Node node;
  std::string what = Fields::entryName(tree, "node", index);
  Fields fields(*this, tree, what);
  if (!fields.check({"name", "device_type", "devices", "region", "count"}))
    return false;
  const Tree *name = fields.require("name");
  if (!name || !readString(name, what + ": name", node.name))
    return false;
  what = "node '" + node.name + "'";
  fields.what = what;
  const Tree *type = fields.require("device_type");
  if (!type || !readString(type, what + ": device_type", node.deviceType))
    return false;
  if (!cluster.findDeviceType(node.deviceType)) {
    std::vector<std::string> known;
    for (const DeviceType &deviceType : cluster.deviceTypes)
      known.push_back(deviceType.name);
    std::string close = closestName(node.deviceType, known);
    return diags.fail(
        type->valueLoc,
        what + ": device type '" + node.deviceType + "' is not defined" +
            (close.empty() ? "" : " (did you mean '" + close + "'?)"));
  }
  const Tree *devices = fields.require("devices");
  if (!devices || !readCount(devices, what + ": devices", node.devices, 1))
    return false;
  // The devices of the nodes before (not numDevices(): that walks the
  // nodes).
  int64_t devicesBefore = devicesSoFar;
  if (node.devices > kMaxClusterDevices - devicesBefore)
    return diags.fail(devices->valueLoc,
                      what + ": devices: " + std::to_string(node.devices) +
                          " is too many: a cluster has at most " +
                          std::to_string(kMaxClusterDevices) + " devices" +
                          (devicesBefore
                               ? " (the nodes before have " +
                                     std::to_string(devicesBefore) + ")"
                               : std::string()));
  if (const Tree *region = fields.get("region"))
    if (!readString(region, what + ": region", node.region))
      return false;
  int64_t count = 1;
  const Tree *countTree = fields.get("count");
  if (countTree && !readCount(countTree, what + ": count", count, 1))
    return false;
  // Checked before the nodes are made, so that no loop runs long.
  int64_t nodesBefore = static_cast<int64_t>(cluster.nodes.size());
  if (count > kMaxClusterNodes - nodesBefore)
    return diags.fail(
        countTree ? countTree->valueLoc : tree.loc,
        what + ": " +
            (countTree ? "count: " + std::to_string(count) + " is too many: "
                       : std::string()) +
            "a cluster has at most " + std::to_string(kMaxClusterNodes) +
            " nodes" +
            (nodesBefore
                 ? " (" + std::to_string(nodesBefore) + " defined before)"
                 : std::string()));
  if (count > (kMaxClusterDevices - devicesBefore) / node.devices)
    return diags.fail(countTree->valueLoc,
                      what + ": count: " + std::to_string(count) +
                          " nodes of " + std::to_string(node.devices) +
                          " devices is too many: a cluster has at most " +
                          std::to_string(kMaxClusterDevices) + " devices" +
                          (devicesBefore
                               ? " (the nodes before have " +
                                     std::to_string(devicesBefore) + ")"
                               : std::string()));
  std::string base = node.name;
  for (int64_t i = 0; i < count; ++i) {
    Node copy = node;
    if (countTree)
      copy.name = base + std::to_string(i);
    auto [it, inserted] = seen.emplace(copy.name, name->valueLoc);
    if (!inserted)
      return diags.fail(name->valueLoc, "node '" + copy.name +
                                            "' is defined twice (first at " +
                                            diags.lineColumn(it->second) + ")");
    cluster.nodes.push_back(std::move(copy));
  }
  devicesSoFar += count * node.devices;
  return true;
}

std::optional<Cluster> Reader::read(const Tree &root) {
  Cluster cluster;
  if (root.kind == Tree::Null) {
    diags.failAt(1, 1, "empty cluster file");
    return std::nullopt;
  }
  Fields fields(*this, root, "the cluster file");
  if (!fields.check({"name", "description", "source", "device_types", "nodes",
                     "links", "region_links", "node_links", "device_links"}))
    return std::nullopt;
  const Tree *name = fields.require("name");
  if (!name || !readString(name, "name", cluster.name))
    return std::nullopt;
  if (const Tree *description = fields.get("description"))
    if (!readString(description, "description", cluster.description))
      return std::nullopt;
  if (const Tree *source = fields.get("source"))
    if (!readString(source, "source", cluster.source))
      return std::nullopt;

  const Tree *types = fields.require("device_types");
  if (!types || !readList(types, "device_types", /*nonEmpty=*/true))
    return std::nullopt;
  std::map<std::string, const char *> typeNames;
  for (size_t i = 0; i < types->children.size(); ++i)
    if (!readDeviceType(types->children[i], i, cluster, typeNames))
      return std::nullopt;

  const Tree *nodes = fields.require("nodes");
  if (!nodes || !readList(nodes, "nodes", /*nonEmpty=*/true))
    return std::nullopt;
  std::map<std::string, const char *> nodeNames;
  for (size_t i = 0; i < nodes->children.size(); ++i)
    if (!readNode(nodes->children[i], i, cluster, nodeNames))
      return std::nullopt;

  // Region links first: where they cover a level, its default is not
  // needed.
  if (const Tree *regionLinks = fields.get("region_links"))
    if (!readRegionLinks(regionLinks, cluster))
      return std::nullopt;
  if (!readLinkLevels(fields.get("links"), root, cluster))
    return std::nullopt;
  if (const Tree *nodeLinks = fields.get("node_links"))
    if (!readNodeLinks(nodeLinks, cluster))
      return std::nullopt;
  if (const Tree *deviceLinks = fields.get("device_links"))
    if (!readDeviceLinks(deviceLinks, cluster))
      return std::nullopt;

  // Everything checkCluster checks has been checked above, with a position;
  // this is a safety net.
  if (std::optional<std::string> error = checkCluster(cluster)) {
    diags.fail(root.loc, *error);
    return std::nullopt;
  }
  return cluster;
}

/// `links`: one link per level, and those of the levels the nodes use
/// required (within a node, between nodes of a region, between regions).
bool Reader::readLinkLevels(const Tree *links, const Tree &root,
                            Cluster &cluster) {
  std::set<std::string> given;
  if (links) {
    Fields linkFields(*this, *links, "links");
    if (!linkFields.check({"intra_node", "inter_node", "inter_region"}))
      return false;
    std::pair<const char *, Link *> levels[] = {
        {"intra_node", &cluster.intraNode},
        {"inter_node", &cluster.interNode},
        {"inter_region", &cluster.interRegion}};
    for (auto &[key, link] : levels)
      if (const Tree *value = linkFields.get(key)) {
        if (!readLink(*value, std::string("links: ") + key, *link))
          return false;
        given.insert(key);
      }
  }
  const Tree &linksAt = links ? *links : root;
  auto missing = [&](const char *key) {
    return links ? "links: missing '" + std::string(key) + "'"
                 : "the cluster file: missing 'links' with '" +
                       std::string(key) + "'";
  };
  const Node *multiDevice = nullptr;
  for (const Node &node : cluster.nodes)
    if (node.devices > 1 && !multiDevice)
      multiDevice = &node;
  std::optional<std::pair<int64_t, int64_t>> sameRegion =
      nodesOnLevelDefault(cluster, /*sameRegion=*/true);
  std::optional<std::pair<int64_t, int64_t>> twoRegions =
      nodesOnLevelDefault(cluster, /*sameRegion=*/false);
  auto nodeAt = [&](int64_t n) -> const Node & {
    return cluster.nodes[static_cast<size_t>(n)];
  };
  auto quoteRegion = [](const std::string &region) {
    return region.empty() ? std::string("the default region")
                          : "region '" + region + "'";
  };
  if (multiDevice && !given.count("intra_node")) {
    diags.fail(linksAt.loc, missing("intra_node") +
                                ", needed "
                                "because node '" +
                                multiDevice->name + "' has " +
                                std::to_string(multiDevice->devices) +
                                " devices");
    return false;
  }
  bool regionLinks = !cluster.regionOverrides.empty();
  if (sameRegion && !given.count("inter_node")) {
    diags.fail(
        linksAt.loc,
        missing("inter_node") +
            ", needed "
            "because nodes '" +
            nodeAt(sameRegion->first).name + "' and '" +
            nodeAt(sameRegion->second).name + "' are both in " +
            quoteRegion(nodeAt(sameRegion->first).region) +
            (regionLinks ? ", which has no region link of its own" : ""));
    return false;
  }
  if (twoRegions && !given.count("inter_region")) {
    diags.fail(linksAt.loc,
               missing("inter_region") +
                   ", needed "
                   "because nodes are in " +
                   quoteRegion(nodeAt(twoRegions->first).region) + " and " +
                   quoteRegion(nodeAt(twoRegions->second).region) +
                   (regionLinks ? ", which have no region link" : ""));
    return false;
  }
  return true;
}

/// The `key` of a link entry: a list of two names that are `known`, into
/// `ends`; the list (for positions), or null once said why (`pairOf` says
/// what two it must name, `unknown` what another name is, and the closest
/// of `names` is suggested).
const Tree *Reader::readNamePair(
    const Tree &entry, const std::string &what, const char *key,
    const std::string &pairOf, const std::vector<std::string> &names,
    const std::function<bool(const std::string &)> &known,
    const std::function<std::string(const std::string &)> &unknown,
    std::string (&ends)[2]) {
  std::string where = what + ": " + key;
  const Tree *pair = Fields(*this, entry, what).require(key);
  if (!pair || !readList(pair, where, false))
    return nullptr;
  if (pair->children.size() != 2) {
    diags.fail(pair->loc, where + " must name " + pairOf + ", not " +
                              std::to_string(pair->children.size()));
    return nullptr;
  }
  for (int k = 0; k < 2; ++k) {
    if (!readString(&pair->children[k], where, ends[k]))
      return nullptr;
    if (!known(ends[k])) {
      std::string close = closestName(ends[k], names);
      diags.fail(pair->children[k].valueLoc,
                 what + ": " + unknown(ends[k]) +
                     (close.empty() ? "" : " (did you mean '" + close + "'?)"));
      return nullptr;
    }
  }
  return pair;
}

/// `region_links`: a link per pair of regions its nodes name, each pair
/// once.
bool Reader::readRegionLinks(const Tree *regionLinks, Cluster &cluster) {
  if (!readList(regionLinks, "region_links", /*nonEmpty=*/false))
    return false;
  std::vector<std::string> names;
  std::set<std::string> regions;
  for (const Node &node : cluster.nodes)
    if (regions.insert(node.region).second)
      names.push_back(node.region);
  std::map<std::pair<std::string, std::string>, const char *> seen;
  for (size_t i = 0; i < regionLinks->children.size(); ++i) {
    const Tree &entry = regionLinks->children[i];
    std::string what = "region link " + std::to_string(i);
    RegionLinkOverride override;
    if (!readLink(entry, what, override.link, {"regions"}))
      return false;
    std::string ends[2];
    const Tree *pair = readNamePair(
        entry, what, "regions",
        "two regions (the same one twice for the links between its nodes)",
        names,
        [&](const std::string &region) { return regions.count(region) > 0; },
        [](const std::string &region) {
          return "no node is in region '" + region + "'";
        },
        ends);
    if (!pair)
      return false;
    override.regionA = ends[0];
    override.regionB = ends[1];
    auto [it, inserted] = seen.emplace(
        std::minmax(override.regionA, override.regionB), entry.loc);
    if (!inserted) {
      diags.fail(pair->loc, what + ": regions '" + override.regionA +
                                "' and '" + override.regionB +
                                "' already have a link (at " +
                                diags.lineColumn(it->second) + ")");
      return false;
    }
    cluster.regionOverrides.push_back(override);
  }
  return true;
}

/// `node_links`: a link per pair of named nodes, each pair once.
bool Reader::readNodeLinks(const Tree *nodeLinks, Cluster &cluster) {
  if (!readList(nodeLinks, "node_links", /*nonEmpty=*/false))
    return false;
  std::map<std::pair<int64_t, int64_t>, const char *> seen;
  std::vector<std::string> names;
  std::map<std::string, int64_t> nodeIds;
  for (const Node &node : cluster.nodes) {
    nodeIds.emplace(node.name, static_cast<int64_t>(names.size()));
    names.push_back(node.name);
  }
  for (size_t i = 0; i < nodeLinks->children.size(); ++i) {
    const Tree &entry = nodeLinks->children[i];
    std::string what = "node link " + std::to_string(i);
    NodeLinkOverride override;
    if (!readLink(entry, what, override.link, {"nodes"}))
      return false;
    std::string ends[2];
    const Tree *pair = readNamePair(
        entry, what, "nodes", "two nodes", names,
        [&](const std::string &node) { return nodeIds.count(node) > 0; },
        [](const std::string &node) {
          return "node '" + node + "' is not defined";
        },
        ends);
    if (!pair)
      return false;
    int64_t ids[2] = {nodeIds.at(ends[0]), nodeIds.at(ends[1])};
    override.nodeA = ids[0];
    override.nodeB = ids[1];
    auto [it, inserted] =
        seen.emplace(std::minmax(override.nodeA, override.nodeB), entry.loc);
    if (!inserted) {
      diags.fail(pair->loc, what + ": nodes '" + names[ids[0]] + "' and '" +
                                names[ids[1]] + "' already have a link (at " +
                                diags.lineColumn(it->second) + ")");
      return false;
    }
    cluster.nodeOverrides.push_back(override);
  }
  return true;
}

/// `device_links`: a link per pair of devices, each pair once.
bool Reader::readDeviceLinks(const Tree *deviceLinks, Cluster &cluster) {
  if (!readList(deviceLinks, "device_links", /*nonEmpty=*/false))
    return false;
  int64_t numDevices = cluster.numDevices();
  std::map<std::pair<int64_t, int64_t>, const char *> seen;
  for (size_t i = 0; i < deviceLinks->children.size(); ++i) {
    const Tree &entry = deviceLinks->children[i];
    std::string what = "device link " + std::to_string(i);
    LinkOverride override;
    if (!readLink(entry, what, override.link, {"devices"}))
      return false;
    const Tree *pair = Fields(*this, entry, what).require("devices");
    if (!pair || !readList(pair, what + ": devices", false))
      return false;
    if (pair->children.size() != 2) {
      diags.fail(pair->loc, what + ": devices must name two devices, not " +
                                std::to_string(pair->children.size()));
      return false;
    }
    int64_t ids[2];
    for (int k = 0; k < 2; ++k) {
      if (!readCount(&pair->children[k], what + ": device", ids[k], 0))
        return false;
      if (ids[k] >= numDevices) {
        diags.fail(pair->children[k].valueLoc,
                   what + ": device " + std::to_string(ids[k]) +
                       " is out of range: the cluster has " +
                       std::to_string(numDevices) + " devices (0.." +
                       std::to_string(numDevices - 1) + ")");
        return false;
      }
    }
    if (ids[0] == ids[1]) {
      diags.fail(pair->loc, what +
                                ": a device link joins two different "
                                "devices, not device " +
                                std::to_string(ids[0]) + " to itself");
      return false;
    }
    override.deviceA = ids[0];
    override.deviceB = ids[1];
    auto [it, inserted] = seen.emplace(std::minmax(ids[0], ids[1]), entry.loc);
    if (!inserted) {
      diags.fail(pair->loc, what + ": devices " + std::to_string(ids[0]) +
                                " and " + std::to_string(ids[1]) +
                                " already have a link (at " +
                                diags.lineColumn(it->second) + ")");
      return false;
    }
    cluster.overrides.push_back(override);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// A double-quoted string, valid in both JSON and YAML.
std::string quote(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.15g", value);
  return buffer;
}

std::string quantity(double value, Quantity kind) {
  struct Choice {
    double threshold;
    const char *unit;
    double scale;
  };
  std::vector<Choice> choices;
  switch (kind) {
  case Quantity::Bandwidth:
    choices = {{1e9, "GB/s", 1e9}, {1e6, "MB/s", 1e6}, {0, "B/s", 1}};
    break;
  case Quantity::Time:
    choices = {{1, "s", 1}, {1e-3, "ms", 1e-3}, {0, "us", 1e-6}};
    break;
  case Quantity::Memory:
    choices = {{1e9, "GB", 1e9}, {1e6, "MB", 1e6}, {0, "B", 1}};
    break;
  case Quantity::Flops:
    choices = {{1e12, "TFLOP/s", 1e12}, {0, "GFLOP/s", 1e9}};
    break;
  }
  for (const Choice &choice : choices)
    if (value >= choice.threshold)
      return number(value / choice.scale) + " " + choice.unit;
  return number(value) + " " + choices.back().unit;
}

/// Writes the cluster as nested JSON-style values; `yaml` picks block style,
/// `compact` JSON on one line.
class Writer {
public:
  explicit Writer(bool yaml, bool compact = false)
      : yaml(yaml), compact(compact) {}

  std::string write(const Cluster &cluster) {
    beginMap();
    field("name", quote(cluster.name));
    if (!cluster.description.empty())
      field("description", quote(cluster.description));
    if (!cluster.source.empty())
      field("source", quote(cluster.source));
    beginList("device_types");
    for (const DeviceType &type : cluster.deviceTypes) {
      beginMap();
      field("name", quote(type.name));
      field("memory", str(quantity(type.memoryBytes, Quantity::Memory)));
      field("memory_bandwidth",
            str(quantity(type.memoryBandwidth, Quantity::Bandwidth)));
      if (type.computeEfficiency != DeviceType().computeEfficiency)
        field("compute_efficiency", number(type.computeEfficiency));
      if (type.kernelOverhead > 0)
        field("kernel_overhead",
              str(quantity(type.kernelOverhead, Quantity::Time)));
      beginMap("peak_flops");
      for (const auto &[dtype, flops] : type.peakFlops) {
        std::string text = quantity(flops, Quantity::Flops);
        // Integer peaks are operations, not floating-point ones.
        if (dtype == ComputeType::I8)
          text =
              text.substr(0, text.find(' ')) +
              (text.find("GFLOP") != std::string::npos ? " GOP/s" : " TOP/s");
        field(toString(dtype), str(text));
      }
      end();
      end();
    }
    end();
    beginList("nodes");
    for (const Node &node : cluster.nodes) {
      beginMap();
      field("name", quote(node.name));
      field("device_type", quote(node.deviceType));
      field("devices", std::to_string(node.devices));
      if (!node.region.empty())
        field("region", quote(node.region));
      end();
    }
    end();
    beginMap("links");
    std::pair<const char *, const Link *> levels[] = {
        {"intra_node", &cluster.intraNode},
        {"inter_node", &cluster.interNode},
        {"inter_region", &cluster.interRegion}};
    for (auto &[key, link] : levels)
      if (link->bandwidth > 0) {
        beginMap(key);
        writeLink(*link);
        end();
      }
    end();
    if (!cluster.regionOverrides.empty()) {
      beginList("region_links");
      for (const RegionLinkOverride &override : cluster.regionOverrides) {
        beginMap();
        field("regions", "[" + quote(override.regionA) + ", " +
                             quote(override.regionB) + "]");
        writeLink(override.link);
        end();
      }
      end();
    }
    if (!cluster.nodeOverrides.empty()) {
      beginList("node_links");
      for (const NodeLinkOverride &override : cluster.nodeOverrides) {
        beginMap();
        field("nodes", "[" + quote(cluster.nodes[override.nodeA].name) + ", " +
                           quote(cluster.nodes[override.nodeB].name) + "]");
        writeLink(override.link);
        end();
      }
      end();
    }
    if (!cluster.overrides.empty()) {
      beginList("device_links");
      for (const LinkOverride &override : cluster.overrides) {
        beginMap();
        field("devices", "[" + std::to_string(override.deviceA) + ", " +
                             std::to_string(override.deviceB) + "]");
        writeLink(override.link);
        end();
      }
      end();
    }
    end();
    if (!compact)
      out += "\n";
    return out;
  }

private:
  struct Frame {
    bool list;
    int entries = 0;
  };

  std::string str(const std::string &text) { return yaml ? text : quote(text); }

  void writeLink(const Link &link) {
    field("bandwidth", str(quantity(link.bandwidth, Quantity::Bandwidth)));
    field("latency", str(quantity(link.latency, Quantity::Time)));
  }

  /// Starts an entry of the innermost container: "key: " in a mapping,
  /// "- " in a list.
  void entry(StringRef key) {
    if (stack.empty())
      return;
    Frame &frame = stack.back();
    int depth = static_cast<int>(stack.size());
    if (yaml) {
      if (frame.list) {
        // The first field of a mapping in a list follows its "- ".
        out += "\n" + std::string(2 * (depth - 1), ' ') + "- ";
        pendingDash = true;
      } else if (pendingDash) {
        pendingDash = false;
        out += key.str() + ":";
      } else {
        out += "\n" + std::string(2 * (depth - 1), ' ') + key.str() + ":";
      }
    } else {
      out += frame.entries ? "," : "";
      if (!compact)
        out += "\n" + std::string(2 * depth, ' ');
      if (!frame.list)
        out += quote(key) + (compact ? ":" : ": ");
    }
    ++frame.entries;
  }

  void field(StringRef key, const std::string &value) {
    entry(key);
    out += yaml ? " " + value : value;
  }

  void beginMap(StringRef key = "") {
    if (!stack.empty())
      entry(key);
    if (!yaml)
      out += "{";
    stack.push_back(Frame{false});
  }

  void beginList(StringRef key) {
    entry(key);
    if (!yaml)
      out += "[";
    stack.push_back(Frame{true});
  }

  void end() {
    Frame frame = stack.back();
    stack.pop_back();
    if (yaml) {
      if (frame.entries == 0)
        out += frame.list ? " []" : " {}";
      return;
    }
    if (frame.entries && !compact)
      out += "\n" + std::string(2 * stack.size(), ' ');
    out += frame.list ? "]" : "}";
  }

  bool yaml;
  bool compact;
  bool pendingDash = false;
  std::vector<Frame> stack;
  std::string out;
};

} // namespace

std::optional<Cluster> parplan::cost::parseCluster(StringRef text,
                                                   StringRef path,
                                                   std::string &error) {
  Diagnostics diags(text, path);
  if (path.ends_with_insensitive(".json") &&
      !checkStrictJson(text, diags, kMaxClusterFileDepth)) {
    error = diags.message();
    return std::nullopt;
  }
  Tree root;
  if (!parseYamlTree(text, root, diags, "cluster file", kMaxClusterFileDepth)) {
    error = diags.message();
    return std::nullopt;
  }
  Reader reader(diags);
  std::optional<Cluster> cluster = reader.read(root);
  if (!cluster)
    error = diags.message();
  return cluster;
}

std::optional<Cluster> parplan::cost::loadCluster(const std::string &path,
                                                  std::string &error) {
  std::optional<std::string> text = cost::readTextFile(path, error);
  if (!text)
    return std::nullopt;
  return parseCluster(*text, path, error);
}

std::string parplan::cost::writeClusterYaml(const Cluster &cluster) {
  std::string text = Writer(/*yaml=*/true).write(cluster);
  // The writer starts every top-level field on a new line.
  return StringRef(text).ltrim('\n').str();
}

std::string parplan::cost::writeClusterJson(const Cluster &cluster,
                                            bool compact) {
  return Writer(/*yaml=*/false, compact).write(cluster);
}
