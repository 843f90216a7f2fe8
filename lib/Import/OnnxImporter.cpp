//===- OnnxImporter.cpp - ONNX to the nn dialect --------------------------===//
//
// One pass over the graph: values are created in topological order, every op
// is built through its own shape rule (InferTypeOpInterface) and folded as it
// is built, so shape-computing subgraphs become constants before the ops
// that need them (Reshape, Expand, Slice, ...) read them. Canonical forms
// (fused LayerNorm and GELU) are left to the nn passes.
//
// The converters, one per ONNX op or family, are in Math.cpp, NN.cpp,
// Tensor.cpp and ControlFlow.cpp. Errors are thrown as ImportError inside
// lib/Import and caught at the API boundary (importOnnx below); no
// exception crosses an MLIR frame.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "parplan/Support/Text.h"

using namespace mlir;
namespace nn = parplan::nn;
using parplan::nn::listString;
using parplan::nn::normalizeAxis;
using parplan::nn::shapeString;

using namespace parplan::import;

namespace parplan::import {

//===----------------------------------------------------------------------===//
// Converter table
//===----------------------------------------------------------------------===//

const llvm::StringMap<Importer::Converter> &Importer::converters() {
  static const llvm::StringMap<Converter> table = {
      {"MatMul", &Importer::convertMatMul},
      {"Gemm", &Importer::convertGemm},
      {"Add", &Importer::convertBinary},
      {"Sub", &Importer::convertBinary},
      {"Mul", &Importer::convertBinary},
      {"Div", &Importer::convertBinary},
      {"Pow", &Importer::convertBinary},
      {"Sqrt", &Importer::convertUnary},
      {"Exp", &Importer::convertUnary},
      {"Log", &Importer::convertUnary},
      {"Relu", &Importer::convertUnary},
      {"Sigmoid", &Importer::convertUnary},
      {"Tanh", &Importer::convertUnary},
      {"Erf", &Importer::convertUnary},
      {"HardSwish", &Importer::convertUnary},
      {"LeakyRelu", &Importer::convertLeakyRelu},
      {"HardSigmoid", &Importer::convertHardSigmoid},
      {"Gelu", &Importer::convertGelu},
      {"Clip", &Importer::convertClip},
      {"Softmax", &Importer::convertSoftmax},
      {"LogSoftmax", &Importer::convertSoftmax},
      {"LayerNormalization", &Importer::convertLayerNorm},
      {"BatchNormalization", &Importer::convertBatchNorm},
      {"Conv", &Importer::convertConv},
      {"ConvTranspose", &Importer::convertConvTranspose},
      {"Resize", &Importer::convertResize},
      {"Upsample", &Importer::convertResize},
      {"MaxPool", &Importer::convertPool},
      {"AveragePool", &Importer::convertPool},
      {"GlobalAveragePool", &Importer::convertGlobalAveragePool},
      {"Flatten", &Importer::convertFlatten},
      {"Reshape", &Importer::convertReshape},
      {"Squeeze", &Importer::convertSqueeze},
      {"Unsqueeze", &Importer::convertUnsqueeze},
      {"Transpose", &Importer::convertTranspose},
      {"Concat", &Importer::convertConcat},
      {"Split", &Importer::convertSplit},
      {"Slice", &Importer::convertSlice},
      {"Gather", &Importer::convertGather},
      {"ReduceMean", &Importer::convertReduce},
      {"ReduceSum", &Importer::convertReduce},
      {"ReduceSumSquare", &Importer::convertReduce},
      {"ReduceL1", &Importer::convertReduce},
      {"ReduceL2", &Importer::convertReduce},
      {"ReduceLogSum", &Importer::convertReduce},
      {"ReduceLogSumExp", &Importer::convertReduce},
      {"NegativeLogLikelihoodLoss", &Importer::convertLoss},
      {"Abs", &Importer::convertComposite},
      {"CastLike", &Importer::convertComposite},
      {"Elu", &Importer::convertComposite},
      {"PRelu", &Importer::convertComposite},
      {"Reciprocal", &Importer::convertComposite},
      {"Selu", &Importer::convertComposite},
      {"Size", &Importer::convertComposite},
      {"Trilu", &Importer::convertTrilu},
      {"Einsum", &Importer::convertEinsum},
      {"CumSum", &Importer::convertCumSum},
      {"TopK", &Importer::convertTopK},
      {"SoftmaxCrossEntropyLoss", &Importer::convertLoss},
      {"Cast", &Importer::convertCast},
      {"Identity", &Importer::convertIdentity},
      {"Dropout", &Importer::convertDropout},
      {"Where", &Importer::convertWhere},
      {"Equal", &Importer::convertCompare},
      {"Less", &Importer::convertCompare},
      {"Greater", &Importer::convertCompare},
      {"And", &Importer::convertCompare},
      {"LessOrEqual", &Importer::convertCompare},
      {"GreaterOrEqual", &Importer::convertCompare},
      {"Xor", &Importer::convertCompare},
      {"Sum", &Importer::convertVariadic},
      {"Mean", &Importer::convertVariadic},
      {"Max", &Importer::convertVariadic},
      {"Min", &Importer::convertVariadic},
      {"Neg", &Importer::convertNeg},
      {"Pad", &Importer::convertPad},
      {"Tile", &Importer::convertTile},
      {"Or", &Importer::convertCompare},
      {"Not", &Importer::convertNot},
      {"Expand", &Importer::convertExpand},
      {"Constant", &Importer::convertConstant},
      {"ConstantOfShape", &Importer::convertConstantOfShape},
      {"Shape", &Importer::convertShape},
      {"If", &Importer::convertIf},
      {"RNN", &Importer::convertRecurrent},
      {"GRU", &Importer::convertRecurrent},
      {"LSTM", &Importer::convertRecurrent},
  };
  return table;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> Importer::run(const onnx::ModelProto &model) {
  if (!model.has_graph())
    fail("the model has no graph");
  readOpset(model);
  const onnx::GraphProto &graph = model.graph();
  checkSupported(graph);

  // Capture the last diagnostic of a failed build or verification, to
  // report it as one line naming the node.
  ScopedDiagnosticHandler handler(&context, [this](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      lastDiagnostic = diag.str();
    return success();
  });

  // Errors about the whole program (a mesh the cluster lacks) name the file.
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(FileLineColLoc::get(&context, path, 0, 0));
  builder.setInsertionPointToEnd(module->getBody());
  auto function = func::FuncOp::create(
      builder, FileLineColLoc::get(&context, path, 0, 0), options.functionName,
      builder.getFunctionType({}, {}));
  body = function.addEntryBlock();
  builder.setInsertionPointToEnd(body);

  countUses(graph);

  registerInitializers(graph);
  // Graph inputs that have an initializer are parameters with defaults;
  // the others are data fed at every step.
  std::set<std::string> inputDimNames;
  for (const onnx::ValueInfoProto &graphInput : graph.input()) {
    const std::string &name = graphInput.name();
    if (values.count(name))
      fail("graph input " + quote(name) + " is declared twice");
    if (initializers.count(name) && !options.inputValues.count(name)) {
      // An integer one is data, a constant like any integer initializer.
      if (auto param = materializeInitializer(name, /*isGraphInput=*/true)
                           .getDefiningOp<nn::ParamOp>())
        param.setSource("input");
      continue;
    }
    if (!graphInput.has_type() || !graphInput.type().has_tensor_type())
      fail("graph input " + quote(name) + " is not a tensor");
    for (const onnx::TensorShapeProto::Dimension &dim :
         graphInput.type().tensor_type().shape().dim())
      if (dim.has_dim_param())
        inputDimNames.insert(dim.dim_param());
    if (auto fixed = options.inputValues.find(name);
        fixed != options.inputValues.end()) {
      values[name] = fixedInput(graphInput, fixed->second);
      continue;
    }
    RankedTensorType type =
        tensorType(graphInput.type(), "graph input " + quote(name));
    values[name] = prologue([&](OpBuilder &b) {
      return nn::InputOp::create(b, NameLoc::get(b.getStringAttr(name)), type,
                                 name);
    });
  }

  // A binding no input reads is a typo, or a batch given to a model whose
  // batch is fixed: the program would silently have other shapes than asked.
  for (const auto &binding : options.inputValues) {
    if (!options.refuseUnusedDims || values.count(binding.first))
      continue;
    std::string known;
    for (const onnx::ValueInfoProto &graphInput : graph.input())
      if (!initializers.count(graphInput.name()))
        known += (known.empty() ? "" : ", ") + quote(graphInput.name());
    fail("input " + quote(binding.first) +
         " is given a value, but the graph has no such input (its inputs: " +
         (known.empty() ? std::string("none") : known) + ")");
  }
  for (const auto &binding : options.dims) {
    if (!options.refuseUnusedDims || inputDimNames.count(binding.first))
      continue;
    std::string known;
    for (const std::string &dim : inputDimNames)
      known += (known.empty() ? "" : ", ") + quote(dim);
    fail("dimension " + quote(binding.first) +
         " is bound, but no graph input has it (" +
         (known.empty() ? std::string("every input dimension is fixed")
                        : "the inputs' symbolic dimensions: " + known) +
         ")");
  }

  importGraphBody(graph, "");

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    auto it = values.find(output.name());
    if (it == values.end()) {
      if (initializers.count(output.name()))
        results.push_back(materializeInitializer(output.name()));
      else
        fail("graph output " + quote(output.name()) +
             " is not produced by any node, input or initializer");
    } else {
      results.push_back(it->second);
    }
    RankedTensorType computed = typeOf(results.back());
    if (output.has_type() && output.type().has_tensor_type() &&
        output.type().tensor_type().has_shape()) {
      const auto &dims = output.type().tensor_type().shape().dim();
      bool matches = dims.size() == computed.getRank();
      std::string declaredText = "[";
      for (int i = 0; i < dims.size(); ++i) {
        std::optional<int64_t> declared;
        if (dims[i].has_dim_value())
          declared = dims[i].dim_value();
        else if (dims[i].has_dim_param() &&
                 options.dims.count(dims[i].dim_param()))
          declared = options.dims.at(dims[i].dim_param());
        matches = matches && (!declared || *declared == computed.getDimSize(i));
        declaredText += (i ? ", " : "") +
                        (dims[i].has_dim_value()   ? std::to_string(*declared)
                         : dims[i].has_dim_param() ? dims[i].dim_param()
                                                   : std::string("?"));
      }
      if (!matches)
        fail("graph output " + quote(output.name()) + " computes shape " +
             shapeString(computed.getShape()) +
             ", which contradicts its declared shape " + declaredText + "]");
    }
    if (output.has_type() && output.type().has_tensor_type() &&
        output.type().tensor_type().elem_type() != 0) {
      std::string what = "graph output " + quote(output.name());
      Type declared =
          elementType(output.type().tensor_type().elem_type(), what);
      if (declared != computed.getElementType()) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << what << " computes element type " << computed.getElementType()
           << ", which contradicts its declared " << declared;
        fail(text);
      }
    }
    resultTypes.push_back(computed);
  }
  func::ReturnOp::create(builder, builder.getUnknownLoc(), results);
  // Constants that only fed folded shape computations are dead now.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isa<nn::ConstantOp>(op) && op.use_empty())
      op.erase();
  function.setFunctionType(builder.getFunctionType({}, resultTypes));
  // The graph outputs' names: what an inference plan's outputs are called.
  for (auto [i, output] : llvm::enumerate(graph.output()))
    function.setResultAttr(static_cast<unsigned>(i), parplan::kOutputAttrName,
                           builder.getStringAttr(output.name()));
  module->getOperation()->setAttr(
      parplan::kSourceAttrName,
      builder.getStringAttr(llvm::sys::path::filename(path)));
  module->getOperation()->setAttr(parplan::kOpsetAttrName,
                                  builder.getI64IntegerAttr(opset));

