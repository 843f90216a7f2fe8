//===- MlirTestContext.h - an MLIR context for the unit tests ---*- C++ -*-===//
//
// Every dialect and pass registered, diagnostics collected into a string
// that the tests print with INFO, and pipelines run with one call.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TEST_UNIT_MLIRTESTCONTEXT_H
#define PARPLAN_TEST_UNIT_MLIRTESTCONTEXT_H

#include "parplan/InitAllDialects.h"
#include "parplan/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <catch2/catch.hpp>

#include <string>

namespace parplan::testing {

struct MlirTestContext {
  MlirTestContext() {
    static const bool passesRegistered = (registerAllPasses(), true);
    (void)passesRegistered;
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.getDiagEngine().registerHandler(
        [this](mlir::Diagnostic &diagnostic) {
          diagnostics += diagnostic.str() + "\n";
          return mlir::success();
        });
  }

  /// Runs a textual pass pipeline ("nn-autodiff{optimizer=sgd},...") on
  /// `module`; the test fails with the diagnostics if it does not succeed.
  void runPipeline(mlir::ModuleOp module, const std::string &pipeline) {
    mlir::PassManager pm(&context);
    REQUIRE(succeeded(mlir::parsePassPipeline(pipeline, pm)));
    INFO(diagnostics);
    REQUIRE(succeeded(pm.run(module)));
  }

  mlir::MLIRContext context;
  std::string diagnostics;
};

} // namespace parplan::testing

#endif // PARPLAN_TEST_UNIT_MLIRTESTCONTEXT_H
