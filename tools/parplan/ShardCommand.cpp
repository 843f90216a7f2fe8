//===- ShardCommand.cpp - parplan shard -----------------------------------===//

#include "Commands.h"
#include "Diagnostics.h"
#include "ModelFiles.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Driver/Compile.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Support/Text.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"

#include "parplan/Dialect/NN/NNUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <map>

using namespace mlir;

using namespace parplan;

namespace {

/// The plan sbp-assign left in `module` (sbp.plan, sbp.sharding and
/// sbp.explain of every op) as the JSON of docs/cli.md's --explain-json.
bool writeExplanation(ModuleOp module, const std::string &path) {
  auto plan =
      module->getAttrOfType<sbp::LayoutPlanAttr>(parplan::kLayoutPlanAttrName);
  sbp::MeshOp mesh = driver::layoutMesh(module);
  auto function = module.lookupSymbol<func::FuncOp>("main");
  auto layouts = [](sbp::ShardingAttr sharding, unsigned operands,
                    unsigned results) {
    llvm::json::Array operandList, resultList;
    for (unsigned i = 0; i < operands; ++i)
      operandList.push_back(parplan::toString(sharding.getOperandSbp(i)));
    for (unsigned i = 0; i < results; ++i)
      resultList.push_back(parplan::toString(sharding.getResultSbp(i)));
    return std::make_pair(std::move(operandList), std::move(resultList));
  };
  auto seconds = [](double value) {
    return std::isfinite(value) ? llvm::json::Value(value)
                                : llvm::json::Value(nullptr);
  };
  llvm::json::Array ops;
  function.walk([&](Operation *op) {
    auto sharding =
        op->getAttrOfType<sbp::ShardingAttr>(parplan::kShardingAttrName);
    auto explain = op->getAttrOfType<DictionaryAttr>(parplan::kExplainAttrName);
    if (!sharding || !explain)
      return;
    auto [operands, results] =
        layouts(sharding, op->getNumOperands(), op->getNumResults());
    llvm::json::Object entry{
        {"op", op->getName().getStringRef()},
        {"node", nn::nodeName(op)},
        {"operands", std::move(operands)},
        {"results", std::move(results)},
        {"cost_s",
         seconds(explain.getAs<FloatAttr>("cost").getValueAsDouble())},
    };
    if (auto other = explain.getAs<sbp::ShardingAttr>("runner_up")) {
      auto [otherOperands, otherResults] =
          layouts(other, op->getNumOperands(), op->getNumResults());
      entry["runner_up"] = llvm::json::Object{
          {"operands", std::move(otherOperands)},
          {"results", std::move(otherResults)},
          {"cost_s",
           seconds(
               explain.getAs<FloatAttr>("runner_up_cost").getValueAsDouble())}};
    }
    ops.push_back(std::move(entry));
  });
  llvm::json::Object baselines;
  for (NamedAttribute baseline : plan.getBaselines())
    baselines[baseline.getName().str()] =
        cast<FloatAttr>(baseline.getValue()).getValueAsDouble();
  llvm::json::Array shape;
  for (int64_t size : mesh.getShape())
    shape.push_back(size);
  llvm::json::Object summary{
      {"cluster", plan.getCluster()},
      {"mesh", std::move(shape)},
      {"strategy", plan.getStrategy()},
      {"start", plan.getStart()},
      {"baselines", std::move(baselines)},
      {"training", plan.getTraining().getValue()},
      {"step_time_s", plan.getStepTime()},
      {"compute_time_s", plan.getComputeTime()},
      {"communication_time_s", plan.getCommunicationTime()},
      {"memory_bytes_per_device", plan.getMemoryBytes()},
      {"device_memory_bytes", plan.getDeviceMemoryBytes()},
      {"search_nodes", plan.getSearchNodes()},
      {"ops", std::move(ops)},
  };
  return cli::writeFile(path, [&](llvm::raw_ostream &out) {
    out << llvm::formatv("{0:2}", llvm::json::Value(std::move(summary)))
        << "\n";
  });
}

} // namespace

int cli::runShard(const ShardOptions &options) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module =
      loadModel(options.input, options.bindings, /*raw=*/false, context);
  if (!module)
    return 1;

  OneLineDiagnostics diagnostics(context);
  LayoutOptions layout = options.layout;
  if (layout.autoStages) {
    llvm::errs() << "parplan shard: error: --stages auto is chosen by "
                    "parplan compile, which prices the schedule; give shard "
                    "a count\n";
    return 1;
  }
  if (!attachLayoutInputs(*module, layout, "shard") ||
      !resolveMegatronGrid(*module, layout, "shard"))
    return 1;
  PassManager pm(&context);
  ShardPipelineOptions pipeline;
  pipeline.mesh = layout.mesh;
  pipeline.strategy = layout.strategy;
  pipeline.stages = layout.stages;
  pipeline.shares = layout.evenShares ? "even" : layout.shares;
  pipeline.cutInsideLayers = layout.stageCuts == "inside-layers";
  pipeline.training = !options.inference;
  pipeline.optimizer = options.optimizer;
  pipeline.mixedPrecision = !options.fullPrecision;
  pipeline.explain = options.explain || !options.explainFile.empty();
  buildShardPipeline(pm, pipeline);
  if (failed(pm.run(*module)))
    return 1;
  if (!options.explainFile.empty()) {
    if (!writeExplanation(*module, options.explainFile))
      return 1;
    // --explain-json alone leaves the IR as it would be without it.
    if (!options.explain)
      module->walk(
          [](Operation *op) { op->removeAttr(parplan::kExplainAttrName); });
  }

  if (!writeIR(*module, options.output))
    return 1;
  if (options.output.empty())
    return 0;
  auto plan = (*module)->getAttrOfType<sbp::LayoutPlanAttr>(
      parplan::kLayoutPlanAttrName);
  sbp::MeshOp mesh = driver::layoutMesh(*module);
  // The collectives the boxings became, by kind; a boxing is a chain of
  // steps, counted at its first.
  std::map<std::string, int> collectives;
  int boxings = 0;
  module->walk([&](Operation *op) {
    std::optional<ReshardStep> step = sbp::getReshardStep(op);
    if (!step)
      return;
    Operation *producer = op->getOperand(0).getDefiningOp();
    if (!producer || !sbp::getReshardStep(producer))
      ++boxings;
    if (isCollective(step->kind))
      ++collectives[toString(step->kind)];
  });
  std::string counts;
  for (const auto &[name, count] : collectives)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", count, name);
  fmt::print("wrote {}: mesh {} ({}), step {} (compute {}, communication {}), "
             "{} of {} per device; {} boxings{}\n",
             options.output, fmt::format("{}", fmt::join(mesh.getShape(), "x")),
             options.layout.strategy, formatSeconds(plan.getStepTime()),
             formatSeconds(plan.getComputeTime()),
             formatSeconds(plan.getCommunicationTime()),
             formatBytes(plan.getMemoryBytes()),
             formatBytes(plan.getDeviceMemoryBytes()), boxings,
             counts.empty() ? "" : " (" + counts + ")");
  return 0;
}
