//===- TraceComparison.h - measured kernels beside simulated -*- C++ -*-===//
//
// `parplan simulate PLAN --trace FILE --merge MEASURED.json` sets the
// kernels of a measured run (parplan-run --trace) beside the simulation of
// the same plan and sums them by op: where the cost model's compute times
// are off, and by how much (docs/simulate.md#measured-against-simulated).
// MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SIMULATE_TRACECOMPARISON_H
#define PARPLAN_SIMULATE_TRACECOMPARISON_H

#include "parplan/Runtime/Trace.h"

#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parplan::simulate {

/// One op's kernels, matched in both traces.
struct OpTimes {
  std::string op;
  int64_t kernels = 0;
  /// Seconds, summed over the kernels.
  double measured = 0, simulated = 0;
};

struct KernelComparison {
  /// Devices with a matched kernel.
  int64_t devices = 0;
  /// The simulated kernels; the measured ones matched to one of them; and
  /// the measured ones with none: the kernels a device runs for a
  /// cross-mesh move (the simulator times the move as a whole), or a trace
  /// of another plan, or devices the simulated trace shows as a class
  /// (--trace-devices).
  int64_t simulatedKernels = 0, matched = 0, unmatched = 0;
  /// Seconds, summed over the matched kernels.
  double measured = 0, simulated = 0;
  /// By op, the largest difference first (ties by name).
  std::vector<OpTimes> ops;
};

/// The kernel slices ("cat": "kernel") of `measured`, a trace as
/// parplan-run --trace writes it, matched to those of `simulated` by
/// device (the process's name, "device 3"), name, micro-batch, chunk and
/// pass, the k-th run of a name in time order to the k-th.
/// std::nullopt with `error` set when `measured` is not a trace.
std::optional<KernelComparison>
compareKernels(const runtime::Trace &simulated,
               const llvm::json::Value &measured, std::string &error);

} // namespace parplan::simulate

#endif // PARPLAN_SIMULATE_TRACECOMPARISON_H
