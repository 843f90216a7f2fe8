//===- Tensor.cpp - ONNX tensor ops to nn ---------------------------------===//
//
// Shape and data movement (Reshape, Transpose, Concat, Slice, Gather, ...)
// and constants: the ops onnx-mlir keeps in Tensor/.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

// The converters are Importer's members: their bodies see its namespace.
using namespace parplan::import;

void Importer::convertFlatten(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  int64_t axis = intAttr(node, "axis", 1);
  int64_t rank = type.getRank();
  if (axis < -rank || axis > rank)
    failAt(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  if (axis < 0)
    axis += rank;
  int64_t outer = checkedProduct(type.getShape().take_front(axis), "input");
  int64_t inner = checkedProduct(type.getShape().drop_front(axis), "input");
  define(node, 0, reshape(node, x, {outer, inner}));
}

void Importer::convertReshape(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  std::vector<int64_t> target =
      opset < 5 ? intsAttr(node, "shape").value_or(std::vector<int64_t>{})
                : constantInts(node, 1, "shape");
  bool allowZero = intAttr(node, "allowzero", 0) != 0;
  int64_t inferredAt = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= type.getRank())
        failAt(node, "shape " + listString(target) + " copies dimension " +
                         std::to_string(i) + ", which the input (rank " +
                         std::to_string(type.getRank()) + ") lacks");
      target[i] = type.getDimSize(i);
    }
    if (target[i] == -1) {
      if (inferredAt >= 0)
        failAt(node, "shape " + listString(target) + " has more than one -1");
      inferredAt = i;
      continue;
    }
    if (target[i] < 0)
      failAt(node, "shape " + listString(target) + " has a negative size");
    if (__builtin_mul_overflow(known, target[i], &known))
      failAt(node, "shape " + listString(target) + " overflows int64");
  }
  int64_t elements = type.getNumElements();
  if (inferredAt >= 0 ? known == 0 || elements % known != 0 : known != elements)
    failAt(node, "cannot reshape " + std::to_string(elements) +
                     " elements into " + listString(target));
  if (inferredAt >= 0)
    target[inferredAt] = elements / known;
  define(node, 0, reshape(node, x, target));
}

void Importer::convertSqueeze(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  std::optional<std::vector<int64_t>> axes =
      opset < 13 ? intsAttr(node, "axes")
                 : optionalConstantInts(node, 1, "axes");
  std::vector<bool> drop(rank, false);
  if (!axes || axes->empty()) {
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = type.getDimSize(d) == 1;
  } else {
    for (int64_t axis : *axes) {
      std::optional<int64_t> d = normalizeAxis(axis, rank);
      if (!d)
        failAt(node, "axis " + std::to_string(axis) +
                         " is out of range for rank " + std::to_string(rank));
      if (type.getDimSize(*d) != 1)
        failAt(node, "cannot squeeze dimension " + std::to_string(*d) +
                         " of size " + std::to_string(type.getDimSize(*d)));
      drop[*d] = true;
    }
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      shape.push_back(type.getDimSize(d));
  define(node, 0, reshape(node, x, shape));
}

void Importer::convertUnsqueeze(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  std::vector<int64_t> axes =
      opset < 13 ? intsAttr(node, "axes").value_or(std::vector<int64_t>{})
                 : constantInts(node, 1, "axes");
  int64_t rank = type.getRank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : axes) {
    std::optional<int64_t> d = normalizeAxis(axis, rank);
    if (!d || inserted[*d])
      failAt(node, "axes " + listString(axes) +
                       " are out of range or repeated "
                       "for an output of rank " +
                       std::to_string(rank));
    inserted[*d] = true;
  }
  SmallVector<int64_t> shape;
  int64_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(inserted[d] ? 1 : type.getDimSize(next++));
  define(node, 0, reshape(node, x, shape));
}

void Importer::convertTranspose(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  std::vector<int64_t> perm;
  if (auto given = intsAttr(node, "perm")) {
    perm = *given;
  } else {
    for (int64_t d = typeOf(x).getRank() - 1; d >= 0; --d)
      perm.push_back(d);
  }
  define(node, 0,
         build<nn::TransposeOp>(node, 1, x,
                                builder.getDenseI64ArrayAttr(perm))[0]);
}

