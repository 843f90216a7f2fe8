//===- Transformers.cpp - MLP, GNN, GPT, BERT and ViT graphs --------------===//
//
// Layouts follow torch.onnx.export of the Hugging Face modules (GPT2Model +
// LM head, BertModel) and torchvision's vit_b_16 in eval mode: dropout is
// gone, Linear layers on 3-D activations are MatMul + Add with the weight
// stored [in, out].
//
//===----------------------------------------------------------------------===//

#include "GraphBuilder.h"

#include <cmath>

using namespace parplan::zoo;
using namespace parplan::zoo::detail;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

/// Softmax(where(mask, Q K^T / sqrt(d), -1e4)) V for q, k, v of shape
/// [b, s, h] (no where without a mask).
std::string attention(GraphBuilder &b, const std::string &scope,
                      const std::string &q, const std::string &k,
                      const std::string &v, int64_t hidden, int64_t heads,
                      const std::string &mask) {
  int64_t headDim = hidden / heads;
  std::string qh = splitHeads(b, scope, q, heads, headDim, {0, 2, 1, 3});
  std::string kt = splitHeads(b, scope, k, heads, headDim, {0, 2, 3, 1});
  std::string vh = splitHeads(b, scope, v, heads, headDim, {0, 2, 1, 3});
  std::string scores = b.node(scope, "MatMul", {qh, kt});
  std::string scale =
      b.constantFloat(scope, std::sqrt(static_cast<float>(headDim)));
  std::string scaled = b.node(scope, "Div", {scores, scale});
  // As Hugging Face's GPT2Attention masks: the scores a position may not
  // attend to replaced by a large negative value, from a BOOL buffer that
  // is data, not a weight.
  if (!mask.empty())
    scaled =
        b.node(scope, "Where", {mask, scaled, b.constantFloat(scope, -1e4f)});
  std::string probs =
      b.node(scope, "Softmax", {scaled}, {GraphBuilder::attrInt("axis", -1)});
  std::string context = b.node(scope, "MatMul", {probs, vh});
  return mergeHeads(b, scope, context, hidden);
}

} // namespace

void parplan::zoo::detail::buildMlpGraph(GraphBuilder &b,
                                         const MlpOptions &options) {
  const std::vector<int64_t> &sizes = options.sizes;
  b.input("input", kFloat, {kBatch, sizes.front()});
  std::string x = "input";
  size_t layers = sizes.size() - 1;
  for (size_t i = 0; i < layers; ++i) {
    std::string name = "fc" + std::to_string(i + 1);
    bool last = i + 1 == layers;
    x = linear2d(b, "/" + name, name, x, sizes[i], sizes[i + 1],
                 last ? "output" : "");
    if (last)
      continue;
    x = b.node("", "Relu", {x});
    if (options.dropout > 0)
      x = b.node("/dropout" + std::to_string(i + 1), "Dropout",
                 {x, b.constantFloat("/dropout" + std::to_string(i + 1),
                                     options.dropout)});
  }
  b.output("output", kFloat, {kBatch, sizes.back()});
}

void parplan::zoo::detail::buildGnnGraph(GraphBuilder &b,
                                         const GnnOptions &options) {
  b.input("features", kFloat, {kBatch, options.features});
  b.input("adjacency", kFloat, {kBatch, kBatch});
  std::string h = "features";
  int64_t in = options.features;
  for (int64_t i = 0; i < options.layers; ++i, in = options.hidden) {
    std::string name = "conv" + std::to_string(i + 1);
    std::string self = linear2d(b, "/" + name + "/self", name + ".self", h, in,
                                options.hidden);
    std::string weight =
        b.parameter(name + ".neighbours.weight", {in, options.hidden});
    std::string messages =
        b.node("/" + name + "/neighbours", "MatMul", {h, weight});
    std::string mean =
        b.node("/" + name + "/neighbours", "MatMul", {"adjacency", messages});
    h = b.node("/" + name, "Relu", {b.node("/" + name, "Add", {self, mean})});
  }
  linear2d(b, "/head", "head", h, in, options.classes, "output");
  b.output("output", kFloat, {kBatch, options.classes});
}