  if (failed(verify(*module)))
    fail("the imported program does not verify: " + lastDiagnostic);
  return module;
}

void Importer::readOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  if (opset == 0)
    fail("the model imports no opset of the default ONNX domain");
  if (opset < kMinOpset || opset > kMaxOpset)
    fail("opset " + std::to_string(opset) + " is outside the supported range " +
         std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
}

void Importer::collectUnsupported(
    const onnx::GraphProto &graph,
    std::map<std::string, std::vector<std::string>> &found,
    const std::string &prefix) {
  int index = 0;
  for (const onnx::NodeProto &node : graph.node()) {
    std::string label = node.name().empty() ? prefix + node.op_type() + "_" +
                                                  std::to_string(index)
                                            : node.name();
    ++index;
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    std::string type =
        defaultDomain ? node.op_type() : node.domain() + "::" + node.op_type();
    if (!defaultDomain || !converters().count(node.op_type()))
      found[type].push_back(label);
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.has_g())
        collectUnsupported(attr.g(), found, label + "/");
  }
}

void Importer::checkSupported(const onnx::GraphProto &graph) {
  std::map<std::string, std::vector<std::string>> found;
  collectUnsupported(graph, found, "");
  if (found.empty())
    return;
  std::string message = "unsupported ops: ";
  bool first = true;
  for (const auto &[type, nodes] : found) {
    message += (first ? "" : ", ") + type + " (" +
               std::to_string(nodes.size()) +
               (nodes.size() == 1 ? " node: " : " nodes: ");
    first = false;
    for (size_t i = 0; i < nodes.size() && i < 3; ++i)
      message += (i ? ", " : "") + quote(nodes[i]);
    message += nodes.size() > 3 ? ", ...)" : ")";
  }
  fail(message);
}

