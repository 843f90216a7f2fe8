//===- Passes.h - the compile driver as a pass ------------------*- C++ -*-===//

#ifndef PARPLAN_DRIVER_PASSES_H
#define PARPLAN_DRIVER_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace parplan::driver {

#define GEN_PASS_DECL
#include "parplan/Driver/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "parplan/Driver/Passes.h.inc"

} // namespace parplan::driver

#endif // PARPLAN_DRIVER_PASSES_H
