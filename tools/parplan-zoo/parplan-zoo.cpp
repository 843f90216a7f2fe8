//===- parplan-zoo.cpp - write ONNX models of the model zoo ---------------===//
//
// parplan-zoo MODEL [options] -o FILE.onnx
// parplan-zoo --list
//
// Exit codes: 0 success, 1 bad options or unwritable file (one line on
// stderr), 2 usage error. docs/zoo.md describes the models.
//
//===----------------------------------------------------------------------===//

#include "parplan/Support/Text.h"
#include "parplan/Zoo/Zoo.h"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace parplan::zoo;
using parplan::groupThousands;

namespace {

/// The options of one model subcommand, gathered before the spec is built
/// so that explicit options override a preset.
struct TransformerFlags {
  std::string preset;
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  CLI::Option *layersOpt = nullptr, *hiddenOpt = nullptr, *headsOpt = nullptr,
              *seqOpt = nullptr, *vocabOpt = nullptr;

  void add(CLI::App *app) {
    app->add_option("--preset", preset,
                    "Named configuration (see --list); explicit options "
                    "override it");
    layersOpt = app->add_option("--layers", layers, "Transformer blocks");
    hiddenOpt = app->add_option("--hidden", hidden, "Hidden size");
    headsOpt = app->add_option("--heads", heads, "Attention heads");
    seqOpt = app->add_option("--seq", seq, "Sequence length");
    vocabOpt = app->add_option("--vocab", vocab, "Vocabulary size");
  }

  /// Applies the preset, then every option given explicitly.
  std::optional<std::string> apply(ModelSpec &spec, int64_t &outLayers,
                                   int64_t &outHidden, int64_t &outHeads,
                                   int64_t &outSeq, int64_t &outVocab) const {
    if (!preset.empty())
      if (auto error = applyPreset(spec, preset))
        return error;
    if (layersOpt->count())
      outLayers = layers;
    if (hiddenOpt->count())
      outHidden = hidden;
    if (headsOpt->count())
      outHeads = heads;
    if (seqOpt->count())
      outSeq = seq;
    if (vocabOpt->count())
      outVocab = vocab;
    return std::nullopt;
  }
};

std::string describe(const ModelSpec &spec) {
  switch (spec.kind) {
  case ModelKind::Mlp: {
    std::string sizes;
    for (int64_t size : spec.mlp.sizes)
      sizes += (sizes.empty() ? "" : ",") + std::to_string(size);
    return "sizes " + sizes;
  }
  case ModelKind::Gnn:
    return fmt::format("{} features, {} graph layers of {}, {} classes",
                       spec.gnn.features, spec.gnn.layers, spec.gnn.hidden,
                       spec.gnn.classes);
  case ModelKind::Gpt:
    return fmt::format("{} layers, hidden {}, {} heads, seq {}, vocab {}",
                       spec.gpt.layers, spec.gpt.hidden, spec.gpt.heads,
                       spec.gpt.seq, spec.gpt.vocab);
  case ModelKind::Bert:
    return fmt::format("{} layers, hidden {}, {} heads, seq {}, vocab {}",
                       spec.bert.layers, spec.bert.hidden, spec.bert.heads,
                       spec.bert.seq, spec.bert.vocab);
  case ModelKind::Vgg16:
    return "224x224, 1000 classes";
  case ModelKind::ResNet50:
    return "224x224, 1000 classes, BatchNorm kept";
  case ModelKind::VitB16:
    return fmt::format("224x224, 16x16 patches, {} layers, hidden {}, {} "
                       "heads, {} classes",
                       spec.vit.layers, spec.vit.hidden, spec.vit.heads,
                       spec.vit.numClasses);
  }
  return "";
}

void printList() {
  struct Row {
    std::string name, model, description, parameters, source;
  };
  std::vector<Row> models, named;
  for (ModelKind kind : allModels()) {
    ModelSpec spec;
    spec.kind = kind;
    models.push_back(
        {modelName(kind), "", describe(spec),
         groupThousands(static_cast<uint64_t>(expectedParameterCount(spec))),
         ""});
  }
  for (const Preset &preset : presets()) {
    ModelSpec spec;
    spec.kind = preset.kind;
    if (applyPreset(spec, preset.name))
      continue;
    named.push_back(
        {preset.name, modelName(preset.kind), describe(spec),
         groupThousands(static_cast<uint64_t>(expectedParameterCount(spec))),
         preset.source});
  }
  size_t nameWidth = 0, describeWidth = 0, countWidth = 0;
  for (const std::vector<Row> *rows : {&models, &named})
    for (const Row &row : *rows) {
      nameWidth = std::max(nameWidth, row.name.size());
      describeWidth = std::max(describeWidth, row.description.size());
      countWidth = std::max(countWidth, row.parameters.size());
    }
  auto print = [&](const Row &row) {
    fmt::print("  {:<{}}  {:<5} {:<{}}  {:>{}} parameters\n", row.name,
               nameWidth, row.model, row.description, describeWidth,
               row.parameters, countWidth);
  };
  fmt::print("models, with their defaults (parplan-zoo MODEL --help):\n");
  for (const Row &row : models)
    print(row);
  fmt::print("presets (parplan-zoo MODEL --preset NAME; explicit options "
             "override them):\n");
  std::string source;
  for (const Row &row : named) {
    if (row.source != source)
      fmt::print(" {}:\n", source = row.source);
    print(row);
  }
}

int fail(const std::string &message) {
  fmt::print(stderr, "parplan-zoo: error: {}\n", message);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "parplan-zoo: write ONNX models laid out like torch.onnx.export"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", "parplan-zoo 0.1.0");
  bool list = false;
  app.add_flag("--list", list,
               "List the models and presets with parameter "
               "counts");

  ModelSpec spec;
  std::string output;
  auto addCommon = [&](CLI::App *command) {
    command->add_option("-o,--output", output, "Output .onnx file")->required();
    command->add_option("--batch", spec.common.batch, "Batch size")
        ->capture_default_str();
    command->add_flag("--dynamic-batch", spec.common.dynamicBatch,
                      "Batch dimension as dim_param \"batch\"");
    command->add_option("--seed", spec.common.seed, "Seed of the weights")
        ->capture_default_str();
    command->add_flag("--shape-only", spec.common.shapeOnly,
                      "Initializers refer to external data "
                      "<stem>.weights.bin, which is not written");
    command->add_option("--opset", spec.common.opset, "ONNX opset: 13 or 17")
        ->capture_default_str();
  };

  CLI::App *mlp = app.add_subcommand("mlp", "Multilayer perceptron: Gemm + "
                                            "Relu");
  addCommon(mlp);
  mlp->add_option("--sizes", spec.mlp.sizes,
                  "Layer widths, input first (e.g. 784,512,256,10)")
      ->delimiter(',');
  mlp->add_option("--dropout", spec.mlp.dropout,
                  "A Dropout of this ratio after every ReLU (default: none)");

  CLI::App *gnn = app.add_subcommand(
      "gnn", "Graph network classifying a graph's nodes (GraphSAGE layers "
             "with a weighted mean; the batch is the nodes)");
  addCommon(gnn);
  gnn->add_option("--features", spec.gnn.features, "Features per node")
      ->capture_default_str();
  gnn->add_option("--hidden", spec.gnn.hidden, "Width of each graph layer")
      ->capture_default_str();
  gnn->add_option("--layers", spec.gnn.layers, "Graph layers")
      ->capture_default_str();
  gnn->add_option("--classes", spec.gnn.classes, "Output classes")
      ->capture_default_str();

  CLI::App *gpt = app.add_subcommand("gpt", "GPT-2/GPT-3 decoder");
  addCommon(gpt);
  TransformerFlags gptFlags;
  gptFlags.add(gpt);
  bool untied = false;
  gpt->add_flag("--untied-lm-head", untied,
                "LM head as its own [hidden, vocab] initializer lm_head.weight "
                "instead of Transpose(transformer.wte.weight)");

  CLI::App *bert = app.add_subcommand("bert", "BERT encoder");
  addCommon(bert);
  TransformerFlags bertFlags;
  bertFlags.add(bert);
  bert->add_option("--type-vocab", spec.bert.typeVocab, "Token types")
      ->capture_default_str();
  bert->add_flag("--pooler", spec.bert.pooler,
                 "Add the pooler and the output pooler_output");

  CLI::App *vgg = app.add_subcommand("vgg16", "torchvision VGG16, 224x224");
  addCommon(vgg);
  vgg->add_option("--classes", spec.vgg16.numClasses, "Output classes")
      ->capture_default_str();

  CLI::App *resnet =
      app.add_subcommand("resnet50", "torchvision ResNet50, 224x224");
  addCommon(resnet);
  resnet->add_option("--classes", spec.resnet50.numClasses, "Output classes")
      ->capture_default_str();

  CLI::App *vit = app.add_subcommand(
      "vit_b_16", "torchvision ViT-B/16, 224x224, with its shape assert");
  addCommon(vit);
  vit->add_option("--layers", spec.vit.layers, "Encoder layers")
      ->capture_default_str();
  vit->add_option("--hidden", spec.vit.hidden, "Hidden size")
      ->capture_default_str();
  vit->add_option("--heads", spec.vit.heads, "Attention heads")
      ->capture_default_str();
  vit->add_option("--classes", spec.vit.numClasses, "Output classes")
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    // --help and --version exit 0; a usage error exits 2, as in getopt tools.
    return app.exit(error) == 0 ? 0 : 2;
  }

