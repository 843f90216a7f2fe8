//===- CompareOutputs.cpp - two runs' outputs, element by element ---------===//
//
// parplan-compare-outputs EXPECTED ACTUAL [TOLERANCE]: every .npy file
// under EXPECTED (parplan-run --outputs) against the file of the same
// relative path under ACTUAL. Element i passes when
// |actual - expected| <= TOLERANCE * (|expected| + rms(expected)): relative
// to the element, with the tensor's scale as a floor for elements near
// zero. Prints a line per file (its largest difference) and exits 1 when
// a file is missing, of another shape or type, or an element fails.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/OutputFile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace parplan::runtime;

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(
        stderr, "usage: parplan-compare-outputs EXPECTED ACTUAL [TOLERANCE]\n");
    return 2;
  }
  std::filesystem::path expectedRoot = argv[1], actualRoot = argv[2];
  double tolerance = argc == 4 ? std::atof(argv[3]) : 1e-5;
  std::vector<std::filesystem::path> files;
  std::error_code failure;
  for (auto it =
           std::filesystem::recursive_directory_iterator(expectedRoot, failure);
       !failure && it != std::filesystem::recursive_directory_iterator();
       it.increment(failure))
    if (it->is_regular_file() && it->path().extension() == ".npy")
      files.push_back(std::filesystem::relative(it->path(), expectedRoot));
  if (failure || files.empty()) {
    std::fprintf(stderr, "compare: no .npy files under '%s'\n", argv[1]);
    return 1;
  }
  std::sort(files.begin(), files.end());
  bool same = true;
  for (const std::filesystem::path &file : files) {
    Tensor expected, actual;
    Status status = readNpy((expectedRoot / file).string(), expected);
    if (status.ok())
      status = readNpy((actualRoot / file).string(), actual);
    if (status.ok() && (expected.shape() != actual.shape() ||
                        expected.dtype() != actual.dtype()))
      status = Status::failure(toString(actual.shape()) + " " +
                               toString(actual.dtype()) + ", expected " +
                               toString(expected.shape()) + " " +
                               toString(expected.dtype()));
    if (!status.ok()) {
      std::printf("compare: %s: %s\n", file.c_str(), status.error.c_str());
      same = false;
      continue;
    }
    double squares = 0;
    for (int64_t i = 0; i < expected.numElements(); ++i)
      squares += expected.get(i) * expected.get(i);
    double scale =
        expected.numElements() > 0
            ? std::sqrt(squares / static_cast<double>(expected.numElements()))
            : 0;
    double largest = 0;
    int64_t failed = 0;
    for (int64_t i = 0; i < expected.numElements(); ++i) {
      double difference = std::fabs(actual.get(i) - expected.get(i));
      largest = std::max(largest, difference);
      if (!(difference <= tolerance * (std::fabs(expected.get(i)) + scale)))
        ++failed;
    }
    std::printf("compare: %s: %lld elements, largest difference %.3g (rms "
                "%.3g), %lld beyond %g\n",
                file.c_str(), static_cast<long long>(expected.numElements()),
                largest, scale, static_cast<long long>(failed), tolerance);
    same = same && failed == 0;
  }
  return same ? 0 : 1;
}
