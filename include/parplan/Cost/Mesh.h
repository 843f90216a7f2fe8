//===- Mesh.h - logical device meshes over a cluster ------------*- C++ -*-===//
//
// A device mesh lays physical devices out on a logical n-d grid, row-major
// (the last axis varies fastest), the order of parplan/Sbp/Sbp.h's
// meshCoordinate. Collectives along a mesh axis run within the groups of
// devices that differ only in that axis' coordinate; the slowest link any of
// those groups crosses prices them (docs/cluster.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_MESH_H
#define PARPLAN_COST_MESH_H

#include "parplan/Cost/Cluster.h"
#include "parplan/Sbp/Sbp.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parplan::cost {

struct DeviceMesh {
  std::vector<int64_t> shape;
  /// Physical device ids, row-major (last axis fastest): the device at mesh
  /// coordinate c is devices[meshLinearIndex(shape, c)].
  std::vector<int64_t> devices;
  /// The weights of each axis's shares of its splits (empty: even).
  MeshShares shares = {};

  /// The product of the axis sizes (1 for a rank-0 mesh).
  int64_t size() const;
};

/// Why `mesh` does not fit `cluster`, or std::nullopt: every axis is
/// positive, the mesh lists exactly size() devices, each an existing device
/// of the cluster, none twice.
std::optional<std::string> checkMesh(const Cluster &cluster,
                                     const DeviceMesh &mesh);

/// The mesh of `shape` over devices 0 .. size-1 in order. The shape may use
/// fewer devices than the cluster has (the first ones), not more.
std::optional<DeviceMesh> makeMesh(const Cluster &cluster,
                                   std::vector<int64_t> shape,
                                   std::string &error);

/// The default mesh shape of a cluster: [nodes, devices per node] when there
/// are several nodes with the same number of devices (more than one), else
/// [devices].
std::vector<int64_t> defaultMeshShape(const Cluster &cluster);

/// The device groups along `axis`: one group per coordinate of the other
/// axes (in row-major order of those), each listing the devices at indices
/// 0 .. shape[axis]-1 of `axis`.
std::vector<std::vector<int64_t>> axisGroups(const DeviceMesh &mesh,
                                             int64_t axis);

/// The slowest link that any group along `axis` crosses: the minimum
/// bandwidth and the maximum latency over every pair of devices in every
/// group (the two may come from different pairs). An axis of size 1 crosses
/// no link: {infinity, 0}.
Link axisLink(const Cluster &cluster, const DeviceMesh &mesh, int64_t axis);

/// The highest level any group along `axis` crosses (Local for size 1).
LinkLevel axisLevel(const Cluster &cluster, const DeviceMesh &mesh,
                    int64_t axis);

/// The slice at `index` along `axis`: a mesh of rank - 1 axes holding the
/// devices whose coordinate on `axis` is `index`, in row-major order (for
/// pipeline stages). Requires 0 <= axis < rank and 0 <= index < shape[axis].
DeviceMesh subMesh(const DeviceMesh &mesh, int64_t axis, int64_t index);

/// `parts` meshes of `mesh`'s rank that cut its first axis into equal
/// blocks of consecutive coordinates, block p first (pipeline stages on
/// consecutive hosts). std::nullopt with `error` set when `parts` is below
/// 1 or does not divide the first axis, or the mesh has no axis.
std::optional<std::vector<DeviceMesh>>
splitMesh(const DeviceMesh &mesh, int64_t parts, std::string &error);

/// Where meshes sit on the cluster, for reusing what was priced for meshes
/// elsewhere. On a cluster whose nodes all hold as many devices and whose
/// links are their levels' defaults, moving meshes by whole nodes (into
/// nodes whose regions match alike) keeps which of their devices share a
/// node or a region, the order of their device ids and so every link
/// between them: what is priced on them (a move between stages, a stage's
/// layouts) is priced alike. Meshes with equal `key`s are such moves of
/// each other, or equal.
struct MeshPlacement {
  /// The meshes' shapes and devices counted from `deviceShift` (the first
  /// device of their first node), and the regions of their nodes.
  std::string key;
  /// Where the meshes are: `key` describes them moved back by these.
  int64_t deviceShift = 0;
  int64_t nodeShift = 0;
};

/// The placement of `meshes` together. On a cluster with link overrides or
/// nodes of several sizes, or for devices the cluster lacks, the key names
/// the devices themselves and the shifts are 0.
MeshPlacement placeMeshes(const Cluster &cluster,
                          const std::vector<const DeviceMesh *> &meshes);

/// Parses "2x4" (positive sizes separated by 'x'; "8" is a 1-d mesh).
std::optional<std::vector<int64_t>> parseMeshShape(const std::string &text,
                                                   std::string &error);

/// "2x4".
std::string formatMeshShape(const std::vector<int64_t> &shape);

} // namespace parplan::cost

#endif // PARPLAN_COST_MESH_H
