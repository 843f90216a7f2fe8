//===- PlanMemory.cpp - arena offsets with liveness-based reuse -----------===//
//
// Offline interval packing: every buffer is a rectangle of (lifetime,
// bytes); rectangles are placed at the lowest offset that collides with no
// placed rectangle, largest first and again largest in area first, the
// smaller arena kept. The executor on a device with one
// allocation (a GPU) uses the offsets; the arena size is the planned peak
// that `parplan compile` reports beside the cost model's estimate.
//
// A reshape's result is a view of its operand where nothing writes either
// after the reshape: the two temporaries are one rectangle (the union of
// their lives) at one offset, the reshape copies nothing (its operand and
// result are the same bytes), and the cost model's pricing of a reshape as
// free holds on the device too.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Transforms/Lowering/Passes.h"

#include "parplan/Dialect/AttrNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include "llvm/Support/MathExtras.h"

#include <functional>
#include <tuple>

namespace parplan {
#define GEN_PASS_DEF_PLANMEMORY
#include "parplan/Transforms/Lowering/Passes.h.inc"
} // namespace parplan

using namespace mlir;
namespace plan = parplan::plan;

namespace {

constexpr int64_t kAlignment = 64;

int64_t alignUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

struct Interval {
  plan::BufferOp buffer;
  int64_t begin = 0, end = 0; // positions, inclusive
  int64_t bytes = 0;
  int64_t offset = -1;
  /// The interval whose bytes this one shares (a reshape's view), or -1:
  /// always its group's root, which is no view itself.
  int64_t viewOf = -1;
};

// Whether `op`, at a position after a reshape, leaves `buffer` as it is: a
// kernel that only reads it, a send, the loss, an update that copies from
// it.
bool onlyReads(Operation *op, Value buffer) {
  if (auto kernel = dyn_cast<plan::KernelOp>(op))
    return !llvm::is_contained(kernel.getOuts(), buffer);
  if (auto update = dyn_cast<plan::UpdateOp>(op))
    return update.getTarget() != buffer;
  return isa<plan::LossOp, plan::SendOp, plan::CrossMeshSendOp>(op);
}

// Joins each reshape's result to its operand's group (Interval::viewOf:
// the group's root) where both are temporaries of one size, the result is
// not touched before the reshape, and nothing writes either after it; the
// root interval then spans the group's lives. A root was written before
// it was reshaped, so it never joins another group: viewOf is one step.
void joinReshapeViews(Block &body,
                      const DenseMap<Operation *, int64_t> &position,
                      const DenseMap<Value, size_t> &intervalOf,
                      std::vector<Interval> &intervals) {
  for (auto kernel : body.getOps<plan::KernelOp>()) {
    if (kernel.getKernel() != "reshape" || kernel.getIns().size() != 1 ||
        kernel.getOuts().size() != 1)
      continue;
    Value operand = kernel.getIns()[0], result = kernel.getOuts()[0];
    auto foundOperand = intervalOf.find(operand),
         foundResult = intervalOf.find(result);
    if (foundOperand == intervalOf.end() || foundResult == intervalOf.end())
      continue;
    Interval &from = intervals[foundOperand->second],
             &to = intervals[foundResult->second];
    if (from.buffer.getKind() != plan::BufferKind::temporary ||
        to.buffer.getKind() != plan::BufferKind::temporary ||
        from.bytes != to.bytes || to.viewOf >= 0 || operand == result)
      continue;
    int64_t at = position.lookup(kernel);
    auto leftAlone = [&](Value buffer, bool touchedBefore) {
      for (Operation *user : buffer.getUsers()) {
        if (user == kernel.getOperation())
          continue;
        int64_t when = position.lookup(user);
        if (when < at ? touchedBefore : !onlyReads(user, buffer))
          return false;
      }
      return true;
    };
    if (!leftAlone(operand, /*touchedBefore=*/false) ||
        !leftAlone(result, /*touchedBefore=*/true))
      continue;
    size_t group = from.viewOf >= 0 ? static_cast<size_t>(from.viewOf)
                                    : foundOperand->second;
    to.viewOf = static_cast<int64_t>(group);
    intervals[group].begin = std::min(intervals[group].begin, to.begin);
    intervals[group].end = std::max(intervals[group].end, to.end);
  }
}

using Range = std::pair<int64_t, int64_t>; // [start, stop) in bytes

// Adds `range` to sorted, disjoint `ranges`, merging what it touches.
void addRange(std::vector<Range> &ranges, Range range) {
  auto at = std::lower_bound(ranges.begin(), ranges.end(), range);
  if (at != ranges.begin() && std::prev(at)->second >= range.first)
    --at;
  else
    at = ranges.insert(at, range);
  at->second = std::max(at->second, range.second);
  auto next = std::next(at);
  while (next != ranges.end() && next->first <= at->second) {
    at->second = std::max(at->second, next->second);
    ++next;
  }
  ranges.erase(std::next(at), next);
}

// A segment tree over time buckets whose nodes hold the merged offset
// ranges of every rectangle living in any of the node's buckets.
class BucketTree {
public:
  explicit BucketTree(size_t buckets)
      : leaves(llvm::PowerOf2Ceil(buckets)), nodes(2 * leaves) {}

