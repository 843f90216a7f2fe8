//===- OnnxConformance.cpp - the importer over ONNX's backend tests -------===//
//
// Walks directory trees for `model.onnx` files (ONNX's backend test data, as
// Debian's libonnx-testdata ships it), imports each one and sorts the results
// into categories:
//
//   imported          the model became a verified nn module, and each result
//                     type agrees with test_data_set_0/output_N.pb
//   unsupported op    the model uses an op the importer has no converter for
//                     (expected; ranked by how many models each op blocks)
//   symbolic dims     a graph input has a symbolic or unknown dimension; no
//                     binding is given, so the model counts as not imported
//   frozen inputs     the import failed as the model is (typically: a shape,
//                     axes or bound arrives as a graph input, and parplan
//                     plans static programs), but succeeded, with the right
//                     result types, once those inputs became Constant nodes
//                     holding their values from test_data_set_0; not counted
//                     as imported, but checks the converter behind them
//   FAILED            every op is supported, yet the import failed or its
//                     result types contradict the test data: an importer bug
//                     or a limitation to look at
//   CRASHED           the importer threw, died on a signal or hung
//
// Every model that imported (or imported with frozen inputs) is then run by
// the reference interpreter (parplan/Target/NNInterpreter.h) on the inputs
// of each test_data_set_*/input_N.pb, its parameters read from the model's
// initializers and Constant nodes, and the results compared with
// output_N.pb (ONNX's backend-test tolerances: |actual - expected| <=
// atol + rtol * |expected|, rtol 1e-3 and atol 1e-7 for f32/f64, rtol 1e-2
// and atol 1e-3 for f16/bf16; integers and booleans exactly; NaN matches
// NaN; shapes must match):
//
//   computed          every data set's outputs match
//   MISMATCH          a number or a shape differs (the first differences are
//                     printed)
//   KERNEL ERROR      the interpreter failed on valid data, or crashed or
//                     hung while running: a bug to look at
//   not run           the model cannot be run here, with the reason (an op
//                     the interpreter does not know, an element type the
//                     runtime lacks, inputs over --max-input-mb)
//
// Every model is imported and run in a child process with its own
// MLIRContext, so a crash names its model and the run goes on. The last two
// lines are `computed C of X imported` and exactly `imported X of Y`; the
// exit code is non-zero when X is below --floor, C below --compute-floor, the
// importer crashed, or a model not in knownFailures has a MISMATCH or a
// KERNEL ERROR.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/Runtime/Tensor.h"
#include "parplan/Target/NNInterpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cl = llvm::cl;

namespace {

cl::list<std::string> roots(cl::Positional, cl::OneOrMore,
                            cl::desc("<directory>..."));
cl::opt<unsigned> floorOpt("floor", cl::init(0),
                           cl::desc("Fail when fewer models than this import"),
                           cl::value_desc("N"));
cl::opt<unsigned> jobsOpt("jobs", cl::init(0),
                          cl::desc("Imports run at once (default: one per "
                                   "core)"),
                          cl::value_desc("N"));
cl::opt<unsigned> timeoutOpt("timeout", cl::init(60),
                             cl::desc("Seconds one model's import and run may "
                                      "take before it counts as hung"),
                             cl::value_desc("SECONDS"));
cl::opt<unsigned>
    computeFloorOpt("compute-floor", cl::init(0),
                    cl::desc("Fail when fewer imported models than this "
                             "compute their test outputs"),
                    cl::value_desc("N"));
cl::opt<unsigned>
    maxInputMbOpt("max-input-mb", cl::init(50),
                  cl::desc("Do not run models whose test inputs and "
                           "parameters exceed this many megabytes"),
                  cl::value_desc("MB"));
cl::opt<bool> listImported("list-imported", cl::init(false),
                           cl::desc("Also list every model that imported, "
                                    "and every model that computed"));

/// Models whose MISMATCH or KERNEL ERROR is understood and does not fail the
/// run: the model's folder (as "node/test_x") and why. Keep it short: fix
/// the kernel instead where the kernel is wrong.
const std::map<std::string, std::string> knownFailures = {
    {"node/test_training_dropout",
     "random mask in training mode; the importer keeps Dropout's inference "
     "form (the identity)"},
    {"node/test_training_dropout_default",
     "random mask in training mode; the importer keeps Dropout's inference "
     "form (the identity)"},
};

enum class Category {
  Imported,
  Unsupported,
  Symbolic,
  ImportedFrozen,
  Failed,
  Crashed
};

/// What running an imported model on its test data gave.
enum class RunOutcome { NotAttempted, Computed, Mismatch, KernelError, NotRun };

/// What a child reports about one model.
struct Result {
  Category category = Category::Crashed;
  std::string message;
  std::vector<std::string> unsupportedOps;
  RunOutcome run = RunOutcome::NotAttempted;
  /// For NotRun, the reason alone (they are ranked); otherwise the details.
  std::string runMessage;
};

//===----------------------------------------------------------------------===//
// The child: one model, one context
//===----------------------------------------------------------------------===//

bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

void collectUnsupported(const onnx::GraphProto &graph,
                        const std::set<std::string> &supported,
                        std::set<std::string> &found) {
  for (const onnx::NodeProto &node : graph.node()) {
    if (!isDefaultDomain(node.domain()))
      found.insert(node.domain() + "::" + node.op_type());
    else if (!supported.count(node.op_type()))
      found.insert(node.op_type());
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.has_g())
        collectUnsupported(attr.g(), supported, found);
      for (const onnx::GraphProto &inner : attr.graphs())
        collectUnsupported(inner, supported, found);
    }
  }
}

