//===- NN.cpp - ONNX neural-network ops to nn -----------------------------===//
//
// Normalizations, convolutions, pooling and Dropout: the ops onnx-mlir
// keeps in NN/.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

// The converters are Importer's members: their bodies see its namespace.
using namespace parplan::import;

void Importer::convertLayerNorm(const onnx::NodeProto &node) {
  requireUnused(node, 1);
  Value x = input(node, 0), scale = input(node, 1),
        bias = optionalInput(node, 2);
  define(node, 0,
         buildTyped<nn::LayerNormOp>(
             node, x.getType(), x, scale, bias,
             builder.getI64IntegerAttr(intAttr(node, "axis", -1)),
             builder.getF32FloatAttr(floatAttr(node, "epsilon", 1e-5f))));
}

void Importer::convertBatchNorm(const onnx::NodeProto &node) {
  bool training = intAttr(node, "training_mode", 0) != 0;
  requireUnused(node, training ? 3 : 1);
  Value x = input(node, 0), scale = input(node, 1), bias = input(node, 2),
        mean = input(node, 3), variance = input(node, 4);
  float epsilon = floatAttr(node, "epsilon", 1e-5f),
        momentum = floatAttr(node, "momentum", 0.9f);
  // The op checks the shapes and the momentum either way.
  Value normalized = buildTyped<nn::BatchNormOp>(
      node, x.getType(), x, scale, bias, mean, variance,
      builder.getF32FloatAttr(epsilon), builder.getF32FloatAttr(momentum));
  if (!training) {
    define(node, 0, normalized);
    return;
  }
  // ONNX's training form (opset 14): the batch's statistics, and the
  // running ones updated with the biased variance (as ONNX's reference
  // does; a training step's own update uses the unbiased one, as PyTorch).
  normalized.getDefiningOp()->erase();
  nn::BatchStatistics batch = nn::buildBatchNormWithBatchStatistics(
      builder, loc(node), x, scale, bias, epsilon);
  define(node, 0, batch.result);
  define(node, 1,
         nn::buildRunningStatisticUpdate(builder, loc(node), mean, batch.mean,
                                         momentum));
  define(node, 2,
         nn::buildRunningStatisticUpdate(builder, loc(node), variance,
                                         batch.variance, momentum));
}

namespace {
/// Explicit pads for ONNX's auto_pad (SAME_UPPER, SAME_LOWER, VALID, NOTSET).
std::optional<std::vector<int64_t>>
resolveAutoPad(const std::string &autoPad, ArrayRef<int64_t> spatial,
               ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
               ArrayRef<int64_t> dilations) {
  size_t rank = spatial.size();
  // Bad strides or dilations are reported by the op's shape rule.
  if (llvm::any_of(strides, [](int64_t v) { return v <= 0; }) ||
      llvm::any_of(dilations, [](int64_t v) { return v <= 0; }))
    return std::nullopt;
  if (autoPad == "VALID")
    return std::vector<int64_t>(2 * rank, 0);
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return std::nullopt;
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    int64_t out = (spatial[i] + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] +
                                             (kernel[i] - 1) * dilations[i] +
                                             1 - spatial[i]);
    int64_t small = total / 2, large = total - total / 2;
    pads[i] = autoPad == "SAME_UPPER" ? small : large;
    pads[rank + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}
} // namespace