void Importer::countUses(const onnx::GraphProto &graph) {
  // Subgraphs (If branches) read values of the graphs around them too.
  // Operand positions that hold weights, by op type.
  static const llvm::StringMap<std::vector<int>> weightOperands = {
      {"Conv", {1, 2}},
      {"ConvTranspose", {1, 2}},
      {"Gemm", {1, 2}},
      {"MatMul", {1}},
      {"BatchNormalization", {1, 2, 3, 4}},
      {"LayerNormalization", {1, 2}},
      {"RNN", {1, 2, 3}},
      {"GRU", {1, 2, 3}},
      {"LSTM", {1, 2, 3, 7}},
      {"Gather", {0}}};
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &name : node.input())
      ++uses[name];
    auto weights = weightOperands.find(node.op_type());
    if (weights != weightOperands.end())
      for (int index : weights->second)
        if (index < node.input_size() && !node.input(index).empty())
          weightInputs.insert(node.input(index));
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.has_g())
        countUses(attr.g());
  }
  for (const onnx::ValueInfoProto &output : graph.output())
    ++uses[output.name()];
}

void Importer::registerInitializers(const onnx::GraphProto &graph) {
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    if (tensor.name().empty())
      fail("an initializer has no name");
    if (!initializers.insert({tensor.name(), &tensor}).second &&
        !values.count(tensor.name()))
      fail("initializer " + quote(tensor.name()) + " is declared twice");
    initializerTensors[tensor.name()] = &tensor;
  }
}

