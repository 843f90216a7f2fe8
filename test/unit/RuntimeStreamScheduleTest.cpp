//===- RuntimeStreamScheduleTest.cpp - compute and communication streams --===//
//
// scheduleStreams (StreamSchedule.h) on small programs: which stream each
// instruction takes and which instruction of the other stream it waits
// for, in every hazard (read after write, write after write, write after
// read) and where none applies, so that communication overlaps.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/StreamSchedule.h"

#include "MlpPlan.h"

#include <catch2/catch.hpp>

using namespace parplan;
using namespace parplan::runtime;
using namespace parplan::testing;

namespace {

/// A program of `buffers` f32 buffers of 4 elements.
plan::Program program(int buffers) {
  plan::Program program;
  for (int b = 0; b < buffers; ++b)
    addBuffer(program, "", {4});
  return program;
}

/// Each instruction's wait in a program without gradient reductions,
/// whose instructions wait on one other stream at most: that wait, or -1.
std::vector<int64_t> singleWaits(const StreamSchedule &schedule) {
  std::vector<int64_t> waits;
  for (const auto &byStream : schedule.waitFor) {
    int64_t wait = -1;
    int count = 0;
    for (int64_t w : byStream)
      if (w >= 0) {
        wait = w;
        ++count;
      }
    CHECK(count <= 1);
    waits.push_back(wait);
  }
  return waits;
}

void kernel(plan::Program &program, std::vector<int64_t> operands,
            std::vector<int64_t> results) {
  addKernel(program, "relu", std::move(operands), std::move(results));
}

} // namespace

TEST_CASE("stream schedule: kernels on compute, messages on communication",
          "[runtime]") {
  plan::Program p = program(4);
  kernel(p, {0}, {1});
  addAllReduce(p, 1);
  plan::Send *send = p.add_instructions()->mutable_send();
  send->set_buffer(1);
  plan::Recv *recv = p.add_instructions()->mutable_recv();
  recv->set_buffer(2);
  kernel(p, {2}, {3});
  StreamSchedule schedule = scheduleStreams(p);
  CHECK(schedule.stream ==
        std::vector<Stream>{Stream::Compute, Stream::Communication,
                            Stream::Communication, Stream::Communication,
                            Stream::Compute});
  // The all-reduce reads the kernel's result; the last kernel reads what
  // the receive wrote. The send follows the all-reduce on its own stream.
  CHECK(singleWaits(schedule) == std::vector<int64_t>{-1, 0, -1, -1, 3});
  CHECK(schedule.awaited == std::vector<bool>{true, false, false, true, false});
}

TEST_CASE("stream schedule: a gradient's all-reduce overlaps later kernels",
          "[runtime]") {
  // 0: g1 = relu(x); 1: all_reduce(g1); 2: g2 = relu(x); 3: y = relu(g1)
  plan::Program p = program(4);
  kernel(p, {0}, {1});
  addAllReduce(p, 1);
  kernel(p, {0}, {2});
  kernel(p, {1}, {3});
  StreamSchedule schedule = scheduleStreams(p);
  CHECK(singleWaits(schedule)[2] == -1); // runs under the all-reduce
  CHECK(singleWaits(schedule)[3] == 1);  // needs the reduced gradient
}

