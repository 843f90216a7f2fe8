//===- ShardingCostModel.h - prices of layouts on a mesh --------*- C++ -*-===//
//
// What sbp-assign and insert-boxing both need to price a layout: the
// cluster, the mesh over it, the link each mesh axis crosses, the device
// that bounds compute and memory, and the bytes a tensor type moves. One
// place, so that the search and the boxing it inserts agree on every figure
// (docs/sbp-assign.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_SHARDINGCOSTMODEL_H
#define PARPLAN_TRANSFORMS_SHARDINGCOSTMODEL_H

#include "parplan/Cost/Annotations.h"
#include "parplan/Cost/Boxing.h"
#include "parplan/Cost/Cluster.h"
#include "parplan/Cost/CrossMesh.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Dialect/SBP/SBPOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Types.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

namespace parplan {

/// A move between the meshes of two stages, as insert-cross-mesh writes it
/// and the lowering runs it: the source is boxed on its mesh to `sent` (its
/// Partial entries reduced to Broadcast: the planner moves whole values),
/// the planner's schedule in `mode` and `balancing` delivers `received`
/// (the destination layout with Partial entries as Broadcast), which is
/// boxed on the destination mesh to the destination layout.
struct CrossMeshCost {
  /// The three parts' seconds together.
  double time = 0;
  NdSbp sent, received;
  cost::CrossMeshMode mode = cost::CrossMeshMode::SendRecv;
  cost::CrossMeshBalancing balancing = cost::CrossMeshBalancing::None;
  /// The planner's seconds for the move alone, and the source mesh's
  /// boxing's before it (the rest of `time` is the destination's after).
  double moveTime = 0, beforeTime = 0;
};

class ShardingCostModel;

/// The models that price a cross-mesh move's two boxings, each on its own
/// mesh's devices and links: on devices of mixed types a partial gradient
/// on a stage of P100s over PCIe is summed at their pace, not at the A100
/// stage's over NVLink. Null: the model asked (meshes of one kind).
struct CrossMeshSides {
  const ShardingCostModel *source = nullptr, *destination = nullptr;
};

class ShardingCostModel {
public:
  /// Lays a mesh of `meshShape` over the first devices of `cluster` (an
  /// empty shape takes the cluster's default). std::nullopt with `error`
  /// set when the shape does not fit the cluster.
  static std::optional<ShardingCostModel>
  load(const cost::Cluster &cluster,
       std::optional<std::vector<int64_t>> meshShape, bool mixedPrecision,
       std::string &error);
  /// The model of `mesh`, devices of `cluster` placed already (a pipeline
  /// stage's): its own devices' types and links.
  static ShardingCostModel onMesh(const cost::Cluster &cluster,
                                  cost::DeviceMesh mesh, bool mixedPrecision);
  /// The same on the cluster `presetName` names (cost::resolveCluster: a
  /// preset, or a cluster file), for tests and tools that price without a
  /// module.
  static std::optional<ShardingCostModel>
  load(const std::string &presetName,
       std::optional<std::vector<int64_t>> meshShape, bool mixedPrecision,
       std::string &error);

  const cost::Cluster &getCluster() const { return cluster; }
  const cost::DeviceMesh &getMesh() const { return mesh; }
  const std::vector<int64_t> &getMeshShape() const { return mesh.shape; }
  const std::vector<cost::Link> &getAxisLinks() const { return axisLinks; }
  const MeshShares &getShares() const { return mesh.shares; }
  /// meshLargestBlock of the model's mesh.
  const std::vector<int64_t> &largestBlockCoordinate() const {
    return largestBlock;
  }

  /// The mesh device with the least memory, and the slowest one (lowest
  /// peak in the compute type): they bound memory and compute time.
  int64_t getSmallestMemoryDevice() const { return smallestMemoryDevice; }
  double getDeviceMemoryBytes() const;
  const cost::DeviceType &getSlowestDeviceType() const;

  bool isMixedPrecision() const { return mixedPrecision; }
  /// The element type that compute runs in: bf16 (or f16) under mixed
  /// precision where the device has it, else the tensor's own.
  cost::ComputeType computeType(mlir::Type elementType) const;
  /// Bytes per element as stored and moved: 2 for floating-point values
  /// under mixed precision, the type's width otherwise (1 for i1).
  int64_t elementBytes(mlir::Type elementType) const;

  /// Roofline time of `flops` and `bytes` on the slowest device.
  double computeTime(double flops, double bytes, mlir::Type elementType) const;