void Importer::convertConcat(const onnx::NodeProto &node) {
  SmallVector<Value> operands;
  for (int i = 0; i < node.input_size(); ++i)
    if (!node.input(i).empty())
      operands.push_back(input(node, i));
  if (!attribute(node, "axis"))
    failAt(node, "needs the axis attribute");
  define(node, 0,
         build<nn::ConcatOp>(
             node, 1, ValueRange(operands),
             builder.getI64IntegerAttr(intAttr(node, "axis", 0)))[0]);
}

void Importer::convertSplit(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  int64_t axis = intAttr(node, "axis", 0);
  std::optional<int64_t> dim = normalizeAxis(axis, type.getRank());
  if (!dim)
    failAt(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(type.getRank()));
  int64_t size = type.getDimSize(*dim);
  int64_t outputs = node.output_size();
  std::optional<std::vector<int64_t>> sizes =
      opset < 13 ? intsAttr(node, "split")
                 : optionalConstantInts(node, 1, "split");
  if (!sizes) {
    int64_t parts = opset >= 18 && attribute(node, "num_outputs")
                        ? intAttr(node, "num_outputs", outputs)
                        : outputs;
    if (parts <= 0)
      failAt(node, "needs at least one output");
    if (opset < 18 && size % parts != 0)
      failAt(node, "cannot split dimension " + std::to_string(*dim) +
                       " of size " + std::to_string(size) + " into " +
                       std::to_string(parts) + " equal parts");
    // Opset 18: equal chunks of ceil(size / parts), the last one smaller.
    int64_t chunk = (size + parts - 1) / parts;
    sizes.emplace();
    for (int64_t i = 0, left = size; i < parts; ++i, left -= chunk)
      sizes->push_back(std::max<int64_t>(0, std::min(chunk, left)));
  }
  if (static_cast<int64_t>(sizes->size()) != outputs)
    failAt(node, "splits into " + std::to_string(sizes->size()) +
                     " parts but has " + std::to_string(outputs) + " outputs");
  SmallVector<Value> parts = build<nn::SplitOp>(
      node, sizes->size(), x, builder.getI64IntegerAttr(axis),
      builder.getDenseI64ArrayAttr(*sizes));
  for (int64_t i = 0; i < outputs; ++i)
    define(node, i, parts[i]);
}

void Importer::convertSlice(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = intsAttr(node, "starts").value_or(std::vector<int64_t>{});
    ends = intsAttr(node, "ends").value_or(std::vector<int64_t>{});
    axes = intsAttr(node, "axes").value_or(std::vector<int64_t>{});
  } else {
    starts = constantInts(node, 1, "starts");
    ends = constantInts(node, 2, "ends");
    axes =
        optionalConstantInts(node, 3, "axes").value_or(std::vector<int64_t>{});
    steps =
        optionalConstantInts(node, 4, "steps").value_or(std::vector<int64_t>{});
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    failAt(node, "starts, ends, axes and steps differ in length");
  SmallVector<int64_t> outStarts(rank, 0), sizes(type.getShape()),
      outSteps(rank, 1);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    std::optional<int64_t> d = normalizeAxis(axes[i], rank);
    if (!d || seen[*d])
      failAt(node, "axis " + std::to_string(axes[i]) +
                       " is out of range or repeated for rank " +
                       std::to_string(rank));
    seen[*d] = true;
    int64_t dim = type.getDimSize(*d), step = steps[i];
    if (step == 0)
      failAt(node, "step 0 on axis " + std::to_string(*d));
    // ONNX clamps starts and ends into range after resolving negatives.
    auto resolve = [dim](int64_t index) {
      return index < 0 ? std::max<int64_t>(
                             index, std::numeric_limits<int64_t>::min() + dim) +
                             dim
                       : index;
    };
    int64_t start = resolve(starts[i]), end = resolve(ends[i]), size;
    // Sizes are ceil(distance / |step|), written so that no step overflows.
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? 1 + (end - start - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      size = start > end ? 1 - (start - end - 1) / step : 0;
    }
    outStarts[*d] = size > 0 ? start : 0;
    sizes[*d] = size;
    outSteps[*d] = step;
  }
  define(node, 0,
         build<nn::SliceOp>(node, 1, x, builder.getDenseI64ArrayAttr(outStarts),
                            builder.getDenseI64ArrayAttr(sizes),
                            builder.getDenseI64ArrayAttr(outSteps))[0]);
}

