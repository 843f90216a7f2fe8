//===- PlanOps.cpp - plan dialect operations ------------------------------===//

#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Support/Sbp.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace parplan::plan;

#include "parplan/Dialect/Plan/PlanEnums.cpp.inc"

#define GET_OP_CLASSES
#include "parplan/Dialect/Plan/PlanOps.cpp.inc"

//===----------------------------------------------------------------------===//
// group, buffer, kernel
//===----------------------------------------------------------------------===//

LogicalResult GroupOp::verify() {
  if (getDevices().empty())
    return emitOpError() << "needs at least one device";
  llvm::DenseSet<int64_t> seen;
  for (int64_t id : getDevices()) {
    if (id < 0)
      return emitOpError() << "device id " << id << " is negative";
    if (!seen.insert(id).second)
      return emitOpError() << "device id " << id << " is listed twice";
  }
  return success();
}

LogicalResult BufferOp::verify() {
  MemRefType type = getType();
  if (!type.hasStaticShape())
    return emitOpError() << "needs a static shape, got " << type;
  if (!type.getLayout().isIdentity())
    return emitOpError() << "needs the identity layout, got " << type;
  std::optional<BufferKind> known = getBufferKind();
  if (!known)
    return emitOpError() << "kind '" << *getKind()
                         << "' is none of temporary, parameter, input, state, "
                            "constant";
  BufferKind kind = *known;
  if (kind == BufferKind::constant) {
    auto value = getValueAttr();
    if (!value || value.getShapedType().getShape() != type.getShape() ||
        value.getElementType() != type.getElementType())
      return emitOpError() << "a constant buffer needs a value of its shape "
                              "and element type";
    return success();
  }
  if (kind == BufferKind::temporary)
    return success();
  if (!getName() || getName()->empty() || !getLogicalShape() ||
      !getBlockOffsets())
    return emitOpError() << "a " << stringifyBufferKind(kind)
                         << " buffer needs a name, a logical_shape and "
                            "block_offsets";
  ArrayRef<int64_t> logical = *getLogicalShape(), offsets = *getBlockOffsets();
  if (static_cast<int64_t>(logical.size()) != type.getRank() ||
      offsets.size() != logical.size())
    return emitOpError() << "logical_shape and block_offsets need one entry "
                            "per dimension of the rank-"
                         << type.getRank() << " buffer";
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (offsets[d] < 0 || offsets[d] + type.getDimSize(d) > logical[d])
      return emitOpError() << "dimension " << d << ": a block of "
                           << type.getDimSize(d) << " from " << offsets[d]
                           << " does not fit the logical extent " << logical[d];
  return success();
}

LogicalResult LossOp::verify() {
  if (getBuffer().getType().getRank() != 0)
    return emitOpError() << "needs a scalar buffer, got "
                         << getBuffer().getType();
  return success();
}

LogicalResult UpdateOp::verify() {
  auto target = getTarget().getDefiningOp<BufferOp>();
  if (!target || (target.getBufferKind() != BufferKind::parameter &&
                  target.getBufferKind() != BufferKind::state))
    return emitOpError() << "needs a parameter or state buffer as its target";
  return success();
}

LogicalResult KernelOp::verify() {
  if (getKernel().empty())
    return emitOpError() << "needs a kernel name";
  if (getOuts().empty())
    return emitOpError() << "kernel '" << getKernel() << "' writes no buffer";
  return success();
}

//===----------------------------------------------------------------------===//
// collectives
//===----------------------------------------------------------------------===//

namespace {

int64_t programDevice(Operation *op) {
  return op->getParentOfType<ProgramOp>().getDevice();
}

/// The group a collective names, if it names one that holds this device.
FailureOr<GroupOp> lookupGroup(Operation *op,
                               SymbolTableCollection &symbolTable,
                               FlatSymbolRefAttr groupRef) {
  auto group = symbolTable.lookupNearestSymbolFrom<GroupOp>(
      op->getParentOfType<ProgramOp>(), groupRef);
  if (!group)
    return op->emitOpError() << groupRef << " does not name a plan.group";
  int64_t device = programDevice(op);
  if (!group.contains(device))
    return op->emitOpError() << "runs on device " << device
                             << ", which is not a member of " << groupRef;
  return group;
}

/// `part` is one device's slice along `axis` of `whole` split over `n`
/// devices (balanced: docs/slicing.md), all other dimensions equal.
LogicalResult verifySlicePair(Operation *op, MemRefType part, MemRefType whole,
                              int64_t axis, int64_t n, StringRef partName,
                              StringRef wholeName) {
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
    if (d == axis && partSize != wholeSize / n &&
        partSize != (wholeSize + n - 1) / n)
      return op->emitOpError()
             << partName << " has " << partSize << " elements along axis "
             << axis << ", which is no balanced share of " << wholeName << "'s "
             << wholeSize << " over " << n << " devices";
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
  return verifySlicePair(*this, getInput().getType(), getOutput().getType(),
                         getAxis(), group->getSize(), "input", "output");
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<GroupOp> group = lookupGroup(*this, symbolTable, getGroupAttr());
  if (failed(group))
    return failure();
  return verifySlicePair(*this, getOutput().getType(), getInput().getType(),
                         getAxis(), group->getSize(), "output", "input");
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<GroupOp> group = lookupGroup(*this, symbolTable, getGroupAttr());
  if (failed(group))
    return failure();
  MemRefType in = getInput().getType(), out = getOutput().getType();
  int64_t n = group->getSize(), split = getSplitAxis(),
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
  int64_t me = llvm::find(group->getDevices(), programDevice(*this)) -
               group->getDevices().begin();
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
  return success();
}

LogicalResult
BroadcastOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<GroupOp> group = lookupGroup(*this, symbolTable, getGroupAttr());
  if (failed(group))
    return failure();
  if (!group->contains(getRoot()))
    return emitOpError() << "root device " << getRoot()
                         << " is not a member of " << getGroupAttr();
  return success();
}

//===----------------------------------------------------------------------===//
// send, recv
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyPeer(Operation *op, int64_t peer) {
  if (peer == programDevice(op))
    return op->emitOpError()
           << "names its own device " << peer << " as the peer";
  return success();
}
} // namespace

LogicalResult SendOp::verify() { return verifyPeer(*this, getPeer()); }

LogicalResult RecvOp::verify() { return verifyPeer(*this, getPeer()); }

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

double parplan::plan::bytesSent(Operation *op) {
  if (auto send = dyn_cast<SendOp>(op))
    return bytesOf(send.getBuffer());
  auto groupRef = op->getAttrOfType<FlatSymbolRefAttr>("group");
  auto program = op->getParentOfType<ProgramOp>();
  if (!groupRef || !program)
    return 0;
  auto group = SymbolTable::lookupNearestSymbolFrom<GroupOp>(program, groupRef);
  if (!group)
    return 0;
  double n = static_cast<double>(group.getSize());
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
    int64_t me = llvm::find(group.getDevices(), program.getDevice()) -
                 group.getDevices().begin();
    double kept =
        bytesOf(exchange.getInput()) / static_cast<double>(extent) *
        static_cast<double>(balancedShard(extent, group.getSize(), me).size);
    return bytesOf(exchange.getInput()) - kept;
  }
  return 0;
}
