//===- StreamSchedule.h - compute and communication streams -----*- C++ -*-===//
//
// A GPU backend runs a program's kernels on one stream, its collectives
// and messages on another, so that communication overlaps the kernels that
// do not need its results, and the reductions of gradients that only
// parameter updates read (Collective.feeds_update) on a third, so that the
// collectives the forward and backward wait for never queue behind them
// (a gradient's all-reduce, which waits for the slowest member of its
// group, under the next layer's backward and its tensor-parallel
// collectives). The program is a sequence; the schedule keeps every
// ordering the buffers imply: an instruction waits, on each other stream,
// for the last instruction that wrote a buffer it touches (read after
// write, write after write) or read a buffer it writes (write after read),
// where a buffer that shares arena bytes with the one written counts as
// written too (the CUDA backend places buffers by their arena offsets).
// Within a stream order is kept by the stream itself, so one wait per
// other stream, on the latest such instruction, covers all of them. No
// MLIR or CUDA dependency: the schedule is computed and tested on the
// host.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_STREAMSCHEDULE_H
#define PARPLAN_RUNTIME_STREAMSCHEDULE_H

#include "parplan/Runtime/PlanFile.h"

#include <array>
#include <cstdint>
#include <vector>

namespace parplan::runtime {

enum class Stream { Compute = 0, Communication = 1, Gradients = 2 };
constexpr int kStreams = 3;

struct StreamSchedule {
  /// By instruction: the stream it runs on (kernels on Compute; collectives
  /// that feed only updates on Gradients; other collectives, sends and
  /// receives on Communication).
  std::vector<Stream> stream;
  /// By instruction and stream: the instruction on that stream it must
  /// wait for, or -1 (always -1 on its own stream).
  std::vector<std::array<int64_t, kStreams>> waitFor;
  /// By instruction: whether some instruction waits for it (the backend
  /// records an event after it).
  std::vector<bool> awaited;
};

/// The stream an instruction runs on: kernels on Compute; with
/// `gradientsStream`, collectives that feed only updates
/// (Collective.feeds_update) on Gradients; the rest on Communication.
Stream streamOf(const plan::Instruction &instruction,
                bool gradientsStream = true);

/// The buffers an instruction reads and writes (an in-place collective
/// both reads and writes its buffer).
void instructionBuffers(const plan::Instruction &instruction,
                        std::vector<int64_t> &reads,
                        std::vector<int64_t> &writes);

/// With `gradientsStream` false, the reductions that feed only updates
/// stay on the communication stream (an executor of two streams; `parplan
/// simulate --streams 2`).
StreamSchedule scheduleStreams(const plan::Program &program,
                               bool gradientsStream = true);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_STREAMSCHEDULE_H
