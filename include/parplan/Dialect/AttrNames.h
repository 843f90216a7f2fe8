//===- AttrNames.h - the discardable attributes passes hand on --*- C++ -*-===//
//
// The names of the attributes one stage leaves for the next, in one place,
// so that a writer and its readers cannot spell one differently. The
// dialects' verifiers check what each holds (docs/dialects.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DIALECT_ATTRNAMES_H
#define PARPLAN_DIALECT_ATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace parplan {

/// On the module: the cluster the program is laid out for (#sbp.cluster).
inline constexpr llvm::StringLiteral kClusterAttrName = "sbp.cluster";
/// On the module: the pinned layouts' file and text ({file, text}).
inline constexpr llvm::StringLiteral kAnnotationsAttrName = "sbp.annotations";
/// On a plan module: the cluster the layouts were priced on, as the JSON
/// text plan.proto's `cluster` holds (the plan dialect knows no sbp).
inline constexpr llvm::StringLiteral kPlanClusterAttrName = "plan.cluster";

} // namespace parplan

#endif // PARPLAN_DIALECT_ATTRNAMES_H
