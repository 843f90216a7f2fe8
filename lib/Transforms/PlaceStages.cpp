//===- PlaceStages.cpp - ops on the meshes of the user's stages -----------===//
//
// The annotations file's `stages` (Whale's `stage`) name meshes over
// disjoint devices and the nodes that run on each. This pass declares each
// stage's sbp.mesh and puts every op of @main on one of them
// (`sbp.stage = @mesh`): a node a stage's glob matches is on that stage; a
// backward op has its forward node's name and an optimizer update its
// parameter's, so a stage takes its nodes' whole training step. Ops no glob
// matches (constants, the loss's seed, inputs) follow their data: an op
// reading staged values goes on the latest of their stages, and what is
// left on the earliest stage of its users.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Passes.h"

#include "parplan/Cost/Annotations.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Transforms/ShardingCostModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"

namespace parplan {
#define GEN_PASS_DEF_PLACESTAGES
#include "parplan/Transforms/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {

struct PlaceStagesPass : parplan::impl::PlaceStagesBase<PlaceStagesPass> {
  using PlaceStagesBase::PlaceStagesBase;

  void runOnOperation() override;
};

void PlaceStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::string error;
  std::optional<Annotations> annotations = carriedAnnotations(module, error);
  if (!annotations) {
    if (error.empty())
      return;
    module.emitError() << error;
    return signalPassFailure();
  }
  const std::vector<StagePin> &stages = annotations->stages;
  if (stages.empty())
    return;
  auto function = module.lookupSymbol<func::FuncOp>("main");
  if (!function || function.isExternal()) {
    module.emitError() << "place-stages places @main; the module has none";
    return signalPassFailure();
  }

  OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
  SmallVector<FlatSymbolRefAttr> meshes;
  for (const StagePin &stage : stages) {
    if (module.lookupSymbol(stage.mesh)) {
      module.emitError() << stage.location << ": stage '" << stage.mesh
                         << "': the module already has a symbol @" << stage.mesh
                         << "; place-stages runs once";
      return signalPassFailure();
    }
    sbp::MeshOp::create(builder, module.getLoc(), stage.mesh,
                        builder.getDenseI64ArrayAttr(stage.shape),
                        builder.getDenseI64ArrayAttr(stage.devices));
    meshes.push_back(FlatSymbolRefAttr::get(module.getContext(), stage.mesh));
  }

  Block &body = function.getBody().front();
  DenseMap<Operation *, size_t> stageOf;
  std::vector<bool> used(stages.size(), false);
  // The stages the user named, then the data flow forward.
  for (Operation &op : body.without_terminator()) {
    std::string name = nn::nodeName(&op);
    std::optional<size_t> matched;
    for (size_t s = 0; s < stages.size() && !name.empty(); ++s) {
      if (!stages[s].matches(name))
        continue;
      if (matched) {
        op.emitError() << stages[s].location << ": node '" << name
                       << "' is on stage '" << stages[*matched].mesh
                       << "' and on stage '" << stages[s].mesh << "' ("
                       << stages[*matched].location << ")";
        return signalPassFailure();
      }
      matched = s;
      used[s] = true;
    }
    if (!matched)
      for (Value operand : op.getOperands())
        if (Operation *producer = operand.getDefiningOp())
          if (auto found = stageOf.find(producer); found != stageOf.end())
            matched = std::max(matched.value_or(0), found->second);
    if (matched)
      stageOf[&op] = *matched;
  }
  for (size_t s = 0; s < stages.size(); ++s)
    if (!used[s]) {
      module.emitError() << stages[s].location << ": stage '" << stages[s].mesh
                         << "' matches no node of @main";
      return signalPassFailure();
    }
  // What reads nothing staged goes where its first reader is.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (stageOf.count(&op))
      continue;
    std::optional<size_t> earliest;
    for (Operation *user : op.getUsers())
      if (auto found = stageOf.find(user); found != stageOf.end())
        earliest = std::min(earliest.value_or(stages.size()), found->second);
    stageOf[&op] = earliest.value_or(0);
  }
  for (Operation &op : body.without_terminator())
    op.setAttr("sbp.stage", meshes[stageOf[&op]]);
}

} // namespace
