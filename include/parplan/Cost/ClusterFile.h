//===- ClusterFile.h - cluster descriptions in YAML or JSON -----*- C++ -*-===//
//
// Reads and writes the cluster file format of docs/cluster.md. JSON is read
// as YAML (JSON is a subset of YAML); a file whose name ends in ".json" is
// first checked to be strict JSON. Every error is one line,
// "FILE:LINE:COL: what is wrong".
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_CLUSTERFILE_H
#define PARPLAN_COST_CLUSTERFILE_H

#include "parplan/Cost/Cluster.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace parplan::cost {

/// The most devices and nodes a cluster file may describe (with `count`
/// expanded), and how deeply its mappings and lists may nest.
inline constexpr int64_t kMaxClusterDevices = int64_t(1) << 20;
inline constexpr int64_t kMaxClusterNodes = int64_t(1) << 20;
inline constexpr int kMaxClusterFileDepth = 64;

/// Parses a cluster description. `path` names the text in errors (and, when
/// it ends in ".json", asks for strict JSON). On failure returns std::nullopt
/// and sets `error` to "PATH:LINE:COL: message".
std::optional<Cluster> parseCluster(llvm::StringRef text, llvm::StringRef path,
                                    std::string &error);

/// Reads and parses the file at `path`. A file that cannot be read gives
/// "cannot read 'PATH': reason".
std::optional<Cluster> loadCluster(const std::string &path, std::string &error);

/// Writes `cluster` in the file format, with units chosen for reading
/// (GB/s, us, GB, TFLOP/s); parseCluster reads it back to the same figures
/// (to 15 significant digits). Node links are written by node name.
/// `compact` JSON is one line, without the spaces between tokens.
std::string writeClusterYaml(const Cluster &cluster);
std::string writeClusterJson(const Cluster &cluster, bool compact = false);

} // namespace parplan::cost

#endif // PARPLAN_COST_CLUSTERFILE_H
