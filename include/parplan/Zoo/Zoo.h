//===- Zoo.h - ONNX models laid out like torch.onnx.export ------*- C++ -*-===//
//
// The model zoo: builds ONNX models (MLP, GPT, BERT, VGG16, ResNet50) with
// the graph layout, node names and initializer names that PyTorch's
// torch.onnx.export produces, filled with deterministic pseudo-random weights
// or, in shape-only mode, with external-data references to a weights file
// that is never written. MLIR-free: links protobuf and onnx_proto only.
// docs/zoo.md describes every model, option and convention.
//
// Errors: validate() and writeModel() return a one-line message (no
// "parplan-zoo: error:" prefix) and never throw for bad options; build() and
// the per-model build functions throw ZooError with the same message.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_ZOO_ZOO_H
#define PARPLAN_ZOO_ZOO_H

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace parplan::zoo {

/// Thrown by the build functions on invalid options; what() is one line.
class ZooError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class ModelKind { Mlp, Gpt, Bert, Vgg16, ResNet50, VitB16, Gnn };

/// "mlp", "gpt", "bert", "vgg16", "resnet50", "vit_b_16", "gnn".
const char *modelName(ModelKind kind);
std::optional<ModelKind> parseModelKind(std::string_view name);
/// Every model, in the order above.
const std::vector<ModelKind> &allModels();

/// Options shared by every model.
struct CommonOptions {
  /// Batch size: the first dimension of every graph input and output.
  int64_t batch = 1;
  /// Batch dimension as dim_param "batch" instead of `batch`.
  bool dynamicBatch = false;
  /// Seed of the pseudo-random weights; same seed, same bytes.
  uint64_t seed = 0;
  /// Every initializer refers to external data in `externalDataLocation`
  /// (never written) instead of carrying raw_data.
  bool shapeOnly = false;
  /// The external-data file name written into shape-only initializers,
  /// relative to the model file. writeModel() sets it to
  /// "<output stem>.weights.bin" when empty.
  std::string externalDataLocation;
  /// Default ONNX opset: 13 or 17. 17 exports LayerNormalization as one
  /// node, 13 as the decomposed ReduceMean/Sub/Pow/... sequence.
  int64_t opset = 17;
};

/// Multilayer perceptron: Gemm(transB=1) + Relu, as nn.Linear on 2-D input.
struct MlpOptions {
  /// Layer widths, input first: {784, 512, 256, 10} is three Linear layers.
  std::vector<int64_t> sizes{784, 512, 256, 10};
  /// Above 0: a Dropout of this ratio after every ReLU (as exported with
  /// the module in training mode or with its dropouts kept).
  float dropout = 0;
};

/// GPT-2/GPT-3 decoder (pre-LN). The defaults are GPT-2 small.
struct GptOptions {
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t seq = 1024;
  int64_t vocab = 50257;
  /// true: the LM head multiplies by Transpose(transformer.wte.weight), so the
  /// weights are tied and counted once. false: a separate [hidden, vocab]
  /// initializer "lm_head.weight" (counted: + vocab * hidden parameters).
  bool tiedLmHead = true;
};

/// BERT encoder (post-LN). The defaults are bert-base.
struct BertOptions {
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t seq = 512;
  int64_t vocab = 30522;
  int64_t typeVocab = 2;
  /// Adds the pooler (Gather token 0, Gemm, Tanh) and output pooler_output.
  bool pooler = false;
};

/// torchvision.models.vgg16 at 224x224.
struct Vgg16Options {
  int64_t numClasses = 1000;
};

/// torchvision.models.resnet50 at 224x224, BatchNormalization kept.
struct ResNet50Options {
  int64_t numClasses = 1000;
};

/// torchvision.models.vit_b_16 at 224x224 (16x16 patches, a class token,
/// pre-LN encoder layers with a fused query-key-value projection), with the
/// shape assert torchvision's export keeps (Shape, Gather, Equal on the
/// image height). The defaults are vit_b_16.
struct VitOptions {
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t numClasses = 1000;
};

/// A graph network classifying the nodes of one graph: the batch is the
/// graph's nodes. Inputs `features` [batch, features] and `adjacency`
/// [batch, batch] (row i: node i's weights over its neighbours, rows
/// summing to 1 for a mean); each layer is GraphSAGE's with a weighted
/// mean, h' = Relu(h Ws^T + bs + adjacency (h Wn)), then a Linear head to
/// `output` [batch, classes]. The GNN placer's model (docs/placement.md).
struct GnnOptions {
  int64_t features = 16;
  int64_t hidden = 32;
  int64_t layers = 2;
  int64_t classes = 2;
};

/// A model and all its options; only the struct of `kind` is used.
struct ModelSpec {
  ModelKind kind = ModelKind::Mlp;
  CommonOptions common;
  MlpOptions mlp;
  GptOptions gpt;
  BertOptions bert;
  Vgg16Options vgg16;
  ResNet50Options resnet50;
  VitOptions vit;
  GnnOptions gnn;
};

/// A named configuration of a transformer: layers, hidden size and heads;
/// seq and vocab are the preset family's defaults.
struct Preset {
  const char *name;
  ModelKind kind;
  int64_t layers;
  int64_t hidden;
  int64_t heads;
  int64_t seq;
  int64_t vocab;
  /// Where the numbers come from, for --list and the docs.
  const char *source;
};

/// The GPT-3 family, the Megatron-LM 2021 family and bert-base/bert-large.
const std::vector<Preset> &presets();
/// Sets layers/hidden/heads/seq/vocab of spec.gpt or spec.bert (by
/// spec.kind) from the preset; returns an error for an unknown name or a
/// preset of another model.
std::optional<std::string> applyPreset(ModelSpec &spec, std::string_view name);

/// Checks the options: positive sizes, hidden % heads == 0, opset 13 or 17,
/// and (unless shapeOnly) that the weights fit protobuf's 2 GB limit.
/// Returns a one-line message, or nullopt when the spec is valid.
std::optional<std::string> validate(const ModelSpec &spec);

/// The trainable parameter count by closed formula (no graph is built).
/// Buffers (BatchNorm running statistics, position ids, the causal mask) do
/// not count. Meaningful for a valid spec only.
///   mlp:      sum over layers of (in + 1) * out
///   gpt:      12 l h^2 + 13 l h + (V + s) h + 2h   (+ V h when untied)
///   bert:     12 l h^2 + 13 l h + (V + s + T) h + 2h   (+ h^2 + h pooler)
///   vgg16:    138,357,544 at 1000 classes
///   resnet50: 25,557,032 at 1000 classes
///   vit_b_16: 12 l h^2 + 13 l h + (768 + 1 + 1 + 197 + 2) h + (h + 1) C
///             (86,567,656 at 1000 classes)
///   gnn:      per layer (2 in + 1) out from in = features, then hidden;
///             (hidden + 1) classes for the head
int64_t expectedParameterCount(const ModelSpec &spec);

/// Weight layers: Linear layers (mlp), blocks (gpt, bert, vit), 16, 50,
/// graph layers (gnn).
int64_t layerCount(const ModelSpec &spec);

/// What a build produced.
struct ModelSummary {
  ModelKind kind = ModelKind::Mlp;
  int64_t layers = 0;
  /// Elements of the trainable initializers, counted from the graph.
  int64_t parameters = 0;
  int64_t nodes = 0;
  int64_t initializers = 0;
  /// Bytes of all initializer data (parameters and buffers), raw or external.
  uint64_t dataBytes = 0;
};

struct BuiltModel {
  onnx::ModelProto model;
  ModelSummary summary;
};

/// Builds the model of `spec`; throws ZooError when validate() would fail.
BuiltModel build(const ModelSpec &spec);

/// Per-model conveniences over build().
onnx::ModelProto buildMlp(const MlpOptions &options,
                          const CommonOptions &common = {});
onnx::ModelProto buildGpt(const GptOptions &options,
                          const CommonOptions &common = {});
onnx::ModelProto buildBert(const BertOptions &options,
                           const CommonOptions &common = {});
onnx::ModelProto buildVgg16(const Vgg16Options &options = {},
                            const CommonOptions &common = {});
onnx::ModelProto buildResNet50(const ResNet50Options &options = {},
                               const CommonOptions &common = {});
onnx::ModelProto buildVit(const VitOptions &options = {},
                          const CommonOptions &common = {});
onnx::ModelProto buildGnn(const GnnOptions &options = {},
                          const CommonOptions &common = {});

/// Builds the model and writes it to `path` with SerializeToOstream; the
/// bytes depend on `spec` only. An empty common.externalDataLocation becomes
/// "<stem of path>.weights.bin". Returns a one-line error (bad options, or a
/// file that cannot be written), or nullopt on success; never throws
/// ZooError.
std::optional<std::string> writeModel(const ModelSpec &spec,
                                      const std::string &path,
                                      ModelSummary *summary = nullptr);

} // namespace parplan::zoo

#endif // PARPLAN_ZOO_ZOO_H
