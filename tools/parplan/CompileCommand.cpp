//===- CompileCommand.cpp - parplan compile -------------------------------===//
//
// The main job: a model and a cluster in, a plan file and its summary out.
// The compile driver (Driver/Compile.h) decides; this file reads the model,
// writes the plan and prints what the driver chose.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "CompileSummary.h"
#include "Diagnostics.h"
#include "ModelFiles.h"
#include "Progress.h"

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Driver/Compile.h"
#include "parplan/Driver/GnnPlacer.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Simulate/Report.h"
#include "parplan/Simulate/Simulator.h"
#include "parplan/Support/Files.h"
#include "parplan/Support/Text.h"
#include "parplan/Transforms/Debug.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>

#include <chrono>
#include <optional>
#include <sstream>

using namespace mlir;
using namespace parplan;
namespace plan = parplan::plan;

namespace {

using parplan::cli::Progress;
using parplan::driver::CompileResult;
using parplan::driver::PlanFigures;

/// The plan's simulation for --trace and --report (docs/simulate.md), its
/// timeline written when asked for; none once it has said why not.
std::optional<parplan::simulate::Simulation>
simulatePlan(const parplan::cli::CompileOptions &options,
             const plan::Plan &exported, std::optional<cost::Cluster> &on) {
  std::string error;
  on = cost::parseCluster(exported.cluster(), "the plan's cluster", error);
  if (!on) {
    fmt::print(stderr, "parplan compile: error: {}\n", error);
    return std::nullopt;
  }
  simulate::SimulateOptions settings;
  settings.trace = !options.trace.empty();
  // The report's timeline: columns of a few pixels each.
  settings.timelineColumns = options.report.empty() ? 0 : 400;
  simulate::Simulation simulated;
  runtime::Status status =
      simulate::simulatePlan(exported, *on, settings, simulated);
  if (status.ok() && !options.trace.empty())
    status = runtime::writeChromeTraceFile(simulated.trace, options.trace);
  if (!status.ok()) {
    fmt::print(stderr, "parplan compile: error: {}: {}\n",
               options.trace.empty() ? "--report" : "--trace", status.error);
    return std::nullopt;
  }
  return simulated;
}

/// --report: one HTML page of the plan and its simulation.
bool writeReport(const parplan::cli::CompileOptions &options,
                 const CompileResult &result, const cost::Cluster &cluster,
                 const simulate::Simulation &simulated,
                 const std::string &devices) {
  const PlanFigures &figures = result.figures;
  simulate::ReportInput report;
  report.title = options.input + " on " + options.compile.layout.cluster;
  report.plan = result.plan;
  report.cluster = &cluster;
  report.simulation = &simulated;
  report.layouts = figures.parameterLayouts;
  report.facts = {{"model", options.input},
                  {"devices", devices},
                  {"strategy", options.compile.layout.strategy},
                  {"predicted step", formatSeconds(figures.stepSeconds)},
                  {"simulated step", formatSeconds(simulated.stepSeconds)}};
  if (figures.microBatches > 1)
    report.facts.push_back(
        {"micro-batches",
         fmt::format("{} of {}{}", figures.microBatches,
                     options.compile.batch / figures.microBatches,
                     figures.schedule.empty() ? ""
                                              : " by " + figures.schedule)});
  report.facts.push_back(
      {"peak memory per device",
       fmt::format("{} planned{} ({} estimated)",
                   formatBytes(figures.peakMemoryBytes),
                   figures.peakInFlightBytes > 0
                       ? " + " + formatBytes(figures.peakInFlightBytes) +
                             " of other micro-batches' activations in flight"
                       : std::string(),
                   formatBytes(figures.estimatedMemoryBytes))});
  return parplan::cli::writeFile(options.report, [&](llvm::raw_ostream &out) {
    std::ostringstream page;
    simulate::writeReport(report, page);
    out << page.str();
  });
}

/// The driver's options from the command's: progress on stderr, and
/// --emit's IR on stdout.
driver::CompileOptions driverOptions(const cli::CompileOptions &options,
                                     Progress &progress) {
  driver::CompileOptions settings = options.compile;
  settings.inference = !options.train;
  // The placer scripts/train-placer.sh writes by default.
  if (settings.layout.placer == "gnn" && settings.layout.placerModel.empty())
    settings.layout.placerModel = driver::defaultPlacerDirectory();
  settings.onStage = [&](const std::string &what, double done) {
    progress.stage(what, done);
  };
  settings.onStageEnd = [&] { progress.finish(); };
  if (!options.emit.empty()) {
    settings.emit = options.emit == "nn"    ? driver::CompileStage::TrainingStep
                    : options.emit == "sbp" ? driver::CompileStage::Layout
                                            : driver::CompileStage::Plan;
    settings.emitIR = [](ModuleOp module) {
      module.print(llvm::outs());
      llvm::outs() << "\n";
    };
    if (options.output.empty())
      settings.stopAfter = *settings.emit;
  }
  return settings;
}

/// "4 stages of mesh 2x8", or "mesh 2x4".
std::string meshDescription(const PlanFigures &figures) {
  std::string meshText = "mesh " + cost::formatMeshShape(figures.meshShape);
  if (figures.stages.size() > 1)
    meshText = fmt::format("{} stages of {}", figures.stages.size(), meshText);
  return meshText;
}

/// The summary's lines on stdout: what was compiled, the predicted (and
/// simulated) step, the search, and each device's memory and work.
void printFigures(const cli::CompileOptions &options,
                  const CompileResult &result,
                  const std::optional<simulate::Simulation> &simulated,
                  double compileSeconds, StringRef planPath) {
  const PlanFigures &figures = result.figures;
  size_t programs = figures.programs.size();
  fmt::print("compiled {} for {}{} devices ({}, {}, {}) in {}: {} ({} "
             "program{})\n",
             options.input, options.train ? "" : "inference on ",
             figures.devices, meshDescription(figures),
             options.compile.layout.cluster, options.compile.layout.strategy,
             formatSeconds(compileSeconds), planPath.str(), programs,
             programs == 1 ? "" : "s");
  // On stages, compute and communication add up every stage's; the step
  // is the schedule's timeline, where stages overlap. Overlapped: what
  // each device's two streams run at once (docs/cost-model.md#overlap).
  fmt::print("  predicted step   {} ({}compute {}, communication {}{})\n",
             formatSeconds(figures.stepSeconds),
             figures.stages.empty() ? "" : "summed over stages: ",
             formatSeconds(figures.computeSeconds),
             formatSeconds(figures.communicationSeconds),
             figures.overlapSeconds > 0
                 ? ", overlapped " + formatSeconds(figures.overlapSeconds)
                 : std::string());
  if (simulated)
    fmt::print("  simulated step   {} ({:+.1f}% of the prediction; "
               "`parplan simulate` says why){}\n",
               formatSeconds(simulated->stepSeconds),
               figures.stepSeconds > 0
                   ? 100 * (simulated->stepSeconds - figures.stepSeconds) /
                         figures.stepSeconds
                   : 0.0,
               options.trace.empty() ? "" : ", timeline in " + options.trace);
  printSearch(options, result);
  fmt::print("  per device       peak memory {} planned{} ({} estimated), "
             "communication {} per step, {}\n",
             formatBytes(figures.peakMemoryBytes),
             figures.peakInFlightBytes > 0
                 ? fmt::format(" + {} of other micro-batches' activations "
                               "in flight",
                               formatBytes(figures.peakInFlightBytes))
                 : std::string(),
             formatBytes(figures.estimatedMemoryBytes),
             formatBytes(static_cast<int64_t>(figures.commBytes)),
             formatFlops(figures.flopsPerDevice));
  if (figures.laidOutAgain)
    fmt::print("  memory budget    laid out again under {}: the first "
               "layout's plan needed {} ({} estimated) of the device's {}\n",
               formatBytes(figures.laidOutAgain->budgetBytes),
               formatBytes(figures.laidOutAgain->firstPlannedBytes),
               formatBytes(figures.laidOutAgain->firstEstimatedBytes),
               formatBytes(figures.deviceMemoryBytes));
}

/// The first parameters' layouts; summary.json has them all.
void printParameterLayouts(const PlanFigures &figures, StringRef summaryPath) {
  size_t shown = 0;
  for (const auto &[name, layout] : figures.parameterLayouts) {
    if (shown++ == 12) {
      fmt::print("  ... {} more parameters in {}\n",
                 figures.parameterLayouts.size() - 12, summaryPath.str());
      break;
    }
    fmt::print("  {:<16} {} {}\n", shown == 1 ? "parameters" : "", layout,
               name);
  }
  if (!figures.keptForBackward.empty())
    fmt::print("  {:<16} {}: boxed once for the forward and the backward\n",
               "kept boxed", llvm::join(figures.keptForBackward, ", "));
}

} // namespace

