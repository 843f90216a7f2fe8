//===- CollectiveSteps.cpp - a plan collective as NCCL calls --------------===//
//
// all_reduce and broadcast are one call in place. all_gather and
// reduce_scatter take NCCL's collective of the same name when the parts are
// even, and otherwise one broadcast or reduce per member with a non-empty
// part, in one group. all_to_all is a send and a receive per member with a
// non-empty part, in one group. Parts along an inner axis go through the
// staging buffer, packed before the calls and unpacked after them.
//
//===----------------------------------------------------------------------===//

#include "Device/CollectiveSteps.h"

#include "Device/Pack.h"
#include "parplan/Runtime/Backend.h"

#include <algorithm>

namespace parplan::runtime::device {

namespace {

/// NCCL's reduction for the plan's on `type`: booleans (I1, bytes 0 or 1)
/// reduce as the CPU backend stores them, a sum as "any" and a product as
/// "all".
ReduceKind ncclReduction(plan::Reduction reduction, DType type) {
  ReduceKind kind = toReduceKind(reduction).value_or(ReduceKind::Sum);
  if (type == DType::I1 && kind == ReduceKind::Sum)
    return ReduceKind::Max;
  if (type == DType::I1 && kind == ReduceKind::Prod)
    return ReduceKind::Min;
  return kind;
}

constexpr Place kInput{Region::Input, 0};
constexpr Place kOutput{Region::Output, 0};

/// The steps of one member, in order, each with the grouped flag of where
/// it stands.
class StepList {
public:
  StepList(DType type, int64_t parts) : type_(type), parts_(parts) {}

  /// A step that moves `elements` elements as raw bytes.
  CollectiveStep &bytes(StepKind kind, Place source, Place destination,
                        int64_t elements) {
    return add(kind, source, destination,
               elements * static_cast<int64_t>(byteWidth(type_)), DType::I8);
  }
  /// A step on `elements` elements of the collective's type.
  CollectiveStep &typed(StepKind kind, Place source, Place destination,
                        int64_t elements) {
    return add(kind, source, destination, elements, type_);
  }
  /// Element `offset` of a region, as a byte offset.
  Place at(Region region, int64_t offset) const {
    return {region, static_cast<size_t>(offset) * byteWidth(type_)};
  }
  void startGroup() {
    add(StepKind::GroupStart, {}, {}, 0, DType::I8);
    grouped_ = true;
  }
  void endGroup() {
    grouped_ = false;
    add(StepKind::GroupEnd, {}, {}, 0, DType::I8);
  }
  /// Where the input's parts along `axis` lie one after another: the input
  /// itself, or StagingIn after a Pack.
  Region packInput(const Shape &shape, int64_t axis) {
    if (isContiguousSplit(shape, axis))
      return Region::Input;
    parts(StepKind::Pack, kInput, {Region::StagingIn, 0}, shape, axis);
    return Region::StagingIn;
  }
  /// Where the output's parts along `axis` are received: the output itself,
  /// or StagingOut, unpacked by unpackOutput.
  static Region landing(const Shape &shape, int64_t axis) {
    return isContiguousSplit(shape, axis) ? Region::Output : Region::StagingOut;
  }
  void unpackOutput(const Shape &shape, int64_t axis) {
    if (landing(shape, axis) == Region::StagingOut)
      parts(StepKind::Unpack, {Region::StagingOut, 0}, kOutput, shape, axis);
  }
  std::vector<CollectiveStep> take() { return std::move(steps_); }

private:
  CollectiveStep &add(StepKind kind, Place source, Place destination,
                      int64_t count, DType type) {
    CollectiveStep step{kind, source, destination, count, type};
    step.grouped = grouped_;
    steps_.push_back(step);
    return steps_.back();
  }
  /// packParts or unpackParts of a tensor of `shape` along `axis`.
  void parts(StepKind kind, Place source, Place destination, const Shape &shape,
             int64_t axis) {
    CollectiveStep &step = typed(kind, source, destination, numElements(shape));
    step.axis = axis;
    step.parts = parts_;
  }

