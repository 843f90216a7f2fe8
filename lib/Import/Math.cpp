//===- Math.cpp - ONNX math ops to nn -------------------------------------===//
//
// Products (MatMul, Gemm), elementwise arithmetic, activations, comparisons,
// reductions, Softmax and Cast: the ops onnx-mlir keeps in Math/.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

// The converters are Importer's members: their bodies see its namespace.
using namespace parplan::import;

void Importer::convertMatMul(const onnx::NodeProto &node) {
  Value lhs = input(node, 0), rhs = input(node, 1);
  define(node, 0,
         build<nn::MatMulOp>(node, 1, lhs, rhs, UnitAttr(), UnitAttr(),
                             FloatAttr())[0]);
}

void Importer::convertGemm(const onnx::NodeProto &node) {
  Value a = input(node, 0), b = input(node, 1), c = optionalInput(node, 2);
  define(node, 0,
         build<nn::GemmOp>(
             node, 1, a, b, c,
             builder.getF32FloatAttr(floatAttr(node, "alpha", 1.0f)),
             builder.getF32FloatAttr(floatAttr(node, "beta", 1.0f)),
             builder.getBoolAttr(intAttr(node, "transA", 0) != 0),
             builder.getBoolAttr(intAttr(node, "transB", 0) != 0))[0]);
}

void Importer::convertBinary(const onnx::NodeProto &node) {
  Value lhs = input(node, 0), rhs = input(node, 1);
  const std::string &type = node.op_type();
  if (type == "Pow") // The exponent may have its own type (opset 12).
    rhs = castTo(node, rhs, typeOf(lhs).getElementType());
  Value result;
  if (type == "Add")
    result = build<nn::AddOp>(node, 1, lhs, rhs)[0];
  else if (type == "Sub")
    result = build<nn::SubOp>(node, 1, lhs, rhs)[0];
  else if (type == "Mul")
    result = build<nn::MulOp>(node, 1, lhs, rhs)[0];
  else if (type == "Div")
    result = build<nn::DivOp>(node, 1, lhs, rhs)[0];
  else
    result = build<nn::PowOp>(node, 1, lhs, rhs)[0];
  define(node, 0, result);
}

void Importer::convertUnary(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  Type type = x.getType();
  const std::string &op = node.op_type();
  Value result;
  if (op == "Sqrt")
    result = buildTyped<nn::SqrtOp>(node, type, x);
  else if (op == "Exp")
    result = buildTyped<nn::ExpOp>(node, type, x);
  else if (op == "Log")
    result = buildTyped<nn::LogOp>(node, type, x);
  else if (op == "Relu")
    result = buildTyped<nn::ReluOp>(node, type, x);
  else if (op == "Sigmoid")
    result = buildTyped<nn::SigmoidOp>(node, type, x);
  else if (op == "Tanh")
    result = buildTyped<nn::TanhOp>(node, type, x);
  else if (op == "Erf")
    result = buildTyped<nn::ErfOp>(node, type, x);
  else
    result = buildTyped<nn::HardSwishOp>(node, type, x);
  define(node, 0, result);
}

void Importer::convertLeakyRelu(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  define(node, 0,
         buildTyped<nn::LeakyReluOp>(
             node, x.getType(), x,
             builder.getF32FloatAttr(floatAttr(node, "alpha", 0.01f))));
}

void Importer::convertHardSigmoid(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  define(node, 0,
         buildTyped<nn::HardSigmoidOp>(
             node, x.getType(), x,
             builder.getF32FloatAttr(floatAttr(node, "alpha", 0.2f)),
             builder.getF32FloatAttr(floatAttr(node, "beta", 0.5f))));
}

