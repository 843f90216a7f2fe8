//===- ModelFiles.cpp - reading models and writing IR ---------------------===//

#include "ModelFiles.h"

#include "Diagnostics.h"

#include "parplan/Cost/Mesh.h"
#include "parplan/Driver/Compile.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/Support/Files.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>

using namespace mlir;

OwningOpRef<ModuleOp> parplan::cli::loadModel(const std::string &path,
                                              const ImportBindings &bindings,
                                              bool raw, MLIRContext &context) {
  if (llvm::StringRef(path).ends_with(".mlir")) {
    if (!bindings.empty()) {
      fmt::print(stderr,
                 "parplan: error: --dim and --input-value bind an ONNX "
                 "model's inputs; '{}' is IR\n",
                 path);
      return nullptr;
    }
    return parseIRFile(path, context);
  }
  OnnxImportOptions importOptions;
  std::optional<std::string> problem;
  for (const std::string &binding : bindings.dims)
    if (!problem)
      problem = addDimBinding(importOptions, binding);
  for (const std::string &binding : bindings.inputValues)
    if (!problem)
      problem = addInputValueBinding(importOptions, binding);
  if (problem) {
    fmt::print(stderr, "parplan: error: {}\n", *problem);
    return nullptr;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (std::error_code error = buffer.getError()) {
    fmt::print(stderr, "parplan: error: cannot read '{}': {}\n", path,
               error.message());
    return nullptr;
  }
  std::string error;
  OwningOpRef<ModuleOp> module =
      importOnnx((*buffer)->getBuffer(), path, context, importOptions, error);
  if (!module) {
    fmt::print(stderr, "parplan: error: {}\n", error);
    return nullptr;
  }
  if (!raw) {
    OneLineDiagnostics diagnostics(context);
    PassManager pm(&context);
    addCanonicalFormPasses(pm);
    if (failed(pm.run(*module)))
      return nullptr;
  }
  return module;
}

bool parplan::cli::writeFile(
    const std::string &path,
    llvm::function_ref<void(llvm::raw_ostream &)> write) {
  // "-" is standard output, as for LLVM's tools.
  if (path == "-") {
    write(llvm::outs());
    llvm::outs().flush();
    return true;
  }
  std::string text;
  llvm::raw_string_ostream out(text);
  write(out);
  out.flush();
  if (std::optional<std::string> problem = writeFileAtomically(path, text)) {
    fmt::print(stderr, "parplan: error: {}\n", *problem);
    return false;
  }
  return true;
}

bool parplan::cli::writeIR(ModuleOp module, const std::string &path) {
  auto print = [&](llvm::raw_ostream &out) {
    module.print(out);
    out << "\n";
  };
  if (!path.empty())
    return writeFile(path, print);
  print(llvm::outs());
  return true;
}

bool parplan::cli::attachLayoutInputs(mlir::ModuleOp module,
                                      const LayoutOptions &layout,
                                      const char *command) {
  std::string error;
  if (attachCluster(module, layout.cluster, error) &&
      (layout.annotations.empty() ||
       attachAnnotations(module, layout.annotations, error)))
    return true;
  llvm::errs() << "parplan " << command << ": error: " << error << "\n";
  return false;
}

bool parplan::cli::resolveMegatronGrid(mlir::ModuleOp module,
                                       LayoutOptions &layout,
                                       const char *command) {
  if (std::optional<std::string> why =
          driver::resolveMegatronGrid(module, layout)) {
    llvm::errs() << "parplan " << command << ": error: " << *why << "\n";
    return false;
  }
  return true;
}
