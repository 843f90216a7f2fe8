//===- NNInterpreter.cpp - run an nn program on the reference kernels -----===//
//
// Per op: convert its attributes to the runtime's generic form, allocate
// its results from their types and call runKernel (KernelCall.h) by the
// op's name. Nothing here computes or knows an op: the numbers come from the
// runtime's kernels through the same call parplan-run makes, so a test that
// passes through the interpreter tests those kernels and their attribute
// handling too, and a new kernel needs no change here.
//
//===----------------------------------------------------------------------===//

#include "parplan/Target/NNInterpreter.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNDialect.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Runtime/Kernels.h"

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

std::optional<rt::AttrValue> toKernelAttr(Attribute attr,
                                          const rt::KernelAttr *declared) {
  // Enum attributes are i32 IntegerAttrs underneath, which no attribute
  // class tells apart (any enum's value fits another's): the kernel's
  // declaration says which are enums, and the runtime takes one by its
  // case name (cases in value order, parplan-tblgen checks).
  if (auto integer = dyn_cast<IntegerAttr>(attr);
      integer && declared && declared->type == rt::AttrType::Enum) {
    int64_t value = integer.getValue().getSExtValue();
    if (value < 0 || value >= static_cast<int64_t>(declared->cases.size()))
      return std::nullopt;
    return rt::AttrValue(declared->cases[static_cast<size_t>(value)]);
  }
  if (auto flag = dyn_cast<BoolAttr>(attr))
    return rt::AttrValue(flag.getValue());
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return rt::AttrValue(integer.getValue().getSExtValue());
  if (auto real = dyn_cast<FloatAttr>(attr))
    return rt::AttrValue(real.getValueAsDouble());
  if (auto text = dyn_cast<StringAttr>(attr))
    return rt::AttrValue(text.str());
  if (auto list = dyn_cast<DenseI64ArrayAttr>(attr))
    return rt::AttrValue(std::vector<int64_t>(list.asArrayRef().begin(),
                                              list.asArrayRef().end()));
  if (isa<UnitAttr>(attr))
    return rt::AttrValue(true);
  return std::nullopt;
}

FailureOr<rt::AttrMap> toKernelAttrs(Operation *op) {
  rt::AttrMap attrs;
  std::optional<RegisteredOperationName> info = op->getRegisteredInfo();
  if (!info)
    return op->emitOpError() << "is not a registered op";
  std::optional<rt::KernelId> id =
      rt::lookupKernelId(op->getName().stripDialect());
  // The inherent (ODS) attributes only: discardable ones (sharding
  // annotations, nn.updates) are no business of the kernel. An absent
  // default-valued attribute stays absent; runKernel applies the .td
  // default.
  for (StringAttr name : info->getAttributeNames()) {
    // Which optional operands are there is the operand list itself.
    if (name.getValue() == "operandSegmentSizes")
      continue;
    std::optional<Attribute> attr = op->getInherentAttr(name);
    if (!attr || !*attr)
      continue;
    std::optional<rt::AttrValue> value = toKernelAttr(
        *attr, id ? rt::kernelOp(*id).findAttr(name.getValue()) : nullptr);
    if (!value)
      return op->emitOpError() << "attribute '" << name.getValue() << "' ("
                               << *attr << ") has no runtime form";
    attrs.emplace(name.str(), std::move(*value));
  }
  return attrs;
}

namespace {

rt::Shape shapeOf(ShapedType type) {
  return rt::Shape(type.getShape().begin(), type.getShape().end());
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
  // Node-based: kernels hold pointers to operands while results are
  // inserted.
  std::map<const void *, rt::Tensor> values;

  rt::Tensor &out(Value result) {
    auto type = cast<ShapedType>(result.getType());
    return values[result.getAsOpaquePointer()] =
               rt::Tensor(*toDType(type.getElementType()), shapeOf(type));
  }
  LogicalResult feed(Operation *op, StringRef name, Value result,
                     bool zerosByDefault);
  LogicalResult runKernel(Operation *op);
};

LogicalResult Interpreter::feed(Operation *op, StringRef name, Value result,
                                bool zerosByDefault) {
  auto type = cast<ShapedType>(result.getType());
  auto it = feeds.find(name.str());
  // A block of a stored weight (nn-split-fused-projections) is cut from the
  // whole weight when that is what is fed.
  auto param = dyn_cast<ParamOp>(op);
  if (it == feeds.end() && param && param.getPart() &&
      feeds.count(param.getPartOf()->str())) {
    const rt::Tensor &whole = feeds.at(param.getPartOf()->str());
    ArrayRef<int64_t> part = *param.getPart();
    rt::Shape expected = shapeOf(type);
    expected[part[0]] = part[2];
    if (whole.dtype() != *toDType(type.getElementType()) ||
        whole.shape() != expected)
      return op->emitOpError()
             << "'" << *param.getPartOf() << "' is fed a "
             << rt::toString(whole.dtype()) << " tensor of shape "
             << rt::toString(whole.shape()) << ", not the "
             << rt::toString(expected) << " tensor it is part of";
    std::vector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    starts[part[0]] = part[1];
    rt::Status status = rt::slice(whole, starts, steps, out(result));
    if (!status.ok())
      return op->emitOpError() << status.error;
    return success();
  }
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

LogicalResult Interpreter::runKernel(Operation *op) {
  std::string name = op->getName().stripDialect().str();
  const rt::KernelSignature *signature = rt::lookupKernel(name);
  // The phrase the conformance test reads as "cannot run here", not as a
  // kernel's failure.
  if (!signature)
    return op->emitOpError()
           << "is not known to the interpreter: no kernel for nn." << name;
  FailureOr<rt::AttrMap> attrs = toKernelAttrs(op);
  if (failed(attrs))
    return failure();
  std::vector<const rt::Tensor *> operands;
  for (Value operand : op->getOperands())
    operands.push_back(&valueOf(operand));
  // An absent optional operand is simply missing from the op's operands;
  // the kernel wants a null in its place. nn ops have their optional
  // operands last, so the missing ones are the last ones.
  size_t count = static_cast<size_t>(signature->numOperands);
  if (signature->numOperands >= 0 && operands.size() < count &&
      operands.size() + signature->numOptionalOperands >= count)
    operands.resize(count, nullptr);
  std::vector<rt::Tensor *> results;
  for (Value result : op->getResults())
    results.push_back(&out(result));
  rt::Status status = rt::runKernel(name, *attrs, operands, results);
  if (!status.ok())
    return op->emitOpError() << status.error;
  return success();
}

LogicalResult Interpreter::run(Operation *op) {
  // Values that enter the program are not kernels.
  if (auto param = dyn_cast<ParamOp>(op))
    return feed(op, param.getName(), param.getResult(),
                param.getSource() && *param.getSource() == "zeros");
  if (auto input = dyn_cast<InputOp>(op))
    return feed(op, input.getName(), input.getResult(), false);
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense)
      return op->emitOpError() << "holds a constant that is not dense";
    values[constant.getResult().getAsOpaquePointer()] = toTensor(dense);
    return success();
  }
  if (!isa<NNDialect>(op->getDialect()))
    return op->emitOpError() << "is not known to the interpreter";
  if (isa<AccumulateOp>(op))
    return op->emitOpError()
           << "sums over a step's micro-batches; the interpreter runs a "
              "step of one (parplan-run runs micro-batched plans)";
  return runKernel(op);
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
    if (auto name = function.getResultAttrOfType<StringAttr>(
            i, parplan::kUpdatesAttrName))
      feeds[name.str()] = std::move(results[i]);
  return feeds;
}

} // namespace parplan
