//===- Resharding.h - SBP transitions as typed steps ------------*- C++ -*-===//
//
// The one source of truth for how a tensor laid out by one nd-SBP comes to
// be laid out by another on the same mesh: a sequence of typed steps, each
// changing the entry of one mesh axis by a collective over the devices along
// that axis, or by a local computation. The cost model prices these steps,
// expand-boxing writes them into the IR as sbp step ops, whose verifiers use
// checkReshardStep, and lower-to-plan turns each into plan collectives and
// kernels. docs/resharding.md has the table and the rules.
//
// MLIR-free, like the slicing math it builds on.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SUPPORT_RESHARDING_H
#define PARPLAN_SUPPORT_RESHARDING_H

#include "parplan/Sbp/Sbp.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parplan {

/// What one step does along its mesh axis of n devices:
///
/// | kind            | entry changes        | how                          |
/// |-----------------|----------------------|------------------------------|
/// | AllGather       | S(d) -> B            | all-gather of the parts      |
/// | ReduceScatter   | P(r) -> S(d)         | reduce-scatter by r          |
/// | AllReduce       | P(r) -> B            | all-reduce by r              |
/// | AllToAll        | S(d) -> S(e), d != e | all-to-all                   |
/// | Slice           | B -> S(d)            | local: keep the own part     |
/// | ToPartial       | S(d) or B -> P(sum)  | local: own part, zeros else  |
/// |                 | B -> P(max), P(min)  | local: every device keeps x  |
enum class ReshardKind {
  AllGather,
  ReduceScatter,
  AllReduce,
  AllToAll,
  Slice,
  ToPartial
};

/// Whether the devices along the step's mesh axis exchange parts of a
/// split (all-gather, reduce-scatter, all-to-all): parts cut balanced, so
/// never along an axis of uneven shares (Sbp.h MeshShares).
bool exchangesParts(ReshardKind kind);

/// Whether a step of a gradient's boxing that only parameter updates read
/// runs on the executor's gradients stream (lower-to-plan's feeds_update,
/// sbp-assign's pricing of it): an all-reduce, or a hierarchical
/// all-reduce's reduce-scatter, all-reduce and all-gather.
bool reducesOnGradientsStream(ReshardKind kind);

/// Whether a step of a parameter's boxing for the forward gathers it
/// ahead of its readers: an all-gather. A boxing of such steps alone runs
/// on the gradients stream (lower-to-plan's prefetchesParameter,
/// sbp-assign's pricing of it, docs/cost-model.md#overlap). Not the
/// to-partial and all-reduce that gather parts uneven along a mesh axis
/// of shares: the to-partial kernel between them would hold the compute
/// stream at the step's start until the gradients stream reached it
/// (whale-v100-p100 doubled at batch 128 on a 32x2 mesh, the biases'
/// 24 such gathers held it 7.7 ms).
bool gathersParameter(ReshardKind kind);

/// "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "slice",
/// "to_partial": the sbp op mnemonics.
const char *toString(ReshardKind kind);

/// True for the kinds that exchange data between devices.
bool isCollective(ReshardKind kind);

/// One step: along mesh axis `meshAxis`, layout `from` becomes `to`; the two
/// differ at that axis only.
struct ReshardStep {
  ReshardKind kind = ReshardKind::AllGather;
  int64_t meshAxis = 0;
  NdSbp from;
  NdSbp to;

  /// The tensor dimension the step gathers, scatters or slices (the split
  /// entry's axis); for AllToAll the dimension it splits, with
  /// concatAxis() the one it concatenates. -1 when no entry is split.
  int64_t tensorAxis() const;
  int64_t concatAxis() const;
  /// How partial values combine, for AllReduce, ReduceScatter and ToPartial.
  ReduceKind reduce() const;
};

