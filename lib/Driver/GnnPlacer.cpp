//===- GnnPlacer.cpp - Hulk's graph network proposing a placement ---------===//

#include "parplan/Driver/GnnPlacer.h"

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/Runtime/OutputFile.h"
#include "parplan/Target/NNInterpreter.h"

#include "mlir/IR/BuiltinOps.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

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

/// Bytes of the file at `path`, or none where it cannot be read.
std::optional<std::string> readBytes(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

} // namespace

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

  auto largest = [](const auto &values) {
    double best = 0;
    for (const auto &value : values)
      best = std::max(best, static_cast<double>(value));
    return best;
  };
  auto least = [](const auto &values) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto &value : values)
      best = std::min(best, static_cast<double>(value));
    return best;
  };
  std::vector<double> regionSpeeds, regionEstimates, regionSizes;
  for (const auto &[region, nodes] : regions) {
    regionSpeeds.push_back(regionSpeed[region]);
    regionEstimates.push_back(regionEstimate[region]);
    regionSizes.push_back(static_cast<double>(nodes.size()));
  }
  double bestAlone = least(alone), bestRegion = least(regionEstimates);
  double bestNodeOrRegion = std::min(bestAlone, bestRegion);
  for (int64_t n = 0; n < count; ++n) {
    int64_t region = index.regionOf(n);
    float *row = graph.features.data() + n * kPlacerFeatures;
    row[0] = 1;
    row[1] = ratio(devices[n], largest(devices));
    row[2] = ratio(speed[n], largest(speed));
    row[3] = ratio(memory[n], largest(memory));
    row[4] = static_cast<float>(
        work.parameterBytes > 0
            ? std::min(1.0, devices[n] * memory[n] / (4 * work.parameterBytes))
            : 1.0);
    row[5] = ratio(bestAlone, alone[n]);
    row[6] = ratio(regionSpeed[region], largest(regionSpeeds));
    row[7] = ratio(bestRegion, regionEstimate[region]);
    row[8] = ratio(static_cast<double>(regions[region].size()),
                   largest(regionSizes));
    row[9] = ratio(intra[n], largest(intra));
    row[10] = ratio(away[n], largest(away));
    row[11] = ratio(bestNodeOrRegion, everything);
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

mlir::LogicalResult parplan::driver::appendPlacerExample(
    const std::string &directory, const PlacerGraph &graph,
    const std::vector<int64_t> &labels, std::string &error) {
  namespace fs = std::filesystem;
  std::error_code failure;
  fs::create_directories(directory, failure);
  if (failure) {
    error = "--placer-dataset: cannot create '" + directory +
            "': " + failure.message();
    return mlir::failure();
  }
  auto n = static_cast<uintmax_t>(graph.nodes);
  struct File {
    const char *name;
    const char *bytes;
    uintmax_t size, perGraph;
  } files[] = {
      {"features.bin", reinterpret_cast<const char *>(graph.features.data()),
       graph.features.size() * sizeof(float),
       n * kPlacerFeatures * sizeof(float)},
      {"adjacency.bin", reinterpret_cast<const char *>(graph.adjacency.data()),
       graph.adjacency.size() * sizeof(float), n * n * sizeof(float)},
      {"labels.bin", reinterpret_cast<const char *>(labels.data()),
       labels.size() * sizeof(int64_t), n * sizeof(int64_t)}};
  // Every file holds the same number of whole graphs of this size before
  // any is written to.
  std::optional<uintmax_t> graphs;
  for (const File &file : files) {
    fs::path path = fs::path(directory) / file.name;
    uintmax_t size = fs::exists(path) ? fs::file_size(path, failure) : 0;
    if (failure || size % file.perGraph != 0 ||
        (graphs && *graphs != size / file.perGraph)) {
      error = "--placer-dataset: " + path.string() +
              " does not hold whole graphs of " + std::to_string(graph.nodes) +
              " machines like the other files (every cluster of a dataset "
              "has as many machines)";
      return mlir::failure();
    }
    graphs = size / file.perGraph;
  }
  for (const File &file : files) {
    fs::path path = fs::path(directory) / file.name;
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(file.bytes, static_cast<std::streamsize>(file.size));
    if (!out) {
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
  std::optional<std::string> bytes = readBytes(modelPath);
  if (!bytes) {
    error = "--placer gnn: cannot read " + modelPath.string() +
            " (scripts/train-placer.sh writes a trained placer)";
    return mlir::failure();
  }
  OnnxImportOptions importOptions;
  importOptions.dims["batch"] = std::max<int64_t>(graph.nodes, 1);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importOnnx(*bytes, modelPath.string(), context, importOptions, error);
  if (!module)
    return mlir::failure();
  auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
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
    scores[static_cast<size_t>(i)] = 1 / (1 + std::exp(out - in));
  }
  return scores;
}

std::vector<size_t> parplan::driver::proposalNeighbourhood(
    const std::vector<PlacementCandidate> &candidates,
    const std::vector<double> &scores, size_t count) {
  if (scores.empty())
    return {};
  std::vector<bool> proposed(scores.size());
  size_t proposedCount = 0;
  for (size_t n = 0; n < scores.size(); ++n)
    if ((proposed[n] = scores[n] >= 0.5))
      ++proposedCount;
  if (proposedCount == 0)
    proposed[static_cast<size_t>(
        std::max_element(scores.begin(), scores.end()) - scores.begin())] =
        true;
  std::vector<size_t> near;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const PlacementCandidate &candidate = candidates[c];
    if (candidate.kind == PlacementCandidate::Kind::Everything &&
        proposedCount < scores.size())
      continue;
    if (std::isfinite(candidate.estimate) &&
        llvm::any_of(candidate.nodes, [&](int64_t node) {
          return proposed[static_cast<size_t>(node)];
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
