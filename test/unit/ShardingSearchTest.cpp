//===- ShardingSearchTest.cpp - what sbp-assign chooses, end to end -------===//
//
// The classic results the sharding search must reproduce: Megatron-LM's
// column-then-row split of a GPT block on eight NVLinked GPUs, with the
// communication of Megatron's formula, and data parallelism for VGG16's
// convolutions with model parallelism for its large fully connected layers.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/Collectives.h"
#include "parplan/Cost/Compute.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Cost/Presets.h"
#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"
#include "parplan/Zoo/Zoo.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <map>
#include <regex>

using namespace mlir;
using namespace parplan;

namespace {

struct SearchFixture {
  SearchFixture() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Imports the ONNX model `bytes` into `module` and builds its training
  /// step, `frozen` parameters kept.
  void loadTrainingStep(StringRef name, const std::string &bytes,
                        const char *frozen) {
    std::string error;
    module = importOnnx(bytes, (name + ".onnx").str(), context,
                        OnnxImportOptions{}, error);
    REQUIRE(module);
    PassManager pm(&context);
    addCanonicalFormPasses(pm);
    CompilePipelineOptions training;
    training.frozen = frozen;
    addStepPasses(pm, training);
    REQUIRE(succeeded(pm.run(*module)));
  }

  /// Runs sbp-assign and insert-boxing on `module` laid out for `cluster`.
  void plan(const SbpAssignOptions &options,
            const std::string &cluster = "dgx-h100") {
    REQUIRE(module);
    PassManager pm(&context);
    pm.addPass(createAttachCluster({cluster}));
    pm.addPass(createSbpAssign(options));
    InsertBoxingOptions boxing;
    boxing.mixedPrecision = options.mixedPrecision;
    pm.addPass(createInsertBoxing(boxing));
    REQUIRE(succeeded(pm.run(*module)));
  }

  /// The collectives of `boxing` as insert-boxing priced them ("all_gather
  /// on axis 1"), in order.
  std::vector<std::string> collectiveSteps(sbp::BoxingOp boxing,
                                           const SbpAssignOptions &options) {
    std::string error;
    auto mesh = module->lookupSymbol<sbp::MeshOp>("mesh");
    std::optional<ShardingCostModel> model = ShardingCostModel::load(
        *clusterAttrOf(*module).getCluster(),
        std::vector<int64_t>(mesh.getShape().begin(), mesh.getShape().end()),
        options.mixedPrecision, error);
    REQUIRE(model);
    const std::optional<cost::BoxingCost> &cost =
        model->boxing(sbp::toNdSbp(boxing.getSrc()),
                      sbp::toNdSbp(boxing.getDst()), boxing.getType());
    REQUIRE(cost);
    std::vector<std::string> names;
    for (const cost::BoxingStep &step : cost->steps)
      if (step.collective)
        names.push_back(std::string(toString(step.step.kind)) + " on axis " +
                        std::to_string(step.step.meshAxis));
    return names;
  }

  /// The layout chosen for the parameter called `name`.
  std::string paramLayout(StringRef name) {
    std::string layout;
    module->walk([&](nn::ParamOp param) {
      if (param.getName() == name)
        layout =
            toString(param->getAttrOfType<sbp::ShardingAttr>("sbp.sharding")
                         .getResultSbp(0));
    });
    return layout;
  }

