//===- Executor.h - run one device's program of a plan ----------*- C++ -*-===//
//
// The executor behind parplan-run: it fills one device's parameters,
// optimizer state and batches, and runs the device's program of a checked
// plan (checkPlan) step after step on a backend (Backend.h): the CPU one
// (reference kernels, a Communicator) unless given another. No MLIR
// dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_EXECUTOR_H
#define PARPLAN_RUNTIME_EXECUTOR_H

#include "parplan/Runtime/Backend.h"
#include "parplan/Runtime/Communicator.h"
#include "parplan/Runtime/KernelCall.h"
#include "parplan/Runtime/OutputFile.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/Tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parplan::runtime {

class Executor {
public:
  /// Fills a PARAMETER buffer's block from the model's weights, or leaves
  /// it and returns false to have it filled from the seed.
  using WeightLoader = std::function<Status(const plan::Buffer &buffer,
                                            Tensor &block, bool &loaded)>;

  /// Instantiates the program device `rank` runs in `plan` (which must have
  /// passed checkPlan; instantiateProgram) and allocates its buffers on the
  /// backend. The communicator must be rank `rank` of a world of one
  /// process per device of the mesh, and outlive the executor; the CPU
  /// backend runs the collectives on it.
  Status load(const plan::Plan &plan, int rank, Communicator &communicator);
  /// The backend the next load uses (default: the CPU backend).
  void setBackend(std::unique_ptr<Backend> backend) {
    backend_ = std::move(backend);
  }
  const Backend *backend() const { return backend_.get(); }
  Backend *backend() { return backend_.get(); }

  /// The seed of synthetic values; the plan's seed unless set (before
  /// initialize).
  void setSeed(uint64_t seed) { seed_ = seed; }
  uint64_t seed() const { return seed_; }
  /// The hook for weights from a model file; without one (or where it
  /// declines), parameters get synthetic values (Initializers.h).
  void setWeightLoader(WeightLoader loader) {
    weightLoader_ = std::move(loader);
  }
  /// The hook for batches from files: fills an INPUT buffer's block for a
  /// step, or declines (loaded = false) to have it drawn from the seed.
  using BatchLoader = std::function<Status(
      const plan::Buffer &buffer, int64_t step, Tensor &block, bool &loaded)>;
  void setBatchLoader(BatchLoader loader) { batchLoader_ = std::move(loader); }

  /// Fills PARAMETER buffers (from the weight loader or the seed), STATE
  /// with zeros and CONSTANT with their data. Call once before the steps.
  Status initialize();

  /// Runs one step: fills the INPUT buffers with step `stepIndex`'s batch,
  /// runs the instructions, then applies the updates. With micro-batches,
  /// the accumulators are zeroed, and each micro-batch fills the inputs
  /// with its slice and runs the instructions before update_begin (its
  /// forward, then its backward from backward_begin, in the order the
  /// plan's schedule gives the device's stage); the rest run once, after
  /// the last. `loss` (if not null) receives the loss buffer's value as a
  /// double, NaN when the program has none.
  Status step(int64_t stepIndex, double *loss);

  /// What an OUTPUT buffer holds against the synthetic values of its
  /// tensor (Initializers.h): `mismatches` of its `elements` differ.
  struct OutputCheck {
    int64_t buffer = 0;
    std::string name;
    std::vector<int64_t> offsets, shape, logicalShape;
    int64_t elements = 0, mismatches = 0;
  };
  /// Checks every OUTPUT buffer of the device's program.
  Status checkOutputs(std::vector<OutputCheck> &checks) const;

  /// From the next step on, keeps each step's OUTPUT blocks (outputs()):
  /// read from the device after each micro-batch's forward, which the next
  /// micro-batch overwrites.
  void setKeepOutputs(bool keep) { keepOutputs_ = keep; }
  /// The last step's OUTPUT blocks, one per buffer and micro-batch, in the
  /// step's whole batch: micro-batch k's rows lie k micro-batches down
  /// dimension 0, as its inputs' do (fillBatch).
  const std::vector<OutputBlock> &outputs() const { return outputs_; }

