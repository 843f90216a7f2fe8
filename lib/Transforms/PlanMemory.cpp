//===- PlanMemory.cpp - arena offsets with liveness-based reuse -----------===//
//
// Offline interval packing: every buffer is a rectangle of (lifetime,
// bytes); rectangles are placed largest first at the lowest offset that
// collides with no placed rectangle. The executor on a device with one
// allocation (a GPU) uses the offsets; the arena size is the planned peak
// that `parplan compile` reports beside the cost model's estimate.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace parplan {
#define GEN_PASS_DEF_PLANMEMORY
#include "parplan/Transforms/Passes.h.inc"
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
};

struct PlanMemoryPass : parplan::impl::PlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    for (auto program : getOperation().getOps<plan::ProgramOp>()) {
      Block &body = program.getBody().front();
      DenseMap<Operation *, int64_t> position;
      int64_t count = 0;
      for (Operation &op : body)
        position[&op] = count++;
      std::vector<Interval> intervals;
      for (auto buffer : body.getOps<plan::BufferOp>()) {
        MemRefType type = buffer.getType();
        Interval interval;
        interval.buffer = buffer;
        interval.bytes = alignUp(plan::bufferBytes(type));
        if (buffer.getBufferKind() == plan::BufferKind::temporary) {
          interval.begin = interval.end = position[buffer];
          for (Operation *user : buffer.getResult().getUsers())
            interval.end = std::max(interval.end, position[user]);
        } else {
          interval.begin = 0;
          interval.end = count;
        }
        intervals.push_back(interval);
      }
      // Largest first; ties in program order, for deterministic offsets.
      std::vector<size_t> order(intervals.size());
      for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t c) {
        bool wholeA = intervals[a].end == count,
             wholeC = intervals[c].end == count;
        if (wholeA != wholeC)
          return wholeA;
        return intervals[a].bytes > intervals[c].bytes;
      });
      // Rectangles already placed, found by time: those living across the
      // step collide with every other, so their byte ranges are kept
      // apart; temporaries are listed in each time bucket they touch, so a
      // placement looks only at the few that live when it does (with one
      // list of every placed rectangle, packing is quadratic).
      constexpr int64_t kBucket = 64;
      std::vector<std::pair<int64_t, int64_t>> wholeTaken;
      std::vector<std::vector<size_t>> buckets(
          static_cast<size_t>(count / kBucket + 1));
      std::vector<size_t> lastSeen(intervals.size(), SIZE_MAX);
      int64_t arena = 0;
      std::vector<std::pair<int64_t, int64_t>> taken;
      for (size_t i : order) {
        Interval &interval = intervals[i];
        bool whole = interval.end == count;
        taken = wholeTaken;
        if (!whole)
          for (int64_t k = interval.begin / kBucket;
               k <= interval.end / kBucket; ++k)
            for (size_t j : buckets[static_cast<size_t>(k)]) {
              const Interval &other = intervals[j];
              if (lastSeen[j] == i || other.end < interval.begin ||
                  interval.end < other.begin)
                continue;
              lastSeen[j] = i;
              taken.emplace_back(other.offset, other.offset + other.bytes);
            }
        std::sort(taken.begin(), taken.end());
        int64_t offset = 0;
        for (auto [start, stop] : taken) {
          if (offset + interval.bytes <= start)
            break;
          offset = std::max(offset, stop);
        }
        interval.offset = offset;
        arena = std::max(arena, offset + interval.bytes);
        if (whole) {
          // Kept merged: packed from 0, they are usually one range.
          wholeTaken.emplace_back(offset, offset + interval.bytes);
          std::sort(wholeTaken.begin(), wholeTaken.end());
          std::vector<std::pair<int64_t, int64_t>> merged;
          for (auto range : wholeTaken) {
            if (!merged.empty() && range.first <= merged.back().second)
              merged.back().second =
                  std::max(merged.back().second, range.second);
            else
              merged.push_back(range);
          }
          wholeTaken = std::move(merged);
        } else {
          for (int64_t k = interval.begin / kBucket;
               k <= interval.end / kBucket; ++k)
            buckets[static_cast<size_t>(k)].push_back(i);
        }
        interval.buffer.setOffsetAttr(b.getI64IntegerAttr(offset));
      }
      program->setAttr("plan.arena_bytes", b.getI64IntegerAttr(arena));
    }
  }
};

} // namespace
