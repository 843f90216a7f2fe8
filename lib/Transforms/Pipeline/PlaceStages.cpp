//===- PlaceStages.cpp - ops on the meshes of pipeline stages -------------===//
//
// The stages come from the annotations file's `stages` (Whale's `stage`:
// meshes over disjoint devices and the nodes that run on each), or, with
// the `stages` option, from an even cut of the mesh and of the forward
// pass's layers. This pass declares each stage's sbp.mesh and puts every
// op of @main on one of them (`sbp.stage = @mesh`): a node the stage names
// is on it; a backward op has its forward node's name and an optimizer
// update its parameter's, so a stage takes its nodes' whole training step.
// Ops no stage names (constants, the loss's seed, inputs) follow their
// data: a forward op reading staged values goes on the latest of their
// stages, a backward op on the earliest, and what is left on the earliest
// stage of its users.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Pipeline/Passes.h"

#include "parplan/Cost/Annotations.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNInterfaces.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Schedule/Pipeline.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"
#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <map>
#include <set>

namespace parplan {
#define GEN_PASS_DEF_PLACESTAGES
#include "parplan/Transforms/Pipeline/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {

/// The stages of a module: each one's mesh, and which named nodes it runs.
struct Placement {
  struct Stage {
    std::string mesh;
    cost::DeviceMesh devices;
    /// Where a stage's errors point: the annotations entry, or the option.
    std::string location;
    /// Placed by the option: the layers (runs) of its cut, and whether the
    /// model's head is among them.
    int64_t layers = 0;
    bool head = false;
    /// The layers of which its cut gave it a part, the rest to a
    /// neighbour.
    std::vector<std::string> layerParts;
  };
  std::vector<Stage> stages;
  /// The annotations' stages, whose globs name nodes; empty when placed
  /// by the option.
  const std::vector<StagePin> *pins = nullptr;
  /// Placed by the option: the virtual stage of each forward node, by
  /// name (chunk * stages + stage).
  llvm::StringMap<size_t> stageOfName;