/// The first graph input (not an initializer) whose shape is not fully
/// static, described for the report; empty when all are static.
std::string symbolicInput(const onnx::GraphProto &graph) {
  std::set<std::string> initializers;
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializers.insert(tensor.name());
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializers.count(input.name()) || !input.type().has_tensor_type())
      continue;
    const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
    if (!tensor.has_shape())
      return "input '" + input.name() + "' has no shape";
    for (const onnx::TensorShapeProto::Dimension &dim : tensor.shape().dim())
      if (!dim.has_dim_value())
        return "input '" + input.name() + "' has dimension " +
               (dim.has_dim_param() ? "'" + dim.dim_param() + "'" : "?");
  }
  return "";
}

/// The MLIR element type a test-data tensor of this ONNX type should have,
/// or null when the comparison does not apply.
mlir::Type expectedElementType(mlir::MLIRContext &context, int32_t onnxType) {
  mlir::Builder b(&context);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::INT8:
    return b.getI8Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  default:
    return nullptr;
  }
}

std::string typeString(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// Compares the imported function's result types with the tensors in
/// test_data_set_0/output_N.pb beside the model; returns the first
/// disagreement, or an empty string.
std::string checkAgainstTestData(mlir::ModuleOp module,
                                 const std::string &modelPath) {
  llvm::SmallString<256> dataDir(llvm::sys::path::parent_path(modelPath));
  llvm::sys::path::append(dataDir, "test_data_set_0");
  if (!llvm::sys::fs::is_directory(dataDir))
    return "";
  auto function = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!function)
    return "the module has no function @main";
  llvm::ArrayRef<mlir::Type> results = function.getFunctionType().getResults();
  size_t outputs = 0;
  for (;; ++outputs) {
    llvm::SmallString<256> file(dataDir);
    llvm::sys::path::append(file, "output_" + std::to_string(outputs) + ".pb");
    if (!llvm::sys::fs::exists(file))
      break;
    if (outputs >= results.size())
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(file);
    onnx::TensorProto tensor;
    // Outputs that are not plain tensors (sequences, optionals) do not
    // parse as TensorProto: nothing to compare.
    if (!buffer || !tensor.ParseFromArray((*buffer)->getBufferStart(),
                                          (*buffer)->getBufferSize()))
      continue;
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(results[outputs]);
    std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    mlir::Type element =
        expectedElementType(*module.getContext(), tensor.data_type());
    bool shapeMatches =
        type && llvm::equal(type.getShape(), llvm::ArrayRef<int64_t>(dims));
    bool elementMatches =
        !element || (type && type.getElementType() == element);
    if (!shapeMatches || !elementMatches) {
      std::string expected;
      for (int64_t dim : dims)
        expected += std::to_string(dim) + "x";
      expected += element ? typeString(element)
                          : onnx::TensorProto::DataType_Name(
                                static_cast<onnx::TensorProto::DataType>(
                                    tensor.data_type()));
      return "result " + std::to_string(outputs) + " has type " +
             typeString(results[outputs]) + ", the test data says tensor<" +
             expected + ">";
    }
  }
  if (outputs && outputs != results.size())
    return "the function has " + std::to_string(results.size()) +
           " results, the test data " + std::to_string(outputs) + " outputs";
  return "";
}

/// Turns the graph inputs whose test values are int32/int64 tensors or
/// single elements (shapes, axes, bounds) into Constant nodes holding the
/// values in test_data_set_0/input_N.pb; returns how many were frozen.
int freezeInputs(onnx::ModelProto &model, const std::string &modelPath) {
  llvm::SmallString<256> dataDir(llvm::sys::path::parent_path(modelPath));
  llvm::sys::path::append(dataDir, "test_data_set_0");
  onnx::GraphProto &graph = *model.mutable_graph();
  std::set<std::string> initializers;
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializers.insert(tensor.name());
  int frozen = 0;
  int fed = 0; // input_N.pb numbers the inputs without initializers.
  for (int i = 0; i < graph.input_size(); ++i) {
    if (initializers.count(graph.input(i).name()))
      continue;
    llvm::SmallString<256> file(dataDir);
    llvm::sys::path::append(file, "input_" + std::to_string(fed++) + ".pb");
    auto buffer = llvm::MemoryBuffer::getFile(file);
    onnx::TensorProto tensor;
    if (!buffer || !tensor.ParseFromArray((*buffer)->getBufferStart(),
                                          (*buffer)->getBufferSize()))
      continue;
    int64_t elements = 1;
    for (int64_t dim : tensor.dims())
      elements *= dim;
    bool integer = tensor.data_type() == onnx::TensorProto::INT64 ||
                   tensor.data_type() == onnx::TensorProto::INT32;
    if (!integer && elements != 1)
      continue;
    onnx::NodeProto &node = *graph.add_node(); // Nodes are sorted on import.
    node.set_op_type("Constant");
    node.set_name("frozen_" + graph.input(i).name());
    node.add_output(graph.input(i).name());
    onnx::AttributeProto &value = *node.add_attribute();
    value.set_name("value");
    value.set_type(onnx::AttributeProto::TENSOR);
    *value.mutable_t() = tensor;
    value.mutable_t()->clear_name();
    graph.mutable_input()->DeleteSubrange(i--, 1);
    ++frozen;
  }
  return frozen;
}

//===----------------------------------------------------------------------===//
// The child: running an imported model on its test data
//===----------------------------------------------------------------------===//

namespace rt = parplan::runtime;

