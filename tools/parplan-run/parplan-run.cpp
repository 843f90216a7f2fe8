//===- parplan-run.cpp - run a plan file under mpirun ---------------------===//
//
// mpirun -np N parplan-run plan.pb [--steps 5] [--seed S] [--one-batch]: rank i
// runs the program device i shares, instantiated for its mesh coordinate
// (docs/cli.md). Every rank reads and checks the whole
// plan, so a bad plan fails the same way everywhere: rank 0 prints the
// error and every rank exits 1. A rank that fails while running prints its
// error and calls MPI_Abort, so that the others stop instead of waiting
// for it in a collective.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/CudaBackend.h"
#include "parplan/Runtime/Executor.h"
#include "parplan/Runtime/MpiCommunicator.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/StreamSchedule.h"
#include "parplan/Runtime/Trace.h"
#include "parplan/Runtime/WeightFile.h"
#include "parplan/Support/Hash.h"

#include <CLI/CLI.hpp>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace parplan;
using namespace parplan::runtime;

namespace {

void printWeightSummary(const Executor &executor, int rank);
void printStageProfile(const Executor &executor, const plan::Plan &planMessage,
                       int rank, int worldSize, std::vector<double> stepMs);
void printProfile(const Profile &profile, int64_t steps,
                  std::vector<double> stepMs);
bool writeTrace(const std::string &path, const plan::Plan &planMessage,
                const std::vector<Executor::TracedRun> &runs, double stepMs,
                const std::string &backend, bool gradientsStream, int rank,
                int worldSize);

std::string checkWeightsFile(const std::string &path, const plan::Plan &plan);

/// Stops every rank: MPI_Abort never returns. A rank alone has no one to
/// stop and exits, so that its error stays one line (MPI_Abort adds Open
/// MPI's notice of several).
[[noreturn]] void abortAll(int rank, const std::string &error) {
  std::fprintf(stderr, "parplan-run: rank %d: %s\n", rank, error.c_str());
  std::fflush(stderr);
  int worldSize = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (worldSize == 1) {
    MPI_Finalize();
    std::exit(1);
  }
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

/// Where this rank is, for a stop by a signal: its 1-based step, 0 before
/// the first, -1 after the last.
volatile std::sig_atomic_t currentStep = 0;
/// "parplan-run: rank N: " for the signal handler, which may not format.
char rankPrefix[48] = "parplan-run: ";

/// Appends the decimal `value` at `out`; returns the end.
char *appendDecimal(char *out, long value) {
  char digits[24];
  int count = 0;
  bool negative = value < 0;
  unsigned long magnitude = negative ? 0UL - static_cast<unsigned long>(value)
                                     : static_cast<unsigned long>(value);
  do {
    digits[count++] = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative)
    *out++ = '-';
  while (count > 0)
    *out++ = digits[--count];
  return out;
}

/// A rank stopped by a signal (mpirun sends SIGTERM to the others when a
/// rank dies; a user's Ctrl-C) says so in one line and exits non-zero:
/// async-signal-safe, so only write(2) and _exit.
extern "C" void onStopSignal(int signal) {
  char line[200];
  char *out = line;
  auto append = [&](const char *text) {
    while (*text && out < line + sizeof(line) - 32)
      *out++ = *text++;
  };
  append(rankPrefix);
  append("stopped by signal ");
  out = appendDecimal(out, signal);
  long step = currentStep;
  if (step > 0) {
    append(" in step ");
    out = appendDecimal(out, step);
  } else {
    append(step == 0 ? " before its first step" : " after its last step");
  }
  append(" (another rank failed, or the job was stopped)\n");
  ssize_t ignored = ::write(2, line, static_cast<size_t>(out - line));
  (void)ignored;
  ::_exit(128 + signal);
}

void stopOnSignals(int rank) {
  char *out = rankPrefix + std::strlen(rankPrefix);
  std::memcpy(out, "rank ", 5);
  out = appendDecimal(out + 5, rank);
  std::memcpy(out, ": ", 3);
  struct sigaction action = {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGTERM, SIGINT, SIGHUP})
    sigaction(signal, &action, nullptr);
}

/// Whether no rank failed: every rank passes its error (empty if none);
/// the lowest rank that failed prints its own, in one line, and every rank
/// gets false.
bool agreeOnFailure(int rank, const std::string &error) {
  struct {
    int failed;
    int rank;
  } mine{error.empty() ? 0 : 1, rank}, first{0, 0};
  MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
  if (!first.failed)
    return true;
  if (first.rank == rank) {
    if (rank == 0)
      std::fprintf(stderr, "parplan-run: %s\n", error.c_str());
    else
      std::fprintf(stderr, "parplan-run: rank %d: %s\n", rank, error.c_str());
  }
  return false;
}

/// Every rank's `text` on rank 0, by rank (empty elsewhere). Each must be
/// under 2 GiB (MPI counts in int).
std::vector<std::string> gatherEachToRankZero(const std::string &text) {
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(size), displacements(size);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0,
             MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displacements[r] = total;
    total += lengths[r];
  }
  std::string all(rank == 0 ? static_cast<size_t>(total) : 0, '\0');
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
              displacements.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> each;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      each.push_back(all.substr(static_cast<size_t>(displacements[r]),
                                static_cast<size_t>(lengths[r])));
  return each;
}

