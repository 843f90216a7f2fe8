//===- LowerToPlan.cpp - @main to per-device plan programs ----------------===//
//
// The last step before the executor: logical tensors become the blocks
// that one device holds, ops become kernels on buffers, and what a step
// leaves behind (the loss, the updated parameters) is named. Only what the
// executor needs survives; every logical fact it still uses (which block
// of which tensor a buffer holds) is written on the buffer.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

namespace parplan {
#define GEN_PASS_DEF_LOWERTOPLAN
#include "parplan/Transforms/Passes.h.inc"
} // namespace parplan

using namespace mlir;
namespace nn = parplan::nn;
namespace plan = parplan::plan;

namespace {

MemRefType bufferType(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// The largest integer an input may hold, from how the program reads it:
/// token ids index a table, labels index the classes. None when no use
/// says.
std::optional<int64_t> integerBound(Value input) {
  std::optional<int64_t> bound;
  auto tighten = [&](int64_t value) {
    bound = bound ? std::min(*bound, value) : value;
  };
  for (OpOperand &use : input.getUses()) {
    Operation *user = use.getOwner();
    if (auto gather = dyn_cast<nn::GatherOp>(user);
        gather && use.getOperandNumber() == 1) {
      auto table = gather.getInput().getType();
      tighten(table.getDimSize(*parplan::nn::normalizeAxis(
          static_cast<int64_t>(gather.getAxis()), table.getRank())));
    } else if (auto gatherGrad = dyn_cast<nn::GatherGradOp>(user)) {
      (void)gatherGrad; // Reads the same indices as its forward gather.
    } else if (auto loss = dyn_cast<nn::SoftmaxCrossEntropyOp>(user)) {
      tighten(loss.getLogits().getType().getShape().back());
    } else if (auto grad = dyn_cast<nn::SoftmaxCrossEntropyGradOp>(user)) {
      tighten(grad.getLogits().getType().getShape().back());
    }
  }
  return bound;
}

struct LowerToPlanPass : parplan::impl::LowerToPlanBase<LowerToPlanPass> {
  void runOnOperation() override;
};

void LowerToPlanPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto function = module.lookupSymbol<func::FuncOp>("main");
  if (!function || function.isExternal() || !function.getBody().hasOneBlock()) {
    module.emitError() << "lower-to-plan: the module has no function @main "
                          "of one block";
    return signalPassFailure();
  }
  SmallVector<int64_t> meshShape = {1};
  if (auto mesh = module.lookupSymbol<parplan::sbp::MeshOp>("mesh")) {
    meshShape.assign(mesh.getShape().begin(), mesh.getShape().end());
    int64_t devices = 1;
    for (int64_t extent : meshShape)
      devices *= extent;
    if (devices != 1) {
      mesh.emitError() << "lower-to-plan: meshes of more than one device are "
                          "not lowered yet (this mesh has "
                       << devices << ")";
      return signalPassFailure();
    }
  }

  MLIRContext *context = &getContext();
  OpBuilder b(context);
  b.setInsertionPointToEnd(module.getBody());
  auto program = plan::ProgramOp::create(
      b, function.getLoc(), b.getStringAttr("device0"), b.getI64IntegerAttr(0));
  Block *body = new Block();
  program.getBody().push_back(body);
  b.setInsertionPointToEnd(body);

  DenseMap<Value, Value> bufferOf;
  llvm::StringMap<Value> namedBuffers;
  auto makeBuffer = [&](Location loc, Type type,
                        plan::BufferKind kind) -> plan::BufferOp {
    OperationState state(loc, plan::BufferOp::getOperationName());
    state.addTypes(bufferType(type));
    auto buffer = cast<plan::BufferOp>(b.create(state));
    if (kind != plan::BufferKind::temporary)
      buffer.setKindAttr(b.getStringAttr(plan::stringifyBufferKind(kind)));
    return buffer;
  };
  auto describeBlock = [&](plan::BufferOp buffer, StringRef name, Type type) {
    auto tensor = cast<RankedTensorType>(type);
    buffer.setNameAttr(b.getStringAttr(name));
    buffer.setLogicalShapeAttr(b.getDenseI64ArrayAttr(tensor.getShape()));
    buffer.setBlockOffsetsAttr(
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(tensor.getRank(), 0)));
    namedBuffers[name] = buffer.getResult();
  };

