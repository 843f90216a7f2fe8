//===- Simulator.cpp - a plan's training step under the cost model --------===//
//
// Each class of alike devices runs its program as far as it can: an
// instruction starts when its stream is free and what it waits for has
// ended; a collective, a receive or a move's receiving end that needs
// another class to get further first makes the class wait. The classes are
// run in turns until every one has finished the step, or none can go on
// (a deadlock, reported). A start is the latest of its inputs' times
// whichever class the turns take first, but for moves sharing a network
// card: each takes the first gap long enough from when it could start, so
// that of two moves wanting one card at once, the one the turns reach
// first goes first.
//
//===----------------------------------------------------------------------===//

#include "parplan/Simulate/Simulator.h"

#include "parplan/Cost/Collectives.h"
#include "parplan/Cost/Compute.h"
#include "parplan/Cost/CrossMesh.h"
#include "parplan/Runtime/StreamSchedule.h"
#include "parplan/Support/Text.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace parplan::simulate {

using runtime::Status;
using runtime::TraceThread;

namespace {

constexpr int64_t kNone = -1;

enum class Kind { Kernel, Collective, Send, Recv, MoveSend, MoveRecv };

/// What a class needs of an instruction, worked out once.
struct Step {
  Kind kind = Kind::Kernel;
  /// 0 compute, 1 communication, 2 gradients (runtime::Stream; always 0
  /// with one stream).
  int stream = 0;
  /// By stream: the instruction on it this one waits for, or kNone.
  std::array<int64_t, runtime::kStreams> waitFor = {kNone, kNone, kNone};
  /// Seconds it takes once started (a receive: 0, it ends when its
  /// message has arrived).
  double seconds = 0;
  bool unpriced = false;
  /// Collective: its group's index and the classes of the group's members.
  int64_t group = kNone;
  std::vector<int64_t> partners;
  /// Send and receive: the peer device, its class and the tag; a move: its
  /// index.
  int64_t peerDevice = kNone, peer = kNone, tag = 0, move = kNone;
};

/// One run of an instruction (or of a move, on the sender's links).
struct Run {
  double start = 0, end = 0;
  /// The run whose end this one could not start (or, for a receive, end)
  /// before: the critical path's previous link. kNone at the step's start.
  int64_t previous = kNone;
  int32_t deviceClass = 0;
  int32_t instruction = 0;
  /// The task it ran in (kNone: once per step, after the tasks).
  int32_t task = kNone;
  TraceThread thread = TraceThread::Compute;
};

/// When a network card (or a device's link within a node) is busy: sorted,
/// disjoint intervals, bookings that touch merged into one, each with the
/// run ending it. A move is booked into the first gap from its start that
/// is long enough on all its cards, so that a move the turns reach later
/// may still go first where the card is free then; merging keeps a card
/// busy for a whole pipeline one interval, so the search for a gap jumps
/// over it at once.
class Calendar {
public:
  /// The first busy interval overlapping [start, start + seconds), if any.
  const std::tuple<double, double, int64_t> *overlap(double start,
                                                     double seconds) const {
    auto after = std::upper_bound(
        busy.begin(), busy.end(), start,
        [](double t, const auto &booking) { return t < std::get<1>(booking); });
    if (after != busy.end() && std::get<0>(*after) < start + seconds)
      return &*after;
    return nullptr;
  }
  /// When the last booking ends (0 when none).
  double lastEnd() const { return busy.empty() ? 0 : std::get<1>(busy.back()); }
  /// Books [start, end) for `run`; the interval must be free.
  void book(double start, double end, int64_t run) {
    auto at = std::upper_bound(
        busy.begin(), busy.end(), start,
        [](double t, const auto &booking) { return t < std::get<0>(booking); });
    bool joinsBefore = at != busy.begin() && std::get<1>(*(at - 1)) == start;
    bool joinsAfter = at != busy.end() && std::get<0>(*at) == end;
    if (joinsBefore && joinsAfter) {
      std::get<1>(*(at - 1)) = std::get<1>(*at);
      std::get<2>(*(at - 1)) = std::get<2>(*at);
      busy.erase(at);
    } else if (joinsBefore) {
      std::get<1>(*(at - 1)) = end;
      std::get<2>(*(at - 1)) = run;
    } else if (joinsAfter) {
      std::get<0>(*at) = start;
    } else {
      busy.insert(at, {start, end, run});
    }
  }

private:
  std::vector<std::tuple<double, double, int64_t>> busy;
};

/// When a class reached something another class waits for, and the run
/// that decided it.
struct Arrival {
  double time = 0;
  int64_t run = kNone;
};

struct ClassState {
  // Where the class is: its task (tasks.size(): the once-per-step part),
  // the instruction, and the end of the range running.
  size_t task = 0;
  int64_t position = 0, end = 0;
  bool started = false, done = false;
  /// Running the once-per-step instructions before the first task.
  bool beforeTasks = false;
  double free[runtime::kStreams] = {0, 0, 0};
  int64_t last[runtime::kStreams] = {kNone, kNone, kNone};
  /// The run of each instruction in the range running (for waitFor).
  std::vector<int64_t> runOf;
  std::vector<uint32_t> rangeOf;
  uint32_t range = 0;
  /// Calls so far: per group, per (peer device, tag) received, per move
  /// sent and received.
  std::vector<int64_t> groupCalls;
  std::map<std::pair<int64_t, int64_t>, int64_t> received;
  std::vector<int64_t> moveSends, moveReceives;
  /// Activations kept aside for later backwards: bytes, and of which
  /// (micro-batch, chunk).
  double aside = 0;
  std::set<std::pair<int64_t, int64_t>> saved;
  /// The bytes last sampled for the trace.
  double lastMemory = -1;
};

struct ClassInfo {
  int64_t program = 0;
  int64_t representative = 0;
  const cost::DeviceType *type = nullptr;
  runtime::StepOrder order;
  std::vector<Step> steps;
  /// Bytes held throughout (all but temporaries), and the temporaries
  /// live at each instruction.
  double persistent = 0;
  std::vector<double> live;
  /// Per chunk: the bytes a backward reads of its forward (kept aside).
  std::vector<double> keptBytes;
};

class Simulator {
public:
  Simulator(const plan::Plan &plan, const cost::Cluster &cluster,
            const SimulateOptions &options, Simulation &result)
      : plan(plan), cluster(cluster), index(cluster), options(options),
        result(result) {}

