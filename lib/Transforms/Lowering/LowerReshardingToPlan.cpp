//===- LowerReshardingToPlan.cpp - resharding steps on one device ---------===//
//
// PlanLoweringOpInterface for the sbp resharding steps. Each step changes
// the layout along one mesh axis, and its verifier has checked that the
// devices along that axis hold (or will hold) the balanced parts of one
// block (checkReshardStep): so each becomes one plan collective over the
// device group along the axis, on the device's block as it is, or a local
// kernel. Along an axis of one device nothing moves and the block is
// reused.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Lowering/DeviceLowering.h"

#include "parplan/Dialect/SBP/SBPOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace parplan;

namespace {

plan::ReduceKindAttr reduceAttr(MLIRContext *context, ReduceKind reduce) {
  return plan::ReduceKindAttr::get(context, plan::toPlanReduceKind(reduce));
}

/// `starts` of a slice (or slice_grad) of the device's balanced part along
/// `dim` of a block of `shape`, cut over mesh axis `meshAxis`, and unit
/// `steps`.
SmallVector<NamedAttribute> partAttrs(DeviceLowering &lowering,
                                      ArrayRef<int64_t> shape, int64_t meshAxis,
                                      int64_t dim) {
  OpBuilder &b = lowering.getBuilder();
  NdSbp layout(lowering.getMeshShape().size(), Sbp::broadcast());
  layout[meshAxis] = Sbp::split(dim);
  SmallVector<int64_t> steps(shape.size(), 1);
  return {b.getNamedAttr("starts",
                         lowering.blockOffset(
                             std::vector<int64_t>(shape.begin(), shape.end()),
                             layout, -1)),
          b.getNamedAttr("steps", b.getDenseI64ArrayAttr(steps))};
}

/// The buffer of the device's block after `step`, written from `block`.
Value lowerStep(Location loc, const ReshardStep &step, Type logical,
                Value block, DeviceLowering &lowering) {
  OpBuilder &b = lowering.getBuilder();
  MLIRContext *context = b.getContext();
  int64_t axis = step.meshAxis;
  int64_t n = lowering.getMeshShape()[axis];
  auto blockType = cast<MemRefType>(block.getType());
  MemRefType nextType = lowering.localType(logical, step.to);
  if (n == 1)
    return block;
  auto newBuffer = [&] {
    return lowering.makeBuffer(loc, nextType, plan::BufferKind::temporary)
        .getResult();
  };
  FlatSymbolRefAttr group = lowering.groupAlong(axis);
  switch (step.kind) {
  case ReshardKind::AllGather: {
    Value out = newBuffer();
    plan::AllGatherOp::create(b, loc, block, out, group,
                              b.getI64IntegerAttr(step.tensorAxis()));
    return out;
  }
  case ReshardKind::ReduceScatter: {
    Value out = newBuffer();
    plan::ReduceScatterOp::create(b, loc, block, out, group,
                                  b.getI64IntegerAttr(step.tensorAxis()),
                                  reduceAttr(context, step.reduce()));
    return out;
  }
  case ReshardKind::AllReduce: {
    // In place, on a copy: other users may still read the addend.
    Value out = lowering.kernel(loc, "reshape", block, nextType);
    plan::AllReduceOp::create(b, loc, out, group,
                              reduceAttr(context, step.reduce()));
    return out;
  }
  case ReshardKind::AllToAll: {
    Value out = newBuffer();
    plan::AllToAllOp::create(b, loc, block, out, group,
                             b.getI64IntegerAttr(step.tensorAxis()),
                             b.getI64IntegerAttr(step.concatAxis()));
    return out;
  }
  case ReshardKind::Slice: {
    SmallVector<NamedAttribute> attrs =
        partAttrs(lowering, blockType.getShape(), axis, step.tensorAxis());
    attrs.push_back(
        b.getNamedAttr("sizes", b.getDenseI64ArrayAttr(nextType.getShape())));
    return lowering.kernel(loc, "slice", block, nextType,
                           b.getDictionaryAttr(attrs));
  }
  case ReshardKind::ToPartial: {
    const Sbp &before = step.from[axis];
    if (before.isSplit()) // The own part in place, zeros elsewhere.
      return lowering.kernel(
          loc, "slice_grad", block, nextType,
          b.getDictionaryAttr(
              partAttrs(lowering, nextType.getShape(), axis, before.axis)));
    if (step.reduce() != ReduceKind::Sum) // max(x, x) = x: all keep it.
      return block;
    // Device 0 of the axis keeps the value, the others hold zeros.
    Value keep = lowering.firstAlongAxis(loc, blockType.getElementType(), axis,
                                         blockType.getRank() == 0);
    return lowering.kernel(loc, "mul", ValueRange{block, keep}, nextType);
  }
  }
  return block;
}

template <typename StepOp>
struct ReshardingPlanLowering
    : PlanLoweringOpInterface::ExternalModel<ReshardingPlanLowering<StepOp>,
                                             StepOp> {
  LogicalResult lowerToDevice(Operation *op, DeviceLowering &lowering) const {
    auto step = cast<StepOp>(op);
    Value block = lowering.lookup(step.getInput());
    lowering.map(step.getResult(), lowerStep(step.getLoc(), step.getStep(),
                                             step.getType(), block, lowering));
    return success();
  }
};

} // namespace

void parplan::registerReshardingPlanLowering(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, sbp::SBPDialect *) {
    sbp::AllGatherOp::attachInterface<ReshardingPlanLowering<sbp::AllGatherOp>>(
        *context);
    sbp::ReduceScatterOp::attachInterface<
        ReshardingPlanLowering<sbp::ReduceScatterOp>>(*context);
    sbp::AllReduceOp::attachInterface<ReshardingPlanLowering<sbp::AllReduceOp>>(
        *context);
    sbp::AllToAllOp::attachInterface<ReshardingPlanLowering<sbp::AllToAllOp>>(
        *context);
    sbp::SliceOp::attachInterface<ReshardingPlanLowering<sbp::SliceOp>>(
        *context);
    sbp::ToPartialOp::attachInterface<ReshardingPlanLowering<sbp::ToPartialOp>>(
        *context);
  });
}
