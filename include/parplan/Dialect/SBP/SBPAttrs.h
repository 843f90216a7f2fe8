//===- SBPAttrs.h - Split / Broadcast / Partial attributes ------*- C++ -*-===//

#ifndef PARPLAN_DIALECT_SBP_SBPATTRS_H
#define PARPLAN_DIALECT_SBP_SBPATTRS_H

#include "parplan/Cost/Cluster.h"
#include "parplan/Dialect/AttrDouble.h"
#include "parplan/Sbp/Sbp.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

#include <string>

#include "parplan/Dialect/SBP/SBPEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "parplan/Dialect/SBP/SBPAttrs.h.inc"

namespace parplan::sbp {

/// The dialect's reduction kind as the vocabulary's (Support/Vocabulary.h)
/// and back: the only conversions between the two.
parplan::ReduceKind toReduceKind(ReduceKind kind);
ReduceKind toSbpReduceKind(parplan::ReduceKind kind);

/// The Support-level entry of an `#sbp.s`, `#sbp.b` or `#sbp.p` attribute;
/// std::nullopt for any other attribute.
std::optional<Sbp> toSbp(mlir::Attribute attr);

/// The Support-level nd-SBP of an array of SBP attributes. Requires every
/// element to be an SBP attribute (the op verifiers guarantee it).
NdSbp toNdSbp(mlir::ArrayAttr attrs);

/// The attribute form of a Support-level entry and nd-SBP.
mlir::Attribute getSbpAttr(mlir::MLIRContext *context, const Sbp &sbp);
mlir::ArrayAttr getNdSbpAttr(mlir::MLIRContext *context, const NdSbp &sbp);

} // namespace parplan::sbp

#endif // PARPLAN_DIALECT_SBP_SBPATTRS_H
