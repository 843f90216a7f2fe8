//===- Pipeline.cpp - pipeline schedules and their timeline ---------------===//
//
// The orders follow one pattern: a stage runs some warm-up forwards, then
// alternates one forward and one backward, then runs the backwards left.
// The schedules differ in the warm-up (none left over in GPipe, where all
// forwards come first) and, in Interleaved, in which chunk each forward
// and backward goes through. The timeline is list scheduling of those
// orders: no stage reorders its tasks.
//
//===----------------------------------------------------------------------===//

#include "parplan/Schedule/Pipeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace parplan::schedule {

std::vector<std::string> pipelineScheduleNames() {
  std::vector<std::string> names;
  for (PipelineSchedule schedule : kPipelineSchedules)
    names.emplace_back(toString(schedule));
  return names;
}

std::optional<PipelineSchedule> parsePipelineSchedule(const std::string &text) {
  for (PipelineSchedule schedule : kPipelineSchedules)
    if (text == toString(schedule))
      return schedule;
  return std::nullopt;
}

std::optional<std::string> checkPipeline(PipelineSchedule schedule,
                                         const PipelineShape &shape) {
  std::string what = std::string(toString(schedule)) + " schedule: ";
  if (shape.stages < 1)
    return what + "needs at least 1 stage, not " + std::to_string(shape.stages);
  if (shape.microBatches < 1)
    return what + "needs at least 1 micro-batch, not " +
           std::to_string(shape.microBatches);
  if (schedule != PipelineSchedule::Interleaved) {
    if (shape.chunks != 1)
      return what + "runs 1 model chunk per stage, not " +
             std::to_string(shape.chunks) + " (chunks are for interleaved)";
    return std::nullopt;
  }
  if (shape.chunks < 2)
    return what + "needs at least 2 model chunks per stage, not " +
           std::to_string(shape.chunks);
  if (shape.microBatches % shape.stages != 0)
    return what + std::to_string(shape.microBatches) +
           " micro-batches are not a multiple of the " +
           std::to_string(shape.stages) + " stages";
  return std::nullopt;
}

std::vector<std::vector<PipelineTask>>
pipelineOrder(PipelineSchedule schedule, const PipelineShape &shape) {
  int64_t p = shape.stages, m = shape.microBatches, v = shape.chunks;
  // Forwards and backwards each stage runs, in their own order.
  int64_t steps = m * v;
  auto forward = [&](int64_t k) {
    if (schedule != PipelineSchedule::Interleaved)
      return PipelineTask{false, k, 0};
    // Megatron-LM's order: P micro-batches through chunk 0, the same P
    // through chunk 1, ..., then the next P.
    return PipelineTask{false, k / (p * v) * p + k % p, k % (p * v) / p};
  };
  auto backward = [&](int64_t k) {
    if (schedule == PipelineSchedule::GPipe)
      return PipelineTask{true, m - 1 - k, 0};
    PipelineTask task = forward(k);
    task.backward = true;
    task.chunk = v - 1 - task.chunk;
    return task;
  };
  std::vector<std::vector<PipelineTask>> order(static_cast<size_t>(p));
  for (int64_t s = 0; s < p; ++s) {
    int64_t warmUp = 0;
    switch (schedule) {
    case PipelineSchedule::GPipe:
      warmUp = steps;
      break;
    case PipelineSchedule::OneFOneB:
      warmUp = p - s - 1;
      break;
    case PipelineSchedule::EagerOneFOneB:
      warmUp = 2 * (p - s - 1);
      break;
    case PipelineSchedule::Interleaved:
      warmUp = (p - s - 1) * 2 + (v - 1) * p;
      break;
    }
    warmUp = std::min(warmUp, steps);
    std::vector<PipelineTask> &tasks = order[static_cast<size_t>(s)];
    for (int64_t k = 0; k < warmUp; ++k)
      tasks.push_back(forward(k));
    for (int64_t k = 0; k < steps - warmUp; ++k) {
      tasks.push_back(forward(warmUp + k));
      tasks.push_back(backward(k));
    }
    for (int64_t k = steps - warmUp; k < steps; ++k)
      tasks.push_back(backward(k));
  }
  return order;
}

