//===- Boxing.cpp - cost of SBP transitions -------------------------------===//

#include "parplan/Cost/Boxing.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace parplan;
using namespace parplan::cost;

namespace {

BoxingStep step(int64_t axis, const Sbp &from, const Sbp &to,
                std::optional<Collective> collective, int64_t n, double bytes,
                const Link &link) {
  BoxingStep result{axis, from, to, collective, bytes, 0};
  if (collective)
    result.time = collectiveTime(*collective, n, bytes, link);
  return result;
}

/// The bytes the devices along `axis` hold together in state `sbp`.
double groupBytes(const NdSbp &sbp, const std::vector<int64_t> &meshShape,
                  int64_t axis, double tensorBytes) {
  double bytes = tensorBytes;
  for (size_t other = 0; other < sbp.size(); ++other)
    if (static_cast<int64_t>(other) != axis && sbp[other].isSplit())
      bytes /= static_cast<double>(meshShape[other]);
  return bytes;
}

} // namespace

std::optional<std::vector<BoxingStep>>
parplan::cost::axisTransition(const Sbp &from, const Sbp &to, int64_t n,
                              double bytes, const Link &link, int64_t axis) {
  std::vector<BoxingStep> steps;
  if (from == to || n <= 1)
    return steps;
  auto local = [&] {
    steps.push_back(step(axis, from, to, std::nullopt, n, bytes, link));
  };
  switch (from.kind) {
  case SbpKind::Split:
    if (to.isBroadcast())
      steps.push_back(
          step(axis, from, to, Collective::AllGather, n, bytes, link));
    else if (to.isSplit()) // Each device re-cuts its 1/n part.
      steps.push_back(
          step(axis, from, to, Collective::AllToAll, n, bytes / n, link));
    else // S -> P: keep the own part, zeros elsewhere.
      local();
    return steps;
  case SbpKind::Broadcast: // B -> S slices, B -> P keeps one copy: local.
    local();
    return steps;
  case SbpKind::Partial:
    if (to.isBroadcast()) {
      steps.push_back(
          step(axis, from, to, Collective::AllReduce, n, bytes, link));
    } else if (to.isSplit()) {
      steps.push_back(
          step(axis, from, to, Collective::ReduceScatter, n, bytes, link));
    } else { // P(a) -> P(b): complete the reduction first, then relabel.
      steps.push_back(step(axis, from, Sbp::broadcast(), Collective::AllReduce,
                           n, bytes, link));
      steps.push_back(
          step(axis, Sbp::broadcast(), to, std::nullopt, n, bytes, link));
    }
    return steps;
  }
  return std::nullopt;
}

std::optional<BoxingCost> parplan::cost::boxingCost(
    const NdSbp &from, const NdSbp &to, double tensorBytes,
    const std::vector<int64_t> &meshShape, const std::vector<Link> &axisLinks) {
  if (from.size() != meshShape.size() || to.size() != meshShape.size() ||
      axisLinks.size() != meshShape.size())
    return std::nullopt;
  std::vector<int64_t> changing;
  for (size_t axis = 0; axis < from.size(); ++axis)
    if (from[axis] != to[axis])
      changing.push_back(static_cast<int64_t>(axis));
  std::optional<BoxingCost> best;
  // Few mesh axes (at most 4 or so): try every order.
  do {
    NdSbp state = from;
    BoxingCost cost;
    bool possible = true;
    for (int64_t axis : changing) {
      std::optional<std::vector<BoxingStep>> steps =
          axisTransition(state[axis], to[axis], meshShape[axis],
                         groupBytes(state, meshShape, axis, tensorBytes),
                         axisLinks[axis], axis);
      if (!steps) {
        possible = false;
        break;
      }
      for (const BoxingStep &s : *steps)
        cost.time += s.time;
      cost.steps.insert(cost.steps.end(), steps->begin(), steps->end());
      state[axis] = to[axis];
    }
    if (possible && (!best || cost.time < best->time))
      best = cost;
  } while (std::next_permutation(changing.begin(), changing.end()));
  return best;
}
