//===- ModelFiles.h - reading models and writing IR -------------*- C++ -*-===//
//
// What the subcommands that take a model share: reading an ONNX model (or an
// IR file) into the nn dialect, and writing IR to a file.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TOOLS_PARPLAN_MODELFILES_H
#define PARPLAN_TOOLS_PARPLAN_MODELFILES_H

#include "Commands.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace mlir {
class PassManager;
} // namespace mlir

namespace parplan::cli {

/// Imports the ONNX model at `path` (binary or text) with the `bindings`
/// and, unless `raw`, brings it to canonical form. A path ending in ".mlir"
/// is parsed as IR instead (`bindings` must be empty). On failure the
/// reason has been printed as one line and the result is null.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(const std::string &path,
                                            const ImportBindings &bindings,
                                            bool raw,
                                            mlir::MLIRContext &context);

/// Writes `module` to `path`, or to stdout when `path` is empty; false (the
/// reason printed) when it cannot.
bool writeIR(mlir::ModuleOp module, const std::string &path);

/// Writes `path` with `write`, whole or not at all (writeFileAtomically: a
/// failure leaves the previous file); prints "parplan: error: cannot
/// write ..." and returns false when the file cannot be written.
bool writeFile(const std::string &path,
               llvm::function_ref<void(llvm::raw_ostream &)> write);

/// Reads the cluster and the annotations file of `layout` once and carries
/// them on `module` (sbp.cluster, sbp.annotations) for the passes; prints
/// "parplan COMMAND: error: ..." and returns false when one cannot be read.
bool attachLayoutInputs(mlir::ModuleOp module, const LayoutOptions &layout,
                        const char *command);

/// Megatron's grid (driver::resolveMegatronGrid), its error printed as
/// "parplan COMMAND: error: ..."; false then.
bool resolveMegatronGrid(mlir::ModuleOp module, LayoutOptions &layout,
                         const char *command);

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_MODELFILES_H
