//===- PipelineTest.cpp - pipeline schedules and their timeline -----------===//
//
// pipelineOrder, pipelineInFlight, simulatePipeline and drawPipeline
// (Pipeline.h) against the published figures: the bubble of GPipe and
// 1F1B is (P - 1) stage-times, Interleaved divides it by V, the
// activations each stage holds, and eager-1F1B hiding slow links that
// 1F1B waits on.
//
//===----------------------------------------------------------------------===//

#include "parplan/Schedule/Pipeline.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

using namespace parplan::schedule;

namespace {

/// Why `order` is not a schedule of `shape`, or "": every stage runs every
/// micro-batch's forward and backward through each of its chunks once,
/// the backward after the forward.
std::string orderFault(const std::vector<std::vector<PipelineTask>> &order,
                       const PipelineShape &shape) {
  if (static_cast<int64_t>(order.size()) != shape.stages)
    return "not one order per stage";
  for (size_t s = 0; s < order.size(); ++s) {
    std::set<std::pair<int64_t, int64_t>> forwards, backwards;
    for (const PipelineTask &task : order[s]) {
      std::pair<int64_t, int64_t> key{task.microBatch, task.chunk};
      if (task.microBatch < 0 || task.microBatch >= shape.microBatches ||
          task.chunk < 0 || task.chunk >= shape.chunks)
        return "stage " + std::to_string(s) + ": a task out of range";
      if (task.backward) {
        if (!forwards.count(key))
          return "stage " + std::to_string(s) + ": backward of " +
                 std::to_string(task.microBatch) + " before its forward";
        if (!backwards.insert(key).second)
          return "stage " + std::to_string(s) + ": a backward twice";
      } else if (!forwards.insert(key).second) {
        return "stage " + std::to_string(s) + ": a forward twice";
      }
    }
    if (static_cast<int64_t>(backwards.size()) !=
        shape.microBatches * shape.chunks)
      return "stage " + std::to_string(s) + ": backwards missing";
  }
  return "";
}

} // namespace

TEST_CASE("pipeline schedule names and invalid shapes", "[pipeline]") {
  for (PipelineSchedule schedule : kPipelineSchedules)
    CHECK(parsePipelineSchedule(toString(schedule)) == schedule);
  CHECK_FALSE(parsePipelineSchedule("zero-bubble"));
  CHECK(pipelineScheduleNames() ==
        std::vector<std::string>{"gpipe", "1f1b", "eager-1f1b", "interleaved"});

  CHECK_FALSE(checkPipeline(PipelineSchedule::OneFOneB, {4, 8, 1}));
  CHECK(*checkPipeline(PipelineSchedule::OneFOneB, {0, 8, 1}) ==
        "1f1b schedule: needs at least 1 stage, not 0");
  CHECK(*checkPipeline(PipelineSchedule::GPipe, {4, 0, 1}) ==
        "gpipe schedule: needs at least 1 micro-batch, not 0");
  CHECK(*checkPipeline(PipelineSchedule::EagerOneFOneB, {4, 8, 2}) ==
        "eager-1f1b schedule: runs 1 model chunk per stage, not 2 (chunks "
        "are for interleaved)");
  CHECK(*checkPipeline(PipelineSchedule::Interleaved, {4, 8, 1}) ==
        "interleaved schedule: needs at least 2 model chunks per stage, "
        "not 1");
  CHECK(*checkPipeline(PipelineSchedule::Interleaved, {4, 6, 2}) ==
        "interleaved schedule: 6 micro-batches are not a multiple of the 4 "
        "stages");
  CHECK_FALSE(checkPipeline(PipelineSchedule::Interleaved, {4, 8, 2}));
}

