//===- OnnxImporter.h - ONNX to the nn dialect ------------------*- C++ -*-===//
//
// Reads an ONNX model and builds one func.func of `nn` ops with a static
// shape on every value. Weight bytes never enter the IR: parameters name
// where they live. See docs/onnx-import.md.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_IMPORT_ONNXIMPORTER_H
#define PARPLAN_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parplan {

struct OnnxImportOptions {
  /// Values for symbolic dimensions (dim_param), e.g. {"batch", 32}.
  std::map<std::string, int64_t> dims;
  /// Fixed values for graph inputs, by name, in row-major order: each such
  /// input becomes a constant, so that what depends on it folds (a sample
  /// rate that selects an If branch, a flag, a length).
  std::map<std::string, std::vector<double>> inputValues;
  /// Fail the import on a binding of `dims` or `inputValues` that no graph
  /// input has (a typo, or a batch for a model whose batch is fixed).
  /// parplan-translate turns it off: one set of bindings serves every split
  /// of a test file.
  bool refuseUnusedDims = true;
  /// Name of the function the graph becomes.
  std::string functionName = "main";
};

/// Adds one `--dim` binding, "NAME=VALUE" with a positive integer VALUE, to
/// `options.dims`. Returns the reason when `binding` is malformed.
std::optional<std::string> addDimBinding(OnnxImportOptions &options,
                                         llvm::StringRef binding);

/// Adds one `--input-value` binding, "NAME=V[,V...]" with numbers V, to
/// `options.inputValues`. Returns the reason when `binding` is malformed.
std::optional<std::string> addInputValueBinding(OnnxImportOptions &options,
                                                llvm::StringRef binding);

/// Imports the ONNX model in `bytes` (binary protobuf, or the ONNX text
/// format when the first non-blank character is '<'); `path` names the model
/// in messages and locates external data. On failure returns null and sets
/// `error` to one line that starts with `path` and names the node, input or
/// field at fault. Never throws.
mlir::OwningOpRef<mlir::ModuleOp> importOnnx(llvm::StringRef bytes,
                                             llvm::StringRef path,
                                             mlir::MLIRContext &context,
                                             const OnnxImportOptions &options,
                                             std::string &error);

/// The ONNX op types (default domain) the importer converts, sorted.
std::vector<std::string> supportedOnnxOps();

} // namespace parplan

#endif // PARPLAN_IMPORT_ONNXIMPORTER_H
