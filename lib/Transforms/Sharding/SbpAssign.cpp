//===- SbpAssign.cpp - choose an nd-SBP sharding for every op -------------===//
//
// The cost-driven sharding search (docs/sbp-assign.md). Each op of @main
// becomes a node whose candidates are its n-D signatures (one 1-D signature
// of ShardableOpInterface per mesh axis); each use of a value becomes an
// edge priced by the boxing it needs, forward and, in training, backward.
// Ops of identical repeated layers fold into one node, so the problem the
// solver sees does not grow with depth. Memory enters as a Lagrangian
// penalty: the smallest price per byte at which the plan fits.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Sharding/Passes.h"

#include "parplan/Cost/Annotations.h"
#include "parplan/Cost/LayoutSolver.h"
#include "parplan/Cost/Memory.h"
#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Sbp/Resharding.h"
#include "parplan/Schedule/Pipeline.h"
#include "parplan/Support/Text.h"
#include "parplan/Transforms/Debug.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"
#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <thread>
#include <unordered_map>

namespace parplan {
#define GEN_PASS_DEF_SBPASSIGN
#include "parplan/Transforms/Sharding/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;
using parplan::nn::ShardableOpInterface;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// More candidates than this for one op means a mesh of many axes meets an op
/// of many rules; the search would be slow and the answer no better.
constexpr size_t kMaxCandidates = 4096;
/// How near the search bisects the least price per byte at which the plan
/// fits (relative): every halving is a search, and closer moved no predicted
/// step of GPT-3 175B's pipeline trials by more than 0.3%.
constexpr double kPriceTolerance = 1e-3;
/// The first price per byte tried where no pair of plans brackets one, and
/// the least one bisected to: a microsecond per gigabyte, far below where
/// memory starts to count.
constexpr double kFirstPrice = 1e-15;
/// Probes of the price search at most: the hull walk takes a few, the
/// bisection up to about forty (times four from kFirstPrice up to a second
/// per byte, then halvings to kPriceTolerance).
constexpr int kMaxPriceProbes = 60;
/// The price per byte of the plan of least memory: a second per kilobyte,
/// so that bytes decide and time only breaks their ties.
constexpr double kLeastMemoryPrice = 1e-3;
/// Two plans of the price search are one when their seconds and bytes agree
/// to this (relative): sums of the same terms in another order.
constexpr double kSamePlan = 1e-9;
/// Branch-and-bound steps the `exact` strategy may take.
constexpr int64_t kMaxExactSteps = 200'000'000;

/// One n-D signature: the nd-SBP of every operand and every result.
struct Candidate {
  std::vector<NdSbp> operands;
  std::vector<NdSbp> results;
};

/// An op's candidates, shared by the alike ops of repeated layers (a
/// model's ops are tens of thousands, its kinds of op a few hundred).
class Candidates {
public:
  Candidates() = default;
  explicit Candidates(std::vector<Candidate> list)
      : list(std::make_shared<const std::vector<Candidate>>(std::move(list))) {}
  const Candidate &operator[](size_t index) const { return (*list)[index]; }
  size_t size() const { return list ? list->size() : 0; }
  bool empty() const { return size() == 0; }
  std::vector<Candidate>::const_iterator begin() const {
    return list ? list->begin() : none().begin();
  }
  std::vector<Candidate>::const_iterator end() const {
    return list ? list->end() : none().end();
  }

private:
  static const std::vector<Candidate> &none() {
    static const std::vector<Candidate> empty;
    return empty;
  }
  std::shared_ptr<const std::vector<Candidate>> list;
};

/// What makes ops alike for the search: the op, its attributes but names
/// (a parameter's, the stored tensor a part is of, a dropout's mask key)
/// and sbp.* marks, its operand types and its result types. Alike ops have
/// the same candidates.
std::vector<const void *> alikeOpKey(Operation *op) {
  std::vector<const void *> key;
  key.push_back(op->getName().getAsOpaquePointer());
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute attr : op->getAttrs())
    if (!llvm::is_contained({"name", "source", "part_of", "key"},
                            attr.getName().strref()) &&
        !attr.getName().strref().starts_with("sbp."))
      attrs.push_back(attr);
  key.push_back(
      DictionaryAttr::get(op->getContext(), attrs).getAsOpaquePointer());
  for (Type type : op->getOperandTypes())
    key.push_back(type.getAsOpaquePointer());
  key.push_back(nullptr);
  for (Type type : op->getResultTypes())
    key.push_back(type.getAsOpaquePointer());
  return key;
}

/// A layout pinned on one operand or result: per mesh axis an entry, or
/// nothing where the axis is free.
using PinnedLayout = std::vector<std::optional<Sbp>>;

/// What an op must satisfy: pinned layouts of some operands and results,
/// and where each came from (for messages).
struct Pin {
  std::vector<std::optional<PinnedLayout>> operands;
  std::vector<std::optional<PinnedLayout>> results;
  std::vector<std::string> origins;
};

/// One op of @main, or one value @main returns (a sink: Operation is the
/// func.return, `sinkOperand` its operand index).
struct Node {
  Operation *op = nullptr;
  int64_t sinkOperand = -1;
  /// Ops alike by alikeOpKey share a kind, numbered from 0 (sinks: -1).
  int64_t kind = -1;
  Candidates candidates;
  /// Per candidate, for this one op: seconds and bytes per device, and of
  /// those bytes, the activations of one micro-batch its stage keeps for
  /// the backward (`memory` holds them once per micro-batch in flight).
  std::vector<double> time;
  std::vector<double> memory;
  std::vector<double> activation;
  /// What the plan of least memory counts: `memory`, or the results' own
  /// bytes where that is more (a value read at once or recomputed holds
  /// no bytes for the step, yet lives at the peak while its readers run).
  std::vector<double> leastMemory;
  bool isSink() const { return sinkOperand >= 0; }
};

/// A use: result `result` of node `producer` read as operand `operand` of
/// node `consumer`.
struct Use {
  int64_t producer = 0;
  unsigned result = 0;
  int64_t consumer = 0;
  unsigned operand = 0;
  /// Not a data flow: a training step's updated value (the sink consumer)
  /// must come back in the layout of the parameter it replaces (the
  /// producer), so that the next step reads it as this one did.
  bool tie = false;
};

using parplan::nn::nodeName;

/// An op as messages name it (nn::describeNode).
std::string describe(Operation *op) { return parplan::nn::describeNode(op); }

/// Elements the most loaded device holds.
double localElements(Type type, const ShardingCostModel &model,
                     const NdSbp &layout) {
  std::vector<int64_t> shape = staticShapeOf(type);
  std::vector<int64_t> local =
      parplan::localShape(shape, model.getMeshShape(), layout,
                          model.largestBlockCoordinate(), model.getShares());
  double elements = 1;
  for (int64_t dim : local)
    elements *= static_cast<double>(dim);
  return elements;
}

Type elementTypeOf(Type type);

/// Bytes the most loaded device holds of a value of `type` at `layout`.
double localBytes(Type type, const ShardingCostModel &model,
                  const NdSbp &layout) {
  return localElements(type, model, layout) *
         static_cast<double>(model.elementBytes(elementTypeOf(type)));
}

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Type elementTypeOf(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.getElementType();
  return type;
}

bool matchesPin(const NdSbp &layout, const std::optional<PinnedLayout> &pin,
                const std::vector<int64_t> &meshShape) {
  if (!pin)
    return true;
  for (size_t axis = 0; axis < layout.size(); ++axis)
    // Every layout is the same on an axis of one device.
    if (meshShape[axis] > 1 && (*pin)[axis] && *(*pin)[axis] != layout[axis])
      return false;
  return true;
}

bool matchesPin(const Candidate &candidate, const Pin &pin,
                const std::vector<int64_t> &meshShape) {
  for (size_t i = 0; i < pin.operands.size(); ++i)
    if (!matchesPin(candidate.operands[i], pin.operands[i], meshShape))
      return false;
  for (size_t i = 0; i < pin.results.size(); ++i)
    if (!matchesPin(candidate.results[i], pin.results[i], meshShape))
      return false;
  return true;
}

std::string toString(const PinnedLayout &layout) {
  std::string text = "[";
  for (size_t axis = 0; axis < layout.size(); ++axis) {
    if (axis)
      text += ", ";
    text += layout[axis] ? layout[axis]->str() : "any";
  }
  return text + "]";
}

/// "operand 0 [S(0), any] result 0 [B, B]": what a pin holds.
std::string describe(const Pin &pin) {
  std::string text;
  for (size_t i = 0; i < pin.operands.size(); ++i)
    if (pin.operands[i])
      text +=
          " operand " + std::to_string(i) + " " + toString(*pin.operands[i]);
  for (size_t i = 0; i < pin.results.size(); ++i)
    if (pin.results[i])
      text += " result " + std::to_string(i) + " " + toString(*pin.results[i]);
  return text;
}

PinnedLayout pinned(const NdSbp &layout) {
  return PinnedLayout(layout.begin(), layout.end());
}

/// Whether a reshape from `in` laid out by `from` to `out` laid out by `to`
/// keeps every device's elements. On a mesh of even parts, the split
/// extents must divide evenly: balanced parts of 7 rows (4 and 3) and of
/// their 3584 rows times columns (1792 each) differ. On a mesh of uneven
/// shares, every device is checked instead: a split along that axis cuts
/// the reshaped dimensions in proportion, so the parts of 128 rows by
/// weights 9 and 3 and of their 65536 rows times columns are the same
/// elements, whatever the axis's size; an inner axis then cuts each
/// position's part, evenly or not.
bool reshapeKeepsParts(Type in, const NdSbp &from, Type out, const NdSbp &to,
                       const ShardingCostModel &model) {
  const std::vector<int64_t> &meshShape = model.getMeshShape();
  const MeshShares &shares = model.getShares();
  bool uneven = false;
  for (size_t axis = 0; axis < meshShape.size(); ++axis)
    uneven |= hasUnevenShares(shares, axis);
  if (!uneven) {
    auto splitsDivide = [&](Type type, const NdSbp &layout) {
      std::vector<int64_t> shape = staticShapeOf(type);
      std::vector<int64_t> shards(shape.size(), 1);
      for (size_t axis = 0; axis < layout.size(); ++axis)
        if (layout[axis].isSplit())
          shards[layout[axis].axis] *= meshShape[axis];
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] % shards[d] != 0)
          return false;
      return true;
    };
    return splitsDivide(in, from) && splitsDivide(out, to);
  }
  for (int64_t position = 0; position < meshSize(meshShape); ++position) {
    std::vector<int64_t> coordinate = meshCoordinate(meshShape, position);
    if (deviceSlice(staticShapeOf(in), meshShape, from, coordinate, shares)
            .numElements() !=
        deviceSlice(staticShapeOf(out), meshShape, to, coordinate, shares)
            .numElements())
      return false;
  }
  return true;
}

/// The meshes of the user's stages (place-stages' sbp.stage on every op),
/// in the order of their sbp.mesh ops; empty without stages.
struct StageMeshes {
  std::vector<FlatSymbolRefAttr> names;
  std::vector<cost::DeviceMesh> meshes;
  /// Per stage, the cost model of its own devices (their types, memory
  /// and links), which prices its ops and boxings.
  std::vector<ShardingCostModel> models;
  /// Per op of @main, its index in `names`.
  DenseMap<Operation *, int64_t> stageOf;
  /// The model chunks of each stage (the module's sbp.chunks; 1 but for
  /// the interleaved schedule), and each op's (its sbp.chunk; 0).
  int64_t chunks = 1;
  DenseMap<Operation *, int64_t> chunkOf;
};

/// Reads the stages of `function`: every op marked, or none.
FailureOr<StageMeshes> collectStages(ModuleOp module, func::FuncOp function) {
  StageMeshes stages;
  Operation *unmarked = nullptr;
  DenseSet<Attribute> used;
  for (Operation &op : function.getBody().front().without_terminator()) {
    auto stage = op.getAttrOfType<FlatSymbolRefAttr>(parplan::kStageAttrName);
    if (!stage) {
      unmarked = unmarked ? unmarked : &op;
      continue;
    }
    if (!module.lookupSymbol<sbp::MeshOp>(stage.getAttr()))
      return op.emitError()
             << "sbp.stage " << stage << " does not name an sbp.mesh";
    used.insert(stage);
  }
  // Stages in the order their meshes are declared, the pipeline's order
  // (as lower-to-plan numbers them): the schedule's in-flight counts and
  // the boundaries depend on it.
  DenseMap<Attribute, int64_t> indexOf;
  for (sbp::MeshOp mesh : module.getOps<sbp::MeshOp>()) {
    auto name = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    if (!used.contains(name))
      continue;
    indexOf[name] = static_cast<int64_t>(stages.names.size());
    stages.names.push_back(name);
    stages.meshes.push_back(deviceMeshOf(mesh));
  }
  if (auto chunks =
          module->getAttrOfType<IntegerAttr>(parplan::kChunksAttrName))
    stages.chunks = std::max<int64_t>(1, chunks.getInt());
  for (Operation &op : function.getBody().front().without_terminator()) {
    if (Attribute stage = op.getAttr(parplan::kStageAttrName))
      stages.stageOf[&op] = indexOf.lookup(stage);
    if (auto chunk = op.getAttrOfType<IntegerAttr>(parplan::kChunkAttrName)) {
      if (chunk.getInt() >= stages.chunks)
        return op.emitError() << "sbp-assign: sbp.chunk " << chunk.getInt()
                              << " is not one of the stages' " << stages.chunks
                              << " model chunks (sbp.chunks)";
      stages.chunkOf[&op] = chunk.getInt();
    }
  }
  if (!stages.names.empty() && unmarked)
    return unmarked->emitError()
           << "sbp-assign: this op has no sbp.stage while others have one "
              "(place-stages marks every op)";
  for (const cost::DeviceMesh &mesh : stages.meshes)
    if (mesh.shape != stages.meshes.front().shape)
      return function.emitError()
             << "sbp-assign lays out stages on meshes of one shape; "
             << stages.names.front() << " is "
             << cost::formatMeshShape(stages.meshes.front().shape) << ", "
             << stages.names[&mesh - stages.meshes.data()] << " "
             << cost::formatMeshShape(mesh.shape);
  return stages;
}

/// The strategies auto also tries, as starts of their own.
constexpr const char *kBaselines[] = {"data-parallel", "megatron",
                                      "replicated"};

/// The rows of the batch a step (or micro-batch) reads: the greatest
/// common divisor of the inputs' first extents over one (an input of one
/// row, position ids say, is not batched); 0 without such inputs.
int64_t batchRows(func::FuncOp function) {
  int64_t rows = 0;
  function.walk([&](nn::InputOp input) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (type && type.getRank() > 0 && type.getDimSize(0) > 1)
      rows = std::gcd(rows, type.getDimSize(0));
  });
  return rows;
}

class ShardingSearch {
public:
  ShardingSearch(ModuleOp module, func::FuncOp function,
                 const ShardingCostModel &model,
                 const SbpAssignOptions &options, const StageMeshes &stages)
      : module(module), function(function), model(model), options(options),
        stages(stages), meshShape(model.getMeshShape()),
        explicitStep(parplan::isStep(module)) {}

  const ShardingCostModel &getModel() const { return model; }

  /// Lays the program out: pins, prices, the search; the IR is untouched.
  /// With `giveUpUnfit`, a program that fits on no layout fails before the
  /// search, without saying why (a start of auto's, dropped quietly).
  LogicalResult run(bool giveUpUnfit = false);
  /// Writes the layout into the IR: sbp.sharding on every op, sbp.explain
  /// when asked, and sbp.plan with the strategy asked for, this search's
  /// own as `start`, and `baselines`, the predicted steps of the other
  /// starts tried (strategy name to seconds).
  /// `startLabel` follows the start's name where the step chose between
  /// meshes of even parts and parts by speed.
  void annotate(StringRef requested, StringRef startLabel,
                ArrayRef<std::pair<std::string, double>> baselines);

