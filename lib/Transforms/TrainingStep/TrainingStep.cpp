//===- TrainingStep.cpp - what a training step holds and computes ---------===//
//
// The parts of a step are told apart by the data flow, not by markers that
// a later rewrite could lose: the forward pass is what the loss depends on;
// recomputation clones carry `nn.recomputed`; updates are the optimizer ops;
// the rest is backward.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/TrainingStep/TrainingStep.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/SBP/SBPOps.h"

#include <set>

using namespace mlir;
using namespace parplan::nn;

bool parplan::isSourceOp(Operation *op) {
  return isa<ParamOp, InputOp, ConstantOp, MicroBatchOp>(op);
}

bool parplan::isStep(ModuleOp module) {
  return module->hasAttr(parplan::kTrainingAttrName) ||
         module->hasAttr(parplan::kInferenceAttrName);
}

StringRef parplan::describeStep(ModuleOp module) {
  if (module->hasAttr(parplan::kTrainingAttrName))
    return "a training step";
  if (module->hasAttr(parplan::kInferenceAttrName))
    return "an inference step";
  return "";
}

DenseSet<Operation *> parplan::forwardPassOps(func::FuncOp function,
                                              ArrayRef<Operation *> alsoOf) {
  DenseSet<Operation *> forward;
  auto returnOp = cast<func::ReturnOp>(function.front().getTerminator());
  SmallVector<Operation *> work(alsoOf.begin(), alsoOf.end());
  for (unsigned i = 0; i < returnOp.getNumOperands(); ++i)
    if (function.getResultAttr(i, parplan::kResultNameAttrName) ||
        function.getResultAttr(i, parplan::kOutputAttrName))
      if (Operation *def = returnOp.getOperand(i).getDefiningOp())
        work.push_back(def);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!forward.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
  }
  return forward;
}

llvm::DenseSet<Value> parplan::savedActivations(func::FuncOp function) {
  DenseSet<Value> saved;
  DenseSet<Operation *> forward = forwardPassOps(function);
  for (Operation *op : forward) {
    if (isSourceOp(op))
      continue;
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !forward.contains(user) && !isa<func::ReturnOp>(user);
          }))
        saved.insert(result);
  }
  return saved;
}

int64_t parplan::microBatchCount(ModuleOp module) {
  auto step = module->getAttrOfType<DictionaryAttr>(parplan::kTrainingAttrName);
  if (!step)
    step = module->getAttrOfType<DictionaryAttr>(parplan::kInferenceAttrName);
  auto count = step ? step.getAs<IntegerAttr>("micro_batches") : IntegerAttr();
  return count ? std::max<int64_t>(1, count.getInt()) : 1;
}

FailureOr<DenseSet<Operation *>>
parplan::opsAfterMicroBatches(func::FuncOp function) {
  // Forward in program order: an op is once-run when an operand is an
  // accumulated sum or another once-run op's result, and of the batch when
  // an operand is (nn.input's results are).
  DenseSet<Operation *> after;
  DenseSet<Operation *> ofBatch;
  for (Operation &op : function.front()) {
    if (isa<InputOp, MicroBatchOp>(op)) {
      ofBatch.insert(&op);
      continue;
    }
    Operation *perBatchOperand = nullptr;
    bool once = false;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def)
        continue;
      if (isa<AccumulateOp>(def) || after.contains(def))
        once = true;
      else if (ofBatch.contains(def))
        perBatchOperand = def;
    }
    if (once && perBatchOperand && !isa<func::ReturnOp>(op))
      return op.emitError()
             << "'" << op.getName()
             << "' runs once after the micro-batches but reads a value of "
                "the batch ('"
             << perBatchOperand->getName()
             << "') that is not accumulated: it would see the last "
                "micro-batch alone";
    if (once)
      after.insert(&op);
    else if (perBatchOperand)
      ofBatch.insert(&op);
  }
  // Backward: an op of neither kind whose every reader is once-run (the
  // slice of a replicated weight into its sharded update's layout) runs
  // once too; per micro-batch it would redo the same work M times. Not a
  // sum over the micro-batches, even of what reads no batch (a constant's
  // gradient): once, it would count one micro-batch of M. Not a move to
  // another stage: sent after the micro-batches, it would wait for its
  // stage's last backward (the first stage's is the step's last).
  for (Operation &op : llvm::reverse(function.front())) {
    if (after.contains(&op) || ofBatch.contains(&op) || isSourceOp(&op) ||
        isa<AccumulateOp, sbp::CrossMeshOp>(op) || op.getNumResults() == 0 ||
        op.use_empty())
      continue;
    if (llvm::all_of(op.getUsers(), [&](Operation *user) {
          return !isa<func::ReturnOp>(user) && after.contains(user);
        }))
      after.insert(&op);
  }
  return after;
}

