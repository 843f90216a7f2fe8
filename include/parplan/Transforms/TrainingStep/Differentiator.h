//===- Differentiator.h - reverse-mode differentiation ----------*- C++ -*-===//
//
// What nn-autodiff's backward rules build with: the cotangent of every
// value reached so far, the forward values as backward reads them (cloned
// when their ops recompute), and the building blocks the rules share. Each
// nn op's rule is its GradientOpInterface model (lib/Transforms/
// NNGradients.cpp); docs/training.md lists them.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_DIFFERENTIATOR_H
#define PARPLAN_TRANSFORMS_DIFFERENTIATOR_H

#include "parplan/Dialect/NN/NNDecompositions.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace parplan {

class Differentiator {
public:
  /// Differentiates `function`'s ops; `active` holds the values that
  /// depend on a trainable parameter, the only ones given cotangents.
  Differentiator(mlir::Operation *function,
                 const llvm::DenseSet<mlir::Value> &active)
      : b(function->getLoc(), function->getContext()), active(active) {}

  /// Where the backward ops go, at the location of the op differentiated.
  mlir::ImplicitLocOpBuilder b;

  /// Groups of forward ops that backward recomputes instead of reading
  /// their saved results. A group of `fromParameters` (values of parameters
  /// alone) is recomputed too where another group reads it; another
  /// group's results are read saved (a layer's input), by the recomputed
  /// ops and the backward alike.
  void
  setRecomputeGroups(std::vector<llvm::SmallVector<mlir::Operation *>> groups,
                     std::vector<bool> fromParameters);

  void seed(mlir::Value value, mlir::Value grad) { accumulate(value, grad); }
  mlir::Value gradientOf(mlir::Value value) const {
    return cotangents.lookup(value);
  }

  /// Emits the backward of `op` (its GradientOpInterface rule) when its
  /// results have cotangents; fails, naming it, for an op without a rule.
  mlir::LogicalResult differentiate(mlir::Operation *op);

  //===--------------------------------------------------------------------===//
  // What a rule reads and writes
  //===--------------------------------------------------------------------===//

  /// The cotangent of result `index` of the op differentiated (null when
  /// that result has none), and all of them.
  mlir::Value resultGradient(unsigned index) const {
    return resultGradients[index];
  }
  llvm::ArrayRef<mlir::Value> getResultGradients() const {
    return resultGradients;
  }
  /// Whether `value` takes a cotangent.
  bool needs(mlir::Value value) const { return active.contains(value); }
  /// Adds `grad` to `value`'s cotangent.
  void accumulate(mlir::Value value, mlir::Value grad);
  /// accumulate of `grad` summed back to `operand`'s shape (broadcasting),
  /// when `operand` needs it.
  void accumulateBroadcast(mlir::Value operand, mlir::Value grad);
  /// `grad` to `op`'s first operand, when it needs it.
  void giveInput(mlir::Operation *op, mlir::Value grad) {
    if (needs(op->getOperand(0)))
      accumulate(op->getOperand(0), grad);
  }
  /// The forward value as backward reads it: recomputed when its op is in
  /// a recompute group, unless another group reads it (a layer's output,
  /// the next recomputed layer's input, which is saved for that layer
  /// anyway: recomputing it for the next layer's backward would run the
  /// layer's recomputation early, and on stages send it forward).
  mlir::Value primal(mlir::Value value);

  //===--------------------------------------------------------------------===//
  // Building blocks
  //===--------------------------------------------------------------------===//

  mlir::Value scalar(mlir::Type elementType, double value);
  mlir::Value scalarLike(mlir::Value like, double value) {
    return scalar(nn::tensorType(like).getElementType(), value);
  }
  mlir::Value zerosLike(mlir::RankedTensorType type);
  mlir::Value scale(mlir::Value value, double factor);
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// Sums a broadcast gradient back to the operand's shape: over the extra
  /// leading dimensions and over the dimensions where the operand has 1.
  mlir::Value sumToShape(mlir::Value grad, mlir::RankedTensorType target);

private:
  const llvm::DenseSet<mlir::Value> &active;
  llvm::DenseMap<mlir::Value, mlir::Value> cotangents;
  llvm::SmallVector<mlir::Value> resultGradients;
  std::vector<llvm::SmallVector<mlir::Operation *>> recomputeGroups;
  llvm::DenseMap<mlir::Operation *, size_t> groupOf;
  /// Results of groups not of parameters alone that another such group
  /// reads.
  llvm::DenseSet<mlir::Value> groupOutputs;
  std::vector<bool> fromParameters;
  llvm::DenseSet<size_t> cloned;
  mlir::IRMapping recomputed;
};

/// Attaches the nn ops' backward rules (GradientOpInterface models).
void registerNNGradients(mlir::DialectRegistry &registry);

} // namespace parplan

#include "parplan/Transforms/TrainingStep/GradientInterface.h.inc"

#endif // PARPLAN_TRANSFORMS_DIFFERENTIATOR_H