  int64_t numBuffers() const { return program_.buffers_size(); }
  /// A copy of buffer `index`'s current value, from wherever the backend
  /// keeps it.
  Status read(int64_t index, Tensor &value) const;
  /// The same, for tests: an empty tensor when the read fails.
  Tensor buffer(int64_t index) const;
  const plan::Program &program() const { return program_; }

  /// A measured run of an instruction of the device's program (its
  /// instance, instantiateProgram's: a cross-mesh part is its own sends,
  /// receives and broadcasts), seconds from when tracing was turned on, and
  /// the pass it ran in (micro-batch -1: once per step).
  struct TracedRun {
    int64_t instruction = 0;
    double start = 0, end = 0;
    int64_t microBatch = -1, chunk = 0;
    bool backward = false;
  };
  /// Records the runs of the steps from now (the clock's zero); fails when
  /// the backend records no timeline.
  Status setTracing(bool on);
  /// The runs recorded since, handed over.
  std::vector<TracedRun> takeTrace();

  /// The order the micro-batches run in ("sequential" or a schedule of
  /// executorSchedules()), the device's stage and the stages.
  const std::string &schedule() const { return order_.schedule; }
  int64_t stage() const { return stage_; }
  int64_t stages() const { return stages_; }
  /// Why the plan's schedule gave way to "sequential" (a backend that does
  /// not run schedules); empty when it did not.
  const std::string &scheduleNote() const { return scheduleNote_; }

private:
  /// The device's tasks of a step, the instruction ranges of each chunk's
  /// forward and backward, and per chunk the buffers a micro-batch's
  /// backward reads of its forward (saved while another micro-batch's
  /// forward runs in between).
  void planTasks(const plan::Plan &plan);

  /// A host tensor of buffer `index`'s type and shape, zero-filled.
  Tensor hostBuffer(int64_t index) const;
  /// Writes micro-batch `microBatch`'s slice of step `stepIndex`'s batch
  /// into the INPUT buffers.
  Status fillBatch(int64_t stepIndex, int64_t microBatch);
  /// Reads micro-batch `microBatch`'s OUTPUT blocks into outputs_,
  /// replacing what an earlier chunk of it left there.
  Status keepOutputs(int64_t microBatch);

  /// The device's instance of its program (instantiateProgram).
  plan::Program program_;
  int64_t device_ = 0;
  std::map<std::string, Group> groups_;
  std::unique_ptr<Backend> backend_;
  uint64_t seed_ = 0;
  int64_t microBatches_ = 1;
  Communicator *communicator_ = nullptr;
  std::string scheduleNote_;
  int64_t stage_ = 0, stages_ = 1;
  /// Its tasks, each chunk's forward and backward instructions, and the
  /// once-per-step part's.
  StepOrder order_;
  /// Per chunk: the buffers its backward reads of the forward, and whether
  /// its passes read the batch (its forward fills the micro-batch's slice
  /// then).
  std::vector<std::vector<int64_t>> kept_;
  std::vector<bool> readsBatch_;
  /// The MICRO_BATCH buffers, told each task's micro-batch.
  std::vector<int64_t> microBatchBuffers_;
  WeightLoader weightLoader_;
  BatchLoader batchLoader_;
  /// Kernel attributes converted once, by instruction index.
  std::vector<AttrMap> attrs_;
  bool loaded_ = false, initialized_ = false;
  bool tracing_ = false;
  std::vector<TracedRun> traced_;
  bool keepOutputs_ = false;
  std::vector<OutputBlock> outputs_;
  /// outputs_'s block of each (OUTPUT buffer, micro-batch).
  std::map<std::pair<int64_t, int64_t>, size_t> outputAt_;
};

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_EXECUTOR_H
