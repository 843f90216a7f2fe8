//===- GnnPlacerTest.cpp - the GNN placer's graph, data and proposal ------===//

#include "parplan/Driver/GnnPlacer.h"
#include "parplan/Cost/Presets.h"
#include "parplan/Runtime/OutputFile.h"
#include "parplan/Zoo/Zoo.h"

#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

using namespace parplan;
using namespace parplan::driver;
using cost::Cluster;

namespace {

Cluster generated(int64_t machines, uint64_t seed) {
  std::string error;
  cost::GeoClusterSpec spec;
  spec.machines = machines;
  spec.seed = seed;
  std::optional<Cluster> cluster = cost::generateGeoCluster(spec, error);
  REQUIRE(cluster);
  return *cluster;
}

/// A GPT-sized step: 8 layers of hidden 1024 at batch 64, roughly.
StepWork gptWork() {
  StepWork work;
  work.flops = 3e15;
  work.bytes = 2e12;
  work.parameterBytes = 4 * 140e6;
  work.batch = 64;
  work.crossingBytes = 64 * 512 * 1024 * 4;
  return work;
}

/// A fresh directory under the system's temporary one.
std::filesystem::path freshDirectory(const std::string &name) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("parplan-gnn-placer-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  return path;
}

PlacementCandidate group(PlacementCandidate::Kind kind,
                         std::vector<int64_t> nodes, double estimate) {
  PlacementCandidate candidate;
  candidate.kind = kind;
  candidate.nodes = std::move(nodes);
  candidate.estimate = estimate;
  return candidate;
}

} // namespace

TEST_CASE("the placer's graph: features per machine, links as a mean",
          "[placement][gnn]") {
  Cluster cluster = generated(24, 3);
  cost::ClusterIndex index(cluster);
  StepWork work = gptWork();
  PlacerGraph graph = placerGraph(index, work);
  auto n = static_cast<int64_t>(cluster.nodes.size());
  REQUIRE(graph.nodes == n);
  REQUIRE(graph.features.size() == static_cast<size_t>(n * kPlacerFeatures));
  REQUIRE(graph.adjacency.size() == static_cast<size_t>(n * n));
  for (int64_t a = 0; a < n; ++a) {
    double sum = 0;
    for (int64_t b = 0; b < n; ++b)
      sum += graph.adjacency[static_cast<size_t>(a * n + b)];
    CHECK(graph.adjacency[static_cast<size_t>(a * n + a)] == 0);
    CHECK(sum == Approx(1).epsilon(1e-5));
    // Each feature is a ratio in [0, 1]; the first is the bias.
    for (int64_t f = 0; f < kPlacerFeatures; ++f) {
      float value =
          graph.features[static_cast<size_t>(a * kPlacerFeatures + f)];
      CHECK(value >= 0);
      CHECK(value <= 1.0f + 1e-6f);
    }
    CHECK(graph.features[static_cast<size_t>(a * kPlacerFeatures)] == 1);
  }
  // The machine of least quick estimate alone has feature 5 at 1.
  int64_t best = 0;
  for (int64_t node = 1; node < n; ++node)
    if (quickEstimate(index, {node}, work) < quickEstimate(index, {best}, work))
      best = node;
  CHECK(graph.features[static_cast<size_t>(best * kPlacerFeatures + 5)] == 1);
  // A link within a region outweighs one between regions in the mean.
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < n; ++c)
      if (b != 0 && c != 0 && index.regionOf(b) == index.regionOf(0) &&
          index.regionOf(c) != index.regionOf(0))
        CHECK(graph.adjacency[static_cast<size_t>(b)] >
              graph.adjacency[static_cast<size_t>(c)]);
}

TEST_CASE("the placer's graph does not depend on the order of the machines",
          "[placement][gnn]") {
  Cluster cluster = generated(16, 5);
  std::vector<int64_t> order(cluster.nodes.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  std::mt19937 random(11);
  std::shuffle(order.begin(), order.end(), random);
  Cluster reordered = cost::subCluster(cluster, order, cluster.name);
  PlacerGraph graph = placerGraph(cost::ClusterIndex(cluster), gptWork());
  PlacerGraph other = placerGraph(cost::ClusterIndex(reordered), gptWork());
  auto n = static_cast<size_t>(graph.nodes);
  for (size_t i = 0; i < n; ++i) {
    size_t was = static_cast<size_t>(order[i]);
    for (size_t f = 0; f < kPlacerFeatures; ++f)
      CHECK(other.features[i * kPlacerFeatures + f] ==
            Approx(graph.features[was * kPlacerFeatures + f]));
    for (size_t j = 0; j < n; ++j)
      CHECK(other.adjacency[i * n + j] ==
            Approx(graph.adjacency[was * n + static_cast<size_t>(order[j])]));
  }
}

TEST_CASE("the placer's labels are the machines the search kept",
          "[placement][gnn]") {
  Cluster cluster = generated(10, 2);
  PlanFigures::Placement placement;
  PlanFigures::Placement::Tried kept;
  kept.nodes = {cluster.nodes[3].name, cluster.nodes[7].name};
  placement.tried.push_back(kept);
  PlanFigures::Placement::Tried other;
  other.nodes = {cluster.nodes[1].name};
  placement.tried.push_back(other);
  std::vector<int64_t> labels = placerLabels(cluster, placement);
  CHECK(labels == std::vector<int64_t>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0});
  placement.keptAll = true;
  CHECK(placerLabels(cluster, placement) == std::vector<int64_t>(10, 1));
}

