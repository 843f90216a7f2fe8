//===- LowerToPlan.cpp - @main to per-device plan programs ----------------===//
//
// The last step before the executor: for every distinct program, each op of
// @main emits its part of the work through PlanLoweringOpInterface (the nn
// ops in LowerNNToPlan.cpp, the resharding steps in
// LowerReshardingToPlan.cpp), and what a step leaves behind (the loss, the
// updated parameters) is named here. Devices share a program when their
// blocks have the same extents (with even splits, all of them): lowering
// time and plan size grow with distinct programs, not devices. Every
// logical fact the executor still needs (which block of which tensor a
// buffer holds) is written on the buffer.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Runtime/KernelCall.h"
#include "parplan/Schedule/Pipeline.h"
#include "parplan/Transforms/Lowering/DeviceLowering.h"
#include "parplan/Transforms/Lowering/Passes.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"
#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include "parplan/Dialect/AttrNames.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

namespace parplan {
#define GEN_PASS_DEF_LOWERTOPLAN
#include "parplan/Transforms/Lowering/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {

/// The results of @main: the loss becomes plan.loss, a value marked
/// `nn.updates = "NAME"` a plan.update of the buffer of NAME, and a value
/// marked `nn.output = "NAME"` an output buffer, the device's block of the
/// tensor NAME, which `parplan-run --check` compares with NAME's values.
LogicalResult lowerReturn(func::ReturnOp ret, func::FuncOp function,
                          DeviceLowering &lowering) {
  OpBuilder &b = lowering.getBuilder();
  Location loc = ret.getLoc();
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    unsigned i = static_cast<unsigned>(index);
    Value buffer = lowering.lookup(value);
    // On a named mesh, the results of the others' ops are theirs.
    if (!buffer && lowering.getMesh())
      continue;
    if (function.getResultAttr(i, parplan::kResultNameAttrName)) {
      plan::LossOp::create(b, loc, buffer);
      continue;
    }
    if (auto name = function.getResultAttrOfType<StringAttr>(
            i, parplan::kOutputAttrName)) {
      auto block = buffer.getDefiningOp<plan::BufferOp>();
      if (!block || block.getKind() != plan::BufferKind::temporary)
        return ret.emitError()
               << "lower-to-plan: result " << i << " ('" << name.getValue()
               << "') is no value the step computes";
      block.setKind(plan::BufferKind::output);
      lowering.describeBlock(block, name.getValue(), value.getType(),
                             lowering.layoutOf(value));
      continue;
    }
    auto name =
        function.getResultAttrOfType<StringAttr>(i, parplan::kUpdatesAttrName);
    if (!name)
      return ret.emitError() << "lower-to-plan: result " << i
                             << " of @main is neither the loss nor an "
                                "update; inference plans are not lowered yet";
    Value target = lowering.lookupNamed(name.getValue());
    if (!target)
      return ret.emitError()
             << "lower-to-plan: result " << i << " updates '" << name.getValue()
             << "', which is no parameter of @main";
    if (target.getType() != buffer.getType())
      return ret.emitError()
             << "lower-to-plan: result " << i << " updates '" << name.getValue()
             << "' in another layout than the parameter's";
    plan::UpdateOp::create(b, loc, target, buffer);
  }
  return success();
}

/// Each op of a program's body by its place in it.
DenseMap<Operation *, int64_t> positionsIn(Block &body) {
  DenseMap<Operation *, int64_t> position;
  int64_t count = 0;
  for (Operation &op : body)
    position[&op] = count++;
  return position;
}

/// An all-reduce runs in place, so the lowering gives it a copy of its
/// addend, which other ops may still read. Where nothing reads or writes
/// the addend after the copy, the copy is left out and the all-reduce
/// reduces the addend itself: above all a gradient's accumulator, reduced
/// once after the micro-batches, which would otherwise have a full copy
/// beside it until the update (the cost model counts the accumulator
/// alone). An accumulator is clobbered only after the micro-batches: the
/// next one adds to it, and every step starts it at zero. What the step
/// computes before the micro-batches (plan.forward_begin) is never
/// clobbered by one of them: the next reads it again.
void reduceInPlace(plan::ProgramOp program) {
  Block &body = program.getBody().front();
  DenseMap<Operation *, int64_t> position = positionsIn(body);
  auto afterMicroBatches = body.getOps<plan::AfterMicroBatchesOp>();
  int64_t microBatchesEnd =
      afterMicroBatches.empty() ? -1 : position[*afterMicroBatches.begin()];
  auto forwardBegins = body.getOps<plan::ForwardBeginOp>();
  int64_t microBatchesBegin =
      forwardBegins.empty() ? -1 : position[*forwardBegins.begin()];
  for (auto reduce :
       llvm::make_early_inc_range(body.getOps<plan::AllReduceOp>())) {
    Value copy = reduce.getBuffer();
    auto copyBuffer = copy.getDefiningOp<plan::BufferOp>();
    if (!copyBuffer || copyBuffer.getKind() != plan::BufferKind::temporary)
      continue;
    // The copy's first user: the lowering's reshape kernel, copying the
    // addend whole.
    Operation *first =
        *llvm::min_element(copy.getUsers(), [&](Operation *a, Operation *b) {
          return position[a] < position[b];
        });
    auto writer = dyn_cast<plan::KernelOp>(first);
    if (!writer || writer.getKernel() != "reshape" ||
        writer.getIns().size() != 1 || writer.getOuts().size() != 1 ||
        writer.getOuts()[0] != copy)
      continue;
    Value addend = writer.getIns()[0];
    auto addendBuffer = addend.getDefiningOp<plan::BufferOp>();
    if (!addendBuffer || addend.getType() != copy.getType())
      continue;
    plan::BufferKind kind = addendBuffer.getKind();
    int64_t at = position[writer.getOperation()];
    bool keptForMicroBatches = position[addendBuffer] < microBatchesBegin &&
                               microBatchesBegin < at &&
                               (microBatchesEnd < 0 || at < microBatchesEnd);
    bool clobberable =
        (kind == plan::BufferKind::temporary && !keptForMicroBatches) ||
        (kind == plan::BufferKind::accumulator && microBatchesEnd >= 0 &&
         microBatchesEnd < at);
    for (Operation *user : addend.getUsers())
      if (position[user] > at)
        clobberable = false;
    if (!clobberable)
      continue;
    copy.replaceAllUsesExcept(addend, writer.getOperation());
    writer.erase();
    copyBuffer.erase();
  }
}

