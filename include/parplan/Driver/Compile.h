//===- Compile.h - the compile driver: a model to a plan --------*- C++ -*-===//
//
// The compile as a library: what `parplan compile` decides (the pipeline's
// shape, the recomputation that makes a step fit, the start the search
// keeps) made here on typed results, for the command-line tool, parplan-opt
// (the `parplan-compile` pipeline) and any program that links the compiler.
// Tools parse arguments, call compile() and print what it returns.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DRIVER_COMPILE_H
#define PARPLAN_DRIVER_COMPILE_H

#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Driver/CompileOptions.h"
#include "parplan/Driver/PipelineSearch.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/STLExtras.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace google::protobuf {
class Arena;
} // namespace google::protobuf

namespace parplan::plan {
class Plan;
} // namespace parplan::plan

namespace parplan::driver {

/// Fills the training options of the compile pipeline from `training`, and
/// its layout options from `layout` when given.
void setPipelineOptions(CompilePipelineOptions &pipeline,
                        const TrainingOptions &training,
                        const LayoutOptions *layout = nullptr);

/// Turns `tensor T, pipeline P` (with strategy megatron) into the mesh
/// (cluster devices / T) x T and P stages of it; why not when the grid does
/// not fit the cluster or clashes with a mesh or stages given. Without
/// either, does nothing.
std::optional<std::string> resolveMegatronGrid(mlir::ModuleOp module,
                                               LayoutOptions &layout);

/// The mesh sbp-assign laid `module` out on: @mesh, or with stages the
/// first stage's mesh (they all have its shape).
sbp::MeshOp layoutMesh(mlir::ModuleOp module);

/// One stage mesh: its devices and, on stages, the search's per-stage
/// figures (sbp.plan's stages).
struct StageFigures {
  std::string mesh;
  std::vector<int64_t> shape, devices;
  /// Its devices' types, in device order, each once.
  std::vector<std::string> deviceTypes;
  /// Placed by --stages: the layers its cut gave it (0: placed otherwise).
  int64_t layers = 0;
  /// Placed by --stages: whether the model's head (the ops after its last
  /// layer) is the stage's.
  bool head = false;
  /// Placed by --stages: the layers it runs a part of, the rest on
  /// another stage (a cut inside a layer).
  std::vector<std::string> layerParts;
  bool predicted = false;
  double forward = 0, backward = 0, update = 0, busy = 0, bubble = 0;
  /// What it runs and receives once before its first micro-batch.
  double prologue = 0;
  int64_t memoryBytes = 0;
  /// FLOPs of one step on each of its devices.
  double flops = 0;
};

/// One laid-out op, as the summary lists it.
struct OpFigures {
  std::string name, onnxNode, sharding;
  double costSeconds = 0;
};

/// One per-device program of the plan.
struct ProgramFigures {
  std::vector<int64_t> devices;
  /// The arena plan-memory laid out, the activations a schedule keeps
  /// aside beside it (parplan-run, in host memory), of those the other
  /// micro-batches' in flight beside the arena's
  /// (runtime::inFlightActivationBytes), and the peak of live bytes the
  /// arena cannot go below.
  int64_t peakMemoryBytes = 0, keptActivationBytes = 0,
          inFlightActivationBytes = 0, liveMemoryBytes = 0;
  double commBytes = 0;
  /// FLOPs of one step on each of its devices (its stage's).
  double flops = 0;
};

/// What the compile chose and the cost model predicts of it, each figure
/// computed once (tools print these, never recompute them).
struct PlanFigures {
  /// The mesh shape the layouts are on (every stage's).
  std::vector<int64_t> meshShape;
  std::vector<StageFigures> stages;
  /// Where one mesh of mixed types splits by its devices' speed: the
  /// mesh axis, each position's weight (the batch rows it takes, where
  /// the batch allows) and its devices' type.
  struct MeshShares {
    int64_t axis = 0;
    std::vector<int64_t> weights;
    std::vector<std::string> deviceTypes;
  };
  std::optional<MeshShares> shares;
  /// The start the search kept (its step is stepSeconds).
  std::string start;
  /// The other starts' predicted steps, by name, as sbp-assign recorded
  /// them.
  std::vector<std::pair<std::string, double>> baselines;
  double stepSeconds = 0, computeSeconds = 0, communicationSeconds = 0;
  /// Of compute and communication, what the executor's streams run at once
  /// (sbp.plan's overlap_time).
  double overlapSeconds = 0;
  int64_t estimatedMemoryBytes = 0, deviceMemoryBytes = 0;
  /// FLOPs of one step on the busiest device: the ops of its stage, each
  /// at its local share of the work.
  double flopsPerDevice = 0;
  std::vector<OpFigures> ops;
  /// Each trained parameter's layout, by name.
  std::vector<std::pair<std::string, std::string>> parameterLayouts;
  /// The parameters whose boxing for the forward also serves the backward
  /// (sbp.kept_for_backward), by name, in program order.
  std::vector<std::string> keptForBackward;
  int64_t microBatches = 1;
  /// The global batch the micro-batches divide (--batch, or the model's
  /// own when fixed there: batchFixed); 0 when unknown.
  int64_t batch = 0;
  bool batchFixed = false;
  /// The schedule stages run micro-batches in (empty without both), and
  /// the chunks of each stage.
  std::string schedule;
  int64_t chunks = 1;
  /// The recomputation chosen, the layers it recomputes (forward order),
  /// the layers the plan with every layer recomputed had, and why the step
  /// did not fit without (empty when it did).
  std::string recompute;
  std::vector<std::string> recomputedLayers;
  size_t layersInAll = 0;
  std::string withoutRecompute;
  /// Where the first layout's plan did not fit its devices although its
  /// estimate did: that plan's bytes on its fullest device (arena and
  /// activations in flight) and estimate, and the budget the plan kept was
  /// laid out under (compileOnMesh).
  struct LaidOutAgain {
    int64_t firstPlannedBytes = 0, firstEstimatedBytes = 0, budgetBytes = 0;
  };
  std::optional<LaidOutAgain> laidOutAgain;
  /// Per program (with CompileStage::Plan): memory and communication; the
  /// device of largest peak (`peakDevice`) with the other micro-batches'
  /// activations in flight beside its arena, and the most bytes a device
  /// sends.
  std::vector<ProgramFigures> programs;
  int64_t peakMemoryBytes = 0, peakInFlightBytes = 0, peakDevice = 0;
  double commBytes = 0;
  int64_t devices = 0;