  Status run();

private:
  Status buildClasses();
  Status buildSteps(ClassInfo &info, const runtime::DeviceProgram &instance);
  double kernelSeconds(const ClassInfo &info, const plan::Kernel &kernel,
                       const plan::Program &program, bool &unpriced) const;
  double moveSeconds(int64_t move);
  /// Runs class `c` as far as it can; true when it moved on.
  bool advance(int64_t c);
  /// Starts the class's next range, or marks it done.
  void nextRange(int64_t c);
  /// Runs instruction `state.position` of class `c`; false when it must
  /// wait for another class.
  bool step(int64_t c);
  void launchMoves(int64_t move);
  int64_t addRun(const Run &run);
  void criticalPath();
  void buildTrace();
  void buildTimelines();
  std::string describeWait(int64_t c) const;

  const plan::Plan &plan;
  const cost::Cluster &cluster;
  cost::ClusterIndex index;
  const SimulateOptions &options;
  Simulation &result;

  std::vector<ClassInfo> infos;
  std::vector<ClassState> states;
  std::vector<int64_t> classOfDevice;
  std::vector<Run> runs;
  std::vector<std::pair<int64_t, int64_t>> flows;
  std::map<std::string, int64_t> groupIndex;
  /// Per group, per class: when the class reached its k-th call on it.
  std::vector<std::vector<std::vector<Arrival>>> collectiveArrivals;
  /// Per (sending class, receiving device, tag): each message's end.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<Arrival>>
      messages;
  /// Per move: its source classes, when each reached its k-th send, each
  /// occurrence's end, its seconds and the cards (or links) it holds.
  struct MoveState {
    std::vector<int64_t> sources;
    std::map<int64_t, std::vector<Arrival>> sent;
    std::vector<Arrival> done;
    std::optional<double> seconds;
    /// The cards (and links within nodes) its transfers use: a host's
    /// card out, then in, then a device's link out, then in.
    std::vector<size_t> resources;
  };
  std::vector<MoveState> moves;
  std::vector<Calendar> calendars;
  /// With a trace: a class's bytes from a time on.
  struct MemorySample {
    int64_t deviceClass = 0;
    double time = 0, bytes = 0;
  };
  std::vector<MemorySample> memorySamples;
};

Status Simulator::run() {
  if (Status status = buildClasses(); !status.ok())
    return status;
  states.assign(infos.size(), ClassState());
  for (size_t c = 0; c < infos.size(); ++c) {
    ClassState &state = states[c];
    size_t count = infos[c].steps.size();
    state.runOf.assign(count, kNone);
    state.rangeOf.assign(count, 0);
    state.groupCalls.assign(groupIndex.size(), 0);
    state.moveSends.assign(moves.size(), 0);
    state.moveReceives.assign(moves.size(), 0);
  }
  // Every class's runs, and a move's per occurrence: reserved at once.
  size_t expected = 0;
  for (const ClassInfo &info : infos) {
    for (size_t t = 0; t < info.order.tasks.size(); ++t) {
      const auto &[begin, end] = info.order.taskRange(t);
      expected += static_cast<size_t>(end - begin);
    }
    if (!info.order.updateWithLastTask)
      expected +=
          info.steps.size() - static_cast<size_t>(info.order.updateBegin);
    expected += static_cast<size_t>(info.order.forwardBegin);
  }
  runs.reserve(expected + expected / 8);
  // Turns until every class is done or none can move.
  while (true) {
    bool moved = false, finished = true;
    for (size_t c = 0; c < infos.size(); ++c) {
      moved |= advance(static_cast<int64_t>(c));
      finished &= states[c].done;
    }
    if (finished)
      break;
    if (!moved) {
      std::string waits;
      for (size_t c = 0; c < infos.size() && waits.size() < 600; ++c)
        if (!states[c].done)
          waits += (waits.empty() ? "" : "; ") +
                   describeWait(static_cast<int64_t>(c));
      return Status::failure("the programs wait on one another for ever: " +
                             waits);
    }
  }
  for (size_t c = 0; c < infos.size(); ++c)
    result.stepSeconds = std::max({result.stepSeconds, states[c].free[0],
                                   states[c].free[1], states[c].free[2]});
  for (DeviceClass &figures : result.classes) {
    figures.idle = result.stepSeconds - figures.computeBusy;
    if (options.streams == 1)
      figures.idle -= figures.communicationBusy;
    figures.idle = std::max(0.0, figures.idle);
  }
  result.runs = static_cast<int64_t>(runs.size());
  criticalPath();
  if (options.trace)
    buildTrace();
  if (options.timelineColumns > 0)
    buildTimelines();
  return Status::success();
}

void Simulator::buildTimelines() {
  auto columns = static_cast<size_t>(options.timelineColumns);
  result.timelines.assign(infos.size(), ClassTimeline());
  for (ClassTimeline &timeline : result.timelines)
    for (std::vector<TimelineColumn> &thread : timeline.threads)
      thread.assign(columns, TimelineColumn());
  double width = result.stepSeconds / static_cast<double>(columns);
  if (!(width > 0))
    return;
  for (const Run &run : runs) {
    const Step &step = infos[static_cast<size_t>(run.deviceClass)]
                           .steps[static_cast<size_t>(run.instruction)];
    std::vector<TimelineColumn> &thread =
        result.timelines[static_cast<size_t>(run.deviceClass)]
            .threads[static_cast<int>(run.thread)];
    // The run's seconds in each column it spans.
    auto first = static_cast<size_t>(run.start / width);
    for (size_t column = first; column < columns; ++column) {
      double begin = static_cast<double>(column) * width;
      double seconds =
          std::min(run.end, begin + width) - std::max(run.start, begin);
      if (seconds <= 0)
        break;
      TimelineColumn &into = thread[column];
      (run.thread == TraceThread::Transfers ? into.moves
       : step.kind == Kind::Kernel          ? into.compute
                                            : into.communication) += seconds;
    }
  }
}

Status Simulator::buildClasses() {
  int64_t devices = runtime::planDevices(plan);
  if (cluster.numDevices() < devices)
    return Status::failure("the plan runs on " + std::to_string(devices) +
                           " devices, but cluster '" + cluster.name + "' has " +
                           std::to_string(cluster.numDevices()));
  for (int g = 0; g < plan.groups_size(); ++g)
    groupIndex[plan.groups(g).name()] = g;
  classOfDevice.assign(static_cast<size_t>(devices), kNone);
  std::map<std::pair<int64_t, std::string>, int64_t> classOf;
  for (int p = 0; p < plan.programs_size(); ++p)
    for (int64_t device : plan.programs(p).devices()) {
      const std::string &type = cluster.deviceTypeOf(device).name;
      auto [found, inserted] =
          classOf.try_emplace({p, type}, static_cast<int64_t>(infos.size()));
      if (inserted) {
        ClassInfo info;
        info.program = p;
        info.representative = device;
        info.type = &cluster.deviceTypeOf(device);
        infos.push_back(std::move(info));
        DeviceClass figures;
        figures.program = p;
        figures.stage = runtime::programStage(plan, plan.programs(p));
        figures.deviceType = type;
        figures.arenaBytes =
            static_cast<double>(plan.programs(p).arena_bytes());
        result.classes.push_back(std::move(figures));
      }
      classOfDevice[static_cast<size_t>(device)] = found->second;
      result.classes[static_cast<size_t>(found->second)].devices.push_back(
          device);
    }
  // Moves: the cards and links they hold. Moves through one card take
  // turns; those through others run at once (a card sends and receives at
  // once).
  moves.resize(static_cast<size_t>(plan.cross_mesh_moves_size()));
  auto hosts = static_cast<size_t>(cluster.nodes.size());
  auto allDevices = static_cast<size_t>(cluster.numDevices());
  calendars.assign(2 * (hosts + allDevices), Calendar());
  // A move between hosts holds their cards (its hops within a host, on
  // links many times faster, are left out); one within a host, the links
  // of its devices.
  for (int m = 0; m < plan.cross_mesh_moves_size(); ++m) {
    std::set<size_t> cards, links;
    for (const plan::CrossMeshTransfer &transfer :
         plan.cross_mesh_moves(m).transfers()) {
      int64_t from = transfer.sender();
      for (int64_t to : transfer.receivers()) {
        auto a = static_cast<size_t>(index.nodeOf(from)),
             b = static_cast<size_t>(index.nodeOf(to));
        if (a != b)
          cards.insert({a, hosts + b});
        else
          links.insert({2 * hosts + static_cast<size_t>(from),
                        2 * hosts + allDevices + static_cast<size_t>(to)});
        from = to;
      }
    }
    const std::set<size_t> &held = cards.empty() ? links : cards;
    moves[static_cast<size_t>(m)].resources.assign(held.begin(), held.end());
  }
  collectiveArrivals.assign(groupIndex.size(),
                            std::vector<std::vector<Arrival>>(infos.size()));
  for (ClassInfo &info : infos) {
    runtime::DeviceProgram instance;
    if (Status status =
            runtime::instantiateProgram(plan, info.representative, instance);
        !status.ok())
      return status;
    if (Status status = buildSteps(info, instance); !status.ok())
      return status;
  }
  for (size_t c = 0; c < infos.size(); ++c)
    for (const Step &step : infos[c].steps)
      if (step.kind == Kind::MoveSend) {
        std::vector<int64_t> &sources =
            moves[static_cast<size_t>(step.move)].sources;
        if (std::find(sources.begin(), sources.end(),
                      static_cast<int64_t>(c)) == sources.end())
          sources.push_back(static_cast<int64_t>(c));
      }
  return Status::success();
}

double Simulator::kernelSeconds(const ClassInfo &info,
                                const plan::Kernel &kernel,
                                const plan::Program &program,
                                bool &unpriced) const {
  const cost::DeviceType &device = *info.type;
  unpriced = kernel.compute_type().empty();
  if (!unpriced) {
    cost::ComputeType type = cost::parseComputeType(kernel.compute_type())
                                 .value_or(cost::ComputeType::F32);
    // A device without a peak for the type runs it at its f32 peak, as
    // the cost model prices it.
    std::optional<double> seconds =
        cost::computeTime(kernel.flops(), kernel.bytes(), device, type);
    if (!seconds)
      seconds = cost::computeTime(kernel.flops(), kernel.bytes(), device,
                                  cost::ComputeType::F32);
    return seconds.value_or(0);
  }
  double bytes = 0;
  for (int64_t b : kernel.operands())
    if (b >= 0)
      bytes += static_cast<double>(
          runtime::bufferBytes(program.buffers(static_cast<int>(b))));
  for (int64_t b : kernel.results())
    bytes += static_cast<double>(
        runtime::bufferBytes(program.buffers(static_cast<int>(b))));
  return cost::computeTime(0, bytes, device, cost::ComputeType::F32)
      .value_or(0);
}

double Simulator::moveSeconds(int64_t m) {
  MoveState &state = moves[static_cast<size_t>(m)];
  if (state.seconds)
    return *state.seconds;
  const plan::CrossMeshMove &move = plan.cross_mesh_moves(static_cast<int>(m));
  std::optional<runtime::DType> type = runtime::toRuntimeDType(move.dtype());
  double width = type ? static_cast<double>(runtime::byteWidth(*type)) : 0;
  std::vector<cost::CrossMeshTile> tiles;
  for (const plan::CrossMeshTile &region : move.tiles()) {
    cost::CrossMeshTile tile;
    double elements = 1;
    for (int64_t size : region.sizes())
      elements *= static_cast<double>(size);
    tile.bytes = static_cast<int64_t>(elements * width);
    tiles.push_back(std::move(tile));
  }
  std::vector<cost::CrossMeshTransfer> transfers;
  for (const plan::CrossMeshTransfer &transfer : move.transfers())
    transfers.push_back(
        {transfer.tile(),
         transfer.sender(),
         {transfer.receivers().begin(), transfer.receivers().end()}});
  state.seconds =
      cost::timeCrossMesh(tiles, std::move(transfers), index).seconds;
  return *state.seconds;
}

/// The slowest link between any two of `devices`: least bandwidth, most
/// latency (as a mesh axis's link, Mesh.h's axisLink).
cost::Link slowestLink(const cost::ClusterIndex &index,
                       const std::vector<int64_t> &devices) {
  cost::Link slowest{std::numeric_limits<double>::infinity(), 0};
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = i + 1; j < devices.size(); ++j) {
      cost::Link link = index.link(devices[i], devices[j]);
      slowest.bandwidth = std::min(slowest.bandwidth, link.bandwidth);
      slowest.latency = std::max(slowest.latency, link.latency);
    }
  return slowest;
}