int parplan::cli::runCompile(const CompileOptions &options) {
  auto started = std::chrono::steady_clock::now();
  if (options.output.empty() && options.emit.empty()) {
    llvm::errs() << "parplan compile: error: give an output directory (-o) "
                    "or --emit\n";
    return 1;
  }
  // Stages of over a second told on stderr (--quiet: none).
  // A search's explanations and a progress bar would share stderr.
  for (const std::string &type : options.debugOnly)
    enableDebugType(type);
  Progress progress(!options.quiet && options.debugOnly.empty(),
                    "parplan compile");
  progress.stage("importing " + options.input, 0);
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  OneLineDiagnostics diagnostics(context);
  diagnostics.setWriter(
      [&](const std::function<void()> &write) { progress.write(write); });
  // The passes of each stage and the work between them (import, figures,
  // export); --mlir-timing reports them together.
  DefaultTimingManager timing;
  timing.setEnabled(options.mlirTiming);
  TimingScope timingRoot = timing.getRootScope();
  driver::ModelImporter importAt = [&](int64_t count) {
    TimingScope importTiming = timingRoot.nest("Import");
    ImportBindings bindings = options.bindings;
    if (options.compile.batch > 0)
      bindings.dims.push_back("batch=" +
                              std::to_string(options.compile.batch / count));
    return loadModel(options.input, bindings, /*raw=*/false, context);
  };
  driver::CompileOptions settings = driverOptions(options, progress);
  // The pass managers live to the end: the timing report knows a pass by
  // its address, which a freed pass would hand to the next one.
  std::vector<std::unique_ptr<PassManager>> passManagers;
  FailureOr<driver::CompileResult> compiled =
      driver::compile(importAt, settings, context,
                      FileLineColLoc::get(&context, options.input, 0, 0),
                      timingRoot, passManagers);
  if (failed(compiled)) {
    progress.abandon();
    return 1;
  }
  if (settings.stopAfter != driver::CompileStage::Plan ||
      options.output.empty())
    return 0;
  // What follows reads the exported plan and the figures: the plan's IR,
  // the largest thing alive, goes before the files are written.
  compiled->module = nullptr;
  const CompileResult &result = *compiled;
  const PlanFigures &figures = result.figures;

  if (std::error_code error =
          llvm::sys::fs::create_directories(options.output)) {
    progress.abandon();
    llvm::errs() << "parplan compile: error: cannot create '" << options.output
                 << "': " << error.message() << "\n";
    return 1;
  }
  SmallString<256> planPath(options.output), summaryPath(options.output);
  llvm::sys::path::append(planPath, "plan.pb");
  llvm::sys::path::append(summaryPath, "summary.json");

  // --trace: the plan's step simulated (docs/simulate.md), its timeline
  // written for Perfetto.
  std::optional<simulate::Simulation> simulated;
  std::optional<cost::Cluster> simulatedOn;
  if (!options.trace.empty() || !options.report.empty()) {
    progress.stage("simulating the plan", 0.95);
    TimingScope simulateTiming = timingRoot.nest("Simulate");
    simulated = simulatePlan(options, *result.plan, simulatedOn);
    if (!simulated) {
      progress.abandon();
      return 1;
    }
  }

  // plan.pb and summary.json replace the previous ones only once both are
  // ready, each whole, under the directory's lock: a compile that fails or
  // is interrupted leaves the previous pair, and two compiles into one
  // directory leave one's pair, not a plan beside another's summary.
  TimingScope writeTiming = timingRoot.nest("Write");
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  std::string summary;
  {
    llvm::raw_string_ostream out(summary);
    writeSummaryJson(out, options, result, compileSeconds, simulated);
  }
  std::string lockError;
  std::optional<DirectoryLock> lock =
      DirectoryLock::acquire(options.output, lockError);
  std::optional<std::string> problem;
  if (!lock)
    problem = lockError;
  std::string planBytes = runtime::serializePlan(*result.plan);
  if (!problem)
    problem = writeFilesAtomically({{planPath.str().str(), planBytes},
                                    {summaryPath.str().str(), summary}});
  lock.reset();
  if (problem) {
    progress.abandon();
    llvm::errs() << "parplan compile: error: " << *problem << "\n";
    return 1;
  }
  writeTiming.stop();
  progress.finish();

  printFigures(options, *compiled, simulated, compileSeconds, planPath.str());
  if (!options.report.empty()) {
    if (!writeReport(options, result, *simulatedOn, *simulated,
                     fmt::format("{} ({}, {})", figures.devices,
                                 meshDescription(figures),
                                 options.compile.layout.cluster)))
      return 1;
    fmt::print("  report           {}\n", options.report);
  }
  printParameterLayouts(figures, summaryPath.str());
  return 0;
}
