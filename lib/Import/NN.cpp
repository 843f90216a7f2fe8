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

std::vector<int64_t> Importer::convKernel(const onnx::NodeProto &node,
                                          RankedTensorType weight) {
  std::vector<int64_t> kernel(weight.getShape().begin() + 2,
                              weight.getShape().end());
  if (auto declared = intsAttr(node, "kernel_shape");
      declared && *declared != kernel)
    failAt(node, "kernel_shape " + listString(*declared) +
                     " contradicts the weight's " + listString(kernel));
  return kernel;
}

void Importer::convertConv(const onnx::NodeProto &node) {
  Value x = input(node, 0), w = input(node, 1);
  RankedTensorType xType = typeOf(x), wType = typeOf(w);
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank())
    failAt(node, "needs an input [N, C, D...] and a weight of the same rank");
  size_t spatial = xType.getRank() - 2;
  std::vector<int64_t> kernel = convKernel(node, wType);
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

// A transposed convolution is the gradient of a convolution with respect to
// its input: nn.conv_grad_input of the input with the weight, whose result
// type says the output's extents (output_padding's extra rows, which no
// input element reaches, hold the bias alone).
void Importer::convertConvTranspose(const onnx::NodeProto &node) {
  Value x = input(node, 0), w = input(node, 1);
  RankedTensorType xType = typeOf(x), wType = typeOf(w);
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank())
    failAt(node, "needs an input [N, C, D...] and a weight [C, M / group, "
                 "K...] of the same rank");
  size_t spatial = xType.getRank() - 2;
  int64_t group = intAttr(node, "group", 1);
  if (group < 1 || xType.getDimSize(1) != wType.getDimSize(0) ||
      xType.getDimSize(1) % group != 0)
    failAt(node, "the input's " + std::to_string(xType.getDimSize(1)) +
                     " channels are not the weight's dimension 0 (" +
                     std::to_string(wType.getDimSize(0)) + ") in groups of " +
                     std::to_string(group));
  std::vector<int64_t> kernel = convKernel(node, wType);
  auto listOf = [&](const char *name, size_t size, int64_t fill) {
    std::vector<int64_t> values =
        intsAttr(node, name).value_or(std::vector<int64_t>(size, fill));
    if (values.size() != size)
      failAt(node, std::string(name) + " " + listString(values) + " has " +
                       std::to_string(values.size()) + " values, not " +
                       std::to_string(size));
    return values;
  };
  std::vector<int64_t> strides = listOf("strides", spatial, 1);
  std::vector<int64_t> dilations = listOf("dilations", spatial, 1);
  std::vector<int64_t> outputPadding = listOf("output_padding", spatial, 0);
  std::vector<int64_t> pads = listOf("pads", 2 * spatial, 0);
  std::string autoPad = autoPadAttr(node);
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    failAt(node, "auto_pad '" + autoPad +
                     "' is not NOTSET, VALID, "
                     "SAME_UPPER or SAME_LOWER");
  if (autoPad == "VALID")
    pads.assign(2 * spatial, 0);
  // Without pads, the output's extent: the input's times the stride (SAME)
  // or as output_shape says; the padding is what makes it so.
  std::optional<std::vector<int64_t>> outputShape =
      intsAttr(node, "output_shape");
  if (outputShape && outputShape->size() == spatial + 2)
    outputShape->erase(outputShape->begin(), outputShape->begin() + 2);
  if (outputShape && outputShape->size() != spatial)
    failAt(node, "output_shape " + listString(*outputShape) + " has " +
                     std::to_string(outputShape->size()) + " values, not the " +
                     std::to_string(spatial) + " spatial extents");
  std::vector<int64_t> shape = {xType.getDimSize(0),
                                wType.getDimSize(1) * group};
  for (size_t i = 0; i < spatial; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || outputPadding[i] < 0 ||
        outputPadding[i] >= std::max(strides[i], dilations[i]))
      failAt(node, "needs positive strides and dilations and each "
                   "output_padding below its stride or dilation");
    int64_t full = strides[i] * (xType.getDimSize(2 + i) - 1) +
                   outputPadding[i] + (kernel[i] - 1) * dilations[i] + 1;
    std::optional<int64_t> target;
    if (outputShape)
      target = (*outputShape)[i];
    else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
      target = xType.getDimSize(2 + i) * strides[i];
    if (target) {
      int64_t total = full - *target;
      if (total < 0)
        failAt(node, "an output extent of " + std::to_string(*target) +
                         " is more than the " + std::to_string(full) +
                         " the input and kernel reach");
      bool upper = autoPad == "SAME_UPPER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[spatial + i] = total - pads[i];
    }
    shape.push_back(full - pads[i] - pads[spatial + i]);
    if (shape.back() < 1)
      failAt(node, "the pads leave an output extent of " +
                       std::to_string(shape.back()));
  }
  Value result = buildTyped<nn::ConvGradInputOp>(
      node, RankedTensorType::get(shape, xType.getElementType()), x, w,
      builder.getDenseI64ArrayAttr(strides), builder.getDenseI64ArrayAttr(pads),
      builder.getDenseI64ArrayAttr(dilations),
      builder.getI64IntegerAttr(group));
  if (Value bias = optionalInput(node, 2)) {
    if (typeOf(bias).getRank() != 1 || typeOf(bias).getDimSize(0) != shape[1])
      failAt(node, "needs a bias of the " + std::to_string(shape[1]) +
                       " output channels");
    std::vector<int64_t> column(spatial + 1, 1);
    column[0] = shape[1];
    result = build<nn::AddOp>(node, 1, result, reshape(node, bias, column))[0];
  }
  define(node, 0, result);
}