cost::Collective collectiveOf(int kind) {
  switch (kind) {
  case plan::Collective::ALL_GATHER:
    return cost::Collective::AllGather;
  case plan::Collective::REDUCE_SCATTER:
    return cost::Collective::ReduceScatter;
  case plan::Collective::ALL_TO_ALL:
    return cost::Collective::AllToAll;
  case plan::Collective::BROADCAST:
    return cost::Collective::Broadcast;
  default:
    return cost::Collective::AllReduce;
  }
}

Status Simulator::buildSteps(ClassInfo &info,
                             const runtime::DeviceProgram &instance) {
  const plan::Program &program = plan.programs(static_cast<int>(info.program));
  info.order = runtime::stepOrder(plan, program);
  // One stream needs no schedule of two.
  runtime::StreamSchedule streams;
  if (options.streams > 1)
    streams = runtime::scheduleStreams(program, options.streams == 3);
  std::map<std::string, cost::Link> groupLinks;
  int count = program.instructions_size();
  info.steps.resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const plan::Instruction &instruction = program.instructions(i);
    Step &step = info.steps[static_cast<size_t>(i)];
    if (options.streams > 1) {
      step.stream = static_cast<int>(streams.stream[static_cast<size_t>(i)]);
      step.waitFor = streams.waitFor[static_cast<size_t>(i)];
    }
    runtime::TraceLabel label = runtime::traceLabel(plan, program, i);
    switch (instruction.op_case()) {
    case plan::Instruction::kKernel:
      step.kind = Kind::Kernel;
      step.seconds =
          kernelSeconds(info, instruction.kernel(), program, step.unpriced);
      break;
    case plan::Instruction::kCollective: {
      const plan::Collective &collective = instruction.collective();
      step.kind = Kind::Collective;
      step.group = groupIndex.at(collective.group());
      auto members = instance.groups.find(collective.group());
      if (members == instance.groups.end())
        return Status::failure("device " + std::to_string(info.representative) +
                               " has no group '" + collective.group() + "'");
      for (int64_t device : members->second) {
        int64_t partner = classOfDevice[static_cast<size_t>(device)];
        if (std::find(step.partners.begin(), step.partners.end(), partner) ==
            step.partners.end())
          step.partners.push_back(partner);
      }
      auto [link, inserted] =
          groupLinks.try_emplace(collective.group(), cost::Link{});
      if (inserted)
        link->second = slowestLink(index, members->second);
      step.seconds =
          cost::collectiveTime(collectiveOf(collective.kind()),
                               static_cast<int64_t>(members->second.size()),
                               label.bytes, link->second);
      break;
    }
    case plan::Instruction::kSend: {
      step.kind = Kind::Send;
      int64_t peer = instruction.send().peer();
      step.peerDevice = peer;
      step.peer = classOfDevice[static_cast<size_t>(peer)];
      step.tag = instruction.send().tag();
      cost::Link link = index.link(info.representative, peer);
      step.seconds = peer == info.representative
                         ? 0
                         : link.latency + label.bytes / link.bandwidth;
      break;
    }
    case plan::Instruction::kRecv:
      step.kind = Kind::Recv;
      step.peerDevice = instruction.recv().peer();
      step.peer = classOfDevice[static_cast<size_t>(step.peerDevice)];
      step.tag = instruction.recv().tag();
      break;
    case plan::Instruction::kCrossMeshSend:
      step.kind = Kind::MoveSend;
      step.move = instruction.cross_mesh_send().move();
      break;
    case plan::Instruction::kCrossMeshRecv:
      step.kind = Kind::MoveRecv;
      step.move = instruction.cross_mesh_recv().move();
      break;
    case plan::Instruction::OP_NOT_SET:
      break;
    }
  }
  // Memory: what stays, and the temporaries live from the first
  // instruction touching them to the last.
  std::vector<double> delta(static_cast<size_t>(count) + 1, 0);
  std::vector<int64_t> first(static_cast<size_t>(program.buffers_size()),
                             kNone),
      last(static_cast<size_t>(program.buffers_size()), kNone);
  std::vector<int64_t> reads, writes;
  for (int i = 0; i < count; ++i) {
    runtime::instructionBuffers(program.instructions(i), reads, writes);
    for (const std::vector<int64_t> *touched : {&reads, &writes})
      for (int64_t b : *touched) {
        if (b < 0)
          continue;
        if (first[static_cast<size_t>(b)] == kNone)
          first[static_cast<size_t>(b)] = i;
        last[static_cast<size_t>(b)] = i;
      }
  }
  for (int b = 0; b < program.buffers_size(); ++b) {
    auto bytes = static_cast<double>(runtime::bufferBytes(program.buffers(b)));
    if (program.buffers(b).kind() != plan::Buffer::TEMPORARY) {
      info.persistent += bytes;
      continue;
    }
    if (first[static_cast<size_t>(b)] == kNone)
      continue;
    delta[static_cast<size_t>(first[static_cast<size_t>(b)])] += bytes;
    delta[static_cast<size_t>(last[static_cast<size_t>(b)]) + 1] -= bytes;
  }
  info.live.assign(static_cast<size_t>(count), 0);
  double running = 0;
  for (int i = 0; i < count; ++i) {
    running += delta[static_cast<size_t>(i)];
    info.live[static_cast<size_t>(i)] = running;
  }
  if (info.order.schedule != "sequential")
    for (const std::vector<int64_t> &kept :
         runtime::backwardReadsOfForward(program, info.order.ranges)) {
      double bytes = 0;
      for (int64_t b : kept)
        bytes += static_cast<double>(
            runtime::bufferBytes(program.buffers(static_cast<int>(b))));
      info.keptBytes.push_back(bytes);
    }
  return Status::success();
}

