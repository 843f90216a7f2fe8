//===- ReshardCommand.cpp - parplan reshard -------------------------------===//
//
// Plans one tensor's move between two meshes of a cluster in every mode
// and balancing the planner has, beside the lower bound: a microbenchmark
// of the cost model (docs/cross-mesh.md).
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "ReshardPlan.h"

#include "parplan/Cost/CrossMesh.h"
#include "parplan/Cost/Presets.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/Tensor.h"
#include "parplan/Support/Text.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <fmt/core.h>

#include <algorithm>
#include <numeric>

using namespace parplan;
using namespace parplan::cost;

namespace {

/// "2x4@8": a 2x4 mesh on devices 8..15; "2x4": on devices 0..7;
/// "2x2@4,5,8,9": on those devices, row-major.
std::optional<DeviceMesh> parsePlacedMesh(const std::string &text,
                                          const Cluster &cluster,
                                          std::string &error) {
  auto [shapeText, devicesText] = llvm::StringRef(text).split('@');
  std::optional<std::vector<int64_t>> shape =
      parseMeshShape(shapeText.str(), error);
  if (!shape)
    return std::nullopt;
  DeviceMesh mesh{*shape, {}};
  llvm::SmallVector<llvm::StringRef> ids;
  devicesText.split(ids, ',');
  for (llvm::StringRef id : ids) {
    int64_t device = 0;
    if (!devicesText.empty() && (id.getAsInteger(10, device) || device < 0)) {
      error =
          "'" + text + "': '" + id.str() + "' after '@' is not a device number";
      return std::nullopt;
    }
    mesh.devices.push_back(device);
  }
  // One number is the first of consecutive devices.
  if (mesh.devices.size() == 1) {
    int64_t first = mesh.devices.front();
    mesh.devices.resize(static_cast<size_t>(meshSize(*shape)));
    std::iota(mesh.devices.begin(), mesh.devices.end(), first);
  }
  if (std::optional<std::string> problem = checkMesh(cluster, mesh)) {
    error = "'" + text + "': " + *problem;
    return std::nullopt;
  }
  return mesh;
}

int fail(const std::string &error) {
  fmt::print(stderr, "parplan reshard: error: {}\n", error);
  return 1;
}

} // namespace

int parplan::cli::runReshard(const ReshardOptions &options) {
  std::string error;
  std::optional<Cluster> cluster = resolveCluster(options.cluster, error);
  if (!cluster)
    return fail(error);
  CrossMeshProblem problem;
  problem.tensor = options.tensor;
  std::optional<std::vector<int64_t>> shape =
      parseMeshShape(options.shape, error);
  if (!shape)
    return fail("--shape " + options.shape + ": " + error);
  problem.shape = *shape;
  std::optional<runtime::DType> dtype = runtime::parseDType(options.dtype);
  if (!dtype)
    return fail("--dtype " + options.dtype +
                ": not one of f16, bf16, f32, f64, i1, i8, i32, i64");
  problem.elementBytes = static_cast<int64_t>(runtime::byteWidth(*dtype));
  for (auto [text, mesh, flag] :
       {std::tuple{&options.from, &problem.source, "--from"},
        std::tuple{&options.to, &problem.destination, "--to"}}) {
    std::optional<DeviceMesh> parsed = parsePlacedMesh(*text, *cluster, error);
    if (!parsed)
      return fail(std::string(flag) + " " + error);
    *mesh = *parsed;
  }
  for (auto [text, layout, flag] :
       {std::tuple{&options.fromLayout, &problem.sourceLayout, "--from-layout"},
        std::tuple{&options.toLayout, &problem.destinationLayout,
                   "--to-layout"}}) {
    std::optional<NdSbp> parsed = parseNdSbp(*text, error);
    if (!parsed)
      return fail(std::string(flag) + " '" + *text + "': " + error);
    *layout = *parsed;
  }
  if (std::optional<std::string> problemError =
          checkCrossMesh(problem, *cluster))
    return fail(*problemError);

  std::vector<CrossMeshTile> tiles = crossMeshTiles(problem);
  int64_t bytes = meshSize(problem.shape) * problem.elementBytes;
  size_t mostHolders = 0, mostReceivers = 0;
  for (const CrossMeshTile &tile : tiles) {
    mostHolders = std::max(mostHolders, tile.holders.size());
    mostReceivers = std::max(mostReceivers, tile.receivers.size());
  }
  ClusterIndex links(*cluster);
  double bound = crossMeshLowerBound(tiles, links);
  fmt::print(
      "moving {} ({} {}, {}) from mesh {} {} on devices {} to mesh {} "
      "{} on devices {}, {}\n",
      problem.tensor, formatMeshShape(problem.shape), runtime::toString(*dtype),
      formatBytes(bytes), formatMeshShape(problem.source.shape),
      toString(problem.sourceLayout), formatDevices(problem.source.devices),
      formatMeshShape(problem.destination.shape),
      toString(problem.destinationLayout),
      formatDevices(problem.destination.devices), cluster->name);
  fmt::print("  tiles         {} (up to {} holders and {} receivers each)\n",
             tiles.size(), mostHolders, mostReceivers);
  fmt::print("  lower bound   {}\n", formatSeconds(bound));
  fmt::print("  {:<22} {:<9} {:>10} {:>8} {:>12} {:>12}\n", "mode", "balancing",
             "time", "x bound", "card sends", "card takes");
  for (CrossMeshMode mode : kCrossMeshModes)
    for (CrossMeshBalancing balancing : kCrossMeshBalancings) {
      CrossMeshSchedule schedule = planCrossMesh(tiles, links, mode, balancing);
      double sent =
          *std::max_element(schedule.hostSent.begin(), schedule.hostSent.end());
      double received = *std::max_element(schedule.hostReceived.begin(),
                                          schedule.hostReceived.end());
      fmt::print("  {:<22} {:<9} {:>10} {:>8} {:>12} {:>12}\n", toString(mode),
                 toString(balancing), formatSeconds(schedule.seconds),
                 bound > 0 ? fmt::format("{:.2f}", schedule.seconds / bound)
                           : std::string("-"),
                 formatBytes(static_cast<int64_t>(sent)),
                 formatBytes(static_cast<int64_t>(received)));
    }
  if (options.output.empty())
    return 0;

  // CLI11 admits only the names these parse.
  CrossMeshMode mode = *parseCrossMeshMode(options.mode);
  CrossMeshBalancing balancing = *parseCrossMeshBalancing(options.balancing);
  CrossMeshSchedule schedule = planCrossMesh(tiles, links, mode, balancing);
  std::optional<plan::Plan> lowered = cli::lowerReshardPlan(
      problem, *dtype, mode, balancing, options.cluster, error);
  if (!lowered)
    return fail("the move does not lower to a plan: " + error);
  plan::Plan &plan = *lowered;
  if (runtime::Status status = runtime::checkPlan(plan); !status.ok())
    return fail("the plan of the move is invalid: " + status.error);
  if (std::error_code code = llvm::sys::fs::create_directories(options.output))
    return fail("cannot create '" + options.output + "': " + code.message());
  llvm::SmallString<256> path(options.output);
  llvm::sys::path::append(path, "plan.pb");
  if (runtime::Status status = runtime::writePlanFile(plan, path.str().str());
      !status.ok())
    return fail(status.error);
  int64_t devices = runtime::planDevices(plan);
  fmt::print("wrote {}: {} ({}), {} transfers on {} devices; run it with "
             "mpirun -np {} parplan-run {} --check\n",
             path.str().str(), toString(mode), toString(balancing),
             schedule.transfers.size(), devices, devices, path.str().str());
  return 0;
}
