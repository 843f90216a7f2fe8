//===- Cluster.h - devices, nodes and links of a cluster --------*- C++ -*-===//
//
// What the cost model knows about the hardware: device types, nodes, the
// links between devices at each level (within a node, between nodes, between
// regions) and per-pair overrides. Loaded from YAML or JSON or built from a
// preset (docs/cluster.md). No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_CLUSTER_H
#define PARPLAN_COST_CLUSTER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parplan::cost {

/// The precisions the hardware computes in, for peak FLOP/s: not the
/// element types of tensors (the runtime's DType, Runtime/Tensor.h), which
/// have no TF32 and whose integers are not compute types.
enum class ComputeType { F64, F32, TF32, BF16, F16, I8 };

/// "f64", "f32", "tf32", "bf16", "f16", "i8".
const char *toString(ComputeType dtype);
std::optional<ComputeType> parseComputeType(const std::string &text);
/// Bytes per element (tf32 is stored as 4 bytes).
int64_t byteWidth(ComputeType dtype);

/// One kind of accelerator.
struct DeviceType {
  std::string name;
  /// Peak FLOP/s per element type (dense, no sparsity).
  std::map<ComputeType, double> peakFlops;
  /// Device memory, bytes.
  double memoryBytes = 0;
  /// Device memory bandwidth, bytes/s.
  double memoryBandwidth = 0;
  /// The fraction of `peakFlops` kernels reach (Compute.h): 0.7 for
  /// datasheet peaks, 1 for peaks measured by `parplan calibrate`.
  double computeEfficiency = 0.7;
  /// Seconds: the least time a kernel takes, however little it computes
  /// (launch and start in a stream; Compute.h). 0 (not modelled) unless
  /// given; `parplan calibrate` measures it.
  double kernelOverhead = 0;
};

/// The alpha-beta parameters of a link: time to move N bytes is
/// latency + N / bandwidth.
struct Link {
  /// Bytes per second, in each direction.
  double bandwidth = 0;
  /// Seconds.
  double latency = 0;
};

/// Which kind of link joins two devices.
enum class LinkLevel { Local, IntraNode, InterNode, InterRegion };
const char *toString(LinkLevel level);

/// A machine: devices of one type sharing a node-level interconnect.
struct Node {
  std::string name;
  std::string deviceType;
  int64_t devices = 0;
  /// Region (city, datacenter) the node is in; nodes of different regions
  /// are joined by the inter-region link.
  std::string region;
};

/// A measured link between two devices that replaces the level's default.
struct LinkOverride {
  int64_t deviceA = 0;
  int64_t deviceB = 0;
  Link link;
};

/// A measured link between two nodes that replaces the level's default for
/// every pair of devices across them. nodeA == nodeB replaces the intra-node
/// link of that one node (a node whose devices are joined by NVLink in a
/// cluster whose other nodes have PCIe only).
struct NodeLinkOverride {
  int64_t nodeA = 0;
  int64_t nodeB = 0;
  Link link;
};

/// A link between the nodes of two regions that replaces the level's
/// default for every pair of devices on different nodes across them;
/// regionA == regionB: between the nodes of that one region. Node-pair and
/// device-pair overrides come first. A world-wide cluster is described by
/// its region pairs rather than every pair of its machines.
struct RegionLinkOverride {
  std::string regionA;
  std::string regionB;
  Link link;
};

/// A cluster. Devices are numbered 0 .. N-1 node by node, in node order.
struct Cluster {
  std::string name;
  /// Where the figures come from (papers, datasheets).
  std::string source;
  std::vector<DeviceType> deviceTypes;
  std::vector<Node> nodes;
  Link intraNode;
  Link interNode;
  Link interRegion;
  std::vector<LinkOverride> overrides;

  int64_t numDevices() const;
  /// The node that holds device `device`.
  int64_t nodeOf(int64_t device) const;
  const DeviceType &deviceTypeOf(int64_t device) const;
  /// Whether `devices` (a mesh's, or a run of them) are all of one type.
  bool ofOneType(llvm::ArrayRef<int64_t> devices) const;
  LinkLevel level(int64_t a, int64_t b) const;
  /// The link between two devices: a device-pair override if one names
  /// the pair, else a node-pair override, else (on different nodes) a
  /// region-pair override, else the default of their level. Local (a == b)
  /// is free.
  Link link(int64_t a, int64_t b) const;

  /// One line for listings ("4 DGX A100 nodes, InfiniBand HDR").
  std::string description;
  /// Per-node-pair links, looked up after `overrides` (device pairs) and
  /// before the level defaults.
  std::vector<NodeLinkOverride> nodeOverrides;
  /// Per-region-pair links, looked up after `nodeOverrides` and before the
  /// level defaults.
  std::vector<RegionLinkOverride> regionOverrides;