  /// Lays a baseline out as one of auto's starts: its pins yield to the
  /// user's (addStrategyPins), where a baseline asked for by name
  /// contradicting them is an error.
  void startOfAuto() { yieldsToUserPins = true; }
  /// As a baseline: the largest parameter and its optimizer state split by
  /// rows along the mesh's last axis, as ZeRO splits them (addStrategyPins).
  void splitLargestParameter() { splitsLargestParameter = true; }
  double getStepTime() const { return stepTime; }
  StringRef getStrategy() const { return options.strategy; }
  /// Why run() found no fit, as the compile driver reads it off the module
  /// (sbp.no_fit); null otherwise. Set on the module by the pass: starts
  /// may run on other threads, which leave the module alone.
  sbp::NoFitAttr getNoFit() const { return noFit; }

private:
  /// Per distinct class-level use: the cost matrix of one use, how many
  /// uses it stands for, and its classes.
  struct ClassUse {
    int64_t producerClass = 0;
    int64_t consumerClass = 0;
    int64_t count = 0;
    /// Shared with the class-use of a coarser grouping it lies in.
    std::shared_ptr<const std::vector<double>> costs;
    /// In an explicit step, per pair of layouts: the bytes of the reader's
    /// boxed copy (useBoxedBytes), shared alike; empty elsewhere.
    std::shared_ptr<const std::vector<double>> boxedBytes;
  };
  /// Ops grouped into classes of alike ops, each given one layout by the
  /// search, and their uses into class-level uses.
  struct Classes {
    /// Per node, its class; per class, its first node and its size.
    std::vector<int64_t> ofNode, representative, size;
    /// Per class, the bytes per device of each candidate, summed over its
    /// members on each stage (they hold their activations for different
    /// numbers of micro-batches), stages ascending.
    struct StageBytes {
      int64_t stage = 0;
      std::vector<double> bytes;
      /// The same of Node::leastMemory.
      std::vector<double> leastBytes;
    };
    std::vector<std::vector<StageBytes>> memory;
    std::vector<ClassUse> uses;
    /// Per use, its index in `uses`.
    std::vector<int64_t> ofUse;
    /// Starts of the solves, a candidate per class: every op replicated
    /// where it can be, and every op split along the batch on every axis
    /// (batchSplitHint).
    std::vector<std::vector<int64_t>> hints;
  };
  LogicalResult buildNodes();
  LogicalResult composeCandidates(Node &node, ArrayRef<SbpSignature> oneAxis);
  void sinkCandidates(Node &node, Value value);
  /// In an explicit training step: heldValues, boxedReads and
  /// stagePositions.
  void collectHeldValues();
  /// Whether `value` is an activation its own stage keeps for the
  /// backward: one that a backward op on that stage reads.
  bool keptOnItsStage(Value value) const;
  void priceCandidates(Node &node);
  /// Bytes a parameter node's device holds per element it holds: its
  /// model state in training (weights, gradients, optimizer moments), the
  /// weights alone otherwise.
  double stateBytesPerElement(const Node &node) const;
  /// The work a device does of a node at a candidate: one pass of it, the
  /// passes a run makes (an op's forward and backward) and the runs a step
  /// makes. A node's time is passes x the work's time x runs, in that
  /// order, so that its figure is the same to the last bit wherever it is
  /// computed.
  struct NodeWork {
    ShardingCostModel::LocalWork work;
    double passes = 1, runs = 1;
    double times(double seconds) const { return passes * seconds * runs; }
  };
  /// A node's work at candidate `k` (a parameter's: its optimizer state
  /// read and written once); none for a sink or an op without a cost.
  /// priceCandidates' times are its computeTime.
  std::optional<NodeWork> workOf(const Node &node, size_t k) const;
  /// On one mesh of uneven shares, the compute of the chosen layouts as
  /// the devices run it: each position along the shares' axis through the
  /// ops at its own pace, all waiting for the slowest where an op reads a
  /// boxed value (a collective joins them). The sum of each op's slowest
  /// position counts every op at the pace of whichever position is slower
  /// at it: on mixed-t4-a100 as one mesh the A100s are slower at the
  /// matmuls of their 18 rows, the T4s at the rest of their 7, and that
  /// sum was 3% over the simulated step. None elsewhere.
  std::optional<double> positionComputeTime() const;
  /// The seconds per step of each position along the shares' axis of a
  /// node's kernel under the chosen layout (positionTimes); empty off one
  /// mesh of uneven shares or where the node has no work.
  llvm::SmallVector<double, 8> positionKernelTimes(size_t node) const;
  LogicalResult collectPins();
  LogicalResult addPin(Operation *op, Pin pin);
  /// A baseline's pins. As one of auto's starts (yieldsToUserPins), around
  /// the user's: each entry the annotations pin (`userPins`) keeps their
  /// layout, and the baseline pins the rest, so that every start honours
  /// them.
  LogicalResult addStrategyPins();
  /// addPin of a baseline's pin without the entries `userPins` sets.
  LogicalResult addPinAroundUsers(Operation *op, Pin pin);
  /// Whale's replicate and split scopes of the annotations.
  LogicalResult addScopePins(const Annotations &annotations);
  /// Megatron-LM's tensor parallelism on the last mesh axis, for the
  /// weights `inScope` admits: a matmul by a weight is column-parallel
  /// (weight S(1)) unless its input derives from a column-parallel matmul
  /// since the last layer norm, which makes it row-parallel (weight S(0))
  /// and closes the pair; embedding tables split by rows. Pins by `origin`.
  LogicalResult pinColumnThenRow(llvm::function_ref<bool(nn::ParamOp)> inScope,
                                 const std::string &origin);
  LogicalResult applyPins();
  /// Groups the nodes into classes, on stages of alike meshes together
  /// when `shareStages`. The class-uses of a finer grouping take their
  /// matrices from `coarser`'s (one per use is computed otherwise).
  Classes groupClasses(bool shareStages,
                       const Classes *coarser = nullptr) const;
  /// Each node's class label: alike ops (the same op, attributes but
  /// names, types, pins and stage kind) refined by their neighbourhoods.
  std::vector<int64_t> labelNodes(bool shareStages) const;
  /// `grouped`'s class-uses and each use's, from its nodes' classes.
  void groupUses(Classes &grouped, const Classes *coarser) const;
  /// Per class, the candidate that splits the most tensors whose first
  /// dimension is a multiple of the batch's rows along it, on every mesh
  /// axis, and leaves the most others whole or partial; none where no
  /// input has rows.
  std::optional<std::vector<int64_t>>
  batchSplitHint(const Classes &grouped) const;
  /// Seconds of each (producer candidate, consumer candidate) pair of a
  /// use over a step: the boxing runs where its consumer does.
  std::vector<double> useCosts(const Use &use) const;
  std::vector<double> useCostsOnce(const Use &use) const;
  /// Per pair of layouts of a use within a stage, the bytes per device of
  /// the copy its reader reads where the two differ (the boxing's result);
  /// priced beside the ops' memory, so that the price of memory sees the
  /// gathered copies of split parameters.
  std::vector<double> useBoxedBytes(const Use &use) const;
  /// Seconds of one run of a use between stages with its producer at
  /// candidate `a` and its consumer at `b`: the move insert-cross-mesh
  /// writes, and in an implicit training step its gradient's way back;
  /// the middle of each move planned (`planned`) or bounded (the search).
  double moveCost(const Use &use, int64_t a, int64_t b, bool planned) const;
  /// The move of `sent` on stage `source` to `received` on `destination`:
  /// planned in every mode, or with `planned` false the planner's estimate.
  std::optional<CrossMeshCost> crossMeshMove(int64_t source, const NdSbp &sent,
                                             int64_t destination,
                                             const NdSbp &received, Type type,
                                             bool planned) const;
  LogicalResult solve();
  /// Records why no layout fits (#sbp.no_fit) and says it: `smallest`,
  /// the plan of least memory, needs `needed` bytes per device.
  LogicalResult failNoFit(const Classes &searched,
                          const std::optional<cost::LayoutSolution> &smallest,
                          double needed);
  /// Explain the search (-parplan-debug-only=sbp-assign): its plan of least
  /// time, each probe of the price bisection, the plan kept and the price
  /// per byte it was bought at (-1: the plan of least memory).
  void debugLeastTime(const Classes &searched,
                      const cost::LayoutSolution &best) const;
  void debugLeastMemory(bool transients, bool boxedCopies, double peak) const;
  void debugPrice(double bytePrice,
                  const std::optional<cost::LayoutSolution> &candidate,
                  const Classes &grouped) const;
  void debugKept(double bytePrice) const;
  /// What a search for the plan of least memory counts besides the bytes
  /// each candidate holds for the step (Node::memory). Its objective is a
  /// sum over ops, the peak is not, and no one sum follows the peak on
  /// every model: the search tries each and keeps the least peak.
  struct MemoryObjective {
    /// Node::leastMemory for Node::memory, with time breaking ties
    /// (kLeastMemoryPrice): without time, the ops whose results the step
    /// does not keep cost nothing either way, and may be left replicated,
    /// running the whole batch on every device with its transients (a
    /// 48-layer GPT-3's attention scores, 100 GB per device).
    bool transients = false;
    /// The boxed copies readers read (ClassUse::boxedBytes: the gathers of
    /// split parameters, held from the forward to the backward); in an
    /// explicit step only.
    bool boxedCopies = false;
  };
  /// The search over `grouped` with each byte per device priced
  /// `bytePrice` seconds, or for the plan of least memory by `leastMemory`,
  /// started also from `hint` (a choice per class), by the solver's stages
  /// `solverOptions`.
  std::optional<cost::LayoutSolution>
  solveAt(const Classes &grouped, double bytePrice,
          std::optional<MemoryObjective> leastMemory,
          const std::vector<std::vector<int64_t>> &hints,
          const cost::LayoutSolverOptions &solverOptions) const;
  double planMemory(const Classes &grouped,
                    const std::vector<int64_t> &classChoice) const;
  /// The cost model of stage `stage`'s devices (the mesh's without
  /// stages).
  const ShardingCostModel &modelOf(int64_t stage) const {
    return stages.models.empty() ? model
                                 : stages.models[static_cast<size_t>(stage)];
  }
  /// The model, of the mesh's and every stage's, whose smallest device has
  /// the least memory (on a cluster of mixed types, the smallest type's).
  const ShardingCostModel &leastMemoryModel() const {
    const ShardingCostModel *least = &model;
    for (const ShardingCostModel &stage : stages.models)
      if (stage.getDeviceMemoryBytes() < least->getDeviceMemoryBytes())
        least = &stage;
    return *least;
  }
  double smallestDeviceMemory() const {
    return static_cast<double>(leastMemoryModel().getDeviceMemoryBytes());
  }
  /// The bytes per device a plan may use: the smallest device's memory, or
  /// the memory budget where that is less.
  double memoryCapacity() const {
    double device = smallestDeviceMemory();
    return options.memoryBudget > 0 ? std::min(device, options.memoryBudget)
                                    : device;
  }
  /// The seconds the search minimizes (compute and uses, as priced by
  /// the search) of a choice per class.
  double searchedTime(const Classes &grouped,
                      const std::vector<int64_t> &classChoice) const;
  /// The uses' part of it: the boxings and moves.
  double usesTime(const Classes &grouped,
                  const std::vector<int64_t> &classChoice) const;

  /// Seconds of node `node` under candidate `choice` plus those of the uses
  /// it takes part in, with every other node at its chosen candidate.
  double localCost(int64_t node, int64_t choice) const;

  /// Per op, its chosen candidate's local cost and the best other candidate
  /// (-1 when there is none) with its local cost.
  struct Explanation {
    double cost = 0;
    int64_t runnerUp = -1;
    double runnerUpCost = kInfinity;
  };
  void explainChoices();
  std::vector<Explanation> explanations; // per node; empty unless asked

  ModuleOp module;
  func::FuncOp function;
  const ShardingCostModel &model;
  SbpAssignOptions options;
  const StageMeshes &stages;
  sbp::NoFitAttr noFit;
  std::vector<int64_t> meshShape;

  std::vector<Node> nodes;
  std::vector<Use> uses;
  DenseMap<Operation *, int64_t> nodeOf;
  std::vector<std::vector<int64_t>> usesOf; // per node, indices into `uses`
  std::map<int64_t, Pin> pins;              // by node
  /// The annotations' pins alone, while addStrategyPins adds the pins of
  /// a baseline that yields to them.
  std::map<int64_t, Pin> userPins;
  bool yieldsToUserPins = false;
  bool splitsLargestParameter = false;

  /// Classes within each stage: the plan's. With stages of alike meshes,
  /// also classes across them (`acrossStages`, a coarsening of
  /// `classes`): fewer, so that the search for the price of memory is
  /// fast; its answer is then refined on `classes`.
  Classes classes, acrossStages;
  bool searchAcrossStages = false;

  std::vector<int64_t> choice; // per node
  /// The program is a training step (nn-autodiff's output): its backward
  /// and optimizer ops are priced like any other op.
  bool explicitStep = false;
  /// In a training step: forward values that backward ops read, kept from
  /// the forward pass to the backward pass.
  DenseSet<Value> savedActivations;
  /// In a step of several micro-batches: how many, and the ops that run
  /// once after them; the others' times count once per micro-batch.
  int64_t microBatches = 1;
  DenseSet<Operation *> afterMicroBatches;
  /// With micro-batches: the copies of parameters run once before them
  /// and kept for the whole step (opsBeforeMicroBatches).
  DenseSet<Operation *> beforeMicroBatches;
  /// On stages without micro-batches, what moves between them outside the
  /// chain of a micro-batch's activations and their gradients: copies of
  /// parameters (parameterCopies), which the program moves before its
  /// forward, and the ops reading parts of a parameter's gradient alone
  /// (parameterGradientOps), which wait for the update only.
  DenseSet<Operation *> parameterCopiesOfOneMicroBatch,
      gradientPartsOfOneMicroBatch;
  /// Whether a node runs once per step (the sinks, the parameters, their
  /// copies before the micro-batches and what follows them), not once per
  /// micro-batch.
  bool runsOncePerStep(const Node &node) const {
    return node.isSink() || isa<nn::ParamOp>(node.op) ||
           afterMicroBatches.contains(node.op) ||
           beforeMicroBatches.contains(node.op);
  }
  double runsPerStep(const Node &node) const {
    return runsOncePerStep(node) ? 1.0 : static_cast<double>(microBatches);
  }
  /// Whether a use's boxing or move runs once per step: that of its reader,
  /// or a move of what runs once to another stage (a weight read there),
  /// which the stage receives before its micro-batches and whose
  /// gradient's part there moves back once, summed (place-stages).
  bool runsOncePerStep(const Use &use) const {
    return runsOncePerStep(nodes[use.consumer]) ||
           (crossesStages(use) && runsOncePerStep(nodes[use.producer]));
  }
  double runsPerStep(const Use &use) const {
    return runsOncePerStep(use) ? 1.0 : static_cast<double>(microBatches);
  }
  double stepTime = 0, computeTime = 0, communicationTime = 0, memory = 0;
  /// How much slower the plan's layouts are than the fastest, which do
  /// not fit (sbp.plan's memory_slowdown; 0 where they fit).
  double memorySlowdown = 0;

  /// The stage of a node (0 without stages; a sink's is its producer's).
  int64_t stageOf(const Node &node) const {
    if (stages.names.empty())
      return 0;
    if (node.isSink())
      if (Operation *def =
              node.op->getOperand(node.sinkOperand).getDefiningOp())
        return stages.stageOf.lookup(def);
    return stages.stageOf.lookup(node.op);
  }
  /// The virtual stage of a node, chunk * stages + stage (its stage with
  /// one chunk); a sink's is its producer's.
  int64_t virtualStageOf(const Node &node) const {
    Operation *op = node.op;
    if (node.isSink())
      if (Operation *def = op->getOperand(node.sinkOperand).getDefiningOp())
        op = def;
    return stages.chunkOf.lookup(op) * stageCount() + stageOf(node);
  }
  /// Whether `use` moves its value between stages, as insert-cross-mesh
  /// writes: a data flow (not a tie, not into a return) whose producer and
  /// reader are on different stages.
  bool crossesStages(const Use &use) const {
    return !use.tie && !nodes[use.consumer].isSink() &&
           stageOf(nodes[use.producer]) != stageOf(nodes[use.consumer]);
  }
  /// Whether a use between stages of one micro-batch moves a part of a
  /// parameter's gradient that only such parts read where it goes.
  bool movesGradientPart(const Use &use) const {
    if (gradientPartsOfOneMicroBatch.empty())
      return false;
    int64_t to = stageOf(nodes[use.consumer]);
    Value moved = nodes[use.producer].op->getResult(use.result);
    return llvm::all_of(moved.getUsers(), [&](Operation *user) {
      auto node = nodeOf.find(user);
      return node == nodeOf.end() || stageOf(nodes[node->second]) != to ||
             gradientPartsOfOneMicroBatch.contains(user);
    });
  }
  int64_t stageCount() const {
    return std::max<int64_t>(1, static_cast<int64_t>(stages.names.size()));
  }
  /// Whether the stages run their micro-batches by a pipeline schedule
  /// rather than one after another.
  bool pipelined() const {
    return stageCount() > 1 && microBatches > 1 &&
           options.schedule != "sequential";
  }
  /// Whether the step is the stages' timeline: pipelined, or one
  /// micro-batch through the stages, where a stage's update runs while the
  /// stages before it are in their backward (updateOpsOfOneMicroBatch).
  bool onTimeline() const {
    return pipelined() || (stageCount() > 1 && microBatches == 1 &&
                           stages.chunks == 1 && explicitStep);
  }
  /// Per virtual stage (chunk * stages + stage): the micro-batches whose
  /// activations of that chunk its stage holds at once (1 unless
  /// pipelined).
  std::vector<int64_t> inFlight;
  /// In an explicit training step, per stage, the values its devices hold
  /// between ops, each from the op that makes it to its last reader there
  /// (positions count the stage's ops in program order): one micro-batch's
  /// activations until the backward reads them, the gradients until the
  /// update does, and every op's operands and results while it runs. The
  /// most of them alive at once is the stage's working memory
  /// (stageMemory).
  struct HeldValue {
    int64_t node = 0;
    unsigned result = 0;
    int64_t begin = 0, end = 0;
  };
  std::vector<std::vector<HeldValue>> heldValues;
  /// Per stage, the reads of one value there by one pass (insert-boxing's
  /// grouping): the readers whose layout is not the value's share a boxed
  /// copy per layout, made after the value (`made`, its position) or, read
  /// by the backward pass of a forward value or a sum over micro-batches,
  /// before the first such reader (`made` -1), and held to the last.
  /// A value another stage makes is received (received) in each layout
  /// its readers here read, whatever the sender's: held from its first
  /// reader to the last, and, read by the backward pass of a forward
  /// value, kept for every micro-batch in flight like an activation.
  struct BoxedReads {
    int64_t made = -1;
    bool received = false;
    /// The value's producer, whether the reads are the backward's of a
    /// forward value, and the other pass's group of the same value here
    /// (-1: none): a parameter kept for the backward (keptForBackward)
    /// shares its forward copies with its backward readers.
    int64_t producer = -1;
    bool backward = false;
    int64_t partner = -1;
    /// The first reader's position.
    int64_t first = std::numeric_limits<int64_t>::max();
    struct Read {
      int64_t use = 0, at = 0;
      /// The micro-batches in flight a received copy is kept for (its
      /// reader is the backward's, of a forward value), else 1.
      int64_t microBatchesKept = 1;
    };
    std::vector<Read> reads;
  };
  std::vector<std::vector<BoxedReads>> boxedReads;
  /// Bytes per device of a result at each candidate of its op, and of an
  /// operand at each candidate of its reader: stageMemory reads them for
  /// every probe of the memory price, so each is worked out once.
  double resultBytes(int64_t node, unsigned result, int64_t candidate) const;
  double operandBytes(int64_t use, int64_t candidate) const;
  /// [node][result][candidate] and [use][candidate]; -1: not yet known.
  mutable std::vector<std::vector<std::vector<double>>> resultBytesCache;
  mutable std::vector<std::vector<double>> operandBytesCache;
  std::vector<int64_t> stagePositions;
  /// Per node, its stage (stageOf), for stageMemory's every call.
  std::vector<int64_t> nodeStage;
  /// Per stage, the first stage of its kind: alike meshes (shifts of
  /// each other, cost::placeMeshes), whose ops share classes.
  std::vector<int64_t> stageKind;
  /// Per stage, the bytes per device of a choice per class.
  std::vector<double>
  stageMemory(const Classes &grouped,
              const std::vector<int64_t> &classChoice) const;
  /// In an explicit training step: the forward pass's ops.
  DenseSet<Operation *> forwardOps;
  /// The parameters (nodes) whose boxing for the forward also serves the
  /// backward readers that read them in the same layout
  /// (sbp.kept_for_backward, insert-boxing): a weight gathered once for
  /// both passes, held between them.
  DenseSet<int64_t> keptForBackward;
  /// The figures of the plan of `classChoice` (step, compute,
  /// communication, memory, per stage), after the search.
  void figurePlan(const std::vector<int64_t> &classChoice);
  /// Keeps the parameters' forward boxings for the backward
  /// (keptForBackward) where that shortens the predicted step and the
  /// plan still fits, a backward reader moved to the forward's layout
  /// where that pays, then figures the plan.
  void chooseKeptForBackward(std::vector<int64_t> &classChoice);

  /// The predicted figures of one stage under the chosen layouts.
  struct StageFigures {
    /// Seconds per micro-batch of its forward and backward, and per step
    /// of what runs once after the micro-batches (the optimizer, gradient
    /// synchronization) and before them (its parameters' copies, and the
    /// weights it receives from other stages: its first task waits).
    double forward = 0, backward = 0, update = 0, prologue = 0;
    /// Seconds per micro-batch of the activation's move to the next stage
    /// and of its gradient's back (0 on the last stage).
    double sendForward = 0, sendBackward = 0;
    double memory = 0;
    /// Of `memory`, the bytes one micro-batch's activations take (of all
    /// its chunks): a schedule holding more in flight needs that much more
    /// each.
    double activation = 0;
    /// Seconds computing in the pipeline's timeline, and idle in it.
    double busy = 0, bubble = 0;
  };
  std::vector<StageFigures> stageFigures;
  /// Of computeTime + communicationTime, the seconds the executor's two
  /// streams run at once in the step (stepTime leaves them out).
  double overlapTime = 0;
  /// Fills stageFigures and sets stepTime to the pipeline's timeline when
  /// pipelined: the moves between stages priced by the planner.
  void predictPipeline(const std::vector<int64_t> &classChoice);
  struct RangeSavings {
    /// Seconds of boxings priced per reader that one boxing serves
    /// (insert-boxing boxes a value once per layout).
    double shared = 0;
    /// Seconds the two streams run at once.
    double overlap = 0;
    RangeSavings operator-(const RangeSavings &other) const {
      return {std::max(0.0, shared - other.shared),
              std::max(0.0, overlap - other.overlap)};
    }
  };
  /// The seconds of one run of the nodes `range` lists (ascending), as one
  /// range of a program (the executor runs a task's instructions so), that its
  /// kernels and its boxings overlap: the boxings on the communication
  /// stream in the program's order (insert-boxing's places), each starting
  /// when what it reads is written (and one writing a buffer of its own
  /// when the kernels before it are done: plan-memory may give it their
  /// bytes), a kernel when the boxings it reads are done
  /// (runtime::scheduleStreams). What the range's seconds added up exceed
  /// the time its two streams take. A sink in the range adds the boxing
  /// into it. On one mesh of uneven shares without micro-batches (the
  /// range then the whole step), each position along the shares' axis runs
  /// on its own streams at its own pace, joined where a boxing changes the
  /// layout along that axis.
  RangeSavings overlapIn(const std::vector<int64_t> &range) const;
  /// The seconds of use `u` under the chosen layouts, per step.
  double useTime(size_t u) const;
  /// Of a boxing's `seconds`, its last steps' that reduce on the gradients
  /// stream (reducesOnGradientsStream), before one trailing slice: those
  /// lower-to-plan puts on that stream when only updates read the value,
  /// the slice just before the update. None where those steps follow a
  /// slice of a collective's result: lower-to-plan moves them with that
  /// slice to just before the update, on the communication stream.
  /// Whether every step of a boxing gathers a parameter
  /// (gathersParameter): lower-to-plan runs such a boxing of a parameter
  /// for the forward on the gradients stream (prefetchesParameter).
  bool gathersParameterOnly(const Use &use, const NdSbp &from,
                            const NdSbp &to) const;
  double trailingReductions(const Use &use, const NdSbp &from, const NdSbp &to,
                            double seconds) const;
  /// The bytes a device holds of the parts a boxing of `use` from `from`
  /// to `to` reduce-scatters (a hierarchical all-reduce's), besides the
  /// value it reduces in place; 0 for all-reduces alone.
  double scatteredPartBytes(const Use &use, const NdSbp &from,
                            const NdSbp &to) const;
  /// The boxing of `use`'s value from `from` to `to`, as the reader's
  /// stage prices it.
  const std::optional<cost::BoxingCost> &
  boxingOf(const Use &use, const NdSbp &from, const NdSbp &to) const;
};

LogicalResult
ShardingSearch::composeCandidates(Node &node, ArrayRef<SbpSignature> oneAxis) {
  Operation *op = node.op;
  // An axis of one device takes the replicated signature: every layout is
  // the same there.
  int64_t replicated = 0;
  for (auto [index, signature] : llvm::enumerate(oneAxis))
    if (llvm::all_of(signature.operands,
                     [](const Sbp &sbp) { return sbp.isBroadcast(); }) &&
        llvm::all_of(signature.results,
                     [](const Sbp &sbp) { return sbp.isBroadcast(); })) {
      replicated = static_cast<int64_t>(index);
      break;
    }
  size_t rank = meshShape.size();
  std::vector<size_t> choices(rank, 0);
  auto axisChoices = [&](size_t axis) -> size_t {
    return meshShape[axis] > 1 ? oneAxis.size() : 1;
  };
  size_t total = 1;
  for (size_t axis = 0; axis < rank; ++axis)
    total *= axisChoices(axis);
  if (total > kMaxCandidates)
    return op->emitError() << describe(op) << " has " << total
                           << " n-D signatures on a mesh of " << rank
                           << " axes; at most " << kMaxCandidates
                           << " are searched";
  bool isReshape = isa<nn::ReshapeOp>(op);
  std::vector<Candidate> list;
  for (size_t index = 0; index < total; ++index) {
    size_t rest = index;
    for (size_t axis = rank; axis-- > 0;) {
      choices[axis] = rest % axisChoices(axis);
      rest /= axisChoices(axis);
    }
    Candidate candidate;
    candidate.operands.assign(op->getNumOperands(), NdSbp(rank));
    candidate.results.assign(op->getNumResults(), NdSbp(rank));
    for (size_t axis = 0; axis < rank; ++axis) {
      const SbpSignature &signature =
          oneAxis[meshShape[axis] > 1 ? choices[axis] : replicated];
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        candidate.operands[i][axis] = signature.operands[i];
      for (unsigned i = 0; i < op->getNumResults(); ++i)
        candidate.results[i][axis] = signature.results[i];
    }
    auto valid = [&](Type type, const NdSbp &layout) {
      if (!isa<RankedTensorType>(type))
        return true;
      return !parplan::checkLayout(staticShapeOf(type), meshShape, layout);
    };
    bool ok = true;
    for (unsigned i = 0; ok && i < op->getNumOperands(); ++i)
      ok = valid(op->getOperand(i).getType(), candidate.operands[i]);
    for (unsigned i = 0; ok && i < op->getNumResults(); ++i)
      ok = valid(op->getResult(i).getType(), candidate.results[i]);
    if (ok && isReshape)
      ok = reshapeKeepsParts(op->getOperand(0).getType(), candidate.operands[0],
                             op->getResult(0).getType(), candidate.results[0],
                             model);
    if (ok)
      list.push_back(std::move(candidate));
  }
  node.candidates = Candidates(std::move(list));
  if (node.candidates.empty())
    return op->emitError() << describe(op)
                           << " has no signature that lays it out on mesh "
                           << cost::formatMeshShape(meshShape);
  return success();
}

