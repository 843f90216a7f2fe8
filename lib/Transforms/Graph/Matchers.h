//===- Matchers.h - small matchers for rewrites of nn programs --*- C++ -*-===//

#ifndef PARPLAN_LIB_TRANSFORMS_MATCHERS_H
#define PARPLAN_LIB_TRANSFORMS_MATCHERS_H

#include "parplan/Dialect/NN/NNOps.h"

#include <cmath>
#include <optional>
#include <utility>

namespace parplan::nn::match {

/// The value of a constant whose elements are all equal (a splat), as a
/// double; std::nullopt for anything else.
inline std::optional<double> splat(mlir::Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  if (llvm::isa<mlir::FloatType>(dense.getElementType()))
    return dense.getSplatValue<llvm::APFloat>().convertToDouble();
  if (llvm::isa<mlir::IntegerType>(dense.getElementType()))
    return static_cast<double>(
        dense.getSplatValue<llvm::APInt>().getSExtValue());
  return std::nullopt;
}

/// True when `value` is a splat constant within a relative 1e-4 of `want`.
inline bool isSplat(mlir::Value value, double want) {
  std::optional<double> got = splat(value);
  return got && std::abs(*got - want) <= 1e-4 * std::max(1.0, std::abs(want));
}

/// The operands of a commutative binary op `OpTy` defining `value`, ordered
/// so that `first` satisfies `isFirst`; std::nullopt when there is no such op
/// or neither operand fits.
template <typename OpTy, typename Predicate>
std::optional<std::pair<mlir::Value, mlir::Value>>
commutative(mlir::Value value, Predicate isFirst) {
  auto op = value.getDefiningOp<OpTy>();
  if (!op)
    return std::nullopt;
  if (isFirst(op.getLhs()))
    return std::make_pair(op.getLhs(), op.getRhs());
  if (isFirst(op.getRhs()))
    return std::make_pair(op.getRhs(), op.getLhs());
  return std::nullopt;
}

} // namespace parplan::nn::match

#endif // PARPLAN_LIB_TRANSFORMS_MATCHERS_H
