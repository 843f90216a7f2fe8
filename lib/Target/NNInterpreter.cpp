//===- NNInterpreter.cpp - run an nn program on the reference kernels -----===//
//
// One case per op: read the op's attributes, allocate its results from
// their types and call the kernel. Nothing here computes; the numbers come
// from the runtime's kernels, the same ones parplan-run executes, so a test
// that passes through the interpreter tests those kernels too.
//
//===----------------------------------------------------------------------===//

#include "parplan/Target/NNInterpreter.h"

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Runtime/Kernels.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace parplan::nn;
namespace rt = parplan::runtime;

namespace parplan {

std::optional<rt::DType> toDType(Type type) {
  if (type.isF16())
    return rt::DType::F16;
  if (type.isBF16())
    return rt::DType::BF16;
  if (type.isF32())
    return rt::DType::F32;
  if (type.isF64())
    return rt::DType::F64;
  if (type.isInteger(1))
    return rt::DType::I1;
  if (type.isInteger(8))
    return rt::DType::I8;
  if (type.isInteger(32))
    return rt::DType::I32;
  if (type.isInteger(64))
    return rt::DType::I64;
  return std::nullopt;
}

rt::Tensor toTensor(DenseElementsAttr value) {
  auto type = cast<ShapedType>(value.getType());
  rt::Tensor tensor(*toDType(type.getElementType()),
                    rt::Shape(type.getShape().begin(), type.getShape().end()));
  int64_t index = 0;
  if (isa<FloatType>(type.getElementType())) {
    for (const APFloat &element : value.getValues<APFloat>())
      tensor.set(index++, element.convertToDouble());
  } else if (type.getElementType().isInteger(1)) {
    for (bool element : value.getValues<bool>())
      tensor.set(index++, element ? 1.0 : 0.0);
  } else {
    // Integers go in exactly: a double would round those above 2^53.
    for (const APInt &element : value.getValues<APInt>()) {
      int64_t v = element.getSExtValue();
      switch (tensor.dtype()) {
      case rt::DType::I64:
        tensor.data<int64_t>()[index] = v;
        break;
      case rt::DType::I32:
        tensor.data<int32_t>()[index] = static_cast<int32_t>(v);
        break;
      default:
        tensor.set(index, static_cast<double>(v));
        break;
      }
      ++index;
    }
  }
  return tensor;
}

namespace {

rt::Shape shapeOf(ShapedType type) {
  return rt::Shape(type.getShape().begin(), type.getShape().end());
}

std::vector<int64_t> vec(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

std::optional<double> optionalValue(std::optional<APFloat> value) {
  if (!value)
    return std::nullopt;
  return value->convertToDouble();
}

class Interpreter {
public:
  explicit Interpreter(const NamedTensors &feeds) : feeds(feeds) {}

  LogicalResult run(Operation *op);
  const rt::Tensor &valueOf(Value value) {
    return values.find(value.getAsOpaquePointer())->second;
  }

private:
  const NamedTensors &feeds;
  // Node-based: kernels hold references to operands while results are
  // inserted.
  std::map<const void *, rt::Tensor> values;

  const rt::Tensor &in(Value value) { return valueOf(value); }
  const rt::Tensor *optionalIn(Value value) {
    return value ? &valueOf(value) : nullptr;
  }
  rt::Tensor &out(Value result) {
    auto type = cast<ShapedType>(result.getType());
    return values[result.getAsOpaquePointer()] =
               rt::Tensor(*toDType(type.getElementType()), shapeOf(type));
  }
  LogicalResult check(Operation *op, const rt::Status &status) {
    if (status.ok())
      return success();
    return op->emitOpError() << status.error;
  }
  LogicalResult feed(Operation *op, StringRef name, Value result,
                     bool zerosByDefault);
  rt::PoolWindow window(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                        bool ceilMode, bool countIncludePad) {
    return {vec(kernel),    vec(strides), vec(pads),
            vec(dilations), ceilMode,     countIncludePad};
  }
};

LogicalResult Interpreter::feed(Operation *op, StringRef name, Value result,
                                bool zerosByDefault) {
  auto type = cast<ShapedType>(result.getType());
  auto it = feeds.find(name.str());
  if (it == feeds.end()) {
    if (!zerosByDefault)
      return op->emitOpError() << "'" << name << "' has no value to run with";
    out(result);
    return success();
  }
  const rt::Tensor &given = it->second;
  if (given.dtype() != *toDType(type.getElementType()) ||
      given.shape() != shapeOf(type))
    return op->emitOpError()
           << "'" << name << "' is fed a " << rt::toString(given.dtype())
           << " tensor of shape " << rt::toString(given.shape()) << ", not the "
           << type << " it declares";
  values[result.getAsOpaquePointer()] = given;
  return success();
}

int64_t axisOf(int64_t axis, Value value) {
  return *normalizeAxis(axis, cast<ShapedType>(value.getType()).getRank());
}

LogicalResult Interpreter::run(Operation *op) {
  using rt::BinaryKind;
  using rt::UnaryKind;
  auto unary = [&](UnaryKind kind, double alpha = 0, double beta = 0) {
    return check(op, rt::unary(kind, in(op->getOperand(0)),
                               out(op->getResult(0)), alpha, beta));
  };
  auto binary = [&](BinaryKind kind) {
    return check(op, rt::binary(kind, in(op->getOperand(0)),
                                in(op->getOperand(1)), out(op->getResult(0))));
  };
  auto unaryGrad = [&](UnaryKind kind, double alpha = 0, double beta = 0) {
    return check(op, rt::unaryGrad(kind, in(op->getOperand(0)),
                                   in(op->getOperand(1)), out(op->getResult(0)),
                                   alpha, beta));
  };
  auto reduce = [&](rt::ReduceOp kind, Value input, ArrayRef<int64_t> axes) {
    int64_t rank = cast<ShapedType>(input.getType()).getRank();
    std::vector<int64_t> normalized;
    for (int64_t axis : axes)
      normalized.push_back(*normalizeAxis(axis, rank));
    llvm::sort(normalized);
    normalized.erase(std::unique(normalized.begin(), normalized.end()),
                     normalized.end());
    return check(
        op, rt::reduce(kind, in(input), normalized, out(op->getResult(0))));
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ParamOp param) {
        return feed(op, param.getName(), param.getResult(),
                    param.getSource() && *param.getSource() == "zeros");
      })
      .Case([&](InputOp input) {
        return feed(op, input.getName(), input.getResult(), false);
      })
      .Case([&](ConstantOp constant) {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (!dense)
          return LogicalResult(op->emitOpError()
                               << "holds a constant that is not dense");
        values[constant.getResult().getAsOpaquePointer()] = toTensor(dense);
        return success();
      })
      .Case([&](MatMulOp o) {
        return check(
            op, rt::matmul(in(o.getLhs()), in(o.getRhs()), out(o.getResult())));
      })
      .Case([&](GemmOp o) {
        return check(op,
                     rt::gemm(in(o.getA()), in(o.getB()), optionalIn(o.getC()),
                              o.getAlpha().convertToDouble(),
                              o.getBeta().convertToDouble(), o.getTransA(),
                              o.getTransB(), out(o.getResult())));
      })
      .Case([&](ConvOp o) {
        return check(op, rt::conv(in(o.getInput()), in(o.getWeight()),
                                  optionalIn(o.getBias()), vec(o.getStrides()),
                                  vec(o.getPads()), vec(o.getDilations()),
                                  o.getGroup(), out(o.getResult())));
      })
      .Case([&](AddOp) { return binary(BinaryKind::Add); })
      .Case([&](SubOp) { return binary(BinaryKind::Sub); })
      .Case([&](MulOp) { return binary(BinaryKind::Mul); })
      .Case([&](DivOp) { return binary(BinaryKind::Div); })
      .Case([&](PowOp) { return binary(BinaryKind::Pow); })
      .Case([&](WhereOp o) {
        return check(op, rt::where(in(o.getCondition()), in(o.getLhs()),
                                   in(o.getRhs()), out(o.getResult())));
      })
      .Case([&](ReluOp) { return unary(UnaryKind::Relu); })
      .Case([&](TanhOp) { return unary(UnaryKind::Tanh); })
      .Case([&](SqrtOp) { return unary(UnaryKind::Sqrt); })
      .Case([&](ExpOp) { return unary(UnaryKind::Exp); })
      .Case([&](LogOp) { return unary(UnaryKind::Log); })
      .Case([&](SigmoidOp) { return unary(UnaryKind::Sigmoid); })
      .Case([&](ErfOp) { return unary(UnaryKind::Erf); })
      .Case([&](HardSwishOp) { return unary(UnaryKind::HardSwish); })
      .Case([&](LeakyReluOp o) {
        return unary(UnaryKind::LeakyRelu, o.getAlpha().convertToDouble());
      })
      .Case([&](HardSigmoidOp o) {
        return unary(UnaryKind::HardSigmoid, o.getAlpha().convertToDouble(),
                     o.getBeta().convertToDouble());
      })
      .Case([&](GeluOp o) {
        return unary(o.getApproximate() == GeluApproximation::tanh
                         ? UnaryKind::GeluTanh
                         : UnaryKind::GeluExact);
      })
      .Case([&](ClipOp o) {
        return check(op,
                     rt::clip(in(o.getInput()), optionalValue(o.getMin()),
                              optionalValue(o.getMax()), out(o.getResult())));
      })
      .Case([&](CastOp o) {
        return check(op, rt::cast(in(o.getInput()), out(o.getResult())));
      })
      .Case([&](SoftmaxOp o) {
        return check(op, rt::softmax(in(o.getInput()),
                                     axisOf(o.getAxis(), o.getInput()),
                                     out(o.getResult())));
      })
      .Case([&](LogSoftmaxOp o) {
        return check(op, rt::logSoftmax(in(o.getInput()),
                                        axisOf(o.getAxis(), o.getInput()),
                                        out(o.getResult())));
      })
      .Case([&](LayerNormOp o) {
        return check(op, rt::layerNorm(in(o.getInput()), in(o.getScale()),
                                       optionalIn(o.getBias()),
                                       axisOf(o.getAxis(), o.getInput()),
                                       o.getEpsilon().convertToDouble(),
                                       out(o.getResult())));
      })
      .Case([&](BatchNormOp o) {
        return check(op, rt::batchNorm(in(o.getInput()), in(o.getScale()),
                                       in(o.getBias()), in(o.getMean()),
                                       in(o.getVariance()),
                                       o.getEpsilon().convertToDouble(),
                                       out(o.getResult())));
      })
      .Case([&](MaxPoolOp o) {
        return check(
            op, rt::maxPool(in(o.getInput()),
                            window(o.getKernel(), o.getStrides(), o.getPads(),
                                   o.getDilations(), o.getCeilMode(), false),
                            out(o.getResult())));
      })
      .Case([&](AvgPoolOp o) {
        return check(
            op, rt::avgPool(in(o.getInput()),
                            window(o.getKernel(), o.getStrides(), o.getPads(),
                                   o.getDilations(), o.getCeilMode(),
                                   o.getCountIncludePad()),
                            out(o.getResult())));
      })
      .Case([&](ReshapeOp o) {
        return check(op, rt::reshape(in(o.getInput()), out(o.getResult())));
      })
      .Case([&](ExpandOp o) {
        return check(op, rt::expand(in(o.getInput()), out(o.getResult())));
      })
      .Case([&](TransposeOp o) {
        return check(op, rt::transpose(in(o.getInput()), vec(o.getPerm()),
                                       out(o.getResult())));
      })
      .Case([&](ConcatOp o) {
        std::vector<const rt::Tensor *> inputs;
        for (Value input : o.getInputs())
          inputs.push_back(&in(input));
        return check(op, rt::concat(inputs, axisOf(o.getAxis(), o.getResult()),
                                    out(o.getResult())));
      })
      .Case([&](SplitOp o) {
        std::vector<rt::Tensor *> results;
        for (Value result : o.getResults())
          results.push_back(&out(result));
        return check(op, rt::split(in(o.getInput()),
                                   axisOf(o.getAxis(), o.getInput()), results));
      })
      .Case([&](SliceOp o) {
        return check(op, rt::slice(in(o.getInput()), vec(o.getStarts()),
                                   vec(o.getSteps()), out(o.getResult())));
      })
      .Case([&](GatherOp o) {
        return check(op, rt::gather(in(o.getInput()), in(o.getIndices()),
                                    axisOf(o.getAxis(), o.getInput()),
                                    out(o.getResult())));
      })
      .Case([&](ShapeOp o) {
        rt::Tensor &result = out(o.getResult());
        ArrayRef<int64_t> shape = o.getInput().getType().getShape();
        for (auto [i, extent] : llvm::enumerate(shape))
          result.set(static_cast<int64_t>(i), static_cast<double>(extent));
        return success();
      })
      .Case([&](ReduceSumOp o) {
        return reduce(rt::ReduceOp::Sum, o.getInput(), o.getAxes());
      })
      .Case([&](ReduceMeanOp o) {
        return reduce(rt::ReduceOp::Mean, o.getInput(), o.getAxes());
      })
      // Training ops.
      .Case([&](ReluGradOp) { return unaryGrad(UnaryKind::Relu); })
      .Case([&](HardSwishGradOp) { return unaryGrad(UnaryKind::HardSwish); })
      .Case([&](LeakyReluGradOp o) {
        return unaryGrad(UnaryKind::LeakyRelu, o.getAlpha().convertToDouble());
      })
      .Case([&](HardSigmoidGradOp o) {
        return unaryGrad(UnaryKind::HardSigmoid, o.getAlpha().convertToDouble(),
                         o.getBeta().convertToDouble());
      })
      .Case([&](GeluGradOp o) {
        return unaryGrad(o.getApproximate() == GeluApproximation::tanh
                             ? UnaryKind::GeluTanh
                             : UnaryKind::GeluExact);
      })
      .Case([&](ClipGradOp o) {
        return check(op, rt::clipGrad(in(o.getGrad()), in(o.getInput()),
                                      optionalValue(o.getMin()),
                                      optionalValue(o.getMax()),
                                      out(o.getResult())));
      })
      .Case([&](SoftmaxGradOp o) {
        return check(op, rt::softmaxGrad(in(o.getGrad()), in(o.getOutput()),
                                         axisOf(o.getAxis(), o.getOutput()),
                                         out(o.getResult())));
      })
      .Case([&](LogSoftmaxGradOp o) {
        return check(op, rt::logSoftmaxGrad(in(o.getGrad()), in(o.getOutput()),
                                            axisOf(o.getAxis(), o.getOutput()),
                                            out(o.getResult())));
      })
      .Case([&](LayerNormGradOp o) {
        return check(
            op, rt::layerNormGrad(
                    in(o.getGrad()), in(o.getInput()), in(o.getScale()),
                    axisOf(o.getAxis(), o.getInput()),
                    o.getEpsilon().convertToDouble(), out(o.getInputGrad()),
                    out(o.getScaleGrad()), out(o.getBiasGrad())));
      })
      .Case([&](ConvGradInputOp o) {
        return check(op,
                     rt::convGradInput(in(o.getGrad()), in(o.getWeight()),
                                       vec(o.getStrides()), vec(o.getPads()),
                                       vec(o.getDilations()), o.getGroup(),
                                       out(o.getResult())));
      })
      .Case([&](ConvGradWeightOp o) {
        return check(op,
                     rt::convGradWeight(in(o.getGrad()), in(o.getInput()),
                                        vec(o.getStrides()), vec(o.getPads()),
                                        vec(o.getDilations()), o.getGroup(),
                                        out(o.getResult())));
      })
      .Case([&](MaxPoolGradOp o) {
        return check(op, rt::maxPoolGrad(in(o.getGrad()), in(o.getInput()),
                                         window(o.getKernel(), o.getStrides(),
                                                o.getPads(), o.getDilations(),
                                                o.getCeilMode(), false),
                                         out(o.getResult())));
      })
      .Case([&](AvgPoolGradOp o) {
        return check(
            op, rt::avgPoolGrad(in(o.getGrad()),
                                window(o.getKernel(), o.getStrides(),
                                       o.getPads(), o.getDilations(),
                                       o.getCeilMode(), o.getCountIncludePad()),
                                out(o.getResult())));
      })
      .Case([&](SliceGradOp o) {
        return check(op, rt::sliceGrad(in(o.getGrad()), vec(o.getStarts()),
                                       vec(o.getSteps()), out(o.getResult())));
      })
      .Case([&](GatherGradOp o) {
        return check(op, rt::gatherGrad(in(o.getGrad()), in(o.getIndices()),
                                        axisOf(o.getAxis(), o.getResult()),
                                        out(o.getResult())));
      })
      .Case([&](SoftmaxCrossEntropyOp o) {
        return check(op, rt::softmaxCrossEntropy(in(o.getLogits()),
                                                 in(o.getLabels()),
                                                 out(o.getResult())));
      })
      .Case([&](SoftmaxCrossEntropyGradOp o) {
        return check(op, rt::softmaxCrossEntropyGrad(
                             in(o.getGrad()), in(o.getLogits()),
                             in(o.getLabels()), out(o.getResult())));
      })
      .Case([&](SgdUpdateOp o) {
        return check(op, rt::sgdUpdate(in(o.getParam()), in(o.getGrad()),
                                       o.getLr().convertToDouble(),
                                       o.getWeightDecay().convertToDouble(),
                                       o.getGradScale().convertToDouble(),
                                       out(o.getResult())));
      })
      .Case([&](MomentumUpdateOp o) {
        return check(op,
                     rt::momentumUpdate(
                         in(o.getParam()), in(o.getGrad()), in(o.getVelocity()),
                         o.getLr().convertToDouble(),
                         o.getMomentum().convertToDouble(),
                         o.getWeightDecay().convertToDouble(), o.getNesterov(),
                         o.getGradScale().convertToDouble(),
                         out(o.getNewParam()), out(o.getNewVelocity())));
      })
      .Case([&](AdamUpdateOp o) {
        rt::AdamOptions options;
        options.lr = o.getLr().convertToDouble();
        options.beta1 = o.getBeta1().convertToDouble();
        options.beta2 = o.getBeta2().convertToDouble();
        options.epsilon = o.getEpsilon().convertToDouble();
        options.weightDecay = o.getWeightDecay().convertToDouble();
        options.decoupled = o.getDecoupled();
        options.gradScale = o.getGradScale().convertToDouble();
        return check(op,
                     rt::adamUpdate(in(o.getParam()), in(o.getGrad()),
                                    in(o.getM()), in(o.getV()), in(o.getStep()),
                                    options, out(o.getNewParam()),
                                    out(o.getNewM()), out(o.getNewV())));
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitOpError() << "is not known to the interpreter";
      });
}

} // namespace

FailureOr<std::vector<rt::Tensor>> interpret(func::FuncOp function,
                                             const NamedTensors &feeds) {
  if (function.isExternal() || !function.getBody().hasOneBlock() ||
      function.getNumArguments() != 0)
    return function.emitOpError()
           << "must be one block without arguments to be interpreted";
  Interpreter interpreter(feeds);
  for (Operation &op : function.front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<rt::Tensor> results;
      for (Value value : ret.getOperands())
        results.push_back(interpreter.valueOf(value));
      return results;
    }
    if (failed(interpreter.run(&op)))
      return failure();
  }
  return function.emitOpError() << "has no return";
}

NamedTensors applyUpdates(func::FuncOp function, NamedTensors feeds,
                          std::vector<rt::Tensor> results) {
  for (unsigned i = 0; i < results.size(); ++i)
    if (auto name = function.getResultAttrOfType<StringAttr>(i, "nn.updates"))
      feeds[name.str()] = std::move(results[i]);
  return feeds;
}

} // namespace parplan