  /// The stages naming `name`; two only from conflicting globs.
  SmallVector<size_t, 1> stagesNaming(StringRef name) const {
    SmallVector<size_t, 1> named;
    if (name.empty())
      return named;
    if (pins) {
      for (size_t s = 0; s < pins->size(); ++s)
        if ((*pins)[s].matches(name))
          named.push_back(s);
    } else if (auto found = stageOfName.find(name);
               found != stageOfName.end()) {
      named.push_back(found->second);
    }
    return named;
  }
};

/// The forward pass of `function` in program order, cut into its layers'
/// runs. A layer is the parameters of one numbered prefix
/// ("transformer.h.3"), or, in a model without numbers, of one module
/// ("fc1" of "fc1.weight"); a parameter outside every layer (an embedding
/// or a mask that several layers read) is in none. A computing op that
/// reads a layer's parameter (or a value computed from parameters alone,
/// a transposed or cast weight) for the first time starts that layer's
/// run; any other computing op is in the latest run of its operands, or
/// its layer's. Ops in no run (those before the first layer, reading
/// sources only) are left to the data-flow rules.
struct LayerRuns {
  std::vector<SmallVector<Operation *>> runs;
  std::vector<double> flops;
  /// Each run's layer ("transformer.h.3"; empty for the head). After
  /// cutAtNarrowPoints a layer may have several runs, one after another.
  std::vector<std::string> layers;
  /// Whether the last run is the model's head (cutOffHead), not a layer.
  bool head = false;
  size_t layerCount() const { return runs.size() - (head ? 1 : 0); }
  /// Per parameter the forward reads, the first run reading it (0 for one
  /// read before the first layer): its stage, and its update's.
  DenseMap<Operation *, size_t> firstRunOfParameter;
  /// Values computed from parameters alone (a parameter, its transpose or
  /// cast), with the parameter they come from.
  DenseMap<Value, Operation *> weightParameter;
};

double flopsOf(Operation &op) {
  if (auto shardable = dyn_cast<nn::ShardableOpInterface>(op))
    if (FailureOr<OpCost> opCost = shardable.getCost(); succeeded(opCost))
      return opCost->flops;
  return 0;
}

/// Cuts the model's head off the last layer's run, as a run of its own: the
/// ops after the last layer's own (a final norm, a language model's
/// projection onto its vocabulary, the loss), when one of them reads
/// weights of no layer. A tied or large head weighs as much as a few
/// layers; as a run of its own, a pipeline may give it a stage alone (on
/// devices of mixed types, a slower stage) where it would otherwise
/// weigh on the stage of the last layer.
void cutOffHead(LayerRuns &cut, const DenseMap<size_t, size_t> &lastOfLayer,
                const DenseSet<Operation *> &readsLayerless) {
  const DenseMap<Value, Operation *> &weightParameter = cut.weightParameter;
  if (cut.runs.empty())
    return;
  size_t last = cut.runs.size() - 1;
  SmallVector<Operation *> &ops = cut.runs[last];
  // The head starts at the first op after the layer's own weights that
  // reads weights of no layer; the ops before it (the layer's residual
  // add) stay in the layer.
  size_t layerEnd = lastOfLayer.lookup(last);
  if (layerEnd == 0)
    return;
  auto first =
      std::find_if(ops.begin() + std::min(layerEnd, ops.size()), ops.end(),
                   [&](Operation *op) { return readsLayerless.contains(op); });
  if (first == ops.end())
    return;
  SmallVector<Operation *> head(first, ops.end());
  ops.erase(first, ops.end());
  double flops = 0;
  for (Operation *op : head)
    flops += flopsOf(*op);
  cut.flops[last] -= flops;
  // A parameter the last layer does not read (the final norm's) is the
  // head's.
  DenseSet<Operation *> readByLast;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (Operation *parameter = weightParameter.lookup(operand))
        readByLast.insert(parameter);
  for (auto &[parameter, run] : cut.firstRunOfParameter)
    if (run == last && !readByLast.contains(parameter))
      run = last + 1;
  cut.runs.push_back(std::move(head));
  cut.flops.push_back(flops);
  cut.layers.emplace_back();
  cut.head = true;
}

/// `forward`: a training step's forward ops (null: every op is).
LayerRuns cutIntoLayerRuns(func::FuncOp function,
                           const DenseSet<Operation *> *forward) {
  auto inForward = [&](Operation &op) {
    return !forward || forward->contains(&op);
  };
  Block &body = function.getBody().front();
  bool numbered = false;
  for (Operation &op : body.without_terminator())
    if (auto param = dyn_cast<nn::ParamOp>(op); param && inForward(op))
      numbered |= !nn::layerKey(param.getName()).empty();
  auto layerOf = [&](StringRef name) {
    return numbered ? nn::layerKey(name) : name.rsplit('.').first.str();
  };
  LayerRuns cut;
  // Values computed from parameters alone, with their layer ("" for none)
  // and the parameter they come from.
  DenseMap<Value, std::string> weightLayer;
  DenseMap<Value, Operation *> &weightParameter = cut.weightParameter;
  llvm::StringMap<size_t> runOfLayer;
  DenseMap<Operation *, size_t> runOf;
  // Per run, how many of its ops lead up to its last one reading its
  // layer's weights; the ops reading weights of no layer.
  DenseMap<size_t, size_t> lastOfLayer;
  DenseSet<Operation *> readsLayerless;
  for (Operation &op : body.without_terminator()) {
    if (!inForward(op))
      continue;
    if (auto param = dyn_cast<nn::ParamOp>(op)) {
      weightLayer[param.getResult()] = layerOf(param.getName());
      weightParameter[param.getResult()] = param;
      continue;
    }
    if (isSourceOp(&op))
      continue;
    Operation *parameter = nullptr;
    std::string layer;
    bool weightsOnly = true, readsWeight = false;
    std::optional<size_t> latest;
    for (Value operand : op.getOperands()) {
      if (auto weight = weightLayer.find(operand);
          weight != weightLayer.end()) {
        readsWeight = true;
        if (layer.empty())
          layer = weight->second;
        if (!parameter)
          parameter = weightParameter.lookup(operand);
        continue;
      }
      Operation *def = operand.getDefiningOp();
      if (!def || !isa<nn::ConstantOp>(def))
        weightsOnly = false;
      if (auto run = runOf.find(def); def && run != runOf.end())
        latest = std::max(latest.value_or(0), run->second);
    }
    if (weightsOnly && readsWeight) {
      for (Value result : op.getResults()) {
        weightLayer[result] = layer;
        weightParameter[result] = parameter;
      }
      continue;
    }
    std::optional<size_t> run;
    auto known = layer.empty() ? runOfLayer.end() : runOfLayer.find(layer);
    if (!layer.empty() && known == runOfLayer.end()) {
      run = cut.runs.size();
      runOfLayer[layer] = *run;
      cut.runs.emplace_back();
      cut.flops.push_back(0);
      cut.layers.push_back(layer);
    } else if (latest && known != runOfLayer.end()) {
      // A layer's op that reads an earlier run's output (BERT's key and
      // value projections read the previous layer's, after the query's
      // opened the layer) stays in its layer; a weight read again later
      // (a tied head) follows the activations to the later run.
      run = std::max(*latest, known->second);
    } else if (latest) {
      run = latest;
    } else if (known != runOfLayer.end()) {
      run = known->second;
    }
    for (Value operand : op.getOperands())
      if (Operation *read = weightParameter.lookup(operand)) {
        auto [first, inserted] =
            cut.firstRunOfParameter.try_emplace(read, run.value_or(0));
        if (!inserted)
          first->second = std::min(first->second, run.value_or(0));
      }
    if (!run)
      continue;
    runOf[&op] = *run;
    cut.runs[*run].push_back(&op);
    if (!layer.empty())
      lastOfLayer[*run] = cut.runs[*run].size();
    else if (readsWeight)
      readsLayerless.insert(&op);
    cut.flops[*run] += flopsOf(op);
  }
  if (numbered)
    cutOffHead(cut, lastOfLayer, readsLayerless);
  return cut;
}

/// `cut` with each layer's run cut again wherever no more bytes of the
/// forward's values cross than at the layer's start (in a transformer, the
/// residual stream after attention's add: what crosses a layer boundary
/// crosses there too). A stage may then end inside a layer, which balances
/// stages of different speeds, or more stages than layers divide evenly,
/// finer than whole layers. A run whose ops interleave with another's, and
/// the head, stay whole; every part computes.
LayerRuns cutAtNarrowPoints(const LayerRuns &cut, func::FuncOp function,
                            const DenseSet<Operation *> *forward) {
  // The forward's computing ops in program order (not its sources nor
  // what computes from parameters alone), and the bytes crossing a cut
  // before each: a value crosses from its op to its last forward reader.
  Block &body = function.getBody().front();
  std::vector<Operation *> order;
  DenseMap<Operation *, size_t> position;
  for (Operation &op : body.without_terminator()) {
    if ((forward && !forward->contains(&op)) || isSourceOp(&op) ||
        isa<nn::ParamOp>(op) ||
        (op.getNumResults() > 0 &&
         cut.weightParameter.contains(op.getResult(0))))
      continue;
    position[&op] = order.size();
    order.push_back(&op);
  }
  std::vector<double> crossing(order.size() + 2, 0);
  for (size_t p = 0; p < order.size(); ++p)
    for (Value result : order[p]->getResults()) {
      if (!isa<ShapedType>(result.getType()) ||
          !cast<ShapedType>(result.getType()).hasStaticShape())
        continue;
      size_t last = p;
      for (Operation *user : result.getUsers())
        if (Operation *top = body.findAncestorOpInBlock(*user))
          if (auto found = position.find(top); found != position.end())
            last = std::max(last, found->second);
      double bytes = static_cast<double>(nn::tensorBytes(result.getType()));
      crossing[p + 1] += bytes;
      crossing[last + 1] -= bytes;
    }
  for (size_t c = 1; c < crossing.size(); ++c)
    crossing[c] += crossing[c - 1];
  LayerRuns fine;
  fine.head = cut.head;
  fine.weightParameter = cut.weightParameter;
  std::vector<size_t> firstPartOfRun;
  for (size_t r = 0; r < cut.runs.size(); ++r) {
    firstPartOfRun.push_back(fine.runs.size());
    ArrayRef<Operation *> ops = cut.runs[r];
    SmallVector<size_t> cuts{0};
    bool layer = !(cut.head && r + 1 == cut.runs.size());
    size_t start = ops.empty() ? 0 : position.lookup(ops.front());
    bool contiguous = layer && !ops.empty() &&
                      llvm::all_of(llvm::enumerate(ops), [&](auto indexed) {
                        auto found = position.find(indexed.value());
                        return found != position.end() &&
                               found->second == start + indexed.index();
                      });
    double atStart = contiguous ? crossing[start] : 0;
    double since = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i > 0 && atStart > 0 && since > 0 && crossing[start + i] <= atStart) {
        cuts.push_back(i);
        since = 0;
      }
      since += flopsOf(*ops[i]);
    }
    // The last part computes too, or joins the one before it.
    if (cuts.size() > 1 && since <= 0)
      cuts.pop_back();
    cuts.push_back(ops.size());
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      fine.runs.emplace_back(ops.begin() + cuts[k], ops.begin() + cuts[k + 1]);
      double flops = 0;
      for (Operation *op : fine.runs.back())
        flops += flopsOf(*op);
      fine.flops.push_back(flops);
      fine.layers.push_back(cut.layers[r]);
    }
  }
  // A parameter on the first part reading it.
  for (auto [parameter, run] : cut.firstRunOfParameter) {
    size_t part = firstPartOfRun[run];
    size_t end =
        run + 1 < cut.runs.size() ? firstPartOfRun[run + 1] : fine.runs.size();
    for (size_t p = part; p < end; ++p)
      if (llvm::any_of(fine.runs[p], [&](Operation *op) {
            return llvm::any_of(op->getOperands(), [&](Value operand) {
              return cut.weightParameter.lookup(operand) == parameter;
            });
          })) {
        part = p;
        break;
      }
    fine.firstRunOfParameter[parameter] = part;
  }
  return fine;
}

