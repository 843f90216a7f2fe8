//===- PipelineCommand.cpp - parplan pipeline -----------------------------===//
//
// Draws one pipeline schedule on stages of given times: the timeline the
// cost model's pipeline simulation gives, each stage's bubble and the
// activations it holds at once (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "parplan/Schedule/Pipeline.h"

#include <fmt/core.h>

#include <cmath>
#include <tuple>

using namespace parplan::schedule;

namespace {

int fail(const std::string &error) {
  fmt::print(stderr, "parplan pipeline: error: {}\n", error);
  return 1;
}

/// A picture wider than this is left out.
constexpr size_t kWidestPicture = 240;
/// The most forwards (stages x micro-batches x chunks) simulated: the
/// orders and the timeline keep every task, 40 bytes each.
constexpr int64_t kMostForwards = 10'000'000;
/// Bounds that keep every figure finite and the picture's width countable.
constexpr double kLongestTime = 1e9;
constexpr int64_t kMostColumns = 1000;

} // namespace

int parplan::cli::runPipeline(const PipelineOptions &options) {
  // CLI11 admits only the names this parses.
  PipelineSchedule schedule = *parsePipelineSchedule(options.schedule);
  PipelineShape shape{options.stages, options.microBatches, options.chunks};
  if (shape.chunks == 0)
    shape.chunks = schedule == PipelineSchedule::Interleaved ? 2 : 1;
  if (std::optional<std::string> error = checkPipeline(schedule, shape))
    return fail(*error);
  // Each count is at least 1 here; divide rather than multiply, which could
  // overflow.
  if (shape.microBatches > kMostForwards / shape.stages / shape.chunks)
    return fail(fmt::format("{} stages x {} micro-batches x {} chunks are "
                            "more forwards than the {} simulated at most",
                            shape.stages, shape.microBatches, shape.chunks,
                            kMostForwards));
  for (auto [flag, value, zero] :
       {std::tuple{"--forward", options.forward, false},
        std::tuple{"--backward", options.backward, false},
        std::tuple{"--send", options.send, true}})
    if (!std::isfinite(value) || value < 0 || (!zero && value == 0) ||
        value > kLongestTime)
      return fail(fmt::format("{} {}: expected a {} number up to {:g}", flag,
                              value, zero ? "non-negative" : "positive",
                              kLongestTime));
  if (options.columns < 1 || options.columns > kMostColumns)
    return fail(fmt::format("--columns {}: expected 1 to {}", options.columns,
                            kMostColumns));

  // A stage's layers are split evenly over its chunks.
  auto chunks = static_cast<double>(shape.chunks);
  PipelineCosts costs = PipelineCosts::uniform(
      shape, options.forward / chunks, options.backward / chunks, options.send);
  std::vector<std::vector<PipelineTask>> order = pipelineOrder(schedule, shape);
  PipelineTimeline timeline = simulatePipeline(order, shape, costs);
  std::vector<int64_t> held = pipelineInFlight(order);

  fmt::print("{}: {} stages, {} micro-batches{}, forward {:g}, backward "
             "{:g}, send {:g}\n",
             toString(schedule), shape.stages, shape.microBatches,
             shape.chunks > 1 ? fmt::format(", {} chunks", shape.chunks) : "",
             options.forward, options.backward, options.send);
  // Measured before drawing: a wide picture is never built.
  if (timeline.seconds * static_cast<double>(options.columns) >
      static_cast<double>(kWidestPicture))
    fmt::print("  (picture left out: wider than {} characters; try "
               "--columns 1 or fewer micro-batches)\n",
               kWidestPicture);
  else
    fmt::print("{}", drawPipeline(order, shape, timeline, options.columns));
  double work = static_cast<double>(shape.microBatches) *
                (options.forward + options.backward);
  fmt::print("time {:g} (work {:g}, bubble {:.3f} of it)\n", timeline.seconds,
             work, (timeline.seconds - work) / work);
  fmt::print("stage  busy  idle  activations held\n");
  for (size_t s = 0; s < timeline.busy.size(); ++s)
    fmt::print("{:>5} {:>5g} {:>5g} {:>17}\n", s, timeline.busy[s],
               timeline.seconds - timeline.busy[s], held[s]);
  return 0;
}
