//===- CpuBackend.cpp - buffers in host memory, reference kernels ---------===//
//
// The backend parplan-run uses without a GPU and the ground truth the CUDA
// backend's equivalence runs compare with: host Tensors, runKernel, and the
// communicator's collectives, one instruction after another.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Backend.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/StreamSchedule.h"

#include "Device/Dispatch.h"
#include "Device/HostLauncher.h"
#include "Device/KernelPreparation.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace parplan::runtime {

std::string describeInstruction(const plan::Instruction &instruction) {
  switch (instruction.op_case()) {
  case plan::Instruction::kKernel:
    return "nn." + instruction.kernel().op();
  case plan::Instruction::kCollective:
    return "collective over '" + instruction.collective().group() + "'";
  case plan::Instruction::kSend:
    return "send";
  case plan::Instruction::kRecv:
    return "recv";
  case plan::Instruction::kCrossMeshSend:
  case plan::Instruction::kCrossMeshRecv:
    return "cross-mesh part";
  case plan::Instruction::OP_NOT_SET:
    break;
  }
  return "empty";
}

std::string profileKey(const plan::Instruction &instruction) {
  switch (instruction.op_case()) {
  case plan::Instruction::kKernel:
    return "nn." + instruction.kernel().op();
  case plan::Instruction::kCollective:
    return collectiveName(instruction.collective().kind());
  default:
    return describeInstruction(instruction);
  }
}

namespace {
/// A matmul or gemm kernel's product: batch x [m, k] x [k, n] in `dtype`
/// ("f32").
struct Product {
  std::string dtype;
  int64_t m = 0, n = 0, k = 0, batch = 1;
};

/// The product of `instruction`, or nullopt when it is not a matmul or
/// gemm.
std::optional<Product> productOf(const plan::Program &program,
                                 const plan::Instruction &instruction) {
  if (!instruction.has_kernel())
    return std::nullopt;
  const plan::Kernel &kernel = instruction.kernel();
  std::optional<KernelId> id = lookupKernelId(kernel.op());
  if (!id || (*id != KernelId::MatMul && *id != KernelId::Gemm) ||
      kernel.operands_size() < 2 || kernel.results_size() != 1)
    return std::nullopt;
  // The result has M x N elements per batch; K is the lhs's contracted
  // dimension (its last, or the one before when it is read transposed).
  const plan::Buffer &lhs = program.buffers(kernel.operands(0));
  const plan::Buffer &result = program.buffers(kernel.results(0));
  int rank = result.shape_size();
  if (lhs.shape_size() == 0 || rank == 0)
    return std::nullopt;
  Product product;
  std::optional<DType> dtype = toRuntimeDType(lhs.dtype());
  product.dtype = dtype ? toString(*dtype) : "?";
  product.k = lhs.shape(lhs.shape_size() - 1);
  for (const plan::Attr &attr : kernel.attrs())
    if ((attr.name() == "trans_a" || attr.name() == "transpose_lhs") &&
        attr.bool_value())
      product.k = lhs.shape(lhs.shape_size() - 2);
  product.n = result.shape(rank - 1);
  product.m = rank >= 2 ? result.shape(rank - 2) : 1;
  for (int d = 0; d + 2 < rank; ++d)
    product.batch *= result.shape(d);
  return product;
}

/// 2 m n k per matrix of the batch; 0 for no product.
double flopsOf(const std::optional<Product> &product) {
  if (!product)
    return 0;
  return 2.0 * static_cast<double>(product->batch) *
         static_cast<double>(product->m) * static_cast<double>(product->n) *
         static_cast<double>(product->k);
}
} // namespace

double kernelFlops(const plan::Program &program,
                   const plan::Instruction &instruction) {
  return flopsOf(productOf(program, instruction));
}

void addToProfile(Profile &profile, const plan::Program &program,
                  const plan::Instruction &instruction, double seconds) {
  std::string key = profileKey(instruction);
  std::optional<Product> product = productOf(program, instruction);
  double flops = flopsOf(product);
  auto add = [&](ProfileEntry &entry) {
    ++entry.calls;
    entry.seconds += seconds;
    entry.flops += flops;
  };
  add(profile.kinds[key]);
  if (product)
    add(profile.shapes[key + " " + product->dtype +
                       " m=" + std::to_string(product->m) +
                       " n=" + std::to_string(product->n) +
                       " k=" + std::to_string(product->k) +
                       " batch=" + std::to_string(product->batch)]);
}

