//===- ClusterAnalysis.h - the cluster a module is laid out for -*- C++ -*-===//
//
// Every pass that prices layouts, places stages or plans moves reads the
// hardware from one place: the #sbp.cluster the module carries as
// `sbp.cluster`, attached once by attach-cluster, parplan-compile or the
// tools. No pass takes a cluster option or reads a file (docs/cluster.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_CLUSTERANALYSIS_H
#define PARPLAN_TRANSFORMS_CLUSTERANALYSIS_H

#include "parplan/Cost/Cluster.h"
#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/AnalysisManager.h"

#include <string>

namespace parplan {

/// What a pass says of a module that carries no cluster and needs one.
inline constexpr llvm::StringLiteral kMissingClusterMessage =
    "the module carries no cluster (sbp.cluster); attach one with "
    "--attach-cluster=\"cluster=NAME\" or compile with parplan compile "
    "--cluster";

/// The #sbp.cluster the module of `scope` carries, or a null attribute.
sbp::ClusterAttr clusterAttrOf(mlir::Operation *scope);

/// The cluster the module of `scope` carries; nullptr, with `error` set to
/// kMissingClusterMessage, when it carries none.
const cost::Cluster *clusterOf(mlir::Operation *scope, std::string &error);

/// Resolves `clusterNameOrPath` (a preset or a file, read once here) and
/// attaches it to `module` as `sbp.cluster`, in place of any it carried.
/// Returns false with `error` set when the cluster cannot be resolved.
bool attachCluster(mlir::ModuleOp module, const std::string &clusterNameOrPath,
                   std::string &error);

/// The cluster of a module, for the passes over it: built on the module,
/// kept by the analysis manager while passes preserve it.
class ClusterAnalysis {
public:
  explicit ClusterAnalysis(mlir::Operation *op);

  /// The cluster, or nullptr when the module carries none.
  const cost::Cluster *getCluster() const { return cluster; }

  /// The cluster; without one, emits on `op` the one line "PASS: the module
  /// carries no cluster ..." and returns nullptr.
  const cost::Cluster *require(mlir::Operation *op, llvm::StringRef pass) const;

  /// Stale only when a pass attached another cluster: the cluster itself
  /// lives in the context, whatever else the pass changed.
  bool isInvalidated(const mlir::AnalysisManager::PreservedAnalyses &) {
    return clusterAttrOf(module) != attr;
  }

private:
  mlir::Operation *module;
  sbp::ClusterAttr attr;
  const cost::Cluster *cluster = nullptr;
};

} // namespace parplan

#endif // PARPLAN_TRANSFORMS_CLUSTERANALYSIS_H
