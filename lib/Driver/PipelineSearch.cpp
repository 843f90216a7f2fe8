//===- PipelineSearch.cpp - --stages/--micro-batches/--schedule auto ------===//
//
// The search runs the layout search (place-stages, sbp-assign) on copies of
// the training step and reads its predicted step: a pipeline shape is kept
// by the same figure the plan reports, so what is chosen is what the cost
// model prices, and it lowers and runs as any shape given by hand.
//
//===----------------------------------------------------------------------===//

#include "parplan/Driver/PipelineSearch.h"

#include "parplan/Cost/Cluster.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Support/Text.h"
#include "parplan/Transforms/Debug.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include <atomic>
#include <cmath>
#include <map>
#include <thread>
#include <tuple>

using namespace mlir;
namespace sbp = parplan::sbp;

std::optional<parplan::driver::NoFit>
parplan::driver::noFitOf(ModuleOp laidOut) {
  auto attr = laidOut->getAttrOfType<sbp::NoFitAttr>(parplan::kNoFitAttrName);
  if (!attr)
    return std::nullopt;
  return NoFit{attr.getStage().str(), attr.getDevice(),
               static_cast<double>(attr.getNeeded()),
               static_cast<double>(attr.getCapacity())};
}

bool parplan::driver::worthRecomputing(double memorySlowdown, StringRef level) {
  constexpr double kSelectiveCost = 0.1, kFullCost = 0.25;
  return memorySlowdown > (level == "full" ? kFullCost : kSelectiveCost);
}

std::optional<std::pair<const parplan::cost::Cluster *, std::vector<int64_t>>>
parplan::driver::clusterAndMesh(ModuleOp module, const std::string &mesh,
                                std::string &error) {
  const cost::Cluster *loaded = clusterOf(module, error);
  if (!loaded)
    return std::nullopt;
  std::vector<int64_t> shape;
  if (mesh.empty()) {
    shape = cost::defaultMeshShape(*loaded);
  } else if (auto parsed = cost::parseMeshShape(mesh, error)) {
    shape = *parsed;
  } else {
    return std::nullopt;
  }
  return std::make_pair(loaded, std::move(shape));
}

namespace {

using parplan::driver::PipelineTrial;

/// On a mesh of mixed device types, the index in `counts` (divisors of
/// the mesh's first axis, ascending) of the fewest stages, more than one,
/// that each hold devices of one type; none where no count does.
std::optional<size_t> fewestOneTypeStages(const parplan::cost::Cluster &cluster,
                                          const parplan::cost::DeviceMesh &mesh,
                                          const std::vector<int64_t> &counts) {
  llvm::ArrayRef<int64_t> devices = mesh.devices;
  for (size_t index = 0; index < counts.size(); ++index) {
    int64_t count = counts[index];
    if (count < 2)
      continue;
    size_t block = devices.size() / static_cast<size_t>(count);
    bool oneType = true;
    for (size_t first = 0; first < devices.size() && oneType; first += block)
      oneType = cluster.ofOneType(devices.slice(first, block));
    if (oneType)
      return index;
  }
  return std::nullopt;
}

/// Whether `a` is a better trial than `b`: it fits and predicts a shorter
/// step (or `b` does not fit).
bool isBetter(const PipelineTrial &a, const PipelineTrial &b) {
  return a.step && (!b.step || *a.step < *b.step);
}

/// Another schedule holds more activations in flight than 1F1B, tried
/// first: it is searched and taken only where it predicts a step shorter
/// by more than this fraction, below which the cost model cannot tell them
/// apart (a few microseconds of latency on a toy model).
constexpr double kScheduleGain = 0.01;

/// The most the baselines have been seen to beat the search's layout of
/// one mesh of mixed types by: 14.5% on whale-v100-p100 twice over at
/// batch 64 (123.56 ms, its data-parallel start 105.68 ms), 14% on
/// whale-v100-p100. The pipeline search lays out one mesh's baselines only
/// where they may beat the stages by so much.
constexpr double kOneMeshBaselineGain = 0.2;

/// Whether schedule trial `a` is clearly better than `b` (kScheduleGain).
bool isClearlyBetter(const PipelineTrial &a, const PipelineTrial &b) {
  return a.step && (!b.step || *a.step < *b.step * (1 - kScheduleGain));
}

/// The predicted step and the per-stage costs of a laid-out step
/// (sbp.plan).
void readFigures(ModuleOp laidOut, PipelineTrial &trial) {
  auto plan =
      laidOut->getAttrOfType<sbp::LayoutPlanAttr>(parplan::kLayoutPlanAttrName);
  trial.step = plan.getStepTime();
  trial.memorySlowdown = plan.getMemorySlowdown();
  trial.capacity = static_cast<double>(plan.getDeviceMemoryBytes());
  size_t stageCount = plan.getStages().size();
  for (auto [index, stage] : llvm::enumerate(plan.getStageFigures())) {
    trial.memory.push_back(static_cast<double>(stage.getMemoryBytes()));
    trial.activation.push_back(static_cast<double>(stage.getActivationBytes()));
    trial.costs.forward.push_back(stage.getForwardTime());
    trial.costs.backward.push_back(stage.getBackwardTime());
    trial.update.push_back(stage.getUpdateTime());
    trial.costs.start.push_back(stage.getPrologueTime());
    if (index + 1 < stageCount) {
      trial.costs.sendForward.push_back(stage.getSendForwardTime());
      trial.costs.sendBackward.push_back(stage.getSendBackwardTime());
    }
  }
}

/// Adds start `name`'s predicted step to a laid-out step's sbp.plan
/// `baselines` (sbp-assign's record of the starts it did not keep).
void addBaseline(ModuleOp laidOut, StringRef name, double seconds) {
  auto plan =
      laidOut->getAttrOfType<sbp::LayoutPlanAttr>(parplan::kLayoutPlanAttrName);
  laidOut->setAttr(parplan::kLayoutPlanAttrName,
                   plan.withBaseline(name, seconds));
}

/// The trials of one search: the training step built once per micro-batch
/// count, each shape laid out once.
class Trials {
public:
  /// `chunks`: the model chunks of each stage under the interleaved
  /// schedule.
  Trials(const parplan::driver::ModelImporter &importAt,
         parplan::CompilePipelineOptions &pipeline, int64_t chunks,
         TimingScope &timing,
         std::vector<std::unique_ptr<PassManager>> &passManagers,
         std::function<void(const std::string &)> onTrial)
      : startsAsked(pipeline.starts), trialStarts("search"),
        recompute(pipeline.recompute),
        cutInsideLayers(pipeline.cutInsideLayers), importAt(importAt),
        pipeline(pipeline), chunks(chunks), timing(timing),
        passManagers(passManagers), onTrial(std::move(onTrial)) {}

