//===- Boxing.cpp - cost of SBP transitions -------------------------------===//

#include "parplan/Cost/Boxing.h"

#include <algorithm>
#include <limits>

using namespace parplan;
using namespace parplan::cost;

namespace {

std::optional<Collective> collectiveOf(ReshardKind kind) {
  switch (kind) {
  case ReshardKind::AllGather:
    return Collective::AllGather;
  case ReshardKind::ReduceScatter:
    return Collective::ReduceScatter;
  case ReshardKind::AllReduce:
    return Collective::AllReduce;
  case ReshardKind::AllToAll:
    return Collective::AllToAll;
  case ReshardKind::Slice:
  case ReshardKind::ToPartial:
    return std::nullopt;
  }
  return std::nullopt;
}

/// The bytes the devices along `axis` hold together in `layout`: the
/// logical bytes divided by the splits of the other axes. Balanced parts
/// add up to the whole, so this is the exact mean over the mesh.
double groupBytes(const NdSbp &layout, const std::vector<int64_t> &meshShape,
                  int64_t axis, double tensorBytes) {
  double bytes = tensorBytes;
  for (size_t other = 0; other < layout.size(); ++other)
    if (static_cast<int64_t>(other) != axis && layout[other].isSplit())
      bytes /= static_cast<double>(meshShape[other]);
  return bytes;
}

/// What the devices send in an all-to-all: the mean over the mesh, and the
/// most any one device sends.
struct AllToAllSent {
  double mean = 0, most = 0;
};

/// The bytes a device sends in the all-to-all `step`: its part of the block
/// minus the part it keeps, as the mean over the mesh and the most. Balanced
/// parts of uneven sizes make the mean differ from (n-1)/n of the mean part,
/// and the most from the mean (16 rows over 32 devices: half of them send a
/// row, half nothing), so the devices that split the two dimensions are
/// enumerated; every other dimension contributes its mean extent.
AllToAllSent allToAllBytesSent(const ReshardStep &step,
                               const TensorExtent &tensor,
                               const std::vector<int64_t> &meshShape) {
  int64_t axis = step.meshAxis, n = meshShape[axis];
  int64_t concat = step.concatAxis(), split = step.tensorAxis();
  double others = tensor.elementBytes;
  for (size_t d = 0; d < tensor.shape.size(); ++d) {
    if (static_cast<int64_t>(d) == concat || static_cast<int64_t>(d) == split)
      continue;
    double extent = static_cast<double>(tensor.shape[d]);
    for (size_t other = 0; other < meshShape.size(); ++other)
      if (step.from[other].isSplit() &&
          step.from[other].axis == static_cast<int64_t>(d))
        extent /= static_cast<double>(meshShape[other]);
    others *= extent;
  }
  // The mesh axes that split either dimension, outer first (the step's own
  // axis among them, innermost for both: checkReshardStep).
  std::vector<int64_t> axes;
  for (size_t other = 0; other < meshShape.size(); ++other) {
    const Sbp &entry = step.from[other];
    if (static_cast<int64_t>(other) == axis ||
        (entry.isSplit() && (entry.axis == concat || entry.axis == split)))
      axes.push_back(static_cast<int64_t>(other));
  }
  std::vector<int64_t> coordinate(axes.size(), 0);
  double total = 0, most = 0;
  int64_t combinations = 0;
  while (true) {
    int64_t concatBlock = tensor.shape[concat],
            splitBlock = tensor.shape[split];
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i] == axis)
        continue;
      int64_t &block =
          step.from[axes[i]].axis == concat ? concatBlock : splitBlock;
      block = balancedShard(block, meshShape[axes[i]], coordinate[i]).size;
    }
    int64_t me =
        coordinate[std::find(axes.begin(), axes.end(), axis) - axes.begin()];
    double part = static_cast<double>(balancedShard(concatBlock, n, me).size);
    double kept = static_cast<double>(balancedShard(splitBlock, n, me).size);
    double sent = part * (static_cast<double>(splitBlock) - kept);
    total += sent;
    most = std::max(most, sent);
    ++combinations;
    size_t i = axes.size();
    while (i-- > 0 && ++coordinate[i] == meshShape[axes[i]])
      coordinate[i] = 0;
    if (i == static_cast<size_t>(-1))
      break;
  }
  return {others * total / static_cast<double>(combinations), others * most};
}

} // namespace

