//===- PlanOps.cpp - plan dialect operations ------------------------------===//

#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Cost/Cluster.h"
#include "parplan/Sbp/Sbp.h"

#include "parplan/Dialect/AttrNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace parplan::plan;

#include "parplan/Dialect/Plan/PlanEnums.cpp.inc"

parplan::ReduceKind parplan::plan::toReduceKind(ReduceKind kind) {
  return fromDialectReduceKind(kind);
}

ReduceKind parplan::plan::toPlanReduceKind(parplan::ReduceKind kind) {
  return toDialectReduceKind<ReduceKind>(kind);
}

parplan::BufferKind parplan::plan::toBufferKind(BufferKind kind) {
  switch (kind) {
  case BufferKind::temporary:
    return parplan::BufferKind::Temporary;
  case BufferKind::parameter:
    return parplan::BufferKind::Parameter;
  case BufferKind::input:
    return parplan::BufferKind::Input;
  case BufferKind::state:
    return parplan::BufferKind::State;
  case BufferKind::constant:
    return parplan::BufferKind::Constant;
  case BufferKind::output:
    return parplan::BufferKind::Output;
  case BufferKind::accumulator:
    return parplan::BufferKind::Accumulator;
  case BufferKind::micro_batch:
    return parplan::BufferKind::MicroBatch;
  }
  return parplan::BufferKind::Temporary;
}

BufferKind parplan::plan::toPlanBufferKind(parplan::BufferKind kind) {
  switch (kind) {
  case parplan::BufferKind::Temporary:
    return BufferKind::temporary;
  case parplan::BufferKind::Parameter:
    return BufferKind::parameter;
  case parplan::BufferKind::Input:
    return BufferKind::input;
  case parplan::BufferKind::State:
    return BufferKind::state;
  case parplan::BufferKind::Constant:
    return BufferKind::constant;
  case parplan::BufferKind::Output:
    return BufferKind::output;
  case parplan::BufferKind::Accumulator:
    return BufferKind::accumulator;
  case parplan::BufferKind::MicroBatch:
    return BufferKind::micro_batch;
  }
  return BufferKind::temporary;
}

#define GET_OP_CLASSES
#include "parplan/Dialect/Plan/PlanOps.cpp.inc"

//===----------------------------------------------------------------------===//
// group, buffer, kernel
//===----------------------------------------------------------------------===//

LogicalResult
BlockOffsetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        DenseI64ArrayAttr shape, DenseI64ArrayAttr splits,
                        int64_t dim) {
  auto rank = static_cast<int64_t>(shape.size());
  for (int64_t size : shape.asArrayRef())
    if (size < 0)
      return emitError() << "block_offset shape has a negative extent";
  for (int64_t split : splits.asArrayRef())
    if (split < -1 || split >= rank)
      return emitError() << "block_offset splits entry " << split
                         << " is neither -1 nor a dimension of the rank-"
                         << rank << " shape";
  if (dim < -1 || dim >= rank)
    return emitError() << "block_offset dim " << dim
                       << " is neither -1 nor a dimension of the rank-" << rank
                       << " shape";
  return success();
}

SmallVector<int64_t> parplan::plan::planMeshShape(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  if (module)
    if (auto mesh = module->getAttrOfType<DenseI64ArrayAttr>(
            parplan::kPlanMeshShapeAttrName))
      return SmallVector<int64_t>(mesh.asArrayRef());
  int64_t devices = 1;
  if (module)
    for (auto program : module.getOps<ProgramOp>())
      for (int64_t device : program.getDevices())
        devices = std::max(devices, device + 1);
  return {devices};
}

/// The named mesh `ref` (or, when null, the plan's) that `op` reads its
/// coordinates in; the plan's when `ref` names no plan.mesh (the
/// verifiers say so).
static parplan::PlacedMesh placedMesh(Operation *op, FlatSymbolRefAttr ref) {
  if (ref)
    if (auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, ref))
      return mesh.getPlacedMesh();
  SmallVector<int64_t> shape = planMeshShape(op);
  parplan::PlacedMesh mesh{std::vector<int64_t>(shape.begin(), shape.end()),
                           {}};
  // Shares that are not the mesh's are plan.program's to report; here
  // they cut nothing.
  std::string invalid;
  if (planMeshShares(op, mesh.shape, mesh.shares, invalid))
    mesh.shares.clear();
  return mesh;
}