  /// The starts of sbp-assign's the compile asked for (`all`: the search
  /// and every baseline). The trials compare shapes by the search alone,
  /// and the baselines are laid out on the chosen shape only.
  std::string startsAsked;
  /// The trials' starts: `search`, or `all` where only the schedule is
  /// searched (its trials are few, and the chosen one goes on as it is).
  std::string trialStarts;
  /// The recomputation the trials build their training steps with.
  std::string recompute;
  /// Whether the trials' stages may end inside layers (place-stages'
  /// cut-inside-layers).
  bool cutInsideLayers;

  /// The training step at `microBatches` (and `recompute`); null with
  /// `error` set (empty when the importer said why).
  ModuleOp stepAt(int64_t microBatches, std::string &error) {
    OwningOpRef<ModuleOp> &step = steps[{recompute, microBatches}];
    if (step)
      return *step;
    step = importAt(microBatches);
    if (!step)
      return {};
    // Errors say why a trial failed; warnings about the model (tied
    // parameters) go on to the command's handler, which says each once.
    ScopedDiagnosticHandler quiet(step->getContext(), [&](Diagnostic &said) {
      if (said.getSeverity() == DiagnosticSeverity::Warning)
        return failure();
      if (said.getSeverity() == DiagnosticSeverity::Error && error.empty())
        error = said.str();
      return success();
    });
    TimingScope stepTiming = timing.nest(
        "Training step, " + std::to_string(microBatches) + " micro-batches");
    PassManager pm(step->getContext());
    pm.enableTiming(stepTiming);
    pipeline.microBatches = microBatches;
    pipeline.recompute = recompute;
    parplan::addStepPasses(pm, pipeline);
    if (failed(pm.run(*step))) {
      step = nullptr;
      if (error.empty())
        error = "cannot build the training step";
      return {};
    }
    return *step;
  }

  /// The layout search with `stages` (place-stages' option: 0 for one mesh
  /// or the annotations' stages, counted as `count`), `microBatches` and
  /// `schedule`, with sbp-assign's `starts` (the trials' by default). Null
  /// with `error` set when the training step cannot be built.
  const PipelineTrial *run(int64_t stages, int64_t count, int64_t microBatches,
                           StringRef schedule, std::string &error) {
    return run(stages, count, microBatches, schedule, error, trialStarts);
  }
  const PipelineTrial *run(int64_t stages, int64_t count, int64_t microBatches,
                           StringRef schedule, std::string &error,
                           StringRef starts) {
    Key key = keyOf(stages, microBatches, schedule, starts);
    if (auto known = tried.find(key); known != tried.end())
      return &known->second;
    std::unique_ptr<Pending> pending;
    if (auto ahead = fetched.find(key); ahead != fetched.end()) {
      pending = std::move(ahead->second);
      fetched.erase(ahead);
    } else {
      pending = prepare(stages, count, microBatches, schedule, starts, error);
    }
    if (!pending)
      return nullptr;
    if (!pending->executed) {
      ScopedDiagnosticHandler quiet(pending->step.getContext(), routeErrors);
      execute(*pending);
    }
    return record(std::move(pending));
  }

  /// A shape the search may try: run()'s arguments with the trials' starts.
  struct Shape {
    int64_t stages, count, microBatches;
    std::string schedule;
  };
  /// Whether `shape` is tried, or laid out (or set up) ahead.
  bool known(const Shape &shape) const {
    Key key =
        keyOf(shape.stages, shape.microBatches, shape.schedule, trialStarts);
    return tried.count(key) || fetched.count(key);
  }
  /// Lays out the shapes of `shapes` not tried yet on two threads, ahead
  /// of the run()s that ask for them: shapes the search will try, or may (a
  /// guess costs the other thread's time only). Each thread takes the next
  /// trial when it is done with one; the models are imported and the steps
  /// built first, on this thread (the trials' errors are told apart by
  /// thread, not the importer's). run() keeps a trial laid
  /// out ahead as it keeps one it lays out itself, in the order it is asked
  /// for, so the search decides on the same figures in the same order and
  /// keeps the same plan; a trial never asked for is dropped. Where the
  /// context has fewer than two threads (or cores), a search explains itself
  /// (its lines would interleave) or the trials lay out more than the search's
  /// start (sbp-assign silences the context while it lays out baselines, the
  /// other thread's trial too), nothing is laid out ahead; a shape left
  /// without a partner is set up, and laid out when asked for.
  void prefetch(ArrayRef<Shape> shapes) {
    if (trialStarts != "search" ||
        parplan::isDebugEnabled(parplan::kSbpAssignDebugType) ||
        parplan::isDebugEnabled(parplan::kPipelineSearchDebugType))
      return;
    std::vector<Pending *> pendings;
    for (const Shape &shape : shapes) {
      if (known(shape))
        continue;
      std::string ignored;
      std::unique_ptr<Pending> pending =
          prepare(shape.stages, shape.count, shape.microBatches, shape.schedule,
                  trialStarts, ignored);
      if (!pending)
        continue;
      if (pending->step.getContext()->getNumThreads() < 2)
        return;
      pendings.push_back(pending.get());
      fetched.emplace(pending->key, std::move(pending));
    }
    if (pendings.size() < 2)
      return;
    ScopedDiagnosticHandler quiet(pendings.front()->step.getContext(),
                                  routeErrors);
    // Two threads take the trials in order, each the next one left when it
    // is done: a third trial starts beside the longer of the first two.
    std::atomic<size_t> next = 0;
    auto work = [&] {
      for (size_t i = next++; i < pendings.size(); i = next++)
        execute(*pendings[i]);
    };
    std::thread second(work);
    work();
    second.join();
  }

  /// The laid-out step of `trial`, when it is the fastest tried or the
  /// one that was before it.
  OwningOpRef<ModuleOp> takeLaidOut(const PipelineTrial &trial,
                                    int64_t stages) {
    Kept *kept = keptOf(trial, stages);
    return kept ? std::move(kept->laidOut) : nullptr;
  }
  /// Whether place-stages found a cut inside layers balancing `trial`'s
  /// stages better (sbp.finer_cut), when it is the fastest tried (where one
  /// mesh is faster, stages keep whole layers).
  bool hasFinerCut(const PipelineTrial &trial, int64_t stages) {
    Kept *kept = keptOf(trial, stages);
    return kept == &fastest &&
           (*kept->laidOut)->hasAttr(parplan::kFinerCutAttrName);
  }
  /// The laid-out step of the last run with other starts than the trials'.
  OwningOpRef<ModuleOp> takeOther() { return std::move(other); }

private:
  using Key =
      std::tuple<int64_t, int64_t, std::string, std::string, std::string, bool>;
  Key keyOf(int64_t stages, int64_t microBatches, StringRef schedule,
            StringRef starts) const {
    return std::make_tuple(stages, microBatches, schedule.str(), starts.str(),
                           recompute, cutInsideLayers);
  }
  /// A laid-out step kept for the compile to go on from.
  struct Kept {
    OwningOpRef<ModuleOp> laidOut;
    Key key;
  };
  Kept *keptOf(const PipelineTrial &trial, int64_t stages) {
    Key key =
        std::make_tuple(stages, trial.microBatches, trial.schedule, trialStarts,
                        trial.recompute, trial.cutInsideLayers);
    for (Kept *kept : {&fastest, &beforeFastest})
      if (kept->laidOut && kept->key == key)
        return kept;
    return nullptr;
  }

