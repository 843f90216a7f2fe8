//===- Commands.h - the parplan CLI's subcommands ---------------*- C++ -*-===//
//
// Each subcommand lives in its own file and exposes one entry point; this
// keeps CLI11, which is slow to compile, in parplan.cpp alone.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TOOLS_PARPLAN_COMMANDS_H
#define PARPLAN_TOOLS_PARPLAN_COMMANDS_H

#include <string>
#include <vector>

namespace parplan::cli {

struct CheckOptions {
  std::string input;
  bool printIR = false;
};

struct ImportOptions {
  std::string input;
  std::vector<std::string> dims;
  std::string output;
  bool raw = false;
};

struct ClusterShowOptions {
  /// A preset name or a cluster file (YAML or JSON).
  std::string cluster;
  /// A mesh shape such as "4x8"; empty for the cluster's default mesh.
  std::string mesh;
  /// "yaml" or "json": print the cluster in the file format instead.
  std::string format;
};

/// Where and how sbp-assign lays a program out; shared by `shard` and
/// `compile`.
struct LayoutOptions {
  std::string cluster = "dgx-h100";
  std::string mesh;
  std::string strategy = "auto";
  std::string annotations;
  /// Pipeline stages placed evenly (0: the annotations' only).
  int64_t stages = 0;
  /// `--stages auto` (compile): the stage count of least predicted step,
  /// climbed over the divisors of the mesh's first axis.
  bool autoStages = false;
  /// Megatron's grid (0: not given): the tensor-parallel degree, the mesh's
  /// last axis, and the pipeline stages; data parallel over the rest.
  int64_t tensor = 0;
  int64_t pipeline = 0;
};

struct ShardOptions {
  std::string input;
  std::vector<std::string> dims;
  LayoutOptions layout;
  std::string optimizer = "adam";
  bool inference = false;
  bool fullPrecision = false;
  bool explain = false;
  std::string explainFile;
  std::string output;
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

struct TrainStepOptions {
  std::string input;
  std::vector<std::string> dims;
  TrainingOptions training;
  std::string output;
};

struct CompileOptions {
  std::string input;
  std::vector<std::string> dims;
  int64_t batch = 0;
  LayoutOptions layout;
  bool train = false;
  TrainingOptions training;
  std::string emit;
  std::string output;
  /// Report the time of every pass (MLIR's -mlir-timing) on stderr.
  bool mlirTiming = false;
  /// No progress on stderr.
  bool quiet = false;
  /// Simulate the plan and write its timeline here, and a report of the
  /// plan and its simulation here (docs/simulate.md).
  std::string trace, report;
  /// Whether --recompute was given: without it, a step that fits nowhere
  /// is tried again with selective, then full recomputation.
  bool recomputeGiven = false;
  /// The order stages run their micro-batches in (lower-to-plan's
  /// `schedule`), or "auto".
  std::string schedule = "1f1b";
  /// The model chunks of each stage under the interleaved schedule, and
  /// whether --chunks was given.
  int64_t chunks = 2;
  bool chunksGiven = false;
  /// `--micro-batches auto`; whether --micro-batches and --schedule were
  /// given (with --stages auto, the ones not given are searched too).
  bool autoMicroBatches = false;
  bool microBatchesGiven = false;
  bool scheduleGiven = false;
  /// Whether --stages was given (without it, a mesh over several nodes
  /// gets --stages auto).
  bool stagesGiven = false;
};

/// `parplan reshard`: one tensor's move between two meshes of a cluster,
/// planned in every mode (docs/cross-mesh.md).
struct ReshardOptions {
  std::string cluster = "dgx-h100";
  std::string tensor = "x";
  std::string shape;
  std::string dtype = "f32";
  /// "2x4@8": a 2x4 mesh on the devices from 8.
  std::string from, to;
  std::string fromLayout, toLayout;
  /// With an output directory: the plan of `mode` and `balancing`.
  std::string output;
  std::string mode = "broadcast", balancing = "by-bytes";
};
int runReshard(const ReshardOptions &options);

/// `parplan pipeline`: one pipeline schedule's timeline on stages of given
/// times, with its bubble and the activations each stage holds
/// (docs/pipeline.md).
struct PipelineOptions {
  int64_t stages = 0, microBatches = 0, chunks = 0;
  std::string schedule = "1f1b";
  /// One micro-batch through one stage, and a send between stages, in any
  /// unit.
  double forward = 1, backward = 2, send = 0;
  /// Characters per unit of time in the picture.
  int64_t columns = 2;
};
int runPipeline(const PipelineOptions &options);

/// `parplan simulate`: a plan's training step simulated under the cost
/// model, beside the cost model's prediction, with the critical path, each
/// class of devices' time and memory, and optionally the timeline as a
/// trace (docs/simulate.md).
struct SimulateOptions {
  std::string plan;
  /// A preset or cluster file; empty: the cluster the plan carries.
  std::string cluster;
  int streams = 2;
  /// Write the timeline here (Chrome trace-event JSON), with the measured
  /// trace `merge` (parplan-run --trace) beside it when given.
  std::string trace, merge;
  int64_t traceDevices = 64;
};
int runSimulate(const SimulateOptions &options);

/// `parplan clusters`: list the built-in cluster presets.
int runClusters();

/// `parplan cluster show`: print a cluster (a preset or a file) with its
/// device types, nodes, links and the levels and links of a mesh's axes.
int runClusterShow(const ClusterShowOptions &options);

/// `parplan import`: import an ONNX model into the nn dialect and bring it
/// to canonical form. Returns the process exit code.
int runImport(const ImportOptions &options);

/// `parplan shard`: choose a sharding for every op of a model on a cluster
/// mesh (sbp-assign) and make its reshardings explicit (insert-boxing).
int runShard(const ShardOptions &options);

/// `parplan train-step`: build the training step of a model (nn-autodiff)
/// and print its parameters, FLOPs and saved activations.
int runTrainStep(const TrainStepOptions &options);

/// `parplan compile`: the main job, a model to a plan file for parplan-run
/// and its summary.
int runCompile(const CompileOptions &options);

/// `parplan check`: parse and verify an IR file of parplan's dialects and
/// summarize it. Returns the process exit code.
int runCheck(const CheckOptions &options);

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_COMMANDS_H
