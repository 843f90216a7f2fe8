//===- Trace.cpp - timelines in the Chrome trace-event format -------------===//

#include "parplan/Runtime/Trace.h"

#include "parplan/Support/Files.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace parplan::runtime {

const char *toString(TraceThread thread) {
  switch (thread) {
  case TraceThread::Compute:
    return "compute";
  case TraceThread::Communication:
    return "communication";
  case TraceThread::Transfers:
    return "transfers";
  case TraceThread::Gradients:
    return "gradients";
  }
  return "?";
}

std::string TraceLabel::name() const {
  return node.empty() ? op : op + " " + node;
}

TraceLabel traceLabel(const plan::Plan &plan, const plan::Program &program,
                      int64_t index) {
  const plan::Instruction &instruction =
      program.instructions(static_cast<int>(index));
  TraceLabel label;
  label.node = instruction.node();
  auto bytesOf = [&](int64_t buffer) {
    return buffer >= 0 && buffer < program.buffers_size()
               ? static_cast<double>(
                     bufferBytes(program.buffers(static_cast<int>(buffer))))
               : 0.0;
  };
  switch (instruction.op_case()) {
  case plan::Instruction::kKernel: {
    const plan::Kernel &kernel = instruction.kernel();
    label.op = kernel.op();
    label.category = "kernel";
    label.flops = kernel.flops();
    label.bytes = kernel.bytes();
    if (kernel.compute_type().empty()) {
      // A helper kernel: what it reads and writes.
      for (int64_t b : kernel.operands())
        label.bytes += bytesOf(b);
      for (int64_t b : kernel.results())
        label.bytes += bytesOf(b);
    }
    break;
  }
  case plan::Instruction::kCollective: {
    const plan::Collective &collective = instruction.collective();
    label.op = collectiveName(collective.kind());
    label.category = "collective";
    label.bytes = bytesOf(collective.kind() == plan::Collective::ALL_GATHER
                              ? collective.output()
                              : collective.input());
    break;
  }
  case plan::Instruction::kSend:
    label.op = "send";
    label.category = "message";
    label.bytes = bytesOf(instruction.send().buffer());
    break;
  case plan::Instruction::kRecv:
    label.op = "recv";
    label.category = "message";
    label.bytes = bytesOf(instruction.recv().buffer());
    break;
  case plan::Instruction::kCrossMeshSend:
  case plan::Instruction::kCrossMeshRecv: {
    bool send = instruction.has_cross_mesh_send();
    const plan::CrossMeshPart &part =
        send ? instruction.cross_mesh_send() : instruction.cross_mesh_recv();
    label.op = send ? "cross_mesh_send" : "cross_mesh_recv";
    label.category = "cross_mesh";
    if (part.move() >= 0 && part.move() < plan.cross_mesh_moves_size()) {
      const plan::CrossMeshMove &move =
          plan.cross_mesh_moves(static_cast<int>(part.move()));
      double elements = 1;
      for (int64_t size : move.logical_shape())
        elements *= static_cast<double>(size);
      std::optional<DType> type = toRuntimeDType(move.dtype());
      label.bytes =
          type ? elements * static_cast<double>(byteWidth(*type)) : 0.0;
      if (label.node.empty())
        label.node = move.name();
    }
    break;
  }
  case plan::Instruction::OP_NOT_SET:
    label.op = "instruction";
    label.category = "kernel";
    break;
  }
  return label;
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
        out += escaped;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

namespace {

/// Microseconds, as the format counts them, to the nanosecond.
std::string micros(double seconds) {
  // JSON has no infinity: a time that is not finite is 0.
  if (!std::isfinite(seconds))
    seconds = 0;
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f", seconds * 1e6);
  return text;
}

/// A figure as a JSON number (%.17g keeps a double exact; integers print
/// as integers).
std::string number(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

} // namespace

void writeChromeTrace(const Trace &trace, std::ostream &out) {
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{";
  for (size_t i = 0; i < trace.metadata.size(); ++i)
    out << (i ? "," : "") << jsonString(trace.metadata[i].first) << ":"
        << jsonString(trace.metadata[i].second);
  out << "},\"traceEvents\":[\n";
  bool first = true;
  auto begin = [&] {
    if (!first)
      out << ",\n";
    first = false;
  };
  for (size_t p = 0; p < trace.processes.size(); ++p) {
    begin();
    out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << p
        << ",\"tid\":0,\"args\":{\"name\":"
        << jsonString(trace.processes[p].name) << "}}";
    begin();
    out << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << p
        << ",\"tid\":0,\"args\":{\"sort_index\":" << p << "}}";
    for (TraceThread thread :
         {TraceThread::Compute, TraceThread::Communication,
          TraceThread::Transfers, TraceThread::Gradients}) {
      begin();
      out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << p
          << ",\"tid\":" << static_cast<int>(thread)
          << ",\"args\":{\"name\":" << jsonString(toString(thread)) << "}}";
    }
  }
  for (const TraceEvent &event : trace.events) {
    begin();
    out << "{\"ph\":\"X\",\"name\":" << jsonString(event.label.name())
        << ",\"cat\":" << jsonString(event.label.category)
        << ",\"pid\":" << event.process
        << ",\"tid\":" << static_cast<int>(event.thread)
        << ",\"ts\":" << micros(event.start)
        << ",\"dur\":" << micros(event.duration)
        << ",\"args\":{\"op\":" << jsonString(event.label.op)
        << ",\"node\":" << jsonString(event.label.node)
        << ",\"bytes\":" << number(event.label.bytes)
        << ",\"flops\":" << number(event.label.flops);
    if (event.instruction >= 0)
      out << ",\"instruction\":" << event.instruction;
    if (event.microBatch >= 0)
      out << ",\"micro_batch\":" << event.microBatch
          << ",\"pass\":" << (event.backward ? "\"backward\"" : "\"forward\"");
    else
      out << ",\"pass\":\"once per step\"";
    if (event.chunk >= 0)
      out << ",\"chunk\":" << event.chunk;
    if (!event.group.empty())
      out << ",\"group\":" << jsonString(event.group);
    out << "}}";
  }
  // Each end of a flow sits in the middle of its slice, which it binds to
  // ("bp":"e" for the second): an arrow from the send to the receive.
  for (size_t f = 0; f < trace.flows.size(); ++f) {
    const TraceEvent &from = trace.events[trace.flows[f].from];
    const TraceEvent &to = trace.events[trace.flows[f].to];
    begin();
    out << "{\"ph\":\"s\",\"name\":\"message\",\"cat\":\"message\",\"id\":" << f
        << ",\"pid\":" << from.process
        << ",\"tid\":" << static_cast<int>(from.thread)
        << ",\"ts\":" << micros(from.start + from.duration / 2) << "}";
    begin();
    out << "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"message\",\"cat\":"
           "\"message\",\"id\":"
        << f << ",\"pid\":" << to.process
        << ",\"tid\":" << static_cast<int>(to.thread)
        << ",\"ts\":" << micros(to.start + to.duration / 2) << "}";
  }
  for (const TraceMemorySample &sample : trace.memory) {
    begin();
    out << "{\"ph\":\"C\",\"name\":\"memory\",\"pid\":" << sample.process
        << ",\"ts\":" << micros(sample.time)
        << ",\"args\":{\"bytes\":" << number(sample.bytes) << "}}";
  }
  out << "\n]}\n";
}

Status checkTraceWritable(const std::string &path) {
  std::error_code ignored;
  // The path itself, not what a link names: a dangling link is kept.
  bool existed =
      std::filesystem::exists(std::filesystem::symlink_status(path, ignored));
  std::ofstream out(path, std::ios::binary | std::ios::app);
  if (!out)
    return Status::failure("cannot write trace " + path + ": " +
                           std::strerror(errno));
  out.close();
  if (!existed)
    std::filesystem::remove(path, ignored);
  return Status::success();
}

Status writeChromeTraceFile(const Trace &trace, const std::string &path) {
  // Whole or not at all: a run stopped while writing, or a full disk,
  // leaves the previous trace.
  std::ostringstream out;
  writeChromeTrace(trace, out);
  if (std::optional<std::string> problem = writeFileAtomically(path, out.str()))
    return Status::failure("trace: " + *problem);
  return Status::success();
}

} // namespace parplan::runtime
