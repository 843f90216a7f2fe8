//===- Presets.h - built-in cluster descriptions ----------------*- C++ -*-===//
//
// Clusters that need no file: a DGX H100, four DGX A100, Alpa's eight
// p3.16xlarge, a one-GPU-per-node cluster, a mixed V100/P100 cluster (Whale)
// and Hulk's geo-distributed machines. Every preset states its sources in
// Presets.cpp and in its `source` field; docs/cluster.md lists the figures.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_PRESETS_H
#define PARPLAN_COST_PRESETS_H

#include "parplan/Cost/Cluster.h"

#include <optional>
#include <string>
#include <vector>

namespace parplan::cost {

/// The preset names, in the order `parplan clusters` lists them.
const std::vector<std::string> &presetNames();

/// The most copies `NAMExN` scales a preset to.
constexpr int64_t maxPresetCopies = 4096;

/// The preset named `name`, or std::nullopt. `NAMExN` (N from 1 to
/// maxPresetCopies) is N copies of preset NAME joined by its inter-node link:
/// `dgx-h100x128` is 128 DGX H100 nodes, 1,024 GPUs.
std::optional<Cluster> preset(const std::string &name);

/// A preset name, else a cluster file (YAML or JSON). An argument that is
/// neither gives an error that lists the presets; a file that does not parse
/// gives the file's error ("FILE:LINE:COL: ...").
std::optional<Cluster> resolveCluster(const std::string &nameOrPath,
                                      std::string &error);

} // namespace parplan::cost

#endif // PARPLAN_COST_PRESETS_H