/// Every rank's `text`, in rank order, on rank 0 (empty elsewhere).
std::string gatherToRankZero(const std::string &text) {
  std::string all;
  for (const std::string &part : gatherEachToRankZero(text))
    all += part;
  return all;
}

/// `--check`: every OUTPUT buffer against the synthetic values of its
/// tensor, a line per block on rank 0 in rank order, then the totals;
/// false (on every rank) when any element differs.
bool checkOutputs(const Executor &executor, int rank) {
  std::vector<Executor::OutputCheck> checks;
  if (Status status = executor.checkOutputs(checks); !status.ok())
    abortAll(rank, status.error);
  std::string lines;
  long long mismatches = 0, elements = 0;
  for (const Executor::OutputCheck &check : checks) {
    lines += "check: device " + std::to_string(rank) + " " + check.name +
             " block " + toString(check.shape) + " at " +
             toString(check.offsets) + " of " + toString(check.logicalShape) +
             ": " + std::to_string(check.mismatches) + " of " +
             std::to_string(check.elements) + " elements differ\n";
    mismatches += check.mismatches;
    elements += check.elements;
  }
  std::string all = gatherToRankZero(lines);
  long long totals[2] = {mismatches, elements};
  MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_LONG_LONG, MPI_SUM,
                MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("%s", all.c_str());
    std::printf("check: %lld of %lld elements differ%s\n", totals[0], totals[1],
                totals[1] == 0 ? " (the plan has no OUTPUT buffer)" : "");
    std::fflush(stdout);
  }
  return totals[0] == 0 && totals[1] > 0;
}

/// Picks this rank's GPU (the local rank's, modulo the GPUs it sees) into
/// `options`; returns why it has none of its own, or an empty string. Ranks
/// of one machine that would share a GPU (NCCL refuses) are found by the
/// GPUs' PCI addresses, so that ranks each shown one GPU through
/// CUDA_VISIBLE_DEVICES count as apart.
std::string ownGpu(CudaOptions &options) {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &local);
  int localRank = 0, localSize = 1;
  MPI_Comm_rank(local, &localRank);
  MPI_Comm_size(local, &localSize);
  std::string reason = cudaUnavailableReason();
  char address[64] = {};
  if (reason.empty()) {
    options.device = localRank % cudaDeviceCount();
    std::snprintf(address, sizeof(address), "%s",
                  cudaDeviceAddress(options.device).c_str());
  }
  std::vector<char> addresses(sizeof(address) * localSize);
  MPI_Allgather(address, sizeof(address), MPI_CHAR, addresses.data(),
                sizeof(address), MPI_CHAR, local);
  MPI_Comm_free(&local);
  if (!reason.empty())
    return reason;
  int sharing = 0;
  for (int r = 0; r < localSize; ++r)
    sharing +=
        std::strcmp(addresses.data() + r * sizeof(address), address) == 0;
  if (sharing > 1)
    return std::to_string(sharing) + " ranks on one machine share GPU " +
           address + "; NCCL needs a GPU per rank";
  return "";
}

/// parplan-run's options.
struct RunOptions {
  std::string planPath;
  int64_t steps = 5;
  std::optional<uint64_t> seed;
  std::string weightsPath;
  std::string batchesPath;
  bool printWeights = false;
  std::string backendName = "auto";
  std::string hostKernels = "reference";
  int streams = 1;
  bool tf32 = false;
  bool noGraphs = false;
  bool noGradientsStream = false;
  bool profile = false;
  std::string schedule;
  std::string tracePath;
  bool oneBatch = false;
  bool check = false;
  std::string outputsPath;
  std::string saveWeightsPath;
};

