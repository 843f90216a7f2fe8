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
#include <vector>

namespace parplan {

/// The plan.group of every device group along a mesh axis, created before
/// the programs the first time a collective needs it, so that every device
/// names the same group.
class DeviceGroups {
public:
  /// `builder` inserts the groups (before the programs).
  DeviceGroups(mlir::OpBuilder &builder, std::vector<int64_t> meshShape)
      : builder(builder), meshShape(std::move(meshShape)) {}

  /// The group of the devices along `meshAxis` through `coordinate`.
  mlir::FlatSymbolRefAttr along(int64_t meshAxis,
                                const std::vector<int64_t> &coordinate);

private:
  mlir::OpBuilder &builder;
  std::vector<int64_t> meshShape;
  std::map<std::vector<int64_t>, mlir::FlatSymbolRefAttr> groups;
};

class DeviceLowering {
public:
  DeviceLowering(mlir::OpBuilder &builder, DeviceGroups &groups,
                 std::vector<int64_t> meshShape,
                 std::vector<int64_t> coordinate, bool hasMesh)
      : builder(builder), groups(groups), meshShape(std::move(meshShape)),
        coordinate(std::move(coordinate)), hasMesh(hasMesh) {}

  /// Inserts into the device's program.
  mlir::OpBuilder &getBuilder() { return builder; }
  const std::vector<int64_t> &getMeshShape() const { return meshShape; }
  const std::vector<int64_t> &getCoordinate() const { return coordinate; }

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

  /// The logical shape of a ranked tensor type, and the device's block of
  /// it under `layout`.
  static std::vector<int64_t> shapeOf(mlir::Type type);
  Slice blockOf(mlir::Type type, const NdSbp &layout) const;
  mlir::MemRefType localType(mlir::Type type, const NdSbp &layout) const;

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
  /// The group of the devices along `meshAxis` through this device.
  mlir::FlatSymbolRefAttr groupAlong(int64_t meshAxis) {
    return groups.along(meshAxis, coordinate);
  }

private:
  mlir::OpBuilder &builder;
  DeviceGroups &groups;
  std::vector<int64_t> meshShape;
  std::vector<int64_t> coordinate;
  bool hasMesh;
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  llvm::StringMap<mlir::Value> named;
};

/// Attaches PlanLoweringOpInterface to every nn op (lib/Transforms/
/// LowerNNToPlan.cpp) and to the sbp resharding steps
/// (LowerReshardingToPlan.cpp).
void registerNNPlanLowering(mlir::DialectRegistry &registry);
void registerReshardingPlanLowering(mlir::DialectRegistry &registry);

} // namespace parplan

#include "parplan/Transforms/PlanLoweringInterface.h.inc"

#endif // PARPLAN_TRANSFORMS_DEVICELOWERING_H