  /// The link between two different nodes without a node-pair override:
  /// their regions' override, else the default of their level.
  Link linkBetweenNodes(int64_t nodeA, int64_t nodeB) const;

  /// The device type named `name`, or nullptr.
  const DeviceType *findDeviceType(const std::string &name) const;
  /// The id of the first device of node `node`.
  int64_t firstDevice(int64_t node) const;
};

/// Cluster's node, region and link lookups in constant time, for the inner
/// loops that ask them per device pair (Cluster's own accessors walk the
/// node and override lists). Answers as Cluster does; refers to the
/// cluster, which must outlive the index and not change while it is used.
class ClusterIndex {
public:
  explicit ClusterIndex(const Cluster &cluster);

  const Cluster &cluster() const { return *indexed; }
  int64_t numDevices() const { return static_cast<int64_t>(nodes.size()); }
  /// As Cluster::nodeOf: -1 for a device the cluster does not have.
  int64_t nodeOf(int64_t device) const {
    return device < 0 || device >= numDevices()
               ? -1
               : nodes[static_cast<size_t>(device)];
  }
  /// A number per region, equal for the nodes of one region.
  int64_t regionOf(int64_t node) const {
    return regions[static_cast<size_t>(node)];
  }
  /// As Cluster::firstDevice.
  int64_t firstDevice(int64_t node) const {
    return firsts[static_cast<size_t>(node)];
  }
  LinkLevel level(int64_t a, int64_t b) const;
  Link link(int64_t a, int64_t b) const;
  /// The least latency of a link from a device of `from` to one of `to`
  /// (0 where they share a device), as link() gives it pair by pair, but
  /// per pair of their nodes where no device-pair override could tell two
  /// devices of a node apart.
  double leastLatency(const std::vector<int64_t> &from,
                      const std::vector<int64_t> &to) const;
  /// Whether some link is not its level's default (a device-pair,
  /// node-pair or region-pair override).
  bool hasOverrides() const {
    return !deviceLinks.empty() || !nodeLinks.empty() || !regionLinks.empty();
  }

private:
  const Cluster *indexed;
  /// Per device, its node; per node, its region's number and first device.
  std::vector<int64_t> nodes, regions, firsts;
  /// The overrides Cluster::link finds: the first naming each pair; by
  /// pair of region numbers (regionOf) for regions. Hashed: the cross-mesh
  /// planner asks for links millions of times on clusters of thousands of
  /// nodes, past the table below.
  llvm::DenseMap<std::pair<int64_t, int64_t>, Link> deviceLinks, nodeLinks,
      regionLinks;
  /// Per ordered pair of nodes (count x count, row-major), the link between
  /// two of their devices without a device-pair override; empty for
  /// clusters of many nodes.
  std::vector<Link> nodePairs;
  /// link() below its device-pair overrides, from the maps.
  Link nodePairLink(int64_t a, int64_t b) const;
};

/// The cluster of `nodes` of `cluster` alone, in that order (each once),
/// named `name`: their devices numbered anew node by node, the device
/// types they use, the level defaults, and the device, node and region
/// links among them. The link between any two of its devices is the one
/// between the same devices of `cluster`. Its device types and links are
/// listed in the order of its nodes and of the pairs they join: the same
/// nodes in the same order give the same cluster, whatever order `cluster`
/// lists them in.
Cluster subCluster(const Cluster &cluster, const std::vector<int64_t> &nodes,
                   const std::string &name);

/// A pair of nodes whose link is a level's default for want of a region
/// override (Cluster::regionOverrides): two nodes of one region
/// (`sameRegion`: the inter-node default) or of two regions (the
/// inter-region default); none when every such pair has its regions'
/// override, or there is no such pair. Node-pair overrides are not looked
/// at: a level is described wherever its structure needs it.
std::optional<std::pair<int64_t, int64_t>>
nodesOnLevelDefault(const Cluster &cluster, bool sameRegion);

/// Checks what the accessors above rely on: at least one node, every node
/// has a positive device count and a defined device type, names of nodes and
/// device types are unique, figures are positive (the links of levels that
/// the cluster uses, every device type's memory, bandwidth and peaks), and
/// overrides name existing, distinct devices or existing nodes. Returns what
/// is wrong, or std::nullopt.
std::optional<std::string> checkCluster(const Cluster &cluster);

} // namespace parplan::cost

#endif // PARPLAN_COST_CLUSTER_H
