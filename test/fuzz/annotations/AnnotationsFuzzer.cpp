//===- AnnotationsFuzzer.cpp - Fuzz target of the annotations reader ------===//
//
// Each input is read as a YAML and as a JSON annotations file
// (parseAnnotations). A refusal is one line naming the file; the pins of
// a file read are matched against a few node names, as the compile
// matches every node's, so that a node glob that matches in exponential
// time shows as a hang.
//
//===----------------------------------------------------------------------===//

#include "FuzzContract.h"

#include "parplan/Cost/Annotations.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace parplan;

namespace {

void readAs(llvm::StringRef text, const char *path) {
  std::string error;
  std::optional<Annotations> annotations = parseAnnotations(text, path, error);
  if (!annotations) {
    fuzz::requireOneLineError(error, path);
    return;
  }
  for (const char *node : {"", "/encoder/layer.0/attention/MatMul", "fc1",
                           "aaaaaaaaaaaaaaaaaaaa"
                           "aaaaaaaaaaaaaaaaaaab"})
    (void)annotations->pinsFor(node);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  readAs(text, "fuzz-annotations.yaml");
  readAs(text, "fuzz-annotations.json");
  return 0;
}
