//===- Diagnostics.h - one-line diagnostics for the CLI ---------*- C++ -*-===//

#ifndef PARPLAN_TOOLS_PARPLAN_DIAGNOSTICS_H
#define PARPLAN_TOOLS_PARPLAN_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace parplan::cli {

/// While alive, prints every diagnostic of `context` to stderr as one line,
/// "file:line:col: error: message", the form compilers and editors read.
/// Notes attached to an error are dropped: the error line says what is wrong.
class OneLineDiagnostics {
public:
  explicit OneLineDiagnostics(mlir::MLIRContext &context);
  /// Each line is printed by calling `writer` with what prints it (a
  /// progress bar clears itself and stays away meanwhile).
  void setWriter(std::function<void(const std::function<void()> &)> writer) {
    this->writer = std::move(writer);
  }

private:
  std::function<void(const std::function<void()> &)> writer;
  std::optional<mlir::Location> lastErrorLocation;
  mlir::ScopedDiagnosticHandler handler;
};

/// Reads and parses an IR file, verifying it. On failure the reason has been
/// printed (one line naming the file) and the result is null.
mlir::OwningOpRef<mlir::ModuleOp> parseIRFile(const std::string &path,
                                              mlir::MLIRContext &context);

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_DIAGNOSTICS_H