TEST_CASE("pipeline orders and the activations they hold", "[pipeline]") {
  // Every schedule on shapes with fewer, as many and more micro-batches
  // than stages runs each task once, a backward after its forward.
  for (PipelineSchedule schedule : kPipelineSchedules)
    for (int64_t stages : {1, 2, 4})
      for (int64_t microBatches : {1, 2, 4, 8}) {
        PipelineShape shape{stages, microBatches,
                            schedule == PipelineSchedule::Interleaved ? 2 : 1};
        if (checkPipeline(schedule, shape))
          continue;
        CAPTURE(toString(schedule), stages, microBatches);
        std::vector<std::vector<PipelineTask>> order =
            pipelineOrder(schedule, shape);
        CHECK(orderFault(order, shape).empty());
        // The stages never wait on each other for good, and each runs all
        // its work.
        auto chunks = static_cast<double>(shape.chunks);
        PipelineTimeline timeline = simulatePipeline(
            order, shape,
            PipelineCosts::uniform(shape, 1 / chunks, 2 / chunks, 0.5));
        CHECK(std::isfinite(timeline.seconds));
        for (double busy : timeline.busy)
          CHECK(busy == Approx(3.0 * microBatches));
      }

  // 1F1B on 4 stages: the first holds 4 micro-batches, the last 1; GPipe
  // holds all 8 everywhere; eager-1F1B 2(P - s) - 1.
  PipelineShape shape{4, 8, 1};
  CHECK(pipelineInFlight(pipelineOrder(PipelineSchedule::OneFOneB, shape)) ==
        std::vector<int64_t>{4, 3, 2, 1});
  CHECK(pipelineInFlight(pipelineOrder(PipelineSchedule::GPipe, shape)) ==
        std::vector<int64_t>{8, 8, 8, 8});
  CHECK(
      pipelineInFlight(pipelineOrder(PipelineSchedule::EagerOneFOneB, shape)) ==
      std::vector<int64_t>{7, 5, 3, 1});
  // Fewer micro-batches than the warm-up: all of them.
  CHECK(pipelineInFlight(
            pipelineOrder(PipelineSchedule::EagerOneFOneB, {4, 2, 1})) ==
        std::vector<int64_t>{2, 2, 2, 1});

  // Interleaved, V = 2 on 4 stages: 2(P - s - 1) + (V - 1)P + 1 chunk
  // activations.
  CHECK(pipelineInFlight(
            pipelineOrder(PipelineSchedule::Interleaved, {4, 8, 2})) ==
        std::vector<int64_t>{11, 9, 7, 5});

  // The last stage of 1F1B alternates from the start; the first warms up
  // with P - 1 forwards.
  std::vector<std::vector<PipelineTask>> order =
      pipelineOrder(PipelineSchedule::OneFOneB, {3, 4, 1});
  CHECK(order[2] == std::vector<PipelineTask>{{false, 0, 0},
                                              {true, 0, 0},
                                              {false, 1, 0},
                                              {true, 1, 0},
                                              {false, 2, 0},
                                              {true, 2, 0},
                                              {false, 3, 0},
                                              {true, 3, 0}});
  CHECK(order[0] == std::vector<PipelineTask>{{false, 0, 0},
                                              {false, 1, 0},
                                              {false, 2, 0},
                                              {true, 0, 0},
                                              {false, 3, 0},
                                              {true, 1, 0},
                                              {true, 2, 0},
                                              {true, 3, 0}});
  // Interleaved: micro-batches 0 and 1 through chunk 0, then through
  // chunk 1, on 2 stages.
  order = pipelineOrder(PipelineSchedule::Interleaved, {2, 2, 2});
  CHECK(order[1].front() == PipelineTask{false, 0, 0});
  CHECK(order[1][1] == PipelineTask{false, 1, 0});
  CHECK(order[1][2] == PipelineTask{false, 0, 1});
}

