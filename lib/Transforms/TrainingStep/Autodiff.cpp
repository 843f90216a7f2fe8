//===- Autodiff.cpp - a forward nn program to a training step -------------===//
//
// Reverse-mode differentiation on logical shapes. The backward program is
// plain nn ops (and the gradient ops of NNTrainingOps.td), so everything
// downstream (sharding search, boxing, lowering, the interpreter) treats
// forward and backward alike: gradient synchronization is whatever boxing
// the layouts of a parameter and of its gradient require.
//
// Recomputation clones groups of forward ops into the backward program the
// first time a backward rule reads one of their values; the originals then
// die after their forward users, which is where the memory saving comes
// from. docs/training.md describes the rules and policies.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNDecompositions.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Transforms/TrainingStep/Differentiator.h"
#include "parplan/Transforms/TrainingStep/Passes.h"
#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include "parplan/Dialect/AttrNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>

namespace parplan {
#define GEN_PASS_DEF_NNAUTODIFF
#include "parplan/Transforms/TrainingStep/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan::nn;
using parplan::Differentiator;

namespace {

bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

enum class Recompute { None, Selective, Full };

/// The name of a recompute group of an op on parameters alone, which is no
/// layer.
constexpr const char *kParameterCopies = "\n parameter copies";

/// Builds the backward program of one function, op by op in reverse.

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// What an entry of the step's updates is, for errors.
std::string describeUpdate(StringRef update) {
  return update.starts_with("statistic:") ? "as a batch norm's running "
                                            "statistic"
                                          : "by the optimizer";
}

/// A running statistic of a batch norm trained with batch statistics: the
/// parameter it updates and the batch's value of the step.
struct RunningStatistic {
  ParamOp running;
  Value batch;
  double momentum, batchFactor;
  Location loc;
};

/// Replaces every nn.batch_norm of `function` by its training form (the
/// batch's statistics) and returns the running statistics to update, in
/// program order. Fails, naming the node, on a batch of one value per
/// channel (no unbiased variance), as PyTorch does.
FailureOr<SmallVector<RunningStatistic>>
trainBatchNorms(func::FuncOp function) {
  SmallVector<RunningStatistic> statistics;
  SmallVector<BatchNormOp> norms(function.getOps<BatchNormOp>());
  for (BatchNormOp norm : norms) {
    OpBuilder b(norm);
    Location loc = norm.getLoc();
    // Under mixed precision the statistics are computed in fp32, as cuDNN
    // and PyTorch's autocast do: a square of a bf16 or fp16 deviation
    // loses the variance (fp16 overflows past 256). The scale and bias are
    // read from before their low-precision casts.
    Type low = tensorType(norm.getInput()).getElementType();
    bool lowered = !low.isF32() && !low.isF64();
    auto inFp32 = [&](Value value) -> Value {
      if (!lowered)
        return value;
      if (auto cast = value.getDefiningOp<CastOp>();
          cast && tensorType(cast.getInput()).getElementType().isF32())
        return cast.getInput();
      return CastOp::create(b, loc, tensorType(value).clone(b.getF32Type()),
                            value);
    };
    BatchStatistics batch = buildBatchNormWithBatchStatistics(
        b, loc, inFp32(norm.getInput()), inFp32(norm.getScale()),
        inFp32(norm.getBias()), norm.getEpsilon().convertToDouble());
    if (lowered)
      batch.result =
          CastOp::create(b, loc, tensorType(norm.getInput()), batch.result);
    if (batch.count < 2)
      return norm.emitOpError()
             << "normalizes " << batch.count
             << " value per channel: a training step needs more than one "
                "(N x spatial) for the batch's variance; train it with "
                "--batch-norm frozen";
    double momentum = norm.getMomentum().convertToDouble();
    double unbiased =
        static_cast<double>(batch.count) / static_cast<double>(batch.count - 1);
    // The statistics as the op read them, before any low-precision cast:
    // their updates stay in the parameter's type. Constants are not
    // updated.
    if (ParamOp mean = paramBehindCasts(norm.getMean()))
      statistics.push_back({mean, batch.mean, momentum, 1.0, norm.getLoc()});
    if (ParamOp variance = paramBehindCasts(norm.getVariance()))
      statistics.push_back(
          {variance, batch.variance, momentum, unbiased, norm.getLoc()});
    norm.getResult().replaceAllUsesWith(batch.result);
    norm.erase();
  }
  return statistics;
}

struct NNAutodiffPass : parplan::impl::NNAutodiffBase<NNAutodiffPass> {
  using NNAutodiffBase::NNAutodiffBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    NNAutodiffBase::getDependentDialects(registry);
    parplan::registerNNGradients(registry);
  }
  void runOnOperation() override;

private:
  /// What the phases of a step hand on, in the order they fill it.
  struct StepState {
    func::ReturnOp returnOp;
    // The options, checked.
    Recompute policy = Recompute::None;
    Type lowType;
    double decay = 0, lossScaling = 1;
    SmallVector<StringRef> frozenPatterns;
    std::vector<llvm::GlobPattern> frozenGlobs;
    // The forward pass.
    Value loss;
    SmallVector<DropoutOp> dropouts;
    /// The step count's state and this step's count (null without Adam
    /// or dropout).
    Value stepCount, step;
    SmallVector<RunningStatistic> runningStatistics;
    llvm::StringSet<> names;
    SmallVector<ParamOp> trainable;
    SmallVector<Operation *> forward;
    DenseSet<Value> active;
    SmallVector<Attribute> recomputedLayers;
    // What @main returns: the values, and what each updates ("" for the
    // loss, "gradient:P", "statistic:P" or the parameter's name).
    SmallVector<Value> results;
    SmallVector<std::string> updates;
  };

