//===- Recurrent.cpp - ONNX recurrent layers to nn ------------------------===//
//
// RNN, GRU and LSTM, unrolled over their sequence at import: parplan plans
// static programs, so a sequence of known length becomes one gemm for the
// input projection of every step and, per step, a gemm for the recurrence
// and the gates' elementwise ops. The nn ops it is made of carry the sharding
// rules, costs, kernels and gradients, so a recurrent layer plans, runs and
// trains as they do. onnx-mlir keeps these ops in RNN/.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

// The converters are Importer's members: their bodies see its namespace.
using namespace parplan::import;

namespace {
/// What distinguishes ONNX's three recurrent layers: the gates each weight
/// stacks, and the activations the unrolled cell computes (ONNX's defaults,
/// per direction).
struct RecurrentKind {
  int64_t gates;
  std::vector<std::string> activations;
};

const RecurrentKind &recurrentKind(const std::string &opType) {
  static const RecurrentKind rnn{1, {"Tanh"}};
  static const RecurrentKind gru{3, {"Sigmoid", "Tanh"}};
  static const RecurrentKind lstm{4, {"Sigmoid", "Tanh", "Tanh"}};
  return opType == "RNN" ? rnn : opType == "GRU" ? gru : lstm;
}
} // namespace

void Importer::convertRecurrent(const onnx::NodeProto &node) {
  const std::string &opType = node.op_type();
  const RecurrentKind &kind = recurrentKind(opType);
  bool isLstm = opType == "LSTM", isGru = opType == "GRU";
  int64_t gates = kind.gates;
  Value x = input(node, 0), w = input(node, 1), r = input(node, 2);
  Value bias = optionalInput(node, 3), initialH = optionalInput(node, 5);
  Value initialC = isLstm ? optionalInput(node, 6) : Value();
  Value peepholes = isLstm ? optionalInput(node, 7) : Value();
  std::string direction = stringAttr(node, "direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    failAt(node, "direction " + quote(direction) +
                     " is not forward, reverse or bidirectional");
  int64_t directions = direction == "bidirectional" ? 2 : 1;
  int64_t layout = intAttr(node, "layout", 0);
  if (layout != 0 && layout != 1)
    failAt(node, "layout " + std::to_string(layout) + " is not 0 or 1");
  if (attribute(node, "clip"))
    failAt(node, "clip is not supported (the cell's values are not clipped)");
  if (isLstm && intAttr(node, "input_forget", 0) != 0)
    failAt(node, "input_forget = 1 (coupled input and forget gates) is not "
                 "supported");
  bool linearBeforeReset =
      isGru && intAttr(node, "linear_before_reset", 0) != 0;
  if (const onnx::AttributeProto *given = attribute(node, "activations")) {
    std::vector<std::string> names(given->strings().begin(),
                                   given->strings().end());
    size_t count = kind.activations.size();
    bool defaults = names.size() == count * directions;
    for (size_t i = 0; defaults && i < names.size(); ++i)
      defaults = names[i] == kind.activations[i % count];
    if (!defaults) {
      std::string listed, expected;
      for (const std::string &name : names)
        listed += (listed.empty() ? "" : ", ") + name;
      for (const std::string &name : kind.activations)
        expected += (expected.empty() ? "" : ", ") + name;
      failAt(node, "activations [" + listed +
                       "] are not supported; only the default " + expected +
                       " per direction");
    }
  }
  if (attribute(node, "activation_alpha") || attribute(node, "activation_beta"))
    failAt(node, "activation_alpha and activation_beta are not supported");

  RankedTensorType xType = typeOf(x);
  if (!isa<FloatType>(xType.getElementType()))
    failAt(node, "input X must be a float tensor, not " + typeName(xType));
  if (xType.getRank() != 3)
    failAt(node, "input X must be 3-D ([sequence, batch, input], or [batch, "
                 "sequence, input] with layout 1), not " +
                     shapeString(xType.getShape()));
  // Layout 1 puts the batch first; the steps below see [sequence, batch, ..].
  if (layout == 1)
    x = build<nn::TransposeOp>(node, 1, x,
                               builder.getDenseI64ArrayAttr({1, 0, 2}))[0];
  ArrayRef<int64_t> xShape = typeOf(x).getShape();
  int64_t steps = xShape[0], batch = xShape[1], inputSize = xShape[2];
  if (steps == 0)
    failAt(node, "has an empty sequence");
  RankedTensorType rType = typeOf(r);
  if (rType.getRank() != 3)
    failAt(node,
           "recurrence weight R must be 3-D [directions, " +
               (gates == 1 ? std::string("") : std::to_string(gates) + " * ") +
               "hidden, hidden], not " + shapeString(rType.getShape()));
  int64_t hidden = intAttr(node, "hidden_size", rType.getDimSize(2));
  Type element = xType.getElementType();
  auto expectShape = [&](Value value, ArrayRef<int64_t> shape,
                         const std::string &what) {
    RankedTensorType type = typeOf(value);
    if (type.getShape() != shape || type.getElementType() != element)
      failAt(node, what + " is " + typeName(type) + ", expected " +
                       typeName(RankedTensorType::get(shape, element)) +
                       " (hidden_size " + std::to_string(hidden) + ", " +
                       std::to_string(directions) +
                       (directions == 1 ? " direction)" : " directions)"));
  };
  expectShape(w, {directions, gates * hidden, inputSize}, "input weight W");
  expectShape(r, {directions, gates * hidden, hidden}, "recurrence weight R");
  if (bias)
    expectShape(bias, {directions, 2 * gates * hidden}, "bias B");
  if (peepholes)
    expectShape(peepholes, {directions, 3 * hidden}, "peephole weight P");
  // Initial states come [directions, batch, hidden], or [batch, directions,
  // hidden] with layout 1.
  auto stateInput = [&](Value state, const std::string &what) -> Value {
    if (!state)
      return splat(node,
                   RankedTensorType::get({directions, batch, hidden}, element),
                   0.0);
    if (layout == 1) {
      expectShape(state, {batch, directions, hidden}, what);
      return build<nn::TransposeOp>(node, 1, state,
                                    builder.getDenseI64ArrayAttr({1, 0, 2}))[0];
    }
    expectShape(state, {directions, batch, hidden}, what);
    return state;
  };
  initialH = stateInput(initialH, "initial_h");
  if (isLstm)
    initialC = stateInput(initialC, "initial_c");
  if (auto lengths = optionalConstantInts(node, 4, "sequence_lens"))
    if (static_cast<int64_t>(lengths->size()) != batch ||
        llvm::any_of(*lengths, [&](int64_t n) { return n != steps; }))
      failAt(node, "sequence_lens " + listString(*lengths) +
                       " must give every one of the " + std::to_string(batch) +
                       " sequences the full length " + std::to_string(steps) +
                       "; parplan plans sequences of one length");

  // Each weight, bias and state's slice for one direction, without the
  // direction dimension.
  auto perDirection = [&](Value value) {
    SmallVector<Value> parts{value};
    if (directions > 1)
      parts = build<nn::SplitOp>(
          node, directions, value, builder.getI64IntegerAttr(0),
          builder.getDenseI64ArrayAttr(SmallVector<int64_t>(directions, 1)));
    ArrayRef<int64_t> shape = typeOf(value).getShape().drop_front();
    for (Value &part : parts)
      part = reshape(node, part, shape);
    return parts;
  };
  auto add = [&](Value a, Value b) {
    return build<nn::AddOp>(node, 1, a, b)[0];
  };
  auto sub = [&](Value a, Value b) {
    return build<nn::SubOp>(node, 1, a, b)[0];
  };
  auto mul = [&](Value a, Value b) {
    return build<nn::MulOp>(node, 1, a, b)[0];
  };
  auto split = [&](Value value, int64_t axis, ArrayRef<int64_t> sizes) {
    return build<nn::SplitOp>(node, sizes.size(), value,
                              builder.getI64IntegerAttr(axis),
                              builder.getDenseI64ArrayAttr(sizes));
  };
  auto splitEven = [&](Value value, int64_t axis, int64_t parts, int64_t size) {
    return split(value, axis, SmallVector<int64_t>(parts, size));
  };
  // a x b^T (+ c): every product here is against a weight stored [out, in].
  auto linear = [&](Value a, Value b, Value c) {
    return build<nn::GemmOp>(node, 1, a, b, c, builder.getF32FloatAttr(1.0f),
                             builder.getF32FloatAttr(1.0f),
                             builder.getBoolAttr(false),
                             builder.getBoolAttr(true))[0];
  };
  auto sigmoid = [&](Value v) {
    return buildTyped<nn::SigmoidOp>(node, v.getType(), v);
  };
  auto tanh = [&](Value v) {
    return buildTyped<nn::TanhOp>(node, v.getType(), v);
  };

  SmallVector<Value> ws = perDirection(w), rs = perDirection(r),
                     hs = perDirection(initialH);
  SmallVector<Value> cs, bs, ps;
  if (isLstm)
    cs = perDirection(initialC);
  if (bias)
    bs = perDirection(bias);
  if (peepholes)
    ps = perDirection(peepholes);
  Value inputs = reshape(node, x, {steps * batch, inputSize});
  SmallVector<Value> outputs, lastH, lastC;
  for (int64_t d = 0; d < directions; ++d) {
    // The bias B is the input's half Wb then the recurrence's Rb. Both go
    // into the input projection, except GRU's Rb, which the reset gate
    // scales (its candidate's share) or which stays beside R (the others).
    Value projectionBias, recurrenceBias, candidateBias;
    if (bias) {
      SmallVector<Value> halves = splitEven(bs[d], 0, 2, gates * hidden);
      if (isGru) {
        projectionBias = halves[0];
        SmallVector<Value> rb = split(halves[1], 0, {2 * hidden, hidden});
        recurrenceBias = rb[0];
        candidateBias = rb[1];
      } else {
        projectionBias = add(halves[0], halves[1]);
      }
    }
    // The input's share of every step's gates in one gemm: [steps * batch,
    // gates * hidden].
    SmallVector<Value> projected =
        splitEven(linear(inputs, ws[d], projectionBias), 0, steps, batch);
    SmallVector<Value> peephole, recurrence{rs[d]};
    if (peepholes)
      peephole = splitEven(ps[d], 0, 3, hidden);
    if (isGru)
      recurrence = split(rs[d], 0, {2 * hidden, hidden});
    Value h = hs[d], c = isLstm ? cs[d] : Value();
    SmallVector<Value> ys(steps);
    bool reverse = direction == "reverse" || d == 1;
    for (int64_t i = 0; i < steps; ++i) {
      int64_t t = reverse ? steps - 1 - i : i;
      if (opType == "RNN") {
        h = tanh(linear(h, recurrence[0], projected[t]));
      } else if (isGru) {
        // Gates z, r, h; H = h~ + z * (H - h~) is (1 - z) * h~ + z * H.
        SmallVector<Value> in = splitEven(projected[t], 1, 3, hidden);
        SmallVector<Value> zr =
            splitEven(linear(h, recurrence[0], recurrenceBias), 1, 2, hidden);
        // One op per statement: the IR's order is the equations' order.
        Value update = sigmoid(add(in[0], zr[0]));
        Value reset = sigmoid(add(in[1], zr[1]));
        Value candidate;
        if (linearBeforeReset) {
          Value product = linear(h, recurrence[1], candidateBias);
          candidate = mul(reset, product);
        } else {
          Value scaled = mul(reset, h);
          candidate = linear(scaled, recurrence[1], candidateBias);
        }
        candidate = tanh(add(in[2], candidate));
        Value change = sub(h, candidate);
        h = add(candidate, mul(update, change));
      } else {
        // Gates i, o, f, c.
        SmallVector<Value> gate =
            splitEven(linear(h, recurrence[0], projected[t]), 1, 4, hidden);
        Value in = gate[0], out = gate[1], forget = gate[2], cell = gate[3];
        if (peepholes) {
          in = add(in, mul(peephole[0], c));
          Value forgetPeephole = mul(peephole[2], c);
          forget = add(forget, forgetPeephole);
        }
        Value kept = mul(sigmoid(forget), c);
        Value inputGate = sigmoid(in);
        Value written = mul(inputGate, tanh(cell));
        c = add(kept, written);
        if (peepholes)
          out = add(out, mul(peephole[1], c));
        Value outputGate = sigmoid(out);
        h = mul(outputGate, tanh(c));
      }
      ys[t] = reshape(node, h, {1, 1, batch, hidden});
    }
    outputs.push_back(
        ys.size() == 1 ? ys[0]
                       : build<nn::ConcatOp>(node, 1, ValueRange(ys),
                                             builder.getI64IntegerAttr(0))[0]);
    lastH.push_back(reshape(node, h, {1, batch, hidden}));
    if (isLstm)
      lastC.push_back(reshape(node, c, {1, batch, hidden}));
  }

  auto joined = [&](ArrayRef<Value> parts, int64_t axis) {
    return parts.size() == 1
               ? parts[0]
               : build<nn::ConcatOp>(node, 1, ValueRange(parts),
                                     builder.getI64IntegerAttr(axis))[0];
  };
  auto batchFirst = [&](Value value, ArrayRef<int64_t> perm) {
    return layout == 1
               ? build<nn::TransposeOp>(node, 1, value,
                                        builder.getDenseI64ArrayAttr(perm))[0]
               : value;
  };
  // Y [sequence, directions, batch, hidden], Y_h and Y_c [directions, batch,
  // hidden]; batch first with layout 1.
  define(node, 0, batchFirst(joined(outputs, 1), {2, 0, 1, 3}));
  define(node, 1, batchFirst(joined(lastH, 0), {1, 0, 2}));
  if (isLstm)
    define(node, 2, batchFirst(joined(lastC, 0), {1, 0, 2}));
}