  if (list) {
    printList();
    return 0;
  }
  if (app.get_subcommands().empty()) {
    fmt::print(stderr,
               "parplan-zoo: error: name a model (mlp, gnn, gpt, bert, vgg16, "
               "resnet50, vit_b_16) or --list; --help for usage\n");
    return 2;
  }

  const CLI::App *command = app.get_subcommands().front();
  spec.kind = *parseModelKind(command->get_name());
  if (spec.kind == ModelKind::Gpt) {
    GptOptions &o = spec.gpt;
    if (auto error =
            gptFlags.apply(spec, o.layers, o.hidden, o.heads, o.seq, o.vocab))
      return fail(*error);
    o.tiedLmHead = !untied;
  } else if (spec.kind == ModelKind::Bert) {
    BertOptions &o = spec.bert;
    if (auto error =
            bertFlags.apply(spec, o.layers, o.hidden, o.heads, o.seq, o.vocab))
      return fail(*error);
  }

  ModelSummary summary;
  if (auto error = writeModel(spec, output, &summary))
    return fail(*error);
  std::string line =
      fmt::format("wrote {}: {}, {} layers, {} parameters, {} nodes", output,
                  modelName(summary.kind), summary.layers,
                  groupThousands(static_cast<uint64_t>(summary.parameters)),
                  groupThousands(static_cast<uint64_t>(summary.nodes)));
  if (spec.common.shapeOnly)
    line += fmt::format(", shape-only ({} bytes of external data, not "
                        "written)",
                        groupThousands(summary.dataBytes));
  fmt::print("{}\n", line);
  return 0;
}
