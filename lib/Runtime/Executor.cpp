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

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

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
  case plan::Attr::VALUE_NOT_SET:
    break;
  }
  return AttrValue();
}

ReduceKind toReduceKind(plan::Reduction kind) {
  switch (kind) {
  case plan::MAX:
    return ReduceKind::Max;
  case plan::MIN:
    return ReduceKind::Min;
  case plan::PROD:
    return ReduceKind::Prod;
  default:
    return ReduceKind::Sum;
  }
}

} // namespace

Status Executor::load(const plan::Plan &planMessage, int rank,
                      Communicator &communicator) {
  if (rank < 0 || rank >= planMessage.programs_size())
    return Status::failure("device " + std::to_string(rank) +
                           " has no program: the plan has " +
                           std::to_string(planMessage.programs_size()));
  if (communicator.rank() != rank ||
      communicator.size() != planMessage.programs_size())
    return Status::failure(
        "the plan has " + std::to_string(planMessage.programs_size()) +
        " programs but runs on " + std::to_string(communicator.size()) +
        " process(es); run it with mpirun -np " +
        std::to_string(planMessage.programs_size()));
  program_ = planMessage.programs(rank);
  communicator_ = &communicator;
  seed_ = planMessage.seed();
  groups_.clear();
  for (const plan::Group &group : planMessage.groups())
    groups_[group.name()] = toVector(group.devices());

  buffers_.clear();
  buffers_.reserve(program_.buffers_size());
  for (const plan::Buffer &buffer : program_.buffers()) {
    std::optional<DType> type = toRuntimeDType(buffer.dtype());
    if (!type)
      return Status::failure("device " + std::to_string(rank) +
                             ": the plan was not checked (a buffer has no "
                             "dtype)");
    buffers_.emplace_back(*type, toVector(buffer.shape()));
  }
  attrs_.assign(program_.instructions_size(), AttrMap());
  for (int i = 0; i < program_.instructions_size(); ++i)
    if (program_.instructions(i).has_kernel())
      for (const plan::Attr &attr : program_.instructions(i).kernel().attrs())
        attrs_[i][attr.name()] = toAttrValue(attr);

  std::set<int64_t> targets, sources;
  for (const plan::Update &update : program_.updates()) {
    targets.insert(update.target());
    sources.insert(update.source());
  }
  updatesDisjoint_ = true;
  for (int64_t source : sources)
    if (targets.count(source))
      updatesDisjoint_ = false;
  loaded_ = true;
  initialized_ = false;
  return Status::success();
}

Status Executor::initialize() {
  if (!loaded_)
    return Status::failure("the executor has no program (load it first)");
  for (int b = 0; b < program_.buffers_size(); ++b) {
    const plan::Buffer &buffer = program_.buffers(b);
    Tensor &tensor = buffers_[b];
    switch (buffer.kind()) {
    case plan::Buffer::PARAMETER: {
      bool loaded = false;
      if (weightLoader_)
        if (Status status = weightLoader_(buffer, tensor, loaded); !status.ok())
          return status;
      if (loaded)
        break;
      // Synthetic weights: integer parameters (rare: a lookup table of
      // ids) get values in [0, value_bound) or [0, 2).
      std::vector<int64_t> logical = toVector(buffer.logical_shape());
      if (Status status =
              fillBlock(tensor, logical, toVector(buffer.offsets()), seed_,
                        buffer.name(), parameterScale(logical),
                        buffer.value_bound() > 0 ? buffer.value_bound() : 2);
          !status.ok())
        return status;
      break;
    }
    case plan::Buffer::STATE:
      tensor = Tensor(tensor.dtype(), tensor.shape());
      break;
    case plan::Buffer::CONSTANT:
      if (buffer.data().size() != tensor.byteSize())
        return Status::failure("constant buffer " + std::to_string(b) +
                               " has " + std::to_string(buffer.data().size()) +
                               " bytes of data, expected " +
                               std::to_string(tensor.byteSize()));
      if (tensor.byteSize() > 0)
        std::memcpy(tensor.bytes(), buffer.data().data(), tensor.byteSize());
      break;
    default:
      break;
    }
  }
  initialized_ = true;
  return Status::success();
}