  std::string text() {
    std::string out;
    llvm::raw_string_ostream stream(out);
    module->print(stream);
    return out;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

/// `layers` pre-LN GPT blocks with separate q, k, v projections (as
/// Megatron-LM and LLaMA-style exports have them): b x s tokens, hidden h,
/// a heads. Parameters of block i are called "h<i>.<name>".
std::string gptBlocks(int64_t layers, int64_t b, int64_t s, int64_t h,
                      int64_t a) {
  auto tensor = [](std::initializer_list<int64_t> shape) {
    std::string text = "tensor<";
    for (int64_t dim : shape)
      text += std::to_string(dim) + "x";
    return text + "f32>";
  };
  int64_t d = h / a;
  std::string x = tensor({b, s, h}), f = tensor({b, s, 4 * h});
  std::string heads = tensor({b, s, a, d}), perHead = tensor({b, a, s, d});
  std::string perHeadT = tensor({b, a, d, s}), scores = tensor({b, a, s, s});
  std::string vec = tensor({h}), vec4 = tensor({4 * h}), hh = tensor({h, h});
  std::string h4h = tensor({h, 4 * h}), h4hT = tensor({4 * h, h});
  std::string mask = tensor({1, 1, s, s});
  std::string ir;
  llvm::raw_string_ostream o(ir);
  o << "func.func @main() -> " << x << " {\n"
    << "  %x = nn.input \"x\" : " << x << "\n"
    << "  %scale = nn.constant dense<8.0> : tensor<f32>\n"
    << "  %mask = nn.constant dense<0.0> : " << mask << "\n";
  std::string in = "%x";
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::string l = "h" + std::to_string(layer) + ".";
    auto v = [&](const char *name) { return "%" + l + name; };
    for (const char *name : {"ln1.g", "ln1.b", "ln2.g", "ln2.b", "q.b", "k.b",
                             "v.b", "proj.b", "fc2.b"})
      o << "  " << v(name) << " = nn.param \"" << l << name << "\" : " << vec
        << "\n";
    for (const char *name : {"q.w", "k.w", "v.w", "proj.w"})
      o << "  " << v(name) << " = nn.param \"" << l << name << "\" : " << hh
        << "\n";
    o << "  " << v("fc1.w") << " = nn.param \"" << l << "fc1.w\" : " << h4h
      << "\n"
      << "  " << v("fc1.b") << " = nn.param \"" << l << "fc1.b\" : " << vec4
      << "\n"
      << "  " << v("fc2.w") << " = nn.param \"" << l << "fc2.w\" : " << h4hT
      << "\n";
    o << "  " << v("ln1") << " = nn.layer_norm " << in << ", " << v("ln1.g")
      << ", " << v("ln1.b") << " : " << x << ", " << vec << ", " << vec
      << " -> " << x << "\n";
    for (std::string p : {"q", "k", "v"}) {
      o << "  " << v((p + "m").c_str()) << " = nn.matmul " << v("ln1") << ", "
        << v((p + ".w").c_str()) << " : " << x << ", " << hh << " -> " << x
        << "\n"
        << "  " << v((p + "a").c_str()) << " = nn.add " << v((p + "m").c_str())
        << ", " << v((p + ".b").c_str()) << " : " << x << ", " << vec << " -> "
        << x << "\n"
        << "  " << v((p + "r").c_str()) << " = nn.reshape "
        << v((p + "a").c_str()) << " : " << x << " -> " << heads << "\n";
    }
    o << "  " << v("qt") << " = nn.transpose " << v("qr")
      << " perm = [0, 2, 1, 3] : " << heads << " -> " << perHead << "\n"
      << "  " << v("kt") << " = nn.transpose " << v("kr")
      << " perm = [0, 2, 3, 1] : " << heads << " -> " << perHeadT << "\n"
      << "  " << v("vt") << " = nn.transpose " << v("vr")
      << " perm = [0, 2, 1, 3] : " << heads << " -> " << perHead << "\n"
      << "  " << v("s0") << " = nn.matmul " << v("qt") << ", " << v("kt")
      << " : " << perHead << ", " << perHeadT << " -> " << scores << "\n"
      << "  " << v("s1") << " = nn.div " << v("s0") << ", %scale : " << scores
      << ", tensor<f32> -> " << scores << "\n"
      << "  " << v("s2") << " = nn.add " << v("s1") << ", %mask : " << scores
      << ", " << mask << " -> " << scores << "\n"
      << "  " << v("p") << " = nn.softmax " << v("s2")
      << " axis = 3 : " << scores << "\n"
      << "  " << v("c") << " = nn.matmul " << v("p") << ", " << v("vt") << " : "
      << scores << ", " << perHead << " -> " << perHead << "\n"
      << "  " << v("ct") << " = nn.transpose " << v("c")
      << " perm = [0, 2, 1, 3] : " << perHead << " -> " << heads << "\n"
      << "  " << v("cr") << " = nn.reshape " << v("ct") << " : " << heads
      << " -> " << x << "\n"
      << "  " << v("o") << " = nn.matmul " << v("cr") << ", " << v("proj.w")
      << " : " << x << ", " << hh << " -> " << x << "\n"
      << "  " << v("ob") << " = nn.add " << v("o") << ", " << v("proj.b")
      << " : " << x << ", " << vec << " -> " << x << "\n"
      << "  " << v("r1") << " = nn.add " << in << ", " << v("ob") << " : " << x
      << ", " << x << " -> " << x << "\n"
      << "  " << v("ln2") << " = nn.layer_norm " << v("r1") << ", "
      << v("ln2.g") << ", " << v("ln2.b") << " : " << x << ", " << vec << ", "
      << vec << " -> " << x << "\n"
      << "  " << v("f1") << " = nn.matmul " << v("ln2") << ", " << v("fc1.w")
      << " : " << x << ", " << h4h << " -> " << f << "\n"
      << "  " << v("f1b") << " = nn.add " << v("f1") << ", " << v("fc1.b")
      << " : " << f << ", " << vec4 << " -> " << f << "\n"
      << "  " << v("g") << " = nn.gelu " << v("f1b") << " : " << f << "\n"
      << "  " << v("f2") << " = nn.matmul " << v("g") << ", " << v("fc2.w")
      << " : " << f << ", " << h4hT << " -> " << x << "\n"
      << "  " << v("f2b") << " = nn.add " << v("f2") << ", " << v("fc2.b")
      << " : " << x << ", " << vec << " -> " << x << "\n"
      << "  " << v("r2") << " = nn.add " << v("r1") << ", " << v("f2b") << " : "
      << x << ", " << x << " -> " << x << "\n";
    in = v("r2");
  }
  o << "  return " << in << " : " << x << "\n"
    << "}\n";
  return ir;
}

/// The block an op belongs to: the "h<i>." prefix of the parameters it or
/// its operands' producers read, found by walking the program in order.
std::vector<int64_t> blockOfEachBoxing(ModuleOp module) {
  std::vector<int64_t> blocks;
  int64_t current = -1;
  module->walk([&](Operation *op) {
    if (auto param = dyn_cast<nn::ParamOp>(op))
      return;
    for (Value operand : op->getOperands())
      if (auto param = operand.getDefiningOp<nn::ParamOp>()) {
        StringRef name = param.getName();
        if (name.consume_front("h"))
          name.take_until([](char c) { return c == '.'; })
              .getAsInteger(10, current);
      }
    if (isa<sbp::BoxingOp>(op))
      blocks.push_back(current);
  });
  return blocks;
}

/// A zoo model small enough to plan in a test, with the parameters its
/// training step keeps frozen.
struct ZooCase {
  const char *name;
  zoo::ModelSpec spec;
  const char *frozen;
};

/// An MLP, a 2-layer GPT and a 2-layer BERT, in that order.
std::vector<ZooCase> smallZooModels() {
  std::vector<ZooCase> cases(3);
  cases[0].name = "mlp";
  cases[0].spec.mlp.sizes = {64, 128, 10};
  cases[0].spec.common.batch = 16;
  cases[0].frozen = "";
  cases[1].name = "gpt";
  cases[1].spec.kind = zoo::ModelKind::Gpt;
  cases[1].spec.gpt.layers = 2;
  cases[1].spec.gpt.hidden = 64;
  cases[1].spec.gpt.heads = 4;
  cases[1].spec.gpt.seq = 16;
  cases[1].spec.gpt.vocab = 96;
  cases[1].spec.common.batch = 8;
  cases[1].frozen = "";
  cases[2].name = "bert";
  cases[2].spec.kind = zoo::ModelKind::Bert;
  cases[2].spec.bert.layers = 2;
  cases[2].spec.bert.hidden = 64;
  cases[2].spec.bert.heads = 4;
  cases[2].spec.bert.seq = 16;
  cases[2].spec.bert.vocab = 96;
  cases[2].spec.common.batch = 8;
  cases[2].frozen = "";
  return cases;
}

} // namespace

TEST_CASE_METHOD(SearchFixture,
                 "a GPT block on 1x8 NVLinked GPUs gets Megatron's split",
                 "[sharding-search]") {
  // Three blocks: the middle one sees what a block inside a model sees (its
  // input and output are other blocks', not free to lay out).
  const int64_t b = 1, s = 2048, h = 12288, a = 96;
  module = parseSourceString<ModuleOp>(gptBlocks(3, b, s, h, a), &context);
  SbpAssignOptions options;
  options.mesh = "1x8";
  plan(options, "dgx-h100");
  if (getenv("PARPLAN_DUMP"))
    llvm::errs() << text();

  // Column-parallel q, k, v and fc1; row-parallel fc2. The attention
  // projection is row-parallel as in Megatron-LM or, at exactly the same
  // price, column-parallel after gathering the heads (an all-gather instead
  // of the reduce-scatter); ties go either way.
  for (const char *column : {"h1.q.w", "h1.k.w", "h1.v.w", "h1.fc1.w"})
    CHECK(paramLayout(column) == "[B, S(1)]");
  CHECK(paramLayout("h1.fc2.w") == "[B, S(0)]");
  CHECK(paramLayout("h1.proj.w") != "[B, B]");

  // Forward communication of the middle block: the volume of one
  // all-reduce of the b x s x h activation per half (attention, MLP), as an
  // all-reduce or as its halves (reduce-scatter and all-gather: Megatron's
  // sequence parallelism), plus at most one all-to-all that moves the
  // residual stream between hidden and sequence parts.
  std::map<std::string, int> steps;
  double forwardTime = 0;
  std::vector<int64_t> blocks = blockOfEachBoxing(*module);
  size_t index = 0;
  module->walk([&](sbp::BoxingOp boxing) {
    if (blocks[index++] != 1 || boxing.getTime()->isZero())
      return; // Another block's, or a local slice.
    std::vector<int64_t> shape(boxing.getType().getShape().begin(),
                               boxing.getType().getShape().end());
    CHECK(shape == std::vector<int64_t>{b, s, h});
    std::vector<std::string> boxingSteps = collectiveSteps(boxing, options);
    for (const std::string &step : boxingSteps)
      ++steps[step];
    if (boxingSteps[0] != "all_to_all on axis 1")
      forwardTime += boxing.getTime()->convertToDouble();
  });
  int halves =
      steps["reduce_scatter on axis 1"] + steps["all_gather on axis 1"];
  CHECK(2 * steps["all_reduce on axis 1"] + halves == 4);
  CHECK(steps["all_to_all on axis 1"] <= 1);
  CHECK(steps.size() == 4u);

  // Megatron-LM's formula: two all-reduces of b s h fp16 values per layer
  // in the forward pass, over the NVLink ring of the eight GPUs.
  std::string error;
  std::optional<cost::Cluster> cluster =
      cost::resolveCluster("dgx-h100", error);
  REQUIRE(cluster);
  std::optional<cost::DeviceMesh> mesh =
      cost::makeMesh(*cluster, {1, 8}, error);
  REQUIRE(mesh);
  double expected =
      2 * cost::collectiveTime(cost::Collective::AllReduce, 8,
                               2.0 * static_cast<double>(b * s * h),
                               cost::axisLink(*cluster, *mesh, 1));
  CHECK(forwardTime == Approx(expected).epsilon(1e-9));
}

TEST_CASE_METHOD(SearchFixture,
                 "the megatron baseline pins column-then-row on the last axis",
                 "[sharding-search]") {
  module =
      parseSourceString<ModuleOp>(gptBlocks(1, 4, 256, 1024, 16), &context);
  SbpAssignOptions options;
  options.mesh = "2x4";
  options.strategy = "megatron";
  plan(options);
  for (const char *column : {"h0.q.w", "h0.k.w", "h0.v.w", "h0.fc1.w"})
    CHECK(paramLayout(column) == "[B, S(1)]");
  for (const char *row : {"h0.proj.w", "h0.fc2.w"})
    CHECK(paramLayout(row) == "[B, S(0)]");
  module->walk([&](nn::InputOp input) {
    CHECK(toString(input->getAttrOfType<sbp::ShardingAttr>("sbp.sharding")
                       .getResultSbp(0)) == "[S(0), B]");
  });
}

TEST_CASE_METHOD(SearchFixture,
                 "VGG16 on 8 GPUs: data-parallel convolutions, "
                 "model-parallel fully connected layers",
                 "[sharding-search]") {
  zoo::ModelSpec spec;
  spec.kind = zoo::ModelKind::Vgg16;
  spec.common.batch = 128;
  spec.common.shapeOnly = true;
  spec.common.externalDataLocation = "vgg16.weights.bin";
  std::string bytes = zoo::build(spec).model.SerializeAsString();
  std::string error;
  module = importOnnx(bytes, "vgg16.onnx", context, OnnxImportOptions{}, error);
  INFO(error);
  REQUIRE(module);
  PassManager canonical(&context);
  addCanonicalFormPasses(canonical);
  REQUIRE(succeeded(canonical.run(*module)));
  SbpAssignOptions options;
  options.mesh = "8";
  plan(options, "a100-4node");

  int convs = 0, dense = 0;
  module->walk([&](Operation *op) {
    auto sharding = op->getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
    if (isa<nn::ConvOp>(op)) {
      ++convs;
      // The batch is split: data parallelism.
      CHECK(toString(sharding.getOperandSbp(0)) == "[S(0)]");
      CHECK(toString(sharding.getResultSbp(0)) == "[S(0)]");
    }
    if (isa<nn::GemmOp, nn::MatMulOp>(op)) {
      ++dense;
      // The 4096-wide weights are split, never replicated.
      CHECK(toString(sharding.getOperandSbp(1)) != "[B]");
      CHECK(toString(sharding.getOperandSbp(0)) != "[S(0)]");
    }
  });
  CHECK(convs == 13);
  CHECK(dense == 3);
}

TEST_CASE_METHOD(SearchFixture, "the same input gives byte-identical output",
                 "[sharding-search]") {
  std::string source = gptBlocks(2, 2, 128, 512, 8);
  SbpAssignOptions options;
  options.mesh = "2x4";
  options.explain = true;
  module = parseSourceString<ModuleOp>(source, &context);
  plan(options);
  std::string first = text();
  module = parseSourceString<ModuleOp>(source, &context);
  plan(options);
  CHECK(text() == first);
  CHECK(first.find("runner_up") != std::string::npos);
}

TEST_CASE_METHOD(SearchFixture,
                 "the search's predicted step is compute plus the boxings "
                 "inserted",
                 "[sharding-search]") {
  // Training steps of zoo models, laid out on one node as 8 and 2x4: the
  // step time the search reports (its objective at the chosen layouts)
  // must be what the program it leaves costs, every boxing priced once.
  std::vector<ZooCase> cases = smallZooModels();
  cases.pop_back(); // mlp and gpt
  for (const ZooCase &c : cases)
    for (const char *meshShape : {"8", "2x4"}) {
      INFO(c.name << " on " << meshShape);
      loadTrainingStep(c.name, zoo::build(c.spec).model.SerializeAsString(),
                       c.frozen);
      SbpAssignOptions options;
      options.mesh = meshShape;
      options.mixedPrecision = false;
      plan(options);
      double boxings = 0;
      module->walk([&](sbp::BoxingOp boxing) {
        boxings += boxing.getTime()->convertToDouble();
      });
      auto figures = (*module)->getAttrOfType<sbp::LayoutPlanAttr>(
          parplan::kLayoutPlanAttrName);
      REQUIRE(figures);
      CHECK(figures.getCommunicationTime() == Approx(boxings).epsilon(1e-9));
      CHECK(figures.getStepTime() ==
            Approx(figures.getComputeTime() + boxings).epsilon(1e-9));
    }
}

TEST_CASE_METHOD(SearchFixture, "auto is never worse than a baseline",
                 "[sharding-search]") {
  // Training steps of zoo models on one node as 8, 1x8 and 2x4: auto's
  // predicted step is at most each shipped baseline's, planned on its own
  // under the same cost model, and sbp.plan says which start won and what
  // the others predicted.
  for (const ZooCase &c : smallZooModels())
    for (const char *meshShape : {"8", "1x8", "2x4"}) {
      INFO(c.name << " on " << meshShape);
      std::string bytes = zoo::build(c.spec).model.SerializeAsString();
      auto plannedStep = [&](const char *strategy) {
        loadTrainingStep(c.name, bytes, c.frozen);
        SbpAssignOptions options;
        options.mesh = meshShape;
        options.strategy = strategy;
        options.mixedPrecision = false;
        plan(options);
        auto figures = (*module)->getAttrOfType<sbp::LayoutPlanAttr>(
            parplan::kLayoutPlanAttrName);
        REQUIRE(figures);
        return figures;
      };
      sbp::LayoutPlanAttr chosen = plannedStep("auto");
      double autoStep = chosen.getStepTime();
      std::string start = chosen.getStart().str();
      DictionaryAttr others = chosen.getBaselines();
      // Every start but the winner is listed, the winner's figure is the
      // least of them.
      CHECK(others.size() == 3);
      CHECK_FALSE(others.contains(start));
      for (NamedAttribute other : others)
        CHECK(autoStep <= cast<FloatAttr>(other.getValue()).getValueAsDouble());
      for (const char *baseline : {"data-parallel", "megatron", "replicated"}) {
        INFO(baseline);
        double step = plannedStep(baseline).getStepTime();
        CHECK(autoStep <= step);
        if (start != baseline)
          CHECK(chosen.getBaseline(baseline) == step);
      }
    }
}

TEST_CASE_METHOD(SearchFixture,
                 "a mesh of fast and slow nodes splits the batch by speed",
                 "[sharding-search][shares]") {
  // mixed-a100-v100 as 4x8: two A100 nodes, then two V100 nodes.
  auto planned = [&](const char *shares) {
    module =
        parseSourceString<ModuleOp>(gptBlocks(2, 64, 128, 256, 4), &context);
    REQUIRE(module);
    SbpAssignOptions options;
    options.mesh = "4x8";
    options.shares = shares;
    plan(options, "mixed-a100-v100");
    PassManager pm(&context);
    ExpandBoxingOptions steps;
    steps.mixedPrecision = options.mixedPrecision;
    pm.addPass(createExpandBoxing(steps));
    REQUIRE(succeeded(pm.run(*module)));
    return module->lookupSymbol<sbp::MeshOp>("mesh").getMeshShares();
  };
  MeshShares bySpeed = planned("speed");
  // The batch's 64 rows, more of them on each A100 node than on each V100
  // one, and nothing split unevenly along the nodes' axis is exchanged.
  REQUIRE(bySpeed.size() == 2);
  CHECK(bySpeed[1].empty());
  REQUIRE(bySpeed[0].size() == 4);
  CHECK(bySpeed[0][0] == bySpeed[0][1]);
  CHECK(bySpeed[0][2] == bySpeed[0][3]);
  CHECK(bySpeed[0][0] > bySpeed[0][2]);
  CHECK(bySpeed[0][0] + bySpeed[0][1] + bySpeed[0][2] + bySpeed[0][3] == 64);
  module->walk([&](Operation *op) {
    if (std::optional<ReshardStep> step = sbp::getReshardStep(op))
      CHECK_FALSE((step->meshAxis == 0 && exchangesParts(step->kind)));
  });
  double speedStep =
      (*module)
          ->getAttrOfType<sbp::LayoutPlanAttr>(parplan::kLayoutPlanAttrName)
          .getStepTime();
  // Even parts: no shares on the mesh.
  CHECK(planned("even").empty());
  double evenStep =
      (*module)
          ->getAttrOfType<sbp::LayoutPlanAttr>(parplan::kLayoutPlanAttrName)
          .getStepTime();
  // auto lays out both and keeps the faster; the other's starts are
  // listed, labelled.
  MeshShares chosen = planned("auto");
  auto figures = (*module)->getAttrOfType<sbp::LayoutPlanAttr>(
      parplan::kLayoutPlanAttrName);
  CHECK(figures.getStepTime() == std::min(speedStep, evenStep));
  CHECK(chosen.empty() == (evenStep <= speedStep));
  CHECK(static_cast<bool>(figures.getBaselines().get(
      chosen.empty() ? "auto (parts by speed)" : "auto")));
}

TEST_CASE("a split along an axis of uneven shares takes as long as its "
          "slowest position",
          "[cost-model][shares]") {
  std::string error;
  std::optional<ShardingCostModel> even =
      ShardingCostModel::load("mixed-a100-v100", std::vector<int64_t>{4, 8},
                              /*mixedPrecision=*/false, error);
  REQUIRE(even);
  cost::DeviceMesh mesh = even->getMesh();
  mesh.shares = {{3, 3, 1, 1}, {}};
  ShardingCostModel shared =
      ShardingCostModel::onMesh(even->getCluster(), mesh, false);
  const cost::Cluster &cluster = even->getCluster();
  const cost::DeviceType &a100 = cluster.deviceTypeOf(0);
  const cost::DeviceType &v100 = cluster.deviceTypeOf(31);
  REQUIRE(a100.name == "A100-SXM4-40GB");
  REQUIRE(v100.name == "V100-SXM2-32GB");
  // The A100 nodes do 1.5 TFLOP each, the V100 nodes a third of that.
  ShardingCostModel::LocalWork part{
      1.5e12, 0, cost::ComputeType::F32, {1, 1, 1.0 / 3, 1.0 / 3}};
  double expected =
      std::max(*cost::computeTime(1.5e12, 0, a100, cost::ComputeType::F32),
               *cost::computeTime(0.5e12, 0, v100, cost::ComputeType::F32));
  CHECK(shared.computeTime(part) == Approx(expected));
  // Work the same on every node takes the V100's time.
  ShardingCostModel::LocalWork whole{1.5e12, 0, cost::ComputeType::F32};
  CHECK(shared.computeTime(whole) ==
        Approx(*cost::computeTime(1.5e12, 0, v100, cost::ComputeType::F32)));
  // Each position at its own pace: its part on its own devices, and work
  // the same everywhere at each type's time (the step's compute runs the
  // positions so); computeTime is the longest.
  llvm::SmallVector<double, 8> paces = shared.positionTimes(part);
  REQUIRE(paces.size() == 4);
  CHECK(paces[0] ==
        Approx(*cost::computeTime(1.5e12, 0, a100, cost::ComputeType::F32)));
  CHECK(paces[3] ==
        Approx(*cost::computeTime(0.5e12, 0, v100, cost::ComputeType::F32)));
  paces = shared.positionTimes(whole);
  REQUIRE(paces.size() == 4);
  CHECK(paces[1] ==
        Approx(*cost::computeTime(1.5e12, 0, a100, cost::ComputeType::F32)));
  CHECK(paces[2] ==
        Approx(*cost::computeTime(1.5e12, 0, v100, cost::ComputeType::F32)));
  CHECK(paces[2] > paces[1]);
  // Even shares have no positions of their own.
  CHECK(even->positionTimes(part).empty());
  // Even shares price every part on the slowest device.
  CHECK(even->computeTime(part) ==
        Approx(*cost::computeTime(1.5e12, 0, v100, cost::ComputeType::F32)));
  // The largest block is an A100 node's.
  CHECK(shared.largestBlockCoordinate() == std::vector<int64_t>{0, 0});
  mesh.shares = {{1, 2, 1, 1}, {}};
  CHECK(ShardingCostModel::onMesh(cluster, mesh, false)
            .largestBlockCoordinate() == std::vector<int64_t>{1, 0});
  // A gather along the nodes is a sum of zero-padded parts there.
  MLIRContext context;
  Type type = RankedTensorType::get({64, 256}, Float32Type::get(&context));
  const std::optional<cost::BoxingCost> &gather =
      shared.boxing({Sbp::split(0), Sbp::broadcast()},
                    {Sbp::broadcast(), Sbp::broadcast()}, type);
  REQUIRE(gather);
  REQUIRE(gather->steps.size() == 2);
  CHECK(gather->steps[0].step.kind == ReshardKind::ToPartial);
  CHECK(gather->steps[1].step.kind == ReshardKind::AllReduce);
}

TEST_CASE("a boxing inside each position lasts as long as that position's "
          "part on its own links",
          "[cost-model][shares]") {
  // mixed-t4-a100 in groups of 4: two A100 groups on NVLink with 18 rows
  // each, four T4 groups on PCIe with 7. An all-reduce inside the groups
  // takes each group its own rows over its own links; boxing() prices
  // the slowest, the step's timeline each position at its own.
  std::string error;
  std::optional<ShardingCostModel> even =
      ShardingCostModel::load("mixed-t4-a100", std::vector<int64_t>{6, 4},
                              /*mixedPrecision=*/false, error);
  REQUIRE(even);
  cost::DeviceMesh mesh = even->getMesh();
  mesh.shares = {{18, 18, 7, 7, 7, 7}, {}};
  const cost::Cluster &cluster = even->getCluster();
  ShardingCostModel shared = ShardingCostModel::onMesh(cluster, mesh, false);
  MLIRContext context;
  Type type = RankedTensorType::get({64, 1024}, Float32Type::get(&context));
  double bytes = 64.0 * 1024 * 4;
  NdSbp partial = {Sbp::split(0), Sbp::partial()};
  NdSbp summed = {Sbp::split(0), Sbp::broadcast()};
  llvm::SmallVector<double, 8> times =
      shared.boxingPositionTimes(partial, summed, type);
  REQUIRE(times.size() == 6);
  auto groupTime = [&](int64_t group, double fraction) {
    return cost::collectiveTime(
        cost::Collective::AllReduce, 4, fraction * bytes,
        cost::axisLink(cluster, cost::subMesh(mesh, 0, group), 0));
  };
  CHECK(times[0] == Approx(groupTime(0, 18.0 / 64)));
  CHECK(times[5] == Approx(groupTime(5, 7.0 / 64)));
  CHECK(times[1] == times[0]);
  CHECK(times[2] == times[5]);
  CHECK(times[0] < times[5]);
  const std::optional<cost::BoxingCost> &slowest =
      shared.boxing(partial, summed, type);
  REQUIRE(slowest);
  CHECK(slowest->time == Approx(*llvm::max_element(times)));
  // A boxing along the shares' axis spans the positions: alike on each.
  times =
      shared.boxingPositionTimes({Sbp::partial(), Sbp::broadcast()},
                                 {Sbp::broadcast(), Sbp::broadcast()}, type);
  REQUIRE(times.size() == 6);
  CHECK(times[0] == times[5]);
  CHECK(times[0] > 0);
  // Even shares have no positions of their own.
  CHECK(even->boxingPositionTimes(partial, summed, type).empty());
}

TEST_CASE("an op's work on a device is the block of it the device holds",
          "[cost-model][shares]") {
  NdSbp rows = {Sbp::split(0), Sbp::split(0)};
  // 8 rows by shares 5 : 3 along the first axis, each node's rows split in
  // two along the second: 3 and 2 of the first node's 5, 2 and 1 of 3.
  std::vector<std::vector<int64_t>> shapes = {{8, 6}};
  std::vector<const NdSbp *> layouts = {&rows};
  MeshShares shares = {{5, 3}, {}};
  auto at = [&](std::vector<int64_t> coordinate) {
    return blockWorkFraction(shapes, layouts, {2, 2}, shares, coordinate);
  };
  CHECK(at({0, 0}) == Approx(3.0 / 8));
  CHECK(at({0, 1}) == Approx(2.0 / 8));
  CHECK(at({1, 0}) == Approx(2.0 / 8));
  CHECK(at({1, 1}) == Approx(1.0 / 8));
  // Even parts that divide: the mean, localWorkFraction's.
  shapes = {{8, 6}};
  CHECK(blockWorkFraction(shapes, layouts, {2, 2}, {}, {1, 1}) ==
        Approx(localWorkFraction({}, {rows}, {2, 2})));
  // A matmul of 5 x 6 by 6 x 4 split along its rows and its contraction:
  // the left operand splits both axes, so its block is the work's; the
  // result, a partial sum along the second axis, splits only the first.
  NdSbp result = {Sbp::split(0), Sbp::partial()};
  NdSbp left = {Sbp::split(0), Sbp::split(1)};
  NdSbp right = {Sbp::broadcast(), Sbp::split(0)};
  shapes = {{5, 4}, {5, 6}, {6, 4}};
  layouts = {&result, &left, &right};
  CHECK(blockWorkFraction(shapes, layouts, {2, 2}, {}, {0, 0}) ==
        Approx(3.0 * 3 / 30));
  CHECK(blockWorkFraction(shapes, layouts, {2, 2}, {}, {1, 1}) ==
        Approx(2.0 * 3 / 30));
  // A tensor of unknown shape splits nothing.
  shapes = {{}, {5, 6}, {6, 4}};
  CHECK(blockWorkFraction(shapes, layouts, {2, 2}, {}, {0, 0}) ==
        Approx(3.0 * 3 / 30));
}

TEST_CASE_METHOD(SearchFixture,
                 "the search prices a split by its largest block, per "
                 "position along an axis of uneven shares",
                 "[cost-model][shares]") {
  module = parseSourceString<ModuleOp>(R"mlir(
func.func @main(%x: tensor<10x64xf32>, %w: tensor<64x64xf32>) -> tensor<10x64xf32> {
  %y = nn.matmul %x, %w : tensor<10x64xf32>, tensor<64x64xf32> -> tensor<10x64xf32>
  return %y : tensor<10x64xf32>
}
)mlir",
                                       &context);
  REQUIRE(module);
  Operation *matmul = nullptr;
  module->walk([&](nn::MatMulOp op) { matmul = op; });
  REQUIRE(matmul);
  std::string error;
  std::optional<ShardingCostModel> even =
      ShardingCostModel::load("mixed-a100-v100", std::vector<int64_t>{4, 8},
                              /*mixedPrecision=*/false, error);
  REQUIRE(even);
  const double flops = 2.0 * 10 * 64 * 64;
  NdSbp rows = {Sbp::split(0), Sbp::broadcast()};
  NdSbp whole = {Sbp::broadcast(), Sbp::broadcast()};
  // 10 rows over 4 nodes: the first two hold 3, the mean is 2.5.
  std::optional<ShardingCostModel::LocalWork> work =
      even->localWork(matmul, {rows, whole}, {rows});
  REQUIRE(work);
  CHECK(work->flops == Approx(flops * 3 / 10));
  CHECK(work->positionScales.empty());
  // Shares 3 : 3 : 2 : 2 along the nodes: 3 rows on each A100 node, 2 on
  // each V100 node, the most loaded A100's work and each node's beside it.
  cost::DeviceMesh mesh = even->getMesh();
  mesh.shares = {{3, 3, 2, 2}, {}};
  ShardingCostModel shared =
      ShardingCostModel::onMesh(even->getCluster(), mesh, false);
  work = shared.localWork(matmul, {rows, whole}, {rows});
  REQUIRE(work);
  CHECK(work->flops == Approx(flops * 3 / 10));
  REQUIRE(work->positionScales.size() == 4);
  CHECK(work->positionScales[3] == Approx(2.0 / 3));
  // At a device's coordinate, its own block.
  std::vector<int64_t> v100 = {3, 5};
  work = shared.localWork(matmul, {rows, whole}, {rows}, &v100);
  REQUIRE(work);
  CHECK(work->flops == Approx(flops * 2 / 10));
  CHECK(work->positionScales.empty());
}

