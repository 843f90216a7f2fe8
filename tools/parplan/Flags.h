//===- Flags.h - the flags several parplan commands share -------*- C++ -*-===//
//
// The command-line flags of the training step, the layout and symbolic
// dimensions, declared once for every command that takes them.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TOOLS_PARPLAN_FLAGS_H
#define PARPLAN_TOOLS_PARPLAN_FLAGS_H

#include "Commands.h"

#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace parplan::cli {

/// The flags of nn-autodiff's options, for every command that builds a
/// training step. With `autoMicroBatches` (compile), `--micro-batches auto`
/// leaves the count to the search and sets it. Returns the options added.
std::vector<CLI::Option *> addTrainingOptions(CLI::App *command,
                                              TrainingOptions &training,
                                              bool *autoMicroBatches = nullptr);

/// `--dim NAME=VALUE` and `--input-value NAME=V[,V...]`, repeatable. One
/// value per flag: CLI11 lets a vector option take every following
/// argument, which would swallow the model path in `import --dim batch=32
/// model.onnx`.
void addImportBindingOptions(CLI::App *command, ImportBindings &bindings);

/// The flags of sbp-assign's layout: cluster, mesh, strategy, pins.
void addLayoutOptions(CLI::App *command, LayoutOptions &layout);

} // namespace parplan::cli

#endif // PARPLAN_TOOLS_PARPLAN_FLAGS_H
