//===- Pipeline.h - pipeline schedules and their timeline ------*- C++ -*-===//
//
// A pipeline runs a training step's M micro-batches through P stages, each
// on its own devices: a stage runs every micro-batch's forward through its
// layers, sends the activation on, and later runs that micro-batch's
// backward when the gradient comes back. A schedule is the order each stage
// runs its forwards and backwards in; it sets how long stages idle (the
// bubble) and how many micro-batches' activations a stage holds at once.
// docs/pipeline.md has the schedules, their pictures and the formulas. No
// MLIR dependency: the cost model prices these orders and the executor
// runs them (the Schedule library links neither).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SCHEDULE_PIPELINE_H
#define PARPLAN_SCHEDULE_PIPELINE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parplan::schedule {

enum class PipelineSchedule {
  /// Every forward, then every backward (last micro-batch first).
  GPipe,
  /// Stage s runs P - s - 1 forwards, then alternates one forward and one
  /// backward, then the remaining backwards (PipeDream-Flush, Megatron-LM).
  OneFOneB,
  /// 1F1B with 2(P - s - 1) warm-up forwards, so that each activation is
  /// sent while the stage computes and a slow link between stages hides
  /// behind compute ("On Optimizing the Communication of Model
  /// Parallelism", MLSys 2023).
  EagerOneFOneB,
  /// 1F1B over V model chunks per stage, virtual stage c * P + s on stage
  /// s (Megatron-LM 2021): the bubble shrinks V times.
  Interleaved,
};

/// Every schedule, in the order above.
inline constexpr PipelineSchedule kPipelineSchedules[] = {
    PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
    PipelineSchedule::EagerOneFOneB, PipelineSchedule::Interleaved};

/// "gpipe", "1f1b", "eager-1f1b", "interleaved".
constexpr const char *toString(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::GPipe:
    return "gpipe";
  case PipelineSchedule::OneFOneB:
    return "1f1b";
  case PipelineSchedule::EagerOneFOneB:
    return "eager-1f1b";
  case PipelineSchedule::Interleaved:
    return "interleaved";
  }
  return "?";
}

/// The schedule stages run micro-batches in unless told otherwise: every
/// option's default, and what the pipeline search tries shapes with.
inline constexpr PipelineSchedule kDefaultPipelineSchedule =
    PipelineSchedule::OneFOneB;
inline constexpr const char *kDefaultPipelineScheduleName =
    toString(kDefaultPipelineSchedule);
std::vector<std::string> pipelineScheduleNames();
/// The inverse of toString; std::nullopt for any other text.
std::optional<PipelineSchedule> parsePipelineSchedule(const std::string &text);

/// P stages, M micro-batches, V model chunks per stage (1 but for
/// Interleaved).
struct PipelineShape {
  int64_t stages = 1;
  int64_t microBatches = 1;
  int64_t chunks = 1;
};

/// One step a stage runs: the forward or backward of a micro-batch through
/// one of its chunks (virtual stage chunk * P + stage).
struct PipelineTask {
  bool backward = false;
  int64_t microBatch = 0;
  int64_t chunk = 0;

  bool operator==(const PipelineTask &other) const {
    return backward == other.backward && microBatch == other.microBatch &&
           chunk == other.chunk;
  }
};

/// Why `schedule` cannot run `shape`, in one line: counts below 1, chunks
/// other than 1 outside Interleaved, Interleaved with one chunk or with
/// micro-batches that are not a multiple of the stages. nullopt when it
/// can.
std::optional<std::string> checkPipeline(PipelineSchedule schedule,
                                         const PipelineShape &shape);

/// For a valid shape: per stage, its tasks in the order it runs them.
/// Every stage runs each micro-batch's forward and backward through each
/// of its chunks once, a backward after its forward.
std::vector<std::vector<PipelineTask>>
pipelineOrder(PipelineSchedule schedule, const PipelineShape &shape);

/// Per stage, the most (micro-batch, chunk) forwards it has run whose
/// backward has not: the activations it holds at once.
std::vector<int64_t>
pipelineInFlight(const std::vector<std::vector<PipelineTask>> &order);

/// Virtual stage `chunk` * `stages` + `stage`: where a stage's chunk is in
/// a micro-batch's way round the stages.
inline int64_t virtualStage(int64_t stage, int64_t chunk, int64_t stages) {
  return chunk * stages + stage;
}

/// Why schedule `name` cannot run stages of `chunks` model chunks:
/// interleaved needs more than one, the other pipeline schedules exactly
/// one, and "sequential" (each micro-batch's passes before the next's)
/// runs any. nullopt when it can (and for a name that is no schedule).
std::optional<std::string> checkScheduleChunks(const std::string &name,
                                               int64_t chunks);

/// Per virtual stage, the most micro-batches whose activations through
/// that chunk a stage keeps aside at once when running its order as
/// parplan-run does: after a forward, unless the stage's next task is that
/// micro-batch's backward through the chunk, until that backward.
std::vector<int64_t>
pipelineKeptAside(const std::vector<std::vector<PipelineTask>> &order,
                  int64_t chunks);

