//===- Executor.cpp - run one device's program of a plan ------------------===//
//
// The executor trusts what checkPlan verified (indices, shapes of blocks
// and collectives) and checks only what one process can see at load time
// (its rank, the world's size); a kernel's own problems come back from
// runKernel as Statuses.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Executor.h"

#include "parplan/Runtime/Initializers.h"
#include "parplan/Runtime/StreamSchedule.h"
#include "parplan/Schedule/Pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace parplan::runtime {

namespace {

template <typename List> std::vector<int64_t> toVector(const List &list) {
  return std::vector<int64_t>(list.begin(), list.end());
}

AttrValue toAttrValue(const plan::Attr &attr) {
  switch (attr.value_case()) {
  case plan::Attr::kIntValue:
    return AttrValue(static_cast<int64_t>(attr.int_value()));
  case plan::Attr::kFloatValue:
    return AttrValue(attr.float_value());
  case plan::Attr::kBoolValue:
    return AttrValue(attr.bool_value());
  case plan::Attr::kStringValue:
    return AttrValue(attr.string_value());
  case plan::Attr::kIntsValue:
    return AttrValue(toVector(attr.ints_value().values()));
  case plan::Attr::kBlockOffset: // instantiateProgram resolved it.
  case plan::Attr::VALUE_NOT_SET:
    break;
  }
  return AttrValue();
}

} // namespace

Status Executor::load(const plan::Plan &planMessage, int rank,
                      Communicator &communicator) {
  int64_t devices = planDevices(planMessage);
  if (rank < 0 || rank >= devices)
    return Status::failure("device " + std::to_string(rank) +
                           " is outside the plan's mesh of " +
                           std::to_string(devices) + " device(s)");
  if (communicator.rank() != rank || communicator.size() != devices)
    return Status::failure(
        "the plan is for " + std::to_string(devices) +
        " device(s) but runs on " + std::to_string(communicator.size()) +
        " process(es); run it with mpirun -np " + std::to_string(devices));
  DeviceProgram instance;
  if (Status status = instantiateProgram(planMessage, rank, instance);
      !status.ok())
    return status;
  device_ = rank;
  program_ = std::move(instance.program);
  groups_ = std::move(instance.groups);
  seed_ = planMessage.seed();
  microBatches_ = std::max<int64_t>(1, planMessage.micro_batches());
  attrs_.assign(program_.instructions_size(), AttrMap());
  for (int i = 0; i < program_.instructions_size(); ++i)
    if (program_.instructions(i).has_kernel())
      for (const plan::Attr &attr : program_.instructions(i).kernel().attrs())
        attrs_[i][attr.name()] = toAttrValue(attr);
  if (!backend_)
    backend_ = createCpuBackend(communicator);
  communicator_ = &communicator;
  loaded_ = initialized_ = false;
  stage_ = programStage(
      planMessage, planMessage.programs(programIndexOf(planMessage, rank)));
  stages_ = std::max(1, planMessage.meshes_size());
  planTasks(planMessage);
  if (Status status = backend_->load(program_, attrs_, groups_); !status.ok())
    return Status::failure("device " + std::to_string(rank) + " (" +
                           backend_->describe() + "): " + status.error);
  loaded_ = true;
  return Status::success();
}

void Executor::planTasks(const plan::Plan &planMessage) {
  StepOrder order = stepOrder(planMessage, program_, backend_->runsSchedules());
  scheduleNote_.clear();
  if (order.schedule == "sequential" && microBatches_ > 1 &&
      !planMessage.schedule().empty() &&
      planMessage.schedule() != "sequential" && !backend_->runsSchedules())
    scheduleNote_ = "the " + backend_->describe() +
                    " backend runs the micro-batches one after another, not "
                    "by the plan's schedule '" +
                    planMessage.schedule() + "'";
  order_ = std::move(order);
  const ChunkRanges &ranges = order_.ranges;
  microBatchBuffers_.clear();
  for (int b = 0; b < program_.buffers_size(); ++b)
    if (program_.buffers(b).kind() == plan::Buffer::MICRO_BATCH)
      microBatchBuffers_.push_back(b);
  auto chunks = static_cast<int64_t>(ranges.forward.size());
  if (order_.schedule == "sequential") {
    kept_.assign(1, {});
    readsBatch_.assign(1, true);
    return;
  }
  kept_ = backwardReadsOfForward(program_, ranges);
  readsBatch_.assign(static_cast<size_t>(chunks), false);
  std::vector<int64_t> reads, writes;
  for (int64_t c = 0; c < chunks; ++c)
    for (const auto &[begin, end] : {ranges.forward[static_cast<size_t>(c)],
                                     ranges.backward[static_cast<size_t>(c)]})
      for (int64_t i = begin; i < end; ++i) {
        instructionBuffers(program_.instructions(static_cast<int>(i)), reads,
                           writes);
        for (int64_t b : reads)
          if (program_.buffers(static_cast<int>(b)).kind() ==
              plan::Buffer::INPUT)
            readsBatch_[static_cast<size_t>(c)] = true;
      }
}

