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

#include <functional>
#include <tuple>

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
      // Rectangles already placed, kept in offset order so that a placement
      // reads the ones it collides with lowest first and stops at the first
      // gap that fits (sorting them for every placement is what made
      // packing slow): those living across the step, merged into ranges
      // (placed first, they collide with everything); temporaries living
      // longer than a bucket of positions in one list; the others in the
      // one or two buckets their life touches, so that a short life reads
      // few lists and a long one many short ones.
      constexpr int64_t kBucket = 256;
      std::vector<std::pair<int64_t, int64_t>> wholeTaken;
      std::vector<size_t> longLived;
      std::vector<std::vector<size_t>> buckets(
          static_cast<size_t>(count / kBucket + 1));
      auto insertByOffset = [&](std::vector<size_t> &list, size_t i) {
        list.insert(std::upper_bound(list.begin(), list.end(),
                                     intervals[i].offset,
                                     [&](int64_t value, size_t j) {
                                       return value < intervals[j].offset;
                                     }),
                    i);
      };
      struct Cursor {
        const std::vector<size_t> *list;
        size_t at;
      };
      std::vector<Cursor> cursors;
      std::vector<std::pair<int64_t, size_t>> heap;
      int64_t arena = 0;
      for (size_t i : order) {
        Interval &interval = intervals[i];
        bool whole = interval.end == count;
        int64_t firstBucket = interval.begin / kBucket;
        int64_t lastBucket = interval.end / kBucket;
        bool longLife = lastBucket - firstBucket >= 2;
        auto overlaps = [&](size_t j) {
          const Interval &other = intervals[j];
          return !(other.end < interval.begin || interval.end < other.begin);
        };
        // The lists that may hold rectangles living when this one does
        // (none but the merged ranges for one living throughout: those are
        // placed first), read together in offset order through a heap of
        // their next colliding entries.
        cursors.clear();
        if (!whole) {
          cursors.push_back({&longLived, 0});
          for (int64_t k = firstBucket; k <= lastBucket; ++k)
            cursors.push_back({&buckets[static_cast<size_t>(k)], 0});
        }
        heap.clear();
        auto advance = [&](size_t c) {
          Cursor &cursor = cursors[c];
          while (cursor.at < cursor.list->size() &&
                 !overlaps((*cursor.list)[cursor.at]))
            ++cursor.at;
          if (cursor.at < cursor.list->size()) {
            heap.emplace_back(intervals[(*cursor.list)[cursor.at]].offset, c);
            std::push_heap(heap.begin(), heap.end(), std::greater<>());
          }
        };
        for (size_t c = 0; c < cursors.size(); ++c)
          advance(c);
        size_t wholeAt = 0;
        int64_t offset = 0;
        while (true) {
          int64_t start = INT64_MAX, stop = 0;
          bool fromWhole = false;
          if (wholeAt < wholeTaken.size()) {
            std::tie(start, stop) = wholeTaken[wholeAt];
            fromWhole = true;
          }
          if (!heap.empty() && heap.front().first < start) {
            Cursor &cursor = cursors[heap.front().second];
            const Interval &other = intervals[(*cursor.list)[cursor.at]];
            start = other.offset;
            stop = other.offset + other.bytes;
            fromWhole = false;
          }
          if (start == INT64_MAX || offset + interval.bytes <= start)
            break;
          offset = std::max(offset, stop);
          if (fromWhole) {
            ++wholeAt;
            continue;
          }
          size_t c = heap.front().second;
          std::pop_heap(heap.begin(), heap.end(), std::greater<>());
          heap.pop_back();
          ++cursors[c].at;
          advance(c);
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
        } else if (longLife) {
          insertByOffset(longLived, i);
        } else {
          for (int64_t k = firstBucket; k <= lastBucket; ++k)
            insertByOffset(buckets[static_cast<size_t>(k)], i);
        }
        interval.buffer.setOffsetAttr(b.getI64IntegerAttr(offset));
      }
      program->setAttr("plan.arena_bytes", b.getI64IntegerAttr(arena));
    }
  }
};

} // namespace