/// An update whose source only its writer fills becomes the writer
/// writing the target itself, when the writer's kernel may write that
/// result over the operand the target is, and nothing after the writer
/// reads the target: an optimizer steps its parameter and state in place,
/// rather than every new value living beside the old one until the end of
/// the step (for a large model, two more copies of the parameters and
/// state, which the cost model's memory estimate does not count).
void writeUpdatesInPlace(plan::ProgramOp program) {
  Block &body = program.getBody().front();
  DenseMap<Operation *, int64_t> position = positionsIn(body);
  auto afterMicroBatches = body.getOps<plan::AfterMicroBatchesOp>();
  int64_t microBatchesEnd =
      afterMicroBatches.empty() ? -1 : position[*afterMicroBatches.begin()];
  for (auto update :
       llvm::make_early_inc_range(body.getOps<plan::UpdateOp>())) {
    Value target = update.getTarget(), source = update.getSource();
    auto sourceBuffer = source.getDefiningOp<plan::BufferOp>();
    if (!sourceBuffer || sourceBuffer.getKind() != plan::BufferKind::temporary)
      continue;
    Operation *soleUser = nullptr;
    bool onlyWritten = true;
    for (Operation *user : source.getUsers()) {
      if (user == update.getOperation())
        continue;
      if (soleUser)
        onlyWritten = false;
      soleUser = user;
    }
    if (!onlyWritten || !soleUser)
      continue;
    // An update gathered whole from its parts (an optimizer stepping a
    // split copy of a replicated parameter): the gather writes the
    // parameter, where nothing after it reads the parameter, rather than
    // every gathered parameter living beside the old one until the end of
    // the step.
    if (auto gather = dyn_cast<plan::AllGatherOp>(soleUser)) {
      // Once per step: after the micro-batches, which read the parameter.
      bool safe = gather.getOutput() == source && gather.getInput() != target &&
                  position[gather.getOperation()] > microBatchesEnd;
      for (Operation *user : target.getUsers())
        if (user != update.getOperation() &&
            position[user] >= position[gather.getOperation()])
          safe = false;
      if (!safe)
        continue;
      gather.getOutputMutable().set(target);
      update.erase();
      sourceBuffer.erase();
      continue;
    }
    auto writer = dyn_cast<plan::KernelOp>(soleUser);
    if (!writer || llvm::is_contained(writer.getIns(), source))
      continue;
    const runtime::KernelSignature *signature =
        runtime::lookupKernel(writer.getKernel().str());
    auto outs = writer.getOuts();
    size_t result = static_cast<size_t>(
        std::find(outs.begin(), outs.end(), source) - outs.begin());
    if (!signature || result >= signature->inPlaceOperand.size() ||
        llvm::count(outs, source) != 1 || llvm::is_contained(outs, target))
      continue;
    // The target may be read by the writer only as the operand the result
    // may overwrite, and by nothing after it.
    int operand = signature->inPlaceOperand[result];
    bool safe = true;
    for (auto [index, in] : llvm::enumerate(writer.getIns()))
      if (in == target && static_cast<int>(index) != operand)
        safe = false;
    for (Operation *user : target.getUsers())
      if (user != update.getOperation() &&
          position[user] > position[writer.getOperation()])
        safe = false;
    if (!safe)
      continue;
    writer.getOutsMutable()[static_cast<unsigned>(result)].set(target);
    update.erase();
    sourceBuffer.erase();
  }
}

/// Lowering needs every op laid out (or none, on one device), and every
/// boxing written as its steps.
LogicalResult checkLoweringInput(func::FuncOp function, int64_t devices) {
  for (Operation &op : function.front()) {
    if (isa<sbp::BoxingOp>(op))
      return op.emitError() << "lower-to-plan: an sbp.boxing remains; run "
                               "expand-boxing first";
    if (isa<func::ReturnOp>(op))
      continue;
    if (!isa<PlanLoweringOpInterface>(op))
      return op.emitError() << "lower-to-plan: '" << op.getName()
                            << "' has no lowering to plan";
    if (devices > 1 && isa<nn::NNDialect>(op.getDialect()) &&
        !op.hasAttr(parplan::kShardingAttrName))
      return op.emitError() << "lower-to-plan: '" << op.getName()
                            << "' has no sbp.sharding; run sbp-assign and "
                               "insert-boxing first";
  }
  return success();
}

/// Whether `op` of @main runs on the devices of `mesh`: it is laid out on
/// it, or moves a value from or to it. func.return is everyone's.
bool runsOn(Operation *op, FlatSymbolRefAttr mesh) {
  if (isa<func::ReturnOp>(op))
    return true;
  if (auto move = dyn_cast<sbp::CrossMeshOp>(op))
    return move.getSrcMeshAttr() == mesh || move.getDstMeshAttr() == mesh;
  if (auto sharding =
          op->getAttrOfType<sbp::ShardingAttr>(parplan::kShardingAttrName))
    return sharding.getMesh() == mesh;
  return op->getAttrOfType<FlatSymbolRefAttr>("mesh") == mesh;
}