int64_t Simulator::addRun(const Run &run) {
  runs.push_back(run);
  return static_cast<int64_t>(runs.size()) - 1;
}

void Simulator::nextRange(int64_t c) {
  ClassState &state = states[static_cast<size_t>(c)];
  const ClassInfo &info = infos[static_cast<size_t>(c)];
  const std::vector<runtime::StepTask> &tasks = info.order.tasks;
  if (state.started && !state.beforeTasks) {
    // The range just run: a forward whose backward does not come next
    // keeps what that backward reads aside (the executor's rule).
    if (state.task < tasks.size()) {
      const runtime::StepTask &task = tasks[state.task];
      bool backwardNext = state.task + 1 < tasks.size() &&
                          tasks[state.task + 1].backward &&
                          tasks[state.task + 1].microBatch == task.microBatch &&
                          tasks[state.task + 1].chunk == task.chunk;
      if (!task.backward && !backwardNext &&
          static_cast<size_t>(task.chunk) < info.keptBytes.size()) {
        state.aside += info.keptBytes[static_cast<size_t>(task.chunk)];
        state.saved.insert({task.microBatch, task.chunk});
      }
      ++state.task;
      if (state.task == tasks.size() && info.order.updateWithLastTask) {
        state.done = true;
        return;
      }
    } else {
      state.done = true;
      return;
    }
  }
  bool first = !state.started;
  state.started = true;
  state.beforeTasks = false;
  std::pair<int64_t, int64_t> range;
  if (first && info.order.forwardBegin > 0) {
    // The executor's first range: what every micro-batch reads of the
    // parameters alone.
    range = {0, info.order.forwardBegin};
    state.beforeTasks = true;
  } else if (state.task < tasks.size()) {
    const runtime::StepTask &task = tasks[state.task];
    // The executor's ranges (runtime::StepOrder::taskRange).
    range = info.order.taskRange(state.task);
    if (task.backward && state.saved.erase({task.microBatch, task.chunk}))
      state.aside -= info.keptBytes[static_cast<size_t>(task.chunk)];
  } else {
    range = {info.order.updateBegin, info.order.end};
  }
  // The backend returns from a range when all its streams are done.
  int latest = 0;
  for (int s = 1; s < runtime::kStreams; ++s)
    if (state.free[s] > state.free[latest])
      latest = s;
  double barrier = state.free[latest];
  int64_t previous = state.last[latest];
  for (int s = 0; s < runtime::kStreams; ++s) {
    state.free[s] = barrier;
    state.last[s] = previous;
  }
  ++state.range;
  state.position = range.first;
  state.end = range.second;
}

