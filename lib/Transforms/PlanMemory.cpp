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
      std::vector<size_t> placed;
      int64_t arena = 0;
      for (size_t i : order) {
        Interval &interval = intervals[i];
        // The placed rectangles alive at the same time, by offset.
        std::vector<std::pair<int64_t, int64_t>> taken;
        for (size_t j : placed) {
          const Interval &other = intervals[j];
          if (other.begin <= interval.end && interval.begin <= other.end)
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
        placed.push_back(i);
        interval.buffer.setOffsetAttr(b.getI64IntegerAttr(offset));
      }
      program->setAttr("plan.arena_bytes", b.getI64IntegerAttr(arena));
    }
  }
};

} // namespace