  /// A trial set up to run: its step, its pass manager (the search passes
  /// with the options of its shape), and what it found once run.
  struct Pending {
    Key key;
    ModuleOp step;
    PassManager *pm = nullptr;
    TimingScope timing;
    std::string shape, starts;
    PipelineTrial trial;
    OwningOpRef<ModuleOp> laidOut;
    bool executed = false;
  };

  /// Builds the step (on this thread: importing and the training step's
  /// passes are not for two threads at once), tells the shape, and sets up
  /// the pass manager from `pipeline`, which is read here only. Null with
  /// `error` set when the step cannot be built.
  std::unique_ptr<Pending> prepare(int64_t stages, int64_t count,
                                   int64_t microBatches, StringRef schedule,
                                   StringRef starts, std::string &error) {
    ModuleOp step = stepAt(microBatches, error);
    if (!step)
      return nullptr;
    auto pending = std::make_unique<Pending>();
    pending->key = keyOf(stages, microBatches, schedule, starts);
    pending->step = step;
    pending->starts = starts.str();
    PipelineTrial &trial = pending->trial;
    trial.stages = std::max<int64_t>(count, 1);
    trial.microBatches = microBatches;
    trial.schedule = schedule.str();
    trial.recompute = recompute;
    trial.cutInsideLayers = cutInsideLayers;
    pending->shape = std::to_string(trial.stages) +
                     (trial.stages == 1 ? " stage, " : " stages, ") +
                     std::to_string(microBatches) + " micro-batches, " +
                     trial.schedule +
                     (starts == trialStarts ? "" : ", " + starts.str()) +
                     (recompute.empty() || recompute == "none"
                          ? ""
                          : ", recompute " + recompute) +
                     (cutInsideLayers ? ", cut inside layers" : "");
    if (onTrial)
      onTrial(pending->shape);
    pending->timing = timing.nest(pending->shape);
    passManagers.push_back(std::make_unique<PassManager>(step.getContext()));
    pending->pm = passManagers.back().get();
    pending->pm->enableTiming(pending->timing);
    pending->pm->enableVerifier(false);
    pipeline.stages = stages;
    pipeline.microBatches = microBatches;
    pipeline.schedule = schedule.str();
    pipeline.chunks = schedule == "interleaved" ? chunks : 1;
    pipeline.starts = starts.str();
    pipeline.cutInsideLayers = cutInsideLayers;
    parplan::addLayoutSearchPasses(*pending->pm, pipeline);
    pipeline.starts = startsAsked;
    return pending;
  }

  /// The trial whose errors this thread's diagnostics are (routeErrors).
  static thread_local PipelineTrial *running;
  /// A trial's errors say why it failed, the first one kept; every
  /// diagnostic of a trial stays with the search (the command's handler
  /// says the model's warnings, once, when the step is built).
  static LogicalResult routeErrors(Diagnostic &said) {
    if (running && said.getSeverity() == DiagnosticSeverity::Error &&
        running->why.empty())
      running->why = said.str();
    return success();
  }

  /// Lays a copy of the step out: what may run on another thread, touching
  /// nothing but the pending trial (the step is only read).
  static void execute(Pending &pending) {
    running = &pending.trial;
    pending.laidOut = pending.step.clone();
    if (succeeded(pending.pm->run(*pending.laidOut)))
      readFigures(*pending.laidOut, pending.trial);
    else
      pending.trial.noFit = parplan::driver::noFitOf(*pending.laidOut);
    running = nullptr;
    pending.executed = true;
  }

  /// Keeps a run trial: every shape the search keeps is faster than all
  /// tried before it, so the fastest so far is the one the compile may go
  /// on from. Another start laid out on a shape already tried is kept
  /// apart, for the caller.
  const PipelineTrial *record(std::unique_ptr<Pending> pending) {
    PipelineTrial &trial = pending->trial;
    bool fastestSoFar = pending->starts == trialStarts && trial.step &&
                        (!fastestStep || *trial.step < *fastestStep);
    PARPLAN_DEBUG(parplan::kPipelineSearchDebugType, {
      raw_ostream &line = parplan::debugLine(parplan::kPipelineSearchDebugType);
      line << pending->shape << ": ";
      if (trial.step)
        line << "step " << *trial.step << " s";
      else if (trial.noFit)
        line << "no fit ("
             << parplan::groupThousands(
                    static_cast<uint64_t>(trial.noFit->neededBytes))
             << " bytes per device"
             << (trial.noFit->stage.empty() ? ""
                                            : " on stage " + trial.noFit->stage)
             << " of "
             << parplan::groupThousands(
                    static_cast<uint64_t>(trial.noFit->deviceBytes))
             << ")";
      else
        line << "failed: " << trial.why;
      line << (fastestSoFar ? ", the fastest so far\n" : "\n");
    });
    if (pending->starts != trialStarts) {
      other = std::move(pending->laidOut);
    } else if (fastestSoFar) {
      // The one it displaces stays too: a schedule faster by less than
      // kScheduleGain is not taken, and the compile goes on from the one
      // that was.
      fastestStep = trial.step;
      beforeFastest = std::move(fastest);
      fastest = {std::move(pending->laidOut), pending->key};
    }
    return &tried.emplace(pending->key, std::move(trial)).first->second;
  }