TEST_CASE("placer examples append as training batches of one size",
          "[placement][gnn]") {
  std::filesystem::path directory = freshDirectory("dataset");
  PlacerGraph graph =
      placerGraph(cost::ClusterIndex(generated(8, 1)), gptWork());
  std::vector<int64_t> labels(8, 0);
  labels[2] = 1;
  std::string error;
  REQUIRE(succeeded(appendPlacerExample(directory, graph, labels, error)));
  REQUIRE(succeeded(appendPlacerExample(directory, graph, labels, error)));
  CHECK(std::filesystem::file_size(directory / "features.bin") ==
        2 * 8 * kPlacerFeatures * sizeof(float));
  CHECK(std::filesystem::file_size(directory / "adjacency.bin") ==
        2 * 8 * 8 * sizeof(float));
  CHECK(std::filesystem::file_size(directory / "labels.bin") ==
        2 * 8 * sizeof(int64_t));
  // A cluster of another size would make batches parplan-run cannot read.
  PlacerGraph larger =
      placerGraph(cost::ClusterIndex(generated(12, 1)), gptWork());
  CHECK(failed(appendPlacerExample(directory, larger,
                                   std::vector<int64_t>(12, 0), error)));
  CHECK(error.find("features.bin does not hold whole graphs of 12 machines") !=
        std::string::npos);
  for (const char *file : {"features.bin", "adjacency.bin", "labels.bin"})
    CHECK(std::filesystem::file_size(directory / file) ==
          (std::string(file) == "features.bin"    ? 2 * 8 * kPlacerFeatures * 4
           : std::string(file) == "adjacency.bin" ? 2 * 8 * 8 * 4
                                                  : 2 * 8 * 8));
  CHECK(succeeded(placerDatasetGraphs(directory, 8, error)));
  CHECK(*placerDatasetGraphs(directory, 8, error) == 2);
  CHECK(failed(placerDatasetGraphs(directory, 12, error)));
  // Labels that are not one per machine.
  CHECK(failed(appendPlacerExample(directory, graph, {1, 0}, error)));
  CHECK(error == "--placer-dataset: 2 labels for a graph of 8 machines");
  std::filesystem::remove_all(directory);
}