/// Per virtual stage (chunk * P + stage), the most micro-batches whose
/// forward through that chunk its stage has run and whose backward it has
/// not: the activations of the chunk it holds at once. With one chunk,
/// pipelineInFlight.
std::vector<int64_t>
pipelineInFlightByChunk(const std::vector<std::vector<PipelineTask>> &order,
                        int64_t chunks);

/// Seconds for one micro-batch: `forward` and `backward` per virtual stage
/// (P * V of them), and `sendForward` / `sendBackward` per boundary
/// between virtual stages v and v + 1 (P * V - 1), the activation going
/// on and its gradient coming back.
struct PipelineCosts {
  std::vector<double> forward, backward, sendForward, sendBackward;
  /// Per stage, when its first task may start at the earliest (what it
  /// runs and receives once before the micro-batches); none: at 0.
  std::vector<double> start;
  /// Per stage, how long its card sends from 0 before any micro-batch's
  /// send (copies of weights other stages read); none: free at 0.
  std::vector<double> sending;
  /// A stage's update waiting for a part of a gradient another stage
  /// sends it after that stage's last task (a tied weight's, from the last
  /// stage to the first): `seconds` after the sender's last task, of which
  /// `move`, from `beforeMove` on, is the move between the stages. The
  /// move holds the sender's card and the receiver's as a micro-batch's
  /// send does: it waits for sends booked before it, and a send booked
  /// after it (an earlier stage's last backward to the receiver) waits for
  /// it unless it fits before.
  struct UpdateWait {
    size_t from = 0, to = 0;
    double seconds = 0;
    double beforeMove = 0, move = 0;
  };
  std::vector<UpdateWait> updateWaits;

  /// Every virtual stage alike, every boundary alike; empty for a shape
  /// without stages or chunks.
  static PipelineCosts uniform(const PipelineShape &shape, double forward,
                               double backward, double send = 0);
};

/// When each task ran: a stage runs its tasks one at a time in its order,
/// each as soon as the stage is free and its inputs have arrived. A send
/// starts when its task ends and both its stage's card is free to send and
/// the receiving stage's to receive (a card sends one message and receives
/// one at a time, whichever way each goes and whichever chunk, as
/// `parplan simulate` holds a move's cards), and does not hold the stage:
/// sends overlap compute. `seconds` is infinite
/// when the order waits on itself or does not fit `shape` and `costs`.
struct PipelineTimeline {
  double seconds = 0;
  /// Per stage: seconds computing; the rest of `seconds` is its bubble.
  std::vector<double> busy;
  /// Per stage, per task of its order: start and end.
  std::vector<std::vector<std::pair<double, double>>> spans;
  /// Per PipelineCosts::updateWaits entry, when the receiver is done with
  /// the part: its sender's last task, the move when both cards are free,
  /// the rest of its seconds.
  std::vector<double> updateWaitsDone;
};

PipelineTimeline
simulatePipeline(const std::vector<std::vector<PipelineTask>> &order,
                 const PipelineShape &shape, const PipelineCosts &costs);

/// A training step on P stages: the schedule's timeline on `costs`, then
/// each stage's `update` (its once-per-step work: the optimizer, gradient
/// synchronization) after that stage's own last task, as the executor
/// runs it, and no sooner than each of `costs.updateWaits` (a gradient's
/// part from another stage and the work it feeds) after its sender's last
/// task. The step ends with the last stage to finish; a stage's busy
/// time includes its update. One formula for the search's predicted step
/// and for trying another schedule on the same stage costs.
PipelineTimeline simulateStep(PipelineSchedule schedule,
                              const PipelineShape &shape,
                              const PipelineCosts &costs,
                              const std::vector<double> &update);

/// The timeline as text, a row per stage and `columns` characters per
/// second: "F3" a forward of micro-batch 3, "B3" a backward, a letter after
/// the number the chunk (a, b, ...) with Interleaved, "." idle.
std::string drawPipeline(const std::vector<std::vector<PipelineTask>> &order,
                         const PipelineShape &shape,
                         const PipelineTimeline &timeline, int64_t columns);

/// Cuts `weights`, in order, into `parts` contiguous non-empty runs so
/// that the longest run is as short as it can be (the balanced partition
/// of layers over stages), a run k taking its weight over `speeds[k]` (1
/// where `speeds` has no entry: the heaviest run as light as it can be;
/// a stage of faster devices takes more layers): the index of each run's
/// first weight, `parts` of them, the first 0. Requires 1 <= parts <=
/// weights.size() and positive speeds.
std::vector<size_t> partitionRuns(const std::vector<double> &weights,
                                  size_t parts,
                                  const std::vector<double> &speeds = {});

/// The longest part of the partition `firsts` (partitionRuns's answer) of
/// `weights`: its weight over its part's speed.
double longestRun(const std::vector<double> &weights,
                  const std::vector<size_t> &firsts,
                  const std::vector<double> &speeds = {});

} // namespace parplan::schedule

#endif // PARPLAN_SCHEDULE_PIPELINE_H
