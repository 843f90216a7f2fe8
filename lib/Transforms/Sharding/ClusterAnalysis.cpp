//===- ClusterAnalysis.cpp - the cluster a module is laid out for ---------===//

#include "parplan/Transforms/Sharding/ClusterAnalysis.h"

using namespace mlir;
using namespace parplan;

sbp::ClusterAttr parplan::clusterAttrOf(Operation *scope) {
  if (!scope)
    return {};
  auto module = dyn_cast<ModuleOp>(scope);
  if (!module)
    module = scope->getParentOfType<ModuleOp>();
  return module ? module->getAttrOfType<sbp::ClusterAttr>(kClusterAttrName)
                : sbp::ClusterAttr();
}

const cost::Cluster *parplan::clusterOf(Operation *scope, std::string &error) {
  if (sbp::ClusterAttr attr = clusterAttrOf(scope))
    return attr.getCluster();
  error = kMissingClusterMessage.str();
  return nullptr;
}

bool parplan::attachCluster(ModuleOp module,
                            const std::string &clusterNameOrPath,
                            std::string &error) {
  sbp::ClusterAttr cluster =
      sbp::ClusterAttr::resolve(module.getContext(), clusterNameOrPath, error);
  if (!cluster)
    return false;
  module->setAttr(kClusterAttrName, cluster);
  return true;
}

ClusterAnalysis::ClusterAnalysis(Operation *op)
    : module(op), attr(clusterAttrOf(op)) {
  if (attr)
    cluster = attr.getCluster();
}

const cost::Cluster *ClusterAnalysis::require(Operation *op,
                                              StringRef pass) const {
  if (!cluster)
    op->emitError() << pass << ": " << kMissingClusterMessage;
  return cluster;
}