std::vector<const onnx::NodeProto *>
Importer::sortNodes(const onnx::GraphProto &graph, const std::string &prefix) {
  // Kahn's algorithm, always taking the earliest ready node in file order,
  // so that sorted input comes out unchanged and the result is deterministic.
  int count = graph.node_size();
  llvm::StringMap<int> producer;
  for (int i = 0; i < count; ++i) {
    const onnx::NodeProto &node = graph.node(i);
    labels[&node] = node.name().empty()
                        ? prefix + node.op_type() + "_" + std::to_string(i)
                        : node.name();
    for (const std::string &output : node.output()) {
      if (output.empty())
        continue;
      if (values.count(output) || initializers.count(output))
        fail("value " + quote(output) + " is produced by node " +
             quote(labels[&node]) +
             " and is also a graph input or initializer");
      auto [it, inserted] = producer.insert({output, i});
      if (!inserted)
        fail("value " + quote(output) + " is produced twice, by nodes " +
             quote(labels[&graph.node(it->second)]) + " and " +
             quote(labels[&node]));
    }
  }
  std::vector<int> pending(count, 0);
  std::vector<std::vector<int>> consumers(count);
  for (int i = 0; i < count; ++i) {
    // Subgraphs, at any depth, may read values of this graph too, in their
    // nodes or directly as their outputs.
    std::vector<std::string> reads(graph.node(i).input().begin(),
                                   graph.node(i).input().end());
    std::function<void(const onnx::NodeProto &)> addSubgraphReads =
        [&](const onnx::NodeProto &node) {
          for (const onnx::AttributeProto &attr : node.attribute()) {
            if (!attr.has_g())
              continue;
            for (const onnx::NodeProto &inner : attr.g().node()) {
              reads.insert(reads.end(), inner.input().begin(),
                           inner.input().end());
              addSubgraphReads(inner);
            }
            for (const onnx::ValueInfoProto &output : attr.g().output())
              reads.push_back(output.name());
          }
        };
    addSubgraphReads(graph.node(i));
    // A node that reads its own output is a cycle of one.
    llvm::StringSet<> seen;
    for (const std::string &name : reads) {
      auto it = producer.find(name);
      if (name.empty() || it == producer.end() || !seen.insert(name).second)
        continue;
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  std::vector<const onnx::NodeProto *> order;
  std::vector<bool> done(count, false);
  std::set<int> ready;
  for (int i = 0; i < count; ++i)
    if (pending[i] == 0)
      ready.insert(i);
  while (!ready.empty()) {
    int next = *ready.begin();
    ready.erase(ready.begin());
    done[next] = true;
    order.push_back(&graph.node(next));
    for (int consumer : consumers[next])
      if (--pending[consumer] == 0)
        ready.insert(consumer);
  }
  for (int i = 0; i < count; ++i)
    if (!done[i])
      fail("the graph has a cycle through node " +
           quote(labels[&graph.node(i)]) + " (" + graph.node(i).op_type() +
           ")");
  return order;
}

void Importer::importGraphBody(const onnx::GraphProto &graph,
                               const std::string &prefix) {
  for (const onnx::NodeProto *node : sortNodes(graph, prefix))
    convertNode(*node);
}

void Importer::convertNode(const onnx::NodeProto &node) {
  auto it = converters().find(node.op_type());
  (this->*(it->second))(node);
}

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

Type Importer::elementType(int32_t onnxType, const std::string &what) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return builder.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return builder.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return builder.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return builder.getBF16Type();
  case onnx::TensorProto::INT64:
    return builder.getI64Type();
  case onnx::TensorProto::INT32:
    return builder.getI32Type();
  case onnx::TensorProto::INT8:
    return builder.getI8Type();
  case onnx::TensorProto::BOOL:
    return builder.getI1Type();
  default:
    fail(what + " has element type " +
         (onnx::TensorProto::DataType_IsValid(onnxType)
              ? onnx::TensorProto::DataType_Name(onnxType)
              : std::to_string(onnxType)) +
         ", which parplan does not support");
  }
}

RankedTensorType Importer::tensorType(const onnx::TypeProto &type,
                                      const std::string &what) {
  const onnx::TypeProto::Tensor &tensor = type.tensor_type();
  if (!tensor.has_shape())
    fail(what + " has no shape");
  SmallVector<int64_t> shape;
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto::Dimension &dim = tensor.shape().dim(i);
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        fail(what + " dimension " + std::to_string(i) + " has negative size " +
             std::to_string(dim.dim_value()));
      shape.push_back(dim.dim_value());
    } else if (dim.has_dim_param()) {
      auto bound = options.dims.find(dim.dim_param());
      if (bound == options.dims.end())
        fail(what + " dimension " + std::to_string(i) + " is symbolic (" +
             quote(dim.dim_param()) + "); bind it with --dim " +
             dim.dim_param() + "=VALUE");
      shape.push_back(bound->second);
    } else {
      fail(what + " dimension " + std::to_string(i) +
           " has no size; give the model static shapes or name the dimension");
    }
  }
  checkedProduct(shape, what);
  return RankedTensorType::get(shape, elementType(tensor.elem_type(), what));
}

RankedTensorType Importer::tensorType(const onnx::TensorProto &tensor,
                                      const std::string &what) {
  SmallVector<int64_t> shape;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0)
      fail(what + " has negative dimension " + std::to_string(dim));
    shape.push_back(dim);
  }
  checkedProduct(shape, what);
  return RankedTensorType::get(shape, elementType(tensor.data_type(), what));
}

std::optional<DenseElementsAttr>
Importer::tensorData(const onnx::TensorProto &tensor, RankedTensorType type,
                     const std::string &what) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  int64_t count = type.getNumElements();
  Type element = type.getElementType();
  auto sizeMismatch = [&](int64_t got) {
    fail(what + " holds " + std::to_string(got) + " values for shape " +
         shapeString(type.getShape()) + " (" + std::to_string(count) + ")");
  };
  if (element.isInteger(1)) {
    // A causal mask is millions of them, read at every import.
    int64_t got = tensor.has_raw_data()
                      ? static_cast<int64_t>(tensor.raw_data().size())
                      : tensor.int32_data_size();
    if (got != count)
      sizeMismatch(got);
    SmallVector<bool> values(static_cast<size_t>(count));
    if (tensor.has_raw_data())
      llvm::transform(tensor.raw_data(), values.begin(),
                      [](char byte) { return byte != 0; });
    else
      llvm::transform(tensor.int32_data(), values.begin(),
                      [](int32_t value) { return value != 0; });
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  unsigned bytes = element.getIntOrFloatBitWidth() / 8;
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (static_cast<int64_t>(raw.size()) != count * bytes)
      sizeMismatch(raw.size() / bytes);
    return DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(raw.data(), raw.size()));
  }
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT: {
    if (tensor.float_data_size() != count)
      sizeMismatch(tensor.float_data_size());
    std::vector<float> data(tensor.float_data().begin(),
                            tensor.float_data().end());
    return DenseElementsAttr::get(type, ArrayRef<float>(data));
  }
  case onnx::TensorProto::DOUBLE: {
    if (tensor.double_data_size() != count)
      sizeMismatch(tensor.double_data_size());
    std::vector<double> data(tensor.double_data().begin(),
                             tensor.double_data().end());
    return DenseElementsAttr::get(type, ArrayRef<double>(data));
  }
  case onnx::TensorProto::INT64: {
    if (tensor.int64_data_size() != count)
      sizeMismatch(tensor.int64_data_size());
    std::vector<int64_t> data(tensor.int64_data().begin(),
                              tensor.int64_data().end());
    return DenseElementsAttr::get(type, ArrayRef<int64_t>(data));
  }
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: {
    // These travel in int32_data: integers by value, 16-bit floats by bits.
    if (tensor.int32_data_size() != count)
      sizeMismatch(tensor.int32_data_size());
    SmallVector<APInt> data;
    unsigned width = element.getIntOrFloatBitWidth();
    for (int32_t value : tensor.int32_data())
      data.push_back(APInt(width, static_cast<uint64_t>(value),
                           /*isSigned=*/true,
                           /*implicitTrunc=*/true));
    if (auto floatType = dyn_cast<FloatType>(element)) {
      SmallVector<APFloat> floats;
      for (const APInt &bits : data)
        floats.push_back(APFloat(floatType.getFloatSemantics(), bits));
      return DenseElementsAttr::get(type, floats);
    }
    return DenseElementsAttr::get(type, data);
  }
  default:
    fail(what + " stores its data in a form parplan does not read");
  }
}

