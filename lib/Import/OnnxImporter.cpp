//===- OnnxImporter.cpp - ONNX to the nn dialect --------------------------===//
//
// One pass over the graph: values are created in topological order, every op
// is built through its own shape rule (InferTypeOpInterface) and folded as it
// is built, so shape-computing subgraphs become constants before the ops
// that need them (Reshape, Expand, Slice, ...) read them. Canonical forms
// (fused LayerNorm and GELU) are left to the nn passes.
//
// Errors are thrown as ImportError inside this file and caught at the API
// boundary; no exception crosses an MLIR frame.
//
//===----------------------------------------------------------------------===//

#include "parplan/Import/OnnxImporter.h"
#include "parplan/Import/OnnxWireFormat.h"
#include "parplan/Support/Hash.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNDecompositions.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

using namespace mlir;
namespace nn = parplan::nn;
using parplan::nn::listString;
using parplan::nn::normalizeAxis;
using parplan::nn::shapeString;

namespace {

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 21;
/// Constant nodes up to this many float elements stay inline constants;
/// larger ones are weights and become parameters.
constexpr int64_t kMaxInlineFloatElements = 4096;

struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string &message) {
  throw ImportError(message);
}

std::string quote(const std::string &name) { return "'" + name + "'"; }

int64_t checkedProduct(ArrayRef<int64_t> dims, const std::string &what) {
  int64_t product = 1;
  for (int64_t dim : dims)
    if (__builtin_mul_overflow(product, dim, &product))
      fail(what + " of shape " + shapeString(dims) +
           " has more elements than int64 can count");
  return product;
}

std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

class Importer {
public:
  /// `rawData` locates, in the model file, the raw bytes of top-level
  /// initializers (see stripWeightData); empty for text models.
  Importer(MLIRContext &context, StringRef path,
           const parplan::OnnxImportOptions &options,
           const std::map<std::string, parplan::ByteRange> &rawData)
      : context(context), builder(&context), path(path.str()), options(options),
        rawData(rawData) {}

  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model);

  using Converter = void (Importer::*)(const onnx::NodeProto &);
  static const llvm::StringMap<Converter> &converters();