/// A model ready to run: the imported module, with its context, and what
/// feeding it needs besides the ONNX model.
struct ImportedModel {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// The graph inputs without initializers, in order: input_N.pb is the
  /// N-th of them.
  std::vector<std::string> fedInputs;
  /// Inputs became Constant nodes holding test_data_set_0's values: only
  /// that data set applies.
  bool frozen = false;
};

std::optional<rt::DType> runtimeType(int32_t onnxType) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return rt::DType::F32;
  case onnx::TensorProto::DOUBLE:
    return rt::DType::F64;
  case onnx::TensorProto::FLOAT16:
    return rt::DType::F16;
  case onnx::TensorProto::BFLOAT16:
    return rt::DType::BF16;
  case onnx::TensorProto::INT64:
    return rt::DType::I64;
  case onnx::TensorProto::INT32:
    return rt::DType::I32;
  case onnx::TensorProto::INT8:
    return rt::DType::I8;
  case onnx::TensorProto::BOOL:
    return rt::DType::I1;
  default:
    return std::nullopt;
  }
}

template <typename Stored, typename Values>
void copyValues(const Values &values, rt::Tensor &tensor) {
  Stored *data = tensor.data<Stored>();
  for (int i = 0; i < values.size(); ++i)
    data[i] = static_cast<Stored>(values[i]);
}

/// A TensorProto (raw_data or the typed fields) as a runtime tensor; returns
/// why it cannot be one, or an empty string. `declared` is the element type
/// the program gives the tensor: ONNX's test data stores bfloat16 tensors as
/// UINT16 ones holding the bit patterns (numpy has no bfloat16).
std::string toRuntimeTensor(const onnx::TensorProto &proto, rt::Tensor &tensor,
                            std::optional<rt::DType> declared = std::nullopt) {
  std::optional<rt::DType> dtype = runtimeType(proto.data_type());
  if (proto.data_type() == onnx::TensorProto::UINT16 &&
      (declared == rt::DType::BF16 || declared == rt::DType::F16))
    dtype = declared;
  if (!dtype)
    return "element type " +
           onnx::TensorProto::DataType_Name(
               static_cast<onnx::TensorProto::DataType>(proto.data_type())) +
           " has no runtime type";
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    return "a tensor in external data";
  rt::Shape shape(proto.dims().begin(), proto.dims().end());
  if (llvm::any_of(shape, [](int64_t dim) { return dim < 0; }))
    return "a tensor with a negative dimension";
  tensor = rt::Tensor(*dtype, shape);
  int64_t count = tensor.numElements();
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != tensor.byteSize())
      return "a tensor of " + std::to_string(proto.raw_data().size()) +
             " bytes for shape " + rt::toString(shape);
    std::memcpy(tensor.bytes(), proto.raw_data().data(), tensor.byteSize());
    return "";
  }
  int64_t values = 0;
  switch (*dtype) {
  case rt::DType::F32:
    values = proto.float_data_size();
    break;
  case rt::DType::F64:
    values = proto.double_data_size();
    break;
  case rt::DType::I64:
    values = proto.int64_data_size();
    break;
  default: // Narrower integers, booleans and 16-bit float bit patterns.
    values = proto.int32_data_size();
    break;
  }
  if (values != count)
    return "a tensor of " + std::to_string(values) + " values for shape " +
           rt::toString(shape);
  switch (*dtype) {
  case rt::DType::F32:
    copyValues<float>(proto.float_data(), tensor);
    break;
  case rt::DType::F64:
    copyValues<double>(proto.double_data(), tensor);
    break;
  case rt::DType::I64:
    copyValues<int64_t>(proto.int64_data(), tensor);
    break;
  case rt::DType::I32:
    copyValues<int32_t>(proto.int32_data(), tensor);
    break;
  case rt::DType::I8:
    copyValues<int8_t>(proto.int32_data(), tensor);
    break;
  case rt::DType::I1:
    for (int64_t i = 0; i < count; ++i)
      tensor.data<uint8_t>()[i] = proto.int32_data(static_cast<int>(i)) != 0;
    break;
  case rt::DType::F16:
  case rt::DType::BF16:
    copyValues<uint16_t>(proto.int32_data(), tensor);
    break;
  }
  return "";
}

/// Reads `file` as a TensorProto; false when it is missing or not one.
bool readTensorProto(const llvm::Twine &file, onnx::TensorProto &proto) {
  auto buffer = llvm::MemoryBuffer::getFile(file);
  return buffer &&
         proto.ParseFromArray((*buffer)->getBufferStart(),
                              static_cast<int>((*buffer)->getBufferSize()));
}

std::string formatElement(const rt::Tensor &tensor, int64_t index) {
  switch (tensor.dtype()) {
  case rt::DType::I64:
    return std::to_string(tensor.data<int64_t>()[index]);
  case rt::DType::I1:
  case rt::DType::I8:
  case rt::DType::I32:
    return std::to_string(static_cast<int64_t>(tensor.get(index)));
  default: {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%.9g", tensor.get(index));
    return text;
  }
  }
}

