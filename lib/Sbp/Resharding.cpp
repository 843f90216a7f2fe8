//===- Resharding.cpp - SBP transitions as typed steps --------------------===//

#include "parplan/Sbp/Resharding.h"

#include <algorithm>
#include <queue>
#include <tuple>

using namespace parplan;

const char *parplan::toString(ReshardKind kind) {
  switch (kind) {
  case ReshardKind::AllGather:
    return "all_gather";
  case ReshardKind::ReduceScatter:
    return "reduce_scatter";
  case ReshardKind::AllReduce:
    return "all_reduce";
  case ReshardKind::AllToAll:
    return "all_to_all";
  case ReshardKind::Slice:
    return "slice";
  case ReshardKind::ToPartial:
    return "to_partial";
  }
  return "?";
}

bool parplan::isCollective(ReshardKind kind) {
  return kind != ReshardKind::Slice && kind != ReshardKind::ToPartial;
}

bool parplan::allReducesOnly(const NdSbp &from, const NdSbp &to) {
  if (from.size() != to.size() || from == to)
    return false;
  for (size_t axis = 0; axis < from.size(); ++axis)
    if (from[axis] != to[axis] &&
        reshardKind(from[axis], to[axis]) != ReshardKind::AllReduce)
      return false;
  return true;
}

bool parplan::boxesBeforeReader(bool forwardReadByBackward,
                                bool sumOverMicroBatches, const NdSbp &from,
                                const NdSbp &to) {
  return forwardReadByBackward ||
         (sumOverMicroBatches && !allReducesOnly(from, to));
}

int64_t ReshardStep::tensorAxis() const {
  const Sbp &before = from[meshAxis], &after = to[meshAxis];
  if (after.isSplit())
    return after.axis;
  return before.isSplit() ? before.axis : -1;
}

int64_t ReshardStep::concatAxis() const {
  const Sbp &before = from[meshAxis];
  return kind == ReshardKind::AllToAll ? before.axis : -1;
}

ReduceKind ReshardStep::reduce() const {
  const Sbp &before = from[meshAxis], &after = to[meshAxis];
  return after.isPartial() ? after.reduce : before.reduce;
}

std::optional<ReshardKind> parplan::reshardKind(const Sbp &from,
                                                const Sbp &to) {
  if (from == to)
    return std::nullopt;
  switch (from.kind) {
  case SbpKind::Split:
    if (to.isBroadcast())
      return ReshardKind::AllGather;
    if (to.isSplit())
      return ReshardKind::AllToAll;
    // Zeros outside the own part add up to the whole; no identity of max,
    // min or prod is written there.
    if (to.reduce == ReduceKind::Sum)
      return ReshardKind::ToPartial;
    return std::nullopt;
  case SbpKind::Broadcast:
    if (to.isSplit())
      return ReshardKind::Slice;
    // Sum: one device keeps the value, the others zeros. Max and min:
    // every device keeps it, as max(x, x) = x. Prod would need ones.
    if (to.reduce == ReduceKind::Prod)
      return std::nullopt;
    return ReshardKind::ToPartial;
  case SbpKind::Partial:
    if (to.isBroadcast())
      return ReshardKind::AllReduce;
    if (to.isSplit())
      return ReshardKind::ReduceScatter;
    return std::nullopt; // P(a) -> P(b) goes through B.
  }
  return std::nullopt;
}

namespace {

/// The problem with one step, or an empty string; `explain` false skips
/// building the message (the planner only needs the verdict).
std::string stepProblem(const NdSbp &from, const NdSbp &to, int64_t meshAxis,
                        const std::vector<int64_t> &meshShape, bool explain) {
  int64_t rank = static_cast<int64_t>(meshShape.size());
  if (static_cast<int64_t>(from.size()) != rank ||
      static_cast<int64_t>(to.size()) != rank)
    return explain
               ? "the layouts have " + std::to_string(from.size()) + " and " +
                     std::to_string(to.size()) + " entries for a mesh of " +
                     std::to_string(rank) + " axes"
               : "x";
  if (meshAxis < 0 || meshAxis >= rank)
    return explain ? "mesh axis " + std::to_string(meshAxis) +
                         " is not an axis of a mesh of " +
                         std::to_string(rank) + " axes"
                   : "x";
  for (int64_t axis = 0; axis < rank; ++axis)
    if (axis != meshAxis && from[axis] != to[axis])
      return explain ? "the layouts also differ on mesh axis " +
                           std::to_string(axis) + "; a step changes one"
                     : "x";
  const Sbp &before = from[meshAxis], &after = to[meshAxis];
  if (!reshardKind(before, after))
    return explain
               ? "no single step turns " + before.str() + " into " + after.str()
               : "x";
  for (int64_t inner = meshAxis + 1; inner < rank; ++inner) {
    const Sbp &entry = from[inner];
    if (!entry.isSplit() || meshShape[inner] <= 1)
      continue;
    for (const Sbp *changed : {&before, &after})
      if (changed->isSplit() && changed->axis == entry.axis)
        return explain ? "tensor dimension " + std::to_string(entry.axis) +
                             " is also split by the inner mesh axis " +
                             std::to_string(inner) +
                             "; its parts along mesh axis " +
                             std::to_string(meshAxis) + " are not whole blocks"
                       : "x";
  }
  return {};
}

} // namespace

std::optional<std::string>
parplan::checkReshardStep(const NdSbp &from, const NdSbp &to, int64_t meshAxis,
                          const std::vector<int64_t> &meshShape) {
  std::string problem = stepProblem(from, to, meshAxis, meshShape, true);
  if (problem.empty())
    return std::nullopt;
  return problem;
}

