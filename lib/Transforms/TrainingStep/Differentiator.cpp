//===- Differentiator.cpp - reverse-mode differentiation of nn ops --------===//

#include "parplan/Transforms/TrainingStep/Differentiator.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNDecompositions.h"
#include "parplan/Dialect/NN/NNOps.h"

using namespace mlir;
using namespace parplan;
using nn::tensorType;

#include "parplan/Transforms/TrainingStep/GradientInterface.cpp.inc"

void Differentiator::setRecomputeGroups(
    std::vector<SmallVector<Operation *>> groups,
    std::vector<bool> ofParameters) {
  recomputeGroups = std::move(groups);
  fromParameters = std::move(ofParameters);
  fromParameters.resize(recomputeGroups.size(), false);
  groupOf.clear();
  for (auto [index, group] : llvm::enumerate(recomputeGroups))
    for (Operation *op : group)
      groupOf[op] = index;
  groupOutputs.clear();
  for (auto [index, group] : llvm::enumerate(recomputeGroups)) {
    if (fromParameters[index])
      continue;
    for (Operation *op : group)
      for (Value result : op->getResults())
        if (llvm::any_of(
                result.getUsers(), [&, index = index](Operation *user) {
                  auto reader = groupOf.find(user);
                  return reader != groupOf.end() && reader->second != index &&
                         !fromParameters[reader->second];
                }))
          groupOutputs.insert(result);
  }
}

LogicalResult Differentiator::differentiate(Operation *op) {
  resultGradients.clear();
  bool any = false;
  for (Value result : op->getResults()) {
    resultGradients.push_back(cotangents.lookup(result));
    any |= static_cast<bool>(resultGradients.back());
  }
  // Values that enter the program keep their gradients: the optimizer
  // reads them.
  if (!any || isa<nn::ParamOp, nn::InputOp, nn::ConstantOp>(op))
    return success();
  b.setLoc(op->getLoc());
  auto rule = dyn_cast<GradientOpInterface>(op);
  if (!rule)
    return op->emitOpError()
           << "has no backward rule: nn-autodiff cannot differentiate it";
  return rule.buildGradient(*this);
}

void Differentiator::accumulate(Value value, Value grad) {
  auto [it, inserted] = cotangents.try_emplace(value, grad);
  if (!inserted)
    it->second = nn::AddOp::create(b, it->second, grad);
}

void Differentiator::accumulateBroadcast(Value operand, Value grad) {
  if (needs(operand))
    accumulate(operand, sumToShape(grad, tensorType(operand)));
}

Value Differentiator::primal(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return value;
  auto group = groupOf.find(def);
  if (group == groupOf.end() || groupOutputs.contains(value))
    return value;
  if (cloned.insert(group->second).second)
    for (Operation *op : recomputeGroups[group->second]) {
      // Operands of another group of values of parameters alone are
      // recomputed too (a chain of them, a group per op: a weight's copy
      // and its transpose); others from outside the group are the saved
      // originals (a recomputed layer's input).
      for (Value operand : op->getOperands())
        if (auto source = groupOf.find(operand.getDefiningOp());
            source != groupOf.end() && source->second != group->second &&
            fromParameters[source->second] && !recomputed.contains(operand))
          recomputed.map(operand, primal(operand));
      Operation *clone = b.clone(*op, recomputed);
      clone->setLoc(op->getLoc());
      clone->setAttr(parplan::kRecomputedAttrName, b.getUnitAttr());
    }
  return recomputed.lookupOrDefault(value);
}

Value Differentiator::scalar(Type elementType, double value) {
  return nn::buildScalar(b, b.getLoc(), elementType, value);
}

Value Differentiator::zerosLike(RankedTensorType type) {
  return nn::ConstantOp::create(
      b, DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
}

Value Differentiator::scale(Value value, double factor) {
  return nn::MulOp::create(b, value, scalarLike(value, factor));
}

Value Differentiator::reshape(Value value, ArrayRef<int64_t> shape) {
  return nn::buildReshape(b, b.getLoc(), value, shape);
}

Value Differentiator::sumToShape(Value grad, RankedTensorType target) {
  auto type = tensorType(grad);
  if (type.getShape() == target.getShape())
    return grad;
  int64_t offset = type.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  bool onlyLeading = true;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d < offset ||
        (target.getDimSize(d - offset) == 1 && type.getDimSize(d) != 1)) {
      axes.push_back(d);
      onlyLeading &= d < offset;
    }
  // A bias's gradient summed over the leading axes alone comes out in
  // its own shape, with no reshape after it: an update then reads the
  // sum itself, and its reduction over the mesh runs on the gradients
  // stream, where a reshape between them would make the compute stream
  // wait for it mid-backward (lowering's feedsOnlyUpdates).
  if (onlyLeading && type.getShape().drop_front(offset) == target.getShape())
    return nn::ReduceSumOp::create(b, grad, b.getDenseI64ArrayAttr(axes),
                                   b.getBoolAttr(false));
  Value summed = grad;
  if (!axes.empty())
    summed = nn::ReduceSumOp::create(b, grad, b.getDenseI64ArrayAttr(axes),
                                     b.getBoolAttr(true));
  return reshape(summed, target.getShape());
}
