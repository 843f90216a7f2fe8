//===- Placement.h - which machines of a cluster a plan runs on -*- C++ -*-===//
//
// On a cluster spread over regions, the machines that take part in the plan:
// groups of nodes (a node, a region's nodes of one device type, a region,
// every node region by region), each listed in an order that does not depend
// on the order the cluster file lists its machines, ranked by a quick
// estimate of the step; the compile lays out the best few on a cluster of
// those nodes alone and keeps the fastest plan (docs/pipeline.md#placement).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DRIVER_PLACEMENT_H
#define PARPLAN_DRIVER_PLACEMENT_H

#include "parplan/Cost/Cluster.h"

#include <string>
#include <vector>

namespace parplan::driver {

/// A group of a cluster's nodes a plan may be placed on.
struct PlacementCandidate {
  enum class Kind { Node, RegionType, Region, Everything };
  Kind kind = Kind::Node;
  /// Node ids of the cluster, in the order the group's cluster numbers
  /// them.
  std::vector<int64_t> nodes;
  /// What it is, for the summary: "node rome-44", "region Rome's
  /// A100-SXM4-80GB", "region Rome", "every node, region by region".
  std::string what;
  /// Its devices, and the step of quickEstimate.
  int64_t devices = 0;
  double estimate = 0;
};

/// What quickEstimate needs of the model's training step.
struct StepWork {
  /// FLOPs of one step and the bytes its ops move in device memory, all
  /// devices together.
  double flops = 0, bytes = 0;
  /// Bytes of the trained parameters (their gradients are as large).
  double parameterBytes = 0;
  /// The global batch (0: not known): split over the devices, it keeps as
  /// many busy as its largest divisor not above their count.
  int64_t batch = 0;
  /// The element type of its matrix products.
  cost::ComputeType type = cost::ComputeType::F32;
  /// Bytes the step's activations carry across a cut between layers one
  /// way (0: not known): the median forward op result at the whole batch.
  /// What a pipeline sends from one stage to the next per step.
  double crossingBytes = 0;
  /// Bytes of the parameters read in more than one place (an embedding
  /// tied to the output layer): what the last stage sends back to the
  /// first per step, each way.
  double loopBytes = 0;
};

/// The candidates of `cluster`: every node; per region, its nodes of each
/// device type and all its nodes; every node, region by region along
/// regionsAlongPath. A group's nodes go fastest device type first, then
/// more devices first, then by name, and regions by their total speed,
/// then by name: the same nodes listed in another order give the same
/// groups. Groups of the same nodes are listed once (the smallest kind).
std::vector<PlacementCandidate>
placementCandidates(const cost::ClusterIndex &cluster, const StepWork &work);

/// The regions of `cluster` and their nodes in the candidates' order, not
/// the file's: nodes of faster devices first, then of more devices, then
/// by name; regions of more speed first, then by name.
std::vector<std::pair<std::string, std::vector<int64_t>>>
regionsInOrder(const cost::Cluster &cluster, cost::ComputeType type);

/// The regions of `cluster` (each with its nodes as regionsInOrder lists
/// them) in the order a pipeline's stages pass through them when its
/// devices are numbered region by region: the path through every region
/// whose slowest hop is fastest, then whose hops together are fastest, a
/// hop taking the link's latency plus `work.crossingBytes` at its
/// bandwidth (between the regions' first nodes), and where the model ties
/// weights, the hop back from the last region to the first
/// `work.loopBytes`. Exact up to 12 regions (a bottleneck bound, then
/// Held-Karp's dynamic program under it);
/// beyond, the best of the nearest-neighbour paths from each region. Of
/// its two ends, the one regionsInOrder lists first leads, and the same
/// machines listed in another order give the same path.
std::vector<std::pair<std::string, std::vector<int64_t>>>
regionsAlongPath(const cost::ClusterIndex &cluster, const StepWork &work);

/// Every node of `cluster`, region by region along regionsAlongPath.
std::vector<int64_t> nodesAlongPath(const cost::ClusterIndex &cluster,
                                    const StepWork &work);

/// The FLOP/s of `node`'s devices together at `type`, as the cost model
/// prices a kernel.
double nodeSpeed(const cost::Cluster &cluster, int64_t node,
                 cost::ComputeType type);

/// The element type a training step's matrix products run in under
/// `mixedPrecision` (a compile's option: none, bf16, fp16).
cost::ComputeType stepComputeType(const std::string &mixedPrecision);

/// The nodes of `cluster`'s fastest device type at `type` (a device's
/// FLOP/s as the cost model prices a kernel), in the candidates' order;
/// empty where every node is of that type.
std::vector<int64_t> fastestTypeNodes(const cost::Cluster &cluster,
                                      cost::ComputeType type);

/// The nodes of `cluster` with those of each device type together: the
/// types fastest first at `type` (as fastestTypeNodes judges them), then
/// by name, each type's nodes in their listed order. Empty where the
/// cluster lists them so already.
std::vector<int64_t> nodesGroupedByType(const cost::Cluster &cluster,
                                        cost::ComputeType type);

/// A quick estimate of a step of `work` on `nodes` of `cluster`, to rank
/// candidates (not a prediction): the FLOPs at the devices' summed speed
/// and the bytes at their summed memory bandwidth (the cost model's
/// roofline, the work split evenly over as many devices as the batch
/// divides among), plus a ring all-reduce of the gradients over the slowest
/// link between the nodes (within the node on one). On two nodes or more of
/// one device type, the lesser of that and a pipeline through the nodes in
/// their order (where `work.crossingBytes` is known): every device busy,
/// each node's share of the gradients reduced within it, the slowest hop's
/// activations (both ways) bounding the step, a tied parameter's exchange
/// between the last node and the first added. Infinite where the devices'
/// memory together cannot hold four copies of the parameters (weights,
/// gradients, two optimizer moments).
double quickEstimate(const cost::ClusterIndex &cluster,
                     const std::vector<int64_t> &nodes, const StepWork &work);

/// Of `candidates` (estimated), those the compile lays out: the best by
/// estimate of single nodes, of groups within one region, and of all, at
/// most `count`, best first; none that cannot fit, and no node alike
/// another taken (of the same device type and count, and the same link
/// within).
std::vector<PlacementCandidate>
placementsToTry(const cost::ClusterIndex &cluster,
                std::vector<PlacementCandidate> candidates, size_t count);

} // namespace parplan::driver

#endif // PARPLAN_DRIVER_PLACEMENT_H