  LogicalResult checkOptions(func::FuncOp function, StepState &state);
  LogicalResult lowerPrecision(func::FuncOp function, Type low);
  FailureOr<Value> buildLoss(func::FuncOp function, Value output);
  /// The step count Adam and dropout read, and dropout's keys.
  LogicalResult addStepCount(func::FuncOp function, StepState &state);
  /// This step's count: the state's count so far, plus one.
  Value countStep(StepState &state, OpBuilder &at, Location loc);
  /// The trainable parameters (`frozen` left out) and the values that
  /// depend on them.
  void findTrainable(func::FuncOp function, StepState &state);
  /// The backward pass, recomputing as `policy` says.
  LogicalResult differentiateStep(StepState &state, Differentiator &backward);
  /// `value` summed over the micro-batches, at `loc` (itself for one).
  Value accumulated(ImplicitLocOpBuilder &b, Value value, Location loc);
  /// Optimizer state `name`, zeros, after `after` (or first).
  FailureOr<Value> zerosParam(func::FuncOp function, StepState &state,
                              Operation *after, RankedTensorType type,
                              const std::string &name);
  /// The loss reported and one update per parameter with a gradient.
  LogicalResult addUpdates(func::FuncOp function, StepState &state,
                           Differentiator &backward);
  LogicalResult addUpdate(func::FuncOp function, StepState &state,
                          ImplicitLocOpBuilder &b, ParamOp param, Value grad);
  void addStatisticUpdates(StepState &state, ImplicitLocOpBuilder &b);
  LogicalResult checkUpdatedOnce(func::FuncOp function, const StepState &state);
  /// @main returns the step's results, each named by what it updates.
  void returnStep(func::FuncOp function, StepState &state,
                  ImplicitLocOpBuilder &b);
  /// nn.training: how the step was built, for the passes after.
  void recordTraining(ModuleOp module, const StepState &state,
                      bool hasBatchNorms);
  /// The groups of forward ops to recompute, each with the layer it is
  /// in (empty outside every layer).
  std::vector<std::pair<std::string, SmallVector<Operation *>>>
  recomputeGroups(ArrayRef<Operation *> forward, const DenseSet<Value> &active,
                  Recompute policy);
  /// Appends to `groups` the ops of `forward` on parameters alone but
  /// `kept`, each a group named kParameterCopies.
  void addParameterCopies(
      ArrayRef<Operation *> forward, const DenseSet<Value> &active,
      const DenseSet<Operation *> &kept,
      std::vector<std::pair<std::string, SmallVector<Operation *>>> &groups);
};

/// The layers of @main: a layer is the ops reading parameters of one
/// numbered prefix (directly or through ops on parameters alone, such as a
/// transposed weight), and the activations computed from them up to the
/// next layer; in forward order, with the ops of each.
std::vector<std::pair<std::string, SmallVector<Operation *>>>
assignLayers(ArrayRef<Operation *> forward, const DenseSet<Value> &active) {
  std::vector<std::pair<std::string, SmallVector<Operation *>>> layers;
  auto isSource = [](Operation *op) {
    return isa<ParamOp, InputOp, ConstantOp>(op);
  };
  const std::string kOutside = "\n outside";
  // The layer key of the parameters a parameter-only value comes from.
  DenseMap<Value, std::string> weightLayer;
  DenseMap<Operation *, std::string> layerOf;
  llvm::StringMap<size_t> layerIndex;
  for (Operation *op : forward) {
    if (auto param = dyn_cast<ParamOp>(op)) {
      if (active.contains(param.getResult())) {
        std::string key = layerKey(param.getName());
        weightLayer[param.getResult()] = key.empty() ? kOutside : key;
      }
      continue;
    }
    if (isSource(op))
      continue;
    std::string weights, inherited;
    bool onWeightsOnly = true, inheritsOutside = false;
    for (Value operand : op->getOperands()) {
      auto weight = weightLayer.find(operand);
      if (weight != weightLayer.end()) {
        if (weights.empty() || weights == kOutside)
          weights = weight->second;
        continue;
      }
      Operation *def = operand.getDefiningOp();
      // Data (token ids, features) makes a value an activation.
      if (!def || isa<InputOp>(def))
        onWeightsOnly = false;
      if (!def || isSource(def) || !active.contains(operand))
        continue;
      onWeightsOnly = false;
      auto it = layerOf.find(def);
      if (it == layerOf.end())
        continue;
      if (it->second == kOutside)
        inheritsOutside = true;
      else if (!it->second.empty())
        inherited = it->second;
    }
    if (onWeightsOnly && !weights.empty()) {
      for (Value result : op->getResults())
        weightLayer[result] = weights;
      continue;
    }
    // Weights decide; an op without weights follows its activations, and
    // joins a layer when any of them is in one (a residual sum).
    std::string layer = !weights.empty()     ? weights
                        : !inherited.empty() ? inherited
                        : inheritsOutside    ? kOutside
                                             : std::string();
    layerOf[op] = layer;
    if (layer.empty() || layer == kOutside)
      continue;
    auto [it, inserted] = layerIndex.try_emplace(layer, layers.size());
    if (inserted)
      layers.emplace_back(layer, SmallVector<Operation *>());
    layers[it->second].second.push_back(op);
  }
  return layers;
}

LogicalResult NNAutodiffPass::lowerPrecision(func::FuncOp function, Type low) {
  // Values that enter in fp32 are cast once where they enter; every op
  // computing in fp32 then computes in the low type. The casts' backward
  // brings each parameter's gradient back to fp32.
  OpBuilder b(function.getContext());
  auto lowered = [&](Type type) -> Type {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && tensor.getElementType().isF32())
      return tensor.clone(low);
    return type;
  };
  for (Operation &op : llvm::make_early_inc_range(function.getOps())) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (isa<ParamOp, InputOp, ConstantOp>(op)) {
      Value value = op.getResult(0);
      if (lowered(value.getType()) == value.getType())
        continue;
      b.setInsertionPointAfter(&op);
      auto cast =
          CastOp::create(b, op.getLoc(), lowered(value.getType()), value);
      value.replaceAllUsesExcept(cast, cast);
      continue;
    }
    for (Value result : op.getResults())
      result.setType(lowered(result.getType()));
  }
  // Results keep the types @main declared until the loss replaces them.
  return success();
}