bool parplan::plan::planMeshShares(Operation *op,
                                   const std::vector<int64_t> &meshShape,
                                   MeshShares &shares, std::string &invalid) {
  shares.clear();
  auto module = op->getParentOfType<ModuleOp>();
  auto lists =
      module
          ? module->getAttrOfType<ArrayAttr>(parplan::kPlanMeshSharesAttrName)
          : ArrayAttr();
  if (!module || !module->hasAttr(parplan::kPlanMeshSharesAttrName))
    return false;
  if (!lists) {
    invalid = "not a list of array<i64>";
    return true;
  }
  for (Attribute weights : lists) {
    auto list = dyn_cast<DenseI64ArrayAttr>(weights);
    if (!list) {
      invalid = "an entry is not an array<i64> of weights";
      return true;
    }
    shares.emplace_back(list.asArrayRef().begin(), list.asArrayRef().end());
  }
  if (std::optional<std::string> error = checkShares(meshShape, shares)) {
    invalid = *error;
    return true;
  }
  return false;
}

/// A `mesh` attribute naming a plan.mesh.
static LogicalResult verifyMeshRef(Operation *op, FlatSymbolRefAttr ref) {
  if (ref && !SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, ref))
    return op->emitOpError() << "names " << ref << ", which is no plan.mesh";
  return success();
}

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape(), devices = getDevices();
  if (shape.empty() ||
      llvm::any_of(shape, [](int64_t size) { return size <= 0; }))
    return emitOpError() << "needs a shape of positive axes";
  std::vector<int64_t> extents(shape.begin(), shape.end());
  if (static_cast<int64_t>(devices.size()) != parplan::meshSize(extents))
    return emitOpError() << "lists " << devices.size()
                         << " devices for a shape of "
                         << parplan::meshSize(extents);
  if (std::optional<std::string> error = parplan::checkDeviceIds(
          std::vector<int64_t>(devices.begin(), devices.end())))
    return emitOpError() << *error;
  return success();
}

parplan::PlacedMesh MeshOp::getPlacedMesh() {
  return {std::vector<int64_t>(getShape().begin(), getShape().end()),
          std::vector<int64_t>(getDevices().begin(), getDevices().end())};
}

LogicalResult GroupOp::verify() {
  std::optional<ArrayRef<int64_t>> devices = getDevices();
  std::optional<ArrayRef<int64_t>> axes = getMeshAxes();
  if (devices.has_value() == axes.has_value())
    return emitOpError() << "needs either devices or mesh_axes, not "
                         << (devices ? "both" : "neither");
  if (getMeshAttr() && !axes)
    return emitOpError() << "names a mesh but no mesh_axes";
  if (failed(verifyMeshRef(*this, getMeshAttr())))
    return failure();
  if (devices) {
    if (devices->empty())
      return emitOpError() << "needs at least one device";
    if (std::optional<std::string> error = parplan::checkDeviceIds(
            std::vector<int64_t>(devices->begin(), devices->end())))
      return emitOpError() << *error;
    return success();
  }
  if (axes->empty())
    return emitOpError() << "needs at least one mesh axis";
  for (size_t i = 0; i < axes->size(); ++i)
    if ((*axes)[i] < 0 || (i > 0 && (*axes)[i] <= (*axes)[i - 1]))
      return emitOpError() << "mesh_axes must be ascending and non-negative";
  return success();
}

parplan::PlacedMesh GroupOp::getPlacedMesh() {
  return placedMesh(*this, getMeshAttr());
}

int64_t GroupOp::getSize() {
  if (std::optional<ArrayRef<int64_t>> devices = getDevices())
    return static_cast<int64_t>(devices->size());
  std::vector<int64_t> shape = getPlacedMesh().shape;
  ArrayRef<int64_t> axes = *getMeshAxes();
  int64_t size = 1;
  for (int64_t axis : axes)
    size *= axis < static_cast<int64_t>(shape.size()) ? shape[axis] : 1;
  return size;
}

int64_t GroupOp::rankOf(int64_t device, const parplan::PlacedMesh &mesh) {
  if (std::optional<ArrayRef<int64_t>> devices = getDevices()) {
    const auto *found = llvm::find(*devices, device);
    return found == devices->end() ? -1 : found - devices->begin();
  }
  ArrayRef<int64_t> axes = *getMeshAxes();
  return mesh.rank(std::vector<int64_t>(axes.begin(), axes.end()), device);
}

