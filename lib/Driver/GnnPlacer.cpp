//===- GnnPlacer.cpp - Hulk's graph network proposing a placement ---------===//

#include "parplan/Driver/GnnPlacer.h"

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/Runtime/OutputFile.h"
#include "parplan/Target/NNInterpreter.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

using namespace parplan;
using namespace parplan::driver;

namespace {

/// `value` over `best`, 0 where either is not a positive finite number.
float ratio(double value, double best) {
  if (!(value > 0) || !(best > 0) || !std::isfinite(value) ||
      !std::isfinite(best))
    return 0;
  return static_cast<float>(value / best);
}

} // namespace

std::string parplan::driver::defaultPlacerDirectory() {
  namespace fs = std::filesystem;
  if (const char *cache = std::getenv("PARPLAN_CACHE_DIR"); cache && *cache)
    return (fs::path(cache) / "placer").string();
  const char *home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "parplan" /
          "placer")
      .string();
}

PlacerGraph parplan::driver::placerGraph(const cost::ClusterIndex &index,
                                         const StepWork &work) {
  const cost::Cluster &cluster = index.cluster();
  auto count = static_cast<int64_t>(cluster.nodes.size());
  PlacerGraph graph;
  graph.nodes = count;
  graph.features.assign(static_cast<size_t>(count * kPlacerFeatures), 0);
  graph.adjacency.assign(static_cast<size_t>(count * count), 0);
  if (count == 0)
    return graph;

  // Per node: devices, speed, memory per device, the estimate of a step on
  // it alone, and its region's number.
  std::vector<double> devices(count), speed(count), memory(count), alone(count),
      intra(count);
  std::map<int64_t, std::vector<int64_t>> regions;
  for (int64_t n = 0; n < count; ++n) {
    const cost::Node &node = cluster.nodes[static_cast<size_t>(n)];
    devices[n] = static_cast<double>(node.devices);
    speed[n] = nodeSpeed(cluster, n, work.type);
    if (const cost::DeviceType *type = cluster.findDeviceType(node.deviceType))
      memory[n] = type->memoryBytes;
    alone[n] = quickEstimate(index, {n}, work);
    int64_t first = index.firstDevice(n);
    intra[n] = node.devices > 1 ? index.link(first, first + 1).bandwidth : 0;
    regions[index.regionOf(n)].push_back(n);
  }
  std::map<int64_t, double> regionSpeed, regionEstimate;
  for (const auto &[region, nodes] : regions) {
    for (int64_t n : nodes)
      regionSpeed[region] += speed[n];
    regionEstimate[region] = quickEstimate(index, nodes, work);
  }
  std::vector<int64_t> all(count);
  for (int64_t n = 0; n < count; ++n)
    all[n] = n;
  double everything = quickEstimate(index, all, work);

  // Bandwidths between nodes: each row's sum is the adjacency's scale, and
  // the mean to other regions a feature.
  std::vector<double> away(count, 0);
  for (int64_t a = 0; a < count; ++a) {
    double sum = 0, awaySum = 0;
    int64_t awayCount = 0;
    float *row = graph.adjacency.data() + a * count;
    for (int64_t b = 0; b < count; ++b) {
      if (a == b)
        continue;
      double bandwidth =
          index.link(index.firstDevice(a), index.firstDevice(b)).bandwidth;
      row[b] = static_cast<float>(bandwidth);
      sum += bandwidth;
      if (index.regionOf(a) != index.regionOf(b)) {
        awaySum += bandwidth;
        ++awayCount;
      }
    }
    for (int64_t b = 0; b < count && sum > 0; ++b)
      row[b] = static_cast<float>(row[b] / sum);
    away[a] = awayCount ? awaySum / static_cast<double>(awayCount) : 0;
  }

  // The scales each ratio is taken against, once for every row.
  auto largest = [](const std::vector<double> &values) {
    return values.empty() ? 0.0 : *llvm::max_element(values);
  };
  std::vector<double> regionSpeeds, regionEstimates, regionSizes;
  for (const auto &[region, nodes] : regions) {
    regionSpeeds.push_back(regionSpeed[region]);
    regionEstimates.push_back(regionEstimate[region]);
    regionSizes.push_back(static_cast<double>(nodes.size()));
  }
  double mostDevices = largest(devices), fastest = largest(speed),
         mostMemory = largest(memory), fastestRegion = largest(regionSpeeds),
         largestRegion = largest(regionSizes), fastestIntra = largest(intra),
         fastestAway = largest(away);
  double bestAlone = *llvm::min_element(alone),
         bestRegion = *llvm::min_element(regionEstimates);
  // Whether every node together beats the best node or region alone: above
  // one half where it does (a rate's share, so in [0, 1] either way).
  double bestPart = std::min(bestAlone, bestRegion);
  float togetherShare =
      std::isfinite(everything) && everything > 0
          ? std::isfinite(bestPart)
                ? static_cast<float>(bestPart / (bestPart + everything))
                : 1.0f
          : 0.0f;
  for (int64_t n = 0; n < count; ++n) {
    int64_t region = index.regionOf(n);
    float *row = graph.features.data() + n * kPlacerFeatures;
    row[0] = 1;
    row[1] = ratio(devices[n], mostDevices);
    row[2] = ratio(speed[n], fastest);
    row[3] = ratio(memory[n], mostMemory);
    row[4] = static_cast<float>(
        work.parameterBytes > 0
            ? std::min(1.0, devices[n] * memory[n] / (4 * work.parameterBytes))
            : 1.0);
    row[5] = ratio(bestAlone, alone[n]);
    row[6] = ratio(regionSpeed[region], fastestRegion);
    row[7] = ratio(bestRegion, regionEstimate[region]);
    row[8] = ratio(static_cast<double>(regions[region].size()), largestRegion);
    row[9] = ratio(intra[n], fastestIntra);
    row[10] = ratio(away[n], fastestAway);
    row[11] = togetherShare;
  }
  return graph;
}

