//===- TraceComparison.cpp - measured kernels beside simulated ones -------===//

#include "parplan/Simulate/TraceComparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

using namespace parplan;
using namespace parplan::simulate;

namespace {

/// Where a kernel runs: its device's name, its name ("op node"), and the
/// micro-batch, chunk and pass it runs in (-1 where the slice has none).
/// Not the instruction: parplan-run numbers the device's program after
/// cross-mesh moves are expanded into their steps, the simulator the
/// plan's; kernels keep their order either way.
using RunKey = std::tuple<std::string, std::string, int64_t, int64_t, bool>;

/// A kernel's place in a step: where it runs and which run of that name
/// it is there, in time order.
using Place = std::pair<RunKey, int64_t>;

/// A kernel slice before its run is counted.
struct KernelSlice {
  RunKey key;
  double start = 0, seconds = 0;
  std::string op;
};

/// `slices`' places, counting the runs of each key in start order.
std::vector<std::pair<Place, const KernelSlice *>>
placesOf(const std::vector<KernelSlice> &slices) {
  std::vector<const KernelSlice *> order;
  for (const KernelSlice &slice : slices)
    order.push_back(&slice);
  std::stable_sort(order.begin(), order.end(),
                   [](const KernelSlice *a, const KernelSlice *b) {
                     return a->start < b->start;
                   });
  std::map<RunKey, int64_t> runs;
  std::vector<std::pair<Place, const KernelSlice *>> places;
  for (const KernelSlice *slice : order)
    places.push_back({{slice->key, runs[slice->key]++}, slice});
  return places;
}

} // namespace

std::optional<KernelComparison>
parplan::simulate::compareKernels(const runtime::Trace &simulated,
                                  const llvm::json::Value &measured,
                                  std::string &error) {
  const llvm::json::Object *root = measured.getAsObject();
  const llvm::json::Array *events =
      root ? root->getArray("traceEvents") : nullptr;
  if (!events) {
    error = "not a trace (no traceEvents array)";
    return std::nullopt;
  }
  std::vector<KernelSlice> simulatedSlices;
  for (const runtime::TraceEvent &event : simulated.events)
    if (event.label.category == "kernel")
      simulatedSlices.push_back(
          {{simulated.processes[static_cast<size_t>(event.process)].name,
            event.label.name(), event.microBatch, event.chunk, event.backward},
           event.start,
           event.duration,
           event.label.op});
  KernelComparison comparison;
  comparison.simulatedKernels = static_cast<int64_t>(simulatedSlices.size());
  std::map<Place, const KernelSlice *> expected;
  for (const auto &[place, slice] : placesOf(simulatedSlices))
    expected[place] = slice;

  std::map<int64_t, std::string> processNames;
  for (const llvm::json::Value &value : *events)
    if (const llvm::json::Object *event = value.getAsObject();
        event && event->getString("ph") == "M" &&
        event->getString("name") == "process_name")
      if (const llvm::json::Object *args = event->getObject("args"))
        if (std::optional<int64_t> pid = event->getInteger("pid"))
          if (std::optional<llvm::StringRef> name = args->getString("name"))
            processNames[*pid] = name->str();

  std::vector<KernelSlice> measuredSlices;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *event = value.getAsObject();
    if (!event || event->getString("ph") != "X" ||
        event->getString("cat") != "kernel")
      continue;
    const llvm::json::Object *args = event->getObject("args");
    std::optional<int64_t> pid = event->getInteger("pid");
    std::optional<llvm::StringRef> name = event->getString("name");
    std::optional<double> start = event->getNumber("ts");
    std::optional<double> duration = event->getNumber("dur");
    if (!args || !pid || !name || !start || !duration ||
        !processNames.count(*pid)) {
      ++comparison.unmatched;
      continue;
    }
    // Trace files count microseconds.
    measuredSlices.push_back({{processNames[*pid], name->str(),
                               args->getInteger("micro_batch").value_or(-1),
                               args->getInteger("chunk").value_or(-1),
                               args->getString("pass") == "backward"},
                              *start * 1e-6,
                              *duration * 1e-6,
                              args->getString("op").value_or("").str()});
  }

  std::map<std::string, OpTimes> byOp;
  std::set<std::string> devices;
  for (const auto &[place, slice] : placesOf(measuredSlices)) {
    auto found = expected.find(place);
    if (found == expected.end()) {
      ++comparison.unmatched;
      continue;
    }
    const KernelSlice &twin = *found->second;
    OpTimes &op = byOp[twin.op];
    op.op = twin.op;
    ++op.kernels;
    op.measured += slice->seconds;
    op.simulated += twin.seconds;
    comparison.measured += slice->seconds;
    comparison.simulated += twin.seconds;
    ++comparison.matched;
    devices.insert(std::get<0>(slice->key));
  }
  comparison.devices = static_cast<int64_t>(devices.size());
  for (auto &[name, op] : byOp)
    comparison.ops.push_back(op);
  std::stable_sort(comparison.ops.begin(), comparison.ops.end(),
                   [](const OpTimes &a, const OpTimes &b) {
                     return std::abs(a.measured - a.simulated) >
                            std::abs(b.measured - b.simulated);
                   });
  return comparison;
}