  // A rectangle living in buckets [first, last].
  void add(size_t first, size_t last, Range range) {
    add(1, 0, leaves, first, last, range);
  }

  // The nodes whose buckets together are exactly [first, last].
  void cover(size_t first, size_t last,
             std::vector<const std::vector<Range> *> &out) const {
    cover(1, 0, leaves, first, last, out);
  }

private:
  // Node n covers buckets [lo, hi); its children are 2n and 2n + 1.
  void add(size_t node, size_t lo, size_t hi, size_t first, size_t last,
           Range range) {
    if (last < lo || hi <= first)
      return;
    addRange(nodes[node], range);
    if (hi - lo == 1)
      return;
    size_t mid = (lo + hi) / 2;
    add(2 * node, lo, mid, first, last, range);
    add(2 * node + 1, mid, hi, first, last, range);
  }

  void cover(size_t node, size_t lo, size_t hi, size_t first, size_t last,
             std::vector<const std::vector<Range> *> &out) const {
    if (last < lo || hi <= first)
      return;
    if (first <= lo && hi - 1 <= last) {
      out.push_back(&nodes[node]);
      return;
    }
    size_t mid = (lo + hi) / 2;
    cover(2 * node, lo, mid, first, last, out);
    cover(2 * node + 1, mid, hi, first, last, out);
  }

  size_t leaves;
  std::vector<std::vector<Range>> nodes;
};

/// Places rectangles lowest offset first. Rectangles already placed are
/// indexed by time so that a placement reads the ones it collides with
/// lowest first and stops at the first gap that fits, without reading them
/// one by one: the activations kept for the backward pass and the
/// gradients kept for the update live at once, so reading each of them for
/// every placement is quadratic in depth. Positions fall into buckets. In
/// each bucket, rectangles living across all of it are merged offset ranges
/// (they collide with anything living in the bucket); those living in part
/// of it are kept one by one, in offset order, and checked. A tree over the
/// buckets keeps, in each node, the merged ranges of every rectangle living
/// at some position of the node's buckets: a placement living across those
/// buckets collides with all of them. A placement thus reads its first and
/// last bucket exactly and the few tree nodes covering the buckets between.
/// Rectangles living across the step (ending at `count`), placed first, are
/// ranges of their own.
class ArenaPlacer {
public:
  ArenaPlacer(std::vector<Interval> &intervals, int64_t count,
              int64_t positionsPerBucket)
      : intervals(intervals), count(count),
        positionsPerBucket(positionsPerBucket),
        buckets(static_cast<size_t>(count / positionsPerBucket + 1)),
        tree(buckets.size()) {}