parplan::PlacedMesh ProgramOp::getPlacedMesh() {
  return placedMesh(*this, getMeshAttr());
}

SmallVector<int64_t> ProgramOp::getMeshShape() {
  std::vector<int64_t> shape = getPlacedMesh().shape;
  return SmallVector<int64_t>(shape.begin(), shape.end());
}

LogicalResult ProgramOp::verify() {
  ArrayRef<int64_t> devices = getDevices();
  if (devices.empty())
    return emitOpError() << "needs at least one device";
  SmallVector<int64_t> planShape = planMeshShape(*this);
  MeshShares shares;
  std::string invalid;
  if (planMeshShares(*this,
                     std::vector<int64_t>(planShape.begin(), planShape.end()),
                     shares, invalid))
    return emitOpError() << "reads the plan's "
                         << parplan::kPlanMeshSharesAttrName << ": " << invalid;
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i] < 0 || (i > 0 && devices[i] <= devices[i - 1]))
      return emitOpError() << "devices must be ascending and non-negative";
  if (failed(verifyMeshRef(*this, getMeshAttr())))
    return failure();
  if (getMeshAttr()) {
    parplan::PlacedMesh mesh = getPlacedMesh();
    for (int64_t device : devices)
      if (mesh.indexOf(device) < 0)
        return emitOpError() << "runs on device " << device << ", which "
                             << getMeshAttr() << " does not hold";
  }
  return success();
}

LogicalResult BufferOp::verify() {
  MemRefType type = getType();
  if (!type.hasStaticShape())
    return emitOpError() << "needs a static shape, got " << type;
  if (!type.getLayout().isIdentity())
    return emitOpError() << "needs the identity layout, got " << type;
  BufferKind kind = getKind();
  if (kind == BufferKind::constant && !getSplits()) {
    auto value = getValueAttr();
    if (!value || value.getShapedType().getShape() != type.getShape() ||
        value.getElementType() != type.getElementType())
      return emitOpError() << "a constant buffer needs a value of its shape "
                              "and element type";
    return success();
  }
  if (kind == BufferKind::micro_batch) {
    if (type.getRank() != 0 || !type.getElementType().isInteger(64) ||
        getSplits() || getLogicalShape() || getName())
      return emitOpError() << "a micro_batch buffer is an i64 scalar without "
                              "name, splits or logical_shape";
    return success();
  }
  if (kind == BufferKind::temporary || kind == BufferKind::accumulator) {
    if (getSplits() || getLogicalShape())
      return emitOpError() << (kind == BufferKind::temporary ? "a temporary"
                                                             : "an accumulator")
                           << " buffer has no splits or logical_shape";
    return success();
  }
  if ((kind != BufferKind::constant && (!getName() || getName()->empty())) ||
      !getLogicalShape() || !getSplits())
    return emitOpError() << (kind == BufferKind::input ||
                                     kind == BufferKind::output
                                 ? "an "
                                 : "a ")
                         << stringifyBufferKind(kind)
                         << " buffer needs a name, a logical_shape and "
                            "splits";
  ArrayRef<int64_t> logical = *getLogicalShape(), splits = *getSplits();
  if (static_cast<int64_t>(logical.size()) != type.getRank())
    return emitOpError() << "logical_shape needs one entry per dimension of "
                            "the rank-"
                         << type.getRank() << " buffer";
  if (kind == BufferKind::constant) {
    auto value = getValueAttr();
    if (!value || value.getShapedType().getShape() != logical ||
        value.getElementType() != type.getElementType())
      return emitOpError() << "a split constant buffer needs a value of its "
                              "logical_shape and element type";
  }
  auto program = (*this)->getParentOfType<ProgramOp>();
  SmallVector<int64_t> meshShape = program.getMeshShape();
  if (llvm::any_of(meshShape, [](int64_t size) { return size <= 0; }))
    return emitOpError() << "sits on a mesh with an empty axis";
  if (splits.size() != meshShape.size())
    return emitOpError() << "splits need one entry per axis of the mesh "
                         << "(" << meshShape.size() << ")";
  for (int64_t dim : splits)
    if (dim < -1 || dim >= type.getRank())
      return emitOpError() << "splits entry " << dim
                           << " is neither -1 nor a dimension";
  // Every device's block has the buffer's extent; an even split (each axis
  // dividing the extent it cuts) gives every device the same one.
  std::vector<int64_t> shape(logical.begin(), logical.end());
  std::vector<int64_t> mesh(meshShape.begin(), meshShape.end());
  parplan::NdSbp layout =
      parplan::fromSplits(std::vector<int64_t>(splits.begin(), splits.end()));
  parplan::PlacedMesh placed = program.getPlacedMesh();
  bool even = parplan::hasEvenBlocks(shape, mesh, layout, placed.shares);
  for (int64_t device : program.getDevices()) {
    if (placed.indexOf(device) < 0)
      return emitOpError() << "runs on device " << device
                           << ", outside the mesh of "
                           << parplan::meshSize(mesh);
    std::vector<int64_t> block = parplan::localShape(
        shape, mesh, layout, placed.coordinate(device), placed.shares);
    if (ArrayRef<int64_t>(block) != type.getShape())
      return emitOpError() << "device " << device << "'s block of the logical "
                           << "shape has extent ["
                           << llvm::make_range(block.begin(), block.end())
                           << "], not the buffer's";
    if (even)
      break;
  }
  return success();
}

