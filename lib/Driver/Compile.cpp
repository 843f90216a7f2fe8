//===- Compile.cpp - the compile driver: a model to a plan ----------------===//
//
// Every stage is a pass pipeline (Transforms/Passes.h); this file chains
// them and makes the decisions between them on typed results: the
// pipeline's shape (PipelineSearch.cpp), the recomputation that makes a
// step fit (#sbp.no_fit, the arena plan-memory laid out), and whether the
// plan fits its devices at all.
//
//===----------------------------------------------------------------------===//

#include "parplan/Driver/Compile.h"
#include "parplan/Cost/Presets.h"
#include "parplan/Driver/GnnPlacer.h"
#include "parplan/Driver/Placement.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Simulate/Simulator.h"
#include "parplan/Support/Text.h"
#include "parplan/Target/PlanExport.h"
#include "parplan/Transforms/Debug.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"
#include "parplan/Transforms/TrainingStep/DivideBatch.h"
#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/DebugStringHelper.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

using namespace mlir;
using namespace parplan;
namespace nn = parplan::nn;
namespace plan = parplan::plan;
namespace sbp = parplan::sbp;
using parplan::driver::CompileOptions;
using parplan::driver::CompileResult;
using parplan::driver::CompileStage;
using parplan::driver::NoFit;
using parplan::driver::PipelineSearchResult;
using parplan::driver::PlanFigures;

void parplan::driver::setPipelineOptions(CompilePipelineOptions &pipeline,
                                         const TrainingOptions &training,
                                         const LayoutOptions *layout) {
  pipeline.loss = training.loss;
  pipeline.output = training.outputIndex;
  pipeline.labels = training.labels;
  pipeline.optimizer = training.optimizer;
  pipeline.lr = training.lr;
  pipeline.weightDecay = training.weightDecay;
  pipeline.frozen = training.frozen;
  pipeline.recompute = training.recompute;
  pipeline.recomputeLayers = training.recomputeLayers;
  pipeline.mixedPrecision = training.mixedPrecision;
  pipeline.microBatches = training.microBatches;
  pipeline.gradientSums = training.gradientSums;
  pipeline.batchNorm = training.batchNorm;
  pipeline.dropout = training.dropout;
  pipeline.dropoutSeed = training.dropoutSeed;
  pipeline.untie = llvm::ArrayRef<std::string>(training.untie);
  if (!layout)
    return;
  pipeline.mesh = layout->mesh;
  pipeline.strategy = layout->strategy;
  pipeline.stages = layout->stages;
  pipeline.shares = layout->evenShares ? "even" : layout->shares;
  pipeline.cutInsideLayers = layout->stageCuts == "inside-layers";
}

std::optional<std::string>
parplan::driver::resolveMegatronGrid(ModuleOp module, LayoutOptions &layout) {
  if (layout.tensor == 0 && layout.pipeline == 0)
    return std::nullopt;
  if (layout.strategy != "megatron")
    return "--tensor and --pipeline are the grid of --strategy megatron, not "
           "of --strategy " +
           layout.strategy;
  if (!layout.mesh.empty() || layout.stages > 0 || layout.autoStages)
    return std::string("--tensor and --pipeline set the mesh and the stages; "
                       "leave out --mesh and --stages");
  std::string error;
  const cost::Cluster *cluster = clusterOf(module, error);
  if (!cluster)
    return error;
  int64_t devices = cluster->numDevices();
  // Tensor parallelism inside a node by default, as Megatron-LM runs it.
  int64_t tensor =
      layout.tensor ? layout.tensor : cost::defaultMeshShape(*cluster).back();
  int64_t pipeline = layout.pipeline ? layout.pipeline : 1;
  if (devices % tensor != 0)
    return llvm::formatv("--tensor {0} does not divide the {1} devices of "
                         "cluster '{2}'",
                         tensor, devices, cluster->name)
        .str();
  int64_t rows = devices / tensor;
  if (rows % pipeline != 0)
    return llvm::formatv("--pipeline {0} does not divide the {1} group{2} of "
                         "--tensor {3} devices of cluster '{4}'",
                         pipeline, rows, rows == 1 ? "" : "s", tensor,
                         cluster->name)
        .str();
  layout.mesh = llvm::formatv("{0}x{1}", rows, tensor).str();
  layout.stages = pipeline > 1 ? pipeline : 0;
  return std::nullopt;
}

sbp::MeshOp parplan::driver::layoutMesh(ModuleOp module) {
  if (auto mesh = module.lookupSymbol<sbp::MeshOp>("mesh"))
    if (!mesh.getDevices())
      return mesh;
  auto meshes = module.getOps<sbp::MeshOp>();
  return meshes.empty() ? sbp::MeshOp() : *meshes.begin();
}

