//===- CompileOptions.h - what the compile driver is told -------*- C++ -*-===//
//
// The compile driver's options alone, without MLIR's headers: the tools
// fill them from their flags (parplan.cpp, which includes CLI11, stays
// light), and Compile.h takes them.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DRIVER_COMPILEOPTIONS_H
#define PARPLAN_DRIVER_COMPILEOPTIONS_H

#include "parplan/Cost/Cluster.h"
#include "parplan/Schedule/Pipeline.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace parplan::driver {

/// Where and how sbp-assign lays a program out; shared by `shard` and
/// `compile`.
struct LayoutOptions {
  /// A preset name or a cluster file, resolved once and attached to every
  /// model the compile imports (attachCluster), in place of any it
  /// carries; empty: the cluster the model carries.
  std::string cluster = "dgx-h100";
  /// Where placement chose some of the cluster's nodes: the cluster of
  /// those alone (cost::subCluster), attached instead of `cluster`'s.
  std::shared_ptr<const cost::Cluster> placedCluster;
  /// On a cluster spread over regions: "auto" chooses the machines and
  /// numbers their devices region by region (driver/Placement.h), "file"
  /// takes the cluster's devices in the file's order.
  std::string placement = "auto";
  /// Who chooses the machines where placement is "auto": "search" lays out
  /// the best few groups of nodes and keeps the fastest plan; "gnn" lays
  /// out the few groups around the machines Hulk's graph network proposes
  /// (driver/GnnPlacer.h), the trained placer in `placerModel`.
  std::string placer = "search";
  std::string placerModel;
  /// Where the search placed the machines: appends the cluster's graph and
  /// the machines kept to the GNN placer's training batches in this
  /// directory (appendPlacerExample).
  std::string placerDataset;
  std::string mesh;
  std::string strategy = "auto";
  /// An annotations file (docs/sbp-annotations.md), read once and attached
  /// to every model the compile imports.
  std::string annotations;
  /// Pipeline stages placed evenly (0: the annotations' only).
  int64_t stages = 0;
  /// The stage count of least predicted step, climbed over the divisors
  /// of the mesh's first axis.
  bool autoStages = false;
  /// Stages' layers cut by their work alone, as on devices all alike,
  /// rather than by each stage's speed (Whale's switch from its
  /// hardware-aware balancing to even shares).
  bool evenShares = false;
  /// Where device types differ along one mesh axis: "auto" lays the mesh
  /// out with parts by speed and with even parts and keeps the faster,
  /// "speed" and "even" one of them ("even" also cuts stages by work
  /// alone, as evenShares does).
  std::string shares = "auto";
  /// Where stages of different device types end: "auto" between layers,
  /// and the pipeline search tries a cut inside layers where it balances
  /// them better; "layers" between layers only; "inside-layers" inside
  /// them where that balances them better (docs/pipeline.md).
  std::string stageCuts = "auto";
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
  /// f32 or low: the type the gradients are summed in over micro-batches.
  std::string gradientSums = "f32";
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
  /// The step compiled: a training step under `training`, or with
  /// `inference` the forward pass alone, for serving (docs/inference.md),
  /// which reads only `training.microBatches` of it.
  bool inference = false;
  TrainingOptions training;
  /// The global batch the micro-batches divide (0: not given).
  int64_t batch = 0;
  /// `micro-batches auto`, and whether a count was given at all (on
  /// stages, one not given is searched).
  bool autoMicroBatches = false;
  bool microBatchesGiven = false;
  /// The order stages run their micro-batches in (lower-to-plan's
  /// `schedule`), or "auto"; whether it was given.
  std::string schedule = schedule::kDefaultPipelineScheduleName;
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
  /// Bytes per device the layouts may use, below each device's memory (0:
  /// all of it): sbp-assign's `memory-budget`. The compile sets it itself
  /// for a second layout when the arena of the first misses the cost
  /// model's estimate by enough not to fit.
  double memoryBudget = 0;
  /// Told each stage as it starts (what, and the share of the compile
  /// done), for progress; and when a stage that was told has ended.
  std::function<void(const std::string &, double)> onStage;
  std::function<void()> onStageEnd;
};

} // namespace parplan::driver

#endif // PARPLAN_DRIVER_COMPILEOPTIONS_H