LogicalResult LossOp::verify() {
  if (getBuffer().getType().getRank() != 0)
    return emitOpError() << "needs a scalar buffer, got "
                         << getBuffer().getType();
  return success();
}

LogicalResult AfterMicroBatchesOp::verify() {
  // The second one is the error.
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
    if (isa<AfterMicroBatchesOp>(op))
      return emitOpError()
             << "appears more than once in @"
             << (*this)->getParentOfType<ProgramOp>().getSymName();
  return success();
}

LogicalResult ForwardBeginOp::verify() {
  // Every marker of a micro-batch's parts comes after it.
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode()) {
    if (isa<ForwardBeginOp>(op))
      return emitOpError()
             << "appears more than once in @"
             << (*this)->getParentOfType<ProgramOp>().getSymName();
    if (isa<BackwardBeginOp, AfterMicroBatchesOp, ChunkOp>(op))
      return emitOpError() << "comes after '" << op->getName()
                           << "': the once-per-step part it ends comes "
                              "before the micro-batches";
  }
  return success();
}

LogicalResult BackwardBeginOp::verify() {
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode()) {
    if (isa<BackwardBeginOp>(op))
      return emitOpError()
             << "appears more than once in @"
             << (*this)->getParentOfType<ProgramOp>().getSymName();
    if (isa<AfterMicroBatchesOp>(op))
      return emitOpError() << "comes after plan.after_micro_batches: the "
                              "backward is part of a micro-batch";
  }
  return success();
}

LogicalResult ChunkOp::verify() {
  // The forward marks chunks 0, 1, ... in order, the backward in reverse
  // (the gradient goes back through them), and neither after the updates
  // begin.
  std::optional<int64_t> previous;
  bool backward = false;
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode()) {
    if (isa<AfterMicroBatchesOp>(op))
      return emitOpError() << "comes after plan.after_micro_batches: a "
                              "chunk is part of a micro-batch";
    if (isa<BackwardBeginOp>(op)) {
      backward = true;
      break;
    }
    if (auto chunk = dyn_cast<ChunkOp>(op)) {
      previous = static_cast<int64_t>(chunk.getChunk());
      for (Operation *before = op; before; before = before->getPrevNode())
        backward |= isa<BackwardBeginOp>(before);
      break;
    }
  }
  auto chunk = static_cast<int64_t>(getChunk());
  bool inOrder = backward ? !previous || chunk == *previous - 1
                          : chunk == previous.value_or(-1) + 1;
  if (!inOrder)
    return emitOpError() << "marks chunk " << chunk << " after "
                         << (previous ? "chunk " + std::to_string(*previous)
                                      : std::string("none"))
                         << " in the " << (backward ? "backward" : "forward")
                         << ": the forward marks chunks 0, 1, ... in order, "
                            "the backward in reverse";
  return success();
}

LogicalResult UpdateOp::verify() {
  auto target = getTarget().getDefiningOp<BufferOp>();
  if (!target || (target.getKind() != BufferKind::parameter &&
                  target.getKind() != BufferKind::state))
    return emitOpError() << "needs a parameter or state buffer as its target";
  return success();
}

