//===- PlanFile.cpp - read, write and check plan files --------------------===//
//
// The envelope is checked outside in: the file, then whether it is a plan
// file at all, then its version (before anything else of a plan from
// another release is interpreted), then the checksum (before the payload
// is trusted), then the payload. checkPlan then validates everything the
// executor indexes or allocates with (PlanCheck.cpp), so that the executor
// itself can index without checking.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/PlanFile.h"

#include "PlanGroups.h"

#include "parplan/Runtime/CrossMeshSteps.h"
#include "parplan/Runtime/StreamSchedule.h"

#include "parplan/Runtime/KernelCall.h"
#include "parplan/Sbp/Sbp.h"
#include "parplan/Schedule/Pipeline.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "parplan/Support/Files.h"
#include "parplan/Support/Hash.h"

namespace parplan::runtime {

using detail::groupDevices;
using detail::meshView;
using detail::toVector;

uint64_t planChecksum(std::string_view bytes) { return fnv1a64(bytes); }

/// Deterministic bytes of any message: map entries sorted, so equal plans
/// give equal files.
static std::string
serializeDeterministic(const google::protobuf::MessageLite &message) {
  // Into a buffer of the message's size: a growing string would be zeroed
  // and copied at each doubling (a 1,024-device plan is 100+ MB).
  size_t size = message.ByteSizeLong();
  std::string bytes;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
    return bytes;
  }
  bytes.resize(size);
  {
    google::protobuf::io::ArrayOutputStream stream(bytes.data(),
                                                   static_cast<int>(size));
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeWithCachedSizes(&coded);
  }
  return bytes;
}

std::string serializePlan(const plan::Plan &planMessage) {
  plan::PlanFile envelope;
  envelope.set_schema_version(kPlanSchemaVersion);
  envelope.set_payload(serializeDeterministic(planMessage));
  envelope.set_checksum(planChecksum(envelope.payload()));
  return serializeDeterministic(envelope);
}

Status writePlanFile(const plan::Plan &planMessage, const std::string &path) {
  if (std::optional<std::string> problem =
          writeFileAtomically(path, serializePlan(planMessage)))
    return Status::failure("plan file: " + *problem);
  return Status::success();
}

static std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%016" PRIx64, value);
  return text;
}

Status parsePlanFile(std::string_view bytes, const std::string &name,
                     plan::Plan &out) {
  // Protobuf logs a line of its own for a string that is not UTF-8 before
  // the parse fails; the reader's one line says it.
  google::protobuf::LogSilencer quiet;
  plan::PlanFile envelope;
  // A PlanFile has exactly the three known fields and a non-zero version;
  // arbitrary bytes often parse as a message of unknown fields, so those
  // and an empty file count as "not a plan file" too.
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !envelope.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      !envelope.GetReflection()->GetUnknownFields(envelope).empty() ||
      envelope.schema_version() == 0)
    return Status::failure(name +
                           " is not a plan file (or is truncated): expected a "
                           "PlanFile message as parplan writes it");
  if (envelope.schema_version() != kPlanSchemaVersion)
    return Status::failure(
        "plan file " + name + " has schema version " +
        std::to_string(envelope.schema_version()) +
        "; this parplan-run reads version " +
        std::to_string(kPlanSchemaVersion) +
        " (compile the plan again with the matching parplan)");
  uint64_t actual = planChecksum(envelope.payload());
  if (actual != envelope.checksum())
    return Status::failure("plan file " + name + " is corrupted: checksum " +
                           hex(envelope.checksum()) +
                           " does not match its contents (" + hex(actual) +
                           ")");
  out.Clear();
  if (!out.ParseFromString(envelope.payload()))
    return Status::failure("plan file " + name +
                           " is corrupted: its plan does not parse");
  return Status::success();
}