  /// Places interval `i` at the lowest offset where it collides with no
  /// interval placed before, and returns that offset.
  int64_t place(size_t i) {
    Interval &interval = intervals[i];
    bool whole = interval.end == count;
    size_t firstBucket =
        static_cast<size_t>(interval.begin / positionsPerBucket);
    size_t lastBucket = static_cast<size_t>(interval.end / positionsPerBucket);
    openCursors(whole, firstBucket, lastBucket);
    heap.clear();
    for (size_t c = 0; c < cursors.size(); ++c)
      advance(c, interval);
    int64_t offset = 0;
    while (!heap.empty()) {
      auto [start, stop, c] = heap.front();
      if (offset + interval.bytes <= start)
        break;
      offset = std::max(offset, stop);
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.pop_back();
      ++cursors[c].at;
      advance(c, interval);
    }
    interval.offset = offset;
    take(i, whole, firstBucket, lastBucket);
    return offset;
  }

private:
  struct Bucket {
    std::vector<Range> spanned;
    std::vector<size_t> partial;
  };
  /// Reads a bucket's partial list (skipping rectangles living at other
  /// times) or a list of ranges.
  struct Cursor {
    const std::vector<size_t> *partial;
    const std::vector<Range> *ranges;
    size_t at;
  };

  std::vector<Interval> &intervals;
  int64_t count;
  int64_t positionsPerBucket;
  std::vector<Bucket> buckets;
  BucketTree tree;
  std::vector<Range> wholeTaken;
  std::vector<Cursor> cursors;
  std::vector<const std::vector<Range> *> covering;
  /// (start, stop, cursor) of each cursor's next collision.
  std::vector<std::tuple<int64_t, int64_t, size_t>> heap;

  /// The cursors over what a placement in these buckets may collide with.
  void openCursors(bool whole, size_t firstBucket, size_t lastBucket) {
    cursors.clear();
    cursors.push_back({nullptr, &wholeTaken, 0});
    if (whole)
      return;
    for (size_t k = firstBucket;; k = lastBucket) {
      cursors.push_back({&buckets[k].partial, nullptr, 0});
      cursors.push_back({nullptr, &buckets[k].spanned, 0});
      if (k == lastBucket)
        break;
    }
    covering.clear();
    if (lastBucket > firstBucket + 1)
      tree.cover(firstBucket + 1, lastBucket - 1, covering);
    for (const std::vector<Range> *ranges : covering)
      cursors.push_back({nullptr, ranges, 0});
  }