/// The cost model's figures for the device's share of `op` on the first
/// kernel its lowering emitted (from `first` on), which does its work; the
/// helpers a lowering adds around it (a scale, a copy) go without.
void addKernelFigures(Operation &op, const ShardingCostModel &model,
                      const DeviceLowering &lowering, Operation *first) {
  plan::KernelOp kernel;
  for (Operation *emitted = first; emitted && !kernel;
       emitted = emitted->getNextNode())
    kernel = dyn_cast<plan::KernelOp>(emitted);
  if (!kernel)
    return;
  std::vector<NdSbp> operands, results;
  for (unsigned i = 0; i < op.getNumOperands(); ++i)
    operands.push_back(lowering.operandLayout(&op, i));
  for (Value result : op.getResults())
    results.push_back(lowering.layoutOf(result));
  std::optional<ShardingCostModel::LocalWork> work =
      model.localWork(&op, operands, results, &lowering.getCoordinate());
  if (!work)
    return;
  Builder b(op.getContext());
  kernel.setFlopsAttr(b.getF64FloatAttr(work->flops));
  kernel.setBytesAttr(b.getF64FloatAttr(work->bytes));
  kernel.setComputeTypeAttr(b.getStringAttr(cost::toString(work->type)));
}

struct ProgramMesh {
  FlatSymbolRefAttr name; // null: the plan's own
  std::vector<int64_t> shape;
  std::vector<int64_t> devices; // physical, row-major; empty: 0 .. N-1
};

/// The meshes programs are lowered for: the one mesh (or a single device)
/// without stages; with stages, each stage's, which together must hold
/// devices 0 .. N-1. Sets `planShape` to the plan's mesh.
FailureOr<std::vector<ProgramMesh>>
programMeshes(ModuleOp module, ArrayRef<sbp::MeshOp> declared, bool staged,
              sbp::MeshOp mesh, std::vector<int64_t> &planShape) {
  std::vector<ProgramMesh> meshes;
  planShape = {1};
  if (!staged) {
    if (mesh)
      planShape.assign(mesh.getShape().begin(), mesh.getShape().end());
    meshes.push_back({FlatSymbolRefAttr(), planShape, {}});
    return meshes;
  }
  std::map<int64_t, StringRef> holder;
  for (sbp::MeshOp stage : declared) {
    ProgramMesh programMesh{FlatSymbolRefAttr::get(stage.getSymNameAttr()),
                            {stage.getShape().begin(), stage.getShape().end()},
                            {}};
    for (int64_t i = 0; i < stage.getNumDevices(); ++i) {
      int64_t device = stage.getDeviceId(i);
      auto [it, inserted] = holder.emplace(device, stage.getSymName());
      if (!inserted)
        return stage.emitError()
               << "lower-to-plan: device " << device << " is on @" << it->second
               << " and on @" << stage.getSymName();
      programMesh.devices.push_back(device);
    }
    meshes.push_back(std::move(programMesh));
  }
  int64_t count = static_cast<int64_t>(holder.size());
  for (int64_t device = 0; device < count; ++device)
    if (!holder.count(device))
      return module.emitError()
             << "lower-to-plan: device " << device
             << " is on no mesh, but device " << holder.rbegin()->first
             << " is: the stages' meshes must hold devices 0 to N-1";
  planShape = {count};
  return meshes;
}

/// An op's chunk (and a move's receiving side's) is one of the stages'.
LogicalResult checkChunkMarks(func::FuncOp function, int64_t chunks) {
  for (Operation &op : function.front())
    for (StringRef name :
         {parplan::kChunkAttrName, parplan::kDestinationChunkAttrName})
      if (auto chunk = op.getAttrOfType<IntegerAttr>(name);
          chunk && chunk.getInt() >= chunks)
        return op.emitError() << "lower-to-plan: " << name << " "
                              << chunk.getInt() << " is not one of the stages' "
                              << chunks << " model chunks (sbp.chunks)";
  return success();
}

/// Each op's part of the step: a micro-batch's forward, its backward, or
/// once per step. Without micro-batches, all are run once, in order.
enum class StepPart { BeforeMicroBatches, Forward, Backward, OncePerStep };

/// The parts of a step of micro-batches.
FailureOr<DenseMap<Operation *, StepPart>>
stepParts(func::FuncOp function, ArrayRef<sbp::MeshOp> declared) {
  FailureOr<DenseSet<Operation *>> after = opsAfterMicroBatches(function);
  if (failed(after))
    return failure();
  // A move to a later stage is forward too, with what it reads, though
  // only a backward reads it (the activation a weight's gradient needs):
  // in the backward, it would wait for the later stage's backward, which
  // waits for it.
  DenseMap<StringRef, size_t> stageIndex;
  for (auto [i, stage] : llvm::enumerate(declared))
    stageIndex[sbp::MeshOp(stage).getSymName()] = i;
  // Later by virtual stage (chunk * stages + stage): with chunks, the
  // forward goes from the last stage back to the first, a chunk on.
  auto toLaterStage = [&](sbp::CrossMeshOp move) {
    auto chunk = [&](StringRef name) {
      auto attr = move->getAttrOfType<IntegerAttr>(name);
      return static_cast<size_t>(attr ? attr.getInt() : 0);
    };
    return chunk(parplan::kChunkAttrName) * declared.size() +
               stageIndex.lookup(move.getSrcMesh()) <
           chunk(parplan::kDestinationChunkAttrName) * declared.size() +
               stageIndex.lookup(move.getDstMesh());
  };
  SmallVector<Operation *> forwardMoves;
  for (auto move : function.front().getOps<sbp::CrossMeshOp>()) {
    if (after->contains(move) || !toLaterStage(move))
      continue;
    // Unless it reads what came back from a later stage (a gradient): the
    // whole backward before it would be pulled along. It then stays in
    // the backward, which checkPlan refuses under a schedule.
    SetVector<Operation *> reads;
    (void)getBackwardSlice(move.getOperation(), &reads);
    if (llvm::none_of(reads, [&](Operation *op) {
          auto earlier = dyn_cast<sbp::CrossMeshOp>(op);
          return earlier && !toLaterStage(earlier);
        }))
      forwardMoves.push_back(move);
  }
  DenseSet<Operation *> forward = forwardPassOps(function, forwardMoves);
  DenseSet<Operation *> before = opsBeforeMicroBatches(function, *after);
  // With the parameters and constants they read, lowered first.
  for (Operation *op : SmallVector<Operation *>(before.begin(), before.end()))
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && isSourceOp(def))
        before.insert(def);
  DenseMap<Operation *, StepPart> partOf;
  for (Operation &op : function.front())
    partOf[&op] = isa<func::ReturnOp>(op) || after->contains(&op)
                      ? StepPart::OncePerStep
                  : before.contains(&op)  ? StepPart::BeforeMicroBatches
                  : forward.contains(&op) ? StepPart::Forward
                                          : StepPart::Backward;
  return partOf;
}