namespace {

/// The bytes of the arena plan-memory laid out for `program`, if it has.
std::optional<int64_t> arenaBytes(plan::ProgramOp program) {
  if (auto arena =
          program->getAttrOfType<IntegerAttr>(parplan::kArenaBytesAttrName))
    return arena.getInt();
  return std::nullopt;
}

/// One device's arena (plan-memory) and peak of live bytes (every named
/// buffer for the whole step, temporaries from their creation to their last
/// use), and the bytes its collectives send (plan::bytesSent) in a step of
/// `microBatches`: those before plan.after_micro_batches once per
/// micro-batch.
parplan::driver::ProgramFigures programFigures(plan::ProgramOp program,
                                               int64_t microBatches,
                                               SymbolTableCollection &symbols) {
  parplan::driver::ProgramFigures figures;
  figures.devices.assign(program.getDevices().begin(),
                         program.getDevices().end());
  Block &body = program.getBody().front();
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;
  std::vector<int64_t> delta(index + 1, 0);
  int64_t always = 0;
  for (auto buffer : body.getOps<plan::BufferOp>()) {
    int64_t bytes = plan::bufferBytes(buffer.getType());
    if (buffer.getKind() != plan::BufferKind::temporary) {
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
  // Once before the micro-batches where the program has such a part,
  // once per micro-batch, once after them.
  double runs = body.getOps<plan::ForwardBeginOp>().empty()
                    ? static_cast<double>(microBatches)
                    : 1;
  for (Operation &op : body) {
    if (isa<plan::ForwardBeginOp>(op))
      runs = static_cast<double>(microBatches);
    if (isa<plan::AfterMicroBatchesOp>(op))
      runs = 1;
    figures.commBytes += runs * plan::bytesSent(&op, &symbols);
  }
  return figures;
}

/// The layers nn-autodiff recomputes (nn.training's recomputed_layers), in
/// forward order.
std::vector<std::string> recomputedLayersOf(ModuleOp module) {
  std::vector<std::string> layers;
  if (auto training =
          module->getAttrOfType<DictionaryAttr>(parplan::kTrainingAttrName))
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

/// sbp-assign's figures of a laid-out step (sbp.plan).
sbp::LayoutPlanAttr layoutPlan(ModuleOp module) {
  return module->getAttrOfType<sbp::LayoutPlanAttr>(
      parplan::kLayoutPlanAttrName);
}

/// How a try at building and laying out the step ended.
enum class Outcome { Fits, NoFit, Failed };

/// A laid-out step lowered on a copy, with the peak of the arena
/// plan-memory lays out and what the lowering said (said again if the
/// copy is kept, so that the plan kept is not lowered twice).
struct Lowered {
  OwningOpRef<ModuleOp> module;
  double peak = 0;
  std::vector<Diagnostic> said;
};

/// One compile: the options, the IR as it goes, and what was decided.
class Compiler {
public:
  Compiler(const parplan::driver::ModelImporter &importModel,
           const CompileOptions &options, MLIRContext &context,
           Location location, TimingScope &timing,
           std::vector<std::unique_ptr<PassManager>> &passManagers)
      : importModel(importModel), options(options), layout(options.layout),
        context(context), location(location), timing(timing),
        passManagers(passManagers) {}

  /// The plan, laid out and lowered, its memory not yet checked; then
  /// whether its arena fits, and the plan (checkMemory's error or warning
  /// where it does not).
  LogicalResult layOutAndLower();
  bool overMemory() const { return result.figures.overMemory(); }
  const parplan::driver::PlanFigures &figures() const { return result.figures; }
  /// A budget under which a layout whose estimate misses the arena by as
  /// much as this one's does would fit; none where it fits, or cannot.
  std::optional<double> budgetForMiss() const;
  FailureOr<CompileResult> finish();

private:
  InFlightDiagnostic error() { return emitError(location); }
  void stage(const std::string &what, double done) {
    if (options.onStage)
      options.onStage(what, done);
  }
  LogicalResult checkOptions();
  LogicalResult findFixedBatch();
  /// Attaches the cluster and the annotations of the options to `model`.
  LogicalResult attachInputs(ModuleOp model);
  OwningOpRef<ModuleOp> importAt(int64_t count);
  /// A copy of `imported`, imported first where the search went on from
  /// its laid-out step (null once the importer has said why not).
  OwningOpRef<ModuleOp> importedCopy();
  LogicalResult choosePipeline();
  LogicalResult searchShape();
  bool runStage(function_ref<void(OpPassManager &)> addPasses,
                ModuleOp target = {});
  Outcome buildAndLayOut(std::optional<NoFit> &noFit,
                         std::vector<Diagnostic> &said, bool quiet);
  std::optional<Lowered> lowerCopy(ModuleOp source);
  LogicalResult layOutWithFallback();
  /// Why the pipeline search's chosen shape recomputes: its stage count
  /// without recomputation fit on no plan, or only by slower layouts.
  std::string searchedWithoutRecompute() const;
  void recomputeFewerLayers(double neededWithout);
  void readLayoutFigures();
  LogicalResult lowerAndExport();
  LogicalResult checkMemory();

  const parplan::driver::ModelImporter &importModel;
  const CompileOptions &options;
  parplan::driver::LayoutOptions layout;
  MLIRContext &context;
  Location location;
  TimingScope &timing;
  std::vector<std::unique_ptr<PassManager>> &passManagers;

  parplan::CompilePipelineOptions pipeline;
  /// The cluster and the annotations every model is given, once read.
  sbp::ClusterAttr cluster;
  Attribute annotations;
  OwningOpRef<ModuleOp> module;
  int64_t microBatches = 1;
  /// The global batch the micro-batches divide: --batch, or the model's
  /// own when it is fixed there (fixedBatch); 0 when neither.
  int64_t batch = 0;
  bool fixedBatch = false;
  /// The model as imported while its batch was looked for, until taken.
  OwningOpRef<ModuleOp> wholeBatch;
  /// The batch cannot be followed: no micro-batches, asked or searched.
  bool noMicroBatches = false;
  int64_t annotatedStages = 0;
  bool autoMicroBatches = false, autoSchedule = false;
  /// The step the search laid out for the chosen shape, for the compile to
  /// go on from.
  OwningOpRef<ModuleOp> laidOut;
  /// The recomputation fallback: whether it is on, the model as imported
  /// for each level, and the step lowered already when the fallback judged
  /// it by its arena.
  bool fallback = false;
  OwningOpRef<ModuleOp> imported;
  std::optional<Lowered> lowered;
  CompileResult result;
};

LogicalResult Compiler::checkOptions() {
  const parplan::driver::TrainingOptions &training = options.training;
  if (!options.inference && training.optimizer == "none")
    return error() << "--optimizer none returns gradients; a plan needs an "
                      "optimizer to update with";
  int64_t count = training.microBatches;
  // The schedules lower-to-plan writes and parplan-run runs.
  if (options.schedule != "auto" &&
      !llvm::is_contained(parplan::runtime::executorSchedules(),
                          options.schedule))
    return error() << "--schedule " << options.schedule << " is unknown; use "
                   << parplan::runtime::executorScheduleList() << " or auto";
  if (count < 1 || (options.batch > 0 && options.batch % count != 0))
    return error() << "--micro-batches " << count << " does not divide --batch "
                   << options.batch;
  return success();
}

// Without --batch, a model whose inputs share a fixed leading dimension has
// its batch there: it is micro-batched by dividing that batch
// (nn-divide-batch), where it can be followed through the program.
LogicalResult Compiler::findFixedBatch() {
  if (batch > 0)
    return success();
  int64_t count = options.training.microBatches;
  bool asked = count > 1 || options.autoMicroBatches;
  auto needsBatch = [&]() {
    return error() << "--micro-batches "
                   << (options.autoMicroBatches ? std::string("auto")
                                                : std::to_string(count))
                   << " needs --batch, the global batch that each "
                      "micro-batch takes "
                   << (options.autoMicroBatches ? std::string("a part")
                                                : "1/" + std::to_string(count))
                   << " of";
  };
  // A model whose batch is symbolic does not import without --batch (nn
  // inputs are static): an imported model's batch is fixed, or none.
  wholeBatch = importModel(1);
  if (!wholeBatch)
    return asked ? needsBatch() : failure();
  ModuleOp model = *wholeBatch;
  std::optional<Diagnostic> why;
  FailureOr<BatchDimensions> found;
  {
    ScopedDiagnosticHandler keep(&context, [&](Diagnostic &diagnostic) {
      if (!why)
        why = std::move(diagnostic);
      return success();
    });
    found = followBatch(model);
  }
  if (succeeded(found)) {
    batch = found->batch;
    fixedBatch = true;
    if (batch % count != 0)
      return error() << "--micro-batches " << count
                     << " does not divide the model's batch " << batch;
    PARPLAN_DEBUG(kPipelineSearchDebugType,
                  debugLine(kPipelineSearchDebugType)
                      << "the batch is fixed in the model at " << batch
                      << " rows; micro-batches divide it\n");
    return success();
  }
  // Micro-batches asked for on a batch that cannot be followed: said in
  // one line, and the compile goes on without them.
  if (asked) {
    // The message names the input or node; the model's file says where.
    emitWarning(location) << (why ? why->str()
                                  : std::string("the batch cannot be followed"))
                          << "; compiling without micro-batches";
    microBatches = 1;
    noMicroBatches = true;
  }
  return success();
}

LogicalResult Compiler::attachInputs(ModuleOp model) {
  // The cluster and the annotations are read once, for the first model,
  // and attached as they are to the others.
  if (layout.placedCluster) {
    if (!cluster)
      cluster = sbp::ClusterAttr::get(&context, *layout.placedCluster);
    model->setAttr(kClusterAttrName, cluster);
  } else if (!layout.cluster.empty()) {
    std::string why;
    if (!cluster)
      cluster = sbp::ClusterAttr::resolve(&context, layout.cluster, why);
    if (!cluster)
      return error() << why;
    model->setAttr(kClusterAttrName, cluster);
  } else if (!clusterAttrOf(model)) {
    return error() << kMissingClusterMessage;
  }
  if (layout.annotations.empty())
    return success();
  if (!annotations) {
    std::string why;
    if (!attachAnnotations(model, layout.annotations, why))
      return error() << why;
    annotations = model->getAttr(kAnnotationsAttrName);
  }
  model->setAttr(kAnnotationsAttrName, annotations);
  return success();
}

OwningOpRef<ModuleOp> Compiler::importAt(int64_t count) {
  // Without --batch every import is the model as it is: the first, read to
  // find its batch, is not read again.
  OwningOpRef<ModuleOp> model =
      wholeBatch ? std::move(wholeBatch) : importModel(fixedBatch ? 1 : count);
  if (!model || failed(attachInputs(*model)))
    return nullptr;
  if (count <= 1)
    return model;
  if (fixedBatch)
    return succeeded(divideBatch(*model, count)) ? std::move(model) : nullptr;
  // The executor slices every input along dimension 0: each must be the
  // batch, bound to the micro-batch (an input whose dimension 0 is fixed or
  // named otherwise does not take --batch).
  int64_t rows = batch / count;
  WalkResult walk = model->walk([&](nn::InputOp input) {
    ArrayRef<int64_t> shape = input.getType().getShape();
    if (!shape.empty() && shape.front() == rows)
      return WalkResult::advance();
    error() << "input '" << input.getName() << "' has "
            << (shape.empty()
                    ? std::string("no dimension 0")
                    : std::to_string(shape.front()) + " rows at dimension 0")
            << ", not the micro-batch's " << rows
            << ": --micro-batches slices every input along dimension 0, "
               "which must be the symbolic dimension 'batch'";
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return nullptr;
  return model;
}

OwningOpRef<ModuleOp> Compiler::importedCopy() {
  if (!imported)
    imported = importAt(microBatches);
  return imported ? imported->clone() : nullptr;
}

LogicalResult Compiler::choosePipeline() {
  std::string why;
  std::optional<Annotations> annotations = carriedAnnotations(*module, why);
  annotatedStages =
      annotations ? static_cast<int64_t>(annotations->stages.size()) : 0;
  if (layout.autoStages && annotatedStages > 0)
    return error() << "--stages auto: the annotations place stages too ("
                   << annotations->stages.front().location
                   << "); give one of the two";
  // strategy auto (the default) pipelines a mesh spanning several nodes:
  // without stages given or in the annotations, the stage count is
  // searched. A mesh within one node, whose links are its fastest, stays
  // one mesh, and a stage count of 1 keeps one mesh anywhere.
  if (!options.stagesGiven && annotatedStages == 0 &&
      layout.strategy == "auto" && layout.stages == 0) {
    auto found = parplan::driver::clusterAndMesh(*module, layout.mesh, why);
    if (!found)
      return error() << why;
    const cost::Cluster &cluster = *found->first;
    const std::vector<int64_t> &meshShape = found->second;
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
  autoMicroBatches =
      !noMicroBatches && (options.autoMicroBatches ||
                          (staged && !options.microBatchesGiven && batch > 0));
  autoSchedule =
      options.schedule == "auto" || (staged && !options.scheduleGiven);
  result.scheduleSearched = autoSchedule;
  if (options.chunksGiven && options.schedule != "interleaved" &&
      options.schedule != "auto" && options.scheduleGiven)
    return error() << "--chunks " << options.chunks
                   << " cuts stages for --schedule interleaved, not "
                      "--schedule "
                   << options.schedule;
  // Interleaved cuts each of the stages placed evenly into chunks: the
  // annotations' stages hold one each.
  if (options.schedule == "interleaved" &&
      !(layout.autoStages || layout.stages > 1))
    return error() << "--schedule interleaved cuts the stages --stages "
                      "places into model chunks; "
                   << (annotatedStages > 0
                           ? "the annotations' stages hold one each"
                           : "give --stages N");
  // The search prices the schedule lowering writes.
  pipeline.schedule =
      autoSchedule ? schedule::kDefaultPipelineScheduleName : options.schedule;
  pipeline.chunks = pipeline.schedule == "interleaved" ? options.chunks : 1;
  if (layout.autoStages ||
      (givenStages > 1 &&
       (autoMicroBatches || (autoSchedule && microBatches > 1))))
    return searchShape();
  return success();
}

LogicalResult Compiler::searchShape() {
  parplan::driver::PipelineChoice choice;
  choice.autoStages = layout.autoStages;
  choice.autoMicroBatches = autoMicroBatches;
  choice.autoSchedule = autoSchedule;
  choice.autoCuts = layout.stageCuts == "auto";
  choice.stages = layout.stages;
  choice.annotatedStages = annotatedStages;
  choice.microBatches = microBatches;
  choice.schedule = pipeline.schedule;
  choice.chunks = options.chunks;
  choice.model = *module;
  choice.batch = batch;
  // An inference step keeps no activations to recompute.
  choice.autoRecompute = !options.inference && !options.recomputeGiven &&
                         options.emit != CompileStage::TrainingStep &&
                         options.stopAfter != CompileStage::TrainingStep;
  int64_t trials = 0;
  choice.onTrial = [&](const std::string &shape) {
    ++trials;
    stage("pipeline search, trial " + std::to_string(trials) + ": " + shape,
          0.05 + 0.6 * static_cast<double>(trials) /
                     (static_cast<double>(trials) + 4));
  };
  TimingScope searchTiming = timing.nest("PipelineSearch");
  std::string why;
  parplan::driver::ModelImporter imports = [&](int64_t count) {
    return importAt(count);
  };
  std::optional<PipelineSearchResult> searched =
      parplan::driver::searchPipeline(imports, pipeline, choice, why,
                                      searchTiming, passManagers);
  searchTiming.stop();
  if (options.onStageEnd)
    options.onStageEnd();
  if (!searched) {
    if (!why.empty())
      error() << why;
    return failure();
  }
  const parplan::driver::PipelineTrial &chosen = searched->chosen;
  if (layout.autoStages)
    pipeline.stages = chosen.stages > 1 ? chosen.stages : 0;
  pipeline.schedule = chosen.schedule;
  pipeline.chunks = chosen.schedule == "interleaved" ? options.chunks : 1;
  if (!chosen.recompute.empty())
    pipeline.recompute = chosen.recompute;
  pipeline.cutInsideLayers = chosen.cutInsideLayers;
  bool otherCount = chosen.microBatches != microBatches;
  microBatches = chosen.microBatches;
  pipeline.microBatches = microBatches;
  // The training step to print is built again.
  if (options.stopAfter != CompileStage::TrainingStep &&
      options.emit != CompileStage::TrainingStep)
    laidOut = std::move(searched->laidOut);
  // The model at the chosen count: the compile goes on from the search's
  // laid-out step, and the recomputation fallback imports it again only
  // when it lays the model out again (importedCopy).
  if (otherCount) {
    module = nullptr;
    if (!laidOut && !(module = importAt(microBatches)))
      return failure();
  }
  result.search = std::move(searched);
  return success();
}

// The IR is verified once a stage has run, not after each pass: verifying a
// plan of 1,024 programs takes seconds (parplan-opt, which the pass tests
// run, still verifies after every pass).
bool Compiler::runStage(function_ref<void(OpPassManager &)> addPasses,
                        ModuleOp target) {
  passManagers.push_back(std::make_unique<PassManager>(&context));
  PassManager &passes = *passManagers.back();
  passes.enableTiming(timing);
  passes.enableVerifier(false);
  addPasses(passes);
  ModuleOp ran = target ? target : *module;
  if (failed(passes.run(ran)))
    return false;
  TimingScope verifyTiming = timing.nest("Verify");
  return succeeded(verify(ran));
}

// The training step and the layouts on `module`. Under the fallback, the
// errors are kept in `said`, not printed: a step that fits nowhere
// (#sbp.no_fit, kept in `noFit`) may fit with recomputation, and any other
// error is said again by the caller. With `quiet`, warnings are kept too:
// a try that may fail without failing the compile.
Outcome Compiler::buildAndLayOut(std::optional<NoFit> &noFit,
                                 std::vector<Diagnostic> &said, bool quiet) {
  std::optional<ScopedDiagnosticHandler> keep;
  if (fallback)
    keep.emplace(&context, [&, quiet](Diagnostic &diagnostic) {
      if (quiet && diagnostic.getSeverity() != DiagnosticSeverity::Error)
        return success();
      if (diagnostic.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      said.push_back(std::move(diagnostic));
      return success();
    });
  auto laidOutOutcome = [&](bool fits) {
    if (fits)
      return Outcome::Fits;
    noFit = parplan::driver::noFitOf(*module);
    return noFit ? Outcome::NoFit : Outcome::Failed;
  };
  if (laidOut) {
    module = std::move(laidOut);
    stage("placing moves and boxings", 0.7);
    return laidOutOutcome(runStage(
        [&](OpPassManager &pm) { addLayoutBoxingPasses(pm, pipeline); }));
  }
  if (!runStage([&](OpPassManager &pm) { addStepPasses(pm, pipeline); }))
    return Outcome::Failed;
  if (options.emit == CompileStage::TrainingStep && options.emitIR)
    options.emitIR(*module);
  if (options.stopAfter == CompileStage::TrainingStep)
    return Outcome::Fits;
  stage("laying out the training step", 0.3);
  return laidOutOutcome(
      runStage([&](OpPassManager &pm) { addLayoutPasses(pm, pipeline); }));
}

// The cost model's memory leaves out what lives only for a moment in the
// backward pass (an activation, its gradient and its input's at once), so
// the fallback judges every plan by its arena as well.
std::optional<Lowered> Compiler::lowerCopy(ModuleOp source) {
  Lowered copy;
  copy.module = source.clone();
  ScopedDiagnosticHandler keep(&context, [&](Diagnostic &diagnostic) {
    copy.said.push_back(std::move(diagnostic));
    return success();
  });
  stage("lowering to per-device programs", 0.75);
  if (!runStage(
          [&](OpPassManager &pm) { addLoweringPasses(pm, pipeline.schedule); },
          *copy.module))
    return std::nullopt;
  SymbolTableCollection symbols;
  for (plan::ProgramOp program : copy.module->getOps<plan::ProgramOp>()) {
    std::optional<int64_t> peak = arenaBytes(program);
    if (!peak)
      peak = programFigures(program, 1, symbols).peakMemoryBytes;
    copy.peak = std::max(copy.peak, static_cast<double>(*peak));
  }
  return copy;
}

std::string Compiler::searchedWithoutRecompute() const {
  const char *unfit = "the chosen stage count does not fit";
  if (!result.search)
    return unfit;
  const parplan::driver::PipelineTrial &chosen = result.search->chosen;
  for (const parplan::driver::PipelineTrial &trial : result.search->stageCounts)
    if (trial.stages == chosen.stages && trial.withoutRecompute)
      return llvm::formatv(
          "the chosen stage count fits only by layouts {0}% slower than its "
          "fastest, a step of {1} at {2} micro-batches",
          static_cast<int64_t>(
              std::lround(100 * trial.withoutRecompute->memorySlowdown)),
          parplan::formatSeconds(trial.withoutRecompute->step),
          trial.microBatches);
  return unfit;
}

// Without a recomputation given, a step that fits on no plan is built again
// with selective, then full recomputation of activations before the compile
// gives up; the stages run on a copy of the imported model each time. A
// step that fits only by layouts slower than its fastest by more than the
// next level would cost (driver::worthRecomputing) is built again with it
// too, and the faster kept. When full recomputation fits, recomputing only
// as many layers as the memory lacking without recomputation calls for is
// tried as well, and the faster plan kept. A pipeline search that chose a
// shape with recomputation (one that fits only so, or faster so) starts
// from its level.
LogicalResult Compiler::layOutWithFallback() {
  fallback = !options.inference && !options.recomputeGiven &&
             options.emit != CompileStage::TrainingStep &&
             options.stopAfter != CompileStage::TrainingStep;
  std::vector<std::string> levels = {pipeline.recompute};
  size_t first = 0;
  if (fallback) {
    levels = {"none", "selective", "full"};
    first = static_cast<size_t>(llvm::find(levels, pipeline.recompute) -
                                levels.begin());
    if (first == levels.size())
      first = 0;
    else if (first > 0)
      result.figures.withoutRecompute = searchedWithoutRecompute();
    if (module)
      imported = module->clone();
  }
  std::optional<double> neededWithout;
  // The last level whose estimate fit and whose arena did not: the plan
  // the compile keeps (and says does not fit) when no later level fits.
  OwningOpRef<ModuleOp> overArena;
  std::string overArenaLevel;
  // A plan that fits by slow layouts, while the next level is tried: its
  // level and its lowered copy.
  OwningOpRef<ModuleOp> slowFit;
  std::string slowFitLevel;
  std::optional<Lowered> slowFitLowered;
  auto keepSlowFit = [&] {
    module = std::move(slowFit);
    pipeline.recompute = slowFitLevel;
    lowered = std::move(slowFitLowered);
  };
  for (size_t level = first; level < levels.size(); ++level) {
    bool last = level + 1 == levels.size();
    pipeline.recompute = levels[level];
    if (level > first && !(module = importedCopy()))
      return failure();
    std::optional<NoFit> noFit;
    std::vector<Diagnostic> said;
    Outcome outcome = buildAndLayOut(noFit, said, /*quiet=*/false);
    PARPLAN_DEBUG(kRecomputeDebugType, {
      raw_ostream &line = debugLine(kRecomputeDebugType);
      line << "recompute " << levels[level] << ": ";
      if (outcome == Outcome::Fits)
        line << "fits the cost model's estimate, step "
             << layoutPlan(*module).getStepTime() << " s\n";
      else if (outcome == Outcome::NoFit && noFit)
        line << "no fit ("
             << parplan::groupThousands(
                    static_cast<uint64_t>(noFit->neededBytes))
             << " bytes per device of "
             << parplan::groupThousands(
                    static_cast<uint64_t>(noFit->deviceBytes))
             << ")\n";
      else
        line << "failed\n";
    });
    // Without the fallback, sbp-assign's no-fit error has been said as is.
    if (outcome == Outcome::Failed ||
        (outcome == Outcome::NoFit && !fallback)) {
      for (Diagnostic &diagnostic : said)
        context.getDiagEngine().emit(std::move(diagnostic));
      return failure();
    }
    if (outcome == Outcome::Fits) {
      if (slowFit && layoutPlan(slowFit.get()).getStepTime() <=
                         layoutPlan(*module).getStepTime()) {
        keepSlowFit();
        break;
      }
      if (!fallback || last)
        break;
      lowered = lowerCopy(*module);
      double capacity =
          static_cast<double>(layoutPlan(*module).getDeviceMemoryBytes());
      bool arenaFits = !lowered || lowered->peak <= capacity;
      double slowdown = layoutPlan(*module).getMemorySlowdown();
      bool slow = arenaFits && parplan::driver::worthRecomputing(
                                   slowdown, levels[level + 1]);
      PARPLAN_DEBUG(kRecomputeDebugType, {
        raw_ostream &line = debugLine(kRecomputeDebugType);
        line << "recompute " << levels[level] << ": arena peak "
             << groupThousands(lowered ? static_cast<int64_t>(lowered->peak)
                                       : 0)
             << " bytes per device of "
             << groupThousands(static_cast<int64_t>(capacity));
        if (slow)
          line << ", by layouts " << std::lround(100 * slowdown)
               << "% slower than the fastest: the next level is tried too\n";
        else
          line << (arenaFits ? ", kept\n"
                             : ", over: the next level is tried\n");
      });
      if (slow) {
        if (level == 0)
          result.figures.withoutRecompute = llvm::formatv(
              "the layouts that fit are {0}% slower than the fastest, a step "
              "of {1}",
              static_cast<int64_t>(std::lround(100 * slowdown)),
              parplan::formatSeconds(layoutPlan(*module).getStepTime()));
        slowFit = std::move(module);
        slowFitLevel = levels[level];
        slowFitLowered = std::move(lowered);
        lowered.reset();
        continue;
      }
      if (arenaFits)
        break;
      if (slowFit) {
        keepSlowFit();
        break;
      }
      // The estimate fits; the arena does not: the next level is tried.
      if (level == 0)
        result.figures.withoutRecompute = llvm::formatv(
            "the planned peak memory {0} per device exceeds the device's {1} "
            "(the cost model estimated {2})",
            parplan::formatBytes(static_cast<int64_t>(lowered->peak)),
            parplan::formatBytes(static_cast<int64_t>(capacity)),
            parplan::formatBytes(layoutPlan(*module).getMemoryBytes()));
      lowered.reset();
      overArena = std::move(module);
      overArenaLevel = levels[level];
      continue;
    }
    if (slowFit) {
      keepSlowFit();
      break;
    }
    // No plan fits: what sbp-assign said of it is the reason to give.
    std::string reason =
        said.empty() ? "no plan fits in memory" : said.front().str();
    if (level == 0) {
      result.figures.withoutRecompute = reason;
      neededWithout = noFit->neededBytes;
    }
    if (last && overArena) {
      module = std::move(overArena);
      pipeline.recompute = overArenaLevel;
      break;
    }
    if (last) {
      emitError(said.empty() ? location : said.front().getLocation())
          << reason << " (even with full recomputation of activations)";
      return failure();
    }
  }
  if (options.stopAfter == CompileStage::TrainingStep)
    return success();
  result.figures.recomputedLayers = recomputedLayersOf(*module);
  result.figures.layersInAll = result.figures.recomputedLayers.size();
  if (fallback && pipeline.recompute == "full" && neededWithout)
    recomputeFewerLayers(*neededWithout);
  return success();
}

// Memory falls about linearly with the layers recomputed: from what the
// smallest plan needed without recomputation to what the plan with every
// layer recomputed takes. The device is taken as smaller by what that
// plan's arena exceeds its estimate.
void Compiler::recomputeFewerLayers(double neededWithout) {
  double capacity =
      static_cast<double>(layoutPlan(*module).getDeviceMemoryBytes());
  double withAll = static_cast<double>(layoutPlan(*module).getMemoryBytes());
  int64_t perClass = largestLayerClass(result.figures.recomputedLayers);
  auto layersFor = [&](double target) {
    double share = (neededWithout - target) / (neededWithout - withAll);
    // A hair below a whole count is that count, not one more.
    return static_cast<int64_t>(
        std::ceil(share * static_cast<double>(perClass) - 1e-9));
  };
  // The device taken as smaller only raises the count: no lowering when
  // even the whole device calls for every layer.
  if (!(neededWithout > withAll && perClass > 1 &&
        layersFor(capacity) < perClass))
    return;
  lowered = lowerCopy(*module);
  double plannedAll = lowered ? lowered->peak : withAll;
  int64_t count = layersFor(capacity - std::max(0.0, plannedAll - withAll));
  OwningOpRef<ModuleOp> allLayers = std::move(module);
  // The line is a guess: a count whose plan does not fit (its estimate or
  // its arena), or fits only by layouts slower than every layer's, is
  // tried again with a layer more, a few times (a layer more leaves the
  // layouts more room).
  constexpr int64_t kCountsTried = 3;
  std::optional<Lowered> fewer;
  for (int64_t tried = 0;
       tried < kCountsTried && count >= 1 && count < perClass && !fewer;
       ++tried, ++count) {
    if (!(module = importedCopy()))
      break;
    pipeline.recomputeLayers = count;
    std::optional<NoFit> noFit;
    std::vector<Diagnostic> said;
    Outcome outcome = buildAndLayOut(noFit, said, /*quiet=*/true);
    bool faster =
        outcome == Outcome::Fits && layoutPlan(*module).getStepTime() <
                                        layoutPlan(*allLayers).getStepTime();
    if (faster)
      fewer = lowerCopy(*module);
    bool arenaFits = fewer && fewer->peak <= capacity;
    PARPLAN_DEBUG(
        kRecomputeDebugType,
        debugLine(kRecomputeDebugType)
            << "recompute " << count << " of " << perClass << " layers: "
            << (outcome != Outcome::Fits
                    ? std::string("no fit")
                    : "step " +
                          std::to_string(layoutPlan(*module).getStepTime()) +
                          " s against " +
                          std::to_string(layoutPlan(*allLayers).getStepTime()) +
                          " s with every layer")
            << (arenaFits                  ? ", kept\n"
                : fewer                    ? ", its arena does not fit\n"
                : outcome == Outcome::Fits ? ", slower\n"
                                           : "\n"));
    if (!arenaFits)
      fewer.reset();
  }
  if (fewer) {
    lowered = std::move(fewer);
  } else {
    module = std::move(allLayers);
    pipeline.recomputeLayers = -1;
  }
  result.figures.recomputedLayers = recomputedLayersOf(*module);
}

// What the search chose, read before lowering consumes it.
void Compiler::readLayoutFigures() {
  TimingScope summaryTiming = timing.nest("Summary");
  parplan::driver::PlanFigures &figures = result.figures;
  sbp::MeshOp mesh = parplan::driver::layoutMesh(*module);
  figures.meshShape.assign(mesh.getShape().begin(), mesh.getShape().end());
  sbp::LayoutPlanAttr planAttr = layoutPlan(*module);
  // Per stage mesh, the search's predicted figures (sbp.plan's stages).
  llvm::StringMap<sbp::StageFiguresAttr> stageFigures;
  for (sbp::StageFiguresAttr entry : planAttr.getStageFigures())
    stageFigures[entry.getMesh().getValue()] = entry;
  std::string noCluster;
  const cost::Cluster *machines = clusterOf(*module, noCluster);
  parplan::MeshShares meshShares = mesh.getMeshShares();
  for (size_t axis = 0; axis < meshShares.size(); ++axis) {
    if (!hasUnevenShares(meshShares, axis))
      continue;
    parplan::driver::PlanFigures::MeshShares &shares = figures.shares.emplace();
    shares.axis = static_cast<int64_t>(axis);
    shares.weights = meshShares[axis];
    for (int64_t i = 0; i < figures.meshShape[axis]; ++i) {
      std::vector<int64_t> coordinate(figures.meshShape.size(), 0);
      coordinate[axis] = i;
      int64_t device =
          mesh.getDeviceId(meshLinearIndex(figures.meshShape, coordinate));
      shares.deviceTypes.push_back(machines && device < machines->numDevices()
                                       ? machines->deviceTypeOf(device).name
                                       : std::string());
    }
    break;
  }
  for (sbp::MeshOp stageMesh : module->getOps<sbp::MeshOp>()) {
    std::optional<ArrayRef<int64_t>> devices = stageMesh.getDevices();
    if (!devices)
      continue;
    parplan::driver::StageFigures entry;
    entry.mesh = stageMesh.getSymName().str();
    entry.shape.assign(stageMesh.getShape().begin(),
                       stageMesh.getShape().end());
    entry.devices.assign(devices->begin(), devices->end());
    if (machines)
      for (int64_t device : entry.devices)
        if (device >= 0 && device < machines->numDevices())
          if (const std::string &type = machines->deviceTypeOf(device).name;
              !llvm::is_contained(entry.deviceTypes, type))
            entry.deviceTypes.push_back(type);
    if (auto layers = stageMesh->getAttrOfType<IntegerAttr>(
            parplan::kStageLayersAttrName))
      entry.layers = layers.getInt();
    entry.head = stageMesh->hasAttr(parplan::kStageHeadAttrName);
    if (auto parts = stageMesh->getAttrOfType<ArrayAttr>(
            parplan::kStageLayerPartsAttrName))
      for (auto part : parts.getAsRange<StringAttr>())
        entry.layerParts.push_back(part.str());
    if (sbp::StageFiguresAttr predicted = stageFigures.lookup(entry.mesh)) {
      entry.predicted = true;
      entry.forward = predicted.getForwardTime();
      entry.backward = predicted.getBackwardTime();
      entry.update = predicted.getUpdateTime();
      entry.prologue = predicted.getPrologueTime();
      entry.busy = predicted.getBusyTime();
      entry.bubble = predicted.getBubbleTime();
      entry.memoryBytes = predicted.getMemoryBytes();
    }
    figures.stages.push_back(std::move(entry));
  }
  figures.stepSeconds = planAttr.getStepTime();
  // The chosen shape's trial stands for the plan written, which a second
  // layout under a memory budget may have changed: the lists show its step.
  if (result.search) {
    PipelineSearchResult &search = *result.search;
    for (std::vector<parplan::driver::PipelineTrial> *phase :
         {&search.stageCounts, &search.microBatchCounts, &search.schedules,
          &search.cuts})
      for (parplan::driver::PipelineTrial &trial : *phase)
        if (trial.searched && trial.stages == search.chosen.stages &&
            trial.microBatches == search.chosen.microBatches &&
            trial.schedule == search.chosen.schedule &&
            (phase != &search.cuts ||
             trial.cutInsideLayers == search.chosen.cutInsideLayers)) {
          trial.step = figures.stepSeconds;
          trial.noFit.reset();
          trial.why.clear();
        }
    search.chosen.step = figures.stepSeconds;
  }
  figures.computeSeconds = planAttr.getComputeTime();
  figures.communicationSeconds = planAttr.getCommunicationTime();
  figures.overlapSeconds = planAttr.getOverlapTime();
  figures.estimatedMemoryBytes = planAttr.getMemoryBytes();
  figures.deviceMemoryBytes = planAttr.getDeviceMemoryBytes();
  figures.start = planAttr.getStart().str();
  for (NamedAttribute baseline : planAttr.getBaselines())
    figures.baselines.emplace_back(
        baseline.getName().str(),
        cast<FloatAttr>(baseline.getValue()).getValueAsDouble());
  auto function = module->lookupSymbol<func::FuncOp>("main");
  // Per step: the micro-batch's ops M times.
  DenseSet<Operation *> oncePerStep;
  if (microBatches > 1)
    if (FailureOr<DenseSet<Operation *>> after = opsAfterMicroBatches(function);
        succeeded(after)) {
      oncePerStep = std::move(*after);
      for (Operation *op : opsBeforeMicroBatches(function, oncePerStep))
        oncePerStep.insert(op);
    }
  // A device runs its stage's ops: the busiest stage's FLOPs are the
  // device's, each op's at its largest block (the largest share, the first
  // parts of splits that do not divide evenly).
  std::map<std::string, double> flopsByMesh;
  auto busiestFraction = [&](Operation *op, sbp::ShardingAttr sharding,
                             const std::vector<NdSbp> &operands,
                             const std::vector<NdSbp> &results) {
    auto meshOp = SymbolTable::lookupNearestSymbolFrom<sbp::MeshOp>(
        op, sharding.getMesh());
    if (!meshOp)
      return localWorkFraction(operands, results, figures.meshShape);
    std::vector<int64_t> shape(meshOp.getShape().begin(),
                               meshOp.getShape().end());
    parplan::MeshShares shares = meshOp.getMeshShares();
    return blockWorkFraction(op, operands, results, shape, shares,
                             meshLargestBlock(shape, shares));
  };
  function.walk([&](Operation *op) {
    auto sharding =
        op->getAttrOfType<sbp::ShardingAttr>(parplan::kShardingAttrName);
    if (!sharding || !isa<nn::NNDialect>(op->getDialect()))
      return;
    if (auto param = dyn_cast<nn::ParamOp>(op)) {
      if (!(param.getSource() && *param.getSource() == "zeros"))
        figures.parameterLayouts.emplace_back(
            param.getName().str(), parplan::toString(sharding.getResultSbp(0)));
      if (param->hasAttr(parplan::kKeptForBackwardAttrName))
        figures.keptForBackward.push_back(param.getName().str());
    }
    std::vector<NdSbp> operands, results;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      operands.push_back(sharding.getOperandSbp(i));
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      results.push_back(sharding.getResultSbp(i));
    if (auto shardable = dyn_cast<nn::ShardableOpInterface>(op))
      if (FailureOr<OpCost> cost = shardable.getCost(); succeeded(cost))
        flopsByMesh[sharding.getMesh().getValue().str()] +=
            cost->flops * busiestFraction(op, sharding, operands, results) *
            static_cast<double>(oncePerStep.contains(op) ? 1 : microBatches);
    double cost = 0;
    if (auto explain =
            op->getAttrOfType<DictionaryAttr>(parplan::kExplainAttrName))
      if (auto value = explain.getAs<FloatAttr>("cost"))
        cost = value.getValueAsDouble();
    figures.ops.push_back({op->getName().getStringRef().str(), nn::nodeName(op),
                           debugString(sharding), cost});
  });
  for (const auto &[mesh, flops] : flopsByMesh)
    figures.flopsPerDevice = std::max(figures.flopsPerDevice, flops);
  for (parplan::driver::StageFigures &stage : figures.stages)
    stage.flops = flopsByMesh[stage.mesh];
  figures.microBatches = microBatches;
  figures.batch = batch;
  figures.batchFixed = fixedBatch;
  figures.recompute = pipeline.recompute;
}

LogicalResult Compiler::lowerAndExport() {
  // Already lowered when the fallback judged the plan by its arena.
  if (lowered) {
    for (Diagnostic &diagnostic : lowered->said)
      context.getDiagEngine().emit(std::move(diagnostic));
    module = std::move(lowered->module);
  } else {
    stage("lowering to per-device programs", 0.75);
    if (!runStage([&](OpPassManager &pm) {
          addLoweringPasses(pm, pipeline.schedule);
        }))
      return failure();
  }
  parplan::driver::PlanFigures &figures = result.figures;
  if (auto schedule =
          (*module)->getAttrOfType<StringAttr>(parplan::kPlanScheduleAttrName))
    figures.schedule = schedule.str();
  figures.chunks = figures.schedule == "interleaved" ? pipeline.chunks : 1;
  if (options.emit == CompileStage::Plan && options.emitIR)
    options.emitIR(*module);
  stage("writing the plan", 0.9);
  TimingScope exportTiming = timing.nest("Export");
  // Blocks of up to 64 MiB: the arena's default 8 KiB blocks make a
  // 1,024-program plan a million allocations.
  google::protobuf::ArenaOptions arenaOptions;
  arenaOptions.max_block_size = 64 << 20;
  result.arena = std::make_shared<google::protobuf::Arena>(arenaOptions);
  result.plan =
      google::protobuf::Arena::CreateMessage<plan::Plan>(result.arena.get());
  if (failed(exportPlan(*module, *result.plan)))
    return failure();
  exportTiming.stop();
  TimingScope figuresTiming = timing.nest("Summary");
  SymbolTableCollection symbols;
  std::map<int64_t, const plan::Program *> exportedByDevice;
  for (const plan::Program &program : result.plan->programs())
    exportedByDevice[program.devices(0)] = &program;
  for (plan::ProgramOp program : module->getOps<plan::ProgramOp>()) {
    parplan::driver::ProgramFigures entry =
        programFigures(program, microBatches, symbols);
    const plan::Program &exported =
        *exportedByDevice.at(program.getDevices().front());
    entry.keptActivationBytes =
        parplan::runtime::keptActivationBytes(*result.plan, exported);
    entry.inFlightActivationBytes =
        parplan::runtime::inFlightActivationBytes(*result.plan, exported);
    entry.flops = figures.flopsPerDevice;
    if (const parplan::driver::StageFigures *stage =
            figures.stageOf(entry.devices.front()))
      entry.flops = stage->flops;
    if (entry.peakMemoryBytes + entry.inFlightActivationBytes >
        figures.peakMemoryBytes + figures.peakInFlightBytes) {
      figures.peakMemoryBytes = entry.peakMemoryBytes;
      figures.peakInFlightBytes = entry.inFlightActivationBytes;
      figures.peakDevice = entry.devices.front();
    }
    figures.commBytes = std::max(figures.commBytes, entry.commBytes);
    figures.devices += static_cast<int64_t>(entry.devices.size());
    figures.programs.push_back(std::move(entry));
  }
  return success();
}

// The cost model chose a plan that fits; the arena plan-memory laid out may
// still not (a difference between the two is a bug to report). Such a plan
// is not one to run: an error, unless asked for anyway.
LogicalResult Compiler::checkMemory() {
  const parplan::driver::PlanFigures &figures = result.figures;
  if (!figures.overMemory())
    return success();
  const parplan::driver::StageFigures *stage =
      figures.stageOf(figures.peakDevice);
  std::string where = stage ? " on stage @" + stage->mesh : std::string();
  std::string planned =
      parplan::formatBytes(figures.peakMemoryBytes + figures.peakInFlightBytes);
  if (figures.peakInFlightBytes > 0)
    planned += " (" + parplan::formatBytes(figures.peakMemoryBytes) +
               " planned + " + parplan::formatBytes(figures.peakInFlightBytes) +
               " of other micro-batches' activations in flight)";
  std::string capacity = parplan::formatBytes(figures.deviceMemoryBytes);
  std::string estimated = parplan::formatBytes(figures.estimatedMemoryBytes);
  if (!options.allowOverMemory)
    return error() << "the plan does not fit: device " << figures.peakDevice
                   << where << " needs " << planned << ", more than its "
                   << capacity << " (the cost model estimated " << estimated
                   << "); --allow-over-memory writes it anyway";
  emitWarning(location) << "the planned peak memory " << planned
                        << " per device" << where << " exceeds the device's "
                        << capacity << " (the cost model estimated "
                        << estimated << "); the plan may not run";
  return success();
}

std::optional<double> Compiler::budgetForMiss() const {
  const parplan::driver::PlanFigures &figures = result.figures;
  if (!figures.overMemory() || figures.estimatedMemoryBytes <= 0)
    return std::nullopt;
  // What the arena holds beyond the estimate (the gaps between its
  // buffers, what the cost model does not count), and 1% of the device
  // besides.
  auto device = static_cast<double>(figures.deviceMemoryBytes);
  double miss =
      static_cast<double>(figures.peakMemoryBytes + figures.peakInFlightBytes -
                          figures.estimatedMemoryBytes);
  double budget = device - std::max(miss, 0.0) - 0.01 * device;
  if (budget <= 0)
    return std::nullopt;
  return budget;
}

FailureOr<CompileResult> Compiler::finish() {
  if (failed(checkMemory()))
    return failure();
  result.module = std::move(module);
  return std::move(result);
}

LogicalResult Compiler::layOutAndLower() {
  if (failed(checkOptions()))
    return failure();
  microBatches = options.training.microBatches;
  batch = options.batch;
  if (failed(findFixedBatch()))
    return failure();
  module = importAt(microBatches);
  if (!module)
    return failure();
  if (std::optional<std::string> why =
          parplan::driver::resolveMegatronGrid(*module, layout))
    return error() << *why;
  parplan::driver::setPipelineOptions(pipeline, options.training, &layout);
  pipeline.inference = options.inference;
  pipeline.microBatches = microBatches;
  pipeline.memoryBudget = options.memoryBudget;
  if (failed(choosePipeline()))
    return failure();
  if (failed(layOutWithFallback()))
    return failure();
  if (options.stopAfter == CompileStage::TrainingStep)
    return success();
  if (options.emit == CompileStage::Layout && options.emitIR)
    options.emitIR(*module);
  readLayoutFigures();
  if (options.stopAfter == CompileStage::Layout)
    return success();
  return lowerAndExport();
}

} // namespace

namespace {

/// `options` with the IR a compile emits (--emit) held in `held`, until
/// the compile whose plan is kept is known.
CompileOptions holdingIR(const CompileOptions &options,
                         OwningOpRef<ModuleOp> &held) {
  CompileOptions holding = options;
  if (options.emitIR)
    holding.emitIR = [&held](ModuleOp stage) { held = stage.clone(); };
  return holding;
}

/// Emits what `held` holds, where `options` emit IR.
void emitHeld(const CompileOptions &options, OwningOpRef<ModuleOp> &held) {
  if (held && options.emitIR)
    options.emitIR(*held);
}

/// The compile on one mesh (the options'), with a second layout under a
/// budget where the first's arena misses its estimate.
FailureOr<CompileResult>
compileOnMesh(const parplan::driver::ModelImporter &importAt,
              const CompileOptions &options, MLIRContext &context,
              Location location, TimingScope &timing,
              std::vector<std::unique_ptr<PassManager>> &passManagers) {
  OwningOpRef<ModuleOp> emitted, emittedAgain;
  CompileOptions first = holdingIR(options, emitted);
  Compiler compiler(importAt, first, context, location, timing, passManagers);
  if (failed(compiler.layOutAndLower())) {
    emitHeld(options, emitted);
    return failure();
  }
  // The arena may hold more than the estimate (the gaps between its
  // buffers, what the estimate does not count): where it misses it by
  // enough not to fit, the layout is searched once more under
  // a budget smaller by the miss, and that plan is kept where it fits. The
  // second compile's own errors (nothing fits the budget) are not the
  // user's: the first plan's check then says what does not fit, or warns
  // with --allow-over-memory.
  std::optional<double> budget = compiler.budgetForMiss();
  if (budget && options.memoryBudget == 0 &&
      options.stopAfter == CompileStage::Plan) {
    CompileOptions retry = holdingIR(options, emittedAgain);
    retry.memoryBudget = *budget;
    Compiler again(importAt, retry, context, location, timing, passManagers);
    bool fits;
    {
      ScopedDiagnosticHandler quiet(&context, [](Diagnostic &said) {
        return success(said.getSeverity() == DiagnosticSeverity::Error);
      });
      fits = succeeded(again.layOutAndLower()) && !again.overMemory();
    }
    if (fits) {
      emitHeld(options, emittedAgain);
      const parplan::driver::PlanFigures &firstFigures = compiler.figures();
      parplan::driver::PlanFigures::LaidOutAgain laidOut{
          firstFigures.peakMemoryBytes + firstFigures.peakInFlightBytes,
          firstFigures.estimatedMemoryBytes, static_cast<int64_t>(*budget)};
      FailureOr<CompileResult> finished = again.finish();
      if (succeeded(finished))
        finished->figures.laidOutAgain = laidOut;
      return finished;
    }
  }
  emitHeld(options, emitted);
  return compiler.finish();
}

/// The cluster the compile attaches, where the options leave the devices
/// to the compile (no mesh, stages, annotations, strategy or Megatron grid
/// chosen). None otherwise, or for a cluster the model carries (not
/// compiled for twice).
std::optional<cost::Cluster> clusterLeftOpen(const CompileOptions &options) {
  const parplan::driver::LayoutOptions &layout = options.layout;
  if (!layout.mesh.empty() || layout.strategy != "auto" ||
      !layout.annotations.empty() || options.stagesGiven ||
      options.stopAfter == CompileStage::TrainingStep ||
      options.memoryBudget != 0 || layout.tensor != 0 || layout.pipeline != 0 ||
      layout.placedCluster)
    return std::nullopt;
  std::string error;
  std::optional<cost::Cluster> cluster =
      layout.cluster.empty() ? std::nullopt
                             : cost::resolveCluster(layout.cluster, error);
  if (!cluster || cluster->nodes.empty())
    return std::nullopt;
  return cluster;
}

/// Whether `cluster`'s nodes are in more than one region.
bool spansRegions(const cost::Cluster &cluster) {
  return llvm::any_of(cluster.nodes, [&](const cost::Node &node) {
    return node.region != cluster.nodes.front().region;
  });
}

/// What placement's estimates need of the step, from the model imported
/// at one micro-batch: its FLOPs and memory traffic (the forward's, three
/// times over for the forward and the backward's two products per
/// product), its parameters' bytes, and the element type its products
/// run in.
parplan::driver::StepWork
stepWorkOf(const parplan::driver::ModelImporter &importAt,
           const CompileOptions &options) {
  parplan::driver::StepWork work;
  work.batch = options.batch;
  work.type = parplan::driver::stepComputeType(options.training.mixedPrecision);
  OwningOpRef<ModuleOp> model = importAt(1);
  if (!model)
    return work;
  std::vector<double> resultBytes;
  model->walk([&](Operation *op) {
    if (auto param = dyn_cast<nn::ParamOp>(op)) {
      auto type = dyn_cast<ShapedType>(param.getType());
      if (type && type.hasStaticShape() &&
          isa<FloatType>(type.getElementType())) {
        double bytes = static_cast<double>(type.getNumElements()) *
                       std::max<unsigned>(1, type.getElementTypeBitWidth() / 8);
        work.parameterBytes += bytes;
        if (!param->hasOneUse() && !param->use_empty())
          work.loopBytes += bytes;
      }
      return;
    }
    if (auto shardable = dyn_cast<nn::ShardableOpInterface>(op)) {
      if (FailureOr<OpCost> cost = shardable.getCost(); succeeded(cost)) {
        work.flops += 3 * cost->flops;
        work.bytes +=
            3 * static_cast<double>(cost->bytesRead + cost->bytesWritten);
      }
      for (Type type : op->getResultTypes())
        if (auto shaped = dyn_cast<ShapedType>(type);
            shaped && shaped.hasStaticShape() &&
            shaped.getElementType().isIntOrFloat())
          resultBytes.push_back(
              static_cast<double>(shaped.getNumElements()) *
              std::max<unsigned>(1, shaped.getElementTypeBitWidth() / 8));
    }
  });
  if (!resultBytes.empty()) {
    auto middle = resultBytes.begin() +
                  static_cast<std::ptrdiff_t>(resultBytes.size() / 2);
    std::nth_element(resultBytes.begin(), middle, resultBytes.end());
    work.crossingBytes = *middle;
  }
  return work;
}

/// The regions of `nodes` of `cluster` in the order the nodes list them,
/// each once where its nodes stand together (region by region).
std::vector<std::string> regionsOf(const cost::Cluster &cluster,
                                   const std::vector<int64_t> &nodes) {
  std::vector<std::string> regions;
  for (int64_t node : nodes) {
    const std::string &region = cluster.nodes[static_cast<size_t>(node)].region;
    if (regions.empty() || regions.back() != region)
      regions.push_back(region);
  }
  return regions;
}

/// A cluster's nodes region by region along regionsAlongPath, as a
/// cluster of its own numbered in that order, and the regions in it.
struct AlongPath {
  cost::Cluster cluster, asListed;
  std::vector<std::string> regions;
  /// Whether the file lists the nodes in that order already.
  bool listedSo = false;
};

/// Where the options give the plan's shape on a cluster spread over
/// regions and leave the numbering of its devices to the compile
/// (--placement auto, no annotations naming devices): every node along
/// regionsAlongPath.
std::optional<AlongPath>
clusterAlongPath(const parplan::driver::ModelImporter &importAt,
                 const CompileOptions &options) {
  const parplan::driver::LayoutOptions &layout = options.layout;
  if (layout.placement != "auto" || !layout.annotations.empty() ||
      layout.placedCluster || layout.cluster.empty() ||
      options.stopAfter == CompileStage::TrainingStep)
    return std::nullopt;
  std::string error;
  std::optional<cost::Cluster> cluster =
      cost::resolveCluster(layout.cluster, error);
  if (!cluster || cluster->nodes.empty() || !spansRegions(*cluster))
    return std::nullopt;
  std::vector<int64_t> nodes = parplan::driver::nodesAlongPath(
      cost::ClusterIndex(*cluster), stepWorkOf(importAt, options));
  AlongPath along;
  along.regions = regionsOf(*cluster, nodes);
  along.listedSo = llvm::equal(
      nodes, llvm::seq<int64_t>(0, static_cast<int64_t>(nodes.size())));
  along.cluster = cost::subCluster(
      *cluster, nodes, cluster->name + ": every node, region by region");
  along.asListed = std::move(*cluster);
  return along;
}

/// compileOnMesh for a part of the cluster the compile tries beside the
/// whole: what does not fit there is not the user's error.
FailureOr<CompileResult>
compileQuietly(const parplan::driver::ModelImporter &importAt,
               const CompileOptions &options, MLIRContext &context,
               Location location, TimingScope &timing,
               std::vector<std::unique_ptr<PassManager>> &passManagers) {
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &said) {
    return success(said.getSeverity() != DiagnosticSeverity::Remark);
  });
  return compileOnMesh(importAt, options, context, location, timing,
                       passManagers);
}

/// The step a placement is judged by: the longer of the plan's predicted
/// step and its simulation on its cluster (`simulated`: the executor's
/// streams and links, which the analytic step of plans crossing slow
/// links misses); none where the plan does not fit.
std::optional<double> judgedStep(const FailureOr<CompileResult> &compiled,
                                 const cost::Cluster &cluster,
                                 std::optional<double> &simulated) {
  if (failed(compiled) || compiled->figures.overMemory())
    return std::nullopt;
  if (compiled->plan) {
    simulate::Simulation simulation;
    if (simulate::simulatePlan(*compiled->plan, cluster, {}, simulation).ok())
      simulated = simulation.stepSeconds;
  }
  return std::max(compiled->figures.stepSeconds, simulated.value_or(0));
}

/// A group of nodes laid out: its plan on a cluster of its nodes alone (in
/// their order), the IR held for emitting, and the step it is judged by
/// (judgedStep; none: no fit) with its simulated step.
struct LaidGroup {
  FailureOr<CompileResult> result = failure();
  OwningOpRef<ModuleOp> held;
  std::optional<double> judged, simulated;
};

/// Whether the compile builds the GNN placer's graph of the cluster: to
/// place with it, or to add to its training data.
bool usesPlacerGraph(const parplan::driver::LayoutOptions &layout) {
  return layout.placer == "gnn" || !layout.placerDataset.empty();
}

/// The option that builds it, for errors.
const char *placerFlag(const parplan::driver::LayoutOptions &layout) {
  return layout.placer == "gnn" ? "--placer gnn" : "--placer-dataset";
}

/// How many groups of nodes placement lays out beside every node (the
/// search: a node, a group within a region, and the next best) or around
/// the GNN placer's proposal.
constexpr size_t kPlacementGroupsTried = 3;

/// Indices of `laid` by the step each is judged by, fastest first, those
/// that do not fit last (in their order).
std::vector<size_t> fastestFirst(llvm::ArrayRef<LaidGroup> laid) {
  std::vector<size_t> order(laid.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return laid[a].judged &&
           (!laid[b].judged || *laid[a].judged < *laid[b].judged);
  });
  return order;
}

/// Lays `laid` out: `group` of `cluster`, compiled quietly and simulated.
void layOutGroup(LaidGroup &laid,
                 const parplan::driver::ModelImporter &importAt,
                 const CompileOptions &options, const cost::Cluster &cluster,
                 const parplan::driver::PlacementCandidate &group,
                 MLIRContext &context, Location location, TimingScope &timing,
                 std::vector<std::unique_ptr<PassManager>> &passManagers) {
  CompileOptions groupOptions = holdingIR(options, laid.held);
  auto groupCluster = std::make_shared<cost::Cluster>(
      cost::subCluster(cluster, group.nodes, cluster.name + ": " + group.what));
  groupOptions.layout.placedCluster = groupCluster;
  laid.result = compileQuietly(importAt, groupOptions, context, location,
                               timing, passManagers);
  laid.judged = judgedStep(laid.result, *groupCluster, laid.simulated);
}

/// The summary's entry for `group` of `cluster`, laid out as `laid`.
PlanFigures::Placement::Tried
triedEntry(const cost::Cluster &cluster,
           const parplan::driver::PlacementCandidate &group,
           const LaidGroup &laid) {
  PlanFigures::Placement::Tried entry;
  entry.what = group.what;
  entry.devices = group.devices;
  entry.estimate = group.estimate;
  for (int64_t node : group.nodes)
    entry.nodes.push_back(cluster.nodes[static_cast<size_t>(node)].name);
  if (laid.judged)
    entry.stepSeconds = laid.result->figures.stepSeconds;
  entry.simulatedSeconds = laid.simulated;
  return entry;
}

/// The compile on a cluster spread over regions where Hulk's graph network
/// chooses the machines: the few groups around its proposal
/// (proposalNeighbourhood) laid out, the fastest plan kept; every node is
/// not laid out unless proposed (docs/placement.md). `candidates` are
/// estimated.
FailureOr<CompileResult> compileWithPlacer(
    const parplan::driver::ModelImporter &importAt,
    const CompileOptions &options, const cost::Cluster &cluster,
    const cost::ClusterIndex &index, const parplan::driver::StepWork &work,
    const std::vector<parplan::driver::PlacementCandidate> &candidates,
    PlanFigures::Placement placement, MLIRContext &context, Location location,
    TimingScope &timing,
    std::vector<std::unique_ptr<PassManager>> &passManagers) {
  using parplan::driver::PlacementCandidate;
  auto start = std::chrono::steady_clock::now();
  std::string error;
  parplan::driver::PlacerGraph graph =
      parplan::driver::placerGraph(index, work);
  FailureOr<std::vector<double>> scores = parplan::driver::placerScores(
      options.layout.placerModel, graph, context, error);
  if (failed(scores))
    return emitError(location) << error;
  parplan::driver::PlacerProposal proposal =
      parplan::driver::placerProposal(*scores);
  // The search's local moves around the proposal: its few groups of least
  // estimate, each laid out and judged as the search judges its groups.
  std::vector<size_t> near = parplan::driver::proposalNeighbourhood(
      candidates, proposal, kPlacementGroupsTried);
  if (near.empty())
    return emitError(location)
           << "--placer gnn: no group of nodes holding the machines the "
              "placer proposes can hold the model (4 copies of its "
              "parameters); --placer search tries every group";
  placement.placer = "gnn";
  placement.proposed = static_cast<int64_t>(proposal.count);
  placement.bestNode = cluster.nodes[proposal.best].name;
  placement.bestScore = (*scores)[proposal.best];
  placement.placerSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  std::vector<LaidGroup> laid(near.size());
  for (size_t i = 0; i < near.size(); ++i)
    layOutGroup(laid[i], importAt, options, cluster, candidates[near[i]],
                context, location, timing, passManagers);
  std::vector<size_t> order = fastestFirst(laid);
  if (!laid[order.front()].judged)
    // Nowhere fits: the compile on the cluster as given says why, as the
    // search's does.
    return compileOnMesh(importAt, options, context, location, timing,
                         passManagers);
  // Every group laid out is listed, every node's too where the placer
  // proposed every machine (its steps also as every node's).
  for (size_t i : order) {
    const PlacementCandidate &group = candidates[near[i]];
    if (group.kind == PlacementCandidate::Kind::Everything) {
      placement.keptAll = i == order.front();
      if (laid[i].judged)
        placement.allStepSeconds = laid[i].result->figures.stepSeconds;
      placement.allSimulatedSeconds = laid[i].simulated;
    }
    placement.tried.push_back(triedEntry(cluster, group, laid[i]));
  }
  LaidGroup &kept = laid[order.front()];
  kept.result->figures.placement = std::move(placement);
  emitHeld(options, kept.held);
  return std::move(kept.result);
}

/// The compile on a cluster spread over regions: the plan on every node,
/// region by region, and on each group of nodes placementsToTry takes,
/// each on a cluster of its nodes alone in an order of their own; the
/// fastest plan that fits is kept (docs/pipeline.md#placement).
FailureOr<CompileResult>
compileWithPlacement(const parplan::driver::ModelImporter &importAt,
                     const CompileOptions &options,
                     const cost::Cluster &cluster, MLIRContext &context,
                     Location location, TimingScope &timing,
                     std::vector<std::unique_ptr<PassManager>> &passManagers) {
  using parplan::driver::PlacementCandidate;
  // The GNN placer's graph is dense; a dataset of another size is refused
  // before the search's work.
  if (usesPlacerGraph(options.layout)) {
    if (static_cast<int64_t>(cluster.nodes.size()) >
        parplan::driver::kPlacerMaxMachines)
      return emitError(location)
             << placerFlag(options.layout) << ": cluster '" << cluster.name
             << "' has " << cluster.nodes.size()
             << " machines; the placer's dense adjacency takes at most "
             << parplan::driver::kPlacerMaxMachines
             << " (--placer search places any number)";
    std::string error;
    if (!options.layout.placerDataset.empty() &&
        failed(parplan::driver::placerDatasetGraphs(
            options.layout.placerDataset,
            static_cast<int64_t>(cluster.nodes.size()), error)))
      return emitError(location) << error;
  }
  cost::ClusterIndex index(cluster);
  parplan::driver::StepWork work = stepWorkOf(importAt, options);
  std::vector<PlacementCandidate> candidates =
      parplan::driver::placementCandidates(index, work);
  for (PlacementCandidate &candidate : candidates)
    candidate.estimate =
        parplan::driver::quickEstimate(index, candidate.nodes, work);
  PlanFigures::Placement placement;
  placement.candidates = candidates.size();
  placement.clusterDevices = cluster.numDevices();
  // Every node, region by region, in an order that is not the file's: the
  // search lays it out whatever its estimate, the plan the groups must
  // beat; the GNN placer only where it proposes every machine.
  auto everything = llvm::find_if(candidates, [](const auto &candidate) {
    return candidate.kind == PlacementCandidate::Kind::Everything;
  });
  if (everything == candidates.end())
    return compileOnMesh(importAt, options, context, location, timing,
                         passManagers);
  placement.regions = regionsOf(cluster, everything->nodes);
  if (options.layout.placer == "gnn")
    return compileWithPlacer(importAt, options, cluster, index, work,
                             candidates, std::move(placement), context,
                             location, timing, passManagers);
  std::vector<PlacementCandidate> others;
  for (const PlacementCandidate &candidate : candidates)
    if (candidate.kind != PlacementCandidate::Kind::Everything)
      others.push_back(candidate);
  std::vector<PlacementCandidate> groups = parplan::driver::placementsToTry(
      index, std::move(others), kPlacementGroupsTried);
  groups.insert(groups.begin(), *everything);

  std::vector<LaidGroup> laid(groups.size());
  for (size_t i = 0; i < groups.size(); ++i)
    layOutGroup(laid[i], importAt, options, cluster, groups[i], context,
                location, timing, passManagers);
  if (laid.front().judged)
    placement.allStepSeconds = laid.front().result->figures.stepSeconds;
  placement.allSimulatedSeconds = laid.front().simulated;
  // The groups beside every node by the longer of their predicted and
  // simulated steps: the fastest kept unless every node's is faster still.
  std::vector<size_t> order = fastestFirst(llvm::ArrayRef(laid).drop_front());
  std::optional<size_t> best;
  if (!order.empty() && laid[order.front() + 1].judged)
    best = order.front() + 1;
  if (!best && !laid.front().judged) {
    // Nowhere fits: the compile on the cluster as given says why.
    return compileOnMesh(importAt, options, context, location, timing,
                         passManagers);
  }
  placement.keptAll = !best || (laid.front().judged &&
                                *laid.front().judged < *laid[*best].judged);
  for (size_t i : order)
    placement.tried.push_back(triedEntry(cluster, groups[i + 1], laid[i + 1]));
  LaidGroup &kept = laid[placement.keptAll ? 0 : *best];
  // What the GNN placer learns from: this cluster and the machines kept.
  if (!options.layout.placerDataset.empty()) {
    std::string error;
    if (failed(parplan::driver::appendPlacerExample(
            options.layout.placerDataset,
            parplan::driver::placerGraph(index, work),
            parplan::driver::placerLabels(cluster, placement), error)))
      return emitError(location) << error;
  }
  kept.result->figures.placement = std::move(placement);
  emitHeld(options, kept.held);
  return std::move(kept.result);
}

/// The compile of a shape the options give on a cluster spread over
/// regions: every node numbered along the path, and beside it, where the
/// file lists them otherwise, in the file's order; the faster by the longer
/// of predicted and simulated steps is kept, the path's on a tie.
FailureOr<CompileResult>
compileAlongPath(const parplan::driver::ModelImporter &importAt,
                 const CompileOptions &options, AlongPath along,
                 MLIRContext &context, Location location, TimingScope &timing,
                 std::vector<std::unique_ptr<PassManager>> &passManagers) {
  OwningOpRef<ModuleOp> heldPath, heldListed;
  CompileOptions placed = holdingIR(options, heldPath);
  auto pathCluster = std::make_shared<cost::Cluster>(std::move(along.cluster));
  placed.layout.placedCluster = pathCluster;
  FailureOr<CompileResult> path =
      compileOnMesh(importAt, placed, context, location, timing, passManagers);
  if (failed(path))
    return path;
  PlanFigures::Placement placement;
  placement.regions = std::move(along.regions);
  placement.searched = false;
  placement.keptAll = true;
  placement.clusterDevices = pathCluster->numDevices();
  std::optional<double> simulated;
  std::optional<double> pathJudged = judgedStep(path, *pathCluster, simulated);
  placement.allStepSeconds = path->figures.stepSeconds;
  placement.allSimulatedSeconds = simulated;
  if (!along.listedSo) {
    CompileOptions listedOptions = holdingIR(options, heldListed);
    auto listedCluster =
        std::make_shared<cost::Cluster>(std::move(along.asListed));
    listedOptions.layout.placedCluster = listedCluster;
    FailureOr<CompileResult> listed = compileQuietly(
        importAt, listedOptions, context, location, timing, passManagers);
    std::optional<double> listedSimulated;
    std::optional<double> listedJudged =
        judgedStep(listed, *listedCluster, listedSimulated);
    if (listedJudged) {
      placement.listedStepSeconds = listed->figures.stepSeconds;
      placement.listedSimulatedSeconds = listedSimulated;
    }
    if (listedJudged && (!pathJudged || *listedJudged < *pathJudged)) {
      placement.keptListed = true;
      listed->figures.placement = std::move(placement);
      emitHeld(options, heldListed);
      return listed;
    }
  }
  path->figures.placement = std::move(placement);
  emitHeld(options, heldPath);
  return path;
}

} // namespace

FailureOr<CompileResult> parplan::driver::compile(
    const ModelImporter &importAt, const CompileOptions &options,
    MLIRContext &context, Location location, TimingScope &timing,
    std::vector<std::unique_ptr<PassManager>> &passManagers) {
  // On a cluster spread over regions, placement chooses the machines; where
  // the options give the plan's shape, it numbers their devices.
  const LayoutOptions &layout = options.layout;
  if (layout.placer == "gnn" && layout.placerModel.empty())
    return emitError(location)
           << "--placer gnn needs --placer-model DIR, a trained placer "
              "(scripts/train-placer.sh writes one)";
  if (layout.placer != "gnn" && !layout.placerModel.empty())
    return emitError(location)
           << "--placer-model names the GNN placer: add --placer gnn";
  if (layout.placer == "gnn" && !layout.placerDataset.empty())
    return emitError(location)
           << "--placer-dataset records the search's placements; it does "
              "not go with --placer gnn";
  std::optional<cost::Cluster> open = clusterLeftOpen(options);
  if (open && spansRegions(*open) && options.layout.placement == "auto")
    return compileWithPlacement(importAt, options, *open, context, location,
                                timing, passManagers);
  if (usesPlacerGraph(options.layout))
    return emitError(location)
           << placerFlag(options.layout)
           << ": machines are placed only on a cluster spread over regions, "
              "with --placement auto and no mesh, stages, annotations, "
              "strategy or memory budget given (docs/placement.md)";
  if (!open)
    if (std::optional<AlongPath> along = clusterAlongPath(importAt, options))
      return compileAlongPath(importAt, options, std::move(*along), context,
                              location, timing, passManagers);
  // On a cluster of mixed types, its nodes of the fastest type are
  // compiled alone too (a cluster of their own), and kept where the others
  // only slow the step (Whale and Metis leave out what does not pay): both
  // compiles' IR is held until the one kept is known.
  OwningOpRef<ModuleOp> heldAll, heldPart;
  // Stages and a mesh's inner axes take consecutive devices: on a cluster
  // listing its types interleaved (a scaled preset's copies, V100 nodes,
  // P100 nodes, V100 nodes again) or slowest first, every device is laid
  // out with each type's nodes together, fastest type first, so that a
  // stage or a node group can be of one type (Metis's stages on one GPU
  // type). A cluster listing them so already, or compiled with --placement
  // file, is laid out as listed.
  CompileOptions allOptions = holdingIR(options, heldAll);
  cost::ComputeType stepType =
      parplan::driver::stepComputeType(options.training.mixedPrecision);
  std::vector<int64_t> grouped;
  if (open && options.layout.placement != "file") {
    grouped = parplan::driver::nodesGroupedByType(*open, stepType);
    if (!grouped.empty())
      allOptions.layout.placedCluster =
          std::make_shared<cost::Cluster>(cost::subCluster(
              *open, grouped, open->name + ": nodes by device type"));
  }
  FailureOr<CompileResult> all = compileOnMesh(importAt, allOptions, context,
                                               location, timing, passManagers);
  if (succeeded(all))
    for (int64_t node : grouped)
      all->figures.nodeOrder.push_back(
          open->nodes[static_cast<size_t>(node)].name);
  std::vector<int64_t> fastest;
  if (succeeded(all) && open)
    fastest = parplan::driver::fastestTypeNodes(*open, stepType);
  if (fastest.empty()) {
    emitHeld(options, heldAll);
    return all;
  }
  const std::string &type =
      open->nodes[static_cast<size_t>(fastest.front())].deviceType;
  CompileOptions partOptions = holdingIR(options, heldPart);
  partOptions.layout.placedCluster = std::make_shared<cost::Cluster>(
      cost::subCluster(*open, fastest, open->name + ": " + type + " alone"));
  FailureOr<CompileResult> alone = compileQuietly(
      importAt, partOptions, context, location, timing, passManagers);
  PlanFigures::OneTypePart figures;
  figures.deviceType = type;
  for (int64_t node : fastest) {
    figures.nodes.push_back(open->nodes[static_cast<size_t>(node)].name);
    figures.devices += open->nodes[static_cast<size_t>(node)].devices;
  }
  figures.clusterDevices = all->figures.devices;
  figures.allStepSeconds = all->figures.stepSeconds;
  bool fits = succeeded(alone) && !alone->figures.overMemory();
  if (fits)
    figures.stepSeconds = alone->figures.stepSeconds;
  figures.kept =
      fits && (all->figures.overMemory() ||
               alone->figures.stepSeconds < all->figures.stepSeconds);
  FailureOr<CompileResult> &kept = figures.kept ? alone : all;
  kept->figures.oneTypePart = figures;
  emitHeld(options, figures.kept ? heldPart : heldAll);
  return std::move(kept);
}
