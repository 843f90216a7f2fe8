//===- CrossMesh.h - planning a tensor's move between meshes ----*- C++ -*-===//
//
// A tensor laid out on a source mesh is needed on a destination mesh of
// other devices (another pipeline stage). Each destination device needs the
// tiles where its block meets the source blocks; a tile may have several
// holders (a replicated source) and several receivers (a replicated
// destination). The planner picks, per mode, who sends what to whom, and
// prices it with each host's network card and each device's intra-node
// links (the cross-mesh resharding of "On Optimizing the Communication of
// Model Parallelism", MLSys 2023). docs/cross-mesh.md has the formulas.
// No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_CROSSMESH_H
#define PARPLAN_COST_CROSSMESH_H

#include "parplan/Cost/Cluster.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Sbp/CrossMeshPart.h"
#include "parplan/Sbp/Sbp.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parplan::cost {

/// A tensor of `shape` (elements of `elementBytes` bytes) laid out by
/// `sourceLayout` on `source`, needed in `destinationLayout` on
/// `destination`.
struct CrossMeshProblem {
  std::string tensor;
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
  DeviceMesh source, destination;
  NdSbp sourceLayout, destinationLayout;
};

/// A region of the tensor one source block and one destination block
/// share: the source devices holding it and the destination devices
/// needing it (cluster device ids, ascending).
struct CrossMeshTile {
  Slice region;
  int64_t bytes = 0;
  std::vector<int64_t> holders;
  std::vector<int64_t> receivers;
};

/// How the tiles move.
enum class CrossMeshMode {
  /// Every receiver gets every tile it needs from one holder.
  SendRecv,
  /// Each tile crosses to a host once, to one receiver there, which passes
  /// it to the host's other receivers.
  SendRecvAllGather,
  /// Each tile is broadcast once from one holder to every host needing it
  /// (a chain through those hosts), and within each host to its receivers.
  Broadcast,
};

/// Which holder sends a tile, and in what order the tiles move.
enum class CrossMeshBalancing {
  /// The first holder (and in Broadcast, a holder on the receiving host
  /// whenever there is one), tiles in row-major order.
  None,
  /// Tiles in decreasing size, each from the holding host whose network
  /// card has sent least so far.
  ByBytes,
  /// Tiles and their holders chosen one at a time on the timeline: of the
  /// next few largest tiles, the tile and holding host whose transfers can
  /// start first (the paper's load balancing by the order of broadcasts).
  ByOrder,
};

/// Every mode and every balancing, simplest first.
inline constexpr CrossMeshMode kCrossMeshModes[] = {
    CrossMeshMode::SendRecv, CrossMeshMode::SendRecvAllGather,
    CrossMeshMode::Broadcast};
inline constexpr CrossMeshBalancing kCrossMeshBalancings[] = {
    CrossMeshBalancing::None, CrossMeshBalancing::ByBytes,
    CrossMeshBalancing::ByOrder};

const char *toString(CrossMeshMode mode);
const char *toString(CrossMeshBalancing balancing);
/// Every mode's and every balancing's name, as toString spells them.
std::vector<std::string> crossMeshModeNames();
std::vector<std::string> crossMeshBalancingNames();
/// The inverses of toString; std::nullopt for any other text.
std::optional<CrossMeshMode> parseCrossMeshMode(const std::string &text);
std::optional<CrossMeshBalancing>
parseCrossMeshBalancing(const std::string &text);

/// One transfer of a tile (Sbp/CrossMeshPart.h: the plan file's
/// transfers, which the executor reads, are these).
using parplan::CrossMeshTransfer;

/// A plan for moving the tensor and what it costs: the bytes each host's
/// network card sends and receives and each device sends and receives over
/// intra-node links, and the time the transfers take run in their order,
/// each as soon as its cards and links are free and its sender has the
/// tile, plus the slowest link's latency.
struct CrossMeshSchedule {
  CrossMeshMode mode = CrossMeshMode::SendRecv;
  CrossMeshBalancing balancing = CrossMeshBalancing::None;
  std::vector<CrossMeshTransfer> transfers;
  /// Indexed by node (host), then by device, over the whole cluster.
  std::vector<double> hostSent, hostReceived;
  std::vector<double> deviceSent, deviceReceived;
  double seconds = 0;
  /// The busiest card or link's seconds of transfer: `seconds` less the
  /// latency and the time cards wait for each other.
  double busiestSeconds = 0;
};

/// Why `problem` cannot be planned on `cluster`, naming the tensor and the
/// meshes: a mesh checkMesh rejects, meshes that share a device, a layout
/// invalid for the shape or a partial one (reduce it first). nullopt when
/// it can.
std::optional<std::string> checkCrossMesh(const CrossMeshProblem &problem,
                                          const Cluster &cluster);

/// The tiles of a valid problem, in row-major order of their regions.
std::vector<CrossMeshTile> crossMeshTiles(const CrossMeshProblem &problem);

/// A schedule for a valid problem.
CrossMeshSchedule planCrossMesh(const CrossMeshProblem &problem,
                                const Cluster &cluster, CrossMeshMode mode,
                                CrossMeshBalancing balancing);
/// The same from the problem's tiles (crossMeshTiles) and an index of the
/// cluster, for a caller planning one problem several ways: the tiles of
/// two large meshes are most of the work.
CrossMeshSchedule planCrossMesh(const std::vector<CrossMeshTile> &tiles,
                                const ClusterIndex &cluster, CrossMeshMode mode,
                                CrossMeshBalancing balancing);

/// `transfers` of `tiles` (only their bytes count) run in order as the
/// planner runs its own (each as soon as its cards and links are free and
/// its sender has the tile): the schedule they make, its seconds and bytes
/// per host and device. What the simulator charges a plan's move.
CrossMeshSchedule timeCrossMesh(const std::vector<CrossMeshTile> &tiles,
                                std::vector<CrossMeshTransfer> transfers,
                                const ClusterIndex &cluster);

/// The placement (placeMeshes) of a problem's two meshes, its key
/// extended by the tensor and the layouts: problems with equal keys have
/// plans that are shifts of each other (shiftSchedule).
MeshPlacement placeCrossMesh(const CrossMeshProblem &problem,
                             const Cluster &cluster);

/// `schedule` moved by `deviceShift` devices and `nodeShift` nodes: what
/// planCrossMesh gives for the moved problem. The shifts must be the
/// difference of the shifts of two problems with equal placeCrossMesh
/// keys (or move a schedule to such a key's own devices and back), so
/// that every device and node it names stays on the cluster.
CrossMeshSchedule shiftSchedule(const CrossMeshSchedule &schedule,
                                int64_t deviceShift, int64_t nodeShift);

/// No schedule is faster: for every host, the bytes it must receive (tiles
/// its devices need that none of them holds) and the bytes it must send
/// (tiles only it holds that another host needs), over its network card;
/// the largest.
double crossMeshLowerBound(const CrossMeshProblem &problem,
                           const Cluster &cluster);
/// The same with an index of the cluster, without making the tiles (what
/// the layout search prices moves by).
double crossMeshLowerBound(const CrossMeshProblem &problem,
                           const ClusterIndex &cluster);
/// The same from the problem's tiles and an index of the cluster.
double crossMeshLowerBound(const std::vector<CrossMeshTile> &tiles,
                           const ClusterIndex &cluster);

} // namespace parplan::cost

#endif // PARPLAN_COST_CROSSMESH_H
