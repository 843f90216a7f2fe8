//===- Zoo.cpp - model specs, presets, validation and writing -------------===//

#include "GraphBuilder.h"

#include "parplan/Support/Text.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

using namespace parplan::zoo;
using parplan::groupThousands;
using namespace parplan::zoo::detail;

namespace {

/// A serialized ModelProto must stay below 2 GB (protobuf's int32 sizes).
constexpr uint64_t kProtobufLimit = INT_MAX;
/// Bounds that keep every count and offset far from int64 overflow.
constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr int64_t kMaxLayers = int64_t{1} << 16;
constexpr long double kMaxParameters = 1e16L;

struct ModelEntry {
  ModelKind kind;
  const char *name;
};

const ModelEntry kModels[] = {{ModelKind::Mlp, "mlp"},
                              {ModelKind::Gpt, "gpt"},
                              {ModelKind::Bert, "bert"},
                              {ModelKind::Vgg16, "vgg16"},
                              {ModelKind::ResNet50, "resnet50"},
                              {ModelKind::VitB16, "vit_b_16"},
                              {ModelKind::Gnn, "gnn"}};

std::optional<std::string> checkPositive(const char *what, int64_t value,
                                         int64_t max = kMaxDim) {
  if (value < 1)
    return std::string(what) + " must be at least 1, got " +
           std::to_string(value);
  if (value > max)
    return std::string(what) + " must be at most " + std::to_string(max) +
           ", got " + std::to_string(value);
  return std::nullopt;
}

std::optional<std::string> checkTransformer(int64_t layers, int64_t hidden,
                                            int64_t heads, int64_t seq,
                                            int64_t vocab) {
  if (auto error = checkPositive("layers", layers, kMaxLayers))
    return error;
  if (auto error = checkPositive("hidden", hidden))
    return error;
  if (auto error = checkPositive("heads", heads))
    return error;
  if (hidden % heads != 0)
    return "hidden size " + std::to_string(hidden) +
           " is not divisible by the number of heads " + std::to_string(heads) +
           " (" + std::to_string(hidden) + " / " + std::to_string(heads) +
           " is not an integer head size)";
  if (auto error = checkPositive("seq", seq))
    return error;
  return checkPositive("vocab", vocab, int64_t{1} << 31);
}

/// Option checks that need no graph.
std::optional<std::string> checkOptions(const ModelSpec &spec) {
  const CommonOptions &common = spec.common;
  if (auto error = checkPositive("batch", common.batch))
    return error;
  if (common.opset != 13 && common.opset != 17)
    return "opset must be 13 or 17, got " + std::to_string(common.opset);
  switch (spec.kind) {
  case ModelKind::Mlp: {
    const std::vector<int64_t> &sizes = spec.mlp.sizes;
    if (sizes.size() < 2)
      return "mlp needs at least two sizes (input and output width), got " +
             std::to_string(sizes.size());
    for (int64_t size : sizes)
      if (auto error = checkPositive("every mlp size", size))
        return error;
    if (!(spec.mlp.dropout >= 0 && spec.mlp.dropout < 1))
      return "mlp dropout must be in [0, 1), got " +
             std::to_string(spec.mlp.dropout);
    if (sizes.size() > static_cast<size_t>(kMaxLayers))
      return "mlp has too many layers";
    break;
  }
  case ModelKind::Gpt: {
    const GptOptions &o = spec.gpt;
    if (auto error =
            checkTransformer(o.layers, o.hidden, o.heads, o.seq, o.vocab))
      return error;
    break;
  }
  case ModelKind::Bert: {
    const BertOptions &o = spec.bert;
    if (auto error =
            checkTransformer(o.layers, o.hidden, o.heads, o.seq, o.vocab))
      return error;
    if (auto error = checkPositive("type vocab", o.typeVocab))
      return error;
    break;
  }
  case ModelKind::Vgg16:
    return checkPositive("classes", spec.vgg16.numClasses);
  case ModelKind::ResNet50:
    return checkPositive("classes", spec.resnet50.numClasses);
  case ModelKind::VitB16: {
    const VitOptions &o = spec.vit;
    // 197 positions: the class token and 14 x 14 patches.
    if (auto error = checkTransformer(o.layers, o.hidden, o.heads, 197, 1))
      return error;
    return checkPositive("classes", o.numClasses);
  }
  case ModelKind::Gnn: {
    const GnnOptions &o = spec.gnn;
    if (auto error = checkPositive("features", o.features))
      return error;
    if (auto error = checkPositive("hidden", o.hidden))
      return error;
    if (auto error = checkPositive("layers", o.layers, kMaxLayers))
      return error;
    if (auto error = checkPositive("classes", o.classes))
      return error;
    break;
  }
  }
  // Bound the counts (l h^2 for transformers) before any int64 math.
  long double approx = 0;
  if (spec.kind == ModelKind::Mlp)
    for (size_t i = 0; i + 1 < spec.mlp.sizes.size(); ++i)
      approx += static_cast<long double>(spec.mlp.sizes[i]) *
                static_cast<long double>(spec.mlp.sizes[i + 1]);
  if (spec.kind == ModelKind::Gpt)
    approx = 12.0L * spec.gpt.layers * spec.gpt.hidden * spec.gpt.hidden;
  if (spec.kind == ModelKind::Bert)
    approx = 12.0L * spec.bert.layers * spec.bert.hidden * spec.bert.hidden;
  if (spec.kind == ModelKind::VitB16)
    approx = 12.0L * spec.vit.layers * spec.vit.hidden * spec.vit.hidden;
  if (spec.kind == ModelKind::Gnn)
    approx = 2.0L * spec.gnn.layers * spec.gnn.hidden *
                 std::max(spec.gnn.hidden, spec.gnn.features) +
             static_cast<long double>(spec.gnn.hidden) * spec.gnn.classes;
  if (approx > kMaxParameters)
    return "model too large: over 10^16 parameters";
  return std::nullopt;
}

std::string formatGigabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GB",
                static_cast<double>(bytes) / 1e9);
  return text;
}

