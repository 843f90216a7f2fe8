//===- parplan-run.cpp - run a plan file under mpirun ---------------------===//
//
// mpirun -np N parplan-run plan.pb [--steps 5] [--seed S] [--one-batch]: rank i
// runs device i's program (docs/cli.md). Every rank reads and checks the whole
// plan, so a bad plan fails the same way everywhere: rank 0 prints the
// error and every rank exits 1. A rank that fails while running prints its
// error and calls MPI_Abort, so that the others stop instead of waiting
// for it in a collective.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Executor.h"
#include "parplan/Runtime/MpiCommunicator.h"
#include "parplan/Runtime/PlanFile.h"

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

using namespace parplan;
using namespace parplan::runtime;

namespace {

/// Stops every rank: MPI_Abort never returns.
[[noreturn]] void abortAll(int rank, const std::string &error) {
  std::fprintf(stderr, "parplan-run: rank %d: %s\n", rank, error.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

int run(int argc, char **argv, int rank, int worldSize) {
  CLI::App app("Runs a parplan plan file: one MPI rank per device.",
               "parplan-run");
  std::string planPath;
  int64_t steps = 5;
  std::optional<uint64_t> seed;
  app.add_option("plan", planPath, "the plan file (parplan plan -o)")
      ->required();
  app.add_option("--steps", steps, "training steps to run")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed,
                 "seed of the synthetic weights and batches (default: the "
                 "plan's)");
  bool oneBatch = false;
  app.add_flag("--one-batch", oneBatch,
               "train on the first synthetic batch at every step (the loss "
               "then falls as the model learns it)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    // Only rank 0 speaks; every rank exits with CLI11's code.
    if (rank == 0)
      return app.exit(error);
    return error.get_exit_code() == 0 ? 0 : 1;
  }

  auto fail = [&](const std::string &error) {
    if (rank == 0)
      std::fprintf(stderr, "parplan-run: %s\n", error.c_str());
    return 1;
  };
  plan::Plan planMessage;
  if (Status status = readPlanFile(planPath, planMessage); !status.ok())
    return fail(status.error);
  if (Status status = checkPlan(planMessage); !status.ok())
    return fail("plan file " + planPath + " is invalid: " + status.error);
  if (planMessage.programs_size() != worldSize)
    return fail("plan file " + planPath + " has " +
                std::to_string(planMessage.programs_size()) +
                " programs but runs on " + std::to_string(worldSize) +
                " rank(s); run it with mpirun -np " +
                std::to_string(planMessage.programs_size()));

  std::unique_ptr<Transport> communicator = createMpiCommunicator();
  {
    Executor executor;
    if (Status status = executor.load(planMessage, rank, *communicator);
        !status.ok())
      abortAll(rank, status.error);
    if (seed)
      executor.setSeed(*seed);
    if (Status status = executor.initialize(); !status.ok())
      abortAll(rank, status.error);
    for (int64_t step = 0; step < steps; ++step) {
      auto start = std::chrono::steady_clock::now();
      double loss = 0;
      if (Status status = executor.step(oneBatch ? 0 : step, &loss);
          !status.ok())
        abortAll(rank, status.error);
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      if (rank != 0)
        continue;
      if (std::isnan(loss) && executor.program().loss() < 0)
        std::printf("step %lld: %.1f ms\n", static_cast<long long>(step + 1),
                    ms);
      else
        std::printf("step %lld: loss %.6f (%.1f ms)\n",
                    static_cast<long long>(step + 1), loss, ms);
      std::fflush(stdout);
    }
  }
  // Sub-communicators are freed before MPI_Finalize.
  communicator.reset();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, worldSize = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  int code = run(argc, argv, rank, worldSize);
  MPI_Finalize();
  return code;
}
