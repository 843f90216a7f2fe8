//===- SBPDialect.cpp - sbp dialect ---------------------------------------===//

#include "parplan/Dialect/SBP/SBPDialect.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Dialect/SBP/SBPOps.h"

#include "parplan/Dialect/AttrNames.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace parplan::sbp;

#include "parplan/Dialect/SBP/SBPDialect.cpp.inc"

void SBPDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "parplan/Dialect/SBP/SBPOps.cpp.inc"
      >();
}

LogicalResult SBPDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  if (attribute.getName() == parplan::kExplainAttrName) {
    if (!isa<DictionaryAttr>(attribute.getValue()))
      return op->emitOpError()
             << attribute.getName() << " must be a dictionary";
    return success();
  }
  if (attribute.getName() == parplan::kLayoutPlanAttrName) {
    if (!isa<ModuleOp>(op) || !isa<LayoutPlanAttr>(attribute.getValue()))
      return op->emitOpError() << "sbp.plan must be a #sbp.layout_plan on a "
                                  "module";
    return success();
  }
  if (attribute.getName() == parplan::kAnnotationsAttrName) {
    auto carried = dyn_cast<DictionaryAttr>(attribute.getValue());
    if (!isa<ModuleOp>(op) || !carried || !carried.getAs<StringAttr>("file") ||
        !carried.getAs<StringAttr>("text"))
      return op->emitOpError() << "sbp.annotations must be a dictionary of "
                                  "strings `file` and `text` on a module";
    return success();
  }
  if (attribute.getName() == parplan::kClusterAttrName) {
    if (!isa<ModuleOp>(op) || !isa<ClusterAttr>(attribute.getValue()))
      return op->emitOpError() << "sbp.cluster must be a #sbp.cluster on a "
                                  "module";
    return success();
  }
  if (attribute.getName() == parplan::kStageAttrName) {
    auto stage = dyn_cast<FlatSymbolRefAttr>(attribute.getValue());
    if (!stage)
      return op->emitOpError() << "sbp.stage must name an sbp.mesh";
    if (!SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, stage))
      return op->emitOpError()
             << "sbp.stage: " << stage << " does not name an sbp.mesh";
    return success();
  }
  if (attribute.getName() == parplan::kNoFitAttrName) {
    if (!isa<ModuleOp>(op) || !isa<NoFitAttr>(attribute.getValue()))
      return op->emitOpError() << "sbp.no_fit must be a #sbp.no_fit on a "
                                  "module";
    return success();
  }
  // Model chunks of interleaved stages (place-stages' chunks): how many a
  // stage holds, on the module; which one an op is in (for a move, on the
  // sending side, and sbp.destination_chunk on the receiving one).
  if (attribute.getName() == parplan::kChunksAttrName) {
    auto chunks = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!isa<ModuleOp>(op) || !chunks || chunks.getInt() < 1)
      return op->emitOpError()
             << "sbp.chunks must be a positive integer on a module";
    return success();
  }
  if (attribute.getName() == parplan::kChunkAttrName ||
      attribute.getName() == parplan::kDestinationChunkAttrName) {
    auto chunk = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!chunk || chunk.getInt() < 0)
      return op->emitOpError()
             << attribute.getName() << " must be a non-negative integer";
    return success();
  }
  if (attribute.getName() == parplan::kStageLayersAttrName) {
    auto layers = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!isa<MeshOp>(op) || !layers || layers.getInt() < 1)
      return op->emitOpError()
             << "sbp.layers must be a positive integer on an sbp.mesh";
    return success();
  }
  if (attribute.getName() == parplan::kFinerCutAttrName) {
    if (!isa<ModuleOp>(op) || !isa<UnitAttr>(attribute.getValue()))
      return op->emitOpError()
             << "sbp.finer_cut must be a unit attribute on a module";
    return success();
  }
  if (attribute.getName() == parplan::kStageLayerPartsAttrName) {
    auto layers = dyn_cast<ArrayAttr>(attribute.getValue());
    if (!isa<MeshOp>(op) || !layers || layers.empty() ||
        !llvm::all_of(layers, [](Attribute layer) {
          auto name = dyn_cast<StringAttr>(layer);
          return name && !name.getValue().empty();
        }))
      return op->emitOpError() << "sbp.layer_parts must be a non-empty array "
                                  "of layer names on an sbp.mesh";
    return success();
  }
  if (attribute.getName() == parplan::kStageHeadAttrName) {
    if (!isa<MeshOp>(op) || !isa<UnitAttr>(attribute.getValue()))
      return op->emitOpError() << "sbp.head must be a unit attribute on an "
                                  "sbp.mesh";
    return success();
  }
  // sbp-assign's choice to keep a parameter's forward boxing for the
  // backward (insert-boxing reads it): on the parameter.
  if (attribute.getName() == parplan::kKeptForBackwardAttrName) {
    if (op->getName().getStringRef() != "nn.param" ||
        !isa<UnitAttr>(attribute.getValue()))
      return op->emitOpError() << "sbp.kept_for_backward must be a unit "
                                  "attribute on an nn.param";
    return success();
  }
  if (attribute.getName() != parplan::kShardingAttrName)
    return op->emitOpError()
           << "unknown sbp attribute '" << attribute.getName() << "'";
  auto sharding = dyn_cast<ShardingAttr>(attribute.getValue());
  if (!sharding)
    return op->emitOpError() << "sbp.sharding must be a #sbp.sharding";
  if (sharding.getOperands().size() != op->getNumOperands() ||
      sharding.getResults().size() != op->getNumResults())
    return op->emitOpError()
           << "sbp.sharding lays out " << sharding.getOperands().size()
           << " operands and " << sharding.getResults().size()
           << " results; the op has " << op->getNumOperands() << " and "
           << op->getNumResults();
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, sharding.getMesh());
  if (!mesh)
    return op->emitOpError() << "sbp.sharding: " << sharding.getMesh()
                             << " does not name an sbp.mesh";
  for (auto [index, value] : llvm::enumerate(op->getOperands()))
    if (failed(detail::verifyLayout(
            op, mesh, cast<ArrayAttr>(sharding.getOperands()[index]),
            value.getType(),
            "sbp.sharding of operand " + std::to_string(index))))
      return failure();
  for (auto [index, value] : llvm::enumerate(op->getResults()))
    if (failed(detail::verifyLayout(
            op, mesh, cast<ArrayAttr>(sharding.getResults()[index]),
            value.getType(),
            "sbp.sharding of result " + std::to_string(index))))
      return failure();
  return success();
}