std::vector<int64_t>
pipelineInFlight(const std::vector<std::vector<PipelineTask>> &order) {
  std::vector<int64_t> peaks;
  for (const std::vector<PipelineTask> &tasks : order) {
    int64_t held = 0, peak = 0;
    for (const PipelineTask &task : tasks) {
      held += task.backward ? -1 : 1;
      peak = std::max(peak, held);
    }
    peaks.push_back(peak);
  }
  return peaks;
}

std::optional<std::string> checkScheduleChunks(const std::string &name,
                                               int64_t chunks) {
  std::optional<PipelineSchedule> schedule = parsePipelineSchedule(name);
  if (!schedule)
    return std::nullopt;
  bool interleaved = *schedule == PipelineSchedule::Interleaved;
  if (interleaved == (chunks > 1))
    return std::nullopt;
  return interleaved
             ? std::string("schedule 'interleaved' needs stages of several "
                           "model chunks")
             : "schedule '" + name +
                   "' runs stages of one model chunk, but they hold " +
                   std::to_string(chunks) + ": use interleaved";
}

std::vector<int64_t>
pipelineKeptAside(const std::vector<std::vector<PipelineTask>> &order,
                  int64_t chunks) {
  size_t stages = order.size();
  std::vector<int64_t> peaks(stages * static_cast<size_t>(chunks), 0);
  for (size_t s = 0; s < stages; ++s) {
    const std::vector<PipelineTask> &tasks = order[s];
    std::vector<int64_t> aside(static_cast<size_t>(chunks), 0);
    std::set<std::pair<int64_t, int64_t>> kept;
    for (size_t t = 0; t < tasks.size(); ++t) {
      const PipelineTask &task = tasks[t];
      auto chunk = static_cast<size_t>(task.chunk);
      std::pair<int64_t, int64_t> key{task.microBatch, task.chunk};
      if (task.backward) {
        if (kept.erase(key))
          --aside[chunk];
        continue;
      }
      bool backwardNext = t + 1 < tasks.size() && tasks[t + 1].backward &&
                          tasks[t + 1].microBatch == task.microBatch &&
                          tasks[t + 1].chunk == task.chunk;
      if (backwardNext)
        continue;
      kept.insert(key);
      int64_t &peak = peaks[chunk * stages + s];
      peak = std::max(peak, ++aside[chunk]);
    }
  }
  return peaks;
}

std::vector<int64_t>
pipelineInFlightByChunk(const std::vector<std::vector<PipelineTask>> &order,
                        int64_t chunks) {
  size_t stages = order.size();
  std::vector<int64_t> peaks(stages * static_cast<size_t>(chunks), 0);
  for (size_t s = 0; s < stages; ++s) {
    std::vector<int64_t> held(static_cast<size_t>(chunks), 0);
    for (const PipelineTask &task : order[s]) {
      auto chunk = static_cast<size_t>(task.chunk);
      held[chunk] += task.backward ? -1 : 1;
      int64_t &peak = peaks[chunk * stages + s];
      peak = std::max(peak, held[chunk]);
    }
  }
  return peaks;
}

PipelineCosts PipelineCosts::uniform(const PipelineShape &shape, double forward,
                                     double backward, double send) {
  PipelineCosts costs;
  if (shape.stages < 1 || shape.chunks < 1)
    return costs;
  auto virtualStages = static_cast<size_t>(shape.stages * shape.chunks);
  costs.forward.assign(virtualStages, forward);
  costs.backward.assign(virtualStages, backward);
  costs.sendForward.assign(virtualStages - 1, send);
  costs.sendBackward.assign(virtualStages - 1, send);
  return costs;
}

namespace {

/// When a stage's card is busy sending (or receiving): intervals by start,
/// not overlapping. The timeline books them out of time order (one stage
/// runs ahead of another), so a later booking may fill an earlier gap.
class CardCalendar {
public:
  /// The first start at or after `earliest` when `seconds` fit in a gap
  /// of both `a` and `b`.
  static double firstFit(const CardCalendar &a, const CardCalendar &b,
                         double earliest, double seconds) {
    double start = earliest;
    for (bool moved = true; moved;) {
      moved = false;
      for (const CardCalendar *card : {&a, &b}) {
        double after = card->freeFrom(start, seconds);
        if (after > start) {
          start = after;
          moved = true;
        }
      }
    }
    return start;
  }