  /// What one device does of an op: FLOPs, bytes of device memory moved
  /// (at elementBytes' width) and the type it computes in.
  struct LocalWork {
    double flops = 0;
    double bytes = 0;
    cost::ComputeType type = cost::ComputeType::F32;
    /// On a mesh of uneven shares whose axis splits the work, per position
    /// along that axis its work over `flops` and `bytes` (those of the
    /// position of the largest share); empty where every position does
    /// the same.
    llvm::SmallVector<double, 8> positionScales = {};
  };
  /// The work of `op` on one device of the mesh with its operands and
  /// results laid out as given: the op's own cost (getCost) times
  /// blockWorkFraction, the part of it the device's blocks hold. std::nullopt
  /// for an op without a cost. One formula for the search's compute time
  /// and the figures lower-to-plan writes on each kernel for the simulator
  /// (docs/simulate.md). With `coordinate`, the work of the device there;
  /// without, the most loaded device's (the first, larger part of a split
  /// that does not divide evenly), per position along an axis of uneven
  /// shares.
  std::optional<LocalWork>
  localWork(mlir::Operation *op, const std::vector<NdSbp> &operands,
            const std::vector<NdSbp> &results,
            const std::vector<int64_t> *coordinate = nullptr) const;
  /// Roofline time of `work` on the slowest device (its f32 peak where it
  /// has none for the type); on a mesh of uneven shares, the longest of
  /// the positions along that axis, each doing its share on its slowest
  /// device.
  double computeTime(const LocalWork &work) const;
  /// On a mesh of uneven shares, per position along that axis the roofline
  /// time of its part of `work` on its own slowest device (the same work
  /// everywhere where `work` has no position scales); empty on a mesh of
  /// even shares. computeTime prices every position at the slowest's pace
  /// where the work is alike; this, each at its own.
  llvm::SmallVector<double, 8> positionTimes(const LocalWork &work) const;
  /// The mesh axis whose positions take uneven shares; -1 where none does.
  int64_t getSharesAxis() const { return sharesAxis; }

  /// The shape of a ranked tensor type and its elementBytes().
  cost::TensorExtent extent(mlir::Type type) const;

  /// The cheapest boxing from `from` to `to` of a tensor of type `type`,
  /// memoized; std::nullopt when impossible.
  const std::optional<cost::BoxingCost> &
  boxing(const NdSbp &from, const NdSbp &to, mlir::Type type) const;

  /// Per position along the shares' axis, the time of boxing()'s steps
  /// on that position's own part and links (a step along the shares' axis
  /// alike everywhere); empty on a mesh of even shares or where the
  /// boxing is impossible. boxing() prices each step by the slowest
  /// position; this, each at its own. Of the first `steps` steps alone
  /// where given.
  llvm::SmallVector<double, 8>
  boxingPositionTimes(const NdSbp &from, const NdSbp &to, mlir::Type type,
                      size_t steps = SIZE_MAX) const;

  /// The cheapest move of a tensor of `type` laid out by `from` on
  /// `source` to `to` on `destination` (in `mode` when given, else the
  /// cheapest mode, in any balancing), memoized; std::nullopt with `error`
  /// set when the planner cannot plan it (a mesh off the cluster, meshes
  /// sharing a device) or a boxing is impossible. `sides` price the boxing
  /// before and after the move.
  std::optional<CrossMeshCost>
  crossMesh(const cost::DeviceMesh &source, const NdSbp &from,
            const cost::DeviceMesh &destination, const NdSbp &to,
            mlir::Type type, std::optional<cost::CrossMeshMode> mode,
            std::string &error, CrossMeshSides sides = {}) const;

  /// The same move as crossMesh(), its middle part priced by the planner's
  /// lower bound (cost::crossMeshLowerBound) plus the latency between the
  /// meshes rather than planned in every mode: what the search ranks a
  /// pair of layouts by, since planning each of the hundreds of pairs of a
  /// use between large meshes takes minutes. `mode` and `balancing` are
  /// left at their defaults.
  std::optional<CrossMeshCost>
  crossMeshEstimate(const cost::DeviceMesh &source, const NdSbp &from,
                    const cost::DeviceMesh &destination, const NdSbp &to,
                    mlir::Type type, std::string &error,
                    CrossMeshSides sides = {}) const;

private:
  std::optional<CrossMeshCost>
  priceCrossMesh(const cost::DeviceMesh &source, const NdSbp &from,
                 const cost::DeviceMesh &destination, const NdSbp &to,
                 mlir::Type type, std::optional<cost::CrossMeshMode> mode,
                 bool estimate, CrossMeshSides sides, std::string &error) const;

  ShardingCostModel() = default;

  /// The cluster's index for the cross-mesh planner, made once: a copy or
  /// move of the model holds another cluster and makes its own.
  const cost::ClusterIndex &clusterIndex() const;