Value Importer::prologue(function_ref<Value(OpBuilder &)> create) {
  OpBuilder prologueBuilder(&context);
  if (lastPrologueOp)
    prologueBuilder.setInsertionPointAfter(lastPrologueOp);
  else
    prologueBuilder.setInsertionPointToStart(body);
  Value value = create(prologueBuilder);
  lastPrologueOp = value.getDefiningOp();
  return value;
}

Value Importer::fixedInput(const onnx::ValueInfoProto &graphInput,
                           const std::vector<double> &numbers) {
  const std::string &name = graphInput.name();
  std::string what = "graph input " + quote(name);
  RankedTensorType type = tensorType(graphInput.type(), what);
  if (type.getNumElements() != static_cast<int64_t>(numbers.size()))
    fail(what + " is " + typeName(type) + ", " +
         std::to_string(type.getNumElements()) +
         " elements, and --input-value gives it " +
         std::to_string(numbers.size()));
  Type element = type.getElementType();
  SmallVector<Attribute> elements;
  for (double number : numbers) {
    if (isa<FloatType>(element)) {
      elements.push_back(builder.getFloatAttr(element, number));
      continue;
    }
    // Within the type's range: [0, 2^w) unsigned (i1: 0 or 1), else
    // [-2^(w-1), 2^(w-1)).
    unsigned width = element.getIntOrFloatBitWidth();
    bool isUnsigned = element.isUnsignedInteger() || width == 1;
    double low = isUnsigned ? 0 : -std::ldexp(1.0, static_cast<int>(width) - 1);
    double high =
        std::ldexp(1.0, static_cast<int>(width) - (isUnsigned ? 0 : 1));
    bool fits = number == std::trunc(number) && number >= low && number < high;
    if (!fits) {
      std::ostringstream text;
      text << number;
      fail(what + " is " + typeName(type) + " and cannot hold the value " +
           text.str());
    }
    elements.push_back(
        builder.getIntegerAttr(element, static_cast<int64_t>(number)));
  }
  auto value = DenseElementsAttr::get(type, elements);
  return prologue([&](OpBuilder &b) {
    return nn::ConstantOp::create(b, NameLoc::get(b.getStringAttr(name)), value)
        .getResult();
  });
}

Value Importer::materializeInitializer(const std::string &name,
                                       bool isGraphInput) {
  const onnx::TensorProto &tensor = *initializers.lookup(name);
  std::string what = "initializer " + quote(name);
  RankedTensorType type = tensorType(tensor, what);
  Value value;
  bool isFloat = isa<FloatType>(type.getElementType());
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location = "?";
    int64_t offset = 0, length = -1;
    for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
      long long number = 0;
      if (entry.key() == "location") {
        location = entry.value();
      } else if (entry.key() == "offset" || entry.key() == "length") {
        if (StringRef(entry.value()).getAsInteger(10, number) || number < 0)
          fail(what + " has external data " + entry.key() + " " +
               quote(entry.value()) + ", not a non-negative integer");
        (entry.key() == "offset" ? offset : length) = number;
      }
    }
    if (location == "?" || location.empty())
      fail(what + " has external data without a location");
    // The executor opens the file beside the model: no way out of its folder.
    if (llvm::sys::path::is_absolute(location) ||
        llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                            llvm::sys::path::end(location)),
                           ".."))
      fail(what + " has external data location " + quote(location) +
           ", which leaves the model's folder");
    int64_t expected = type.getNumElements() *
                       std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    if (length >= 0 && length != expected)
      fail(what + " has external data of " + std::to_string(length) +
           " bytes for shape " + shapeString(type.getShape()) +
           ", which needs " + std::to_string(expected));
    if (!isFloat)
      fail(what + " is an integer tensor in external data; parplan needs the "
                  "values of integer initializers in the model file");
    std::string source = "external:" + location + "@" + std::to_string(offset) +
                         (length >= 0 ? "+" + std::to_string(length) : "");
    value = prologue([&](OpBuilder &b) {
      auto param = nn::ParamOp::create(b, NameLoc::get(b.getStringAttr(name)),
                                       type, name, b.getStringAttr(source),
                                       StringAttr(), DenseI64ArrayAttr());
      return param.getResult();
    });
  } else if (isFloat && (type.getNumElements() != 1 || isGraphInput ||
                         weightInputs.contains(name))) {
    std::string source = checkWeightData(tensor, type, what);
    value = prologue([&](OpBuilder &b) {
      return nn::ParamOp::create(b, NameLoc::get(b.getStringAttr(name)), type,
                                 name, b.getStringAttr(source), StringAttr(),
                                 DenseI64ArrayAttr())
          .getResult();
    });
  } else {
    // Integer and boolean initializers (shapes, indices, masks) are data
    // the program computes with, not trainable weights; so are float
    // scalars that no node reads as a weight (epsilons, exponents, scales
    // that simplified exports keep as initializers).
    DenseElementsAttr data = *tensorData(tensor, type, what);
    value = prologue([&](OpBuilder &b) {
      return nn::ConstantOp::create(b, NameLoc::get(b.getStringAttr(name)),
                                    data)
          .getResult();
    });
  }
  values[name] = value;
  initializers.erase(name);
  return value;
}

