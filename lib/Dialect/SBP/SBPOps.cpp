//===- SBPOps.cpp - sbp dialect operations --------------------------------===//

#include "parplan/Dialect/SBP/SBPOps.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace parplan::sbp;

/// `, devices = [0, 1]` and `, shares = [[9, 5], []]`, each optional.
static ParseResult parseMeshPlacement(OpAsmParser &parser,
                                      DenseI64ArrayAttr &devices,
                                      ArrayAttr &shares) {
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc at = parser.getCurrentLocation();
    StringRef keyword;
    if (parser.parseKeyword(&keyword) || parser.parseEqual())
      return failure();
    if (keyword == "devices" && !devices) {
      devices = llvm::dyn_cast_or_null<DenseI64ArrayAttr>(
          DenseI64ArrayAttr::parse(parser, Type()));
      if (!devices)
        return failure();
      continue;
    }
    if (keyword == "shares" && !shares) {
      SmallVector<Attribute> lists;
      if (parser.parseCommaSeparatedList(
              AsmParser::Delimiter::Square, [&]() -> ParseResult {
                auto list = llvm::dyn_cast_or_null<DenseI64ArrayAttr>(
                    DenseI64ArrayAttr::parse(parser, Type()));
                if (!list)
                  return failure();
                lists.push_back(list);
                return success();
              }))
        return failure();
      shares = parser.getBuilder().getArrayAttr(lists);
      continue;
    }
    return parser.emitError(at) << "expected 'devices' or 'shares' (once "
                                   "each), got '"
                                << keyword << "'";
  }
  return success();
}

static void printMeshPlacement(OpAsmPrinter &printer, Operation *,
                               DenseI64ArrayAttr devices, ArrayAttr shares) {
  if (devices) {
    printer << ", devices = ";
    devices.print(printer);
  }
  if (shares) {
    printer << ", shares = [";
    llvm::interleaveComma(shares, printer, [&](Attribute list) {
      cast<DenseI64ArrayAttr>(list).print(printer);
    });
    printer << "]";
  }
}

#define GET_OP_CLASSES
#include "parplan/Dialect/SBP/SBPOps.cpp.inc"

//===----------------------------------------------------------------------===//
// mesh
//===----------------------------------------------------------------------===//

int64_t MeshOp::getNumDevices() {
  return parplan::meshSize(
      std::vector<int64_t>(getShape().begin(), getShape().end()));
}

int64_t MeshOp::getDeviceId(int64_t linearIndex) {
  if (std::optional<ArrayRef<int64_t>> devices = getDevices())
    return (*devices)[linearIndex];
  return linearIndex;
}

parplan::MeshShares MeshOp::getMeshShares() {
  parplan::MeshShares shares;
  if (std::optional<ArrayAttr> lists = getShares())
    for (Attribute list : *lists)
      shares.emplace_back(cast<DenseI64ArrayAttr>(list).asArrayRef().begin(),
                          cast<DenseI64ArrayAttr>(list).asArrayRef().end());
  return shares;
}

LogicalResult MeshOp::verify() {
  if (getShape().empty())
    return emitOpError() << "needs at least one mesh axis";
  for (auto [axis, size] : llvm::enumerate(getShape()))
    if (size <= 0)
      return emitOpError() << "mesh axis " << axis << " has size "
                           << (ShapedType::isDynamic(size)
                                   ? "?"
                                   : std::to_string(size))
                           << "; every axis needs at least one device";
  int64_t count = 1;
  for (int64_t size : getShape())
    if (__builtin_mul_overflow(count, size, &count))
      return emitOpError() << "has more devices than int64 can count";
  if (std::optional<std::string> error = parplan::checkShares(
          std::vector<int64_t>(getShape().begin(), getShape().end()),
          getMeshShares()))
    return emitOpError() << "shares: " << *error;
  if (getShares() && getDevices())
    return emitOpError() << "lists devices and shares: shares are the plan's "
                            "own mesh's; a mesh over listed devices (a "
                            "stage) splits evenly";
  std::optional<ArrayRef<int64_t>> devices = getDevices();
  if (!devices)
    return success();
  if (static_cast<int64_t>(devices->size()) != getNumDevices())
    return emitOpError() << "has " << getNumDevices() << " positions but "
                         << devices->size() << " device ids";
  if (std::optional<std::string> error = parplan::checkDeviceIds(
          std::vector<int64_t>(devices->begin(), devices->end())))
    return emitOpError() << *error;
  return success();
}

//===----------------------------------------------------------------------===//
// annotate, boxing, cross_mesh
//===----------------------------------------------------------------------===//

namespace {

/// Checks that `meshRef` names a mesh and that `sbp` lays out a value of
/// `type` over it; `role` names the layout in messages.
LogicalResult verifyLayout(Operation *op, SymbolTableCollection &symbolTable,
                           FlatSymbolRefAttr meshRef, ArrayAttr sbp, Type type,
                           StringRef role) {
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh)
    return op->emitOpError() << meshRef << " does not name an sbp.mesh";
  return parplan::sbp::detail::verifyLayout(op, mesh, sbp, type, role);
}

} // namespace

