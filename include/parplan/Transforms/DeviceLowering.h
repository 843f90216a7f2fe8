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

#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Support/Sbp.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <set>
#include <vector>

namespace parplan {

/// The plan.group along each mesh axis (`mesh_axes = [axis]`), created
/// before the programs the first time a collective needs it, so that every
/// program names the same group.
class DeviceGroups {
public:
  /// `builder` inserts the groups (before the programs).
  explicit DeviceGroups(mlir::OpBuilder &builder) : builder(builder) {}

  /// The group of the devices along `meshAxis` (each device's own).
  mlir::FlatSymbolRefAttr along(int64_t meshAxis);

private:
  mlir::OpBuilder &builder;
  std::map<int64_t, mlir::FlatSymbolRefAttr> groups;
};

/// Lowers @main for one device of a program that every device with the
/// same block extents shares: the device's coordinate decides only the
/// extents of its blocks (blockShape), which it records; everything else
/// that differs between devices is said by coordinates (splits, mesh-axis
/// groups, #plan.block_offset), never by this device's values.
class DeviceLowering {
public:
  DeviceLowering(mlir::OpBuilder &builder, DeviceGroups &groups,
                 std::vector<int64_t> meshShape,
                 std::vector<int64_t> coordinate, bool hasMesh)
      : builder(builder), groups(groups), meshShape(std::move(meshShape)),
        coordinate(std::move(coordinate)), hasMesh(hasMesh) {}

  /// Inserts into the program.
  mlir::OpBuilder &getBuilder() { return builder; }
  const std::vector<int64_t> &getMeshShape() const { return meshShape; }

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
    return groups.along(meshAxis);
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
  bool hasMesh;
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  llvm::StringMap<mlir::Value> named;
  std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> uneven;
};

/// Attaches PlanLoweringOpInterface to every nn op (lib/Transforms/
/// LowerNNToPlan.cpp) and to the sbp resharding steps
/// (LowerReshardingToPlan.cpp).
void registerNNPlanLowering(mlir::DialectRegistry &registry);
void registerReshardingPlanLowering(mlir::DialectRegistry &registry);

} // namespace parplan

#include "parplan/Transforms/PlanLoweringInterface.h.inc"

#endif // PARPLAN_TRANSFORMS_DEVICELOWERING_H
