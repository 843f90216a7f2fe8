//===- Debug.h - why a search decided as it did -----------------*- C++ -*-===//
//
// LLVM's `-debug-only` and LLVM_DEBUG exist only in builds of LLVM with
// assertions, which the Debian packages parplan builds against are not; the
// searches explain their decisions through this instead, in every build.
// `parplan-opt -parplan-debug-only=sbp-assign` (or `parplan compile
// --debug-only sbp-assign`) prints each decision of the named searches to
// stderr, one line each, prefixed with the search's name (docs/cli.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_DEBUG_H
#define PARPLAN_TRANSFORMS_DEBUG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace parplan {

/// The searches that explain themselves, by the names -parplan-debug-only
/// takes.
inline constexpr llvm::StringLiteral kSbpAssignDebugType = "sbp-assign";
inline constexpr llvm::StringLiteral kPipelineSearchDebugType =
    "pipeline-search";
inline constexpr llvm::StringLiteral kRecomputeDebugType = "recompute";

/// Whether `-parplan-debug-only` (or enableDebugType) names `type`.
bool isDebugEnabled(llvm::StringRef type);

/// Turns `type`'s explanations on, as -parplan-debug-only=type does; false
/// (and nothing turned on) when no search has that name.
bool enableDebugType(llvm::StringRef type);

/// The names enableDebugType takes, comma-separated (for messages).
std::string debugTypeNames();

/// A line of `type`'s explanation: stderr, prefixed with `[type] `.
llvm::raw_ostream &debugLine(llvm::StringRef type);

} // namespace parplan

/// Runs `X` (which writes through debugLine) when `TYPE` is enabled.
#define PARPLAN_DEBUG(TYPE, X)                                                 \
  do {                                                                         \
    if (::parplan::isDebugEnabled(TYPE)) {                                     \
      X;                                                                       \
    }                                                                          \
  } while (false)

#endif // PARPLAN_TRANSFORMS_DEBUG_H