/// Declares parplan-run's options on `app`, into `options`.
void addOptions(CLI::App &app, RunOptions &options) {
  app.add_option("plan", options.planPath, "the plan file (parplan plan -o)")
      ->required();
  app.add_option("--steps", options.steps, "training steps to run")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--seed", options.seed,
                 "seed of the synthetic weights and batches (default: the "
                 "plan's)");
  app.add_option("--weights", options.weightsPath,
                 "the ONNX model the plan was compiled from: every rank reads "
                 "its blocks of the parameters from it (default: synthetic "
                 "weights from the seed)");
  app.add_option("--batches", options.batchesPath,
                 "a directory of NAME.bin files, one per input of the model, "
                 "each holding whole batches back to back (step s reads batch "
                 "s mod K; default: synthetic batches from the seed)");
  app.add_flag("--print-weights", options.printWeights,
               "after the steps, print every parameter's element count, sum "
               "and sum of squares on rank 0 (whole tensors, whatever the "
               "layout: plans of any size print the same)");
  app.add_option("--backend", options.backendName,
                 "where the programs run: cuda (one GPU per rank; NCCL), cpu "
                 "(the reference kernels; MPI), or auto: cuda when every "
                 "rank has a GPU of its own, else cpu")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--host-kernels", options.hostKernels,
                 "cpu: the kernels to run, the reference kernels or the CUDA "
                 "backend's own kernels compiled for the CPU (device), to "
                 "check those without a GPU")
      ->check(CLI::IsMember({"reference", "device"}));
  app.add_option("--streams", options.streams,
                 "cpu: 2 runs the collectives and messages on a thread of "
                 "their own beside the kernels, as a GPU's two streams do (a "
                 "gradient's all-reduce under the rest of the backward; "
                 "--trace shows it), 1 every instruction in turn (the CUDA "
                 "backend always runs its streams)")
      ->check(CLI::IsMember({1, 2}));
  app.add_flag("--tf32", options.tf32,
               "cuda: let float32 matmuls use TF32 tensor cores (faster; "
               "about 1e-3 relative instead of float32's 1e-6)");
  app.add_flag("--no-graphs", options.noGraphs,
               "cuda: launch every instruction every step, instead of "
               "replaying a step's device kernels from a CUDA graph captured "
               "on its second run (--profile and --trace do not replay)");
  app.add_flag("--no-gradients-stream", options.noGradientsStream,
               "cuda: run the all-reduces of gradients that only updates "
               "read on the communication stream, in program order with the "
               "other collectives, instead of on a stream and communicators "
               "of their own");
  app.add_flag("--profile", options.profile,
               "time every instruction (one at a time, so without overlap) "
               "from the second step on, and print rank 0's time per kind of "
               "instruction per step, and matmul throughput");
  app.add_option("--schedule", options.schedule,
                 "the order each stage runs its micro-batches' forwards and "
                 "backwards in, instead of the plan's: " +
                     executorScheduleList());
  app.add_option("--trace", options.tracePath,
                 "record the last step's timeline on every rank and write it "
                 "here (rank 0) as Chrome trace-event JSON, with the names "
                 "parplan simulate gives (docs/simulate.md)");
  app.add_flag("--check", options.check,
               "after the steps, compare every OUTPUT buffer (a "
               "resharding's destination, parplan reshard -o) with the "
               "synthetic values of its tensor; exit 1 if any differs");
  app.add_option("--outputs", options.outputsPath,
                 "write each step's outputs (an inference plan's, parplan "
                 "compile without --train) as DIR/step-N/NAME.npy, gathered "
                 "on rank 0 (docs/inference.md)");
  app.add_option("--save-weights", options.saveWeightsPath,
                 "after the steps, write every parameter, whole, gathered on "
                 "rank 0, as DIR/NAME.npy (what the plan trained)");
  app.add_flag("--one-batch", options.oneBatch,
               "train on the first synthetic batch at every step (the loss "
               "then falls as the model learns it)");
}

/// Reads the plan (with --schedule's order) and checks it against the
/// ranks, --weights and --trace: the error, or "".
std::string loadPlan(const RunOptions &options, int rank, int worldSize,
                     plan::Plan &planMessage) {
  const std::string &planPath = options.planPath;
  const std::string &schedule = options.schedule;
  std::string error;
  std::vector<std::string> schedules = executorSchedules();
  if (Status status = readPlanFile(planPath, planMessage); !status.ok()) {
    error = status.error;
  } else if (!schedule.empty() && std::find(schedules.begin(), schedules.end(),
                                            schedule) == schedules.end()) {
    error = "--schedule " + schedule + " is unknown to the executor; it runs " +
            executorScheduleList();
  } else {
    if (!schedule.empty())
      planMessage.set_schedule(schedule == "sequential" ? "" : schedule);
    if (Status status = checkPlan(planMessage); !status.ok())
      error = "plan file " + planPath + " is invalid: " + status.error;
    else if (planDevices(planMessage) != worldSize)
      error = "plan file " + planPath + " is for " +
              std::to_string(planDevices(planMessage)) +
              " devices but runs on " + std::to_string(worldSize) +
              " rank(s); run it with mpirun -np " +
              std::to_string(planDevices(planMessage));
    else if (!options.weightsPath.empty())
      error = checkWeightsFile(options.weightsPath, planMessage);
    // Rank 0 writes the trace after the last step: said before the first.
    if (error.empty() && rank == 0 && !options.tracePath.empty())
      if (Status status = checkTraceWritable(options.tracePath); !status.ok())
        error = "--trace: " + status.error;
  }
  return error;
}

/// Whether the programs run on CUDA, decided alike on every rank: only
/// where every rank has a GPU of its own, since ranks on different backends
/// would wait for each other forever. `unavailable` says why not; none
/// when the ranks must stop (--backend cuda without a GPU, a plan CUDA
/// cannot run).
std::optional<bool> chooseCuda(const RunOptions &options,
                               const plan::Plan &planMessage, int rank,
                               CudaOptions &cudaOptions,
                               std::string &unavailable) {
  if (options.backendName != "cpu") {
    unavailable = ownGpu(cudaOptions);
    int everyRankHasOne = unavailable.empty() ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &everyRankHasOne, 1, MPI_INT, MPI_MIN,
                  MPI_COMM_WORLD);
    if (unavailable.empty() && !everyRankHasOne)
      unavailable = "another rank has no GPU of its own";
    if (options.backendName == "cuda" &&
        !agreeOnFailure(rank, unavailable.empty()
                                  ? std::string()
                                  : "--backend cuda: " + unavailable))
      return std::nullopt;
  }
  bool useCuda = options.backendName != "cpu" && unavailable.empty();
  if (useCuda) {
    Status order = checkMessageOrder(planMessage);
    if (!agreeOnFailure(rank, order.ok()
                                  ? std::string()
                                  : "plan file " + options.planPath +
                                        " cannot run on CUDA: " + order.error))
      return std::nullopt;
  }
  return useCuda;
}