  /// Pushes cursor `c`'s next collision with `interval` on the heap.
  void advance(size_t c, const Interval &interval) {
    Cursor &cursor = cursors[c];
    if (cursor.ranges) {
      if (cursor.at < cursor.ranges->size()) {
        auto [start, stop] = (*cursor.ranges)[cursor.at];
        heap.emplace_back(start, stop, c);
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
      return;
    }
    auto overlaps = [&](size_t j) {
      const Interval &other = intervals[j];
      return !(other.end < interval.begin || interval.end < other.begin);
    };
    while (cursor.at < cursor.partial->size() &&
           !overlaps((*cursor.partial)[cursor.at]))
      ++cursor.at;
    if (cursor.at < cursor.partial->size()) {
      const Interval &other = intervals[(*cursor.partial)[cursor.at]];
      heap.emplace_back(other.offset, other.offset + other.bytes, c);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  }

  /// Records placed interval `i` where later placements look.
  void take(size_t i, bool whole, size_t firstBucket, size_t lastBucket) {
    const Interval &interval = intervals[i];
    Range range{interval.offset, interval.offset + interval.bytes};
    if (whole) {
      addRange(wholeTaken, range);
      return;
    }
    for (size_t k = firstBucket; k <= lastBucket; ++k) {
      int64_t bucketBegin = static_cast<int64_t>(k) * positionsPerBucket;
      if (interval.begin <= bucketBegin &&
          interval.end >= bucketBegin + positionsPerBucket - 1)
        addRange(buckets[k].spanned, range);
      else
        insertByOffset(buckets[k].partial, i);
    }
    tree.add(firstBucket, lastBucket, range);
  }

  void insertByOffset(std::vector<size_t> &list, size_t i) {
    list.insert(std::upper_bound(list.begin(), list.end(), intervals[i].offset,
                                 [&](int64_t value, size_t j) {
                                   return value < intervals[j].offset;
                                 }),
                i);
  }
};

/// The input and output of a collective that writes a buffer of its own
/// (an all-gather, a reduce-scatter, an all-to-all); null values for any
/// other op.
std::pair<Value, Value> ownOutputOperands(Operation &op) {
  return llvm::TypeSwitch<Operation *, std::pair<Value, Value>>(&op)
      .Case<plan::AllGatherOp, plan::ReduceScatterOp, plan::AllToAllOp>(
          [](auto collective) {
            return std::make_pair(collective.getInput(),
                                  collective.getOutput());
          })
      .Default([](Operation *) { return std::pair<Value, Value>(); });
}

/// Keeps the input of a collective that writes another buffer (all-gather,
/// reduce-scatter, all-to-all) alive until the first instruction that
/// reads or writes its output: the collective runs on the communication
/// stream, and a kernel reusing the input's bytes before then would wait
/// for it (runtime::scheduleStreams orders instructions on shared arena
/// bytes), so that the kernels between it and its reader could not run
/// under it (a sharded parameter's gather ahead of its forward). That
/// first instruction waits for the collective, so the bytes are free
/// after it.
///
/// A collective of the gradients stream (feeds_update) may run later than
/// its place by as long as the stream lags the backward: what it reads is
/// kept until the first instruction off that stream that reads what the
/// stream's later collectives make of it (the update). It may also run
/// ahead of its place, as soon as its input is done (the gradient's last
/// sum), by as long as the compute stream takes to get there: what it
/// writes of its own (a reduce-scatter's part) is reserved from the last
/// instruction before it that touches its input, as an instruction in
/// between given the same bytes would hold it back until then.
void keepCollectiveInputs(Block &body,
                          const DenseMap<Operation *, int64_t> &position,
                          const DenseMap<Value, size_t> &intervalOf,
                          std::vector<Interval> &intervals) {
  // The first reader after `at` of `value`, looking through the gradients
  // stream's collectives when `throughGradients`.
  std::function<int64_t(Value, int64_t, bool)> firstReader =
      [&](Value value, int64_t at, bool throughGradients) {
        int64_t reader = -1;
        auto take = [&](int64_t place) {
          if (place > at && (reader < 0 || place < reader))
            reader = place;
        };
        for (Operation *user : value.getUsers()) {
          int64_t place = position.lookup(user);
          if (place <= at)
            continue;
          if (!throughGradients || !plan::feedsUpdate(user)) {
            take(place);
            continue;
          }
          Value made =
              llvm::TypeSwitch<Operation *, Value>(user)
                  .Case([](plan::AllReduceOp o) { return o.getBuffer(); })
                  .Case([](plan::ReduceScatterOp o) { return o.getOutput(); })
                  .Case([](plan::AllGatherOp o) { return o.getOutput(); });
          if (int64_t later = firstReader(made, place, true); later >= 0)
            take(later);
        }
        return reader;
      };
  auto temporary = [&](Value buffer) -> Interval * {
    auto interval = intervalOf.find(buffer);
    if (interval == intervalOf.end())
      return nullptr;
    Interval &lives = intervals[interval->second];
    return lives.buffer.getKind() == plan::BufferKind::temporary ? &lives
                                                                 : nullptr;
  };
  auto keep = [&](Operation *collective, Value input, Value output) {
    int64_t at = position.lookup(collective);
    bool gradients = plan::feedsUpdate(collective);
    if (Interval *lives = temporary(input))
      if (int64_t reader = firstReader(output, at, gradients); reader >= 0)
        lives->end = std::max(lives->end, reader);
    if (Interval *lives = gradients ? temporary(output) : nullptr) {
      int64_t from = -1;
      for (Operation *user : input.getUsers())
        if (int64_t place = position.lookup(user); place < at)
          from = std::max(from, place);
      if (from >= 0)
        lives->begin = std::min(lives->begin, from);
    }
  };
  for (Operation &op : body) {
    // A gradient's all-reduce works in place: what reads its buffer after
    // it keeps the buffer alive anyway.
    if (auto [input, output] = ownOutputOperands(op); input)
      keep(&op, input, output);
  }
}

/// Reserves what a collective of the communication stream writes of its
/// own (an all-gather's, a reduce-scatter's or an all-to-all's output)
/// from when it can start: once its input is done and the stream is past
/// the instruction before it. An instruction in between given the same
/// bytes would hold it back until then (runtime::scheduleStreams), and the
/// cost model's timeline starts it there (sbp-assign's overlapIn): a
/// parameter gathered again for the backward then runs under the kernels
/// before its reader instead of after them. Only a collective of a value
/// that lives across the step (a parameter) is reserved so: a
/// temporary's writer is mostly just before it, and a forward value boxed
/// for the backward would hold its bytes from the forward on.
void reserveCommunicationOutputs(Block &body,
                                 const DenseMap<Operation *, int64_t> &position,
                                 const DenseMap<Value, size_t> &intervalOf,
                                 std::vector<Interval> &intervals) {
  int64_t previous = -1;
  auto reserve = [&](Operation *collective, Value input, Value output) {
    auto interval = intervalOf.find(output);
    if (interval == intervalOf.end() || output == input)
      return;
    Interval &lives = intervals[interval->second];
    if (lives.buffer.getKind() != plan::BufferKind::temporary)
      return;
    auto made = intervalOf.find(input);
    if (made == intervalOf.end() ||
        intervals[made->second].buffer.getKind() == plan::BufferKind::temporary)
      return;
    int64_t at = position.lookup(collective);
    int64_t from = previous;
    for (Operation *user : input.getUsers())
      if (int64_t place = position.lookup(user);
          place < at && !onlyReads(user, input))
        from = std::max(from, place);
    // What that instruction touches, the collective waits for anyway.
    lives.begin = std::min(lives.begin, from + 1);
  };
  for (Operation &op : body) {
    // Each range of the executor's (the part before the micro-batches, a
    // micro-batch's forward and backward, a chunk's, the once-per-step
    // part) runs on its own: no reservation reaches into the one before.
    if (isa<plan::ForwardBeginOp, plan::BackwardBeginOp,
            plan::AfterMicroBatchesOp, plan::ChunkOp>(op)) {
      previous = position.lookup(&op);
      continue;
    }
    bool communicates =
        isa<plan::AllReduceOp, plan::AllGatherOp, plan::ReduceScatterOp,
            plan::AllToAllOp, plan::BroadcastOp, plan::SendOp, plan::RecvOp,
            plan::CrossMeshSendOp, plan::CrossMeshRecvOp>(op) &&
        !plan::feedsUpdate(&op);
    if (!communicates)
      continue;
    if (auto [input, output] = ownOutputOperands(op); input)
      reserve(&op, input, output);
    previous = position.lookup(&op);
  }
}

/// Keeps what the once-per-step part before the micro-batches writes
/// (before plan.forward_begin) and a micro-batch reads alive to the end of
/// the micro-batches (plan.after_micro_batches): each micro-batch reads it
/// again, so no buffer of a micro-batch may take its bytes.
void keepAcrossMicroBatches(Block &body,
                            const DenseMap<Operation *, int64_t> &position,
                            std::vector<Interval> &intervals, int64_t count) {
  auto begins = body.getOps<plan::ForwardBeginOp>();
  if (begins.empty())
    return;
  int64_t forwardBegin = position.lookup(*begins.begin());
  auto afters = body.getOps<plan::AfterMicroBatchesOp>();
  int64_t microBatchesEnd =
      afters.empty() ? count - 1 : position.lookup(*afters.begin());
  for (Interval &lives : intervals) {
    if (lives.buffer.getKind() == plan::BufferKind::temporary &&
        lives.begin < forwardBegin && lives.end > forwardBegin)
      lives.end = std::max(lives.end, microBatchesEnd);
  }
}

/// Each buffer's rectangle: a temporary lives from its definition to its
/// last use, every other kind across the step (to `count`, the number of
/// positions).
std::vector<Interval> bufferIntervals(Block &body,
                                      DenseMap<Operation *, int64_t> &position,
                                      DenseMap<Value, size_t> &intervalOf,
                                      int64_t &count) {
  count = 0;
  for (Operation &op : body)
    position[&op] = count++;
  std::vector<Interval> intervals;
  for (auto buffer : body.getOps<plan::BufferOp>()) {
    Interval interval;
    interval.buffer = buffer;
    interval.bytes = alignUp(plan::bufferBytes(buffer.getType()));
    if (buffer.getKind() == plan::BufferKind::temporary) {
      interval.begin = interval.end = position[buffer];
      for (Operation *user : buffer.getResult().getUsers())
        interval.end = std::max(interval.end, position[user]);
    } else {
      interval.begin = 0;
      interval.end = count;
    }
    intervalOf[buffer.getResult()] = intervals.size();
    intervals.push_back(interval);
  }
  return intervals;
}

struct PlanMemoryPass : parplan::impl::PlanMemoryBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto program : getOperation().getOps<plan::ProgramOp>())
      planProgram(program);
  }