private:
  // Graph structure.
  void readOpset(const onnx::ModelProto &model);
  void checkSupported(const onnx::GraphProto &graph);
  void
  collectUnsupported(const onnx::GraphProto &graph,
                     std::map<std::string, std::vector<std::string>> &found,
                     const std::string &prefix);
  void countUses(const onnx::GraphProto &graph);
  void registerInitializers(const onnx::GraphProto &graph);
  void importGraphBody(const onnx::GraphProto &graph,
                       const std::string &prefix);
  std::vector<const onnx::NodeProto *> sortNodes(const onnx::GraphProto &graph,
                                                 const std::string &prefix);
  void convertNode(const onnx::NodeProto &node);

  // Values.
  Type elementType(int32_t onnxType, const std::string &what);
  RankedTensorType tensorType(const onnx::TypeProto &type,
                              const std::string &what);
  RankedTensorType tensorType(const onnx::TensorProto &tensor,
                              const std::string &what);
  std::optional<DenseElementsAttr> tensorData(const onnx::TensorProto &tensor,
                                              RankedTensorType type,
                                              const std::string &what);
  Value lookup(const std::string &name, const onnx::NodeProto &node);
  Value input(const onnx::NodeProto &node, int index);
  Value optionalInput(const onnx::NodeProto &node, int index);
  void define(const onnx::NodeProto &node, int index, Value value);
  void requireUnused(const onnx::NodeProto &node, int fromIndex);
  /// `isGraphInput`: the initializer is a graph input's default, which may
  /// be fed another value, so it is never folded into a constant if float.
  Value materializeInitializer(const std::string &name,
                               bool isGraphInput = false);
  std::string checkWeightData(const onnx::TensorProto &tensor,
                              RankedTensorType type, const std::string &what);
  Value prologue(function_ref<Value(OpBuilder &)> create);

  // Node helpers.
  std::string nodeLabel(const onnx::NodeProto &node);
  [[noreturn]] void failAt(const onnx::NodeProto &node,
                           const std::string &message);
  [[noreturn]] void failWithDiagnostic(const onnx::NodeProto &node);
  Location loc(const onnx::NodeProto &node);
  const onnx::AttributeProto *attribute(const onnx::NodeProto &node,
                                        const std::string &name);
  int64_t intAttr(const onnx::NodeProto &node, const std::string &name,
                  int64_t fallback);
  float floatAttr(const onnx::NodeProto &node, const std::string &name,
                  float fallback);
  std::string stringAttr(const onnx::NodeProto &node, const std::string &name,
                         const std::string &fallback);
  std::optional<std::vector<int64_t>> intsAttr(const onnx::NodeProto &node,
                                               const std::string &name);
  std::string autoPadAttr(const onnx::NodeProto &node);
  std::vector<int64_t> constantInts(const onnx::NodeProto &node, int index,
                                    const std::string &role);
  std::optional<std::vector<int64_t>>
  optionalConstantInts(const onnx::NodeProto &node, int index,
                       const std::string &role);
  std::optional<float> optionalConstantScalar(const onnx::NodeProto &node,
                                              int index,
                                              const std::string &role);
  RankedTensorType typeOf(Value value) {
    return cast<RankedTensorType>(value.getType());
  }

  /// Builds an op whose result types follow from its operands, through the
  /// op's own shape rule, then verifies and folds it.
  template <typename OpTy, typename... Args>
  SmallVector<Value> build(const onnx::NodeProto &node, unsigned numResults,
                           Args &&...args);
  /// Builds an op with explicit result types, then verifies and folds it.
  template <typename OpTy, typename... Args>
  Value buildTyped(const onnx::NodeProto &node, Type type, Args &&...args);
  SmallVector<Value> finish(const onnx::NodeProto &node, Operation *op);
  Value reshape(const onnx::NodeProto &node, Value value,
                ArrayRef<int64_t> shape);
  Value castTo(const onnx::NodeProto &node, Value value, Type elementType);

  // Converters, one per ONNX op type (or family).
  void convertMatMul(const onnx::NodeProto &node);
  void convertGemm(const onnx::NodeProto &node);
  void convertBinary(const onnx::NodeProto &node);
  void convertUnary(const onnx::NodeProto &node);
  void convertLeakyRelu(const onnx::NodeProto &node);
  void convertHardSigmoid(const onnx::NodeProto &node);
  void convertGelu(const onnx::NodeProto &node);
  void convertClip(const onnx::NodeProto &node);
  void convertSoftmax(const onnx::NodeProto &node);
  void convertLayerNorm(const onnx::NodeProto &node);
  void convertBatchNorm(const onnx::NodeProto &node);
  void convertConv(const onnx::NodeProto &node);
  void convertPool(const onnx::NodeProto &node);
  void convertGlobalAveragePool(const onnx::NodeProto &node);
  void convertFlatten(const onnx::NodeProto &node);
  void convertReshape(const onnx::NodeProto &node);
  void convertSqueeze(const onnx::NodeProto &node);
  void convertUnsqueeze(const onnx::NodeProto &node);
  void convertTranspose(const onnx::NodeProto &node);
  void convertConcat(const onnx::NodeProto &node);
  void convertSplit(const onnx::NodeProto &node);
  void convertSlice(const onnx::NodeProto &node);
  void convertGather(const onnx::NodeProto &node);
  void convertReduce(const onnx::NodeProto &node);
  void convertCast(const onnx::NodeProto &node);
  void convertIdentity(const onnx::NodeProto &node);
  void convertDropout(const onnx::NodeProto &node);
  void convertWhere(const onnx::NodeProto &node);
  void convertCompare(const onnx::NodeProto &node);
  void convertNot(const onnx::NodeProto &node);
  void convertExpand(const onnx::NodeProto &node);
  void convertConstant(const onnx::NodeProto &node);
  void convertConstantOfShape(const onnx::NodeProto &node);
  void convertShape(const onnx::NodeProto &node);
  void convertIf(const onnx::NodeProto &node);

  MLIRContext &context;
  OpBuilder builder;
  std::string path;
  const parplan::OnnxImportOptions &options;
  const std::map<std::string, parplan::ByteRange> &rawData;
  int64_t opset = 0;
  std::string lastDiagnostic;

  llvm::StringMap<Value> values;
  /// Initializers not yet turned into values, by name.
  llvm::StringMap<const onnx::TensorProto *> initializers;
  /// Every initializer, by name, turned into a value or not.
  llvm::StringMap<const onnx::TensorProto *> initializerTensors;
  /// How many nodes (or graph outputs) read each value name.
  llvm::StringMap<int> uses;
  /// Values that some node reads as weights (Conv, Gemm and MatMul weights
  /// and biases, normalization statistics, embedding tables).
  llvm::StringSet<> weightInputs;
  /// Labels of nodes, by node address (names are optional in ONNX).
  llvm::DenseMap<const onnx::NodeProto *, std::string> labels;
  /// Where the next parameter, input or constant of the prologue goes.
  Block *body = nullptr;
  Operation *lastPrologueOp = nullptr;
};

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
      {"Cast", &Importer::convertCast},
      {"Identity", &Importer::convertIdentity},
      {"Dropout", &Importer::convertDropout},
      {"Where", &Importer::convertWhere},
      {"Equal", &Importer::convertCompare},
      {"Less", &Importer::convertCompare},
      {"Greater", &Importer::convertCompare},
      {"And", &Importer::convertCompare},
      {"Or", &Importer::convertCompare},
      {"Not", &Importer::convertNot},
      {"Expand", &Importer::convertExpand},
      {"Constant", &Importer::convertConstant},
      {"ConstantOfShape", &Importer::convertConstantOfShape},
      {"Shape", &Importer::convertShape},
      {"If", &Importer::convertIf},
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
    if (initializers.count(name)) {
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
    RankedTensorType type =
        tensorType(graphInput.type(), "graph input " + quote(name));
    values[name] = prologue([&](OpBuilder &b) {
      return nn::InputOp::create(b, NameLoc::get(b.getStringAttr(name)), type,
                                 name);
    });
  }

  // A binding no input reads is a typo, or a batch given to a model whose
  // batch is fixed: the program would silently have other shapes than asked.
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
      {"Gemm", {1, 2}},
      {"MatMul", {1}},
      {"BatchNormalization", {1, 2, 3, 4}},
      {"LayerNormalization", {1, 2}},
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
    std::vector<bool> bits;
    if (tensor.has_raw_data()) {
      for (char byte : tensor.raw_data())
        bits.push_back(byte != 0);
    } else {
      for (int32_t value : tensor.int32_data())
        bits.push_back(value != 0);
    }
    if (static_cast<int64_t>(bits.size()) != count)
      sizeMismatch(bits.size());
    SmallVector<bool> values(bits.begin(), bits.end());
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

