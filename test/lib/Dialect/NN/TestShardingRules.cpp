//===- TestShardingRules.cpp - print the sharding rules of nn ops ---------===//
//
// -test-nn-sbp-rules: attaches to every nn op the candidate signatures its
// ShardableOpInterface reports, as `sbp_rules = ["(S(0), B) -> S(0)", ...]`,
// so lit tests check each rule; an op without a rule is an error.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

std::string listString(const std::vector<parplan::Sbp> &sbps) {
  std::string text;
  for (size_t i = 0; i < sbps.size(); ++i)
    text += (i ? ", " : "") + sbps[i].str();
  return text;
}

struct TestShardingRulesPass
    : PassWrapper<TestShardingRulesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestShardingRulesPass)

  StringRef getArgument() const final { return "test-nn-sbp-rules"; }
  StringRef getDescription() const final {
    return "Attach every nn op's candidate SBP signatures (testing only)";
  }

  void runOnOperation() override {
    Builder builder(&getContext());
    WalkResult result =
        getOperation().walk([&](parplan::nn::ShardableOpInterface op) {
          SmallVector<parplan::SbpSignature> signatures;
          if (failed(op.getSbpSignatures(signatures))) {
            op->emitError() << "has no sharding rule";
            return WalkResult::interrupt();
          }
          SmallVector<Attribute> rules;
          for (const parplan::SbpSignature &signature : signatures)
            rules.push_back(
                builder.getStringAttr("(" + listString(signature.operands) +
                                      ") -> " + listString(signature.results)));
          op->setAttr("sbp_rules", builder.getArrayAttr(rules));
          return WalkResult::advance();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

namespace parplan::test {
void registerTestShardingRulesPass() {
  PassRegistration<TestShardingRulesPass>();
}
} // namespace parplan::test