TEST_CASE("the placer's scores: the trained model, evaluated",
          "[placement][gnn]") {
  std::filesystem::path directory = freshDirectory("model");
  std::filesystem::create_directories(directory / "weights");
  zoo::GnnOptions options;
  options.features = kPlacerFeatures;
  zoo::CommonOptions common;
  common.dynamicBatch = true;
  {
    std::ofstream out(directory / "model.onnx", std::ios::binary);
    REQUIRE(zoo::buildGnn(options, common).SerializeToOstream(&out));
  }
  Cluster cluster = generated(10, 4);
  PlacerGraph graph = placerGraph(cost::ClusterIndex(cluster), gptWork());
  mlir::MLIRContext context;
  std::string error;
  // Weights missing: the error names the file.
  CHECK(failed(placerScores(directory.string(), graph, context, error)));
  CHECK(error.rfind("--placer gnn: ", 0) == 0);
  CHECK(error.find("/weights/conv1.") != std::string::npos);

  // Every weight zero but the head's bias: every machine scores
  // 1 / (1 + e^(b0 - b1)) whatever its features.
  auto write = [&](const std::string &name, runtime::Shape shape,
                   std::vector<double> values = {}) {
    runtime::Tensor tensor(runtime::DType::F32, shape);
    for (size_t i = 0; i < values.size(); ++i)
      tensor.set(static_cast<int64_t>(i), values[i]);
    REQUIRE(
        runtime::writeNpy(
            tensor,
            (directory / "weights" / runtime::outputFileName(name)).string())
            .ok());
  };
  int64_t in = kPlacerFeatures, hidden = options.hidden;
  for (int layer = 1; layer <= 2; ++layer, in = hidden) {
    std::string prefix = "conv" + std::to_string(layer);
    write(prefix + ".self.weight", {hidden, in});
    write(prefix + ".self.bias", {hidden});
    write(prefix + ".neighbours.weight", {in, hidden});
  }
  write("head.weight", {2, hidden});
  write("head.bias", {2}, {0.25, 1.5});
  mlir::FailureOr<std::vector<double>> scores =
      placerScores(directory.string(), graph, context, error);
  REQUIRE(succeeded(scores));
  REQUIRE(scores->size() == 10);
  for (double score : *scores)
    CHECK(score == Approx(1 / (1 + std::exp(0.25 - 1.5))));

  // A feature reaching the head: the first self weight passes the
  // machine's feature 5 (its quick estimate against the best machine's)
  // through both layers to class 1, so the best machine scores highest.
  std::vector<double> passFeature(static_cast<size_t>(hidden * kPlacerFeatures),
                                  0);
  passFeature[5] = 8;
  write("conv1.self.weight", {hidden, kPlacerFeatures}, passFeature);
  std::vector<double> passHidden(static_cast<size_t>(hidden * hidden), 0);
  passHidden[0] = 1;
  write("conv2.self.weight", {hidden, hidden}, passHidden);
  std::vector<double> head(static_cast<size_t>(2 * hidden), 0);
  head[static_cast<size_t>(hidden)] = 1;
  write("head.weight", {2, hidden}, head);
  write("head.bias", {2}, {4, 0});
  scores = placerScores(directory.string(), graph, context, error);
  REQUIRE(succeeded(scores));
  for (int64_t node = 0; node < graph.nodes; ++node) {
    double feature =
        graph.features[static_cast<size_t>(node * kPlacerFeatures + 5)];
    CHECK((*scores)[static_cast<size_t>(node)] ==
          Approx(1 / (1 + std::exp(4 - 8 * feature))).epsilon(1e-4));
  }
  std::filesystem::remove_all(directory);

  // No placer there at all.
  CHECK(failed(
      placerScores((directory / "absent").string(), graph, context, error)));
  CHECK(error.find("absent/model.onnx") != std::string::npos);
}

TEST_CASE("the placer's proposal: machines at one half, else its best",
          "[placement][gnn]") {
  PlacerProposal proposal = placerProposal({0.9, 0.2, 0.6, 0.1});
  CHECK(proposal.machines == std::vector<bool>{true, false, true, false});
  CHECK(proposal.count == 2);
  CHECK(proposal.best == 0);
  proposal = placerProposal({0.1, 0.4, 0.3, 0.4});
  CHECK(proposal.machines == std::vector<bool>{false, true, false, false});
  CHECK(proposal.count == 1);
  CHECK(proposal.best == 1);
  CHECK(placerProposal({}).count == 0);
}

TEST_CASE("the proposal's neighbourhood: groups holding proposed machines",
          "[placement][gnn]") {
  using Kind = PlacementCandidate::Kind;
  double inf = std::numeric_limits<double>::infinity();
  std::vector<PlacementCandidate> candidates = {
      group(Kind::Node, {0}, 3.0),
      group(Kind::Node, {1}, 2.0),
      group(Kind::Node, {2}, 1.0),
      group(Kind::Region, {0, 1}, 1.5),
      group(Kind::RegionType, {2, 3}, inf),
      group(Kind::Everything, {0, 1, 2, 3}, 0.5)};
  auto near = [&](std::vector<double> scores, size_t count) {
    return proposalNeighbourhood(candidates, placerProposal(scores), count);
  };
  // Machines 0 and 1 proposed: their nodes and region, by estimate; not
  // every node, as machines 2 and 3 are not proposed.
  CHECK(near({0.9, 0.6, 0.1, 0.2}, 3) == std::vector<size_t>{3, 1, 0});
  CHECK(near({0.9, 0.6, 0.1, 0.2}, 1) == std::vector<size_t>{3});
  // None at one half: the best alone, and no group that cannot fit.
  CHECK(near({0.1, 0.2, 0.4, 0.3}, 3) == std::vector<size_t>{2});
  // Machine 3 best: its only groups cannot fit, or are every node.
  CHECK(near({0.1, 0.2, 0.3, 0.4}, 3).empty());
  // Every machine proposed: every node too.
  CHECK(near({0.9, 0.9, 0.9, 0.9}, 2) == std::vector<size_t>{5, 2});
  CHECK(near({}, 3).empty());
}