LogicalResult KernelOp::verify() {
  if (getKernel().empty())
    return emitOpError() << "needs a kernel name";
  if (getOuts().empty())
    return emitOpError() << "kernel '" << getKernel() << "' writes no buffer";
  for (auto [name, figure] :
       {std::pair{"flops", getFlops()}, std::pair{"bytes", getBytes()}})
    if (figure && (!std::isfinite(figure->convertToDouble()) ||
                   figure->convertToDouble() < 0))
      return emitOpError() << "kernel '" << getKernel() << "' has " << name
                           << " " << figure->convertToDouble()
                           << "; expected a finite count of at least 0";
  if (std::optional<StringRef> type = getComputeType();
      type && !cost::parseComputeType(type->str()))
    return emitOpError() << "kernel '" << getKernel() << "' computes in '"
                         << *type
                         << "'; expected f64, f32, tf32, bf16, f16 or i8";
  if (!getAttrs())
    return success();
  size_t meshRank = (*this)->getParentOfType<ProgramOp>().getMeshShape().size();
  DictionaryAttr attrs = *getAttrs();
  for (NamedAttribute attr : attrs)
    if (auto offset = dyn_cast<BlockOffsetAttr>(attr.getValue()))
      if (static_cast<size_t>(offset.getSplits().size()) != meshRank)
        return emitOpError()
               << "attribute '" << attr.getName().getValue()
               << "' needs one splits entry per mesh axis (" << meshRank << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// collectives
//===----------------------------------------------------------------------===//

namespace {

/// The group a collective names, if it names one that holds every device
/// of the program.
FailureOr<GroupOp> lookupGroup(Operation *op,
                               SymbolTableCollection &symbolTable,
                               FlatSymbolRefAttr groupRef) {
  auto program = op->getParentOfType<ProgramOp>();
  auto group = symbolTable.lookupNearestSymbolFrom<GroupOp>(program, groupRef);
  if (!group)
    return op->emitOpError() << groupRef << " does not name a plan.group";
  parplan::PlacedMesh mesh = group.getPlacedMesh();
  const std::vector<int64_t> &meshShape = mesh.shape;
  if (std::optional<ArrayRef<int64_t>> axes = group.getMeshAxes())
    for (int64_t axis : *axes)
      if (axis >= static_cast<int64_t>(meshShape.size()))
        return op->emitOpError()
               << groupRef << " spans mesh axis " << axis
               << ", which the mesh of rank " << meshShape.size() << " lacks";
  for (int64_t device : program.getDevices())
    if (group.rankOf(device, mesh) < 0)
      return op->emitOpError() << "runs on device " << device
                               << ", which is not a member of " << groupRef;
  return group;
}

/// A collective that exchanges parts of a split (balanced parts) over a
/// group along no mesh axis of uneven shares.
LogicalResult verifyEvenParts(Operation *op, GroupOp group) {
  std::optional<ArrayRef<int64_t>> axes = group.getMeshAxes();
  if (!axes)
    return success();
  parplan::PlacedMesh mesh = group.getPlacedMesh();
  for (int64_t axis : *axes)
    if (parplan::hasUnevenShares(mesh.shares, static_cast<size_t>(axis)))
      return op->emitOpError()
             << "exchanges parts along mesh axis " << axis
             << ", whose shares are uneven; parts are balanced";
  return success();
}

/// The distinct ranks in `group` of the devices running `op`'s program.
SmallVector<int64_t> memberRanks(Operation *op, GroupOp group) {
  auto program = op->getParentOfType<ProgramOp>();
  parplan::PlacedMesh mesh = group.getPlacedMesh();
  llvm::SmallDenseSet<int64_t> seen;
  SmallVector<int64_t> ranks;
  for (int64_t device : program.getDevices()) {
    int64_t rank = group.rankOf(device, mesh);
    if (seen.insert(rank).second)
      ranks.push_back(rank);
  }
  return ranks;
}

int64_t groupSize(GroupOp group) { return group.getSize(); }

/// `part` is one device's slice along `axis` of `whole` split over `n`
/// devices (balanced: docs/slicing.md), all other dimensions equal.
LogicalResult verifySlicePair(Operation *op, GroupOp group, MemRefType part,
                              MemRefType whole, int64_t axis,
                              StringRef partName, StringRef wholeName) {
  if (failed(verifyEvenParts(op, group)))
    return failure();
  int64_t n = groupSize(group);
  if (part.getElementType() != whole.getElementType())
    return op->emitOpError()
           << partName << " and " << wholeName << " element types differ";
  if (part.getRank() != whole.getRank())
    return op->emitOpError()
           << partName << " and " << wholeName << " ranks differ";
  if (axis >= part.getRank())
    return op->emitOpError()
           << "axis " << axis << " is out of range for rank " << part.getRank();
  for (int64_t d = 0; d < part.getRank(); ++d) {
    int64_t partSize = part.getDimSize(d), wholeSize = whole.getDimSize(d);
    if (d != axis && partSize != wholeSize)
      return op->emitOpError() << partName << " and " << wholeName
                               << " differ in dimension " << d;
    if (d != axis)
      continue;
    // Member `me` holds balanced part `me`: each rank the program's devices
    // hold must have its own extent.
    for (int64_t me : memberRanks(op, group)) {
      int64_t expected = parplan::balancedShard(wholeSize, n, me).size;
      if (partSize != expected)
        return op->emitOpError()
               << partName << " has " << partSize << " elements along axis "
               << axis << ", not member " << me << "'s balanced share ("
               << expected << ") of " << wholeName << "'s " << wholeSize
               << " over " << n << " devices";
    }
  }
  return success();
}

} // namespace

LogicalResult
AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return lookupGroup(*this, symbolTable, getGroupAttr());
}

LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<GroupOp> group = lookupGroup(*this, symbolTable, getGroupAttr());
  if (failed(group))
    return failure();
  return verifySlicePair(*this, *group, getInput().getType(),
                         getOutput().getType(), getAxis(), "input", "output");
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<GroupOp> group = lookupGroup(*this, symbolTable, getGroupAttr());
  if (failed(group))
    return failure();
  return verifySlicePair(*this, *group, getOutput().getType(),
                         getInput().getType(), getAxis(), "output", "input");
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<GroupOp> group = lookupGroup(*this, symbolTable, getGroupAttr());
  if (failed(group))
    return failure();
  if (failed(verifyEvenParts(*this, *group)))
    return failure();
  MemRefType in = getInput().getType(), out = getOutput().getType();
  int64_t n = groupSize(*group), split = getSplitAxis(),
          concat = getConcatAxis();
  if (in.getElementType() != out.getElementType() ||
      in.getRank() != out.getRank())
    return emitOpError() << "input and output differ in element type or rank";
  if (split >= in.getRank() || concat >= in.getRank())
    return emitOpError() << "axes " << split << " and " << concat
                         << " must be below the rank " << in.getRank();
  if (split == concat)
    return emitOpError() << "cuts and concatenates the same axis " << split;
  // Member `me` keeps balanced part `me` of the split axis and receives
  // part `me` of the concatenated one from every member (docs/slicing.md).
  for (int64_t me : memberRanks(*this, *group)) {
    bool matches = true;
    for (int64_t d = 0; d < in.getRank(); ++d)
      matches &= d == split
                     ? out.getDimSize(d) ==
                           parplan::balancedShard(in.getDimSize(d), n, me).size
                 : d == concat
                     ? in.getDimSize(d) ==
                           parplan::balancedShard(out.getDimSize(d), n, me).size
                     : in.getDimSize(d) == out.getDimSize(d);
    if (!matches)
      return emitOpError() << "output shape does not match the input with axis "
                           << split << " cut into part " << me << " of " << n
                           << " and axis " << concat << " gathered from " << n
                           << " parts";
  }
  return success();
}

LogicalResult
BroadcastOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<GroupOp> group = lookupGroup(*this, symbolTable, getGroupAttr());
  if (failed(group))
    return failure();
  if (static_cast<int64_t>(getRoot()) >= groupSize(*group))
    return emitOpError() << "root rank " << getRoot() << " is not a rank of "
                         << getGroupAttr();
  return success();
}

//===----------------------------------------------------------------------===//
// send, recv
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyPeer(Operation *op, int64_t peer) {
  if (llvm::is_contained(op->getParentOfType<ProgramOp>().getDevices(), peer))
    return op->emitOpError()
           << "names device " << peer << ", which runs this program, as the "
           << "peer";
  return success();
}
} // namespace

LogicalResult SendOp::verify() { return verifyPeer(*this, getPeer()); }

LogicalResult RecvOp::verify() { return verifyPeer(*this, getPeer()); }

//===----------------------------------------------------------------------===//
// cross_mesh, cross_mesh_send, cross_mesh_recv
//===----------------------------------------------------------------------===//