/// Checks that a float initializer holds as many bytes or values as its shape
/// needs, without reading them, and says where they are: the byte range in
/// the model file when they are raw bytes (usually left out of the parsed
/// model by stripWeightData), else the initializer's typed values.
std::string Importer::checkWeightData(const onnx::TensorProto &tensor,
                                      RankedTensorType type,
                                      const std::string &what) {
  int64_t count = type.getNumElements();
  int64_t width = type.getElementType().getIntOrFloatBitWidth() / 8;
  auto mismatch = [&](int64_t got, const char *unit) {
    fail(what + " holds " + std::to_string(got) + " " + unit + " for shape " +
         shapeString(type.getShape()) + ", which needs " +
         std::to_string(count * (unit[0] == 'b' ? width : 1)));
  };
  auto range = rawData.find(tensor.name());
  if (tensor.has_raw_data() || range != rawData.end()) {
    int64_t bytes = tensor.has_raw_data()
                        ? static_cast<int64_t>(tensor.raw_data().size())
                        : static_cast<int64_t>(range->second.length);
    if (bytes != count * width)
      mismatch(bytes, "bytes");
    if (range == rawData.end())
      return "initializer";
    return "initializer@" + std::to_string(range->second.offset) + "+" +
           std::to_string(range->second.length);
  }
  int64_t values = 0;
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    values = tensor.float_data_size();
    break;
  case onnx::TensorProto::DOUBLE:
    values = tensor.double_data_size();
    break;
  default: // float16 and bfloat16 travel in int32_data.
    values = tensor.int32_data_size();
    break;
  }
  if (values != count)
    mismatch(values, "values");
  return "initializer";
}

Value Importer::lookup(const std::string &name, const onnx::NodeProto &node) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  if (initializers.count(name))
    return materializeInitializer(name);
  failAt(node, "reads " + quote(name) +
                   ", which no node, graph input or initializer provides");
}

Value Importer::input(const onnx::NodeProto &node, int index) {
  if (index >= node.input_size() || node.input(index).empty())
    failAt(node, "needs input " + std::to_string(index));
  return lookup(node.input(index), node);
}

Value Importer::optionalInput(const onnx::NodeProto &node, int index) {
  if (index >= node.input_size() || node.input(index).empty())
    return {};
  return lookup(node.input(index), node);
}

void Importer::define(const onnx::NodeProto &node, int index, Value value) {
  if (index < node.output_size() && !node.output(index).empty())
    values[node.output(index)] = value;
}

void Importer::requireUnused(const onnx::NodeProto &node, int fromIndex) {
  for (int i = fromIndex; i < node.output_size(); ++i)
    if (!node.output(i).empty() && uses.lookup(node.output(i)) > 0)
      failAt(node, "output " + std::to_string(i) + " (" +
                       quote(node.output(i)) +
                       ") is used, and parplan imports only output 0 of " +
                       node.op_type());
}

//===----------------------------------------------------------------------===//
// Node helpers
//===----------------------------------------------------------------------===//

std::string Importer::nodeLabel(const onnx::NodeProto &node) {
  auto it = labels.find(&node);
  return it != labels.end() ? it->second : node.name();
}

void Importer::failAt(const onnx::NodeProto &node, const std::string &message) {
  fail("node " + quote(nodeLabel(node)) + " (" + node.op_type() +
       "): " + message);
}

void Importer::failWithDiagnostic(const onnx::NodeProto &node) {
  failAt(node,
         lastDiagnostic.empty() ? "the op does not verify" : lastDiagnostic);
}

Location Importer::loc(const onnx::NodeProto &node) {
  return NameLoc::get(builder.getStringAttr(nodeLabel(node)));
}

const onnx::AttributeProto *Importer::attribute(const onnx::NodeProto &node,
                                                const std::string &name) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t Importer::intAttr(const onnx::NodeProto &node, const std::string &name,
                          int64_t fallback) {
  const onnx::AttributeProto *attr = attribute(node, name);
  if (!attr)
    return fallback;
  if (attr->type() != onnx::AttributeProto::INT && !attr->has_i())
    failAt(node, "attribute " + quote(name) + " must be an integer");
  return attr->i();
}

float Importer::floatAttr(const onnx::NodeProto &node, const std::string &name,
                          float fallback) {
  const onnx::AttributeProto *attr = attribute(node, name);
  if (!attr)
    return fallback;
  if (attr->type() != onnx::AttributeProto::FLOAT && !attr->has_f())
    failAt(node, "attribute " + quote(name) + " must be a float");
  return attr->f();
}

