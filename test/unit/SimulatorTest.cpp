//===- SimulatorTest.cpp - parplan simulate's discrete-event model --------===//
//
// Hand-built plans on a small cluster, each timed by hand from the cost
// formulas the simulator must use: kernels in turn, a collective waiting
// for its last member, a receive for its message, the communication
// stream beside the compute stream, and a two-stage pipeline replaying the
// cost model's own pipeline timeline. The trace it writes is checked
// against the trace-event format.
//
//===----------------------------------------------------------------------===//

#include "parplan/Simulate/Simulator.h"
#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Collectives.h"
#include "parplan/Cost/Compute.h"
#include "parplan/Cost/CrossMesh.h"
#include "parplan/Runtime/Trace.h"
#include "parplan/Schedule/Pipeline.h"
#include "parplan/Simulate/Report.h"

#include "MlpPlan.h"

#include "llvm/Support/JSON.h"

#include <catch2/catch.hpp>

#include <set>
#include <sstream>

using namespace parplan;
using namespace parplan::testing;
using simulate::SimulateOptions;
using simulate::Simulation;

namespace {

/// Two hosts of two devices: fast links within a host, a slow one between.
cost::Cluster testCluster(int64_t devicesPerHost = 2) {
  std::string text = R"(name: sim-test
device_types:
  - name: gpu
    memory: 1 GB
    memory_bandwidth: 1000 GB/s
    peak_flops: {f32: 10 TFLOP/s}
    compute_efficiency: 1
nodes:
  - {name: h0, device_type: gpu, devices: )" +
                     std::to_string(devicesPerHost) + R"(}
  - {name: h1, device_type: gpu, devices: )" +
                     std::to_string(devicesPerHost) + R"(}
links:
  intra_node: {bandwidth: 100 GB/s, latency: 1 us}
  inter_node: {bandwidth: 10 GB/s, latency: 10 us}
)";
  std::string error;
  std::optional<cost::Cluster> cluster =
      cost::parseCluster(text, "sim-test.yaml", error);
  REQUIRE(cluster);
  return *cluster;
}

/// A kernel carrying the cost model's figures.
plan::Kernel *pricedKernel(plan::Program &program, const std::string &op,
                           std::vector<int64_t> operands,
                           std::vector<int64_t> results, double flops) {
  plan::Kernel *kernel = addKernel(program, op, operands, results);
  kernel->set_flops(flops);
  kernel->set_bytes(0);
  kernel->set_compute_type("f32");
  return kernel;
}

double seconds(const cost::Cluster &cluster, double flops) {
  return *cost::computeTime(flops, 0, cluster.deviceTypeOf(0),
                            cost::ComputeType::F32);
}

Simulation simulated(const plan::Plan &plan, const cost::Cluster &cluster,
                     int streams = 2, bool trace = false) {
  REQUIRE(runtime::checkPlan(plan).error == "");
  SimulateOptions options;
  options.streams = streams;
  options.trace = trace;
  Simulation result;
  runtime::Status status =
      simulate::simulatePlan(plan, cluster, options, result);
  INFO(status.error);
  REQUIRE(status.ok());
  return result;
}

/// A plan over a one-axis mesh of `devices` devices, with a group of
/// them all: one program per device, or one they all run (`shared`).
plan::Plan devicePlan(int64_t devices, bool shared = false) {
  plan::Plan plan;
  plan.add_mesh_shape(devices);
  plan::Group &all = *plan.add_groups();
  all.set_name("all");
  for (int64_t d = 0; d < devices; ++d) {
    all.add_devices(d);
    if (d > 0 && shared) {
      plan.mutable_programs(0)->add_devices(d);
      continue;
    }
    plan::Program &program = *plan.add_programs();
    program.add_devices(d);
    program.set_loss(-1);
  }
  return plan;
}

} // namespace

