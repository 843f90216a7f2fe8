//===- GnnPlacer.h - Hulk's graph network proposing a placement -*- C++ -*-===//
//
// Hulk's placer: a graph network over the cluster's machines (a node of
// the graph per machine, its features the machine's devices, speed and
// memory and its region's; edges weighted by the links' bandwidth) scores
// each machine's chance of taking part in the plan. It is a `parplan-zoo
// gnn` model that parplan trains itself (parplan compile --train,
// parplan-run --save-weights) on the search's placements of generated
// clusters (`parplan compile --placer-dataset`), and the compile evaluates
// it with the reference kernels (NNInterpreter.h); its proposal is refined
// by the search's quick estimate (docs/placement.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DRIVER_GNNPLACER_H
#define PARPLAN_DRIVER_GNNPLACER_H

#include "parplan/Driver/Compile.h"
#include "parplan/Driver/Placement.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace parplan::driver {

/// Features per machine the placer reads (docs/placement.md#features).
constexpr int64_t kPlacerFeatures = 12;

/// The most machines the placer takes: its adjacency is dense (machines
/// squared floats, 256 MB at this bound).
constexpr int64_t kPlacerMaxMachines = 8192;

/// A cluster as the placer sees it: a row of features per node of the
/// cluster, in its order, and the adjacency its graph layers average over.
struct PlacerGraph {
  int64_t nodes = 0;
  /// nodes x kPlacerFeatures, row-major.
  std::vector<float> features;
  /// nodes x nodes, row-major: row i holds i's links' bandwidths to the
  /// other nodes over their sum (a weighted mean), 0 on the diagonal.
  std::vector<float> adjacency;
};

/// The placer's graph of `cluster` for a step of `work`.
PlacerGraph placerGraph(const cost::ClusterIndex &cluster,
                        const StepWork &work);

/// What the placer learns from a compile that searched the placement: 1
/// for each node of `cluster` the kept plan runs on, 0 for the others.
std::vector<int64_t> placerLabels(const cost::Cluster &cluster,
                                  const PlanFigures::Placement &placement);

/// How many graphs of `nodes` machines the batch files of `directory`
/// hold (0 where there are none yet); a one-line error naming the file
/// where they do not hold whole graphs of that size alike.
mlir::FailureOr<uintmax_t> placerDatasetGraphs(const std::string &directory,
                                               int64_t nodes,
                                               std::string &error);

/// Appends `graph` and `labels` to the batch files of `directory`
/// (features.bin, adjacency.bin, labels.bin: parplan-run --batches), made
/// when missing. Every graph in a directory has the same number of nodes
/// (a batch of the training plan); another count, or files that do not
/// hold whole graphs, are a one-line error naming the file; a failed
/// write leaves the files as they were.
mlir::LogicalResult appendPlacerExample(const std::string &directory,
                                        const PlacerGraph &graph,
                                        const std::vector<int64_t> &labels,
                                        std::string &error);

/// Where scripts/train-placer.sh writes a placer by default, and `parplan
/// compile --placer gnn` reads one without --placer-model:
/// $PARPLAN_CACHE_DIR/placer, $PARPLAN_CACHE_DIR defaulting to
/// $HOME/.cache/parplan (as the tests' downloads do).
std::string defaultPlacerDirectory();

/// Each node's probability of taking part, by the trained placer in
/// `directory` (model.onnx, parplan-zoo gnn with kPlacerFeatures features
/// and 2 classes; weights/NAME.npy, parplan-run --save-weights). A missing
/// or mismatched file is a one-line error naming it.
mlir::FailureOr<std::vector<double>> placerScores(const std::string &directory,
                                                  const PlacerGraph &graph,
                                                  mlir::MLIRContext &context,
                                                  std::string &error);

/// The machines the placer proposes: those it gives at least one half,
/// or, where it gives none that much, its best alone.
struct PlacerProposal {
  std::vector<bool> machines;
  size_t count = 0;
  /// The best-scored machine (the first of equal scores).
  size_t best = 0;
};
PlacerProposal placerProposal(const std::vector<double> &scores);

/// The groups the placer's proposal is refined over, the search's local
/// moves around it: of `candidates` (estimated), those holding a proposed
/// machine, but every node only where every machine is proposed; the
/// `count` of least quick estimate, best first, none that cannot fit.
/// Their indices in `candidates`.
std::vector<size_t>
proposalNeighbourhood(const std::vector<PlacementCandidate> &candidates,
                      const PlacerProposal &proposal, size_t count);

} // namespace parplan::driver

#endif // PARPLAN_DRIVER_GNNPLACER_H
