//===- ReshardPlan.cpp - a cross-mesh move as an executable plan ----------===//
//
// `parplan reshard -o`: the move is written as the program the compiler
// would make of it, a parameter on the source mesh moved by sbp.cross_mesh
// to the destination mesh and returned as an output, and lowered by
// lower-to-plan: the plan parplan-run executes is the one a training step
// on stages gets for the same move. Devices of neither mesh form a third
// mesh with nothing to do.
//
//===----------------------------------------------------------------------===//

#include "ReshardPlan.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Target/PlanExport.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <set>

using namespace mlir;
using namespace parplan;

namespace {

/// A block's value bound for integer tensors: the synthetic values are
/// then distinct over large blocks.
constexpr int64_t kIntegerBound = int64_t{1} << 30;

} // namespace

std::optional<plan::Plan> parplan::cli::lowerReshardPlan(
    const cost::CrossMeshProblem &problem, runtime::DType dtype,
    cost::CrossMeshMode mode, cost::CrossMeshBalancing balancing,
    const std::string &clusterNameOrPath, std::string &error) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler firstError(&context, [&](Diagnostic &diagnostic) {
    if (error.empty() && diagnostic.getSeverity() == DiagnosticSeverity::Error)
      error = diagnostic.str();
    return success();
  });

  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(parplan::kSourceAttrName,
                     b.getStringAttr("reshard " + problem.tensor));
  if (!attachCluster(*module, clusterNameOrPath, error))
    return std::nullopt;
  b.setInsertionPointToEnd(module->getBody());
  std::set<int64_t> idle;
  for (const cost::DeviceMesh *mesh : {&problem.source, &problem.destination})
    for (int64_t device = 0; device <= *std::max_element(mesh->devices.begin(),
                                                         mesh->devices.end());
         ++device)
      idle.insert(device);
  for (const cost::DeviceMesh *mesh : {&problem.source, &problem.destination})
    for (int64_t device : mesh->devices)
      idle.erase(device);
  auto declare = [&](StringRef name, ArrayRef<int64_t> shape,
                     ArrayRef<int64_t> devices) {
    sbp::MeshOp::create(b, loc, name, b.getDenseI64ArrayAttr(shape),
                        b.getDenseI64ArrayAttr(devices), ArrayAttr());
    return FlatSymbolRefAttr::get(&context, name);
  };
  FlatSymbolRefAttr source =
      declare("source", problem.source.shape, problem.source.devices);
  FlatSymbolRefAttr destination = declare(
      "destination", problem.destination.shape, problem.destination.devices);
  if (!idle.empty())
    declare("idle", {static_cast<int64_t>(idle.size())},
            std::vector<int64_t>(idle.begin(), idle.end()));

  Type element = parseType(runtime::toString(dtype), &context);
  auto type = RankedTensorType::get(problem.shape, element);
  auto function =
      func::FuncOp::create(b, loc, "main", b.getFunctionType({}, {type}));
  function.setResultAttr(0, parplan::kOutputAttrName,
                         b.getStringAttr(problem.tensor));
  b.setInsertionPointToStart(function.addEntryBlock());
  auto from = sbp::getNdSbpAttr(&context, problem.sourceLayout);
  auto to = sbp::getNdSbpAttr(&context, problem.destinationLayout);
  auto param = nn::ParamOp::create(b, loc, type, problem.tensor, StringAttr(),
                                   StringAttr(), DenseI64ArrayAttr());
  param->setAttr(
      parplan::kShardingAttrName,
      sbp::ShardingAttr::get(&context, "source", {}, {problem.sourceLayout}));
  auto move = sbp::CrossMeshOp::create(
      b, loc, type, param.getResult(), source, from, destination, to,
      b.getStringAttr(cost::toString(mode)),
      b.getStringAttr(cost::toString(balancing)), FloatAttr());
  func::ReturnOp::create(b, loc, move.getResult());

  PassManager pm(&context);
  pm.addPass(createLowerToPlan());
  if (failed(verify(*module)) || failed(pm.run(*module))) {
    if (error.empty())
      error = "the move does not lower";
    return std::nullopt;
  }
  // Integer blocks take distinct values, so that a misplaced element shows.
  if (!isa<FloatType>(element))
    module->walk([&](plan::BufferOp buffer) {
      if (buffer.getName())
        buffer.setValueBoundAttr(b.getI64IntegerAttr(kIntegerBound));
    });
  FailureOr<plan::Plan> plan = exportPlan(*module);
  if (failed(plan)) {
    if (error.empty())
      error = "the move's plan does not export";
    return std::nullopt;
  }
  return std::move(*plan);
}