TEST_CASE("kernels run in turn at the cost model's times", "[simulate]") {
  cost::Cluster cluster = testCluster();
  plan::Plan plan = devicePlan(1);
  plan::Program &program = *plan.mutable_programs(0);
  addBuffer(program, "x", {256, 256}, plan::Buffer::PARAMETER);
  addBuffer(program, "y", {256, 256});
  addBuffer(program, "z", {256, 256});
  pricedKernel(program, "relu", {0}, {1}, 2e9);
  pricedKernel(program, "relu", {1}, {2}, 3e9);
  // A helper without figures: timed by its buffers' bytes.
  addKernel(program, "relu", {2}, {1});
  Simulation result = simulated(plan, cluster);
  double helper = 2 * 256 * 256 * 4 / 1000e9;
  CHECK(result.stepSeconds ==
        Approx(seconds(cluster, 2e9) + seconds(cluster, 3e9) + helper));
  CHECK(result.unpricedKernels == 1);
  CHECK(result.unpricedSeconds == Approx(helper));
  REQUIRE(result.classes.size() == 1);
  CHECK(result.classes[0].computeBusy == Approx(result.stepSeconds));
  CHECK(result.classes[0].idle == Approx(0).margin(1e-15));
  // The critical path is every kernel, the longest first.
  REQUIRE(result.criticalOps.size() == 1);
  CHECK(result.criticalOps[0].op == "relu");
  CHECK(result.criticalOps[0].count == 3);
  CHECK(result.criticalCompute == Approx(result.stepSeconds));
  // Memory: the parameter and the two temporaries live at once.
  CHECK(result.classes[0].peakMemory == 3 * 256 * 256 * 4);
}

TEST_CASE("a collective starts when its last member is ready", "[simulate]") {
  cost::Cluster cluster = testCluster();
  plan::Plan plan = devicePlan(2);
  for (int d = 0; d < 2; ++d) {
    plan::Program &program = *plan.mutable_programs(d);
    addBuffer(program, "x", {1024}, plan::Buffer::PARAMETER);
    addBuffer(program, "g", {1024});
    // Device 1 computes three times as long before the all-reduce.
    pricedKernel(program, "relu", {0}, {1}, d == 0 ? 1e9 : 3e9);
    addAllReduce(program, 1);
  }
  Simulation result = simulated(plan, cluster);
  double reduce = cost::collectiveTime(cost::Collective::AllReduce, 2, 1024 * 4,
                                       cluster.link(0, 1));
  CHECK(result.stepSeconds == Approx(seconds(cluster, 3e9) + reduce));
  // Device 0 waited on its communication stream for device 1.
  CHECK(result.classes[0].communicationBusy ==
        Approx(reduce + seconds(cluster, 2e9)).epsilon(1e-9));
  CHECK(result.classes[1].communicationBusy == Approx(reduce));
  CHECK(result.classes[0].idle == Approx(seconds(cluster, 2e9) + reduce));
}

TEST_CASE("the communication stream overlaps kernels that do not need it",
          "[simulate]") {
  cost::Cluster cluster = testCluster();
  plan::Plan plan = devicePlan(2, /*shared=*/true);
  plan::Program &program = *plan.mutable_programs(0);
  addBuffer(program, "x", {1024}, plan::Buffer::PARAMETER);
  addBuffer(program, "a", {1024});
  addBuffer(program, "b", {1024});
  addBuffer(program, "g", {1 << 20}, plan::Buffer::PARAMETER);
  pricedKernel(program, "relu", {0}, {1}, 4e9);
  // Reads and writes only g: nothing before it writes g, nothing after
  // reads it.
  addAllReduce(program, 3);
  pricedKernel(program, "relu", {1}, {2}, 4e9);
  double reduce = cost::collectiveTime(cost::Collective::AllReduce, 2,
                                       (1 << 20) * 4.0, cluster.link(0, 1));
  double kernels = 2 * seconds(cluster, 4e9);
  Simulation two = simulated(plan, cluster, 2);
  CHECK(two.stepSeconds == Approx(std::max(kernels, reduce)));
  Simulation one = simulated(plan, cluster, 1);
  CHECK(one.stepSeconds == Approx(kernels + reduce));
}

