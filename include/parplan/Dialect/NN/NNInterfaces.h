//===- NNInterfaces.h - the nn op interface ---------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_NN_NNINTERFACES_H
#define PARPLAN_DIALECT_NN_NNINTERFACES_H

#include "parplan/Sbp/Sbp.h"

#include "mlir/IR/OpDefinition.h"

namespace parplan {

/// One candidate layout of an op along one mesh axis: the SBP of each operand
/// and of each result, in operand and result order.
struct SbpSignature {
  std::vector<Sbp> operands;
  std::vector<Sbp> results;
};

/// What an op costs on its logical shapes, before any sharding.
struct OpCost {
  double flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
};

namespace nn::detail {
/// Default of ShardableOpInterface::getLocalResultTypes: slices every ranked
/// tensor result with the shared slicing math.
mlir::LogicalResult
sliceResultTypes(mlir::Operation *op, llvm::ArrayRef<NdSbp> resultSbps,
                 llvm::ArrayRef<int64_t> meshShape,
                 llvm::ArrayRef<int64_t> coordinate,
                 llvm::SmallVectorImpl<mlir::Type> &localTypes);
} // namespace nn::detail

} // namespace parplan

#include "parplan/Dialect/NN/NNInterfaces.h.inc"

#endif // PARPLAN_DIALECT_NN_NNINTERFACES_H