void ShardingSearch::sinkCandidates(Node &node, Value value) {
  // A returned value may be laid out any way but Partial: the caller reads
  // a whole value, so partial sums must be reduced first.
  std::vector<int64_t> shape = staticShapeOf(value.getType());
  std::vector<Sbp> oneAxis = {Sbp::broadcast()};
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1)
      oneAxis.push_back(Sbp::split(static_cast<int64_t>(d)));
  size_t rank = meshShape.size();
  size_t total = 1;
  for (size_t axis = 0; axis < rank; ++axis)
    total *= meshShape[axis] > 1 ? oneAxis.size() : 1;
  std::vector<Candidate> list;
  for (size_t index = 0; index < total; ++index) {
    NdSbp layout(rank);
    size_t rest = index;
    for (size_t axis = rank; axis-- > 0;) {
      size_t n = meshShape[axis] > 1 ? oneAxis.size() : 1;
      layout[axis] = oneAxis[rest % n];
      rest /= n;
    }
    if (!parplan::checkLayout(shape, meshShape, layout))
      list.push_back(Candidate{{layout}, {}});
  }
  node.candidates = Candidates(std::move(list));
}

double ShardingSearch::resultBytes(int64_t node, unsigned result,
                                   int64_t candidate) const {
  const Node &producer = nodes[node];
  if (resultBytesCache.size() != nodes.size())
    resultBytesCache.resize(nodes.size());
  std::vector<std::vector<double>> &results = resultBytesCache[node];
  if (results.size() <= result)
    results.resize(producer.op->getNumResults());
  std::vector<double> &bytes = results[result];
  if (bytes.empty())
    bytes.assign(producer.candidates.size(), -1);
  double &known = bytes[candidate];
  if (known < 0)
    known = localBytes(producer.op->getResult(result).getType(), model,
                       producer.candidates[candidate].results[result]);
  return known;
}

double ShardingSearch::operandBytes(int64_t use, int64_t candidate) const {
  const Use &read = uses[use];
  const Node &reader = nodes[read.consumer];
  if (operandBytesCache.size() != uses.size())
    operandBytesCache.resize(uses.size());
  std::vector<double> &bytes = operandBytesCache[use];
  if (bytes.empty())
    bytes.assign(reader.candidates.size(), -1);
  double &known = bytes[candidate];
  if (known < 0)
    known = localBytes(reader.op->getOperand(read.operand).getType(), model,
                       reader.candidates[candidate].operands[read.operand]);
  return known;
}

bool ShardingSearch::keptOnItsStage(Value value) const {
  if (!savedActivations.contains(value))
    return false;
  if (stages.names.empty())
    return true;
  // What only another stage's backward reads is sent as it is made, and
  // kept there (stageMemory's received copies).
  int64_t stage = stages.stageOf.lookup(value.getDefiningOp());
  return llvm::any_of(value.getUsers(), [&](Operation *user) {
    return !forwardOps.contains(user) && stages.stageOf.lookup(user) == stage;
  });
}

void ShardingSearch::priceCandidates(Node &node) {
  size_t count = node.candidates.size();
  node.time.assign(count, 0);
  node.memory.assign(count, 0);
  node.activation.assign(count, 0);
  node.leastMemory.assign(count, 0);
  if (node.isSink())
    return;
  Operation *op = node.op;
  const ShardingCostModel &stageModel = modelOf(stageOf(node));
  for (size_t k = 0; k < count; ++k)
    if (std::optional<NodeWork> work = workOf(node, k))
      node.time[k] = work->times(stageModel.computeTime(work->work));
  if (isa<nn::ParamOp>(op)) {
    // Model state lives with the parameter's layout: replicated state is
    // replicated, split state (ZeRO's partitioning) is split.
    double stateBytes = stateBytesPerElement(node);
    for (size_t k = 0; k < count; ++k)
      node.memory[k] = localElements(op->getResult(0).getType(), model,
                                     node.candidates[k].results[0]) *
                       stateBytes;
    node.leastMemory = node.memory;
    return;
  }
  SmallVector<double> resultBytes;
  for (size_t k = 0; k < count; ++k) {
    const Candidate &candidate = node.candidates[k];
    // Each result's bytes at this candidate's layout, read once.
    resultBytes.clear();
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      resultBytes.push_back(
          localBytes(op->getResult(i).getType(), model, candidate.results[i]));
    double results =
        std::accumulate(resultBytes.begin(), resultBytes.end(), 0.0);
    // Training keeps every activation for the backward pass; a training
    // step keeps the ones its backward ops read, and the sums it
    // accumulates over micro-batches for the whole step.
    if (isa<nn::AccumulateOp>(op))
      node.memory[k] += resultBytes[0];
    // A copy of parameters made before the micro-batches is kept for the
    // whole step, once.
    bool keptForStep = beforeMicroBatches.contains(op);
    if (keptForStep)
      node.memory[k] += results;
    // A stage keeps them for every micro-batch its schedule has in flight.
    auto held = static_cast<double>(inFlight[virtualStageOf(node)]);
    if ((options.training || explicitStep) && !keptForStep)
      for (unsigned i = 0; i < op->getNumResults(); ++i)
        if (options.training || keptOnItsStage(op->getResult(i)))
          node.activation[k] += resultBytes[i];
    node.memory[k] += held * node.activation[k];
    node.leastMemory[k] = std::max(node.memory[k], results);
  }
}

double ShardingSearch::stateBytesPerElement(const Node &node) const {
  if (options.training)
    return cost::modelState(1, *cost::parseOptimizer(options.optimizer),
                            options.mixedPrecision, 0, 1)
        .total();
  return static_cast<double>(
      modelOf(stageOf(node))
          .elementBytes(elementTypeOf(node.op->getResult(0).getType())));
}

std::optional<ShardingSearch::NodeWork> ShardingSearch::workOf(const Node &node,
                                                               size_t k) const {
  if (node.isSink())
    return std::nullopt;
  Operation *op = node.op;
  const Candidate &candidate = node.candidates[k];
  if (isa<nn::ParamOp>(op)) {
    // The optimizer step reads and writes the state once.
    if (!options.training)
      return std::nullopt;
    double elements =
        localElements(op->getResult(0).getType(), model, candidate.results[0]);
    return NodeWork{
        {0, 2 * elements * stateBytesPerElement(node), cost::ComputeType::F32}};
  }
  std::optional<ShardingCostModel::LocalWork> work =
      modelOf(stageOf(node))
          .localWork(op, candidate.operands, candidate.results);
  if (!work)
    return std::nullopt;
  // Backward costs twice the forward (a gradient for the input and one for
  // the weights, each as large as the forward).
  return NodeWork{std::move(*work), options.training ? 3.0 : 1.0,
                  runsPerStep(node)};
}

/// Whether a boxing from -> to joins the positions along the shares'
/// `axis`: it changes the layout along it (a collective over positions);
/// one along another axis runs inside each position, on its own devices.
static bool joinsPositions(const NdSbp &from, const NdSbp &to, size_t axis) {
  return axis >= from.size() || axis >= to.size() || from[axis] != to[axis];
}

llvm::SmallVector<double, 8>
ShardingSearch::positionKernelTimes(size_t node) const {
  std::optional<NodeWork> work = workOf(nodes[node], choice[node]);
  if (!work)
    return {};
  llvm::SmallVector<double, 8> times = modelOf(0).positionTimes(work->work);
  for (double &time : times)
    time = work->times(time);
  return times;
}

std::optional<double> ShardingSearch::positionComputeTime() const {
  if (stages.meshes.size() > 1)
    return std::nullopt;
  const ShardingCostModel &stageModel = modelOf(0);
  if (stageModel.getSharesAxis() < 0)
    return std::nullopt;
  auto axis = static_cast<size_t>(stageModel.getSharesAxis());
  std::vector<double> clocks;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &node = nodes[i];
    if (node.isSink())
      continue;
    bool joined = llvm::any_of(usesOf[i], [&](int64_t u) {
      const Use &use = uses[static_cast<size_t>(u)];
      if (use.consumer != static_cast<int64_t>(i) || use.tie ||
          useTime(static_cast<size_t>(u)) <= 0)
        return false;
      const NdSbp &from = nodes[use.producer]
                              .candidates[choice[use.producer]]
                              .results[use.result];
      const NdSbp &to = node.candidates[choice[i]].operands[use.operand];
      return joinsPositions(from, to, axis);
    });
    if (joined && !clocks.empty())
      clocks.assign(clocks.size(), *llvm::max_element(clocks));
    // Empty only for a node without work: the model has shares.
    llvm::SmallVector<double, 8> times = positionKernelTimes(i);
    clocks.resize(std::max(clocks.size(), times.size()), 0);
    for (size_t p = 0; p < times.size(); ++p)
      clocks[p] += times[p];
  }
  if (clocks.empty())
    return std::nullopt;
  return *llvm::max_element(clocks);
}

void ShardingSearch::collectHeldValues() {
  int64_t count = stageCount();
  heldValues.assign(count, {});
  stagePositions.assign(count, 0);
  nodeStage.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    nodeStage[i] = stageOf(nodes[i]);
  std::vector<int64_t> position(nodes.size(), -1);
  DenseSet<Value> updates;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &node = nodes[i];
    if (!node.isSink()) {
      position[i] = stagePositions[nodeStage[i]]++;
      continue;
    }
    if (function.getResultAttrOfType<StringAttr>(
            static_cast<unsigned>(node.sinkOperand), parplan::kUpdatesAttrName))
      updates.insert(node.op->getOperand(node.sinkOperand));
  }
  // Per value: its stage and its entry there.
  DenseMap<Value, std::pair<int64_t, size_t>> entryOf;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &node = nodes[i];
    if (node.isSink())
      continue;
    Operation *op = node.op;
    int64_t stage = nodeStage[i];
    // Held for the whole step and counted so (Node::memory): model state,
    // sums over micro-batches, copies made before them.
    if (parplan::isSourceOp(op) || isa<nn::AccumulateOp>(op) ||
        beforeMicroBatches.contains(op))
      continue;
    // A reshape's result is a view of its operand (plan-memory): one
    // value's bytes, living as long as either.
    if (isa<nn::ReshapeOp>(op) && !updates.contains(op->getResult(0))) {
      auto operand = entryOf.find(op->getOperand(0));
      if (operand != entryOf.end() && operand->second.first == stage) {
        // Copied first: inserting may move the map's entries.
        std::pair<int64_t, size_t> entry = operand->second;
        entryOf[op->getResult(0)] = entry;
        continue;
      }
    }
    for (unsigned r = 0; r < op->getNumResults(); ++r) {
      // An update is written into its parameter's bytes.
      if (updates.contains(op->getResult(r)))
        continue;
      entryOf[op->getResult(r)] = {stage, heldValues[stage].size()};
      heldValues[stage].push_back(
          HeldValue{static_cast<int64_t>(i), r, position[i], position[i]});
    }
  }
  boxedReads.assign(count, {});
  // Per stage, value and pass: its entry in boxedReads.
  std::map<std::tuple<int64_t, int64_t, unsigned, bool, int64_t>, size_t>
      groupOf;
  for (size_t u = 0; u < uses.size(); ++u) {
    const Use &use = uses[u];
    const Node &reader = nodes[use.consumer];
    if (use.tie || reader.isSink())
      continue;
    int64_t stage = nodeStage[use.consumer];
    bool received = crossesStages(use);
    bool backward = !received && !forwardOps.contains(reader.op) &&
                    forwardOps.contains(nodes[use.producer].op);
    // On interleaved stages each chunk boxes for itself (insert-boxing).
    int64_t chunk = stages.chunkOf.lookup(reader.op);
    auto [group, added] =
        groupOf.try_emplace({stage, use.producer, use.result, backward, chunk},
                            boxedReads[stage].size());
    if (added) {
      BoxedReads reads;
      reads.received = received;
      reads.producer = use.producer;
      reads.backward = backward;
      // A sum over the micro-batches is boxed before its first reader
      // (the update), as a forward value for the backward pass is.
      if (!backward && nodeStage[use.producer] == stage &&
          !isa<nn::AccumulateOp>(nodes[use.producer].op))
        reads.made = position[use.producer];
      boxedReads[stage].push_back(std::move(reads));
    }
    BoxedReads &reads = boxedReads[stage][group->second];
    int64_t at = position[use.consumer];
    reads.first = std::min(reads.first, at);
    reads.reads.push_back(
        BoxedReads::Read{static_cast<int64_t>(u), at,
                         received && !forwardOps.contains(reader.op) &&
                                 forwardOps.contains(nodes[use.producer].op)
                             ? inFlight[virtualStageOf(reader)]
                             : 1});
  }
  for (const auto &[key, index] : groupOf) {
    auto [stage, producer, result, backward, chunk] = key;
    auto partner = groupOf.find({stage, producer, result, !backward, chunk});
    if (partner != groupOf.end())
      boxedReads[stage][index].partner = static_cast<int64_t>(partner->second);
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &node = nodes[i];
    auto readBy = [&](Value value) {
      auto entry = entryOf.find(value);
      if (entry == entryOf.end())
        return;
      auto [stage, index] = entry->second;
      HeldValue &held = heldValues[stage][index];
      // What the step returns is held to its end; what another stage
      // reads leaves this one when it is sent, as it is made.
      if (node.isSink())
        held.end = stagePositions[stage] - 1;
      else if (nodeStage[i] == stage)
        held.end = std::max(held.end, position[i]);
    };
    if (node.isSink())
      readBy(node.op->getOperand(node.sinkOperand));
    else
      for (Value operand : node.op->getOperands())
        readBy(operand);
  }
}

LogicalResult ShardingSearch::buildNodes() {
  Block &body = function.getBody().front();
  if (body.getNumArguments() != 0)
    return function.emitError()
           << "sbp-assign plans functions without arguments (inputs are "
              "nn.input ops); @"
           << function.getName() << " has " << body.getNumArguments();
  // Per kind of op (alikeOpKey): its number and its candidates.
  std::map<std::vector<const void *>, std::pair<int64_t, Candidates>> alike;
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        Node sink;
        sink.op = ret;
        sink.sinkOperand = static_cast<int64_t>(index);
        sinkCandidates(sink, value);
        nodes.push_back(std::move(sink));
      }
      continue;
    }
    auto shardable = dyn_cast<ShardableOpInterface>(op);
    if (!shardable)
      return op.emitError() << "'" << op.getName()
                            << "' is not an nn op: sbp-assign has no sharding "
                               "rule for it";
    for (Type type : op.getResultTypes())
      if (auto tensor = dyn_cast<RankedTensorType>(type);
          !tensor || !tensor.hasStaticShape())
        return op.emitError()
               << describe(&op) << " has a result without a static shape";
    Node node;
    node.op = &op;
    auto [known, first] = alike.try_emplace(
        alikeOpKey(&op), static_cast<int64_t>(alike.size()), Candidates());
    if (first) {
      SmallVector<SbpSignature> oneAxis;
      if (failed(shardable.getSbpSignatures(oneAxis)) || oneAxis.empty())
        return op.emitError() << describe(&op) << " has no sharding rule";
      if (failed(composeCandidates(node, oneAxis)))
        return failure();
      known->second.second = node.candidates;
    }
    node.kind = known->second.first;
    node.candidates = known->second.second;
    nodeOf[&op] = static_cast<int64_t>(nodes.size());
    nodes.push_back(std::move(node));
  }
  usesOf.assign(nodes.size(), {});
  llvm::StringMap<int64_t> paramNodes;
  for (auto [index, node] : llvm::enumerate(nodes))
    if (auto param = dyn_cast_or_null<nn::ParamOp>(node.op))
      paramNodes[param.getName()] = static_cast<int64_t>(index);
  for (int64_t consumer = 0; consumer < static_cast<int64_t>(nodes.size());
       ++consumer) {
    Node &node = nodes[consumer];
    auto addUse = [&](Value value, unsigned operand) {
      auto result = cast<OpResult>(value);
      Use use{nodeOf.lookup(result.getOwner()), result.getResultNumber(),
              consumer, operand};
      usesOf[use.producer].push_back(static_cast<int64_t>(uses.size()));
      usesOf[consumer].push_back(static_cast<int64_t>(uses.size()));
      uses.push_back(use);
    };
    if (node.isSink()) {
      addUse(node.op->getOperand(node.sinkOperand), 0);
      if (auto name = function.getResultAttrOfType<StringAttr>(
              static_cast<unsigned>(node.sinkOperand),
              parplan::kUpdatesAttrName)) {
        auto param = paramNodes.find(name.getValue());
        if (param != paramNodes.end()) {
          Use tie{param->second, 0, consumer, 1, /*tie=*/true};
          usesOf[tie.producer].push_back(static_cast<int64_t>(uses.size()));
          usesOf[consumer].push_back(static_cast<int64_t>(uses.size()));
          uses.push_back(tie);
        }
      }
    } else
      for (auto [index, value] : llvm::enumerate(node.op->getOperands()))
        addUse(value, static_cast<unsigned>(index));
  }
  return success();
}

LogicalResult ShardingSearch::addPin(Operation *op, Pin pin) {
  int64_t node = nodeOf.lookup(op);
  auto [existing, inserted] = pins.try_emplace(node, pin);
  if (inserted)
    return success();
  // Two pins on one op must agree on every entry both of them set.
  auto merge = [&](std::vector<std::optional<PinnedLayout>> &into,
                   const std::vector<std::optional<PinnedLayout>> &from,
                   const char *role) -> LogicalResult {
    for (size_t i = 0; i < from.size(); ++i) {
      if (!from[i])
        continue;
      if (!into[i]) {
        into[i] = from[i];
        continue;
      }
      for (size_t axis = 0; axis < meshShape.size(); ++axis) {
        std::optional<Sbp> &a = (*into[i])[axis];
        const std::optional<Sbp> &b = (*from[i])[axis];
        if (a && b && *a != *b && meshShape[axis] > 1)
          return op->emitError()
                 << "conflicting pins on " << describe(op) << ": " << role
                 << " " << i << " is " << toString(*into[i]) << " by "
                 << llvm::join(existing->second.origins, ", ") << " but "
                 << toString(*from[i]) << " by "
                 << llvm::join(pin.origins, ", ");
        if (!a)
          a = b;
      }
    }
    return success();
  };
  if (failed(merge(existing->second.operands, pin.operands, "operand")) ||
      failed(merge(existing->second.results, pin.results, "result")))
    return failure();
  existing->second.origins.insert(existing->second.origins.end(),
                                  pin.origins.begin(), pin.origins.end());
  return success();
}

LogicalResult ShardingSearch::collectPins() {
  // The annotations the tool read into the module (their form is the SBP
  // dialect's to verify).
  std::string error;
  std::optional<Annotations> annotations = carriedAnnotations(module, error);
  if (!annotations && !error.empty())
    return module.emitError() << error;
  if (annotations) {
    std::vector<bool> used(annotations->pins.size(), false);
    // An ONNX node may import as several ops of its name (a Gather's
    // index constant, a MatMul's reshapes), and the training step adds
    // more (a parameter's update): a pin holds for those of them whose
    // operands and results it counts, and is an error only where none of
    // a name's ops fits it.
    auto fits = [](const LayoutPin &layoutPin, Operation *op) {
      return (!layoutPin.operands ||
              layoutPin.operands->size() == op->getNumOperands()) &&
             (!layoutPin.results ||
              layoutPin.results->size() == op->getNumResults());
    };
    std::set<std::pair<size_t, std::string>> fitted;
    for (Node &node : nodes) {
      if (node.isSink())
        continue;
      std::string name = nodeName(node.op);
      for (auto [index, layoutPin] : llvm::enumerate(annotations->pins))
        if (!name.empty() && layoutPin.matches(name) &&
            fits(layoutPin, node.op))
          fitted.emplace(index, name);
    }
    for (Node &node : nodes) {
      if (node.isSink())
        continue;
      std::string name = nodeName(node.op);
      if (name.empty())
        continue;
      for (auto [index, layoutPin] : llvm::enumerate(annotations->pins)) {
        if (!layoutPin.matches(name))
          continue;
        used[index] = true;
        if (!fits(layoutPin, node.op) && fitted.count({index, name}))
          continue;
        Pin pin;
        pin.operands.resize(node.op->getNumOperands());
        pin.results.resize(node.op->getNumResults());
        pin.origins.push_back(layoutPin.location);
        auto convert =
            [&](const std::optional<std::vector<std::optional<NdSbp>>> &given,
                std::vector<std::optional<PinnedLayout>> &into, unsigned count,
                const char *role) -> LogicalResult {
          if (!given)
            return success();
          if (given->size() != count)
            return node.op->emitError()
                   << layoutPin.location << ": pin '" << layoutPin.node
                   << "' gives " << given->size() << " " << role << " layouts; "
                   << describe(node.op) << " has " << count;
          for (unsigned i = 0; i < count; ++i) {
            if (!(*given)[i])
              continue;
            if ((*given)[i]->size() != meshShape.size())
              return node.op->emitError()
                     << layoutPin.location << ": pin '" << layoutPin.node
                     << "' lays out " << role << " " << i << " as "
                     << parplan::toString(*(*given)[i]) << ", "
                     << (*given)[i]->size() << " entries for a mesh of "
                     << meshShape.size() << " axes";
            into[i] = pinned(*(*given)[i]);
          }
          return success();
        };
        if (failed(convert(layoutPin.operands, pin.operands,
                           node.op->getNumOperands(), "operand")) ||
            failed(convert(layoutPin.results, pin.results,
                           node.op->getNumResults(), "result")) ||
            failed(addPin(node.op, std::move(pin))))
          return failure();
      }
    }
    for (auto [index, layoutPin] : llvm::enumerate(annotations->pins))
      if (!used[index])
        return module.emitError()
               << layoutPin.location << ": pin '" << layoutPin.node
               << "' matches no node of @" << function.getName();
  }
  if (annotations && failed(addScopePins(*annotations)))
    return failure();
  if (failed(addStrategyPins()))
    return failure();
  return applyPins();
}