TEST_CASE("a move between meshes is priced the same whatever was priced "
          "before it, on shifted meshes, and with a Partial source",
          "[cross-mesh]") {
  MLIRContext context;
  Type type = RankedTensorType::get({64, 4096}, Float32Type::get(&context));
  auto load = [] {
    std::string error;
    std::optional<ShardingCostModel> model = ShardingCostModel::load(
        "dgx-h100x4", std::vector<int64_t>{2, 4}, false, error);
    INFO(error);
    REQUIRE(model);
    return std::move(*model);
  };
  // dgx-h100x4: nodes of 8 devices. Meshes of 2x4 on whole nodes.
  auto meshOn = [](int64_t node) {
    cost::DeviceMesh mesh;
    mesh.shape = {2, 4};
    for (int64_t i = 0; i < 8; ++i)
      mesh.devices.push_back(node * 8 + i);
    return mesh;
  };
  cost::DeviceMesh a = meshOn(0), b = meshOn(1), c = meshOn(2), d = meshOn(3);
  NdSbp partial = {Sbp::partial(), Sbp::split(1)};
  NdSbp broadcast = {Sbp::broadcast(), Sbp::split(1)};
  NdSbp to = {Sbp::split(0), Sbp::broadcast()};
  std::string error;

  ShardingCostModel model = load();
  std::optional<CrossMeshCost> viaBroadcast =
      model.crossMesh(a, broadcast, b, to, type, std::nullopt, error);
  std::optional<CrossMeshCost> viaPartial =
      model.crossMesh(a, partial, b, to, type, std::nullopt, error);
  REQUIRE(viaBroadcast);
  REQUIRE(viaPartial);
  // The Partial source is summed first, then moved as the Broadcast one.
  CHECK(viaPartial->sent == broadcast);
  CHECK(viaPartial->moveTime == viaBroadcast->moveTime);
  CHECK(viaPartial->mode == viaBroadcast->mode);
  CHECK(viaPartial->balancing == viaBroadcast->balancing);
  const std::optional<cost::BoxingCost> &sum =
      model.boxing(partial, broadcast, type);
  REQUIRE(sum);
  CHECK(sum->time > 0);
  CHECK(viaPartial->time == Approx(viaBroadcast->time + sum->time));

  // A model that prices the Partial move first gives the same figures.
  ShardingCostModel fresh = load();
  std::optional<CrossMeshCost> first =
      fresh.crossMesh(a, partial, b, to, type, std::nullopt, error);
  REQUIRE(first);
  CHECK(first->time == viaPartial->time);
  CHECK(first->mode == viaPartial->mode);
  CHECK(first->balancing == viaPartial->balancing);

  // Meshes two nodes further on: the same move.
  std::optional<CrossMeshCost> shifted =
      model.crossMesh(c, partial, d, to, type, std::nullopt, error);
  REQUIRE(shifted);
  CHECK(shifted->time == viaPartial->time);
  CHECK(shifted->mode == viaPartial->mode);

  // A forced mode and the estimate are kept apart from the cheapest move.
  std::optional<CrossMeshCost> forced = model.crossMesh(
      a, broadcast, b, to, type, cost::CrossMeshMode::SendRecv, error);
  REQUIRE(forced);
  CHECK(forced->mode == cost::CrossMeshMode::SendRecv);
  CHECK(forced->moveTime >= viaBroadcast->moveTime);
  std::optional<CrossMeshCost> estimate =
      model.crossMeshEstimate(a, broadcast, b, to, type, error);
  REQUIRE(estimate);
  CHECK(estimate->moveTime <= viaBroadcast->moveTime);
  CHECK(model.crossMesh(a, broadcast, b, to, type, std::nullopt, error)
            ->moveTime == viaBroadcast->moveTime);

  // Meshes sharing devices: the error, each time it is asked.
  for (int i = 0; i < 2; ++i) {
    error.clear();
    CHECK_FALSE(
        model.crossMesh(a, broadcast, a, to, type, std::nullopt, error));
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("a move between meshes of different devices boxes on each side's "
          "own links",
          "[cross-mesh]") {
  MLIRContext context;
  Type type = RankedTensorType::get({32000, 1024}, Float32Type::get(&context));
  std::string error;
  // whale-v100-p100: the V100 nodes (devices 0..15) on NVLink, the P100
  // nodes (16..31) on PCIe.
  std::optional<ShardingCostModel> v100 = ShardingCostModel::load(
      "whale-v100-p100", std::vector<int64_t>{2, 8}, false, error);
  INFO(error);
  REQUIRE(v100);
  cost::DeviceMesh p100Mesh;
  p100Mesh.shape = {2, 8};
  for (int64_t device = 16; device < 32; ++device)
    p100Mesh.devices.push_back(device);
  ShardingCostModel p100 =
      ShardingCostModel::onMesh(v100->getCluster(), p100Mesh, false);
  // A partial gradient on the P100s, summed there, then moved.
  NdSbp partial = {Sbp::partial(), Sbp::partial()};
  NdSbp broadcast = {Sbp::broadcast(), Sbp::broadcast()};
  const std::optional<cost::BoxingCost> &onPcie =
      p100.boxing(partial, broadcast, type);
  const std::optional<cost::BoxingCost> &onNvlink =
      v100->boxing(partial, broadcast, type);
  REQUIRE(onPcie);
  REQUIRE(onNvlink);
  CHECK(onPcie->time > 4 * onNvlink->time);
  std::optional<CrossMeshCost> sided =
      v100->crossMesh(p100Mesh, partial, v100->getMesh(), broadcast, type,
                      std::nullopt, error, {&p100, &*v100});
  REQUIRE(sided);
  CHECK(sided->beforeTime == onPcie->time);
  CHECK(sided->time == Approx(onPcie->time + sided->moveTime));
  // Priced by the asking model alone (meshes of one kind), the sum runs at
  // the V100s' pace; the move between the meshes is the same.
  std::optional<CrossMeshCost> alone = v100->crossMesh(
      p100Mesh, partial, v100->getMesh(), broadcast, type, std::nullopt, error);
  REQUIRE(alone);
  CHECK(alone->beforeTime == onNvlink->time);
  CHECK(alone->moveTime == sided->moveTime);
}
