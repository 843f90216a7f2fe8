//===- Memory.h - memory per device -----------------------------*- C++ -*-===//
//
// Model state (parameters, gradients, optimizer state) by optimizer,
// precision and ZeRO stage, and the closed forms for transformer models used
// as oracles. docs/cost-model.md has the formulas and their sources.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_MEMORY_H
#define PARPLAN_COST_MEMORY_H

#include <cstdint>
#include <optional>
#include <string>

namespace parplan::cost {

enum class Optimizer { SGD, Momentum, Adam, AdamW };
const char *toString(Optimizer optimizer);
std::optional<Optimizer> parseOptimizer(const std::string &text);

/// Bytes of model state per device.
struct ModelState {
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return parameters + gradients + optimizer; }
};

/// Model state of `parameters` parameters on one of `dataParallel` devices.
/// fp32 training keeps 4-byte parameters and gradients; mixed precision
/// keeps 2-byte (fp16/bf16) parameters and gradients plus a 4-byte fp32
/// master copy in the optimizer state. Momentum adds 4 bytes per parameter,
/// Adam and AdamW 8 (m and v). ZeRO stage 1 shards the optimizer state over
/// the data-parallel devices, stage 2 the gradients too, stage 3 the
/// parameters too. Mixed-precision Adam is 16 bytes per parameter unsharded.
ModelState modelState(double parameters, Optimizer optimizer,
                      bool mixedPrecision, int zeroStage, int64_t dataParallel);

/// Parameters of a GPT (learned positions, tied embedding, biases, two
/// layer norms per block plus the final one's 2h left out, as in Narayanan et
/// al. 2021): 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h)).
double gptParameterCount(int64_t layers, int64_t hidden, int64_t vocab,
                         int64_t sequence);

enum class Recompute { None, Selective, Full };

/// Activation bytes one transformer layer keeps for backward in fp16 per
/// device ("Reducing Activation Recomputation in
/// Large Transformer Models", Table 2): s b h (34 + 5 a s / h) unsharded,
/// s b h (10 + 24 / t + 5 a s / (h t)) with t-way tensor parallelism,
/// s b h (34 / t + 5 a s / (h t)) with sequence parallelism too; selective
/// recomputation drops the 5 a s / h attention term, full recomputation
/// keeps only the layer's input, 2 s b h (divided by t with sequence
/// parallelism).
double transformerActivationBytes(int64_t sequence, int64_t batch,
                                  int64_t hidden, int64_t heads,
                                  int64_t tensorParallel, bool sequenceParallel,
                                  Recompute recompute);

/// Fraction of a pipeline step spent idle with p stages and m micro-batches
/// under GPipe or 1F1B: (p - 1) / (m + p - 1).
double pipelineBubbleFraction(int64_t stages, int64_t microBatches);

} // namespace parplan::cost

#endif // PARPLAN_COST_MEMORY_H