LogicalResult ShardingSearch::addStrategyPins() {
  bool dataParallel = options.strategy == "data-parallel";
  bool megatron = options.strategy == "megatron";
  bool replicated = options.strategy == "replicated";
  if (!dataParallel && !megatron && !replicated)
    return success();
  size_t rank = meshShape.size();
  // Megatron: the last mesh axis is tensor-parallel, the others
  // data-parallel; data parallelism: every axis; replicated: none, every
  // device holds the whole batch and the whole model.
  auto isDataAxis = [&](size_t axis) {
    return dataParallel || (megatron && axis + 1 < rank);
  };
  if (yieldsToUserPins)
    userPins = pins;
  bool conflict = false;
  auto fullPin = [&](Operation *op, unsigned result, PinnedLayout layout) {
    Pin pin;
    pin.operands.resize(op->getNumOperands());
    pin.results.resize(op->getNumResults());
    pin.results[result] = std::move(layout);
    pin.origins.push_back("strategy " + options.strategy);
    conflict |= failed(addPinAroundUsers(op, std::move(pin)));
  };
  // The largest parameter, with its optimizer state (named after it, of
  // its shape), first in program order on a tie.
  DenseSet<Operation *> largest;
  if (splitsLargestParameter && rank >= 2) {
    nn::ParamOp biggest;
    int64_t most = 0;
    for (Node &node : nodes)
      if (auto param = dyn_cast<nn::ParamOp>(node.op)) {
        int64_t elements = cast<ShapedType>(param.getType()).getNumElements();
        if (elements > most) {
          most = elements;
          biggest = param;
        }
      }
    if (biggest)
      for (Node &node : nodes)
        if (auto param = dyn_cast<nn::ParamOp>(node.op))
          if (param.getType() == biggest.getType() &&
              (param.getName() == biggest.getName() ||
               param.getName().starts_with((biggest.getName() + ".").str())))
            largest.insert(param);
  }
  // Inputs split along the batch, parameters replicated, on data axes.
  for (Node &node : nodes) {
    if (node.isSink())
      continue;
    Operation *op = node.op;
    PinnedLayout layout(rank);
    if (isa<nn::InputOp>(op)) {
      bool batched = staticShapeOf(op->getResult(0).getType()).size() > 0 &&
                     staticShapeOf(op->getResult(0).getType())[0] > 1;
      for (size_t axis = 0; axis < rank; ++axis)
        if (isDataAxis(axis))
          layout[axis] = batched ? Sbp::split(0) : Sbp::broadcast();
        else
          layout[axis] = Sbp::broadcast();
      fullPin(op, 0, layout);
    } else if (isa<nn::ParamOp>(op)) {
      for (size_t axis = 0; axis < rank; ++axis)
        if (isDataAxis(axis) || replicated)
          layout[axis] = Sbp::broadcast();
      if (largest.contains(op))
        layout[rank - 1] = Sbp::split(0);
      fullPin(op, 0, layout);
    }
  }
  if (!megatron || conflict)
    return failure(conflict);
  return pinColumnThenRow([](nn::ParamOp) { return true; },
                          "strategy " + options.strategy);
}

LogicalResult ShardingSearch::addPinAroundUsers(Operation *op, Pin pin) {
  auto user = userPins.find(nodeOf.lookup(op));
  if (user != userPins.end()) {
    auto yield = [](std::vector<std::optional<PinnedLayout>> &baseline,
                    const std::vector<std::optional<PinnedLayout>> &users) {
      for (size_t i = 0; i < baseline.size() && i < users.size(); ++i)
        if (baseline[i] && users[i])
          for (size_t axis = 0; axis < baseline[i]->size(); ++axis)
            if ((*users[i])[axis])
              (*baseline[i])[axis].reset();
    };
    yield(pin.operands, user->second.operands);
    yield(pin.results, user->second.results);
  }
  return addPin(op, std::move(pin));
}

LogicalResult
ShardingSearch::pinColumnThenRow(llvm::function_ref<bool(nn::ParamOp)> inScope,
                                 const std::string &origin) {
  size_t rank = meshShape.size();
  bool conflict = false;
  DenseSet<Value> fromColumn;
  // In a training step, the forward pass's products decide: the backward
  // pass's read the same weights at layouts of their own.
  std::optional<DenseSet<Operation *>> forward;
  if (explicitStep)
    forward = parplan::forwardPassOps(function);
  auto tensorAxisPin = [&](nn::ParamOp param, Sbp sbp) {
    if (!inScope(param))
      return;
    Pin pin;
    pin.results.resize(1);
    pin.results[0] = PinnedLayout(rank);
    (*pin.results[0])[rank - 1] = sbp;
    pin.origins.push_back(origin);
    // A baseline's yields to the user's pins; `userPins` stays empty until
    // addStrategyPins takes its snapshot, so a scope's own pins merge and
    // conflict as before.
    conflict |= failed(addPinAroundUsers(param, std::move(pin)));
  };
  for (Node &node : nodes) {
    if (node.isSink())
      continue;
    Operation *op = node.op;
    if (isa<nn::LayerNormOp>(op))
      continue;
    bool derived = llvm::any_of(op->getOperands(), [&](Value operand) {
      return fromColumn.contains(operand);
    });
    if (forward && !forward->contains(op))
      continue;
    auto matmul = dyn_cast<nn::MatMulOp>(op);
    nn::ParamOp weight =
        matmul ? nn::paramBehindCasts(matmul.getRhs()) : nullptr;
    if (weight && staticShapeOf(weight.getType()).size() == 2 &&
        inScope(weight)) {
      bool row = fromColumn.contains(matmul.getLhs());
      // A weight read transposed keeps its rows in dimension 1.
      bool stored = matmul.getTransposeRhs();
      tensorAxisPin(weight, Sbp::split(row != stored ? 0 : 1));
      if (!row)
        fromColumn.insert(matmul.getResult());
      continue;
    }
    if (auto gather = dyn_cast<nn::GatherOp>(op))
      if (auto table = nn::paramBehindCasts(gather.getInput());
          table && gather.getAxis() == 0)
        tensorAxisPin(table, Sbp::split(0));
    if (derived)
      for (Value result : op->getResults())
        fromColumn.insert(result);
  }
  return failure(conflict);
}

LogicalResult ShardingSearch::addScopePins(const Annotations &annotations) {
  size_t rank = meshShape.size();
  // A parameter is in a scope where the scope's globs name it or the node
  // reading it (a weight is often named by its layer), and, in a stage's
  // scope, where it is on that stage.
  auto within = [&](const ScopePin &scope, nn::ParamOp param) {
    if (!scope.stage.empty()) {
      auto stage =
          param->getAttrOfType<FlatSymbolRefAttr>(parplan::kStageAttrName);
      if (!stage || stage.getValue() != scope.stage)
        return false;
    }
    if (scope.matches(nodeName(param)))
      return true;
    return llvm::any_of(param->getUsers(), [&](Operation *user) {
      return scope.matches(nodeName(user));
    });
  };
  // A split nested in a replicated scope keeps the last axis to itself
  // (Whale's replicate(N) around split(M): N replicas of an M-way split).
  auto inSomeSplit = [&](nn::ParamOp param) {
    return llvm::any_of(annotations.scopes, [&](const ScopePin &scope) {
      return scope.kind == ScopePin::Kind::Split && within(scope, param);
    });
  };
  for (const ScopePin &scope : annotations.scopes) {
    std::string origin = scope.location + ": " + scope.kindName();
    auto inScope = [&](nn::ParamOp param) { return within(scope, param); };
    bool used = false;
    for (Node &node : nodes) {
      auto param = node.isSink() ? nullptr : dyn_cast<nn::ParamOp>(node.op);
      if (param && inScope(param))
        used = true;
    }
    if (!used)
      return module.emitError()
             << origin << " matches no parameter of @" << function.getName()
             << (scope.stage.empty() ? "" : " on stage @" + scope.stage);
    if (scope.kind == ScopePin::Kind::Split) {
      if (rank < 2 && meshShape.front() == 1)
        continue;
      if (failed(pinColumnThenRow(inScope, origin)))
        return failure();
      continue;
    }
    // Replicated: whole on every device.
    for (Node &node : nodes) {
      auto param = node.isSink() ? nullptr : dyn_cast<nn::ParamOp>(node.op);
      if (!param || !inScope(param))
        continue;
      Pin pin;
      pin.results.resize(1);
      pin.results[0] = PinnedLayout(rank, Sbp::broadcast());
      if (rank > 1 && inSomeSplit(param))
        (*pin.results[0])[rank - 1] = std::nullopt;
      pin.origins.push_back(origin);
      if (failed(addPin(param, std::move(pin))))
        return failure();
    }
  }
  return success();
}

LogicalResult ShardingSearch::applyPins() {
  for (auto &[index, pin] : pins) {
    Node &node = nodes[index];
    std::vector<Candidate> kept;
    for (const Candidate &candidate : node.candidates)
      if (matchesPin(candidate, pin, meshShape))
        kept.push_back(candidate);
    if (!kept.empty()) {
      node.candidates = Candidates(std::move(kept));
      continue;
    }
    return node.op->emitError() << "pin by " << llvm::join(pin.origins, ", ")
                                << " cannot hold: " << describe(node.op)
                                << " has no signature with" << describe(pin);
  }
  return success();
}

/// Numbers keys in the order they are first seen: the numbers depend on
/// that order alone, not on how the keys hash.
template <typename Element> class KeyNumbers {
public:
  int64_t numberOf(const std::vector<Element> &key) {
    return numbers.try_emplace(key, static_cast<int64_t>(numbers.size()))
        .first->second;
  }

private:
  struct Hash {
    size_t operator()(const std::vector<Element> &key) const {
      return llvm::hash_combine_range(key.begin(), key.end());
    }
  };
  std::unordered_map<std::vector<Element>, int64_t, Hash> numbers;
};

std::vector<int64_t> ShardingSearch::labelNodes(bool shareStages) const {
  // Ops are alike when they are the same op with the same attributes
  // (names aside), types and pins, and their neighbourhoods are alike to a
  // few hops: the ops of identical repeated layers, away from the first and
  // last layer's edges, on one stage or on stages of alike meshes.
  size_t count = nodes.size();
  std::vector<int64_t> label(count);
  KeyNumbers<const void *> initial;
  for (size_t i = 0; i < count; ++i) {
    const Node &node = nodes[i];
    std::vector<const void *> key;
    bool updateSink =
        node.isSink() &&
        func::FuncOp(function).getResultAttr(
            static_cast<unsigned>(node.sinkOperand), parplan::kUpdatesAttrName);
    if (!options.shareLayers || (node.isSink() && !updateSink)) {
      // Kept apart: its own class.
      key = {reinterpret_cast<const void *>(i + 1), nullptr};
    } else if (updateSink) {
      // The updated values of a training step: alike when their types
      // are, like the parameters they replace.
      key = {
          nullptr, nullptr,
          node.op->getOperand(node.sinkOperand).getType().getAsOpaquePointer()};
    } else {
      Operation *op = node.op;
      // Its kind (alikeOpKey), which buildNodes numbered: first entry
      // null, second not, unlike the keys above.
      key = {nullptr, reinterpret_cast<const void *>(node.kind + 1)};
      // Ops on stages whose meshes are not shifts of each other
      // (cost::placeMeshes) price their uses apart.
      int64_t stage = stageOf(node);
      key.push_back(reinterpret_cast<const void *>(
          (shareStages ? stageKind[static_cast<size_t>(stage)] : stage) + 1));
      // Ops run once per micro-batch or once per step cost apart.
      // (after them, or before them: two non-null tags).
      key.push_back(afterMicroBatches.contains(op) ? op->getContext()
                    : beforeMicroBatches.contains(op)
                        ? static_cast<const void *>(&beforeMicroBatches)
                        : nullptr);
      // Alike ops pinned alike (a strategy's rules, a pattern of the
      // user's) stay alike.
      if (auto pin = pins.find(static_cast<int64_t>(i)); pin != pins.end())
        key.push_back(StringAttr::get(op->getContext(), describe(pin->second))
                          .getAsOpaquePointer());
    }
    label[i] = initial.numberOf(key);
  }
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds && options.shareLayers; ++round) {
    KeyNumbers<int64_t> refined;
    std::vector<int64_t> next(count);
    for (size_t i = 0; i < count; ++i) {
      std::vector<int64_t> key = {label[i], -1};
      std::vector<std::pair<int64_t, int64_t>> consumers;
      for (int64_t index : usesOf[i]) {
        const Use &use = uses[index];
        if (use.consumer == static_cast<int64_t>(i))
          key.insert(key.end(), {label[use.producer], use.result, use.operand});
        else
          consumers.emplace_back(label[use.consumer],
                                 use.result * 1024 + use.operand);
      }
      llvm::sort(consumers);
      key.push_back(-2);
      for (auto [consumer, slot] : consumers)
        key.insert(key.end(), {consumer, slot});
      next[i] = refined.numberOf(key);
    }
    label = std::move(next);
  }
  return label;
}

ShardingSearch::Classes
ShardingSearch::groupClasses(bool shareStages, const Classes *coarser) const {
  size_t count = nodes.size();
  std::vector<int64_t> label = labelNodes(shareStages);
  // Number the classes in program order. A class's members on different
  // stages hold their activations for different numbers of micro-batches:
  // its memory is kept per stage.
  Classes grouped;
  std::map<int64_t, int64_t> number;
  std::vector<std::map<int64_t, Classes::StageBytes>> memory;
  for (size_t i = 0; i < count; ++i) {
    auto [it, inserted] = number.try_emplace(label[i], number.size());
    const Node &node = nodes[i];
    grouped.ofNode.push_back(it->second);
    if (inserted) {
      grouped.representative.push_back(static_cast<int64_t>(i));
      grouped.size.push_back(0);
      memory.emplace_back();
    }
    ++grouped.size[it->second];
    Classes::StageBytes &bytes = memory[it->second][stageOf(node)];
    bytes.bytes.resize(node.memory.size(), 0);
    bytes.leastBytes.resize(node.memory.size(), 0);
    for (size_t k = 0; k < node.memory.size(); ++k) {
      bytes.bytes[k] += node.memory[k];
      bytes.leastBytes[k] += node.leastMemory[k];
    }
  }
  grouped.memory.resize(memory.size());
  for (size_t c = 0; c < memory.size(); ++c)
    for (auto &[stage, bytes] : memory[c]) {
      bytes.stage = stage;
      grouped.memory[c].push_back(std::move(bytes));
    }
  groupUses(grouped, coarser);
  // The descent also starts from every op replicated where it can be: a
  // small model's best plan may be no parallelism at all, a valley the
  // starts of least local cost do not reach; and from every op split along
  // the batch on every axis: data parallelism, a valley the others miss
  // where the shares of a mixed mesh price some ops' other splits about
  // as low (three-types' one mesh at batch 96, by each node's speed, was
  // laid out at 558 ms, not the 226 ms of the batch split everywhere).
  std::vector<int64_t> replicated(grouped.representative.size(), 0);
  for (size_t c = 0; c < grouped.representative.size(); ++c) {
    const Node &node = nodes[grouped.representative[c]];
    auto whole = llvm::find_if(node.candidates, [](const Candidate &candidate) {
      auto replicated = [](const NdSbp &layout) {
        return llvm::all_of(layout,
                            [](const Sbp &sbp) { return sbp.isBroadcast(); });
      };
      return llvm::all_of(candidate.operands, replicated) &&
             llvm::all_of(candidate.results, replicated);
    });
    if (whole != node.candidates.end())
      replicated[c] = whole - node.candidates.begin();
  }
  grouped.hints = {std::move(replicated)};
  if (std::optional<std::vector<int64_t>> split = batchSplitHint(grouped))
    grouped.hints.push_back(std::move(*split));
  return grouped;
}

std::optional<std::vector<int64_t>>
ShardingSearch::batchSplitHint(const Classes &grouped) const {
  int64_t rows = batchRows(function);
  if (rows <= 1)
    return std::nullopt;
  // A parameter's shape is its gradient's and its state's: replicated in
  // data parallelism, whatever its first dimension.
  std::set<std::vector<int64_t>> parameterShapes;
  for (const Node &node : nodes)
    if (!node.isSink() && isa<nn::ParamOp>(node.op))
      parameterShapes.insert(staticShapeOf(node.op->getResult(0).getType()));
  // Of `layout`'s mesh axes, those that split the tensor along its rows
  // where it has them, else those that leave it unsplit.
  auto agreeing = [&](const NdSbp &layout, Type type) {
    std::vector<int64_t> shape = staticShapeOf(type);
    bool batched =
        !shape.empty() && shape[0] % rows == 0 && !parameterShapes.count(shape);
    return llvm::count_if(layout, [&](const Sbp &sbp) {
      return batched ? sbp.isSplit() && sbp.axis == 0 : !sbp.isSplit();
    });
  };
  std::vector<int64_t> hint(grouped.representative.size(), 0);
  for (size_t c = 0; c < grouped.representative.size(); ++c) {
    const Node &node = nodes[grouped.representative[c]];
    // A sink's one operand is the value it returns.
    Value returned =
        node.isSink() ? node.op->getOperand(node.sinkOperand) : Value();
    ValueRange operands = node.isSink() ? ValueRange(returned)
                                        : ValueRange(node.op->getOperands());
    int64_t most = -1;
    for (auto [k, candidate] : llvm::enumerate(node.candidates)) {
      int64_t agreed = 0;
      for (auto [layout, operand] : llvm::zip(candidate.operands, operands))
        agreed += agreeing(layout, operand.getType());
      if (!node.isSink())
        for (auto [layout, result] :
             llvm::zip(candidate.results, node.op->getResults()))
          agreed += agreeing(layout, result.getType());
      if (agreed > most) {
        most = agreed;
        hint[c] = static_cast<int64_t>(k);
      }
    }
  }
  return hint;
}

/// Class-level uses: uses between the same classes, slots and types, and
/// for moves between stages the same pair of meshes up to a shift, cost
/// the same; one matrix stands for all of them.
void ShardingSearch::groupUses(Classes &grouped, const Classes *coarser) const {
  std::map<std::string, int64_t> stagePairs;
  std::map<std::pair<int64_t, int64_t>, int64_t> pairOfStages;
  auto stagePairOf = [&](const Use &use) -> int64_t {
    if (!crossesStages(use))
      return -1;
    int64_t from = stageOf(nodes[use.producer]);
    int64_t to = stageOf(nodes[use.consumer]);
    auto [known, inserted] = pairOfStages.try_emplace({from, to}, 0);
    if (inserted)
      known->second = stagePairs
                          .try_emplace(cost::placeMeshes(model.getCluster(),
                                                         {&stages.meshes[from],
                                                          &stages.meshes[to]})
                                           .key,
                                       static_cast<int64_t>(stagePairs.size()))
                          .first->second;
    return known->second;
  };
  std::map<std::tuple<int64_t, unsigned, int64_t, unsigned, int64_t>, int64_t>
      byKey;
  for (size_t u = 0; u < uses.size(); ++u) {
    const Use &use = uses[u];
    auto key = std::make_tuple(grouped.ofNode[use.producer], use.result,
                               grouped.ofNode[use.consumer], use.operand,
                               stagePairOf(use));
    auto [it, inserted] = byKey.try_emplace(key, grouped.uses.size());
    if (inserted) {
      ClassUse classUse;
      classUse.producerClass = grouped.ofNode[use.producer];
      classUse.consumerClass = grouped.ofNode[use.consumer];
      // A matrix depends on what the coarser grouping keys its class-uses
      // by too: the ops, slots and types at both ends and the pair of
      // meshes between them.
      classUse.costs =
          coarser ? coarser->uses[coarser->ofUse[u]].costs
                  : std::make_shared<const std::vector<double>>(useCosts(use));
      if (explicitStep)
        classUse.boxedBytes = coarser
                                  ? coarser->uses[coarser->ofUse[u]].boxedBytes
                                  : std::make_shared<const std::vector<double>>(
                                        useBoxedBytes(use));
      grouped.uses.push_back(std::move(classUse));
    }
    ++grouped.uses[it->second].count;
    grouped.ofUse.push_back(it->second);
  }
}