TEST_CASE("a gradient's all-reduce on its own stream lets the backward's "
          "collectives pass it",
          "[simulate]") {
  // A 2x2 mesh over two hosts: devices 0 and 1 (host h0) run program 0,
  // devices 2 and 3 (host h1) program 1, whose first kernel is three times
  // longer. Each reduces a gradient over mesh axis 0 (across the hosts:
  // feeds_update), then gathers a value over axis 1 (within its host).
  cost::Cluster cluster = testCluster();
  plan::Plan plan;
  plan.add_mesh_shape(2);
  plan.add_mesh_shape(2);
  for (int axis = 0; axis < 2; ++axis) {
    plan::Group &group = *plan.add_groups();
    group.set_name("axis" + std::to_string(axis));
    group.add_mesh_axes(axis);
  }
  for (int p = 0; p < 2; ++p) {
    plan::Program &program = *plan.add_programs();
    program.add_devices(2 * p);
    program.add_devices(2 * p + 1);
    program.set_loss(-1);
    addBuffer(program, "x", {1024}, plan::Buffer::PARAMETER); // 0
    addBuffer(program, "g", {1024}, plan::Buffer::PARAMETER); // 1
    addBuffer(program, "", {1024});                           // 2: a
    addBuffer(program, "", {2048});                           // 3: b
    addBuffer(program, "", {2048});                           // 4: c
    for (int b = 0; b < 2; ++b) // parameters: whole on both mesh axes
      program.mutable_buffers(b)->add_splits(-1);
    pricedKernel(program, "relu", {0}, {1}, p == 0 ? 1e9 : 3e9);
    addAllReduce(program, 1);
    program.mutable_instructions(1)->mutable_collective()->set_group("axis0");
    program.mutable_instructions(1)->mutable_collective()->set_feeds_update(
        true);
    pricedKernel(program, "relu", {0}, {2}, 1e9);
    plan::Collective *gather = program.add_instructions()->mutable_collective();
    gather->set_kind(plan::Collective::ALL_GATHER);
    gather->set_group("axis1");
    gather->set_input(2);
    gather->set_output(3);
    pricedKernel(program, "relu", {3}, {4}, 1e9);
  }
  double kernel = seconds(cluster, 1e9);
  double reduce = cost::collectiveTime(cost::Collective::AllReduce, 2,
                                       1024 * 4.0, cluster.link(0, 2));
  auto gatherStart = [&](int streams) {
    Simulation result = simulated(plan, cluster, streams, true);
    for (const runtime::TraceEvent &event : result.trace.events)
      if (event.process == 0 && event.label.op == "all_gather")
        return event.start;
    FAIL("no all_gather of device 0");
    return 0.0;
  };
  // Behind the all-reduce, device 0's gather waits for program 1's long
  // kernel; on the gradients stream, only for its own.
  CHECK(gatherStart(2) == Approx(3 * kernel + reduce));
  CHECK(gatherStart(3) == Approx(2 * kernel));
  // Drawn on the gradients row where that stream runs them, every one.
  for (int streams : {2, 3}) {
    Simulation result = simulated(plan, cluster, streams, true);
    int reductions = 0, onGradients = 0;
    for (const runtime::TraceEvent &event : result.trace.events)
      if (event.label.op == "all_reduce") {
        ++reductions;
        onGradients += event.thread == runtime::TraceThread::Gradients;
      }
    CHECK(reductions == 4);
    CHECK(onGradients == (streams == 3 ? reductions : 0));
  }
}