void parplan::zoo::detail::buildGptGraph(GraphBuilder &b,
                                         const GptOptions &options,
                                         int64_t opset) {
  const int64_t h = options.hidden, s = options.seq, vocab = options.vocab;
  b.input("input_ids", kInt64, {kBatch, s});

  std::string wte = b.parameter("transformer.wte.weight", {vocab, h});
  std::string wpe = b.parameter("transformer.wpe.weight", {s, h});
  std::string positions =
      b.buffer("transformer.position_ids", {1, s}, kInt64, Fill::Arange);
  std::string mask = b.buffer("transformer.causal_mask", {1, 1, s, s},
                              onnx::TensorProto::BOOL, Fill::CausalMask);
  std::string tokens = b.node("/transformer/wte", "Gather", {wte, "input_ids"});
  std::string places = b.node("/transformer/wpe", "Gather", {wpe, positions});
  std::string x = b.node("/transformer", "Add", {tokens, places});

  for (int64_t i = 0; i < options.layers; ++i) {
    std::string scope = "/transformer/h." + std::to_string(i);
    std::string prefix = "transformer.h." + std::to_string(i);
    std::string a =
        layerNorm(b, scope + "/ln_1", prefix + ".ln_1", x, h, opset);
    std::string qkv = linear3d(b, scope + "/attn/c_attn",
                               prefix + ".attn.c_attn", a, h, 3 * h);
    std::string splitSizes = b.constantInts(scope + "/attn", {h, h, h});
    std::vector<std::string> parts =
        b.nodeN(scope + "/attn", "Split", {qkv, splitSizes}, 3,
                {GraphBuilder::attrInt("axis", 2)});
    std::string context = attention(b, scope + "/attn", parts[0], parts[1],
                                    parts[2], h, options.heads, mask);
    std::string projected = linear3d(b, scope + "/attn/c_proj",
                                     prefix + ".attn.c_proj", context, h, h);
    x = b.node(scope, "Add", {x, projected});
    std::string m =
        layerNorm(b, scope + "/ln_2", prefix + ".ln_2", x, h, opset);
    std::string up =
        linear3d(b, scope + "/mlp/c_fc", prefix + ".mlp.c_fc", m, h, 4 * h);
    std::string act = gelu(b, scope + "/mlp/act", up);
    std::string down = linear3d(b, scope + "/mlp/c_proj",
                                prefix + ".mlp.c_proj", act, 4 * h, h);
    x = b.node(scope, "Add", {x, down});
  }

  x = layerNorm(b, "/transformer/ln_f", "transformer.ln_f", x, h, opset);
  std::string head;
  if (options.tiedLmHead)
    head = b.node("/lm_head", "Transpose", {wte},
                  {GraphBuilder::attrInts("perm", {1, 0})});
  else
    head = b.parameter("lm_head.weight", {h, vocab});
  b.node("/lm_head", "MatMul", {x, head}, {}, "logits");
  b.output("logits", kFloat, {kBatch, s, vocab});
}

void parplan::zoo::detail::buildBertGraph(GraphBuilder &b,
                                          const BertOptions &options,
                                          int64_t opset) {
  const int64_t h = options.hidden, s = options.seq;
  b.input("input_ids", kInt64, {kBatch, s});
  b.input("token_type_ids", kInt64, {kBatch, s});

  std::string words =
      b.parameter("embeddings.word_embeddings.weight", {options.vocab, h});
  std::string places =
      b.parameter("embeddings.position_embeddings.weight", {s, h});
  std::string types = b.parameter("embeddings.token_type_embeddings.weight",
                                  {options.typeVocab, h});
  std::string positions =
      b.buffer("embeddings.position_ids", {1, s}, kInt64, Fill::Arange);
  std::string x =
      b.node("/embeddings/word_embeddings", "Gather", {words, "input_ids"});
  std::string t = b.node("/embeddings/token_type_embeddings", "Gather",
                         {types, "token_type_ids"});
  x = b.node("/embeddings", "Add", {x, t});
  std::string p =
      b.node("/embeddings/position_embeddings", "Gather", {places, positions});
  x = b.node("/embeddings", "Add", {x, p});
  x = layerNorm(b, "/embeddings/LayerNorm", "embeddings.LayerNorm", x, h,
                opset);

  for (int64_t i = 0; i < options.layers; ++i) {
    std::string scope = "/encoder/layer." + std::to_string(i);
    std::string prefix = "encoder.layer." + std::to_string(i);
    std::string self = scope + "/attention/self";
    std::string selfPrefix = prefix + ".attention.self";
    std::string q =
        linear3d(b, self + "/query", selfPrefix + ".query", x, h, h);
    std::string k = linear3d(b, self + "/key", selfPrefix + ".key", x, h, h);
    std::string v =
        linear3d(b, self + "/value", selfPrefix + ".value", x, h, h);
    std::string context = attention(b, self, q, k, v, h, options.heads, "");
    std::string out = scope + "/attention/output";
    std::string outPrefix = prefix + ".attention.output";
    std::string projected =
        linear3d(b, out + "/dense", outPrefix + ".dense", context, h, h);
    x = b.node(out, "Add", {projected, x});
    x = layerNorm(b, out + "/LayerNorm", outPrefix + ".LayerNorm", x, h, opset);
    std::string up = linear3d(b, scope + "/intermediate/dense",
                              prefix + ".intermediate.dense", x, h, 4 * h);
    std::string act = gelu(b, scope + "/intermediate/intermediate_act_fn", up);
    std::string down = linear3d(b, scope + "/output/dense",
                                prefix + ".output.dense", act, 4 * h, h);
    x = b.node(scope + "/output", "Add", {down, x});
    x = layerNorm(b, scope + "/output/LayerNorm", prefix + ".output.LayerNorm",
                  x, h, opset);
  }

  x = b.renameLastOutput("last_hidden_state");
  b.output("last_hidden_state", kFloat, {kBatch, s, h});
  if (options.pooler) {
    std::string first = b.constantInt("/pooler", 0);
    std::string cls = b.node("/pooler", "Gather", {"last_hidden_state", first},
                             {GraphBuilder::attrInt("axis", 1)});
    std::string dense = linear2d(b, "/pooler/dense", "pooler.dense", cls, h, h);
    b.node("/pooler/activation", "Tanh", {dense}, {}, "pooler_output");
    b.output("pooler_output", kFloat, {kBatch, h});
  }
}

