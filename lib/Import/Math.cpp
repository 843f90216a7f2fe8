//===- Math.cpp - ONNX math ops to nn -------------------------------------===//
//
// Products (MatMul, Gemm), elementwise arithmetic, activations, comparisons,
// reductions, Softmax and Cast: the ops onnx-mlir keeps in Math/.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include <cctype>
#include <numeric>

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

Value Importer::absolute(const onnx::NodeProto &node, Value x) {
  Value zero =
      splat(node, RankedTensorType::get({}, typeOf(x).getElementType()), 0);
  Value negative = build<nn::LessOp>(node, 1, x, zero)[0];
  Value negated = build<nn::SubOp>(node, 1, zero, x)[0];
  return build<nn::WhereOp>(node, 1, negative, negated, x)[0];
}

void Importer::convertReduce(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  const std::string &type = node.op_type();
  bool mean = type == "ReduceMean";
  // The reductions of a sum of something, written as that something, the
  // sum, and what the sum becomes: every rule, kernel and gradient is
  // those ops' own (LogSumExp without the max subtracted, as its
  // definition reads).
  if (type == "ReduceSumSquare" || type == "ReduceL2")
    x = build<nn::MulOp>(node, 1, x, x)[0];
  else if (type == "ReduceL1")
    x = absolute(node, x);
  else if (type == "ReduceLogSumExp")
    x = build<nn::ExpOp>(node, 1, x)[0];
  auto finish = [&](Value sum) {
    if (type == "ReduceL2")
      return build<nn::SqrtOp>(node, 1, sum)[0];
    if (type == "ReduceLogSum" || type == "ReduceLogSumExp")
      return build<nn::LogOp>(node, 1, sum)[0];
    return sum;
  };
  // Axes moved from an attribute to an input: ReduceSum at 13, others at 18.
  bool axesAsInput = type == "ReduceSum" ? opset >= 13 : opset >= 18;
  std::optional<std::vector<int64_t>> axes =
      axesAsInput ? optionalConstantInts(node, 1, "axes")
                  : intsAttr(node, "axes");
  bool keepdims = intAttr(node, "keepdims", 1) != 0;
  if ((!axes || axes->empty()) &&
      intAttr(node, "noop_with_empty_axes", 0) != 0) {
    define(node, 0, finish(x));
    return;
  }
  DenseI64ArrayAttr axesAttr =
      builder.getDenseI64ArrayAttr(axes.value_or(std::vector<int64_t>{}));
  Value result = mean
                     ? build<nn::ReduceMeanOp>(node, 1, x, axesAttr,
                                               builder.getBoolAttr(keepdims))[0]
                     : build<nn::ReduceSumOp>(node, 1, x, axesAttr,
                                              builder.getBoolAttr(keepdims))[0];
  define(node, 0, finish(result));
}

// NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss as it on the
// log-softmax over the classes: the class each target names is picked by a
// one-hot mask (an nn.equal of the target against the class indices), so
// the loss is elementwise ops and sums, differentiable by their rules. A
// target outside the classes (ignore_index is often -1 or -100) picks
// nothing; ignore_index's elements weigh 0, and `mean` divides by the
// weights of the elements not ignored, as ONNX does.
void Importer::convertLoss(const onnx::NodeProto &node) {
  bool softmax = node.op_type() == "SoftmaxCrossEntropyLoss";
  Value scores = input(node, 0), target = input(node, 1);
  RankedTensorType type = typeOf(scores);
  Type element = type.getElementType();
  int64_t rank = type.getRank();
  if (!isa<FloatType>(element) || rank < 2)
    failAt(node, "needs floating-point scores [N, C, D...]");
  ArrayRef<int64_t> shape = type.getShape();
  std::vector<int64_t> targetShape = {shape[0]};
  targetShape.insert(targetShape.end(), shape.begin() + 2, shape.end());
  if (typeOf(target).getShape() != ArrayRef<int64_t>(targetShape) ||
      !isa<IntegerType>(typeOf(target).getElementType()))
    failAt(node,
           "needs an integer target of shape " + listString(targetShape) +
               " for scores of shape " +
               listString(std::vector<int64_t>(shape.begin(), shape.end())));
  std::string reduction = stringAttr(node, "reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    failAt(node, "reduction '" + reduction + "' is not mean, sum or none");
  Value logProbabilities =
      softmax ? buildTyped<nn::LogSoftmaxOp>(node, type, scores,
                                             builder.getI64IntegerAttr(1))
              : scores;
  Type i64 = builder.getI64Type();
  target = castTo(node, target, i64);
  int64_t classes = shape[1];
  std::vector<int64_t> columnShape(static_cast<size_t>(rank), 1);
  columnShape[1] = classes;
  std::vector<int64_t> indices(static_cast<size_t>(classes));
  std::iota(indices.begin(), indices.end(), 0);
  auto classType = RankedTensorType::get(columnShape, i64);
  Value classIndices = prologue([&](OpBuilder &b) {
    return nn::ConstantOp::create(
               b, loc(node),
               DenseElementsAttr::get(classType, ArrayRef<int64_t>(indices)))
        .getResult();
  });
  std::vector<int64_t> spread = targetShape;
  spread.insert(spread.begin() + 1, 1);
  Value oneHot =
      castTo(node,
             build<nn::EqualOp>(node, 1, reshape(node, target, spread),
                                classIndices)[0],
             element);
  DenseI64ArrayAttr classAxis = builder.getDenseI64ArrayAttr({1});
  auto sumOverClasses = [&](Value value) {
    return build<nn::ReduceSumOp>(node, 1, value, classAxis,
                                  builder.getBoolAttr(false))[0];
  };
  Value zero = splat(node, RankedTensorType::get({}, element), 0);
  Value loss = build<nn::SubOp>(node, 1, zero,
                                sumOverClasses(build<nn::MulOp>(
                                    node, 1, logProbabilities, oneHot)[0]))[0];
  // Each element's weight: its class's, and 0 where ignored.
  Value weight;
  if (Value classWeights = optionalInput(node, 2)) {
    if (typeOf(classWeights).getShape() != ArrayRef<int64_t>{classes})
      failAt(node,
             "needs weights of the " + std::to_string(classes) + " classes");
    weight = sumOverClasses(build<nn::MulOp>(
        node, 1, oneHot, reshape(node, classWeights, columnShape))[0]);
  }
  if (const onnx::AttributeProto *ignore = attribute(node, "ignore_index")) {
    Value ignored = splat(node, RankedTensorType::get({}, i64),
                          static_cast<double>(ignore->i()));
    Value kept =
        castTo(node,
               build<nn::NotOp>(
                   node, 1, build<nn::EqualOp>(node, 1, target, ignored)[0])[0],
               element);
    weight = weight ? build<nn::MulOp>(node, 1, weight, kept)[0] : kept;
  }
  if (weight)
    loss = build<nn::MulOp>(node, 1, loss, weight)[0];
  DenseI64ArrayAttr all = builder.getDenseI64ArrayAttr({});
  BoolAttr scalar = builder.getBoolAttr(false);
  if (reduction == "sum")
    loss = build<nn::ReduceSumOp>(node, 1, loss, all, scalar)[0];
  else if (reduction == "mean" && !weight)
    loss = build<nn::ReduceMeanOp>(node, 1, loss, all, scalar)[0];
  else if (reduction == "mean") {
    Value total = build<nn::ReduceSumOp>(node, 1, loss, all, scalar)[0];
    Value weights = build<nn::ReduceSumOp>(node, 1, weight, all, scalar)[0];
    loss = build<nn::DivOp>(node, 1, total, weights)[0];
  }
  define(node, 0, loss);
  if (softmax && node.output_size() > 1 && !node.output(1).empty())
    define(node, 1, logProbabilities);
}

// Activations and elementwise ops written in ops parplan has, so that their
// rules, costs, kernels and gradients are those ops' own.
void Importer::convertComposite(const onnx::NodeProto &node) {
  const std::string &type = node.op_type();
  Value x = input(node, 0);
  Type element = typeOf(x).getElementType();
  auto scalar = [&](double value) {
    return splat(node, RankedTensorType::get({}, element), value);
  };
  if (type == "CastLike") {
    define(node, 0, castTo(node, x, typeOf(input(node, 1)).getElementType()));
    return;
  }
  if (type == "Size") {
    define(node, 0,
           splat(node, RankedTensorType::get({}, builder.getI64Type()),
                 static_cast<double>(typeOf(x).getNumElements())));
    return;
  }
  if (type == "Abs") {
    define(node, 0, absolute(node, x));
    return;
  }
  if (!isa<FloatType>(element))
    failAt(node, "takes a tensor of " + typeName(element) +
                     "; parplan computes " + type + " in floating point");
  if (type == "Reciprocal") {
    define(node, 0, build<nn::DivOp>(node, 1, scalar(1), x)[0]);
    return;
  }
  Value negative = build<nn::LessOp>(node, 1, x, scalar(0))[0];
  if (type == "PRelu") {
    Value scaled = build<nn::MulOp>(node, 1, x, input(node, 1))[0];
    if (typeOf(scaled) != typeOf(x))
      failAt(node, "slope of shape " +
                       listString(std::vector<int64_t>(
                           typeOf(input(node, 1)).getShape().begin(),
                           typeOf(input(node, 1)).getShape().end())) +
                       " does not broadcast to the input's");
    define(node, 0, build<nn::WhereOp>(node, 1, negative, scaled, x)[0]);
    return;
  }
  // Elu and Selu: alpha * (exp(x) - 1) below 0, of x clamped to 0 there,
  // so that no exp of a large x overflows into the gradient.
  bool selu = type == "Selu";
  double alpha =
      floatAttr(node, "alpha", selu ? 1.67326319217681884765625f : 1.0f);
  Value below = build<nn::WhereOp>(node, 1, negative, x, scalar(0))[0];
  Value curve = build<nn::MulOp>(
      node, 1, scalar(alpha),
      build<nn::SubOp>(node, 1, build<nn::ExpOp>(node, 1, below)[0],
                       scalar(1))[0])[0];
  Value result = build<nn::WhereOp>(node, 1, negative, curve, x)[0];
  if (selu)
    result = build<nn::MulOp>(
        node, 1, scalar(floatAttr(node, "gamma", 1.05070102214813232421875f)),
        result)[0];
  define(node, 0, result);
}

// Trilu keeps the upper (or lower) triangle of the last two axes from
// diagonal k: a where on a constant mask.
void Importer::convertTrilu(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  if (type.getRank() < 2)
    failAt(node, "needs a tensor of rank 2 or more");
  int64_t k = 0;
  if (auto given = optionalConstantInts(node, 1, "k")) {
    if (given->size() != 1)
      failAt(node, "needs k as one integer");
    k = given->front();
  }
  bool upper = intAttr(node, "upper", 1) != 0;
  int64_t rows = type.getDimSize(type.getRank() - 2),
          columns = type.getDimSize(type.getRank() - 1);
  SmallVector<bool> keep;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j)
      keep.push_back(upper ? j - i >= k : j - i <= k);
  auto maskType = RankedTensorType::get({rows, columns}, builder.getI1Type());
  Value mask = prologue([&](OpBuilder &b) {
    return nn::ConstantOp::create(
               b, loc(node),
               DenseElementsAttr::get(maskType, ArrayRef<bool>(keep)))
        .getResult();
  });
  Value zero = splat(node, RankedTensorType::get({}, type.getElementType()), 0);
  define(node, 0, build<nn::WhereOp>(node, 1, mask, x, zero)[0]);
}

