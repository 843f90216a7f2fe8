//===- PlanGroups.h - a plan's meshes and groups, as devices see them ----===//
//
// Shared by the plan checker (PlanCheck.cpp) and the per-device views of
// PlanFile.cpp; private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_PLANGROUPS_H
#define PARPLAN_LIB_RUNTIME_PLANGROUPS_H

#include "parplan/Runtime/PlanFile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parplan::runtime::detail {

template <typename List> std::vector<int64_t> toVector(const List &list) {
  return std::vector<int64_t>(list.begin(), list.end());
}

/// The mesh named `name` in `planMessage` (mesh_shape for ""), which must
/// exist.
inline PlacedMesh meshView(const plan::Plan &planMessage,
                           const std::string &name) {
  if (name.empty()) {
    PlacedMesh mesh{toVector(planMessage.mesh_shape()), {}};
    for (const plan::Weights &axis : planMessage.mesh_shares())
      mesh.shares.push_back(toVector(axis.weights()));
    return mesh;
  }
  for (const plan::Mesh &mesh : planMessage.meshes())
    if (mesh.name() == name)
      return {toVector(mesh.shape()), toVector(mesh.devices())};
  return {};
}

/// The rank of `device` in `group` (row-major over a mesh-axes group's
/// axes of `mesh`, the group's); -1 when it is no member.
inline int64_t rankInGroup(const plan::Group &group, const PlacedMesh &mesh,
                           int64_t device) {
  for (int r = 0; r < group.devices_size(); ++r)
    if (group.devices(r) == device)
      return r;
  if (group.mesh_axes_size() == 0)
    return -1;
  return mesh.rank(toVector(group.mesh_axes()), device);
}

/// The devices of `group` as `device` sees it, in rank order; `mesh` is
/// the group's and holds `device`.
inline std::vector<int64_t>
groupDevices(const plan::Group &group, const PlacedMesh &mesh, int64_t device) {
  if (group.devices_size() != 0)
    return toVector(group.devices());
  return mesh.group(toVector(group.mesh_axes()), device);
}

} // namespace parplan::runtime::detail

#endif // PARPLAN_LIB_RUNTIME_PLANGROUPS_H
