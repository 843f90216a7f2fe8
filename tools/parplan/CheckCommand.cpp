//===- CheckCommand.cpp - parplan check -----------------------------------===//

#include "Commands.h"
#include "Diagnostics.h"

#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/InitAllDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

using namespace mlir;

int parplan::cli::runCheck(const CheckOptions &options) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module = parseIRFile(options.input, context);
  if (!module)
    return 1;

  // Ops per dialect, in order of first appearance.
  llvm::MapVector<StringRef, int> opsPerDialect;
  std::vector<std::string> meshes;
  std::vector<std::string> programDevices;
  int groups = 0, annotations = 0, boxings = 0, crossMesh = 0;
  module->walk([&](Operation *op) {
    if (op == module->getOperation())
      return;
    ++opsPerDialect[op->getName().getDialectNamespace()];
    if (auto mesh = dyn_cast<sbp::MeshOp>(op))
      meshes.push_back(
          fmt::format("@{} {} ({} devices)", mesh.getSymName().str(),
                      fmt::join(mesh.getShape(), "x"), mesh.getNumDevices()));
    else if (isa<sbp::AnnotateOp>(op))
      ++annotations;
    else if (isa<sbp::BoxingOp>(op))
      ++boxings;
    else if (isa<sbp::CrossMeshOp>(op))
      ++crossMesh;
    else if (auto program = dyn_cast<plan::ProgramOp>(op))
      programDevices.push_back(
          fmt::format("{}", fmt::join(program.getDevices(), ", ")));
    else if (isa<plan::GroupOp>(op))
      ++groups;
  });

  fmt::print("{}: valid\n", options.input);
  std::vector<std::string> dialects;
  for (auto &[dialect, count] : opsPerDialect)
    dialects.push_back(fmt::format("{} ({} ops)", dialect.str(), count));
  fmt::print("  dialects: {}\n",
             dialects.empty() ? std::string("none")
                              : fmt::format("{}", fmt::join(dialects, ", ")));
  if (!meshes.empty())
    fmt::print("  meshes:   {}\n", fmt::join(meshes, ", "));
  if (annotations + boxings + crossMesh > 0)
    fmt::print("  layouts:  {} annotated, {} boxings, {} cross-mesh moves\n",
               annotations, boxings, crossMesh);
  if (!programDevices.empty())
    fmt::print("  programs: {} (devices {}), {} device groups\n",
               programDevices.size(), fmt::join(programDevices, "; "), groups);
  if (options.printIR) {
    std::fflush(stdout);
    module->print(llvm::outs());
    llvm::outs() << "\n";
    llvm::outs().flush();
  }
  return 0;
}