double TensorExtent::bytes() const {
  double total = elementBytes;
  for (int64_t size : shape)
    total *= static_cast<double>(size);
  return total;
}

double BoxingCost::bytesSent() const {
  double total = 0;
  for (const BoxingStep &step : steps)
    total += step.bytesSent;
  return total;
}

BoxingStep parplan::cost::priceStep(const ReshardStep &step,
                                    const TensorExtent &tensor,
                                    const std::vector<int64_t> &meshShape,
                                    const std::vector<Link> &axisLinks,
                                    const PositionLinks *positions) {
  BoxingStep priced{step, collectiveOf(step.kind), 0, 0, 0};
  int64_t n = meshShape[step.meshAxis];
  if (!priced.collective || n <= 1) {
    priced.collective.reset();
    return priced;
  }
  priced.bytes =
      groupBytes(step.from, meshShape, step.meshAxis, tensor.bytes());
  double timedBytes = priced.bytes;
  if (step.kind == ReshardKind::AllToAll) {
    // Each device re-cuts its part, keeping its own share of it. The step
    // lasts until the device with the most to send has sent it: on parts
    // of uneven sizes, longer than the mean part would take (lowering gives
    // each device its own part's buffer; parplan simulate times each).
    AllToAllSent sent = allToAllBytesSent(step, tensor, meshShape);
    double perSent = static_cast<double>(n) / static_cast<double>(n - 1);
    priced.bytes = sent.mean * perSent;
    timedBytes = sent.most * perSent;
  }
  priced.bytesSent = bytesSentPerDevice(*priced.collective, n, priced.bytes);
  priced.time = collectiveTime(*priced.collective, n, timedBytes,
                               axisLinks[step.meshAxis]);
  if (positions && positions->axis >= 0 && positions->axis != step.meshAxis) {
    // groupBytes divided a split along the shares' axis evenly; each
    // position holds its own fraction instead.
    auto sharesAxis = static_cast<size_t>(positions->axis);
    double even =
        sharesAxis < step.from.size() && step.from[sharesAxis].isSplit()
            ? static_cast<double>(meshShape[sharesAxis])
            : 0;
    priced.time = 0;
    for (size_t p = 0; p < positions->links.size(); ++p) {
      double bytes =
          even > 0 ? timedBytes * even * positions->fractions[p] : timedBytes;
      priced.time = std::max(
          priced.time,
          collectiveTime(
              *priced.collective, n, bytes,
              positions->links[p][static_cast<size_t>(step.meshAxis)]));
    }
  }
  return priced;
}

namespace {
/// The dimension a hierarchical all-reduce scatters (planResharding's
/// scatterDim): the outermost that every device of the mesh can hold an
/// equal part of, whose parts are contiguous runs of the buffer (no
/// packing through staging on the device); -1 when none can.
int64_t scatterDimension(const std::vector<int64_t> &shape,
                         const std::vector<int64_t> &meshShape) {
  int64_t devices = 1;
  for (int64_t size : meshShape)
    devices *= size;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 0 && shape[d] % devices == 0)
      return static_cast<int64_t>(d);
  return -1;
}
} // namespace

std::optional<BoxingCost> parplan::cost::boxingCost(
    const NdSbp &from, const NdSbp &to, const TensorExtent &tensor,
    const std::vector<int64_t> &meshShape, const std::vector<Link> &axisLinks,
    const MeshShares &shares, const PositionLinks *positions) {
  if (axisLinks.size() != meshShape.size())
    return std::nullopt;
  std::vector<bool> wholeOnly(meshShape.size());
  for (size_t axis = 0; axis < meshShape.size(); ++axis)
    wholeOnly[axis] = hasUnevenShares(shares, axis);
  std::optional<std::vector<ReshardStep>> steps = planResharding(
      from, to, meshShape,
      [&](const ReshardStep &step) {
        return priceStep(step, tensor, meshShape, axisLinks, positions).time;
      },
      wholeOnly, scatterDimension(tensor.shape, meshShape));
  if (!steps)
    return std::nullopt;
  BoxingCost cost;
  for (const ReshardStep &step : *steps) {
    cost.steps.push_back(
        priceStep(step, tensor, meshShape, axisLinks, positions));
    cost.time += cost.steps.back().time;
  }
  return cost;
}