  const parplan::driver::ModelImporter &importAt;
  parplan::CompilePipelineOptions &pipeline;
  int64_t chunks;
  TimingScope &timing;
  std::vector<std::unique_ptr<PassManager>> &passManagers;
  std::function<void(const std::string &)> onTrial;
  std::map<std::pair<std::string, int64_t>, OwningOpRef<ModuleOp>> steps;
  std::map<Key, PipelineTrial> tried;
  /// Trials set up, or laid out, ahead of the run() that asks for them.
  std::map<Key, std::unique_ptr<Pending>> fetched;
  std::optional<double> fastestStep;
  Kept fastest, beforeFastest;
  OwningOpRef<ModuleOp> other;
};

thread_local PipelineTrial *Trials::running = nullptr;

/// The divisors of `n`, increasing.
std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d)
        large.push_back(n / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

/// The micro-batch count a stage count is first tried at: a few per stage,
/// so that the bubble ((P - 1) / M of the work under 1F1B) is small, and
/// one on one stage, where micro-batches only add messages.
int64_t firstMicroBatches(int64_t stages, int64_t batch) {
  if (stages <= 1 || batch <= 0)
    return 1;
  for (int64_t count : divisorsOf(batch))
    if (count >= 4 * stages)
      return count;
  return batch;
}

/// The ladder the micro-batch counts climb: divisors of `batch` from the
/// least at or above `stages`, each at least twice the one before, and
/// `start` among them; with `multiple` (interleaved), multiples of the
/// stages only.
std::vector<int64_t> microBatchLadder(int64_t batch, int64_t stages,
                                      int64_t start, bool multiple) {
  std::vector<int64_t> ladder;
  for (int64_t count : divisorsOf(batch))
    if ((count >= stages || count == batch) &&
        (!multiple || count % stages == 0) &&
        (ladder.empty() || count >= 2 * ladder.back() || count == start))
      ladder.push_back(count);
  if (!llvm::is_contained(ladder, start)) {
    ladder.push_back(start);
    llvm::sort(ladder);
  }
  return ladder;
}

/// The divisor of `batch` strictly between `low` and `high` nearest their
/// geometric mean (a multiple of `step`); none when there is no divisor
/// between them.
std::optional<int64_t> divisorBetween(int64_t batch, int64_t low, int64_t high,
                                      int64_t step) {
  double middle = std::sqrt(static_cast<double>(low) * high);
  std::optional<int64_t> nearest;
  for (int64_t count : divisorsOf(batch))
    if (count > low && count < high && count % step == 0 &&
        (!nearest || std::abs(std::log(count / middle)) <
                         std::abs(std::log(*nearest / middle))))
      nearest = count;
  return nearest;
}

/// The schedules the search may choose: each one parplan-run runs but
/// `sequential`, 1F1B first (it holds the fewest activations, so it is
/// kept on a tie).
std::vector<std::string> searchedSchedules() {
  std::vector<std::string> names;
  for (parplan::schedule::PipelineSchedule schedule :
       {parplan::schedule::kDefaultPipelineSchedule,
        parplan::schedule::PipelineSchedule::EagerOneFOneB,
        parplan::schedule::PipelineSchedule::GPipe})
    names.emplace_back(parplan::schedule::toString(schedule));
  for (const std::string &name : parplan::runtime::executorSchedules())
    if (name != "sequential" && !llvm::is_contained(names, name))
      names.push_back(name);
  return names;
}

/// The step of `base`'s stage costs run by schedule `name` on `chunks`
/// model chunks per stage when it is interleaved: each stage's forward and
/// backward split evenly over its chunks, each boundary between virtual
/// stages carrying the sends of the stage boundary it starts on (the
/// boundaries from the last stage back to the first, the average). None
/// when `base` has no step or no stages, or the schedule cannot run its
/// shape (interleaved's micro-batches must be a multiple of the stages).
std::optional<double> timelineOf(const PipelineTrial &base, StringRef name,
                                 int64_t chunks) {
  using namespace parplan::schedule;
  if (!base.step || base.costs.forward.empty())
    return std::nullopt;
  PipelineSchedule schedule = *parsePipelineSchedule(name.str());
  int64_t v = schedule == PipelineSchedule::Interleaved ? chunks : 1;
  PipelineShape shape{base.stages, base.microBatches, v};
  if (checkPipeline(schedule, shape))
    return std::nullopt;
  PipelineCosts costs;
  if (v == 1 || base.costs.forward.size() != static_cast<size_t>(base.stages)) {
    costs = base.costs;
  } else {
    auto p = static_cast<size_t>(base.stages);
    double wrap = 0;
    for (double send : base.costs.sendForward)
      wrap += send / static_cast<double>(std::max<size_t>(1, p - 1));
    double wrapBack = 0;
    for (double send : base.costs.sendBackward)
      wrapBack += send / static_cast<double>(std::max<size_t>(1, p - 1));
    for (int64_t c = 0; c < v; ++c)
      for (size_t s = 0; s < p; ++s) {
        costs.forward.push_back(base.costs.forward[s] / static_cast<double>(v));
        costs.backward.push_back(base.costs.backward[s] /
                                 static_cast<double>(v));
        if (c + 1 < v || s + 1 < p) {
          costs.sendForward.push_back(s + 1 < p ? base.costs.sendForward[s]
                                                : wrap);
          costs.sendBackward.push_back(s + 1 < p ? base.costs.sendBackward[s]
                                                 : wrapBack);
        }
      }
    costs.start = base.costs.start;
    costs.sending = base.costs.sending;
    costs.updateWaits = base.costs.updateWaits;
  }
  return simulateStep(schedule, shape, costs, base.update).seconds;
}

/// Whether `base`'s layouts fit the devices under schedule `name` (on
/// `chunks` chunks when interleaved): each stage's memory with the
/// activations of as many micro-batches as that schedule holds in flight
/// instead of `base`'s (a chunk's being 1/V of the stage's); when not,
/// `noFit` says by how much the first stage that does not lacks. None when
/// `base` has no figures or the schedule cannot run its shape.
std::optional<bool>
fitsOnLayouts(const PipelineTrial &base, StringRef name, int64_t chunks,
              std::optional<parplan::driver::NoFit> &noFit) {
  using namespace parplan::schedule;
  if (!base.step || base.memory.size() != static_cast<size_t>(base.stages))
    return std::nullopt;
  // Per stage, the micro-batches' activations a schedule holds at once.
  auto held = [&](StringRef schedule) -> std::optional<std::vector<double>> {
    PipelineSchedule parsed = *parsePipelineSchedule(schedule.str());
    int64_t v = parsed == PipelineSchedule::Interleaved ? chunks : 1;
    PipelineShape shape{base.stages, base.microBatches, v};
    if (checkPipeline(parsed, shape))
      return std::nullopt;
    std::vector<int64_t> inFlight =
        pipelineInFlightByChunk(pipelineOrder(parsed, shape), v);
    std::vector<double> perStage(static_cast<size_t>(base.stages), 0);
    for (size_t i = 0; i < inFlight.size(); ++i)
      perStage[i % perStage.size()] +=
          static_cast<double>(inFlight[i]) / static_cast<double>(v);
    return perStage;
  };
  std::optional<std::vector<double>> now = held(base.schedule),
                                     then = held(name);
  if (!now || !then)
    return std::nullopt;
  for (size_t s = 0; s < base.memory.size(); ++s) {
    double needed =
        base.memory[s] + ((*then)[s] - (*now)[s]) * base.activation[s];
    if (needed > base.capacity) {
      noFit = parplan::driver::NoFit{"", 0, needed, base.capacity};
      return false;
    }
  }
  return true;
}

/// Whether schedule `name` is worth a search beside `base`: its timeline
/// on `base`'s stage costs is clearly faster (kScheduleGain), and `base`'s
/// layouts fit under it (holding more activations only constrains the layouts
/// more). `why` says why not, as a trial error, and `noFit` by how much
/// when it does not fit.
bool worthSearching(const PipelineTrial &base, StringRef name, int64_t chunks,
                    std::optional<double> &priced, std::string &why,
                    std::optional<parplan::driver::NoFit> &noFit) {
  priced = timelineOf(base, name, chunks);
  if (!priced || !(*priced < *base.step * (1 - kScheduleGain)))
    return false;
  if (fitsOnLayouts(base, name, chunks, noFit) == false) {
    why = "no plan fits in memory: the activations " + name.str() +
          " holds in flight do not fit on the layouts of the " + base.schedule +
          " trial";
    return false;
  }
  return true;
}

} // namespace

