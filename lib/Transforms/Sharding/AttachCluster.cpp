//===- AttachCluster.cpp - the cluster the passes lay a program out for ---===//
//
// The one place a pass resolves a cluster: the passes after it read the
// attribute through ClusterAnalysis.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/Sharding/Passes.h"

#include "parplan/Transforms/Sharding/ClusterAnalysis.h"

namespace parplan {
#define GEN_PASS_DEF_ATTACHCLUSTER
#include "parplan/Transforms/Sharding/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan;

namespace {
struct AttachClusterPass
    : public parplan::impl::AttachClusterBase<AttachClusterPass> {
  using AttachClusterBase::AttachClusterBase;

  void runOnOperation() override {
    std::string error;
    if (!attachCluster(getOperation(), cluster, error)) {
      getOperation().emitError() << "attach-cluster: " << error;
      return signalPassFailure();
    }
  }
};
} // namespace
