//===- Simulator.h - a plan's training step under the cost model -*- C++
//-*-===//
//
// A discrete-event simulation of one training step of a plan: every
// device's program, its micro-batches in the order the plan's schedule
// gives its stage (stepOrder, as parplan-run runs them), each instruction
// timed by the cost model on the device's own type and links. A device has
// a compute stream and a communication stream with the executor's overlap
// rules (StreamSchedule.h); a collective starts when all its members are
// ready, a receive ends when its message has arrived, a cross-mesh move
// starts when every source device has sent it and the network cards it
// uses are free. Devices that run one program on one device type run
// alike and are simulated once (a class), so a plan of 1,024 devices in 16
// stages is 16 timelines. The result: the step, the critical path, each
// class's busy, idle and communication time and memory over time, and the
// timeline as a Trace (docs/simulate.md). MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SIMULATE_SIMULATOR_H
#define PARPLAN_SIMULATE_SIMULATOR_H

#include "parplan/Cost/Cluster.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/Trace.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace parplan::simulate {

struct SimulateOptions {
  /// Streams per device: 3 as the CUDA backend runs a program (kernels on
  /// one, collectives and messages on another, the reductions of gradients
  /// that only updates read on a third, each waiting only for what its
  /// buffers need: runtime::scheduleStreams), 2 with those reductions on
  /// the communication stream, 1 as the CPU backend does (every
  /// instruction in turn).
  int streams = 3;
  /// Whether to record the timeline (Simulation::trace).
  bool trace = false;
  /// A trace holds a process per device up to this many devices, and past
  /// it one per class of devices that run alike.
  int64_t traceDevices = 64;
  /// The most ops the critical path lists.
  size_t criticalOps = 10;
  /// Columns of each class's coarse timeline (Simulation::timelines; 0:
  /// none), for pictures of plans too large to draw run by run.
  int64_t timelineColumns = 0;
};

/// What kept a stream busy in one column of a coarse timeline: seconds of
/// kernels, of collectives and messages, and of cross-mesh moves.
struct TimelineColumn {
  double compute = 0, communication = 0, moves = 0;
};

/// A class's step in equal columns of time, per TraceThread.
struct ClassTimeline {
  std::vector<TimelineColumn> threads[4];
};

/// Devices that run alike: one program on one device type.
struct DeviceClass {
  int64_t program = 0;
  /// The pipeline stage of the program (its mesh's position; 0 without).
  int64_t stage = 0;
  std::string deviceType;
  /// Ascending.
  std::vector<int64_t> devices;
  /// Seconds of the step its compute stream works and its communication
  /// stream works (collectives, messages, and a receive's wait for its
  /// message); idle is the step less the compute (and with one stream the
  /// communication).
  double computeBusy = 0, communicationBusy = 0, idle = 0;
  /// The most bytes it holds at once (parameters, optimizer state,
  /// accumulators, the batch, the temporaries live at the instruction
  /// running, and the activations kept aside for later backwards), and
  /// the second it first holds them.
  double peakMemory = 0, peakAt = 0;
  /// The arena the plan planned (Program.arena_bytes, 0 when none).
  double arenaBytes = 0;
};

/// An op on the critical path: the seconds of the path spent in it
/// (summed over its runs on the path, a run counting from when the path
/// reaches it) and how often the path runs it.
struct CriticalOp {
  std::string op, node, category;
  double seconds = 0;
  int64_t count = 0;
};

struct Simulation {
  double stepSeconds = 0;
  std::vector<DeviceClass> classes;
  /// The critical path (the chain of waits that ends last), its ops by
  /// their seconds on it, most first, at most SimulateOptions::criticalOps;
  /// and its seconds in kernels, in collectives and messages, and in
  /// cross-mesh moves.
  std::vector<CriticalOp> criticalOps;
  double criticalCompute = 0, criticalCommunication = 0, criticalMoves = 0;
  /// Kernels without the cost model's figures, timed by their buffers'
  /// bytes over the device's memory bandwidth: runs per step (over every
  /// class) and their seconds.
  int64_t unpricedKernels = 0;
  double unpricedSeconds = 0;
  /// The same by kernel name: runs and seconds.
  std::map<std::string, std::pair<int64_t, double>> unpricedByKernel;
  /// Instruction runs simulated (over every class).
  int64_t runs = 0;
  runtime::Trace trace;
  /// By class, with SimulateOptions::timelineColumns: the step cut into
  /// that many columns.
  std::vector<ClassTimeline> timelines;
};

/// Simulates one step of `plan` (which must have passed checkPlan) on
/// `cluster`. Fails with one line when the cluster lacks the plan's
/// devices, or when the programs wait on one another for ever (a
/// collective or message some device never reaches), naming the waits.
runtime::Status simulatePlan(const plan::Plan &plan,
                             const cost::Cluster &cluster,
                             const SimulateOptions &options,
                             Simulation &result);

} // namespace parplan::simulate

#endif // PARPLAN_SIMULATE_SIMULATOR_H