bool parplan::reducesOnGradientsStream(ReshardKind kind) {
  return kind == ReshardKind::AllReduce || kind == ReshardKind::ReduceScatter ||
         kind == ReshardKind::AllGather;
}

size_t parplan::stepsWithinPositions(const std::vector<ReshardStep> &steps,
                                     int64_t sharesAxis) {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!reducesOnGradientsStream(steps[i].kind))
      return 0;
    if (steps[i].meshAxis == sharesAxis)
      return i;
  }
  return 0;
}

bool parplan::gathersParameter(ReshardKind kind) {
  return kind == ReshardKind::AllGather;
}

bool parplan::exchangesParts(ReshardKind kind) {
  return kind == ReshardKind::AllGather || kind == ReshardKind::ReduceScatter ||
         kind == ReshardKind::AllToAll;
}

std::optional<std::vector<ReshardStep>> parplan::planResharding(
    const NdSbp &from, const NdSbp &to, const std::vector<int64_t> &meshShape,
    const ReshardStepCost &cost, const std::vector<bool> &wholeOnly,
    int64_t scatterDim) {
  size_t rank = meshShape.size();
  if (from.size() != rank || to.size() != rank)
    return std::nullopt;
  if (from == to)
    return std::vector<ReshardStep>{};
  // The entries each axis may hold on the way: its source, its destination
  // and B. An axis that keeps a split may still have to give it up for a
  // while, when an outer axis changes the same dimension.
  auto isWholeOnly = [&](size_t axis) {
    return axis < wholeOnly.size() && wholeOnly[axis];
  };
  std::vector<std::vector<Sbp>> entries(rank);
  for (size_t axis = 0; axis < rank; ++axis) {
    std::vector<Sbp> &options = entries[axis];
    options.push_back(from[axis]);
    bool keeps = from[axis] == to[axis];
    if (!keeps)
      options.push_back(to[axis]);
    if ((!keeps || (from[axis].isSplit() && meshShape[axis] > 1)) &&
        std::find(options.begin(), options.end(), Sbp::broadcast()) ==
            options.end())
      options.push_back(Sbp::broadcast());
    if (isWholeOnly(axis) && (!keeps || from[axis].isSplit()) &&
        std::find(options.begin(), options.end(), Sbp::partial()) ==
            options.end())
      options.push_back(Sbp::partial());
    Sbp scattered = Sbp::split(scatterDim);
    if (scatterDim >= 0 && !isWholeOnly(axis) && meshShape[axis] > 1 &&
        from[axis] == Sbp::partial() && to[axis].isBroadcast() &&
        std::find(options.begin(), options.end(), scattered) == options.end())
      options.push_back(scattered);
  }
  // A state is a choice per axis, numbered in mixed radix (the last axis
  // varies fastest); the search runs in the search's inner loop, so every
  // layout is decoded once and moves are arithmetic on the numbers.
  std::vector<size_t> stride(rank, 1);
  for (size_t axis = rank; axis-- > 1;)
    stride[axis - 1] = stride[axis] * entries[axis].size();
  size_t states = stride[0] * entries[0].size();
  std::vector<NdSbp> layouts(states, NdSbp(rank));
  std::vector<std::vector<size_t>> choices(states, std::vector<size_t>(rank));
  for (size_t code = 0; code < states; ++code)
    for (size_t axis = 0; axis < rank; ++axis) {
      size_t choice = code / stride[axis] % entries[axis].size();
      choices[code][axis] = choice;
      layouts[code][axis] = entries[axis][choice];
    }
  size_t source = 0, target = 0;
  for (size_t axis = 0; axis < rank; ++axis)
    target += stride[axis] *
              (std::find(entries[axis].begin(), entries[axis].end(), to[axis]) -
               entries[axis].begin());

  // Dijkstra, ordered by (cost, steps, state number) so that ties resolve
  // the same way on every run.
  using Entry = std::tuple<double, size_t, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  std::vector<std::optional<std::pair<double, size_t>>> best(states);
  std::vector<std::pair<size_t, size_t>> previous(states); // state, axis
  std::vector<bool> done(states, false);
  best[source] = {0.0, 0};
  queue.emplace(0.0, 0, source);
  ReshardStep step;
  auto makeStep = [&](size_t code, size_t next, size_t axis) {
    step.kind = *reshardKind(layouts[code][axis], layouts[next][axis]);
    step.meshAxis = static_cast<int64_t>(axis);
    step.from = layouts[code];
    step.to = layouts[next];
  };
  while (!queue.empty()) {
    auto [distance, steps, code] = queue.top();
    queue.pop();
    if (done[code])
      continue;
    done[code] = true;
    if (code == target)
      break;
    for (size_t axis = 0; axis < rank; ++axis) {
      size_t current = choices[code][axis];
      for (size_t choice = 0; choice < entries[axis].size(); ++choice) {
        if (choice == current)
          continue;
        size_t next = code - current * stride[axis] + choice * stride[axis];
        if (done[next] ||
            !stepProblem(layouts[code], layouts[next],
                         static_cast<int64_t>(axis), meshShape, false)
                 .empty())
          continue;
        makeStep(code, next, axis);
        if (isWholeOnly(axis) && exchangesParts(step.kind))
          continue;
        auto candidate = std::make_pair(distance + cost(step), steps + 1);
        if (best[next] && *best[next] <= candidate)
          continue;
        best[next] = candidate;
        previous[next] = {code, axis};
        queue.emplace(candidate.first, candidate.second, next);
      }
    }
  }
  if (!done[target])
    return std::nullopt;
  std::vector<ReshardStep> path;
  for (size_t code = target; code != source; code = previous[code].first) {
    makeStep(previous[code].first, code, previous[code].second);
    path.push_back(step);
  }
  std::reverse(path.begin(), path.end());
  return path;
}