/// The graph of a spec before its initializers get data.
struct Draft {
  onnx::ModelProto model;
  std::unique_ptr<GraphBuilder> builder;
};

std::unique_ptr<Draft> draft(const ModelSpec &spec) {
  auto result = std::make_unique<Draft>();
  onnx::ModelProto &model = result->model;
  model.set_ir_version(8);
  model.set_producer_name("parplan-zoo");
  model.set_producer_version("0.1.0");
  onnx::OperatorSetIdProto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(spec.common.opset);
  onnx::GraphProto &graph = *model.mutable_graph();
  graph.set_name("main_graph");
  result->builder = std::make_unique<GraphBuilder>(graph, spec.common);
  GraphBuilder &b = *result->builder;
  switch (spec.kind) {
  case ModelKind::Mlp:
    buildMlpGraph(b, spec.mlp);
    break;
  case ModelKind::Gnn:
    buildGnnGraph(b, spec.gnn);
    break;
  case ModelKind::Gpt:
    buildGptGraph(b, spec.gpt, spec.common.opset);
    break;
  case ModelKind::Bert:
    buildBertGraph(b, spec.bert, spec.common.opset);
    break;
  case ModelKind::Vgg16:
    buildVgg16Graph(b, spec.vgg16);
    break;
  case ModelKind::ResNet50:
    buildResNet50Graph(b, spec.resnet50);
    break;
  case ModelKind::VitB16:
    buildVitGraph(b, spec.vit, spec.common.opset);
    break;
  }
  return result;
}

/// With raw data the file holds every weight byte: refuse past 2 GB.
std::optional<std::string> checkSize(const ModelSpec &spec,
                                     const Draft &draft) {
  if (spec.common.shapeOnly)
    return std::nullopt;
  const GraphBuilder &b = *draft.builder;
  // Each raw_data field adds its tag and a length varint: under 16 bytes.
  uint64_t total =
      draft.model.ByteSizeLong() + b.dataBytes() +
      16 * static_cast<uint64_t>(draft.model.graph().initializer_size());
  if (total <= kProtobufLimit)
    return std::nullopt;
  return std::string(modelName(spec.kind)) + " with " +
         groupThousands(static_cast<uint64_t>(b.parameterCount())) +
         " parameters needs " + formatGigabytes(total) +
         ", over protobuf's 2 GB limit for one file; use shape-only mode "
         "(--shape-only) for external weights";
}

} // namespace

const char *parplan::zoo::modelName(ModelKind kind) {
  for (const ModelEntry &entry : kModels)
    if (entry.kind == kind)
      return entry.name;
  return "?";
}

std::optional<ModelKind> parplan::zoo::parseModelKind(std::string_view name) {
  for (const ModelEntry &entry : kModels)
    if (name == entry.name)
      return entry.kind;
  return std::nullopt;
}

const std::vector<ModelKind> &parplan::zoo::allModels() {
  static const std::vector<ModelKind> models = [] {
    std::vector<ModelKind> result;
    for (const ModelEntry &entry : kModels)
      result.push_back(entry.kind);
    return result;
  }();
  return models;
}