TEST_CASE("the step's reductions run under the last micro-batch's backward",
          "[simulate]") {
  // A gradient summed over 2 micro-batches where the backward completes it,
  // then more backward, then (once per step) its all-reduce: the executor
  // runs the last backward and the once-per-step part as one range, so the
  // all-reduce starts when the sum is complete, under the rest of that
  // backward (runtime::StepOrder::updateWithLastTask).
  cost::Cluster cluster = testCluster();
  plan::Plan plan = devicePlan(2, /*shared=*/true);
  plan.set_micro_batches(2);
  plan::Program &program = *plan.mutable_programs(0);
  addBuffer(program, "x", {1024}, plan::Buffer::PARAMETER);
  addBuffer(program, "a", {1024});
  addBuffer(program, "b", {1024});
  addBuffer(program, "sum", {1 << 20}, plan::Buffer::ACCUMULATOR);
  addBuffer(program, "g", {1 << 20});
  addBuffer(program, "y", {1 << 20}, plan::Buffer::PARAMETER);
  pricedKernel(program, "relu", {0}, {1}, 4e9);
  program.set_backward_begin(1);
  pricedKernel(program, "relu", {5}, {4}, 1e9);
  pricedKernel(program, "accumulate", {3, 4}, {3}, 1e9);
  pricedKernel(program, "relu", {1}, {2}, 2e8);
  program.set_update_begin(4);
  addAllReduce(program, 3);
  runtime::StepOrder order = runtime::stepOrder(plan, program);
  CHECK(order.updateWithLastTask);
  double reduce = cost::collectiveTime(cost::Collective::AllReduce, 2,
                                       (1 << 20) * 4.0, cluster.link(0, 1));
  double trailing = seconds(cluster, 2e8);
  REQUIRE(reduce > trailing);
  double micro = seconds(cluster, 4e9) + 2 * seconds(cluster, 1e9) + trailing;
  Simulation two = simulated(plan, cluster, 2);
  CHECK(two.stepSeconds == Approx(2 * micro + reduce - trailing));
  Simulation one = simulated(plan, cluster, 1);
  CHECK(one.stepSeconds == Approx(2 * micro + reduce));
}

TEST_CASE("the copies of parameters run once, before the micro-batches",
          "[simulate]") {
  // A parameter's copy (before forward_begin) and a forward reading it, in
  // 4 micro-batches: the copy runs once, the forward 4 times, as the
  // executor runs them (runtime::StepOrder::forwardBegin).
  cost::Cluster cluster = testCluster();
  plan::Plan plan = devicePlan(1);
  plan.set_micro_batches(4);
  plan::Program &program = *plan.mutable_programs(0);
  addBuffer(program, "w", {1024}, plan::Buffer::PARAMETER);
  addBuffer(program, "copy", {1024});
  addBuffer(program, "y", {1024});
  addBuffer(program, "sum", {1024}, plan::Buffer::ACCUMULATOR);
  pricedKernel(program, "relu", {0}, {1}, 3e9);
  program.set_forward_begin(1);
  pricedKernel(program, "relu", {1}, {2}, 1e9);
  pricedKernel(program, "accumulate", {3, 2}, {3}, 1e9);
  program.set_update_begin(3);
  runtime::StepOrder order = runtime::stepOrder(plan, program);
  CHECK(order.forwardBegin == 1);
  REQUIRE(order.tasks.size() == 8);
  CHECK(order.taskRange(0) == std::pair<int64_t, int64_t>{1, 3});
  Simulation result = simulated(plan, cluster, 2, true);
  CHECK(result.stepSeconds ==
        Approx(seconds(cluster, 3e9) + 4 * 2 * seconds(cluster, 1e9)));
  // Of no micro-batch in the trace.
  REQUIRE_FALSE(result.trace.events.empty());
  CHECK(result.trace.events.front().label.op == "relu");
  CHECK(result.trace.events.front().microBatch < 0);
}