/// How the step's ops are ordered in each program.
struct StepOrder {
  int64_t microBatches = 1;
  int64_t chunks = 1;
  bool staged = false;
  /// With micro-batches: each op's part.
  DenseMap<Operation *, StepPart> partOf;

  StepPart partOfOp(Operation &op) const {
    if (microBatches > 1)
      return partOf.lookup(&op);
    return isa<func::ReturnOp>(op) ? StepPart::OncePerStep : StepPart::Forward;
  }
};

/// The chunk an op runs in: a move's sending side in its producer's, its
/// receiving side in its reader's.
int64_t chunkOf(Operation &op, FlatSymbolRefAttr mesh) {
  StringRef name = parplan::kChunkAttrName;
  if (auto move = dyn_cast<sbp::CrossMeshOp>(op);
      move && move.getDstMeshAttr() == mesh)
    name = parplan::kDestinationChunkAttrName;
  auto chunk = op.getAttrOfType<IntegerAttr>(name);
  return chunk ? chunk.getInt() : 0;
}

/// Whether `op` is a boxing's slice (a local step) that only parameter
/// updates read: lowered just before its first reader, not after the
/// step it slices (lowerStep), so that the compute stream never waits
/// mid-backward for a gradient's reduction that only the update needs.
bool slicedForUpdates(Operation *op) {
  std::optional<ReshardStep> step = sbp::getReshardStep(op);
  return step && step->kind == ReshardKind::Slice && !op->use_empty() &&
         llvm::all_of(op->getUsers(), readsForUpdatesOnly);
}

/// Whether `user` reads a gradient for parameter updates alone, as the
/// cost model's readsForUpdatesOnly has it before insert-boxing: also
/// through a cast whose readers are a slice lowered just before the
/// update (a sharded update's part of the master weights' gradient).
bool readsForUpdatesOnlyBoxed(Operation *user) {
  if (isOptimizerUpdate(user) || slicedForUpdates(user))
    return true;
  return isa<nn::CastOp>(user) && !user->use_empty() &&
         llvm::all_of(user->getUsers(), readsForUpdatesOnlyBoxed);
}

/// Whether only parameter updates read what the resharding step `step`
/// makes, directly (or through a cast to the master weights' type,
/// readsForUpdatesOnly), through its boxing's later steps that run on the
/// gradients stream (reducesOnGradientsStream), or through a slice lowered
/// just before the update (slicedForUpdates): a gradient's reduction that
/// nothing on another stream waits for before the update.
bool feedsOnlyUpdates(Operation *step) {
  return !step->use_empty() &&
         llvm::all_of(step->getUsers(), [](Operation *user) {
           if (readsForUpdatesOnlyBoxed(user))
             return true;
           std::optional<ReshardStep> next = sbp::getReshardStep(user);
           return next && reducesOnGradientsStream(next->kind) &&
                  feedsOnlyUpdates(user);
         });
}

/// Whether the resharding step `op` gathers a parameter for the forward:
/// a step of a boxing of an nn.param's result whose steps all gather it
/// (gathersParameter), in the forward pass (`forward`). Such a boxing is
/// placed right after the parameter, at the step's start (insert-boxing),
/// and lowerStep runs its collectives on the gradients stream, idle until
/// the backward: on the communication stream, a large weight's gather for
/// the last layers would hold the first layers' boxings of activations
/// behind it. sbp-assign's timeline prices it there (overlapIn's
/// prefetch).
bool prefetchesParameter(Operation *op, const DenseSet<Operation *> &forward) {
  auto gathers = [](Operation *candidate) {
    std::optional<ReshardStep> step = sbp::getReshardStep(candidate);
    return step && gathersParameter(step->kind);
  };
  // Gathers from the parameter on, and into its readers alone.
  std::function<bool(Operation *)> fromParameter = [&](Operation *step) {
    Operation *input = step->getOperand(0).getDefiningOp();
    return input && (isa<nn::ParamOp>(input) ||
                     (gathers(input) && fromParameter(input)));
  };
  std::function<bool(Operation *)> intoReaders = [&](Operation *step) {
    return llvm::all_of(step->getUsers(), [&](Operation *user) {
      return !sbp::getReshardStep(user) || (gathers(user) && intoReaders(user));
    });
  };
  return gathers(op) && forward.contains(op) && fromParameter(op) &&
         intoReaders(op);
}

/// Whether the resharding step `op` is one of a gradient's boxing's
/// leading steps within the positions along the mesh axis of uneven
/// shares `sharesAxis` (stepsWithinPositions, over the boxing's steps up
/// to `op` and on through its first reader that is a step).
bool reducesWithinPositions(Operation *op, int64_t sharesAxis) {
  SmallVector<Operation *> chain;
  for (Operation *step = op; step && sbp::getReshardStep(step);
       step = step->getOperand(0).getDefiningOp())
    chain.push_back(step);
  std::reverse(chain.begin(), chain.end());
  size_t at = chain.size() - 1;
  for (Operation *step = op; step;) {
    auto next = llvm::find_if(step->getUsers(), [](Operation *user) {
      return sbp::getReshardStep(user).has_value();
    });
    step = next == step->getUsers().end() ? nullptr : *next;
    if (step)
      chain.push_back(step);
  }
  std::vector<ReshardStep> steps;
  for (Operation *step : chain)
    steps.push_back(*sbp::getReshardStep(step));
  return at < stepsWithinPositions(steps, sharesAxis);
}