/// The executor on its backend, loaded with the plan, its weights and
/// batches from --weights and --batches (or the seed's), initialized.
void prepareExecutor(Executor &executor, Transport &communicator,
                     const RunOptions &options, const CudaOptions &cudaOptions,
                     bool useCuda, const plan::Plan &planMessage, int rank) {
  if (!useCuda)
    executor.setBackend(createCpuBackend(communicator,
                                         options.hostKernels == "device"
                                             ? HostKernels::Device
                                             : HostKernels::Reference,
                                         options.streams));
  if (useCuda) {
    Status status;
    std::unique_ptr<Backend> backend =
        createCudaBackend(communicator, cudaOptions, status);
    if (!backend)
      abortAll(rank, "--backend cuda: " + status.error);
    executor.setBackend(std::move(backend));
  }
  if (Status status = executor.load(planMessage, rank, communicator);
      !status.ok())
    abortAll(rank, status.error);
  if (options.seed)
    executor.setSeed(*options.seed);
  const std::string &batchesPath = options.batchesPath;
  if (!batchesPath.empty())
    executor.setBatchLoader([&batchesPath](const plan::Buffer &buffer,
                                           int64_t step, Tensor &block,
                                           bool &loaded) {
      Status status = loadBatchBlock(buffer, batchesPath, step, block);
      loaded = status.ok();
      return status;
    });
  const std::string &weightsPath = options.weightsPath;
  if (!weightsPath.empty())
    executor.setWeightLoader([&weightsPath](const plan::Buffer &buffer,
                                            Tensor &block, bool &loaded) {
      Status status = loadWeightBlock(buffer, weightsPath, block);
      loaded = status.ok();
      return status;
    });
  if (Status status = executor.initialize(); !status.ok())
    abortAll(rank, status.error);
}

/// Rank 0's lines on the backend and the schedule, before the steps.
void printBackend(const Executor &executor, const RunOptions &options,
                  bool useCuda, const std::string &unavailable,
                  const plan::Plan &planMessage) {
  std::string line = "backend: " + executor.backend()->describe();
  if (!useCuda && options.backendName == "auto")
    line += " (no usable GPU: " + unavailable + ")";
  std::printf("%s\n", line.c_str());
  std::vector<std::string> host = executor.backend()->hostKernels();
  if (!host.empty()) {
    std::string list;
    for (const std::string &kernel : host)
      list += (list.empty() ? "" : ", ") + kernel;
    std::printf("backend: on the host (no CUDA kernel): %s\n", list.c_str());
  }
  if (executor.stages() > 1 && planMessage.micro_batches() > 1)
    std::printf("schedule: %s, %lld stages, %lld micro-batches\n",
                executor.schedule().c_str(),
                static_cast<long long>(executor.stages()),
                static_cast<long long>(planMessage.micro_batches()));
  if (!executor.scheduleNote().empty())
    std::printf("schedule: %s\n", executor.scheduleNote().c_str());
  std::fflush(stdout);
}

/// Makes `path` (and its parents) for `option`: why it cannot be, or "".
std::string makeDirectory(const std::string &option, const std::string &path) {
  std::error_code failure;
  std::filesystem::create_directories(path, failure);
  if (!failure && std::filesystem::is_directory(path))
    return "";
  return option + ": cannot create the directory '" + path + "'" +
         (failure ? ": " + failure.message() : std::string());
}

/// What the steps leave for the reports after them.
struct StepRecord {
  /// --profile: each profiled step's milliseconds.
  std::vector<double> profiledMs;
  /// --trace: the last step's runs and milliseconds.
  std::vector<Executor::TracedRun> traced;
  double tracedMs = 0;
};

/// Every rank's `blocks` put together on rank 0 into whole tensors and
/// written to `directory`/NAME.npy, a line each beginning with `word`
/// (errors with `option`). False (on every rank) when they cannot be.
bool writeGatheredBlocks(const std::vector<OutputBlock> &blocks,
                         const std::filesystem::path &directory,
                         const std::string &option, const std::string &word,
                         int rank) {
  std::string mine = serializeOutputBlocks(blocks);
  if (!agreeOnFailure(rank, mine.size() < (size_t{1} << 31)
                                ? std::string()
                                : option + ": device " + std::to_string(rank) +
                                      " holds 2 GiB or more to write, more "
                                      "than one message gathers"))
    return false;
  std::vector<std::string> each = gatherEachToRankZero(mine);
  std::string error;
  std::string lines;
  if (rank == 0) {
    std::vector<OutputBlock> all;
    for (const std::string &part : each)
      if (Status status = parseOutputBlocks(part, all); !status.ok())
        error = status.error;
    std::map<std::string, Tensor> tensors;
    if (error.empty())
      if (Status status = assembleOutputs(all, tensors); !status.ok())
        error = option + ": " + status.error;
    std::error_code failure;
    if (error.empty() &&
        (std::filesystem::create_directories(directory, failure), failure))
      error = option + ": cannot create '" + directory.string() +
              "': " + failure.message();
    for (const auto &[name, value] : tensors) {
      if (!error.empty())
        break;
      std::string path = (directory / outputFileName(name)).string();
      if (Status status = writeNpy(value, path); !status.ok())
        error = option + ": " + status.error;
      lines += word + " " + name + " " + toString(value.shape()) + " " +
               toString(value.dtype()) + " in " + path + "\n";
    }
  }
  if (!agreeOnFailure(rank, error))
    return false;
  if (rank == 0) {
    std::printf("%s", lines.c_str());
    std::fflush(stdout);
  }
  return true;
}