std::string Importer::stringAttr(const onnx::NodeProto &node,
                                 const std::string &name,
                                 const std::string &fallback) {
  const onnx::AttributeProto *attr = attribute(node, name);
  return attr ? attr->s() : fallback;
}

std::string Importer::autoPadAttr(const onnx::NodeProto &node) {
  std::string autoPad = stringAttr(node, "auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER" && autoPad != "VALID")
    failAt(node, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, "
                 "got " +
                     quote(autoPad));
  return autoPad;
}

std::optional<std::vector<int64_t>>
Importer::intsAttr(const onnx::NodeProto &node, const std::string &name) {
  const onnx::AttributeProto *attr = attribute(node, name);
  if (!attr)
    return std::nullopt;
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::optional<std::vector<int64_t>>
Importer::optionalConstantInts(const onnx::NodeProto &node, int index,
                               const std::string &role) {
  Value value = optionalInput(node, index);
  if (!value)
    return std::nullopt;
  auto constant = value.getDefiningOp<nn::ConstantOp>();
  auto dense =
      constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !isa<IntegerType>(dense.getElementType()))
    failAt(node, "input " + std::to_string(index) + " (" + role +
                     ") must be an integer constant, and " +
                     quote(node.input(index)) +
                     " is computed from the program's data");
  std::vector<int64_t> result;
  for (const APInt &element : dense.getValues<APInt>())
    result.push_back(element.getSExtValue());
  return result;
}

std::vector<int64_t> Importer::constantInts(const onnx::NodeProto &node,
                                            int index,
                                            const std::string &role) {
  std::optional<std::vector<int64_t>> ints =
      optionalConstantInts(node, index, role);
  if (!ints)
    failAt(node, "needs input " + std::to_string(index) + " (" + role + ")");
  return *ints;
}

std::optional<std::vector<double>>
Importer::optionalConstantValues(const onnx::NodeProto &node, int index,
                                 const std::string &role,
                                 const std::string &expected) {
  if (index >= node.input_size() || node.input(index).empty())
    return std::nullopt;
  const std::string &name = node.input(index);
  // A float initializer is a parameter (or becomes one when read); a value
  // given as one is read from the initializer's data instead, unless it is
  // a graph input with a default, which may be fed another value.
  const onnx::TensorProto *tensor = nullptr;
  if (!values.count(name))
    tensor = initializers.lookup(name);
  else if (auto param = values.lookup(name).getDefiningOp<nn::ParamOp>();
           param && param.getSource().value_or("").starts_with("initializer"))
    tensor = initializerTensors.lookup(name);
  DenseElementsAttr dense;
  if (tensor) {
    std::string what = "initializer " + quote(name);
    if (std::optional<DenseElementsAttr> data =
            tensorData(*tensor, tensorType(*tensor, what), what))
      dense = *data;
  } else {
    auto constant = lookup(name, node).getDefiningOp<nn::ConstantOp>();
    dense =
        constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  }
  if (!dense)
    failAt(node, "input " + std::to_string(index) + " (" + role + ") must be " +
                     expected);
  std::vector<double> result;
  if (isa<FloatType>(dense.getElementType()))
    for (const APFloat &element : dense.getValues<APFloat>())
      result.push_back(element.convertToDouble());
  else
    for (const APInt &element : dense.getValues<APInt>())
      result.push_back(static_cast<double>(element.getSExtValue()));
  return result;
}

std::optional<float>
Importer::optionalConstantScalar(const onnx::NodeProto &node, int index,
                                 const std::string &role) {
  std::optional<std::vector<double>> values =
      optionalConstantValues(node, index, role, "a constant scalar");
  if (!values)
    return std::nullopt;
  if (values->size() != 1)
    failAt(node, "input " + std::to_string(index) + " (" + role +
                     ") must be a constant scalar");
  return static_cast<float>(values->front());
}

SmallVector<Value> Importer::finish(const onnx::NodeProto &node,
                                    Operation *op) {
  // Shapes that broadcast or expand may overflow, or come from negative
  // sizes; no such type may reach the IR.
  for (Type type : op->getResultTypes()) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(type).getShape();
    int64_t elements = 1;
    for (int64_t dim : shape) {
      if (dim >= 0 && !__builtin_mul_overflow(elements, dim, &elements))
        continue;
      op->erase();
      failAt(node, "result of shape " + shapeString(shape) +
                       (dim < 0 ? " has a negative size"
                                : " has more elements than int64 can count"));
    }
  }
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    failWithDiagnostic(node);
  }
  SmallVector<Value> results;
  if (succeeded(builder.tryFold(op, results)) && !results.empty()) {
    op->erase();
    return results;
  }
  return SmallVector<Value>(op->getResults());
}

Value Importer::reshape(const onnx::NodeProto &node, Value value,
                        ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, typeOf(value).getElementType());
  return buildTyped<nn::ReshapeOp>(node, type, value);
}

Value Importer::splat(const onnx::NodeProto &node, RankedTensorType type,
                      double value) {
  Type element = type.getElementType();
  Attribute fill = isa<FloatType>(element)
                       ? Attribute(builder.getFloatAttr(element, value))
                       : Attribute(builder.getIntegerAttr(
                             element, static_cast<int64_t>(value)));
  return prologue([&](OpBuilder &b) {
    return nn::ConstantOp::create(b, loc(node),
                                  DenseElementsAttr::get(type, fill))
        .getResult();
  });
}

