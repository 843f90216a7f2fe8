//===- ClusterAttrTest.cpp - #sbp.cluster and ClusterAnalysis -------------===//

#include "MlirTestContext.h"

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Presets.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/AnalysisManager.h"

using namespace mlir;
using namespace parplan;
using parplan::testing::MlirTestContext;

namespace {

std::string printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream out(text);
  attr.print(out);
  return text;
}

const char *const kFourDevices = R"(name: four
device_types:
  - name: small
    memory: 3 GB
    memory_bandwidth: 900 GB/s
    peak_flops: {f32: 19.5 TFLOP/s, bf16: 312 TFLOP/s}
nodes:
  - {name: box, device_type: small, devices: 4}
links:
  intra_node: {bandwidth: 300 GB/s, latency: 3 us}
)";

} // namespace

TEST_CASE_METHOD(MlirTestContext,
                 "a cluster is interned: equal clusters share one attribute",
                 "[cluster-attr]") {
  std::string error;
  sbp::ClusterAttr first =
      sbp::ClusterAttr::fromPreset(&context, "dgx-h100x2", error);
  sbp::ClusterAttr second =
      sbp::ClusterAttr::resolve(&context, "dgx-h100x2", error);
  REQUIRE(first);
  REQUIRE(first == second);
  REQUIRE(first.getCluster() == second.getCluster());
  REQUIRE(first.getPreset() == "dgx-h100x2");
  REQUIRE(first.getCluster()->numDevices() == 16);

  // The same figures under no name are the same cluster, printed as JSON.
  sbp::ClusterAttr unnamed =
      sbp::ClusterAttr::get(&context, *cost::preset("dgx-h100x2"));
  REQUIRE(unnamed != first);
  REQUIRE(unnamed.getCluster() == first.getCluster());
  REQUIRE(printed(unnamed).find("#sbp.cluster<json = ") == 0);

  sbp::ClusterAttr other =
      sbp::ClusterAttr::fromPreset(&context, "a100-4node", error);
  REQUIRE(other.getCluster() != first.getCluster());

  REQUIRE_FALSE(sbp::ClusterAttr::fromPreset(&context, "dgx-h1000", error));
  REQUIRE(error.find("unknown cluster preset 'dgx-h1000'") == 0);
}

TEST_CASE_METHOD(MlirTestContext,
                 "a cluster prints and parses back to the figures it holds",
                 "[cluster-attr]") {
  std::string error;
  std::optional<cost::Cluster> file =
      cost::parseCluster(kFourDevices, "four.yaml", error);
  REQUIRE(file);
  sbp::ClusterAttr attr = sbp::ClusterAttr::get(&context, *file);
  std::string text = printed(attr);
  INFO(text);
  REQUIRE(text.find('\n') == std::string::npos);
  Attribute parsed = parseAttribute(text, &context);
  REQUIRE(parsed == attr);
  const cost::Cluster &held = *attr.getCluster();
  REQUIRE(held.name == "four");
  REQUIRE(held.numDevices() == 4);
  REQUIRE(held.deviceTypes.front().memoryBytes == 3e9);
  REQUIRE(cost::writeClusterJson(held) == cost::writeClusterJson(*file));

  Attribute preset =
      parseAttribute("#sbp.cluster<preset = \"aws-p3-5node\">", &context);
  REQUIRE(printed(preset) == "#sbp.cluster<preset = \"aws-p3-5node\">");
}

TEST_CASE_METHOD(MlirTestContext,
                 "ClusterAnalysis reads the module's cluster, and only it",
                 "[cluster-attr]") {
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  {
    ClusterAnalysis none(*module);
    REQUIRE(none.getCluster() == nullptr);
    REQUIRE(none.require(*module, "sbp-assign") == nullptr);
    REQUIRE(diagnostics.find("sbp-assign: the module carries no cluster "
                             "(sbp.cluster)") != std::string::npos);
  }
  std::string error;
  REQUIRE(attachCluster(*module, "a100-4node", error));
  ClusterAnalysis attached(*module);
  REQUIRE(attached.getCluster() == clusterAttrOf(*module).getCluster());
  REQUIRE(attached.getCluster()->name == "a100-4node");
  AnalysisManager::PreservedAnalyses nothingPreserved;
  REQUIRE_FALSE(attached.isInvalidated(nothingPreserved));
  // Attaching another cluster is what makes the analysis stale.
  REQUIRE(attachCluster(*module, "dgx-h100", error));
  REQUIRE(attached.isInvalidated(nothingPreserved));
  REQUIRE_FALSE(attachCluster(*module, "no-such-cluster", error));
  REQUIRE(clusterAttrOf(*module).getPreset() == "dgx-h100");
}