std::vector<double> ShardingSearch::useBoxedBytes(const Use &use) const {
  const Node &producer = nodes[use.producer];
  const Node &consumer = nodes[use.consumer];
  size_t rows = producer.candidates.size(),
         columns = consumer.candidates.size();
  std::vector<double> bytes;
  if (use.tie || consumer.isSink() || crossesStages(use))
    return bytes;
  bytes.assign(rows * columns, 0);
  Value value = consumer.op->getOperand(use.operand);
  for (size_t b = 0; b < columns; ++b) {
    const NdSbp &to = consumer.candidates[b].operands[use.operand];
    double copy = localBytes(value.getType(), model, to);
    for (size_t a = 0; a < rows; ++a)
      if (producer.candidates[a].results[use.result] != to)
        bytes[a * columns + b] = copy;
  }
  return bytes;
}

std::vector<double> ShardingSearch::useCosts(const Use &use) const {
  std::vector<double> costs = useCostsOnce(use);
  double runs = runsPerStep(use);
  if (runs != 1)
    for (double &cost : costs)
      cost *= runs;
  return costs;
}

std::optional<CrossMeshCost>
ShardingSearch::crossMeshMove(int64_t source, const NdSbp &sent,
                              int64_t destination, const NdSbp &received,
                              Type type, bool planned) const {
  std::string error;
  // Each side's boxing on its own stage's devices; the moves planned
  // once, in the mesh's model, for every pair of alike stages.
  CrossMeshSides sides{&modelOf(source), &modelOf(destination)};
  return planned ? model.crossMesh(stages.meshes[source], sent,
                                   stages.meshes[destination], received, type,
                                   std::nullopt, error, sides)
                 : model.crossMeshEstimate(stages.meshes[source], sent,
                                           stages.meshes[destination], received,
                                           type, error, sides);
}

double ShardingSearch::moveCost(const Use &use, int64_t a, int64_t b,
                                bool planned) const {
  const Node &producer = nodes[use.producer];
  const Node &consumer = nodes[use.consumer];
  Type type = consumer.op->getOperand(use.operand).getType();
  bool gradient = options.training && isFloatTensor(type);
  bool parameter = isa<nn::ParamOp>(producer.op);
  int64_t from = stages.stageOf.lookup(producer.op);
  int64_t to = stages.stageOf.lookup(consumer.op);
  auto price = [&](int64_t source, const NdSbp &sent, int64_t destination,
                   const NdSbp &received) {
    std::optional<CrossMeshCost> move =
        crossMeshMove(source, sent, destination, received, type, planned);
    return move ? move->time : kInfinity;
  };
  const NdSbp &layout = producer.candidates[a].results[use.result];
  const NdSbp &wanted = consumer.candidates[b].operands[use.operand];
  double total = price(from, layout, to, wanted);
  if (gradient && total < kInfinity)
    total += price(to, gradientLayout(wanted), from,
                   parameter ? layout : gradientLayout(layout));
  return total;
}

std::vector<double> ShardingSearch::useCostsOnce(const Use &use) const {
  const Node &producer = nodes[use.producer];
  const Node &consumer = nodes[use.consumer];
  Value value = consumer.isSink()
                    ? consumer.op->getOperand(consumer.sinkOperand)
                    : consumer.op->getOperand(use.operand);
  Type type = value.getType();
  bool gradient = options.training && isFloatTensor(type);
  bool parameter = isa<nn::ParamOp>(producer.op);
  size_t rows = producer.candidates.size(),
         columns = consumer.candidates.size();
  std::vector<double> costs(rows * columns, 0);
  if (crossesStages(use)) {
    for (size_t a = 0; a < rows; ++a)
      for (size_t b = 0; b < columns; ++b)
        costs[a * columns + b] = moveCost(use, a, b, false);
    return costs;
  }
  if (use.tie) {
    for (size_t a = 0; a < rows; ++a)
      for (size_t b = 0; b < columns; ++b)
        costs[a * columns + b] = producer.candidates[a].results[0] ==
                                         consumer.candidates[b].operands[0]
                                     ? 0
                                     : kInfinity;
    return costs;
  }
  // A copy of parameters made before the micro-batches takes the layout
  // of what it copies: a boxing there would run once per step and keep
  // its whole result (a gathered weight) for the step, a parallelism of
  // its own that no strategy chose; a boxing of the copy for its
  // micro-batch readers runs with them.
  bool keptCopy = beforeMicroBatches.contains(consumer.op);
  // Within a stage: its devices' links.
  const ShardingCostModel &stageModel = modelOf(stageOf(consumer));
  for (size_t a = 0; a < rows; ++a) {
    const NdSbp &from = producer.candidates[a].results[use.result];
    for (size_t b = 0; b < columns; ++b) {
      const NdSbp &to = consumer.candidates[b].operands[use.operand];
      if (keptCopy && from != to) {
        costs[a * columns + b] = kInfinity;
        continue;
      }
      const std::optional<cost::BoxingCost> &forward =
          stageModel.boxing(from, to, type);
      double total = forward ? forward->time : kInfinity;
      if (gradient && forward) {
        // The gradient flows back in the dual layouts; a parameter's must
        // arrive whole in the parameter's own layout for the update (the
        // data-parallel all-reduce, or ZeRO's reduce-scatter).
        const std::optional<cost::BoxingCost> &backward = stageModel.boxing(
            gradientLayout(to), parameter ? from : gradientLayout(from), type);
        total += backward ? backward->time : kInfinity;
        // The backward pass needs the parameter in the consumer's layout
        // again: a split parameter is gathered twice (ZeRO stage 3's 1.5x
        // the data-parallel volume).
        if (parameter)
          total += forward->time;
      }
      costs[a * columns + b] = total;
    }
  }
  return costs;
}

std::optional<cost::LayoutSolution>
ShardingSearch::solveAt(const Classes &grouped, double bytePrice,
                        std::optional<MemoryObjective> leastMemory,
                        const std::vector<std::vector<int64_t>> &hints,
                        const cost::LayoutSolverOptions &solverOptions) const {
  cost::LayoutProblem problem;
  problem.hints = hints;
  // Time counts but where bytes alone are minimized.
  bool timed = !leastMemory || leastMemory->transients;
  if (leastMemory)
    bytePrice = leastMemory->transients ? kLeastMemoryPrice : 1;
  for (size_t c = 0; c < grouped.representative.size(); ++c) {
    const Node &node = nodes[grouped.representative[c]];
    std::vector<double> costs(node.candidates.size(), 0);
    for (const Classes::StageBytes &stage : grouped.memory[c]) {
      const std::vector<double> &bytes = leastMemory && leastMemory->transients
                                             ? stage.leastBytes
                                             : stage.bytes;
      for (size_t k = 0; k < costs.size(); ++k)
        costs[k] += bytePrice * bytes[k];
    }
    if (timed)
      for (size_t k = 0; k < costs.size(); ++k)
        costs[k] += static_cast<double>(grouped.size[c]) * node.time[k];
    problem.addNode(std::move(costs));
  }
  for (const ClassUse &use : grouped.uses) {
    std::vector<double> costs = *use.costs;
    for (double &cost : costs)
      // Bytes alone still refuse impossible boxings.
      cost = timed ? cost * static_cast<double>(use.count)
                   : (std::isinf(cost) ? kInfinity : 0);
    if (leastMemory && leastMemory->boxedCopies && use.boxedBytes &&
        !use.boxedBytes->empty())
      for (size_t k = 0; k < costs.size(); ++k)
        costs[k] +=
            bytePrice * (*use.boxedBytes)[k] * static_cast<double>(use.count);
    problem.addEdge(use.producerClass, use.consumerClass, std::move(costs));
  }
  if (options.strategy == "exact")
    return cost::solveExactly(problem, kMaxExactSteps);
  return cost::solveByCoordinateDescent(problem, nullptr, solverOptions);
}

std::vector<double>
ShardingSearch::stageMemory(const Classes &grouped,
                            const std::vector<int64_t> &classChoice) const {
  std::vector<double> bytes(stageCount(), 0);
  if (!explicitStep) {
    // A forward priced as training counts every activation as kept.
    for (size_t c = 0; c < grouped.representative.size(); ++c)
      for (const Classes::StageBytes &stage : grouped.memory[c])
        bytes[stage.stage] += stage.bytes[classChoice[c]];
    return bytes;
  }
  // What lives for the step, and the other micro-batches' activations a
  // schedule holds in flight; then the most that one micro-batch's run
  // holds at once.
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &node = nodes[i];
    if (node.isSink())
      continue;
    int64_t k = classChoice[grouped.ofNode[i]];
    bytes[nodeStage[i]] += node.memory[k] - node.activation[k];
  }
  std::vector<double> change;
  for (size_t s = 0; s < bytes.size(); ++s) {
    change.assign(static_cast<size_t>(stagePositions[s]) + 1, 0);
    for (const HeldValue &held : heldValues[s]) {
      double valueBytes = resultBytes(held.node, held.result,
                                      classChoice[grouped.ofNode[held.node]]);
      change[held.begin] += valueBytes;
      change[held.end + 1] -= valueBytes;
    }
    // Per copy: its layout, the positions it lives between, and the
    // micro-batches in flight a backward reader keeps it for (1: none).
    struct Copy {
      const NdSbp *layout;
      int64_t begin, end, microBatchesKept;
      double bytes;
    };
    std::vector<Copy> copies;
    auto layoutRead = [&](const BoxedReads::Read &groupRead) -> const NdSbp & {
      const Use &use = uses[groupRead.use];
      return nodes[use.consumer]
          .candidates[classChoice[grouped.ofNode[use.consumer]]]
          .operands[use.operand];
    };
    auto readsIn = [&](const BoxedReads &group, const NdSbp &layout) {
      return llvm::any_of(group.reads, [&](const BoxedReads::Read &other) {
        return layoutRead(other) == layout;
      });
    };
    for (const BoxedReads &group : boxedReads[s]) {
      copies.clear();
      // A parameter kept for the backward: its backward readers of a
      // layout the forward reads read the forward's copy, held to them.
      const BoxedReads *keptPartner =
          group.partner >= 0 && keptForBackward.contains(group.producer)
              ? &boxedReads[s][static_cast<size_t>(group.partner)]
              : nullptr;
      for (const BoxedReads::Read &groupRead : group.reads) {
        int64_t u = groupRead.use, at = groupRead.at,
                kept = groupRead.microBatchesKept;
        const Use &use = uses[u];
        const NdSbp &read = layoutRead(groupRead);
        if (keptPartner && group.backward && readsIn(*keptPartner, read))
          continue;
        const NdSbp &made =
            nodes[use.producer]
                .candidates[classChoice[grouped.ofNode[use.producer]]]
                .results[use.result];
        // An all-reduce runs in place on the value (lower-to-plan), which
        // its own interval holds; a hierarchical one also holds the part
        // it reduce-scatters, until the reader.
        bool inPlace = read == made || allReducesOnly(made, read);
        double part = !group.received && read != made && inPlace
                          ? scatteredPartBytes(use, made, read)
                          : 0;
        if (!group.received && inPlace && part <= 0)
          continue;
        auto copy = llvm::find_if(
            copies, [&](const Copy &entry) { return *entry.layout == read; });
        if (copy == copies.end()) {
          int64_t begin = group.made >= 0  ? group.made
                          : group.received ? group.first
                                           : at;
          copies.push_back(Copy{
              &read, begin, at, kept,
              part > 0 ? part
                       : operandBytes(
                             u, classChoice[grouped.ofNode[use.consumer]])});
        } else {
          copy->end = std::max(copy->end, at);
          copy->microBatchesKept = std::max(copy->microBatchesKept, kept);
        }
      }
      if (keptPartner && !group.backward)
        for (const BoxedReads::Read &later : keptPartner->reads) {
          auto copy = llvm::find_if(copies, [&](const Copy &entry) {
            return *entry.layout == layoutRead(later);
          });
          if (copy != copies.end())
            copy->end = std::max(copy->end, later.at);
        }
      for (const Copy &copy : copies) {
        change[copy.begin] += copy.bytes;
        change[copy.end + 1] -= copy.bytes;
        bytes[s] += static_cast<double>(copy.microBatchesKept - 1) * copy.bytes;
      }
    }
    double live = 0, most = 0;
    for (double delta : change) {
      live += delta;
      most = std::max(most, live);
    }
    bytes[s] += most;
  }
  return bytes;
}

double
ShardingSearch::searchedTime(const Classes &grouped,
                             const std::vector<int64_t> &classChoice) const {
  double seconds = usesTime(grouped, classChoice);
  for (size_t c = 0; c < grouped.representative.size(); ++c)
    seconds += static_cast<double>(grouped.size[c]) *
               nodes[grouped.representative[c]].time[classChoice[c]];
  return seconds;
}

double ShardingSearch::usesTime(const Classes &grouped,
                                const std::vector<int64_t> &classChoice) const {
  double seconds = 0;
  for (const ClassUse &use : grouped.uses) {
    size_t columns =
        nodes[grouped.representative[use.consumerClass]].candidates.size();
    seconds += static_cast<double>(use.count) *
               (*use.costs)[classChoice[use.producerClass] * columns +
                            classChoice[use.consumerClass]];
  }
  return seconds;
}

double
ShardingSearch::planMemory(const Classes &grouped,
                           const std::vector<int64_t> &classChoice) const {
  // Each stage's devices hold their stage alone: the plan fits when the
  // fullest stage does.
  std::vector<double> bytes = stageMemory(grouped, classChoice);
  return *std::max_element(bytes.begin(), bytes.end());
}

LogicalResult ShardingSearch::solve() {
  // The price of memory is searched on the coarser classes when there are
  // some; the plan is the finer classes' descent from that answer.
  const Classes &searched = searchAcrossStages ? acrossStages : classes;
  // A probe of the price bisection needs only whether its answer fits: it
  // leaves out the solver's branch and bound, which on the residual graphs
  // of models large enough to need the bisection (hundreds of nodes of up
  // to 100 candidates) runs out of steps without finding anything cheaper
  // than the descent; the answer kept is solved again with it. The finer
  // classes' refinement, a descent from the coarse answer on thousands of
  // residual nodes, leaves it out too (docs/sbp-assign.md).
  cost::LayoutSolverOptions probing;
  probing.searchResidual = false;
  auto solveSearched = [&](double bytePrice, bool probe = false) {
    return solveAt(searched, bytePrice, std::nullopt, searched.hints,
                   probe ? probing : cost::LayoutSolverOptions());
  };
  double capacity = memoryCapacity();
  auto fits = [&](const std::optional<cost::LayoutSolution> &candidate,
                  const Classes &grouped) {
    return candidate && !std::isinf(candidate->cost) &&
           planMemory(grouped, candidate->choice) <= capacity;
  };
  std::optional<cost::LayoutSolution> best = solveSearched(0);
  if (!best)
    return function.emitError()
           << "the exact search gave up on " << searched.representative.size()
           << " nodes; use strategy=auto";
  if (std::isinf(best->cost))
    return function.emitError()
           << "no plan lays out @" << function.getName() << " on mesh "
           << cost::formatMeshShape(meshShape)
           << " without an impossible boxing";
  debugLeastTime(searched, *best);
  // The price per byte of the plan kept; none for the plan of least memory.
  std::optional<double> bytePrice = 0;
  // The same, as the explanation prints it (-1: the plan of least memory).
  double explainedPrice = 0;
  double leastTime = searchedTime(searched, best->choice);
  if (planMemory(searched, best->choice) > capacity) {
    // The plan of least memory first: when even it does not fit, nothing
    // does, and the answer comes at once. It is the least peak of the
    // objectives MemoryObjective tries.
    std::optional<cost::LayoutSolution> smallest;
    double needed = kInfinity, smallestSeconds = kInfinity;
    for (bool transients : {false, true})
      for (bool boxedCopies : {false, true}) {
        if (boxedCopies && !explicitStep)
          continue;
        std::optional<cost::LayoutSolution> candidate =
            solveAt(searched, 0, MemoryObjective{transients, boxedCopies},
                    searched.hints, {});
        if (!candidate || std::isinf(candidate->cost))
          continue;
        double peak = planMemory(searched, candidate->choice);
        double seconds = searchedTime(searched, candidate->choice);
        debugLeastMemory(transients, boxedCopies, peak);
        // Of equal peaks the faster, from which the price walk starts
        // nearer.
        if (peak < needed || (peak == needed && seconds < smallestSeconds)) {
          smallest = std::move(candidate);
          needed = peak;
          smallestSeconds = seconds;
        }
      }
    if (needed > capacity)
      return failNoFit(searched, smallest, needed);
    // The smallest price per byte at which the plan fits, walked along
    // the plans' (time, bytes) hull first: between the fastest plan that
    // does not fit and the one that fits, the next price is the one at
    // which the two cost the same. A plan cheaper than both there lies
    // between them and replaces the end on its side. An exact solver would
    // need one probe per plan on the hull between the ends. When a probe
    // finds nothing new, the fitting end is looked for just above the
    // price (the least price it wins at: a lower price that fits refines
    // better), and the price is then bisected between the ends to
    // kPriceTolerance, as the descent is not exact (bisecting alone, from
    // 1e-15 s per byte up, took twenty probes). Where the ends do not
    // bracket a price (fitting is on the fullest stage's bytes, the price
    // on every stage's), it bisects at once.
    struct End {
      double price;
      cost::LayoutSolution solution;
      /// `bytes` summed over every stage (what the price of memory is on),
      /// `fullest` the stage's that must fit.
      double seconds, bytes, fullest;
    };
    auto endAt = [&](double price, cost::LayoutSolution solution) {
      double seconds = searchedTime(searched, solution.choice);
      std::vector<double> perStage = stageMemory(searched, solution.choice);
      return End{price, std::move(solution), seconds,
                 std::accumulate(perStage.begin(), perStage.end(), 0.0),
                 *std::max_element(perStage.begin(), perStage.end())};
    };
    auto same = [](double a, double b) {
      return std::abs(a - b) <= kSamePlan * std::max(std::abs(a), std::abs(b));
    };
    End low = endAt(0, *best);
    // The plan of least memory fits at any price: an infinite one.
    End high = endAt(kInfinity, *smallest);
    // Once the walk finds nothing new: first just above the last price at
    // which the two ends cost the same, then halvings.
    bool bisecting = false, aboveCrossing = false;
    for (int probe = 0; probe < kMaxPriceProbes; ++probe) {
      if (!std::isinf(high.price) &&
          (high.price - low.price <= kPriceTolerance * high.price ||
           high.price < kFirstPrice))
        break;
      double price = kInfinity;
      if (!bisecting && low.bytes > high.bytes && high.seconds > low.seconds)
        price = (high.seconds - low.seconds) / (low.bytes - high.bytes);
      if (aboveCrossing)
        price = low.price * (1 + kPriceTolerance / 2);
      aboveCrossing = false;
      if (!(price > low.price && price < high.price))
        price = std::isinf(high.price) ? std::max(4 * low.price, kFirstPrice)
                                       : (low.price + high.price) / 2;
      std::optional<cost::LayoutSolution> candidate =
          solveSearched(price, /*probe=*/true);
      debugPrice(price, candidate, searched);
      if (!candidate || std::isinf(candidate->cost))
        break;
      End found = endAt(price, std::move(*candidate));
      if (found.fullest <= capacity) {
        bisecting |= !(found.seconds < high.seconds) ||
                     same(found.seconds, high.seconds);
        // As fast as the plan of least time: no fitting plan is faster.
        bool fastest = same(found.seconds, low.seconds) && low.price == 0;
        high = std::move(found);
        if (fastest)
          break;
      } else {
        // The plan that does not fit again, where it costs as much as the
        // one that does: the one that does wins just above that price.
        aboveCrossing = !bisecting && same(found.seconds, low.seconds) &&
                        same(found.bytes, low.bytes);
        bisecting |= aboveCrossing;
        low = std::move(found);
      }
    }
    std::optional<cost::LayoutSolution> fitting = high.solution;
    if (std::isinf(high.price)) {
      bytePrice.reset();
      explainedPrice = -1;
    } else {
      bytePrice = high.price;
      explainedPrice = high.price;
      // The probe's answer polished by the solver's branch and bound,
      // which lowers the priced total and so may raise memory: kept where
      // it still fits.
      std::optional<cost::LayoutSolution> polished = solveSearched(high.price);
      if (fits(polished, searched))
        fitting = polished;
    }
    best = fitting;
  }
  std::vector<int64_t> classChoice = std::move(best->choice);
  if (searchAcrossStages) {
    // Each finer class takes its coarse class's choice, then descends on
    // its own at the same price: a stage may differ from its alike
    // neighbours where that is cheaper.
    std::vector<int64_t> refined(classes.representative.size());
    for (size_t c = 0; c < refined.size(); ++c)
      refined[c] = classChoice[acrossStages.ofNode[classes.representative[c]]];
    classChoice = refined;
    // Kept where it fits and is no slower: the descent may trade time for
    // memory on stages other than the fullest, which buys nothing.
    if (bytePrice) {
      std::optional<cost::LayoutSolution> descended =
          solveAt(classes, *bytePrice, std::nullopt, {refined}, probing);
      if (fits(descended, classes) &&
          searchedTime(classes, descended->choice) <=
              searchedTime(classes, refined))
        classChoice = std::move(descended->choice);
    }
  }
  chooseKeptForBackward(classChoice);
  memorySlowdown =
      explainedPrice != 0 && leastTime > 0
          ? std::max(0.0, searchedTime(classes, classChoice) / leastTime - 1)
          : 0;
  debugKept(explainedPrice);
  return success();
}

