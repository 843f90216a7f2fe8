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

using parplan::cli::addImportBindingOptions;
using parplan::cli::addLayoutOptions;
using parplan::cli::addTrainingOptions;

namespace {

/// `parplan check`: its options into `options`.
CLI::App *addCheckCommand(CLI::App &app, parplan::cli::CheckOptions &options) {
  CLI::App *command = app.add_subcommand(
      "check", "Parse and verify an IR file of the nn, sbp and plan dialects, "
               "and summarize it");
  command->add_option("input", options.input, "IR file (.mlir)")->required();
  command->add_flag("--print-ir", options.printIR,
                    "Print the verified IR after the summary");
  return command;
}

/// `parplan import`: its options into `options`.
CLI::App *addImportCommand(CLI::App &app,
                           parplan::cli::ImportOptions &options) {
  CLI::App *command = app.add_subcommand(
      "import", "Import an ONNX model (binary or text) into the nn dialect, "
                "in canonical form (layer norms and GELUs fused)");
  command->add_option("model", options.input, "ONNX model")->required();
  addImportBindingOptions(command, options.bindings);
  command->add_option("-o,--output", options.output,
                      "Write the IR here and print a summary");
  command->add_flag("--raw", options.raw,
                    "Skip canonicalization and fusion: the importer's "
                    "output as it is");
  return command;
}

/// `parplan shard`: its options into `options`.
CLI::App *addShardCommand(CLI::App &app, parplan::cli::ShardOptions &options) {
  CLI::App *command = app.add_subcommand(
      "shard", "Choose an SBP sharding for every op of a model on a mesh of "
               "a cluster, by the cost model, and insert the boxing it needs");
  command->add_option("model", options.input, "ONNX model, or nn IR (.mlir)")
      ->required();
  addImportBindingOptions(command, options.bindings);
  addLayoutOptions(command, options.layout);
  command
      ->add_option("--optimizer", options.optimizer,
                   "sgd, momentum, adam (default) or adamw")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw"}));
  command->add_flag("--inference", options.inference,
                    "Cost inference rather than a training step");
  command->add_flag("--fp32", options.fullPrecision,
                    "Compute and store in fp32 (default: mixed "
                    "precision, bf16 with fp32 master weights)");
  command->add_flag("--explain", options.explain,
                    "Attach sbp.explain (cost, runner-up) to every op");
  command->add_option("--explain-json", options.explainFile,
                      "Write the plan's JSON summary to this file");
  command->add_option("-o,--output", options.output,
                      "Write the IR here and print a summary");
  return command;
}

/// `parplan compile`: its options into `options`.
CLI::App *addCompileCommand(CLI::App &app,
                            parplan::cli::CompileOptions &options) {
  CLI::App *command = app.add_subcommand(
      "compile", "Compile a model for a cluster into a plan for parplan-run "
                 "(docs/cli.md)");
  command->add_option("model", options.input, "ONNX model, or nn IR (.mlir)")
      ->required();
  addImportBindingOptions(command, options.bindings);
  command
      ->add_option("--batch", options.compile.batch,
                   "Bind the symbolic dimension 'batch' (the global batch)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  addLayoutOptions(command, options.compile.layout);
  command
      ->add_option(
          "--placement", options.compile.layout.placement,
          "On a cluster spread over regions: 'auto' (default) chooses the "
          "machines that take part (on the default mesh) and numbers the "
          "devices region by region along the path of fastest links; "
          "'file' numbers them as the cluster file lists them "
          "(docs/pipeline.md#placement)")
      ->check(CLI::IsMember({"auto", "file"}));
  command
      ->add_option("--placer", options.compile.layout.placer,
                   "With --placement auto: 'search' (default) lays out the "
                   "best few groups of machines and keeps the fastest plan; "
                   "'gnn' lays out the few groups around the machines a "
                   "trained graph network (--placer-model) proposes "
                   "(docs/placement.md)")
      ->check(CLI::IsMember({"search", "gnn"}));
  command->add_option(
      "--placer-model", options.compile.layout.placerModel,
      "--placer gnn: the trained placer's directory (model.onnx, weights/; "
      "default: $PARPLAN_CACHE_DIR/placer, $HOME/.cache/parplan/placer, "
      "where scripts/train-placer.sh writes one)");
  command->add_option(
      "--placer-dataset", options.compile.layout.placerDataset,
      "After the search places the machines, append the cluster's graph and "
      "the machines kept to the GNN placer's training batches in DIR "
      "(docs/placement.md)");
  CLI::Option *train = command->add_flag(
      "--train", options.train,
      "Compile a training step (forward, loss, backward, optimizer); "
      "without it, the forward pass alone for serving "
      "(docs/inference.md)");
  // An inference plan has no loss, gradients or optimizer: of the
  // training options it reads only the micro-batches.
  for (CLI::Option *option :
       addTrainingOptions(command, options.compile.training,
                          &options.compile.autoMicroBatches))
    if (!option->check_lname("micro-batches"))
      option->needs(train);
  command->add_option(
      "--schedule", options.compile.schedule,
      "On stages with micro-batches, the order each stage runs their "
      "forwards and backwards in: gpipe, 1f1b, eager-1f1b, interleaved, "
      "sequential, or auto for the one of least predicted step (default: "
      "auto on stages; docs/pipeline.md)");
  command
      ->add_option("--chunks", options.compile.chunks,
                   "With --schedule interleaved: the model chunks of each "
                   "stage --stages places (default 2)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  command
      ->add_option("--emit", options.emit,
                   "Print the IR after a stage: nn, sbp or plan")
      ->check(CLI::IsMember({"nn", "sbp", "plan"}));
  command->add_option("-o,--output", options.output,
                      "Output directory: plan.pb and summary.json");
  command->add_flag(
      "--allow-over-memory", options.compile.allowOverMemory,
      "Write a plan whose planned peak memory exceeds a device's, with a "
      "warning (by default an error: such a plan cannot run)");
  command->add_flag("--mlir-timing", options.mlirTiming,
                    "Report the time of every pass on stderr");
  command
      ->add_option("--debug-only", options.debugOnly,
                   "Explain the decisions of these searches on stderr, one "
                   "line each: sbp-assign, pipeline-search, recompute "
                   "(comma-separated; no progress is shown)")
      ->delimiter(',')
      ->check(CLI::IsMember({"sbp-assign", "pipeline-search", "recompute"}));
  command->add_flag(
      "-q,--quiet", options.quiet,
      "Show no progress on stderr (by default, each stage that takes over a "
      "second: a bar on a terminal, else a line when it starts and ends)");
  command
      ->add_option("--trace", options.trace,
                   "Simulate the plan's step and write its timeline here "
                   "as Chrome trace-event JSON for ui.perfetto.dev "
                   "(docs/simulate.md)")
      ->needs(command->get_option("--output"));
  command
      ->add_option("--report", options.report,
                   "Write one self-contained HTML page of the plan: its "
                   "meshes and stages, each device's simulated timeline and "
                   "memory, the critical path and the parameters' layouts "
                   "(docs/simulate.md)")
      ->needs(command->get_option("--output"));
  return command;
}

/// `parplan train-step`: its options into `options`.
CLI::App *addTrainStepCommand(CLI::App &app,
                              parplan::cli::TrainStepOptions &options) {
  CLI::App *command = app.add_subcommand(
      "train-step", "Build the training step of a model: forward, loss, "
                    "backward and optimizer update (docs/training.md)");
  command->add_option("model", options.input, "ONNX model, or nn IR (.mlir)")
      ->required();
  addImportBindingOptions(command, options.bindings);
  addTrainingOptions(command, options.training);
  command->add_option("-o,--output", options.output,
                      "Write the IR here and print a summary");
  return command;
}

/// `parplan reshard`: its options into `options`.
CLI::App *addReshardCommand(CLI::App &app,
                            parplan::cli::ReshardOptions &options) {
  CLI::App *command = app.add_subcommand(
      "reshard", "Plan a tensor's move between two meshes of a cluster in "
                 "every mode, beside the lower bound (docs/cross-mesh.md)");
  command->add_option("--cluster", options.cluster,
                      "Preset name or cluster file (default dgx-h100)");
  command->add_option("--dtype", options.dtype, "Element type (default f32)");
  command->add_option("--tensor", options.tensor,
                      "Name in messages (default x)");
  for (auto [flag, target, help] :
       {std::tuple{"--shape", &options.shape, "Tensor shape, e.g. 1024x1024"},
        std::tuple{"--from", &options.from,
                   "Source mesh: SHAPE@FIRST, e.g. 2x4@0 (devices 0-7)"},
        std::tuple{"--to", &options.to,
                   "Destination mesh: SHAPE@FIRST, e.g. 2x4@8"},
        std::tuple{"--from-layout", &options.fromLayout,
                   "Source layout, e.g. \"[S(0), B]\""},
        std::tuple{"--to-layout", &options.toLayout,
                   "Destination layout, e.g. \"[B, S(1)]\""}})
    command->add_option(flag, *target, help)->required();
  command->add_option(
      "-o,--output", options.output,
      "Write DIR/plan.pb: the move in --mode and --balancing, which "
      "mpirun -np N parplan-run DIR/plan.pb --check executes and verifies");
  command
      ->add_option("--mode", options.mode,
                   "With -o: send-recv, send-recv+all-gather or broadcast "
                   "(default)")
      ->check(CLI::IsMember(parplan::cost::crossMeshModeNames()));
  command
      ->add_option("--balancing", options.balancing,
                   "With -o: none, by-bytes (default) or by-order")
      ->check(CLI::IsMember(parplan::cost::crossMeshBalancingNames()));
  return command;
}

/// `parplan pipeline`: its options into `options`.
CLI::App *addPipelineCommand(CLI::App &app,
                             parplan::cli::PipelineOptions &options) {
  CLI::App *command = app.add_subcommand(
      "pipeline", "Draw a pipeline schedule's timeline, its bubble and the "
                  "activations each stage holds (docs/pipeline.md)");
  command->add_option("--stages", options.stages, "Stages (P)")->required();
  command
      ->add_option("--micro-batches", options.microBatches,
                   "Micro-batches per step (M)")
      ->required();
  command
      ->add_option("--schedule", options.schedule,
                   "gpipe, 1f1b (default), eager-1f1b or interleaved")
      ->check(CLI::IsMember(parplan::schedule::pipelineScheduleNames()));
  command->add_option(
      "--chunks", options.chunks,
      "Model chunks per stage (interleaved; default 2 there, else 1)");
  command->add_option(
      "--forward", options.forward,
      "One micro-batch's forward through a stage, in any unit (default 1)");
  command->add_option("--backward", options.backward,
                      "Its backward (default 2)");
  command->add_option("--send", options.send,
                      "An activation or gradient between stages (default 0)");
  command->add_option("--columns", options.columns,
                      "Characters per unit of time in the picture (default 2)");
  return command;
}

/// `parplan simulate`: its options into `options`.
CLI::App *addSimulateCommand(CLI::App &app,
                             parplan::cli::SimulateOptions &options) {
  CLI::App *command = app.add_subcommand(
      "simulate", "Simulate a plan's training step under the cost model: the "
                  "step beside the prediction, the critical path, each "
                  "device's busy, idle and communication time and memory, "
                  "and the timeline for Perfetto (docs/simulate.md)");
  command
      ->add_option("plan", options.plan,
                   "Plan file (parplan compile's plan.pb)")
      ->required();
  command->add_option(
      "--cluster", options.cluster,
      "Preset name or cluster file to time the plan on (default: the "
      "cluster the plan was compiled for)");
  command
      ->add_option("--streams", options.streams,
                   "Streams per device: 3 (default), as the CUDA backend "
                   "runs them: kernels beside collectives and messages, "
                   "and a gradient's reductions that only updates read on "
                   "a third; 2, those reductions on the communication "
                   "stream; 1, every instruction in turn as the CPU "
                   "backend does")
      ->check(CLI::IsMember({1, 2, 3}));
  command->add_option(
      "--trace", options.trace,
      "Write the timeline as Chrome trace-event JSON (ui.perfetto.dev, "
      "chrome://tracing)");
  command
      ->add_option("--merge", options.merge,
                   "With --trace: add this measured trace (parplan-run "
                   "--trace) to the file, beside the simulated one")
      ->needs(command->get_option("--trace"));
  command
      ->add_option("--trace-devices", options.traceDevices,
                   "A trace has a process per device up to this many "
                   "devices, else one per class of devices that run alike "
                   "(default 64)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  return command;
}

/// `parplan clusters`.
CLI::App *addClustersCommand(CLI::App &app) {
  return app.add_subcommand("clusters", "List the built-in cluster presets");
}

/// `parplan cluster show` (under `parplan cluster`): its options into
/// `options`.
CLI::App *addClusterShowCommand(CLI::App &app,
                                parplan::cli::ClusterShowOptions &options) {
  CLI::App *clusterCommand = app.add_subcommand(
      "cluster", "Inspect a cluster description (a preset or a file)");
  clusterCommand->require_subcommand(1);
  CLI::App *command = clusterCommand->add_subcommand(
      "show", "Print a cluster's device types, nodes and links, and the "
              "level and slowest link of each axis of a mesh");
  command
      ->add_option("cluster", options.cluster,
                   "Preset name (see `parplan clusters`) or cluster file "
                   "(YAML or JSON)")
      ->required();
  command->add_option(
      "--mesh", options.mesh,
      "Mesh shape over the first devices, e.g. 4x8 (default: nodes x "
      "devices per node when uniform, else all devices)");
  command
      ->add_option("--format", options.format,
                   "Print the cluster as a cluster file instead: yaml or json")
      ->check(CLI::IsMember({"yaml", "json"}));
  return command;
}

/// `parplan cluster generate` (under `parplan cluster`, which
/// addClusterShowCommand adds): its options into `options`.
CLI::App *
addClusterGenerateCommand(CLI::App &app,
                          parplan::cli::ClusterGenerateOptions &options) {
  CLI::App *command = app.get_subcommand("cluster")->add_subcommand(
      "generate", "Write a geo-distributed cluster file drawn from a seed: "
                  "regions over the globe, wide-area links by distance, "
                  "machines of mixed GPU types (docs/cluster.md)");
  command
      ->add_option("--machines", options.spec.machines,
                   "How many machines (1 to 65536, default 64)")
      ->check(CLI::Range(int64_t(1), parplan::cost::maxGeneratedMachines));
  command
      ->add_option("--regions", options.spec.regions,
                   "How many regions (default: the square root of the "
                   "machine count, at most 64)")
      ->check(CLI::Range(int64_t(1), parplan::cost::maxGeneratedRegions));
  command->add_option("--seed", options.spec.seed,
                      "The draws' seed (default 1): the same options give "
                      "the same file");
  command->add_option("-o,--output", options.output,
                      "Write the cluster file here (FILE.yaml, or FILE.json "
                      "for JSON; default: YAML on stdout)");
  command
      ->add_option("--format", options.format,
                   "yaml or json (default: by the output's extension)")
      ->check(CLI::IsMember({"yaml", "json"}));
  return command;
}

/// `parplan calibrate`: its options into `options`.
CLI::App *addCalibrateCommand(CLI::App &app,
                              parplan::cli::CalibrateOptions &options) {
  CLI::App *command = app.add_subcommand(
      "calibrate", "Measure the local GPUs (cuBLAS matmuls, memory "
                   "bandwidth, NCCL all-reduce) and write a cluster file "
                   "for --cluster (docs/cluster.md)");
  command->add_option("-o,--output", options.output,
                      "Write the cluster file here (FILE.yaml, or "
                      "FILE.json for JSON) and print the "
                      "measurements (default: YAML on stdout, the "
                      "measurements on stderr)");
  command->add_option("--name", options.name,
                      "Name of the cluster (default calibrated)");
  command
      ->add_option("--devices", options.devices,
                   "Use the first N visible GPUs (default: all)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  command->add_flag("--quick", options.quick,
                    "One matmul shape, smaller buffers, fewer "
                    "repeats: seconds instead of a minute");
  command->add_flag("--list-devices", options.listDevices,
                    "Print the visible GPUs, one per line (or 'no "
                    "CUDA device: REASON'), and exit");
  return command;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"parplan: ONNX model + cluster -> per-device parallelization "
               "plan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parplan 0.1.0");

  parplan::cli::CheckOptions check;
  CLI::App *checkCommand = addCheckCommand(app, check);
  parplan::cli::ImportOptions import;
  CLI::App *importCommand = addImportCommand(app, import);
  parplan::cli::ShardOptions shard;
  CLI::App *shardCommand = addShardCommand(app, shard);
  parplan::cli::CompileOptions compile;
  CLI::App *compileCommand = addCompileCommand(app, compile);
  parplan::cli::TrainStepOptions trainStep;
  CLI::App *trainStepCommand = addTrainStepCommand(app, trainStep);
  parplan::cli::ReshardOptions reshard;
  CLI::App *reshardCommand = addReshardCommand(app, reshard);
  parplan::cli::PipelineOptions pipeline;
  CLI::App *pipelineCommand = addPipelineCommand(app, pipeline);
  parplan::cli::SimulateOptions simulateOptions;
  CLI::App *simulateCommand = addSimulateCommand(app, simulateOptions);
  CLI::App *clustersCommand = addClustersCommand(app);
  parplan::cli::ClusterShowOptions clusterShow;
  CLI::App *clusterShowCommand = addClusterShowCommand(app, clusterShow);
  parplan::cli::ClusterGenerateOptions clusterGenerate;
  CLI::App *clusterGenerateCommand =
      addClusterGenerateCommand(app, clusterGenerate);
  parplan::cli::CalibrateOptions calibrate;
  CLI::App *calibrateCommand = addCalibrateCommand(app, calibrate);

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
    if (clusterGenerateCommand->parsed())
      return parplan::cli::runClusterGenerate(clusterGenerate);
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