// Einsum of one or two operands without ellipses or repeated indices (the
// equations of attention and linear layers) is transposes, reshapes, sums
// and one nn.matmul: indices of one operand alone that the output drops are
// summed first; the rest are batch (both operands and the output),
// contracted (both, not the output) or free (one operand and the output),
// and the product runs as [batch..., M, K] x [batch..., K, N].
void Importer::convertEinsum(const onnx::NodeProto &node) {
  std::string equation;
  for (char c : stringAttr(node, "equation", ""))
    if (c != ' ')
      equation += c;
  size_t arrow = equation.find("->");
  std::string inputsText = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = inputsText.find(',', start);
    terms.push_back(inputsText.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != static_cast<size_t>(node.input_size()) ||
      terms.size() > 2)
    failAt(node, "equation '" + equation + "' has " +
                     std::to_string(terms.size()) + " operands for " +
                     std::to_string(node.input_size()) +
                     " inputs; parplan takes one or two");
  std::vector<Value> operands;
  for (size_t i = 0; i < terms.size(); ++i)
    operands.push_back(input(node, static_cast<int>(i)));
  // An ellipsis stands for the axes its term's letters leave; those of all
  // terms broadcast right-aligned (numpy's rule). They become letters the
  // equation does not use, and an operand whose ellipsis axis is 1 where
  // another's is longer is expanded to it.
  std::string fresh;
  {
    std::string unused;
    for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
                              "vwxyz"))
      if (equation.find(c) == std::string::npos)
        unused += c;
    std::vector<int64_t> ellipsisRanks(terms.size(), -1);
    int64_t widest = 0;
    for (size_t i = 0; i < terms.size(); ++i) {
      size_t dots = terms[i].find("...");
      if (dots == std::string::npos)
        continue;
      int64_t letters = static_cast<int64_t>(terms[i].size()) - 3;
      int64_t rank = typeOf(operands[i]).getRank();
      if (terms[i].find('.', dots + 3) != std::string::npos || letters > rank)
        failAt(node, "term '" + terms[i] + "' has more than one ellipsis, " +
                         "or more letters than its operand's " +
                         std::to_string(rank) + " axes");
      ellipsisRanks[i] = rank - letters;
      widest = std::max(widest, rank - letters);
    }
    if (widest > static_cast<int64_t>(unused.size()))
      failAt(node, "equation '" + equation +
                       "' leaves too few letters for its ellipsis axes");
    fresh = unused.substr(0, static_cast<size_t>(widest));
    std::vector<int64_t> broadcast(fresh.size(), 1);
    for (size_t i = 0; i < terms.size(); ++i) {
      if (ellipsisRanks[i] < 0)
        continue;
      std::string letters = fresh.substr(fresh.size() - ellipsisRanks[i]);
      size_t dots = terms[i].find("...");
      ArrayRef<int64_t> shape = typeOf(operands[i]).getShape();
      for (size_t j = 0; j < letters.size(); ++j) {
        int64_t size = shape[dots + j];
        int64_t &target = broadcast[fresh.size() - letters.size() + j];
        if (size != 1 && target != 1 && size != target)
          failAt(node, "the ellipsis axes of '" + terms[i] +
                           "' do not broadcast with the other operand's");
        target = std::max(target, size);
      }
      terms[i].replace(dots, 3, letters);
    }
    for (size_t i = 0; i < terms.size(); ++i) {
      if (ellipsisRanks[i] <= 0)
        continue;
      RankedTensorType type = typeOf(operands[i]);
      SmallVector<int64_t> shape(type.getShape());
      for (size_t d = 0; d < terms[i].size(); ++d)
        if (size_t at = fresh.find(terms[i][d]); at != std::string::npos)
          shape[d] = broadcast[at];
      if (ArrayRef<int64_t>(shape) != type.getShape())
        operands[i] =
            buildTyped<nn::ExpandOp>(node, type.clone(shape), operands[i]);
    }
  }
  // How often each letter is named, diagonals included: without "->", the
  // output keeps the letters named once ("ii" is a trace, not a diagonal).
  std::map<char, int64_t> count;
  for (const std::string &term : terms)
    for (char index : term)
      ++count[index];
  // Each term names every axis of its operand, by letters alone (checked
  // before the diagonals index the operand's axes by the term's).
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t rank = typeOf(operands[i]).getRank();
    for (size_t d = 0; d < terms[i].size(); ++d)
      if (!std::isalpha(static_cast<unsigned char>(terms[i][d])))
        failAt(node, "equation '" + equation +
                         "': a term may hold letters and one ellipsis");
    if (static_cast<int64_t>(terms[i].size()) != rank)
      failAt(node, "term '" + terms[i] + "' names " +
                       std::to_string(terms[i].size()) +
                       " axes of an operand of rank " + std::to_string(rank));
  }
  // A letter twice in a term takes the diagonal: the operand times an
  // identity mask over the two axes, summed over the second.
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t second = 1; second < terms[i].size(); ++second) {
      size_t first = terms[i].find(terms[i][second]);
      if (first == second ||
          !std::isalpha(static_cast<unsigned char>(terms[i][second])))
        continue;
      RankedTensorType type = typeOf(operands[i]);
      int64_t n = type.getDimSize(static_cast<int64_t>(first));
      if (type.getDimSize(static_cast<int64_t>(second)) != n)
        failAt(node, std::string("index '") + terms[i][second] + "' is " +
                         std::to_string(n) + " and " +
                         std::to_string(type.getDimSize(second)) + " long");
      SmallVector<int64_t> maskShape(type.getRank(), 1);
      maskShape[first] = maskShape[second] = n;
      std::vector<Attribute> ones;
      Type element = type.getElementType();
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < n; ++c)
          ones.push_back(isa<FloatType>(element)
                             ? Attribute(builder.getFloatAttr(element, r == c))
                             : Attribute(builder.getIntegerAttr(
                                   element, static_cast<int64_t>(r == c))));
      auto maskType = RankedTensorType::get(maskShape, element);
      Value mask = prologue([&](OpBuilder &b) {
        return nn::ConstantOp::create(b, loc(node),
                                      DenseElementsAttr::get(maskType, ones))
            .getResult();
      });
      Value masked = build<nn::MulOp>(node, 1, operands[i], mask)[0];
      operands[i] = build<nn::ReduceSumOp>(
          node, 1, masked,
          builder.getDenseI64ArrayAttr({static_cast<int64_t>(second)}),
          builder.getBoolAttr(false))[0];
      terms[i].erase(second, 1);
      --second;
    }
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < terms.size(); ++i) {
    ArrayRef<int64_t> shape = typeOf(operands[i]).getShape();
    for (size_t d = 0; d < terms[i].size(); ++d) {
      char index = terms[i][d];
      auto [known, added] = extent.try_emplace(index, shape[d]);
      if (!added && known->second != shape[d])
        failAt(node, std::string("index '") + index + "' is " +
                         std::to_string(known->second) + " and " +
                         std::to_string(shape[d]) + " long");
    }
  }
  // Without "->", the output is the ellipsis axes, then the indices named
  // once, alphabetically.
  std::string output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
    if (size_t dots = output.find("..."); dots != std::string::npos)
      output.replace(dots, 3, fresh);
  } else {
    output = fresh;
    for (auto [index, times] : count)
      if (times == 1 && fresh.find(index) == std::string::npos)
        output += index;
  }
  for (char index : output)
    if (!extent.count(index) || output.find(index) != output.rfind(index))
      failAt(node, "output '" + output +
                       "' names an index no operand has, "
                       "or one twice");
  auto inOutput = [&](char index) {
    return output.find(index) != std::string::npos;
  };
  // Sums an operand over the indices no one else needs; `term` follows.
  auto sumAlone = [&](Value value, std::string &term,
                      const std::string &other) {
    std::vector<int64_t> axes;
    std::string kept;
    for (size_t d = 0; d < term.size(); ++d) {
      if (!inOutput(term[d]) && other.find(term[d]) == std::string::npos)
        axes.push_back(static_cast<int64_t>(d));
      else
        kept += term[d];
    }
    term = kept;
    if (axes.empty())
      return value;
    return build<nn::ReduceSumOp>(node, 1, value,
                                  builder.getDenseI64ArrayAttr(axes),
                                  builder.getBoolAttr(false))[0];
  };
  // `value`, whose axes `term` names, with its axes in the order `order`.
  auto arrange = [&](Value value, const std::string &term,
                     const std::string &order) {
    std::vector<int64_t> perm;
    for (char index : order)
      perm.push_back(static_cast<int64_t>(term.find(index)));
    bool identity = true;
    for (size_t d = 0; d < perm.size(); ++d)
      identity = identity && perm[d] == static_cast<int64_t>(d);
    if (identity)
      return value;
    return build<nn::TransposeOp>(node, 1, value,
                                  builder.getDenseI64ArrayAttr(perm))[0];
  };
  auto extents = [&](const std::string &indices) {
    std::vector<int64_t> shape;
    for (char index : indices)
      shape.push_back(extent[index]);
    return shape;
  };
  auto product = [&](const std::string &indices) {
    int64_t size = 1;
    for (char index : indices)
      size *= extent[index];
    return size;
  };
  if (operands.size() == 1) {
    std::string term = terms[0];
    Value summed = sumAlone(operands[0], term, "");
    define(node, 0, arrange(summed, term, output));
    return;
  }
  std::string a = terms[0], b = terms[1];
  Value lhs = sumAlone(operands[0], a, b);
  Value rhs = sumAlone(operands[1], b, a);
  std::string batch, contracted, freeA, freeB;
  for (char index : output) {
    bool inA = a.find(index) != std::string::npos;
    bool inB = b.find(index) != std::string::npos;
    (inA && inB ? batch : inA ? freeA : freeB) += index;
  }
  for (char index : a)
    if (!inOutput(index))
      contracted += index;
  for (const auto &[value, term] : {std::pair{lhs, a}, std::pair{rhs, b}})
    if (!isa<FloatType>(typeOf(value).getElementType()))
      failAt(node, "multiplies a tensor of " +
                       typeName(typeOf(value).getElementType()) +
                       "; parplan's products take floating point");
  std::vector<int64_t> batchShape = extents(batch);
  auto withBatch = [&](std::vector<int64_t> tail) {
    std::vector<int64_t> shape = batchShape;
    shape.insert(shape.end(), tail.begin(), tail.end());
    return shape;
  };
  lhs = reshape(node, arrange(lhs, a, batch + freeA + contracted),
                withBatch({product(freeA), product(contracted)}));
  rhs = reshape(node, arrange(rhs, b, batch + contracted + freeB),
                withBatch({product(contracted), product(freeB)}));
  Value result = build<nn::MatMulOp>(node, 1, lhs, rhs, UnitAttr(), UnitAttr(),
                                     FloatAttr())[0];
  std::vector<int64_t> unfolded = batchShape;
  for (int64_t size : extents(freeA + freeB))
    unfolded.push_back(size);
  result = reshape(node, result, unfolded);
  define(node, 0, arrange(result, batch + freeA + freeB, output));
}

