//===- NNDialect.cpp - nn dialect -----------------------------------------===//

#include "parplan/Dialect/NN/NNDialect.h"
#include "parplan/Dialect/NN/NNOps.h"

using namespace mlir;
using namespace parplan::nn;

#include "parplan/Dialect/NN/NNDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "parplan/Dialect/NN/NNOps.cpp.inc"
      >();
}

Operation *NNDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