std::vector<int64_t>
parplan::driver::placerLabels(const cost::Cluster &cluster,
                              const PlanFigures::Placement &placement) {
  std::vector<int64_t> labels(cluster.nodes.size(), placement.keptAll ? 1 : 0);
  if (placement.keptAll || placement.tried.empty())
    return labels;
  for (const std::string &name : placement.tried.front().nodes)
    for (size_t n = 0; n < cluster.nodes.size(); ++n)
      if (cluster.nodes[n].name == name)
        labels[n] = 1;
  return labels;
}

namespace {

/// The batch files of a placer dataset and the bytes one graph of `nodes`
/// machines takes in each.
struct DatasetFile {
  const char *name;
  uintmax_t perGraph;
};
std::vector<DatasetFile> datasetFiles(int64_t nodes) {
  auto n = static_cast<uintmax_t>(nodes);
  return {{"features.bin", n * kPlacerFeatures * sizeof(float)},
          {"adjacency.bin", n * n * sizeof(float)},
          {"labels.bin", n * sizeof(int64_t)}};
}

} // namespace

mlir::FailureOr<uintmax_t>
parplan::driver::placerDatasetGraphs(const std::string &directory,
                                     int64_t nodes, std::string &error) {
  namespace fs = std::filesystem;
  if (nodes < 1) {
    error = "--placer-dataset: a cluster without machines";
    return mlir::failure();
  }
  std::optional<uintmax_t> graphs;
  for (const DatasetFile &file : datasetFiles(nodes)) {
    fs::path path = fs::path(directory) / file.name;
    std::error_code failure;
    uintmax_t size = 0;
    if (fs::exists(path, failure))
      size = fs::file_size(path, failure);
    if (failure || size % file.perGraph != 0 ||
        (graphs && *graphs != size / file.perGraph)) {
      error = "--placer-dataset: " + path.string() +
              " does not hold whole graphs of " + std::to_string(nodes) +
              " machines like the other files (every cluster of a dataset "
              "has as many machines)";
      return mlir::failure();
    }
    graphs = size / file.perGraph;
  }
  return *graphs;
}

mlir::LogicalResult parplan::driver::appendPlacerExample(
    const std::string &directory, const PlacerGraph &graph,
    const std::vector<int64_t> &labels, std::string &error) {
  namespace fs = std::filesystem;
  if (static_cast<int64_t>(labels.size()) != graph.nodes) {
    error = "--placer-dataset: " + std::to_string(labels.size()) +
            " labels for a graph of " + std::to_string(graph.nodes) +
            " machines";
    return mlir::failure();
  }
  std::error_code failure;
  fs::create_directories(directory, failure);
  if (failure) {
    error = "--placer-dataset: cannot create '" + directory +
            "': " + failure.message();
    return mlir::failure();
  }
  mlir::FailureOr<uintmax_t> graphs =
      placerDatasetGraphs(directory, graph.nodes, error);
  if (mlir::failed(graphs))
    return mlir::failure();
  const char *bytes[] = {reinterpret_cast<const char *>(graph.features.data()),
                         reinterpret_cast<const char *>(graph.adjacency.data()),
                         reinterpret_cast<const char *>(labels.data())};
  std::vector<DatasetFile> files = datasetFiles(graph.nodes);
  for (size_t f = 0; f < files.size(); ++f) {
    fs::path path = fs::path(directory) / files[f].name;
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(bytes[f], static_cast<std::streamsize>(files[f].perGraph));
    out.close();
    if (!out) {
      // The files written so far go back to their whole graphs: the
      // dataset stays one a later compile can append to.
      for (size_t written = 0; written <= f; ++written)
        fs::resize_file(fs::path(directory) / files[written].name,
                        *graphs * files[written].perGraph, failure);
      error = "--placer-dataset: cannot write " + path.string();
      return mlir::failure();
    }
  }
  return mlir::success();
}

