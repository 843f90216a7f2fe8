//===- ClusterFileFuzzer.cpp - Fuzz target of the cluster reader ----------===//
//
// Each input is read as a YAML and as a JSON cluster file (parseCluster).
// A refusal is one line naming the file; a cluster read is written back
// (YAML and JSON) and reads again to the same file: the writer's output is
// a file the reader takes, the same figures every time.
//
//===----------------------------------------------------------------------===//

#include "FuzzContract.h"

#include "parplan/Cost/ClusterFile.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace parplan;

namespace {

void readBack(const std::string &text, const char *path) {
  std::string error;
  std::optional<cost::Cluster> again = cost::parseCluster(text, path, error);
  fuzz::require(again.has_value(),
                "a cluster written by parplan does not read back", error);
  fuzz::require(cost::writeClusterYaml(*again) == text ||
                    cost::writeClusterJson(*again) == text,
                "a cluster read back writes other figures", text);
}

void readAs(llvm::StringRef text, const char *path) {
  std::string error;
  std::optional<cost::Cluster> cluster = cost::parseCluster(text, path, error);
  if (!cluster) {
    fuzz::requireOneLineError(error, path);
    return;
  }
  readBack(cost::writeClusterYaml(*cluster), "written.yaml");
  readBack(cost::writeClusterJson(*cluster), "written.json");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  readAs(text, "fuzz-cluster.yaml");
  readAs(text, "fuzz-cluster.json");
  return 0;
}
