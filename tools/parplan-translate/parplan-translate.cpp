//===- parplan-translate.cpp - translations into and out of parplan IR ----===//
//
// --import-onnx: an ONNX model (binary, or ONNX text) to the nn dialect.
// --plan-to-proto: plan.program ops to a plan file (plan.proto) for
// parplan-run.
//
//===----------------------------------------------------------------------===//

#include "parplan/Import/OnnxImporter.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Target/PlanExport.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

llvm::cl::list<std::string>
    dimBindings("dim",
                llvm::cl::desc("Bind a symbolic ONNX dimension: NAME=VALUE "
                               "(repeatable), e.g. --dim batch=32; a name "
                               "a model lacks is ignored"),
                llvm::cl::value_desc("NAME=VALUE"));

llvm::cl::list<std::string> inputValueBindings(
    "input-value",
    llvm::cl::desc("Hold a graph input fixed, a constant: NAME=V or "
                   "NAME=V1,V2,... in row-major order (repeatable); a name "
                   "a model lacks is ignored"),
    llvm::cl::value_desc("NAME=VALUES"));

TranslateToMLIRRegistration importOnnx(
    "import-onnx", "ONNX model (binary or text) to the nn dialect",
    [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
       MLIRContext *context) -> OwningOpRef<Operation *> {
      parplan::OnnxImportOptions options;
      options.refuseUnusedDims = false;
      for (const std::string &binding : dimBindings)
        if (std::optional<std::string> problem =
                parplan::addDimBinding(options, binding)) {
          llvm::errs() << "parplan-translate: error: " << *problem << "\n";
          return nullptr;
        }
      for (const std::string &binding : inputValueBindings)
        if (std::optional<std::string> problem =
                parplan::addInputValueBinding(options, binding)) {
          llvm::errs() << "parplan-translate: error: " << *problem << "\n";
          return nullptr;
        }
      const llvm::MemoryBuffer *buffer =
          sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
      std::string error;
      OwningOpRef<ModuleOp> module = parplan::importOnnx(
          buffer->getBuffer(), buffer->getBufferIdentifier(), *context, options,
          error);
      if (!module) {
        llvm::errs() << "parplan-translate: error: " << error << "\n";
        return nullptr;
      }
      return OwningOpRef<Operation *>(module.release());
    },
    [](DialectRegistry &registry) { parplan::registerAllDialects(registry); });

TranslateFromMLIRRegistration planToProto(
    "plan-to-proto", "plan.program ops to a plan file (plan.proto)",
    [](Operation *op, llvm::raw_ostream &output) -> LogicalResult {
      auto module = dyn_cast<ModuleOp>(op);
      if (!module)
        return op->emitError() << "plan-to-proto translates a module";
      FailureOr<parplan::plan::Plan> plan = parplan::exportPlan(module);
      if (failed(plan))
        return failure();
      output << parplan::runtime::serializePlan(*plan);
      return success();
    },
    [](DialectRegistry &registry) { parplan::registerAllDialects(registry); });

} // namespace

int main(int argc, char **argv) {
  return failed(
      mlir::mlirTranslateMain(argc, argv, "parplan translation tool"));
}