Status Executor::runCollective(const plan::Collective &collective) {
  const Group &group = groups_[collective.group()];
  Tensor &in = buffers_[collective.input()];
  Tensor &out = buffers_[collective.output()];
  ReduceKind reduce = toReduceKind(collective.reduce());
  switch (collective.kind()) {
  case plan::Collective::ALL_REDUCE:
    return communicator_->allReduce(in, reduce, group);
  case plan::Collective::ALL_GATHER:
    return communicator_->allGather(in, out, collective.axis(), group);
  case plan::Collective::REDUCE_SCATTER:
    return communicator_->reduceScatter(in, out, collective.axis(), reduce,
                                        group);
  case plan::Collective::ALL_TO_ALL:
    return communicator_->allToAll(in, out, collective.axis(),
                                   collective.concat_axis(), group);
  case plan::Collective::BROADCAST:
    return communicator_->broadcast(in, collective.root(), group);
  default:
    return Status::failure("unknown collective kind " +
                           std::to_string(collective.kind()));
  }
}

Status Executor::run(int64_t index, const plan::Instruction &instruction) {
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
    return runKernel(kernel.op(), attrs_[index], operands, results);
  }
  case plan::Instruction::kCollective:
    return runCollective(instruction.collective());
  case plan::Instruction::kSend:
    return communicator_->send(buffers_[instruction.send().buffer()],
                               instruction.send().peer(),
                               instruction.send().tag());
  case plan::Instruction::kRecv:
    return communicator_->recv(buffers_[instruction.recv().buffer()],
                               instruction.recv().peer(),
                               instruction.recv().tag());
  case plan::Instruction::OP_NOT_SET:
    break;
  }
  return Status::failure("empty instruction");
}

static std::string describe(const plan::Instruction &instruction) {
  switch (instruction.op_case()) {
  case plan::Instruction::kKernel:
    return "nn." + instruction.kernel().op();
  case plan::Instruction::kCollective:
    return "collective over '" + instruction.collective().group() + "'";
  case plan::Instruction::kSend:
    return "send";
  case plan::Instruction::kRecv:
    return "recv";
  case plan::Instruction::OP_NOT_SET:
    break;
  }
  return "empty";
}

Status Executor::step(int64_t stepIndex, double *loss) {
  if (!initialized_)
    return Status::failure("the executor is not initialized (call "
                           "initialize before the first step)");
  for (int b = 0; b < program_.buffers_size(); ++b) {
    const plan::Buffer &buffer = program_.buffers(b);
    if (buffer.kind() != plan::Buffer::INPUT)
      continue;
    if (batchLoader_) {
      bool loaded = false;
      if (Status status = batchLoader_(buffer, stepIndex, buffers_[b], loaded);
          !status.ok())
        return status;
      if (loaded)
        continue;
    }
    if (Status status = fillBlock(buffers_[b], toVector(buffer.logical_shape()),
                                  toVector(buffer.offsets()), seed_,
                                  batchName(buffer.name(), stepIndex), 1.0,
                                  buffer.value_bound());
        !status.ok())
      return status;
  }
  for (int i = 0; i < program_.instructions_size(); ++i) {
    const plan::Instruction &instruction = program_.instructions(i);
    if (Status status = run(i, instruction); !status.ok())
      return Status::failure("device " + std::to_string(program_.device()) +
                             " instruction " + std::to_string(i) + " (" +
                             describe(instruction) + "): " + status.error);
  }
  if (loss)
    *loss = program_.loss() >= 0 ? buffers_[program_.loss()].get(0)
                                 : std::numeric_limits<double>::quiet_NaN();
  // Updates read the step's values: when one update's source is another's
  // target, take all sources before writing any target.
  if (updatesDisjoint_) {
    for (const plan::Update &update : program_.updates())
      buffers_[update.target()] = buffers_[update.source()];
  } else {
    std::vector<Tensor> values;
    values.reserve(program_.updates_size());
    for (const plan::Update &update : program_.updates())
      values.push_back(buffers_[update.source()]);
    for (int u = 0; u < program_.updates_size(); ++u)
      buffers_[program_.updates(u).target()] = std::move(values[u]);
  }
  return Status::success();
}

} // namespace parplan::runtime
