//===- StreamSchedule.h - compute and communication streams -----*- C++ -*-===//
//
// A GPU backend runs a program's kernels on one stream and its collectives
// and messages on another, so that communication overlaps the kernels that
// do not need its results (a gradient's all-reduce under the next layer's
// backward). The program is a sequence; the schedule keeps every ordering
// the buffers imply: an instruction waits for the last one on the other
// stream that wrote a buffer it touches (read after write, write after
// write) or read a buffer it writes (write after read), where a buffer
// that shares arena bytes with the one written counts as written too (the
// CUDA backend places buffers by their arena offsets). Within a stream
// order is kept by the stream itself, so one wait, on the latest such
// instruction, covers all of them. No MLIR or CUDA dependency: the
// schedule is computed and tested on the host.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_STREAMSCHEDULE_H
#define PARPLAN_RUNTIME_STREAMSCHEDULE_H

#include "parplan/Runtime/PlanFile.h"

#include <cstdint>
#include <vector>

namespace parplan::runtime {

enum class Stream { Compute = 0, Communication = 1 };

struct StreamSchedule {
  /// By instruction: the stream it runs on (kernels on Compute; collectives,
  /// sends and receives on Communication).
  std::vector<Stream> stream;
  /// By instruction: the instruction on the other stream it must wait for,
  /// or -1.
  std::vector<int64_t> waitFor;
  /// By instruction: whether some instruction waits for it (the backend
  /// records an event after it).
  std::vector<bool> awaited;
};

/// The buffers an instruction reads and writes (an in-place collective
/// both reads and writes its buffer).
void instructionBuffers(const plan::Instruction &instruction,
                        std::vector<int64_t> &reads,
                        std::vector<int64_t> &writes);

StreamSchedule scheduleStreams(const plan::Program &program);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_STREAMSCHEDULE_H
