//===- Vocabulary.h - the kinds every stage speaks of ----------*- C++ -*-===//
//
// How partial values combine, which collective moves data, and what a
// buffer holds: each defined here once, MLIR-free, with its one spelling.
// The ODS enums (sbp and plan dialects) and the plan.proto enums convert to
// and from these in one place each (SBPAttrs.h, PlanOps.h, PlanFile.h),
// by name, and tests check every case both ways. Element types are the
// runtime's DType (Runtime/Tensor.h), schedules schedule::PipelineSchedule
// (Schedule/Pipeline.h), both MLIR-free too.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SUPPORT_VOCABULARY_H
#define PARPLAN_SUPPORT_VOCABULARY_H

#include <optional>
#include <string>

namespace parplan {

/// How the partial values held along a mesh axis combine into the whole
/// value, and how a collective reduces.
enum class ReduceKind { Sum, Max, Min, Prod };
inline constexpr ReduceKind kReduceKinds[] = {
    ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Prod};
/// "sum", "max", "min", "prod".
const char *toString(ReduceKind kind);
std::optional<ReduceKind> parseReduceKind(const std::string &text);

/// The kind of a dialect's reduction enum (sbp's, plan's: ODS enums whose
/// cases are named as toString spells the kinds) and back.
template <typename DialectReduceKind>
ReduceKind fromDialectReduceKind(DialectReduceKind kind) {
  switch (kind) {
  case DialectReduceKind::sum:
    return ReduceKind::Sum;
  case DialectReduceKind::max:
    return ReduceKind::Max;
  case DialectReduceKind::min:
    return ReduceKind::Min;
  case DialectReduceKind::prod:
    return ReduceKind::Prod;
  }
  return ReduceKind::Sum;
}
template <typename DialectReduceKind>
DialectReduceKind toDialectReduceKind(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return DialectReduceKind::sum;
  case ReduceKind::Max:
    return DialectReduceKind::max;
  case ReduceKind::Min:
    return DialectReduceKind::min;
  case ReduceKind::Prod:
    return DialectReduceKind::prod;
  }
  return DialectReduceKind::sum;
}

/// The collectives a plan runs within a group of devices.
enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast
};
inline constexpr CollectiveKind kCollectiveKinds[] = {
    CollectiveKind::AllReduce, CollectiveKind::AllGather,
    CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
    CollectiveKind::Broadcast};
/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast".
const char *toString(CollectiveKind kind);
std::optional<CollectiveKind> parseCollectiveKind(const std::string &text);

/// What a buffer of a device's program holds, which decides who fills it
/// and how long it lives (docs/plan-format.md).
enum class BufferKind {
  Temporary,
  Parameter,
  Input,
  State,
  Constant,
  Output,
  Accumulator,
  MicroBatch
};
inline constexpr BufferKind kBufferKinds[] = {
    BufferKind::Temporary,   BufferKind::Parameter, BufferKind::Input,
    BufferKind::State,       BufferKind::Constant,  BufferKind::Output,
    BufferKind::Accumulator, BufferKind::MicroBatch};
/// "temporary", "parameter", "input", "state", "constant", "output",
/// "accumulator", "micro_batch".
const char *toString(BufferKind kind);
std::optional<BufferKind> parseBufferKind(const std::string &text);

} // namespace parplan

#endif // PARPLAN_SUPPORT_VOCABULARY_H