  /// Books [start, end), which overlaps nothing booked; touching
  /// intervals merge, so that a card sending back to back is one interval
  /// and a later fit skips it at once.
  void book(double start, double end) {
    if (end <= start)
      return;
    auto at =
        std::upper_bound(busy.begin(), busy.end(), start,
                         [](double t, const std::pair<double, double> &b) {
                           return t < b.first;
                         });
    bool joinsNext = at != busy.end() && at->first <= end;
    if (at != busy.begin() && std::prev(at)->second >= start) {
      auto previous = std::prev(at);
      previous->second = std::max(previous->second, end);
      if (joinsNext) {
        previous->second = std::max(previous->second, at->second);
        busy.erase(at);
      }
      return;
    }
    if (joinsNext) {
      at->first = start;
      at->second = std::max(at->second, end);
      return;
    }
    busy.insert(at, {start, end});
  }

private:
  /// The first time at or after `start` from which `seconds` fit before
  /// the next busy interval.
  double freeFrom(double start, double seconds) const {
    // The first interval that ends after `start`.
    auto at =
        std::upper_bound(busy.begin(), busy.end(), start,
                         [](double t, const std::pair<double, double> &b) {
                           return t < b.second;
                         });
    for (; at != busy.end(); ++at) {
      if (start + seconds <= at->first)
        return start;
      start = std::max(start, at->second);
    }
    return start;
  }

  std::vector<std::pair<double, double>> busy;
};

} // namespace

