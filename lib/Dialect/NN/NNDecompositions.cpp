//===- NNDecompositions.cpp - nn programs built of other nn ops -----------===//

#include "parplan/Dialect/NN/NNDecompositions.h"
#include "parplan/Dialect/NN/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using parplan::nn::tensorType;

Value parplan::nn::buildScalar(OpBuilder &b, Location loc, Type elementType,
                               double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elementType, value)));
}

Value parplan::nn::buildReshape(OpBuilder &b, Location loc, Value value,
                                ArrayRef<int64_t> shape) {
  auto type = tensorType(value);
  if (type.getShape() == shape)
    return value;
  return ReshapeOp::create(b, loc, type.clone(shape), value);
}

parplan::nn::BatchStatistics
parplan::nn::buildBatchNormWithBatchStatistics(OpBuilder &b, Location loc,
                                               Value input, Value scale,
                                               Value bias, double epsilon) {
  auto type = tensorType(input);
  int64_t rank = type.getRank(), channels = type.getDimSize(1);
  Type element = type.getElementType();
  // Per-channel values broadcast against [N, C, ...] from the right.
  SmallVector<int64_t> column(rank - 1, 1);
  column[0] = channels;
  SmallVector<int64_t> axes = {0};
  int64_t count = type.getDimSize(0);
  for (int64_t d = 2; d < rank; ++d) {
    axes.push_back(d);
    count *= type.getDimSize(d);
  }
  auto meanOver = [&](Value value) -> Value {
    return ReduceMeanOp::create(b, loc, value, b.getDenseI64ArrayAttr(axes),
                                b.getBoolAttr(true));
  };
  Value mean = meanOver(input);
  Value centered = SubOp::create(b, loc, input, mean);
  Value variance = meanOver(MulOp::create(b, loc, centered, centered));
  Value deviation = SqrtOp::create(
      b, loc,
      AddOp::create(b, loc, variance, buildScalar(b, loc, element, epsilon)));
  // scale / deviation on [C] first: one division per channel, not per
  // element.
  Value factor = DivOp::create(b, loc, buildReshape(b, loc, scale, column),
                               buildReshape(b, loc, deviation, column));
  Value result = AddOp::create(b, loc, MulOp::create(b, loc, centered, factor),
                               buildReshape(b, loc, bias, column));
  return {result, buildReshape(b, loc, mean, {channels}),
          buildReshape(b, loc, variance, {channels}), count};
}

Value parplan::nn::buildRunningStatisticUpdate(OpBuilder &b, Location loc,
                                               Value running, Value batch,
                                               double momentum,
                                               double batchFactor) {
  Type element = tensorType(running).getElementType();
  Value kept =
      MulOp::create(b, loc, running, buildScalar(b, loc, element, momentum));
  Value added = MulOp::create(
      b, loc, batch,
      buildScalar(b, loc, element, batchFactor * (1.0 - momentum)));
  return AddOp::create(b, loc, kept, added);
}
