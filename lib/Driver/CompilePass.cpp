//===- CompilePass.cpp - parplan-compile: the compile driver as a pass ----===//
//
// The pass turns its options (parplan compile's flags, by name) into the
// driver's, runs the driver on the module as given, and leaves the result
// in its place: parplan-opt then runs exactly what `parplan compile` runs.
//
//===----------------------------------------------------------------------===//

#include "parplan/Driver/Compile.h"
#include "parplan/Driver/Passes.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"

namespace parplan::driver {
#define GEN_PASS_DEF_PARPLANCOMPILE
#include "parplan/Driver/Passes.h.inc"
} // namespace parplan::driver

using namespace mlir;

namespace {

/// A count option that may say `auto` (empty: not given, nothing set):
/// `given`, `isAuto` and `count` (`whenAuto` for auto) as the CLI sets them;
/// failure once said why not.
LogicalResult countOrAuto(StringRef text, StringRef name, int64_t whenAuto,
                          Location location, bool &given, bool &isAuto,
                          int64_t &count) {
  given = !text.empty();
  if (!given)
    return success();
  isAuto = text == "auto";
  if (isAuto) {
    count = whenAuto;
    return success();
  }
  if (text.getAsInteger(10, count) || count < 1)
    return emitError(location)
           << "parplan-compile: " << name
           << " must be a positive count or auto, not '" << text << "'";
  return success();
}

struct ParplanCompilePass
    : parplan::driver::impl::ParplanCompileBase<ParplanCompilePass> {
  using ParplanCompileBase::ParplanCompileBase;

  /// The driver's options of this pass's; failure once said why not.
  LogicalResult driverOptions(parplan::driver::CompileOptions &options) {
    Location location = getOperation().getLoc();
    parplan::driver::LayoutOptions &layout = options.layout;
    layout.cluster = cluster;
    layout.mesh = mesh;
    layout.strategy = strategy;
    layout.annotations = annotations;
    layout.tensor = tensor;
    layout.pipeline = pipeline;
    if (failed(countOrAuto(stages, "stages", 0, location, options.stagesGiven,
                           layout.autoStages, layout.stages)))
      return failure();
    options.inference = !train;
    parplan::driver::TrainingOptions &training = options.training;
    training.loss = loss;
    training.outputIndex = outputIndex;
    training.labels = labels;
    training.optimizer = optimizer;
    training.lr = lr;
    training.weightDecay = weightDecay;
    training.frozen = frozen;
    training.recomputeLayers = recomputeLayers;
    training.mixedPrecision = mixedPrecision;
    training.gradientSums = gradientSums;
    training.batchNorm = batchNorm;
    training.dropout = dropout;
    training.dropoutSeed = dropoutSeed;
    training.untie.assign(untie.begin(), untie.end());
    options.recomputeGiven = !recompute.empty();
    if (options.recomputeGiven)
      training.recompute = recompute;
    options.batch = batch;
    if (failed(countOrAuto(microBatches, "micro-batches", 1, location,
                           options.microBatchesGiven, options.autoMicroBatches,
                           training.microBatches)))
      return failure();
    options.scheduleGiven = !schedule.empty();
    if (options.scheduleGiven)
      options.schedule = schedule;
    options.chunksGiven = chunks != 0;
    if (options.chunksGiven)
      options.chunks = chunks;
    if (stopAfter == "nn")
      options.stopAfter = parplan::driver::CompileStage::TrainingStep;
    else if (stopAfter == "sbp")
      options.stopAfter = parplan::driver::CompileStage::Layout;
    else if (stopAfter != "plan")
      return emitError(location) << "parplan-compile: stop-after must be nn, "
                                    "sbp or plan, not '"
                                 << stopAfter << "'";
    options.allowOverMemory = allowOverMemory;
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    parplan::driver::CompileOptions options;
    if (failed(driverOptions(options)))
      return signalPassFailure();
    // The cluster the module carries wins over the option's default.
    if (parplan::clusterAttrOf(module))
      options.layout.cluster.clear();
    // The module is the model at the micro-batch count given: another
    // count needs the model imported again, but for a batch fixed in the
    // model, which the driver divides from the whole (count 1).
    int64_t given = options.training.microBatches;
    bool batchGiven = options.batch > 0;
    parplan::driver::ModelImporter importAt =
        [&](int64_t count) -> OwningOpRef<ModuleOp> {
      if (count == given || (!batchGiven && count == 1))
        return module.clone();
      module.emitError() << "parplan-compile: the module is the model at "
                         << given << " micro-batch" << (given == 1 ? "" : "es")
                         << "; " << count
                         << " needs it imported again (parplan compile "
                            "MODEL.onnx --batch B)";
      return nullptr;
    };
    TimingScope timing;
    std::vector<std::unique_ptr<PassManager>> passManagers;
    FailureOr<parplan::driver::CompileResult> compiled =
        parplan::driver::compile(importAt, options, getContext(),
                                 module.getLoc(), timing, passManagers);
    if (failed(compiled))
      return signalPassFailure();
    ModuleOp result = *compiled->module;
    module.getBodyRegion().takeBody(result.getBodyRegion());
    module->setAttrs(result->getAttrDictionary());
  }
};

} // namespace