  cost::Cluster cluster;
  mutable std::shared_ptr<const cost::ClusterIndex> indexedCluster;
  cost::DeviceMesh mesh;
  std::vector<cost::Link> axisLinks;
  int64_t smallestMemoryDevice = 0;
  bool mixedPrecision = true;
  /// The slowest device's type, as its position in `cluster.deviceTypes`
  /// (every candidate's compute time reads it; a device's type is a walk
  /// over the nodes).
  size_t slowestType = 0;
  /// The mesh axis of uneven shares (-1: none); per position along it, its
  /// slowest device's type (as `slowestType`).
  int64_t sharesAxis = -1;
  std::vector<size_t> shareSlowestTypes;
  /// Per position along `sharesAxis`, its part and its links: boxings
  /// along the other axes priced by the slowest position.
  cost::PositionLinks positionLinks;
  /// Per position along `sharesAxis`, its entry in `positionLinks`.
  std::vector<size_t> positionEntries;
  /// largestBlockCoordinate(), set once: the search asks for it per
  /// candidate.
  std::vector<int64_t> largestBlock;
  double rooflineTime(const LocalWork &work,
                      const cost::DeviceType &type) const;
  /// The memo of boxing(): a hash of (from, to, type) to a position in
  /// `boxingCosts`, whose entries stay in place as it grows.
  mutable llvm::DenseMap<std::tuple<uint64_t, uint64_t, const void *>, size_t>
      boxingIndex;
  mutable std::deque<std::optional<cost::BoxingCost>> boxingCosts;
  /// The memo of crossMesh(), by the meshes' placement (an index into
  /// `placementKeys`), the layouts, the type, the mode asked for (-1:
  /// any, -2: the estimate) and the models of its boxings: the cost, or
  /// why there is none.
  struct PricedMove {
    std::optional<CrossMeshCost> cost;
    std::string error;
  };
  using MoveKey = std::tuple<size_t, uint64_t, uint64_t, const void *, int>;
  mutable std::map<std::tuple<MoveKey, const void *, const void *>, PricedMove>
      crossMeshCosts;
  /// A move alone, between the layouts it carries: its mode, balancing
  /// and seconds, or why the planner cannot plan it.
  struct PlannedMove {
    cost::CrossMeshMode mode = cost::CrossMeshMode::SendRecv;
    cost::CrossMeshBalancing balancing = cost::CrossMeshBalancing::None;
    double moveTime = 0;
    std::string error;
  };
  /// The cheapest schedule of the move of `sent` on `source` to `received`
  /// on `destination` (in `mode` when given), or with `estimate` the lower
  /// bound plus the latency between the meshes.
  PlannedMove planMove(const cost::DeviceMesh &source, const NdSbp &sent,
                       const cost::DeviceMesh &destination,
                       const NdSbp &received, mlir::Type type,
                       std::optional<cost::CrossMeshMode> mode,
                       bool estimate) const;
  /// planMove's answers, by the key of crossMeshCosts with the layouts the
  /// move carries (Partial sent as Broadcast): moves whose layouts differ
  /// only by a boxing on either side are planned once.
  mutable std::map<MoveKey, PlannedMove> plannedMoves;
  /// Placements (cost::placeMeshes) by the meshes' shapes and devices, as
  /// an index into `placementKeys`: the search asks for the same pair of
  /// meshes hundreds of thousands of times.
  mutable std::map<std::vector<int64_t>, size_t> placementOfMeshes;
  mutable std::map<std::string, size_t> placementKeys;
  size_t placementOf(const cost::DeviceMesh &source,
                     const cost::DeviceMesh &destination) const;
};

/// Reads the annotations file at `path` (pinned layouts,
/// docs/sbp-annotations.md) and stores it on `module` as `sbp.annotations`
/// (its name and text), where sbp-assign finds it instead of reading the
/// file. Returns false with `error` set when the file cannot be read.
bool attachAnnotations(mlir::ModuleOp module, const std::string &path,
                       std::string &error);
/// The annotations `module` carries, parsed: std::nullopt with `error`
/// empty when it carries none, or set ("FILE:LINE:COL: ...") when they do
/// not parse.
std::optional<Annotations> carriedAnnotations(mlir::ModuleOp module,
                                              std::string &error);

/// The cost model of each mesh a pass meets, on the mesh's own devices
/// (as sbp-assign priced each stage), loaded once per placement: meshes
/// placed alike (cost::placeMeshes) share one. `cluster`
/// (ClusterAnalysis's, which lives in the context) may be null: a pass
/// without prices to look up needs none.
class MeshCostModels {
public:
  MeshCostModels(const cost::Cluster *cluster, bool mixedPrecision)
      : cluster(cluster), mixedPrecision(mixedPrecision) {}

