//===- Passes.h - the compiler's passes and pipelines ----------*- C++ -*-===//
//
// Every stage's passes (Graph, TrainingStep, Sharding, Pipeline, Lowering:
// each folder's Passes.h) and the pipelines that string the stages together,
// as parplan compile, parplan shard and parplan-opt run them.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TRANSFORMS_PASSES_H
#define PARPLAN_TRANSFORMS_PASSES_H

#include "parplan/Dialect/NN/NNDialect.h"
#include "parplan/Dialect/Plan/PlanDialect.h"
#include "parplan/Dialect/SBP/SBPDialect.h"
#include "parplan/Schedule/Pipeline.h"
#include "parplan/Transforms/Graph/Passes.h"
#include "parplan/Transforms/Lowering/Passes.h"
#include "parplan/Transforms/Pipeline/Passes.h"
#include "parplan/Transforms/Sharding/Passes.h"
#include "parplan/Transforms/TrainingStep/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace parplan {

/// The canonical form of an imported program: folding and dead-code removal
/// (canonicalize), then nn-fuse-layer-norm, nn-fuse-gelu and
/// nn-fold-into-matmul. Registered as
/// the pipeline `nn-canonical-forms`.
void addCanonicalFormPasses(mlir::OpPassManager &pm);

/// The layout options both tool pipelines share: where sbp-assign lays the
/// program out.
template <typename Derived>
struct LayoutPipelineOptions : public mlir::PassPipelineOptions<Derived> {
  template <typename T> using Option = mlir::detail::PassOptions::Option<T>;
  template <typename T>
  using ListOption = mlir::detail::PassOptions::ListOption<T>;

  Option<std::string> mesh{*this, "mesh",
                           llvm::cl::desc("Mesh shape, e.g. 2x4 (default: "
                                          "the cluster's)"),
                           llvm::cl::init("")};
  Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("auto, exact, data-parallel, megatron or replicated"),
      llvm::cl::init("auto")};
  Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("Pipeline stages cutting the mesh's first axis and the "
                     "layers evenly (place-stages; 0: the annotations')"),
      llvm::cl::init(0)};
  Option<int64_t> chunks{
      *this, "chunks",
      llvm::cl::desc("Model chunks of each of those stages, for the "
                     "interleaved schedule (place-stages)"),
      llvm::cl::init(1)};
  Option<std::string> shares{
      *this, "shares",
      llvm::cl::desc("On devices of mixed types: auto (a mesh's parts by "
                     "speed where that is faster), speed or even (stages "
                     "cut by work alone, even parts; place-stages, "
                     "sbp-assign)"),
      llvm::cl::init("auto")};
  Option<bool> cutInsideLayers{
      *this, "cut-inside-layers",
      llvm::cl::desc("On stages of different speeds: end stages inside "
                     "layers where that balances them better (place-stages)"),
      llvm::cl::init(false)};
};

/// The options of `parplan compile`'s pipeline, `parplan-compile`: the
/// training step (nn-autodiff's options) and the layout (sbp-assign's).
struct CompilePipelineOptions
    : public LayoutPipelineOptions<CompilePipelineOptions> {
  Option<bool> explain{*this, "explain",
                       llvm::cl::desc("Attach sbp.explain to every op"),
                       llvm::cl::init(true)};
  Option<std::string> starts{
      *this, "starts",
      llvm::cl::desc("With strategy auto: all (the search and every "
                     "baseline), search or baselines"),
      llvm::cl::init("all")};
  Option<bool> inference{
      *this, "inference",
      llvm::cl::desc("Build an inference step (the forward pass, for "
                     "serving) rather than a training step"),
      llvm::cl::init(false)};
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("cross-entropy or mse"),
                           llvm::cl::init("cross-entropy")};
  Option<unsigned> output{*this, "output",
                          llvm::cl::desc("The model output the loss reads"),
                          llvm::cl::init(0)};
  Option<std::string> labels{*this, "labels",
                             llvm::cl::desc("Name of the labels input"),
                             llvm::cl::init("labels")};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, momentum, adam or adamw"),
                                llvm::cl::init("adam")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(1e-3)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay (negative: the optimizer's default)"),
      llvm::cl::init(-1)};
  Option<std::string> frozen{*this, "frozen",
                             llvm::cl::desc("Globs of parameters not trained"),
                             llvm::cl::init("")};
  Option<std::string> recompute{*this, "recompute",
                                llvm::cl::desc("none, selective or full"),
                                llvm::cl::init("none")};
  Option<int64_t> recomputeLayers{
      *this, "recompute-layers",
      llvm::cl::desc("With full: the first N layers of each class (-1: all)"),
      llvm::cl::init(-1)};
  Option<std::string> mixedPrecision{*this, "mixed-precision",
                                     llvm::cl::desc("none, bf16 or fp16"),
                                     llvm::cl::init("none")};
  Option<int64_t> microBatches{
      *this, "micro-batches",
      llvm::cl::desc("Micro-batches the step accumulates gradients over"),
      llvm::cl::init(1)};
  Option<std::string> gradientSums{
      *this, "gradient-sums",
      llvm::cl::desc("f32 or low: the type of the gradients' sums over "
                     "micro-batches"),
      llvm::cl::init("f32")};
  ListOption<std::string> untie{
      *this, "untie",
      llvm::cl::desc("Parameters to give each layer's use a copy of")};
  Option<std::string> dropout{
      *this, "dropout", llvm::cl::desc("on (drop elements in training) or off"),
      llvm::cl::init("on")};
  Option<int64_t> dropoutSeed{*this, "dropout-seed",
                              llvm::cl::desc("Seed of the dropout masks"),
                              llvm::cl::init(0)};
  Option<std::string> batchNorm{
      *this, "batch-norm",
      llvm::cl::desc("batch (the batch's statistics) or frozen"),
      llvm::cl::init("batch")};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("Pipeline schedule of stages with micro-batches: gpipe, "
                     "1f1b, eager-1f1b, interleaved (with chunks) or "
                     "sequential"),
      llvm::cl::init(schedule::kDefaultPipelineScheduleName)};
  Option<double> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Bytes per device the layouts may use, below each "
                     "device's memory (0: all of it)"),
      llvm::cl::init(0)};
};