/// Of a gradient's boxing whose steps reduce on the gradients stream, how
/// many leading steps stay within the positions along a mesh axis of
/// uneven shares (`sharesAxis`: steps along the other axes) before one
/// along it joins them; 0 where none does, or where a step before it is
/// not such a reduction. After the last boxing of an activation in the
/// program, lower-to-plan runs them on the communication stream (idle by
/// then), the joining steps on the gradients stream: a position faster
/// than the slowest would otherwise start them only once the gradients
/// stream's earlier joining steps were done, which wait for the slowest
/// (sbp-assign's timeline prices them so).
size_t stepsWithinPositions(const std::vector<ReshardStep> &steps,
                            int64_t sharesAxis);

/// Whether changing `from` into `to` only all-reduces: every mesh axis
/// keeps its entry or goes from P(r) to B (at least one does). Such a
/// change of a sum over micro-batches runs in place, right where the sum
/// is complete (insert-boxing, docs/cost-model.md#overlap).
bool allReducesOnly(const NdSbp &from, const NdSbp &to);

/// Where insert-boxing places the boxing of a value read in layout `to`:
/// just before its reader when the value is a forward value the backward
/// reads (`forwardReadByBackward`), or a sum over micro-batches
/// (`sumOverMicroBatches`) that the boxing does more than all-reduce (into
/// a buffer of its own, whole for one reader at a time); right after its
/// producer otherwise. sbp-assign prices the two streams by these places.
bool boxesBeforeReader(bool forwardReadByBackward, bool sumOverMicroBatches,
                       const NdSbp &from, const NdSbp &to);

/// The kind of the single step that changes `from` into `to` along one mesh
/// axis; std::nullopt when no single step does (equal entries, P(a) ->
/// P(b), S -> P(max), B -> P(prod)).
std::optional<ReshardKind> reshardKind(const Sbp &from, const Sbp &to);

/// Why changing `from` into `to` along `meshAxis` of `meshShape` is not one
/// step on local blocks; std::nullopt when it is. A step is one when the
/// layouts differ at `meshAxis` only, reshardKind() names it, and no mesh
/// axis inside `meshAxis` (a later one, of more than one device) splits a
/// tensor dimension the step splits or gathers: the devices along
/// `meshAxis` then hold, or will hold, the balanced parts of one block, as
/// the collectives cut them (docs/slicing.md).
std::optional<std::string>
checkReshardStep(const NdSbp &from, const NdSbp &to, int64_t meshAxis,
                 const std::vector<int64_t> &meshShape);

/// The price of a step, in any unit that adds up (the cost model uses
/// seconds).
using ReshardStepCost = std::function<double(const ReshardStep &)>;

/// The cheapest sequence of steps from `from` to `to` on `meshShape`, by
/// `cost`: a shortest path over the layouts in which each mesh axis holds
/// its source entry, its destination entry or B (the detour an axis takes
/// when its own change needs two steps, or when it splits a dimension that
/// an outer axis must change). Ties go to fewer steps, then to the first
/// found; the result depends on nothing else. Empty when the layouts are
/// equal; std::nullopt when no sequence exists (a destination entry P(prod)
/// that the source does not already hold, or layouts of another rank than
/// the mesh). Steps along axes of one device are included: they move
/// nothing but keep the layout the IR states exact.
///
/// Along the axes `wholeOnly` marks (axes of uneven shares, Sbp.h
/// MeshShares) no step exchanges parts (exchangesParts); an axis there may
/// also hold P(sum) on the way, so that a split is gathered as its
/// zero-padded part summed (to_partial, all_reduce) and a partial sum
/// scattered as the sum cut (all_reduce, slice).
///
/// With `scatterDim` (a tensor dimension that the mesh's devices may split
/// evenly, or -1), an axis that turns P(sum) into B may also
/// hold S(scatterDim) on the way: reduce-scatter, then all-gather, the two
/// halves of a ring all-reduce, so that another axis reduces the scattered
/// part between them (a hierarchical all-reduce: the slow links carry a
/// fast axis's share of the bytes, not all of them).
std::optional<std::vector<ReshardStep>> planResharding(
    const NdSbp &from, const NdSbp &to, const std::vector<int64_t> &meshShape,
    const ReshardStepCost &cost, const std::vector<bool> &wholeOnly = {},
    int64_t scatterDim = -1);

} // namespace parplan

#endif // PARPLAN_SUPPORT_RESHARDING_H