bool Simulator::advance(int64_t c) {
  ClassState &state = states[static_cast<size_t>(c)];
  bool moved = false;
  while (!state.done) {
    if (!state.started || state.position >= state.end) {
      nextRange(c);
      moved = true;
      continue;
    }
    if (!step(c))
      return moved;
    moved = true;
  }
  return moved;
}

bool Simulator::step(int64_t c) {
  ClassState &state = states[static_cast<size_t>(c)];
  const ClassInfo &info = infos[static_cast<size_t>(c)];
  DeviceClass &figures = result.classes[static_cast<size_t>(c)];
  auto i = static_cast<size_t>(state.position);
  const Step &step = info.steps[i];
  // Ready: the stream is free and what it waits for on the other streams
  // (earlier in this range) has ended.
  double ready = state.free[step.stream];
  int64_t previous = state.last[step.stream];
  for (int64_t waitFor : step.waitFor) {
    if (waitFor == kNone ||
        state.rangeOf[static_cast<size_t>(waitFor)] != state.range)
      continue;
    const Run &awaited =
        runs[static_cast<size_t>(state.runOf[static_cast<size_t>(waitFor)])];
    if (awaited.end > ready) {
      ready = awaited.end;
      previous = state.runOf[static_cast<size_t>(waitFor)];
    }
  }
  Run run;
  run.deviceClass = static_cast<int32_t>(c);
  run.instruction = static_cast<int32_t>(i);
  run.task = !state.beforeTasks && state.task < info.order.tasks.size() &&
                     state.position < info.order.updateBegin
                 ? static_cast<int32_t>(state.task)
                 : static_cast<int32_t>(kNone);
  // Drawn by kind, as parplan-run's trace draws them, the gradients
  // stream's on a row of its own.
  run.thread = step.kind == Kind::Kernel ? TraceThread::Compute
               : step.stream == static_cast<int>(runtime::Stream::Gradients)
                   ? TraceThread::Gradients
                   : TraceThread::Communication;
  run.start = ready;
  run.previous = previous;
  int64_t flowFrom = kNone;
  switch (step.kind) {
  case Kind::Kernel:
  case Kind::Send:
    run.end = ready + step.seconds;
    break;
  case Kind::Collective: {
    std::vector<std::vector<Arrival>> &arrivals =
        collectiveArrivals[static_cast<size_t>(step.group)];
    int64_t call = state.groupCalls[static_cast<size_t>(step.group)];
    std::vector<Arrival> &own = arrivals[static_cast<size_t>(c)];
    if (static_cast<int64_t>(own.size()) == call)
      own.push_back({ready, previous});
    // It runs once the last member is ready; the members before it wait
    // in it, as they would in the collective's kernel.
    double begins = ready;
    for (int64_t partner : step.partners) {
      const std::vector<Arrival> &theirs =
          arrivals[static_cast<size_t>(partner)];
      if (static_cast<int64_t>(theirs.size()) <= call)
        return false;
      const Arrival &arrival = theirs[static_cast<size_t>(call)];
      if (arrival.time > begins) {
        begins = arrival.time;
        run.previous = arrival.run;
      }
    }
    run.end = begins + step.seconds;
    ++state.groupCalls[static_cast<size_t>(step.group)];
    break;
  }
  case Kind::Recv: {
    // The k-th message from the peer device with the tag: its class's k-th
    // to this class's device (its other devices send alike).
    auto key = std::make_pair(step.peerDevice, step.tag);
    int64_t k = state.received[key];
    auto found = messages.find({step.peer, info.representative, step.tag});
    if (found == messages.end() ||
        static_cast<int64_t>(found->second.size()) <= k)
      return false;
    const Arrival &message = found->second[static_cast<size_t>(k)];
    run.end = std::max(ready, message.time);
    if (message.time > ready)
      run.previous = message.run;
    flowFrom = message.run;
    ++state.received[key];
    break;
  }
  case Kind::MoveSend:
    // Posted: the move runs on the links, not on either stream.
    run.end = ready;
    break;
  case Kind::MoveRecv: {
    MoveState &move = moves[static_cast<size_t>(step.move)];
    int64_t k = state.moveReceives[static_cast<size_t>(step.move)];
    if (static_cast<int64_t>(move.done.size()) <= k)
      return false;
    const Arrival &arrival = move.done[static_cast<size_t>(k)];
    run.end = std::max(ready, arrival.time);
    if (arrival.time > ready)
      run.previous = arrival.run;
    flowFrom = arrival.run;
    ++state.moveReceives[static_cast<size_t>(step.move)];
    break;
  }
  }
  int64_t id = addRun(run);
  state.runOf[i] = id;
  state.rangeOf[i] = state.range;
  state.free[step.stream] = run.end;
  state.last[step.stream] = id;
  if (flowFrom != kNone)
    flows.emplace_back(flowFrom, id);
  double seconds = run.end - run.start;
  if (step.kind == Kind::Kernel) {
    figures.computeBusy += seconds;
    if (step.unpriced) {
      result.unpricedKernels += 1;
      result.unpricedSeconds += seconds;
      std::pair<int64_t, double> &byKernel =
          result.unpricedByKernel[plan.programs(static_cast<int>(info.program))
                                      .instructions(static_cast<int>(i))
                                      .kernel()
                                      .op()];
      byKernel.first += 1;
      byKernel.second += seconds;
    }
  } else {
    figures.communicationBusy += seconds;
  }
  double memory = info.persistent + info.live[i] + state.aside;
  if (memory > figures.peakMemory) {
    figures.peakMemory = memory;
    figures.peakAt = run.start;
  }
  if (step.kind == Kind::Send) {
    std::vector<Arrival> &sent = messages[{c, step.peerDevice, step.tag}];
    sent.push_back({run.end, id});
  }
  if (options.trace && memory != state.lastMemory) {
    state.lastMemory = memory;
    memorySamples.push_back({c, run.start, memory});
  }
  if (step.kind == Kind::MoveSend) {
    moves[static_cast<size_t>(step.move)].sent[c].push_back({run.end, id});
    launchMoves(step.move);
  }
  ++state.position;
  return true;
}

