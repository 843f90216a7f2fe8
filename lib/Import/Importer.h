//===- Importer.h - the importer the converters share -----------*- C++ -*-===//
//
// The importer's state and helpers, shared by the converters of each op
// family (Math.cpp, NN.cpp, Recurrent.cpp, Tensor.cpp, ControlFlow.cpp)
// and the graph walk (OnnxImporter.cpp). Private to lib/Import.
//
// Errors are thrown as ImportError inside lib/Import and caught at the API
// boundary (importOnnx); no exception crosses an MLIR frame.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_IMPORT_IMPORTER_H
#define PARPLAN_LIB_IMPORT_IMPORTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNDecompositions.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/Import/OnnxWireFormat.h"
#include "parplan/Support/Hash.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <google/protobuf/io/coded_stream.h>
#include <limits>
#include <map>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <set>
#include <sstream>
#include <stdexcept>

namespace parplan::import {

using namespace mlir;
namespace nn = parplan::nn;
using parplan::nn::listString;
using parplan::nn::normalizeAxis;
using parplan::nn::shapeString;

inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 21;
/// Constant nodes up to this many float elements stay inline constants;
/// larger ones are weights and become parameters.
inline constexpr int64_t kMaxInlineFloatElements = 4096;

struct ImportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const std::string &message) {
  throw ImportError(message);
}

inline std::string quote(const std::string &name) { return "'" + name + "'"; }

inline int64_t checkedProduct(ArrayRef<int64_t> dims, const std::string &what) {
  int64_t product = 1;
  for (int64_t dim : dims)
    if (__builtin_mul_overflow(product, dim, &product))
      fail(what + " of shape " + shapeString(dims) +
           " has more elements than int64 can count");
  return product;
}

inline std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

class Importer {
public:
  /// `rawData` locates, in the model file, the raw bytes of top-level
  /// initializers, and `constantData` those of Constant nodes' values, by
  /// output (see stripWeightData); empty for text models.
  Importer(MLIRContext &context, StringRef path,
           const parplan::OnnxImportOptions &options,
           const std::map<std::string, parplan::ByteRange> &rawData,
           const std::map<std::string, parplan::ByteRange> &constantData)
      : context(context), builder(&context), path(path.str()), options(options),
        rawData(rawData), constantData(constantData) {}

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
  /// A graph input given a value by OnnxImportOptions::inputValues: a
  /// constant of the input's type.
  Value fixedInput(const onnx::ValueInfoProto &graphInput,
                   const std::vector<double> &numbers);
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
  /// A constant input's values (a float initializer read from its data,
  /// not made a parameter), or none where the input is absent; one naming
  /// the node where it is computed.
  std::optional<std::vector<double>>
  optionalConstantValues(const onnx::NodeProto &node, int index,
                         const std::string &role,
                         const std::string &expected = "a constant");
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
  /// A constant of `type` holding `value` everywhere (an integer type's
  /// truncated), made in the prologue.
  Value splat(const onnx::NodeProto &node, RankedTensorType type, double value);

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
  /// A conv weight's window (its dimensions after the first two), which
  /// the node's kernel_shape, where given, must be.
  std::vector<int64_t> convKernel(const onnx::NodeProto &node,
                                  RankedTensorType weight);
  void convertConv(const onnx::NodeProto &node);
  void convertConvTranspose(const onnx::NodeProto &node);
  void convertLoss(const onnx::NodeProto &node);
  void convertComposite(const onnx::NodeProto &node);
  void convertTrilu(const onnx::NodeProto &node);
  void convertEinsum(const onnx::NodeProto &node);
  void convertCumSum(const onnx::NodeProto &node);
  void convertTopK(const onnx::NodeProto &node);
  /// |x| as where(x < 0, 0 - x, x).
  Value absolute(const onnx::NodeProto &node, Value x);
  void convertResize(const onnx::NodeProto &node);
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
  void convertVariadic(const onnx::NodeProto &node);
  void convertNeg(const onnx::NodeProto &node);
  void convertPad(const onnx::NodeProto &node);
  void convertTile(const onnx::NodeProto &node);
  void convertNot(const onnx::NodeProto &node);
  void convertExpand(const onnx::NodeProto &node);
  void convertConstant(const onnx::NodeProto &node);
  void convertConstantOfShape(const onnx::NodeProto &node);
  void convertShape(const onnx::NodeProto &node);
  void convertIf(const onnx::NodeProto &node);
  /// RNN, GRU and LSTM (Recurrent.cpp).
  void convertRecurrent(const onnx::NodeProto &node);

  MLIRContext &context;
  OpBuilder builder;
  std::string path;
  const parplan::OnnxImportOptions &options;
  const std::map<std::string, parplan::ByteRange> &rawData;
  const std::map<std::string, parplan::ByteRange> &constantData;
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

} // namespace parplan::import

#endif // PARPLAN_LIB_IMPORT_IMPORTER_H
