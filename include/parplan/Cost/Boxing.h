//===- Boxing.h - cost of SBP transitions -----------------------*- C++ -*-===//
//
// OneFlow's boxing: the collective each change of SBP needs along one mesh
// axis, and n-D transitions as per-axis steps in the cheapest order.
// docs/cost-model.md has the table and the formulas.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_BOXING_H
#define PARPLAN_COST_BOXING_H

#include "parplan/Cost/Collectives.h"
#include "parplan/Support/Sbp.h"

#include <optional>
#include <string>
#include <vector>

namespace parplan::cost {

/// One step of a transition: along mesh axis `meshAxis`, `from` becomes
/// `to` by `collective` (none for a local slice or relabeling) on a buffer
/// of `bytes`, taking `time` seconds.
struct BoxingStep {
  int64_t meshAxis = 0;
  Sbp from;
  Sbp to;
  std::optional<Collective> collective;
  double bytes = 0;
  double time = 0;
};

struct BoxingCost {
  double time = 0;
  std::vector<BoxingStep> steps;
};

/// The steps that change `from` into `to` along one mesh axis of `n`
/// devices on `link`, for a tensor of which the devices of that axis hold
/// `groupBytes` together (its logical bytes divided by the splits of the
/// other axes). Empty when nothing changes; std::nullopt when the change is
/// impossible.
std::optional<std::vector<BoxingStep>>
axisTransition(const Sbp &from, const Sbp &to, int64_t n, double groupBytes,
               const Link &link, int64_t meshAxis = 0);

/// The cheapest way to change a tensor of `tensorBytes` logical bytes from
/// `from` to `to` over a mesh of `meshShape` whose axes cross `axisLinks`:
/// axes change one at a time, in the order that costs least. std::nullopt
/// when no order can do it.
std::optional<BoxingCost> boxingCost(const NdSbp &from, const NdSbp &to,
                                     double tensorBytes,
                                     const std::vector<int64_t> &meshShape,
                                     const std::vector<Link> &axisLinks);

} // namespace parplan::cost

#endif // PARPLAN_COST_BOXING_H
