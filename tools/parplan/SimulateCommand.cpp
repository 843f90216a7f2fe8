//===- SimulateCommand.cpp - parplan simulate -----------------------------===//
//
// Simulates a plan's training step under the cost model (Simulator.h) and
// says what it found beside the cost model's own prediction: the step, why
// the two differ, the critical path, each class of devices' busy, idle and
// communication time and memory, and optionally the timeline as a trace
// for Perfetto (docs/simulate.md).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Presets.h"
#include "parplan/Simulate/Simulator.h"
#include "parplan/Simulate/TraceComparison.h"
#include "parplan/Support/Text.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

using namespace parplan;

namespace {

int fail(const std::string &error) {
  fmt::print(stderr, "parplan simulate: error: {}\n", error);
  return 1;
}

/// The devices of a class and what they run, for a line of the report.
std::string describeClass(const simulate::DeviceClass &figures, bool staged) {
  std::string text =
      fmt::format("devices {} (program {}, {}", formatDevices(figures.devices),
                  figures.program, figures.deviceType);
  if (staged)
    text += fmt::format(", stage {}", figures.stage);
  return text + ")";
}

/// A signed change as a percentage of `base`.
std::string percent(double value, double base) {
  return base > 0 ? fmt::format("{:+.1f}%", 100 * (value - base) / base) : "";
}

/// The measured trace at `path` (Chrome trace-event JSON, as parplan-run
/// --trace writes it), parsed; std::nullopt with `error` set when it cannot
/// be read or is not JSON.
std::optional<llvm::json::Value> readTraceFile(const std::string &path,
                                               std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    error = "cannot read '" + path + "': " + file.getError().message();
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> measured =
      llvm::json::parse((*file)->getBuffer());
  if (!measured) {
    error = path + ": " + llvm::toString(measured.takeError());
    return std::nullopt;
  }
  return std::move(*measured);
}

/// Appends `measured`, the trace read from `path`, to `trace`'s JSON text
/// `simulated`: its processes numbered after the simulated ones and named
/// "measured".
std::optional<std::string> mergeTraces(const std::string &simulated,
                                       size_t simulatedProcesses,
                                       llvm::json::Value measured,
                                       const std::string &path,
                                       std::string &error) {
  llvm::Expected<llvm::json::Value> own = llvm::json::parse(simulated);
  if (!own) {
    error = "the simulated trace: " + llvm::toString(own.takeError());
    return std::nullopt;
  }
  llvm::json::Object *measuredObject = measured.getAsObject();
  llvm::json::Array *measuredEvents =
      measuredObject ? measuredObject->getArray("traceEvents") : nullptr;
  if (!measuredEvents) {
    error = path + ": not a trace (no traceEvents array)";
    return std::nullopt;
  }
  llvm::json::Array *events = own->getAsObject()->getArray("traceEvents");
  auto shift = static_cast<int64_t>(simulatedProcesses);
  // Flow ids are numbered per file: the measured ones go after ours.
  int64_t flowShift = 0;
  for (const llvm::json::Value &event : *events)
    if (const llvm::json::Object *object = event.getAsObject())
      if (std::optional<int64_t> id = object->getInteger("id"))
        flowShift = std::max(flowShift, *id + 1);
  for (llvm::json::Value &event : *measuredEvents) {
    llvm::json::Object *object = event.getAsObject();
    if (!object)
      continue;
    if (std::optional<int64_t> pid = object->getInteger("pid"))
      (*object)["pid"] = *pid + shift;
    if (std::optional<int64_t> id = object->getInteger("id"))
      (*object)["id"] = *id + flowShift;
    // After ours in the list too.
    if (object->getString("name") == "process_sort_index")
      if (llvm::json::Object *args = object->getObject("args"))
        if (std::optional<int64_t> index = args->getInteger("sort_index"))
          (*args)["sort_index"] = *index + shift;
    // Process names say which side they are.
    if (object->getString("name") == "process_name")
      if (llvm::json::Object *args = object->getObject("args"))
        if (std::optional<llvm::StringRef> name = args->getString("name"))
          (*args)["name"] = (*name + " (measured)").str();
    events->push_back(std::move(event));
  }
  for (llvm::json::Value &event : *events)
    if (llvm::json::Object *object = event.getAsObject())
      if (object->getString("name") == "process_name")
        if (std::optional<int64_t> pid = object->getInteger("pid");
            pid && *pid < shift)
          if (llvm::json::Object *args = object->getObject("args"))
            if (std::optional<llvm::StringRef> name = args->getString("name"))
              (*args)["name"] = (*name + " (simulated)").str();
  std::string text;
  llvm::raw_string_ostream out(text);
  out << *own;
  return text;
}

/// Most ops the comparison lists, the largest differences.
constexpr size_t kComparedOps = 10;

/// The measured kernels beside the simulated ones, by op.
void printComparison(const simulate::KernelComparison &comparison,
                     const std::string &path) {
  fmt::print("  measured         {} of the simulation's {} kernels found in "
             "{} on {} device{}: {} measured, {} simulated ({}); by op, the "
             "largest differences first:\n",
             groupThousands(static_cast<uint64_t>(comparison.matched)),
             groupThousands(static_cast<uint64_t>(comparison.simulatedKernels)),
             path, comparison.devices, comparison.devices == 1 ? "" : "s",
             formatSeconds(comparison.measured),
             formatSeconds(comparison.simulated),
             percent(comparison.simulated, comparison.measured));
  size_t listed = std::min(comparison.ops.size(), kComparedOps);
  size_t width = 0;
  for (size_t i = 0; i < listed; ++i)
    width = std::max(width, comparison.ops[i].op.size());
  for (size_t i = 0; i < listed; ++i) {
    const simulate::OpTimes &op = comparison.ops[i];
    fmt::print("                   {:<{}}  {:>9} measured, {:>9} simulated "
               "({}), {} kernel{}\n",
               op.op, width, formatSeconds(op.measured),
               formatSeconds(op.simulated), percent(op.simulated, op.measured),
               groupThousands(static_cast<uint64_t>(op.kernels)),
               op.kernels == 1 ? "" : "s");
  }
  if (comparison.ops.size() > kComparedOps)
    fmt::print("                   ... {} more ops\n",
               comparison.ops.size() - kComparedOps);
  if (comparison.unmatched > 0)
    fmt::print("                   {} measured kernel{} without a simulated "
               "twin: a cross-mesh move's own (the simulator times the move "
               "whole), or another plan's, or devices shown as a class "
               "(--trace-devices)\n",
               groupThousands(static_cast<uint64_t>(comparison.unmatched)),
               comparison.unmatched == 1 ? "" : "s");
}

/// The cluster to simulate on: --cluster, else the one the plan carries.
std::optional<cost::Cluster>
simulationCluster(const parplan::cli::SimulateOptions &options,
                  const plan::Plan &plan, std::string &error) {
  if (!options.cluster.empty())
    return cost::resolveCluster(options.cluster, error);
  if (!plan.cluster().empty())
    return cost::parseCluster(plan.cluster(), options.plan + " (cluster)",
                              error);
  error = options.plan + " carries no cluster (a plan written without one); "
                         "name one with --cluster";
  return std::nullopt;
}

/// The step simulated beside the prediction, and why they differ: the
/// overlap of the two streams, kernels the cost model does not price, and
/// what the one-stream step still differs by.
void printStep(const plan::Plan &plan, const simulate::Simulation &simulation,
               const std::optional<simulate::Simulation> &oneStream) {
  double step = simulation.stepSeconds;
  fmt::print("  step             {} simulated", formatSeconds(step));
  if (plan.has_prediction() && plan.prediction().step_seconds() > 0) {
    double predicted = plan.prediction().step_seconds();
    fmt::print("; the cost model predicted {} ({} simulated)\n",
               formatSeconds(predicted), percent(step, predicted));
  } else {
    fmt::print("; the plan carries no prediction\n");
  }
  if (oneStream) {
    fmt::print("                   one stream per device {}: the "
               "communication stream overlaps {} with compute\n",
               formatSeconds(oneStream->stepSeconds),
               formatSeconds(std::max(0.0, oneStream->stepSeconds - step)));
  }
  if (simulation.unpricedKernels > 0) {
    // The costliest kinds first.
    std::vector<std::pair<std::string, std::pair<int64_t, double>>> kinds(
        simulation.unpricedByKernel.begin(), simulation.unpricedByKernel.end());
    std::stable_sort(kinds.begin(), kinds.end(),
                     [](const auto &a, const auto &b) {
                       return a.second.second > b.second.second;
                     });
    std::string which;
    for (size_t k = 0; k < kinds.size() && k < 4; ++k)
      which += fmt::format(
          "{}{} {} x{}", k ? ", " : "", kinds[k].first,
          formatSeconds(kinds[k].second.second),
          groupThousands(static_cast<uint64_t>(kinds[k].second.first)));
    fmt::print(
        "                   kernels the cost model does not price "
        "(the lowering's helpers), timed by their bytes: {} in {} "
        "run{} ({})\n",
        formatSeconds(simulation.unpricedSeconds),
        groupThousands(static_cast<uint64_t>(simulation.unpricedKernels)),
        simulation.unpricedKernels == 1 ? "" : "s", which);
  }
}

/// The critical path's split and costliest ops, and each class of
/// devices' busy, idle and peak memory.
void printCriticalPath(const simulate::Simulation &simulation, bool staged) {
  double pathTotal = simulation.criticalCompute +
                     simulation.criticalCommunication +
                     simulation.criticalMoves;
  fmt::print("  critical path    {}: compute {}, collectives and messages "
             "{}, cross-mesh moves {}\n",
             formatSeconds(pathTotal),
             formatSeconds(simulation.criticalCompute),
             formatSeconds(simulation.criticalCommunication),
             formatSeconds(simulation.criticalMoves));
  for (size_t i = 0; i < simulation.criticalOps.size(); ++i) {
    const simulate::CriticalOp &op = simulation.criticalOps[i];
    fmt::print("                   {:>2}. {} {}{} ({} run{})\n", i + 1,
               formatSeconds(op.seconds), op.op,
               op.node.empty() ? "" : " " + op.node,
               groupThousands(static_cast<uint64_t>(op.count)),
               op.count == 1 ? "" : "s");
  }
  fmt::print("  devices          busy is the compute stream's, idle the "
             "rest of the step\n");
  for (const simulate::DeviceClass &figures : simulation.classes) {
    fmt::print(
        "                   {}: busy {}, idle {}, communication {}, "
        "peak memory {} at {}{}\n",
        describeClass(figures, staged), formatSeconds(figures.computeBusy),
        formatSeconds(figures.idle), formatSeconds(figures.communicationBusy),
        formatBytes(static_cast<int64_t>(figures.peakMemory)),
        formatSeconds(figures.peakAt),
        figures.arenaBytes > 0
            ? fmt::format(" (arena planned {})",
                          formatBytes(static_cast<int64_t>(figures.arenaBytes)))
            : "");
  }
}

/// --trace: the simulated timeline, merged with --merge's measured one
/// (and their kernels compared). Returns the command's exit code.
int writeTrace(const parplan::cli::SimulateOptions &options,
               const simulate::Simulation &simulation) {
  std::string error;
  std::string text;
  {
    std::ostringstream out;
    runtime::writeChromeTrace(simulation.trace, out);
    text = out.str();
  }
  std::optional<simulate::KernelComparison> comparison;
  if (!options.merge.empty()) {
    std::optional<llvm::json::Value> measured =
        readTraceFile(options.merge, error);
    if (!measured)
      return fail(error);
    comparison = simulate::compareKernels(simulation.trace, *measured, error);
    if (!comparison)
      return fail(options.merge + ": " + error);
    std::optional<std::string> merged =
        mergeTraces(text, simulation.trace.processes.size(),
                    std::move(*measured), options.merge, error);
    if (!merged)
      return fail(error);
    text = std::move(*merged);
  }
  std::ofstream out(options.trace, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    return fail("cannot write trace " + options.trace);
  fmt::print("  trace            {} ({} events{}): open it in "
             "ui.perfetto.dev or chrome://tracing\n",
             options.trace, groupThousands(simulation.trace.events.size()),
             options.merge.empty() ? "" : ", with " + options.merge + "'s");
  if (comparison)
    printComparison(*comparison, options.merge);
  return 0;
}

} // namespace

int parplan::cli::runSimulate(const SimulateOptions &options) {
  runtime::Status status;
  // On an arena: a plan of a thousand devices is a million messages, freed
  // at once.
  google::protobuf::ArenaOptions arenaOptions;
  arenaOptions.max_block_size = 64 << 20;
  google::protobuf::Arena arena(arenaOptions);
  plan::Plan &plan = *google::protobuf::Arena::Create<plan::Plan>(&arena);
  if (status = runtime::readPlanFile(options.plan, plan); !status.ok())
    return fail(status.error);
  if (status = runtime::checkPlan(plan); !status.ok())
    return fail(options.plan + ": " + status.error);
  std::string error;
  std::optional<cost::Cluster> cluster =
      simulationCluster(options, plan, error);
  if (!cluster)
    return fail(error);
  auto started = std::chrono::steady_clock::now();
  simulate::SimulateOptions settings;
  settings.streams = options.streams;
  settings.trace = !options.trace.empty();
  settings.traceDevices = options.traceDevices;
  simulate::Simulation simulation;
  if (status = simulate::simulatePlan(plan, *cluster, settings, simulation);
      !status.ok())
    return fail(options.plan + ": " + status.error);
  // The same step on one stream per device: what overlapping buys, and
  // the figure the cost model's sum of compute and communication is.
  std::optional<simulate::Simulation> oneStream;
  if (options.streams > 1) {
    simulate::SimulateOptions serial = settings;
    serial.streams = 1;
    serial.trace = false;
    oneStream.emplace();
    if (status = simulate::simulatePlan(plan, *cluster, serial, *oneStream);
        !status.ok())
      return fail(options.plan + ": " + status.error);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();

  int64_t devices = runtime::planDevices(plan);
  bool staged = plan.meshes_size() > 1;
  fmt::print("simulated {} ({} devices{}) on {}, {} stream{} per device, in "
             "{:.2f} s\n",
             options.plan, devices,
             plan.micro_batches() > 1
                 ? fmt::format(", {} micro-batches by {}", plan.micro_batches(),
                               plan.schedule().empty() ? "sequential"
                                                       : plan.schedule())
                 : "",
             cluster->name, options.streams, options.streams == 1 ? "" : "s",
             seconds);
  printStep(plan, simulation, oneStream);
  printCriticalPath(simulation, staged);
  if (!options.trace.empty())
    return writeTrace(options, simulation);
  return 0;
}