/// --outputs: the step's output blocks of every rank written to
/// `directory`/step-N/NAME.npy.
bool writeStepOutputs(const Executor &executor, const std::string &directory,
                      int64_t step, int rank) {
  return writeGatheredBlocks(executor.outputs(),
                             std::filesystem::path(directory) /
                                 ("step-" + std::to_string(step + 1)),
                             "--outputs", "outputs:", rank);
}

/// --save-weights: every parameter, whole, after the steps, as
/// `directory`/NAME.npy (the parameter's nn.param name), so that what a
/// plan trained can be read back (the GNN placer's weights, docs/placement).
bool saveWeights(const Executor &executor, const std::string &directory,
                 int rank) {
  std::vector<OutputBlock> blocks;
  std::string error;
  const plan::Program &program = executor.program();
  for (int b = 0; b < program.buffers_size() && error.empty(); ++b) {
    const plan::Buffer &buffer = program.buffers(b);
    if (buffer.kind() != plan::Buffer::PARAMETER)
      continue;
    OutputBlock block;
    block.name = buffer.name();
    block.logicalShape.assign(buffer.logical_shape().begin(),
                              buffer.logical_shape().end());
    block.offsets.assign(buffer.offsets().begin(), buffer.offsets().end());
    if (Status status = executor.read(b, block.value); !status.ok())
      error = "--save-weights: " + status.error;
    blocks.push_back(std::move(block));
  }
  if (!agreeOnFailure(rank, error))
    return false;
  return writeGatheredBlocks(blocks, directory, "--save-weights",
                             "saved:", rank);
}

/// Runs the steps, rank 0 printing each one's time and loss. False when
/// the ranks must stop.
bool runSteps(Executor &executor, const RunOptions &options,
              const plan::Plan &planMessage, int rank, StepRecord &record) {
  int64_t steps = options.steps;
  // Where stages split the step, rank 0's program may not compute the
  // loss: the lowest rank whose program does sends it to rank 0.
  int lossRank = -1;
  for (const plan::Program &program : planMessage.programs())
    if (program.loss() >= 0)
      for (int64_t device : program.devices())
        if (lossRank < 0 || device < lossRank)
          lossRank = static_cast<int>(device);
  // Apart from the plan's messages, which tag by their own numbering.
  MPI_Comm lossComm = MPI_COMM_NULL;
  if (lossRank > 0)
    MPI_Comm_dup(MPI_COMM_WORLD, &lossComm);
  for (int64_t step = 0; step < steps; ++step) {
    currentStep = static_cast<std::sig_atomic_t>(
        std::min<int64_t>(step + 1, std::numeric_limits<int>::max()));
    // The first step warms up (cuBLAS heuristics, NCCL connections).
    if (options.profile && step == std::min<int64_t>(1, steps - 1))
      executor.backend()->setProfiling(true);
    // The last step is traced, every rank's clock starting together.
    bool tracing = !options.tracePath.empty() && step == steps - 1;
    if (tracing) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (!agreeOnFailure(rank, executor.setTracing(true).error))
        return false;
    }
    auto start = std::chrono::steady_clock::now();
    double loss = 0;
    if (Status status = executor.step(options.oneBatch ? 0 : step, &loss);
        !status.ok())
      abortAll(rank, status.error);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (options.profile && step >= std::min<int64_t>(1, steps - 1))
      record.profiledMs.push_back(ms);
    if (tracing) {
      record.traced = executor.takeTrace();
      record.tracedMs = ms;
      (void)executor.setTracing(false);
    }
    if (lossRank > 0 && rank == lossRank)
      MPI_Send(&loss, 1, MPI_DOUBLE, 0, 0, lossComm);
    if (rank == 0) {
      if (lossRank > 0)
        MPI_Recv(&loss, 1, MPI_DOUBLE, lossRank, 0, lossComm,
                 MPI_STATUS_IGNORE);
      if (lossRank < 0)
        std::printf("step %lld: %.1f ms\n", static_cast<long long>(step + 1),
                    ms);
      else
        std::printf("step %lld: loss %.6f (%.1f ms)\n",
                    static_cast<long long>(step + 1), loss, ms);
      std::fflush(stdout);
    }
    if (!options.outputsPath.empty() &&
        !writeStepOutputs(executor, options.outputsPath, step, rank))
      return false;
  }
  currentStep = -1;
  if (lossComm != MPI_COMM_NULL)
    MPI_Comm_free(&lossComm);
  return true;
}