std::optional<float>
Importer::optionalConstantScalar(const onnx::NodeProto &node, int index,
                                 const std::string &role) {
  if (index >= node.input_size() || node.input(index).empty())
    return std::nullopt;
  const std::string &name = node.input(index);
  // A float initializer is a parameter (or becomes one when read); a bound
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
  if (!dense || dense.getNumElements() != 1)
    failAt(node, "input " + std::to_string(index) + " (" + role +
                     ") must be a constant scalar");
  if (isa<FloatType>(dense.getElementType()))
    return static_cast<float>(
        (*dense.getValues<APFloat>().begin()).convertToDouble());
  return static_cast<float>((*dense.getValues<APInt>().begin()).getSExtValue());
}

template <typename OpTy, typename... Args>
SmallVector<Value> Importer::build(const onnx::NodeProto &node,
                                   unsigned numResults, Args &&...args) {
  SmallVector<Type> placeholders(numResults, builder.getNoneType());
  auto op = OpTy::create(builder, loc(node), TypeRange(placeholders),
                         std::forward<Args>(args)...);
  SmallVector<Type> inferred;
  if (failed(OpTy::inferReturnTypes(&context, op->getLoc(), op->getOperands(),
                                    op->getRawDictionaryAttrs(),
                                    op->getPropertiesStorage(),
                                    op->getRegions(), inferred))) {
    op->erase();
    failWithDiagnostic(node);
  }
  for (auto [result, type] : llvm::zip_equal(op->getResults(), inferred))
    result.setType(type);
  return finish(node, op);
}