void ShardingSearch::figurePlan(const std::vector<int64_t> &classChoice) {
  choice.assign(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i)
    choice[i] = classChoice[classes.ofNode[i]];
  // The figures of the plan, per op and per use.
  computeTime = 0;
  for (size_t i = 0; i < nodes.size(); ++i)
    computeTime += nodes[i].time[choice[i]];
  // At most the op times' sum: where a type the mesh's slowest by its
  // peak is faster at memory-bound work, an op alike everywhere could
  // cost a position more than the op time.
  if (std::optional<double> byPosition = positionComputeTime())
    computeTime = std::min(computeTime, *byPosition);
  communicationTime = usesTime(classes, classChoice);
  stepTime = computeTime + communicationTime;
  memory = planMemory(classes, classChoice);
  predictPipeline(classChoice);
}

void ShardingSearch::chooseKeptForBackward(std::vector<int64_t> &classChoice) {
  keptForBackward.clear();
  figurePlan(classChoice);
  // One mesh, one micro-batch: the backward reads the forward's boxing
  // once, with nothing in flight between the passes.
  if (!explicitStep || microBatches != 1 || stageCount() != 1 ||
      stages.chunks != 1)
    return;
  auto readOf = [&](const Use &use) -> const NdSbp & {
    return nodes[use.consumer]
        .candidates[choice[use.consumer]]
        .operands[use.operand];
  };
  auto readsParameter = [&](const Use &use, bool forward) {
    return !use.tie && !nodes[use.consumer].isSink() &&
           forwardOps.contains(nodes[use.consumer].op) == forward;
  };
  // The layouts the forward reads parameter `node` in, boxed.
  auto forwardLayouts = [&](size_t node) {
    const NdSbp &made = nodes[node].candidates[choice[node]].results[0];
    std::vector<NdSbp> layouts;
    for (int64_t u : usesOf[node])
      if (uses[u].producer == static_cast<int64_t>(node) &&
          readsParameter(uses[u], true) && readOf(uses[u]) != made &&
          !llvm::is_contained(layouts, readOf(uses[u])))
        layouts.push_back(readOf(uses[u]));
    return layouts;
  };
  double capacity = memoryCapacity(), fastest = stepTime;
  auto faster = [&] {
    return stepTime < fastest * (1 - 1e-9) && memory <= capacity;
  };
  // The largest parameters the forward reads boxed, first in program order
  // on a tie: a few, as each costs a figuring of the whole step and each
  // kept copy is held from the forward's boxing to the last backward
  // reader.
  std::vector<std::pair<double, int64_t>> largest;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (isa<nn::ParamOp>(nodes[i].op) && !forwardLayouts(i).empty())
      largest.push_back(
          {static_cast<double>(
               cast<ShapedType>(nodes[i].op->getResult(0).getType())
                   .getNumElements()),
           static_cast<int64_t>(i)});
  llvm::sort(largest, [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  constexpr size_t kLargest = 2;
  largest.resize(std::min(largest.size(), kLargest));
  // Each kept where its backward reads a layout its forward does and that
  // is faster and fits.
  // Whether the figures are another choice's than classChoice and
  // keptForBackward.
  bool stale = false;
  for (const auto &[elements, parameter] : largest) {
    auto node = static_cast<size_t>(parameter);
    std::vector<NdSbp> layouts = forwardLayouts(node);
    if (llvm::none_of(usesOf[node], [&](int64_t u) {
          return uses[u].producer == parameter &&
                 readsParameter(uses[u], false) &&
                 llvm::is_contained(layouts, readOf(uses[u]));
        }))
      continue;
    keptForBackward.insert(parameter);
    figurePlan(classChoice);
    stale = !faster();
    if (stale)
      keptForBackward.erase(parameter);
    else
      fastest = stepTime;
  }
  // A backward reader of one of the largest such parameters moved to a
  // layout the forward reads it in, reading the forward's boxing kept:
  // the search prices each use alone, a backward read as a boxing of its
  // own, and so may have chosen another layout for it (a tied
  // embedding's head computing its input's gradient from the table's
  // parts after an all-to-all of the logits' gradient, where the whole
  // table gathered for the forward serves).
  constexpr size_t kTriedLayouts = 4;
  for (const auto &[elements, parameter] : largest) {
    auto node = static_cast<size_t>(parameter);
    for (int64_t u : usesOf[node]) {
      const Use &use = uses[u];
      if (use.producer != parameter || !readsParameter(use, false))
        continue;
      std::vector<NdSbp> layouts = forwardLayouts(node);
      if (llvm::is_contained(layouts, readOf(use)))
        continue;
      size_t readerClass = classes.ofNode[use.consumer];
      const Node &reader = nodes[use.consumer];
      // The reader's layouts that read the forward's, cheaper by the
      // search's own prices with that read free, the cheapest first.
      const std::vector<double> &useCosts =
          *classes.uses[classes.ofUse[u]].costs;
      auto readCost = [&](size_t k) {
        return useCosts[static_cast<size_t>(choice[node]) *
                            reader.candidates.size() +
                        k];
      };
      double now = localCost(use.consumer, choice[use.consumer]);
      std::vector<std::pair<double, size_t>> cheaper;
      for (size_t k = 0; k < reader.candidates.size(); ++k)
        if (llvm::is_contained(layouts,
                               reader.candidates[k].operands[use.operand])) {
          double priced =
              localCost(use.consumer, static_cast<int64_t>(k)) - readCost(k);
          if (priced < now)
            cheaper.push_back({priced, k});
        }
      if (cheaper.empty())
        continue;
      llvm::sort(cheaper);
      bool wasKept = keptForBackward.contains(parameter);
      keptForBackward.insert(parameter);
      int64_t kept = -1;
      double keptStep = fastest;
      for (auto [priced, k] : ArrayRef(cheaper).take_front(
               std::min(cheaper.size(), kTriedLayouts))) {
        std::vector<int64_t> trial = classChoice;
        trial[readerClass] = static_cast<int64_t>(k);
        figurePlan(trial);
        if (stepTime < keptStep * (1 - 1e-9) && memory <= capacity) {
          kept = static_cast<int64_t>(k);
          keptStep = stepTime;
        }
      }
      if (kept >= 0) {
        classChoice[readerClass] = kept;
        fastest = keptStep;
      } else if (!wasKept) {
        keptForBackward.erase(parameter);
      }
      // Each node's choice again the plan's, for the next reader's prices.
      for (size_t i = 0; i < nodes.size(); ++i)
        choice[i] = classChoice[classes.ofNode[i]];
      stale = true;
    }
  }
  if (stale)
    figurePlan(classChoice);
}

LogicalResult
ShardingSearch::failNoFit(const Classes &searched,
                          const std::optional<cost::LayoutSolution> &smallest,
                          double needed) {
  double capacity = memoryCapacity();
  int64_t device = leastMemoryModel().getSmallestMemoryDevice();
  // On stages, the fullest stage is the one that does not fit.
  std::string stage;
  if (smallest && !stages.names.empty()) {
    std::vector<double> bytes = stageMemory(searched, smallest->choice);
    stage =
        stages
            .names[std::max_element(bytes.begin(), bytes.end()) - bytes.begin()]
            .getValue()
            .str();
  }
  std::string where = stage.empty() ? "" : " of stage " + stage;
  // The numbers the compile driver decides on; the error is for people.
  noFit = sbp::NoFitAttr::get(module.getContext(),
                              std::isinf(needed)
                                  ? std::numeric_limits<int64_t>::max()
                                  : static_cast<int64_t>(needed),
                              static_cast<int64_t>(capacity), device, stage);
  // A budget below the device's memory is what the plan lacks against.
  bool budgeted = capacity < smallestDeviceMemory();
  return function.emitError()
         << "no plan fits in memory: the smallest needs "
         << groupThousands(static_cast<int64_t>(needed)) << " bytes per device"
         << where << "; "
         << (budgeted
                 ? "the memory budget is "
                 : "device " + std::to_string(device) + " (" +
                       model.getCluster().deviceTypeOf(device).name + ") has ")
         << groupThousands(static_cast<int64_t>(capacity)) << ", lacking "
         << groupThousands(static_cast<int64_t>(needed - capacity));
}

void ShardingSearch::debugLeastTime(const Classes &searched,
                                    const cost::LayoutSolution &best) const {
  PARPLAN_DEBUG(
      kSbpAssignDebugType,
      debugLine(kSbpAssignDebugType)
          << "start " << options.strategy << ": " << nodes.size()
          << " nodes in " << searched.representative.size() << " classes"
          << (searchAcrossStages ? " (alike stages as one)" : "")
          << "; least time " << searchedTime(searched, best.choice) << " s at "
          << groupThousands(
                 static_cast<int64_t>(planMemory(searched, best.choice)))
          << " bytes per device of "
          << groupThousands(static_cast<int64_t>(memoryCapacity())) << "\n");
}

void ShardingSearch::debugKept(double bytePrice) const {
  PARPLAN_DEBUG(kSbpAssignDebugType, {
    std::string priceNote =
        bytePrice < 0 ? " (the plan of least memory)"
        : bytePrice > 0
            ? llvm::formatv(" at a price of {0:e} s per byte", bytePrice).str()
            : std::string();
    debugLine(kSbpAssignDebugType)
        << "start " << options.strategy << ": step " << stepTime
        << " s (compute " << computeTime << ", communication "
        << communicationTime << "), "
        << groupThousands(static_cast<int64_t>(memory)) << " bytes per device"
        << priceNote << "\n";
  });
}

void ShardingSearch::debugLeastMemory(bool transients, bool boxedCopies,
                                      double peak) const {
  PARPLAN_DEBUG(kSbpAssignDebugType,
                debugLine(kSbpAssignDebugType)
                    << "start " << options.strategy << ": least memory by "
                    << (transients ? "every value's bytes" : "kept bytes")
                    << (boxedCopies ? " and boxed copies" : "") << ": "
                    << groupThousands(static_cast<int64_t>(peak))
                    << " bytes per device\n");
}

void ShardingSearch::debugPrice(
    double bytePrice, const std::optional<cost::LayoutSolution> &candidate,
    const Classes &grouped) const {
  PARPLAN_DEBUG(kSbpAssignDebugType, {
    raw_ostream &line = debugLine(kSbpAssignDebugType);
    line << "start " << options.strategy << ": price " << bytePrice
         << " s per byte: ";
    if (!candidate || std::isinf(candidate->cost))
      line << "no plan\n";
    else
      line << searchedTime(grouped, candidate->choice) << " s at "
           << groupThousands(
                  static_cast<int64_t>(planMemory(grouped, candidate->choice)))
           << " bytes per device\n";
  });
}

void ShardingSearch::predictPipeline(const std::vector<int64_t> &classChoice) {
  int64_t count = stageCount();
  stageFigures.assign(count, {});
  std::vector<double> bytes = stageMemory(classes, classChoice);
  for (int64_t s = 0; s < count; ++s)
    stageFigures[s].memory = bytes[s];
  int64_t virtualCount = count * stages.chunks;
  auto runs = static_cast<double>(microBatches);
  // What the executor's two streams overlap, range by range as it runs
  // them (docs/cost-model.md#overlap): per virtual stage a micro-batch's
  // forward and its backward, and per stage its last backward run along
  // the once-per-step part (runtime::StepOrder::updateWithLastTask), the
  // whole program without micro-batches.
  // With micro-batches, a stage first runs the copies of its parameters
  // (runtime::StepOrder::forwardBegin), a range of its own.
  std::vector<RangeSavings> forwardOverlap(virtualCount),
      backwardOverlap(virtualCount), updateOverlap(count), beforeOverlap(count);
  if (explicitStep) {
    std::vector<std::vector<int64_t>> forwardNodes(virtualCount),
        backwardNodes(virtualCount), stageNodes(count), lastRange(count),
        firstRange(count);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node &node = nodes[i];
      auto index = static_cast<int64_t>(i);
      int64_t s = stageOf(node);
      stageNodes[s].push_back(index);
      if (node.isSink()) {
        // A result's boxing (an updated parameter gathered into its
        // layout, say) runs after the once-per-step part, beside the
        // other parameters' updates.
        lastRange[s].push_back(index);
        continue;
      }
      int64_t v = virtualStageOf(node);
      if (beforeMicroBatches.contains(node.op))
        firstRange[s].push_back(index);
      else if (runsOncePerStep(node))
        lastRange[s].push_back(index);
      else if (forwardOps.contains(node.op))
        forwardNodes[v].push_back(index);
      else {
        backwardNodes[v].push_back(index);
        // The last task is the first chunk's backward.
        if (v == s)
          lastRange[s].push_back(index);
      }
    }
    for (int64_t s = 0; s < count; ++s) {
      if (microBatches == 1) {
        updateOverlap[s] = overlapIn(stageNodes[s]);
        continue;
      }
      for (int64_t c = 0; c < stages.chunks; ++c) {
        int64_t v = c * count + s;
        forwardOverlap[v] = overlapIn(forwardNodes[v]);
        backwardOverlap[v] = overlapIn(backwardNodes[v]);
      }
      updateOverlap[s] = overlapIn(lastRange[s]) - backwardOverlap[s];
      beforeOverlap[s] = overlapIn(firstRange[s]);
    }
  }
  // Shared boxings are communication the plan does not do; overlapped
  // seconds are done at once with others.
  overlapTime = 0;
  for (int64_t v = 0; v < virtualCount; ++v) {
    overlapTime +=
        runs * (forwardOverlap[v].overlap + backwardOverlap[v].overlap);
    communicationTime -=
        runs * (forwardOverlap[v].shared + backwardOverlap[v].shared);
  }
  for (const auto *perStage : {&updateOverlap, &beforeOverlap})
    for (const RangeSavings &savings : *perStage) {
      overlapTime += savings.overlap;
      communicationTime -= savings.shared;
    }
  if (count == 1) {
    stepTime = computeTime + communicationTime - overlapTime;
    return;
  }
  // Per virtual stage (a stage's chunk), a micro-batch's forward and
  // backward, and per boundary between virtual stages its sends: the
  // timeline's costs. The stages' figures add up their chunks.
  std::vector<double> forward(virtualCount, 0), backward(virtualCount, 0);
  for (int64_t v = 0; v < virtualCount; ++v) {
    double forwardSaved = forwardOverlap[v].shared + forwardOverlap[v].overlap,
           backwardSaved =
               backwardOverlap[v].shared + backwardOverlap[v].overlap;
    forward[v] -= forwardSaved;
    backward[v] -= backwardSaved;
    stageFigures[v % count].forward -= forwardSaved;
    stageFigures[v % count].backward -= backwardSaved;
  }
  // Without micro-batches the range is the stage's whole program, whose
  // overlap is mostly the gradients' reductions under the backward: the
  // backward's figure shows it (the update's alone is the optimizer's few
  // seconds of state traffic), but on the timeline, where the update is a
  // part of its own, it comes off the update first.
  for (int64_t s = 0; s < count; ++s) {
    double savedAfter = updateOverlap[s].shared + updateOverlap[s].overlap,
           savedBefore = beforeOverlap[s].shared + beforeOverlap[s].overlap;
    double saved = savedAfter + savedBefore;
    if (microBatches > 1) {
      stageFigures[s].update -= savedAfter;
      stageFigures[s].prologue -= savedBefore;
      continue;
    }
    // On the timeline a stage's update may run beside another stage's
    // backward: what its reductions overlap comes off the update first.
    if (onTimeline()) {
      double fromUpdate = std::min(saved, stageFigures[s].update);
      stageFigures[s].update -= fromUpdate;
      saved -= fromUpdate;
    }
    stageFigures[s].backward -= saved;
    backward[s] -= saved;
  }
  // Where a node's seconds go: the once-per-step part, or a micro-batch's
  // forward or backward (an implicit training step's backward is twice its
  // forward, as priceCandidates counts it).
  auto addTime = [&](const Node &node, double seconds) {
    StageFigures &figures = stageFigures[stageOf(node)];
    int64_t v = virtualStageOf(node);
    auto add = [&](double &stage, double &chunk, double part) {
      stage += part;
      chunk += part;
    };
    if (beforeMicroBatches.contains(node.op)) {
      figures.prologue += seconds;
    } else if (runsOncePerStep(node)) {
      figures.update += seconds;
    } else if (!explicitStep) {
      add(figures.forward, forward[v], seconds / 3 / runs);
      add(figures.backward, backward[v], 2 * seconds / 3 / runs);
    } else if (forwardOps.contains(node.op)) {
      add(figures.forward, forward[v], seconds / runs);
    } else {
      add(figures.backward, backward[v], seconds / runs);
    }
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    addTime(nodes[i], nodes[i].time[choice[i]]);
    if (!nodes[i].isSink())
      stageFigures[stageOf(nodes[i])].activation +=
          nodes[i].activation[choice[i]];
  }
  std::vector<double> sendForward(virtualCount - 1, 0),
      sendBackward(virtualCount - 1, 0), prologueMoves(count, 0);
  // Moves before the micro-batches take turns on their sender's card: how
  // long each stage's card sends them, and the stages each sends to.
  std::vector<double> prologueSends(count, 0);
  std::vector<std::set<int64_t>> prologueSenders(count);
  // Parts of gradients moved after the micro-batches: from, to, the
  // receiving node, the move's seconds.
  struct GradientPart {
    int64_t from, to;
    size_t receiver;
    double seconds;
    /// Of `seconds`, the sender's boxing before the move and the move.
    double beforeMove, move;
  };
  std::vector<GradientPart> gradientParts;
  // insert-cross-mesh moves a value once to each stage (and chunk) and
  // layout its readers there want, however many they are: a move counts
  // once, though the search priced it per reader.
  std::set<std::tuple<int64_t, unsigned, int64_t, std::string>> moved;
  // Moves of one class-level use between alike stages plan alike (the
  // search's matrix stands for all of them on the same assumption): each
  // is planned once per pair of layouts.
  const Classes &alike = searchAcrossStages ? acrossStages : classes;
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> planned;
  // Use by use: a class's uses may lie on several stages.
  for (size_t u = 0; u < uses.size(); ++u) {
    const Use &use = uses[u];
    const Node &producer = nodes[use.producer];
    const Node &consumer = nodes[use.consumer];
    int64_t a = choice[use.producer], b = choice[use.consumer];
    double searched = useTime(u);
    int64_t from = virtualStageOf(producer), to = virtualStageOf(consumer);
    if (!crossesStages(use)) {
      addTime(consumer, searched);
      continue;
    }
    if (!moved
             .emplace(use.producer, use.result, to,
                      toString(consumer.candidates[b].operands[use.operand]))
             .second) {
      communicationTime -= searched;
      continue;
    }
    // The search ranked moves by their bound; the figures plan them.
    auto [plan, unplanned] = planned.try_emplace({alike.ofUse[u], a, b}, 0);
    if (unplanned)
      plan->second = moveCost(use, a, b, true);
    double seconds = runsPerStep(use) * plan->second;
    communicationTime += seconds - searched;
    if ((runsOncePerStep(use) && runsOncePerStep(consumer) &&
         !beforeMicroBatches.contains(consumer.op)) ||
        movesGradientPart(use)) {
      // A sum moving after the micro-batches (a gradient's part to its
      // parameter's stage): the sender's last work, under the receiver's
      // last backward, and the receiver's update waits for it.
      stageFigures[stageOf(producer)].update += seconds;
      std::optional<CrossMeshCost> parts = crossMeshMove(
          stageOf(producer), producer.candidates[a].results[use.result],
          stageOf(consumer), consumer.candidates[b].operands[use.operand],
          consumer.op->getOperand(use.operand).getType(), true);
      double scale = runsPerStep(use);
      gradientParts.push_back({stageOf(producer), stageOf(consumer),
                               static_cast<size_t>(use.consumer), seconds,
                               parts ? scale * parts->beforeTime : 0,
                               parts ? scale * parts->moveTime : 0});
    } else if (runsOncePerStep(use) ||
               parameterCopiesOfOneMicroBatch.contains(producer.op)) {
      // A copy received before the micro-batches (a weight read on another
      // stage): the stage's first task waits for it.
      int64_t stage = stageOf(consumer), sender = stageOf(producer);
      prologueMoves[stage] = std::max(prologueMoves[stage], seconds);
      prologueSends[sender] += seconds;
      prologueSenders[stage].insert(sender);
    } else if (!explicitStep) {
      sendForward[std::min(from, to)] += seconds / 2 / runs;
      sendBackward[std::min(from, to)] += seconds / 2 / runs;
    } else if (from < to) {
      sendForward[to - 1] += seconds / runs;
    } else {
      sendBackward[to] += seconds / runs;
    }
  }
  // A stage waits for its copies, which arrive once their senders' cards
  // have sent all of theirs (in an order the plan's program sets: the last
  // one bounds each).
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t sender : prologueSenders[s])
      prologueMoves[s] = std::max(prologueMoves[s], prologueSends[sender]);
    stageFigures[s].prologue += prologueMoves[s];
  }
  if (!onTimeline()) {
    // One stage after another, sends between them: every second adds up,
    // but what each stage's streams overlap.
    stepTime = computeTime + communicationTime - overlapTime;
    for (StageFigures &figures : stageFigures) {
      figures.busy = figures.prologue +
                     runs * (figures.forward + figures.backward) +
                     figures.update;
      figures.bubble = stepTime - figures.busy;
    }
    return;
  }
  // A stage's sends to the next: those of its chunks, on average (a
  // micro-batch crosses the boundary once per chunk).
  for (int64_t s = 0; s + 1 < count; ++s) {
    for (int64_t c = 0; c < stages.chunks; ++c) {
      stageFigures[s].sendForward += sendForward[c * count + s];
      stageFigures[s].sendBackward += sendBackward[c * count + s];
    }
    stageFigures[s].sendForward /= static_cast<double>(stages.chunks);
    stageFigures[s].sendBackward /= static_cast<double>(stages.chunks);
  }
  schedule::PipelineShape shape{count, microBatches, stages.chunks};
  schedule::PipelineCosts costs;
  std::vector<double> update;
  for (const StageFigures &figures : stageFigures) {
    update.push_back(figures.update);
    costs.start.push_back(figures.prologue);
  }
  costs.forward = forward;
  costs.backward = backward;
  costs.sendForward = sendForward;
  costs.sendBackward = sendBackward;
  costs.sending = prologueSends;
  // A part of a gradient arrives after its sender's last task; what the
  // receiver does with it (the sum, its reduction, the parameter's update:
  // the once-per-step ops on that stage it reaches) follows it, while the
  // rest of the receiver's update need not wait.
  std::vector<std::vector<size_t>> usesOf(nodes.size());
  if (!gradientParts.empty())
    for (size_t u = 0; u < uses.size(); ++u)
      usesOf[uses[u].producer].push_back(u);
  for (const GradientPart &part : gradientParts) {
    if (part.from == part.to)
      continue;
    double after = part.seconds;
    std::vector<size_t> pending = {part.receiver};
    std::set<size_t> reached = {part.receiver};
    while (!pending.empty()) {
      size_t n = pending.back();
      pending.pop_back();
      after += nodes[n].time[choice[n]];
      for (size_t u : usesOf[n]) {
        const Node &next = nodes[uses[u].consumer];
        if (stageOf(next) != part.to || !runsOncePerStep(next) ||
            !reached.insert(uses[u].consumer).second)
          continue;
        after += useTime(u);
        pending.push_back(uses[u].consumer);
      }
    }
    costs.updateWaits.push_back({static_cast<size_t>(part.from),
                                 static_cast<size_t>(part.to), after,
                                 part.beforeMove, part.move});
  }
  PARPLAN_DEBUG(kSbpAssignDebugType, {
    raw_ostream &line = debugLine(kSbpAssignDebugType);
    line << "timeline of " << count << " stages, " << microBatches
         << " micro-batches (s): per stage first task, card sending first, "
            "forward, backward, update";
    for (int64_t s = 0; s < count; ++s)
      line << (s ? "; " : ": ") << costs.start[s] << " "
           << (static_cast<size_t>(s) < costs.sending.size() ? costs.sending[s]
                                                             : 0.0)
           << " " << forward[s] << " " << backward[s] << " " << update[s];
    line << "; sends on, back";
    for (size_t v = 0; v < sendForward.size(); ++v)
      line << (v ? "; " : ": ") << sendForward[v] << " " << sendBackward[v];
    for (const schedule::PipelineCosts::UpdateWait &wait : costs.updateWaits)
      line << "; update of " << wait.to << " waits for " << wait.from << ": "
           << wait.seconds << " (move " << wait.move << " after "
           << wait.beforeMove << ")";
    line << "\n";
  });
  // One micro-batch runs alike under every schedule.
  schedule::PipelineTimeline timeline = schedule::simulateStep(
      pipelined() ? *schedule::parsePipelineSchedule(options.schedule)
                  : schedule::PipelineSchedule::OneFOneB,
      shape, costs, update);
  stepTime = timeline.seconds;
  for (int64_t s = 0; s < count; ++s) {
    stageFigures[s].busy = stageFigures[s].prologue + timeline.busy[s];
    stageFigures[s].bubble = stepTime - stageFigures[s].busy;
  }
}