Status readPlanFile(const std::string &path, plan::Plan &out) {
  // An ifstream opens a directory and reads nothing from it, which would
  // read as an empty plan.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored))
    return Status::failure("cannot read plan file " + path +
                           ": it is a directory (parplan compile -o DIR "
                           "writes DIR/plan.pb)");
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::failure("cannot read plan file " + path + ": " +
                           std::strerror(errno));
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (file.bad())
    return Status::failure("cannot read plan file " + path + ": " +
                           std::strerror(errno));
  return parsePlanFile(bytes.str(), path, out);
}

std::optional<DType> toRuntimeDType(int planDType) {
  switch (planDType) {
  case plan::F16:
    return DType::F16;
  case plan::BF16:
    return DType::BF16;
  case plan::F32:
    return DType::F32;
  case plan::F64:
    return DType::F64;
  case plan::I1:
    return DType::I1;
  case plan::I8:
    return DType::I8;
  case plan::I32:
    return DType::I32;
  case plan::I64:
    return DType::I64;
  default:
    return std::nullopt;
  }
}

plan::DType toPlanDType(DType type) {
  switch (type) {
  case DType::F16:
    return plan::F16;
  case DType::BF16:
    return plan::BF16;
  case DType::F32:
    return plan::F32;
  case DType::F64:
    return plan::F64;
  case DType::I1:
    return plan::I1;
  case DType::I8:
    return plan::I8;
  case DType::I32:
    return plan::I32;
  case DType::I64:
    return plan::I64;
  }
  return plan::DTYPE_UNSPECIFIED;
}

plan::Kernel *appendKernel(plan::Program &program, const std::string &op,
                           const std::vector<int64_t> &operands,
                           const std::vector<int64_t> &results) {
  plan::Kernel *kernel = program.add_instructions()->mutable_kernel();
  kernel->set_op(op);
  for (int64_t operand : operands)
    kernel->add_operands(operand);
  for (int64_t result : results)
    kernel->add_results(result);
  return kernel;
}

std::vector<std::string> executorSchedules() {
  std::vector<std::string> names = {"sequential"};
  for (schedule::PipelineSchedule schedule : schedule::kPipelineSchedules)
    names.push_back(schedule::toString(schedule));
  return names;
}

std::string executorScheduleList() {
  std::string list;
  for (const std::string &name : executorSchedules())
    list += (list.empty() ? "" : ", ") + name;
  return list;
}

int64_t backwardBeginOf(const plan::Program &program) {
  return program.has_backward_begin() ? program.backward_begin()
                                      : program.update_begin();
}

ChunkRanges chunkRanges(const plan::Program &program, int64_t updateBegin) {
  ChunkRanges ranges;
  int64_t backwardBegin =
      program.has_backward_begin() ? program.backward_begin() : updateBegin;
  int chunks = program.forward_chunks_size();
  if (chunks == 0) {
    ranges.forward.push_back({program.forward_begin(), backwardBegin});
    ranges.backward.push_back({backwardBegin, updateBegin});
    return ranges;
  }
  for (int c = 0; c < chunks; ++c) {
    ranges.forward.push_back(
        {program.forward_chunks(c),
         c + 1 < chunks ? program.forward_chunks(c + 1) : backwardBegin});
    ranges.backward.push_back(
        {program.backward_chunks(c),
         c > 0 ? program.backward_chunks(c - 1) : updateBegin});
  }
  return ranges;
}

/// Whether the last task of `order` is a backward whose instructions end
/// where the once-per-step ones begin, so that the two may run as one range.
static bool runsUpdateAlong(const StepOrder &order) {
  if (order.tasks.empty() || !order.tasks.back().backward)
    return false;
  const auto &[begin, end] =
      order.ranges.backward[static_cast<size_t>(order.tasks.back().chunk)];
  return end == order.updateBegin;
}

std::pair<int64_t, int64_t> StepOrder::taskRange(size_t t) const {
  const StepTask &task = tasks[t];
  std::pair<int64_t, int64_t> range =
      (task.backward ? ranges.backward
                     : ranges.forward)[static_cast<size_t>(task.chunk)];
  if (t + 1 == tasks.size() && updateWithLastTask)
    range.second = end;
  return range;
}