/// Whether element `index` of `actual` passes for that of `expected` (same
/// element type).
bool elementMatches(const rt::Tensor &actual, const rt::Tensor &expected,
                    int64_t index) {
  rt::DType dtype = expected.dtype();
  if (dtype == rt::DType::I64)
    return actual.data<int64_t>()[index] == expected.data<int64_t>()[index];
  double a = actual.get(index), e = expected.get(index);
  if (!rt::isFloat(dtype))
    return a == e;
  if (std::isnan(e) || std::isnan(a))
    return std::isnan(e) && std::isnan(a);
  if (std::isinf(e) || std::isinf(a))
    return a == e;
  bool half = dtype == rt::DType::F16 || dtype == rt::DType::BF16;
  double rtol = half ? 1e-2 : 1e-3, atol = half ? 1e-3 : 1e-7;
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

/// Compares one result with its expected tensor: appends the first
/// differences (up to `kShownDifferences` in all) to `shown` and returns how
/// many elements differ (every element, when the types differ).
constexpr size_t kShownDifferences = 3;
int64_t compareOutput(const rt::Tensor &actual, const rt::Tensor &expected,
                      const std::string &where,
                      std::vector<std::string> &shown) {
  if (actual.dtype() != expected.dtype() ||
      actual.shape() != expected.shape()) {
    if (shown.size() < kShownDifferences)
      shown.push_back(where + ": " + rt::toString(actual.dtype()) + " " +
                      rt::toString(actual.shape()) + ", expected " +
                      rt::toString(expected.dtype()) + " " +
                      rt::toString(expected.shape()));
    return std::max<int64_t>(1, expected.numElements());
  }
  int64_t differing = 0;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    if (elementMatches(actual, expected, i))
      continue;
    ++differing;
    if (shown.size() < kShownDifferences)
      shown.push_back(where + " element " + std::to_string(i) + ": " +
                      formatElement(actual, i) + ", expected " +
                      formatElement(expected, i));
  }
  return differing;
}

struct RunReport {
  RunOutcome outcome;
  std::string message;
};

RunReport notRun(std::string reason) {
  return {RunOutcome::NotRun, std::move(reason)};
}

const onnx::NodeProto *findConstantNode(const onnx::GraphProto &graph,
                                        const std::string &output) {
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "Constant" && node.output_size() &&
        node.output(0) == output)
      return &node;
  return nullptr;
}

/// Runs the imported model with the reference interpreter on each
/// test_data_set_* beside it and compares the results with its outputs.
RunReport runModel(ImportedModel &imported, const onnx::ModelProto &model,
                   const std::string &modelPath) {
  auto function = imported.module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!function)
    return notRun("the module has no function @main");
  // Every value must have a runtime element type.
  std::string untyped;
  function.walk([&](mlir::Operation *op) {
    for (mlir::Type type : op->getResultTypes())
      if (auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
          shaped && !parplan::toDType(shaped.getElementType()))
        untyped = typeString(shaped.getElementType());
  });
  if (!untyped.empty())
    return notRun("element type " + untyped + " has no runtime type");

  uint64_t limit = uint64_t(maxInputMbOpt) << 20, bytes = 0;
  auto tooLarge = [&] {
    return notRun("inputs and parameters over " +
                  std::to_string(maxInputMbOpt) + " MB");
  };

  // Parameters: from the initializers and Constant nodes that hold them.
  std::map<std::string, const onnx::TensorProto *> initializers;
  for (const onnx::TensorProto &tensor : model.graph().initializer())
    initializers[tensor.name()] = &tensor;
  parplan::NamedTensors params;
  // The nn.input ops that the program reads, by name, with their element
  // types. An unused one is fed zeros of its declared type: its test data
  // need not match the declaration (test_castlike_*_expanded declares
  // 'like' 3x4 and feeds it one element).
  std::map<std::string, std::optional<rt::DType>> inputTypes;
  for (mlir::Operation &op : function.front()) {
    if (auto input = llvm::dyn_cast<parplan::nn::InputOp>(op)) {
      auto type = llvm::cast<mlir::ShapedType>(input.getType());
      if (input->use_empty())
        params[input.getName().str()] = rt::Tensor(
            *parplan::toDType(type.getElementType()),
            rt::Shape(type.getShape().begin(), type.getShape().end()));
      else
        inputTypes[input.getName().str()] =
            parplan::toDType(type.getElementType());
      continue;
    }
    auto param = llvm::dyn_cast<parplan::nn::ParamOp>(op);
    if (!param)
      continue;
    std::string name = param.getName().str();
    llvm::StringRef source = param.getSource().value_or("");
    const onnx::TensorProto *proto = nullptr;
    if (source == "zeros")
      continue;
    if (source.starts_with("initializer") || source == "input") {
      auto it = initializers.find(name);
      proto = it == initializers.end() ? nullptr : it->second;
    } else if (source.starts_with("constant:")) {
      if (const onnx::NodeProto *node = findConstantNode(model.graph(), name))
        for (const onnx::AttributeProto &attr : node->attribute())
          if (attr.name() == "value" && attr.has_t())
            proto = &attr.t();
    }
    if (!proto)
      return notRun("parameter source '" + source.str() + "'");
    std::string error = toRuntimeTensor(*proto, params[name]);
    if (!error.empty())
      return notRun("parameter: " + error);
    bytes += params[name].byteSize();
    if (bytes > limit)
      return tooLarge();
  }

  std::vector<std::string> dataSets;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator
           it(llvm::sys::path::parent_path(modelPath), ec),
       end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::filename(it->path()).starts_with("test_data_set_"))
      dataSets.push_back(it->path());
  std::sort(dataSets.begin(), dataSets.end());
  if (imported.frozen && !dataSets.empty())
    dataSets.resize(1); // The frozen values are test_data_set_0's.
  if (dataSets.empty())
    return notRun("no test data");

  llvm::ArrayRef<mlir::Type> resultTypes =
      function.getFunctionType().getResults();
  std::set<std::string> fedNames(imported.fedInputs.begin(),
                                 imported.fedInputs.end());
  std::vector<std::string> shown;
  int64_t differing = 0;
  for (const std::string &dataSet : dataSets) {
    std::string setName = llvm::sys::path::filename(dataSet).str();
    parplan::NamedTensors feeds = params;
    uint64_t setBytes = bytes;
    for (size_t n = 0;; ++n) {
      std::string file = dataSet + "/input_" + std::to_string(n) + ".pb";
      if (!llvm::sys::fs::exists(file))
        break;
      onnx::TensorProto proto;
      if (!readTensorProto(file, proto))
        return notRun("input " + std::to_string(n) + " is not a tensor");
      std::string name = proto.name();
      if (!fedNames.count(name)) {
        if (n >= imported.fedInputs.size())
          return notRun("more test inputs than graph inputs");
        name = imported.fedInputs[n];
      }
      auto input = inputTypes.find(name);
      if (input == inputTypes.end())
        continue; // Frozen into a Constant, or unused.
      std::string error = toRuntimeTensor(proto, feeds[name], input->second);
      if (!error.empty())
        return notRun("input: " + error);
      setBytes += feeds[name].byteSize();
      if (setBytes > limit)
        return tooLarge();
    }
    std::vector<rt::Tensor> expected;
    for (size_t n = 0;; ++n) {
      std::string file = dataSet + "/output_" + std::to_string(n) + ".pb";
      if (!llvm::sys::fs::exists(file))
        break;
      onnx::TensorProto proto;
      if (!readTensorProto(file, proto))
        return notRun("output " + std::to_string(n) + " is not a tensor");
      std::optional<rt::DType> declared;
      if (n < resultTypes.size())
        if (auto shaped = llvm::dyn_cast<mlir::ShapedType>(resultTypes[n]))
          declared = parplan::toDType(shaped.getElementType());
      expected.emplace_back();
      std::string error = toRuntimeTensor(proto, expected.back(), declared);
      if (!error.empty())
        return notRun("output: " + error);
    }

    // The interpreter reports a kernel's error, an unknown op or a bad feed
    // as a diagnostic at the op.
    std::string diagnostic, where;
    mlir::ScopedDiagnosticHandler handler(
        imported.context.get(), [&](mlir::Diagnostic &diag) {
          if (diag.getSeverity() == mlir::DiagnosticSeverity::Error &&
              diagnostic.empty()) {
            diagnostic = diag.str();
            llvm::raw_string_ostream(where) << diag.getLocation();
          }
          return mlir::success();
        });
    mlir::FailureOr<std::vector<rt::Tensor>> results =
        parplan::interpret(function, feeds);
    if (mlir::failed(results)) {
      if (llvm::StringRef(diagnostic).contains("not known to the interpreter"))
        return notRun(diagnostic);
      return {RunOutcome::KernelError,
              setName + ": " + diagnostic + " (at " + where + ")"};
    }
    if (results->size() != expected.size())
      return {RunOutcome::Mismatch,
              setName + ": " + std::to_string(results->size()) + " results, " +
                  std::to_string(expected.size()) + " expected outputs"};
    for (size_t n = 0; n < expected.size(); ++n)
      differing +=
          compareOutput((*results)[n], expected[n],
                        setName + " output " + std::to_string(n), shown);
  }
  if (!differing)
    return {RunOutcome::Computed, ""};
  std::string message =
      std::to_string(differing) +
      (differing == 1 ? " element differs" : " elements differ");
  for (const std::string &line : shown)
    message += "\n      " + line;
  return {RunOutcome::Mismatch, message};
}

