//===- SBPDialect.cpp - sbp dialect ---------------------------------------===//

#include "parplan/Dialect/SBP/SBPDialect.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Dialect/SBP/SBPOps.h"

#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace parplan::sbp;

#include "parplan/Dialect/SBP/SBPDialect.cpp.inc"

void SBPDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "parplan/Dialect/SBP/SBPOps.cpp.inc"
      >();
}