std::vector<std::string>
countedNames(const std::map<std::string, int> &counts) {
  std::vector<std::string> names;
  for (const auto &[name, count] : counts)
    names.push_back(count > 1 ? name + " x" + std::to_string(count) : name);
  return names;
}

bool updatesDisjoint(const plan::Program &program) {
  std::set<int64_t> targets;
  for (const plan::Update &update : program.updates())
    targets.insert(update.target());
  for (const plan::Update &update : program.updates())
    if (targets.count(update.source()))
      return false;
  return true;
}

namespace {

class CpuBackend : public Backend {
public:
  CpuBackend(Communicator &communicator, HostKernels kernels, int streams)
      : communicator_(communicator), kernels_(kernels),
        twoStreams_(streams == 2) {}

  std::string describe() const override {
    if (kernels_ == HostKernels::Reference)
      return "cpu";
    return useArena_ ? "cpu (the CUDA kernels and memory plan, on the host)"
                     : "cpu (the CUDA kernels, on the host)";
  }

  std::vector<std::string> hostKernels() const override {
    return countedNames(prepared_.referenceCounts);
  }

  Status load(const plan::Program &program, const std::vector<AttrMap> &attrs,
              const std::map<std::string, Group> &groups) override {
    program_ = &program;
    attrs_ = &attrs;
    groups_ = &groups;
    updatesDisjoint_ = updatesDisjoint(program);
    buffers_.clear();
    buffers_.reserve(program.buffers_size());
    for (const plan::Buffer &buffer : program.buffers()) {
      std::optional<DType> type = toRuntimeDType(buffer.dtype());
      if (!type)
        return Status::failure("the plan was not checked (a buffer has no "
                               "dtype)");
      buffers_.emplace_back(
          *type, Shape(buffer.shape().begin(), buffer.shape().end()));
    }
    // The CUDA backend's memory too: buffers at their arena offsets.
    useArena_ = kernels_ == HostKernels::Device && program.arena_bytes() > 0 &&
                program.buffers_size() > 0 &&
                program.buffers(0).arena_offset() >= 0;
    arena_.assign(useArena_ ? static_cast<size_t>(program.arena_bytes()) : 0,
                  std::byte{0});
    if (twoStreams_)
      schedule_ = scheduleStreams(program);
    return kernels_ == HostKernels::Device ? prepareDeviceKernels()
                                           : Status::success();
  }

  Status write(int64_t buffer, const Tensor &value) override {
    Tensor &target = buffers_[buffer];
    if (value.dtype() != target.dtype() || value.shape() != target.shape())
      return Status::failure("buffer " + std::to_string(buffer) + " is " +
                             toString(target.dtype()) +
                             toString(target.shape()) + ", not " +
                             toString(value.dtype()) + toString(value.shape()));
    target = value;
    toArena(buffer);
    return Status::success();
  }

  Status read(int64_t buffer, Tensor &value) override {
    fromArena(buffer);
    value = buffers_[buffer];
    return Status::success();
  }

  Status run(int64_t begin, int64_t end) override {
    if (twoStreams_)
      return runOnTwoStreams(begin, end);
    for (int64_t i = begin; i < end; ++i)
      if (Status status = runTimed(i); !status.ok())
        return status;
    return Status::success();
  }

  void setProfiling(bool on) override {
    profiling_ = on;
    profile_ = Profile();
  }
  bool recordsTimeline() const override { return true; }
  void setTimeline(bool on) override {
    timeline_ = on;
    runs_.clear();
    origin_ = std::chrono::steady_clock::now();
  }
  std::vector<InstructionRun> takeTimeline() override {
    std::vector<InstructionRun> taken;
    taken.swap(runs_);
    return taken;
  }
  const Profile &profile() const override { return profile_; }