/// Imports one model; when it imports (or imports with frozen inputs), leaves
/// the module in `imported` and the parsed (possibly frozen) model in
/// `model`, to run.
Result importOne(const std::string &path,
                 const std::set<std::string> &supported,
                 onnx::ModelProto &model, ImportedModel &imported) {
  Result result;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    result.category = Category::Failed;
    result.message = path + ": cannot read: " + buffer.getError().message();
    return result;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();

  // Classify from the model itself, independently of the importer.
  std::string symbolic;
  if (model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    std::set<std::string> found;
    collectUnsupported(model.graph(), supported, found);
    result.unsupportedOps.assign(found.begin(), found.end());
    symbolic = symbolicInput(model.graph());
    std::set<std::string> initializers;
    for (const onnx::TensorProto &tensor : model.graph().initializer())
      initializers.insert(tensor.name());
    for (const onnx::ValueInfoProto &input : model.graph().input())
      if (!initializers.count(input.name()))
        imported.fedInputs.push_back(input.name());
  }

  auto context = std::make_unique<mlir::MLIRContext>(
      mlir::MLIRContext::Threading::DISABLED);
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  try {
    module = parplan::importOnnx(bytes, path, *context,
                                 parplan::OnnxImportOptions(), error);
  } catch (const std::exception &exception) {
    result.category = Category::Crashed;
    result.message = path + ": importOnnx threw: " + exception.what();
    return result;
  } catch (...) {
    result.category = Category::Crashed;
    result.message = path + ": importOnnx threw a non-standard exception";
    return result;
  }

  if (!result.unsupportedOps.empty()) {
    result.category = module ? Category::Failed : Category::Unsupported;
    result.message = module ? path + ": imported although it uses " +
                                  result.unsupportedOps.front()
                            : error;
    return result;
  }
  if (!symbolic.empty()) {
    result.category = Category::Symbolic;
    result.message = path + ": " + symbolic;
    return result;
  }
  if (module) {
    std::string mismatch = checkAgainstTestData(*module, path);
    result.category = mismatch.empty() ? Category::Imported : Category::Failed;
    result.message = path + ": " + mismatch;
    if (mismatch.empty()) {
      imported.context = std::move(context);
      imported.module = std::move(module);
    }
    return result;
  }
  result.category = Category::Failed;
  result.message = error.empty() ? path + ": failed with no message" : error;

  // Try again with the shape-like inputs frozen to their test values.
  if (model.ByteSizeLong() == 0 || !freezeInputs(model, path))
    return result;
  std::string frozenBytes = model.SerializeAsString();
  auto frozenContext = std::make_unique<mlir::MLIRContext>(
      mlir::MLIRContext::Threading::DISABLED);
  std::string frozenError;
  mlir::OwningOpRef<mlir::ModuleOp> frozen;
  try {
    frozen = parplan::importOnnx(frozenBytes, path, *frozenContext,
                                 parplan::OnnxImportOptions(), frozenError);
  } catch (const std::exception &exception) {
    result.category = Category::Crashed;
    result.message =
        path + ": importOnnx threw (inputs frozen): " + exception.what();
    return result;
  } catch (...) {
    result.category = Category::Crashed;
    result.message =
        path + ": importOnnx threw a non-standard exception (inputs frozen)";
    return result;
  }
  std::string mismatch =
      frozen
          ? checkAgainstTestData(*frozen, path)
          : frozenError.substr(std::min(frozenError.size(), path.size() + 2));
  if (mismatch.empty()) {
    result.category = Category::ImportedFrozen;
    imported.context = std::move(frozenContext);
    imported.module = std::move(frozen);
    imported.frozen = true;
  } else {
    result.message += " [inputs frozen to their test values: " + mismatch + "]";
  }
  return result;
}

