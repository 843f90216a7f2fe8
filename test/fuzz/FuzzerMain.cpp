//===- FuzzerMain.cpp - A fuzz target without libFuzzer -------------------===//
//
// The main of a fuzz target in a build without LLVM_USE_SANITIZE_COVERAGE:
// runs the target once on each file named on the command line, as
// libFuzzer does with files, so that ctest replays the regression inputs
// in every build (add_llvm_fuzzer's DUMMY_MAIN).
//
//===----------------------------------------------------------------------===//

#include "llvm/FuzzMutate/FuzzerCLI.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char *argv[]) {
  return llvm::runFuzzerOnInputs(argc, argv, LLVMFuzzerTestOneInput);
}
