//===- TrainStepCommand.cpp - parplan train-step --------------------------===//

#include "Commands.h"
#include "Diagnostics.h"
#include "ModelFiles.h"

#include "parplan/Driver/Compile.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Support/Text.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <fmt/core.h>

using namespace mlir;

int parplan::cli::runTrainStep(const TrainStepOptions &options) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module =
      loadModel(options.input, options.bindings, /*raw=*/false, context);
  if (!module)
    return 1;

  OneLineDiagnostics diagnostics(context);
  PassManager pm(&context);
  CompilePipelineOptions pipeline;
  driver::setPipelineOptions(pipeline, options.training);
  addAutodiffPass(pm, pipeline);
  if (failed(pm.run(*module)))
    return 1;

  if (!writeIR(*module, options.output))
    return 1;
  if (options.output.empty())
    return 0;
  TrainingStepStats stats =
      analyzeTrainingStep(module->lookupSymbol<func::FuncOp>("main"));
  fmt::print("wrote {}: {} loss, {} optimizer, recompute {}, mixed precision "
             "{}\n",
             options.output, options.training.loss, options.training.optimizer,
             options.training.recompute, options.training.mixedPrecision);
  fmt::print("  parameters   {} trained in {} tensors, {} not trained; {} with "
             "optimizer state {}\n",
             groupThousands(stats.parameters), stats.parameterTensors,
             stats.untrainedTensors, formatBytes(stats.parameterBytes),
             formatBytes(stats.stateBytes));
  if (stats.runningStatisticTensors > 0)
    fmt::print("  batch norm   normalized with the batch's statistics; {} "
               "running statistics updated (--batch-norm frozen keeps "
               "them)\n",
               stats.runningStatisticTensors);
  fmt::print("  FLOPs        forward {}, backward {}, recompute {}, "
             "optimizer {}; matrix products {}\n",
             formatFlops(stats.forwardFlops), formatFlops(stats.backwardFlops),
             formatFlops(stats.recomputeFlops),
             formatFlops(stats.optimizerFlops), formatFlops(stats.matmulFlops));
  fmt::print("  activations  {} kept from forward to backward\n",
             formatBytes(stats.savedActivationBytes));
  if (stats.microBatches > 1)
    fmt::print("  micro-batch  the program above, run {} times a step; the "
               "updates once, on the gradients summed\n",
               stats.microBatches);
  return 0;
}