bool parplan::isOptimizerUpdate(Operation *op) {
  return isa<SgdUpdateOp, MomentumUpdateOp, AdamUpdateOp>(op);
}

bool parplan::readsForUpdatesOnly(Operation *reader) {
  if (isOptimizerUpdate(reader))
    return true;
  return isa<CastOp>(reader) && !reader->use_empty() &&
         llvm::all_of(reader->getUsers(), readsForUpdatesOnly);
}

DenseSet<Operation *> parplan::updateOpsOfOneMicroBatch(func::FuncOp function) {
  DenseSet<Operation *> after;
  for (Operation &op : function.front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (isOptimizerUpdate(&op) ||
        llvm::any_of(op.getOperands(), [&](Value operand) {
          return after.contains(operand.getDefiningOp());
        }))
      after.insert(&op);
  }
  return after;
}

DenseSet<Operation *>
parplan::parameterGradientOps(func::FuncOp function,
                              const DenseSet<Operation *> &forward,
                              const DenseSet<Operation *> &after) {
  // A part has a parameter's shape: an activation's gradient whose one
  // reader leads to a parameter's (the first layer's, whose input needs
  // none) does not.
  std::set<SmallVector<int64_t>> parameterShapes;
  for (Operation &op : function.front())
    if (auto param = dyn_cast<ParamOp>(op))
      if (auto shaped = dyn_cast<ShapedType>(param.getType());
          shaped && shaped.hasRank())
        parameterShapes.insert(SmallVector<int64_t>(shaped.getShape()));
  auto parameterShaped = [&](Type type) {
    auto shaped = dyn_cast<ShapedType>(type);
    return shaped && shaped.hasRank() &&
           parameterShapes.count(SmallVector<int64_t>(shaped.getShape()));
  };
  DenseSet<Operation *> parts;
  // Readers come after their operands: in reverse, each op's readers are
  // known before it.
  for (Operation &op : llvm::reverse(function.front())) {
    if (isSourceOp(&op) || forward.contains(&op) || after.contains(&op) ||
        op.getNumResults() != 1 || !op.hasOneUse() ||
        !parameterShaped(op.getResult(0).getType()))
      continue;
    Operation *user = *op.getUsers().begin();
    if (after.contains(user) || parts.contains(user))
      parts.insert(&op);
  }
  return parts;
}

DenseSet<Operation *> parplan::parameterCopies(ArrayRef<Operation *> ops,
                                               bool anySize) {
  DenseSet<Value> ofParameters;
  DenseSet<Operation *> copies;
  // -1: not known.
  auto bytes = [](ValueRange values) -> int64_t {
    int64_t total = 0;
    for (Value value : values) {
      auto shaped = dyn_cast<ShapedType>(value.getType());
      if (!shaped || !shaped.hasStaticShape())
        return -1;
      total += tensorBytes(shaped);
    }
    return total;
  };
  auto noLarger = [&](Operation *op) {
    int64_t made = bytes(op->getResults()), read = bytes(op->getOperands());
    return made >= 0 && read >= 0 && made <= read;
  };
  for (Operation *op : ops) {
    if (isa<ParamOp>(op)) {
      ofParameters.insert(op->getResult(0));
      continue;
    }
    bool layout =
        isa<sbp::SBPDialect>(op->getDialect()) && !isa<sbp::MeshOp>(op);
    if (isSourceOp(op) || op->getNumOperands() == 0 ||
        op->getNumResults() == 0 || isa<AccumulateOp>(op) ||
        !(layout || isa<NNDialect>(op->getDialect())))
      continue;
    bool readsParameter = false, parametersOnly = true;
    for (Value operand : op->getOperands()) {
      if (ofParameters.contains(operand))
        readsParameter = true;
      else if (!isa_and_present<ConstantOp>(operand.getDefiningOp()))
        parametersOnly = false;
    }
    if (!readsParameter || !parametersOnly ||
        (!layout && !anySize && !noLarger(op)))
      continue;
    copies.insert(op);
    for (Value result : op->getResults())
      ofParameters.insert(result);
  }
  return copies;
}