LogicalResult parplan::sbp::detail::verifyLayout(Operation *op, MeshOp mesh,
                                                 ArrayAttr sbp, Type type,
                                                 StringRef role) {
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor) // Scalars and tokens have no layout to check.
    return success();
  std::vector<int64_t> meshShape(mesh.getShape().begin(),
                                 mesh.getShape().end());
  std::vector<int64_t> shape(tensor.getShape().begin(),
                             tensor.getShape().end());
  for (int64_t &dim : shape)
    if (ShapedType::isDynamic(dim))
      dim = 0; // Only split axes and the rank matter here.
  if (std::optional<std::string> problem =
          parplan::checkLayout(shape, meshShape, toNdSbp(sbp)))
    return op->emitOpError() << role << " on " << meshRef << ": " << *problem;
  return success();
}

LogicalResult AnnotateOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyLayout(*this, symbolTable, getMeshAttr(), getSbp(), getType(),
                      "layout");
}

LogicalResult BoxingOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (failed(verifyLayout(*this, symbolTable, getMeshAttr(), getSrc(),
                          getType(), "source layout")))
    return failure();
  return verifyLayout(*this, symbolTable, getMeshAttr(), getDst(), getType(),
                      "destination layout");
}

OpFoldResult BoxingOp::fold(FoldAdaptor) {
  // A boxing between equal layouts moves nothing.
  if (getSrc() == getDst())
    return getInput();
  return {};
}

LogicalResult CrossMeshOp::verify() {
  if (getSrcMeshAttr() == getDstMeshAttr())
    return emitOpError() << "moves a value from " << getSrcMeshAttr()
                         << " to itself; use sbp.boxing within one mesh";
  for (auto [layout, side] :
       {std::pair{getSrc(), "source"}, {getDst(), "destination"}})
    for (const parplan::Sbp &entry : toNdSbp(layout))
      if (entry.isPartial())
        return emitOpError()
               << "has a partial " << side << " layout "
               << parplan::toString(toNdSbp(layout))
               << "; reduce it on its mesh first (the move carries whole "
                  "values)";
  return success();
}

LogicalResult
CrossMeshOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (failed(verifyLayout(*this, symbolTable, getSrcMeshAttr(), getSrc(),
                          getType(), "source layout")))
    return failure();
  return verifyLayout(*this, symbolTable, getDstMeshAttr(), getDst(), getType(),
                      "destination layout");
}

//===----------------------------------------------------------------------===//
// resharding steps
//===----------------------------------------------------------------------===//

std::optional<parplan::ReshardStep>
parplan::sbp::getReshardStep(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<parplan::ReshardStep>>(op)
      .Case<AllGatherOp, ReduceScatterOp, AllReduceOp, AllToAllOp, SliceOp,
            ToPartialOp>([](auto step) { return step.getStep(); })
      .Default([](Operation *) { return std::nullopt; });
}

namespace {

/// Checks a step op: its layouts lay the value out over the mesh, they
/// differ by one step on local blocks (checkReshardStep), and that step is
/// the op's kind.
template <typename StepOp>
LogicalResult verifyStep(StepOp op, SymbolTableCollection &symbolTable) {
  if (failed(verifyLayout(op, symbolTable, op.getMeshAttr(), op.getSrc(),
                          op.getType(), "source layout")) ||
      failed(verifyLayout(op, symbolTable, op.getMeshAttr(), op.getDst(),
                          op.getType(), "destination layout")))
    return failure();
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  std::vector<int64_t> meshShape(mesh.getShape().begin(),
                                 mesh.getShape().end());
  parplan::ReshardStep step = op.getStep();
  if (std::optional<std::string> problem = parplan::checkReshardStep(
          step.from, step.to, step.meshAxis, meshShape))
    return op.emitOpError() << "is not one step along mesh axis "
                            << step.meshAxis << ": " << *problem;
  std::optional<parplan::ReshardKind> kind =
      parplan::reshardKind(step.from[step.meshAxis], step.to[step.meshAxis]);
  if (*kind != step.kind)
    return op.emitOpError()
           << "turns " << step.from[step.meshAxis].str() << " into "
           << step.to[step.meshAxis].str() << " along mesh axis "
           << step.meshAxis << ", which is sbp." << parplan::toString(*kind);
  if (parplan::exchangesParts(step.kind) &&
      parplan::hasUnevenShares(mesh.getMeshShares(),
                               static_cast<size_t>(step.meshAxis)))
    return op.emitOpError()
           << "exchanges parts along mesh axis " << step.meshAxis << " of @"
           << mesh.getSymName()
           << ", whose shares are uneven; there devices only reduce whole "
              "values or cut their own part";
  return success();
}

} // namespace

LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStep(*this, symbolTable);
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStep(*this, symbolTable);
}

LogicalResult
AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStep(*this, symbolTable);
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStep(*this, symbolTable);
}

LogicalResult SliceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStep(*this, symbolTable);
}

LogicalResult
ToPartialOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyStep(*this, symbolTable);
}