void Importer::convertGelu(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  std::string approximate = stringAttr(node, "approximate", "none");
  nn::GeluApproximation kind;
  if (approximate == "none")
    kind = nn::GeluApproximation::none;
  else if (approximate == "tanh")
    kind = nn::GeluApproximation::tanh;
  else
    failAt(node,
           "approximate must be 'none' or 'tanh', got " + quote(approximate));
  define(
      node, 0,
      buildTyped<nn::GeluOp>(node, x.getType(), x,
                             nn::GeluApproximationAttr::get(&context, kind)));
}

void Importer::convertClip(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  if (!isa<FloatType>(typeOf(x).getElementType()))
    failAt(node, "clips a tensor of " + typeName(typeOf(x).getElementType()) +
                     "; parplan clips floating-point tensors only");
  std::optional<float> low, high;
  if (opset < 11) {
    if (attribute(node, "min"))
      low = floatAttr(node, "min", 0);
    if (attribute(node, "max"))
      high = floatAttr(node, "max", 0);
  } else {
    low = optionalConstantScalar(node, 1, "min");
    high = optionalConstantScalar(node, 2, "max");
  }
  define(node, 0,
         buildTyped<nn::ClipOp>(
             node, x.getType(), x,
             low ? builder.getF32FloatAttr(*low) : FloatAttr(),
             high ? builder.getF32FloatAttr(*high) : FloatAttr()));
}

