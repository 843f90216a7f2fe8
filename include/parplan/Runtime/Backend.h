//===- Backend.h - where a device's buffers live and run --------*- C++ -*-===//
//
// The executor (Executor.h) fills parameters, state and batches on the host
// and leaves the rest to a backend: the buffers' memory, the kernels, the
// collectives and the updates. The CPU backend keeps buffers in host
// Tensors and runs the reference kernels (runKernel) and a Communicator;
// the CUDA backend (CudaBackend.h) keeps them in GPU memory and runs CUDA
// kernels, cuBLAS and NCCL. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_BACKEND_H
#define PARPLAN_RUNTIME_BACKEND_H

#include "parplan/Runtime/Communicator.h"
#include "parplan/Runtime/KernelCall.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace parplan::runtime {

/// Time spent in one kind of instruction over the steps run with
/// profiling on.
struct ProfileEntry {
  int64_t calls = 0;
  double seconds = 0;
  /// Floating-point operations, for matmul and gemm (2 per multiply-add),
  /// so that throughput can be read off.
  double flops = 0;
};

/// The time by instruction kind ("nn.matmul", "all_reduce", "send", ...)
/// and, for matmuls and gemms, also by shape ("nn.matmul f32 m=4096 n=3072
/// k=1024 batch=1"): the shapes are a part of their kind's time.
struct Profile {
  std::map<std::string, ProfileEntry> kinds, shapes;
  /// A GPU backend's host time to issue the instructions that run on the
  /// device (their launch calls and the work before them), which bounds
  /// the step from below when kernels are short.
  ProfileEntry issue;
};

/// Adds one run of `instruction`, `seconds` long, to `profile`: under its
/// kind and, for a matmul or gemm, under its shape too.
void addToProfile(Profile &profile, const plan::Program &program,
                  const plan::Instruction &instruction, double seconds);

/// The name an instruction is profiled under.
std::string profileKey(const plan::Instruction &instruction);

/// Floating-point operations of a matmul or gemm kernel instruction (0 for
/// the others), from its buffers' shapes.
double kernelFlops(const plan::Program &program,
                   const plan::Instruction &instruction);

class Backend {
public:
  virtual ~Backend() = default;

  /// One line for logs: "cpu", "cuda (NVIDIA H100 80GB HBM3, GPU 0)".
  virtual std::string describe() const = 0;

  /// Allocates `program`'s buffers (zero-filled, with the plan's types and
  /// shapes) and prepares its instructions; `attrs[i]` are instruction i's
  /// kernel attributes and `groups` the plan's device groups by name. The
  /// program must have passed checkPlan and outlive the backend's use.
  virtual Status load(const plan::Program &program,
                      const std::vector<AttrMap> &attrs,
                      const std::map<std::string, Group> &groups) = 0;

  /// Copies a host tensor of the buffer's type and shape into the buffer.
  virtual Status write(int64_t buffer, const Tensor &value) = 0;

  /// A block of synthetic values (Initializers.h's fillBlock: the block at
  /// `offsets` of a tensor of `logicalShape`, drawn under `key`).
  struct SyntheticBlock {
    std::vector<int64_t> logicalShape, offsets;
    uint64_t key = 0;
    double scale = 1;
    int64_t integerBound = 0;
  };
  /// Makes `block`'s values in the buffer where it lives, and says so in
  /// `filled`; false when the backend cannot (then the caller fills a host
  /// tensor and writes it). The CUDA backend draws them on the GPU, which
  /// saves making and copying a batch every step.
  virtual Status fillSynthetic(int64_t buffer, const SyntheticBlock &block,
                               bool &filled) {
    (void)buffer;
    (void)block;
    filled = false;
    return Status::success();
  }
  /// Copies the buffer out, after everything that writes it has run.
  virtual Status read(int64_t buffer, Tensor &value) = 0;

  /// Runs the program's instructions `begin` to `end` - 1 once, in order
  /// as far as their results can tell; returns when every one has
  /// finished. A step of micro-batches runs the instructions before
  /// update_begin once per micro-batch, and the rest once. A failure names
  /// the instruction ("instruction 7 (nn.gather): ...").
  virtual Status run(int64_t begin, int64_t end) = 0;
  /// Copies every update's source into its target, all sources read
  /// before any target is written.
  virtual Status applyUpdates() = 0;

  /// Whether a pipeline schedule may run on it: a stage's forwards and
  /// backwards of different micro-batches interleaved, with messages to
  /// other stages that must not wait for their receivers (the CPU
  /// backend's communicator does not). The CUDA backend's NCCL messages
  /// do, so it runs one micro-batch after another.
  virtual bool runsSchedules() const { return true; }

  /// The kernels this backend runs on the host because it has no kernel of
  /// its own for them ("conv_grad_weight x2"), for the user to see; empty
  /// for the CPU backend.
  virtual std::vector<std::string> hostKernels() const { return {}; }

  /// One instruction's run on the backend's clock: seconds since the
  /// timeline was turned on.
  struct InstructionRun {
    int64_t instruction = 0;
    double start = 0, end = 0;
  };
  /// Whether run can record a timeline of the instructions it runs
  /// (parplan-run --trace); the CPU and CUDA backends can.
  virtual bool recordsTimeline() const { return false; }
  /// With the timeline on (from now: the clock's zero), run records every
  /// instruction it runs; takeTimeline hands the records over and clears
  /// them.
  virtual void setTimeline(bool on) {}
  virtual std::vector<InstructionRun> takeTimeline() { return {}; }

  /// With profiling on, run times every instruction on its own (the CUDA
  /// backend then gives up overlap, and measures with CUDA events);
  /// profile() sums the times by kind (and matmul shape) since profiling
  /// was turned on.
  virtual void setProfiling(bool on) = 0;
  virtual const Profile &profile() const = 0;
};

/// The kernels the CPU backend runs: the reference kernels (Kernels.h), or
/// the CUDA backend's own kernels (lib/Runtime/Device) run on the host,
/// which checks those through whole plans on machines without a GPU (an
/// op they do not cover runs its reference kernel, as on the GPU).
enum class HostKernels { Reference, Device };

/// The CPU backend: buffers in host memory, `kernels`, and `communicator`
/// (which must outlive it) for collectives and messages. With `streams` 2,
/// collectives and messages run on a thread of their own beside the
/// kernels, each instruction waiting only for what runtime::scheduleStreams
/// says it waits for, as a GPU's streams run them (the gradients stream's
/// all-reduces too, in program order with the other collectives: the
/// communicator is then called from that thread alone while a range runs);
/// with 1, every instruction in turn.
std::unique_ptr<Backend>
createCpuBackend(Communicator &communicator,
                 HostKernels kernels = HostKernels::Reference, int streams = 1);

/// "nn.matmul", "collective over 'axis0_0'", "send", "recv": how errors
/// name an instruction.
std::string describeInstruction(const plan::Instruction &instruction);

/// "conv x2", "gemm": the names with their counts, for hostKernels().
std::vector<std::string> countedNames(const std::map<std::string, int> &counts);

/// Whether no update's source is another update's target, so that updates
/// can be copied in order without taking the sources first.
bool updatesDisjoint(const plan::Program &program);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_BACKEND_H
