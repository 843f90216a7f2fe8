//===- Memory.cpp - memory per device -------------------------------------===//

#include "parplan/Cost/Memory.h"

using namespace parplan::cost;

const char *parplan::cost::toString(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::SGD:
    return "sgd";
  case Optimizer::Momentum:
    return "momentum";
  case Optimizer::Adam:
    return "adam";
  case Optimizer::AdamW:
    return "adamw";
  }
  return "?";
}

std::optional<Optimizer>
parplan::cost::parseOptimizer(const std::string &text) {
  for (Optimizer optimizer :
       {Optimizer::SGD, Optimizer::Momentum, Optimizer::Adam, Optimizer::AdamW})
    if (text == toString(optimizer))
      return optimizer;
  return std::nullopt;
}

ModelState parplan::cost::modelState(double parameters, Optimizer optimizer,
                                     bool mixedPrecision, int zeroStage,
                                     int64_t dataParallel) {
  double weightBytes = mixedPrecision ? 2 : 4;
  double stateBytes = optimizer == Optimizer::SGD        ? 0
                      : optimizer == Optimizer::Momentum ? 4
                                                         : 8;
  if (mixedPrecision)
    stateBytes += 4; // fp32 master weights.
  double shards = static_cast<double>(dataParallel < 1 ? 1 : dataParallel);
  ModelState state;
  state.parameters = weightBytes * parameters / (zeroStage >= 3 ? shards : 1);
  state.gradients = weightBytes * parameters / (zeroStage >= 2 ? shards : 1);
  state.optimizer = stateBytes * parameters / (zeroStage >= 1 ? shards : 1);
  return state;
}

double parplan::cost::gptParameterCount(int64_t layers, int64_t hidden,
                                        int64_t vocab, int64_t sequence) {
  double l = layers, h = hidden, v = vocab, s = sequence;
  return 12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h));
}

double parplan::cost::transformerActivationBytes(
    int64_t sequence, int64_t batch, int64_t hidden, int64_t heads,
    int64_t tensorParallel, bool sequenceParallel, Recompute recompute) {
  double s = sequence, b = batch, h = hidden, a = heads;
  double t = tensorParallel < 1 ? 1 : tensorParallel;
  double sbh = s * b * h;
  if (recompute == Recompute::Full)
    return 2 * sbh / (sequenceParallel ? t : 1);
  double attention =
      recompute == Recompute::Selective ? 0 : 5 * a * s / (h * t);
  if (sequenceParallel)
    return sbh * (34 / t + attention);
  if (t == 1)
    return sbh * (34 + attention);
  return sbh * (10 + 24 / t + attention);
}

double parplan::cost::pipelineBubbleFraction(int64_t stages,
                                             int64_t microBatches) {
  double p = stages, m = microBatches;
  return (p - 1) / (m + p - 1);
}