TEST_CASE("stream schedule: write after read and write after write",
          "[runtime]") {
  SECTION("a kernel overwriting what a collective still reads") {
    // 0: all_gather 0 -> 1; 1: kernel writes 0.
    plan::Program p = program(2);
    plan::Collective *gather = p.add_instructions()->mutable_collective();
    gather->set_kind(plan::Collective::ALL_GATHER);
    gather->set_input(0);
    gather->set_output(1);
    kernel(p, {}, {0});
    CHECK(singleWaits(scheduleStreams(p)) == std::vector<int64_t>{-1, 0});
  }
  SECTION("a receive into a buffer a kernel wrote") {
    plan::Program p = program(2);
    kernel(p, {1}, {0});
    p.add_instructions()->mutable_recv()->set_buffer(0);
    CHECK(singleWaits(scheduleStreams(p)) == std::vector<int64_t>{-1, 0});
  }
  SECTION("a read by the same stream needs no wait") {
    plan::Program p = program(3);
    kernel(p, {0}, {1});
    kernel(p, {1}, {2});
    kernel(p, {2}, {1});
    StreamSchedule schedule = scheduleStreams(p);
    CHECK(singleWaits(schedule) == std::vector<int64_t>{-1, -1, -1});
    CHECK(schedule.awaited == std::vector<bool>{false, false, false});
  }
  SECTION("one wait for the latest of several") {
    // Two all-reduces, then a kernel reading both: the second suffices.
    plan::Program p = program(3);
    addAllReduce(p, 0);
    addAllReduce(p, 1);
    kernel(p, {0, 1}, {2});
    StreamSchedule schedule = scheduleStreams(p);
    CHECK(singleWaits(schedule)[2] == 1);
    CHECK(schedule.awaited == std::vector<bool>{false, true, false});
  }
}

TEST_CASE("stream schedule: buffers that share arena bytes", "[runtime]") {
  // 0: all_gather 0 -> 1 (communication); 1: kernel writes 2, which reuses
  // buffer 0's bytes once the gather has read them.
  plan::Program p = program(3);
  plan::Collective *gather = p.add_instructions()->mutable_collective();
  gather->set_kind(plan::Collective::ALL_GATHER);
  gather->set_input(0);
  gather->set_output(1);
  kernel(p, {1}, {2});
  SECTION("apart: no wait but for the data") {
    p.mutable_buffers(0)->set_arena_offset(0);
    p.mutable_buffers(1)->set_arena_offset(16);
    p.mutable_buffers(2)->set_arena_offset(32);
    CHECK(singleWaits(scheduleStreams(p)) == std::vector<int64_t>{-1, 0});
  }
  SECTION("shared: the write waits for the gather's read") {
    // A kernel that reads nothing the gather writes: only the shared bytes
    // order it after the gather.
    plan::Program q = program(3);
    *q.add_instructions() = p.instructions(0);
    kernel(q, {}, {2});
    q.mutable_buffers(0)->set_arena_offset(0);
    q.mutable_buffers(1)->set_arena_offset(16);
    q.mutable_buffers(2)->set_arena_offset(0);
    CHECK(singleWaits(scheduleStreams(q)) == std::vector<int64_t>{-1, 0});
    q.mutable_buffers(2)->set_arena_offset(32);
    CHECK(singleWaits(scheduleStreams(q)) == std::vector<int64_t>{-1, -1});
  }
}

TEST_CASE("stream schedule: a gradient's reduction on the gradients stream",
          "[runtime]") {
  // 0: g = relu(x); 1: all_reduce(g), feeds_update; 2: a = relu(x);
  // 3: all_gather a -> b (the backward's); 4: c = relu(b); 5: reads g, b.
  plan::Program p = program(6);
  kernel(p, {0}, {1});
  addAllReduce(p, 1);
  p.mutable_instructions(1)->mutable_collective()->set_feeds_update(true);
  kernel(p, {0}, {2});
  plan::Collective *gather = p.add_instructions()->mutable_collective();
  gather->set_kind(plan::Collective::ALL_GATHER);
  gather->set_input(2);
  gather->set_output(3);
  kernel(p, {3}, {4});
  kernel(p, {1, 3}, {5});
  StreamSchedule schedule = scheduleStreams(p);
  CHECK(schedule.stream ==
        std::vector<Stream>{Stream::Compute, Stream::Gradients, Stream::Compute,
                            Stream::Communication, Stream::Compute,
                            Stream::Compute});
  using Waits = std::array<int64_t, kStreams>;
  // The gather waits for its kernel only, not for the reduction ahead of
  // it in the program.
  CHECK(schedule.waitFor[3] == Waits{2, -1, -1});
  CHECK(schedule.waitFor[1] == Waits{0, -1, -1});
  // The update waits on both communication streams.
  CHECK(schedule.waitFor[5] == Waits{-1, 3, 1});
  CHECK(schedule.awaited ==
        std::vector<bool>{true, true, true, true, false, false});
}
