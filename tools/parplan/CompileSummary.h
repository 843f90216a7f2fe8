//===- CompileSummary.h - what parplan compile prints and writes -*- C++
//-*-===//

#ifndef PARPLAN_TOOLS_PARPLAN_COMPILESUMMARY_H
#define PARPLAN_TOOLS_PARPLAN_COMPILESUMMARY_H

#include "Commands.h"

#include "parplan/Driver/Compile.h"
#include "parplan/Simulate/Simulator.h"

#include "llvm/Support/JSON.h"

#include <optional>

namespace parplan::cli {

/// Writes summary.json (docs/cli.md#summary-json) of a compile that took
/// `compileSeconds`, with the simulated step when the plan was simulated.
void writeSummaryJson(llvm::raw_ostream &out, const CompileOptions &options,
                      const driver::CompileResult &result,
                      double compileSeconds,
                      const std::optional<simulate::Simulation> &simulated);

/// The lines of the search under the summary's first: its starts, the
/// stage counts, stages, micro-batches and schedules it tried, and the
/// recomputation.
void printSearch(const CompileOptions &options,
                 const driver::CompileResult &result);

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_COMPILESUMMARY_H