  /// Whether the plan exceeds its devices' memory: the device of largest
  /// peak, with the other micro-batches' activations in flight, has more
  /// than its bytes (compiled only with allowOverMemory).
  bool overMemory() const {
    return peakMemoryBytes + peakInFlightBytes > deviceMemoryBytes;
  }

  /// On a cluster of mixed device types compiled on the default mesh: its
  /// nodes of the fastest type (driver::fastestTypeNodes), compiled alone
  /// beside all of them on a cluster of their own, and whether the plan
  /// kept is theirs (the other devices only slowed the step).
  struct OneTypePart {
    std::string deviceType;
    /// Its nodes, and their `devices` of the cluster's `clusterDevices`.
    std::vector<std::string> nodes;
    int64_t devices = 0, clusterDevices = 0;
    /// Its plan's predicted step; none where no plan fits on them.
    std::optional<double> stepSeconds;
    /// The plan's on every device.
    double allStepSeconds = 0;
    bool kept = false;
  };
  std::optional<OneTypePart> oneTypePart;

  /// Where the plan's devices are numbered through the nodes in another
  /// order than the file lists them (each type's nodes together, the
  /// fastest type first: driver::nodesGroupedByType): the nodes' names in
  /// that order, which ranks follow. Empty where numbered as listed.
  std::vector<std::string> nodeOrder;