StepOrder stepOrder(const plan::Plan &planMessage, const plan::Program &program,
                    bool followSchedule) {
  StepOrder order;
  int64_t microBatches = std::max<int64_t>(1, planMessage.micro_batches());
  // One micro-batch runs its forward and backward in turn whatever the
  // schedule.
  if (followSchedule && microBatches > 1 && !planMessage.schedule().empty())
    order.schedule = planMessage.schedule();
  order.end = program.instructions_size();
  order.updateBegin = microBatches > 1 ? program.update_begin() : order.end;
  order.forwardBegin = microBatches > 1 ? program.forward_begin() : 0;
  order.ranges = chunkRanges(program, order.updateBegin);
  if (order.schedule == "sequential") {
    // Each micro-batch through the chunks' forwards in order and back
    // through their backwards: the program's own order.
    int64_t forwardEnd = order.ranges.forward.back().second;
    order.ranges.forward = {{order.forwardBegin, forwardEnd}};
    order.ranges.backward = {{forwardEnd, order.updateBegin}};
    for (int64_t k = 0; k < microBatches; ++k)
      order.tasks.insert(order.tasks.end(), {{false, k, 0}, {true, k, 0}});
    order.updateWithLastTask = runsUpdateAlong(order);
    return order;
  }
  // checkPlan admitted the schedule and the stage's chunks.
  auto chunks = static_cast<int64_t>(order.ranges.forward.size());
  auto stages = static_cast<int64_t>(std::max(1, planMessage.meshes_size()));
  std::vector<std::vector<schedule::PipelineTask>> tasks =
      schedule::pipelineOrder(*schedule::parsePipelineSchedule(order.schedule),
                              {stages, microBatches, chunks});
  for (const schedule::PipelineTask &task :
       tasks[static_cast<size_t>(programStage(planMessage, program))])
    order.tasks.push_back({task.backward, task.microBatch, task.chunk});
  order.updateWithLastTask = runsUpdateAlong(order);
  return order;
}

std::vector<std::vector<int64_t>>
backwardReadsOfForward(const plan::Program &program,
                       const ChunkRanges &ranges) {
  std::vector<bool> ofForward(static_cast<size_t>(program.buffers_size()),
                              false);
  for (int b = 0; b < program.buffers_size(); ++b)
    ofForward[static_cast<size_t>(b)] =
        program.buffers(b).kind() == plan::Buffer::INPUT;
  std::vector<int64_t> reads, writes;
  for (const auto &[begin, end] : ranges.forward)
    for (int64_t i = begin; i < end; ++i) {
      instructionBuffers(program.instructions(static_cast<int>(i)), reads,
                         writes);
      for (int64_t b : writes)
        ofForward[static_cast<size_t>(b)] = true;
    }
  std::vector<std::vector<int64_t>> kept;
  for (const auto &[begin, end] : ranges.backward) {
    std::vector<bool> read(static_cast<size_t>(program.buffers_size()), false);
    for (int64_t i = begin; i < end; ++i) {
      instructionBuffers(program.instructions(static_cast<int>(i)), reads,
                         writes);
      for (int64_t b : reads)
        if (ofForward[static_cast<size_t>(b)] &&
            program.buffers(static_cast<int>(b)).kind() !=
                plan::Buffer::ACCUMULATOR)
          read[static_cast<size_t>(b)] = true;
    }
    kept.emplace_back();
    for (int b = 0; b < program.buffers_size(); ++b)
      if (read[static_cast<size_t>(b)])
        kept.back().push_back(b);
  }
  return kept;
}

