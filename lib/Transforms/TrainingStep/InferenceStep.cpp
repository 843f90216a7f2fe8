//===- InferenceStep.cpp - the forward program as a step for serving ------===//
//
// An inference step is the forward program itself: what makes it a step is
// the contract the later passes read, stated once here. Its outputs are
// named (the lowering makes each an OUTPUT buffer of that name) and its
// micro-batches are recorded (the stages and the executor run the forward
// once per micro-batch), so that the search prices the forward alone and
// keeps no activation for a backward pass.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Transforms/TrainingStep/Passes.h"
#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include <string>

namespace parplan {
#define GEN_PASS_DEF_NNINFERENCESTEP
#include "parplan/Transforms/TrainingStep/Passes.h.inc"
} // namespace parplan

using namespace mlir;

namespace {

struct NNInferenceStepPass
    : parplan::impl::NNInferenceStepBase<NNInferenceStepPass> {
  using NNInferenceStepBase::NNInferenceStepBase;

  void runOnOperation() override;

private:
  /// The rows of a micro-batch: the inputs' dimension 0, which the
  /// executor slices; none where an input has no dimension 0 or they
  /// disagree (said, naming the input).
  std::optional<int64_t> microBatchRows(func::FuncOp function);
};

std::optional<int64_t>
NNInferenceStepPass::microBatchRows(func::FuncOp function) {
  std::optional<int64_t> rows;
  for (auto input : function.getOps<parplan::nn::InputOp>()) {
    ArrayRef<int64_t> shape = input.getType().getShape();
    if (shape.empty() || (rows && *rows != shape.front())) {
      input.emitError() << "nn-inference-step: input '" << input.getName()
                        << "' has "
                        << (shape.empty() ? std::string("no dimension 0")
                                          : std::to_string(shape.front()) +
                                                " rows at dimension 0")
                        << (rows ? ", not the other inputs' " +
                                       std::to_string(*rows)
                                 : std::string())
                        << ": micro-batches slice every input along "
                           "dimension 0";
      return std::nullopt;
    }
    rows = shape.front();
  }
  if (!rows)
    function.emitError() << "nn-inference-step: micro-batches="
                         << static_cast<int64_t>(microBatches)
                         << " slice the inputs, and @main has none";
  return rows;
}

void NNInferenceStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto function = module.lookupSymbol<func::FuncOp>("main");
  if (!function || function.isExternal() || !function.getBody().hasOneBlock()) {
    module.emitError()
        << "nn-inference-step: the module has no function @main of one block";
    return signalPassFailure();
  }
  if (StringRef step = parplan::describeStep(module); !step.empty()) {
    module.emitError() << "nn-inference-step: @main is already " << step;
    return signalPassFailure();
  }
  if (microBatches < 1) {
    module.emitError() << "nn-inference-step: micro-batches="
                       << static_cast<int64_t>(microBatches)
                       << " is not a count of micro-batches (1 or more)";
    return signalPassFailure();
  }
  if (function.getNumResults() == 0) {
    function.emitError() << "nn-inference-step: @main has no result to serve";
    return signalPassFailure();
  }
  std::optional<int64_t> rows;
  if (microBatches > 1 && !(rows = microBatchRows(function)))
    return signalPassFailure();
  Builder b(&getContext());
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    auto name =
        function.getResultAttrOfType<StringAttr>(i, parplan::kOutputAttrName);
    if (!name) {
      name = b.getStringAttr("output" + std::to_string(i));
      function.setResultAttr(i, parplan::kOutputAttrName, name);
    }
    if (!rows)
      continue;
    auto type = dyn_cast<RankedTensorType>(function.getResultTypes()[i]);
    if (!type || type.getRank() == 0 || type.getDimSize(0) != *rows) {
      function.emitError()
          << "nn-inference-step: output '" << name.getValue() << "' has "
          << (!type || type.getRank() == 0
                  ? std::string("no dimension 0")
                  : std::to_string(type.getDimSize(0)) + " rows at dimension 0")
          << ", not the micro-batch's " << *rows
          << ": micro-batches stack the outputs along dimension 0, as they "
             "slice the inputs";
      return signalPassFailure();
    }
  }
  SmallVector<NamedAttribute> inference;
  if (microBatches > 1)
    inference.push_back(
        b.getNamedAttr("micro_batches", b.getI64IntegerAttr(microBatches)));
  module->setAttr(parplan::kInferenceAttrName, b.getDictionaryAttr(inference));
}

} // namespace