  void planProgram(plan::ProgramOp program) {
    Builder b(&getContext());
    Block &body = program.getBody().front();
    DenseMap<Operation *, int64_t> position;
    DenseMap<Value, size_t> intervalOf;
    int64_t count = 0;
    std::vector<Interval> intervals =
        bufferIntervals(body, position, intervalOf, count);
    keepCollectiveInputs(body, position, intervalOf, intervals);
    reserveCommunicationOutputs(body, position, intervalOf, intervals);
    keepAcrossMicroBatches(body, position, intervals, count);
    if (reshapeViews)
      joinReshapeViews(body, position, intervalOf, intervals);
    // Two greedy orders, the least arena kept (the first on a tie): the
    // largest first, and the largest in bytes times positions lived first,
    // which packs better where long-lived buffers (parameters gathered
    // ahead of their readers) are small beside short-lived ones. Buffers
    // of the whole step go first either way; ties in program order, for
    // deterministic offsets.
    auto area = [&](const Interval &interval) {
      return interval.bytes * (interval.end - interval.begin + 1);
    };
    int64_t arena = -1;
    std::vector<int64_t> offsets;
    for (bool byArea : {false, true}) {
      std::vector<size_t> order(intervals.size());
      for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t c) {
        bool wholeA = intervals[a].end == count,
             wholeC = intervals[c].end == count;
        if (wholeA != wholeC)
          return wholeA;
        return byArea ? area(intervals[a]) > area(intervals[c])
                      : intervals[a].bytes > intervals[c].bytes;
      });
      ArenaPlacer placer(intervals, count,
                         std::max<int64_t>(1, bucketPositions));
      int64_t packed = 0;
      for (size_t i : order)
        if (intervals[i].viewOf < 0) // placed with its group's root, below
          packed = std::max(packed, placer.place(i) + intervals[i].bytes);
      if (arena >= 0 && packed >= arena)
        continue;
      arena = packed;
      offsets.clear();
      for (const Interval &interval : intervals)
        offsets.push_back(interval.offset);
    }
    for (auto [interval, offset] : llvm::zip(intervals, offsets))
      if (interval.viewOf < 0) {
        interval.offset = offset;
        interval.buffer.setOffsetAttr(b.getI64IntegerAttr(offset));
      }
    for (Interval &interval : intervals) {
      if (interval.viewOf < 0)
        continue;
      interval.offset = intervals[static_cast<size_t>(interval.viewOf)].offset;
      interval.buffer.setOffsetAttr(b.getI64IntegerAttr(interval.offset));
    }
    program->setAttr(parplan::kArenaBytesAttrName, b.getI64IntegerAttr(arena));
  }
};
} // namespace
