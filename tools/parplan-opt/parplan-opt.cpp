//===- parplan-opt.cpp - mlir-opt for parplan's dialects and passes -------===//

#include "parplan/Driver/Passes.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace parplan::test {
void registerTestShardingRulesPass();
} // namespace parplan::test

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  parplan::registerAllPasses();
  parplan::driver::registerDriverPasses();
  parplan::test::registerTestShardingRulesPass();

  mlir::DialectRegistry registry;
  parplan::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "parplan optimizer driver\n", registry));
}
