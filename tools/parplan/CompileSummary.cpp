//===- CompileSummary.cpp - what parplan compile prints and writes -------===//
//
// The compile's summary from the driver's typed results: the lines printed
// under "compiled ..." and summary.json (docs/cli.md). Each figure is the
// one the driver computed; nothing here decides or recomputes.
//
//===----------------------------------------------------------------------===//

#include "CompileSummary.h"

#include "parplan/Cost/Mesh.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Support/Text.h"

#include "llvm/ADT/StringExtras.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

using namespace parplan;
using parplan::driver::CompileResult;
using parplan::driver::PipelineSearchResult;
using parplan::driver::PipelineTrial;
using parplan::driver::PlanFigures;

namespace {

/// "transformer.h.0 to transformer.h.13 (14 of 24 layers)": each class of
/// recomputed layers by its first and last, then the count, out of
/// `outOf` when fewer were chosen than the plan with every layer had.
std::string describeLayers(const std::vector<std::string> &layers,
                           size_t outOf) {
  std::vector<std::vector<std::string>> runs;
  for (const std::string &layer : layers) {
    if (runs.empty() ||
        nn::layerClass(runs.back().front()) != nn::layerClass(layer))
      runs.emplace_back();
    runs.back().push_back(layer);
  }
  std::string text;
  for (const std::vector<std::string> &run : runs) {
    text += text.empty() ? "" : ", ";
    if (run.front().empty()) {
      text += "outside every layer";
      continue;
    }
    text += run.front();
    if (run.size() > 1)
      text += " to " + run.back();
  }
  text += " (" + std::to_string(layers.size());
  if (outOf > layers.size())
    text += " of " + std::to_string(outOf);
  return text + (layers.size() == 1 && outOf <= 1 ? " layer)" : " layers)");
}

/// The phases of the pipeline search. A phase's trial is chosen when it
/// matches the chosen shape in what the phase searched and the phases
/// before it: a stage count keeps its count whatever the micro-batches the
/// next phase chose.
enum class Phase { StageCounts, MicroBatches, Schedules, Cuts };

bool isChosen(const PipelineSearchResult &search, const PipelineTrial &trial,
              Phase phase) {
  const PipelineTrial &chosen = search.chosen;
  return trial.stages == chosen.stages &&
         (phase == Phase::StageCounts ||
          trial.microBatches == chosen.microBatches) &&
         (phase < Phase::Schedules || trial.schedule == chosen.schedule) &&
         (phase != Phase::Cuts ||
          trial.cutInsideLayers == chosen.cutInsideLayers);
}

/// Each trial of one phase: its shape and predicted step, or why it failed.
llvm::json::Array trialsJson(const PipelineSearchResult *search,
                             const std::vector<PipelineTrial> &trials,
                             Phase phase) {
  llvm::json::Array entries;
  for (const PipelineTrial &trial : trials) {
    llvm::json::Object entry{{"stages", trial.stages},
                             {"micro_batches", trial.microBatches},
                             {"schedule", trial.schedule},
                             {"recompute", trial.recompute},
                             {"chosen", isChosen(*search, trial, phase)},
                             {"searched", trial.searched}};
    if (phase == Phase::Cuts)
      entry["cut_inside_layers"] = trial.cutInsideLayers;
    if (trial.step)
      entry["predicted_step_time_s"] = *trial.step;
    else
      entry["error"] = trial.why;
    entries.push_back(std::move(entry));
  }
  return entries;
}

/// "1 24.68 s, 2 13.99 s (chosen), 4 no fit": each trial by `label`; a
/// schedule priced on the chosen layouts' stage costs, not searched, says
/// "(timeline only)".
std::string
trialsLine(const PipelineSearchResult &search,
           const std::vector<PipelineTrial> &trials, Phase phase,
           llvm::function_ref<std::string(const PipelineTrial &)> label) {
  std::string line;
  for (const PipelineTrial &trial : trials)
    line += fmt::format("{}{} {}{}", line.empty() ? "" : ", ", label(trial),
                        trial.step    ? parplan::formatSeconds(*trial.step)
                        : trial.noFit ? std::string("no fit")
                                      : std::string("cannot"),
                        isChosen(search, trial, phase) ? " (chosen)"
                        : trial.searched               ? ""
                                                       : " (timeline only)");
  return line;
}

/// " by SCHEDULE": a trial's best schedule, where the schedule was searched
/// and it is not the default one.
std::string bySchedule(const CompileResult &result,
                       const PipelineTrial &trial) {
  bool other =
      result.scheduleSearched && trial.stages > 1 &&
      trial.schedule != parplan::schedule::kDefaultPipelineScheduleName;
  return other ? " by " + trial.schedule : "";
}

/// `trials` with the chosen one (of `phase`) as the plan is, in its final
/// shape and at its predicted step: the trial that chose it was priced
/// before the later phases refined it, and the summary gives the chosen
/// plan one step time.
std::vector<PipelineTrial> asPlanned(const PipelineSearchResult &search,
                                     const std::vector<PipelineTrial> &trials,
                                     Phase phase, double stepSeconds) {
  std::vector<PipelineTrial> planned = trials;
  for (PipelineTrial &trial : planned)
    if (trial.step && isChosen(search, trial, phase)) {
      trial = search.chosen;
      trial.step = stepSeconds;
    }
  return planned;
}

/// A stage mesh as the summary prints it: its shape, devices and the
/// search's figures.
std::string stageLine(const parplan::driver::StageFigures &stage,
                      int64_t layersInAll, bool mixedTypes, bool inference) {
  std::string line = fmt::format("{} {} on devices {}", stage.mesh,
                                 parplan::cost::formatMeshShape(stage.shape),
                                 parplan::formatDevices(stage.devices));
  // On a cluster of mixed types, what each stage is and how much of the
  // model its speed earned it.
  std::vector<std::string> notes;
  if (mixedTypes && !stage.deviceTypes.empty())
    notes.push_back(llvm::join(stage.deviceTypes, " + "));
  if (mixedTypes && (stage.layers > 0 || !stage.layerParts.empty())) {
    std::vector<std::string> parts;
    if (stage.layers > 0)
      parts.push_back(
          fmt::format("{} of {} layers", stage.layers, layersInAll));
    if (!stage.layerParts.empty())
      parts.push_back("part of " + llvm::join(stage.layerParts, " and "));
    if (stage.head)
      parts.push_back("the head");
    notes.push_back(parts.size() == 1
                        ? parts.front()
                        : llvm::join(llvm::ArrayRef(parts).drop_back(), ", ") +
                              " and " + parts.back());
  } else if (mixedTypes && stage.head) {
    notes.push_back("the head alone");
  }
  if (!notes.empty())
    line += " (" + llvm::join(notes, ", ") + ")";
  if (stage.predicted)
    line += fmt::format(": forward {}{} per micro-batch, bubble {}, memory {}",
                        parplan::formatSeconds(stage.forward),
                        inference ? std::string()
                                  : ", backward " +
                                        parplan::formatSeconds(stage.backward),
                        parplan::formatSeconds(stage.bubble),
                        parplan::formatBytes(stage.memoryBytes));
  return line;
}

/// summary.json's fields but `ops`.
llvm::json::Object
summaryFields(const parplan::cli::CompileOptions &options,
              const CompileResult &result, double compileSeconds,
              const std::optional<parplan::simulate::Simulation> &simulated) {
  const PlanFigures &figures = result.figures;
  const PipelineSearchResult *search =
      result.search ? &*result.search : nullptr;
  std::vector<PipelineTrial> none;
  llvm::json::Array stages;
  for (const parplan::driver::StageFigures &stage : figures.stages) {
    llvm::json::Object entry{
        {"mesh", stage.mesh},
        {"shape", llvm::json::Array(stage.shape)},
        {"devices", llvm::json::Array(stage.devices)},
        {"device_types", llvm::json::Array(stage.deviceTypes)}};
    if (stage.layers > 0)
      entry["layers"] = stage.layers;
    if (stage.head)
      entry["head"] = true;
    if (!stage.layerParts.empty())
      entry["layer_parts"] = llvm::json::Array(stage.layerParts);
    if (stage.predicted) {
      entry["predicted_forward_time_s"] = stage.forward;
      entry["predicted_backward_time_s"] = stage.backward;
      entry["predicted_update_time_s"] = stage.update;
      entry["predicted_prologue_time_s"] = stage.prologue;
      entry["predicted_busy_time_s"] = stage.busy;
      entry["predicted_bubble_time_s"] = stage.bubble;
      entry["estimated_memory_bytes_per_device"] = stage.memoryBytes;
    }
    stages.push_back(std::move(entry));
  }
  llvm::json::Object baselines;
  for (const auto &[name, step] : figures.baselines)
    baselines[name] = step;
  llvm::json::Array programs;
  for (const parplan::driver::ProgramFigures &program : figures.programs)
    programs.push_back(llvm::json::Object{
        {"devices", llvm::json::Array(program.devices)},
        {"peak_memory_bytes", program.peakMemoryBytes},
        {"kept_activation_bytes", program.keptActivationBytes},
        {"in_flight_activation_bytes", program.inFlightActivationBytes},
        {"live_memory_bytes", program.liveMemoryBytes},
        {"comm_bytes", program.commBytes},
        {"flops", program.flops}});
  llvm::json::Object summary{
      {"model", options.input},
      {"step", options.train ? "training" : "inference"},
      {"cluster", options.compile.layout.cluster},
      {"strategy", options.compile.layout.strategy},
      {"start", figures.start},
      {"baselines", std::move(baselines)},
      {"devices", figures.devices},
      {"mesh", llvm::json::Array(figures.meshShape)},
      {"predicted_step_time_s", figures.stepSeconds},
      {"predicted_compute_time_s", figures.computeSeconds},
      {"predicted_communication_time_s", figures.communicationSeconds},
      {"predicted_overlap_time_s", figures.overlapSeconds},
      {"estimated_memory_bytes_per_device", figures.estimatedMemoryBytes},
      {"flops_per_device", figures.flopsPerDevice},
      {"compile_time_s", compileSeconds},
      {"micro_batches", figures.microBatches},
      {"batch", figures.batch},
      {"batch_fixed", figures.batchFixed},
      {"schedule", figures.schedule.empty()
                       ? llvm::json::Value(nullptr)
                       : llvm::json::Value(figures.schedule)},
      {"chunks", figures.chunks},
      {"recompute", figures.recompute},
      {"recomputed_layers", llvm::json::Array(figures.recomputedLayers)},
      {"kept_for_backward", llvm::json::Array(figures.keptForBackward)},
      {"stages", std::move(stages)},
      {"stage_counts", trialsJson(search, search ? search->stageCounts : none,
                                  Phase::StageCounts)},
      {"micro_batch_counts",
       trialsJson(search, search ? search->microBatchCounts : none,
                  Phase::MicroBatches)},
      {"schedules",
       trialsJson(search, search ? search->schedules : none, Phase::Schedules)},
      {"stage_cuts",
       trialsJson(search, search ? search->cuts : none, Phase::Cuts)},
      {"programs", std::move(programs)}};
  if (simulated)
    summary["simulated_step_time_s"] = simulated->stepSeconds;
  if (const auto &shares = figures.shares) {
    summary["mesh_shares"] = llvm::json::Object{
        {"axis", shares->axis},
        {"weights", llvm::json::Array(shares->weights)},
        {"device_types", llvm::json::Array(shares->deviceTypes)}};
  }
  if (const auto &part = figures.oneTypePart)
    summary["one_type_part"] = llvm::json::Object{
        {"device_type", part->deviceType},
        {"nodes", llvm::json::Array(part->nodes)},
        {"devices", part->devices},
        {"predicted_step_time_s", part->stepSeconds},
        {"all_devices", part->clusterDevices},
        {"all_devices_predicted_step_time_s", part->allStepSeconds},

        {"kept", part->kept}};
  if (!figures.nodeOrder.empty())
    summary["node_order"] = llvm::json::Array(figures.nodeOrder);
  if (const auto &placement = figures.placement) {
    llvm::json::Array tried;
    for (const auto &group : placement->tried) {
      tried.push_back(llvm::json::Object{
          {"group", group.what},
          {"nodes", llvm::json::Array(group.nodes)},
          {"devices", group.devices},
          {"estimated_step_time_s", group.estimate},
          {"predicted_step_time_s", group.stepSeconds},
          {"simulated_step_time_s", group.simulatedSeconds}});
    }
    summary["placement"] = llvm::json::Object{
        {"tried", std::move(tried)},
        {"candidates", static_cast<int64_t>(placement->candidates)},
        {"all_devices", placement->clusterDevices},
        {"all_devices_predicted_step_time_s", placement->allStepSeconds},
        {"all_devices_simulated_step_time_s", placement->allSimulatedSeconds},
        {"kept", placement->keptListed ? std::string("the file's order")
                 : placement->keptAll  ? std::string("every node")
                                       : placement->tried.front().what},
        {"regions", llvm::json::Array(placement->regions)},
        {"searched", placement->searched},
        {"file_order_predicted_step_time_s", placement->listedStepSeconds},
        {"file_order_simulated_step_time_s", placement->listedSimulatedSeconds},
        {"placer", placement->placer}};
    if (placement->placer == "gnn")
      for (auto &[key, value] :
           llvm::json::Object{{"proposed_machines", placement->proposed},
                              {"best_machine", placement->bestNode},
                              {"best_machine_score", placement->bestScore},
                              {"placer_time_s", placement->placerSeconds}})
        (*summary["placement"].getAsObject())[key] = std::move(value);
  }
  if (figures.laidOutAgain)
    summary["laid_out_again"] = llvm::json::Object{
        {"budget_bytes", figures.laidOutAgain->budgetBytes},
        {"first_planned_bytes", figures.laidOutAgain->firstPlannedBytes},
        {"first_estimated_bytes", figures.laidOutAgain->firstEstimatedBytes}};
  if (figures.overMemory()) {
    const parplan::driver::StageFigures *stage =
        figures.stageOf(figures.peakDevice);
    summary["over_memory"] = llvm::json::Object{
        {"stage", stage ? stage->mesh : std::string()},
        {"device", figures.peakDevice},
        {"planned_bytes", figures.peakMemoryBytes + figures.peakInFlightBytes},
        {"device_bytes", figures.deviceMemoryBytes}};
  }
  return summary;
}

} // namespace