void Simulator::launchMoves(int64_t m) {
  MoveState &move = moves[static_cast<size_t>(m)];
  // Every occurrence all sources have sent, in order, once its link is
  // free.
  while (true) {
    size_t k = move.done.size();
    Arrival last;
    bool ready = true;
    for (int64_t source : move.sources) {
      const std::vector<Arrival> &sent = move.sent[source];
      if (sent.size() <= k) {
        ready = false;
        break;
      }
      if (sent[k].time >= last.time)
        last = sent[k];
    }
    if (!ready)
      return;
    // Drawn on the links of the last source to post it, from the first
    // time after that when its cards are free long enough.
    const Run &posted = runs[static_cast<size_t>(last.run)];
    Run run;
    run.start = last.time;
    run.previous = last.run;
    double seconds = moveSeconds(m);
    // Mostly the cards are free from the start on: no gap to look for.
    bool free = true;
    for (size_t resource : move.resources)
      free &= calendars[resource].lastEnd() <= run.start;
    for (bool moved = seconds > 0 && !free; moved;) {
      moved = false;
      for (size_t resource : move.resources)
        if (const auto *busy =
                calendars[resource].overlap(run.start, seconds)) {
          run.start = std::get<1>(*busy);
          run.previous = std::get<2>(*busy);
          moved = true;
        }
    }
    run.end = run.start + seconds;
    run.deviceClass = posted.deviceClass;
    run.instruction = posted.instruction;
    run.task = posted.task;
    run.thread = TraceThread::Transfers;
    int64_t id = addRun(run);
    if (seconds > 0)
      for (size_t resource : move.resources)
        calendars[resource].book(run.start, run.end, id);
    move.done.push_back({run.end, id});
  }
}