/// A child writes two records to its pipe, one field per line: the
/// import's, ended by "@end", as soon as it has it, then, for a model it
/// runs, "@run", the outcome and its message (newlines as \x1f). A child
/// that dies while running leaves the first.
std::string oneLine(std::string text, char newline = ' ') {
  std::replace(text.begin(), text.end(), '\n', newline);
  if (text.size() > 4000)
    text = text.substr(0, 4000) + "...";
  return text;
}

std::string serializeImport(const Result &result) {
  std::string record = std::to_string(static_cast<int>(result.category)) +
                       "\n" + oneLine(result.message) + "\n";
  for (const std::string &op : result.unsupportedOps)
    record += oneLine(op) + "\n";
  if (record.size() > 32768) { // Well below a pipe's buffer.
    record.resize(32768);
    record.erase(record.rfind('\n') + 1);
  }
  return record + "@end\n";
}

std::string serializeRun(const RunReport &report) {
  return "@run\n" + std::to_string(static_cast<int>(report.outcome)) + "\n" +
         oneLine(report.message, '\x1f') + "\n";
}

/// Parses what a child wrote; false when the import's record is incomplete.
bool deserialize(const std::string &record, Result &result) {
  std::istringstream in(record);
  std::string line;
  if (!std::getline(in, line) || line.empty())
    return false;
  result.category = static_cast<Category>(std::stoi(line));
  std::getline(in, result.message);
  bool ended = false;
  while (!ended && std::getline(in, line)) {
    ended = line == "@end";
    if (!ended && !line.empty())
      result.unsupportedOps.push_back(line);
  }
  if (!ended)
    return false;
  if (std::getline(in, line) && line == "@run" && std::getline(in, line) &&
      !line.empty()) {
    result.run = static_cast<RunOutcome>(std::stoi(line));
    std::getline(in, result.runMessage);
    std::replace(result.runMessage.begin(), result.runMessage.end(), '\x1f',
                 '\n');
  }
  return true;
}

void writeAll(int fd, const std::string &record) {
  const char *data = record.data();
  size_t left = record.size();
  while (left) {
    ssize_t written = write(fd, data, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      break;
    data += written;
    left -= static_cast<size_t>(written);
  }
}

[[noreturn]] void runChild(int fd, const std::string &path,
                           const std::set<std::string> &supported) {
  alarm(timeoutOpt);
  onnx::ModelProto model;
  ImportedModel imported;
  Result result = importOne(path, supported, model, imported);
  writeAll(fd, serializeImport(result));
  if (imported.module) {
    RunReport report;
    try {
      report = runModel(imported, model, path);
    } catch (const std::exception &exception) {
      report = {RunOutcome::KernelError,
                std::string("threw while running: ") + exception.what()};
    }
    writeAll(fd, serializeRun(report));
  }
  close(fd);
  // Skip static destructors: the parent only needs the records.
  _exit(0);
}

//===----------------------------------------------------------------------===//
// The parent: a pool of children
//===----------------------------------------------------------------------===//

struct Running {
  size_t index;
  int fd;
  std::string record;
};

std::string drain(int fd) {
  std::string data;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    data.append(chunk, static_cast<size_t>(n));
  }
  return data;
}

