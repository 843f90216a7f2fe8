//===- NNInterfaces.cpp - the nn op interface -----------------------------===//

#include "parplan/Dialect/NN/NNInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

#include "parplan/Dialect/NN/NNInterfaces.cpp.inc"

LogicalResult parplan::nn::detail::sliceResultTypes(
    Operation *op, ArrayRef<NdSbp> resultSbps, ArrayRef<int64_t> meshShape,
    ArrayRef<int64_t> coordinate, SmallVectorImpl<Type> &localTypes) {
  if (resultSbps.size() != op->getNumResults())
    return op->emitOpError()
           << "has " << op->getNumResults() << " results but "
           << resultSbps.size() << " result layouts were given";
  std::vector<int64_t> mesh(meshShape.begin(), meshShape.end());
  std::vector<int64_t> coord(coordinate.begin(), coordinate.end());
  if (coord.size() != mesh.size())
    return op->emitOpError() << "mesh coordinate has " << coord.size()
                             << " entries for a mesh of rank " << mesh.size();
  for (size_t i = 0; i < coord.size(); ++i)
    if (coord[i] < 0 || coord[i] >= mesh[i])
      return op->emitOpError() << "mesh coordinate " << coord[i]
                               << " is out of range for mesh axis " << i
                               << " of size " << mesh[i];
  for (auto [result, sbp] : llvm::zip_equal(op->getResults(), resultSbps)) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || !type.hasStaticShape())
      return op->emitOpError() << "result of type " << result.getType()
                               << " has no static shape to slice";
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    if (std::optional<std::string> problem = checkLayout(shape, mesh, sbp))
      return op->emitOpError() << *problem;
    localTypes.push_back(type.clone(localShape(shape, mesh, sbp, coord)));
  }
  return success();
}
