//===- parplan.cpp - the parplan command line -----------------------------===//

#include "Commands.h"

#include <CLI/CLI.hpp>

int main(int argc, char **argv) {
  CLI::App app{"parplan: ONNX model + cluster -> per-device parallelization "
               "plan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parplan 0.1.0");

  parplan::cli::CheckOptions check;
  CLI::App *checkCommand = app.add_subcommand(
      "check", "Parse and verify an IR file of the nn, sbp and plan dialects, "
               "and summarize it");
  checkCommand->add_option("input", check.input, "IR file (.mlir)")->required();
  checkCommand->add_flag("--print-ir", check.printIR,
                         "Print the verified IR after the summary");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    // --help and --version exit 0; a usage error exits 2, as in getopt tools.
    return app.exit(error) == 0 ? 0 : 2;
  }
  if (checkCommand->parsed())
    return parplan::cli::runCheck(check);
  return 1;
}