Tensor Executor::hostBuffer(int64_t index) const {
  const plan::Buffer &buffer = program_.buffers(index);
  return Tensor(toRuntimeDType(buffer.dtype()).value_or(DType::F32),
                toVector(buffer.shape()));
}

Status Executor::read(int64_t index, Tensor &value) const {
  if (!loaded_)
    return Status::failure("the executor has no program (load it first)");
  if (index < 0 || index >= program_.buffers_size())
    return Status::failure("no buffer " + std::to_string(index));
  return backend_->read(index, value);
}

Tensor Executor::buffer(int64_t index) const {
  Tensor value;
  if (!read(index, value).ok())
    return Tensor();
  return value;
}

/// A synthetic PARAMETER block, or the values an OUTPUT block of the same
/// tensor must hold: integer tensors (rare: a lookup table of ids) get
/// values in [0, value_bound) or [0, 2); floats are centered on
/// synthetic_center.
static Status fillSyntheticBlock(const plan::Buffer &buffer, uint64_t seed,
                                 Tensor &block) {
  std::vector<int64_t> logical = toVector(buffer.logical_shape());
  return fillBlock(block, logical, toVector(buffer.offsets()), seed,
                   buffer.name(), parameterScale(logical),
                   buffer.value_bound() > 0 ? buffer.value_bound() : 2,
                   buffer.synthetic_center());
}

Status Executor::initialize() {
  if (!loaded_)
    return Status::failure("the executor has no program (load it first)");
  for (int b = 0; b < program_.buffers_size(); ++b) {
    const plan::Buffer &buffer = program_.buffers(b);
    if (buffer.kind() != plan::Buffer::PARAMETER &&
        buffer.kind() != plan::Buffer::STATE &&
        buffer.kind() != plan::Buffer::CONSTANT)
      continue;
    Tensor tensor = hostBuffer(b);
    switch (buffer.kind()) {
    case plan::Buffer::PARAMETER: {
      bool loaded = false;
      if (weightLoader_)
        if (Status status = weightLoader_(buffer, tensor, loaded); !status.ok())
          return status;
      if (loaded)
        break;
      if (Status status = fillSyntheticBlock(buffer, seed_, tensor);
          !status.ok())
        return status;
      break;
    }
    case plan::Buffer::CONSTANT:
      if (buffer.data().size() != tensor.byteSize())
        return Status::failure("constant buffer " + std::to_string(b) +
                               " has " + std::to_string(buffer.data().size()) +
                               " bytes of data, expected " +
                               std::to_string(tensor.byteSize()));
      if (tensor.byteSize() > 0)
        std::memcpy(tensor.bytes(), buffer.data().data(), tensor.byteSize());
      break;
    default: // STATE: zeros.
      break;
    }
    if (Status status = backend_->write(b, tensor); !status.ok())
      return status;
  }
  initialized_ = true;
  return Status::success();
}

Status Executor::checkOutputs(std::vector<OutputCheck> &checks) const {
  checks.clear();
  for (int b = 0; b < program_.buffers_size(); ++b) {
    const plan::Buffer &buffer = program_.buffers(b);
    if (buffer.kind() != plan::Buffer::OUTPUT)
      continue;
    Tensor value = hostBuffer(b);
    if (Status status = read(b, value); !status.ok())
      return status;
    // The values the tensor's source was given.
    Tensor expected = hostBuffer(b);
    if (Status status = fillSyntheticBlock(buffer, seed_, expected);
        !status.ok())
      return status;
    OutputCheck check;
    check.buffer = b;
    check.name = buffer.name();
    check.offsets = toVector(buffer.offsets());
    check.shape = toVector(buffer.shape());
    check.logicalShape = toVector(buffer.logical_shape());
    check.elements = value.numElements();
    // Moved, not computed: the bytes must be equal.
    size_t width = byteWidth(value.dtype());
    for (int64_t i = 0; i < check.elements; ++i)
      if (std::memcmp(value.bytes() + static_cast<size_t>(i) * width,
                      expected.bytes() + static_cast<size_t>(i) * width,
                      width) != 0)
        ++check.mismatches;
    checks.push_back(std::move(check));
  }
  return Status::success();
}

