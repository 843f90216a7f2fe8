//===- Boxing.h - cost of SBP transitions -----------------------*- C++ -*-===//
//
// OneFlow's boxing priced: the steps of a resharding (Sbp/Resharding.h,
// the one decomposition the IR and the lowering also use), each a
// collective over the devices along one mesh axis or a local computation,
// in the cheapest sequence. docs/cost-model.md has the table and the
// formulas.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_BOXING_H
#define PARPLAN_COST_BOXING_H

#include "parplan/Cost/Collectives.h"
#include "parplan/Sbp/Resharding.h"

#include <optional>
#include <vector>

namespace parplan::cost {

/// A priced step of a resharding.
struct BoxingStep {
  ReshardStep step;
  /// The collective the step runs; std::nullopt for a local step.
  std::optional<Collective> collective;
  /// The buffer the collective formula takes (Collectives.h): the bytes
  /// the devices along the step's axis hold together (all-gather output,
  /// all-reduce and reduce-scatter input), or one device's part of them
  /// (all-to-all). On uneven splits, the mean over the mesh's devices; for
  /// an all-to-all of uneven parts, the buffer whose ring volume is the
  /// mean of what the devices send.
  double bytes = 0;
  /// Bytes each device sends, the mean over the mesh's devices
  /// (bytesSentPerDevice of `bytes`); 0 for local steps. What a lowered
  /// plan sends, averaged over its devices, is exactly this.
  double bytesSent = 0;
  /// How long the step takes: its collective on `bytes`, but for an
  /// all-to-all of uneven parts, on the largest part (the devices wait for
  /// the one with the most to send).
  double time = 0;
};

struct BoxingCost {
  double time = 0;
  std::vector<BoxingStep> steps;

  /// The sum of the steps' bytesSent.
  double bytesSent() const;
};

/// A logical tensor as the cost model sees it: its shape and the bytes of
/// one element as moved.
struct TensorExtent {
  std::vector<int64_t> shape;
  double elementBytes = 4;

  double bytes() const;
};

/// A mesh of uneven shares along one axis, position by position along
/// it: each position's groups along the other axes hold its own part of a
/// tensor split along the shares' axis and cross its own devices' links
/// (an A100 group on NVLink with 18 rows, a T4 group on PCIe with 7), so a
/// step along another axis lasts as long as the slowest position's
/// collective, not the mean part's over the mesh's slowest link.
/// `fractions` and `links` pair up; positions alike (of one part and the
/// same links) may share an entry.
struct PositionLinks {
  /// The shares' axis.
  int64_t axis = -1;
  /// Each position's part of a tensor split along `axis`, as a fraction of
  /// the whole.
  std::vector<double> fractions;
  /// Each position's links, per mesh axis (cost::axisLink on the position's
  /// devices; the shares' axis's entry unused).
  std::vector<std::vector<Link>> links;
};

/// Prices `step` for `tensor` on a mesh of `meshShape` whose axes cross
/// `axisLinks`; with `positions`, a step along another axis than theirs by
/// the slowest position.
BoxingStep priceStep(const ReshardStep &step, const TensorExtent &tensor,
                     const std::vector<int64_t> &meshShape,
                     const std::vector<Link> &axisLinks,
                     const PositionLinks *positions = nullptr);

/// The cheapest way to change `tensor` from `from` to `to` over a mesh of
/// `meshShape` whose axes cross `axisLinks` (planResharding priced by
/// priceStep, by position with `positions`), without a step that exchanges
/// parts along an axis of uneven `shares` (exchangesParts). std::nullopt when
/// no sequence of steps can do it.
std::optional<BoxingCost> boxingCost(const NdSbp &from, const NdSbp &to,
                                     const TensorExtent &tensor,
                                     const std::vector<int64_t> &meshShape,
                                     const std::vector<Link> &axisLinks,
                                     const MeshShares &shares = {},
                                     const PositionLinks *positions = nullptr);

} // namespace parplan::cost

#endif // PARPLAN_COST_BOXING_H