TEST_CASE("a receive ends when its message arrives", "[simulate]") {
  cost::Cluster cluster = testCluster();
  plan::Plan plan = devicePlan(2);
  plan::Program &sender = *plan.mutable_programs(0);
  addBuffer(sender, "x", {4096}, plan::Buffer::PARAMETER);
  addBuffer(sender, "y", {4096});
  pricedKernel(sender, "relu", {0}, {1}, 5e9);
  plan::Send &send = *sender.add_instructions()->mutable_send();
  send.set_buffer(1);
  send.set_peer(1);
  send.set_tag(7);
  plan::Program &receiver = *plan.mutable_programs(1);
  addBuffer(receiver, "y", {4096});
  addBuffer(receiver, "z", {4096});
  plan::Recv &recv = *receiver.add_instructions()->mutable_recv();
  recv.set_buffer(0);
  recv.set_peer(0);
  recv.set_tag(7);
  pricedKernel(receiver, "relu", {0}, {1}, 1e9);
  Simulation result = simulated(plan, cluster, 2, true);
  cost::Link link = cluster.link(0, 1);
  double message = link.latency + 4096 * 4 / link.bandwidth;
  CHECK(result.stepSeconds ==
        Approx(seconds(cluster, 5e9) + message + seconds(cluster, 1e9)));
  // The path goes back through the send to the sender's kernel.
  CHECK(result.criticalCompute ==
        Approx(seconds(cluster, 5e9) + seconds(cluster, 1e9)));
  CHECK(result.criticalCommunication == Approx(message));
  // One arrow, from the send to the receive.
  REQUIRE(result.trace.flows.size() == 1);
  CHECK(result.trace.events[result.trace.flows[0].from].label.op == "send");
  CHECK(result.trace.events[result.trace.flows[0].to].label.op == "recv");
}

TEST_CASE("messages from the devices of one program each arrive",
          "[simulate]") {
  // Devices 0 and 1 share a program sending to device 2, which receives
  // from each: one class of senders, two messages.
  cost::Cluster cluster = testCluster();
  plan::Plan plan = devicePlan(3);
  plan.mutable_programs(0)->add_devices(1);
  plan.mutable_programs()->DeleteSubrange(1, 1);
  plan::Program &senders = *plan.mutable_programs(0);
  addBuffer(senders, "x", {256}, plan::Buffer::PARAMETER);
  addBuffer(senders, "y", {256});
  pricedKernel(senders, "relu", {0}, {1}, 2e9);
  plan::Send &send = *senders.add_instructions()->mutable_send();
  send.set_buffer(1);
  send.set_peer(2);
  send.set_tag(3);
  plan::Program &receiver = *plan.mutable_programs(1);
  addBuffer(receiver, "a", {256});
  addBuffer(receiver, "b", {256});
  addBuffer(receiver, "c", {256});
  for (int64_t peer : {0, 1}) {
    plan::Recv &recv = *receiver.add_instructions()->mutable_recv();
    recv.set_buffer(peer);
    recv.set_peer(peer);
    recv.set_tag(3);
  }
  pricedKernel(receiver, "add", {0, 1}, {2}, 1e9);
  Simulation result = simulated(plan, cluster);
  cost::Link link = cluster.link(0, 2);
  CHECK(result.stepSeconds ==
        Approx(seconds(cluster, 2e9) + link.latency + 256 * 4 / link.bandwidth +
               seconds(cluster, 1e9)));
}

TEST_CASE("programs that wait on one another for ever are an error",
          "[simulate]") {
  cost::Cluster cluster = testCluster();
  plan::Plan plan = devicePlan(2);
  // Device 0 all-reduces over both devices; device 1 never does.
  addBuffer(*plan.mutable_programs(0), "g", {16});
  addAllReduce(*plan.mutable_programs(0), 0);
  addBuffer(*plan.mutable_programs(1), "g", {16});
  // checkPlan refuses such a plan (checkProgress); the simulator, which
  // walks the step anyway, says so too rather than hang.
  CHECK(runtime::checkPlan(plan).error ==
        "the step never ends: device 0 waits forever at instruction 0 of "
        "program 0 (all_reduce over 'all') for device 1, which ends its step "
        "without coming to it");
  Simulation result;
  runtime::Status status =
      simulate::simulatePlan(plan, cluster, SimulateOptions(), result);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error == "the programs wait on one another for ever: devices "
                        "0 wait at instruction 0 (all_reduce) on group 'all'");
}