  for (Operation &op : function.front()) {
    Location loc = op.getLoc();
    if (auto param = dyn_cast<nn::ParamOp>(op)) {
      bool state = param.getSource() && *param.getSource() == "zeros";
      auto buffer = makeBuffer(loc, param.getType(),
                               state ? plan::BufferKind::state
                                     : plan::BufferKind::parameter);
      describeBlock(buffer, param.getName(), param.getType());
      if (!state && param.getSource())
        buffer.setSourceAttr(param.getSourceAttr());
      if (param.getPart()) {
        buffer.setPartOfAttr(param.getPartOfAttr());
        buffer.setPartAttr(param.getPartAttr());
      }
      bufferOf[param.getResult()] = buffer.getResult();
      continue;
    }
    if (auto input = dyn_cast<nn::InputOp>(op)) {
      auto buffer = makeBuffer(loc, input.getType(), plan::BufferKind::input);
      describeBlock(buffer, input.getName(), input.getType());
      if (!isa<FloatType>(input.getType().getElementType()))
        if (std::optional<int64_t> bound = integerBound(input.getResult()))
          buffer.setValueBoundAttr(b.getI64IntegerAttr(*bound));
      bufferOf[input.getResult()] = buffer.getResult();
      continue;
    }
    if (auto constant = dyn_cast<nn::ConstantOp>(op)) {
      auto buffer =
          makeBuffer(loc, constant.getType(), plan::BufferKind::constant);
      buffer.setValueAttr(constant.getValue());
      bufferOf[constant.getResult()] = buffer.getResult();
      continue;
    }
    if (auto boxing = dyn_cast<parplan::sbp::BoxingOp>(op)) {
      // On one device every layout is the whole tensor.
      bufferOf[boxing.getResult()] = bufferOf.lookup(boxing.getInput());
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        unsigned i = static_cast<unsigned>(index);
        Value buffer = bufferOf.lookup(value);
        if (function.getResultAttr(i, "nn.name")) {
          plan::LossOp::create(b, loc, buffer);
          continue;
        }
        if (auto name =
                function.getResultAttrOfType<StringAttr>(i, "nn.updates")) {
          Value target = namedBuffers.lookup(name.getValue());
          if (!target) {
            ret.emitError()
                << "lower-to-plan: result " << i << " updates '"
                << name.getValue() << "', which is no parameter of @main";
            return signalPassFailure();
          }
          plan::UpdateOp::create(b, loc, target, buffer);
          continue;
        }
        ret.emitError() << "lower-to-plan: result " << i
                        << " of @main is neither the loss nor an update; "
                           "inference plans are not lowered yet";
        return signalPassFailure();
      }
      continue;
    }
    if (op.getDialect() != context->getLoadedDialect<nn::NNDialect>()) {
      op.emitError() << "lower-to-plan: '" << op.getName()
                     << "' is not an nn op and has no kernel";
      return signalPassFailure();
    }
    SmallVector<Value> ins, outs;
    for (Value operand : op.getOperands())
      ins.push_back(bufferOf.lookup(operand));
    for (Value result : op.getResults()) {
      Value buffer =
          makeBuffer(loc, result.getType(), plan::BufferKind::temporary)
              .getResult();
      bufferOf[result] = buffer;
      outs.push_back(buffer);
    }
    // The op's own attributes (not the discardable sbp.* and nn.* marks).
    SmallVector<NamedAttribute> attrs;
    if (auto properties =
            dyn_cast_or_null<DictionaryAttr>(op.getPropertiesAsAttribute()))
      llvm::append_range(attrs, properties.getValue());
    plan::KernelOp::create(
        b, loc, b.getStringAttr(op.getName().stripDialect()), ins, outs,
        attrs.empty() ? DictionaryAttr() : b.getDictionaryAttr(attrs));
  }

  module->setAttr("plan.mesh_shape", b.getDenseI64ArrayAttr(meshShape));
  function.erase();
  if (auto mesh = module.lookupSymbol<parplan::sbp::MeshOp>("mesh"))
    mesh.erase();
}

} // namespace
