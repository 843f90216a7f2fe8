//===- OnnxImportFuzzer.cpp - Fuzz target of the ONNX importer ------------===//
//
// Each input is an ONNX model, binary or in ONNX's text format (importOnnx
// tells them apart as parplan does). A refusal is one line naming the
// model; a model imported verifies (the importer checks it, and a module
// that does not verify is refused: refused the same way, in one line).
// The symbolic sizes the tests and examples use are bound, so that models
// with a dynamic batch import too.
//
//===----------------------------------------------------------------------===//

#include "FuzzContract.h"

#include "parplan/Import/OnnxImporter.h"
#include "parplan/InitAllDialects.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

using namespace parplan;

namespace {

constexpr const char *kModelPath = "fuzz-model.onnx";

/// A context for many inputs, made again now and then: types and
/// attributes live as long as their context, and every input names new
/// ones.
mlir::MLIRContext &freshEnoughContext() {
  static std::unique_ptr<mlir::MLIRContext> context;
  static int inputs = 0;
  if (!context || ++inputs % 2000 == 0) {
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(
        registry, mlir::MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    // The importer says what went wrong in its error; nothing on stderr.
    context->getDiagEngine().registerHandler(
        [](mlir::Diagnostic &) { return mlir::success(); });
  }
  return *context;
}

const OnnxImportOptions &importOptions() {
  static const OnnxImportOptions options = [] {
    OnnxImportOptions made;
    for (const char *name : {"batch", "batch_size", "N", "sequence", "seq",
                             "seq_len", "sequence_length", "unk__0"})
      made.dims[name] = 2;
    made.refuseUnusedDims = false;
    return made;
  }();
  return options;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::MLIRContext &context = freshEnoughContext();
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importOnnx(bytes, kModelPath, context, importOptions(), error);
  if (!module) {
    fuzz::requireOneLineError(error, kModelPath);
    return 0;
  }
  fuzz::require(error.empty(), "an imported model came with an error", error);
  fuzz::require(succeeded(mlir::verify(*module)),
                "an imported model does not verify");
  return 0;
}
