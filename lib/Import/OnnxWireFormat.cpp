//===- OnnxWireFormat.cpp - ONNX models without their weights -------------===//
//
// Protobuf wire format: each field is a varint tag (field number << 3 | wire
// type) followed by a varint (type 0), 8 bytes (1), a varint length and that
// many bytes (2) or 4 bytes (5). Groups (3, 4) are not used by ONNX and are
// rejected. Messages are rewritten bottom-up so that enclosing lengths match.
//
//===----------------------------------------------------------------------===//

#include "parplan/Import/OnnxWireFormat.h"

#include <functional>
#include <set>
#include <vector>

using parplan::ByteRange;
using parplan::StrippedModel;

namespace {

// Field numbers of onnx.proto (ONNX 1.12, unchanged since).
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphNode = 1;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kNodeOutput = 2;
constexpr uint32_t kNodeOpType = 4;
constexpr uint32_t kNodeAttribute = 5;
constexpr uint32_t kAttributeName = 1;
constexpr uint32_t kAttributeTensor = 5;
constexpr uint32_t kAttributeGraph = 6;
constexpr uint32_t kAttributeGraphs = 11;
constexpr uint32_t kTensorDataType = 2;
constexpr uint32_t kTensorName = 8;
constexpr uint32_t kTensorRawData = 9;
// TensorProto.DataType values of the floating-point types.
constexpr uint64_t kFloat = 1, kFloat16 = 10, kDouble = 11, kBFloat16 = 16;

struct Field {
  uint32_t number;
  uint32_t wireType;
  std::string_view bytes;   // The whole field, tag included.
  std::string_view payload; // Length-delimited payload (type 2).
  uint64_t varint;          // Value (type 0).
};

class Reader {
public:
  Reader(std::string_view bytes) : data(bytes) {}

  bool done() const { return position == data.size(); }

  std::optional<uint64_t> varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (position >= data.size())
        return std::nullopt;
      uint8_t byte = static_cast<uint8_t>(data[position++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return value;
    }
    return std::nullopt;
  }

  std::optional<Field> field() {
    size_t start = position;
    std::optional<uint64_t> tag = varint();
    if (!tag || (*tag >> 3) == 0 || (*tag >> 3) > UINT32_MAX)
      return std::nullopt;
    Field field{static_cast<uint32_t>(*tag >> 3),
                static_cast<uint32_t>(*tag & 7),
                {},
                {},
                0};
    switch (field.wireType) {
    case 0: {
      std::optional<uint64_t> value = varint();
      if (!value)
        return std::nullopt;
      field.varint = *value;
      break;
    }
    case 1:
    case 5: {
      size_t size = field.wireType == 1 ? 8 : 4;
      if (data.size() - position < size)
        return std::nullopt;
      position += size;
      break;
    }
    case 2: {
      std::optional<uint64_t> length = varint();
      if (!length || *length > data.size() - position)
        return std::nullopt;
      field.payload = data.substr(position, *length);
      position += *length;
      break;
    }
    default:
      return std::nullopt;
    }
    field.bytes = data.substr(start, position - start);
    return field;
  }

private:
  std::string_view data;
  size_t position = 0;
};

void appendVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void appendLengthDelimited(std::string &out, uint32_t number,
                           std::string_view payload) {
  appendVarint(out, (static_cast<uint64_t>(number) << 3) | 2);
  appendVarint(out, payload.size());
  out.append(payload);
}

class Stripper {
public:
  /// `ambiguous`: names that more than one tensor has (a then and an else
  /// branch may both name a weight `w`), whose ranges are not recorded
  /// and whose bytes stay in the model.
  Stripper(std::string_view whole, uint64_t threshold,
           const std::set<std::string> &ambiguous)
      : whole(whole), threshold(threshold), ambiguous(ambiguous) {}

  std::optional<std::string> model(std::string_view bytes) {
    return rewrite(bytes, [this](uint32_t number) -> Rewrite {
      if (number == kModelGraph)
        return [this](std::string_view graph) { return this->graph(graph); };
      return nullptr;
    });
  }

  std::map<std::string, ByteRange> rawData;
  std::map<std::string, ByteRange> constantData;
  /// Names recorded twice with different bytes.
  std::set<std::string> duplicates;

private:
  using Rewrite =
      std::function<std::optional<std::string>(std::string_view payload)>;

  /// Copies the message in `bytes`, each length-delimited field for which
  /// `rewriteFor(number)` gives a rewrite replaced by what it returns.
  template <typename RewriteFor>
  std::optional<std::string> rewrite(std::string_view bytes,
                                     RewriteFor rewriteFor) {
    std::string out;
    out.reserve(bytes.size() < (1u << 20) ? bytes.size() : (1u << 20));
    Reader reader(bytes);
    while (!reader.done()) {
      std::optional<Field> field = reader.field();
      if (!field)
        return std::nullopt;
      Rewrite rewriteField =
          field->wireType == 2 ? rewriteFor(field->number) : nullptr;
      if (!rewriteField) {
        out.append(field->bytes);
        continue;
      }
      std::optional<std::string> inner = rewriteField(field->payload);
      if (!inner)
        return std::nullopt;
      appendLengthDelimited(out, field->number, *inner);
    }
    return out;
  }