FailureOr<Value> NNAutodiffPass::buildLoss(func::FuncOp function,
                                           Value output) {
  auto returnOp = cast<func::ReturnOp>(function.front().getTerminator());
  ImplicitLocOpBuilder b(returnOp.getLoc(), returnOp);
  auto type = dyn_cast<RankedTensorType>(output.getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return emitError(returnOp.getLoc())
           << "nn-autodiff: output " << this->output.getValue()
           << " of @main is a " << output.getType()
           << ", not a floating-point tensor, so no loss can be built on it";
  // The loss is computed in fp32 whatever the forward computes in.
  if (!type.getElementType().isF32() && !type.getElementType().isF64()) {
    type = type.clone(b.getF32Type());
    output = CastOp::create(b, type, output);
  }
  // The labels input must not collide with an existing input.
  for (InputOp input : function.getOps<InputOp>())
    if (input.getName() == labels)
      return input.emitOpError()
             << "has the name '" << labels
             << "' that nn-autodiff gives the labels; choose another with "
                "labels=NAME";
  Value perElement;
  if (loss == "cross-entropy") {
    if (type.getRank() < 1)
      return emitError(returnOp.getLoc())
             << "nn-autodiff: cross-entropy needs an output with a class "
                "dimension, not a scalar";
    auto labelsType =
        RankedTensorType::get(type.getShape().drop_back(), b.getI64Type());
    Value labelsValue = InputOp::create(b, labelsType, labels);
    perElement = SoftmaxCrossEntropyOp::create(
        b, labelsType.clone(type.getElementType()), output, labelsValue);
  } else if (loss == "mse") {
    Value targets = InputOp::create(b, type, labels);
    Value difference = SubOp::create(b, output, targets);
    perElement = MulOp::create(b, difference, difference);
  } else {
    return emitError(returnOp.getLoc()) << "nn-autodiff: unknown loss '" << loss
                                        << "' (expected cross-entropy or mse)";
  }
  return ReduceMeanOp::create(b, perElement, b.getDenseI64ArrayAttr({}),
                              b.getBoolAttr(false))
      .getResult();
}

std::vector<std::pair<std::string, SmallVector<Operation *>>>
NNAutodiffPass::recomputeGroups(ArrayRef<Operation *> forward,
                                const DenseSet<Value> &active,
                                Recompute policy) {
  std::vector<std::pair<std::string, SmallVector<Operation *>>> groups;
  if (policy == Recompute::None)
    return groups;
  std::vector<std::pair<std::string, SmallVector<Operation *>>> layers =
      assignLayers(forward, active);
  // With micro-batches, the parameter copies run once before them and
  // live the whole step (opsBeforeMicroBatches): the backward reads them
  // rather than computing them again.
  DenseSet<Operation *> kept;
  if (microBatches > 1) {
    kept = parplan::parameterCopies(forward);
    for (auto &layer : layers)
      llvm::erase_if(layer.second,
                     [&](Operation *op) { return kept.contains(op); });
  }
  auto isSource = [](Operation *op) {
    return isa<ParamOp, InputOp, ConstantOp>(op);
  };
  if (policy == Recompute::Selective) {
    DenseMap<Operation *, StringRef> layerOf;
    for (const auto &[layer, ops] : layers)
      for (Operation *op : ops)
        layerOf[op] = layer;
    // The attention core: from the matmul of two activations (the scores)
    // through the ops between it and the softmax, whose outputs are the
    // sequence-squared tensors.
    for (Operation *op : forward) {
      auto softmax = dyn_cast<SoftmaxOp>(op);
      if (!softmax)
        continue;
      SmallVector<Operation *> chain = {softmax};
      Value value = softmax.getInput();
      bool found = false;
      while (Operation *def = value.getDefiningOp()) {
        if (auto matmul = dyn_cast<MatMulOp>(def)) {
          auto isActivation = [&](Value v) {
            Operation *d = v.getDefiningOp();
            return d && !isSource(d) && active.contains(v);
          };
          found =
              isActivation(matmul.getLhs()) && isActivation(matmul.getRhs());
          chain.push_back(def);
          break;
        }
        // Scaling and masking: one operand on the chain, the rest fixed.
        if (def->getNumResults() != 1 ||
            !isa<DivOp, MulOp, AddOp, SubOp, WhereOp, CastOp>(def))
          break;
        Value next;
        int onChain = 0;
        for (Value operand : def->getOperands())
          if (Operation *d = operand.getDefiningOp();
              d && !isSource(d) && active.contains(operand)) {
            next = operand;
            ++onChain;
          }
        if (onChain != 1)
          break;
        chain.push_back(def);
        value = next;
      }
      if (found)
        groups.emplace_back(
            layerOf.lookup(softmax).str(),
            SmallVector<Operation *>(chain.rbegin(), chain.rend()));
    }
    addParameterCopies(forward, active, kept, groups);
    return groups;
  }
  // Full: every layer, or the first `recompute-layers` of each class. Ops
  // outside every layer (embeddings, final norm, a tied head) are not
  // recomputed. Only the inputs of recomputed layers stay saved, as in
  // Megatron-LM's full recomputation.
  llvm::StringMap<int64_t> perClass;
  for (auto &layer : layers)
    if (recomputeLayers < 0 ||
        perClass[layerClass(layer.first)]++ < recomputeLayers)
      groups.push_back(std::move(layer));
  addParameterCopies(forward, active, kept, groups);
  return groups;
}

void NNAutodiffPass::addParameterCopies(
    ArrayRef<Operation *> forward, const DenseSet<Value> &active,
    const DenseSet<Operation *> &kept,
    std::vector<std::pair<std::string, SmallVector<Operation *>>> &groups) {
  // Values of parameters alone (a weight's low-precision copy, a
  // transposed weight) are the same in every micro-batch: the backward
  // computes them again rather than reading the forward's, which a
  // pipeline schedule would keep aside once per micro-batch in flight
  // (the whole stage's weights again for each). Each op is a group of its
  // own; a chain of them is recomputed from the parameters. Those the step
  // keeps (`kept`, with micro-batches) are left out.
  DenseSet<Operation *> copies = parplan::parameterCopies(forward,
                                                          /*anySize=*/true);
  for (Operation *op : forward)
    if (copies.contains(op) && !kept.contains(op) &&
        llvm::any_of(op->getResults(),
                     [&](Value result) { return active.contains(result); }))
      groups.emplace_back(kParameterCopies, SmallVector<Operation *>{op});
}

LogicalResult NNAutodiffPass::checkOptions(func::FuncOp function,
                                           StepState &state) {
  auto fail = [&](const Twine &message) {
    return function.emitOpError() << message;
  };
  if (recompute == "none")
    state.policy = Recompute::None;
  else if (recompute == "selective")
    state.policy = Recompute::Selective;
  else if (recompute == "full")
    state.policy = Recompute::Full;
  else
    return fail("nn-autodiff: unknown recompute '" + recompute +
                "' (expected none, selective or full)");
  if (recomputeLayers < -1)
    return fail("nn-autodiff: recompute-layers must be -1 (all) or a count, "
                "got " +
                Twine(recomputeLayers));
  if (recomputeLayers != -1 && state.policy != Recompute::Full)
    return fail("nn-autodiff: recompute-layers needs recompute=full (got "
                "recompute=" +
                recompute + ")");
  if (optimizer != "sgd" && optimizer != "momentum" && optimizer != "adam" &&
      optimizer != "adamw" && optimizer != "none")
    return fail("nn-autodiff: unknown optimizer '" + optimizer +
                "' (expected sgd, momentum, adam, adamw or none)");
  MLIRContext *context = &getContext();
  if (mixedPrecision == "bf16")
    state.lowType = BFloat16Type::get(context);
  else if (mixedPrecision == "fp16")
    state.lowType = Float16Type::get(context);
  else if (mixedPrecision != "none")
    return fail("nn-autodiff: unknown mixed-precision '" + mixedPrecision +
                "' (expected none, bf16 or fp16)");
  if (!(lr > 0) || !std::isfinite(lr))
    return fail("nn-autodiff: lr must be a positive number");
  state.decay =
      weightDecay >= 0 ? weightDecay : (optimizer == "adamw" ? 0.01 : 0.0);
  state.lossScaling = mixedPrecision == "fp16" ? lossScale.getValue() : 1.0;
  if (!(state.lossScaling > 0) || !std::isfinite(state.lossScaling))
    return fail("nn-autodiff: loss-scale must be a positive number");
  if (microBatches < 1)
    return fail("nn-autodiff: micro-batches must be at least 1, got " +
                Twine(microBatches));
  if (gradientSums != "f32" && gradientSums != "low")
    return fail("nn-autodiff: unknown gradient-sums '" + gradientSums +
                "' (expected f32 or low)");
  if (dropout != "on" && dropout != "off")
    return fail("nn-autodiff: unknown dropout '" + dropout +
                "' (expected on or off)");
  if (batchNorm != "batch" && batchNorm != "frozen")
    return fail("nn-autodiff: unknown batch-norm '" + batchNorm +
                "' (expected batch or frozen)");
  StringRef(frozen).split(state.frozenPatterns, ',', -1, /*KeepEmpty=*/false);
  for (StringRef &pattern : state.frozenPatterns) {
    pattern = pattern.trim();
    llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(pattern);
    if (!glob)
      return fail("nn-autodiff: frozen pattern '" + pattern +
                  "': " + llvm::toString(glob.takeError()));
    state.frozenGlobs.push_back(std::move(*glob));
  }
  if (output >= state.returnOp.getNumOperands())
    return fail("nn-autodiff: output " + Twine(output.getValue()) +
                " is out of range: @main returns " +
                Twine(state.returnOp.getNumOperands()) + " values");
  return success();
}

Value NNAutodiffPass::countStep(StepState &state, OpBuilder &at, Location loc) {
  return AddOp::create(at, loc, state.stepCount,
                       buildScalar(at, loc, at.getF32Type(), 1.0));
}

LogicalResult NNAutodiffPass::addStepCount(func::FuncOp function,
                                           StepState &state) {
  MLIRContext *context = &getContext();
  for (DropoutOp drop :
       llvm::make_early_inc_range(function.getOps<DropoutOp>())) {
    if (dropout == "off") {
      drop.getResult().replaceAllUsesWith(drop.getInput());
      drop.erase();
    } else if (!drop.getStep()) {
      state.dropouts.push_back(drop);
    }
  }
  if (optimizer == "adam" || optimizer == "adamw" || !state.dropouts.empty()) {
    auto f32 = RankedTensorType::get({}, Float32Type::get(context));
    for (ParamOp param : function.getOps<ParamOp>())
      if (param.getName() == "optimizer.step")
        return param.emitOpError() << "has the name of the step count "
                                      "nn-autodiff adds ('optimizer.step')";
    OpBuilder entry(context);
    entry.setInsertionPointToStart(&function.front());
    Location loc = function.getLoc();
    state.stepCount = ParamOp::create(
        entry, loc, f32, entry.getStringAttr("optimizer.step"),
        entry.getStringAttr("zeros"), StringAttr(), DenseI64ArrayAttr());
    // Counted up where dropout reads it, else beside the updates.
    if (!state.dropouts.empty())
      state.step = countStep(state, entry, loc);
  }
  // With micro-batches, each draws its own masks.
  Value microBatch;
  if (!state.dropouts.empty() && microBatches > 1) {
    OpBuilder entry(context);
    entry.setInsertionPointAfterValue(state.step);
    microBatch =
        MicroBatchOp::create(entry, function.getLoc(),
                             RankedTensorType::get({}, entry.getI64Type()));
  }
  for (auto [index, drop] : llvm::enumerate(state.dropouts)) {
    drop.getStepMutable().assign(state.step);
    if (microBatch)
      drop.getMicroBatchMutable().assign(microBatch);
    drop.setSeed(dropoutSeed);
    drop.setKey(static_cast<int64_t>(index));
  }
  return success();
}

void NNAutodiffPass::findTrainable(func::FuncOp function, StepState &state) {
  std::vector<bool> globMatched(state.frozenGlobs.size(), false);
  for (ParamOp param : function.getOps<ParamOp>()) {
    state.names.insert(param.getName());
    bool frozenParam = false;
    for (size_t g = 0; g < state.frozenGlobs.size(); ++g)
      if (state.frozenGlobs[g].match(param.getName()))
        frozenParam = globMatched[g] = true;
    // State (the step count) is counted, not trained.
    if (!isFloatTensor(param.getResult()) ||
        (param.getSource() && *param.getSource() == "zeros") || frozenParam)
      continue;
    state.trainable.push_back(param);
  }
  // A pattern that freezes nothing is a typo or a parameter the model does
  // not have: the one meant would be trained unseen.
  for (size_t g = 0; g < state.frozenGlobs.size(); ++g)
    if (!globMatched[g])
      function.emitWarning() << "frozen pattern '" << state.frozenPatterns[g]
                             << "' matches no parameter of @"
                             << function.getName() << "; it freezes nothing";
  for (Operation &op : function.getOps())
    if (!isa<func::ReturnOp>(op))
      state.forward.push_back(&op);
  for (ParamOp param : state.trainable)
    state.active.insert(param.getResult());
  for (Operation *op : state.forward) {
    if (isa<ParamOp>(op))
      continue;
    // Operands that carry no gradient do not make an op depend on params.
    bool depends = false;
    for (OpOperand &operand : op->getOpOperands()) {
      unsigned index = operand.getOperandNumber();
      bool differentiable = !(isa<BatchNormOp>(op) && index >= 3) &&
                            !(isa<GatherOp>(op) && index == 1) &&
                            !(isa<WhereOp>(op) && index == 0) &&
                            !(isa<SoftmaxCrossEntropyOp>(op) && index == 1);
      depends |= differentiable && state.active.contains(operand.get());
    }
    if (depends)
      for (Value result : op->getResults())
        if (isFloatTensor(result))
          state.active.insert(result);
  }
  // Non-differentiable operands must not receive gradients either.
  for (Operation *op : state.forward)
    if (auto norm = dyn_cast<BatchNormOp>(op)) {
      state.active.erase(norm.getMean());
      state.active.erase(norm.getVariance());
    }
}

LogicalResult NNAutodiffPass::differentiateStep(StepState &state,
                                                Differentiator &backward) {
  // Which layers recompute, by name, for the compile summary
  // (nn.training's recomputed_layers): once each, in forward order (""
  // for attention outside every layer).
  std::vector<SmallVector<Operation *>> groups;
  std::vector<bool> fromParameters;
  llvm::StringSet<> seenLayers;
  for (auto &[layer, ops] :
       recomputeGroups(state.forward, state.active, state.policy)) {
    fromParameters.push_back(layer == kParameterCopies);
    if (!fromParameters.back() && seenLayers.insert(layer).second)
      state.recomputedLayers.push_back(StringAttr::get(&getContext(), layer));
    groups.push_back(std::move(ops));
  }
  backward.setRecomputeGroups(std::move(groups), std::move(fromParameters));
  ImplicitLocOpBuilder &b = backward.b;
  b.setInsertionPoint(state.returnOp);
  auto lossType = tensorType(state.loss);
  // Each micro-batch's loss is a mean over its slice: 1/M of its gradient
  // is its share of the gradient of the mean over the batch.
  Value seed = ConstantOp::create(
      b, DenseElementsAttr::get(
             lossType, b.getFloatAttr(lossType.getElementType(),
                                      state.lossScaling / microBatches)));
  backward.seed(state.loss, seed);
  for (Operation *op : llvm::reverse(state.forward))
    if (failed(backward.differentiate(op)))
      return failure();
  return success();
}

Value NNAutodiffPass::accumulated(ImplicitLocOpBuilder &b, Value value,
                                  Location loc) {
  if (microBatches == 1)
    return value;
  OpBuilder::InsertionGuard guard(b);
  Location outer = b.getLoc();
  b.setLoc(loc);
  b.setInsertionPointAfterValue(value);
  Value sum = AccumulateOp::create(b, value);
  b.setLoc(outer);
  return sum;
}

FailureOr<Value> NNAutodiffPass::zerosParam(func::FuncOp function,
                                            StepState &state, Operation *after,
                                            RankedTensorType type,
                                            const std::string &name) {
  if (!state.names.insert(name).second)
    return function.emitOpError()
           << "nn-autodiff: the optimizer state '" << name
           << "' has the name of an existing parameter";
  OpBuilder entry(&getContext());
  if (after)
    entry.setInsertionPointAfter(after);
  else
    entry.setInsertionPointToStart(&function.front());
  return ParamOp::create(
             entry, function.getLoc(), type, entry.getStringAttr(name),
             entry.getStringAttr("zeros"), StringAttr(), DenseI64ArrayAttr())
      .getResult();
}

LogicalResult NNAutodiffPass::addUpdates(func::FuncOp function,
                                         StepState &state,
                                         Differentiator &backward) {
  ImplicitLocOpBuilder &b = backward.b;
  // With micro-batches, what the update reads is summed over them: each
  // gradient where the backward pass completes it (so that the low-precision
  // one dies there), and the loss divided by M.
  // The sums carry the location (the node name) of what they sum, which
  // stage and layout pins match.
  Value reportedLoss = state.loss;
  if (microBatches > 1) {
    auto lossType = tensorType(state.loss);
    Location outer = b.getLoc(), lossLoc = state.loss.getLoc();
    b.setLoc(lossLoc);
    Value share = MulOp::create(
        b, state.loss,
        ConstantOp::create(
            b, DenseElementsAttr::get(lossType,
                                      b.getFloatAttr(lossType.getElementType(),
                                                     1.0 / microBatches))));
    b.setLoc(outer);
    reportedLoss = accumulated(b, share, lossLoc);
  }
  // The optimizer: one update per parameter that got a gradient.
  state.results = {reportedLoss};
  state.updates = {""};
  // State sits beside its parameter; the step count first.
  if (state.stepCount) {
    if (!state.step)
      state.step = countStep(state, b, b.getLoc());
    state.results.push_back(state.step);
    state.updates.push_back("optimizer.step");
  }
  // Updates in the order the backward pass completes their gradients: the
  // compute stream runs them in program order after the backward, each
  // waiting for its gradient's reduction, so one completed last (an
  // embedding tied to the output layer, the first parameter) would hold
  // back every update after it while its reduction runs.
  auto completedBy = [&](ParamOp param) -> Operation * {
    Value grad = backward.gradientOf(param.getResult());
    // A gradient cast back to fp32 is complete where its input is.
    if (auto cast = grad ? grad.getDefiningOp<CastOp>() : CastOp())
      grad = cast.getInput();
    return grad ? grad.getDefiningOp() : nullptr;
  };
  SmallVector<std::pair<Operation *, ParamOp>> byGradient;
  for (ParamOp param : state.trainable)
    byGradient.push_back({completedBy(param), param});
  llvm::stable_sort(byGradient, [](const auto &a, const auto &b) {
    return a.first && (!b.first || a.first->isBeforeInBlock(b.first));
  });
  // The step's results stay in the parameters' order: each update's are
  // put back in place after the loop.
  size_t first = state.results.size();
  DenseMap<Operation *, std::pair<size_t, size_t>> resultsOf;
  auto update = [&](ParamOp param, Value grad) {
    size_t start = state.results.size();
    if (failed(addUpdate(function, state, b, param, grad)))
      return failure();
    resultsOf[param] = {start, state.results.size()};
    return success();
  };
  for (ParamOp param : llvm::make_second_range(byGradient)) {
    Value grad = backward.gradientOf(param.getResult());
    if (!grad)
      continue;
    // A gradient brought back to fp32 from the low precision is cast
    // elsewhere than where the backward pass reaches the parameter's cast
    // (the top of the forward pass, so the end of the backward pass):
    // there every fp32 gradient would live at once, beside the
    // low-precision ones. Without micro-batches, just before its update;
    // with them, where the low-precision gradient is complete, so that its
    // sum is added to there and it dies at once, and the sum's reduction
    // may start under the rest of the last micro-batch's backward
    // (docs/cost-model.md#overlap).
    // With gradient-sums=low, the low-precision gradient is summed where
    // it is complete, and the sum cast back before its update.
    auto cast = grad.getDefiningOp<CastOp>();
    if (cast && cast->use_empty() && microBatches > 1 &&
        gradientSums == "low") {
      Value sum = accumulated(b, cast.getInput(), param.getLoc());
      cast->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
      cast.getInputMutable().assign(sum);
      b.setLoc(param.getLoc());
      if (failed(update(param, cast.getResult())))
        return failure();
      continue;
    }
    if (cast && cast->use_empty()) {
      Operation *complete = cast.getInput().getDefiningOp();
      if (microBatches > 1 && complete)
        cast->moveAfter(complete);
      else if (optimizer != "none" && microBatches == 1)
        cast->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    }
    grad = accumulated(b, grad, param.getLoc());
    b.setLoc(param.getLoc());
    if (failed(update(param, grad)))
      return failure();
  }
  SmallVector<Value> results(state.results.begin(),
                             state.results.begin() + first);
  SmallVector<std::string> updates(state.updates.begin(),
                                   state.updates.begin() + first);
  for (ParamOp param : state.trainable) {
    auto found = resultsOf.find(param);
    if (found == resultsOf.end())
      continue;
    for (size_t r = found->second.first; r < found->second.second; ++r) {
      results.push_back(state.results[r]);
      updates.push_back(state.updates[r]);
    }
  }
  state.results = std::move(results);
  state.updates = std::move(updates);
  return success();
}

LogicalResult NNAutodiffPass::addUpdate(func::FuncOp function, StepState &state,
                                        ImplicitLocOpBuilder &b, ParamOp param,
                                        Value grad) {
  FloatAttr lrAttr = b.getF64FloatAttr(lr),
            decayAttr = b.getF64FloatAttr(state.decay),
            scaleAttr = b.getF64FloatAttr(state.lossScaling);
  auto type = tensorType(param.getResult());
  std::string name = param.getName().str();
  if (optimizer == "none") {
    // The gradients themselves, for checks and for optimizers elsewhere.
    state.results.push_back(grad);
    state.updates.push_back("gradient:" + name);
  } else if (optimizer == "sgd") {
    state.results.push_back(
        SgdUpdateOp::create(b, param, grad, lrAttr, decayAttr, scaleAttr));
    state.updates.push_back(name);
  } else if (optimizer == "momentum") {
    FailureOr<Value> velocity =
        zerosParam(function, state, param, type, name + ".momentum");
    if (failed(velocity))
      return failure();
    auto update = MomentumUpdateOp::create(
        b, param, grad, *velocity, lrAttr, b.getF64FloatAttr(momentum),
        decayAttr, b.getBoolAttr(false), scaleAttr);
    state.results.append({update.getNewParam(), update.getNewVelocity()});
    state.updates.append({name, name + ".momentum"});
  } else {
    FailureOr<Value> v =
        zerosParam(function, state, param, type, name + ".adam.v");
    FailureOr<Value> m =
        zerosParam(function, state, param, type, name + ".adam.m");
    if (failed(m) || failed(v))
      return failure();
    auto update = AdamUpdateOp::create(
        b, param, grad, *m, *v, state.step, lrAttr, b.getF64FloatAttr(beta1),
        b.getF64FloatAttr(beta2), b.getF64FloatAttr(epsilon), decayAttr,
        optimizer == "adamw" ? b.getUnitAttr() : UnitAttr(), scaleAttr);
    state.results.append(
        {update.getNewParam(), update.getNewM(), update.getNewV()});
    state.updates.append({name, name + ".adam.m", name + ".adam.v"});
  }
  return success();
}

void NNAutodiffPass::addStatisticUpdates(StepState &state,
                                         ImplicitLocOpBuilder &b) {
  // The running statistics of batch norms trained on the batch's: with
  // micro-batches, the mean of theirs.
  for (RunningStatistic &statistic : state.runningStatistics) {
    b.setLoc(statistic.loc);
    auto type = tensorType(statistic.running.getResult());
    Value batch = statistic.batch;
    if (tensorType(batch).getElementType() != type.getElementType())
      batch = CastOp::create(b, type, batch);
    if (microBatches > 1) {
      Value share = buildScalar(b, statistic.loc, type.getElementType(),
                                1.0 / microBatches);
      batch = accumulated(b, MulOp::create(b, batch, share), statistic.loc);
    }
    state.results.push_back(buildRunningStatisticUpdate(
        b, statistic.loc, statistic.running.getResult(), batch,
        statistic.momentum, statistic.batchFactor));
    state.updates.push_back("statistic:" + statistic.running.getName().str());
  }
}

LogicalResult NNAutodiffPass::checkUpdatedOnce(func::FuncOp function,
                                               const StepState &state) {
  // One value per parameter: a parameter both trained and a running
  // statistic, or the statistic of two batch norms, is one tensor that
  // torch.onnx.export tied (initializers of equal values merged).
  llvm::StringMap<size_t> updatedAt;
  for (auto [index, update] : llvm::enumerate(state.updates)) {
    StringRef name = update;
    if (name.empty() || name.consume_front("gradient:"))
      continue;
    name.consume_front("statistic:");
    auto [it, inserted] = updatedAt.try_emplace(name, index);
    if (!inserted)
      return function.emitOpError()
             << "nn-autodiff: '" << name
             << "' would be updated twice in a step ("
             << describeUpdate(state.updates[it->second]) << " and "
             << describeUpdate(update)
             << "): it is one initializer shared by several uses; give "
                "each use its own copy with --untie "
             << name;
  }
  return success();
}

void NNAutodiffPass::returnStep(func::FuncOp function, StepState &state,
                                ImplicitLocOpBuilder &b) {
  b.setLoc(state.returnOp.getLoc());
  func::ReturnOp::create(b, state.results);
  state.returnOp.erase();
  SmallVector<Type> resultTypes;
  for (Value result : state.results)
    resultTypes.push_back(result.getType());
  function.setType(FunctionType::get(&getContext(), {}, resultTypes));
  SmallVector<DictionaryAttr> resultAttrs;
  for (const std::string &update : state.updates) {
    StringRef text = update;
    SmallVector<NamedAttribute, 2> attrs;
    if (update.empty()) {
      attrs.push_back(b.getNamedAttr(parplan::kResultNameAttrName,
                                     b.getStringAttr("loss")));
    } else if (text.consume_front("gradient:")) {
      attrs.push_back(
          b.getNamedAttr(parplan::kGradientAttrName, b.getStringAttr(text)));
    } else {
      if (text.consume_front("statistic:"))
        attrs.push_back(b.getNamedAttr(parplan::kRunningStatisticAttrName,
                                       b.getUnitAttr()));
      attrs.push_back(
          b.getNamedAttr(parplan::kUpdatesAttrName, b.getStringAttr(text)));
    }
    resultAttrs.push_back(b.getDictionaryAttr(attrs));
  }
  function.setAllResultAttrs(resultAttrs);

  // Forward ops no result depends on any more (other outputs of @main).
  for (Operation &op :
       llvm::make_early_inc_range(llvm::reverse(function.front())))
    if (!isa<func::ReturnOp>(op) && isOpTriviallyDead(&op))
      op.erase();
}

void NNAutodiffPass::recordTraining(ModuleOp module, const StepState &state,
                                    bool hasBatchNorms) {
  Builder b(&getContext());
  SmallVector<NamedAttribute> training = {
      b.getNamedAttr("loss", b.getStringAttr(loss)),
      b.getNamedAttr("optimizer", b.getStringAttr(optimizer)),
      b.getNamedAttr("lr", b.getF64FloatAttr(lr)),
      b.getNamedAttr("weight_decay", b.getF64FloatAttr(state.decay)),
      b.getNamedAttr("recompute", b.getStringAttr(recompute)),
      b.getNamedAttr("mixed_precision", b.getStringAttr(mixedPrecision)),
      b.getNamedAttr("labels", b.getStringAttr(labels))};
  if (state.lossScaling != 1.0)
    training.push_back(
        b.getNamedAttr("loss_scale", b.getF64FloatAttr(state.lossScaling)));
  if (microBatches > 1)
    training.push_back(
        b.getNamedAttr("micro_batches", b.getI64IntegerAttr(microBatches)));
  if (microBatches > 1 && state.lowType && gradientSums == "low")
    training.push_back(
        b.getNamedAttr("gradient_sums", b.getStringAttr(gradientSums)));
  if (hasBatchNorms)
    training.push_back(
        b.getNamedAttr("batch_norm", b.getStringAttr(batchNorm)));
  if (!state.dropouts.empty())
    training.push_back(
        b.getNamedAttr("dropout_seed", b.getI64IntegerAttr(dropoutSeed)));
  if (state.policy != Recompute::None)
    training.push_back(b.getNamedAttr("recomputed_layers",
                                      b.getArrayAttr(state.recomputedLayers)));
  module->setAttr(parplan::kTrainingAttrName, b.getDictionaryAttr(training));
}

void NNAutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto function = module.lookupSymbol<func::FuncOp>("main");
  if (!function || function.isExternal()) {
    module.emitError() << "nn-autodiff: the module has no function @main";
    return signalPassFailure();
  }
  if (StringRef step = parplan::describeStep(module); !step.empty()) {
    module.emitError() << "nn-autodiff: @main is already " << step;
    return signalPassFailure();
  }
  if (!function.getBody().hasOneBlock() || function.getNumArguments() != 0) {
    function.emitOpError() << "must be one block without arguments (values "
                              "enter through nn.param and nn.input)";
    return signalPassFailure();
  }
  StepState state;
  state.returnOp = cast<func::ReturnOp>(function.front().getTerminator());
  if (failed(checkOptions(function, state)))
    return signalPassFailure();
  bool hasBatchNorms = !function.getOps<BatchNormOp>().empty();
  if (state.lowType && failed(lowerPrecision(function, state.lowType)))
    return signalPassFailure();
  FailureOr<Value> lossValue =
      buildLoss(function, state.returnOp.getOperand(output));
  if (failed(lossValue))
    return signalPassFailure();
  state.loss = *lossValue;
  // The step count (from 1) that Adam and dropout's masks read: state at
  // the top of the program, counted up before anything reads it.
  if (failed(addStepCount(function, state)))
    return signalPassFailure();
  if (batchNorm == "batch") {
    FailureOr<SmallVector<RunningStatistic>> trained =
        trainBatchNorms(function);
    if (failed(trained))
      return signalPassFailure();
    state.runningStatistics = std::move(*trained);
  }
  // Trainable parameters, in program order, and the values that depend on
  // them (the only ones that need gradients).
  findTrainable(function, state);
  if (!state.active.contains(state.loss)) {
    function.emitOpError()
        << "nn-autodiff: the loss depends on no trainable parameter";
    return signalPassFailure();
  }
  Differentiator backward(function, state.active);
  if (failed(differentiateStep(state, backward)) ||
      failed(addUpdates(function, state, backward)))
    return signalPassFailure();
  addStatisticUpdates(state, backward.b);
  if (failed(checkUpdatedOnce(function, state)))
    return signalPassFailure();
  returnStep(function, state, backward.b);
  recordTraining(module, state, hasBatchNorms);
}

} // namespace
