//===- StreamSchedule.cpp - compute and communication streams -------------===//

#include "parplan/Runtime/StreamSchedule.h"

#include <algorithm>

namespace parplan::runtime {

Stream streamOf(const plan::Instruction &instruction, bool gradientsStream) {
  if (instruction.has_kernel())
    return Stream::Compute;
  if (gradientsStream && instruction.has_collective() &&
      instruction.collective().feeds_update())
    return Stream::Gradients;
  return Stream::Communication;
}

void instructionBuffers(const plan::Instruction &instruction,
                        std::vector<int64_t> &reads,
                        std::vector<int64_t> &writes) {
  reads.clear();
  writes.clear();
  switch (instruction.op_case()) {
  case plan::Instruction::kKernel:
    for (int64_t operand : instruction.kernel().operands())
      if (operand >= 0)
        reads.push_back(operand);
    for (int64_t result : instruction.kernel().results())
      writes.push_back(result);
    break;
  case plan::Instruction::kCollective:
    reads.push_back(instruction.collective().input());
    writes.push_back(instruction.collective().output());
    break;
  case plan::Instruction::kSend:
    reads.push_back(instruction.send().buffer());
    break;
  case plan::Instruction::kRecv:
    writes.push_back(instruction.recv().buffer());
    break;
  case plan::Instruction::kCrossMeshSend:
  case plan::Instruction::kCrossMeshRecv: {
    bool receiving = instruction.has_cross_mesh_recv();
    const plan::CrossMeshPart &part = receiving ? instruction.cross_mesh_recv()
                                                : instruction.cross_mesh_send();
    (receiving ? writes : reads).push_back(part.block());
    if (part.scratch() >= 0)
      writes.push_back(part.scratch());
    break;
  }
  case plan::Instruction::OP_NOT_SET:
    break;
  }
}

StreamSchedule scheduleStreams(const plan::Program &program,
                               bool gradientsStream) {
  int64_t count = program.instructions_size();
  StreamSchedule schedule;
  schedule.stream.resize(count, Stream::Compute);
  schedule.waitFor.assign(count, {-1, -1, -1});
  schedule.awaited.assign(count, false);
  // By buffer: the last instruction that wrote it, and by stream the last
  // one that read it since.
  int64_t numBuffers = program.buffers_size();
  std::vector<int64_t> lastWriter(numBuffers, -1);
  std::vector<int64_t> lastReader[kStreams];
  for (auto &readers : lastReader)
    readers.assign(numBuffers, -1);
  // Buffers that share arena bytes: writing one ends the others' values,
  // so a write waits for their readers and writers on the other streams too.
  std::vector<std::vector<int64_t>> sharing(numBuffers);
  for (int64_t b = 0; b < numBuffers; ++b)
    sharing[b].push_back(b);
  for (auto [a, b] : arenaOverlaps(program)) {
    sharing[a].push_back(b);
    sharing[b].push_back(a);
  }
  std::vector<int64_t> reads, writes;
  for (int64_t i = 0; i < count; ++i) {
    const plan::Instruction &instruction = program.instructions(i);
    Stream stream = streamOf(instruction, gradientsStream);
    schedule.stream[i] = stream;
    int own = static_cast<int>(stream);
    instructionBuffers(instruction, reads, writes);
    std::array<int64_t, kStreams> &wait = schedule.waitFor[i];
    auto consider = [&](int64_t j) {
      if (j < 0)
        return;
      int on = static_cast<int>(schedule.stream[j]);
      if (on != own)
        wait[on] = std::max(wait[on], j);
    };
    for (int64_t b : reads)
      consider(lastWriter[b]);
    for (int64_t written : writes)
      for (int64_t b : sharing[written]) {
        consider(lastWriter[b]);
        for (int other = 0; other < kStreams; ++other)
          if (other != own)
            consider(lastReader[other][b]);
      }
    for (int64_t j : wait)
      if (j >= 0)
        schedule.awaited[j] = true;
    for (int64_t b : reads)
      lastReader[own][b] = i;
    for (int64_t b : writes) {
      lastWriter[b] = i;
      for (auto &readers : lastReader)
        readers[b] = -1;
    }
  }
  return schedule;
}

} // namespace parplan::runtime
