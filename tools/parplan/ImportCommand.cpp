//===- ImportCommand.cpp - parplan import ---------------------------------===//

#include "Commands.h"
#include "ModelFiles.h"

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Support/Text.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>

using namespace mlir;

int parplan::cli::runImport(const ImportOptions &options) {
  if (llvm::StringRef(options.input).ends_with(".mlir")) {
    fmt::print(stderr, "parplan: error: '{}' is IR; import reads ONNX models\n",
               options.input);
    return 1;
  }
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module =
      loadModel(options.input, options.bindings, options.raw, context);
  if (!module)
    return 1;
  if (!writeIR(*module, options.output))
    return 1;
  if (options.output.empty())
    return 0;
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
