//===- RuntimeKernelOpsTest.cpp - the kernel table from the op definitions ===//
//
// KernelOps.h is generated from NNOps.td and NNTrainingOps.td: the ids and
// names agree both ways, every kernel has a handler whose counts are the
// table's, the defaults are the .td's, and every handler reads exactly the
// attributes its op declares (an attribute added to an op that no handler
// reads fails here, as does a handler reading one the op lacks).
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/KernelCall.h"
#include "parplan/Runtime/KernelOps.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

using namespace parplan::runtime;

TEST_CASE("kernel table: ids and names", "[runtime]") {
  const std::vector<KernelOp> &ops = kernelOps();
  // 67 nn ops and the two shard variants at the time of writing; the exact
  // count moves with the dialect.
  REQUIRE(ops.size() > 60);
  std::set<std::string> names;
  for (size_t i = 0; i < ops.size(); ++i) {
    INFO(ops[i].name);
    CHECK(static_cast<size_t>(ops[i].id) == i);
    CHECK(names.insert(ops[i].name).second);
    std::optional<KernelId> id = lookupKernelId(ops[i].name);
    REQUIRE(id);
    CHECK(*id == ops[i].id);
    CHECK(std::string(toString(*id)) == ops[i].name);
  }
  CHECK(*lookupKernelId("matmul") == KernelId::MatMul);
  CHECK(*lookupKernelId("gather_shard") == KernelId::GatherShard);
  // Values are not kernels, and the dialect prefix is not part of a name.
  CHECK_FALSE(lookupKernelId("param"));
  CHECK_FALSE(lookupKernelId("input"));
  CHECK_FALSE(lookupKernelId("constant"));
  CHECK_FALSE(lookupKernelId("nn.matmul"));
  CHECK_FALSE(lookupKernelId(""));
}

TEST_CASE("kernel table: the op definitions' attributes", "[runtime]") {
  const KernelOp &matmul = kernelOp(KernelId::MatMul);
  CHECK(matmul.numOperands == 2);
  CHECK(matmul.numOptionalOperands == 0);
  CHECK(matmul.numResults == 1);
  REQUIRE(matmul.attrs.size() == 3);
  CHECK(std::string(matmul.attrs[0].name) == "transpose_lhs");
  CHECK(matmul.attrs[0].type == AttrType::Unit);
  CHECK(matmul.findAttr("alpha")->type == AttrType::F32);
  CHECK_FALSE(matmul.findAttr("alpha")->byDefault);
  CHECK(matmul.findAttr("beta") == nullptr);

  // An F32Attr's default is the float MLIR parses it into.
  const KernelAttr *epsilon = kernelOp(KernelId::LayerNorm).findAttr("epsilon");
  REQUIRE(epsilon);
  REQUIRE(epsilon->byDefault);
  CHECK(*epsilon->byDefault->getFloat() ==
        static_cast<double>(static_cast<float>(1.0e-05)));
  CHECK(*epsilon->byDefault->getFloat() != 1.0e-05);

  const KernelAttr *approximate =
      kernelOp(KernelId::Gelu).findAttr("approximate");
  REQUIRE(approximate);
  CHECK(approximate->type == AttrType::Enum);
  CHECK(approximate->cases == std::vector<std::string>{"none", "tanh"});
  CHECK(*approximate->byDefault->getString() == "none");

  const KernelOp &adam = kernelOp(KernelId::AdamUpdate);
  CHECK(adam.findAttr("lr")->required);
  CHECK_FALSE(adam.findAttr("beta2")->required);
  CHECK(*adam.findAttr("beta2")->byDefault->getFloat() == 0.999);

  const KernelOp &concat = kernelOp(KernelId::Concat);
  CHECK(concat.numOperands == -1);
  CHECK(concat.findAttr("axis")->required);
  CHECK(kernelOp(KernelId::Split).numResults == -1);
  CHECK(kernelOp(KernelId::Dropout).numOptionalOperands == 2);

  // Lowering's forms: the accumulator and the step's input; a block's place.
  CHECK(kernelOp(KernelId::Accumulate).numOperands == 2);
  CHECK(kernelOp(KernelId::Dropout).findAttr("offset"));
  const KernelOp &shard = kernelOp(KernelId::GatherShard);
  CHECK(shard.numOperands == kernelOp(KernelId::Gather).numOperands);
  CHECK(shard.findAttr("axis"));
  CHECK(shard.findAttr("extent")->required);
}