void Importer::convertConv(const onnx::NodeProto &node) {
  Value x = input(node, 0), w = input(node, 1);
  RankedTensorType xType = typeOf(x), wType = typeOf(w);
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank())
    failAt(node, "needs an input [N, C, D...] and a weight of the same rank");
  size_t spatial = xType.getRank() - 2;
  std::vector<int64_t> kernel(wType.getShape().begin() + 2,
                              wType.getShape().end());
  if (auto declared = intsAttr(node, "kernel_shape");
      declared && *declared != kernel)
    failAt(node, "kernel_shape " + listString(*declared) +
                     " contradicts the weight's " + listString(kernel));
  std::vector<int64_t> strides =
      intsAttr(node, "strides").value_or(std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dilations =
      intsAttr(node, "dilations").value_or(std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads =
      intsAttr(node, "pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  if (strides.size() == spatial && dilations.size() == spatial)
    if (auto resolved =
            resolveAutoPad(autoPadAttr(node), xType.getShape().drop_front(2),
                           kernel, strides, dilations))
      pads = *resolved;
  define(node, 0,
         build<nn::ConvOp>(
             node, 1, x, w, optionalInput(node, 2),
             builder.getDenseI64ArrayAttr(strides),
             builder.getDenseI64ArrayAttr(pads),
             builder.getDenseI64ArrayAttr(dilations),
             builder.getI64IntegerAttr(intAttr(node, "group", 1)))[0]);
}

void Importer::convertPool(const onnx::NodeProto &node) {
  requireUnused(node, 1);
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  if (type.getRank() < 3)
    failAt(node, "needs an input [N, C, D...] of rank 3 or more");
  size_t spatial = type.getRank() - 2;
  std::optional<std::vector<int64_t>> kernel = intsAttr(node, "kernel_shape");
  if (!kernel)
    failAt(node, "needs the kernel_shape attribute");
  std::vector<int64_t> strides =
      intsAttr(node, "strides").value_or(std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dilations =
      intsAttr(node, "dilations").value_or(std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads =
      intsAttr(node, "pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  if (kernel->size() == spatial && strides.size() == spatial &&
      dilations.size() == spatial)
    if (auto resolved =
            resolveAutoPad(autoPadAttr(node), type.getShape().drop_front(2),
                           *kernel, strides, dilations))
      pads = *resolved;
  BoolAttr ceil = builder.getBoolAttr(intAttr(node, "ceil_mode", 0) != 0);
  BoolAttr includePad =
      builder.getBoolAttr(intAttr(node, "count_include_pad", 0) != 0);
  Value result;
  if (node.op_type() == "MaxPool")
    result = build<nn::MaxPoolOp>(
        node, 1, x, builder.getDenseI64ArrayAttr(*kernel),
        builder.getDenseI64ArrayAttr(strides),
        builder.getDenseI64ArrayAttr(pads),
        builder.getDenseI64ArrayAttr(dilations), ceil, includePad)[0];
  else
    result = build<nn::AvgPoolOp>(
        node, 1, x, builder.getDenseI64ArrayAttr(*kernel),
        builder.getDenseI64ArrayAttr(strides),
        builder.getDenseI64ArrayAttr(pads),
        builder.getDenseI64ArrayAttr(dilations), ceil, includePad)[0];
  define(node, 0, result);
}

void Importer::convertGlobalAveragePool(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  int64_t rank = typeOf(x).getRank();
  if (rank < 3)
    failAt(node, "needs an input [N, C, D...] of rank 3 or more");
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  define(node, 0,
         build<nn::ReduceMeanOp>(node, 1, x, builder.getDenseI64ArrayAttr(axes),
                                 builder.getBoolAttr(true))[0]);
}

void Importer::convertDropout(const onnx::NodeProto &node) {
  // The inference form (the identity until a training step makes it drop);
  // ONNX's training_mode input is the exporter's mode, not parplan's: the
  // training step decides (nn-autodiff's dropout option).
  requireUnused(node, 1);
  Value x = input(node, 0);
  std::optional<float> ratio =
      opset < 12 ? std::optional<float>(floatAttr(node, "ratio", 0.5f))
                 : optionalConstantScalar(node, 1, "ratio");
  define(node, 0,
         buildTyped<nn::DropoutOp>(
             node, x.getType(), x, Value(), Value(),
             builder.getF32FloatAttr(ratio.value_or(0.5f)),
             builder.getI64IntegerAttr(0), builder.getI64IntegerAttr(0)));
}