  /// The model of `mesh`; null with `error` set when there is no cluster
  /// or the mesh does not fit it.
  const ShardingCostModel *get(sbp::MeshOp mesh, std::string &error);

private:
  const cost::Cluster *cluster;
  bool mixedPrecision;
  std::map<std::string, std::optional<ShardingCostModel>> models;
  /// Each mesh op's model, once its placement was keyed (a pass asks per
  /// boxing).
  llvm::DenseMap<mlir::Operation *, const ShardingCostModel *> ofMesh;
};

/// The shape, devices (0 .. N-1 when it lists none) and shares of `mesh`.
cost::DeviceMesh deviceMeshOf(sbp::MeshOp mesh);

/// Whale's hardware-aware shares for `mesh`: where its devices' types
/// differ along one mesh axis only (each node one type, say), that axis's
/// positions weighted by how fast their devices run `function`'s ops (the
/// inverse of the sum of the ops' roofline times, whole, on the position's
/// devices). With `rows` (the batch's, 0: none) the weights are the rows
/// each position takes, summing to `rows` and placed where they end
/// soonest (the slowest position as early as whole rows allow), so that a
/// split of the batch, or of any multiple of it (the rows times the
/// sequence after a reshape), is exactly in proportion; in whole rows per
/// device where `rows` divides by a position's devices; else thousandths
/// of the fastest. Where the types are alike, `rows` not dividing by the
/// first axis, near-even whole rows along it. Empty where the types differ
/// along more than one axis; where they are alike and `rows` is 0, the
/// mesh has no axis of two or more first, or that axis divides `rows`;
/// where `rows` leaves a position none; or where the rows come out even.
MeshShares speedShares(const cost::Cluster &cluster,
                       const cost::DeviceMesh &mesh,
                       mlir::func::FuncOp function, bool mixedPrecision,
                       int64_t rows);

/// Whale's shares in tensor-parallel groups: where whole rows per device
/// cannot follow the speeds of a mesh of 1 or 2 axes whose types differ
/// along the first (a node of each type), its devices in order as
/// [devices / k, k], each group of k devices of one node taking whole rows
/// by its speed, which the group may split further (a tensor's columns,
/// say) while whole rows per device could not: of 64 rows on an A100 and a
/// V100 node, 2.25 : 1.75 per device, 9 : 7 per group of 4. The k whose
/// parts end nearest their proportion, a hundredth nearer at least than
/// whole rows per device (or even parts, where those do not follow the
/// speeds at all), and every other k as near (within a thousandth), by
/// fewest devices a group; empty where none is.
std::vector<cost::DeviceMesh> speedGroupedMeshes(const cost::Cluster &cluster,
                                                 const cost::DeviceMesh &mesh,
                                                 mlir::func::FuncOp function,
                                                 bool mixedPrecision,
                                                 int64_t rows);

/// The layout gradients take: Split stays Split, Broadcast becomes Partial
/// (each user adds its contribution), Partial becomes Broadcast. The backward
/// of a boxing from -> to is a boxing dual(to) -> dual(from).
NdSbp gradientLayout(const NdSbp &layout);

/// The fraction of an op's work one device does under a signature: each
/// mesh axis along which some operand or result is split divides it;
/// Broadcast and Partial alone repeat the whole op there. Exact where every
/// split divides its extent evenly over even shares; blockWorkFraction
/// otherwise.
double localWorkFraction(const std::vector<NdSbp> &operands,
                         const std::vector<NdSbp> &results,
                         const std::vector<int64_t> &meshShape);

/// The shape of a ranked tensor type of static shape; empty otherwise.
std::vector<int64_t> staticShapeOf(mlir::Type type);

/// The fraction of an op's work the device at `coordinate` does: the block
/// it holds of the operand or result split along the most mesh axes (a
/// result first), over the whole tensor, and for each mesh axis that tensor
/// does not split but another does, that other's block along the axis
/// alone. Uneven parts count as they are: 5 rows split over 2 devices give
/// the first 3 of 5, a node of 20 rows of 128 (its share) 20/128.
/// `shapes` and `layouts` pair up; a tensor of an unknown shape counts as
/// splitting nothing.
double blockWorkFraction(const std::vector<std::vector<int64_t>> &shapes,
                         const std::vector<const NdSbp *> &layouts,
                         const std::vector<int64_t> &meshShape,
                         const MeshShares &shares,
                         const std::vector<int64_t> &coordinate);
/// The same for `op` with its results and operands laid out as given
/// (results first).
double blockWorkFraction(mlir::Operation *op,
                         const std::vector<NdSbp> &operands,
                         const std::vector<NdSbp> &results,
                         const std::vector<int64_t> &meshShape,
                         const MeshShares &shares,
                         const std::vector<int64_t> &coordinate);

/// The coordinate of a device holding the largest block of every layout on
/// a mesh of `meshShape` and `shares`: the largest share along each axis of
/// uneven shares, 0 elsewhere (the first parts of balanced splits are the
/// larger).
std::vector<int64_t> meshLargestBlock(const std::vector<int64_t> &meshShape,
                                      const MeshShares &shares);

} // namespace parplan

#endif // PARPLAN_TRANSFORMS_SHARDINGCOSTMODEL_H