std::vector<Result> importAll(const std::vector<std::string> &models,
                              const std::set<std::string> &supported,
                              unsigned jobs) {
  std::vector<Result> results(models.size());
  std::map<pid_t, Running> running;
  size_t next = 0;
  while (next < models.size() || !running.empty()) {
    while (next < models.size() && running.size() < jobs) {
      int fds[2];
      if (pipe(fds) != 0) {
        llvm::errs() << "error: pipe: " << std::strerror(errno) << "\n";
        std::exit(2);
      }
      llvm::outs().flush();
      llvm::errs().flush();
      pid_t pid = fork();
      if (pid < 0) {
        llvm::errs() << "error: fork: " << std::strerror(errno) << "\n";
        std::exit(2);
      }
      if (pid == 0) {
        close(fds[0]);
        runChild(fds[1], models[next], supported);
      }
      close(fds[1]);
      running[pid] = Running{next, fds[0], ""};
      ++next;
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR)
        continue;
      llvm::errs() << "error: waitpid: " << std::strerror(errno) << "\n";
      std::exit(2);
    }
    auto it = running.find(pid);
    if (it == running.end())
      continue;
    Running child = std::move(it->second);
    running.erase(it);
    std::string record = drain(child.fd);
    close(child.fd);
    const std::string &path = models[child.index];
    Result &result = results[child.index];
    bool imported = deserialize(record, result);
    bool complete = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!complete) {
      std::string how = WIFSIGNALED(status)
                            ? (WTERMSIG(status) == SIGALRM
                                   ? "hung: no result after " +
                                         std::to_string(timeoutOpt) + " s"
                                   : std::string("died on signal ") +
                                         strsignal(WTERMSIG(status)))
                            : "exited with status " +
                                  std::to_string(WEXITSTATUS(status)) +
                                  " before reporting";
      if (imported &&
          (result.category == Category::Imported ||
           result.category == Category::ImportedFrozen) &&
          result.run == RunOutcome::NotAttempted) {
        // The import went well; running it did not.
        result.run = RunOutcome::KernelError;
        result.runMessage = how + " while running";
      } else {
        result = Result();
        result.category = Category::Crashed;
        result.message = path + ": " + how;
      }
    } else if (!imported) {
      result = Result();
      result.category = Category::Crashed;
      result.message = path + ": reported no result";
    }
  }
  return results;
}