/// `ops` with every slice that a boxing takes after a collective (or after
/// such a slice) moved to just before its first reader. The slice is a
/// kernel: right after the collective, the compute stream would wait there
/// for the communication stream, kernels that do not read the slice
/// included, where sbp-assign's timeline prices a boxing whole on the
/// communication stream and only its readers waiting for it. A gradient's
/// reduction that only updates read so runs on the gradients stream behind
/// the backward (feedsOnlyUpdates), and its slice when the update needs
/// it (slicedForUpdates). A gradient's reductions after such a slice go
/// with it, into `deferredReductions`: lowerStep leaves them on the
/// communication stream, where they do not queue behind the gradients
/// stream's reductions of the backward's end.
SmallVector<Operation *>
slicesBeforeReaders(ArrayRef<Operation *> ops,
                    DenseSet<Operation *> &deferredReductions) {
  DenseSet<Operation *> deferred;
  for (Operation *op : ops) {
    std::optional<ReshardStep> step = sbp::getReshardStep(op);
    if (!step || op->use_empty())
      continue;
    Operation *source = op->getOperand(0).getDefiningOp();
    if (step->kind != ReshardKind::Slice) {
      // A gradient's reduction after such a slice goes with it: the slice
      // is lowered before its first reader, and that reader would be this
      // reduction, right after it in the backward.
      if (isCollective(step->kind) && deferred.contains(source) &&
          feedsOnlyUpdates(op)) {
        deferred.insert(op);
        deferredReductions.insert(op);
      }
      continue;
    }
    std::optional<ReshardStep> before =
        source ? sbp::getReshardStep(source) : std::nullopt;
    if (before && (isCollective(before->kind) || deferred.contains(source)))
      deferred.insert(op);
  }
  if (deferred.empty())
    return SmallVector<Operation *>(ops);
  SmallVector<Operation *> ordered;
  ordered.reserve(ops.size());
  // Each deferred slice is emitted once, before the first op reading it.
  DenseSet<Operation *> pending = deferred;
  std::function<void(Operation *)> emit = [&](Operation *op) {
    for (Value operand : op->getOperands())
      if (Operation *slice = operand.getDefiningOp();
          slice && pending.erase(slice))
        emit(slice);
    ordered.push_back(op);
  };
  for (Operation *op : ops)
    if (!deferred.contains(op))
      emit(op);
  // A slice that nothing here reads (its reader on another mesh) ends the
  // list, in the order @main has them.
  for (Operation *op : ops)
    if (pending.erase(op))
      emit(op);
  return ordered;
}

/// `ordered` with, in each run of boxing steps between two ops, the
/// steps of the boxings that the op after the run reads first: insert-boxing
/// puts a boxing right after its producer or just before its reader, so a
/// run holds both the previous op's result boxed for a later reader and the
/// next op's operands. The communication stream runs collectives in
/// program order; the next op's come first, so that it does not wait
/// behind a boxing a later op needs, as sbp-assign's timeline has it
/// (overlapIn: a boxing before its reader precedes one after its producer
/// at the same place).
void nextReadersBoxingsFirst(SmallVectorImpl<Operation *> &ordered) {
  auto isStep = [](Operation *op) {
    return sbp::getReshardStep(op).has_value();
  };
  size_t begin = 0;
  while (begin < ordered.size()) {
    if (!isStep(ordered[begin])) {
      ++begin;
      continue;
    }
    size_t end = begin;
    while (end < ordered.size() && isStep(ordered[end]))
      ++end;
    if (end < ordered.size()) {
      Operation *next = ordered[end];
      // Steps whose results the next op reads, directly or through later
      // steps of the run.
      DenseSet<Operation *> forNext;
      for (size_t i = end; i-- > begin;) {
        Operation *step = ordered[i];
        if (llvm::any_of(step->getUsers(), [&](Operation *user) {
              return user == next || forNext.contains(user);
            }))
          forNext.insert(step);
      }
      std::stable_partition(
          ordered.begin() + static_cast<std::ptrdiff_t>(begin),
          ordered.begin() + static_cast<std::ptrdiff_t>(end),
          [&](Operation *step) { return forNext.contains(step); });
    }
    begin = end;
  }
}

/// Marks the all-reduces, reduce-scatters and all-gathers in [first, end
/// of block) feeds_update: the executor runs them on its gradients stream,
/// and plan-memory keeps what they read until the update, so that no later
/// instruction takes those bytes and waits for the stream. A parameter's
/// gathers for the forward are marked too (prefetchesParameter): what
/// they read lives across the step.
void markFeedsUpdate(Operation *first) {
  for (Operation *op = first; op; op = op->getNextNode())
    llvm::TypeSwitch<Operation *>(op)
        .Case([](plan::AllReduceOp o) { o.setFeedsUpdate(true); })
        .Case([](plan::ReduceScatterOp o) { o.setFeedsUpdate(true); })
        .Case([](plan::AllGatherOp o) { o.setFeedsUpdate(true); });
}

