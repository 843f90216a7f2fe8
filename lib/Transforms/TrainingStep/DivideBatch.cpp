//===- DivideBatch.cpp - micro-batches of a batch fixed in the model ------===//
//
// The batch is followed as data parallelism splits it: an op whose operands
// carry the batch takes the first of its sharding signatures that splits
// each of those along its batch dimension and keeps the others whole; the
// results it splits carry the batch on. Dividing is then local shapes on
// a mesh of `microBatches` devices, the same arithmetic the lowering does
// for data parallelism.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/TrainingStep/DivideBatch.h"

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Transforms/TrainingStep/Passes.h"

#include "mlir/IR/Verifier.h"

#include <string>

namespace parplan {
#define GEN_PASS_DEF_NNDIVIDEBATCH
#include "parplan/Transforms/TrainingStep/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {

/// Whether `value` is a broadcast along `dim` of something without the
/// batch (nn.expand from 1) to the batch's size: met by the batch, it is
/// the batch (the class token every image gets, expanded to the batch),
/// and a micro-batch's share of it is the same broadcast to fewer rows.
bool broadcastsAlong(Value value, int64_t dim, int64_t batch) {
  auto expand = value.getDefiningOp<nn::ExpandOp>();
  if (!expand)
    return false;
  ArrayRef<int64_t> result = expand.getType().getShape();
  ArrayRef<int64_t> input =
      cast<RankedTensorType>(expand.getInput().getType()).getShape();
  // The input's dimensions align with the result's last ones.
  int64_t inputDim = dim - static_cast<int64_t>(result.size() - input.size());
  return dim < static_cast<int64_t>(result.size()) && result[dim] == batch &&
         (inputDim < 0 || input[inputDim] == 1);
}

/// The batch's dimension along each result of `op`, whose operands carry
/// it along `operandDims` (-1: not at all; a broadcast to the batch met by
/// it is taken to carry it too, and `operandDims` says so); none, with
/// `why` set, when no signature of the op splits them so.
std::optional<SmallVector<int64_t>>
followThrough(Operation *op, SmallVectorImpl<int64_t> &operandDims,
              int64_t batch, std::string &why) {
  auto shardable = dyn_cast<nn::ShardableOpInterface>(op);
  SmallVector<SbpSignature> signatures;
  if (!shardable || failed(shardable.getSbpSignatures(signatures))) {
    why = "it has no sharding rule";
    return std::nullopt;
  }
  for (const SbpSignature &signature : signatures) {
    if (signature.operands.size() != operandDims.size())
      continue;
    bool matches = true;
    SmallVector<int64_t> dims(operandDims.begin(), operandDims.end());
    for (auto [index, sbp] : llvm::enumerate(signature.operands)) {
      int64_t &dim = dims[index];
      if (dim < 0 && sbp.isSplit() &&
          broadcastsAlong(op->getOperand(index), sbp.axis, batch))
        dim = sbp.axis;
      matches &= dim < 0 ? sbp.isBroadcast() : sbp.isSplit() && sbp.axis == dim;
    }
    if (!matches)
      continue;
    SmallVector<int64_t> resultDims;
    for (const Sbp &sbp : signature.results) {
      if (sbp.isPartial()) {
        matches = false;
        break;
      }
      resultDims.push_back(sbp.isSplit() ? sbp.axis : -1);
    }
    if (matches) {
      operandDims.assign(dims.begin(), dims.end());
      return resultDims;
    }
  }
  why = "no sharding rule splits the operands that carry the batch along "
        "it while the others stay whole (it reduces over the batch, merges "
        "it with another dimension, or reads a constant of the batch's "
        "size that is not the batch)";
  return std::nullopt;
}

} // namespace

