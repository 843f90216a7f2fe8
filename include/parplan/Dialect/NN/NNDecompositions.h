//===- NNDecompositions.h - nn programs built of other nn ops ---*- C++ -*-===//
//
// Forms of an op written with the ops that already have sharding rules,
// kernels and backward rules, so that everything downstream (the search,
// boxing, autodiff, the executor) handles them without a rule of their
// own. Shared by the ONNX importer and nn-autodiff.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DIALECT_NN_NNDECOMPOSITIONS_H
#define PARPLAN_DIALECT_NN_NNDECOMPOSITIONS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

#include <cstdint>

namespace parplan::nn {

/// The ranked tensor type of `value` (every nn value has one).
inline mlir::RankedTensorType tensorType(mlir::Value value) {
  return mlir::cast<mlir::RankedTensorType>(value.getType());
}

/// A rank-0 constant of the float type `elementType`.
mlir::Value buildScalar(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Type elementType, double value);

/// `value` reshaped to `shape`, or `value` itself when it has that shape.
mlir::Value buildReshape(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value value, llvm::ArrayRef<int64_t> shape);

/// Batch normalization with the batch's own statistics.
struct BatchStatistics {
  /// (x - mean) / sqrt(var + epsilon) * scale + bias, the input's type.
  mlir::Value result;
  /// Per channel ([C]): the mean and the biased variance over N and the
  /// spatial dimensions. With the batch split over devices, each is a
  /// reduce_mean over a split dimension: a partial sum combined across the
  /// devices (synchronized batch norm).
  mlir::Value mean, variance;
  /// The elements each channel's statistics are over (N x spatial).
  int64_t count = 0;
};

/// The training form of `nn.batch_norm`: `input` is [N, C, ...], `scale`
/// and `bias` [C].
BatchStatistics
buildBatchNormWithBatchStatistics(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Value input, mlir::Value scale,
                                  mlir::Value bias, double epsilon);

/// `running * momentum + batch * (batchFactor * (1 - momentum))`, both of
/// one type: the update of a running statistic, `batchFactor` n / (n - 1)
/// for an unbiased variance.
mlir::Value buildRunningStatisticUpdate(mlir::OpBuilder &b, mlir::Location loc,
                                        mlir::Value running, mlir::Value batch,
                                        double momentum,
                                        double batchFactor = 1.0);

} // namespace parplan::nn

#endif // PARPLAN_DIALECT_NN_NNDECOMPOSITIONS_H