std::vector<std::string> findModels() {
  std::vector<std::string> models;
  for (const std::string &root : roots) {
    if (!llvm::sys::fs::is_directory(root)) {
      llvm::errs() << "error: " << root << " is not a directory\n";
      std::exit(2);
    }
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::sys::path::filename(it->path()) == "model.onnx")
        models.push_back(it->path());
    if (ec) {
      llvm::errs() << "error: walking " << root << ": " << ec.message() << "\n";
      std::exit(2);
    }
  }
  std::sort(models.begin(), models.end());
  return models;
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(
      argc, argv,
      "Imports every model.onnx under the given directories and sorts the "
      "results: imported, unsupported op, symbolic dims, FAILED, CRASHED; "
      "runs each imported model on its test data with the reference "
      "interpreter: computed, MISMATCH, KERNEL ERROR, not run.\n");
  auto start = std::chrono::steady_clock::now();

  std::vector<std::string> models = findModels();
  if (models.empty()) {
    llvm::errs() << "error: no model.onnx under the given directories\n";
    return 2;
  }
  std::vector<std::string> names = parplan::supportedOnnxOps();
  std::set<std::string> supported(names.begin(), names.end());
  unsigned jobs = jobsOpt ? jobsOpt.getValue()
                          : std::max(1u, std::thread::hardware_concurrency());

  std::vector<Result> results = importAll(models, supported, jobs);

  std::map<Category, std::vector<size_t>> byCategory;
  // Per op type: the models it blocks, and those it alone blocks.
  std::map<std::string, std::pair<size_t, size_t>> blocking;
  for (size_t i = 0; i < results.size(); ++i) {
    byCategory[results[i].category].push_back(i);
    if (results[i].category == Category::Unsupported)
      for (const std::string &op : results[i].unsupportedOps) {
        ++blocking[op].first;
        blocking[op].second += results[i].unsupportedOps.size() == 1;
      }
  }
  auto count = [&](Category category) { return byCategory[category].size(); };

  llvm::outs() << "supported ops (" << names.size()
               << "): " << llvm::join(names, " ") << "\n\n";

  std::vector<std::pair<std::string, std::pair<size_t, size_t>>> ranked(
      blocking.begin(), blocking.end());
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const auto &a, const auto &b) { return a.second > b.second; });
  llvm::outs() << "unsupported op types (" << ranked.size()
               << "), by the number of models they block; 'alone': the "
                  "models that use no other unsupported op\n"
               << "  blocks\talone\top\n";
  for (const auto &[op, blocked] : ranked)
    llvm::outs() << "  " << blocked.first << "\t" << blocked.second << "\t"
                 << op << "\n";

  // How the imported models ran, frozen ones included.
  std::map<RunOutcome, std::vector<size_t>> byOutcome;
  std::map<std::string, std::vector<size_t>> notRunReasons;
  size_t computed = 0, computedFrozen = 0, knownFailing = 0;
  std::vector<size_t> newFailures;
  auto label = [&](size_t i) {
    llvm::StringRef folder = llvm::sys::path::parent_path(models[i]);
    return (llvm::sys::path::filename(llvm::sys::path::parent_path(folder)) +
            "/" + llvm::sys::path::filename(folder))
        .str();
  };
  for (size_t i = 0; i < results.size(); ++i) {
    const Result &result = results[i];
    if (result.category != Category::Imported &&
        result.category != Category::ImportedFrozen)
      continue;
    byOutcome[result.run].push_back(i);
    if (result.run == RunOutcome::Computed)
      ++(result.category == Category::Imported ? computed : computedFrozen);
    if (result.run == RunOutcome::NotRun ||
        result.run == RunOutcome::NotAttempted)
      notRunReasons[result.run == RunOutcome::NotRun ? result.runMessage
                                                     : "not attempted"]
          .push_back(i);
    if (result.run == RunOutcome::Mismatch ||
        result.run == RunOutcome::KernelError) {
      if (knownFailures.count(label(i)))
        ++knownFailing;
      else
        newFailures.push_back(i);
    }
  }

  if (listImported) {
    llvm::outs() << "\nimported:\n";
    for (size_t i : byCategory[Category::Imported])
      llvm::outs() << "  " << models[i] << "\n";
    llvm::outs() << "\ncomputed (frozen inputs included):\n";
    for (size_t i : byOutcome[RunOutcome::Computed])
      llvm::outs() << "  " << models[i] << "\n";
  }
  llvm::outs() << "\nsymbolic dims (not imported, expected):\n";
  for (size_t i : byCategory[Category::Symbolic])
    llvm::outs() << "  " << results[i].message << "\n";
  llvm::outs() << "\nimported only with inputs frozen to their test values ("
               << count(Category::ImportedFrozen) << "):\n";
  for (size_t i : byCategory[Category::ImportedFrozen])
    llvm::outs() << "  " << results[i].message << "\n";
  llvm::outs() << "\nFAILED although every op is supported ("
               << count(Category::Failed) << "):\n";
  for (size_t i : byCategory[Category::Failed])
    llvm::outs() << "  " << results[i].message << "\n";
  llvm::outs() << "\nCRASHED (" << count(Category::Crashed) << "):\n";
  for (size_t i : byCategory[Category::Crashed])
    llvm::outs() << "  " << results[i].message << "\n";

  std::vector<std::pair<std::string, std::vector<size_t>>> reasons(
      notRunReasons.begin(), notRunReasons.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto &a, const auto &b) {
                     return a.second.size() > b.second.size();
                   });
  llvm::outs() << "\nnot run by the interpreter ("
               << byOutcome[RunOutcome::NotRun].size() +
                      byOutcome[RunOutcome::NotAttempted].size()
               << "), by reason:\n";
  for (const auto &[reason, indices] : reasons) {
    llvm::outs() << "  " << indices.size() << "\t" << reason << ":";
    for (size_t i : indices)
      llvm::outs() << " " << label(i);
    llvm::outs() << "\n";
  }
  auto printFailures = [&](RunOutcome outcome, llvm::StringRef title) {
    llvm::outs() << "\n"
                 << title << " (" << byOutcome[outcome].size() << "):\n";
    for (size_t i : byOutcome[outcome]) {
      auto known = knownFailures.find(label(i));
      llvm::outs() << "  " << models[i] << ": "
                   << (known != knownFailures.end()
                           ? "(known: " + known->second + ") "
                           : std::string())
                   << llvm::StringRef(results[i].runMessage).trim() << "\n";
    }
  };
  printFailures(RunOutcome::Mismatch, "MISMATCH between the interpreter and "
                                      "the test outputs");
  printFailures(RunOutcome::KernelError,
                "KERNEL ERROR: the interpreter failed on the test data");

  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  llvm::outs() << "\nsummary (" << models.size() << " models, " << jobs
               << " jobs, " << llvm::format("%.1f", seconds) << " s):\n"
               << "  imported:                 " << count(Category::Imported)
               << "\n"
               << "  rejected, unsupported op: " << count(Category::Unsupported)
               << " (expected)\n"
               << "  rejected, symbolic dims:  " << count(Category::Symbolic)
               << " (expected)\n"
               << "  only with frozen inputs:  "
               << count(Category::ImportedFrozen) << " (not counted)\n"
               << "  FAILED:                   " << count(Category::Failed)
               << "\n"
               << "  CRASHED:                  " << count(Category::Crashed)
               << "\n"
               << "  run, computed:            " << computed << " imported + "
               << computedFrozen << " with frozen inputs\n"
               << "  run, MISMATCH:            "
               << byOutcome[RunOutcome::Mismatch].size() << "\n"
               << "  run, KERNEL ERROR:        "
               << byOutcome[RunOutcome::KernelError].size() << "\n"
               << "  not run:                  "
               << byOutcome[RunOutcome::NotRun].size() +
                      byOutcome[RunOutcome::NotAttempted].size()
               << "\n"
               << "  known failures:           " << knownFailing << " of "
               << knownFailures.size() << " listed\n";

  size_t imported = count(Category::Imported);
  int status = 0;
  if (count(Category::Crashed)) {
    llvm::outs() << "error: the importer crashed on "
                 << count(Category::Crashed) << " models\n";
    status = 1;
  }
  if (imported < floorOpt) {
    llvm::outs() << "error: " << imported
                 << " models imported, below the floor " << floorOpt << "\n";
    status = 1;
  } else if (imported > floorOpt) {
    llvm::outs() << "note: above the floor " << floorOpt
                 << "; raise it in test/integration/CMakeLists.txt\n";
  }
  if (!newFailures.empty()) {
    llvm::outs() << "error: " << newFailures.size()
                 << " models compute wrong results or fail in a kernel (not "
                    "in knownFailures):";
    for (size_t i : newFailures)
      llvm::outs() << " " << label(i);
    llvm::outs() << "\n";
    status = 1;
  }
  // A listed model that ran and computed: the list is stale.
  for (size_t i : byOutcome[RunOutcome::Computed])
    if (knownFailures.count(label(i)))
      llvm::outs() << "note: known failure " << label(i)
                   << " computes now; remove it from knownFailures\n";
  if (computed < computeFloorOpt) {
    llvm::outs() << "error: " << computed
                 << " imported models computed their test outputs, below the "
                    "floor "
                 << computeFloorOpt << "\n";
    status = 1;
  } else if (computed > computeFloorOpt) {
    llvm::outs() << "note: above the compute floor " << computeFloorOpt
                 << "; raise it in test/integration/CMakeLists.txt\n";
  }
  llvm::outs() << "computed " << computed << " of " << imported
               << " imported\n";
  llvm::outs() << "imported " << imported << " of " << models.size() << "\n";
  llvm::outs().flush();
  return status;
}