int run(int argc, char **argv, int rank, int worldSize, int threadLevel) {
  CLI::App app("Runs a parplan plan file: one MPI rank per device.",
               "parplan-run");
  RunOptions options;
  addOptions(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    // Only rank 0 speaks; every rank exits with CLI11's code.
    if (rank == 0)
      return app.exit(error);
    return error.get_exit_code() == 0 ? 0 : 1;
  }

  plan::Plan planMessage;
  // A file that only some ranks can read (a machine without it) must stop
  // them all, not leave the others waiting.
  if (!agreeOnFailure(rank, loadPlan(options, rank, worldSize, planMessage)))
    return 1;

  std::unique_ptr<Transport> communicator = createMpiCommunicator();
  CudaOptions cudaOptions;
  cudaOptions.tf32 = options.tf32;
  cudaOptions.graphs = !options.noGraphs;
  cudaOptions.gradientsStream = !options.noGradientsStream;
  std::string unavailable;
  std::optional<bool> useCuda =
      chooseCuda(options, planMessage, rank, cudaOptions, unavailable);
  if (!useCuda)
    return 1;
  if (options.streams == 2 && !*useCuda &&
      !agreeOnFailure(rank, threadLevel >= MPI_THREAD_SERIALIZED
                                ? std::string()
                                : "--streams 2: this MPI library does not "
                                  "let a second thread call it "
                                  "(MPI_THREAD_SERIALIZED)"))
    return 1;
  if (*useCuda && app.count("--streams") && options.streams == 1 &&
      !agreeOnFailure(rank, "--streams 1: the cuda backend runs kernels and "
                            "communication on two streams"))
    return 1;
  bool checkFailed = false;
  {
    Executor executor;
    prepareExecutor(executor, *communicator, options, cudaOptions, *useCuda,
                    planMessage, rank);
    // Said before the steps, not after them.
    if (!options.tracePath.empty() && !executor.backend()->recordsTimeline() &&
        !agreeOnFailure(rank, "--trace: the " + executor.backend()->describe() +
                                  " backend records no timeline; run with "
                                  "--backend cpu"))
      return 1;
    // Said before the steps, not after them: a directory that cannot be
    // made (a long training is not lost to it), or a plan without outputs.
    if (!options.outputsPath.empty()) {
      std::string error;
      if (rank == 0) {
        error = makeDirectory("--outputs", options.outputsPath);
        bool any = false;
        for (const plan::Program &program : planMessage.programs())
          for (const plan::Buffer &buffer : program.buffers())
            any |= buffer.kind() == plan::Buffer::OUTPUT;
        if (error.empty() && !any)
          error = "--outputs: plan file " + options.planPath +
                  " has no outputs (a training plan's step returns its "
                  "loss; compile without --train for an inference plan)";
      }
      if (!agreeOnFailure(rank, error))
        return 1;
      executor.setKeepOutputs(true);
    }
    if (!options.saveWeightsPath.empty() &&
        !agreeOnFailure(rank, rank == 0 ? makeDirectory("--save-weights",
                                                        options.saveWeightsPath)
                                        : std::string()))
      return 1;
    if (rank == 0)
      printBackend(executor, options, *useCuda, unavailable, planMessage);
    StepRecord record;
    if (!runSteps(executor, options, planMessage, rank, record))
      return 1;
    if (options.printWeights)
      printWeightSummary(executor, rank);
    if (!options.saveWeightsPath.empty() &&
        !saveWeights(executor, options.saveWeightsPath, rank))
      return 1;
    if (options.check && !checkOutputs(executor, rank))
      checkFailed = true;
    if (options.profile && rank == 0)
      printProfile(executor.backend()->profile(),
                   static_cast<int64_t>(record.profiledMs.size()),
                   record.profiledMs);
    if (options.profile && executor.stages() > 1 &&
        planMessage.micro_batches() > 1)
      printStageProfile(executor, planMessage, rank, worldSize,
                        record.profiledMs);
    if (!options.tracePath.empty() && options.steps > 0 &&
        !writeTrace(options.tracePath, planMessage, record.traced,
                    record.tracedMs, executor.backend()->describe(),
                    *useCuda && cudaOptions.gradientsStream, rank, worldSize))
      return 1;
  }
  // Sub-communicators are freed before MPI_Finalize.
  communicator.reset();
  return checkFailed ? 1 : 0;
}