TEST_CASE("pipeline timelines: the bubble", "[pipeline]") {
  // Forward 1, backward 2 per stage, free links: GPipe and 1F1B take
  // (M + P - 1) stage-times, a bubble of (P - 1) on every stage, so the
  // bubble over the work is (P - 1) / M.
  for (PipelineSchedule schedule :
       {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
        PipelineSchedule::EagerOneFOneB})
    for (int64_t microBatches : {4, 8, 16}) {
      PipelineShape shape{4, microBatches, 1};
      CAPTURE(toString(schedule), microBatches);
      PipelineTimeline timeline =
          simulatePipeline(pipelineOrder(schedule, shape), shape,
                           PipelineCosts::uniform(shape, 1, 2));
      CHECK(timeline.seconds == Approx(3.0 * (microBatches + 3)));
      for (double busy : timeline.busy) {
        CHECK(busy == Approx(3.0 * microBatches));
        CHECK((timeline.seconds - busy) / busy ==
              Approx(3.0 / static_cast<double>(microBatches)));
      }
    }

  // Interleaved with V chunks of 1/V of a stage's layers each: the bubble
  // is (P - 1) / V stage-times.
  for (int64_t chunks : {2, 4}) {
    PipelineShape shape{4, 8, chunks};
    CAPTURE(chunks);
    auto v = static_cast<double>(chunks);
    PipelineTimeline timeline =
        simulatePipeline(pipelineOrder(PipelineSchedule::Interleaved, shape),
                         shape, PipelineCosts::uniform(shape, 1 / v, 2 / v));
    CHECK(timeline.seconds == Approx(3.0 * 8 + 3.0 * 3 / v));
  }

  // A stage twice as slow sets the pace: the slowest stage's work and
  // more, at most the sum of the stages + (M - 1) x the slowest (the
  // formula of docs/pipeline.md, exact for equal stages).
  PipelineShape shape{3, 6, 1};
  PipelineCosts costs = PipelineCosts::uniform(shape, 1, 2);
  costs.forward[1] = 2;
  costs.backward[1] = 4;
  PipelineTimeline timeline = simulatePipeline(
      pipelineOrder(PipelineSchedule::OneFOneB, shape), shape, costs);
  CHECK(timeline.seconds > 6 * 6);
  CHECK(timeline.seconds <= (3 + 6 + 3) + 5 * 6);
  CHECK(timeline.busy[1] == Approx(6 * 6));
}

TEST_CASE("pipeline timelines: slow links between stages", "[pipeline]") {
  // Sends of one stage-time each way: 1F1B waits for every activation and
  // gradient in its steady state; eager-1F1B's extra warm-up forwards send
  // ahead, so it is faster, and never slower on free links.
  for (int64_t stages : {2, 4}) {
    PipelineShape shape{stages, 16, 1};
    CAPTURE(stages);
    PipelineCosts slow = PipelineCosts::uniform(shape, 1, 2, 1);
    PipelineCosts fast = PipelineCosts::uniform(shape, 1, 2, 0);
    auto time = [&](PipelineSchedule schedule, const PipelineCosts &costs) {
      return simulatePipeline(pipelineOrder(schedule, shape), shape, costs)
          .seconds;
    };
    CHECK(time(PipelineSchedule::EagerOneFOneB, slow) <
          time(PipelineSchedule::OneFOneB, slow));
    CHECK(time(PipelineSchedule::EagerOneFOneB, fast) ==
          Approx(time(PipelineSchedule::OneFOneB, fast)));
    // It keeps the stages busy: the work plus the fill and drain, which
    // now include the sends.
    CHECK(time(PipelineSchedule::EagerOneFOneB, slow) <=
          3.0 * 16 + 3.0 * (stages - 1) + 2.0 * (stages - 1) + 1e-9);
  }
}

TEST_CASE("pipeline timelines: a card sends one message and receives one at "
          "a time",
          "[pipeline]") {
  // Sends far longer than the work: a middle stage of three sends M
  // activations on and M gradients back on its one card, so the step takes
  // at least 2M sends, whatever the schedule; with 2 stages each card sends
  // one way only, and under 1F1B the sends of one direction overlap those
  // of the other.
  constexpr int64_t kMicroBatches = 8;
  constexpr double kSend = 1, kWork = 1e-3;
  for (PipelineSchedule schedule :
       {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
        PipelineSchedule::EagerOneFOneB}) {
    CAPTURE(toString(schedule));
    PipelineShape three{3, kMicroBatches, 1};
    double step =
        simulatePipeline(pipelineOrder(schedule, three), three,
                         PipelineCosts::uniform(three, kWork, kWork, kSend))
            .seconds;
    CHECK(step >= 2 * kMicroBatches * kSend);
    // GPipe sends every gradient after every activation anyway.
    if (schedule == PipelineSchedule::GPipe)
      continue;
    PipelineShape two{2, kMicroBatches, 1};
    step = simulatePipeline(pipelineOrder(schedule, two), two,
                            PipelineCosts::uniform(two, kWork, kWork, kSend))
               .seconds;
    CHECK(step < 2 * kMicroBatches * kSend);
  }
}