namespace {

/// A value of `type` for a required attribute: what a handler reads.
AttrValue someValue(const KernelAttr &attr) {
  switch (attr.type) {
  case AttrType::I64:
    return AttrValue(int64_t{0});
  case AttrType::F32:
  case AttrType::F64:
    return AttrValue(0.5);
  case AttrType::Bool:
  case AttrType::Unit:
    return AttrValue(true);
  case AttrType::String:
    return AttrValue("x");
  case AttrType::Enum:
    return AttrValue(attr.cases.front());
  case AttrType::I64Array:
    return AttrValue(std::vector<int64_t>{0, 0});
  }
  return AttrValue();
}

} // namespace

TEST_CASE("kernel table: each handler reads its op's attributes", "[runtime]") {
  for (const KernelOp &op : kernelOps()) {
    INFO("nn." << op.name);
    const KernelSignature *signature = lookupKernel(op.id);
    REQUIRE(signature);
    CHECK(signature->numOperands == op.numOperands);
    CHECK(signature->numOptionalOperands == op.numOptionalOperands);
    CHECK(signature->numResults == op.numResults);

    // Every attribute given, on shape-only [2, 2, 2, 2] tensors: whatever
    // a handler makes of these values, it must not read an attribute the
    // op lacks, nor leave one unread when nothing else failed first.
    AttrMap attrs;
    for (const KernelAttr &attr : op.attrs)
      attrs[attr.name] = someValue(attr);
    std::vector<Tensor> tensors;
    int numOperands = op.numOperands < 0 ? 2 : op.numOperands;
    int numResults = op.numResults < 0 ? 2 : op.numResults;
    for (int i = 0; i < numOperands + numResults; ++i)
      tensors.push_back(Tensor::withoutStorage(DType::F32, {2, 2, 2, 2}));
    std::vector<const Tensor *> operands;
    std::vector<Tensor *> results;
    for (int i = 0; i < numOperands; ++i)
      operands.push_back(&tensors[i]);
    for (int i = 0; i < numResults; ++i)
      results.push_back(&tensors[numOperands + i]);
    AttrMap resolved;
    Status status =
        resolveKernelAttrs(op.id, attrs, operands, results, resolved);
    INFO(status.error);
    CHECK(status.error.find("does not declare") == std::string::npos);
    CHECK(status.error.find("which the op declares as") == std::string::npos);
    CHECK(status.error.find("does not read") == std::string::npos);
    if (status.ok())
      for (const KernelAttr &attr : op.attrs)
        CHECK(resolved.count(attr.name));
  }
}

TEST_CASE("kernel table: an unknown attribute and a wrong type", "[runtime]") {
  Tensor a = Tensor::withoutStorage(DType::F32, {2, 3});
  Tensor b = Tensor::withoutStorage(DType::F32, {3, 2});
  Tensor out = Tensor::withoutStorage(DType::F32, {2, 2});
  AttrMap resolved;
  CHECK(resolveKernelAttrs(KernelId::MatMul, {{"trans_a", true}}, {&a, &b},
                           {&out}, resolved)
            .error == "nn.matmul: unknown attribute 'trans_a'");
  CHECK(resolveKernelAttrs(KernelId::MatMul, {{"alpha", int64_t{2}}}, {&a, &b},
                           {&out}, resolved)
            .error == "nn.matmul: attribute 'alpha' must be a float, not int");
  REQUIRE(resolveKernelAttrs(KernelId::MatMul, {}, {&a, &b}, {&out}, resolved)
              .ok());
  // Defaults filled; an optional attribute without one stays absent.
  CHECK(*resolved.at("transpose_lhs").getBool() == false);
  CHECK(resolved.count("alpha") == 0);
}