Status Executor::keepOutputs(int64_t microBatch) {
  for (int b = 0; b < program_.buffers_size(); ++b) {
    const plan::Buffer &buffer = program_.buffers(b);
    if (buffer.kind() != plan::Buffer::OUTPUT)
      continue;
    OutputBlock block;
    block.name = buffer.name();
    block.logicalShape = toVector(buffer.logical_shape());
    block.offsets = toVector(buffer.offsets());
    if (microBatches_ > 1 && !block.logicalShape.empty()) {
      block.offsets[0] += microBatch * block.logicalShape[0];
      block.logicalShape[0] *= microBatches_;
    }
    block.value = hostBuffer(b);
    if (Status status = read(b, block.value); !status.ok())
      return status;
    auto [at, added] = outputAt_.try_emplace({b, microBatch}, outputs_.size());
    if (added)
      outputs_.push_back(std::move(block));
    else
      outputs_[at->second] = std::move(block);
  }
  return Status::success();
}

Status Executor::fillBatch(int64_t stepIndex, int64_t microBatch) {
  for (int b = 0; b < program_.buffers_size(); ++b) {
    if (program_.buffers(b).kind() != plan::Buffer::INPUT)
      continue;
    // Micro-batch k of a block of a b-row tensor is the block of rows
    // k * b .. (k + 1) * b - 1 of the step's batch of M * b rows.
    plan::Buffer buffer = program_.buffers(b);
    if (microBatches_ > 1) {
      int64_t rows = buffer.logical_shape(0);
      buffer.set_logical_shape(0, rows * microBatches_);
      buffer.set_offsets(0, buffer.offsets(0) + microBatch * rows);
    }
    // Synthetic batches where the backend can make them itself.
    if (!batchLoader_) {
      bool filled = false;
      Backend::SyntheticBlock block{
          toVector(buffer.logical_shape()), toVector(buffer.offsets()),
          syntheticKey(seed_, batchName(buffer.name(), stepIndex)), 1.0,
          buffer.value_bound()};
      if (Status status = backend_->fillSynthetic(b, block, filled);
          !status.ok())
        return status;
      if (filled)
        continue;
    }
    Tensor batch = hostBuffer(b);
    bool loaded = false;
    if (batchLoader_)
      if (Status status = batchLoader_(buffer, stepIndex, batch, loaded);
          !status.ok())
        return status;
    if (!loaded)
      if (Status status = fillBlock(batch, toVector(buffer.logical_shape()),
                                    toVector(buffer.offsets()), seed_,
                                    batchName(buffer.name(), stepIndex), 1.0,
                                    buffer.value_bound());
          !status.ok())
        return status;
    if (Status status = backend_->write(b, batch); !status.ok())
      return status;
  }
  return Status::success();
}

Status Executor::setTracing(bool on) {
  if (!loaded_)
    return Status::failure("the executor has no program (load it first)");
  if (on && !backend_->recordsTimeline())
    return Status::failure("the " + backend_->describe() +
                           " backend records no timeline (--trace): run "
                           "with --backend cpu");
  tracing_ = on;
  traced_.clear();
  backend_->setTimeline(on);
  return Status::success();
}

std::vector<Executor::TracedRun> Executor::takeTrace() {
  std::vector<TracedRun> taken;
  taken.swap(traced_);
  return taken;
}