void parplan::zoo::detail::buildVitGraph(GraphBuilder &b,
                                         const VitOptions &options,
                                         int64_t opset) {
  const int64_t h = options.hidden, image = 224, patch = 16;
  const int64_t patches = (image / patch) * (image / patch), s = patches + 1;
  b.input("input", kFloat, {kBatch, 3, image, image});
  // torchvision's _process_input: torch._assert(h == self.image_size), which
  // the export keeps as a dangling Equal on the traced shape.
  std::string shape = b.node("", "Shape", {"input"});
  std::string height = b.node("", "Gather", {shape, b.constantInt("", 2)},
                              {GraphBuilder::attrInt("axis", 0)});
  b.node("", "Equal", {height, b.constantInt("", image)});

  std::string weight = b.parameter("conv_proj.weight", {h, 3, patch, patch});
  std::string bias = b.parameter("conv_proj.bias", {h});
  std::string x =
      b.node("/conv_proj", "Conv", {"input", weight, bias},
             {GraphBuilder::attrInts("kernel_shape", {patch, patch}),
              GraphBuilder::attrInts("strides", {patch, patch})});
  x = b.node("", "Reshape", {x, b.constantInts("", {0, h, patches})});
  x = b.node("", "Transpose", {x}, {GraphBuilder::attrInts("perm", {0, 2, 1})});
  // The class token, expanded to the batch (read from the input's shape,
  // as the traced expand does), in front of the patches.
  std::string token = b.parameter("class_token", {1, 1, h});
  std::string batch = b.node(
      "", "Gather", {b.node("", "Shape", {"input"}), b.constantInts("", {0})},
      {GraphBuilder::attrInt("axis", 0)});
  std::string expanded =
      b.node("", "Expand",
             {token, b.node("", "Concat", {batch, b.constantInts("", {1, h})},
                            {GraphBuilder::attrInt("axis", 0)})});
  x = b.node("", "Concat", {expanded, x}, {GraphBuilder::attrInt("axis", 1)});
  x = b.node("/encoder", "Add",
             {x, b.parameter("encoder.pos_embedding", {1, s, h})});

  for (int64_t i = 0; i < options.layers; ++i) {
    std::string name = "encoder_layer_" + std::to_string(i);
    std::string scope = "/encoder/layers/" + name;
    std::string prefix = "encoder.layers." + name;
    std::string y =
        layerNorm(b, scope + "/ln_1", prefix + ".ln_1", x, h, opset);
    // nn.MultiheadAttention: one [h, 3h] input projection, split in three.
    std::string attn = scope + "/self_attention";
    std::string qkv = linear3d(b, attn + "/in_proj",
                               prefix + ".self_attention.in_proj", y, h, 3 * h);
    std::vector<std::string> parts =
        b.nodeN(attn, "Split", {qkv, b.constantInts(attn, {h, h, h})}, 3,
                {GraphBuilder::attrInt("axis", -1)});
    std::string context =
        attention(b, attn, parts[0], parts[1], parts[2], h, options.heads, "");
    std::string projected =
        linear3d(b, attn + "/out_proj", prefix + ".self_attention.out_proj",
                 context, h, h);
    x = b.node(scope, "Add", {projected, x});
    y = layerNorm(b, scope + "/ln_2", prefix + ".ln_2", x, h, opset);
    std::string up =
        linear3d(b, scope + "/mlp/0", prefix + ".mlp.0", y, h, 4 * h);
    std::string act = gelu(b, scope + "/mlp/1", up);
    std::string down =
        linear3d(b, scope + "/mlp/3", prefix + ".mlp.3", act, 4 * h, h);
    x = b.node(scope, "Add", {down, x});
  }
  x = layerNorm(b, "/encoder/ln", "encoder.ln", x, h, opset);
  std::string cls = b.node("/heads", "Gather", {x, b.constantInt("/heads", 0)},
                           {GraphBuilder::attrInt("axis", 1)});
  linear2d(b, "/heads/head", "heads.head", cls, h, options.numClasses,
           "output");
  b.output("output", kFloat, {kBatch, options.numClasses});
}