DenseSet<Operation *>
parplan::opsBeforeMicroBatches(func::FuncOp function,
                               const DenseSet<Operation *> &after) {
  SmallVector<Operation *> ops;
  for (Operation &op : function.front().without_terminator())
    if (!after.contains(&op))
      ops.push_back(&op);
  DenseSet<Operation *> before = parameterCopies(ops);
  // A layout op stays for a reader of the part; readers come later in the
  // program, so from the last op back. A slice stays whatever reads it: its
  // part is no larger than the copy it reads, which the step keeps, and a
  // micro-batch would keep its own part from its forward to its backward.
  for (Operation *op : llvm::reverse(ops))
    if (before.contains(op) && isa<sbp::SBPDialect>(op->getDialect()) &&
        !isa<sbp::CrossMeshOp, sbp::SliceOp>(op) &&
        llvm::none_of(op->getUsers(),
                      [&](Operation *user) { return before.contains(user); }))
      before.erase(op);
  return before;
}

parplan::TrainingStepStats parplan::analyzeTrainingStep(func::FuncOp function) {
  TrainingStepStats stats;
  if (auto module = function->getParentOfType<ModuleOp>())
    stats.microBatches = microBatchCount(module);
  DenseSet<Operation *> forward = forwardPassOps(function);
  // Running statistics are updated but not trained: buffers, as PyTorch
  // counts them.
  DenseSet<StringRef> updated, statistics;
  for (unsigned i = 0; i < function.getNumResults(); ++i)
    for (StringRef key :
         {parplan::kUpdatesAttrName, parplan::kGradientAttrName})
      if (auto name = function.getResultAttrOfType<StringAttr>(i, key))
        (function.getResultAttr(i, parplan::kRunningStatisticAttrName)
             ? statistics
             : updated)
            .insert(name.getValue());
  function.walk([&](Operation *op) {
    if (auto param = dyn_cast<ParamOp>(op)) {
      auto type = cast<ShapedType>(param.getType());
      if (param.getSource() && *param.getSource() == "zeros") {
        stats.stateBytes += tensorBytes(type);
        return;
      }
      stats.parameterBytes += tensorBytes(type);
      if (updated.contains(param.getName())) {
        stats.parameters += type.getNumElements();
        ++stats.parameterTensors;
      } else if (statistics.contains(param.getName())) {
        ++stats.runningStatisticTensors;
      } else if (isa<FloatType>(type.getElementType())) {
        ++stats.untrainedTensors;
      }
      return;
    }
    auto shardable = dyn_cast<ShardableOpInterface>(op);
    if (!shardable || isSourceOp(op))
      return;
    FailureOr<OpCost> cost = shardable.getCost();
    double flops = succeeded(cost) ? cost->flops : 0;
    bool matmul = isa<MatMulOp, GemmOp>(op);
    if (matmul)
      stats.matmulFlops += flops;
    if (forward.contains(op)) {
      stats.forwardFlops += flops;
      if (matmul)
        stats.forwardMatmulFlops += flops;
    } else if (op->hasAttr(parplan::kRecomputedAttrName)) {
      stats.recomputeFlops += flops;
    } else if (isOptimizerUpdate(op)) {
      stats.optimizerFlops += flops;
    } else {
      stats.backwardFlops += flops;
    }
  });
  for (Value value : savedActivations(function))
    stats.savedActivationBytes += tensorBytes(value.getType());
  return stats;
}
