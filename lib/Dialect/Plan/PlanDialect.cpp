//===- PlanDialect.cpp - plan dialect -------------------------------------===//

#include "parplan/Dialect/Plan/PlanDialect.h"
#include "parplan/Dialect/Plan/PlanOps.h"

using namespace mlir;
using namespace parplan::plan;

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

#include "parplan/Dialect/Plan/PlanDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "parplan/Dialect/Plan/PlanAttrs.cpp.inc"

void PlanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "parplan/Dialect/Plan/PlanOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "parplan/Dialect/Plan/PlanAttrs.cpp.inc"
      >();
}