/// Rank 0 gathers every rank's runs of the traced step and writes them as
/// one trace: a process per device, labelled by the instance of its
/// program that ran (instantiateProgram, which rank 0 works out for each),
/// arrows from each send to the receive it completes. True on every rank
/// when the file was written.
bool writeTrace(const std::string &path, const plan::Plan &planMessage,
                const std::vector<Executor::TracedRun> &runs, double stepMs,
                const std::string &backend, bool gradientsStream, int rank,
                int worldSize) {
  constexpr int kFields = 6;
  std::vector<double> mine;
  for (const Executor::TracedRun &run : runs)
    mine.insert(mine.end(),
                {static_cast<double>(run.instruction), run.start, run.end,
                 static_cast<double>(run.microBatch),
                 static_cast<double>(run.chunk), run.backward ? 1.0 : 0.0});
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(rank == 0 ? worldSize : 0), offsets;
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<double> all;
  if (rank == 0) {
    int total = 0;
    for (int c : counts) {
      offsets.push_back(total);
      total += c;
    }
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(),
              offsets.data(), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::string error;
  if (rank == 0) {
    Trace trace;
    // Per (sender, receiver, tag): the events of its sends and receives,
    // in order.
    std::map<std::tuple<int64_t, int64_t, int64_t>,
             std::pair<std::vector<size_t>, std::vector<size_t>>>
        messages;
    for (int r = 0; r < worldSize && error.empty(); ++r) {
      trace.processes.push_back({"device " + std::to_string(r)});
      DeviceProgram instance;
      if (Status status = instantiateProgram(planMessage, r, instance);
          !status.ok()) {
        error = status.error;
        break;
      }
      const plan::Program &program = instance.program;
      for (int at = offsets[r]; at < offsets[r] + counts[r]; at += kFields) {
        TraceEvent event;
        event.process = r;
        event.instruction = static_cast<int64_t>(all[at]);
        event.start = all[at + 1];
        event.duration = all[at + 2] - all[at + 1];
        event.microBatch = static_cast<int64_t>(all[at + 3]);
        event.chunk = program.forward_chunks_size() > 0
                          ? static_cast<int64_t>(all[at + 4])
                          : -1;
        event.backward = all[at + 5] != 0;
        const plan::Instruction &instruction =
            program.instructions(static_cast<int>(event.instruction));
        event.label = traceLabel(planMessage, program, event.instruction);
        Stream stream = streamOf(instruction, gradientsStream);
        event.thread = stream == Stream::Compute ? TraceThread::Compute
                       : stream == Stream::Gradients
                           ? TraceThread::Gradients
                           : TraceThread::Communication;
        if (instruction.has_collective())
          event.group = instruction.collective().group();
        if (instruction.has_send())
          messages[{r, instruction.send().peer(), instruction.send().tag()}]
              .first.push_back(trace.events.size());
        if (instruction.has_recv())
          messages[{instruction.recv().peer(), r, instruction.recv().tag()}]
              .second.push_back(trace.events.size());
        trace.events.push_back(std::move(event));
      }
    }
    for (const auto &[key, ends] : messages)
      for (size_t k = 0; k < std::min(ends.first.size(), ends.second.size());
           ++k)
        trace.flows.push_back({ends.first[k], ends.second[k]});
    char ms[32];
    std::snprintf(ms, sizeof(ms), "%.3f", stepMs);
    trace.metadata = {{"source", "parplan-run"},
                      {"model", planMessage.model()},
                      {"backend", backend},
                      {"step_ms", ms}};
    if (error.empty())
      error = writeChromeTraceFile(trace, path).error;
    if (error.empty())
      std::printf("trace: %s (%zu events of the last step, %d devices)\n",
                  path.c_str(), trace.events.size(), worldSize);
    std::fflush(stdout);
  }
  return agreeOnFailure(rank, error);
}

/// One line per kind of instruction, slowest first, then the sum against
/// the median step (the gap is launch overhead and host work), then one
/// "profile shape" line per matmul shape, slowest first.
void printProfile(const Profile &profile, int64_t steps,
                  std::vector<double> stepMs) {
  if (steps <= 0)
    return;
  std::vector<std::pair<std::string, ProfileEntry>> kinds(profile.kinds.begin(),
                                                          profile.kinds.end()),
      shapes(profile.shapes.begin(), profile.shapes.end());
  auto slowestFirst = [](const auto &a, const auto &b) {
    return a.second.seconds > b.second.seconds;
  };
  std::stable_sort(kinds.begin(), kinds.end(), slowestFirst);
  std::stable_sort(shapes.begin(), shapes.end(), slowestFirst);
  double total = 0;
  for (const auto &[name, entry] : kinds)
    total += entry.seconds;
  double perStep = 1e3 / static_cast<double>(steps);
  auto print = [&](const char *prefix, const std::string &name,
                   const ProfileEntry &entry) {
    std::printf("%s %s: %.1f calls, %.3f ms per step, %.1f%%", prefix,
                name.c_str(), static_cast<double>(entry.calls) / steps,
                entry.seconds * perStep,
                total > 0 ? 100 * entry.seconds / total : 0.0);
    if (entry.flops > 0 && entry.seconds > 0)
      std::printf(", %.1f GFLOP/s", entry.flops / entry.seconds * 1e-9);
    std::printf("\n");
  };
  for (const auto &[name, entry] : kinds)
    print("profile", name, entry);
  std::sort(stepMs.begin(), stepMs.end());
  std::printf("profile total: %.3f ms per step in instructions; median "
              "profiled step %.3f ms\n",
              total * perStep, stepMs[stepMs.size() / 2]);
  if (profile.issue.calls > 0)
    std::printf("profile issue: %.1f us of host time per device instruction "
                "(%.1f per step)\n",
                profile.issue.seconds * 1e6 /
                    static_cast<double>(profile.issue.calls),
                static_cast<double>(profile.issue.calls) / steps);
  for (const auto &[name, entry] : shapes)
    print("profile shape", name, entry);
  std::fflush(stdout);
}

/// Per stage, its devices' mean time per step computing and idle (the
/// bubble): busy is the time in instructions but those that wait for other
/// devices' data (receives and broadcasts), idle the rest of the median
/// step. Every rank calls it; rank 0 prints.
void printStageProfile(const Executor &executor, const plan::Plan &planMessage,
                       int rank, int worldSize, std::vector<double> stepMs) {
  if (stepMs.empty())
    return;
  double busy = 0;
  for (const auto &[name, entry] : executor.backend()->profile().kinds)
    if (name != "recv" && name != "broadcast")
      busy += entry.seconds;
  double mine[2] = {busy * 1e3 / static_cast<double>(stepMs.size()),
                    static_cast<double>(executor.stage())};
  std::vector<double> all(2 * static_cast<size_t>(worldSize));
  MPI_Gather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank != 0)
    return;
  std::sort(stepMs.begin(), stepMs.end());
  double step = stepMs[stepMs.size() / 2];
  for (int64_t stage = 0; stage < executor.stages(); ++stage) {
    double sum = 0;
    int count = 0;
    for (int r = 0; r < worldSize; ++r)
      if (static_cast<int64_t>(all[2 * r + 1]) == stage) {
        sum += all[2 * r];
        ++count;
      }
    if (count == 0)
      continue;
    double stageBusy = sum / count;
    std::printf("profile stage %lld (%s, %d device%s): busy %.3f ms, idle "
                "%.3f ms per step (%.1f%% idle)\n",
                static_cast<long long>(stage),
                planMessage.meshes(static_cast<int>(stage)).name().c_str(),
                count, count == 1 ? "" : "s", stageBusy,
                std::max(0.0, step - stageBusy),
                step > 0 ? 100 * std::max(0.0, step - stageBusy) / step : 0.0);
  }
  std::fflush(stdout);
}