PipelineTimeline
simulatePipeline(const std::vector<std::vector<PipelineTask>> &order,
                 const PipelineShape &shape, const PipelineCosts &costs) {
  constexpr double kNotYet = std::numeric_limits<double>::infinity();
  int64_t p = shape.stages, m = shape.microBatches;
  int64_t virtualStages = p * shape.chunks;
  PipelineTimeline timeline;
  auto boundaries =
      static_cast<size_t>(std::max<int64_t>(virtualStages - 1, 0));
  if (p < 1 || m < 1 || shape.chunks < 1 ||
      static_cast<int64_t>(order.size()) != p ||
      costs.forward.size() != static_cast<size_t>(virtualStages) ||
      costs.backward.size() != static_cast<size_t>(virtualStages) ||
      costs.sendForward.size() != boundaries ||
      costs.sendBackward.size() != boundaries) {
    timeline.seconds = kNotYet;
    return timeline;
  }
  // When micro-batch `mb`'s activation (gradient) is at virtual stage v:
  // ready to run its forward (backward) there.
  auto index = [&](int64_t v, int64_t mb) {
    return static_cast<size_t>(v * m + mb);
  };
  std::vector<double> forwardReady(static_cast<size_t>(virtualStages * m),
                                   kNotYet);
  std::vector<double> backwardReady = forwardReady, forwardDone = forwardReady;
  for (int64_t mb = 0; mb < m; ++mb)
    forwardReady[index(0, mb)] = 0;
  // When each stage's card is busy sending and receiving: a send holds its
  // stage's sending side and the receiver's receiving side (the card sends
  // and receives at once, one message each way at a time, as the simulator
  // holds a move's cards), whichever way it goes and whichever chunk.
  std::vector<CardCalendar> sending(static_cast<size_t>(p)),
      receiving(static_cast<size_t>(p));
  for (size_t s = 0; s < sending.size() && s < costs.sending.size(); ++s)
    sending[s].book(0, costs.sending[s]);
  auto send = [&](int64_t from, int64_t to, double ready, double seconds) {
    CardCalendar &out = sending[static_cast<size_t>(from)];
    CardCalendar &in = receiving[static_cast<size_t>(to)];
    double start = CardCalendar::firstFit(out, in, ready, seconds);
    out.book(start, start + seconds);
    in.book(start, start + seconds);
    return start + seconds;
  };

  timeline.busy.assign(static_cast<size_t>(p), 0);
  timeline.spans.resize(static_cast<size_t>(p));
  timeline.updateWaitsDone.assign(costs.updateWaits.size(), kNotYet);
  // A stage's last task sends its parts of gradients: their moves take
  // the cards when they are free, before sends booked later.
  auto sendGradientParts = [&](int64_t from, double last) {
    for (size_t w = 0; w < costs.updateWaits.size(); ++w) {
      const PipelineCosts::UpdateWait &wait = costs.updateWaits[w];
      if (static_cast<int64_t>(wait.from) != from)
        continue;
      double done = last + wait.seconds;
      if (wait.to != wait.from && static_cast<int64_t>(wait.to) < p &&
          wait.move > 0)
        done = send(from, static_cast<int64_t>(wait.to), last + wait.beforeMove,
                    wait.move) +
               std::max(0.0, wait.seconds - wait.beforeMove - wait.move);
      timeline.updateWaitsDone[w] = done;
    }
  };
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<double> free(static_cast<size_t>(p), 0);
  for (size_t s = 0; s < free.size() && s < costs.start.size(); ++s)
    free[s] = costs.start[s];
  // Stages that may run their next task: every stage at first, then the
  // stages a finished task handed something to, so that the work is in
  // proportion to the tasks, not to rounds over all stages.
  std::vector<int64_t> work;
  std::vector<char> queued(static_cast<size_t>(p), 1);
  for (int64_t s = p - 1; s >= 0; --s)
    work.push_back(s);
  auto wake = [&](int64_t stage) {
    if (!queued[static_cast<size_t>(stage)]) {
      queued[static_cast<size_t>(stage)] = 1;
      work.push_back(stage);
    }
  };
  while (!work.empty()) {
    int64_t s = work.back();
    work.pop_back();
    queued[static_cast<size_t>(s)] = 0;
    const std::vector<PipelineTask> &tasks = order[static_cast<size_t>(s)];
    size_t &position = next[static_cast<size_t>(s)];
    for (; position < tasks.size(); ++position) {
      const PipelineTask &task = tasks[position];
      if (task.microBatch < 0 || task.microBatch >= m || task.chunk < 0 ||
          task.chunk >= shape.chunks)
        break;
      int64_t v = task.chunk * p + s;
      size_t at = index(v, task.microBatch);
      double ready = task.backward
                         ? std::max(backwardReady[at], forwardDone[at])
                         : forwardReady[at];
      if (ready == kNotYet)
        break;
      double start = std::max(ready, free[static_cast<size_t>(s)]);
      double seconds = (task.backward ? costs.backward
                                      : costs.forward)[static_cast<size_t>(v)];
      double end = start + seconds;
      free[static_cast<size_t>(s)] = end;
      timeline.busy[static_cast<size_t>(s)] += seconds;
      timeline.spans[static_cast<size_t>(s)].emplace_back(start, end);
      timeline.seconds = std::max(timeline.seconds, end);
      // Hand the result on: the next virtual stage's forward, the previous
      // one's backward, or this one's backward after the last forward. A
      // virtual stage on the same stage (one stage, several chunks) needs
      // no send.
      if (!task.backward) {
        forwardDone[at] = end;
        if (v + 1 == virtualStages) {
          backwardReady[at] = end;
        } else {
          double arrives = end;
          if (p > 1)
            arrives = send(s, (v + 1) % p, end,
                           costs.sendForward[static_cast<size_t>(v)]);
          forwardReady[index(v + 1, task.microBatch)] = arrives;
          wake((v + 1) % p);
        }
      } else if (v > 0) {
        double arrives = end;
        if (p > 1)
          arrives = send(s, (v - 1) % p, end,
                         costs.sendBackward[static_cast<size_t>(v - 1)]);
        backwardReady[index(v - 1, task.microBatch)] = arrives;
        wake((v - 1) % p);
      }
      // The stage's parts of gradients leave after its last task's send.
      if (position + 1 == tasks.size())
        sendGradientParts(s, end);
    }
  }
  // An order that waits on itself leaves tasks unrun.
  for (int64_t s = 0; s < p; ++s)
    if (next[static_cast<size_t>(s)] < order[static_cast<size_t>(s)].size())
      timeline.seconds = kNotYet;
  return timeline;
}