// CumSum along an axis of n elements is a product with an n x n triangle
// of ones (the axis moved last and back): its rules, kernels and gradient
// are the matmul's. Integers go through f64, exact below 2^53.
void Importer::convertCumSum(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  std::vector<int64_t> axisValues = constantInts(node, 1, "axis");
  if (axisValues.size() != 1 || rank == 0)
    failAt(node, "needs one axis of a tensor of rank 1 or more");
  std::optional<int64_t> axis = normalizeAxis(axisValues.front(), rank);
  if (!axis)
    failAt(node, "axis " + std::to_string(axisValues.front()) +
                     " is out of range for rank " + std::to_string(rank));
  bool exclusive = intAttr(node, "exclusive", 0) != 0;
  bool reverse = intAttr(node, "reverse", 0) != 0;
  Type element = type.getElementType();
  Type computed = isa<FloatType>(element) ? element : builder.getF64Type();
  int64_t n = type.getDimSize(*axis);
  SmallVector<Attribute> ones;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      bool sums = reverse ? i >= j : i <= j;
      if (exclusive && i == j)
        sums = false;
      ones.push_back(builder.getFloatAttr(computed, sums ? 1.0 : 0.0));
    }
  auto triangleType = RankedTensorType::get({n, n}, computed);
  Value triangle = prologue([&](OpBuilder &b) {
    return nn::ConstantOp::create(b, loc(node),
                                  DenseElementsAttr::get(triangleType, ones))
        .getResult();
  });
  std::vector<int64_t> toLast, back(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis)
      toLast.push_back(d);
  toLast.push_back(*axis);
  for (int64_t d = 0; d < rank; ++d)
    back[static_cast<size_t>(toLast[static_cast<size_t>(d)])] = d;
  Value moved = castTo(node, x, computed);
  if (*axis != rank - 1)
    moved = build<nn::TransposeOp>(node, 1, moved,
                                   builder.getDenseI64ArrayAttr(toLast))[0];
  Value sums = build<nn::MatMulOp>(node, 1, moved, triangle, UnitAttr(),
                                   UnitAttr(), FloatAttr())[0];
  if (*axis != rank - 1)
    sums = build<nn::TransposeOp>(node, 1, sums,
                                  builder.getDenseI64ArrayAttr(back))[0];
  define(node, 0, castTo(node, sums, element));
}

