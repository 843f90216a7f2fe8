//===- DeviceLowering.h - one device's program from @main -------*- C++ -*-===//
//
// What lower-to-plan hands each op (PlanLoweringOpInterface) when it builds
// the program of one device: the device's mesh coordinate, the buffer that
// holds its block of every value lowered so far, and the few ways to make
// buffers, kernels and device groups that every lowering shares.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_DEVICELOWERING_H
#define PARPLAN_TRANSFORMS_DEVICELOWERING_H

#include "parplan/Cost/CrossMesh.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Sbp/Sbp.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <memory>
#include <set>
#include <vector>

namespace parplan {

/// The plan.groups the programs name, created before the programs the
/// first time one is needed, so that every program names the same group:
/// the group along each axis of a mesh (`mesh_axes = [axis]`), and groups
/// of listed devices (a cross-mesh broadcast's).
class DeviceGroups {
public:
  /// `builder` inserts the groups (before the programs).
  explicit DeviceGroups(mlir::OpBuilder &builder) : builder(builder) {}

  /// The group of the devices along `meshAxis` of `mesh` (each device's
  /// own); a null `mesh` is the plan's.
  mlir::FlatSymbolRefAttr along(mlir::FlatSymbolRefAttr mesh, int64_t meshAxis);
  /// The group of `devices`, ranked in that order.
  mlir::FlatSymbolRefAttr ofDevices(llvm::ArrayRef<int64_t> devices);

private:
  mlir::OpBuilder &builder;
  std::map<std::pair<std::string, int64_t>, mlir::FlatSymbolRefAttr> axisGroups;
  std::map<std::vector<int64_t>, mlir::FlatSymbolRefAttr> listedGroups;
};

/// The schedule of every sbp.cross_mesh, planned once on the cluster the
/// move was priced on (cost::planCrossMesh, from the op's mode and
/// balancing) and written once as a plan.cross_mesh that every program
/// taking part reads.
class CrossMeshMoves {
public:
  /// `builder` inserts the plan.cross_mesh tables (before the programs).
  CrossMeshMoves(cost::Cluster cluster, mlir::OpBuilder &builder)
      : cluster(std::move(cluster)), builder(builder) {}

  struct Move {
    cost::CrossMeshProblem problem;
    /// The plan.cross_mesh written for it.
    mlir::FlatSymbolRefAttr table;
    /// The scratch bytes the part of any device of the source mesh (0) and
    /// of the destination mesh (1) needs (crossMeshPart).
    int64_t scratchBytes[2] = {0, 0};
  };
  /// The move of `op`; null after an error on `op` (its mode, balancing or
  /// meshes).
  const Move *plan(mlir::Operation *op);

private:
  cost::Cluster cluster;
  mlir::OpBuilder &builder;
  int64_t tableCount = 0;
  llvm::DenseMap<mlir::Operation *, std::unique_ptr<Move>> moves;
  /// Schedules by placement key, mode and balancing, moved to the key's
  /// devices: alike moves elsewhere (a pipeline's boundaries) are shifted,
  /// not planned again.
  std::map<std::string, cost::CrossMeshSchedule> schedules;
};

/// Lowers @main for one device of a program that every device with the
/// same block extents shares: the device's coordinate decides only the
/// extents of its blocks (blockShape), which it records; everything else
/// that differs between devices is said by coordinates (splits, mesh-axis
/// groups, #plan.block_offset), never by this device's values.
class DeviceLowering {
public:
  /// Lowers for `device` at `coordinate` of the mesh of `meshShape`:
  /// `mesh`, a named mesh of the plan, or null for the plan's own.
  DeviceLowering(mlir::OpBuilder &builder, DeviceGroups &groups,
                 std::vector<int64_t> meshShape,
                 std::vector<int64_t> coordinate, bool hasMesh,
                 mlir::FlatSymbolRefAttr mesh = {}, int64_t device = 0)
      : builder(builder), groups(groups), meshShape(std::move(meshShape)),
        coordinate(std::move(coordinate)), hasMesh(hasMesh), mesh(mesh),
        device(device) {}

  /// Inserts into the program.
  mlir::OpBuilder &getBuilder() { return builder; }
  const std::vector<int64_t> &getMeshShape() const { return meshShape; }
  const std::vector<int64_t> &getCoordinate() const { return coordinate; }
  /// The mesh's shares of its splits (sbp.mesh `shares`; empty: even).
  const MeshShares &getShares() const { return shares; }
  void setShares(MeshShares meshShares) { shares = std::move(meshShares); }
  /// The named mesh lowered for (null: the plan's), and the device.
  mlir::FlatSymbolRefAttr getMesh() const { return mesh; }
  int64_t getDevice() const { return device; }
  DeviceGroups &getGroups() { return groups; }
  /// The cross-mesh moves, shared by the programs; null when the plan has
  /// no named meshes.
  CrossMeshMoves *getCrossMeshMoves() const { return crossMeshMoves; }
  void setCrossMeshMoves(CrossMeshMoves *moves) { crossMeshMoves = moves; }

