//===- TraceComparisonTest.cpp - measured kernels beside simulated ones ---===//

#include "parplan/Simulate/TraceComparison.h"

#include <catch2/catch.hpp>

#include <sstream>

using namespace parplan;
using namespace parplan::simulate;

namespace {

runtime::TraceEvent kernel(int64_t process, const std::string &op,
                           int64_t instruction, int64_t microBatch,
                           double seconds, double start = 0) {
  runtime::TraceEvent event;
  event.process = process;
  event.label.op = op;
  event.label.category = "kernel";
  event.instruction = instruction;
  event.microBatch = microBatch;
  event.start = start;
  event.duration = seconds;
  return event;
}

/// Two devices, each running a matmul (twice as long on device 1) and an
/// add on two micro-batches and an all-reduce (not a kernel) once.
runtime::Trace simulatedTrace() {
  runtime::Trace trace;
  trace.processes = {{"device 0"}, {"device 1"}};
  for (int64_t device = 0; device < 2; ++device) {
    for (int64_t microBatch = 0; microBatch < 2; ++microBatch) {
      trace.events.push_back(
          kernel(device, "matmul", 0, microBatch, 1e-3 * (1 + device)));
      trace.events.push_back(kernel(device, "add", 1, microBatch, 1e-5));
    }
    runtime::TraceEvent reduce;
    reduce.process = device;
    reduce.label.op = "all_reduce";
    reduce.label.category = "collective";
    reduce.instruction = 2;
    reduce.duration = 5e-3;
    trace.events.push_back(reduce);
  }
  return trace;
}

llvm::json::Value asJson(const runtime::Trace &trace) {
  std::ostringstream out;
  runtime::writeChromeTrace(trace, out);
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(out.str());
  REQUIRE(static_cast<bool>(value));
  return std::move(*value);
}

} // namespace

TEST_CASE("measured kernels are matched by device, name and micro-batch, "
          "and summed by op",
          "[simulate]") {
  runtime::Trace simulated = simulatedTrace();
  // The run took the matmuls as simulated and the adds ten times longer,
  // and listed its devices in the other order: names match, not indices.
  runtime::Trace measured = simulated;
  std::swap(measured.processes[0], measured.processes[1]);
  for (runtime::TraceEvent &event : measured.events) {
    event.process = 1 - event.process;
    if (event.label.op == "add")
      event.duration *= 10;
  }
  std::string error;
  std::optional<KernelComparison> comparison =
      compareKernels(simulated, asJson(measured), error);
  REQUIRE(comparison);
  CHECK(comparison->devices == 2);
  CHECK(comparison->matched == 8);
  CHECK(comparison->unmatched == 0);
  CHECK(comparison->simulated == Approx(6e-3 + 4e-5));
  CHECK(comparison->measured == Approx(6e-3 + 4e-4));
  // The add is off, the matmul is not: the add first.
  REQUIRE(comparison->ops.size() == 2);
  CHECK(comparison->ops[0].op == "add");
  CHECK(comparison->ops[0].kernels == 4);
  CHECK(comparison->ops[0].measured == Approx(4e-4));
  CHECK(comparison->ops[0].simulated == Approx(4e-5));
  CHECK(comparison->ops[1].op == "matmul");
  CHECK(comparison->ops[1].measured == Approx(comparison->ops[1].simulated));
}

TEST_CASE("measured kernels of another plan or device have no twin",
          "[simulate]") {
  runtime::Trace simulated = simulatedTrace();
  runtime::Trace measured = simulated;
  measured.processes.push_back({"device 2"});
  measured.events.push_back(kernel(2, "matmul", 0, 0, 1e-3));
  measured.events.push_back(kernel(0, "matmul", 7, 0, 1e-3));
  measured.events.push_back(kernel(0, "matmul", 0, 5, 1e-3));
  std::string error;
  std::optional<KernelComparison> comparison =
      compareKernels(simulated, asJson(measured), error);
  REQUIRE(comparison);
  CHECK(comparison->matched == 8);
  CHECK(comparison->unmatched == 3);
  CHECK(comparison->devices == 2);
}

TEST_CASE("runs of one name are matched in time order, whatever their "
          "instruction numbers",
          "[simulate]") {
  // One device runs "scale" three times, 1, 2 and 3 ms long in turn. The
  // measured trace numbers the instructions otherwise (a run expands
  // cross-mesh moves into steps) and lists the runs out of time order; the
  // k-th run in time is the k-th.
  runtime::Trace simulated;
  simulated.processes = {{"device 0"}};
  for (int64_t run = 0; run < 3; ++run)
    simulated.events.push_back(kernel(0, "scale", run, -1, 1e-3 * (run + 1),
                                      1e-2 * static_cast<double>(run)));
  runtime::Trace measured = simulated;
  std::swap(measured.events[0], measured.events[2]);
  for (runtime::TraceEvent &event : measured.events) {
    event.instruction += 7;
    event.duration *= 2;
  }
  std::string error;
  std::optional<KernelComparison> comparison =
      compareKernels(simulated, asJson(measured), error);
  REQUIRE(comparison);
  CHECK(comparison->matched == 3);
  CHECK(comparison->unmatched == 0);
  CHECK(comparison->simulatedKernels == 3);
  CHECK(comparison->measured == Approx(2 * comparison->simulated));
  // A fourth run, last in time but first in the file, has no twin: the
  // three earliest are matched, not the first three listed.
  runtime::Trace longer = simulated;
  longer.events.insert(longer.events.begin(),
                       kernel(0, "scale", 9, -1, 1.0, 1.0));
  comparison = compareKernels(simulated, asJson(longer), error);
  REQUIRE(comparison);
  CHECK(comparison->matched == 3);
  CHECK(comparison->unmatched == 1);
  CHECK(comparison->measured == Approx(6e-3));
}

TEST_CASE("a measured file that is not a trace is refused", "[simulate]") {
  std::string error;
  CHECK_FALSE(compareKernels(simulatedTrace(),
                             llvm::json::Value(llvm::json::Array{}), error));
  CHECK(error == "not a trace (no traceEvents array)");
}