const std::optional<cost::BoxingCost> &
ShardingSearch::boxingOf(const Use &use, const NdSbp &from,
                         const NdSbp &to) const {
  return modelOf(stageOf(nodes[use.consumer]))
      .boxing(from, to,
              nodes[use.producer].op->getResult(use.result).getType());
}

bool ShardingSearch::gathersParameterOnly(const Use &use, const NdSbp &from,
                                          const NdSbp &to) const {
  const std::optional<cost::BoxingCost> &boxing = boxingOf(use, from, to);
  return boxing && !boxing->steps.empty() &&
         llvm::all_of(boxing->steps, [](const cost::BoxingStep &step) {
           return gathersParameter(step.step.kind);
         });
}

double ShardingSearch::trailingReductions(const Use &use, const NdSbp &from,
                                          const NdSbp &to,
                                          double seconds) const {
  const std::optional<cost::BoxingCost> &boxing = boxingOf(use, from, to);
  if (!boxing || !(boxing->time > 0))
    return 0;
  // A trailing slice runs just before the update (lower-to-plan's
  // slicedForUpdates), not after the reduction it slices; a slice of a
  // slice keeps the reduction on the communication stream.
  auto step = boxing->steps.rbegin();
  if (step != boxing->steps.rend() && step->step.kind == ReshardKind::Slice)
    ++step;
  double last = 0;
  for (; step != boxing->steps.rend() &&
         reducesOnGradientsStream(step->step.kind);
       ++step)
    last += step->time;
  // Reductions after a slice of a collective's result go with the slice
  // to just before the update, on the communication stream
  // (slicesBeforeReaders), where nothing waits for them: the boxing is
  // priced whole where it is placed.
  auto before = step;
  while (before != boxing->steps.rend() &&
         before->step.kind == ReshardKind::Slice)
    ++before;
  if (last > 0 && before != step && before != boxing->steps.rend() &&
      isCollective(before->step.kind))
    return 0;
  return seconds * std::min(1.0, last / boxing->time);
}

double ShardingSearch::scatteredPartBytes(const Use &use, const NdSbp &from,
                                          const NdSbp &to) const {
  const std::optional<cost::BoxingCost> &boxing = boxingOf(use, from, to);
  if (!boxing)
    return 0;
  double part = 0;
  for (const cost::BoxingStep &step : boxing->steps)
    if (step.step.kind == ReshardKind::ReduceScatter)
      part +=
          step.bytes / static_cast<double>(
                           meshShape[static_cast<size_t>(step.step.meshAxis)]);
  return part;
}

double ShardingSearch::useTime(size_t u) const {
  const Use &use = uses[u];
  size_t columns = nodes[use.consumer].candidates.size();
  return (*classes.uses[classes.ofUse[u]]
               .costs)[choice[use.producer] * columns + choice[use.consumer]];
}

ShardingSearch::RangeSavings
ShardingSearch::overlapIn(const std::vector<int64_t> &range) const {
  // A kernel (use -1) or a boxing (the use it serves), at its place in the
  // program: a kernel at its op, a boxing right after its producer or
  // just before its reader (insert-boxing's rule).
  struct Item {
    double place;
    int64_t node;
    int64_t use;
    double seconds;
    /// A boxing that writes a buffer of its own, not in place: plan-memory
    /// may give it bytes that a kernel before it in the program used, and
    /// the executor then holds it back until that kernel is done. The
    /// timeline starts it once the compute stream is past the
    /// communication stream's boxing before it: the kernels since then
    /// mostly read or write values that live on (a backward's matmul reads
    /// its gradient again), and waiting for them all put one mesh of
    /// mixed-t4-a100 in groups of 4 5.7% over its simulated step (the
    /// all-to-all a weight's gradient reads runs under the matmul before
    /// it).
    bool ownBuffer = false;
    /// Of `seconds`, the boxing's last steps' that reduce on the gradients
    /// stream (trailingReductions), read by an optimizer update: lowered
    /// onto that stream when every reader is one (lower-to-plan's
    /// feeds_update).
    double trailingReductions = 0;
    /// A boxing that joins the positions along the shares' axis.
    bool joins = false;
    /// A parameter's gathers for the forward: on the gradients stream,
    /// which is idle until the backward, so that they do not hold the
    /// communication stream's boxings of activations behind them
    /// (lower-to-plan's prefetchesParameter).
    bool prefetch = false;
    /// Of trailingReductions, the leading steps' that stay within the
    /// positions along the shares' axis (stepsWithinPositions), and each
    /// position's part of them as a fraction of the slowest's: run on the
    /// communication stream when no boxing of an activation follows.
    double within = 0;
    llvm::SmallVector<double, 8> withinScales;
  };
  // On one mesh of uneven shares without micro-batches (the range is the
  // whole step), each position along the shares' axis runs the kernels at
  // its own pace on its own streams, and all wait for the latest where a
  // boxing joins them, as the devices run the step: the slowest position
  // of each op, summed, is not one that exists (on mixed-t4-a100 in
  // groups of 4 it was 5.5% over the simulated step).
  const ShardingCostModel &rangeModel = modelOf(0);
  bool byPosition = stages.meshes.size() <= 1 && microBatches == 1 &&
                    rangeModel.getSharesAxis() >= 0;
  assert((!byPosition || range.size() == nodes.size()) &&
         "by position, the range is the whole step");
  size_t sharesAxis =
      byPosition ? static_cast<size_t>(rangeModel.getSharesAxis()) : 0;
  size_t positions =
      byPosition ? static_cast<size_t>(rangeModel.getMeshShape()[sharesAxis])
                 : 1;
  // Each kernel item's seconds by position, and each boxing's inside
  // each position as a fraction of its seconds, where byPosition.
  std::vector<llvm::SmallVector<double, 8>> positionSeconds;
  std::vector<Item> items;
  double added = 0, shared = 0;
  // With micro-batches, the once-per-step part comes after the backward in
  // the program (lower-to-plan), whatever its ops' places in @main: the
  // once-run ops' kernels, and the boxings of a sum over the micro-batches
  // or of a once-run op's result.
  double oncePart =
      microBatches > 1 ? static_cast<double>(nodes.size()) + 1 : 0;
  // Uses of one value in one layout share insert-boxing's boxing: its
  // readers wait for the one boxing.
  std::map<std::tuple<int64_t, unsigned, bool>,
           SmallVector<std::pair<const NdSbp *, size_t>, 2>>
      boxings;
  std::vector<std::vector<int64_t>> readers;
  for (int64_t i : range) {
    const Node &node = nodes[i];
    // A sink has no kernel, but the boxing into it runs.
    if (!node.isSink()) {
      double seconds = node.time[choice[i]] / runsPerStep(node);
      added += seconds;
      items.push_back(
          {(runsOncePerStep(node) ? oncePart : 0) + static_cast<double>(i), i,
           -1, seconds});
      if (byPosition) {
        // Empty for an op without a cost: alike on every position. One
        // run per step: no micro-batches.
        positionSeconds.resize(items.size());
        positionSeconds.back() = positionKernelTimes(static_cast<size_t>(i));
      }
    }
    readers.resize(items.size());
    for (int64_t u : usesOf[i]) {
      const Use &use = uses[u];
      if (use.consumer != i)
        continue;
      const Node &producer = nodes[use.producer];
      const Node &consumer = nodes[use.consumer];
      if (use.tie || crossesStages(use))
        continue;
      double seconds = useTime(u) / runsPerStep(consumer);
      if (seconds <= 0)
        continue;
      added += seconds;
      const NdSbp &from =
          producer.candidates[choice[use.producer]].results[use.result];
      const NdSbp &to =
          consumer.candidates[choice[use.consumer]].operands[use.operand];
      bool backwardRead = explicitStep && forwardOps.contains(producer.op) &&
                          !forwardOps.contains(consumer.op);
      bool ofSum = isa<nn::AccumulateOp>(producer.op);
      bool beforeReader = boxesBeforeReader(backwardRead, ofSum, from, to);
      auto &layouts = boxings[{use.producer, use.result, backwardRead}];
      auto sameLayout = [&](const auto &boxed) { return *boxed.first == to; };
      auto found = llvm::find_if(layouts, sameLayout);
      readers.resize(items.size() + 1);
      // A value returned in a layout the forward reads it in is returned
      // from the forward's boxing, and so is a parameter kept for the
      // backward read (insert-boxing).
      if (backwardRead &&
          (consumer.isSink() || keptForBackward.contains(use.producer))) {
        auto &forwardLayouts = boxings[{use.producer, use.result, false}];
        auto forwardBoxed = llvm::find_if(forwardLayouts, sameLayout);
        if (forwardBoxed != forwardLayouts.end()) {
          readers[forwardBoxed->second].push_back(use.consumer);
          shared += seconds;
          continue;
        }
      }
      if (found != layouts.end()) {
        readers[found->second].push_back(use.consumer);
        shared += seconds;
        continue;
      }
      layouts.push_back({&to, items.size()});
      readers[items.size()].push_back(use.consumer);
      bool once = ofSum || afterMicroBatches.contains(producer.op);
      items.push_back(
          {(once ? oncePart : 0) +
               (beforeReader ? static_cast<double>(use.consumer) - 0.5
                             : static_cast<double>(use.producer) + 0.5),
           use.producer, u, seconds, !allReducesOnly(from, to),
           readsForUpdatesOnly(consumer.op)
               ? trailingReductions(use, from, to, seconds)
               : 0,
           joinsPositions(from, to, sharesAxis),
           explicitStep && !beforeReader && isa<nn::ParamOp>(producer.op) &&
               forwardOps.contains(consumer.op) &&
               gathersParameterOnly(use, from, to)});
      if (byPosition && items.back().trailingReductions > 0)
        if (const std::optional<cost::BoxingCost> &boxing =
                boxingOf(use, from, to);
            boxing && boxing->time > 0) {
          // Every step a reduction on the gradients stream, but a slice
          // at the end (lowered just before the update).
          std::vector<ReshardStep> steps;
          for (const cost::BoxingStep &step : boxing->steps)
            steps.push_back(step.step);
          bool reductions =
              llvm::all_of(ArrayRef(steps).drop_back(
                               steps.back().kind == ReshardKind::Slice ? 1 : 0),
                           [](const ReshardStep &step) {
                             return reducesOnGradientsStream(step.kind);
                           });
          size_t leading = reductions
                               ? stepsWithinPositions(
                                     steps, static_cast<int64_t>(sharesAxis))
                               : 0;
          double leadingTime = 0;
          for (size_t s = 0; s < leading; ++s)
            leadingTime += boxing->steps[s].time;
          llvm::SmallVector<double, 8> times = rangeModel.boxingPositionTimes(
              from, to, producer.op->getResult(use.result).getType(), leading);
          double slowest = times.empty() ? 0 : *llvm::max_element(times);
          if (leadingTime > 0 && slowest > 0) {
            items.back().within =
                std::min(items.back().trailingReductions,
                         seconds * std::min(1.0, leadingTime / boxing->time));
            for (double time : times)
              items.back().withinScales.push_back(time / slowest);
          }
        }
      if (byPosition && !items.back().joins) {
        // A boxing inside each position lasts as its own part on its own
        // links take (the use's seconds are the slowest position's).
        llvm::SmallVector<double, 8> times = rangeModel.boxingPositionTimes(
            from, to, producer.op->getResult(use.result).getType());
        double slowest = times.empty() ? 0 : *llvm::max_element(times);
        positionSeconds.resize(items.size());
        if (slowest > 0)
          for (double time : times)
            positionSeconds.back().push_back(time / slowest);
      }
    }
  }
  readers.resize(items.size());
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  auto readOnlyForUpdates = [&](size_t k) {
    return llvm::all_of(readers[k], [&](int64_t reader) {
      return readsForUpdatesOnly(nodes[reader].op);
    });
  };
  // The place of the last boxing of an activation: one on the
  // communication stream that neither only updates nor only the step's
  // results read (stepsWithinPositions).
  double lastActivation = -1;
  for (size_t k = 0; k < items.size(); ++k)
    if (items[k].use >= 0 && !items[k].prefetch && !readOnlyForUpdates(k) &&
        !llvm::all_of(readers[k],
                      [&](int64_t reader) { return nodes[reader].isSink(); }))
      lastActivation = std::max(lastActivation, items[k].place);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return items[a].place < items[b].place;
  });
  // Per position (one where not byPosition): when each kernel's node
  // ends, when each node's boxings are done, and each stream's clock. A
  // gradient's last reductions that only updates read run on the
  // gradients stream, beside the communication stream (lower-to-plan's
  // feeds_update), after the boxing's earlier steps; so do a parameter's
  // gathers for the forward, whole.
  using Clocks = llvm::SmallVector<double, 8>;
  std::unordered_map<int64_t, Clocks> written, boxed;
  Clocks compute(positions, 0), communication(positions, 0),
      gradients(positions, 0), done(positions, 0);
  // The compute stream's clocks where the communication stream's last
  // boxing was placed (ownBuffer).
  Clocks computeAtCommunication(positions, 0);
  double kernels = 0;
  for (size_t k : order) {
    const Item &item = items[k];
    if (item.use < 0) {
      kernels += item.seconds;
      auto ready = boxed.find(item.node);
      for (size_t p = 0; p < positions; ++p)
        compute[p] =
            std::max(compute[p], ready == boxed.end() ? 0 : ready->second[p]) +
            (byPosition && positionSeconds[k].size() == positions
                 ? positionSeconds[k][p]
                 : item.seconds);
      written[item.node] = compute;
      continue;
    }
    bool feedsUpdates = item.trailingReductions > 0 && readOnlyForUpdates(k);
    double onGradients = item.prefetch  ? item.seconds
                         : feedsUpdates ? item.trailingReductions
                                        : 0;
    // A gradient's steps within the positions, after the last boxing of
    // an activation: on the communication stream, each position at its
    // own pace (stepsWithinPositions).
    double within =
        feedsUpdates && item.place > lastActivation ? item.within : 0;
    onGradients -= within;
    auto ready = written.find(item.node);
    bool communicates = item.seconds > onGradients;
    for (size_t p = 0; p < positions; ++p)
      done[p] = std::max(
          ready == written.end() ? 0 : ready->second[p],
          item.ownBuffer && communicates ? computeAtCommunication[p] : 0);
    if (communicates)
      computeAtCommunication = compute;
    // A boxing that joins the positions starts when the last is ready;
    // one inside each position takes its own part of the seconds.
    bool joins = byPosition && item.joins;
    const llvm::SmallVector<double, 8> *scales =
        byPosition && k < positionSeconds.size() &&
                positionSeconds[k].size() == positions
            ? &positionSeconds[k]
            : nullptr;
    auto run = [&](Clocks &stream, double seconds, bool joins,
                   const llvm::SmallVector<double, 8> *scales) {
      double start = 0;
      if (joins)
        for (size_t p = 0; p < positions; ++p)
          start = std::max({start, stream[p], done[p]});
      for (size_t p = 0; p < positions; ++p)
        done[p] = stream[p] = (joins ? start : std::max(stream[p], done[p])) +
                              (scales ? seconds * (*scales)[p] : seconds);
    };
    if (within > 0)
      run(communication, within, false,
          item.withinScales.size() == positions ? &item.withinScales : nullptr);
    else if (communicates)
      run(communication, item.seconds - onGradients, joins, scales);
    if (onGradients > 0)
      run(gradients, onGradients, joins, scales);
    for (int64_t reader : readers[k]) {
      auto [clocks, inserted] = boxed.try_emplace(reader, positions, 0.0);
      for (size_t p = 0; p < positions; ++p)
        clocks->second[p] = std::max(clocks->second[p], done[p]);
    }
  }
  double last = 0;
  for (size_t p = 0; p < positions; ++p)
    last = std::max({last, compute[p], communication[p], gradients[p]});
  // By position, the kernels add up to the step's compute as the devices
  // run it (positionComputeTime), which computeTime already is: the
  // overlap is what the timeline saves beside it.
  if (byPosition)
    added += computeTime - kernels;
  return {shared, std::max(0.0, added - shared - last)};
}

double ShardingSearch::localCost(int64_t node, int64_t candidate) const {
  double total = nodes[node].time[candidate];
  for (int64_t index : usesOf[node]) {
    const Use &use = uses[index];
    const std::vector<double> &costs =
        *classes.uses[classes.ofUse[index]].costs;
    size_t columns = nodes[use.consumer].candidates.size();
    int64_t a = use.producer == node ? candidate : choice[use.producer];
    int64_t b = use.consumer == node ? candidate : choice[use.consumer];
    total += costs[a * columns + b];
  }
  return total;
}

void ShardingSearch::explainChoices() {
  explanations.assign(nodes.size(), {});
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].isSink())
      continue;
    Explanation &explanation = explanations[i];
    int64_t node = static_cast<int64_t>(i);
    explanation.cost = localCost(node, choice[i]);
    for (int64_t k = 0; k < static_cast<int64_t>(nodes[i].candidates.size());
         ++k) {
      if (k == choice[i])
        continue;
      double cost = localCost(node, k);
      if (explanation.runnerUp < 0 || cost < explanation.runnerUpCost) {
        explanation.runnerUp = k;
        explanation.runnerUpCost = cost;
      }
    }
  }
}

