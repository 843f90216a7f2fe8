//===- PipelineSearch.h - stages, micro-batches, schedule auto -*- C++ -*-===//
//
// The pipeline's shape the compile driver leaves to the cost model: the
// stage count, the micro-batch count and the schedule, each tried by the
// layout search (place-stages, sbp-assign) and kept by its predicted step.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DRIVER_PIPELINESEARCH_H
#define PARPLAN_DRIVER_PIPELINESEARCH_H

#include "parplan/Cost/Cluster.h"
#include "parplan/Schedule/Pipeline.h"
#include "parplan/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace parplan::driver {

/// Why no layout of a step fits in memory (which recomputation, more
/// stages or more micro-batches may cure): the bytes per device the
/// smallest plan needs, the device's, and on stages the fullest stage.
struct NoFit {
  std::string stage;
  int64_t device = 0;
  double neededBytes = 0, deviceBytes = 0;
};

/// The no-fit sbp-assign left on `laidOut` (#sbp.no_fit), if it did.
std::optional<NoFit> noFitOf(mlir::ModuleOp laidOut);

/// Whether a plan whose layouts are `memorySlowdown` slower than its
/// fastest, to fit (sbp.plan's memory_slowdown), is worth laying out again
/// with recomputation `level` (selective or full): where it gave up more
/// than recomputing costs, roughly, on a transformer (the attention's
/// scores again, a few percent; every layer's forward again, a quarter of
/// the step).
bool worthRecomputing(double memorySlowdown, llvm::StringRef level);

/// The cluster the layout passes read (the one `module` carries) and the
/// shape of the mesh they lay out on (`mesh`, else the cluster's default,
/// nodes x devices per node); none, with `error` set, when the module
/// carries no cluster or the shape does not parse.
std::optional<std::pair<const cost::Cluster *, std::vector<int64_t>>>
clusterAndMesh(mlir::ModuleOp module, const std::string &mesh,
               std::string &error);

/// One pipeline shape the search tried: its predicted step when a plan
/// fits, else the first error of the try (and `noFit` when the error is
/// that no plan fits in memory). A schedule not worth a search
/// (`searched` false) has `step` from the timeline of the best trial's
/// stage costs under it.
struct PipelineTrial {
  int64_t stages = 1;
  int64_t microBatches = 1;
  std::string schedule;
  /// The recomputation its training step was built with (none, selective
  /// or full).
  std::string recompute;
  /// Whether its stages may end inside layers (place-stages'
  /// cut-inside-layers).
  bool cutInsideLayers = false;
  std::optional<double> step;
  /// How much slower its layouts are than its fastest, which do not fit
  /// (sbp.plan's memory_slowdown; 0 where they fit).
  double memorySlowdown = 0;
  /// Where its recomputation was chosen over layouts that fit without it,
  /// slower: their step and memorySlowdown.
  struct Unrecomputed {
    double step = 0, memorySlowdown = 0;
  };
  std::optional<Unrecomputed> withoutRecompute;
  std::string why;
  std::optional<NoFit> noFit;
  bool searched = true;
  /// On stages, the search's per-stage seconds (sbp.plan's stages): a
  /// micro-batch's forward, backward and sends, and the once-per-step
  /// update.
  schedule::PipelineCosts costs;
  std::vector<double> update;
  /// Per stage: its memory per device, and of it one micro-batch's
  /// activations; the devices' memory.
  std::vector<double> memory, activation;
  double capacity = 0;
};

/// What is searched and what is given. A count or schedule that is not
/// searched is the user's (`stages` 0: one mesh, or the annotations'
/// stages, `annotatedStages` of them).
struct PipelineChoice {
  bool autoStages = false, autoMicroBatches = false, autoSchedule = false;
  /// Whether the best shape on stages of different speeds is tried with a
  /// cut inside layers (place-stages' sbp.finer_cut).
  bool autoCuts = true;
  int64_t stages = 0, annotatedStages = 0;
  int64_t microBatches = 1;
  std::string schedule = schedule::kDefaultPipelineScheduleName;
  /// The model chunks of each stage under the interleaved schedule.
  int64_t chunks = 2;
  /// The global batch the micro-batch counts divide.
  int64_t batch = 0;
  /// Recomputation not given: a stage count that fits only with it (its
  /// base trial failing for memory) is tried with selective, then full
  /// recomputation, and judged by that step.
  bool autoRecompute = false;
  /// Told each trial's shape as it starts ("16 stages, 64 micro-batches,
  /// 1f1b"), for progress.
  std::function<void(const std::string &)> onTrial;
  /// The model as imported, whose cluster (and the mesh on it) the stage
  /// counts are read off; null: the first trial's training step is built
  /// to read them.
  mlir::ModuleOp model;
};

/// The search's trials, phase by phase, and the shape it keeps.
struct PipelineSearchResult {
  std::vector<PipelineTrial> stageCounts, microBatchCounts, schedules;
  /// On stages of different speeds where place-stages found a better
  /// balanced cut inside layers: the chosen shape with whole layers, then
  /// with that cut.
  std::vector<PipelineTrial> cuts;
  /// On devices of mixed types, where one mesh was chosen over stages
  /// refined beside it: their count, whose micro-batch counts and
  /// schedules the lists above hold (0 otherwise).
  int64_t stagesBesideOneMesh = 0;
  PipelineTrial chosen;
  /// The chosen shape's training step laid out by the search passes
  /// (addLayoutSearchPasses), for the compile to go on from; null when the
  /// shape does not fit.
  mlir::OwningOpRef<mlir::ModuleOp> laidOut;
};

/// The model at a micro-batch count (each input's rows the global batch
/// over it), with the cluster and annotations attached; null once it has
/// said why not.
using ModelImporter =
    std::function<mlir::OwningOpRef<mlir::ModuleOp>(int64_t microBatches)>;

/// Searches what `choice` leaves open, in three phases, each from the best
/// of the one before (docs/pipeline.md#the-automatic-pipeline):
///   1. divisors of the mesh's first axis as the stage count, climbed from
///      the middle one toward the better neighbour, at micro-batches a few
///      times the stages (1 on one stage), each count with each schedule
///      whose timeline on its 1F1B trial is faster;
///   2. on more than one stage, the micro-batch counts dividing the batch,
///      climbing a ladder of doublings from the first phase's and then
///      trying the count between the best and each neighbour;
///   3. on more than one stage and micro-batch, each schedule parplan-run
///      runs (not `sequential`): searched when its timeline on the best
///      trial's stage costs beats that trial's step, else only priced so.
/// Then, on stages of different speeds where place-stages found stages
/// ending inside layers better balanced (sbp.finer_cut), the best shape
/// with that cut, kept where its step is clearly shorter.
/// The training step is built once per micro-batch count; `pipeline`'s
/// stages, micro-batches and schedule are set to each trial's in turn. Each
/// trial's passes are timed under `timing` and their pass managers kept in
/// `passManagers` (the timing report knows a pass by its address). None,
/// with `error` set, when the cluster or the mesh is wrong, the training
/// step cannot be built, or the model cannot be imported (said already).
std::optional<PipelineSearchResult>
searchPipeline(const ModelImporter &importAt, CompilePipelineOptions &pipeline,
               const PipelineChoice &choice, std::string &error,
               mlir::TimingScope &timing,
               std::vector<std::unique_ptr<mlir::PassManager>> &passManagers);

} // namespace parplan::driver

#endif // PARPLAN_DRIVER_PIPELINESEARCH_H