/// A hierarchical all-reduce of a gradient on the gradients stream
/// (reduce-scatter of %g into %part, all-reduce of %part, all-gather of
/// %part into %whole; the reduce-scatter may run on the communication
/// stream, stepsWithinPositions) gathers into %g itself where nothing reads or
/// writes %g after the reduce-scatter (a temporary, or a sum over
/// micro-batches, which the next step zeroes) and %whole is as large: the
/// reduction then holds the gradient and an axis's part of it, not two
/// copies of the gradient, until the update (plan-memory keeps %g that
/// long for the reduce-scatter anyway).
void gatherIntoScatteredGradients(plan::ProgramOp program) {
  SmallVector<plan::AllGatherOp> gathers;
  program.walk([&](plan::AllGatherOp gather) {
    if (gather.getFeedsUpdate())
      gathers.push_back(gather);
  });
  for (plan::AllGatherOp gather : gathers) {
    Value part = gather.getInput(), whole = gather.getOutput();
    plan::ReduceScatterOp scatter;
    for (Operation *user : part.getUsers())
      if (auto candidate = dyn_cast<plan::ReduceScatterOp>(user);
          candidate && candidate.getOutput() == part &&
          candidate->isBeforeInBlock(gather))
        scatter = candidate;
    if (!scatter)
      continue;
    Value gradient = scatter.getInput();
    auto gradientBuffer = gradient.getDefiningOp<plan::BufferOp>();
    auto wholeBuffer = whole.getDefiningOp<plan::BufferOp>();
    // A sum over micro-batches (an accumulator) is zeroed again at the
    // next step's start, so it may be overwritten as well.
    if (!gradientBuffer || !wholeBuffer ||
        (gradientBuffer.getKind() != plan::BufferKind::temporary &&
         gradientBuffer.getKind() != plan::BufferKind::accumulator) ||
        wholeBuffer.getKind() != plan::BufferKind::temporary ||
        gradient.getType() != whole.getType())
      continue;
    bool gradientDone = llvm::all_of(gradient.getUsers(), [&](Operation *user) {
      return user == scatter.getOperation() || user->isBeforeInBlock(scatter);
    });
    bool wholeAfter = llvm::all_of(whole.getUsers(), [&](Operation *user) {
      return user == gather.getOperation() || gather->isBeforeInBlock(user);
    });
    if (!gradientDone || !wholeAfter)
      continue;
    whole.replaceAllUsesWith(gradient);
    wholeBuffer.erase();
  }
}

/// Lowers the step's ops that run on `mesh` into the program `b` writes:
/// the copies of parameters every micro-batch reads (then
/// plan.forward_begin), a micro-batch's forward, then its backward (which a
/// schedule may run after other micro-batches' forwards), then (after
/// plan.after_micro_batches) the step's: the updates and what they read of
/// the accumulated sums. On stages of several chunks, each pass of a
/// micro-batch is each chunk's part in turn, marked by plan.chunk.
LogicalResult lowerStep(OpBuilder &b, func::FuncOp function,
                        FlatSymbolRefAttr mesh, ArrayRef<Operation *> opsOnMesh,
                        const StepOrder &order, DeviceLowering &lowering,
                        const ShardingCostModel *costModel) {
  Location loc = function.getLoc();
  bool split = order.microBatches > 1;
  // Of the once-per-step part, what waits for a move from another stage
  // (a gradient's part, sent after its stage's last backward) goes last:
  // the rest of the update runs while it travels, as the cost model's
  // timeline has it (SbpAssign's updateWaits). Only local work moves up:
  // every move after the first wait stays after it, in @main's order, so
  // that the stages' sends and receives still pair in the same order
  // (NCCL's blocking sends would otherwise wait on each other).
  DenseSet<Operation *> deferredReductions;
  SmallVector<Operation *> ordered =
      slicesBeforeReaders(opsOnMesh, deferredReductions);
  // In a step, a parameter's gathers for the forward run on the gradients
  // stream (prefetchesParameter).
  bool step = parplan::isStep(function->getParentOfType<ModuleOp>());
  DenseSet<Operation *> forward;
  if (step)
    forward = forwardPassOps(function);
  // On one mesh of uneven shares without micro-batches, a gradient's
  // steps within the positions after the last boxing of an activation (a
  // collective that neither only updates nor only the step's results
  // read) run on the communication stream (stepsWithinPositions).
  int64_t sharesAxis =
      !order.staged && !split && costModel ? costModel->getSharesAxis() : -1;
  DenseSet<Operation *> withinPositions;
  if (sharesAxis >= 0) {
    auto activation = [&](Operation *op) {
      std::optional<ReshardStep> reshard = sbp::getReshardStep(op);
      return reshard && isCollective(reshard->kind) && !feedsOnlyUpdates(op) &&
             !prefetchesParameter(op, forward) &&
             !llvm::all_of(op->getUsers(), [](Operation *user) {
               return isa<func::ReturnOp>(user);
             });
    };
    size_t after = ordered.size();
    while (after > 0 && !activation(ordered[after - 1]))
      --after;
    for (Operation *op : ArrayRef(ordered).drop_front(after))
      if (sbp::getReshardStep(op) && feedsOnlyUpdates(op) &&
          reducesWithinPositions(op, sharesAxis))
        withinPositions.insert(op);
  }
  nextReadersBoxingsFirst(ordered);
  if (split) {
    DenseSet<Operation *> waiting;
    for (Operation *op : opsOnMesh) {
      if (order.partOfOp(*op) != StepPart::OncePerStep)
        continue;
      auto move = dyn_cast<sbp::CrossMeshOp>(op);
      if (isa<func::ReturnOp>(op) ||
          (move && (move.getDstMeshAttr() == mesh || !waiting.empty())) ||
          llvm::any_of(op->getOperands(), [&](Value operand) {
            return waiting.contains(operand.getDefiningOp());
          }))
        waiting.insert(op);
    }
    std::stable_partition(ordered.begin(), ordered.end(),
                          [&](Operation *op) { return !waiting.contains(op); });
  }
  // Whether the program has a once-per-step part before the micro-batches.
  bool before = false;
  for (StepPart part : {StepPart::BeforeMicroBatches, StepPart::Forward,
                        StepPart::Backward, StepPart::OncePerStep}) {
    if (split && part == StepPart::Forward && before)
      plan::ForwardBeginOp::create(b, loc);
    if (split && part == StepPart::Backward)
      plan::BackwardBeginOp::create(b, loc);
    if (split && part == StepPart::OncePerStep)
      plan::AfterMicroBatchesOp::create(b, loc);
    int64_t passes =
        split && (part == StepPart::Forward || part == StepPart::Backward)
            ? order.chunks
            : 1;
    // The backward goes back through the chunks.
    for (int64_t i = 0; i < passes; ++i) {
      int64_t chunk = part == StepPart::Backward ? passes - 1 - i : i;
      if (passes > 1)
        plan::ChunkOp::create(b, loc, chunk);
      for (Operation *opOnMesh : ordered) {
        Operation &op = *opOnMesh;
        if (order.partOfOp(op) != part ||
            (passes > 1 && chunkOf(op, mesh) != chunk))
          continue;
        before |= part == StepPart::BeforeMicroBatches;
        Block *programBody = b.getInsertionBlock();
        Operation *last = programBody->empty() ? nullptr : &programBody->back();
        auto ret = dyn_cast<func::ReturnOp>(op);
        LogicalResult lowered =
            ret ? lowerReturn(ret, function, lowering)
                : cast<PlanLoweringOpInterface>(op).lowerToDevice(lowering);
        if (failed(lowered))
          return failure();
        Operation *firstLowered =
            last ? last->getNextNode()
                 : (programBody->empty() ? nullptr : &programBody->front());
        if (firstLowered && sbp::getReshardStep(&op) &&
            ((feedsOnlyUpdates(&op) && !deferredReductions.contains(&op) &&
              !withinPositions.contains(&op)) ||
             (step && prefetchesParameter(&op, forward))))
          markFeedsUpdate(firstLowered);
        if (costModel && isa<nn::ShardableOpInterface>(op) && firstLowered)
          addKernelFigures(op, *costModel, lowering, firstLowered);
      }
    }
  }
  return success();
}