struct PlaceStagesPass : parplan::impl::PlaceStagesBase<PlaceStagesPass> {
  using PlaceStagesBase::PlaceStagesBase;

  void runOnOperation() override;

private:
  /// stages= and chunks= against each other and the annotations' stages.
  LogicalResult checkOptions(ModuleOp module,
                             const std::optional<Annotations> &annotations,
                             bool pinned);
  /// The option's stages: the mesh cut into blocks, the layers into runs.
  /// `forward`: a training step's forward ops (null: every op is).
  LogicalResult placeEvenly(ModuleOp module, func::FuncOp function,
                            const DenseSet<Operation *> *forward,
                            Placement &placement);
  FailureOr<SmallVector<FlatSymbolRefAttr>>
  declareMeshes(ModuleOp module, const Placement &placement);
  LogicalResult
  assignStages(ModuleOp module, func::FuncOp function,
               const std::optional<DenseSet<Operation *>> &forward,
               const Placement &placement,
               DenseMap<Operation *, size_t> &stageOf);
  LogicalResult
  checkStageOrder(func::FuncOp function,
                  const std::optional<DenseSet<Operation *>> &forward,
                  const Placement &placement,
                  DenseMap<Operation *, size_t> &stageOf);
  void copyUnchangingSources(func::FuncOp function,
                             DenseMap<Operation *, size_t> &stageOf,
                             size_t stageCount);
  void sumWhereComputed(func::FuncOp function,
                        DenseMap<Operation *, size_t> &stageOf);
  LogicalResult checkChunkFlow(ModuleOp module, func::FuncOp function,
                               const Placement &placement,
                               DenseMap<Operation *, size_t> &stageOf);
};

