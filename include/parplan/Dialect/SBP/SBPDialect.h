//===- SBPDialect.h - sbp dialect -------------------------------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_SBP_SBPDIALECT_H
#define PARPLAN_DIALECT_SBP_SBPDIALECT_H

#include "mlir/IR/Dialect.h"

#include <memory>

namespace parplan::cost {
struct Cluster;
} // namespace parplan::cost

namespace parplan::sbp::detail {
/// The clusters #sbp.cluster attributes hold (SBPAttrs.cpp).
class ClusterTable;
} // namespace parplan::sbp::detail

#include "parplan/Dialect/SBP/SBPDialect.h.inc"

#endif // PARPLAN_DIALECT_SBP_SBPDIALECT_H