  Status applyUpdates() override {
    for (const plan::Update &update : program_->updates())
      fromArena(update.source());
    if (updatesDisjoint_) {
      for (const plan::Update &update : program_->updates())
        buffers_[update.target()] = buffers_[update.source()];
    } else {
      std::vector<Tensor> values;
      values.reserve(program_->updates_size());
      for (const plan::Update &update : program_->updates())
        values.push_back(buffers_[update.source()]);
      for (int u = 0; u < program_->updates_size(); ++u)
        buffers_[program_->updates(u).target()] = std::move(values[u]);
    }
    for (const plan::Update &update : program_->updates())
      toArena(update.target());
    return Status::success();
  }

private:
  /// Runs instruction `i`, with its arena copies, its timeline record and
  /// its profile.
  Status runTimed(int64_t i) {
    const plan::Instruction &instruction = program_->instructions(i);
    auto start = std::chrono::steady_clock::now();
    std::vector<int64_t> reads, writes;
    if (useArena_) {
      instructionBuffers(instruction, reads, writes);
      for (int64_t b : reads)
        fromArena(b);
    }
    Status status = runInstruction(i, instruction);
    for (int64_t b : writes)
      toArena(b);
    if (timeline_ || profiling_) {
      auto finish = std::chrono::steady_clock::now();
      std::lock_guard<std::mutex> lock(recording_);
      if (timeline_)
        runs_.push_back(
            {i, std::chrono::duration<double>(start - origin_).count(),
             std::chrono::duration<double>(finish - origin_).count()});
      if (profiling_)
        addToProfile(profile_, *program_, instruction,
                     std::chrono::duration<double>(finish - start).count());
    }
    if (!status.ok())
      return Status::failure("instruction " + std::to_string(i) + " (" +
                             describeInstruction(instruction) +
                             "): " + status.error);
    return Status::success();
  }