  DType type_;
  int64_t parts_;
  std::vector<CollectiveStep> steps_;
  bool grouped_ = false;
};

} // namespace

std::vector<CollectiveStep> collectiveSteps(const plan::Collective &collective,
                                            const Shape &inShape,
                                            const Shape &outShape, DType type,
                                            int64_t groupSize, int64_t member) {
  int64_t n = groupSize;
  StepList steps(type, n);
  if (n <= 1) {
    // A group of one: the identity (in-place kinds need nothing).
    int64_t elements = std::min(numElements(inShape), numElements(outShape));
    if (collective.input() != collective.output() && elements > 0)
      steps.bytes(StepKind::Copy, kInput, kOutput, elements);
    return steps.take();
  }
  ReduceKind op = ncclReduction(collective.reduce(), type);
  switch (collective.kind()) {
  case plan::Collective::ALL_REDUCE:
    steps.typed(StepKind::AllReduce, kInput, kInput, numElements(inShape)).op =
        op;
    break;
  case plan::Collective::BROADCAST:
    steps.bytes(StepKind::Broadcast, kInput, kInput, numElements(inShape))
        .root = collective.root();
    break;
  case plan::Collective::ALL_GATHER: {
    int64_t axis = collective.axis();
    PartLayout layout = partLayout(outShape, axis, n);
    Region gathered = StepList::landing(outShape, axis);
    if (outShape[axis] % n == 0) {
      steps.bytes(StepKind::AllGather, kInput, {gathered, 0},
                  numElements(inShape));
    } else {
      steps.startGroup();
      for (int64_t m = 0; m < n; ++m)
        if (layout.counts[m] > 0)
          steps
              .bytes(StepKind::Broadcast, kInput,
                     steps.at(gathered, layout.offsets[m]), layout.counts[m])
              .root = m;
      steps.endGroup();
    }
    steps.unpackOutput(outShape, axis);
    break;
  }
  case plan::Collective::REDUCE_SCATTER: {
    int64_t axis = collective.axis();
    PartLayout layout = partLayout(inShape, axis, n);
    Region packed = steps.packInput(inShape, axis);
    if (inShape[axis] % n == 0) {
      steps
          .typed(StepKind::ReduceScatter, {packed, 0}, kOutput,
                 layout.counts[member])
          .op = op;
    } else {
      steps.startGroup();
      for (int64_t m = 0; m < n; ++m)
        if (layout.counts[m] > 0) {
          // Only the root has a receive buffer.
          CollectiveStep &reduce =
              steps.typed(StepKind::Reduce, steps.at(packed, layout.offsets[m]),
                          m == member ? kOutput : Place{}, layout.counts[m]);
          reduce.op = op;
          reduce.root = m;
        }
      steps.endGroup();
    }
    break;
  }
  case plan::Collective::ALL_TO_ALL: {
    int64_t splitAxis = collective.axis(),
            concatAxis = collective.concat_axis();
    PartLayout sent = partLayout(inShape, splitAxis, n);
    PartLayout received = partLayout(outShape, concatAxis, n);
    Region packed = steps.packInput(inShape, splitAxis);
    Region landing = StepList::landing(outShape, concatAxis);
    steps.startGroup();
    for (int64_t m = 0; m < n; ++m) {
      if (sent.counts[m] > 0)
        steps
            .bytes(StepKind::Send, steps.at(packed, sent.offsets[m]), {},
                   sent.counts[m])
            .peer = m;
      if (received.counts[m] > 0)
        steps
            .bytes(StepKind::Recv, {}, steps.at(landing, received.offsets[m]),
                   received.counts[m])
            .peer = m;
    }
    steps.endGroup();
    steps.unpackOutput(outShape, concatAxis);
    break;
  }
  default:
    break;
  }
  return steps.take();
}

} // namespace parplan::runtime::device
