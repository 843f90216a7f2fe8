//===- OnnxWireFormat.h - ONNX models without their weights -----*- C++ -*-===//
//
// Weights never enter parplan's IR, so the importer need not parse them:
// this works on the protobuf wire format directly, copying a serialized
// ModelProto without the raw bytes of its large float initializers and
// recording where those bytes sit in the file (which the executor reads).
// No protobuf or MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_IMPORT_ONNXWIREFORMAT_H
#define PARPLAN_IMPORT_ONNXWIREFORMAT_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace parplan {

/// A byte range of the model file.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// Result of stripWeightData.
struct StrippedModel {
  /// The model's wire bytes without the left-out payloads.
  std::string bytes;
  /// For every graph initializer stored as raw_data, by name, those of
  /// subgraphs (If branches) included: where its bytes are in the original
  /// buffer (left out or not).
  std::map<std::string, ByteRange> rawData;
  /// For every Constant node, in any graph, whose value is stored as
  /// raw_data, by the node's output: where those bytes are (paddle2onnx
  /// stores every weight so).
  std::map<std::string, ByteRange> constantData;
};

/// Copies the serialized ModelProto in `bytes`, leaving out the raw_data of
/// graph initializers (subgraphs' included) whose element type is a
/// floating-point type and whose payload exceeds `threshold` bytes. Returns
/// std::nullopt when `bytes` is not well-formed protobuf (the caller then
/// reports the error from a regular parse).
std::optional<StrippedModel> stripWeightData(std::string_view bytes,
                                             uint64_t threshold);

} // namespace parplan

#endif // PARPLAN_IMPORT_ONNXWIREFORMAT_H