TEST_CASE("pipeline timelines: a card busy with copies before the "
          "micro-batches",
          "[pipeline]") {
  // Stage 0's card sends a weight's copy for 5 s before anything else: its
  // first activation leaves at 5 s, not at the end of its first forward.
  PipelineShape shape{2, 1, 1};
  PipelineCosts costs = PipelineCosts::uniform(shape, 1, 2, 1);
  std::vector<std::vector<PipelineTask>> order =
      pipelineOrder(PipelineSchedule::OneFOneB, shape);
  double free = simulatePipeline(order, shape, costs).seconds;
  // F0 on stage 0 [0, 1], send [1, 2], F0 and B0 on stage 1 [2, 5], send
  // back [5, 6], B0 on stage 0 [6, 8].
  CHECK(free == Approx(8));
  costs.sending = {5, 0};
  // The send waits for the card: [5, 6]; all else 4 s later.
  CHECK(simulatePipeline(order, shape, costs).seconds == Approx(12));
  // Stage 1's card busy until 6 s holds its gradient back 1 s: [6, 7].
  costs.sending = {0, 6};
  CHECK(simulatePipeline(order, shape, costs).seconds == Approx(9));
  costs.sending.clear();
  // A part of a gradient stage 1 sends stage 0 after its last task (at
  // 5 s), and what stage 0 does with it, 4 s: the step ends at 9 s, not
  // at stage 0's last task (8 s); the rest of an update overlaps it.
  costs.updateWaits = {{1, 0, 4}};
  CHECK(
      simulateStep(PipelineSchedule::OneFOneB, shape, costs, {0, 0}).seconds ==
      Approx(9));
  CHECK(
      simulateStep(PipelineSchedule::OneFOneB, shape, costs, {2, 0}).seconds ==
      Approx(10));
  costs.updateWaits = {{1, 0, 2}};
  CHECK(
      simulateStep(PipelineSchedule::OneFOneB, shape, costs, {0, 0}).seconds ==
      Approx(8));
}

TEST_CASE("pipeline timelines: a part of a gradient moved after the last "
          "task holds the cards as a micro-batch's send does",
          "[pipeline]") {
  // One micro-batch on 3 stages, forward 1, backward 2, sends of 1: F0 on
  // stage 2 from 4 to 5, its B0 from 5 to 7, sent back from 7 to 8; B0 on
  // stage 1 from 8 to 10, sent from 10 to 11; on stage 0 from 11 to 13.
  PipelineShape shape{3, 1, 1};
  PipelineCosts costs = PipelineCosts::uniform(shape, 1, 2, 1);
  CHECK(simulateStep(PipelineSchedule::OneFOneB, shape, costs, {0, 0, 0})
            .seconds == Approx(13));
  // Stage 2 then reduces its part of the tied embedding's gradient (1 s)
  // and moves it to stage 0 (4 s), which sums it in 1 s: the move holds
  // stage 0's card from 8 to 12, so stage 1's send waits for it (12 to
  // 13) and stage 0's backward ends at 15, the step with it.
  costs.updateWaits = {{2, 0, 6, 1, 4}};
  PipelineTimeline held =
      simulateStep(PipelineSchedule::OneFOneB, shape, costs, {0, 0, 0});
  CHECK(held.seconds == Approx(15));
  CHECK(held.spans[0].back().first == Approx(13));
  REQUIRE(held.updateWaitsDone.size() == 1);
  CHECK(held.updateWaitsDone[0] == Approx(13));
  // A move that leaves the card before stage 1's send delays nothing: the
  // part is done at 10, the step at 13.
  costs.updateWaits = {{2, 0, 3, 1, 1}};
  PipelineTimeline passed =
      simulateStep(PipelineSchedule::OneFOneB, shape, costs, {0, 0, 0});
  CHECK(passed.seconds == Approx(13));
  CHECK(passed.updateWaitsDone[0] == Approx(10));
  // Without a move on the cards the part waits its seconds alone.
  costs.updateWaits = {{2, 0, 6}};
  CHECK(simulateStep(PipelineSchedule::OneFOneB, shape, costs, {0, 0, 0})
            .seconds == Approx(13));
}

