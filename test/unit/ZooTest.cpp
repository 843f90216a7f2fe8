//===- ZooTest.cpp - the model zoo ----------------------------------------===//

#include "parplan/Zoo/Zoo.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

using namespace parplan::zoo;

namespace {

int64_t numElements(const onnx::TensorProto &tensor) {
  int64_t n = 1;
  for (int64_t d : tensor.dims())
    n *= d;
  return n;
}

int64_t elementBytes(int32_t type) {
  return type == onnx::TensorProto::INT64  ? 8
         : type == onnx::TensorProto::BOOL ? 1
                                           : 4;
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Trainable parameters counted from the graph alone: FLOAT initializers
/// less the buffers (BatchNorm running statistics; the causal mask is BOOL).
int64_t countParameters(const onnx::ModelProto &model) {
  int64_t count = 0;
  for (const onnx::TensorProto &tensor : model.graph().initializer()) {
    if (tensor.data_type() != onnx::TensorProto::FLOAT ||
        endsWith(tensor.name(), ".running_mean") ||
        endsWith(tensor.name(), ".running_var"))
      continue;
    count += numElements(tensor);
  }
  return count;
}

const onnx::TensorProto *findInitializer(const onnx::ModelProto &model,
                                         const std::string &name) {
  for (const onnx::TensorProto &tensor : model.graph().initializer())
    if (tensor.name() == name)
      return &tensor;
  return nullptr;
}

const onnx::NodeProto *findProducer(const onnx::ModelProto &model,
                                    const std::string &value) {
  for (const onnx::NodeProto &node : model.graph().node())
    for (const std::string &output : node.output())
      if (output == value)
        return &node;
  return nullptr;
}

/// Op types of the nodes whose name starts with `prefix`, in graph order.
std::vector<std::string> opTypes(const onnx::ModelProto &model,
                                 const std::string &prefix) {
  std::vector<std::string> types;
  for (const onnx::NodeProto &node : model.graph().node())
    if (node.name().compare(0, prefix.size(), prefix) == 0)
      types.push_back(node.op_type());
  return types;
}

int64_t countOps(const onnx::ModelProto &model, const std::string &opType) {
  int64_t count = 0;
  for (const onnx::NodeProto &node : model.graph().node())
    count += node.op_type() == opType;
  return count;
}

std::vector<int64_t> outputShape(const onnx::ModelProto &model, int index) {
  std::vector<int64_t> dims;
  for (const auto &dim :
       model.graph().output(index).type().tensor_type().shape().dim())
    dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  return dims;
}

/// The checker, then strict shape inference with data propagation: every
/// node's output shape is inferred and must agree with the declared outputs.
void checkModel(const onnx::ModelProto &model) {
  REQUIRE_NOTHROW(onnx::checker::check_model(model));
  onnx::ModelProto inferred = model;
  onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict=*/1,
                                      /*data_prop=*/true);
  REQUIRE_NOTHROW(onnx::shape_inference::InferShapes(
      inferred, onnx::OpSchemaRegistry::Instance(), options));
  REQUIRE(inferred.graph().output_size() == model.graph().output_size());
  for (int i = 0; i < model.graph().output_size(); ++i)
    CHECK(outputShape(inferred, i) == outputShape(model, i));
}

ModelSpec smallGpt(int64_t opset = 17) {
  ModelSpec spec;
  spec.kind = ModelKind::Gpt;
  spec.gpt.layers = 2;
  spec.gpt.hidden = 64;
  spec.gpt.heads = 4;
  spec.gpt.seq = 16;
  spec.gpt.vocab = 100;
  spec.common.opset = opset;
  return spec;
}

ModelSpec smallBert(int64_t opset = 17) {
  ModelSpec spec;
  spec.kind = ModelKind::Bert;
  spec.bert.layers = 2;
  spec.bert.hidden = 64;
  spec.bert.heads = 4;
  spec.bert.seq = 16;
  spec.bert.vocab = 100;
  spec.common.opset = opset;
  return spec;
}

ModelSpec ofKind(ModelKind kind) {
  ModelSpec spec;
  spec.kind = kind;
  return spec;
}

/// VGG16 and ResNet50 with weights are large: build them once.
const BuiltModel &cached(ModelKind kind) {
  static std::map<ModelKind, BuiltModel> models;
  auto it = models.find(kind);
  if (it == models.end())
    it = models.emplace(kind, build(ofKind(kind))).first;
  return it->second;
}

std::string serialize(const onnx::ModelProto &model) {
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  return bytes;
}

/// A directory of this process's own, removed at exit.
std::filesystem::path tempDir() {
  struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() /
        ("parplan-zoo-tests-" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Dir dir;
  return dir.path;
}

} // namespace

TEST_CASE("every model builds and passes the checker", "[zoo]") {
  SECTION("mlp") {
    BuiltModel built = build(ofKind(ModelKind::Mlp));
    checkModel(built.model);
    CHECK(countOps(built.model, "Gemm") == 3);
    CHECK(countOps(built.model, "Relu") == 2);
  }
  SECTION("gnn: GraphSAGE layers over the adjacency input") {
    ModelSpec spec = ofKind(ModelKind::Gnn);
    spec.gnn.features = 12;
    spec.gnn.layers = 3;
    spec.common.batch = 24;
    BuiltModel built = build(spec);
    checkModel(built.model);
    // A self Gemm and two neighbour MatMuls per layer, and the head's Gemm.
    CHECK(countOps(built.model, "Gemm") == 4);
    CHECK(countOps(built.model, "MatMul") == 6);
    CHECK(countOps(built.model, "Relu") == 3);
    CHECK(built.model.graph().input_size() == 2);
    CHECK(built.model.graph().input(1).name() == "adjacency");
    CHECK(outputShape(built.model, 0) == std::vector<int64_t>{24, 2});
    CHECK(built.summary.parameters == expectedParameterCount(spec));
    CHECK(expectedParameterCount(spec) ==
          (2 * 12 + 1) * 32 + 2 * (2 * 32 + 1) * 32 + 33 * 2);
  }
  SECTION("gpt, opset 13 and 17") {
    int64_t opset = GENERATE(13, 17);
    CAPTURE(opset);
    BuiltModel built = build(smallGpt(opset));
    checkModel(built.model);
    CHECK(outputShape(built.model, 0) == std::vector<int64_t>{1, 16, 100});
    CHECK(built.model.opset_import(0).version() == opset);
  }
  SECTION("gpt with an untied LM head") {
    ModelSpec spec = smallGpt();
    spec.gpt.tiedLmHead = false;
    checkModel(build(spec).model);
  }
  SECTION("bert, opset 13 and 17, with and without pooler") {
    int64_t opset = GENERATE(13, 17);
    bool pooler = GENERATE(false, true);
    ModelSpec spec = smallBert(opset);
    spec.bert.pooler = pooler;
    BuiltModel built = build(spec);
    checkModel(built.model);
    CHECK(outputShape(built.model, 0) == std::vector<int64_t>{1, 16, 64});
    CHECK(built.model.graph().output_size() == (pooler ? 2 : 1));
  }
  SECTION("vgg16") {
    const BuiltModel &built = cached(ModelKind::Vgg16);
    checkModel(built.model);
    CHECK(countOps(built.model, "Conv") == 13);
    CHECK(countOps(built.model, "MaxPool") == 5);
    CHECK(countOps(built.model, "Gemm") == 3);
    CHECK(countOps(built.model, "Dropout") == 2);
    CHECK(outputShape(built.model, 0) == std::vector<int64_t>{1, 1000});
  }
  SECTION("vit_b_16, opset 13 and 17, with its shape assert") {
    int64_t opset = GENERATE(13, 17);
    CAPTURE(opset);
    ModelSpec spec = ofKind(ModelKind::VitB16);
    spec.vit.layers = 2;
    spec.vit.hidden = 64;
    spec.vit.heads = 4;
    spec.common.opset = opset;
    BuiltModel built = build(spec);
    checkModel(built.model);
    CHECK(countOps(built.model, "Conv") == 1);
    CHECK(countOps(built.model, "Equal") == 1);
    CHECK(countOps(built.model, "Split") == 2);
    CHECK(countOps(built.model, "Softmax") == 2);
    CHECK(outputShape(built.model, 0) == std::vector<int64_t>{1, 1000});
  }
  SECTION("resnet50") {
    const BuiltModel &built = cached(ModelKind::ResNet50);
    checkModel(built.model);
    CHECK(countOps(built.model, "Conv") == 53);
    CHECK(countOps(built.model, "BatchNormalization") == 53);
    CHECK(countOps(built.model, "Add") == 16);
    CHECK(countOps(built.model, "GlobalAveragePool") == 1);
    CHECK(outputShape(built.model, 0) == std::vector<int64_t>{1, 1000});
  }
}

TEST_CASE("model metadata follows the exporter", "[zoo]") {
  BuiltModel built = build(smallGpt());
  const onnx::ModelProto &model = built.model;
  CHECK(model.ir_version() == 8);
  REQUIRE(model.opset_import_size() == 1);
  CHECK(model.opset_import(0).domain().empty());
  CHECK(model.graph().name() == "main_graph");
  REQUIRE(model.graph().input_size() == 1);
  CHECK(model.graph().input(0).name() == "input_ids");
  CHECK(model.graph().input(0).type().tensor_type().elem_type() ==
        onnx::TensorProto::INT64);
  CHECK(model.graph().output(0).name() == "logits");
  CHECK(model.graph().output(0).type().tensor_type().elem_type() ==
        onnx::TensorProto::FLOAT);
  CHECK(built.summary.nodes == model.graph().node_size());
  CHECK(built.summary.layers == 2);
}

TEST_CASE("gpt layout matches torch.onnx.export", "[zoo]") {
  BuiltModel built = build(smallGpt());
  const onnx::ModelProto &model = built.model;

  const onnx::TensorProto *cAttn =
      findInitializer(model, "transformer.h.0.attn.c_attn.weight");
  REQUIRE(cAttn);
  CHECK(std::vector<int64_t>(cAttn->dims().begin(), cAttn->dims().end()) ==
        std::vector<int64_t>{64, 192});
  REQUIRE(findInitializer(model, "transformer.h.1.mlp.c_fc.weight"));
  REQUIRE(findInitializer(model, "transformer.wte.weight"));
  REQUIRE(findInitializer(model, "transformer.wpe.weight"));

  const onnx::TensorProto *positions =
      findInitializer(model, "transformer.position_ids");
  REQUIRE(positions);
  CHECK(positions->data_type() == onnx::TensorProto::INT64);
  REQUIRE(positions->raw_data().size() == 16 * 8);
  int64_t last;
  std::memcpy(&last, positions->raw_data().data() + 15 * 8, 8);
  CHECK(last == 15);

  const onnx::TensorProto *mask =
      findInitializer(model, "transformer.causal_mask");
  REQUIRE(mask);
  CHECK(std::vector<int64_t>(mask->dims().begin(), mask->dims().end()) ==
        std::vector<int64_t>{1, 1, 16, 16});
  // BOOL, as Hugging Face's bias buffer: data for the Where, not a weight.
  CHECK(mask->data_type() == onnx::TensorProto::BOOL);
  REQUIRE(mask->raw_data().size() == 16 * 16);
  CHECK(mask->raw_data()[1 * 16 + 0] == 1);
  CHECK(mask->raw_data()[1 * 16 + 1] == 1);
  CHECK(mask->raw_data()[0 * 16 + 1] == 0);
  CHECK(mask->raw_data()[14 * 16 + 15] == 0);

  // Node and value names.
  const onnx::NodeProto *matmul =
      findProducer(model, "/transformer/h.0/attn/c_attn/MatMul_output_0");
  REQUIRE(matmul);
  CHECK(matmul->name() == "/transformer/h.0/attn/c_attn/MatMul");
  CHECK(matmul->input(1) == "transformer.h.0.attn.c_attn.weight");

  // Split takes its sizes as a second input from a Constant node.
  const onnx::NodeProto *split =
      findProducer(model, "/transformer/h.0/attn/Split_output_2");
  REQUIRE(split);
  REQUIRE(split->input_size() == 2);
  const onnx::NodeProto *sizes = findProducer(model, split->input(1));
  REQUIRE(sizes);
  CHECK(sizes->op_type() == "Constant");

  // Every Reshape's target comes from Shape -> Gather -> Unsqueeze -> Concat.
  int reshapes = 0;
  for (const onnx::NodeProto &node : model.graph().node()) {
    if (node.op_type() != "Reshape")
      continue;
    ++reshapes;
    const onnx::NodeProto *concat = findProducer(model, node.input(1));
    REQUIRE(concat);
    REQUIRE(concat->op_type() == "Concat");
    const onnx::NodeProto *unsqueeze = findProducer(model, concat->input(0));
    REQUIRE(unsqueeze);
    REQUIRE(unsqueeze->op_type() == "Unsqueeze");
    const onnx::NodeProto *gather = findProducer(model, unsqueeze->input(0));
    REQUIRE(gather);
    REQUIRE(gather->op_type() == "Gather");
    const onnx::NodeProto *shape = findProducer(model, gather->input(0));
    REQUIRE(shape);
    CHECK(shape->op_type() == "Shape");
  }
  CHECK(reshapes == 2 * 4);

  // Attention core and GELU, in order.
  std::vector<std::string> core;
  for (const std::string &type : opTypes(model, "/transformer/h.0/attn/"))
    if (type == "MatMul" || type == "Div" || type == "Add" || type == "Where" ||
        type == "Softmax" || type == "Transpose")
      core.push_back(type);
  CHECK(core == std::vector<std::string>{"MatMul", "Add", "Transpose",
                                         "Transpose", "Transpose", "MatMul",
                                         "Div", "Where", "Softmax", "MatMul",
                                         "Transpose", "MatMul", "Add"});
  CHECK(opTypes(model, "/transformer/h.0/mlp/act/") ==
        std::vector<std::string>{"Constant", "Div", "Erf", "Constant", "Add",
                                 "Mul", "Constant", "Mul"});

  // The tied LM head: Transpose of the token embedding.
  const onnx::NodeProto *head = findProducer(model, "logits");
  REQUIRE(head);
  CHECK(head->op_type() == "MatMul");
  const onnx::NodeProto *transpose = findProducer(model, head->input(1));
  REQUIRE(transpose);
  CHECK(transpose->op_type() == "Transpose");
  CHECK(transpose->input(0) == "transformer.wte.weight");
}

TEST_CASE("LayerNorm is one node at opset 17, decomposed at 13", "[zoo]") {
  SECTION("opset 13") {
    BuiltModel built = build(smallGpt(13));
    CHECK(countOps(built.model, "LayerNormalization") == 0);
    for (const char *scope : {"/transformer/h.0/ln_1/",
                              "/transformer/h.1/ln_2/", "/transformer/ln_f/"}) {
      CAPTURE(scope);
      CHECK(opTypes(built.model, scope) ==
            std::vector<std::string>{"ReduceMean", "Sub", "Constant", "Pow",
                                     "ReduceMean", "Constant", "Add", "Sqrt",
                                     "Div", "Mul", "Add"});
    }
    for (const onnx::NodeProto &node : built.model.graph().node()) {
      if (node.op_type() != "ReduceMean")
        continue;
      REQUIRE(node.input_size() == 1);
      REQUIRE(node.attribute_size() == 1);
      CHECK(node.attribute(0).name() == "axes");
      CHECK(node.attribute(0).ints_size() == 1);
      CHECK(node.attribute(0).ints(0) == -1);
    }
  }
  SECTION("opset 17") {
    BuiltModel built = build(smallGpt(17));
    CHECK(countOps(built.model, "LayerNormalization") == 2 * 2 + 1);
    CHECK(countOps(built.model, "ReduceMean") == 0);
    CHECK(opTypes(built.model, "/transformer/h.0/ln_1/") ==
          std::vector<std::string>{"LayerNormalization"});
  }
  SECTION("bert, opset 17: embedding LayerNorm and two per layer") {
    BuiltModel built = build(smallBert(17));
    CHECK(countOps(built.model, "LayerNormalization") == 1 + 2 * 2);
  }
}

TEST_CASE("every transformer layer has the same nodes", "[zoo]") {
  int64_t opset = GENERATE(13, 17);
  CAPTURE(opset);
  SECTION("gpt") {
    ModelSpec spec = smallGpt(opset);
    spec.gpt.layers = 12;
    BuiltModel built = build(spec);
    std::vector<std::string> first = opTypes(built.model, "/transformer/h.0/");
    CHECK(first.size() > 40);
    for (int i = 1; i < 12; ++i)
      CHECK(opTypes(built.model, "/transformer/h." + std::to_string(i) + "/") ==
            first);
  }
  SECTION("bert") {
    ModelSpec spec = smallBert(opset);
    spec.bert.layers = 12;
    BuiltModel built = build(spec);
    std::vector<std::string> first = opTypes(built.model, "/encoder/layer.0/");
    CHECK(first.size() > 40);
    for (int i = 1; i < 12; ++i)
      CHECK(opTypes(built.model, "/encoder/layer." + std::to_string(i) + "/") ==
            first);
  }
}

TEST_CASE("parameter counts equal the closed formulas", "[zoo]") {
  SECTION("gpt configurations") {
    struct Config {
      int64_t l, h, heads, s, v;
    };
    auto config = GENERATE(Config{2, 64, 4, 16, 100}, Config{3, 96, 6, 32, 77},
                           Config{1, 8, 8, 4, 5}, Config{5, 128, 2, 7, 300});
    for (bool tied : {true, false}) {
      ModelSpec spec = smallGpt();
      spec.gpt = {config.l, config.h, config.heads, config.s, config.v, tied};
      int64_t formula = 12 * config.l * config.h * config.h +
                        13 * config.l * config.h +
                        (config.v + config.s) * config.h + 2 * config.h +
                        (tied ? 0 : config.v * config.h);
      BuiltModel built = build(spec);
      CHECK(expectedParameterCount(spec) == formula);
      CHECK(built.summary.parameters == formula);
      CHECK(countParameters(built.model) == formula);
    }
  }
  SECTION("gpt-2 small, the default, in shape-only mode") {
    ModelSpec spec = ofKind(ModelKind::Gpt);
    spec.common.shapeOnly = true;
    BuiltModel built = build(spec);
    CHECK(built.summary.parameters == 124439808);
    CHECK(countParameters(built.model) == 124439808);
  }
  SECTION("gpt3-175b preset in shape-only mode is a small model") {
    ModelSpec spec = ofKind(ModelKind::Gpt);
    REQUIRE_FALSE(applyPreset(spec, "gpt3-175b"));
    spec.common.shapeOnly = true;
    CHECK(spec.gpt.layers == 96);
    CHECK(spec.gpt.hidden == 12288);
    CHECK(spec.gpt.heads == 96);
    CHECK(spec.gpt.seq == 2048);
    CHECK(spec.gpt.vocab == 51200);
    int64_t l = 96, h = 12288;
    int64_t formula = 12 * l * h * h + 13 * l * h + (51200 + 2048) * h + 2 * h;
    CHECK(formula == 174615846912);
    BuiltModel built = build(spec);
    CHECK(expectedParameterCount(spec) == formula);
    CHECK(built.summary.parameters == formula);
    CHECK(countParameters(built.model) == formula);
    CHECK(built.model.ByteSizeLong() < 50u * 1000 * 1000);
  }
  SECTION("every preset matches its formula") {
    for (const Preset &preset : presets()) {
      CAPTURE(preset.name);
      ModelSpec spec = ofKind(preset.kind);
      REQUIRE_FALSE(applyPreset(spec, preset.name));
      // With raw data a preset is either small enough or refused for size.
      if (std::optional<std::string> error = validate(spec))
        CHECK(error->find("2 GB") != std::string::npos);
      spec.common.shapeOnly = true;
      REQUIRE_FALSE(validate(spec));
      if (preset.hidden <= 4096) {
        BuiltModel built = build(spec);
        CHECK(countParameters(built.model) == expectedParameterCount(spec));
      }
    }
  }
  SECTION("bert-base: 108,891,648, and 109,482,240 with the pooler") {
    ModelSpec spec = ofKind(ModelKind::Bert);
    REQUIRE_FALSE(applyPreset(spec, "bert-base"));
    spec.common.shapeOnly = true;
    CHECK(expectedParameterCount(spec) == 108891648);
    CHECK(countParameters(build(spec).model) == 108891648);
    spec.bert.pooler = true;
    CHECK(expectedParameterCount(spec) == 109482240);
    CHECK(countParameters(build(spec).model) == 109482240);
  }
  SECTION("resnet50: 25,557,032 with BatchNorm scale and bias") {
    CHECK(expectedParameterCount(ofKind(ModelKind::ResNet50)) == 25557032);
    CHECK(cached(ModelKind::ResNet50).summary.parameters == 25557032);
    CHECK(countParameters(cached(ModelKind::ResNet50).model) == 25557032);
  }
  SECTION("vit_b_16: 86,567,656, torchvision's count") {
    ModelSpec spec = ofKind(ModelKind::VitB16);
    spec.common.shapeOnly = true;
    CHECK(expectedParameterCount(spec) == 86567656);
    CHECK(countParameters(build(spec).model) == 86567656);
    spec.vit.layers = 3;
    spec.vit.hidden = 96;
    spec.vit.heads = 6;
    spec.vit.numClasses = 10;
    CHECK(countParameters(build(spec).model) == expectedParameterCount(spec));
  }
  SECTION("vgg16: 138,357,544") {
    CHECK(expectedParameterCount(ofKind(ModelKind::Vgg16)) == 138357544);
    CHECK(cached(ModelKind::Vgg16).summary.parameters == 138357544);
    CHECK(countParameters(cached(ModelKind::Vgg16).model) == 138357544);
  }
  SECTION("mlp: sum of (in + 1) * out") {
    ModelSpec spec = ofKind(ModelKind::Mlp);
    spec.mlp.sizes = {13, 7, 5, 3, 2};
    int64_t formula = 14 * 7 + 8 * 5 + 6 * 3 + 4 * 2;
    CHECK(expectedParameterCount(spec) == formula);
    CHECK(countParameters(build(spec).model) == formula);
    CHECK(expectedParameterCount(ofKind(ModelKind::Mlp)) == 535818);
  }
}

TEST_CASE("same arguments give the same bytes and another seed other weights",
          "[zoo]") {
  auto kind = GENERATE(ModelKind::Mlp, ModelKind::Gpt, ModelKind::Bert);
  ModelSpec spec = kind == ModelKind::Gpt    ? smallGpt()
                   : kind == ModelKind::Bert ? smallBert()
                                             : ofKind(kind);
  spec.common.seed = 7;
  std::string first = serialize(build(spec).model);
  std::string second = serialize(build(spec).model);
  CHECK(first == second);

  ModelSpec other = spec;
  other.common.seed = 8;
  onnx::ModelProto reseeded = build(other).model;
  onnx::ModelProto original = build(spec).model;
  CHECK(serialize(reseeded) != first);
  REQUIRE(original.graph().initializer_size() ==
          reseeded.graph().initializer_size());
  for (int i = 0; i < original.graph().initializer_size(); ++i) {
    const onnx::TensorProto &a = original.graph().initializer(i);
    const onnx::TensorProto &b = reseeded.graph().initializer(i);
    CHECK(a.name() == b.name());
    if (a.data_type() == onnx::TensorProto::FLOAT)
      CHECK(a.raw_data() != b.raw_data());
    else
      CHECK(a.raw_data() == b.raw_data());
  }
}

TEST_CASE("weights are uniform in -0.05..0.05 and scales near 1", "[zoo]") {
  BuiltModel built = build(smallGpt());
  auto range = [&](const std::string &name) {
    const onnx::TensorProto *tensor = findInitializer(built.model, name);
    REQUIRE(tensor);
    REQUIRE(static_cast<int64_t>(tensor->raw_data().size()) ==
            4 * numElements(*tensor));
    float lo = 1e9f, hi = -1e9f;
    for (int64_t i = 0; i < numElements(*tensor); ++i) {
      float value;
      std::memcpy(&value, tensor->raw_data().data() + 4 * i, 4);
      lo = std::min(lo, value);
      hi = std::max(hi, value);
    }
    return std::make_pair(lo, hi);
  };
  auto [lo, hi] = range("transformer.h.0.attn.c_attn.weight");
  CHECK(lo >= -0.05f);
  CHECK(hi < 0.05f);
  CHECK(lo < -0.04f);
  CHECK(hi > 0.04f);
  auto [gammaLo, gammaHi] = range("transformer.h.0.ln_1.weight");
  CHECK(gammaLo >= 0.95f);
  CHECK(gammaHi < 1.05f);
}

TEST_CASE("shape-only float initializers point at consecutive aligned "
          "external data",
          "[zoo]") {
  auto kind = GENERATE(ModelKind::Gpt, ModelKind::Bert, ModelKind::ResNet50);
  ModelSpec spec = kind == ModelKind::Gpt    ? smallGpt()
                   : kind == ModelKind::Bert ? smallBert()
                                             : ofKind(kind);
  spec.common.shapeOnly = true;
  spec.common.externalDataLocation = "model.weights.bin";
  BuiltModel built = build(spec);
  int64_t expectedOffset = 0;
  uint64_t totalBytes = 0;
  for (const onnx::TensorProto &tensor : built.model.graph().initializer()) {
    CAPTURE(tensor.name());
    if (tensor.data_type() != onnx::TensorProto::FLOAT) {
      // Integer and boolean data (position ids, the causal mask) stays in
      // the file for compilers to read.
      CHECK(tensor.data_location() != onnx::TensorProto::EXTERNAL);
      CHECK(static_cast<int64_t>(tensor.raw_data().size()) ==
            elementBytes(tensor.data_type()) * numElements(tensor));
      totalBytes += tensor.raw_data().size();
      continue;
    }
    CHECK(tensor.data_location() == onnx::TensorProto::EXTERNAL);
    CHECK_FALSE(tensor.has_raw_data());
    CHECK(tensor.float_data_size() == 0);
    CHECK(tensor.int64_data_size() == 0);
    std::map<std::string, std::string> entries;
    for (const auto &entry : tensor.external_data())
      entries[entry.key()] = entry.value();
    REQUIRE(entries.size() == 3);
    CHECK(tensor.external_data(0).key() == "location");
    CHECK(entries["location"] == "model.weights.bin");
    int64_t offset = std::stoll(entries["offset"]);
    int64_t length = std::stoll(entries["length"]);
    CHECK(offset % 4096 == 0);
    CHECK(offset == expectedOffset);
    CHECK(length == elementBytes(tensor.data_type()) * numElements(tensor));
    if (tensor.data_type() == onnx::TensorProto::FLOAT)
      CHECK(length == 4 * numElements(tensor));
    expectedOffset = (offset + length + 4095) / 4096 * 4096;
    totalBytes += static_cast<uint64_t>(length);
  }
  CHECK(built.summary.dataBytes == totalBytes);
}

TEST_CASE("a shape-only model passes the checker beside its weights file",
          "[zoo]") {
  std::filesystem::path dir = tempDir();
  ModelSpec spec = smallGpt();
  spec.common.shapeOnly = true;
  std::string path = (dir / "tiny-gpt.onnx").string();
  REQUIRE_FALSE(writeModel(spec, path));
  onnx::ModelProto model;
  {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(model.ParseFromIstream(&in));
  }
  CHECK(model.graph().initializer(0).external_data(0).value() ==
        "tiny-gpt.weights.bin");
  // The checker wants the data file to exist; an empty one will do.
  CHECK_THROWS(onnx::checker::check_model(path));
  std::ofstream((dir / "tiny-gpt.weights.bin").string()).close();
  CHECK_NOTHROW(onnx::checker::check_model(path));
  std::filesystem::remove(dir / "tiny-gpt.weights.bin");
  std::filesystem::remove(path);
}

TEST_CASE("writeModel writes what build returns", "[zoo]") {
  std::filesystem::path dir = tempDir();
  ModelSpec spec = smallBert();
  std::string path = (dir / "bert.onnx").string();
  ModelSummary summary;
  REQUIRE_FALSE(writeModel(spec, path, &summary));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  spec.common.externalDataLocation = "bert.weights.bin";
  BuiltModel built = build(spec);
  CHECK(bytes == serialize(built.model));
  CHECK(summary.parameters == built.summary.parameters);
  CHECK(summary.nodes == built.summary.nodes);
  std::filesystem::remove(path);
}

TEST_CASE("dynamic batch is a dim_param", "[zoo]") {
  ModelSpec spec = smallGpt();
  spec.common.dynamicBatch = true;
  BuiltModel built = build(spec);
  const auto &dims =
      built.model.graph().input(0).type().tensor_type().shape().dim();
  CHECK(dims.Get(0).dim_param() == "batch");
  CHECK(dims.Get(1).dim_value() == 16);
  checkModel(built.model);

  spec.common.dynamicBatch = false;
  spec.common.batch = 3;
  BuiltModel fixed = build(spec);
  CHECK(outputShape(fixed.model, 0) == std::vector<int64_t>{3, 16, 100});
  checkModel(fixed.model);
}

TEST_CASE("bad options are reported as one line", "[zoo]") {
  auto expectError = [](const ModelSpec &spec, const std::string &fragment) {
    std::optional<std::string> error = validate(spec);
    REQUIRE(error);
    CAPTURE(*error);
    CHECK(error->find(fragment) != std::string::npos);
    CHECK(error->find('\n') == std::string::npos);
    CHECK_THROWS_AS(build(spec), ZooError);
    CHECK_THROWS_WITH(build(spec), *error);
    std::filesystem::path path = tempDir() / "never-written.onnx";
    CHECK(writeModel(spec, path.string()) == error);
    CHECK_FALSE(std::filesystem::exists(path));
  };

  ModelSpec spec = smallGpt();
  spec.gpt.hidden = 5140;
  spec.gpt.heads = 40;
  expectError(spec, "not divisible");

  spec = smallGpt();
  spec.gpt.layers = 0;
  expectError(spec, "layers must be at least 1");

  spec = smallBert();
  spec.bert.heads = 0;
  expectError(spec, "heads must be at least 1");

  spec = smallGpt();
  spec.common.opset = 15;
  expectError(spec, "opset must be 13 or 17");

  spec = smallGpt();
  spec.common.batch = 0;
  expectError(spec, "batch must be at least 1");

  spec = ofKind(ModelKind::Mlp);
  spec.mlp.sizes = {10};
  expectError(spec, "at least two sizes");
  spec.mlp.sizes = {10, 0, 3};
  expectError(spec, "at least 1");

  spec = smallGpt();
  spec.gpt.layers = 60000;
  spec.gpt.hidden = 1 << 23;
  spec.gpt.heads = 1;
  spec.common.shapeOnly = true;
  expectError(spec, "too large");

  spec = ofKind(ModelKind::Vgg16);
  spec.vgg16.numClasses = 0;
  expectError(spec, "classes");

  spec = ofKind(ModelKind::Gpt);
  REQUIRE_FALSE(applyPreset(spec, "gpt3-1.3b"));
  expectError(spec, "2 GB");
  spec.common.shapeOnly = true;
  CHECK_FALSE(validate(spec));

  SECTION("presets") {
    ModelSpec gpt = ofKind(ModelKind::Gpt);
    std::optional<std::string> error = applyPreset(gpt, "gpt3-999b");
    REQUIRE(error);
    CHECK(error->find("unknown gpt preset 'gpt3-999b'") != std::string::npos);
    CHECK(error->find("gpt3-175b") != std::string::npos);
    CHECK(applyPreset(gpt, "bert-base"));
    ModelSpec bert = ofKind(ModelKind::Bert);
    CHECK(applyPreset(bert, "gpt3-125m"));
    REQUIRE_FALSE(applyPreset(bert, "bert-large"));
    CHECK(bert.bert.layers == 24);
    CHECK(bert.bert.hidden == 1024);
    CHECK(bert.bert.heads == 16);
    ModelSpec mlp = ofKind(ModelKind::Mlp);
    CHECK(applyPreset(mlp, "gpt3-125m"));
  }
  SECTION("an unwritable path") {
    std::optional<std::string> error =
        writeModel(smallGpt(), "/nonexistent-dir/model.onnx");
    REQUIRE(error);
    CHECK(error->find("cannot write '/nonexistent-dir/model.onnx'") !=
          std::string::npos);
  }
}

TEST_CASE("presets hold the published shapes", "[zoo]") {
  std::map<std::string, std::vector<int64_t>> expected{
      {"gpt3-125m", {12, 768, 12}},         {"gpt3-350m", {24, 1024, 16}},
      {"gpt3-760m", {24, 1536, 16}},        {"gpt3-1.3b", {24, 2048, 16}},
      {"gpt3-2.7b", {32, 2560, 32}},        {"gpt3-6.7b", {32, 4096, 32}},
      {"gpt3-13b", {40, 5120, 40}},         {"gpt3-175b", {96, 12288, 96}},
      {"megatron-1.7b", {24, 2304, 24}},    {"megatron-3.6b", {30, 3072, 32}},
      {"megatron-7.5b", {36, 4096, 32}},    {"megatron-18b", {40, 6144, 48}},
      {"megatron-39b", {48, 8192, 64}},     {"megatron-76b", {60, 10240, 80}},
      {"megatron-145b", {80, 12288, 96}},   {"megatron-310b", {96, 16384, 128}},
      {"megatron-530b", {105, 20480, 128}}, {"megatron-1t", {128, 25600, 160}},
      {"bert-base", {12, 768, 12}},         {"bert-large", {24, 1024, 16}}};
  REQUIRE(presets().size() == expected.size());
  for (const Preset &preset : presets()) {
    CAPTURE(preset.name);
    REQUIRE(expected.count(preset.name));
    CHECK(std::vector<int64_t>{preset.layers, preset.hidden, preset.heads} ==
          expected[preset.name]);
    CHECK(preset.hidden % preset.heads == 0);
  }
}