std::string Simulator::describeWait(int64_t c) const {
  const ClassState &state = states[static_cast<size_t>(c)];
  const ClassInfo &info = infos[static_cast<size_t>(c)];
  std::string who =
      "devices " +
      formatDevices(result.classes[static_cast<size_t>(c)].devices);
  if (!state.started || state.position >= state.end)
    return who + " between passes";
  const plan::Program &program = plan.programs(static_cast<int>(info.program));
  runtime::TraceLabel label =
      runtime::traceLabel(plan, program, state.position);
  std::string what = "instruction " + std::to_string(state.position) + " (" +
                     label.name() + ")";
  const Step &step = info.steps[static_cast<size_t>(state.position)];
  if (step.kind == Kind::Collective)
    what += " on group '" +
            program.instructions(static_cast<int>(state.position))
                .collective()
                .group() +
            "'";
  return who + " wait at " + what;
}

void Simulator::criticalPath() {
  if (runs.empty())
    return;
  int64_t at = 0;
  for (size_t r = 1; r < runs.size(); ++r)
    if (runs[r].end > runs[static_cast<size_t>(at)].end)
      at = static_cast<int64_t>(r);
  // Seconds and runs by (program, instruction, whether a move), then by
  // name: labels are made once per instruction on the path.
  std::map<std::tuple<int64_t, int32_t, bool>, std::pair<double, int64_t>>
      byInstruction;
  while (at != kNone) {
    const Run &run = runs[static_cast<size_t>(at)];
    double from = run.start;
    if (run.previous != kNone)
      from = std::max(from, runs[static_cast<size_t>(run.previous)].end);
    std::pair<double, int64_t> &sum =
        byInstruction[{infos[static_cast<size_t>(run.deviceClass)].program,
                       run.instruction, run.thread == TraceThread::Transfers}];
    sum.first += std::max(0.0, run.end - from);
    ++sum.second;
    at = run.previous;
  }
  std::map<std::pair<std::string, std::string>, CriticalOp> ops;
  for (const auto &[key, sum] : byInstruction) {
    const auto &[program, instruction, move] = key;
    runtime::TraceLabel label = runtime::traceLabel(
        plan, plan.programs(static_cast<int>(program)), instruction);
    if (move) {
      label.op = "cross_mesh_move";
      label.category = "cross_mesh";
      result.criticalMoves += sum.first;
    } else if (label.category == "kernel") {
      result.criticalCompute += sum.first;
    } else {
      result.criticalCommunication += sum.first;
    }
    CriticalOp &op = ops[{label.op, label.node}];
    op.op = label.op;
    op.node = label.node;
    op.category = label.category;
    op.seconds += sum.first;
    op.count += sum.second;
  }
  std::vector<CriticalOp> sorted;
  for (auto &[key, op] : ops)
    sorted.push_back(std::move(op));
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const CriticalOp &a, const CriticalOp &b) {
                     return a.seconds > b.seconds;
                   });
  if (sorted.size() > options.criticalOps)
    sorted.resize(options.criticalOps);
  result.criticalOps = std::move(sorted);
}

