//===- InitAllDialects.h - register parplan's dialects ----------*- C++ -*-===//

#ifndef PARPLAN_INITALLDIALECTS_H
#define PARPLAN_INITALLDIALECTS_H

#include "parplan/Dialect/NN/NNDialect.h"
#include "parplan/Dialect/Plan/PlanDialect.h"
#include "parplan/Dialect/SBP/SBPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace parplan {

/// Adds the nn, sbp and plan dialects, and func, which holds nn programs, to
/// `registry`.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<nn::NNDialect, sbp::SBPDialect, plan::PlanDialect,
                  mlir::func::FuncDialect>();
}

} // namespace parplan

#endif // PARPLAN_INITALLDIALECTS_H