namespace {

/// keptActivationBytes, with `fewer` micro-batches' fewer per chunk.
int64_t activationCopyBytes(const plan::Plan &planMessage,
                            const plan::Program &program, int64_t fewer) {
  std::optional<schedule::PipelineSchedule> schedule =
      schedule::parsePipelineSchedule(planMessage.schedule());
  if (!schedule || planMessage.micro_batches() <= 1)
    return 0;
  ChunkRanges ranges = chunkRanges(program, program.update_begin());
  auto chunks = static_cast<int64_t>(ranges.forward.size());
  auto stages = static_cast<int64_t>(std::max(1, planMessage.meshes_size()));
  std::vector<int64_t> aside = schedule::pipelineKeptAside(
      schedule::pipelineOrder(*schedule,
                              {stages, planMessage.micro_batches(), chunks}),
      chunks);
  int64_t stage = programStage(planMessage, program);
  std::vector<std::vector<int64_t>> kept =
      backwardReadsOfForward(program, ranges);
  int64_t bytes = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t copies = std::max<int64_t>(
        aside[static_cast<size_t>(schedule::virtualStage(stage, c, stages))] -
            fewer,
        0);
    for (int64_t b : kept[static_cast<size_t>(c)])
      bytes += copies * bufferBytes(program.buffers(static_cast<int>(b)));
  }
  return bytes;
}

} // namespace

int64_t keptActivationBytes(const plan::Plan &planMessage,
                            const plan::Program &program) {
  return activationCopyBytes(planMessage, program, 0);
}

int64_t inFlightActivationBytes(const plan::Plan &planMessage,
                                const plan::Program &program) {
  return activationCopyBytes(planMessage, program, 1);
}

int64_t programStage(const plan::Plan &planMessage,
                     const plan::Program &program) {
  for (int m = 0; m < planMessage.meshes_size(); ++m)
    if (planMessage.meshes(m).name() == program.mesh())
      return m;
  return 0;
}

int64_t planDevices(const plan::Plan &planMessage) {
  return meshSize(toVector(planMessage.mesh_shape()));
}

int programIndexOf(const plan::Plan &planMessage, int64_t device) {
  for (int p = 0; p < planMessage.programs_size(); ++p)
    for (int64_t member : planMessage.programs(p).devices())
      if (member == device)
        return p;
  return -1;
}

namespace {

/// Replaces each cross_mesh_send and cross_mesh_recv of `out`'s program by
/// the device's own instructions (appendCrossMeshPart), moving
/// forward_begin, update_begin and backward_begin along.
void expandCrossMeshParts(const plan::Plan &planMessage, const PlacedMesh &mesh,
                          DeviceProgram &out) {
  plan::Program &program = out.program;
  if (std::none_of(program.instructions().begin(), program.instructions().end(),
                   [](const plan::Instruction &instruction) {
                     return CrossMeshParts::partOf(instruction) != nullptr;
                   }))
    return;
  CrossMeshParts parts(planMessage);
  google::protobuf::RepeatedPtrField<plan::Instruction> shared;
  shared.Swap(program.mutable_instructions());
  std::vector<int64_t> newIndex;
  for (plan::Instruction &instruction : shared) {
    newIndex.push_back(program.instructions_size());
    const plan::CrossMeshPart *part = CrossMeshParts::partOf(instruction);
    if (!part) {
      *program.add_instructions() = std::move(instruction);
      continue;
    }
    CrossMeshPart own =
        parts.of(instruction, out.device, mesh.shape, out.coordinate);
    std::optional<plan::Buffer> scratch;
    if (part->scratch() >= 0)
      scratch = program.buffers(static_cast<int>(part->scratch()));
    int first = program.instructions_size();
    appendCrossMeshPart(own, parts.moveOf(*part), part->block(),
                        scratch ? &*scratch : nullptr, program);
    // Its steps come from the move's node (in traces and messages).
    const std::string &node = instruction.node().empty()
                                  ? parts.moveOf(*part).name()
                                  : instruction.node();
    for (int i = first; i < program.instructions_size(); ++i)
      program.mutable_instructions(i)->set_node(node);
  }
  newIndex.push_back(program.instructions_size());
  auto moved = [&](int64_t index) {
    return index >= 0 && index < static_cast<int64_t>(newIndex.size())
               ? newIndex[static_cast<size_t>(index)]
               : index;
  };
  program.set_update_begin(moved(program.update_begin()));
  program.set_forward_begin(moved(program.forward_begin()));
  if (program.has_backward_begin())
    program.set_backward_begin(moved(program.backward_begin()));
  for (auto *begins :
       {program.mutable_forward_chunks(), program.mutable_backward_chunks()})
    for (int64_t &begin : *begins)
      begin = moved(begin);
}

} // namespace