  /// On a cluster spread over regions compiled on its default mesh: the
  /// groups of nodes laid out (docs/pipeline.md#placement) beside the plan
  /// on every node, region by region. Each is judged by the longer of its
  /// predicted and simulated steps.
  struct Placement {
    struct Tried {
      std::string what;
      std::vector<std::string> nodes;
      int64_t devices = 0;
      /// quickEstimate's step, the plan's predicted step (none: no plan
      /// fits) and its simulated step (none: not simulated).
      double estimate = 0;
      std::optional<double> stepSeconds, simulatedSeconds;
    };
    /// The groups by the step they are judged by: the kept one first,
    /// unless `keptAll`.
    std::vector<Tried> tried;
    /// The plan on every node, region by region (none: no fit), kept
    /// where it beats every group, and its simulated step.
    std::optional<double> allStepSeconds, allSimulatedSeconds;
    int64_t clusterDevices = 0;
    /// Candidates estimated, of which `tried` were laid out.
    size_t candidates = 0;
    bool keptAll = false;
    /// The regions in the order every node's devices are numbered
    /// (regionsAlongPath).
    std::vector<std::string> regions;
    /// False where the options gave the plan's shape: the compile numbered
    /// every node's devices along `regions` and chose no machines; where
    /// the file lists them otherwise, the plan in the file's order too
    /// (none: no fit, or listed so), kept where faster.
    bool searched = true;
    std::optional<double> listedStepSeconds, listedSimulatedSeconds;
    bool keptListed = false;
    /// "search", or "gnn": the graph network proposed `proposed` machines
    /// (placerProposal), best `bestNode` at `bestScore`, and `tried` holds
    /// the groups around them laid out (proposalNeighbourhood), every
    /// node's too where it proposed every machine; every node is laid out
    /// only then. `placerSeconds`: the time to propose, before the first
    /// layout.
    std::string placer = "search";
    int64_t proposed = 0;
    std::string bestNode;
    double bestScore = 0;
    double placerSeconds = 0;
  };
  std::optional<Placement> placement;

  /// The stage `device` is on; null on one mesh.
  const StageFigures *stageOf(int64_t device) const {
    for (const StageFigures &stage : stages)
      if (llvm::is_contained(stage.devices, device))
        return &stage;
    return nullptr;
  }
};

/// What a compile returns.
struct CompileResult {
  /// The IR at the stage asked for (compile's stopAfter).
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// With CompileStage::Plan: the plan exported for parplan-run, on
  /// `arena`.
  std::shared_ptr<google::protobuf::Arena> arena;
  plan::Plan *plan = nullptr;
  /// The pipeline search's trials, when the shape was searched.
  std::optional<PipelineSearchResult> search;
  /// Whether the schedule was searched (a stage count's trial names its
  /// best schedule then).
  bool scheduleSearched = false;
  /// With CompileStage::Layout or Plan.
  PlanFigures figures;
};

/// Compiles the model `importAt` imports for a training step under
/// `options`, to the stage `options.stopAfter` names: checks the options,
/// imports the model, resolves Megatron's grid, searches what the options
/// leave open (stages, micro-batches, schedule; docs/pipeline.md), falls
/// back to recomputation when nothing fits, lowers, and exports. On a
/// cluster of mixed device types compiled on its default mesh, its nodes
/// of the fastest type are compiled alone too, and their plan kept where
/// faster (PlanFigures::oneTypePart); on one spread over regions,
/// placement chooses the machines (PlanFigures::placement). `location`
/// names the model in diagnostics about the options. Every pass is timed
/// under `timing`; the pass managers are kept in `passManagers` (a timing
/// report knows a pass by its address). Failure once the reason has been
/// emitted as a diagnostic.
mlir::FailureOr<CompileResult>
compile(const ModelImporter &importAt, const CompileOptions &options,
        mlir::MLIRContext &context, mlir::Location location,
        mlir::TimingScope &timing,
        std::vector<std::unique_ptr<mlir::PassManager>> &passManagers);

} // namespace parplan::driver

#endif // PARPLAN_DRIVER_COMPILE_H
