//===- LocalShapeTest.cpp - nn interface and sbp attributes ---------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/InitAllDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace parplan;

namespace {
struct Fixture {
  Fixture() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  MLIRContext context;
};
} // namespace

TEST_CASE_METHOD(Fixture, "nn ops slice their results by the shared math") {
  const char *source = R"mlir(
    func.func @f(%x: tensor<10x6xf32>, %w: tensor<6x8xf32>) -> tensor<10x8xf32> {
      %y = nn.matmul %x, %w : tensor<10x6xf32>, tensor<6x8xf32> -> tensor<10x8xf32>
      return %y : tensor<10x8xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  REQUIRE(module);
  nn::MatMulOp matmul;
  module->walk([&](nn::MatMulOp op) { matmul = op; });
  REQUIRE(matmul);
  auto shardable = cast<nn::ShardableOpInterface>(matmul.getOperation());

  SmallVector<Type> local;
  // [S(0), S(1)] on a 4x2 mesh: rows 10 -> 3,3,2,2 and columns 8 -> 4,4.
  REQUIRE(succeeded(shardable.getLocalResultTypes(
      {NdSbp{Sbp::split(0), Sbp::split(1)}}, {4, 2}, {3, 1}, local)));
  REQUIRE(local.size() == 1);
  CHECK(cast<RankedTensorType>(local[0]).getShape() == ArrayRef<int64_t>{2, 4});

  local.clear();
  REQUIRE(succeeded(shardable.getLocalResultTypes(
      {NdSbp{Sbp::partial(), Sbp::broadcast()}}, {4, 2}, {0, 0}, local)));
  CHECK(cast<RankedTensorType>(local[0]).getShape() ==
        ArrayRef<int64_t>{10, 8});

  // A layout that does not fit the mesh is an error, not a guess.
  local.clear();
  context.getDiagEngine().registerHandler(
      [](Diagnostic &) { return success(); });
  CHECK(failed(shardable.getLocalResultTypes({NdSbp{Sbp::split(0)}}, {4, 2},
                                             {0, 0}, local)));
  CHECK(failed(
      shardable.getLocalResultTypes({NdSbp{Sbp::split(2)}}, {4}, {0}, local)));
  CHECK(failed(
      shardable.getLocalResultTypes({NdSbp{Sbp::split(0)}}, {4}, {4}, local)));
}

TEST_CASE_METHOD(Fixture, "sbp attributes convert to and from Support") {
  NdSbp sbp = {Sbp::split(1), Sbp::broadcast(), Sbp::partial(ReduceKind::Min)};
  ArrayAttr attr = sbp::getNdSbpAttr(&context, sbp);
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  CHECK(text == "[#sbp.s<1>, #sbp.b, #sbp.p<min>]");
  CHECK(sbp::toNdSbp(attr) == sbp);
  CHECK_FALSE(sbp::toSbp(UnitAttr::get(&context)));
}