Status Executor::step(int64_t stepIndex, double *loss) {
  if (!initialized_)
    return Status::failure("the executor is not initialized (call "
                           "initialize before the first step)");
  outputs_.clear();
  outputAt_.clear();
  // Sums over micro-batches start from zero every step.
  for (int b = 0; b < program_.buffers_size(); ++b)
    if (program_.buffers(b).kind() == plan::Buffer::ACCUMULATOR)
      if (Status status = backend_->write(b, hostBuffer(b)); !status.ok())
        return status;
  // The micro-batch a task runs, in the buffers that tell it (dropout's
  // masks): before each forward and each backward, which may run after
  // other micro-batches' forwards.
  auto tellMicroBatch = [&](int64_t microBatch) -> Status {
    for (int64_t b : microBatchBuffers_) {
      Tensor index = hostBuffer(b);
      index.set(0, static_cast<double>(microBatch));
      if (Status status = backend_->write(b, index); !status.ok())
        return status;
    }
    return Status::success();
  };
  const std::vector<StepTask> &tasks = order_.tasks;
  auto run = [&](int64_t begin, int64_t end, const StepTask *task) {
    // An empty range (a backward of a step that is all forward) costs a
    // device synchronization on CUDA for nothing.
    if (begin == end)
      return Status::success();
    if (task)
      if (Status status = tellMicroBatch(task->microBatch); !status.ok())
        return status;
    Status status = backend_->run(begin, end);
    // The once-per-step instructions are of no task, run along the last
    // one or not.
    if (tracing_)
      for (const Backend::InstructionRun &ran : backend_->takeTimeline()) {
        bool ofTask = task && ran.instruction >= order_.forwardBegin &&
                      ran.instruction < order_.updateBegin;
        traced_.push_back({ran.instruction, ran.start, ran.end,
                           ofTask ? task->microBatch : -1,
                           ofTask ? task->chunk : 0, ofTask && task->backward});
      }
    return status.ok() ? status
                       : Status::failure("device " + std::to_string(device_) +
                                         " " + status.error);
  };
  // Values of the parameters alone, which every micro-batch reads.
  if (Status status = run(0, order_.forwardBegin, nullptr); !status.ok())
    return status;
  // A micro-batch's kept buffers of a chunk, while other forwards run
  // between its forward and its backward.
  std::map<std::pair<int64_t, int64_t>, std::vector<Tensor>> saved;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const StepTask &task = tasks[t];
    auto [begin, end] = order_.taskRange(t);
    const std::vector<int64_t> &kept = kept_[task.chunk];
    auto key = std::make_pair(task.microBatch, task.chunk);
    if (!task.backward) {
      if (readsBatch_[task.chunk])
        if (Status status = fillBatch(stepIndex, task.microBatch); !status.ok())
          return status;
      if (Status status = run(begin, end, &task); !status.ok())
        return status;
      if (keepOutputs_ && microBatches_ > 1)
        if (Status status = keepOutputs(task.microBatch); !status.ok())
          return status;
      // schedule::pipelineKeptAside counts what this rule keeps aside.
      bool backwardNext = t + 1 < tasks.size() && tasks[t + 1].backward &&
                          tasks[t + 1].microBatch == task.microBatch &&
                          tasks[t + 1].chunk == task.chunk;
      if (backwardNext || kept.empty())
        continue;
      std::vector<Tensor> &values = saved[key];
      values.resize(kept.size());
      for (size_t i = 0; i < kept.size(); ++i)
        if (Status status = backend_->read(kept[i], values[i]); !status.ok())
          return status;
      continue;
    }
    if (auto found = saved.find(key); found != saved.end()) {
      for (size_t i = 0; i < kept.size(); ++i)
        if (Status status = backend_->write(kept[i], found->second[i]);
            !status.ok())
          return status;
      saved.erase(found);
    }
    if (Status status = run(begin, end, &task); !status.ok())
      return status;
  }
  if (!order_.updateWithLastTask)
    if (Status status = run(order_.updateBegin, order_.end, nullptr);
        !status.ok())
      return status;
  if (Status status = communicator_->flushSends(); !status.ok())
    return Status::failure("device " + std::to_string(device_) + ": " +
                           status.error);
  if (keepOutputs_ && microBatches_ == 1)
    if (Status status = keepOutputs(0); !status.ok())
      return status;
  if (loss) {
    *loss = std::numeric_limits<double>::quiet_NaN();
    if (program_.loss() >= 0) {
      Tensor value;
      if (Status status = backend_->read(program_.loss(), value); !status.ok())
        return status;
      *loss = value.get(0);
    }
  }
  return backend_->applyUpdates();
}

} // namespace parplan::runtime