void Importer::convertTopK(const onnx::NodeProto &node) {
  Value x = input(node, 0);
  RankedTensorType type = typeOf(x);
  int64_t axis = intAttr(node, "axis", -1);
  std::optional<int64_t> normalized = normalizeAxis(axis, type.getRank());
  if (!normalized)
    failAt(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(type.getRank()));
  int64_t k = 0;
  if (opset < 10) {
    k = intAttr(node, "k", -1);
  } else {
    std::vector<int64_t> given = constantInts(node, 1, "K");
    if (given.size() != 1)
      failAt(node, "needs K as one integer");
    k = given.front();
  }
  if (k < 0 || k > type.getDimSize(*normalized))
    failAt(node, "k " + std::to_string(k) + " is not between 0 and the " +
                     std::to_string(type.getDimSize(*normalized)) +
                     " elements of axis " + std::to_string(*normalized));
  SmallVector<int64_t> shape(type.getShape());
  shape[*normalized] = k;
  auto op = nn::TopKOp::create(
      builder, loc(node),
      TypeRange{RankedTensorType::get(shape, type.getElementType()),
                RankedTensorType::get(shape, builder.getI64Type())},
      x, builder.getI64IntegerAttr(axis), builder.getI64IntegerAttr(k),
      builder.getBoolAttr(intAttr(node, "largest", 1) != 0),
      builder.getBoolAttr(intAttr(node, "sorted", 1) != 0));
  SmallVector<Value> results = finish(node, op);
  for (int i = 0; i < 2 && i < node.output_size(); ++i)
    if (!node.output(i).empty())
      define(node, i, results[static_cast<size_t>(i)]);
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