TEST_CASE("a cluster without the plan's devices is an error", "[simulate]") {
  plan::Plan plan = devicePlan(2);
  plan.clear_mesh_shape();
  plan.add_mesh_shape(8);
  Simulation result;
  runtime::Status status =
      simulate::simulatePlan(plan, testCluster(), SimulateOptions(), result);
  CHECK(status.error ==
        "the plan runs on 8 devices, but cluster 'sim-test' has 4");
}

namespace {

/// Two stages of one device each, on two hosts: a forward kernel, the
/// activation's move to the next stage, and back its gradient's, over
/// `microBatches` micro-batches by `schedule`.
plan::Plan pipelinePlan(int64_t microBatches, const std::string &schedule,
                        double forward, double backward) {
  plan::Plan plan;
  plan.add_mesh_shape(2);
  plan.set_micro_batches(microBatches);
  plan.set_schedule(schedule);
  addMesh(plan, "stage0", {0});
  addMesh(plan, "stage1", {1});
  auto addMove = [&](const std::string &name, const std::string &from,
                     const std::string &to, int64_t sender, int64_t receiver) {
    plan::CrossMeshMove &move = *plan.add_cross_mesh_moves();
    move.set_name(name);
    move.set_dtype(plan::F32);
    move.add_logical_shape(64);
    move.add_logical_shape(1024);
    move.set_source_mesh(from);
    move.add_source_splits(-1);
    move.set_destination_mesh(to);
    move.add_destination_splits(-1);
    plan::CrossMeshTile &tile = *move.add_tiles();
    tile.add_offsets(0);
    tile.add_offsets(0);
    tile.add_sizes(64);
    tile.add_sizes(1024);
    plan::CrossMeshTransfer &transfer = *move.add_transfers();
    transfer.set_tile(0);
    transfer.set_sender(sender);
    transfer.add_receivers(receiver);
  };
  addMove("h", "stage0", "stage1", 0, 1);
  addMove("dh", "stage1", "stage0", 1, 0);
  auto part = [](plan::CrossMeshPart *part, int64_t move, int64_t block) {
    part->set_move(move);
    part->set_block(block);
    part->set_scratch(-1);
  };
  plan::Program &first = *plan.add_programs();
  first.set_mesh("stage0");
  first.add_devices(0);
  first.set_loss(-1);
  addBuffer(first, "x", {64, 1024}, plan::Buffer::INPUT);
  addBuffer(first, "h", {64, 1024});
  addBuffer(first, "dh", {64, 1024});
  addBuffer(first, "dx", {64, 1024});
  pricedKernel(first, "relu", {0}, {1}, forward);
  part(first.add_instructions()->mutable_cross_mesh_send(), 0, 1);
  first.set_backward_begin(2);
  part(first.add_instructions()->mutable_cross_mesh_recv(), 1, 2);
  pricedKernel(first, "relu", {2}, {3}, backward);
  first.set_update_begin(4);
  plan::Program &second = *plan.add_programs();
  second.set_mesh("stage1");
  second.add_devices(1);
  second.set_loss(-1);
  addBuffer(second, "h", {64, 1024});
  addBuffer(second, "y", {64, 1024});
  addBuffer(second, "dh", {64, 1024});
  part(second.add_instructions()->mutable_cross_mesh_recv(), 0, 0);
  pricedKernel(second, "relu", {0}, {1}, forward);
  second.set_backward_begin(2);
  pricedKernel(second, "relu", {1}, {2}, backward);
  part(second.add_instructions()->mutable_cross_mesh_send(), 1, 2);
  second.set_update_begin(4);
  return plan;
}

} // namespace

