//===- AttrNames.h - the discardable attributes passes hand on --*- C++ -*-===//
//
// The names of the attributes one stage leaves for the next, in one place,
// so that a writer and its readers cannot spell one differently. The
// dialects' verifiers check what each holds (docs/dialects.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DIALECT_ATTRNAMES_H
#define PARPLAN_DIALECT_ATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace parplan {

/// On the module: the cluster the program is laid out for (#sbp.cluster).
inline constexpr llvm::StringLiteral kClusterAttrName = "sbp.cluster";
/// On the module: the pinned layouts' file and text ({file, text}).
inline constexpr llvm::StringLiteral kAnnotationsAttrName = "sbp.annotations";
/// On a plan module: the cluster the layouts were priced on, as the JSON
/// text plan.proto's `cluster` holds (the plan dialect knows no sbp).
inline constexpr llvm::StringLiteral kPlanClusterAttrName = "plan.cluster";

/// On an op: the layouts sbp-assign chose (#sbp.sharding).
inline constexpr llvm::StringLiteral kShardingAttrName = "sbp.sharding";
/// On an op: the chosen layout's cost and the runner-up.
inline constexpr llvm::StringLiteral kExplainAttrName = "sbp.explain";
/// On the module: sbp-assign's predicted step and figures.
inline constexpr llvm::StringLiteral kLayoutPlanAttrName = "sbp.plan";
/// On the module: why no layout fits (#sbp.no_fit).
inline constexpr llvm::StringLiteral kNoFitAttrName = "sbp.no_fit";
/// On an nn.param, by sbp-assign: the boxing of the parameter that the
/// forward reads also serves the backward readers that read it in the same
/// layout (a weight gathered once for both passes), kept between them
/// where that shortens the step and memory allows.
inline constexpr llvm::StringLiteral kKeptForBackwardAttrName =
    "sbp.kept_for_backward";
/// On an op: the stage's mesh it runs on.
inline constexpr llvm::StringLiteral kStageAttrName = "sbp.stage";
/// On a stage's sbp.mesh placed by place-stages' stages=N: the layers its
/// cut gave it (its chunks' together).
inline constexpr llvm::StringLiteral kStageLayersAttrName = "sbp.layers";
/// On a stage's sbp.mesh placed by place-stages' stages=N: the model's
/// head (the ops after its last layer, cut off as a run of their own) is
/// this stage's.
inline constexpr llvm::StringLiteral kStageHeadAttrName = "sbp.head";
/// On a stage's sbp.mesh placed by place-stages' stages=N: the layers
/// (their parameters' prefix, "transformer.h.6") its cut gave it a part of,
/// cut where no more crosses than between layers, the rest on another
/// stage.
inline constexpr llvm::StringLiteral kStageLayerPartsAttrName =
    "sbp.layer_parts";
/// On the module: place-stages found, on stages of different speeds, a cut
/// inside layers balancing them better than whole layers, which its option
/// cut-inside-layers makes (the pipeline search tries it).
inline constexpr llvm::StringLiteral kFinerCutAttrName = "sbp.finer_cut";
/// On the module: the model chunks of each stage.
inline constexpr llvm::StringLiteral kChunksAttrName = "sbp.chunks";
/// On an op: the model chunk it runs in (a move's sending side).
inline constexpr llvm::StringLiteral kChunkAttrName = "sbp.chunk";
/// On a move: its receiving side's chunk.
inline constexpr llvm::StringLiteral kDestinationChunkAttrName =
    "sbp.destination_chunk";
/// On the module: how nn-autodiff built the step.
inline constexpr llvm::StringLiteral kTrainingAttrName = "nn.training";
/// On the module: how nn-inference-step built the step (a forward pass
/// for serving).
inline constexpr llvm::StringLiteral kInferenceAttrName = "nn.inference";
/// On a result of @main: the parameter it updates.
inline constexpr llvm::StringLiteral kUpdatesAttrName = "nn.updates";
/// On a result of @main: its name ("loss").
inline constexpr llvm::StringLiteral kResultNameAttrName = "nn.name";
/// On a result of @main: the tensor an output buffer holds.
inline constexpr llvm::StringLiteral kOutputAttrName = "nn.output";
/// On a result of @main: the parameter whose gradient it is.
inline constexpr llvm::StringLiteral kGradientAttrName = "nn.gradient";
/// On a result of @main: a batch norm's running statistic.
inline constexpr llvm::StringLiteral kRunningStatisticAttrName =
    "nn.running_statistic";
/// On an op: a recomputed clone of a forward op.
inline constexpr llvm::StringLiteral kRecomputedAttrName = "nn.recomputed";
/// On the module: the model file it was imported from.
inline constexpr llvm::StringLiteral kSourceAttrName = "nn.source";
/// On the module: that file's size.
inline constexpr llvm::StringLiteral kSourceBytesAttrName = "nn.source_bytes";
/// On the module: that file's fingerprint.
inline constexpr llvm::StringLiteral kSourceFingerprintAttrName =
    "nn.source_fingerprint";
/// On the module: the ONNX opset.
inline constexpr llvm::StringLiteral kOpsetAttrName = "nn.opset";
/// On a plan module: the order stages run micro-batches in.
inline constexpr llvm::StringLiteral kPlanScheduleAttrName = "plan.schedule";
/// On a plan module: the micro-batches per step.
inline constexpr llvm::StringLiteral kPlanMicroBatchesAttrName =
    "plan.micro_batches";
/// On a plan module: the whole mesh.
inline constexpr llvm::StringLiteral kPlanMeshShapeAttrName = "plan.mesh_shape";
/// The plan's own mesh's shares of its splits (sbp.mesh `shares`): per
/// mesh axis a DenseI64ArrayAttr of weights, empty for even shares.
inline constexpr llvm::StringLiteral kPlanMeshSharesAttrName =
    "plan.mesh_shares";
/// On a plan module: the search's predicted step.
inline constexpr llvm::StringLiteral kPlanPredictionAttrName =
    "plan.prediction";
/// On a program: its arena's size (plan-memory).
inline constexpr llvm::StringLiteral kArenaBytesAttrName = "plan.arena_bytes";

} // namespace parplan

#endif // PARPLAN_DIALECT_ATTRNAMES_H