/// An op as messages name it: its node, or its op name.
std::string describeOp(Operation *op) {
  std::string name = nn::nodeName(op);
  return name.empty() ? op->getName().getStringRef().str() : name;
}

/// Each virtual stage's speed at the layers' work, for their partition:
/// its devices' FLOP/s (the cost model's, of the matrix products' element
/// type), a mesh of mixed types at its slowest member's, as even shares
/// run it. On a cluster of one device type, all alike.
std::vector<double> stageSpeeds(const cost::Cluster &machines,
                                func::FuncOp function,
                                ArrayRef<cost::DeviceMesh> blocks,
                                int64_t chunks) {
  Type elementType = Float32Type::get(function.getContext());
  function.walk([&](nn::MatMulOp matmul) {
    elementType = getElementTypeOrSelf(matmul.getType());
    return WalkResult::interrupt();
  });
  std::vector<double> speeds;
  for (int64_t c = 0; c < chunks; ++c)
    for (const cost::DeviceMesh &block : blocks) {
      ShardingCostModel model =
          ShardingCostModel::onMesh(machines, block, /*mixedPrecision=*/false);
      double seconds = model.computeTime(1e12, 0, elementType);
      speeds.push_back(seconds > 0 && std::isfinite(seconds)
                           ? static_cast<double>(block.size()) / seconds
                           : 1.0);
    }
  return speeds;
}