void Importer::convertPad(const onnx::NodeProto &node) {
  // Axis by axis: negative pads crop (a slice), positive ones grow (a
  // concat with the padding: a constant, the edge expanded, the mirror or
  // the far end sliced), so every rule, kernel and gradient is those ops'.
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  if (!type.hasStaticShape())
    failAt(node,
           "pads a tensor of dynamic shape " + shapeString(type.getShape()));
  std::string mode = stringAttr(node, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    failAt(node, "mode '" + mode + "' is not constant, reflect, edge or wrap");
  std::vector<int64_t> pads;
  float value = 0;
  std::vector<int64_t> axes;
  if (opset < 11) {
    pads = intsAttr(node, "pads").value_or(std::vector<int64_t>{});
    value = floatAttr(node, "value", 0);
  } else {
    pads = constantInts(node, 1, "pads");
    value = optionalConstantScalar(node, 2, "constant_value").value_or(0.0f);
    axes =
        optionalConstantInts(node, 3, "axes").value_or(std::vector<int64_t>{});
  }
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  if (pads.size() != 2 * axes.size())
    failAt(node, "pads " + listString(pads) + " has " +
                     std::to_string(pads.size()) + " values for " +
                     std::to_string(axes.size()) + " axes (2 per axis)");
  Type element = type.getElementType();
  auto slice = [&](Value from, int64_t axis, int64_t start, int64_t size,
                   int64_t step) {
    ArrayRef<int64_t> shape = typeOf(from).getShape();
    SmallVector<int64_t> starts(shape.size(), 0), sizes(shape),
        steps(shape.size(), 1);
    starts[axis] = start;
    sizes[axis] = size;
    steps[axis] = step;
    return build<nn::SliceOp>(node, 1, from,
                              builder.getDenseI64ArrayAttr(starts),
                              builder.getDenseI64ArrayAttr(sizes),
                              builder.getDenseI64ArrayAttr(steps))[0];
  };
  for (size_t i = 0; i < axes.size(); ++i) {
    std::optional<int64_t> axis = normalizeAxis(axes[i], rank);
    if (!axis)
      failAt(node, "axis " + std::to_string(axes[i]) +
                       " is out of range for rank " + std::to_string(rank));
    int64_t before = pads[i], after = pads[i + axes.size()];
    int64_t dim = typeOf(x).getDimSize(*axis);
    if (-before - after > dim || before < -dim || after < -dim)
      failAt(node, "pads " + std::to_string(before) + " and " +
                       std::to_string(after) + " crop more than axis " +
                       std::to_string(*axis) + "'s " + std::to_string(dim));
    if (before < 0 || after < 0) {
      int64_t cropBefore = std::max<int64_t>(0, -before);
      int64_t cropAfter = std::max<int64_t>(0, -after);
      x = slice(x, *axis, cropBefore, dim - cropBefore - cropAfter, 1);
      dim -= cropBefore + cropAfter;
      before = std::max<int64_t>(0, before);
      after = std::max<int64_t>(0, after);
    }
    if (before == 0 && after == 0)
      continue;
    if ((mode == "reflect" && (before >= dim || after >= dim)) ||
        ((mode == "edge" || mode == "wrap") && dim == 0) ||
        (mode == "wrap" && (before > dim || after > dim)))
      failAt(node, mode + " padding of " + std::to_string(before) + " and " +
                       std::to_string(after) + " on axis " +
                       std::to_string(*axis) + " of size " +
                       std::to_string(dim) + " reads past the tensor");
    auto padding = [&](int64_t size, bool leading) -> Value {
      if (mode == "reflect")
        return leading ? slice(x, *axis, size, size, -1)
                       : slice(x, *axis, dim - 2, size, -1);
      if (mode == "wrap")
        return leading ? slice(x, *axis, dim - size, size, 1)
                       : slice(x, *axis, 0, size, 1);
      SmallVector<int64_t> shape(typeOf(x).getShape());
      shape[*axis] = size;
      auto padType = RankedTensorType::get(shape, element);
      if (mode == "edge") {
        Value edge = slice(x, *axis, leading ? 0 : dim - 1, 1, 1);
        return buildTyped<nn::ExpandOp>(node, padType, edge);
      }
      return splat(node, padType, value);
    };
    SmallVector<Value> pieces;
    if (before > 0)
      pieces.push_back(padding(before, /*leading=*/true));
    pieces.push_back(x);
    if (after > 0)
      pieces.push_back(padding(after, /*leading=*/false));
    x = build<nn::ConcatOp>(node, 1, ValueRange(pieces),
                            builder.getI64IntegerAttr(*axis))[0];
  }
  define(node, 0, x);
}

void Importer::convertTile(const onnx::NodeProto &node) {
  // The input repeated along each axis: a concat of its copies, so that the
  // concat's rules, kernels and gradient (the copies' gradients summed) are
  // Tile's.
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  std::vector<int64_t> repeats = constantInts(node, 1, "repeats");
  if (static_cast<int64_t>(repeats.size()) != type.getRank())
    failAt(node, "repeats " + listString(repeats) + " has " +
                     std::to_string(repeats.size()) + " values for rank " +
                     std::to_string(type.getRank()));
  for (int64_t axis = 0; axis < type.getRank(); ++axis) {
    int64_t times = repeats[static_cast<size_t>(axis)];
    if (times < 1)
      failAt(node, "repeats " + listString(repeats) + " has " +
                       std::to_string(times) + " on axis " +
                       std::to_string(axis) +
                       "; parplan tiles 1 or more times");
    if (times == 1)
      continue;
    SmallVector<Value> copies(static_cast<size_t>(times), x);
    x = build<nn::ConcatOp>(node, 1, ValueRange(copies),
                            builder.getI64IntegerAttr(axis))[0];
  }
  define(node, 0, x);
}

void Importer::convertGather(const onnx::NodeProto &node) {
  Value data = input(node, 0), indices = input(node, 1);
  define(node, 0,
         build<nn::GatherOp>(
             node, 1, data, indices,
             builder.getI64IntegerAttr(intAttr(node, "axis", 0)))[0]);
}

void Importer::convertIdentity(const onnx::NodeProto &node) {
  define(node, 0, input(node, 0));
}

void Importer::convertExpand(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  std::vector<int64_t> target = constantInts(node, 1, "shape");
  if (llvm::any_of(target, [](int64_t dim) { return dim < 0; }))
    failAt(node, "shape " + listString(target) + " has a negative size");
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(typeOf(x).getShape(), target, shape))
    failAt(node, "cannot broadcast " + shapeString(typeOf(x).getShape()) +
                     " with shape " + listString(target));
  define(node, 0, buildTyped<nn::ExpandOp>(node, typeOf(x).clone(shape), x));
}

