//===- PlanFile.h - read, write and check plan files ------------*- C++ -*-===//
//
// The plan file is the contract between parplan (which writes it) and
// parplan-run (which runs it): a PlanFile envelope holding the schema
// version, the serialized Plan and its checksum (plan.proto;
// docs/plan-format.md). Everything here reports problems as one-line
// Statuses naming the file, program, instruction or field: a plan file is
// input, and a hostile or damaged one must never crash the executor. No
// MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_PLANFILE_H
#define PARPLAN_RUNTIME_PLANFILE_H

#include "parplan/Runtime/Tensor.h"
#include "parplan/Runtime/plan.pb.h"
#include "parplan/Sbp/Sbp.h"
#include "parplan/Support/Vocabulary.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parplan::runtime {

/// The PlanFile.schema_version this release writes and reads. Bump it on
/// any change to plan.proto that an older reader would misread.
/// Version 2: programs shared by the devices whose programs differ only in
/// their mesh coordinates (Program.devices, Group.mesh_axes, Buffer.splits,
/// Attr.block_offset). Version 3: named sub-meshes (Plan.meshes,
/// Program.mesh, Group.mesh) for programs on parts of the devices. Version
/// 4: cross-mesh moves as one table per move (Plan.cross_mesh_moves) read
/// by every device's cross_mesh_send or cross_mesh_recv, so the devices of
/// a stage share their programs. Version 5: large constants stored once
/// in the plan (Plan.constant_data, Buffer.shared_data). Version 6: the
/// plan's mesh may split by uneven weights (Plan.mesh_shares).
constexpr uint32_t kPlanSchemaVersion = 6;

/// FNV-1a 64 of `bytes`: PlanFile.checksum of a payload.
uint64_t planChecksum(std::string_view bytes);

/// The bytes of a plan file holding `plan`: deterministic, so the same plan
/// always gives the same bytes (plans can be compared and cached by hash).
std::string serializePlan(const plan::Plan &plan);

/// Writes serializePlan(plan) to `path`, whole or not at all
/// (writeFileAtomically): a failure leaves a previous file as it was.
Status writePlanFile(const plan::Plan &plan, const std::string &path);

/// Reads the plan file at `path` into `out`, checking its envelope: that it
/// is a plan file at all, its schema version, its checksum, and that the
/// plan parses. Does not check the plan itself (checkPlan does).
Status readPlanFile(const std::string &path, plan::Plan &out);
/// The same on bytes already read; `name` names them in messages.
Status parsePlanFile(std::string_view bytes, const std::string &name,
                     plan::Plan &out);

/// Structural validation: everything the executor relies on without
/// checking again (every device runs one program, indices in range, shapes
/// that fit, groups that exist and contain the devices, kernels that exist
/// with their operand counts, collectives whose shapes agree with their
/// groups). Facts that depend on the device (a block's extent, a
/// collective's part) are checked for every device of a program. Does not
/// check that the programs' collectives and messages match one another in
/// order.
Status checkPlan(const plan::Plan &plan);

/// The number of devices of the plan's mesh (the product of mesh_shape).
int64_t planDevices(const plan::Plan &plan);

/// The orders the executor runs a plan's micro-batches in: "sequential"
/// (each micro-batch's forward and backward before the next one's; a
/// plan's empty `schedule`), then the pipeline schedules of Pipeline.h
/// ("gpipe", "1f1b", "eager-1f1b", and "interleaved" on stages of several
/// model chunks).
std::vector<std::string> executorSchedules();
/// The same, as "sequential, gpipe, 1f1b, eager-1f1b" for messages.
std::string executorScheduleList();

/// Where a micro-batch's backward begins in `program`: its backward_begin,
/// or update_begin (all forward) without one.
int64_t backwardBeginOf(const plan::Program &program);

/// A micro-batch's instructions on a program of stages, per model chunk:
/// `forward[c]` and `backward[c]` are the [begin, end) of chunk c's part of
/// the forward and of the backward. A program of one chunk (no chunk
/// markers) has its forward from forward_begin to backwardBeginOf and its
/// backward up to `updateBegin`. With V > 1 chunks, the forward marks them in
/// order and the backward in reverse (the gradient goes back through the
/// chunks), so a chunk's forward ends where the next begins (the last at
/// backward_begin) and its backward where the previous one's begins (chunk
/// 0's at `updateBegin`). The program must have passed checkPlan.
struct ChunkRanges {
  std::vector<std::pair<int64_t, int64_t>> forward, backward;
};
ChunkRanges chunkRanges(const plan::Program &program, int64_t updateBegin);

/// One micro-batch's forward or backward through one model chunk of a
/// stage (0 with one chunk).
struct StepTask {
  bool backward = false;
  int64_t microBatch = 0;
  int64_t chunk = 0;
};

/// How a device of a program runs one step: the order of its micro-batches
/// ("sequential" or a schedule of executorSchedules()), its tasks in the
/// order it runs them, the instructions of each chunk's forward and
/// backward (one chunk of each, the program's own order, when
/// sequential), the instructions run once before the first task, and the
/// first instruction run once after the last task.
struct StepOrder {
  std::string schedule = "sequential";
  std::vector<StepTask> tasks;
  ChunkRanges ranges;
  /// Instructions [0, forwardBegin) run once, before the first task
  /// (values of the parameters alone that every micro-batch reads).
  int64_t forwardBegin = 0;
  int64_t updateBegin = 0;
  /// Whether the last task (a backward of the step's last micro-batch on
  /// the device) and the once-per-step instructions run as one range: the
  /// reductions of the sums over micro-batches, which the program places
  /// where each sum is complete, then start under the rest of that
  /// backward, as data-parallel training overlaps them
  /// (docs/cost-model.md#overlap). Otherwise a range returns only when
  /// all the streams are done.
  bool updateWithLastTask = false;
  /// The program's instruction count, where the once-per-step part ends.
  int64_t end = 0;