LogicalResult PlaceStagesPass::placeEvenly(ModuleOp module,
                                           func::FuncOp function,
                                           const DenseSet<Operation *> *forward,
                                           Placement &placement) {
  int64_t count = stages;
  int64_t virtualCount = count * chunks;
  const cost::Cluster *machines =
      getAnalysis<ClusterAnalysis>().require(module, "place-stages");
  if (!machines)
    return failure();
  std::string error;
  std::optional<std::vector<int64_t>> shape =
      mesh.empty() ? cost::defaultMeshShape(*machines)
                   : cost::parseMeshShape(mesh, error);
  std::optional<cost::DeviceMesh> whole;
  if (shape)
    whole = cost::makeMesh(*machines, *shape, error);
  std::optional<std::vector<cost::DeviceMesh>> blocks;
  if (whole)
    blocks = cost::splitMesh(*whole, count, error);
  if (!blocks)
    return function.emitError() << "stages=" << count << ": " << error;
  LayerRuns cut = cutIntoLayerRuns(function, forward);
  if (cut.runs.size() < static_cast<size_t>(virtualCount))
    return function.emitError()
           << "stages=" << count
           << (chunks > 1 ? " chunks=" + std::to_string(chunks) : "")
           << ": @main has " << cut.layerCount() << " layer"
           << (cut.layerCount() == 1 ? "" : "s")
           << (cut.head ? " and a head" : "") << " to place, fewer than the "
           << (chunks > 1 ? "stages times the chunks" : "stages");
  // A model without flops (data movement only) is cut by op count.
  double total = 0;
  for (double flops : cut.flops)
    total += flops;
  if (total <= 0)
    for (size_t r = 0; r < cut.runs.size(); ++r)
      cut.flops[r] = static_cast<double>(cut.runs[r].size());
  std::vector<double> speeds =
      evenShares ? std::vector<double>()
                 : stageSpeeds(*machines, function, *blocks, chunks);
  std::vector<size_t> firsts = schedule::partitionRuns(
      cut.flops, static_cast<size_t>(virtualCount), speeds);
  // On stages of different speeds whole layers may balance badly (a slow
  // stage takes one layer too few or one too many). Where a cut inside
  // layers shortens the longest stage by FLOPs over speed, cut-inside-layers
  // makes it; without, the module says one exists (sbp.finer_cut), for the
  // pipeline search to try: the FLOPs do not see a stage's once-per-step
  // work, which its trial prices. Stages alike keep whole layers, as
  // Megatron-LM's.
  bool alike = llvm::all_of(
      speeds, [&](double speed) { return speed == speeds.front(); });
  if (total > 0 && !alike) {
    LayerRuns fine = cutAtNarrowPoints(cut, function, forward);
    if (fine.runs.size() > cut.runs.size()) {
      std::vector<size_t> fineFirsts = schedule::partitionRuns(
          fine.flops, static_cast<size_t>(virtualCount), speeds);
      if (schedule::longestRun(fine.flops, fineFirsts, speeds) <
          schedule::longestRun(cut.flops, firsts, speeds) * (1 - 1e-6)) {
        if (cutInsideLayers) {
          cut = std::move(fine);
          firsts = std::move(fineFirsts);
        } else {
          module->setAttr(parplan::kFinerCutAttrName,
                          UnitAttr::get(module.getContext()));
        }
      }
    }
  }
  for (int64_t s = 0; s < count; ++s)
    placement.stages.push_back({"stage" + std::to_string(s), (*blocks)[s],
                                "stages=" + std::to_string(count)});
  auto stageOfRun = [&](size_t run) {
    return static_cast<size_t>(
        std::upper_bound(firsts.begin(), firsts.end(), run) - firsts.begin() -
        1);
  };
  // A layer whose runs went to several stages is a part of each.
  llvm::StringMap<std::set<size_t>> stagesOfLayer;
  for (size_t r = 0; r < cut.runs.size(); ++r)
    if (!(cut.head && r + 1 == cut.runs.size()))
      stagesOfLayer[cut.layers[r]].insert(stageOfRun(r) %
                                          static_cast<size_t>(count));
  for (size_t r = 0; r < cut.runs.size(); ++r) {
    Placement::Stage &stage =
        placement.stages[stageOfRun(r) % static_cast<size_t>(count)];
    if (cut.head && r + 1 == cut.runs.size())
      stage.head = true;
    else if (stagesOfLayer[cut.layers[r]].size() > 1) {
      if (!llvm::is_contained(stage.layerParts, cut.layers[r]))
        stage.layerParts.push_back(cut.layers[r]);
    } else if (r == 0 || cut.layers[r] != cut.layers[r - 1]) {
      ++stage.layers;
    }
    for (Operation *op : cut.runs[r])
      if (std::string name = nn::nodeName(op); !name.empty())
        placement.stageOfName.try_emplace(name, stageOfRun(r));
  }
  // A parameter, and so its update (which carries the location of the
  // parameter's node), on the stage that first reads it.
  for (Operation &op : function.getBody().front())
    if (auto found = cut.firstRunOfParameter.find(&op);
        found != cut.firstRunOfParameter.end())
      for (const std::string &name : {nn::nodeName(&op), nn::locationName(&op)})
        if (!name.empty())
          placement.stageOfName.try_emplace(name, stageOfRun(found->second));
  return success();
}

void PlaceStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::string error;
  std::optional<Annotations> annotations = carriedAnnotations(module, error);
  if (!annotations && !error.empty()) {
    module.emitError() << error;
    return signalPassFailure();
  }
  bool pinned = annotations && !annotations->stages.empty();
  if (failed(checkOptions(module, annotations, pinned)))
    return signalPassFailure();
  if (!pinned && stages <= 1)
    return;
  auto function = module.lookupSymbol<func::FuncOp>("main");
  if (!function || function.isExternal()) {
    module.emitError() << "place-stages places @main; the module has none";
    return signalPassFailure();
  }

  // The annotations' `balance: even`: Whale's switch to even shares.
  if (annotations && annotations->evenShares)
    evenShares = true;
  // In a training step, the forward pass's ops: the layers are cut from
  // them, and data goes forward through the stages and gradients back.
  std::optional<DenseSet<Operation *>> forward;
  if (parplan::isStep(module))
    forward = forwardPassOps(function);
  Placement placement;
  if (pinned) {
    placement.pins = &annotations->stages;
    for (const StagePin &pin : annotations->stages)
      placement.stages.push_back(
          {pin.mesh, cost::DeviceMesh{pin.shape, pin.devices}, pin.location});
  } else if (failed(placeEvenly(module, function, forward ? &*forward : nullptr,
                                placement))) {
    return signalPassFailure();
  }
  FailureOr<SmallVector<FlatSymbolRefAttr>> meshes =
      declareMeshes(module, placement);
  if (failed(meshes))
    return signalPassFailure();
  DenseMap<Operation *, size_t> stageOf;
  if (failed(assignStages(module, function, forward, placement, stageOf)) ||
      failed(checkStageOrder(function, forward, placement, stageOf)))
    return signalPassFailure();
  copyUnchangingSources(function, stageOf, placement.stages.size());
  sumWhereComputed(function, stageOf);
  if (failed(checkChunkFlow(module, function, placement, stageOf)))
    return signalPassFailure();
  Block &body = function.getBody().front();
  size_t stageCount = placement.stages.size();
  Builder attrs(module.getContext());
  for (Operation &op : body.without_terminator()) {
    size_t stage = stageOf[&op];
    op.setAttr(parplan::kStageAttrName, (*meshes)[stage % stageCount]);
    if (chunks > 1)
      op.setAttr(
          parplan::kChunkAttrName,
          attrs.getI64IntegerAttr(static_cast<int64_t>(stage / stageCount)));
  }
  if (chunks > 1)
    module->setAttr(parplan::kChunksAttrName, attrs.getI64IntegerAttr(chunks));
}