void Importer::convertConstant(const onnx::NodeProto &node) {
  if (node.output_size() < 1 || node.output(0).empty())
    failAt(node, "has no output");
  const std::string &name = node.output(0);
  DenseElementsAttr value;
  if (const onnx::AttributeProto *attr = attribute(node, "value")) {
    std::string what = "node " + quote(nodeLabel(node)) + " (Constant): value";
    RankedTensorType type = tensorType(attr->t(), what);
    if (attr->t().data_location() == onnx::TensorProto::EXTERNAL)
      failAt(node, "keeps its value in external data");
    // A weight stored as a Constant node (paddle2onnx stores all weights
    // so) is a parameter like any other: large float tensors, and float
    // tensors that a node reads as its weights.
    if (isa<FloatType>(type.getElementType()) &&
        (type.getNumElements() > kMaxInlineFloatElements ||
         weightInputs.contains(name))) {
      (void)checkWeightData(attr->t(), type, what);
      // Raw bytes in a binary model (checkWeightData checked their length)
      // are read where they lie, as an initializer's are; typed values have
      // no byte range to read.
      auto range = constantData.find(name);
      std::string source = range != constantData.end()
                               ? "constant@" +
                                     std::to_string(range->second.offset) +
                                     "+" + std::to_string(range->second.length)
                               : "constant:" + nodeLabel(node);
      values[name] = prologue([&](OpBuilder &b) {
        return nn::ParamOp::create(b, loc(node), type, name,
                                   b.getStringAttr(source), StringAttr(),
                                   DenseI64ArrayAttr())
            .getResult();
      });
      return;
    }
    value = *tensorData(attr->t(), type, what);
  } else if (const onnx::AttributeProto *attr =
                 attribute(node, "value_float")) {
    value = DenseElementsAttr::get(
        RankedTensorType::get({}, builder.getF32Type()), attr->f());
  } else if (const onnx::AttributeProto *attr =
                 attribute(node, "value_floats")) {
    std::vector<float> data(attr->floats().begin(), attr->floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(data.size())},
                              builder.getF32Type()),
        ArrayRef<float>(data));
  } else if (const onnx::AttributeProto *attr = attribute(node, "value_int")) {
    value =
        DenseElementsAttr::get(RankedTensorType::get({}, builder.getI64Type()),
                               static_cast<int64_t>(attr->i()));
  } else if (const onnx::AttributeProto *attr = attribute(node, "value_ints")) {
    std::vector<int64_t> data(attr->ints().begin(), attr->ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(data.size())},
                              builder.getI64Type()),
        ArrayRef<int64_t>(data));
  } else {
    failAt(node, "has no value parplan can read (sparse and string constants "
                 "are not supported)");
  }
  values[name] = prologue([&](OpBuilder &b) {
    return nn::ConstantOp::create(b, loc(node), value).getResult();
  });
}