  /// The instructions task `t` runs: its chunk's forward or backward, and
  /// for the last task the once-per-step ones too where
  /// updateWithLastTask.
  std::pair<int64_t, int64_t> taskRange(size_t t) const;
};
/// The step order of `program` under `plan`: by the plan's schedule on its
/// stage, or with `followSchedule` false (a backend that cannot run
/// schedules) one micro-batch after another. What parplan-run runs and
/// `parplan simulate` replays. The plan must have passed checkPlan.
StepOrder stepOrder(const plan::Plan &plan, const plan::Program &program,
                    bool followSchedule = true);

/// Per chunk of `program` (`ranges`), the buffers its backward reads of
/// the forward: results of forward instructions and the batch's slices,
/// but accumulators. A schedule keeps them aside for a micro-batch while
/// other forwards run between its forward and its backward.
std::vector<std::vector<int64_t>>
backwardReadsOfForward(const plan::Program &program, const ChunkRanges &ranges);

/// The bytes a device of `program` keeps aside at most under `plan`'s
/// schedule (0 without one): per chunk, what its backward reads of the
/// forward, for as many micro-batches as the executor keeps aside at once
/// (schedule::pipelineKeptAside: after a forward, unless its backward comes
/// next). parplan-run keeps them in host memory, beside the device's
/// arena. The plan must have passed checkPlan.
int64_t keptActivationBytes(const plan::Plan &plan,
                            const plan::Program &program);
/// Of keptActivationBytes, the activations of micro-batches in flight
/// beside the one the arena holds: per chunk, one micro-batch's fewer. The
/// count kept aside peaks right after a forward's are kept, when the
/// arena's copy of them is read no more; a device keeping its in-flight
/// activations on the device would need its arena and these. What the
/// compile checks against the device's memory and sets beside the cost
/// model's estimate.
int64_t inFlightActivationBytes(const plan::Plan &plan,
                                const plan::Program &program);

/// The pipeline stage `program` is: the position of its mesh among the
/// plan's meshes (the stages, the first holding the first layers); 0 in a
/// plan without named meshes.
int64_t programStage(const plan::Plan &plan, const plan::Program &program);

/// The index of the program that device `device` runs; -1 if none does.
int programIndexOf(const plan::Plan &plan, int64_t device);

/// One device's program, with everything that depends on the device
/// worked out: its coordinate, each named buffer's block offsets, each
/// split constant's block, each block-offset attribute's value, and the
/// devices of each group it runs collectives over.
struct DeviceProgram {
  int64_t device = 0;
  std::vector<int64_t> coordinate;
  /// The shared program with Buffer.offsets filled, CONSTANT data in the
  /// buffer (shared data copied in) and cut to the device's block (splits
  /// cleared), and Attr.block_offset replaced by int_value or ints_value.
  plan::Program program;
  /// Group name to its devices as seen from this device (rank order).
  std::map<std::string, std::vector<int64_t>> groups;
};

/// Appends to `program` an instruction running kernel `op` on buffers
/// `operands` into `results` (for plans built by hand: tests, tools).
plan::Kernel *appendKernel(plan::Program &program, const std::string &op,
                           const std::vector<int64_t> &operands,
                           const std::vector<int64_t> &results);

/// A CONSTANT buffer's elements: its `data`, or the plan's shared data it
/// reads (Buffer.shared_data). The plan must have passed checkPlan.
const std::string &constantData(const plan::Plan &plan,
                                const plan::Buffer &buffer);

/// Instantiates the program device `device` runs, its constants' bytes in
/// its buffers' `data` (shared data copied in, split constants cut to the
/// device's block). The plan must have passed checkPlan.
Status instantiateProgram(const plan::Plan &plan, int64_t device,
                          DeviceProgram &out);

/// Bytes of a buffer's elements (0 for an invalid dtype).
int64_t bufferBytes(const plan::Buffer &buffer);
/// The pairs of buffers (lower index first, sorted) whose arena byte
/// ranges overlap; buffers without an arena offset or bytes share none.
std::vector<std::pair<int64_t, int64_t>>
arenaOverlaps(const plan::Program &program);

/// For transports that match messages by order, not by tag (NCCL, so the
/// CUDA backend): every device receives each peer's messages in the order
/// the peer sends them. checkPlan matches messages per tag only, as MPI
/// does. Call on a plan that passed checkPlan.
Status checkMessageOrder(const plan::Plan &plan);

// The plan file's enums as the vocabulary (Support/Vocabulary.h, DType)
// and back, by name: the only conversions between them. From the file,
// std::nullopt for a value this release does not know.

/// The runtime element type of a plan dtype (nullopt for
/// DTYPE_UNSPECIFIED too), and the plan dtype of one.
std::optional<DType> toRuntimeDType(int planDType);
plan::DType toPlanDType(DType type);
std::optional<ReduceKind> toReduceKind(int planReduction);
plan::Reduction toProto(ReduceKind kind);
std::optional<BufferKind> toBufferKind(int planBufferKind);
plan::Buffer::Kind toProto(BufferKind kind);
std::optional<CollectiveKind> toCollectiveKind(int planCollectiveKind);
plan::Collective::Kind toProto(CollectiveKind kind);
/// The collective's name (toString(CollectiveKind), the plan dialect's op
/// names) for a plan::Collective::Kind; "collective" for a value this
/// release does not know.
const char *collectiveName(int kind);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_PLANFILE_H