/// nn-untie-parameters, then nn-autodiff, with the training options of
/// `options`.
void addAutodiffPass(mlir::OpPassManager &pm,
                     const CompilePipelineOptions &options);

/// The stages of the compile pipeline, in order: the step
/// (nn-split-fused-projections, then nn-autodiff, or nn-inference-step
/// with `inference`), the layout (place-stages,
/// sbp-assign, insert-cross-mesh, insert-boxing, expand-boxing, priced
/// alike) and the per-device programs (lower-to-plan, plan-memory).
void addStepPasses(mlir::OpPassManager &pm,
                   const CompilePipelineOptions &options);
void addLayoutPasses(mlir::OpPassManager &pm,
                     const CompilePipelineOptions &options);
/// The layout stage's search alone (place-stages, sbp-assign): what a
/// trial needs of it to read the predicted step (sbp.plan).
void addLayoutSearchPasses(mlir::OpPassManager &pm,
                           const CompilePipelineOptions &options);
/// The layout stage after its search (insert-cross-mesh, insert-boxing,
/// expand-boxing): addLayoutPasses is addLayoutSearchPasses then these, so
/// a step a trial laid out goes on without being searched again.
void addLayoutBoxingPasses(mlir::OpPassManager &pm,
                           const CompilePipelineOptions &options);
/// lower-to-plan and plan-memory; `schedule` is the order stages run their
/// micro-batches in (lower-to-plan's option).
void addLoweringPasses(
    mlir::OpPassManager &pm,
    const std::string &schedule = schedule::kDefaultPipelineScheduleName);

/// The options of `parplan shard`'s pipeline, `parplan-shard`: a layout
/// for the model as imported, a training step priced by sbp-assign's
/// implied backward pass and optimizer.
struct ShardPipelineOptions
    : public LayoutPipelineOptions<ShardPipelineOptions> {
  Option<std::string> cluster{
      *this, "cluster",
      llvm::cl::desc("A cluster preset or file that attach-cluster attaches "
                     "first (default: the one the module carries)"),
      llvm::cl::init("")};
  Option<bool> explain{*this, "explain",
                       llvm::cl::desc("Attach sbp.explain to every op"),
                       llvm::cl::init(false)};
  Option<bool> training{*this, "training",
                        llvm::cl::desc("Price a training step rather than "
                                       "inference"),
                        llvm::cl::init(true)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, momentum, adam or adamw"),
                                llvm::cl::init("adam")};
  Option<bool> mixedPrecision{
      *this, "mixed-precision",
      llvm::cl::desc("bf16/fp16 compute with fp32 master weights"),
      llvm::cl::init(true)};
};

/// nn-split-fused-projections, sbp-assign, insert-boxing and expand-boxing
/// with `options`: what `parplan shard` runs. Registered as the pipeline
/// `parplan-shard`.
void buildShardPipeline(mlir::OpPassManager &pm,
                        const ShardPipelineOptions &options);

/// Registers every stage's passes (register<Stage>Passes, generated) and the
/// `nn-canonical-forms` and `parplan-shard` pipelines (the compile driver
/// registers `parplan-compile`, Driver/Passes.h).
void registerAllPasses();

} // namespace parplan

#endif // PARPLAN_TRANSFORMS_PASSES_H