void Importer::convertSoftmax(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  bool log = node.op_type() == "LogSoftmax";
  int64_t rank = type.getRank();
  int64_t axis = intAttr(node, "axis", opset < 13 ? 1 : -1);
  std::optional<int64_t> normalized = normalizeAxis(axis, rank);
  if (!normalized)
    failAt(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  auto make = [&](Value operand, int64_t opAxis) -> Value {
    IntegerAttr axisAttr = builder.getI64IntegerAttr(opAxis);
    if (log)
      return buildTyped<nn::LogSoftmaxOp>(node, operand.getType(), operand,
                                          axisAttr);
    return buildTyped<nn::SoftmaxOp>(node, operand.getType(), operand,
                                     axisAttr);
  };
  // Before opset 13 the input was coerced to 2-D [outer, inner] at `axis`
  // and normalized over the whole inner part.
  if (opset >= 13 || *normalized == rank - 1) {
    define(node, 0, make(x, *normalized));
    return;
  }
  int64_t outer =
      checkedProduct(type.getShape().take_front(*normalized), "input");
  int64_t inner =
      checkedProduct(type.getShape().drop_front(*normalized), "input");
  Value flat = reshape(node, x, {outer, inner});
  define(node, 0, reshape(node, make(flat, 1), type.getShape()));
}

void Importer::convertReduce(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  bool mean = node.op_type() == "ReduceMean";
  // Axes moved from an attribute to an input: ReduceSum at 13, others at 18.
  bool axesAsInput = mean ? opset >= 18 : opset >= 13;
  std::optional<std::vector<int64_t>> axes =
      axesAsInput ? optionalConstantInts(node, 1, "axes")
                  : intsAttr(node, "axes");
  bool keepdims = intAttr(node, "keepdims", 1) != 0;
  if ((!axes || axes->empty()) &&
      intAttr(node, "noop_with_empty_axes", 0) != 0) {
    define(node, 0, x);
    return;
  }
  DenseI64ArrayAttr axesAttr =
      builder.getDenseI64ArrayAttr(axes.value_or(std::vector<int64_t>{}));
  Value result = mean
                     ? build<nn::ReduceMeanOp>(node, 1, x, axesAttr,
                                               builder.getBoolAttr(keepdims))[0]
                     : build<nn::ReduceSumOp>(node, 1, x, axesAttr,
                                              builder.getBoolAttr(keepdims))[0];
  define(node, 0, result);
}

void Importer::convertCast(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  if (!attribute(node, "to"))
    failAt(node, "needs the 'to' attribute");
  Type target =
      elementType(static_cast<int32_t>(intAttr(node, "to", 0)),
                  "node " + quote(nodeLabel(node)) + " (Cast): target");
  define(node, 0, castTo(node, x, target));
}

void Importer::convertNeg(const onnx::NodeProto &node) {
  // 0 - x: the subtraction's rules and gradient.
  Value x = input(node, 0);
  Value zeroValue =
      splat(node, RankedTensorType::get({}, typeOf(x).getElementType()), 0);
  define(node, 0, build<nn::SubOp>(node, 1, zeroValue, x)[0]);
}

void Importer::convertCompare(const onnx::NodeProto &node) {
  Value lhs = input(node, 0), rhs = input(node, 1);
  const std::string &type = node.op_type();
  Value result;
  if (type == "Equal")
    result = build<nn::EqualOp>(node, 1, lhs, rhs)[0];
  else if (type == "Less")
    result = build<nn::LessOp>(node, 1, lhs, rhs)[0];
  else if (type == "Greater")
    result = build<nn::GreaterOp>(node, 1, lhs, rhs)[0];
  else if (type == "And")
    result = build<nn::AndOp>(node, 1, lhs, rhs)[0];
  else if (type == "Or")
    result = build<nn::OrOp>(node, 1, lhs, rhs)[0];
  else if (type == "LessOrEqual" || type == "GreaterOrEqual") {
    // Strict or equal: false where either side is NaN, as ONNX's are (the
    // negation of the opposite comparison would be true there).
    Value strict = type == "LessOrEqual"
                       ? build<nn::LessOp>(node, 1, lhs, rhs)[0]
                       : build<nn::GreaterOp>(node, 1, lhs, rhs)[0];
    result = build<nn::OrOp>(node, 1, strict,
                             build<nn::EqualOp>(node, 1, lhs, rhs)[0])[0];
  } else {
    // Xor: either, and not both.
    Value both = build<nn::AndOp>(node, 1, lhs, rhs)[0];
    Value either = build<nn::OrOp>(node, 1, lhs, rhs)[0];
    Value notBoth = buildTyped<nn::NotOp>(node, both.getType(), both);
    result = build<nn::AndOp>(node, 1, either, notBoth)[0];
  }
  define(node, 0, result);
}

void Importer::convertVariadic(const onnx::NodeProto &node) {
  // One or more inputs, broadcast together as numpy does: a chain of
  // binary ops in input order (Max and Min as a where of a comparison,
  // whose gradient goes to the later input on a tie), so every rule,
  // kernel and gradient is the binary ops' own.
  const std::string &type = node.op_type();
  if (node.input_size() == 0)
    failAt(node, "needs at least one input");
  Value result = input(node, 0);
  for (int i = 1; i < node.input_size(); ++i) {
    Value next = input(node, i);
    if (type == "Sum" || type == "Mean") {
      result = build<nn::AddOp>(node, 1, result, next)[0];
      continue;
    }
    Value keep = type == "Max" ? build<nn::GreaterOp>(node, 1, result, next)[0]
                               : build<nn::LessOp>(node, 1, result, next)[0];
    result = build<nn::WhereOp>(node, 1, keep, result, next)[0];
  }
  if (type == "Mean" && node.input_size() > 1) {
    Type element = typeOf(result).getElementType();
    if (!isa<FloatType>(element))
      failAt(node, "averages a tensor of " + typeName(element) +
                       "; ONNX's Mean takes floating-point tensors");
    Value divisor = splat(node, RankedTensorType::get({}, element),
                          static_cast<double>(node.input_size()));
    result = build<nn::DivOp>(node, 1, result, divisor)[0];
  }
  define(node, 0, result);
}

void Importer::convertNot(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  define(node, 0, buildTyped<nn::NotOp>(node, x.getType(), x));
}

void Importer::convertWhere(const onnx::NodeProto &node) {
  Value condition = input(node, 0), lhs = input(node, 1), rhs = input(node, 2);
  define(node, 0, build<nn::WhereOp>(node, 1, condition, lhs, rhs)[0]);
}
