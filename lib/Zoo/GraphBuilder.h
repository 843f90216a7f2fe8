//===- GraphBuilder.h - PyTorch-style ONNX graph construction ---*- C++ -*-===//
//
// Private to lib/Zoo. Builds a GraphProto with torch.onnx.export's naming:
// node "<scope>/<OpType>[_N]", output "<node>_output_<i>", initializers named
// by module path. Initializers are recorded without data; finalize() either
// fills them with pseudo-random raw_data or points them at external data.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_ZOO_GRAPHBUILDER_H
#define PARPLAN_LIB_ZOO_GRAPHBUILDER_H

#include "parplan/Zoo/Zoo.h"

#include <map>
#include <string>
#include <vector>

namespace parplan::zoo::detail {

/// How an initializer's data is made.
enum class Fill {
  /// Uniform in [-0.05, 0.05) from the seed and the initializer's name.
  Uniform,
  /// 1 + Uniform: normalization scales and variances.
  OnePlusUniform,
  /// [1, 1, s, s] BOOL causal mask: true on and below the diagonal, false
  /// above.
  CausalMask,
  /// INT64 0, 1, ..., n-1.
  Arange,
};

/// A dimension of a graph input or output; kBatch becomes the batch size or
/// the dim_param "batch".
inline constexpr int64_t kBatch = -1;

class GraphBuilder {
public:
  GraphBuilder(onnx::GraphProto &graph, const CommonOptions &common);

  /// Adds node "<scope>/<opType>[_N]" and returns its outputs, named
  /// "<node>_output_<i>" unless `outputName` names the (single) output.
  std::vector<std::string> nodeN(const std::string &scope,
                                 const std::string &opType,
                                 const std::vector<std::string> &inputs,
                                 int numOutputs,
                                 std::vector<onnx::AttributeProto> attrs = {},
                                 const std::string &outputName = "");
  std::string node(const std::string &scope, const std::string &opType,
                   const std::vector<std::string> &inputs,
                   std::vector<onnx::AttributeProto> attrs = {},
                   const std::string &outputName = "");

  /// Renames the first output of the last node added (a graph output) and
  /// returns the new name.
  std::string renameLastOutput(const std::string &name);

  /// Constant nodes, as the exporter emits for literals.
  std::string constantInts(const std::string &scope,
                           const std::vector<int64_t> &values);
  std::string constantInt(const std::string &scope, int64_t value);
  std::string constantFloat(const std::string &scope, float value);

  /// A trainable float initializer.
  std::string parameter(const std::string &name,
                        const std::vector<int64_t> &dims,
                        Fill fill = Fill::Uniform);
  /// A non-trainable initializer (a module buffer).
  std::string buffer(const std::string &name, const std::vector<int64_t> &dims,
                     int32_t elemType, Fill fill);

  void input(const std::string &name, int32_t elemType,
             const std::vector<int64_t> &dims);
  void output(const std::string &name, int32_t elemType,
              const std::vector<int64_t> &dims);

  int64_t parameterCount() const { return parameters; }
  /// Bytes of all initializer data.
  uint64_t dataBytes() const { return bytes; }

  /// Fills every initializer: raw_data, or external data when shapeOnly.
  void finalize();

  static onnx::AttributeProto attrInt(const std::string &name, int64_t value);
  static onnx::AttributeProto attrFloat(const std::string &name, float value);
  static onnx::AttributeProto attrInts(const std::string &name,
                                       const std::vector<int64_t> &values);

private:
  std::string uniqueName(const std::string &scope, const std::string &opType);
  void addValueInfo(onnx::ValueInfoProto *info, const std::string &name,
                    int32_t elemType, const std::vector<int64_t> &dims);
  std::string addInitializer(const std::string &name,
                             const std::vector<int64_t> &dims, int32_t elemType,
                             Fill fill);

  onnx::GraphProto &graph;
  const CommonOptions &common;
  std::map<std::string, int> opCounts;
  std::vector<Fill> fills;
  int64_t parameters = 0;
  uint64_t bytes = 0;
};

/// Element size in bytes of a TensorProto data type used here.
uint64_t elementSize(int32_t elemType);

/// PyTorch exporter building blocks shared by the transformer models.
/// LayerNorm over the last axis: one LayerNormalization node at opset >= 17,
/// the decomposed ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add form
/// below. Parameters "<prefix>.weight" and "<prefix>.bias" of size `width`.
std::string layerNorm(GraphBuilder &b, const std::string &scope,
                      const std::string &prefix, const std::string &x,
                      int64_t width, int64_t opset);
/// nn.Linear on a 3-D activation: MatMul by a [in, out] initializer
/// "<prefix>.weight", then Add(bias, .).
std::string linear3d(GraphBuilder &b, const std::string &scope,
                     const std::string &prefix, const std::string &x,
                     int64_t in, int64_t out);
/// nn.Linear on a 2-D activation: Gemm(transB=1), weight [out, in].
std::string linear2d(GraphBuilder &b, const std::string &scope,
                     const std::string &prefix, const std::string &x,
                     int64_t in, int64_t out,
                     const std::string &outputName = "");
/// Exact GELU as exported: Div(sqrt 2), Erf, Add 1, Mul x, Mul 0.5.
std::string gelu(GraphBuilder &b, const std::string &scope,
                 const std::string &x);
/// Reshape [b, s, h] -> [b, s, heads, h/heads] with the target shape built
/// by Shape -> Gather -> Unsqueeze -> Concat on `x`, then Transpose by perm.
std::string splitHeads(GraphBuilder &b, const std::string &scope,
                       const std::string &x, int64_t heads, int64_t headDim,
                       const std::vector<int64_t> &perm);
/// Transpose [b, heads, s, d] -> [b, s, heads, d] and Reshape to [b, s, h],
/// the shape again from a Shape -> Gather -> Unsqueeze -> Concat chain.
std::string mergeHeads(GraphBuilder &b, const std::string &scope,
                       const std::string &x, int64_t hidden);

/// Model bodies: each adds the inputs, nodes, initializers and outputs.
void buildMlpGraph(GraphBuilder &b, const MlpOptions &options);
void buildGnnGraph(GraphBuilder &b, const GnnOptions &options);
void buildGptGraph(GraphBuilder &b, const GptOptions &options, int64_t opset);
void buildBertGraph(GraphBuilder &b, const BertOptions &options, int64_t opset);
void buildVgg16Graph(GraphBuilder &b, const Vgg16Options &options);
void buildResNet50Graph(GraphBuilder &b, const ResNet50Options &options);
void buildVitGraph(GraphBuilder &b, const VitOptions &options, int64_t opset);

/// The ResNet50 closed count, shared with expectedParameterCount.
int64_t resnet50Parameters(int64_t numClasses);
int64_t vgg16Parameters(int64_t numClasses);

} // namespace parplan::zoo::detail

#endif // PARPLAN_LIB_ZOO_GRAPHBUILDER_H