  /// A graph: the top-level one, or a subgraph (an If branch), whose
  /// initializers and Constant nodes are recorded the same way.
  std::optional<std::string> graph(std::string_view bytes) {
    // Deeper than protobuf parses: the regular parse reports it.
    if (depth >= kMaxGraphDepth)
      return std::nullopt;
    ++depth;
    std::optional<std::string> out =
        rewrite(bytes, [this](uint32_t number) -> Rewrite {
          if (number == kGraphNode)
            return [this](std::string_view node) { return this->node(node); };
          if (number == kGraphInitializer)
            return [this](std::string_view tensor) {
              return this->tensor(tensor);
            };
          return nullptr;
        });
    --depth;
    return out;
  }

  std::optional<std::string> node(std::string_view bytes) {
    if (!constant(bytes))
      return std::nullopt;
    return rewrite(bytes, [this](uint32_t number) -> Rewrite {
      if (number != kNodeAttribute)
        return nullptr;
      return [this](std::string_view attribute) {
        return rewrite(attribute, [this](uint32_t inner) -> Rewrite {
          if (inner == kAttributeGraph || inner == kAttributeGraphs)
            return
                [this](std::string_view graph) { return this->graph(graph); };
          return nullptr;
        });
      };
    });
  }

  /// Records where a Constant node's raw value bytes are (a node of
  /// another type is left alone); false on malformed bytes.
  bool constant(std::string_view node) {
    std::string_view opType, output, value;
    Reader reader(node);
    while (!reader.done()) {
      std::optional<Field> field = reader.field();
      if (!field)
        return false;
      if (field->wireType != 2)
        continue;
      if (field->number == kNodeOpType)
        opType = field->payload;
      else if (field->number == kNodeOutput && output.empty())
        output = field->payload;
      else if (field->number == kNodeAttribute) {
        std::string_view name, tensor;
        Reader attribute(field->payload);
        while (!attribute.done()) {
          std::optional<Field> inner = attribute.field();
          if (!inner)
            return false;
          if (inner->number == kAttributeName && inner->wireType == 2)
            name = inner->payload;
          else if (inner->number == kAttributeTensor && inner->wireType == 2)
            tensor = inner->payload;
        }
        if (name == "value")
          value = tensor;
      }
    }
    if (opType != "Constant" || output.empty() || value.empty())
      return true;
    Reader tensor(value);
    while (!tensor.done()) {
      std::optional<Field> field = tensor.field();
      if (!field)
        return false;
      if (field->number == kTensorRawData && field->wireType == 2)
        record(constantData, std::string(output), field->payload);
    }
    return true;
  }

  std::optional<std::string> tensor(std::string_view bytes) {
    // Field order is not guaranteed: find type, name and payload first.
    std::vector<Field> fields;
    uint64_t dataType = 0;
    std::string name;
    const Field *raw = nullptr;
    Reader reader(bytes);
    while (!reader.done()) {
      std::optional<Field> field = reader.field();
      if (!field)
        return std::nullopt;
      fields.push_back(*field);
    }
    for (const Field &field : fields) {
      if (field.number == kTensorDataType && field.wireType == 0)
        dataType = field.varint;
      else if (field.number == kTensorName && field.wireType == 2)
        name = std::string(field.payload);
      else if (field.number == kTensorRawData && field.wireType == 2)
        raw = &field;
    }
    bool isFloat = dataType == kFloat || dataType == kFloat16 ||
                   dataType == kDouble || dataType == kBFloat16;
    bool strip = raw && isFloat && raw->payload.size() > threshold &&
                 !ambiguous.count(name);
    if (raw && !name.empty())
      record(rawData, name, raw->payload);
    if (!strip)
      return std::string(bytes);
    std::string out;
    for (const Field &field : fields)
      if (&field != raw)
        out.append(field.bytes);
    return out;
  }

  /// Where `payload` lies in the file, under `name`, unless the name is
  /// ambiguous; a second tensor of the name with other bytes makes it so.
  void record(std::map<std::string, ByteRange> &ranges, const std::string &name,
              std::string_view payload) {
    if (ambiguous.count(name))
      return;
    ByteRange range{static_cast<uint64_t>(payload.data() - whole.data()),
                    payload.size()};
    auto [known, added] = ranges.try_emplace(name, range);
    if (!added && (known->second.offset != range.offset ||
                   known->second.length != range.length))
      duplicates.insert(name);
  }

  static constexpr int kMaxGraphDepth = 100;
  std::string_view whole;
  uint64_t threshold;
  const std::set<std::string> &ambiguous;
  int depth = 0;
};

} // namespace

std::optional<StrippedModel> parplan::stripWeightData(std::string_view bytes,
                                                      uint64_t threshold) {
  std::set<std::string> ambiguous;
  Stripper stripper(bytes, threshold, ambiguous);
  std::optional<std::string> stripped = stripper.model(bytes);
  if (!stripped)
    return std::nullopt;
  if (!stripper.duplicates.empty()) {
    // Once more, keeping the tensors whose names are not unique whole: a
    // lookup by name cannot tell which one the importer means.
    ambiguous = stripper.duplicates;
    Stripper again(bytes, threshold, ambiguous);
    stripped = again.model(bytes);
    if (!stripped)
      return std::nullopt;
    return StrippedModel{std::move(*stripped), std::move(again.rawData),
                         std::move(again.constantData)};
  }
  return StrippedModel{std::move(*stripped), std::move(stripper.rawData),
                       std::move(stripper.constantData)};
}