LogicalResult
PlaceStagesPass::checkOptions(ModuleOp module,
                              const std::optional<Annotations> &annotations,
                              bool pinned) {
  if (stages < 0) {
    module.emitError() << "stages=" << static_cast<int64_t>(stages)
                       << ": the number of stages cannot be negative";
    return failure();
  }
  if (chunks < 1 || (chunks > 1 && (pinned || stages <= 1))) {
    module.emitError() << "chunks=" << static_cast<int64_t>(chunks) << ": "
                       << (chunks < 1 ? "a stage holds at least one chunk"
                           : pinned ? "the annotations' stages hold one chunk "
                                      "each; cut the layers with stages=N"
                                    : "chunks are cut from stages=N, N > 1");
    return failure();
  }
  if (pinned && stages > 1) {
    module.emitError() << "stages=" << static_cast<int64_t>(stages)
                       << ": the annotations place stages too ("
                       << annotations->stages.front().location
                       << "); give one of the two";
    return failure();
  }
  return success();
}

/// The stages' meshes, declared at the top of the module.
FailureOr<SmallVector<FlatSymbolRefAttr>>
PlaceStagesPass::declareMeshes(ModuleOp module, const Placement &placement) {
  OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
  SmallVector<FlatSymbolRefAttr> meshes;
  for (const Placement::Stage &stage : placement.stages) {
    if (module.lookupSymbol(stage.mesh)) {
      module.emitError() << stage.location << ": stage '" << stage.mesh
                         << "': the module already has a symbol @" << stage.mesh
                         << "; place-stages runs once";
      return failure();
    }
    auto mesh = sbp::MeshOp::create(
        builder, module.getLoc(), stage.mesh,
        builder.getDenseI64ArrayAttr(stage.devices.shape),
        builder.getDenseI64ArrayAttr(stage.devices.devices), ArrayAttr());
    if (stage.layers > 0)
      mesh->setAttr(parplan::kStageLayersAttrName,
                    builder.getI64IntegerAttr(stage.layers));
    if (stage.head)
      mesh->setAttr(parplan::kStageHeadAttrName, builder.getUnitAttr());
    if (!stage.layerParts.empty())
      mesh->setAttr(parplan::kStageLayerPartsAttrName,
                    builder.getStrArrayAttr(
                        llvm::to_vector_of<StringRef>(stage.layerParts)));
    meshes.push_back(FlatSymbolRefAttr::get(module.getContext(), stage.mesh));
  }
  return meshes;
}

/// Each op's virtual stage, from the stages that name its node and then
/// the data flow; an op reading nothing staged goes with its first reader.
LogicalResult PlaceStagesPass::assignStages(
    ModuleOp module, func::FuncOp function,
    const std::optional<DenseSet<Operation *>> &forward,
    const Placement &placement, DenseMap<Operation *, size_t> &stageOf) {
  Block &body = function.getBody().front();
  // Each op's virtual stage, chunk * stages + stage (the stage itself
  // with one chunk): data goes forward through them, in the order the
  // interleaved schedule runs them.
  size_t stageCount = placement.stages.size();
  size_t virtualCount = stageCount * static_cast<size_t>(chunks);
  std::vector<bool> used(stageCount, false);
  // An op without a node name that carries the source position of a
  // placed op goes with it: nn-autodiff gives an update its parameter's
  // location and a backward op the location of the forward op it
  // differentiates, which in IR read from text are positions in the file
  // rather than node names.
  DenseMap<Location, size_t> stageOfPosition;
  auto isPosition = [](Location loc) {
    auto position = dyn_cast<FileLineColLoc>(loc);
    return position && position.getLine() > 0;
  };
  // The stages that name a node, then the data flow forward.
  for (Operation &op : body.without_terminator()) {
    std::string name = nn::nodeName(&op);
    SmallVector<size_t, 1> named = placement.stagesNaming(name);
    if (named.size() > 1) {
      const Placement::Stage &first = placement.stages[named[0]];
      const Placement::Stage &second = placement.stages[named[1]];
      op.emitError() << second.location << ": node '" << name
                     << "' is on stage '" << first.mesh << "' and on stage '"
                     << second.mesh << "' (" << first.location << ")";
      return failure();
    }
    std::optional<size_t> matched;
    if (!named.empty()) {
      matched = named.front();
      used[*matched % stageCount] = true;
    } else if (name.empty() && isPosition(op.getLoc())) {
      if (auto found = stageOfPosition.find(op.getLoc());
          found != stageOfPosition.end())
        matched = found->second;
    }
    // Data goes forward through the stages and gradients back: a forward
    // op follows its latest operand, a backward op its earliest.
    bool backward = forward && !forward->contains(&op);
    if (!matched)
      for (Value operand : op.getOperands())
        if (Operation *producer = operand.getDefiningOp())
          if (auto found = stageOf.find(producer); found != stageOf.end())
            matched = !matched   ? found->second
                      : backward ? std::min(*matched, found->second)
                                 : std::max(*matched, found->second);
    if (matched) {
      stageOf[&op] = *matched;
      if (isPosition(op.getLoc()))
        stageOfPosition.try_emplace(op.getLoc(), *matched);
    }
  }
  for (size_t s = 0; s < stageCount; ++s)
    if (!used[s]) {
      module.emitError() << placement.stages[s].location << ": stage '"
                         << placement.stages[s].mesh
                         << "' matches no node of @main";
      return failure();
    }
  // What reads nothing staged goes where its first reader is.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (stageOf.count(&op))
      continue;
    std::optional<size_t> earliest;
    for (Operation *user : op.getUsers())
      if (auto found = stageOf.find(user); found != stageOf.end())
        earliest = std::min(earliest.value_or(virtualCount), found->second);
    stageOf[&op] = earliest.value_or(0);
  }
  return success();
}