// Resize's extents come from `sizes` or from `scales`; a scale that does not
// give a whole extent would sample at a coordinate the result type cannot
// say (ONNX takes the scale as given, not the extents' ratio), so it is
// refused. Upsample (opset 7 to 9) and Resize of opset 10 sample as
// `asymmetric` with `floor`, the nearest element at or before.
void Importer::convertResize(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  size_t rank = static_cast<size_t>(type.getRank());
  bool upsample = node.op_type() == "Upsample";
  bool legacy = upsample || opset < 11;
  std::string mode = stringAttr(node, "mode", "nearest");
  std::string coordinates =
      legacy ? "asymmetric"
             : stringAttr(node, "coordinate_transformation_mode", "half_pixel");
  std::string rounding =
      legacy ? "floor" : stringAttr(node, "nearest_mode", "round_prefer_floor");
  if (mode == "bilinear")
    mode = "linear";
  std::optional<nn::ResizeMode> resizeMode = nn::symbolizeResizeMode(mode);
  if (!resizeMode)
    failAt(node, "mode '" + mode + "' is not supported (nearest or linear)");
  std::optional<nn::ResizeCoordinates> resizeCoordinates =
      nn::symbolizeResizeCoordinates(coordinates);
  if (!resizeCoordinates)
    failAt(node, "coordinate_transformation_mode '" + coordinates +
                     "' is not supported (half_pixel, pytorch_half_pixel, "
                     "align_corners, asymmetric or tf_half_pixel_for_nn)");
  std::optional<nn::NearestRounding> resizeRounding =
      nn::symbolizeNearestRounding(rounding);
  if (!resizeRounding)
    failAt(node, "nearest_mode '" + rounding + "' is unknown");
  if (intAttr(node, "antialias", 0) != 0 ||
      intAttr(node, "exclude_outside", 0) != 0)
    failAt(node, "antialias and exclude_outside are not supported");
  if (stringAttr(node, "keep_aspect_ratio_policy", "stretch") != "stretch")
    failAt(node, "keep_aspect_ratio_policy '" +
                     stringAttr(node, "keep_aspect_ratio_policy", "") +
                     "' is not supported (stretch)");
  // The axes `scales` and `sizes` list (opset 18), all by default.
  std::vector<int64_t> axes;
  for (int64_t axis : intsAttr(node, "axes").value_or(std::vector<int64_t>{}))
    axes.push_back(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d)
      axes.push_back(static_cast<int64_t>(d));
  for (int64_t axis : axes)
    if (axis < 0 || axis >= static_cast<int64_t>(rank))
      failAt(node, "axes " + listString(axes) + " are not axes of rank " +
                       std::to_string(rank));
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  int scalesIndex = legacy ? 1 : 2;
  std::optional<std::vector<double>> scales;
  // Upsample before opset 9 gives its scales as an attribute.
  if (const onnx::AttributeProto *attr = attribute(node, "scales");
      attr && upsample)
    scales = std::vector<double>(attr->floats().begin(), attr->floats().end());
  if (!scales)
    scales = optionalConstantValues(node, scalesIndex, "scales");
  std::optional<std::vector<int64_t>> sizes =
      legacy ? std::nullopt : optionalConstantInts(node, 3, "sizes");
  if (scales && scales->empty())
    scales.reset();
  if (sizes && sizes->empty())
    sizes.reset();
  if (scales.has_value() == sizes.has_value())
    failAt(node, "needs one of scales and sizes");
  size_t count = scales ? scales->size() : sizes->size();
  if (count != axes.size())
    failAt(node, std::string(scales ? "scales" : "sizes") + " has " +
                     std::to_string(count) + " values for " +
                     std::to_string(axes.size()) + " axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t in = type.getDimSize(axes[i]);
    if (sizes) {
      shape[axes[i]] = (*sizes)[i];
      continue;
    }
    double scale = (*scales)[i];
    double extent = static_cast<double>(in) * scale;
    double whole = std::round(extent);
    if (!(scale > 0) || std::fabs(extent - whole) > 1e-6 * whole)
      failAt(node, "scale " + std::to_string(scale) + " of axis " +
                       std::to_string(axes[i]) + " (" + std::to_string(in) +
                       " elements) gives no whole extent; give sizes");
    shape[axes[i]] = static_cast<int64_t>(whole);
  }
  for (int64_t extent : shape)
    if (extent < 1)
      failAt(node, "resizes to the empty shape " + listString(shape));
  define(node, 0,
         buildTyped<nn::ResizeOp>(
             node, RankedTensorType::get(shape, type.getElementType()), x,
             nn::ResizeModeAttr::get(&context, *resizeMode),
             nn::ResizeCoordinatesAttr::get(&context, *resizeCoordinates),
             nn::NearestRoundingAttr::get(&context, *resizeRounding)));
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