// The fields are written in the order llvm::json sorts an object's keys, as
// a tree of them would print; the ops, an object each and the bulk of the
// file (tens of thousands for a large model), are streamed, not built.
void parplan::cli::writeSummaryJson(
    llvm::raw_ostream &out, const CompileOptions &options,
    const CompileResult &result, double compileSeconds,
    const std::optional<simulate::Simulation> &simulated) {
  llvm::json::Object fields =
      summaryFields(options, result, compileSeconds, simulated);
  std::vector<std::string> keys = {"ops"};
  for (const auto &field : fields)
    keys.push_back(field.first.str());
  llvm::sort(keys);
  llvm::json::OStream json(out, /*IndentSize=*/2);
  json.object([&] {
    for (const std::string &key : keys) {
      if (key != "ops") {
        json.attribute(key, std::move(*fields.get(key)));
        continue;
      }
      json.attributeArray("ops", [&] {
        for (const parplan::driver::OpFigures &op : result.figures.ops)
          json.object([&] {
            json.attribute("cost_s", op.costSeconds);
            json.attribute("name", op.name);
            json.attribute("onnx_node", op.onnxNode);
            json.attribute("sbp", op.sharding);
          });
      });
    }
  });
  out << "\n";
}

/// The lines of the search under the summary's first: its starts, the
/// stage counts, stages, micro-batches and schedules it tried, and the
/// recomputation.
void parplan::cli::printSearch(const CompileOptions &options,
                               const CompileResult &result) {
  const PlanFigures &figures = result.figures;
  if (!figures.baselines.empty()) {
    // What the search bought: each start planned alone, least first.
    std::vector<std::pair<double, std::string>> starts = {
        {figures.stepSeconds, figures.start}};
    for (const auto &[name, step] : figures.baselines)
      starts.emplace_back(step, name);
    std::stable_sort(starts.begin(), starts.end());
    std::string line;
    for (const auto &[step, name] : starts)
      line += fmt::format("{}{} {}{}", line.empty() ? "" : ", ",
                          llvm::StringRef(name).starts_with("auto")
                              ? "search" + name.substr(4)
                              : name,
                          parplan::formatSeconds(step),
                          name == figures.start ? " (chosen)" : "");
    fmt::print("  starts           {}\n", line);
  }
  if (const auto &shares = figures.shares) {
    // Whale's hardware-aware shares: what each node's devices take.
    std::string parts;
    int64_t total = 0;
    for (size_t i = 0; i < shares->weights.size(); ++i) {
      parts += fmt::format("{}{} ({})", i ? ", " : "", shares->weights[i],
                           shares->deviceTypes[i]);
      total += shares->weights[i];
    }
    // Alike devices take uneven parts only where the batch's rows do not
    // divide by the axis.
    bool alike = llvm::all_equal(shares->deviceTypes);
    fmt::print("  shares           mesh axis {} splits {}: {} of every {}\n",
               shares->axis,
               alike ? "in near-even whole rows" : "by device speed", parts,
               total);
  }
  if (const auto &part = figures.oneTypePart) {
    // The nodes of the cluster's fastest type alone, beside all of them.
    std::string alone = fmt::format(
        "the {} {} alone (node{} {}) {}", part->devices, part->deviceType,
        part->nodes.size() == 1 ? "" : "s", llvm::join(part->nodes, ", "),
        part->stepSeconds ? parplan::formatSeconds(*part->stepSeconds)
                          : std::string("no fit"));
    std::string all = fmt::format("all {} devices {}", part->clusterDevices,
                                  parplan::formatSeconds(part->allStepSeconds));
    fmt::print("  one type alone   {}\n",
               part->kept
                   ? alone + " (kept: the others only slow the step), " + all
                   : alone + ", " + all + " (kept)");
  }
  if (!figures.nodeOrder.empty())
    fmt::print("  node order       {}: each type's nodes together, the "
               "fastest type first (the file lists them otherwise; ranks "
               "follow this order)\n",
               llvm::join(figures.nodeOrder, ", "));
  if (const auto &placement = figures.placement) {
    // Which machines: the groups laid out, the kept one first, beside
    // every node, region by region.
    auto step = [](const std::optional<double> &seconds,
                   const std::optional<double> &simulated) {
      if (!seconds)
        return std::string("no fit");
      return parplan::formatSeconds(*seconds) +
             (simulated
                  ? " (simulated " + parplan::formatSeconds(*simulated) + ")"
                  : std::string());
    };
    std::string path = llvm::join(placement->regions, ", ");
    std::string all = fmt::format(
        "every node, region by region ({}; {} devices) {}", path,
        placement->clusterDevices,
        step(placement->allStepSeconds, placement->allSimulatedSeconds));
    std::vector<std::string> groups;
    for (const auto &group : placement->tried)
      groups.push_back(
          fmt::format("{} ({} devices) {}", group.what, group.devices,
                      step(group.stepSeconds, group.simulatedSeconds)));
    if (placement->placer == "gnn") {
      // The groups around the placer's proposal, the kept one first
      // (every node's too, where it proposed every machine).
      fmt::print("  placement        {} (kept: the GNN placer proposed {} "
                 "machine{}, best {} at {:.2f}, in {}; of the {} groups of "
                 "nodes, {} around them laid out{})\n",
                 groups.front(), placement->proposed,
                 placement->proposed == 1 ? "" : "s", placement->bestNode,
                 placement->bestScore,
                 parplan::formatSeconds(placement->placerSeconds),
                 placement->candidates, groups.size(),
                 groups.size() > 1
                     ? "; then " +
                           llvm::join(llvm::ArrayRef(groups).drop_front(), ", ")
                     : std::string());
    } else if (!placement->searched) {
      // The shape given: the devices numbered along the path, or as the
      // file lists them where that is faster.
      std::string along = fmt::format(
          "every node, region by region: {} ({} devices numbered in that "
          "order) {}",
          path, placement->clusterDevices,
          step(placement->allStepSeconds, placement->allSimulatedSeconds));
      std::string listed =
          "the file's order " +
          step(placement->listedStepSeconds, placement->listedSimulatedSeconds);
      if (placement->keptListed)
        fmt::print("  placement        {} (kept); {}\n", listed, along);
      else if (placement->listedStepSeconds)
        fmt::print("  placement        {} (kept); {}\n", along, listed);
      else
        fmt::print("  placement        {} (kept; the file lists them so, or "
                   "in its order no plan fits)\n",
                   along);
    } else if (placement->keptAll)
      fmt::print("  placement        {} (kept); of {} groups of nodes, {} "
                 "laid out: {}\n",
                 all, placement->candidates, groups.size(),
                 llvm::join(groups, ", "));
    else
      fmt::print("  placement        {} (kept: the other machines only slow "
                 "the step); of {} groups of nodes, {} laid out{}; {}\n",
                 groups.front(), placement->candidates, groups.size(),
                 groups.size() > 1
                     ? "; then " +
                           llvm::join(llvm::ArrayRef(groups).drop_front(), ", ")
                     : std::string(),
                 all);
  }
  const PipelineSearchResult *search =
      result.search ? &*result.search : nullptr;
  std::vector<PipelineTrial> stageCounts =
      search ? asPlanned(*search, search->stageCounts, Phase::StageCounts,
                         figures.stepSeconds)
             : std::vector<PipelineTrial>();
  if (search && !stageCounts.empty())
    fmt::print(
        "  stage counts     {}\n",
        trialsLine(
            *search, stageCounts, Phase::StageCounts,
            [&](const PipelineTrial &trial) {
              // Judged at another micro-batch count than the
              // plan's: the figure is of that shape.
              bool elsewhere =
                  trial.microBatches != search->chosen.microBatches;
              return std::to_string(trial.stages) + bySchedule(result, trial) +
                     (elsewhere
                          ? " at " + std::to_string(trial.microBatches) +
                                (trial.microBatches == 1 ? " micro-batch"
                                                         : " micro-batches")
                          : "") +
                     // Judged with recomputation: it fits only so.
                     (trial.recompute.empty() || trial.recompute == "none"
                          ? ""
                          : " with " + trial.recompute + " recomputation");
            }));
  std::vector<std::string> stageLines;
  int64_t layersInAll = 0;
  std::set<std::string> types;
  std::set<std::string> splitLayers;
  for (const parplan::driver::StageFigures &stage : figures.stages) {
    layersInAll += stage.layers;
    splitLayers.insert(stage.layerParts.begin(), stage.layerParts.end());
    types.insert(stage.deviceTypes.begin(), stage.deviceTypes.end());
  }
  layersInAll += static_cast<int64_t>(splitLayers.size());
  for (const parplan::driver::StageFigures &stage : figures.stages)
    stageLines.push_back(
        stageLine(stage, layersInAll, types.size() > 1, !options.train));
  for (size_t s = 0; s < stageLines.size(); ++s)
    fmt::print("  {}{}\n", s == 0 ? "stages           " : "                 ",
               stageLines[s]);
  int64_t batch = figures.batch;
  if (figures.microBatches > 1)
    fmt::print("  micro-batches    {} of {} (batch {}{}){}{}\n",
               figures.microBatches, batch / figures.microBatches, batch,
               figures.batchFixed ? ", fixed in the model" : "",
               options.train ? ", gradients summed before one update" : "",
               figures.schedule.empty() ? ""
               : figures.schedule == "interleaved"
                   ? fmt::format(", stages run them by interleaved ({} "
                                 "chunks a stage)",
                                 figures.chunks)
                   : ", stages run them by " + figures.schedule);
  // Where one mesh beat the stages refined beside it (devices of mixed
  // types), the micro-batches and schedules tried are the stages'.
  std::string refinedStages =
      search && search->stagesBesideOneMesh > 1
          ? fmt::format("on {} stages, ", search->stagesBesideOneMesh)
          : "";
  if (search && !search->microBatchCounts.empty())
    fmt::print("{}tried {}\n",
               refinedStages.empty() ? "                   "
                                     : "  micro-batches    " + refinedStages,
               trialsLine(*search,
                          asPlanned(*search, search->microBatchCounts,
                                    Phase::MicroBatches, figures.stepSeconds),
                          Phase::MicroBatches, [&](const PipelineTrial &trial) {
                            return std::to_string(trial.microBatches) +
                                   bySchedule(result, trial);
                          }));
  if (search && !search->schedules.empty())
    fmt::print(
        "  schedules        {}{}\n", refinedStages,
        trialsLine(*search, search->schedules, Phase::Schedules,
                   [](const PipelineTrial &trial) { return trial.schedule; }));
  if (search && !search->cuts.empty())
    fmt::print("  stage cuts       {}{}\n", refinedStages,
               trialsLine(*search, search->cuts, Phase::Cuts,
                          [](const PipelineTrial &trial) {
                            return trial.cutInsideLayers ? "inside layers"
                                                         : "whole layers";
                          }));
  if (figures.recompute != "none") {
    std::string line = figures.recompute;
    if (!figures.recomputedLayers.empty())
      line +=
          ", " + describeLayers(figures.recomputedLayers, figures.layersInAll);
    if (!figures.withoutRecompute.empty())
      line += " (without recomputation " + figures.withoutRecompute + ")";
    fmt::print("  recompute        {}\n", line);
  }
}
