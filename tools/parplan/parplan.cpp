//===- parplan.cpp - the parplan command line -----------------------------===//

#include "Commands.h"
#include "Flags.h"

#include "parplan/Cost/CrossMesh.h"
#include "parplan/Schedule/Pipeline.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>
#include <tuple>

using parplan::cli::addDimOption;
using parplan::cli::addLayoutOptions;
using parplan::cli::addTrainingOptions;

int main(int argc, char **argv) {
  CLI::App app{"parplan: ONNX model + cluster -> per-device parallelization "
               "plan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parplan 0.1.0");

  parplan::cli::CheckOptions check;
  CLI::App *checkCommand = app.add_subcommand(
      "check", "Parse and verify an IR file of the nn, sbp and plan dialects, "
               "and summarize it");
  checkCommand->add_option("input", check.input, "IR file (.mlir)")->required();
  checkCommand->add_flag("--print-ir", check.printIR,
                         "Print the verified IR after the summary");

  parplan::cli::ImportOptions import;
  CLI::App *importCommand = app.add_subcommand(
      "import", "Import an ONNX model (binary or text) into the nn dialect, "
                "in canonical form (layer norms and GELUs fused)");
  importCommand->add_option("model", import.input, "ONNX model")->required();
  addDimOption(importCommand, import.dims);
  importCommand->add_option("-o,--output", import.output,
                            "Write the IR here and print a summary");
  importCommand->add_flag("--raw", import.raw,
                          "Skip canonicalization and fusion: the importer's "
                          "output as it is");

  parplan::cli::ShardOptions shard;
  CLI::App *shardCommand = app.add_subcommand(
      "shard", "Choose an SBP sharding for every op of a model on a mesh of "
               "a cluster, by the cost model, and insert the boxing it needs");
  shardCommand->add_option("model", shard.input, "ONNX model, or nn IR (.mlir)")
      ->required();
  addDimOption(shardCommand, shard.dims);
  addLayoutOptions(shardCommand, shard.layout);
  shardCommand
      ->add_option("--optimizer", shard.optimizer,
                   "sgd, momentum, adam (default) or adamw")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw"}));
  shardCommand->add_flag("--inference", shard.inference,
                         "Cost inference rather than a training step");
  shardCommand->add_flag("--fp32", shard.fullPrecision,
                         "Compute and store in fp32 (default: mixed "
                         "precision, bf16 with fp32 master weights)");
  shardCommand->add_flag("--explain", shard.explain,
                         "Attach sbp.explain (cost, runner-up) to every op");
  shardCommand->add_option("--explain-json", shard.explainFile,
                           "Write the plan's JSON summary to this file");
  shardCommand->add_option("-o,--output", shard.output,
                           "Write the IR here and print a summary");

  parplan::cli::CompileOptions compile;
  CLI::App *compileCommand = app.add_subcommand(
      "compile", "Compile a model for a cluster into a plan for parplan-run "
                 "(docs/cli.md)");
  compileCommand
      ->add_option("model", compile.input, "ONNX model, or nn IR (.mlir)")
      ->required();
  addDimOption(compileCommand, compile.dims);
  compileCommand
      ->add_option("--batch", compile.compile.batch,
                   "Bind the symbolic dimension 'batch' (the global batch)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  addLayoutOptions(compileCommand, compile.compile.layout);
  compileCommand->add_flag("--train", compile.train,
                           "Compile a training step (required for now)");
  addTrainingOptions(compileCommand, compile.compile.training,
                     &compile.compile.autoMicroBatches);
  compileCommand->add_option(
      "--schedule", compile.compile.schedule,
      "On stages with micro-batches, the order each stage runs their "
      "forwards and backwards in: gpipe, 1f1b, eager-1f1b, interleaved, "
      "sequential, or auto for the one of least predicted step (default: "
      "auto on stages; docs/pipeline.md)");
  compileCommand
      ->add_option("--chunks", compile.compile.chunks,
                   "With --schedule interleaved: the model chunks of each "
                   "stage --stages places (default 2)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  compileCommand
      ->add_option("--emit", compile.emit,
                   "Print the IR after a stage: nn, sbp or plan")
      ->check(CLI::IsMember({"nn", "sbp", "plan"}));
  compileCommand->add_option("-o,--output", compile.output,
                             "Output directory: plan.pb and summary.json");
  compileCommand->add_flag(
      "--allow-over-memory", compile.compile.allowOverMemory,
      "Write a plan whose planned peak memory exceeds a device's, with a "
      "warning (by default an error: such a plan cannot run)");
  compileCommand->add_flag("--mlir-timing", compile.mlirTiming,
                           "Report the time of every pass on stderr");
  compileCommand
      ->add_option("--debug-only", compile.debugOnly,
                   "Explain the decisions of these searches on stderr, one "
                   "line each: sbp-assign, pipeline-search, recompute "
                   "(comma-separated; no progress is shown)")
      ->delimiter(',')
      ->check(CLI::IsMember({"sbp-assign", "pipeline-search", "recompute"}));
  compileCommand->add_flag(
      "-q,--quiet", compile.quiet,
      "Show no progress on stderr (by default, each stage that takes over a "
      "second: a bar on a terminal, else a line when it starts and ends)");
  compileCommand
      ->add_option("--trace", compile.trace,
                   "Simulate the plan's step and write its timeline here "
                   "as Chrome trace-event JSON for ui.perfetto.dev "
                   "(docs/simulate.md)")
      ->needs(compileCommand->get_option("--output"));
  compileCommand
      ->add_option("--report", compile.report,
                   "Write one self-contained HTML page of the plan: its "
                   "meshes and stages, each device's simulated timeline and "
                   "memory, the critical path and the parameters' layouts "
                   "(docs/simulate.md)")
      ->needs(compileCommand->get_option("--output"));

  parplan::cli::TrainStepOptions trainStep;
  CLI::App *trainStepCommand = app.add_subcommand(
      "train-step", "Build the training step of a model: forward, loss, "
                    "backward and optimizer update (docs/training.md)");
  trainStepCommand
      ->add_option("model", trainStep.input, "ONNX model, or nn IR (.mlir)")
      ->required();
  addDimOption(trainStepCommand, trainStep.dims);
  addTrainingOptions(trainStepCommand, trainStep.training);
  trainStepCommand->add_option("-o,--output", trainStep.output,
                               "Write the IR here and print a summary");

  parplan::cli::ReshardOptions reshard;
  CLI::App *reshardCommand = app.add_subcommand(
      "reshard", "Plan a tensor's move between two meshes of a cluster in "
                 "every mode, beside the lower bound (docs/cross-mesh.md)");
  reshardCommand->add_option("--cluster", reshard.cluster,
                             "Preset name or cluster file (default dgx-h100)");
  reshardCommand->add_option("--dtype", reshard.dtype,
                             "Element type (default f32)");
  reshardCommand->add_option("--tensor", reshard.tensor,
                             "Name in messages (default x)");
  for (auto [flag, target, help] :
       {std::tuple{"--shape", &reshard.shape, "Tensor shape, e.g. 1024x1024"},
        std::tuple{"--from", &reshard.from,
                   "Source mesh: SHAPE@FIRST, e.g. 2x4@0 (devices 0-7)"},
        std::tuple{"--to", &reshard.to,
                   "Destination mesh: SHAPE@FIRST, e.g. 2x4@8"},
        std::tuple{"--from-layout", &reshard.fromLayout,
                   "Source layout, e.g. \"[S(0), B]\""},
        std::tuple{"--to-layout", &reshard.toLayout,
                   "Destination layout, e.g. \"[B, S(1)]\""}})
    reshardCommand->add_option(flag, *target, help)->required();
  reshardCommand->add_option(
      "-o,--output", reshard.output,
      "Write DIR/plan.pb: the move in --mode and --balancing, which "
      "mpirun -np N parplan-run DIR/plan.pb --check executes and verifies");
  reshardCommand
      ->add_option("--mode", reshard.mode,
                   "With -o: send-recv, send-recv+all-gather or broadcast "
                   "(default)")
      ->check(CLI::IsMember(parplan::cost::crossMeshModeNames()));
  reshardCommand
      ->add_option("--balancing", reshard.balancing,
                   "With -o: none, by-bytes (default) or by-order")
      ->check(CLI::IsMember(parplan::cost::crossMeshBalancingNames()));

  parplan::cli::PipelineOptions pipeline;
  CLI::App *pipelineCommand = app.add_subcommand(
      "pipeline", "Draw a pipeline schedule's timeline, its bubble and the "
                  "activations each stage holds (docs/pipeline.md)");
  pipelineCommand->add_option("--stages", pipeline.stages, "Stages (P)")
      ->required();
  pipelineCommand
      ->add_option("--micro-batches", pipeline.microBatches,
                   "Micro-batches per step (M)")
      ->required();
  pipelineCommand
      ->add_option("--schedule", pipeline.schedule,
                   "gpipe, 1f1b (default), eager-1f1b or interleaved")
      ->check(CLI::IsMember(parplan::schedule::pipelineScheduleNames()));
  pipelineCommand->add_option(
      "--chunks", pipeline.chunks,
      "Model chunks per stage (interleaved; default 2 there, else 1)");
  pipelineCommand->add_option(
      "--forward", pipeline.forward,
      "One micro-batch's forward through a stage, in any unit (default 1)");
  pipelineCommand->add_option("--backward", pipeline.backward,
                              "Its backward (default 2)");
  pipelineCommand->add_option(
      "--send", pipeline.send,
      "An activation or gradient between stages (default 0)");
  pipelineCommand->add_option(
      "--columns", pipeline.columns,
      "Characters per unit of time in the picture (default 2)");

  parplan::cli::SimulateOptions simulateOptions;
  CLI::App *simulateCommand = app.add_subcommand(
      "simulate", "Simulate a plan's training step under the cost model: the "
                  "step beside the prediction, the critical path, each "
                  "device's busy, idle and communication time and memory, "
                  "and the timeline for Perfetto (docs/simulate.md)");
  simulateCommand
      ->add_option("plan", simulateOptions.plan,
                   "Plan file (parplan compile's plan.pb)")
      ->required();
  simulateCommand->add_option(
      "--cluster", simulateOptions.cluster,
      "Preset name or cluster file to time the plan on (default: the "
      "cluster the plan was compiled for)");
  simulateCommand
      ->add_option("--streams", simulateOptions.streams,
                   "Streams per device: 2 (default), kernels beside "
                   "collectives and messages as the CUDA backend runs them, "
                   "or 1, every instruction in turn as the CPU backend does")
      ->check(CLI::IsMember({1, 2}));
  simulateCommand->add_option(
      "--trace", simulateOptions.trace,
      "Write the timeline as Chrome trace-event JSON (ui.perfetto.dev, "
      "chrome://tracing)");
  simulateCommand
      ->add_option("--merge", simulateOptions.merge,
                   "With --trace: add this measured trace (parplan-run "
                   "--trace) to the file, beside the simulated one")
      ->needs(simulateCommand->get_option("--trace"));
  simulateCommand
      ->add_option("--trace-devices", simulateOptions.traceDevices,
                   "A trace has a process per device up to this many "
                   "devices, else one per class of devices that run alike "
                   "(default 64)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));

  CLI::App *clustersCommand =
      app.add_subcommand("clusters", "List the built-in cluster presets");

  parplan::cli::ClusterShowOptions clusterShow;
  CLI::App *clusterCommand = app.add_subcommand(
      "cluster", "Inspect a cluster description (a preset or a file)");
  clusterCommand->require_subcommand(1);
  CLI::App *clusterShowCommand = clusterCommand->add_subcommand(
      "show", "Print a cluster's device types, nodes and links, and the "
              "level and slowest link of each axis of a mesh");
  clusterShowCommand
      ->add_option("cluster", clusterShow.cluster,
                   "Preset name (see `parplan clusters`) or cluster file "
                   "(YAML or JSON)")
      ->required();
  clusterShowCommand->add_option(
      "--mesh", clusterShow.mesh,
      "Mesh shape over the first devices, e.g. 4x8 (default: nodes x "
      "devices per node when uniform, else all devices)");
  clusterShowCommand
      ->add_option("--format", clusterShow.format,
                   "Print the cluster as a cluster file instead: yaml or json")
      ->check(CLI::IsMember({"yaml", "json"}));

  parplan::cli::CalibrateOptions calibrate;
  CLI::App *calibrateCommand = app.add_subcommand(
      "calibrate", "Measure the local GPUs (cuBLAS matmuls, memory "
                   "bandwidth, NCCL all-reduce) and write a cluster file "
                   "for --cluster (docs/cluster.md)");
  calibrateCommand->add_option("-o,--output", calibrate.output,
                               "Write the cluster file here (FILE.yaml, or "
                               "FILE.json for JSON) and print the "
                               "measurements (default: YAML on stdout, the "
                               "measurements on stderr)");
  calibrateCommand->add_option("--name", calibrate.name,
                               "Name of the cluster (default calibrated)");
  calibrateCommand
      ->add_option("--devices", calibrate.devices,
                   "Use the first N visible GPUs (default: all)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  calibrateCommand->add_flag("--quick", calibrate.quick,
                             "One matmul shape, smaller buffers, fewer "
                             "repeats: seconds instead of a minute");
  calibrateCommand->add_flag("--list-devices", calibrate.listDevices,
                             "Print the visible GPUs, one per line (or 'no "
                             "CUDA device: REASON'), and exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    // --help and --version exit 0; a usage error exits 2, as in getopt tools.
    return app.exit(error) == 0 ? 0 : 2;
  }
  if (checkCommand->parsed())
    return parplan::cli::runCheck(check);
  if (importCommand->parsed())
    return parplan::cli::runImport(import);
  if (shardCommand->parsed())
    return parplan::cli::runShard(shard);
  if (trainStepCommand->parsed())
    return parplan::cli::runTrainStep(trainStep);
  if (reshardCommand->parsed())
    return parplan::cli::runReshard(reshard);
  if (pipelineCommand->parsed())
    return parplan::cli::runPipeline(pipeline);
  if (simulateCommand->parsed())
    return parplan::cli::runSimulate(simulateOptions);
  if (compileCommand->parsed()) {
    compile.compile.recomputeGiven = compileCommand->count("--recompute") > 0;
    compile.compile.microBatchesGiven =
        compileCommand->count("--micro-batches") > 0;
    compile.compile.scheduleGiven = compileCommand->count("--schedule") > 0;
    compile.compile.stagesGiven = compileCommand->count("--stages") > 0;
    compile.compile.chunksGiven = compileCommand->count("--chunks") > 0;
    return parplan::cli::runCompile(compile);
  }
  // An exception that escapes a cluster command (out of memory on a huge
  // cluster) is an error message, never an abort.
  try {
    if (clustersCommand->parsed())
      return parplan::cli::runClusters();
    if (clusterShowCommand->parsed())
      return parplan::cli::runClusterShow(clusterShow);
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "parplan: error: out of memory\n");
    return 1;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "parplan: error: %s\n", error.what());
    return 1;
  }
  try {
    if (calibrateCommand->parsed())
      return parplan::cli::runCalibrate(calibrate);
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "parplan calibrate: out of memory\n");
    return 1;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "parplan calibrate: %s\n", error.what());
    return 1;
  }
  return 1;
}