struct LowerToPlanPass : parplan::impl::LowerToPlanBase<LowerToPlanPass> {
  using LowerToPlanBase::LowerToPlanBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    LowerToPlanBase::getDependentDialects(registry);
    registerNNPlanLowering(registry);
    registerReshardingPlanLowering(registry);
    registerCrossMeshPlanLowering(registry);
  }

  void runOnOperation() override;

private:
  LogicalResult lowerPrograms(func::FuncOp function,
                              ArrayRef<ProgramMesh> meshes, sbp::MeshOp mesh,
                              const StepOrder &order,
                              const cost::Cluster *cluster);
  void finishPlanModule(ModuleOp module, ArrayRef<int64_t> planShape,
                        const StepOrder &order, bool withSchedule,
                        const cost::Cluster *cluster);
};

void LowerToPlanPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto function = module.lookupSymbol<func::FuncOp>("main");
  if (!function || function.isExternal() || !function.getBody().hasOneBlock()) {
    module.emitError() << "lower-to-plan: the module has no function @main "
                          "of one block";
    return signalPassFailure();
  }
  SmallVector<sbp::MeshOp> declared(module.getOps<sbp::MeshOp>());
  StepOrder order;
  order.staged =
      declared.size() > 1 || llvm::any_of(declared, [](sbp::MeshOp mesh) {
        return static_cast<bool>(mesh.getDevices());
      });
  std::vector<int64_t> planShape;
  auto mesh = module.lookupSymbol<sbp::MeshOp>("mesh");
  FailureOr<std::vector<ProgramMesh>> meshes =
      programMeshes(module, declared, order.staged, mesh, planShape);
  if (failed(meshes) ||
      failed(checkLoweringInput(function, meshSize(planShape))))
    return signalPassFailure();
  if (auto attr = module->getAttrOfType<IntegerAttr>(parplan::kChunksAttrName))
    order.chunks = attr.getInt();
  if (failed(checkChunkMarks(function, order.chunks)))
    return signalPassFailure();
  order.microBatches = microBatchCount(module);
  if (order.microBatches > 1) {
    FailureOr<DenseMap<Operation *, StepPart>> parts =
        stepParts(function, declared);
    if (failed(parts))
      return signalPassFailure();
    order.partOf = std::move(*parts);
  }
  // Stages of several model chunks (place-stages' chunks) run by the
  // interleaved schedule, which needs them.
  std::optional<schedule::PipelineSchedule> pipelineSchedule;
  if (schedule != "sequential") {
    pipelineSchedule = schedule::parsePipelineSchedule(schedule);
    if (!pipelineSchedule) {
      module.emitError() << "lower-to-plan: schedule '" << schedule
                         << "' is unknown; use gpipe, 1f1b, eager-1f1b, "
                            "interleaved or sequential";
      return signalPassFailure();
    }
  }
  if (std::optional<std::string> why =
          schedule::checkScheduleChunks(schedule, order.chunks);
      why && order.microBatches > 1 && order.staged) {
    module.emitError() << "lower-to-plan: " << *why << " (sbp.chunks)";
    return signalPassFailure();
  }
  const cost::Cluster *cluster = getAnalysis<ClusterAnalysis>().getCluster();
  if (order.staged && !cluster) {
    getAnalysis<ClusterAnalysis>().require(module, "lower-to-plan");
    return signalPassFailure();
  }
  if (failed(lowerPrograms(function, *meshes, mesh, order, cluster)))
    return signalPassFailure();
  for (auto program : module.getOps<plan::ProgramOp>())
    gatherIntoScatteredGradients(program);
  finishPlanModule(module, planShape, order,
                   order.microBatches > 1 && order.staged && pipelineSchedule,
                   cluster);
  if (mesh && !order.staged)
    if (ArrayAttr shares = mesh.getSharesAttr())
      module->setAttr(parplan::kPlanMeshSharesAttrName, shares);
  function.erase();
  for (sbp::MeshOp meshOp : declared)
    meshOp.erase();
}

