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

#include <cstdint>
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

/// What `generateGeoCluster` draws: `machines` machines in `regions`
/// regions (0: the square root of the machine count, at most 64), from
/// `seed`.
struct GeoClusterSpec {
  int64_t machines = 64;
  int64_t regions = 0;
  uint64_t seed = 1;
};

/// The most machines and regions a generated cluster has.
constexpr int64_t maxGeneratedMachines = 1 << 16;
constexpr int64_t maxGeneratedRegions = 1024;

/// A geo-distributed cluster drawn from `spec` (docs/cluster.md#generated-
/// geo-distributed-clusters): regions at points on the globe, wide-area
/// links whose latency grows with the distance between them (10 to 250 ms)
/// and whose bandwidth falls with it (1.2 to 0.3 Gbit/s, as in DT-FM's
/// world-wide case), machines of the presets' device types with 1 to 8
/// devices each, 10 Gbit/s between the machines of a region. The same spec
/// gives the same cluster on every platform (the draws are the
/// generator's own, not the standard library's distributions). On a spec
/// out of range returns std::nullopt and sets `error`, naming the option.
std::optional<Cluster> generateGeoCluster(const GeoClusterSpec &spec,
                                          std::string &error);

/// A preset name, else a cluster file (YAML or JSON). An argument that is
/// neither gives an error that lists the presets; a file that does not parse
/// gives the file's error ("FILE:LINE:COL: ...").
std::optional<Cluster> resolveCluster(const std::string &nameOrPath,
                                      std::string &error);

} // namespace parplan::cost

#endif // PARPLAN_COST_PRESETS_H