/// Every parameter's element count, sum and sum of squares, from the
/// blocks the ranks hold: rank 0 gathers one line per block, counts each
/// block once (replicas have the same offsets) and prints the totals by
/// name, in name order.
void printWeightSummary(const Executor &executor, int rank) {
  std::string lines;
  const plan::Program &program = executor.program();
  for (int b = 0; b < program.buffers_size(); ++b) {
    const plan::Buffer &buffer = program.buffers(b);
    if (buffer.kind() != plan::Buffer::PARAMETER)
      continue;
    Tensor block = executor.buffer(b);
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < block.numElements(); ++i) {
      double value = block.get(i);
      sum += value;
      squares += value * value;
    }
    char text[128];
    std::snprintf(text, sizeof(text), " %lld %.17g %.17g\n",
                  static_cast<long long>(block.numElements()), sum, squares);
    lines += buffer.name();
    for (int64_t offset : buffer.offsets())
      lines += "@" + std::to_string(offset);
    lines += text;
  }
  std::string all = gatherToRankZero(lines);
  if (rank != 0)
    return;
  struct Totals {
    long long elements = 0;
    double sum = 0, squares = 0;
  };
  std::map<std::string, Totals> byName;
  std::set<std::string> seenBlocks;
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    std::string line = all.substr(start, end - start);
    start = end + 1;
    size_t space = line.find(' ');
    std::string block = line.substr(0, space);
    if (!seenBlocks.insert(block).second)
      continue;
    long long elements = 0;
    double sum = 0, squares = 0;
    std::sscanf(line.c_str() + space, "%lld %lf %lf", &elements, &sum,
                &squares);
    Totals &totals = byName[block.substr(0, block.find('@'))];
    totals.elements += elements;
    totals.sum += sum;
    totals.squares += squares;
  }
  for (const auto &[name, totals] : byName)
    std::printf("weights %s: %lld elements, sum %.6e, sum of squares %.6e\n",
                name.c_str(), totals.elements, totals.sum, totals.squares);
  std::fflush(stdout);
}

/// Why `path` is not the model `plan` was compiled from (--weights reads
/// parameters at their byte offsets in it), or empty: a file of another
/// size, or of another fingerprint (Support/Hash.h), is another model.
std::string checkWeightsFile(const std::string &path, const plan::Plan &plan) {
  std::error_code failure;
  uintmax_t bytes = std::filesystem::file_size(path, failure);
  if (failure)
    return "--weights '" + path + "': " + failure.message();
  if (plan.model_bytes() != 0 && bytes != plan.model_bytes())
    return "--weights '" + path + "' has " + std::to_string(bytes) +
           " bytes, but the plan was compiled from '" + plan.model() + "' of " +
           std::to_string(plan.model_bytes()) +
           " bytes: give the model the plan was compiled from";
  if (plan.model_fingerprint() == 0)
    return "";
  std::ifstream file(path, std::ios::binary);
  std::string sample;
  bool readable = static_cast<bool>(file);
  uint64_t fingerprint =
      fileFingerprint(bytes, [&](uint64_t offset, uint64_t length) {
        sample.assign(length, '\0');
        readable =
            readable && file.seekg(static_cast<std::streamoff>(offset)) &&
            file.read(sample.data(), static_cast<std::streamsize>(length));
        return std::string_view(sample);
      });
  if (!readable)
    return "--weights '" + path + "': cannot read it";
  if (fingerprint == plan.model_fingerprint())
    return "";
  return "--weights '" + path + "' has the size of '" + plan.model() +
         "', the model the plan was compiled from, but other bytes: give "
         "the model the plan was compiled from";
}

} // namespace

int main(int argc, char **argv) {
  // --streams 2 calls MPI from the CPU backend's communication thread
  // while a range runs, and from the main thread between ranges: one at a
  // time.
  int threads = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &threads);
  int rank = 0, worldSize = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  stopOnSignals(rank);
  int code = 1;
  try {
    code = run(argc, argv, rank, worldSize, threads);
  } catch (const std::bad_alloc &) {
    // A plan within checkPlan's bounds that this host cannot hold.
    abortAll(rank, "out of host memory: the plan's buffers do not fit in "
                   "this machine's memory (run fewer ranks per machine, or "
                   "compile for devices with less memory)");
  }
  MPI_Finalize();
  return code;
}