LogicalResult CrossMeshOp::verify() {
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError() << "moves " << type << "; a move needs a static shape";
  int64_t rank = type.getRank();
  if (getTileOffsets().size() != getTileSizes().size() ||
      (rank == 0 ? !getTileOffsets().empty()
                 : getTileOffsets().size() % static_cast<size_t>(rank) != 0))
    return emitOpError() << "needs tile_offsets and tile_sizes of " << rank
                         << " entries per tile";
  size_t transfers = getTransferTiles().size();
  if (getTransferSenders().size() != transfers ||
      getReceiverCounts().size() != transfers)
    return emitOpError() << "needs a sender and a receiver count per "
                            "transfer tile";
  int64_t receivers = 0;
  for (int64_t count : getReceiverCounts()) {
    if (count < 1)
      return emitOpError() << "has a transfer without receivers";
    receivers += count;
  }
  if (receivers != static_cast<int64_t>(getReceivers().size()))
    return emitOpError() << "counts " << receivers << " receivers but lists "
                         << getReceivers().size();
  for (int64_t tile : getTransferTiles())
    if (tile < 0 || tile >= getNumTiles())
      return emitOpError() << "moves tile " << tile << ", not one of its "
                           << getNumTiles();
  if (getFromAttr() == getToAttr())
    return emitOpError() << "moves from " << getFromAttr() << " to itself";
  return success();
}

LogicalResult
CrossMeshOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto rank = cast<RankedTensorType>(getType()).getRank();
  for (auto [ref, splits] : {std::pair(getFromAttr(), getFromSplits()),
                             std::pair(getToAttr(), getToSplits())}) {
    auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(*this, ref);
    if (!mesh)
      return emitOpError() << "names " << ref << ", which is no plan.mesh";
    if (splits.size() != mesh.getShape().size())
      return emitOpError() << "needs one split per axis of " << ref;
    for (int64_t dim : splits)
      if (dim < -1 || dim >= rank)
        return emitOpError() << "splits dimension " << dim << " of a rank-"
                             << rank << " tensor";
  }
  return success();
}

parplan::Slice CrossMeshOp::getTile(int64_t index) {
  auto rank = cast<RankedTensorType>(getType()).getRank();
  ArrayRef<int64_t> offsets = getTileOffsets().slice(index * rank, rank);
  ArrayRef<int64_t> sizes = getTileSizes().slice(index * rank, rank);
  return {std::vector<int64_t>(offsets.begin(), offsets.end()),
          std::vector<int64_t>(sizes.begin(), sizes.end())};
}

std::vector<parplan::Slice> CrossMeshOp::getTiles() {
  std::vector<parplan::Slice> tiles;
  for (int64_t k = 0, n = getNumTiles(); k < n; ++k)
    tiles.push_back(getTile(k));
  return tiles;
}

std::vector<parplan::CrossMeshTransfer> CrossMeshOp::getTransfers() {
  std::vector<parplan::CrossMeshTransfer> transfers;
  ArrayRef<int64_t> receivers = getReceivers();
  size_t next = 0;
  for (auto [tile, sender, count] : llvm::zip(
           getTransferTiles(), getTransferSenders(), getReceiverCounts())) {
    ArrayRef<int64_t> mine = receivers.slice(next, static_cast<size_t>(count));
    transfers.push_back(
        {tile, sender, std::vector<int64_t>(mine.begin(), mine.end())});
    next += static_cast<size_t>(count);
  }
  return transfers;
}

namespace {

/// A part of a move: the move exists, runs on the program's mesh on this
/// side, and is of the block's element type.
LogicalResult verifyCrossMeshPart(Operation *op,
                                  SymbolTableCollection &symbolTable,
                                  FlatSymbolRefAttr moveRef, Value block,
                                  bool receiving) {
  auto program = op->getParentOfType<ProgramOp>();
  auto move = symbolTable.lookupNearestSymbolFrom<CrossMeshOp>(op, moveRef);
  if (!move)
    return op->emitOpError() << moveRef << " does not name a plan.cross_mesh";
  FlatSymbolRefAttr side = receiving ? move.getToAttr() : move.getFromAttr();
  if (program.getMeshAttr() != side)
    return op->emitOpError()
           << "runs in a program on " << program.getMeshAttr() << ", not on "
           << moveRef << "'s " << (receiving ? "destination " : "source ")
           << side;
  if (cast<MemRefType>(block.getType()).getElementType() !=
      cast<RankedTensorType>(move.getType()).getElementType())
    return op->emitOpError()
           << "block is not of " << moveRef << "'s element type";
  return success();
}

} // namespace

