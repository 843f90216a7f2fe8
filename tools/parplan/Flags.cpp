//===- Flags.cpp - the flags several parplan commands share ---------------===//

#include "Flags.h"

#include <CLI/CLI.hpp>

namespace {

/// The options `command` gained after its first `before`.
std::vector<CLI::Option *> addedSince(CLI::App *command, size_t before) {
  std::vector<CLI::Option *> all = command->get_options();
  return std::vector<CLI::Option *>(all.begin() + static_cast<long>(before),
                                    all.end());
}

} // namespace

std::vector<CLI::Option *>
parplan::cli::addTrainingOptions(CLI::App *command, TrainingOptions &training,
                                 bool *autoMicroBatches) {
  size_t before = command->get_options().size();
  command
      ->add_option("--loss", training.loss,
                   "cross-entropy (default, against integer labels) or mse")
      ->check(CLI::IsMember({"cross-entropy", "mse"}));
  command->add_option("--output-index", training.outputIndex,
                      "The model output the loss reads (default 0)");
  command->add_option("--labels", training.labels,
                      "Name of the labels (or targets) input (default "
                      "labels)");
  command
      ->add_option("--optimizer", training.optimizer,
                   "sgd, momentum, adam (default), adamw or none (return "
                   "the gradients)")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw", "none"}));
  command->add_option("--lr", training.lr, "Learning rate (default 1e-3)")
      ->check(CLI::PositiveNumber);
  command->add_option("--weight-decay", training.weightDecay,
                      "Weight decay (default 0; 0.01 for adamw)");
  command->add_option("--frozen", training.frozen,
                      "Comma-separated globs of parameters not to train "
                      "(e.g. attention masks exported as initializers)");
  CLI::Option *recompute =
      command
          ->add_option(
              "--recompute", training.recompute,
              "Activation recomputation: none, selective or full "
              "(default none; compile tries selective, then full, on as "
              "few layers as fit, when nothing fits without)")
          ->check(CLI::IsMember({"none", "selective", "full"}));
  command
      ->add_option("--recompute-layers", training.recomputeLayers,
                   "With --recompute full: recompute the first N layers of "
                   "each class (layers named alike but for their number), "
                   "the others keep their activations (default: all)")
      ->check(CLI::NonNegativeNumber)
      ->needs(recompute);
  command
      ->add_option("--mixed-precision", training.mixedPrecision,
                   "none (default), bf16 or fp16 (fp32 master weights)")
      ->check(CLI::IsMember({"none", "bf16", "fp16"}));
  command
      ->add_option("--gradient-sums", training.gradientSums,
                   "Under mixed precision with micro-batches, the type the "
                   "gradients are summed in over the micro-batches and "
                   "reduced in across devices: f32 (default) or low (the "
                   "mixed precision's own: half the bytes, Megatron-LM's "
                   "default before fp32 accumulation)")
      ->check(CLI::IsMember({"f32", "low"}));
  command
      ->add_option("--batch-norm", training.batchNorm,
                   "batch (default: normalize with the batch's statistics "
                   "and update the running ones, as PyTorch trains) or "
                   "frozen (the running statistics fixed, for fine-tuning)")
      ->check(CLI::IsMember({"batch", "frozen"}));
  command
      ->add_option("--dropout", training.dropout,
                   "on (default: dropout drops elements in training, the "
                   "same ones on any mesh) or off (the identity)")
      ->check(CLI::IsMember({"on", "off"}));
  command->add_option("--dropout-seed", training.dropoutSeed,
                      "Seed of the dropout masks (default 0)");
  command
      ->add_option("--untie", training.untie,
                   "Give each place that reads parameter NAME (a layer, a "
                   "batch norm's running statistic) its own copy (exporters "
                   "merge initializers of equal values into one tied "
                   "parameter; compile warns of each); repeat or separate "
                   "names with commas")
      ->delimiter(',')
      ->allow_extra_args(false);
  if (!autoMicroBatches) {
    command
        ->add_option("--micro-batches", training.microBatches,
                     "Accumulate gradients over M micro-batches before one "
                     "update (default 1)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
    return addedSince(command, before);
  }
  command
      ->add_option_function<std::string>(
          "--micro-batches",
          [&training, autoMicroBatches](const std::string &text) {
            *autoMicroBatches = text == "auto";
            training.microBatches = *autoMicroBatches ? 1 : std::stoll(text);
          },
          "Accumulate gradients over M micro-batches of --batch before one "
          "update, or with 'auto' the count of least predicted step on "
          "stages (default: auto with --stages auto, else 1; "
          "docs/pipeline.md)")
      ->check(CLI::Validator(
          [](std::string &text) -> std::string {
            if (text == "auto")
              return "";
            bool digits =
                !text.empty() && text.size() <= 8 &&
                text.find_first_not_of("0123456789") == std::string::npos;
            return digits && std::stoll(text) >= 1 &&
                           std::stoll(text) <= (int64_t{1} << 24)
                       ? ""
                       : "expected a count from 1 to 16777216 or 'auto', "
                         "not '" +
                             text + "'";
          },
          "M|auto"));
  return addedSince(command, before);
}

void parplan::cli::addImportBindingOptions(CLI::App *command,
                                           ImportBindings &bindings) {
  command
      ->add_option("--dim", bindings.dims,
                   "Bind a symbolic dimension: NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  command
      ->add_option("--input-value", bindings.inputValues,
                   "Hold a graph input fixed: NAME=V or NAME=V1,V2,... in "
                   "row-major order (repeatable); the input becomes a "
                   "constant, e.g. a sample rate that selects an If branch")
      ->allow_extra_args(false);
}

void parplan::cli::addLayoutOptions(CLI::App *command, LayoutOptions &layout) {
  command->add_option("--cluster", layout.cluster,
                      "Preset name or cluster file (default dgx-h100)");
  command->add_option("--mesh", layout.mesh,
                      "Mesh shape over the first devices, e.g. 2x4 (default: "
                      "nodes x devices per node when uniform, else all "
                      "devices)");
  command
      ->add_option(
          "--strategy", layout.strategy,
          "auto (default), exact, data-parallel, megatron or replicated")
      ->check(CLI::IsMember(
          {"auto", "exact", "data-parallel", "megatron", "replicated"}));
  command->add_option("--annotations", layout.annotations,
                      "YAML or JSON file of pinned layouts "
                      "(docs/sbp-annotations.md)");
  command
      ->add_option_function<std::string>(
          "--stages",
          [&layout](const std::string &text) {
            layout.autoStages = text == "auto";
            layout.stages = layout.autoStages ? 0 : std::stoll(text);
          },
          "Pipeline stages: cut the mesh's first axis and the model's "
          "layers into N even parts, or with 'auto' (compile) the count of "
          "least predicted step (compile's default on a mesh over several "
          "nodes with --strategy auto; 1 keeps one mesh; docs/pipeline.md)")
      ->check(CLI::Validator(
          [](std::string &text) -> std::string {
            if (text == "auto")
              return "";
            bool digits =
                !text.empty() &&
                text.find_first_not_of("0123456789") == std::string::npos;
            if (digits && text.size() > 9)
              return "'" + text + "' stages are more than a cluster holds";
            return digits && std::stoll(text) > 0
                       ? ""
                       : "expected a positive count or 'auto', not '" + text +
                             "'";
          },
          "N|auto"));
  command->add_flag("--even-shares", layout.evenShares,
                    "On devices of mixed types, shares as if all were alike: "
                    "stages cut by their layers' work alone, and a mesh of "
                    "a type per node splits the batch evenly (the default "
                    "gives faster devices more layers and a larger part; "
                    "docs/pipeline.md, docs/slicing.md)");
  command
      ->add_option("--shares", layout.shares,
                   "On one mesh whose device types differ from node to node: "
                   "each node's part of the batch by its devices' speed "
                   "(speed), the same part everywhere (even), or both laid "
                   "out and the faster kept (auto, the default; "
                   "docs/slicing.md)")
      ->check(CLI::IsMember({"auto", "speed", "even"}))
      ->excludes("--even-shares");
  command
      ->add_option("--stage-cuts", layout.stageCuts,
                   "On stages of different device types: end them between "
                   "layers and try a cut inside layers where it balances "
                   "them better (auto, the default), between layers only "
                   "(layers), or inside layers where that balances them "
                   "better (inside-layers; docs/pipeline.md)")
      ->check(CLI::IsMember({"auto", "layers", "inside-layers"}));
  command
      ->add_option("--tensor", layout.tensor,
                   "With --strategy megatron: the tensor-parallel degree, "
                   "the mesh's last axis (default: devices per node)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--pipeline", layout.pipeline,
                   "With --strategy megatron: the pipeline stages (default "
                   "1); data parallel over the rest")
      ->check(CLI::PositiveNumber);
}