/// Stages run in their listed order: a forward op on one stage reading
/// what a later stage computes would wait for the micro-batch it feeds.
LogicalResult PlaceStagesPass::checkStageOrder(
    func::FuncOp function, const std::optional<DenseSet<Operation *>> &forward,
    const Placement &placement, DenseMap<Operation *, size_t> &stageOf) {
  Block &body = function.getBody().front();
  size_t stageCount = placement.stages.size();
  for (Operation &op : body.without_terminator()) {
    if (forward && !forward->contains(&op))
      continue;
    size_t stage = stageOf[&op];
    for (Value operand : op.getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || stageOf[producer] <= stage)
        continue;
      const Placement::Stage &early = placement.stages[stage % stageCount];
      const Placement::Stage &late =
          placement.stages[stageOf[producer] % stageCount];
      op.emitError() << early.location << ": stage '" << early.mesh
                     << "' runs '" << describeOp(&op) << "', which reads '"
                     << describeOp(producer) << "' of the later stage '"
                     << late.mesh << "' (" << late.location
                     << "): list the stages in the order of the layers";
      return failure();
    }
  }
  return success();
}

/// A source the step never updates (a frozen parameter such as a mask, a
/// constant, a batch input) holds the same values on every stage, by its
/// name: each other stage reading it gets a copy of its own rather than a
/// move every micro-batch.
void PlaceStagesPass::copyUnchangingSources(
    func::FuncOp function, DenseMap<Operation *, size_t> &stageOf,
    size_t stageCount) {
  Block &body = function.getBody().front();
  llvm::StringSet<> updated;
  for (unsigned i = 0; i < function.getNumResults(); ++i)
    if (auto name = function.getResultAttrOfType<StringAttr>(
            i, parplan::kUpdatesAttrName))
      updated.insert(name.getValue());
  SmallVector<Operation *> sources;
  for (Operation &op : body.without_terminator())
    if (isSourceOp(&op))
      if (auto param = dyn_cast<nn::ParamOp>(op);
          !param || !updated.contains(param.getName()))
        sources.push_back(&op);
  OpBuilder copier(function.getContext());
  for (Operation *source : sources) {
    size_t own = stageOf[source] % stageCount;
    // The uses on each other mesh, and the earliest virtual stage there.
    std::map<size_t, std::pair<size_t, SmallVector<OpOperand *>>> elsewhere;
    for (OpOperand &use : source->getResult(0).getUses()) {
      Operation *user = use.getOwner();
      if (isa<func::ReturnOp>(user) || stageOf[user] % stageCount == own)
        continue;
      auto [entry, inserted] =
          elsewhere.try_emplace(stageOf[user] % stageCount, stageOf[user],
                                SmallVector<OpOperand *>());
      entry->second.first = std::min(entry->second.first, stageOf[user]);
      entry->second.second.push_back(&use);
    }
    copier.setInsertionPointAfter(source);
    for (auto &[mesh, earliestAndUses] : elsewhere) {
      Operation *copy = copier.clone(*source);
      stageOf[copy] = earliestAndUses.first;
      for (OpOperand *use : earliestAndUses.second)
        use->set(copy->getResult(0));
    }
  }
}