void Importer::convertConstantOfShape(const onnx::NodeProto &node) {
  std::vector<int64_t> shape = constantInts(node, 0, "shape");
  for (int64_t dim : shape)
    if (dim < 0)
      failAt(node, "shape " + listString(shape) + " has a negative size");
  checkedProduct(shape, "node " + quote(nodeLabel(node)) +
                            " (ConstantOfShape): output");
  DenseElementsAttr fill;
  if (const onnx::AttributeProto *attr = attribute(node, "value")) {
    std::string what =
        "node " + quote(nodeLabel(node)) + " (ConstantOfShape): value";
    RankedTensorType type = tensorType(attr->t(), what);
    std::optional<DenseElementsAttr> data = tensorData(attr->t(), type, what);
    if (!data || type.getNumElements() != 1)
      failAt(node, "value must be a one-element tensor");
    fill = *data;
  } else {
    fill = DenseElementsAttr::get(
        RankedTensorType::get({1}, builder.getF32Type()), 0.0f);
  }
  auto type = RankedTensorType::get(shape, fill.getElementType());
  DenseElementsAttr value =
      DenseElementsAttr::get(type, fill.getSplatValue<Attribute>());
  define(node, 0, buildTyped<nn::ConstantOp>(node, type, value));
}

void Importer::convertShape(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  Value shape = build<nn::ShapeOp>(node, 1, x)[0];
  int64_t rank = typeOf(x).getRank();
  // Opset 15: the dimensions start .. end only.
  int64_t start = intAttr(node, "start", 0), end = intAttr(node, "end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  if (start != 0 || end != rank)
    shape = build<nn::SliceOp>(
        node, 1, shape, builder.getDenseI64ArrayAttr({start}),
        builder.getDenseI64ArrayAttr({std::max<int64_t>(0, end - start)}),
        builder.getDenseI64ArrayAttr({1}))[0];
  define(node, 0, shape);
}