TEST_CASE("pipeline timelines: what a stage runs before its micro-batches",
          "[pipeline]") {
  // One micro-batch on 2 stages, forward 1 and backward 2: F0 on stage 0
  // from 0 to 1, on stage 1 from 1 to 2, B0 from 2 to 4 there and from 4 to
  // 6 on stage 0.
  PipelineShape shape{2, 1, 1};
  std::vector<std::vector<PipelineTask>> order =
      pipelineOrder(PipelineSchedule::OneFOneB, shape);
  PipelineCosts costs = PipelineCosts::uniform(shape, 1, 2, 0);
  CHECK(simulatePipeline(order, shape, costs).seconds == Approx(6));
  // Stage 1 receiving a weight until 5 (a tied embedding, before the
  // micro-batches) holds its forward back to 5, and so the step to 10.
  costs.start = {0, 5};
  PipelineTimeline late = simulatePipeline(order, shape, costs);
  CHECK(late.seconds == Approx(10));
  CHECK(late.spans[1].front().first == Approx(5));
  // Within the first micro-batch's arrival it costs nothing; on the first
  // stage every task waits.
  costs.start = {0, 0.5};
  CHECK(simulatePipeline(order, shape, costs).seconds == Approx(6));
  costs.start = {3};
  CHECK(simulatePipeline(order, shape, costs).seconds == Approx(9));
  // The stages' busy time is their tasks' alone.
  CHECK(simulatePipeline(order, shape, costs).busy[0] == Approx(3));
}

TEST_CASE("pipeline steps: the updates after the last backward", "[pipeline]") {
  // Each stage updates after its own last backward; the step ends with the
  // last to finish. Under 1F1B the first stage ends last, so its update
  // counts whole; each stage is busy for its micro-batches and its update.
  PipelineShape shape{3, 4, 1};
  PipelineCosts costs = PipelineCosts::uniform(shape, 1, 2, 0);
  std::vector<double> update = {5, 1, 2};
  PipelineTimeline pipeline = simulatePipeline(
      pipelineOrder(PipelineSchedule::OneFOneB, shape), shape, costs);
  PipelineTimeline step =
      simulateStep(PipelineSchedule::OneFOneB, shape, costs, update);
  CHECK(step.seconds == Approx(pipeline.seconds + 5));
  CHECK(step.seconds == Approx((4 + 3 - 1) * 3 + 5));
  for (size_t s = 0; s < 3; ++s)
    CHECK(step.busy[s] == Approx(4 * 3 + update[s]));
  // A later stage's update runs while the earlier stages finish their
  // backwards: the last stage's last backward ends 2 x 2 (the two earlier
  // stages' backwards of the last micro-batch) before the first stage's,
  // so an update of 10 there ends 10 - 4 after, where waiting for every
  // stage would end 10 after.
  std::vector<double> late = {1, 1, 10};
  PipelineTimeline lateStep =
      simulateStep(PipelineSchedule::OneFOneB, shape, costs, late);
  CHECK(step.spans[2].back().second == Approx(pipeline.seconds - 4));
  CHECK(lateStep.seconds == Approx(pipeline.seconds + 10 - 4));
  // Without updates, the step is the timeline.
  CHECK(simulateStep(PipelineSchedule::GPipe, shape, costs, {}).seconds ==
        Approx(simulatePipeline(pipelineOrder(PipelineSchedule::GPipe, shape),
                                shape, costs)
                   .seconds));
}