  /// [begin, end) with the collectives and messages on a thread of their
  /// own (the gradients stream's too, in program order with the others):
  /// each thread runs its instructions in order, an instruction waiting for
  /// those of the other streams scheduleStreams names (one before `begin`
  /// has ended: the previous range returned after both threads). Returns
  /// when both are done; the first failure, once both have stopped.
  Status runOnTwoStreams(int64_t begin, int64_t end) {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<bool> ended(static_cast<size_t>(end - begin), false);
    bool stopped = false;
    Status failure = Status::success();
    auto runStream = [&](Stream stream) {
      for (int64_t i = begin; i < end; ++i) {
        if ((schedule_.stream[i] == Stream::Compute) !=
            (stream == Stream::Compute))
          continue;
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] {
            return stopped ||
                   std::all_of(
                       schedule_.waitFor[i].begin(), schedule_.waitFor[i].end(),
                       [&](int64_t awaited) {
                         return awaited < begin ||
                                ended[static_cast<size_t>(awaited - begin)];
                       });
          });
          if (stopped)
            return;
        }
        Status status = runTimed(i);
        std::lock_guard<std::mutex> lock(mutex);
        if (!status.ok()) {
          if (failure.ok())
            failure = status;
          stopped = true;
        }
        ended[static_cast<size_t>(i - begin)] = true;
        changed.notify_all();
        if (stopped)
          return;
      }
    };
    std::thread communication(runStream, Stream::Communication);
    runStream(Stream::Compute);
    communication.join();
    return failure;
  }

  /// With the arena, it holds every buffer's value (so that buffers that
  /// share bytes clobber each other as on the GPU), and the host tensors
  /// are copies made around each instruction.
  void toArena(int64_t buffer) {
    if (useArena_ && buffers_[buffer].byteSize() > 0)
      std::memcpy(arena_.data() + program_->buffers(buffer).arena_offset(),
                  buffers_[buffer].bytes(), buffers_[buffer].byteSize());
  }
  void fromArena(int64_t buffer) {
    if (useArena_ && buffers_[buffer].byteSize() > 0)
      std::memcpy(buffers_[buffer].bytes(),
                  arena_.data() + program_->buffers(buffer).arena_offset(),
                  buffers_[buffer].byteSize());
  }

  Status runInstruction(int64_t index, const plan::Instruction &instruction) {
    switch (instruction.op_case()) {
    case plan::Instruction::kKernel: {
      const plan::Kernel &kernel = instruction.kernel();
      std::vector<const Tensor *> operands;
      operands.reserve(kernel.operands_size());
      for (int64_t operand : kernel.operands())
        operands.push_back(operand < 0 ? nullptr : &buffers_[operand]);
      std::vector<Tensor *> results;
      results.reserve(kernel.results_size());
      for (int64_t result : kernel.results())
        results.push_back(&buffers_[result]);
      if (kernels_ == HostKernels::Device && prepared_.onDevice[index])
        return runDeviceKernel(index, kernel, operands, results);
      return runKernel(kernel.op(), (*attrs_)[index], operands, results);
    }
    case plan::Instruction::kCollective:
      return runCollective(instruction.collective());
    case plan::Instruction::kSend:
      return communicator_.send(buffers_[instruction.send().buffer()],
                                instruction.send().peer(),
                                instruction.send().tag());
    case plan::Instruction::kRecv:
      return communicator_.recv(buffers_[instruction.recv().buffer()],
                                instruction.recv().peer(),
                                instruction.recv().tag());
    // instantiateProgram has replaced the parts with their steps.
    case plan::Instruction::kCrossMeshSend:
    case plan::Instruction::kCrossMeshRecv:
    case plan::Instruction::OP_NOT_SET:
      break;
    }
    return Status::failure("empty instruction");
  }

  Status runCollective(const plan::Collective &collective) {
    const Group &group = groups_->at(collective.group());
    Tensor &in = buffers_[collective.input()];
    Tensor &out = buffers_[collective.output()];
    // checkPlan refused a reduction this release does not know.
    ReduceKind reduce =
        toReduceKind(collective.reduce()).value_or(ReduceKind::Sum);
    switch (collective.kind()) {
    case plan::Collective::ALL_REDUCE:
      return communicator_.allReduce(in, reduce, group);
    case plan::Collective::ALL_GATHER:
      return communicator_.allGather(in, out, collective.axis(), group);
    case plan::Collective::REDUCE_SCATTER:
      return communicator_.reduceScatter(in, out, collective.axis(), reduce,
                                         group);
    case plan::Collective::ALL_TO_ALL:
      return communicator_.allToAll(in, out, collective.axis(),
                                    collective.concat_axis(), group);
    case plan::Collective::BROADCAST:
      return communicator_.broadcast(in, collective.root(), group);
    default:
      return Status::failure("unknown collective kind " +
                             std::to_string(collective.kind()));
    }
  }

  /// Resolves every kernel's attributes and asks which have a device
  /// kernel for their operands.
  Status prepareDeviceKernels() {
    std::vector<device::DeviceTensor> shapes;
    shapes.reserve(buffers_.size());
    for (const Tensor &buffer : buffers_)
      shapes.push_back({nullptr, buffer.dtype(), buffer.shape()});
    return device::prepareKernels(*program_, *attrs_, shapes, prepared_);
  }

  Status runDeviceKernel(int64_t index, const plan::Kernel &kernel,
                         const std::vector<const Tensor *> &operands,
                         const std::vector<Tensor *> &results) {
    // Device views of the same host memory (null for an absent operand).
    std::vector<device::DeviceTensor> views;
    views.reserve(kernel.operands_size() + kernel.results_size());
    auto view = [&](int64_t buffer) {
      Tensor &tensor = buffers_[buffer];
      views.push_back({tensor.bytes(), tensor.dtype(), tensor.shape()});
      return &views.back();
    };
    std::vector<const device::DeviceTensor *> deviceOperands;
    for (int64_t operand : kernel.operands())
      deviceOperands.push_back(operand < 0 ? nullptr : view(operand));
    std::vector<device::DeviceTensor *> deviceResults;
    for (int64_t result : kernel.results())
      deviceResults.push_back(view(result));
    Status status;
    device::Launch launch = device::launchDeviceKernel(
        launcher_, prepared_.ids[index], prepared_.resolved[index],
        deviceOperands, deviceResults, status);
    if (!status.ok())
      return status;
    // A data fault: the reference kernel says what it was, as the CUDA
    // backend does.
    if (launcher_.takeError() != 0 || launch != device::Launch::Done) {
      Status reference =
          runKernel(prepared_.ids[index], (*attrs_)[index], operands, results);
      if (launch == device::Launch::Done && reference.ok())
        return Status::failure("an index or label is out of range");
      return reference;
    }
    return Status::success();
  }

  Communicator &communicator_;
  HostKernels kernels_;
  device::HostLauncher launcher_;
  device::KernelPreparation prepared_;
  const plan::Program *program_ = nullptr;
  const std::vector<AttrMap> *attrs_ = nullptr;
  const std::map<std::string, Group> *groups_ = nullptr;
  std::vector<Tensor> buffers_;
  bool updatesDisjoint_ = true;
  bool useArena_ = false;
  std::vector<std::byte> arena_;
  bool profiling_ = false;
  Profile profile_;
  bool timeline_ = false;
  std::chrono::steady_clock::time_point origin_;
  std::vector<InstructionRun> runs_;
  /// With two streams: the schedule, and the lock on the timeline and the
  /// profile, which both streams add to.
  bool twoStreams_ = false;
  StreamSchedule schedule_;
  std::mutex recording_;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(Communicator &communicator,
                                          HostKernels kernels, int streams) {
  return std::make_unique<CpuBackend>(communicator, kernels, streams);
}

} // namespace parplan::runtime