const std::string &constantData(const plan::Plan &plan,
                                const plan::Buffer &buffer) {
  return buffer.shared_data() != 0
             ? plan.constant_data(static_cast<int>(buffer.shared_data() - 1))
             : buffer.data();
}

Status instantiateProgram(const plan::Plan &planMessage, int64_t device,
                          DeviceProgram &out) {
  int index = programIndexOf(planMessage, device);
  if (index < 0)
    return Status::failure("device " + std::to_string(device) +
                           " runs none of the plan's programs");
  const plan::Program &shared = planMessage.programs(index);
  PlacedMesh mesh = meshView(planMessage, shared.mesh());
  const Shape &meshShape = mesh.shape;
  out.device = device;
  out.coordinate = mesh.coordinate(device);
  out.program = planMessage.programs(index);
  out.program.clear_devices();
  out.program.add_devices(device);
  for (plan::Buffer &buffer : *out.program.mutable_buffers()) {
    if (buffer.splits_size() == 0 || buffer.kind() == plan::Buffer::TEMPORARY)
      continue;
    Shape logical = toVector(buffer.logical_shape());
    Slice block =
        deviceSlice(logical, meshShape, fromSplits(toVector(buffer.splits())),
                    out.coordinate, mesh.shares);
    if (buffer.kind() != plan::Buffer::CONSTANT) {
      buffer.mutable_offsets()->Assign(block.offsets.begin(),
                                       block.offsets.end());
      continue;
    }
    // A split constant keeps its block of the logical elements.
    size_t width = byteWidth(*toRuntimeDType(buffer.dtype()));
    const char *whole = constantData(planMessage, buffer).data();
    std::string bytes(static_cast<size_t>(numElements(block.sizes)) * width,
                      '\0');
    Shape strides(logical.size(), 1);
    for (size_t d = logical.size(); d-- > 1;)
      strides[d - 1] = strides[d] * logical[d];
    Shape at(block.sizes.size(), 0);
    for (int64_t i = 0, n = numElements(block.sizes); i < n; ++i) {
      int64_t flat = 0;
      for (size_t d = 0; d < at.size(); ++d)
        flat += (block.offsets[d] + at[d]) * strides[d];
      std::memcpy(&bytes[static_cast<size_t>(i) * width],
                  whole + static_cast<size_t>(flat) * width, width);
      for (size_t d = at.size(); d-- > 0;) {
        if (++at[d] < block.sizes[d])
          break;
        at[d] = 0;
      }
    }
    buffer.set_data(std::move(bytes));
    buffer.clear_shared_data();
    buffer.clear_splits();
    buffer.clear_logical_shape();
  }
  // The device's program holds its constants' bytes, shared or not.
  for (plan::Buffer &buffer : *out.program.mutable_buffers())
    if (buffer.kind() == plan::Buffer::CONSTANT && buffer.shared_data() != 0) {
      buffer.set_data(constantData(planMessage, buffer));
      buffer.clear_shared_data();
    }
  for (plan::Instruction &instruction : *out.program.mutable_instructions()) {
    if (!instruction.has_kernel())
      continue;
    for (plan::Attr &attr : *instruction.mutable_kernel()->mutable_attrs()) {
      if (!attr.has_block_offset())
        continue;
      const plan::BlockOffset &offset = attr.block_offset();
      Slice block = deviceSlice(toVector(offset.shape()), meshShape,
                                fromSplits(toVector(offset.splits())),
                                out.coordinate, mesh.shares);
      int64_t dim = offset.dim();
      if (dim >= 0) {
        attr.set_int_value(block.offsets[static_cast<size_t>(dim)]);
        continue;
      }
      plan::IntList list;
      list.mutable_values()->Assign(block.offsets.begin(), block.offsets.end());
      *attr.mutable_ints_value() = std::move(list);
    }
  }
  expandCrossMeshParts(planMessage, mesh, out);
  // Fixed groups, the mesh-axes groups of the program's mesh (those of
  // other meshes hold none of its devices), and the moves' broadcasts.
  out.groups = crossMeshGroups(planMessage);
  for (const plan::Group &group : planMessage.groups())
    if (group.devices_size() != 0 || group.mesh() == shared.mesh())
      out.groups[group.name()] = groupDevices(group, mesh, device);
  return Status::success();
}

