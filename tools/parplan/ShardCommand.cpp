//===- ShardCommand.cpp - parplan shard -----------------------------------===//

#include "Commands.h"
#include "Diagnostics.h"
#include "ModelFiles.h"

#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Support/Text.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/ShardingCostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <map>

using namespace mlir;

int parplan::cli::runShard(const ShardOptions &options) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module =
      loadModel(options.input, options.dims, /*raw=*/false, context);
  if (!module)
    return 1;

  OneLineDiagnostics diagnostics(context);
  if (!attachLayoutInputs(*module, options.layout, "shard"))
    return 1;
  PassManager pm(&context);
  // Fused projections (GPT-2's query-key-value) become one per part, each
  // free to take its own layout.
  pm.addNestedPass<func::FuncOp>(createNNSplitFusedProjections());
  SbpAssignOptions assign;
  assign.cluster = options.layout.cluster;
  assign.mesh = options.layout.mesh;
  assign.strategy = options.layout.strategy;
  assign.training = !options.inference;
  assign.optimizer = options.optimizer;
  assign.mixedPrecision = !options.fullPrecision;
  assign.annotations = options.layout.annotations;
  assign.explain = options.explain;
  assign.explainFile = options.explainFile;
  pm.addPass(createSbpAssign(assign));
  InsertBoxingOptions boxing;
  boxing.cluster = options.layout.cluster;
  boxing.mixedPrecision = !options.fullPrecision;
  pm.addPass(createInsertBoxing(boxing));
  if (failed(pm.run(*module)))
    return 1;
  int boxings = 0;
  module->walk([&](sbp::BoxingOp) { ++boxings; });
  PassManager expand(&context);
  ExpandBoxingOptions steps;
  steps.cluster = boxing.cluster;
  steps.mixedPrecision = boxing.mixedPrecision;
  expand.addPass(createExpandBoxing(steps));
  if (failed(expand.run(*module)))
    return 1;

  if (!writeIR(*module, options.output))
    return 1;
  if (options.output.empty())
    return 0;
  auto plan = (*module)->getAttrOfType<DictionaryAttr>("sbp.plan");
  auto mesh = module->lookupSymbol<sbp::MeshOp>("mesh");
  auto seconds = [&](StringRef key) {
    return cast<FloatAttr>(plan.get(key)).getValueAsDouble();
  };
  auto integer = [&](StringRef key) {
    return cast<IntegerAttr>(plan.get(key)).getInt();
  };
  // The collectives the boxings became, by kind.
  std::map<std::string, int> collectives;
  module->walk([&](Operation *op) {
    if (std::optional<ReshardStep> step = sbp::getReshardStep(op);
        step && isCollective(step->kind))
      ++collectives[toString(step->kind)];
  });
  std::string counts;
  for (const auto &[name, count] : collectives)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count, name);
  fmt::print("wrote {}: mesh {} ({}), step {} (compute {}, communication {}), "
             "{} of {} per device; {} boxings{}\n",
             options.output, fmt::format("{}", fmt::join(mesh.getShape(), "x")),
             options.layout.strategy, formatSeconds(seconds("step_time")),
             formatSeconds(seconds("compute_time")),
             formatSeconds(seconds("communication_time")),
             formatBytes(integer("memory_bytes")),
             formatBytes(integer("device_memory_bytes")), boxings,
             counts.empty() ? "" : " (" + counts + ")");
  return 0;
}