std::optional<parplan::driver::PipelineSearchResult>
parplan::driver::searchPipeline(
    const ModelImporter &importAt, CompilePipelineOptions &pipeline,
    const PipelineChoice &choice, std::string &error, TimingScope &timing,
    std::vector<std::unique_ptr<PassManager>> &passManagers) {
  Trials trials(importAt, pipeline, choice.chunks, timing, passManagers,
                choice.onTrial);
  // Another strategy than auto is one start: nothing to lay out apart.
  if ((!choice.autoStages && !choice.autoMicroBatches) ||
      pipeline.strategy != "auto")
    trials.trialStarts = trials.startsAsked;
  PipelineSearchResult result;
  int64_t firstCount =
      choice.autoMicroBatches
          ? firstMicroBatches(std::max<int64_t>(choice.stages > 0
                                                    ? choice.stages
                                                    : choice.annotatedStages,
                                                1),
                              choice.batch)
          : choice.microBatches;
  std::string schedule = choice.autoSchedule
                             ? parplan::schedule::kDefaultPipelineScheduleName
                             : choice.schedule;

  // 1. Stage counts. The cluster and the mesh are read off the model the
  // first trial imports.
  PipelineTrial best;
  // On a mesh of mixed device types: one mesh's trial, while the stages
  // are refined.
  std::optional<PipelineTrial> oneMesh;
  // On mixed types or uneven nodes, one mesh's trial, judged beside the
  // stage counts.
  std::optional<PipelineTrial> judgedOneMesh;
  if (choice.autoStages) {
    ModuleOp step =
        choice.model ? choice.model : trials.stepAt(firstCount, error);
    if (!step)
      return std::nullopt;
    auto clusterAndMesh =
        parplan::driver::clusterAndMesh(step, pipeline.mesh, error);
    if (!clusterAndMesh)
      return std::nullopt;
    const std::vector<int64_t> &meshShape = clusterAndMesh->second;
    // Each count is judged by its best schedule: eager-1F1B may make a
    // count whose sends are slow the best one.
    std::vector<int64_t> counts = divisorsOf(meshShape.front());
    std::map<size_t, PipelineTrial> judged;
    // A count's base trial: at the micro-batch count it starts from, in
    // the schedule the search starts from.
    auto baseShape = [&](size_t index) {
      int64_t count = counts[index];
      return Trials::Shape{count > 1 ? count : 0, count,
                           choice.autoMicroBatches
                               ? firstMicroBatches(count, choice.batch)
                               : choice.microBatches,
                           schedule};
    };
    auto judge = [&](size_t index) -> const PipelineTrial * {
      auto known = judged.find(index);
      if (known != judged.end())
        return &known->second;
      Trials::Shape base = baseShape(index);
      int64_t count = base.count, microBatches = base.microBatches;
      const PipelineTrial *trial =
          trials.run(base.stages, count, microBatches, base.schedule, error);
      if (!trial)
        return nullptr;
      PipelineTrial countBest = *trial;
      // The schedules worth a search, the fastest timeline first; one
      // whose timeline does not clearly beat the best step found so far,
      // at this count or at another, is not searched: its search would
      // only constrain the layouts more. On whale-v100-p100x2's 2 stages,
      // eager-1F1B's search (101.77 ms) leaves GPipe's timeline (111.85
      // ms) and the interleaved one's (107.52 ms) unsearched.
      std::optional<double> bestJudged;
      for (const auto &[other, judgedTrial] : judged)
        if (judgedTrial.step &&
            (!bestJudged || *judgedTrial.step < *bestJudged))
          bestJudged = judgedTrial.step;
      std::vector<std::pair<double, std::string>> worth;
      if (choice.autoSchedule && count > 1 && microBatches > 1)
        for (const std::string &name : searchedSchedules()) {
          std::optional<double> priced;
          std::string why;
          std::optional<NoFit> noFit;
          if (name != trial->schedule &&
              worthSearching(*trial, name, choice.chunks, priced, why, noFit))
            worth.emplace_back(*priced, name);
        }
      std::stable_sort(
          worth.begin(), worth.end(),
          [](const auto &a, const auto &b) { return a.first < b.first; });
      for (const auto &[priced, name] : worth) {
        if ((bestJudged && priced >= *bestJudged) ||
            (countBest.step &&
             !(priced < *countBest.step * (1 - kScheduleGain))))
          continue;
        const PipelineTrial *other =
            trials.run(count, count, microBatches, name, error);
        if (!other)
          return nullptr;
        if (isClearlyBetter(*other, countBest))
          countBest = *other;
      }
      // A count that fits only with recomputation is judged with it (its
      // base shape, selective before full): fewer stages recomputing may
      // beat more stages keeping every activation, as Megatron-LM's
      // configurations recompute. One that fits only by layouts slower
      // than its fastest (a price on memory) by more than recomputing
      // would cost is judged with it too, and the faster kept: 8 stages of
      // GPT-3 175B at batch 1536 fit on H100s by layouts 42% slower
      // (13.52 s), with selective recomputation in 9.99 s.
      std::string level = trials.recompute;
      for (const char *more : {"selective", "full"}) {
        bool unfit = !countBest.step && countBest.noFit.has_value();
        bool priced =
            countBest.step && worthRecomputing(countBest.memorySlowdown, more);
        if (!choice.autoRecompute || countBest.recompute == more ||
            (!unfit && !priced))
          break;
        trials.recompute = more;
        const PipelineTrial *recomputing =
            trials.run(base.stages, count, microBatches, base.schedule, error);
        trials.recompute = level;
        if (!recomputing)
          return nullptr;
        if (unfit ? recomputing->step || recomputing->noFit.has_value()
                  : isClearlyBetter(*recomputing, countBest)) {
          PipelineTrial slower = std::move(countBest);
          countBest = *recomputing;
          countBest.withoutRecompute =
              !unfit && (slower.recompute.empty() || slower.recompute == "none")
                  ? PipelineTrial::Unrecomputed{*slower.step,
                                                slower.memorySlowdown}
                  : slower.withoutRecompute;
        }
      }
      return &judged.emplace(index, std::move(countBest)).first->second;
    };
    // The step falls with more stages (less memory and work each) until
    // the bubble and the sends between them outweigh that: the counts
    // are climbed from the middle of the divisors toward the better
    // neighbour, each trial a search, rather than all tried. While the
    // trials do not fit, more stages (less memory each) are tried; a
    // count the model cannot be cut into sends the climb to fewer.
    size_t at = counts.size() / 2;
    // Whether count `index`'s base trial is still to lay out.
    auto fresh = [&](size_t index) {
      return index < counts.size() && !judged.count(index) &&
             !trials.known(baseShape(index));
    };
    // The middle count, and the next one up: the search goes on to it
    // whether the middle fits (to judge its neighbours) or not (to try
    // more stages).
    {
      std::vector<Trials::Shape> first{baseShape(at)};
      if (fresh(at + 1))
        first.push_back(baseShape(at + 1));
      if (at > 0 && fresh(at - 1))
        first.push_back(baseShape(at - 1));
      trials.prefetch(first);
    }
    if (!judge(at))
      return std::nullopt;
    while (!judged.at(at).step && at + 1 < counts.size() &&
           judged.at(at).noFit.has_value()) {
      if (!judge(++at))
        return std::nullopt;
    }
    while (!judged.at(at).step && at > 0 && !judged.at(at).noFit.has_value()) {
      if (!judge(--at))
        return std::nullopt;
    }
    if (judged.at(at).step)
      for (;;) {
        size_t next = at;
        // Both neighbours are judged: their trials are laid out together.
        // Where one is laid out already, the other is laid out alone: a
        // guess beside it (the count beyond it, which the climb asks for
        // only if it moves there) made the step wait for the longer of the
        // two, a GPT-3 175B's 4 or 64 stages for 5 s beside 8's 1.3 s, and
        // the climb has mostly converged by then.
        std::vector<Trials::Shape> ahead;
        for (size_t neighbour : {at - 1, at + 1})
          if (fresh(neighbour))
            ahead.push_back(baseShape(neighbour));
        trials.prefetch(ahead);
        for (size_t neighbour : {at - 1, at + 1}) {
          if (neighbour >= counts.size())
            continue;
          const PipelineTrial *trial = judge(neighbour);
          if (!trial)
            return std::nullopt;
          if (isBetter(*trial, judged.at(next)))
            next = neighbour;
        }
        if (next == at)
          break;
        at = next;
      }
    // On devices of mixed types, the fewest stages of one type each (a
    // stage per GPU type, as Metis searches) are judged too: the climb
    // stops where both neighbours are worse, and counts whose stages mix
    // types (at the slower's speed) may surround a far better one
    // (mixed-t4-a100 on one axis of 24: 6 stages beat 4 and 8, while 3, its
    // A100 node and two stages of T4s, beat them all).
    const cost::Cluster &cluster = *clusterAndMesh->first;
    std::string noMesh;
    std::optional<cost::DeviceMesh> mesh =
        cost::makeMesh(cluster, meshShape, noMesh);
    bool mixed =
        mesh && !mesh->devices.empty() && !cluster.ofOneType(mesh->devices);
    if (std::optional<size_t> oneType =
            mixed ? fewestOneTypeStages(cluster, *mesh, counts) : std::nullopt;
        oneType && !judged.count(*oneType) && !judge(*oneType))
      return std::nullopt;
    // And one mesh, each device's part of the batch by its speed (Whale's
    // data parallelism; counts[0] is 1): the climb from the middle may stop
    // short of it, as on two A100 nodes and two T4 nodes as one axis of 24,
    // where it (286.64 ms predicted) beats their three stages (366.06 ms).
    // So on nodes of uneven sizes, whose stages cut nodes apart, and where
    // one mesh may take near-even whole rows per device (a node of 8 A100s
    // and one of 2 at batch 64: 7 or 6 rows each, 267.33 ms, where the
    // climb stopped at 5 stages, 300.23 ms, slower than the 8 alone).
    std::map<int64_t, int64_t> perNode;
    if (mesh)
      for (int64_t device : mesh->devices)
        ++perNode[cluster.nodeOf(device)];
    bool unevenNodes = llvm::any_of(perNode, [&](const auto &node) {
      return node.second != perNode.begin()->second;
    });
    bool judgesOneMesh = (mixed || unevenNodes) && counts[0] == 1;
    if (judgesOneMesh && !judged.count(0) && !judge(0))
      return std::nullopt;
    if (judgesOneMesh && judged.at(0).step)
      judgedOneMesh = judged.at(0);
    for (const auto &[index, trial] : judged)
      result.stageCounts.push_back(trial);
    // The least predicted step (the fewer stages on a tie); when none
    // fits, the most stages that failed only for memory, for more
    // micro-batches or recomputation to try; else the fewest stages
    // tried, whose error the compile then says.
    best = result.stageCounts.front();
    for (const PipelineTrial &trial : result.stageCounts)
      if (isBetter(trial, best))
        best = trial;
    if (!best.step)
      for (const PipelineTrial &trial : result.stageCounts)
        if (trial.noFit.has_value())
          best = trial;
    // Stages are judged at their first micro-batch count, one mesh at its
    // best: on mixed types or uneven nodes, where one mesh is always
    // judged, the fastest stages go on through the micro-batch and
    // schedule phases before the two are compared. mixed-t4-a100 at batch
    // 64: one mesh 220.98 ms beats 3 stages' 313.45 ms at 16 micro-batches,
    // which at 8 take 212.81 ms.
    if (judgesOneMesh && best.stages == 1) {
      const PipelineTrial *staged = nullptr;
      for (const PipelineTrial &trial : result.stageCounts)
        if (trial.stages > 1 && trial.step &&
            (!staged || isBetter(trial, *staged)))
          staged = &trial;
      if (staged) {
        oneMesh = best;
        best = *staged;
      }
    }
  } else {
    best.stages = std::max<int64_t>(
        choice.stages > 0 ? choice.stages : choice.annotatedStages, 1);
    best.microBatches = firstCount;
    best.schedule = schedule;
    best.recompute = trials.recompute;
  }
  // The next phases build their steps with the chosen count's
  // recomputation.
  trials.recompute = best.recompute;
  int64_t stagesOption =
      choice.autoStages ? (best.stages > 1 ? best.stages : 0) : choice.stages;
  auto tryShape = [&](int64_t microBatches, StringRef name,
                      std::vector<PipelineTrial> &phase) -> bool {
    const PipelineTrial *trial =
        trials.run(stagesOption, best.stages, microBatches, name, error);
    if (!trial)
      return false;
    phase.push_back(*trial);
    return true;
  };

  // 2. Micro-batch counts, on stages: up the ladder while the step falls
  // (or, while nothing fits, while the trials fail for memory, which
  // falls with the micro-batch), down it when the first step up does not
  // help; then the count between the best and each neighbour.
  if (choice.autoMicroBatches && best.stages > 1 && choice.batch > 0) {
    // Interleaved sends the micro-batches round the stages in groups of
    // them.
    bool interleaved = best.schedule == "interleaved";
    std::vector<int64_t> ladder = microBatchLadder(
        choice.batch, best.stages, best.microBatches, interleaved);
    // The first rung: the first phase's trial, or laid out now.
    if (!tryShape(best.microBatches, best.schedule, result.microBatchCounts))
      return std::nullopt;
    best = result.microBatchCounts.back();
    auto climb = [&](int direction) {
      size_t at = llvm::find(ladder, best.microBatches) - ladder.begin();
      bool moved = false;
      for (int64_t next = static_cast<int64_t>(at) + direction;
           next >= 0 && next < static_cast<int64_t>(ladder.size());
           next += direction) {
        if (!tryShape(ladder[next], best.schedule, result.microBatchCounts))
          return std::optional<bool>();
        const PipelineTrial &trial = result.microBatchCounts.back();
        bool stillNoFit =
            !best.step && direction > 0 && trial.noFit.has_value();
        if (isBetter(trial, best)) {
          best = trial;
          moved = true;
        } else if (!stillNoFit) {
          break;
        }
      }
      return std::optional<bool>(moved);
    };
    // The first rung up and the first down, laid out together: the climb
    // asks for the one up, and for the one down when that does not help.
    // Where the first rung fits, the counts between it and each of them
    // are laid out beside them: wherever the climb ends (here, up or down),
    // it asks for one of the two, or both, and a trial that finds no fit
    // ends early, leaving its thread free for them.
    {
      size_t at = llvm::find(ladder, best.microBatches) - ladder.begin();
      std::vector<Trials::Shape> ahead;
      for (size_t rung : {at + 1, at - 1})
        if (rung < ladder.size())
          ahead.push_back(
              {stagesOption, best.stages, ladder[rung], best.schedule});
      if (best.step)
        for (size_t rung : {at + 1, at - 1})
          if (rung < ladder.size())
            if (std::optional<int64_t> between = divisorBetween(
                    choice.batch, std::min(ladder[rung], best.microBatches),
                    std::max(ladder[rung], best.microBatches),
                    interleaved ? best.stages : 1))
              ahead.push_back(
                  {stagesOption, best.stages, *between, best.schedule});
      trials.prefetch(ahead);
    }
    std::optional<bool> up = climb(+1);
    if (!up)
      return std::nullopt;
    if (!*up && best.step && !climb(-1))
      return std::nullopt;
    if (best.step) {
      size_t at = llvm::find(ladder, best.microBatches) - ladder.begin();
      int64_t chosen = best.microBatches;
      std::vector<int64_t> betweens;
      for (int64_t neighbour :
           {at > 0 ? ladder[at - 1] : int64_t{0},
            at + 1 < ladder.size() ? ladder[at + 1] : int64_t{0}}) {
        if (neighbour == 0)
          continue;
        if (std::optional<int64_t> between = divisorBetween(
                choice.batch, std::min(neighbour, chosen),
                std::max(neighbour, chosen), interleaved ? best.stages : 1))
          betweens.push_back(*between);
      }
      // Both counts between are tried: their trials are laid out together.
      std::vector<Trials::Shape> both;
      for (int64_t between : betweens)
        both.push_back({stagesOption, best.stages, between, best.schedule});
      trials.prefetch(both);
      for (int64_t between : betweens) {
        if (!tryShape(between, best.schedule, result.microBatchCounts))
          return std::nullopt;
        if (isBetter(result.microBatchCounts.back(), best))
          best = result.microBatchCounts.back();
      }
    }
  }

  // 3. Schedules, where there is a pipeline to order: each one parplan-run
  // runs, the first tried kept on a tie (1F1B holds the fewest
  // activations). The schedules order the same work: one is searched only
  // where its timeline on the best trial's stage costs beats that trial
  // (sends slow against the stages' work, which eager-1F1B hides), as
  // another schedule mostly changes the layouts through the activations it
  // holds, which only constrains them more. A search costs as much as the
  // trial's; the timeline, a simulation of the micro-batches.
  if (choice.autoSchedule && best.stages > 1 && best.microBatches > 1) {
    if (!tryShape(best.microBatches, best.schedule, result.schedules))
      return std::nullopt;
    best = result.schedules.back();
    const PipelineTrial base = best;
    for (const std::string &name : searchedSchedules()) {
      if (name == base.schedule)
        continue;
      // A schedule not worth a search is priced on the base's layouts:
      // its timeline, or why it does not fit or run there.
      std::optional<double> priced;
      std::string why;
      std::optional<NoFit> noFit;
      if (base.step &&
          !worthSearching(base, name, choice.chunks, priced, why, noFit)) {
        PipelineTrial screened = base;
        screened.schedule = name;
        screened.noFit = noFit;
        screened.step = why.empty() ? priced : std::nullopt;
        screened.why = why.empty() && !priced
                           ? name + " cannot run " +
                                 std::to_string(base.microBatches) +
                                 " micro-batches on " +
                                 std::to_string(base.stages) + " stages"
                           : why;
        screened.searched = false;
        result.schedules.push_back(std::move(screened));
        continue;
      }
      if (!tryShape(best.microBatches, name, result.schedules))
        return std::nullopt;
      if (isClearlyBetter(result.schedules.back(), best))
        best = result.schedules.back();
    }
  }
  // On stages of different speeds place-stages may find stages ending
  // inside layers better balanced by FLOPs (sbp.finer_cut); the FLOPs do
  // not see a stage's once-per-step work (a slow stage's gradients over
  // slow links), so a trial of its own judges the cut. Where one mesh is
  // faster, the trials keep its step laid out, not the stages', and the
  // stages keep whole layers: a cut tried without place-stages asking for
  // it made whale-v100-p100's two stages at batch 128 (265.04 ms) beat one
  // mesh's search (274.64 ms) though its baselines lay it out at 248.11.
  if (choice.autoCuts && best.stages > 1 && best.step &&
      !trials.cutInsideLayers && trials.hasFinerCut(best, stagesOption)) {
    trials.cutInsideLayers = true;
    const PipelineTrial *inside = trials.run(
        stagesOption, best.stages, best.microBatches, best.schedule, error);
    if (!inside)
      return std::nullopt;
    result.cuts = {best, *inside};
    if (isClearlyBetter(*inside, best))
      best = *inside;
    trials.cutInsideLayers = best.cutInsideLayers;
  }
  // One mesh against the refined stages: the fewer stages on a tie, as
  // between counts.
  // The refined stages one mesh beat, and their place-stages option.
  std::optional<PipelineTrial> beatenStages;
  int64_t beatenStagesOption = stagesOption;
  if (oneMesh && !isBetter(best, *oneMesh)) {
    result.stagesBesideOneMesh = best.stages;
    beatenStages = best;
    best = *oneMesh;
    stagesOption = 0;
    trials.recompute = best.recompute;
    trials.cutInsideLayers = best.cutInsideLayers;
  }
  // The chosen trial's figures stand for its shape in the phases' lists.
  auto standFor = [&] {
    for (std::vector<PipelineTrial> *phase :
         {&result.stageCounts, &result.microBatchCounts, &result.schedules,
          &result.cuts})
      for (PipelineTrial &trial : *phase)
        if (trial.searched && trial.stages == best.stages &&
            trial.microBatches == best.microBatches &&
            trial.schedule == best.schedule &&
            (phase != &result.cuts ||
             trial.cutInsideLayers == best.cutInsideLayers)) {
          // The step without recomputation its count was judged against
          // stays with it.
          auto without = trial.withoutRecompute;
          trial = best;
          if (without)
            trial.withoutRecompute = without;
        }
  };
  bool searchTrials =
      trials.startsAsked == "all" && trials.trialStarts == "search";
  // A trial's baselines are laid out with its own recomputation and cut.
  auto layOutAs = [&](const PipelineTrial &trial) {
    trials.recompute = trial.recompute;
    trials.cutInsideLayers = trial.cutInsideLayers;
  };
  // Where stages beat one mesh of mixed types by the search's layouts, one
  // mesh's baselines are laid out too: on uneven shares the search may stop
  // far from a baseline's layout (whale-v100-p100 at batch 64: one mesh's
  // search 178.97 ms, its data-parallel start 154.47 ms). Where they beat
  // the stages' search, the stages' baselines are laid out as well (the
  // phase below finds them), and the better of the two kept, one mesh on a
  // tie: on whale-v100-p100-x2 at batch 128 one mesh's (152.85 ms) beat
  // the stages' search (156.33 ms) but not their baselines (141.3 ms).
  // Not where one mesh's search is slower than the stages' by more than a
  // baseline has been seen to beat it (kOneMeshBaselineGain).
  if (searchTrials && judgedOneMesh && best.stages > 1 && best.step &&
      *judgedOneMesh->step * (1 - kOneMeshBaselineGain) < *best.step) {
    layOutAs(*judgedOneMesh);
    const PipelineTrial *others =
        trials.run(0, 1, judgedOneMesh->microBatches, judgedOneMesh->schedule,
                   error, "baselines");
    if (!others)
      return std::nullopt;
    OwningOpRef<ModuleOp> baselines = trials.takeOther();
    layOutAs(best);
    if (baselines && isBetter(*others, best) &&
        isBetter(*others, *judgedOneMesh)) {
      const PipelineTrial *stagesOthers =
          trials.run(stagesOption, best.stages, best.microBatches,
                     best.schedule, error, "baselines");
      if (!stagesOthers)
        return std::nullopt;
      if (!isBetter(*stagesOthers, *others)) {
        // The search's start, by the name sbp-assign gives it.
        addBaseline(*baselines, "auto", *judgedOneMesh->step);
        result.stagesBesideOneMesh = best.stages;
        best = *others;
        standFor();
        result.chosen = best;
        result.laidOut = std::move(baselines);
        return result;
      }
    }
  }
  // And where one mesh beat the refined stages by the search's layouts,
  // the stages' baselines are laid out too, where they may beat it by as
  // much: on whale-v100-p100-x2 at batch 128 one mesh's search (149.70 ms)
  // beat the stages' (150.77 ms), and their replicated start takes 141.50
  // ms. One mesh's baselines are laid out then as well, and the better of
  // the two kept, one mesh on a tie.
  if (searchTrials && beatenStages && beatenStages->step && best.step &&
      best.stages == 1 &&
      *beatenStages->step * (1 - kOneMeshBaselineGain) < *best.step) {
    layOutAs(*beatenStages);
    const PipelineTrial *stagesOthers = trials.run(
        beatenStagesOption, beatenStages->stages, beatenStages->microBatches,
        beatenStages->schedule, error, "baselines");
    if (!stagesOthers)
      return std::nullopt;
    OwningOpRef<ModuleOp> stagesBaselines = trials.takeOther();
    layOutAs(best);
    if (stagesBaselines && isBetter(*stagesOthers, best)) {
      const PipelineTrial *others = trials.run(
          0, 1, best.microBatches, best.schedule, error, "baselines");
      if (!others)
        return std::nullopt;
      OwningOpRef<ModuleOp> baselines = trials.takeOther();
      bool stagesWin = !baselines || isBetter(*stagesOthers, *others);
      PipelineTrial searched = stagesWin ? *beatenStages : best;
      best = stagesWin ? *stagesOthers : *others;
      OwningOpRef<ModuleOp> kept =
          stagesWin ? std::move(stagesBaselines) : std::move(baselines);
      // The search's start, by the name sbp-assign gives it.
      addBaseline(*kept, "auto", *searched.step);
      if (stagesWin)
        result.stagesBesideOneMesh = 0;
      standFor();
      result.chosen = best;
      result.laidOut = std::move(kept);
      return result;
    }
  }
  // Unless the trials planned them, the shapes were compared by the
  // search's own layouts; the baselines are laid out on the chosen shape
  // (sbp-assign starts=baselines), and the least predicted step of the
  // search's trial and them is kept, as starts=all would keep it: the
  // winner's sbp.plan lists the others' steps, and its figures stand for
  // the shape in the phases' lists.
  OwningOpRef<ModuleOp> laidOut = trials.takeLaidOut(best, stagesOption);
  if (searchTrials && best.step && laidOut) {
    const PipelineTrial *others =
        trials.run(stagesOption, best.stages, best.microBatches, best.schedule,
                   error, "baselines");
    if (!others)
      return std::nullopt;
    OwningOpRef<ModuleOp> baselines = trials.takeOther();
    if (others->step && baselines) {
      if (*others->step < *best.step) {
        // The search's start by its name (`auto`, or `auto (parts by
        // speed)` where one mesh split the batch by speed), and the
        // starts it beat.
        auto searched = (*laidOut)->getAttrOfType<sbp::LayoutPlanAttr>(
            parplan::kLayoutPlanAttrName);
        addBaseline(*baselines, searched.getStart(), *best.step);
        for (NamedAttribute entry : searched.getBaselines())
          addBaseline(*baselines, entry.getName().getValue(),
                      cast<FloatAttr>(entry.getValue()).getValueAsDouble());
        laidOut = std::move(baselines);
        best = *others;
      } else {
        auto plan = (*baselines)
                        ->getAttrOfType<sbp::LayoutPlanAttr>(
                            parplan::kLayoutPlanAttrName);
        addBaseline(*laidOut, plan.getStart(), *others->step);
        for (NamedAttribute entry : plan.getBaselines())
          addBaseline(*laidOut, entry.getName().getValue(),
                      cast<FloatAttr>(entry.getValue()).getValueAsDouble());
      }
    }
    standFor();
  }
  result.chosen = best;
  result.laidOut = std::move(laidOut);
  return result;
}