TEST_CASE("a pipeline replays the cost model's timeline", "[simulate]") {
  // One device per host: the stages' moves cross the slow link.
  cost::Cluster cluster = testCluster(1);
  double forward = 2e9, backward = 4e9;
  cost::ClusterIndex index(cluster);
  std::vector<cost::CrossMeshTile> tiles(1);
  tiles[0].bytes = 64 * 1024 * 4;
  double send = cost::timeCrossMesh(tiles, {{0, 0, {1}}}, index).seconds;
  CHECK(send == Approx(cluster.link(0, 1).latency +
                       tiles[0].bytes / cluster.link(0, 1).bandwidth));
  for (const char *name : {"gpipe", "1f1b", "eager-1f1b"}) {
    for (int64_t microBatches : {1, 2, 4}) {
      INFO(name << " with " << microBatches << " micro-batches");
      plan::Plan plan = pipelinePlan(microBatches, name, forward, backward);
      Simulation result = simulated(plan, cluster);
      schedule::PipelineCosts costs;
      costs.forward = {seconds(cluster, forward), seconds(cluster, forward)};
      costs.backward = {seconds(cluster, backward), seconds(cluster, backward)};
      costs.sendForward = {send};
      costs.sendBackward = {send};
      schedule::PipelineTimeline timeline =
          schedule::simulateStep(*schedule::parsePipelineSchedule(name),
                                 {2, microBatches, 1}, costs, {0, 0});
      CHECK(result.stepSeconds == Approx(timeline.seconds));
      CHECK(result.classes[0].computeBusy == Approx(timeline.busy[0]));
      CHECK(result.classes[1].stage == 1);
    }
  }
}

TEST_CASE("the trace is Chrome trace-event JSON", "[simulate][trace]") {
  cost::Cluster cluster = testCluster(1);
  plan::Plan plan = pipelinePlan(4, "1f1b", 2e9, 4e9);
  Simulation result = simulated(plan, cluster, 2, true);
  std::ostringstream out;
  runtime::writeChromeTrace(result.trace, out);
  std::string text = out.str();
  // Deterministic.
  std::ostringstream again;
  runtime::writeChromeTrace(result.trace, again);
  CHECK(again.str() == text);

  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  REQUIRE(static_cast<bool>(parsed));
  const llvm::json::Object *root = parsed->getAsObject();
  REQUIRE(root);
  CHECK(root->getString("displayTimeUnit") == "ms");
  const llvm::json::Array *events = root->getArray("traceEvents");
  REQUIRE(events);
  std::set<int64_t> processes;
  std::set<std::pair<int64_t, std::string>> threads;
  std::map<int64_t, int> flowEnds;
  int slices = 0, counters = 0, moves = 0;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *event = value.getAsObject();
    REQUIRE(event);
    std::optional<llvm::StringRef> phase = event->getString("ph");
    REQUIRE(phase);
    std::optional<int64_t> pid = event->getInteger("pid");
    REQUIRE(pid);
    REQUIRE(event->getString("name"));
    if (*phase == "M") {
      const llvm::json::Object *args = event->getObject("args");
      REQUIRE(args);
      if (event->getString("name") == "process_name")
        processes.insert(*pid);
      if (event->getString("name") == "thread_name")
        threads.insert(
            {*event->getInteger("tid"), args->getString("name")->str()});
      continue;
    }
    std::optional<double> ts = event->getNumber("ts");
    REQUIRE(ts);
    CHECK(*ts >= 0);
    if (*phase == "X") {
      ++slices;
      REQUIRE(event->getInteger("tid"));
      std::optional<double> duration = event->getNumber("dur");
      REQUIRE(duration);
      CHECK(*duration >= 0);
      CHECK(*ts + *duration <= result.stepSeconds * 1e6 + 1e-3);
      const llvm::json::Object *args = event->getObject("args");
      REQUIRE(args);
      REQUIRE(args->getString("op"));
      REQUIRE(args->getString("node"));
      REQUIRE(args->getNumber("bytes"));
      REQUIRE(args->getNumber("flops"));
      REQUIRE(args->getString("pass"));
      // Named by op and node.
      CHECK(event->getString("name")->starts_with(*args->getString("op")));
      moves += args->getString("op") == "cross_mesh_move";
    } else if (*phase == "s" || *phase == "f") {
      std::optional<int64_t> id = event->getInteger("id");
      REQUIRE(id);
      flowEnds[*id] += *phase == "s" ? 1 : 10;
      if (*phase == "f")
        CHECK(event->getString("bp") == "e");
    } else if (*phase == "C") {
      ++counters;
      const llvm::json::Object *args = event->getObject("args");
      REQUIRE(args);
      REQUIRE(args->getNumber("bytes"));
    } else {
      FAIL("unexpected phase " << phase->str());
    }
  }
  // A process per device, a thread per stream, a move and its arrow per
  // micro-batch each way.
  CHECK(processes == std::set<int64_t>{0, 1});
  CHECK(threads.count({0, "compute"}) == 1);
  CHECK(threads.count({1, "communication"}) == 1);
  CHECK(threads.count({2, "transfers"}) == 1);
  CHECK(threads.count({3, "gradients"}) == 1);
  CHECK(moves == 2 * 4);
  CHECK(flowEnds.size() == 2 * 4);
  for (const auto &[id, ends] : flowEnds)
    CHECK(ends == 11);
  CHECK(slices == static_cast<int>(result.trace.events.size()));
  CHECK(counters > 0);
}