FailureOr<BatchDimensions> parplan::followBatch(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return module.emitError() << "the batch: the module has no @main";
  BatchDimensions batch;
  nn::InputOp first;
  WalkResult inputs = main.walk([&](nn::InputOp input) {
    ArrayRef<int64_t> shape = input.getType().getShape();
    if (!shape.empty() && !first) {
      first = input;
      batch.batch = shape.front();
    }
    if (shape.empty() || shape.front() != batch.batch) {
      input.emitError() << "the batch: input '" << input.getName() << "' has "
                        << (shape.empty() ? std::string("no dimension 0")
                                          : std::to_string(shape.front()) +
                                                " rows at dimension 0")
                        << (first ? ", input '" + first.getName().str() + "' " +
                                        std::to_string(batch.batch)
                                  : std::string())
                        << ": the inputs share no batch dimension";
      return WalkResult::interrupt();
    }
    batch.dimensionOf[input.getResult()] = 0;
    return WalkResult::advance();
  });
  if (inputs.wasInterrupted())
    return failure();
  if (!first)
    return main.emitError() << "the batch: @main has no input to carry it";
  WalkResult ops = main.walk([&](Operation *op) {
    if (isa<nn::InputOp, func::FuncOp, func::ReturnOp>(op))
      return WalkResult::advance();
    SmallVector<int64_t> operandDims;
    bool carries = false;
    for (Value operand : op->getOperands()) {
      operandDims.push_back(batch.dimensionOf.lookup_or(operand, -1));
      carries |= operandDims.back() >= 0;
    }
    if (!carries)
      return WalkResult::advance();
    std::string why;
    std::optional<SmallVector<int64_t>> resultDims =
        followThrough(op, operandDims, batch.batch, why);
    if (!resultDims) {
      op->emitError() << "the batch cannot be followed through "
                      << nn::describeNode(op) << ": " << why;
      return WalkResult::interrupt();
    }
    for (auto [operand, dim] : llvm::zip_equal(op->getOperands(), operandDims))
      if (dim >= 0)
        batch.dimensionOf.try_emplace(operand, dim);
    for (auto [result, dim] : llvm::zip_equal(op->getResults(), *resultDims))
      if (dim >= 0)
        batch.dimensionOf[result] = dim;
    return WalkResult::advance();
  });
  if (ops.wasInterrupted())
    return failure();
  return batch;
}

LogicalResult parplan::divideBatch(ModuleOp module, int64_t microBatches) {
  FailureOr<BatchDimensions> batch = followBatch(module);
  if (failed(batch))
    return failure();
  if (microBatches <= 1)
    return success();
  // Every new type is checked before any is set: a failure leaves the
  // module as it was.
  SmallVector<std::pair<Value, RankedTensorType>> retyped;
  auto main = module.lookupSymbol<func::FuncOp>("main");
  WalkResult checked = main.walk([&](Operation *op) {
    for (Value result : op->getResults()) {
      auto found = batch->dimensionOf.find(result);
      if (found == batch->dimensionOf.end())
        continue;
      auto type = cast<RankedTensorType>(result.getType());
      SmallVector<int64_t> shape(type.getShape());
      int64_t &extent = shape[found->second];
      if (extent % microBatches != 0) {
        op->emitError() << "the batch: " << microBatches
                        << " micro-batches do not divide dimension "
                        << found->second << " (" << extent << ") of "
                        << nn::describeNode(op);
        return WalkResult::interrupt();
      }
      extent /= microBatches;
      retyped.emplace_back(result, type.clone(shape));
    }
    return WalkResult::advance();
  });
  if (checked.wasInterrupted())
    return failure();
  for (auto &[value, type] : retyped)
    value.setType(type);
  // A slice keeps the whole of the batch it passes on.
  main.walk([&](nn::SliceOp slice) {
    auto found = batch->dimensionOf.find(slice.getResult());
    if (found == batch->dimensionOf.end())
      return;
    SmallVector<int64_t> sizes(slice.getSizes());
    sizes[found->second] = slice.getType().getDimSize(found->second);
    slice.setSizes(sizes);
  });
  auto returned = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  main.setFunctionType(FunctionType::get(module.getContext(),
                                         main.getFunctionType().getInputs(),
                                         returned.getOperandTypes()));
  return verify(module);
}

namespace {

struct NNDivideBatchPass : parplan::impl::NNDivideBatchBase<NNDivideBatchPass> {
  using NNDivideBatchBase::NNDivideBatchBase;

  void runOnOperation() override {
    if (microBatches < 1) {
      getOperation().emitError()
          << "nn-divide-batch: micro-batches must be positive, not "
          << static_cast<int64_t>(microBatches);
      return signalPassFailure();
    }
    if (failed(divideBatch(getOperation(), microBatches)))
      signalPassFailure();
  }
};

} // namespace