Value Importer::castTo(const onnx::NodeProto &node, Value value,
                       Type elementType) {
  RankedTensorType type = typeOf(value);
  if (type.getElementType() == elementType)
    return value;
  return buildTyped<nn::CastOp>(node, type.clone(elementType), value);
}

} // namespace parplan::import

namespace {

bool looksLikeText(StringRef bytes) {
  StringRef trimmed = bytes.ltrim();
  while (trimmed.starts_with("#")) // Comments before the header.
    trimmed = trimmed.drop_until([](char c) { return c == '\n'; }).ltrim();
  return trimmed.starts_with("<");
}

/// The deepest nesting of braces (graphs, tensor literals) in ONNX text,
/// outside comments and strings. The text parser and the importer recurse
/// per level; binary models are held to 100 levels by protobuf.
int64_t textNesting(StringRef text) {
  int64_t depth = 0, deepest = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == StringRef::npos)
        break;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}') {
      --depth;
    }
  }
  return deepest;
}

} // namespace

OwningOpRef<ModuleOp> parplan::importOnnx(StringRef bytes, StringRef path,
                                          MLIRContext &context,
                                          const OnnxImportOptions &options,
                                          std::string &error) {
  context.loadDialect<nn::NNDialect, func::FuncDialect>();
  try {
    onnx::ModelProto model;
    std::optional<StrippedModel> stripped;
    if (looksLikeText(bytes)) {
      constexpr int64_t kMaxTextNesting = 100;
      if (textNesting(bytes) > kMaxTextNesting)
        fail("not a valid ONNX text model: graphs nest deeper than " +
             std::to_string(kMaxTextNesting) + " levels");
      std::string text = bytes.str();
      onnx::Status status;
      try {
        status = onnx::OnnxParser::Parse(model, text.c_str());
      } catch (const std::logic_error &failure) {
        // std::stol and friends, on numbers that do not fit or do not parse.
        fail(std::string("not a valid ONNX text model: a number is out of "
                         "range or malformed (") +
             failure.what() + ")");
      }
      if (!status.IsOK()) {
        std::string message = status.ErrorMessage();
        std::replace(message.begin(), message.end(), '\n', ' ');
        fail("not a valid ONNX text model: " + message);
      }
    } else {
      // Weights never enter the IR: parse the model without their bytes.
      // Malformed input fails here and is parsed as it is below, so that
      // protobuf decides what is wrong.
      stripped = stripWeightData(std::string_view(bytes.data(), bytes.size()),
                                 /*threshold=*/4096);
      StringRef toParse = stripped ? StringRef(stripped->bytes) : bytes;
      if (toParse.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
        fail("the model's graph is larger than protobuf's 2 GB limit; keep "
             "weights in external data");
      google::protobuf::io::CodedInputStream stream(
          reinterpret_cast<const uint8_t *>(toParse.data()),
          static_cast<int>(toParse.size()));
      stream.SetTotalBytesLimit(std::numeric_limits<int>::max());
      if (bytes.empty())
        fail("the file is empty, not an ONNX model");
      if (!model.ParseFromCodedStream(&stream) ||
          !stream.ConsumedEntireMessage())
        fail("not a valid ONNX model (the protobuf does not parse; is the file "
             "truncated?)");
    }
    static const std::map<std::string, ByteRange> noRawData;
    Importer importer(context, path, options,
                      stripped ? stripped->rawData : noRawData,
                      stripped ? stripped->constantData : noRawData);
    OwningOpRef<ModuleOp> module = importer.run(model);
    // The file's size and fingerprint: parameters are read back at their
    // offsets in it (plan.proto's model_bytes and model_fingerprint).
    if (module) {
      auto i64 = IntegerType::get(&context, 64);
      (*module)->setAttr(
          parplan::kSourceBytesAttrName,
          IntegerAttr::get(i64, static_cast<int64_t>(bytes.size())));
      uint64_t fingerprint =
          fileFingerprint(bytes.size(), [&](uint64_t offset, uint64_t length) {
            return std::string_view(bytes.data() + offset, length);
          });
      (*module)->setAttr(
          parplan::kSourceFingerprintAttrName,
          IntegerAttr::get(i64, static_cast<int64_t>(fingerprint)));
    }
    return module;
  } catch (const ImportError &failure) {
    error = oneLine(path.str() + ": " + failure.what());
  } catch (const std::exception &failure) {
    error = oneLine(path.str() + ": " + failure.what());
  }
  return nullptr;
}

std::optional<std::string> parplan::addDimBinding(OnnxImportOptions &options,
                                                  StringRef binding) {
  auto [name, value] = binding.split('=');
  long long size = 0;
  if (name.empty() || value.getAsInteger(10, size) || size <= 0)
    return "--dim " + binding.str() +
           ": expected NAME=VALUE with a positive integer VALUE";
  options.dims[name.str()] = size;
  return std::nullopt;
}

std::optional<std::string>
parplan::addInputValueBinding(OnnxImportOptions &options, StringRef binding) {
  auto [name, list] = binding.split('=');
  std::vector<double> numbers;
  SmallVector<StringRef> items;
  list.split(items, ',');
  for (StringRef item : items) {
    double number = 0;
    if (item.trim().getAsDouble(number)) {
      numbers.clear();
      break;
    }
    numbers.push_back(number);
  }
  if (name.empty() || numbers.empty())
    return "--input-value " + binding.str() +
           ": expected NAME=VALUE or NAME=V1,V2,... with numbers";
  options.inputValues[name.str()] = std::move(numbers);
  return std::nullopt;
}

std::vector<std::string> parplan::supportedOnnxOps() {
  std::vector<std::string> names;
  for (const auto &entry : Importer::converters())
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}
