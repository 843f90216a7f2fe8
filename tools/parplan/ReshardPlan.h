//===- ReshardPlan.h - a cross-mesh move as an executable plan --*- C++ -*-===//
//
// The plan `parplan reshard -o` writes: docs/cross-mesh.md.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TOOLS_PARPLAN_RESHARDPLAN_H
#define PARPLAN_TOOLS_PARPLAN_RESHARDPLAN_H

#include "parplan/Cost/CrossMesh.h"
#include "parplan/Runtime/Tensor.h"
#include "parplan/Runtime/plan.pb.h"

#include <vector>

namespace parplan::cli {

/// A plan over devices 0 .. the largest of either mesh, with meshes
/// "source" and "destination": the tensor's source blocks are PARAMETER
/// buffers, its destination blocks OUTPUT buffers, and `schedule`'s
/// transfers of `tiles` move it between them (checkPlan accepts it).
plan::Plan buildReshardPlan(const cost::CrossMeshProblem &problem,
                            const std::vector<cost::CrossMeshTile> &tiles,
                            const cost::CrossMeshSchedule &schedule,
                            runtime::DType dtype);

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_RESHARDPLAN_H