PipelineTimeline simulateStep(PipelineSchedule schedule,
                              const PipelineShape &shape,
                              const PipelineCosts &costs,
                              const std::vector<double> &update) {
  PipelineTimeline timeline =
      simulatePipeline(pipelineOrder(schedule, shape), shape, costs);
  if (!std::isfinite(timeline.seconds))
    return timeline;
  // A stage updates after its own last task, as the executor runs it: no
  // stage waits for another's backward (a later stage's update runs while
  // an earlier one finishes its backwards), but for a part of a gradient
  // another stage sends it after its own.
  size_t stages = timeline.busy.size();
  std::vector<double> last(stages, 0);
  for (size_t s = 0; s < stages; ++s)
    last[s] = timeline.spans[s].empty() ? 0 : timeline.spans[s].back().second;
  double step = timeline.seconds;
  for (size_t s = 0; s < stages && s < update.size(); ++s) {
    step = std::max(step, last[s] + update[s]);
    timeline.busy[s] += update[s];
  }
  for (size_t w = 0; w < costs.updateWaits.size(); ++w)
    if (costs.updateWaits[w].from < stages && costs.updateWaits[w].to < stages)
      step = std::max(step, timeline.updateWaitsDone[w]);
  timeline.seconds = step;
  return timeline;
}

std::string drawPipeline(const std::vector<std::vector<PipelineTask>> &order,
                         const PipelineShape &shape,
                         const PipelineTimeline &timeline, int64_t columns) {
  auto at = [&](double seconds) {
    return static_cast<size_t>(
        std::llround(seconds * static_cast<double>(columns)));
  };
  size_t width = at(timeline.seconds);
  std::string text;
  for (size_t s = 0; s < order.size(); ++s) {
    std::string row(width, '.');
    for (size_t i = 0; i < order[s].size() && i < timeline.spans[s].size();
         ++i) {
      const PipelineTask &task = order[s][i];
      size_t begin = at(timeline.spans[s][i].first),
             end = at(timeline.spans[s][i].second);
      std::string label =
          (task.backward ? "B" : "F") + std::to_string(task.microBatch);
      if (shape.chunks > 1)
        label += static_cast<char>('a' + task.chunk);
      for (size_t c = begin; c < end && c < width; ++c)
        row[c] = c - begin < label.size() ? label[c - begin] : ' ';
    }
    text += "stage " + std::to_string(s) + " |" + row + "|\n";
  }
  return text;
}

std::vector<size_t> partitionRuns(const std::vector<double> &weights,
                                  size_t parts,
                                  const std::vector<double> &speeds) {
  size_t n = weights.size();
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + weights[i];
  auto speed = [&](size_t k) { return k < speeds.size() ? speeds[k] : 1.0; };
  // heaviest[k][i]: the least longest time (weight over its part's speed)
  // cutting the first i weights into k + 1 runs; start[k][i] the first
  // weight of its last run. Every j is tried: with parts of different
  // speeds, heaviest[k - 1][j] need not grow with j (a longer prefix may
  // put a heavy weight on a faster part), so no search by bisection.
  std::vector<std::vector<double>> heaviest(parts,
                                            std::vector<double>(n + 1, 0));
  std::vector<std::vector<size_t>> start(parts, std::vector<size_t>(n + 1, 0));
  for (size_t i = 0; i <= n; ++i)
    heaviest[0][i] = prefix[i] / speed(0);
  for (size_t k = 1; k < parts; ++k)
    for (size_t i = k + 1; i <= n; ++i) {
      size_t best = k;
      double least = std::numeric_limits<double>::infinity();
      for (size_t j = k; j < i; ++j) {
        double cost =
            std::max(heaviest[k - 1][j], (prefix[i] - prefix[j]) / speed(k));
        if (cost < least) {
          least = cost;
          best = j;
        }
      }
      heaviest[k][i] = least;
      start[k][i] = best;
    }
  std::vector<size_t> cuts(parts, 0);
  size_t end = n;
  for (size_t k = parts - 1; k > 0; --k) {
    cuts[k] = start[k][end];
    end = cuts[k];
  }
  return cuts;
}

double longestRun(const std::vector<double> &weights,
                  const std::vector<size_t> &firsts,
                  const std::vector<double> &speeds) {
  double longest = 0;
  for (size_t k = 0; k < firsts.size(); ++k) {
    size_t end = k + 1 < firsts.size() ? firsts[k + 1] : weights.size();
    double weight = 0;
    for (size_t i = firsts[k]; i < end; ++i)
      weight += weights[i];
    longest = std::max(longest, weight / (k < speeds.size() ? speeds[k] : 1.0));
  }
  return longest;
}

} // namespace parplan::schedule
