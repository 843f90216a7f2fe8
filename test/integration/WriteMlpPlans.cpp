//===- WriteMlpPlans.cpp - plan files for the mpirun test -----------------===//
//
// Writes the MLP training plan of MlpPlan.h for 1, 2 and 3 devices (the
// last with uneven batch blocks) as DIR/mlp-N.pb, for mpirun-mlp.sh.
//
//===----------------------------------------------------------------------===//

#include "MlpPlan.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: parplan-write-mlp-plans DIR\n");
    return 2;
  }
  for (int64_t devices : {1, 2, 3}) {
    parplan::plan::Plan plan =
        parplan::testing::buildMlpPlan(devices, /*batch=*/16, /*lr=*/0.5);
    if (parplan::runtime::Status status = parplan::runtime::checkPlan(plan);
        !status.ok()) {
      std::fprintf(stderr, "%s\n", status.error.c_str());
      return 1;
    }
    std::string path =
        std::string(argv[1]) + "/mlp-" + std::to_string(devices) + ".pb";
    if (parplan::runtime::Status status =
            parplan::runtime::writePlanFile(plan, path);
        !status.ok()) {
      std::fprintf(stderr, "%s\n", status.error.c_str());
      return 1;
    }
  }
  return 0;
}