const char *collectiveName(int kind) {
  std::optional<CollectiveKind> known = toCollectiveKind(kind);
  return known ? toString(*known) : "collective";
}

std::optional<ReduceKind> toReduceKind(int planReduction) {
  switch (planReduction) {
  case plan::SUM:
    return ReduceKind::Sum;
  case plan::MAX:
    return ReduceKind::Max;
  case plan::MIN:
    return ReduceKind::Min;
  case plan::PROD:
    return ReduceKind::Prod;
  default:
    return std::nullopt;
  }
}

plan::Reduction toProto(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return plan::SUM;
  case ReduceKind::Max:
    return plan::MAX;
  case ReduceKind::Min:
    return plan::MIN;
  case ReduceKind::Prod:
    return plan::PROD;
  }
  return plan::SUM;
}

std::optional<BufferKind> toBufferKind(int planBufferKind) {
  switch (planBufferKind) {
  case plan::Buffer::TEMPORARY:
    return BufferKind::Temporary;
  case plan::Buffer::PARAMETER:
    return BufferKind::Parameter;
  case plan::Buffer::INPUT:
    return BufferKind::Input;
  case plan::Buffer::STATE:
    return BufferKind::State;
  case plan::Buffer::CONSTANT:
    return BufferKind::Constant;
  case plan::Buffer::OUTPUT:
    return BufferKind::Output;
  case plan::Buffer::ACCUMULATOR:
    return BufferKind::Accumulator;
  case plan::Buffer::MICRO_BATCH:
    return BufferKind::MicroBatch;
  default:
    return std::nullopt;
  }
}

plan::Buffer::Kind toProto(BufferKind kind) {
  switch (kind) {
  case BufferKind::Temporary:
    return plan::Buffer::TEMPORARY;
  case BufferKind::Parameter:
    return plan::Buffer::PARAMETER;
  case BufferKind::Input:
    return plan::Buffer::INPUT;
  case BufferKind::State:
    return plan::Buffer::STATE;
  case BufferKind::Constant:
    return plan::Buffer::CONSTANT;
  case BufferKind::Output:
    return plan::Buffer::OUTPUT;
  case BufferKind::Accumulator:
    return plan::Buffer::ACCUMULATOR;
  case BufferKind::MicroBatch:
    return plan::Buffer::MICRO_BATCH;
  }
  return plan::Buffer::TEMPORARY;
}

std::optional<CollectiveKind> toCollectiveKind(int planCollectiveKind) {
  switch (planCollectiveKind) {
  case plan::Collective::ALL_REDUCE:
    return CollectiveKind::AllReduce;
  case plan::Collective::ALL_GATHER:
    return CollectiveKind::AllGather;
  case plan::Collective::REDUCE_SCATTER:
    return CollectiveKind::ReduceScatter;
  case plan::Collective::ALL_TO_ALL:
    return CollectiveKind::AllToAll;
  case plan::Collective::BROADCAST:
    return CollectiveKind::Broadcast;
  default:
    return std::nullopt;
  }
}

