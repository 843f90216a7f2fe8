//===- Vocabulary.cpp - the kinds every stage speaks of -------------------===//

#include "parplan/Support/Vocabulary.h"

namespace parplan {

namespace {
/// The kind of `kinds` spelled `text`.
template <typename Kind, size_t N>
std::optional<Kind> parseKind(const Kind (&kinds)[N], const std::string &text) {
  for (Kind kind : kinds)
    if (text == toString(kind))
      return kind;
  return std::nullopt;
}
} // namespace

const char *toString(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Min:
    return "min";
  case ReduceKind::Prod:
    return "prod";
  }
  return "?";
}

std::optional<ReduceKind> parseReduceKind(const std::string &text) {
  return parseKind(kReduceKinds, text);
}

const char *toString(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  }
  return "?";
}

std::optional<CollectiveKind> parseCollectiveKind(const std::string &text) {
  return parseKind(kCollectiveKinds, text);
}

const char *toString(BufferKind kind) {
  switch (kind) {
  case BufferKind::Temporary:
    return "temporary";
  case BufferKind::Parameter:
    return "parameter";
  case BufferKind::Input:
    return "input";
  case BufferKind::State:
    return "state";
  case BufferKind::Constant:
    return "constant";
  case BufferKind::Output:
    return "output";
  case BufferKind::Accumulator:
    return "accumulator";
  case BufferKind::MicroBatch:
    return "micro_batch";
  }
  return "?";
}

std::optional<BufferKind> parseBufferKind(const std::string &text) {
  return parseKind(kBufferKinds, text);
}

} // namespace parplan