mlir::FailureOr<std::vector<double>>
parplan::driver::placerScores(const std::string &directory,
                              const PlacerGraph &graph,
                              mlir::MLIRContext &context, std::string &error) {
  namespace fs = std::filesystem;
  fs::path modelPath = fs::path(directory) / "model.onnx";
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> bytes =
      llvm::MemoryBuffer::getFile(modelPath.string());
  if (!bytes) {
    error = "--placer gnn: cannot read " + modelPath.string() +
            " (scripts/train-placer.sh writes a trained placer, by default "
            "in " +
            defaultPlacerDirectory() + "; --placer-model names another)";
    return mlir::failure();
  }
  OnnxImportOptions importOptions;
  importOptions.dims["batch"] = std::max<int64_t>(graph.nodes, 1);
  mlir::OwningOpRef<mlir::ModuleOp> module = importOnnx(
      (*bytes)->getBuffer(), modelPath.string(), context, importOptions, error);
  auto main = module ? module->lookupSymbol<mlir::func::FuncOp>("main")
                     : mlir::func::FuncOp();
  if (!main) {
    error = "--placer gnn: " +
            (module ? modelPath.string() + " has no graph" : error);
    return mlir::failure();
  }
  NamedTensors feeds;
  auto n = graph.nodes;
  runtime::Tensor features(runtime::DType::F32, {n, kPlacerFeatures});
  runtime::Tensor adjacency(runtime::DType::F32, {n, n});
  for (int64_t i = 0; i < features.numElements(); ++i)
    features.set(i, graph.features[static_cast<size_t>(i)]);
  for (int64_t i = 0; i < adjacency.numElements(); ++i)
    adjacency.set(i, graph.adjacency[static_cast<size_t>(i)]);
  feeds["features"] = std::move(features);
  feeds["adjacency"] = std::move(adjacency);
  bool loaded = true;
  main.walk([&](nn::ParamOp param) {
    std::string name = param.getName().str();
    fs::path path =
        fs::path(directory) / "weights" / runtime::outputFileName(name);
    runtime::Tensor value;
    if (runtime::Status status = runtime::readNpy(path.string(), value);
        !status.ok()) {
      error = "--placer gnn: " + status.error;
      loaded = false;
      return mlir::WalkResult::interrupt();
    }
    feeds[name] = std::move(value);
    return mlir::WalkResult::advance();
  });
  if (!loaded)
    return mlir::failure();
  // The interpreter's errors are diagnostics: one line for the user.
  std::string diagnostic;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (diagnostic.empty())
      diagnostic = d.str();
    return mlir::success();
  });
  mlir::FailureOr<std::vector<runtime::Tensor>> results =
      interpret(main, feeds);
  if (failed(results) || results->empty() ||
      results->front().shape() != runtime::Shape{n, 2}) {
    error = "--placer gnn: " + modelPath.string() +
            (diagnostic.empty()
                 ? std::string(" does not give 2 scores per machine (a "
                               "parplan-zoo gnn model of 2 classes)")
                 : ": " + diagnostic);
    return mlir::failure();
  }
  const runtime::Tensor &logits = results->front();
  std::vector<double> scores(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double out = logits.get(2 * i), in = logits.get(2 * i + 1);
    // A diverged training's weights: no proposal, rather than node 0.
    if (!std::isfinite(out) || !std::isfinite(in)) {
      error = "--placer gnn: the placer in " + directory + " scores machine " +
              std::to_string(i) +
              " as not a number (weights of a diverged training?)";
      return mlir::failure();
    }
    scores[static_cast<size_t>(i)] = 1 / (1 + std::exp(out - in));
  }
  return scores;
}

PlacerProposal
parplan::driver::placerProposal(const std::vector<double> &scores) {
  PlacerProposal proposal;
  proposal.machines.assign(scores.size(), false);
  if (scores.empty())
    return proposal;
  for (size_t n = 0; n < scores.size(); ++n) {
    if (scores[n] >= 0.5) {
      proposal.machines[n] = true;
      ++proposal.count;
    }
    if (scores[n] > scores[proposal.best])
      proposal.best = n;
  }
  if (proposal.count == 0) {
    proposal.machines[proposal.best] = true;
    proposal.count = 1;
  }
  return proposal;
}

std::vector<size_t> parplan::driver::proposalNeighbourhood(
    const std::vector<PlacementCandidate> &candidates,
    const PlacerProposal &proposal, size_t count) {
  std::vector<size_t> near;
  if (proposal.count == 0)
    return near;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const PlacementCandidate &candidate = candidates[c];
    if (candidate.kind == PlacementCandidate::Kind::Everything &&
        proposal.count < proposal.machines.size())
      continue;
    if (std::isfinite(candidate.estimate) &&
        llvm::any_of(candidate.nodes, [&](int64_t node) {
          return proposal.machines[static_cast<size_t>(node)];
        }))
      near.push_back(c);
  }
  std::stable_sort(near.begin(), near.end(), [&](size_t a, size_t b) {
    return candidates[a].estimate < candidates[b].estimate;
  });
  if (near.size() > count)
    near.resize(count);
  return near;
}