plan::Collective::Kind toProto(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return plan::Collective::ALL_REDUCE;
  case CollectiveKind::AllGather:
    return plan::Collective::ALL_GATHER;
  case CollectiveKind::ReduceScatter:
    return plan::Collective::REDUCE_SCATTER;
  case CollectiveKind::AllToAll:
    return plan::Collective::ALL_TO_ALL;
  case CollectiveKind::Broadcast:
    return plan::Collective::BROADCAST;
  }
  return plan::Collective::ALL_REDUCE;
}

int64_t bufferBytes(const plan::Buffer &buffer) {
  std::optional<DType> type = toRuntimeDType(buffer.dtype());
  return numElements(toVector(buffer.shape())) *
         static_cast<int64_t>(type ? byteWidth(*type) : 0);
}

std::vector<std::pair<int64_t, int64_t>>
arenaOverlaps(const plan::Program &program) {
  struct Span {
    int64_t begin, end, buffer;
  };
  std::vector<Span> spans;
  for (int64_t b = 0; b < program.buffers_size(); ++b) {
    const plan::Buffer &buffer = program.buffers(b);
    int64_t bytes = bufferBytes(buffer);
    if (buffer.arena_offset() >= 0 && bytes > 0)
      spans.push_back(
          {buffer.arena_offset(), buffer.arena_offset() + bytes, b});
  }
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.buffer < b.buffer;
  });
  // A sweep by start: `open` holds the spans that may still overlap.
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<Span> open;
  for (const Span &span : spans) {
    open.erase(
        std::remove_if(open.begin(), open.end(),
                       [&](const Span &o) { return o.end <= span.begin; }),
        open.end());
    for (const Span &other : open)
      pairs.emplace_back(std::min(other.buffer, span.buffer),
                         std::max(other.buffer, span.buffer));
    open.push_back(span);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

Status checkMessageOrder(const plan::Plan &plan) {
  // By (sender, receiver): the tags in program order.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> sent, received;
  CrossMeshParts parts(plan);
  for (const plan::Program &program : plan.programs()) {
    PlacedMesh mesh = meshView(plan, program.mesh());
    for (const plan::Instruction &instruction : program.instructions())
      for (int64_t device : program.devices()) {
        if (instruction.has_send()) {
          sent[{device, instruction.send().peer()}].push_back(
              instruction.send().tag());
        } else if (instruction.has_recv()) {
          received[{instruction.recv().peer(), device}].push_back(
              instruction.recv().tag());
        } else if (CrossMeshParts::partOf(instruction)) {
          // The device's own messages of the move, in its order.
          CrossMeshPart own = parts.of(instruction, device, mesh.shape,
                                       mesh.coordinate(device));
          for (const CrossMeshPart::Step &step : own.steps) {
            if (step.kind == CrossMeshPart::StepKind::Send)
              sent[{device, step.peer}].push_back(step.tag);
            else if (step.kind == CrossMeshPart::StepKind::Recv)
              received[{step.peer, device}].push_back(step.tag);
          }
        }
      }
  }
  auto tags = [](const std::vector<int64_t> &list) {
    std::string text;
    for (int64_t tag : list)
      text += (text.empty() ? "" : ", ") + std::to_string(tag);
    return text;
  };
  for (const auto &[pair, order] : sent) {
    const std::vector<int64_t> &expected = received[pair];
    if (order != expected)
      return Status::failure(
          "device " + std::to_string(pair.first) + " sends to device " +
          std::to_string(pair.second) + " with tags " + tags(order) +
          " in that order, but device " + std::to_string(pair.second) +
          " receives them as " + tags(expected) +
          "; NCCL matches messages by order, not by tag");
  }
  return Status::success();
}

} // namespace parplan::runtime