const std::vector<Preset> &parplan::zoo::presets() {
  constexpr ModelKind gpt = ModelKind::Gpt;
  constexpr const char *gpt3 = "GPT-3 (NeurIPS 2020, Table 2.1)";
  constexpr const char *megatron = "Megatron-LM (SC 2021, Table 1)";
  static const std::vector<Preset> all{
      {"gpt3-125m", gpt, 12, 768, 12, 2048, 51200, gpt3},
      {"gpt3-350m", gpt, 24, 1024, 16, 2048, 51200, gpt3},
      {"gpt3-760m", gpt, 24, 1536, 16, 2048, 51200, gpt3},
      // The paper lists 24 heads of size 128 with d_model 2048, which do not
      // multiply out: 16 heads keep its head size 128.
      {"gpt3-1.3b", gpt, 24, 2048, 16, 2048, 51200, gpt3},
      {"gpt3-2.7b", gpt, 32, 2560, 32, 2048, 51200, gpt3},
      {"gpt3-6.7b", gpt, 32, 4096, 32, 2048, 51200, gpt3},
      // The paper's d_model 5140 is a typo for 40 heads x 128 = 5120.
      {"gpt3-13b", gpt, 40, 5120, 40, 2048, 51200, gpt3},
      {"gpt3-175b", gpt, 96, 12288, 96, 2048, 51200, gpt3},
      {"megatron-1.7b", gpt, 24, 2304, 24, 2048, 51200, megatron},
      {"megatron-3.6b", gpt, 30, 3072, 32, 2048, 51200, megatron},
      {"megatron-7.5b", gpt, 36, 4096, 32, 2048, 51200, megatron},
      {"megatron-18b", gpt, 40, 6144, 48, 2048, 51200, megatron},
      {"megatron-39b", gpt, 48, 8192, 64, 2048, 51200, megatron},
      {"megatron-76b", gpt, 60, 10240, 80, 2048, 51200, megatron},
      {"megatron-145b", gpt, 80, 12288, 96, 2048, 51200, megatron},
      {"megatron-310b", gpt, 96, 16384, 128, 2048, 51200, megatron},
      {"megatron-530b", gpt, 105, 20480, 128, 2048, 51200, megatron},
      {"megatron-1t", gpt, 128, 25600, 160, 2048, 51200, megatron},
      {"bert-base", ModelKind::Bert, 12, 768, 12, 512, 30522,
       "BERT (NAACL 2019)"},
      {"bert-large", ModelKind::Bert, 24, 1024, 16, 512, 30522,
       "BERT (NAACL 2019)"},
  };
  return all;
}

std::optional<std::string> parplan::zoo::applyPreset(ModelSpec &spec,
                                                     std::string_view name) {
  std::string known;
  for (const Preset &preset : presets()) {
    if (preset.kind != spec.kind)
      continue;
    if (name == preset.name) {
      if (spec.kind == ModelKind::Gpt) {
        spec.gpt.layers = preset.layers;
        spec.gpt.hidden = preset.hidden;
        spec.gpt.heads = preset.heads;
        spec.gpt.seq = preset.seq;
        spec.gpt.vocab = preset.vocab;
      } else {
        spec.bert.layers = preset.layers;
        spec.bert.hidden = preset.hidden;
        spec.bert.heads = preset.heads;
        spec.bert.seq = preset.seq;
        spec.bert.vocab = preset.vocab;
      }
      return std::nullopt;
    }
    known += (known.empty() ? "" : ", ") + std::string(preset.name);
  }
  std::string model = modelName(spec.kind);
  if (known.empty())
    return "model " + model + " has no presets";
  return "unknown " + model + " preset '" + std::string(name) +
         "' (known: " + known + ")";
}

std::optional<std::string> parplan::zoo::validate(const ModelSpec &spec) {
  if (auto error = checkOptions(spec))
    return error;
  if (spec.common.shapeOnly)
    return std::nullopt;
  // The graph without data is cheap to build, even for a trillion weights.
  return checkSize(spec, *draft(spec));
}

int64_t parplan::zoo::expectedParameterCount(const ModelSpec &spec) {
  switch (spec.kind) {
  case ModelKind::Mlp: {
    int64_t count = 0;
    const std::vector<int64_t> &sizes = spec.mlp.sizes;
    for (size_t i = 0; i + 1 < sizes.size(); ++i)
      count += (sizes[i] + 1) * sizes[i + 1];
    return count;
  }
  case ModelKind::Gpt: {
    const GptOptions &o = spec.gpt;
    int64_t l = o.layers, h = o.hidden;
    int64_t count = 12 * l * h * h + 13 * l * h + (o.vocab + o.seq) * h + 2 * h;
    return o.tiedLmHead ? count : count + o.vocab * h;
  }
  case ModelKind::Bert: {
    const BertOptions &o = spec.bert;
    int64_t l = o.layers, h = o.hidden;
    int64_t count = 12 * l * h * h + 13 * l * h +
                    (o.vocab + o.seq + o.typeVocab) * h + 2 * h;
    return o.pooler ? count + h * h + h : count;
  }
  case ModelKind::Vgg16:
    return vgg16Parameters(spec.vgg16.numClasses);
  case ModelKind::ResNet50:
    return resnet50Parameters(spec.resnet50.numClasses);
  case ModelKind::VitB16: {
    const VitOptions &o = spec.vit;
    int64_t l = o.layers, h = o.hidden;
    // Patch projection (3 x 16 x 16 weights and a bias per channel), class
    // token, 197 positions, the final norm, the head.
    return 12 * l * h * h + 13 * l * h + (768 + 1 + 1 + 197 + 2) * h +
           (h + 1) * o.numClasses;
  }
  case ModelKind::Gnn: {
    const GnnOptions &o = spec.gnn;
    int64_t count = 0, in = o.features;
    for (int64_t i = 0; i < o.layers; ++i, in = o.hidden)
      count += (2 * in + 1) * o.hidden;
    return count + (o.hidden + 1) * o.classes;
  }
  }
  return 0;
}

