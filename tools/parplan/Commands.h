//===- Commands.h - the parplan CLI's subcommands ---------------*- C++ -*-===//
//
// Each subcommand lives in its own file and exposes one entry point; this
// keeps CLI11, which is slow to compile, in parplan.cpp and Flags.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TOOLS_PARPLAN_COMMANDS_H
#define PARPLAN_TOOLS_PARPLAN_COMMANDS_H

#include "parplan/Cost/Presets.h"
#include "parplan/Driver/CompileOptions.h"

#include <string>
#include <vector>

namespace parplan::cli {

/// What an ONNX import is told about the model's graph inputs: `--dim
/// NAME=VALUE` for symbolic dimensions and `--input-value NAME=V[,V...]` for
/// inputs held fixed.
struct ImportBindings {
  std::vector<std::string> dims;
  std::vector<std::string> inputValues;
  bool empty() const { return dims.empty() && inputValues.empty(); }
};

struct CheckOptions {
  std::string input;
  bool printIR = false;
};

struct ImportOptions {
  std::string input;
  ImportBindings bindings;
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

struct ClusterGenerateOptions {
  parplan::cost::GeoClusterSpec spec;
  /// The file to write; empty for standard output.
  std::string output;
  /// "yaml" or "json"; empty: by `output`'s extension.
  std::string format;
};

/// The layout and training options, as the compile driver takes them.
using LayoutOptions = driver::LayoutOptions;
using TrainingOptions = driver::TrainingOptions;

struct ShardOptions {
  std::string input;
  ImportBindings bindings;
  LayoutOptions layout;
  std::string optimizer = "adam";
  bool inference = false;
  bool fullPrecision = false;
  bool explain = false;
  std::string explainFile;
  std::string output;
};

struct TrainStepOptions {
  std::string input;
  ImportBindings bindings;
  TrainingOptions training;
  std::string output;
};

struct CompileOptions {
  std::string input;
  ImportBindings bindings;
  bool train = false;
  std::string emit;
  std::string output;
  /// Report the time of every pass (MLIR's -mlir-timing) on stderr.
  bool mlirTiming = false;
  /// No progress on stderr.
  bool quiet = false;
  /// The searches that explain their decisions on stderr (Transforms/Debug.h).
  std::vector<std::string> debugOnly;
  /// Simulate the plan and write its timeline here, and a report of the
  /// plan and its simulation here (docs/simulate.md).
  std::string trace, report;
  /// What the compile driver is told: the layout, the training step, the
  /// pipeline's shape.
  driver::CompileOptions compile;
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
  std::string schedule = parplan::schedule::kDefaultPipelineScheduleName;
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
  int streams = 3;
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
int runClusterGenerate(const ClusterGenerateOptions &options);

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

/// The options of `parplan calibrate`.
struct CalibrateOptions {
  std::string output;
  std::string name = "calibrated";
  int64_t devices = 0;
  bool quick = false;
  bool listDevices = false;
};

/// `parplan calibrate`: measure the local GPUs and write the cluster file
/// (docs/cluster.md, "Calibrated clusters"); with --list-devices, one line
/// per visible GPU, or why there is none.
int runCalibrate(const CalibrateOptions &options);

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_COMMANDS_H