template <typename OpTy, typename... Args>
Value Importer::buildTyped(const onnx::NodeProto &node, Type type,
                           Args &&...args) {
  auto op = OpTy::create(builder, loc(node), type, std::forward<Args>(args)...);
  return finish(node, op)[0];
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

Value Importer::castTo(const onnx::NodeProto &node, Value value,
                       Type elementType) {
  RankedTensorType type = typeOf(value);
  if (type.getElementType() == elementType)
    return value;
  return buildTyped<nn::CastOp>(node, type.clone(elementType), value);
}

//===----------------------------------------------------------------------===//
// Converters
//===----------------------------------------------------------------------===//

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

void Importer::convertGather(const onnx::NodeProto &node) {
  Value data = input(node, 0), indices = input(node, 1);
  define(node, 0,
         build<nn::GatherOp>(
             node, 1, data, indices,
             builder.getI64IntegerAttr(intAttr(node, "axis", 0)))[0]);
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

void Importer::convertIdentity(const onnx::NodeProto &node) {
  define(node, 0, input(node, 0));
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
  else
    result = build<nn::OrOp>(node, 1, lhs, rhs)[0];
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
      values[name] = prologue([&](OpBuilder &b) {
        return nn::ParamOp::create(
                   b, loc(node), type, name,
                   b.getStringAttr("constant:" + nodeLabel(node)), StringAttr(),
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

void Importer::convertIf(const onnx::NodeProto &node) {
  Value condition = input(node, 0);
  auto constant = condition.getDefiningOp<nn::ConstantOp>();
  auto dense =
      constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || dense.getNumElements() != 1)
    failAt(node, "condition " + quote(node.input(0)) +
                     " is not a constant; parplan plans graphs without "
                     "data-dependent control flow");
  if (!isa<IntegerType>(dense.getElementType()))
    failAt(node, "condition " + quote(node.input(0)) + " must be a bool");
  bool taken = dense.getElementType().isInteger(1)
                   ? *dense.getValues<bool>().begin()
                   : !(*dense.getValues<APInt>().begin()).isZero();
  const onnx::AttributeProto *branch =
      attribute(node, taken ? "then_branch" : "else_branch");
  if (!branch || !branch->has_g())
    failAt(node,
           std::string("has no ") + (taken ? "then" : "else") + "_branch");
  const onnx::GraphProto &graph = branch->g();
  registerInitializers(graph);
  importGraphBody(graph, nodeLabel(node) + "/");
  if (graph.output_size() != node.output_size())
    failAt(node, std::string(taken ? "then" : "else") + "_branch has " +
                     std::to_string(graph.output_size()) +
                     (graph.output_size() == 1 ? " output" : " outputs") +
                     " but the node has " + std::to_string(node.output_size()));
  for (int i = 0; i < node.output_size(); ++i)
    define(node, i, lookup(graph.output(i).name(), node));
}

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
                      stripped ? stripped->rawData : noRawData);
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
    error = path.str() + ": " + failure.what();
  } catch (const std::exception &failure) {
    error = path.str() + ": " + failure.what();
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

std::vector<std::string> parplan::supportedOnnxOps() {
  std::vector<std::string> names;
  for (const auto &entry : Importer::converters())
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}
