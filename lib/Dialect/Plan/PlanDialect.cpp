//===- PlanDialect.cpp - plan dialect -------------------------------------===//

#include "parplan/Dialect/Plan/PlanDialect.h"
#include "parplan/Dialect/Plan/PlanOps.h"

using namespace mlir;
using namespace parplan::plan;

#include "parplan/Dialect/Plan/PlanDialect.cpp.inc"

void PlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "parplan/Dialect/Plan/PlanOps.cpp.inc"
      >();
}
