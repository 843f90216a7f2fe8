//===- CompileCommand.cpp - parplan compile -------------------------------===//
//
// The main job: a model and a cluster in, a plan file and its summary out.
// Every stage is a pass the other commands also run; this file only chains
// them and reports what they chose.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "Diagnostics.h"
#include "ModelFiles.h"
#include "PipelineSearch.h"
#include "Progress.h"

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Simulate/Report.h"
#include "parplan/Simulate/Simulator.h"
#include "parplan/Support/Text.h"
#include "parplan/Target/PlanExport.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/ShardingCostModel.h"
#include "parplan/Transforms/TrainingStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

using namespace mlir;
namespace nn = parplan::nn;
namespace plan = parplan::plan;
namespace sbp = parplan::sbp;

namespace {

struct DeviceFigures {
  /// The arena plan-memory laid out, and the peak of live bytes it cannot
  /// go below.
  int64_t peakMemoryBytes = 0, liveMemoryBytes = 0;
  double commBytes = 0;
};

/// The bytes of the arena plan-memory laid out for `program`, if it has.
std::optional<int64_t> arenaBytes(plan::ProgramOp program) {
  if (auto arena = program->getAttrOfType<IntegerAttr>("plan.arena_bytes"))
    return arena.getInt();
  return std::nullopt;
}

/// One device's arena (plan-memory) and peak of live bytes (every named
/// buffer for the whole step, temporaries from their creation to their last
/// use), and the bytes its collectives send (plan::bytesSent) in a step of
/// `microBatches`: those before plan.after_micro_batches once per
/// micro-batch.
DeviceFigures deviceFigures(plan::ProgramOp program, int64_t microBatches,
                            SymbolTableCollection &symbols) {
  DeviceFigures figures;
  Block &body = program.getBody().front();
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;
  std::vector<int64_t> delta(index + 1, 0);
  int64_t always = 0;
  for (auto buffer : body.getOps<plan::BufferOp>()) {
    int64_t bytes = plan::bufferBytes(buffer.getType());
    if (buffer.getBufferKind() != plan::BufferKind::temporary) {
      always += bytes;
      continue;
    }
    int64_t last = position[buffer];
    for (Operation *user : buffer.getResult().getUsers())
      last = std::max(last, position[user]);
    delta[position[buffer]] += bytes;
    delta[last + 1] -= bytes;
  }
  int64_t live = 0;
  for (int64_t i = 0; i < index; ++i) {
    live += delta[i];
    figures.liveMemoryBytes = std::max(figures.liveMemoryBytes, always + live);
  }
  figures.peakMemoryBytes =
      arenaBytes(program).value_or(figures.liveMemoryBytes);
  double runs = static_cast<double>(microBatches);
  for (Operation &op : body) {
    if (isa<plan::AfterMicroBatchesOp>(op))
      runs = 1;
    figures.commBytes += runs * plan::bytesSent(&op, &symbols);
  }
  return figures;
}

std::string shardingText(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// The bytes sbp-assign's "no plan fits in memory: the smallest needs N
/// bytes per device ..." says the plan of least memory needs.
std::optional<double> smallestPlanBytes(StringRef message) {
  constexpr StringLiteral kNeeds = "the smallest needs ";
  size_t at = message.find(kNeeds);
  if (at == StringRef::npos)
    return std::nullopt;
  std::string digits;
  for (char c : message.drop_front(at + kNeeds.size())) {
    if (c == ',')
      continue;
    if (!llvm::isDigit(c))
      break;
    digits += c;
  }
  if (digits.empty())
    return std::nullopt;
  return std::stod(digits);
}

/// The layers nn-autodiff recomputes (nn.training's recomputed_layers), in
/// forward order.
std::vector<std::string> recomputedLayersOf(ModuleOp module) {
  std::vector<std::string> layers;
  if (auto training = module->getAttrOfType<DictionaryAttr>("nn.training"))
    if (auto list = training.getAs<ArrayAttr>("recomputed_layers"))
      for (auto name : list.getAsRange<StringAttr>())
        layers.push_back(name.str());
  return layers;
}

/// The most layers one class has among `layers`.
int64_t largestLayerClass(const std::vector<std::string> &layers) {
  std::map<std::string, int64_t> counts;
  int64_t largest = 0;
  for (const std::string &layer : layers)
    if (!layer.empty())
      largest = std::max(largest, ++counts[nn::layerClass(layer).str()]);
  return largest;
}

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

} // namespace

int parplan::cli::runCompile(const CompileOptions &options) {
  auto started = std::chrono::steady_clock::now();
  if (!options.train) {
    llvm::errs() << "parplan compile: error: inference plans are not "
                    "compiled yet; pass --train\n";
    return 1;
  }
  if (options.training.optimizer == "none") {
    llvm::errs() << "parplan compile: error: --optimizer none returns "
                    "gradients; a plan needs an optimizer to update with\n";
    return 1;
  }
  int64_t microBatches = options.training.microBatches;
  if ((microBatches > 1 || options.autoMicroBatches) && options.batch <= 0) {
    llvm::errs() << "parplan compile: error: '" << options.input
                 << "': --micro-batches "
                 << (options.autoMicroBatches ? std::string("auto")
                                              : std::to_string(microBatches))
                 << " needs --batch, the global batch that each micro-batch "
                    "takes "
                 << (options.autoMicroBatches
                         ? std::string("a part")
                         : "1/" + std::to_string(microBatches))
                 << " of\n";
    return 1;
  }
  // The schedules lower-to-plan writes and parplan-run runs.
  if (options.schedule != "auto" &&
      !llvm::is_contained(runtime::executorSchedules(), options.schedule)) {
    llvm::errs() << "parplan compile: error: '" << options.input
                 << "': --schedule " << options.schedule << " is unknown; use "
                 << runtime::executorScheduleList() << " or auto\n";
    return 1;
  }
  if (options.batch % microBatches != 0) {
    llvm::errs() << "parplan compile: error: '" << options.input
                 << "': --micro-batches " << microBatches
                 << " does not divide --batch " << options.batch << "\n";
    return 1;
  }
  // Stages of over a second told on stderr (--quiet: none).
  Progress progress(!options.quiet, "parplan compile");
  progress.stage("importing " + options.input, 0);
  // An error ends the stage told, without its time, and clears the bar
  // first.
  auto errorLine = [&]() -> llvm::raw_ostream & {
    progress.abandon();
    return llvm::errs();
  };
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  // The passes of each stage and the work between them (import, figures,
  // export); --mlir-timing reports them together.
  DefaultTimingManager timing;
  timing.setEnabled(options.mlirTiming);
  TimingScope timingRoot = timing.getRootScope();
  LayoutOptions layout = options.layout;
  // The model at `count` micro-batches of the batch, the program of one,
  // with the layout's inputs on it; null once it has said why not.
  auto importAt = [&](int64_t count) -> OwningOpRef<ModuleOp> {
    TimingScope importTiming = timingRoot.nest("Import");
    std::vector<std::string> dims = options.dims;
    if (options.batch > 0)
      dims.push_back("batch=" + std::to_string(options.batch / count));
    OwningOpRef<ModuleOp> imported =
        loadModel(options.input, dims, /*raw=*/false, context);
    if (!imported)
      return nullptr;
    // The executor slices every input along dimension 0: each must be the
    // batch, bound to the micro-batch (an input whose dimension 0 is fixed
    // or named otherwise does not take --batch; a model with no 'batch' at
    // all was refused by the importer).
    if (count > 1) {
      int64_t rows = options.batch / count;
      WalkResult walk = imported->walk([&](nn::InputOp input) {
        ArrayRef<int64_t> shape = input.getType().getShape();
        if (!shape.empty() && shape.front() == rows)
          return WalkResult::advance();
        errorLine() << "parplan compile: error: '" << options.input
                    << "': input '" << input.getName() << "' has "
                    << (shape.empty() ? std::string("no dimension 0")
                                      : std::to_string(shape.front()) +
                                            " rows at dimension 0")
                    << ", not the micro-batch's " << rows
                    << ": --micro-batches slices every input along "
                       "dimension 0, which must be the symbolic dimension "
                       "'batch'\n";
        return WalkResult::interrupt();
      });
      if (walk.wasInterrupted())
        return nullptr;
    }
    if (!attachLayoutInputs(*imported, layout, "compile"))
      return nullptr;
    return imported;
  };
  OwningOpRef<ModuleOp> module = importAt(microBatches);
  if (!module)
    return 1;
  OneLineDiagnostics diagnostics(context);
  diagnostics.setWriter(
      [&](const std::function<void()> &write) { progress.write(write); });
  auto emitAfter = [&](StringRef stage) -> bool {
    if (options.emit != stage)
      return false;
    module->print(llvm::outs());
    llvm::outs() << "\n";
    return options.output.empty();
  };

  if (!resolveMegatronGrid(*module, layout, "compile"))
    return 1;
  CompilePipelineOptions pipeline;
  setPipelineOptions(pipeline, options.training, &layout);
  // The pass managers live to the end: the timing report knows a pass by
  // its address, which a freed pass would hand to the next one.
  std::vector<std::unique_ptr<PassManager>> passManagers;
  std::string error;
  std::optional<Annotations> annotations = carriedAnnotations(*module, error);
  int64_t annotatedStages = annotations ? annotations->stages.size() : 0;
  if (layout.autoStages && annotatedStages > 0) {
    errorLine() << "parplan compile: error: '" << options.input
                << "': --stages auto: the annotations place stages too ("
                << annotations->stages.front().location
                << "); give one of the two\n";
    return 1;
  }
  // --strategy auto (the default) pipelines a mesh spanning several nodes:
  // without --stages or stages in the annotations, the stage count is
  // searched as with --stages auto. A mesh within one node, whose links
  // are its fastest, stays one mesh, and --stages 1 keeps one mesh
  // anywhere.
  if (!options.stagesGiven && annotatedStages == 0 &&
      layout.strategy == "auto" && layout.stages == 0) {
    auto clusterAndMesh =
        layoutMesh(*module, layout.cluster, layout.mesh, error);
    if (!clusterAndMesh) {
      errorLine() << "parplan compile: error: '" << options.input
                  << "': " << error << "\n";
      return 1;
    }
    const auto &[cluster, meshShape] = *clusterAndMesh;
    int64_t devices = meshSize(meshShape);
    layout.autoStages = meshShape.front() > 1 &&
                        devices <= cluster.numDevices() &&
                        cluster.nodeOf(0) != cluster.nodeOf(devices - 1);
  }
  // On stages (searched or given), the micro-batch count and the schedule
  // not given are searched: one micro-batch would run the stages one after
  // another.
  int64_t givenStages =
      std::max<int64_t>(layout.stages > 0 ? layout.stages : annotatedStages, 1);
  bool staged = layout.autoStages || givenStages > 1;
  bool autoMicroBatches =
      options.autoMicroBatches ||
      (staged && !options.microBatchesGiven && options.batch > 0);
  bool autoSchedule =
      options.schedule == "auto" || (staged && !options.scheduleGiven);
  if (options.chunksGiven && options.schedule != "interleaved" &&
      options.schedule != "auto" && options.scheduleGiven) {
    errorLine() << "parplan compile: error: '" << options.input
                << "': --chunks " << options.chunks
                << " cuts stages for --schedule interleaved, not --schedule "
                << options.schedule << "\n";
    return 1;
  }
  // Interleaved cuts each of the stages --stages places into --chunks
  // model chunks: the annotations' stages hold one each.
  if (options.schedule == "interleaved" &&
      !(layout.autoStages || layout.stages > 1)) {
    errorLine() << "parplan compile: error: '" << options.input
                << "': --schedule interleaved cuts the stages --stages "
                   "places into model chunks; "
                << (annotatedStages > 0
                        ? "the annotations' stages hold one each"
                        : "give --stages N")
                << "\n";
    return 1;
  }
  // The search prices the schedule lowering writes.
  pipeline.schedule = autoSchedule ? "1f1b" : options.schedule;
  auto chunksOf = [&](StringRef schedule) -> int64_t {
    return schedule == "interleaved" ? options.chunks : 1;
  };
  pipeline.chunks = chunksOf(pipeline.schedule);
  // The pipeline's shape the search chose, and the step it laid out for
  // it (the compile goes on from there).
  std::optional<PipelineSearchResult> searched;
  if (layout.autoStages ||
      (givenStages > 1 &&
       (autoMicroBatches || (autoSchedule && microBatches > 1)))) {
    PipelineChoice choice;
    choice.autoStages = layout.autoStages;
    choice.autoMicroBatches = autoMicroBatches;
    choice.autoSchedule = autoSchedule;
    choice.stages = layout.stages;
    choice.annotatedStages = annotatedStages;
    choice.microBatches = microBatches;
    choice.schedule = pipeline.schedule;
    choice.chunks = options.chunks;
    choice.batch = options.batch;
    int64_t trials = 0;
    choice.onTrial = [&](const std::string &shape) {
      ++trials;
      progress.stage("pipeline search, trial " + std::to_string(trials) + ": " +
                         shape,
                     0.05 + 0.6 * static_cast<double>(trials) /
                                (static_cast<double>(trials) + 4));
    };
    TimingScope searchTiming = timingRoot.nest("PipelineSearch");
    searched = searchPipeline(importAt, pipeline, choice, error, searchTiming,
                              passManagers);
    searchTiming.stop();
    progress.finish();
    if (!searched) {
      if (!error.empty())
        errorLine() << "parplan compile: error: '" << options.input
                    << "': " << error << "\n";
      return 1;
    }
    const PipelineTrial &chosen = searched->chosen;
    if (layout.autoStages)
      pipeline.stages = chosen.stages > 1 ? chosen.stages : 0;
    pipeline.schedule = chosen.schedule;
    pipeline.chunks = chunksOf(chosen.schedule);
    if (chosen.microBatches != microBatches) {
      microBatches = chosen.microBatches;
      module = importAt(microBatches);
      if (!module)
        return 1;
    }
    pipeline.microBatches = microBatches;
  }
  // The stages of the parplan-compile pipeline, run one by one to print an
  // intermediate stage and to read the search's figures before lowering
  // consumes them.
  // The IR is verified once a stage has run, not after each pass: verifying
  // a plan of 1,024 programs takes seconds (parplan-opt, which the pass tests
  // run, still verifies after every pass).
  auto runStage = [&](function_ref<void(OpPassManager &)> addPasses,
                      ModuleOp target = {}) {
    passManagers.push_back(std::make_unique<PassManager>(&context));
    PassManager &stage = *passManagers.back();
    stage.enableTiming(timingRoot);
    stage.enableVerifier(false);
    addPasses(stage);
    ModuleOp ran = target ? target : *module;
    if (failed(stage.run(ran)))
      return false;
    TimingScope verifyTiming = timingRoot.nest("Verify");
    return succeeded(verify(ran));
  };

  // Without --recompute, a step that fits on no plan is built again with
  // selective, then full recomputation of activations before the compile
  // gives up; the stages run on a copy of the imported model each time.
  // When full recomputation fits, recomputing only as many layers as the
  // memory lacking without recomputation calls for is tried as well, and
  // the faster plan kept.
  bool fallback = !options.recomputeGiven && options.emit != "nn";
  std::vector<std::string> recomputeLevels = {pipeline.recompute};
  if (fallback)
    recomputeLevels = {"none", "selective", "full"};
  OwningOpRef<ModuleOp> imported;
  if (fallback)
    imported = module->clone();
  // The training step and the layouts on `module`. A "no plan fits" error
  // is kept in `noFit`, not printed, when the fallback may go on.
  enum class Outcome { Fits, NoFit, Failed, Emitted };
  // With `quiet`, nothing is printed: an attempt that may fail without
  // failing the compile.
  // The step the search laid out for the chosen shape goes on to its
  // moves and boxings without being searched again (at the first level:
  // the trials build the step with the recomputation given).
  OwningOpRef<ModuleOp> laidOut;
  if (searched && options.emit != "nn")
    laidOut = std::move(searched->laidOut);
  auto buildAndLayOut = [&](std::optional<Diagnostic> &noFit,
                            bool quiet = false) {
    std::optional<ScopedDiagnosticHandler> keep;
    if (fallback)
      keep.emplace(&context, [&, quiet](Diagnostic &diagnostic) {
        if (quiet)
          return success();
        if (diagnostic.getSeverity() == DiagnosticSeverity::Error &&
            isNoFit(diagnostic.str())) {
          noFit.emplace(std::move(diagnostic));
          return success();
        }
        return failure();
      });
    if (laidOut) {
      module = std::move(laidOut);
      progress.stage("placing moves and boxings", 0.7);
      if (runStage(
              [&](OpPassManager &pm) { addLayoutBoxingPasses(pm, pipeline); }))
        return Outcome::Fits;
      return noFit ? Outcome::NoFit : Outcome::Failed;
    }
    if (!runStage(
            [&](OpPassManager &pm) { addTrainingStepPasses(pm, pipeline); }))
      return Outcome::Failed;
    if (emitAfter("nn"))
      return Outcome::Emitted;
    progress.stage("laying out the training step", 0.3);
    if (runStage([&](OpPassManager &pm) { addLayoutPasses(pm, pipeline); }))
      return Outcome::Fits;
    return noFit ? Outcome::NoFit : Outcome::Failed;
  };
  auto figure = [](ModuleOp m, StringRef key) {
    Attribute value = m->getAttrOfType<DictionaryAttr>("sbp.plan").get(key);
    if (auto integer = dyn_cast<IntegerAttr>(value))
      return static_cast<double>(integer.getInt());
    return cast<FloatAttr>(value).getValueAsDouble();
  };
  // A laid-out step lowered on a copy, with the peak of the arena
  // plan-memory lays out and what the lowering said (said again if the
  // copy is kept, so that the plan kept is not lowered twice). The cost
  // model's memory leaves out what lives only for a moment in the backward
  // pass (an activation, its gradient and its input's at once), so the
  // fallback judges every plan by its arena as well.
  struct Lowered {
    OwningOpRef<ModuleOp> module;
    double peak = 0;
    std::vector<Diagnostic> said;
  };
  auto lowerCopy = [&](ModuleOp source) -> std::optional<Lowered> {
    Lowered lowered;
    lowered.module = source.clone();
    ScopedDiagnosticHandler keep(&context, [&](Diagnostic &diagnostic) {
      lowered.said.push_back(std::move(diagnostic));
      return success();
    });
    progress.stage("lowering to per-device programs", 0.75);
    if (!runStage(
            [&](OpPassManager &pm) {
              addLoweringPasses(pm, pipeline.cluster, pipeline.schedule);
            },
            *lowered.module))
      return std::nullopt;
    SymbolTableCollection symbols;
    for (plan::ProgramOp program : lowered.module->getOps<plan::ProgramOp>()) {
      std::optional<int64_t> peak = arenaBytes(program);
      if (!peak)
        peak = deviceFigures(program, 1, symbols).peakMemoryBytes;
      lowered.peak = std::max(lowered.peak, static_cast<double>(*peak));
    }
    return lowered;
  };
  std::optional<Lowered> lowered;
  std::string withoutRecompute;
  std::optional<double> neededWithout;
  for (size_t level = 0; level < recomputeLevels.size(); ++level) {
    bool last = level + 1 == recomputeLevels.size();
    pipeline.recompute = recomputeLevels[level];
    if (level > 0)
      module = imported->clone();
    std::optional<Diagnostic> noFit;
    Outcome outcome = buildAndLayOut(noFit);
    if (outcome == Outcome::Emitted)
      return 0;
    if (outcome == Outcome::Failed)
      return 1;
    if (outcome == Outcome::Fits) {
      if (!fallback || last)
        break;
      lowered = lowerCopy(*module);
      double capacity = figure(*module, "device_memory_bytes");
      if (!lowered || lowered->peak <= capacity)
        break;
      // The estimate fits; the arena does not: the next level is tried.
      if (level == 0)
        withoutRecompute = fmt::format(
            "the planned peak memory {} per device exceeds the device's {} "
            "(the cost model estimated {})",
            formatBytes(static_cast<int64_t>(lowered->peak)),
            formatBytes(static_cast<int64_t>(capacity)),
            formatBytes(static_cast<int64_t>(figure(*module, "memory_bytes"))));
      lowered.reset();
      continue;
    }
    if (level == 0) {
      withoutRecompute = noFit->str();
      neededWithout = smallestPlanBytes(withoutRecompute);
    }
    if (last) {
      emitError(noFit->getLocation())
          << noFit->str() << " (even with full recomputation of activations)";
      return 1;
    }
  }
  std::vector<std::string> recomputedLayers = recomputedLayersOf(*module);
  size_t layersInAll = recomputedLayers.size();
  if (fallback && pipeline.recompute == "full" && neededWithout) {
    // Memory falls about linearly with the layers recomputed: from what
    // the smallest plan needed without recomputation to what the plan with
    // every layer recomputed takes. The device is taken as smaller by what
    // that plan's arena exceeds its estimate.
    double capacity = figure(*module, "device_memory_bytes");
    double withAll = figure(*module, "memory_bytes");
    int64_t perClass = largestLayerClass(recomputedLayers);
    auto layersFor = [&](double target) {
      double share = (*neededWithout - target) / (*neededWithout - withAll);
      // A hair below a whole count is that count, not one more.
      return static_cast<int64_t>(
          std::ceil(share * static_cast<double>(perClass) - 1e-9));
    };
    // The device taken as smaller only raises the count: no lowering when
    // even the whole device calls for every layer.
    if (*neededWithout > withAll && perClass > 1 &&
        layersFor(capacity) < perClass) {
      lowered = lowerCopy(*module);
      double plannedAll = lowered ? lowered->peak : withAll;
      int64_t count = layersFor(capacity - std::max(0.0, plannedAll - withAll));
      if (count >= 1 && count < perClass) {
        OwningOpRef<ModuleOp> allLayers = std::move(module);
        module = imported->clone();
        pipeline.recomputeLayers = count;
        std::optional<Diagnostic> noFit;
        Outcome outcome = buildAndLayOut(noFit, /*quiet=*/true);
        // Kept when faster and its arena fits too.
        std::optional<Lowered> fewer;
        if (outcome == Outcome::Fits &&
            figure(*module, "step_time") < figure(*allLayers, "step_time"))
          fewer = lowerCopy(*module);
        if (fewer && fewer->peak <= capacity) {
          lowered = std::move(fewer);
        } else {
          module = std::move(allLayers);
          pipeline.recomputeLayers = -1;
        }
        recomputedLayers = recomputedLayersOf(*module);
      }
    }
  }
  if (emitAfter("sbp"))
    return 0;

  // What the search chose, before lowering consumes it.
  TimingScope summaryTiming = timingRoot.nest("Summary");
  // The mesh the layouts are on: @mesh, or the stages' meshes (of one
  // shape), each on its devices.
  SmallVector<sbp::MeshOp> meshes(module->getOps<sbp::MeshOp>());
  sbp::MeshOp mesh = layoutMesh(*module);
  std::vector<int64_t> meshShape(mesh.getShape().begin(),
                                 mesh.getShape().end());
  auto planAttr = (*module)->getAttrOfType<DictionaryAttr>("sbp.plan");
  // Per stage mesh, the search's predicted figures (sbp.plan's stages).
  llvm::StringMap<DictionaryAttr> stageFigures;
  if (auto predicted = planAttr.getAs<ArrayAttr>("stages"))
    for (auto figures : predicted.getAsRange<DictionaryAttr>())
      stageFigures[figures.getAs<FlatSymbolRefAttr>("mesh").getValue()] =
          figures;
  llvm::json::Array stagesJson;
  std::vector<std::string> stageLines;
  for (sbp::MeshOp stage : meshes) {
    std::optional<ArrayRef<int64_t>> stageDevices = stage.getDevices();
    if (!stageDevices)
      continue;
    llvm::json::Array shape, devices;
    for (int64_t extent : stage.getShape())
      shape.push_back(extent);
    for (int64_t device : *stageDevices)
      devices.push_back(device);
    llvm::json::Object entry{{"mesh", stage.getSymName()},
                             {"shape", std::move(shape)},
                             {"devices", std::move(devices)}};
    std::string line = fmt::format(
        "{} {} on devices {}", stage.getSymName().str(),
        cost::formatMeshShape(
            {stage.getShape().begin(), stage.getShape().end()}),
        formatDevices({stageDevices->begin(), stageDevices->end()}));
    if (DictionaryAttr figures = stageFigures.lookup(stage.getSymName())) {
      auto number = [&](StringRef key) {
        return cast<FloatAttr>(figures.get(key)).getValueAsDouble();
      };
      int64_t bytes = cast<IntegerAttr>(figures.get("memory_bytes")).getInt();
      entry["predicted_forward_time_s"] = number("forward_time");
      entry["predicted_backward_time_s"] = number("backward_time");
      entry["predicted_update_time_s"] = number("update_time");
      entry["predicted_busy_time_s"] = number("busy_time");
      entry["predicted_bubble_time_s"] = number("bubble_time");
      entry["estimated_memory_bytes_per_device"] = bytes;
      line +=
          fmt::format(": forward {}, backward {} per micro-batch, "
                      "bubble {}, memory {}",
                      formatSeconds(number("forward_time")),
                      formatSeconds(number("backward_time")),
                      formatSeconds(number("bubble_time")), formatBytes(bytes));
    }
    stagesJson.push_back(std::move(entry));
    stageLines.push_back(std::move(line));
  }
  auto seconds = [&](StringRef key) {
    return cast<FloatAttr>(planAttr.get(key)).getValueAsDouble();
  };
  int64_t estimatedMemory =
      cast<IntegerAttr>(planAttr.get("memory_bytes")).getInt();
  int64_t deviceMemory =
      cast<IntegerAttr>(planAttr.get("device_memory_bytes")).getInt();
  // The start that won and the predicted step of each other start tried,
  // least first.
  std::string start = planAttr.getAs<StringAttr>("start").str();
  std::vector<std::pair<double, std::string>> starts = {
      {seconds("step_time"), start}};
  llvm::json::Object baselinesJson;
  for (NamedAttribute baseline : planAttr.getAs<DictionaryAttr>("baselines")) {
    double step = cast<FloatAttr>(baseline.getValue()).getValueAsDouble();
    starts.emplace_back(step, baseline.getName().str());
    baselinesJson[baseline.getName().str()] = step;
  }
  std::stable_sort(starts.begin(), starts.end());
  llvm::json::Array ops;
  double flops = 0;
  std::vector<std::pair<std::string, std::string>> parameterLayouts;
  auto function = module->lookupSymbol<func::FuncOp>("main");
  // Per step: the micro-batch's ops M times.
  DenseSet<Operation *> oncePerStep;
  if (microBatches > 1)
    if (FailureOr<DenseSet<Operation *>> after = opsAfterMicroBatches(function);
        succeeded(after))
      oncePerStep = std::move(*after);
  function.walk([&](Operation *op) {
    auto sharding = op->getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
    if (!sharding || !isa<nn::NNDialect>(op->getDialect()))
      return;
    if (auto param = dyn_cast<nn::ParamOp>(op))
      if (!(param.getSource() && *param.getSource() == "zeros"))
        parameterLayouts.emplace_back(
            param.getName().str(), parplan::toString(sharding.getResultSbp(0)));
    std::vector<NdSbp> operands, results;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      operands.push_back(sharding.getOperandSbp(i));
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      results.push_back(sharding.getResultSbp(i));
    if (auto shardable = dyn_cast<nn::ShardableOpInterface>(op))
      if (FailureOr<OpCost> cost = shardable.getCost(); succeeded(cost))
        flops +=
            cost->flops * localWorkFraction(operands, results, meshShape) *
            static_cast<double>(oncePerStep.contains(op) ? 1 : microBatches);
    double cost = 0;
    if (auto explain = op->getAttrOfType<DictionaryAttr>("sbp.explain"))
      if (auto value = explain.getAs<FloatAttr>("cost"))
        cost = value.getValueAsDouble();
    ops.push_back(llvm::json::Object{{"name", op->getName().getStringRef()},
                                     {"onnx_node", nn::nodeName(op)},
                                     {"sbp", shardingText(sharding)},
                                     {"cost_s", cost}});
  });

  summaryTiming.stop();

  // plan: per-device programs (already lowered when the fallback judged
  // the plan by its arena).
  if (lowered) {
    for (Diagnostic &diagnostic : lowered->said)
      context.getDiagEngine().emit(std::move(diagnostic));
    module = std::move(lowered->module);
  } else {
    progress.stage("lowering to per-device programs", 0.75);
    if (!runStage([&](OpPassManager &pm) {
          addLoweringPasses(pm, pipeline.cluster, pipeline.schedule);
        }))
      return 1;
  }
  if (emitAfter("plan"))
    return 0;
  if (options.output.empty()) {
    errorLine() << "parplan compile: error: give an output directory (-o) "
                   "or --emit\n";
    return 1;
  }
  progress.stage("writing the plan", 0.9);
  TimingScope exportTiming = timingRoot.nest("Export");
  // Blocks of up to 64 MiB: the arena's default 8 KiB blocks make a
  // 1,024-program plan a million allocations.
  google::protobuf::ArenaOptions arenaOptions;
  arenaOptions.max_block_size = 64 << 20;
  google::protobuf::Arena arena(arenaOptions);
  auto *exported = google::protobuf::Arena::CreateMessage<plan::Plan>(&arena);
  if (failed(exportPlan(*module, *exported)))
    return 1;
  exportTiming.stop();
  TimingScope writeTiming = timingRoot.nest("Write");
  if (std::error_code error =
          llvm::sys::fs::create_directories(options.output)) {
    errorLine() << "parplan compile: error: cannot create '" << options.output
                << "': " << error.message() << "\n";
    return 1;
  }
  SmallString<256> planPath(options.output), summaryPath(options.output);
  llvm::sys::path::append(planPath, "plan.pb");
  llvm::sys::path::append(summaryPath, "summary.json");
  if (runtime::Status status =
          runtime::writePlanFile(*exported, planPath.str().str());
      !status.ok()) {
    errorLine() << "parplan compile: error: " << status.error << "\n";
    return 1;
  }

  writeTiming.stop();

  // --trace: the plan's step simulated (docs/simulate.md), its timeline
  // written for Perfetto.
  std::optional<simulate::Simulation> simulated;
  std::optional<cost::Cluster> simulatedOn;
  if (!options.trace.empty() || !options.report.empty()) {
    progress.stage("simulating the plan", 0.95);
    TimingScope simulateTiming = timingRoot.nest("Simulate");
    std::string error;
    std::optional<cost::Cluster> cluster =
        cost::parseCluster(exported->cluster(), "the plan's cluster", error);
    if (!cluster) {
      errorLine() << "parplan compile: error: " << error << "\n";
      return 1;
    }
    simulate::SimulateOptions settings;
    settings.trace = !options.trace.empty();
    // The report's timeline: columns of a few pixels each.
    settings.timelineColumns = options.report.empty() ? 0 : 400;
    simulated.emplace();
    runtime::Status status =
        simulate::simulatePlan(*exported, *cluster, settings, *simulated);
    if (status.ok() && !options.trace.empty())
      status = runtime::writeChromeTraceFile(simulated->trace, options.trace);
    if (!status.ok()) {
      errorLine() << "parplan compile: error: "
                  << (options.trace.empty() ? "--report" : "--trace") << ": "
                  << status.error << "\n";
      return 1;
    }
    simulatedOn = std::move(cluster);
  }

  progress.finish();
  TimingScope summaryWriteTiming = timingRoot.nest("Summary");
  llvm::json::Array perProgram;
  // The arena, and beside it what a schedule keeps aside of the in-flight
  // micro-batches' activations (runtime::keptActivationBytes, the
  // executor's rule), on the device that needs most of both.
  int64_t peak = 0, peakKept = 0;
  double comm = 0;
  SmallVector<plan::ProgramOp> programs(module->getOps<plan::ProgramOp>());
  int64_t devices = 0;
  SymbolTableCollection symbols;
  std::map<int64_t, const plan::Program *> exportedByDevice;
  for (const plan::Program &program : exported->programs())
    exportedByDevice[program.devices(0)] = &program;
  for (plan::ProgramOp program : programs) {
    DeviceFigures figures = deviceFigures(program, microBatches, symbols);
    int64_t kept = runtime::keptActivationBytes(
        *exported, *exportedByDevice.at(program.getDevices().front()));
    if (figures.peakMemoryBytes + kept > peak + peakKept) {
      peak = figures.peakMemoryBytes;
      peakKept = kept;
    }
    comm = std::max(comm, figures.commBytes);
    devices += static_cast<int64_t>(program.getDevices().size());
    llvm::json::Array members;
    for (int64_t device : program.getDevices())
      members.push_back(device);
    perProgram.push_back(
        llvm::json::Object{{"devices", std::move(members)},
                           {"peak_memory_bytes", figures.peakMemoryBytes},
                           {"kept_activation_bytes", kept},
                           {"live_memory_bytes", figures.liveMemoryBytes},
                           {"comm_bytes", figures.commBytes},
                           {"flops", flops}});
  }
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  llvm::json::Array meshJson;
  for (int64_t extent : meshShape)
    meshJson.push_back(extent);
  // The order the stages run their micro-batches in; none without both.
  std::string scheduleName;
  if (auto schedule = (*module)->getAttrOfType<StringAttr>("plan.schedule"))
    scheduleName = schedule.str();
  // The search's trials: each shape's predicted step, or why it failed.
  // A phase's trial is chosen when it matches the chosen shape in what the
  // phase searched and the phases before it: a stage count keeps its
  // count whatever the micro-batches the next phase chose.
  enum class Phase { StageCounts, MicroBatches, Schedules };
  auto isChosen = [&](const PipelineTrial &trial, Phase phase) {
    const PipelineTrial &chosen = searched->chosen;
    return trial.stages == chosen.stages &&
           (phase == Phase::StageCounts ||
            trial.microBatches == chosen.microBatches) &&
           (phase != Phase::Schedules || trial.schedule == chosen.schedule);
  };
  auto trialsJson = [&](const std::vector<PipelineTrial> &trials, Phase phase) {
    llvm::json::Array entries;
    for (const PipelineTrial &trial : trials) {
      llvm::json::Object entry{{"stages", trial.stages},
                               {"micro_batches", trial.microBatches},
                               {"schedule", trial.schedule},
                               {"chosen", isChosen(trial, phase)},
                               {"searched", trial.searched}};
      if (trial.step)
        entry["predicted_step_time_s"] = *trial.step;
      else
        entry["error"] = trial.why;
      entries.push_back(std::move(entry));
    }
    return entries;
  };
  // "1 24.68 s, 2 13.99 s (chosen), 4 no fit": each trial by `label`; a
  // schedule priced on the chosen layouts' stage costs, not searched, says
  // "(timeline only)".
  auto trialsLine =
      [&](const std::vector<PipelineTrial> &trials, Phase phase,
          function_ref<std::string(const PipelineTrial &)> label) {
        std::string line;
        for (const PipelineTrial &trial : trials)
          line +=
              fmt::format("{}{} {}{}", line.empty() ? "" : ", ", label(trial),
                          trial.step           ? formatSeconds(*trial.step)
                          : isNoFit(trial.why) ? std::string("no fit")
                                               : std::string("cannot"),
                          isChosen(trial, phase) ? " (chosen)"
                          : trial.searched       ? ""
                                                 : " (timeline only)");
        return line;
      };
  std::vector<PipelineTrial> none;
  const PipelineSearchResult *search = searched ? &*searched : nullptr;
  const std::vector<PipelineTrial> &stageCounts =
      search ? search->stageCounts : none;
  const std::vector<PipelineTrial> &microBatchCounts =
      search ? search->microBatchCounts : none;
  const std::vector<PipelineTrial> &scheduleTrials =
      search ? search->schedules : none;
  llvm::json::Object summary{
      {"model", options.input},
      {"cluster", options.layout.cluster},
      {"strategy", options.layout.strategy},
      {"start", start},
      {"baselines", std::move(baselinesJson)},
      {"devices", devices},
      {"mesh", std::move(meshJson)},
      {"predicted_step_time_s", seconds("step_time")},
      {"predicted_compute_time_s", seconds("compute_time")},
      {"predicted_communication_time_s", seconds("communication_time")},
      {"estimated_memory_bytes_per_device", estimatedMemory},
      {"compile_time_s", compileSeconds},
      {"micro_batches", microBatches},
      {"schedule", scheduleName.empty() ? llvm::json::Value(nullptr)
                                        : llvm::json::Value(scheduleName)},
      {"chunks", scheduleName == "interleaved" ? pipeline.chunks : 1},
      {"recompute", pipeline.recompute},
      {"recomputed_layers", llvm::json::Array(recomputedLayers)},
      {"stages", std::move(stagesJson)},
      {"stage_counts", trialsJson(stageCounts, Phase::StageCounts)},
      {"micro_batch_counts", trialsJson(microBatchCounts, Phase::MicroBatches)},
      {"schedules", trialsJson(scheduleTrials, Phase::Schedules)},
      {"programs", std::move(perProgram)},
      {"ops", std::move(ops)}};
  if (simulated)
    summary["simulated_step_time_s"] = simulated->stepSeconds;
  if (!writeFile(summaryPath.str().str(), [&](llvm::raw_ostream &out) {
        out << llvm::formatv("{0:2}", llvm::json::Value(std::move(summary)))
            << "\n";
      }))
    return 1;
  summaryWriteTiming.stop();

  std::string meshText = "mesh " + cost::formatMeshShape(meshShape);
  if (stageLines.size() > 1)
    meshText = fmt::format("{} stages of {}", stageLines.size(), meshText);
  fmt::print("compiled {} for {} devices ({}, {}, {}) in {}: {} ({} "
             "program{})\n",
             options.input, devices, meshText, options.layout.cluster,
             options.layout.strategy, formatSeconds(compileSeconds),
             planPath.str().str(), programs.size(),
             programs.size() == 1 ? "" : "s");
  // On stages, compute and communication add up every stage's; the step
  // is the schedule's timeline, where stages overlap.
  fmt::print("  predicted step   {} ({}compute {}, communication {})\n",
             formatSeconds(seconds("step_time")),
             stageLines.empty() ? "" : "summed over stages: ",
             formatSeconds(seconds("compute_time")),
             formatSeconds(seconds("communication_time")));
  if (simulated)
    fmt::print("  simulated step   {} ({:+.1f}% of the prediction; "
               "`parplan simulate` says why){}\n",
               formatSeconds(simulated->stepSeconds),
               seconds("step_time") > 0
                   ? 100 * (simulated->stepSeconds - seconds("step_time")) /
                         seconds("step_time")
                   : 0.0,
               options.trace.empty() ? "" : ", timeline in " + options.trace);
  if (starts.size() > 1) {
    // What the search bought: each start planned alone, the chosen first.
    std::string line;
    for (const auto &[step, name] : starts)
      line += fmt::format("{}{} {}{}", line.empty() ? "" : ", ",
                          name == "auto" ? "search" : name, formatSeconds(step),
                          name == start ? " (chosen)" : "");
    fmt::print("  starts           {}\n", line);
  }
  if (!stageCounts.empty())
    fmt::print("  stage counts     {}\n",
               trialsLine(stageCounts, Phase::StageCounts,
                          [&](const PipelineTrial &trial) {
                            // A count's best schedule, where searched.
                            bool other = autoSchedule && trial.stages > 1 &&
                                         trial.schedule != "1f1b";
                            return std::to_string(trial.stages) +
                                   (other ? " by " + trial.schedule : "");
                          }));
  for (size_t s = 0; s < stageLines.size(); ++s)
    fmt::print("  {}{}\n", s == 0 ? "stages           " : "                 ",
               stageLines[s]);
  if (microBatches > 1)
    fmt::print("  micro-batches    {} of {} (batch {}), gradients summed "
               "before one update{}\n",
               microBatches, options.batch / microBatches, options.batch,
               scheduleName.empty() ? ""
               : scheduleName == "interleaved"
                   ? fmt::format(", stages run them by interleaved ({} "
                                 "chunks a stage)",
                                 static_cast<int64_t>(pipeline.chunks))
                   : ", stages run them by " + scheduleName);
  if (!microBatchCounts.empty())
    fmt::print("                   tried {}\n",
               trialsLine(microBatchCounts, Phase::MicroBatches,
                          [](const PipelineTrial &trial) {
                            return std::to_string(trial.microBatches);
                          }));
  if (!scheduleTrials.empty())
    fmt::print(
        "  schedules        {}\n",
        trialsLine(scheduleTrials, Phase::Schedules,
                   [](const PipelineTrial &trial) { return trial.schedule; }));
  if (pipeline.recompute != "none") {
    std::string line = pipeline.recompute;
    if (!recomputedLayers.empty())
      line += ", " + describeLayers(recomputedLayers, layersInAll);
    if (!withoutRecompute.empty())
      line += " (without recomputation " + withoutRecompute + ")";
    fmt::print("  recompute        {}\n", line);
  }
  fmt::print("  per device       peak memory {} planned{} ({} estimated), "
             "communication {} per step, {}\n",
             formatBytes(peak),
             peakKept > 0
                 ? fmt::format(" + {} of in-flight activations kept aside",
                               formatBytes(peakKept))
                 : std::string(),
             formatBytes(estimatedMemory),
             formatBytes(static_cast<int64_t>(comm)), formatFlops(flops));
  // The cost model chose a plan that fits; the arena plan-memory laid out
  // may still not (a difference between the two is a bug to report).
  if (peak + peakKept > deviceMemory)
    fmt::print(stderr,
               "parplan compile: warning: the planned peak memory {} per "
               "device exceeds the device's {} (the cost model estimated "
               "{}); the plan may not run\n",
               formatBytes(peak + peakKept), formatBytes(deviceMemory),
               formatBytes(estimatedMemory));
  if (!options.report.empty()) {
    simulate::ReportInput report;
    report.title = options.input + " on " + options.layout.cluster;
    report.plan = exported;
    report.cluster = &*simulatedOn;
    report.simulation = &*simulated;
    report.layouts = parameterLayouts;
    report.facts = {{"model", options.input},
                    {"devices", fmt::format("{} ({}, {})", devices, meshText,
                                            options.layout.cluster)},
                    {"strategy", options.layout.strategy},
                    {"predicted step", formatSeconds(seconds("step_time"))},
                    {"simulated step", formatSeconds(simulated->stepSeconds)}};
    if (microBatches > 1)
      report.facts.push_back(
          {"micro-batches",
           fmt::format("{} of {}{}", microBatches, options.batch / microBatches,
                       scheduleName.empty() ? "" : " by " + scheduleName)});
    report.facts.push_back(
        {"peak memory per device",
         fmt::format("{} planned{} ({} estimated)", formatBytes(peak),
                     peakKept > 0 ? " + " + formatBytes(peakKept) +
                                        " of activations kept aside"
                                  : std::string(),
                     formatBytes(estimatedMemory))});
    if (!writeFile(options.report, [&](llvm::raw_ostream &out) {
          std::ostringstream page;
          simulate::writeReport(report, page);
          out << page.str();
        }))
      return 1;
    fmt::print("  report           {}\n", options.report);
  }
  size_t shown = 0;
  for (const auto &[name, layout] : parameterLayouts) {
    if (shown++ == 12) {
      fmt::print("  ... {} more parameters in {}\n",
                 parameterLayouts.size() - 12, summaryPath.str().str());
      break;
    }
    fmt::print("  {:<16} {} {}\n", shown == 1 ? "parameters" : "", layout,
               name);
  }
  return 0;
}