/// A gradient with parts computed on several stages (a weight two stages
/// read, as a tied embedding is by the first and the last) is summed over
/// the micro-batches on each of them, and the sums are added once after
/// the micro-batches (Megatron-LM's embedding group): summed where the
/// parameter is, every micro-batch's part would move between the stages.
/// The rewrite goes through the add of the parts and the casts back to
/// the precision of the sum, which are linear, as the sum over
/// micro-batches is.
void PlaceStagesPass::sumWhereComputed(func::FuncOp function,
                                       DenseMap<Operation *, size_t> &stageOf) {
  SmallVector<nn::AccumulateOp> sums(
      function.getBody().front().getOps<nn::AccumulateOp>());
  for (nn::AccumulateOp sum : sums) {
    SmallVector<nn::CastOp> casts; // from the sum back to the parts' add
    Value value = sum.getInput();
    while (auto cast = value.getDefiningOp<nn::CastOp>()) {
      if (!cast->hasOneUse())
        break;
      casts.push_back(cast);
      value = cast.getInput();
    }
    // The parts: the leaves of a tree of adds used once, all of one type.
    Type type = value.getType();
    SmallVector<nn::AddOp> adds;
    SmallVector<Value> parts;
    SmallVector<Value> pending = {value};
    while (!pending.empty()) {
      Value next = pending.pop_back_val();
      auto add = next.getDefiningOp<nn::AddOp>();
      if (add && add->hasOneUse() && add.getType() == type &&
          add.getLhs().getType() == type && add.getRhs().getType() == type) {
        adds.push_back(add);
        pending.push_back(add.getRhs());
        pending.push_back(add.getLhs());
      } else {
        parts.push_back(next);
      }
    }
    // The parts by the virtual stage computing them.
    if (llvm::any_of(parts, [](Value part) { return !part.getDefiningOp(); }))
      continue;
    std::map<size_t, SmallVector<Value>> partsByStage;
    for (Value part : parts)
      partsByStage[stageOf[part.getDefiningOp()]].push_back(part);
    if (partsByStage.size() == 1 && partsByStage.begin()->first == stageOf[sum])
      continue;
    OpBuilder b(sum);
    SmallVector<Value> stageSums;
    for (auto &[stage, stageParts] : partsByStage) {
      Operation *last = stageParts.front().getDefiningOp();
      for (Value part : stageParts)
        if (last->isBeforeInBlock(part.getDefiningOp()))
          last = part.getDefiningOp();
      b.setInsertionPointAfter(last);
      auto place = [&](Operation *op) {
        stageOf[op] = stage;
        return op->getResult(0);
      };
      Value partSum = stageParts.front();
      for (Value part : llvm::drop_begin(stageParts))
        partSum = place(nn::AddOp::create(b, part.getLoc(), partSum, part));
      for (nn::CastOp cast : llvm::reverse(casts)) {
        Operation *copy = b.clone(*cast);
        copy->setOperand(0, partSum);
        partSum = place(copy);
      }
      stageSums.push_back(
          place(nn::AccumulateOp::create(b, sum.getLoc(), partSum)));
    }
    b.setInsertionPoint(sum);
    Value total = stageSums.front();
    for (Value stageSum : llvm::drop_begin(stageSums)) {
      auto add = nn::AddOp::create(b, sum.getLoc(), total, stageSum);
      stageOf[add] = stageOf[sum];
      total = add.getResult();
    }
    sum.getResult().replaceAllUsesWith(total);
    stageOf.erase(sum);
    sum->erase();
    for (nn::CastOp cast : casts) {
      stageOf.erase(cast);
      cast->erase();
    }
    for (nn::AddOp add : adds) {
      stageOf.erase(add);
      add->erase();
    }
  }
}

/// A stage runs a micro-batch's chunks at different times, each keeping
/// only what its own backward reads: a value computed per micro-batch may
/// go from one chunk to another only through another stage (a move).
LogicalResult
PlaceStagesPass::checkChunkFlow(ModuleOp module, func::FuncOp function,
                                const Placement &placement,
                                DenseMap<Operation *, size_t> &stageOf) {
  if (chunks <= 1)
    return success();
  Block &body = function.getBody().front();
  size_t stageCount = placement.stages.size();
  DenseSet<Operation *> once;
  if (microBatchCount(module) > 1) {
    FailureOr<DenseSet<Operation *>> after = opsAfterMicroBatches(function);
    if (failed(after))
      return failure();
    once = std::move(*after);
  }
  for (Operation &op : body.without_terminator()) {
    if (once.contains(&op))
      continue;
    size_t stage = stageOf[&op];
    for (Value operand : op.getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || isSourceOp(producer) || once.contains(producer))
        continue;
      size_t from = stageOf[producer];
      if (from == stage || from % stageCount != stage % stageCount)
        continue;
      op.emitError() << "chunks=" << static_cast<int64_t>(chunks) << ": '"
                     << describeOp(&op) << "' (chunk " << stage / stageCount
                     << " of stage '"
                     << placement.stages[stage % stageCount].mesh
                     << "') reads '" << describeOp(producer) << "' of chunk "
                     << from / stageCount
                     << " on the same stage: the stage runs a micro-batch's "
                        "chunks at different times, so a value goes from "
                        "chunk to chunk through another stage only";
      return failure();
    }
  }
  return success();
}

} // namespace