LogicalResult
CrossMeshSendOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyCrossMeshPart(*this, symbolTable, getMoveAttr(), getBlock(),
                             /*receiving=*/false);
}

LogicalResult
CrossMeshRecvOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyCrossMeshPart(*this, symbolTable, getMoveAttr(), getBlock(),
                             /*receiving=*/true);
}

//===----------------------------------------------------------------------===//
// bytes sent
//===----------------------------------------------------------------------===//

int64_t parplan::plan::bufferBytes(MemRefType type) {
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

namespace {

double bytesOf(Value buffer) {
  return static_cast<double>(
      parplan::plan::bufferBytes(cast<MemRefType>(buffer.getType())));
}

} // namespace

bool parplan::plan::feedsUpdate(Operation *op) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case([](AllReduceOp o) { return o.getFeedsUpdate(); })
      .Case([](ReduceScatterOp o) { return o.getFeedsUpdate(); })
      .Case([](AllGatherOp o) { return o.getFeedsUpdate(); })
      .Case([](BroadcastOp o) { return o.getFeedsUpdate(); })
      .Default(false);
}

double parplan::plan::bytesSent(Operation *op, SymbolTableCollection *symbols) {
  if (auto send = dyn_cast<SendOp>(op))
    return bytesOf(send.getBuffer());
  if (isa<CrossMeshSendOp, CrossMeshRecvOp>(op)) {
    // The tiles the device sends: the most any device of the program does.
    auto moveRef = op->getAttrOfType<FlatSymbolRefAttr>("move");
    auto move =
        symbols
            ? symbols->lookupNearestSymbolFrom<CrossMeshOp>(op, moveRef)
            : SymbolTable::lookupNearestSymbolFrom<CrossMeshOp>(op, moveRef);
    auto program = op->getParentOfType<ProgramOp>();
    if (!move || !program)
      return 0;
    auto type = cast<RankedTensorType>(move.getType());
    double elementBytes = static_cast<double>(
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8));
    ArrayRef<int64_t> devices = program.getDevices();
    llvm::DenseMap<int64_t, double> sent;
    for (auto [tile, sender] :
         llvm::zip(move.getTransferTiles(), move.getTransferSenders()))
      if (std::binary_search(devices.begin(), devices.end(), sender))
        sent[sender] += static_cast<double>(move.getTile(tile).numElements()) *
                        elementBytes;
    double most = 0;
    for (auto [device, bytes] : sent)
      most = std::max(most, bytes);
    return most;
  }
  auto groupRef = op->getAttrOfType<FlatSymbolRefAttr>("group");
  auto program = op->getParentOfType<ProgramOp>();
  if (!groupRef || !program)
    return 0;
  auto group =
      symbols
          ? symbols->lookupNearestSymbolFrom<GroupOp>(program, groupRef)
          : SymbolTable::lookupNearestSymbolFrom<GroupOp>(program, groupRef);
  if (!group)
    return 0;
  int64_t size = group.getSize();
  double n = static_cast<double>(size);
  if (auto gather = dyn_cast<AllGatherOp>(op))
    return bytesOf(gather.getOutput()) - bytesOf(gather.getInput());
  if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    return bytesOf(scatter.getInput()) - bytesOf(scatter.getOutput());
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    return 2 * (n - 1) / n * bytesOf(reduce.getBuffer());
  if (auto broadcast = dyn_cast<BroadcastOp>(op))
    return bytesOf(broadcast.getBuffer());
  if (auto exchange = dyn_cast<AllToAllOp>(op)) {
    // The member keeps its balanced part of the split axis; a block may be
    // empty when a dimension has fewer elements than devices.
    MemRefType in = exchange.getInput().getType();
    int64_t extent = in.getDimSize(exchange.getSplitAxis());
    if (extent == 0)
      return 0;
    // The program's first device stands for the others.
    int64_t me =
        group.rankOf(program.getDevices().front(), group.getPlacedMesh());
    double kept = bytesOf(exchange.getInput()) / static_cast<double>(extent) *
                  static_cast<double>(balancedShard(extent, size, me).size);
    return bytesOf(exchange.getInput()) - kept;
  }
  return 0;
}