TEST_CASE("the report is one page that fetches nothing", "[simulate][report]") {
  cost::Cluster cluster = testCluster(1);
  plan::Plan plan = pipelinePlan(4, "1f1b", 2e9, 4e9);
  REQUIRE(runtime::checkPlan(plan).ok());
  SimulateOptions options;
  options.timelineColumns = 50;
  Simulation simulation;
  REQUIRE(simulate::simulatePlan(plan, cluster, options, simulation).ok());
  // Each lane's columns hold its stream's busy seconds.
  REQUIRE(simulation.timelines.size() == 2);
  double busy = 0;
  for (const simulate::TimelineColumn &column :
       simulation.timelines[0].threads[0])
    busy += column.compute;
  CHECK(busy == Approx(simulation.classes[0].computeBusy));
  simulate::ReportInput input;
  input.title = "pipe<2> & co";
  input.plan = &plan;
  input.cluster = &cluster;
  input.simulation = &simulation;
  input.facts = {{"predicted step", "1.00 ms"}};
  input.layouts = {{"w<0>", "[S(0)]"}};
  std::ostringstream out;
  simulate::writeReport(input, out);
  std::string page = out.str();
  std::ostringstream again;
  simulate::writeReport(input, again);
  CHECK(again.str() == page);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("</html>") != std::string::npos);
  // Nothing from elsewhere.
  for (const char *fetch : {"<script", "<link", "<img", "src=", "url("})
    CHECK(page.find(fetch) == std::string::npos);
  // Names are escaped.
  CHECK(page.find("pipe&lt;2&gt; &amp; co") != std::string::npos);
  CHECK(page.find("pipe<2>") == std::string::npos);
  CHECK(page.find("<td>w&lt;0&gt;</td>") != std::string::npos);
  // Both stages drawn, in their colours; a lane per stream of each class.
  for (const char *name : {">stage0<", ">stage1<"})
    CHECK(page.find(name) != std::string::npos);
  CHECK(page.find("fill=\"" + simulate::stageColor(1) + "\"") !=
        std::string::npos);
  CHECK(page.find("devices 0 (stage 0) compute") != std::string::npos);
  CHECK(page.find("devices 1 (stage 1) compute") != std::string::npos);
  CHECK(page.find(std::string("fill=\"") + simulate::kComputeColor) !=
        std::string::npos);
  CHECK(page.find(std::string("fill=\"") + simulate::kMoveColor) !=
        std::string::npos);
  CHECK(page.find("<h2>Critical path</h2>") != std::string::npos);
  CHECK(page.find("<td>cross_mesh_move</td>") != std::string::npos);
}