/// One program per class of devices of a mesh that see every block with
/// the same extents: the first device not yet placed is lowered, and every
/// other device that agrees with it on the extents its lowering asked for
/// shares its program (DeviceLowering says the rest by coordinates, and a
/// cross-mesh move by its table). Meshes and groups go before the
/// programs, groups in the order they are first used.
LogicalResult LowerToPlanPass::lowerPrograms(func::FuncOp function,
                                             ArrayRef<ProgramMesh> meshes,
                                             sbp::MeshOp mesh,
                                             const StepOrder &order,
                                             const cost::Cluster *cluster) {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  OpBuilder groupBuilder(context);
  groupBuilder.setInsertionPoint(function);
  std::optional<CrossMeshMoves> moves;
  if (order.staged) {
    for (const ProgramMesh &programMesh : meshes)
      plan::MeshOp::create(
          groupBuilder, function.getLoc(), programMesh.name.getAttr(),
          groupBuilder.getDenseI64ArrayAttr(programMesh.shape),
          groupBuilder.getDenseI64ArrayAttr(programMesh.devices));
    moves.emplace(*cluster, groupBuilder);
  }
  DeviceGroups groups(groupBuilder);
  // The cost model of each mesh, for the figures of the kernels lowered
  // from nn ops. None where it cannot be built (a module without a
  // cluster): the kernels then go without.
  MeshCostModels costModels(cluster, /*mixedPrecision=*/false);
  int64_t index = 0;
  for (const ProgramMesh &programMesh : meshes) {
    const std::vector<int64_t> &meshShape = programMesh.shape;
    auto deviceAt = [&](int64_t position) {
      return programMesh.devices.empty()
                 ? position
                 : programMesh.devices[static_cast<size_t>(position)];
    };
    sbp::MeshOp meshOp =
        programMesh.name
            ? module.lookupSymbol<sbp::MeshOp>(programMesh.name.getAttr())
            : mesh;
    std::string unpriced;
    const ShardingCostModel *costModel =
        meshOp ? costModels.get(meshOp, unpriced) : nullptr;
    // Every program of the mesh lowers the same ops, looked for once.
    std::vector<Operation *> opsOnMesh;
    for (Operation &op : function.front())
      if (!order.staged || runsOn(&op, programMesh.name))
        opsOnMesh.push_back(&op);
    std::vector<int64_t> unplaced(static_cast<size_t>(meshSize(meshShape)));
    std::iota(unplaced.begin(), unplaced.end(), 0);
    for (; !unplaced.empty(); ++index) {
      int64_t first = unplaced.front();
      OpBuilder b(context);
      b.setInsertionPointToEnd(module.getBody());
      auto program = plan::ProgramOp::create(
          b, function.getLoc(),
          b.getStringAttr("program" + std::to_string(index)),
          b.getDenseI64ArrayAttr({deviceAt(first)}), programMesh.name);
      program.getBody().push_back(new Block());
      b.setInsertionPointToEnd(&program.getBody().front());
      DeviceLowering lowering(b, groups, meshShape,
                              meshCoordinate(meshShape, first),
                              static_cast<bool>(mesh) || order.staged,
                              programMesh.name, deviceAt(first));
      MeshShares shares = meshOp ? meshOp.getMeshShares() : MeshShares();
      lowering.setShares(shares);
      if (moves)
        lowering.setCrossMeshMoves(&*moves);
      if (failed(lowerStep(b, function, programMesh.name, opsOnMesh, order,
                           lowering, costModel)))
        return failure();
      auto extents = [&](int64_t position) {
        std::vector<int64_t> coordinate = meshCoordinate(meshShape, position);
        std::vector<std::vector<int64_t>> blocks;
        for (const auto &[shape, splits] : lowering.unevenBlocks())
          blocks.push_back(localShape(shape, meshShape, fromSplits(splits),
                                      coordinate, shares));
        return blocks;
      };
      std::vector<std::vector<int64_t>> own = extents(first);
      SmallVector<int64_t> members = {deviceAt(first)};
      std::vector<int64_t> rest;
      for (int64_t position : ArrayRef<int64_t>(unplaced).drop_front())
        (extents(position) == own ? members.push_back(deviceAt(position))
                                  : rest.push_back(position));
      llvm::sort(members);
      reduceInPlace(program);
      writeUpdatesInPlace(program);
      program.setDevicesAttr(b.getDenseI64ArrayAttr(members));
      unplaced = std::move(rest);
    }
  }
  return success();
}

/// The plan module's own attributes: its mesh, micro-batches and schedule;
/// the cluster the layouts were priced on and the search's prediction, for
/// the simulator (docs/simulate.md). The search's marks (chunks, the
/// cluster attribute, the pins the layouts obeyed) have no use in the
/// programs.
void LowerToPlanPass::finishPlanModule(ModuleOp module,
                                       ArrayRef<int64_t> planShape,
                                       const StepOrder &order,
                                       bool withSchedule,
                                       const cost::Cluster *cluster) {
  MLIRContext *context = &getContext();
  module->setAttr(parplan::kPlanMeshShapeAttrName,
                  OpBuilder(context).getDenseI64ArrayAttr(planShape));
  if (order.microBatches > 1)
    module->setAttr(parplan::kPlanMicroBatchesAttrName,
                    OpBuilder(context).getI64IntegerAttr(order.microBatches));
  if (withSchedule)
    module->setAttr(parplan::kPlanScheduleAttrName,
                    StringAttr::get(context, schedule));
  module->removeAttr(parplan::kChunksAttrName);
  if (cluster)
    module->setAttr(kPlanClusterAttrName,
                    StringAttr::get(context, cost::writeClusterJson(*cluster)));
  if (auto predicted = module->getAttrOfType<sbp::LayoutPlanAttr>(
          parplan::kLayoutPlanAttrName))
    module->setAttr(
        parplan::kPlanPredictionAttrName,
        plan::PredictionAttr::get(context, predicted.getStepTime(),
                                  predicted.getComputeTime(),
                                  predicted.getCommunicationTime()));
  module->removeAttr(kClusterAttrName);
  module->removeAttr(kAnnotationsAttrName);
}
} // namespace