TEST_CASE("pipeline activations kept aside by the executor", "[pipeline]") {
  // 1F1B on 2 stages of 4 micro-batches: stage 0 runs F0 F1 B0 F2 B1 F3 B2
  // B3 and keeps a micro-batch aside whenever its backward does not come
  // next (2 at most, its in-flight count); stage 1 runs each backward right
  // after its forward and keeps none.
  PipelineShape shape{2, 4, 1};
  CHECK(pipelineKeptAside(pipelineOrder(PipelineSchedule::OneFOneB, shape),
                          1) == std::vector<int64_t>{2, 0});
  // GPipe runs every forward first: all but the last are kept aside.
  CHECK(pipelineKeptAside(pipelineOrder(PipelineSchedule::GPipe, shape), 1) ==
        std::vector<int64_t>{3, 3});
  // Interleaved, per virtual stage (chunk * stages + stage).
  PipelineShape chunked{2, 4, 2};
  std::vector<int64_t> aside = pipelineKeptAside(
      pipelineOrder(PipelineSchedule::Interleaved, chunked), 2);
  REQUIRE(aside.size() == 4);
  std::vector<int64_t> inFlight = pipelineInFlightByChunk(
      pipelineOrder(PipelineSchedule::Interleaved, chunked), 2);
  for (size_t v = 0; v < 4; ++v)
    CHECK(aside[v] <= inFlight[v]);
  CHECK(virtualStage(1, 1, 2) == 3);
}

TEST_CASE("schedules against model chunks", "[pipeline]") {
  CHECK(!checkScheduleChunks("interleaved", 2));
  CHECK(!checkScheduleChunks("1f1b", 1));
  CHECK(!checkScheduleChunks("sequential", 3));
  CHECK(checkScheduleChunks("interleaved", 1) ==
        "schedule 'interleaved' needs stages of several model chunks");
  CHECK(checkScheduleChunks("gpipe", 2) ==
        "schedule 'gpipe' runs stages of one model chunk, but they hold 2: "
        "use interleaved");
}

TEST_CASE("pipeline timelines: links shared by chunks", "[pipeline]") {
  // Interleaved sends of a stage's two chunks share its wire: with sends
  // as long as a chunk's forward, they queue, and the step is slower than
  // with free sends; one stage sends nothing.
  PipelineShape shape{2, 4, 2};
  std::vector<std::vector<PipelineTask>> order =
      pipelineOrder(PipelineSchedule::Interleaved, shape);
  double free =
      simulatePipeline(order, shape, PipelineCosts::uniform(shape, 1, 2, 0))
          .seconds;
  double slow =
      simulatePipeline(order, shape, PipelineCosts::uniform(shape, 1, 2, 1))
          .seconds;
  CHECK(slow > free);
  PipelineShape alone{1, 4, 2};
  order = pipelineOrder(PipelineSchedule::Interleaved, alone);
  CHECK(simulatePipeline(order, alone, PipelineCosts::uniform(alone, 1, 2, 5))
            .seconds == Approx(4 * 2 * 3));

  // Costs that do not fit the shape: no time rather than a read past them.
  PipelineCosts wrong = PipelineCosts::uniform({3, 4, 1}, 1, 2);
  CHECK(std::isinf(
      simulatePipeline(pipelineOrder(PipelineSchedule::OneFOneB, {2, 4, 1}),
                       {2, 4, 1}, wrong)
          .seconds));
  CHECK(PipelineCosts::uniform({0, 4, 1}, 1, 2).forward.empty());
}

TEST_CASE("pipeline pictures", "[pipeline]") {
  PipelineShape shape{2, 3, 1};
  std::vector<std::vector<PipelineTask>> order =
      pipelineOrder(PipelineSchedule::OneFOneB, shape);
  PipelineTimeline timeline =
      simulatePipeline(order, shape, PipelineCosts::uniform(shape, 1, 2));
  CHECK(drawPipeline(order, shape, timeline, 2) ==
        "stage 0 |F0F1....B0  F2B1  ..B2  |\n"
        "stage 1 |..F0B0  F1B1  F2B2  ....|\n");
}