  /// The layout `value` is produced in: its producer's sbp.sharding result
  /// entry, the destination of a resharding step, or B on every axis for a
  /// program without layouts.
  NdSbp layoutOf(mlir::Value value) const;
  /// The layout `op` reads operand `index` in: its sbp.sharding operand
  /// entry, or B on every axis for a program without layouts.
  NdSbp operandLayout(mlir::Operation *op, unsigned index) const;

  /// The buffer holding the device's block of `value`; null before it is
  /// lowered.
  mlir::Value lookup(mlir::Value value) const { return buffers.lookup(value); }
  void map(mlir::Value value, mlir::Value buffer) { buffers[value] = buffer; }
  /// The buffer of the parameter or state named `name`; null if none.
  mlir::Value lookupNamed(llvm::StringRef name) const {
    return named.lookup(name);
  }

  /// The logical shape of a ranked tensor type.
  static std::vector<int64_t> shapeOf(mlir::Type type);
  /// The extent of the device's block of a tensor of `shape` (or `type`)
  /// under `layout`. A split that some devices see with other extents is
  /// recorded (unevenBlocks): the devices sharing this program must agree
  /// on it.
  std::vector<int64_t> blockShape(const std::vector<int64_t> &shape,
                                  const NdSbp &layout);
  std::vector<int64_t> blockShape(mlir::Type type, const NdSbp &layout) {
    return blockShape(shapeOf(type), layout);
  }
  mlir::MemRefType localType(mlir::Type type, const NdSbp &layout);
  /// The splits attribute of `layout` (plan.buffer, #plan.block_offset):
  /// per mesh axis the dimension it splits, or -1.
  mlir::DenseI64ArrayAttr splitsOf(const NdSbp &layout);
  /// Where the device's block of a tensor of `shape` under `layout` starts
  /// along `dim` (-1: along every dimension), as each device works it out.
  mlir::Attribute blockOffset(const std::vector<int64_t> &shape,
                              const NdSbp &layout, int64_t dim);

  plan::BufferOp makeBuffer(mlir::Location loc, mlir::MemRefType type,
                            plan::BufferKind kind);
  /// Names the buffer as holding the device's block of the logical tensor
  /// `name`, of `type`, laid out by `layout`.
  void describeBlock(plan::BufferOp buffer, llvm::StringRef name,
                     mlir::Type type, const NdSbp &layout);
  /// A kernel writing a new temporary of `resultType`; returns it.
  mlir::Value kernel(mlir::Location loc, llvm::StringRef name,
                     mlir::ValueRange ins, mlir::MemRefType resultType,
                     mlir::DictionaryAttr attrs = {});
  /// A constant scalar buffer.
  mlir::Value scalarConstant(mlir::Location loc, mlir::Type elementType,
                             double value);
  /// A buffer holding 1 on the devices at coordinate 0 of `meshAxis` and 0
  /// on the others: of shape [1] (which broadcasts against any block of
  /// rank 1 or more), or a scalar.
  mlir::Value firstAlongAxis(mlir::Location loc, mlir::Type elementType,
                             int64_t meshAxis, bool scalar);
  /// The group of the devices along `meshAxis` through each device.
  mlir::FlatSymbolRefAttr groupAlong(int64_t meshAxis) {
    return groups.along(mesh, meshAxis);
  }

  /// The (shape, splits) of every block blockShape was asked for whose
  /// extent differs between devices.
  const std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> &
  unevenBlocks() const {
    return uneven;
  }

private:
  mlir::OpBuilder &builder;
  DeviceGroups &groups;
  std::vector<int64_t> meshShape;
  std::vector<int64_t> coordinate;
  MeshShares shares;
  bool hasMesh;
  mlir::FlatSymbolRefAttr mesh;
  int64_t device = 0;
  CrossMeshMoves *crossMeshMoves = nullptr;
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  llvm::StringMap<mlir::Value> named;
  std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> uneven;
};

/// Attaches PlanLoweringOpInterface to every nn op (lib/Transforms/
/// LowerNNToPlan.cpp) and to the sbp resharding steps
/// (LowerReshardingToPlan.cpp).
void registerNNPlanLowering(mlir::DialectRegistry &registry);
void registerReshardingPlanLowering(mlir::DialectRegistry &registry);
/// Attaches it to sbp.cross_mesh (LowerCrossMeshToPlan.cpp).
void registerCrossMeshPlanLowering(mlir::DialectRegistry &registry);

} // namespace parplan

#include "parplan/Transforms/Lowering/PlanLoweringInterface.h.inc"

#endif // PARPLAN_TRANSFORMS_DEVICELOWERING_H