int64_t parplan::zoo::layerCount(const ModelSpec &spec) {
  switch (spec.kind) {
  case ModelKind::Mlp:
    return spec.mlp.sizes.empty()
               ? 0
               : static_cast<int64_t>(spec.mlp.sizes.size()) - 1;
  case ModelKind::Gpt:
    return spec.gpt.layers;
  case ModelKind::Bert:
    return spec.bert.layers;
  case ModelKind::Vgg16:
    return 16;
  case ModelKind::ResNet50:
    return 50;
  case ModelKind::VitB16:
    return spec.vit.layers;
  case ModelKind::Gnn:
    return spec.gnn.layers;
  }
  return 0;
}

BuiltModel parplan::zoo::build(const ModelSpec &spec) {
  if (auto error = checkOptions(spec))
    throw ZooError(*error);
  std::unique_ptr<Draft> d = draft(spec);
  if (auto error = checkSize(spec, *d))
    throw ZooError(*error);
  d->builder->finalize();
  BuiltModel result;
  ModelSummary &summary = result.summary;
  summary.kind = spec.kind;
  summary.layers = layerCount(spec);
  summary.parameters = d->builder->parameterCount();
  summary.nodes = d->model.graph().node_size();
  summary.initializers = d->model.graph().initializer_size();
  summary.dataBytes = d->builder->dataBytes();
  d->builder.reset();
  result.model = std::move(d->model);
  return result;
}

namespace {

template <typename Options>
onnx::ModelProto buildOne(ModelKind kind, Options ModelSpec::*field,
                          const Options &options, const CommonOptions &common) {
  ModelSpec spec;
  spec.kind = kind;
  spec.common = common;
  spec.*field = options;
  return build(spec).model;
}

} // namespace

onnx::ModelProto parplan::zoo::buildMlp(const MlpOptions &options,
                                        const CommonOptions &common) {
  return buildOne(ModelKind::Mlp, &ModelSpec::mlp, options, common);
}

onnx::ModelProto parplan::zoo::buildGnn(const GnnOptions &options,
                                        const CommonOptions &common) {
  return buildOne(ModelKind::Gnn, &ModelSpec::gnn, options, common);
}

onnx::ModelProto parplan::zoo::buildGpt(const GptOptions &options,
                                        const CommonOptions &common) {
  return buildOne(ModelKind::Gpt, &ModelSpec::gpt, options, common);
}

onnx::ModelProto parplan::zoo::buildBert(const BertOptions &options,
                                         const CommonOptions &common) {
  return buildOne(ModelKind::Bert, &ModelSpec::bert, options, common);
}

onnx::ModelProto parplan::zoo::buildVgg16(const Vgg16Options &options,
                                          const CommonOptions &common) {
  return buildOne(ModelKind::Vgg16, &ModelSpec::vgg16, options, common);
}

onnx::ModelProto parplan::zoo::buildResNet50(const ResNet50Options &options,
                                             const CommonOptions &common) {
  return buildOne(ModelKind::ResNet50, &ModelSpec::resnet50, options, common);
}

onnx::ModelProto parplan::zoo::buildVit(const VitOptions &options,
                                        const CommonOptions &common) {
  return buildOne(ModelKind::VitB16, &ModelSpec::vit, options, common);
}

std::optional<std::string> parplan::zoo::writeModel(const ModelSpec &spec,
                                                    const std::string &path,
                                                    ModelSummary *summary) {
  ModelSpec withLocation = spec;
  if (withLocation.common.externalDataLocation.empty())
    withLocation.common.externalDataLocation =
        std::filesystem::path(path).stem().string() + ".weights.bin";
  BuiltModel built;
  try {
    built = build(withLocation);
  } catch (const ZooError &error) {
    return std::string(error.what());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return "cannot write '" + path + "': " + std::strerror(errno);
  if (!built.model.SerializeToOstream(&out) || !out.flush())
    return "cannot write '" + path + "': " + std::strerror(errno);
  if (summary)
    *summary = built.summary;
  return std::nullopt;
}