void Simulator::buildTrace() {
  runtime::Trace &trace = result.trace;
  int64_t devices = runtime::planDevices(plan);
  bool perDevice = devices <= options.traceDevices;
  // The processes each class's runs are drawn in.
  std::vector<std::vector<int64_t>> processesOf(infos.size());
  if (perDevice) {
    for (int64_t d = 0; d < devices; ++d) {
      int64_t c = classOfDevice[static_cast<size_t>(d)];
      processesOf[static_cast<size_t>(c)].push_back(
          static_cast<int64_t>(trace.processes.size()));
      trace.processes.push_back({"device " + std::to_string(d)});
    }
  } else {
    for (size_t c = 0; c < infos.size(); ++c) {
      processesOf[c].push_back(static_cast<int64_t>(trace.processes.size()));
      const DeviceClass &figures = result.classes[c];
      trace.processes.push_back(
          {"devices " + formatDevices(figures.devices) + " (program " +
           std::to_string(figures.program) + ", " + figures.deviceType + ")"});
    }
  }
  // Labels once per (program, instruction).
  std::map<std::pair<int64_t, int64_t>, runtime::TraceLabel> labels;
  std::vector<size_t> eventOf(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    const Run &run = runs[r];
    const ClassInfo &info = infos[static_cast<size_t>(run.deviceClass)];
    const plan::Program &program =
        plan.programs(static_cast<int>(info.program));
    auto [found, inserted] =
        labels.try_emplace({info.program, run.instruction});
    if (inserted)
      found->second = runtime::traceLabel(plan, program, run.instruction);
    runtime::TraceEvent event;
    event.label = found->second;
    if (run.thread == TraceThread::Transfers)
      event.label.op = "cross_mesh_move";
    event.thread = run.thread;
    event.start = run.start;
    event.duration = run.end - run.start;
    event.instruction = run.instruction;
    if (run.task != kNone) {
      const runtime::StepTask &task =
          info.order.tasks[static_cast<size_t>(run.task)];
      event.microBatch = task.microBatch;
      event.chunk = info.order.ranges.forward.size() > 1 ? task.chunk : -1;
      event.backward = task.backward;
    }
    const plan::Instruction &instruction =
        program.instructions(run.instruction);
    if (instruction.has_collective())
      event.group = instruction.collective().group();
    const std::vector<int64_t> &processes =
        processesOf[static_cast<size_t>(run.deviceClass)];
    eventOf[r] = trace.events.size();
    for (int64_t process : processes) {
      event.process = process;
      trace.events.push_back(event);
    }
  }
  for (const auto &[from, to] : flows)
    trace.flows.push_back(
        {eventOf[static_cast<size_t>(from)], eventOf[static_cast<size_t>(to)]});
  // Memory: each class's bytes from each run on whose start they changed.
  for (const MemorySample &sample : memorySamples)
    for (int64_t process : processesOf[static_cast<size_t>(sample.deviceClass)])
      trace.memory.push_back({process, sample.time, sample.bytes});
  trace.metadata = {{"source", "parplan simulate"},
                    {"model", plan.model()},
                    {"step_seconds", std::to_string(result.stepSeconds)},
                    {"streams", std::to_string(options.streams)}};
}

} // namespace

Status simulatePlan(const plan::Plan &plan, const cost::Cluster &cluster,
                    const SimulateOptions &options, Simulation &result) {
  result = Simulation();
  if (options.streams < 1 || options.streams > runtime::kStreams)
    return Status::failure("a device has 1, 2 or 3 streams, not " +
                           std::to_string(options.streams));
  Simulator simulator(plan, cluster, options, result);
  return simulator.run();
}

} // namespace parplan::simulate
