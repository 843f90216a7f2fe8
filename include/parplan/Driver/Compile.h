//===- Compile.h - the compile driver: a model to a plan --------*- C++ -*-===//
//
// The compile as a library: what `parplan compile` decides (the pipeline's
// shape, the recomputation that makes a step fit, the start the search
// keeps) made here on typed results, for the command-line tool, parplan-opt
// (the `parplan-compile` pipeline) and any program that links the compiler.
// Tools parse arguments, call compile() and print what it returns.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DRIVER_COMPILE_H
#define PARPLAN_DRIVER_COMPILE_H

#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Driver/PipelineSearch.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir/Support/Timing.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace google::protobuf {
class Arena;
} // namespace google::protobuf

namespace parplan::plan {
class Plan;
} // namespace parplan::plan

namespace parplan::driver {

/// Where and how sbp-assign lays a program out; shared by `shard` and
/// `compile`.
struct LayoutOptions {
  /// A preset name or a cluster file, attached to the model once
  /// (attachCluster).
  std::string cluster = "dgx-h100";
  std::string mesh;
  std::string strategy = "auto";
  /// An annotations file (docs/sbp-annotations.md), attached once.
  std::string annotations;
  /// Pipeline stages placed evenly (0: the annotations' only).
  int64_t stages = 0;
  /// The stage count of least predicted step, climbed over the divisors
  /// of the mesh's first axis.
  bool autoStages = false;
  /// Megatron's grid (0: not given): the tensor-parallel degree, the mesh's
  /// last axis, and the pipeline stages; data parallel over the rest.
  int64_t tensor = 0;
  int64_t pipeline = 0;
};

/// What nn-autodiff builds; shared by `train-step` and `compile`.
struct TrainingOptions {
  std::string loss = "cross-entropy";
  unsigned outputIndex = 0;
  std::string labels = "labels";
  std::string optimizer = "adam";
  double lr = 1e-3;
  double weightDecay = -1;
  std::string frozen;
  std::string recompute = "none";
  /// With full: the first N layers of each class; -1: all.
  int64_t recomputeLayers = -1;
  std::string mixedPrecision = "none";
  /// Micro-batches the step accumulates gradients over.
  int64_t microBatches = 1;
  /// batch (the batch's statistics) or frozen.
  std::string batchNorm = "batch";
  /// on (dropout drops in training) or off; the masks' seed.
  std::string dropout = "on";
  int64_t dropoutSeed = 0;
  /// Parameters shared by layers to give each layer a copy of.
  std::vector<std::string> untie;
};

/// Fills the training options of the compile pipeline from `training`, and
/// its layout options from `layout` when given.
void setPipelineOptions(CompilePipelineOptions &pipeline,
                        const TrainingOptions &training,
                        const LayoutOptions *layout = nullptr);

/// Turns `tensor T, pipeline P` (with strategy megatron) into the mesh
/// (cluster devices / T) x T and P stages of it; why not when the grid does
/// not fit the cluster or clashes with a mesh or stages given. Without
/// either, does nothing.
std::optional<std::string> resolveMegatronGrid(mlir::ModuleOp module,
                                               LayoutOptions &layout);

/// The mesh sbp-assign laid `module` out on: @mesh, or with stages the
/// first stage's mesh (they all have its shape).
sbp::MeshOp layoutMesh(mlir::ModuleOp module);

/// The stage a compile stops after, returning its IR.
enum class CompileStage {
  /// The training step on logical shapes (nn).
  TrainingStep,
  /// The step laid out, moves and boxings written (nn + sbp).
  Layout,
  /// Per-device programs (plan), exported to plan.proto.
  Plan,
};

/// Everything `parplan compile` is told, but the files it reads and writes.
struct CompileOptions {
  LayoutOptions layout;
  TrainingOptions training;
  /// The global batch the micro-batches divide (0: not given).
  int64_t batch = 0;
  /// `micro-batches auto`, and whether a count was given at all (on
  /// stages, one not given is searched).
  bool autoMicroBatches = false;
  bool microBatchesGiven = false;
  /// The order stages run their micro-batches in (lower-to-plan's
  /// `schedule`), or "auto"; whether it was given.
  std::string schedule = "1f1b";
  bool scheduleGiven = false;
  /// The model chunks of each stage under the interleaved schedule, and
  /// whether they were given.
  int64_t chunks = 2;
  bool chunksGiven = false;
  /// Whether a stage count was given (without one, a mesh over several
  /// nodes under strategy auto gets `stages auto`).
  bool stagesGiven = false;
  /// Whether a recomputation was given: without one, a step that fits
  /// nowhere is tried again with selective, then full recomputation.
  bool recomputeGiven = false;
  CompileStage stopAfter = CompileStage::Plan;
  /// A stage whose IR is handed to `emitIR` as the compile passes it; the
  /// compile goes on to `stopAfter`.
  std::optional<CompileStage> emit;
  std::function<void(mlir::ModuleOp)> emitIR;
  /// A plan whose planned peak exceeds the device's memory is an error
  /// unless this is set, when it is a warning.
  bool allowOverMemory = false;
  /// Told each stage as it starts (what, and the share of the compile
  /// done), for progress; and when a stage that was told has ended.
  std::function<void(const std::string &, double)> onStage;
  std::function<void()> onStageEnd;
};

/// A plan that does not fit its devices' memory: where, and by how much.
struct OverMemory {
  /// The stage mesh of the fullest device (empty on one mesh).
  std::string stage;
  int64_t device = 0;
  /// Its planned peak: the arena plus the in-flight activations a
  /// schedule keeps aside; and its memory.
  int64_t plannedBytes = 0, deviceBytes = 0;
};

/// One stage mesh: its devices and, on stages, the search's per-stage
/// figures (sbp.plan's stages).
struct StageFigures {
  std::string mesh;
  std::vector<int64_t> shape, devices;
  bool predicted = false;
  double forward = 0, backward = 0, update = 0, busy = 0, bubble = 0;
  int64_t memoryBytes = 0;
};

/// One laid-out op, as the summary lists it.
struct OpFigures {
  std::string name, onnxNode, sharding;
  double costSeconds = 0;
};

/// One per-device program of the plan.
struct ProgramFigures {
  std::vector<int64_t> devices;
  /// The arena plan-memory laid out, the activations a schedule keeps
  /// aside beside it, and the peak of live bytes the arena cannot go below.
  int64_t peakMemoryBytes = 0, keptActivationBytes = 0, liveMemoryBytes = 0;
  double commBytes = 0;
};

/// What the compile chose and the cost model predicts of it, each figure
/// computed once (tools print these, never recompute them).
struct PlanFigures {
  /// The mesh shape the layouts are on (every stage's).
  std::vector<int64_t> meshShape;
  std::vector<StageFigures> stages;
  /// The start the search kept and its predicted step; every start's,
  /// least first.
  std::string start;
  std::vector<std::pair<double, std::string>> starts;
  /// The baselines' predicted steps, by name, as sbp-assign recorded them.
  std::vector<std::pair<std::string, double>> baselines;
  double stepSeconds = 0, computeSeconds = 0, communicationSeconds = 0;
  int64_t estimatedMemoryBytes = 0, deviceMemoryBytes = 0;
  /// FLOPs of one step on the busiest device: the ops of its stage, each
  /// at its local share of the work.
  double flopsPerDevice = 0;
  std::vector<OpFigures> ops;
  /// Each trained parameter's layout, by name.
  std::vector<std::pair<std::string, std::string>> parameterLayouts;
  int64_t microBatches = 1;
  /// The schedule stages run micro-batches in (empty without both), and
  /// the chunks of each stage.
  std::string schedule;
  int64_t chunks = 1;
  /// The recomputation chosen, the layers it recomputes (forward order),
  /// the layers the plan with every layer recomputed had, and why the step
  /// did not fit without (empty when it did).
  std::string recompute;
  std::vector<std::string> recomputedLayers;
  size_t layersInAll = 0;
  std::string withoutRecompute;
  /// Per program (with CompileStage::Plan): memory and communication; the
  /// device of largest peak with what it keeps aside, and the most bytes a
  /// device sends.
  std::vector<ProgramFigures> programs;
  int64_t peakMemoryBytes = 0, peakKeptBytes = 0;
  double commBytes = 0;
  int64_t devices = 0;
};

/// What a compile returns.
struct CompileResult {
  /// The IR at the stage asked for (compile's stopAfter).
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// With CompileStage::Plan: the plan exported for parplan-run, on
  /// `arena`.
  std::shared_ptr<google::protobuf::Arena> arena;
  plan::Plan *plan = nullptr;
  /// The pipeline search's trials, when the shape was searched.
  std::optional<PipelineSearchResult> search;
  /// Whether the schedule was searched (a stage count's trial names its
  /// best schedule then).
  bool scheduleSearched = false;
  /// With CompileStage::Layout or Plan.
  PlanFigures figures;
  /// With allowOverMemory, where the plan does not fit.
  std::optional<OverMemory> overMemory;
};

/// Compiles the model `importAt` imports for a training step under
/// `options`, to the stage `options.stopAfter` names: checks the options,
/// imports the model, resolves Megatron's grid, searches what the options
/// leave open (stages, micro-batches, schedule; docs/pipeline.md), falls
/// back to recomputation when nothing fits, lowers, and exports. `location`
/// names the model in diagnostics about the options. Every pass is timed
/// under `timing`; the pass managers are kept in `passManagers` (a timing
/// report knows a pass by its address). Failure once the reason has been
/// emitted as a diagnostic.
mlir::FailureOr<CompileResult>
compile(const ModelImporter &importAt, const CompileOptions &options,
        mlir::MLIRContext &context, mlir::Location location,
        mlir::TimingScope &timing,
        std::vector<std::unique_ptr<mlir::PassManager>> &passManagers);

} // namespace parplan::driver

#endif // PARPLAN_DRIVER_COMPILE_H
