//===- ReshardPlan.h - a cross-mesh move as an executable plan --*- C++ -*-===//

#ifndef PARPLAN_TOOLS_PARPLAN_RESHARDPLAN_H
#define PARPLAN_TOOLS_PARPLAN_RESHARDPLAN_H

#include "parplan/Cost/CrossMesh.h"
#include "parplan/Runtime/Tensor.h"
#include "parplan/Runtime/plan.pb.h"

#include <optional>
#include <string>

namespace parplan::cli {

/// The move of `problem` in `mode` and `balancing` on the cluster
/// `clusterNameOrPath`, as the plan the compiler lowers it to: the source
/// blocks are parameters (synthetic values, a function of each element's
/// logical index), the destination blocks outputs of the same tensor,
/// which `parplan-run --check` compares with those values. std::nullopt
/// with `error` set (one line) when it cannot be lowered.
std::optional<plan::Plan>
lowerReshardPlan(const cost::CrossMeshProblem &problem, runtime::DType dtype,
                 cost::CrossMeshMode mode, cost::CrossMeshBalancing balancing,
                 const std::string &clusterNameOrPath, std::string &error);

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_RESHARDPLAN_H
