//===- OpCostTest.cpp - FLOPs and bytes of nn ops -------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Zoo/Zoo.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace parplan;

namespace {

struct CostFixture {
  CostFixture() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Costs of the ops of a one-function module, in order.
  std::vector<OpCost> costs(const char *source) {
    module = parseSourceString<ModuleOp>(source, &context);
    REQUIRE(module);
    std::vector<OpCost> result;
    module->walk([&](nn::ShardableOpInterface op) {
      FailureOr<OpCost> cost = op.getCost();
      REQUIRE(succeeded(cost));
      result.push_back(*cost);
    });
    return result;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

} // namespace

TEST_CASE_METHOD(CostFixture, "every nn op reports FLOPs and bytes") {
  std::vector<OpCost> c = costs(R"mlir(
    func.func @f(%x: tensor<8x128x768xf32>, %w: tensor<768x3072xf32>,
                 %ids: tensor<8x128xi64>, %table: tensor<50000x768xf32>,
                 %img: tensor<2x3x32x32xf32>, %k: tensor<16x3x3x3xf32>,
                 %b: tensor<16xf32>) {
      %0 = nn.matmul %x, %w : tensor<8x128x768xf32>, tensor<768x3072xf32> -> tensor<8x128x3072xf32>
      %1 = nn.gelu %0 : tensor<8x128x3072xf32>
      %2 = nn.softmax %0 : tensor<8x128x3072xf32>
      %3 = nn.gather %table, %ids : tensor<50000x768xf32>, tensor<8x128xi64> -> tensor<8x128x768xf32>
      %4 = nn.reshape %3 : tensor<8x128x768xf32> -> tensor<1024x768xf32>
      %5 = nn.conv %img, %k, %b strides = [1, 1] pads = [1, 1, 1, 1] dilations = [1, 1] group = 1 : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<2x16x32x32xf32>
      %6 = nn.max_pool %5 kernel = [2, 2] strides = [2, 2] pads = [0, 0, 0, 0] dilations = [1, 1] : tensor<2x16x32x32xf32> -> tensor<2x16x16x16xf32>
      %7 = nn.reduce_sum %x axes = [-1] : tensor<8x128x768xf32> -> tensor<8x128x1xf32>
      %8 = nn.add %x, %x : tensor<8x128x768xf32>, tensor<8x128x768xf32> -> tensor<8x128x768xf32>
      return
    })mlir");
  REQUIRE(c.size() == 9);
  double tokens = 8 * 128;
  // matmul: 2 m n k; reads both operands, writes the result.
  CHECK(c[0].flops == 2 * tokens * 3072 * 768);
  CHECK(c[0].bytesRead == 4 * (tokens * 768 + 768 * 3072));
  CHECK(c[0].bytesWritten == 4 * tokens * 3072);
  CHECK(c[1].flops == 8 * tokens * 3072);
  CHECK(c[2].flops == 5 * tokens * 3072);
  // A gather reads the rows it picks and the indices, not the table.
  CHECK(c[3].flops == 0);
  CHECK(c[3].bytesRead == 4 * tokens * 768 + 8 * tokens);
  // A reshape is a view.
  CHECK(c[4].bytesRead == 0);
  CHECK(c[4].bytesWritten == 0);
  // conv: 2 * outputs * (C / group) * kernel, plus the bias.
  double outputs = 2 * 16 * 32 * 32;
  CHECK(c[5].flops == 2 * outputs * 3 * 3 * 3 + outputs);
  CHECK(c[6].flops == 2 * 16 * 16 * 16 * 4);
  CHECK(c[7].flops == tokens * 768);
  CHECK(c[8].flops == tokens * 768);
  CHECK(c[8].bytesRead == 2 * 4 * tokens * 768);
}

TEST_CASE_METHOD(CostFixture, "values that enter the program cost nothing") {
  std::vector<OpCost> c = costs(R"mlir(
    func.func @f() {
      %0 = nn.param "w" : tensor<1024x1024xf32>
      %1 = nn.input "x" : tensor<8x1024xf32>
      %2 = nn.constant dense<1.0> : tensor<4xf32>
      return
    })mlir");
  REQUIRE(c.size() == 3);
  for (const OpCost &cost : c) {
    CHECK(cost.flops == 0);
    CHECK(cost.bytesRead + cost.bytesWritten == 0);
  }
}

TEST_CASE_METHOD(CostFixture,
                 "an imported GPT's matmuls cost 24bsh^2 + 4bs^2h per layer "
                 "plus the LM head") {
  // Megatron-LM (SC 2021): a transformer layer's forward
  // matmuls take 24 b s h^2 + 4 b s^2 h FLOPs.
  zoo::ModelSpec spec;
  spec.kind = zoo::ModelKind::Gpt;
  spec.gpt.layers = 3;
  spec.gpt.hidden = 64;
  spec.gpt.heads = 4;
  spec.gpt.seq = 16;
  spec.gpt.vocab = 100;
  spec.common.batch = 2;
  spec.common.opset = 13;
  std::string bytes = zoo::build(spec).model.SerializeAsString();
  std::string error;
  module = importOnnx(bytes, "gpt.onnx", context, OnnxImportOptions{}, error);
  REQUIRE(module);
  PassManager pm(&context);
  addCanonicalFormPasses(pm);
  REQUIRE(succeeded(pm.run(*module)));

  double matmulFlops = 0;
  module->walk([&](nn::MatMulOp op) { matmulFlops += op.getCost()->flops; });
  double b = 2, s = 16, h = 64, v = 100, l = 3;
  CHECK(matmulFlops ==
        l * (24 * b * s * h * h + 4 * b * s * s * h) + 2 * b * s * h * v);
}