namespace {

/// The longest run of a cut (`firsts`, each run's first weight), a run k
/// taking its weight over speeds[k].
double longestRun(const std::vector<double> &weights,
                  const std::vector<double> &speeds,
                  const std::vector<size_t> &firsts) {
  double most = 0;
  for (size_t k = 0; k < firsts.size(); ++k) {
    size_t end = k + 1 < firsts.size() ? firsts[k + 1] : weights.size();
    REQUIRE(firsts[k] < end);
    double sum = 0;
    for (size_t i = firsts[k]; i < end; ++i)
      sum += weights[i];
    most = std::max(most, sum / speeds[k]);
  }
  return most;
}

/// The shortest longest run over every choice of `parts` - 1 cut points
/// among the gaps between weights.
double bestLongestRun(const std::vector<double> &weights,
                      const std::vector<double> &speeds, size_t parts) {
  double best = std::numeric_limits<double>::infinity();
  size_t gaps = weights.size() - 1;
  for (uint32_t mask = 0; mask < (1u << gaps); ++mask) {
    if (static_cast<size_t>(__builtin_popcount(mask)) != parts - 1)
      continue;
    std::vector<size_t> firsts = {0};
    for (size_t g = 0; g < gaps; ++g)
      if (mask & (1u << g))
        firsts.push_back(g + 1);
    best = std::min(best, longestRun(weights, speeds, firsts));
  }
  return best;
}

} // namespace

TEST_CASE("partitionRuns balances the heaviest run", "[pipeline]") {
  // Equal layers: equal runs.
  CHECK(partitionRuns(std::vector<double>(8, 1), 4) ==
        std::vector<size_t>{0, 2, 4, 6});
  CHECK(partitionRuns({5, 1, 1, 1, 1, 1}, 2) == std::vector<size_t>{0, 1});
  CHECK(partitionRuns({1, 2, 3}, 3) == std::vector<size_t>{0, 1, 2});
  CHECK(partitionRuns({4, 4}, 1) == std::vector<size_t>{0});
  // Against every cut of small inputs: no cut has a lighter heaviest run.
  std::vector<double> weights = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  std::vector<double> alike(weights.size(), 1);
  for (size_t parts = 1; parts <= weights.size(); ++parts) {
    std::vector<size_t> cuts = partitionRuns(weights, parts);
    REQUIRE(cuts.size() == parts);
    CHECK(cuts.front() == 0);
    CHECK(longestRun(weights, alike, cuts) ==
          bestLongestRun(weights, alike, parts));
  }
}

TEST_CASE("partitionRuns gives faster parts more", "[pipeline]") {
  // A part twice as fast takes twice the layers.
  CHECK(partitionRuns(std::vector<double>(9, 1), 2, {2, 1}) ==
        std::vector<size_t>{0, 6});
  CHECK(partitionRuns(std::vector<double>(9, 1), 2, {1, 2}) ==
        std::vector<size_t>{0, 3});
  // Speeds of 1 are the plain partition.
  CHECK(partitionRuns({5, 1, 1, 1, 1, 1}, 2, {1, 1}) ==
        partitionRuns({5, 1, 1, 1, 1, 1}, 2));
  // Against every cut of small inputs: none has a shorter longest run.
  std::vector<double> weights = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  std::vector<double> speeds = {1.7, 1, 2.5, 1, 1.3, 3, 1, 1, 2, 1};
  for (size_t parts = 1; parts <= weights.size(); ++parts) {
    std::vector<double> partSpeeds(speeds.begin(), speeds.begin() + parts);
    std::vector<size_t> cuts = partitionRuns(weights, parts, partSpeeds);
    REQUIRE(cuts.size() == parts);
    CHECK(longestRun(weights, partSpeeds, cuts) ==
          Approx(bestLongestRun(weights, partSpeeds, parts)));
    // The library's measure of a partition (place-stages compares cuts
    // by it) is this test's.
    CHECK(parplan::schedule::longestRun(weights, cuts, partSpeeds) ==
          Approx(longestRun(weights, partSpeeds, cuts)));
  }
  // Without speeds, every part is as fast.
  CHECK(parplan::schedule::longestRun({3, 1, 4, 1}, {0, 2}) == 5);
}
