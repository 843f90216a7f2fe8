//===- ImportCommand.cpp - parplan import ---------------------------------===//

#include "Commands.h"
#include "Diagnostics.h"

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Support/Text.h"
#include "parplan/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>

using namespace mlir;

int parplan::cli::runImport(const ImportOptions &options) {
  OnnxImportOptions importOptions;
  for (const std::string &binding : options.dims)
    if (std::optional<std::string> problem =
            addDimBinding(importOptions, binding)) {
      fmt::print(stderr, "parplan: error: {}\n", *problem);
      return 1;
    }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(options.input, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (std::error_code error = buffer.getError()) {
    fmt::print(stderr, "parplan: error: cannot read '{}': {}\n", options.input,
               error.message());
    return 1;
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  std::string error;
  OwningOpRef<ModuleOp> module = importOnnx(
      (*buffer)->getBuffer(), options.input, context, importOptions, error);
  if (!module) {
    fmt::print(stderr, "parplan: error: {}\n", error);
    return 1;
  }
  if (!options.raw) {
    OneLineDiagnostics diagnostics(context);
    PassManager pm(&context);
    addCanonicalFormPasses(pm);
    if (failed(pm.run(*module)))
      return 1;
  }

  if (options.output.empty()) {
    module->print(llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }
  std::error_code fileError;
  llvm::raw_fd_ostream out(options.output, fileError, llvm::sys::fs::OF_Text);
  if (fileError) {
    fmt::print(stderr, "parplan: error: cannot write '{}': {}\n",
               options.output, fileError.message());
    return 1;
  }
  module->print(out);
  out << "\n";
  out.close();
  if (out.has_error()) {
    fmt::print(stderr, "parplan: error: cannot write '{}': {}\n",
               options.output, out.error().message());
    out.clear_error();
    return 1;
  }
  int64_t ops = 0, params = 0, paramElements = 0;
  module->walk([&](Operation *op) {
    if (!isa<nn::NNDialect>(op->getDialect()))
      return;
    ++ops;
    if (auto param = dyn_cast<nn::ParamOp>(op)) {
      ++params;
      paramElements += param.getType().getNumElements();
    }
  });
  fmt::print("wrote {}: {} nn ops, {} parameters ({} values)\n", options.output,
             ops, params, groupThousands(static_cast<uint64_t>(paramElements)));
  return 0;
}
