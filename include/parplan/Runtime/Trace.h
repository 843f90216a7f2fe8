//===- Trace.h - timelines of a plan's step, simulated or measured -*- C++
//-*-===//
//
// A timeline of one training step: per device (or per class of devices that
// run alike), what ran on its compute stream, on its communication stream
// and over its outgoing links, when, with what bytes and FLOPs, the messages
// between devices as flows, and the memory the device holds over time.
// `parplan simulate` fills one from the cost model, `parplan-run --trace`
// from the clock; both name every event by the same rule (traceLabel), so
// the two open side by side. Written in the Chrome trace-event JSON format
// that Perfetto (ui.perfetto.dev) and chrome://tracing open
// (docs/simulate.md). No MLIR or LLVM dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_TRACE_H
#define PARPLAN_RUNTIME_TRACE_H

#include "parplan/Runtime/PlanFile.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace parplan::runtime {

/// The rows of a device in a trace: its kernels, its collectives and
/// messages, the cross-mesh moves it sends (which run on its links
/// without holding a stream), and the all-reduces of its gradients stream
/// (StreamSchedule.h).
enum class TraceThread {
  Compute = 0,
  Communication = 1,
  Transfers = 2,
  Gradients = 3
};
/// "compute", "communication", "transfers", "gradients".
const char *toString(TraceThread thread);

/// What an instruction is called in a trace, and what it does.
struct TraceLabel {
  /// The op: a kernel's name ("matmul"), a collective's ("all_reduce"),
  /// "send", "recv", "cross_mesh_send", "cross_mesh_recv".
  std::string op;
  /// The model node it comes from (Instruction.node); may be empty.
  std::string node;
  /// "kernel", "collective", "message" or "cross_mesh".
  std::string category;
  /// Bytes it moves: a kernel's memory traffic (its cost figure, else its
  /// buffers'), a collective's buffer as the cost model prices it (the
  /// gathered tensor for an all-gather, the reduced one for an all-reduce
  /// or a reduce-scatter), a message's buffer, a move's tensor.
  double bytes = 0;
  /// A kernel's FLOPs (its cost figure; 0 without one).
  double flops = 0;
  /// "op node", or the op alone: the event's name.
  std::string name() const;
};

/// The label of instruction `index` of `program` (a program of `plan`).
TraceLabel traceLabel(const plan::Plan &plan, const plan::Program &program,
                      int64_t index);

/// One slice of a timeline.
struct TraceEvent {
  /// Index into Trace::processes.
  int64_t process = 0;
  TraceThread thread = TraceThread::Compute;
  TraceLabel label;
  /// Seconds from the step's start.
  double start = 0, duration = 0;
  /// The instruction it runs (-1: none), and the micro-batch and model
  /// chunk of the pass it runs in (-1 for what runs once per step) and
  /// whether that pass is a backward.
  int64_t instruction = -1;
  int64_t microBatch = -1;
  int64_t chunk = -1;
  bool backward = false;
  /// A collective's group, for its args.
  std::string group;
};

/// A message: an arrow from the end of one event to the start of another
/// (indices into Trace::events).
struct TraceFlow {
  size_t from = 0, to = 0;
};

/// A process's bytes of memory from `time` on.
struct TraceMemorySample {
  int64_t process = 0;
  double time = 0;
  double bytes = 0;
};

/// A row group: one device, or a class of devices that run alike.
struct TraceProcess {
  std::string name;
};

struct Trace {
  std::vector<TraceProcess> processes;
  std::vector<TraceEvent> events;
  std::vector<TraceFlow> flows;
  std::vector<TraceMemorySample> memory;
  /// Shown with the trace (otherData): what made it, the plan, the step.
  std::vector<std::pair<std::string, std::string>> metadata;
};

/// Writes `trace` as Chrome trace-event JSON: a process per process, a
/// thread per TraceThread, complete ("X") events in microseconds with
/// their label as args, flow ("s"/"f") events for the flows, a "memory"
/// counter ("C") per process. Deterministic: the same trace gives the
/// same bytes.
void writeChromeTrace(const Trace &trace, std::ostream &out);
/// The same into the file at `path`, whole or not at all (the previous
/// file kept on failure).
Status writeChromeTraceFile(const Trace &trace, const std::string &path);
/// Whether writeChromeTraceFile could write `path`, with its error when
/// not: checked before a run, so that a long run does not end in a lost
/// trace. Leaves no file behind that was not there.
Status checkTraceWritable(const std::string &path);

/// `text` as a JSON string literal, quotes included.
std::string jsonString(const std::string &text);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_TRACE_H