void ShardingSearch::annotate(
    StringRef requested, StringRef startLabel,
    ArrayRef<std::pair<std::string, double>> baselines) {
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  if (options.explain)
    explainChoices();
  // Sinks of one func.return share its attribute.
  DenseMap<Operation *, std::vector<NdSbp>> returned;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node &node = nodes[i];
    const Candidate &chosen = node.candidates[choice[i]];
    if (node.isSink()) {
      std::vector<NdSbp> &layouts = returned[node.op];
      layouts.resize(node.op->getNumOperands());
      layouts[node.sinkOperand] = chosen.operands[0];
      continue;
    }
    StringRef mesh =
        stages.names.empty()
            ? StringRef("mesh")
            : stages.names[stages.stageOf.lookup(node.op)].getValue();
    node.op->setAttr(
        parplan::kShardingAttrName,
        sbp::ShardingAttr::get(context, mesh, chosen.operands, chosen.results));
    node.op->removeAttr(parplan::kStageAttrName);
    if (keptForBackward.contains(static_cast<int64_t>(i)))
      node.op->setAttr(parplan::kKeptForBackwardAttrName,
                       builder.getUnitAttr());
    else
      node.op->removeAttr(parplan::kKeptForBackwardAttrName);
    if (!options.explain)
      continue;
    const Explanation &explanation = explanations[i];
    SmallVector<NamedAttribute> entries;
    entries.push_back(builder.getNamedAttr(
        "cost", builder.getF64FloatAttr(explanation.cost)));
    if (explanation.runnerUp >= 0) {
      const Candidate &other = node.candidates[explanation.runnerUp];
      entries.push_back(builder.getNamedAttr(
          "runner_up", sbp::ShardingAttr::get(context, mesh, other.operands,
                                              other.results)));
      entries.push_back(builder.getNamedAttr(
          "runner_up_cost", builder.getF64FloatAttr(explanation.runnerUpCost)));
    }
    node.op->setAttr(parplan::kExplainAttrName,
                     builder.getDictionaryAttr(entries));
  }
  // A returned value stays on its producer's stage: the return's mesh is
  // only a name there.
  for (auto &[op, layouts] : returned)
    op->setAttr(parplan::kShardingAttrName,
                sbp::ShardingAttr::get(context,
                                       stages.names.empty()
                                           ? StringRef("mesh")
                                           : stages.names.front().getValue(),
                                       layouts, {}));
  SmallVector<NamedAttribute> baselineEntries;
  for (const auto &[strategy, seconds] : baselines)
    baselineEntries.push_back(
        builder.getNamedAttr(strategy, builder.getF64FloatAttr(seconds)));
  DictionaryAttr baselineTimes = builder.getDictionaryAttr(baselineEntries);
  // Per stage, in the order of their meshes: its predicted seconds and
  // bytes.
  SmallVector<Attribute> stageEntries;
  if (!stages.names.empty())
    for (auto [index, figures] : llvm::enumerate(stageFigures))
      stageEntries.push_back(sbp::StageFiguresAttr::get(
          context, stages.names[index], figures.forward, figures.backward,
          figures.update, figures.sendForward, figures.sendBackward,
          figures.busy, figures.bubble, static_cast<int64_t>(figures.memory),
          static_cast<int64_t>(figures.activation), figures.prologue));
  module->setAttr(
      parplan::kLayoutPlanAttrName,
      sbp::LayoutPlanAttr::get(
          context, model.getCluster().name, requested,
          (options.strategy + startLabel).str(),
          builder.getBoolAttr(static_cast<bool>(options.training) ||
                              explicitStep),
          stepTime, computeTime, communicationTime, overlapTime,
          static_cast<int64_t>(memory),
          static_cast<int64_t>(smallestDeviceMemory()), memorySlowdown,
          baselineTimes, builder.getArrayAttr(stageEntries),
          pipelined() ? StringRef(options.schedule) : StringRef("sequential"),
          static_cast<int64_t>(classes.representative.size())));
}

LogicalResult ShardingSearch::run(bool giveUpUnfit) {
  if (failed(buildNodes()))
    return failure();
  if (failed(collectPins()))
    return failure();
  if (explicitStep) {
    savedActivations = parplan::savedActivations(function);
    microBatches = microBatchCount(module);
    if (microBatches > 1) {
      FailureOr<DenseSet<Operation *>> after = opsAfterMicroBatches(function);
      if (failed(after))
        return failure();
      afterMicroBatches = std::move(*after);
      beforeMicroBatches = opsBeforeMicroBatches(function, afterMicroBatches);
    }
    forwardOps = forwardPassOps(function);
    if (microBatches == 1 && stageCount() > 1) {
      afterMicroBatches = updateOpsOfOneMicroBatch(function);
      parameterCopiesOfOneMicroBatch = parameterCopies(
          llvm::to_vector(llvm::make_pointer_range(function.front())));
      gradientPartsOfOneMicroBatch =
          parameterGradientOps(function, forwardOps, afterMicroBatches);
    }
  }
  inFlight.assign(stageCount() * stages.chunks, 1);
  if (pipelined()) {
    schedule::PipelineShape shape{stageCount(), microBatches, stages.chunks};
    schedule::PipelineSchedule schedule =
        *schedule::parsePipelineSchedule(options.schedule);
    // Interleaved's micro-batches go round the stages in groups of them.
    if (std::optional<std::string> why =
            schedule::checkPipeline(schedule, shape))
      return function.emitError() << "sbp-assign: " << *why;
    inFlight = schedule::pipelineInFlightByChunk(
        schedule::pipelineOrder(schedule, shape), stages.chunks);
  }
  for (Node &node : nodes)
    priceCandidates(node);
  if (explicitStep)
    collectHeldValues();
  if (giveUpUnfit) {
    // Each op at its candidate of least memory: no layout of a stage
    // needs less.
    // In an explicit step one micro-batch's activations are all alive
    // where its backward begins, so stageMemory's peak holds them; but a
    // reshape's result shares its operand's bytes there.
    std::vector<double> least(stageCount(), 0);
    for (const Node &node : nodes) {
      bool view = explicitStep && !node.isSink() && isa<nn::ReshapeOp>(node.op);
      double smallest = kInfinity;
      for (size_t k = 0; k < node.memory.size(); ++k)
        smallest = std::min(smallest,
                            node.memory[k] - (view ? node.activation[k] : 0.0));
      if (!node.memory.empty())
        least[stageOf(node)] += smallest;
    }
    if (*std::max_element(least.begin(), least.end()) > memoryCapacity())
      return failure();
  }
  stageKind.assign(stageCount(), 0);
  std::map<std::string, int64_t> kinds;
  for (size_t s = 0; s < stages.meshes.size(); ++s) {
    // Alike: shifts of each other, on devices of the same types.
    std::string key =
        cost::placeMeshes(model.getCluster(), {&stages.meshes[s]}).key;
    for (int64_t device : stages.meshes[s].devices)
      key += "|" + model.getCluster().deviceTypeOf(device).name;
    stageKind[s] =
        kinds.try_emplace(key, static_cast<int64_t>(s)).first->second;
  }
  // The exact search stays exact: on every class.
  bool alikeStages = options.shareLayers && options.strategy != "exact" &&
                     kinds.size() < stages.meshes.size();
  if (alikeStages)
    acrossStages = groupClasses(true);
  classes = groupClasses(false, alikeStages ? &acrossStages : nullptr);
  searchAcrossStages = alikeStages && acrossStages.representative.size() <
                                          classes.representative.size();
  if (failed(solve()))
    return failure();
  return success();
}

/// Whether this thread lays out a start whose diagnostics are quiet.
thread_local bool quietStart = false;

struct SbpAssignPass : parplan::impl::SbpAssignBase<SbpAssignPass> {
  using SbpAssignBase::SbpAssignBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SbpAssignOptions options{mesh,           strategy,     training, optimizer,
                             mixedPrecision, shareLayers,  starts,   explain,
                             schedule,       memoryBudget, shares};
    // A step (nn-autodiff's or nn-inference-step's output) states its
    // backward pass or its lack of one, its optimizer and its element
    // types: nothing is added on top.
    if (parplan::isStep(module)) {
      options.training = false;
      options.mixedPrecision = false;
    }
    static const char *const strategies[] = {"auto", "exact", "data-parallel",
                                             "megatron", "replicated"};
    if (!llvm::is_contained(strategies, StringRef(options.strategy))) {
      module.emitError() << "unknown strategy '" << options.strategy
                         << "' (expected auto, exact, data-parallel, "
                            "megatron or replicated)";
      return signalPassFailure();
    }
    static const char *const startSets[] = {"all", "search", "baselines"};
    if (!llvm::is_contained(startSets, StringRef(options.starts))) {
      module.emitError() << "sbp-assign: starts '" << options.starts
                         << "' is unknown; use all, search or baselines";
      return signalPassFailure();
    }
    // Interleaved runs stages of several model chunks (place-stages'
    // chunks), and only it does.
    int64_t chunks = 1;
    if (auto attr =
            module->getAttrOfType<IntegerAttr>(parplan::kChunksAttrName))
      chunks = attr.getInt();
    if (options.schedule != "sequential") {
      std::optional<schedule::PipelineSchedule> parsed =
          schedule::parsePipelineSchedule(options.schedule);
      if (!parsed) {
        module.emitError() << "sbp-assign: schedule '" << options.schedule
                           << "' is unknown; use gpipe, 1f1b, eager-1f1b, "
                              "interleaved or sequential";
        return signalPassFailure();
      }
    }
    if (std::optional<std::string> why =
            schedule::checkScheduleChunks(options.schedule, chunks)) {
      module.emitError() << "sbp-assign: " << *why << " (sbp.chunks)";
      return signalPassFailure();
    }
    if (!cost::parseOptimizer(options.optimizer)) {
      module.emitError() << "unknown optimizer '" << options.optimizer
                         << "' (expected sgd, momentum, adam or adamw)";
      return signalPassFailure();
    }
    std::string error;
    std::optional<std::vector<int64_t>> shape;
    if (!options.mesh.empty()) {
      shape = cost::parseMeshShape(options.mesh, error);
      if (!shape) {
        module.emitError() << "mesh '" << options.mesh << "': " << error;
        return signalPassFailure();
      }
    }
    auto function = module.lookupSymbol<func::FuncOp>("main");
    if (!function || function.isExternal()) {
      module.emitError() << "sbp-assign plans @main; the module has none";
      return signalPassFailure();
    }
    FailureOr<StageMeshes> stages = collectStages(module, function);
    if (failed(stages))
      return signalPassFailure();
    if (!stages->names.empty()) {
      const std::vector<int64_t> &stageShape = stages->meshes.front().shape;
      if (shape && *shape != stageShape) {
        module.emitError() << "mesh '" << options.mesh
                           << "': the stages' meshes are "
                           << cost::formatMeshShape(stageShape);
        return signalPassFailure();
      }
      shape = stageShape;
    }
    const cost::Cluster *cluster =
        getAnalysis<ClusterAnalysis>().require(module, "sbp-assign");
    if (!cluster)
      return signalPassFailure();
    std::optional<ShardingCostModel> evenModel =
        ShardingCostModel::load(*cluster, shape, options.mixedPrecision, error);
    if (!evenModel) {
      module.emitError() << error;
      return signalPassFailure();
    }
    for (auto [name, mesh] : llvm::zip(stages->names, stages->meshes)) {
      if (std::optional<std::string> why =
              cost::checkMesh(evenModel->getCluster(), mesh)) {
        module.emitError() << "stage mesh " << name << " on cluster '"
                           << evenModel->getCluster().name << "': " << *why;
        return signalPassFailure();
      }
      stages->models.push_back(ShardingCostModel::onMesh(
          evenModel->getCluster(), mesh, options.mixedPrecision));
    }
    if (stages->names.empty() && module.lookupSymbol("mesh")) {
      module.emitError() << "the module already has a symbol @mesh; "
                            "sbp-assign runs once";
      return signalPassFailure();
    }
    if (options.shares != "auto" && options.shares != "speed" &&
        options.shares != "even") {
      module.emitError() << "unknown shares '" << options.shares
                         << "' (expected auto, speed or even)";
      return signalPassFailure();
    }
    // One mesh of mixed types is laid out with even parts and with each
    // position's part by its speed; with shares=auto the least predicted
    // step wins, even parts on a tie (a batch too small to share by speed,
    // or a layout that needs parts exchanged along the shared axis, is
    // better even).
    // The annotations' `balance: even` is Whale's switch to even shares.
    std::string noAnnotations;
    if (std::optional<Annotations> annotations =
            carriedAnnotations(module, noAnnotations);
        annotations && annotations->evenShares)
      options.shares = "even";
    MeshShares bySpeed;
    if (stages->names.empty() && options.shares != "even")
      bySpeed = speedShares(*cluster, evenModel->getMesh(), function,
                            options.mixedPrecision, batchRows(function));
    cost::DeviceMesh sharedMesh = evenModel->getMesh();
    sharedMesh.shares = std::move(bySpeed);
    std::vector<ShardingCostModel> models;
    if (options.shares != "speed" || sharedMesh.shares.empty())
      models.push_back(std::move(*evenModel));
    if (!sharedMesh.shares.empty())
      models.push_back(ShardingCostModel::onMesh(
          *cluster, std::move(sharedMesh), options.mixedPrecision));
    // A mesh not given may be regrouped: its nodes' devices in groups
    // taking whole rows by speed, where whole rows per device cannot
    // follow the speeds (speedGroupedMeshes). A given mesh is the user's.
    size_t groupedModels = models.size();
    if (stages->names.empty() && options.mesh.empty() &&
        options.shares != "even")
      for (cost::DeviceMesh &grouped :
           speedGroupedMeshes(*cluster, models.front().getMesh(), function,
                              options.mixedPrecision, batchRows(function)))
        models.push_back(ShardingCostModel::onMesh(*cluster, std::move(grouped),
                                                   options.mixedPrecision));
    // auto is the search and, under the same cost model, every shipped
    // baseline: the least predicted step wins, so that auto is never worse
    // than a baseline. Each baseline keeps the user's pins and lays out the
    // rest its way (startOfAuto); one that cannot lay the program out (no
    // fit in memory, no candidate its pins and the user's both admit) is
    // left out quietly.
    bool isAuto = options.strategy == "auto";
    bool searches = !isAuto || options.starts != "baselines";
    std::unique_ptr<ShardingSearch> best;
    std::string bestLabel;
    // The predicted step of every start but the one kept.
    std::vector<std::pair<std::string, double>> others;
    auto keep = [&](std::unique_ptr<ShardingSearch> search, std::string label) {
      if (!best) {
        best = std::move(search);
        bestLabel = std::move(label);
        return;
      }
      if (search->getStepTime() < best->getStepTime()) {
        std::swap(search, best);
        std::swap(label, bestLabel);
      }
      others.emplace_back(search->getStrategy().str() + label,
                          search->getStepTime());
    };
    // The starts, in the order the least step is kept in (the first on a
    // tie). A baseline's diagnostics are quiet (one that cannot lay the
    // program out is left out), as are the search's with two meshes (a
    // failure is reported below if both fail).
    struct Start {
      const ShardingCostModel *model;
      std::string strategy, label;
      bool isSearch;
      std::unique_ptr<ShardingSearch> search;
      bool succeeded = false;
    };
    std::vector<Start> starts;
    // Devices alike take uneven parts only as near-even whole rows.
    bool alike = cluster->ofOneType(models.front().getMesh().devices);
    for (auto [index, model] : llvm::enumerate(models)) {
      std::string label =
          index >= groupedModels
              ? " (parts by speed in groups of " +
                    std::to_string(model.getMeshShape().back()) + ")"
          : model.getShares().empty() ? ""
          : alike                     ? " (parts in whole rows)"
                                      : " (parts by speed)";
      if (searches)
        starts.push_back({&model, options.strategy, label, true});
      if (isAuto && options.starts != "search")
        for (const char *baseline : kBaselines)
          starts.push_back({&model, baseline, label, false});
    }
    // On two threads where the context has them (its pool has two cores
    // or more to run on) and no debug lines would interleave, each start
    // is laid out on copies of the cost models, whose memos are not for
    // two threads at once; on one, the starts share them, and each finds
    // the last one's memos.
    bool twoThreads = getContext().getNumThreads() > 1 && starts.size() > 1 &&
                      !isDebugEnabled(kSbpAssignDebugType);
    std::vector<StageMeshes> stageCopies;
    std::vector<ShardingCostModel> modelCopies;
    if (twoThreads) {
      stageCopies.assign(starts.size(), *stages);
      modelCopies.reserve(starts.size());
      for (Start &start : starts)
        modelCopies.push_back(*start.model);
    }
    auto layOut = [&](size_t index) {
      Start &start = starts[index];
      SbpAssignOptions startOptions = options;
      startOptions.strategy = start.strategy;
      bool quiet = !start.isSearch || models.size() > 1;
      start.search = std::make_unique<ShardingSearch>(
          module, function, twoThreads ? modelCopies[index] : *start.model,
          startOptions, twoThreads ? stageCopies[index] : *stages);
      if (isAuto && !start.isSearch)
        start.search->startOfAuto();
      quietStart = quiet;
      start.succeeded = succeeded(start.search->run(/*giveUpUnfit=*/quiet));
      quietStart = false;
      PARPLAN_DEBUG(kSbpAssignDebugType, {
        if (!start.succeeded && !start.isSearch)
          debugLine(kSbpAssignDebugType)
              << "start " << start.strategy << start.label
              << ": left out (no layout fits, or a pin contradicts it)\n";
      });
    };
    {
      // Quiet starts say nothing; the others' diagnostics go on to the
      // handlers before this one.
      ScopedDiagnosticHandler quiet(
          &getContext(), [](Diagnostic &) { return success(quietStart); });
      if (twoThreads) {
        // The searches on the pass's own thread, whose caller's handlers
        // may tell its diagnostics apart by thread; the baselines beside
        // them, on the second thread and then on both.
        std::vector<size_t> searchStarts, baselineStarts;
        for (size_t i = 0; i < starts.size(); ++i)
          (starts[i].isSearch ? searchStarts : baselineStarts).push_back(i);
        std::atomic<size_t> next = 0;
        auto layOutBaselines = [&] {
          for (size_t i = next++; i < baselineStarts.size(); i = next++)
            layOut(baselineStarts[i]);
        };
        std::thread second(layOutBaselines);
        for (size_t i : searchStarts)
          layOut(i);
        layOutBaselines();
        second.join();
      } else {
        for (size_t i = 0; i < starts.size(); ++i)
          layOut(i);
      }
    }
    bool searched = false;
    for (Start &start : starts) {
      if (sbp::NoFitAttr noFit = start.search->getNoFit())
        module->setAttr(parplan::kNoFitAttrName, noFit);
      if (!start.succeeded)
        continue;
      searched |= start.isSearch;
      keep(std::move(start.search), start.label);
    }
    if (searches && !searched) {
      // Said again aloud: why the first mesh cannot be laid out.
      if (models.size() > 1) {
        ShardingSearch aloud(module, function, models.front(), options,
                             *stages);
        if (failed(aloud.run()) && aloud.getNoFit())
          module->setAttr(parplan::kNoFitAttrName, aloud.getNoFit());
      }
      return signalPassFailure();
    }
    if (!best) {
      module.emitError() << "sbp-assign: no baseline lays @main out "
                            "(starts=baselines)";
      return signalPassFailure();
    }
    // On the kept mesh, where it has parts by speed: one start more,
    // replicated with the largest parameter and its optimizer state split
    // by rows along the mesh's last axis (ZeRO's split, within each
    // position). The step ends with that parameter's reduction and update
    // (a tied embedding's gradient is complete only after the backward's
    // last op), which the split shortens: reduced in parts, a part
    // updated on each device, gathered for the forward and kept for the
    // backward (chooseKeptForBackward). After the others, on their
    // winner's mesh alone: each start is a search of its own.
    const ShardingCostModel &kept = best->getModel();
    if (isAuto && options.starts != "search" &&
        module->hasAttr(parplan::kTrainingAttrName) &&
        !kept.getShares().empty() && kept.getMeshShape().size() >= 2) {
      SbpAssignOptions startOptions = options;
      startOptions.strategy = "replicated";
      auto search = std::make_unique<ShardingSearch>(module, function, kept,
                                                     startOptions, *stages);
      search->startOfAuto();
      search->splitLargestParameter();
      std::string label = bestLabel.empty() || bestLabel.back() != ')'
                              ? bestLabel + " (the largest parameter split)"
                              : bestLabel.substr(0, bestLabel.size() - 1) +
                                    ", the largest parameter split)";
      bool laidOut;
      {
        ScopedDiagnosticHandler quiet(&getContext(),
                                      [](Diagnostic &) { return success(); });
        laidOut = succeeded(search->run(/*giveUpUnfit=*/true));
      }
      if (laidOut)
        keep(std::move(search), std::move(label));
    }
    PARPLAN_DEBUG(kSbpAssignDebugType,
                  debugLine(kSbpAssignDebugType)
                      << "kept start " << best->getStrategy() << " (step "
                      << best->getStepTime() << " s) of " << others.size() + 1
                      << " laid out\n");
    best->annotate(options.strategy, bestLabel, others);
    if (!stages->names.empty())
      return;
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    const ShardingCostModel &chosen = best->getModel();
    ArrayAttr shares;
    if (!chosen.getShares().empty()) {
      SmallVector<Attribute> lists;
      for (const std::vector<int64_t> &weights : chosen.getShares())
        lists.push_back(builder.getDenseI64ArrayAttr(weights));
      shares = builder.getArrayAttr(lists);
    }
    sbp::MeshOp::create(builder, module.getLoc(), "mesh",
                        builder.getDenseI64ArrayAttr(chosen.getMeshShape()),
                        DenseI64ArrayAttr(), shares);
  }
};

} // namespace
