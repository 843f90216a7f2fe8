//===- GraphBuilder.cpp - PyTorch-style ONNX graph construction -----------===//

#include "GraphBuilder.h"

#include "parplan/Support/Hash.h"

#include <cstring>
#include <string_view>

using namespace parplan::zoo;
using namespace parplan::zoo::detail;

namespace {

/// The next value of a SplitMix64 stream.
uint64_t nextRandom(uint64_t &state) {
  uint64_t value = parplan::splitmix64(state);
  state += 0x9e3779b97f4a7c15ULL;
  return value;
}

/// Little-endian, whatever the host.
void storeLE(char *out, uint64_t value, unsigned size) {
  for (unsigned i = 0; i < size; ++i)
    out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

uint32_t floatBits(float value) {
  uint32_t bits;
  static_assert(sizeof(bits) == sizeof(value));
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

int64_t numElements(const onnx::TensorProto &tensor) {
  int64_t n = 1;
  for (int64_t d : tensor.dims())
    n *= d;
  return n;
}

void fillData(onnx::TensorProto &tensor, Fill fill, uint64_t seed) {
  int64_t n = numElements(tensor);
  uint64_t size = elementSize(tensor.data_type());
  std::string &raw = *tensor.mutable_raw_data();
  raw.resize(static_cast<size_t>(n) * size);
  char *out = raw.data();
  switch (fill) {
  case Fill::Uniform:
  case Fill::OnePlusUniform: {
    uint64_t state = seed ^ parplan::fnv1a64(tensor.name());
    float base = fill == Fill::OnePlusUniform ? 1.0f : 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      // The top 24 bits as a float in [0, 1), scaled to [-0.05, 0.05).
      float unit =
          static_cast<float>(nextRandom(state) >> 40) * (1.0f / 16777216.0f);
      float value = base + (0.1f * unit - 0.05f);
      storeLE(out + 4 * i, floatBits(value), 4);
    }
    break;
  }
  case Fill::CausalMask: {
    int64_t rows = tensor.dims(tensor.dims_size() - 2);
    int64_t cols = tensor.dims(tensor.dims_size() - 1);
    // BOOL, one byte each: true where position i may attend to j.
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        out[i * cols + j] = j <= i ? 1 : 0;
    break;
  }
  case Fill::Arange:
    for (int64_t i = 0; i < n; ++i)
      storeLE(out + size * i, static_cast<uint64_t>(i),
              static_cast<unsigned>(size));
    break;
  }
}

void addExternal(onnx::TensorProto &tensor, const std::string &key,
                 const std::string &value) {
  onnx::StringStringEntryProto *entry = tensor.add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

} // namespace

uint64_t parplan::zoo::detail::elementSize(int32_t elemType) {
  switch (elemType) {
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::DOUBLE:
    return 8;
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
    return 1;
  default:
    return 4;
  }
}

GraphBuilder::GraphBuilder(onnx::GraphProto &graph, const CommonOptions &common)
    : graph(graph), common(common) {}

std::string GraphBuilder::uniqueName(const std::string &scope,
                                     const std::string &opType) {
  std::string base = scope + "/" + opType;
  int count = opCounts[base]++;
  return count == 0 ? base : base + "_" + std::to_string(count);
}

std::vector<std::string>
GraphBuilder::nodeN(const std::string &scope, const std::string &opType,
                    const std::vector<std::string> &inputs, int numOutputs,
                    std::vector<onnx::AttributeProto> attrs,
                    const std::string &outputName) {
  onnx::NodeProto *node = graph.add_node();
  node->set_name(uniqueName(scope, opType));
  node->set_op_type(opType);
  for (const std::string &input : inputs)
    node->add_input(input);
  std::vector<std::string> outputs;
  for (int i = 0; i < numOutputs; ++i) {
    std::string name = !outputName.empty() && numOutputs == 1
                           ? outputName
                           : node->name() + "_output_" + std::to_string(i);
    node->add_output(name);
    outputs.push_back(std::move(name));
  }
  for (onnx::AttributeProto &attribute : attrs)
    *node->add_attribute() = std::move(attribute);
  return outputs;
}

std::string GraphBuilder::node(const std::string &scope,
                               const std::string &opType,
                               const std::vector<std::string> &inputs,
                               std::vector<onnx::AttributeProto> attrs,
                               const std::string &outputName) {
  return nodeN(scope, opType, inputs, 1, std::move(attrs), outputName).front();
}

std::string GraphBuilder::renameLastOutput(const std::string &name) {
  graph.mutable_node(graph.node_size() - 1)->set_output(0, name);
  return name;
}

std::string GraphBuilder::constantInts(const std::string &scope,
                                       const std::vector<int64_t> &values) {
  onnx::AttributeProto value;
  value.set_name("value");
  value.set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *tensor = value.mutable_t();
  tensor->set_data_type(onnx::TensorProto::INT64);
  tensor->add_dims(static_cast<int64_t>(values.size()));
  std::string &raw = *tensor->mutable_raw_data();
  raw.resize(values.size() * 8);
  for (size_t i = 0; i < values.size(); ++i)
    storeLE(raw.data() + 8 * i, static_cast<uint64_t>(values[i]), 8);
  return node(scope, "Constant", {}, {std::move(value)});
}

std::string GraphBuilder::constantInt(const std::string &scope, int64_t value) {
  onnx::AttributeProto attribute;
  attribute.set_name("value");
  attribute.set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *tensor = attribute.mutable_t();
  tensor->set_data_type(onnx::TensorProto::INT64);
  std::string &raw = *tensor->mutable_raw_data();
  raw.resize(8);
  storeLE(raw.data(), static_cast<uint64_t>(value), 8);
  return node(scope, "Constant", {}, {std::move(attribute)});
}

std::string GraphBuilder::constantFloat(const std::string &scope, float value) {
  onnx::AttributeProto attribute;
  attribute.set_name("value");
  attribute.set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *tensor = attribute.mutable_t();
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  std::string &raw = *tensor->mutable_raw_data();
  raw.resize(4);
  storeLE(raw.data(), floatBits(value), 4);
  return node(scope, "Constant", {}, {std::move(attribute)});
}

std::string GraphBuilder::addInitializer(const std::string &name,
                                         const std::vector<int64_t> &dims,
                                         int32_t elemType, Fill fill) {
  onnx::TensorProto *tensor = graph.add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(elemType);
  for (int64_t d : dims)
    tensor->add_dims(d);
  fills.push_back(fill);
  bytes += static_cast<uint64_t>(numElements(*tensor)) * elementSize(elemType);
  return name;
}

std::string GraphBuilder::parameter(const std::string &name,
                                    const std::vector<int64_t> &dims,
                                    Fill fill) {
  addInitializer(name, dims, onnx::TensorProto::FLOAT, fill);
  parameters += numElements(graph.initializer(graph.initializer_size() - 1));
  return name;
}

std::string GraphBuilder::buffer(const std::string &name,
                                 const std::vector<int64_t> &dims,
                                 int32_t elemType, Fill fill) {
  return addInitializer(name, dims, elemType, fill);
}

void GraphBuilder::addValueInfo(onnx::ValueInfoProto *info,
                                const std::string &name, int32_t elemType,
                                const std::vector<int64_t> &dims) {
  info->set_name(name);
  onnx::TypeProto_Tensor *type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(elemType);
  onnx::TensorShapeProto *shape = type->mutable_shape();
  for (int64_t d : dims) {
    onnx::TensorShapeProto_Dimension *dim = shape->add_dim();
    if (d != kBatch)
      dim->set_dim_value(d);
    else if (common.dynamicBatch)
      dim->set_dim_param("batch");
    else
      dim->set_dim_value(common.batch);
  }
}

void GraphBuilder::input(const std::string &name, int32_t elemType,
                         const std::vector<int64_t> &dims) {
  addValueInfo(graph.add_input(), name, elemType, dims);
}

void GraphBuilder::output(const std::string &name, int32_t elemType,
                          const std::vector<int64_t> &dims) {
  addValueInfo(graph.add_output(), name, elemType, dims);
}

void GraphBuilder::finalize() {
  uint64_t offset = 0;
  for (int i = 0; i < graph.initializer_size(); ++i) {
    onnx::TensorProto &tensor = *graph.mutable_initializer(i);
    // Integer tensors (position ids, shapes) are data a compiler must read
    // to plan the model; they stay in the file, which they barely grow.
    bool isFloat = tensor.data_type() == onnx::TensorProto::FLOAT ||
                   tensor.data_type() == onnx::TensorProto::FLOAT16 ||
                   tensor.data_type() == onnx::TensorProto::BFLOAT16 ||
                   tensor.data_type() == onnx::TensorProto::DOUBLE;
    if (!common.shapeOnly || !isFloat) {
      fillData(tensor, fills[i], common.seed);
      continue;
    }
    // Consecutive, 4096-byte aligned, as onnx's external-data helper does.
    uint64_t length = static_cast<uint64_t>(numElements(tensor)) *
                      elementSize(tensor.data_type());
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    addExternal(tensor, "location", common.externalDataLocation);
    addExternal(tensor, "offset", std::to_string(offset));
    addExternal(tensor, "length", std::to_string(length));
    offset = (offset + length + 4095) / 4096 * 4096;
  }
}

onnx::AttributeProto GraphBuilder::attrInt(const std::string &name,
                                           int64_t value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INT);
  attribute.set_i(value);
  return attribute;
}

onnx::AttributeProto GraphBuilder::attrFloat(const std::string &name,
                                             float value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::FLOAT);
  attribute.set_f(value);
  return attribute;
}

onnx::AttributeProto
GraphBuilder::attrInts(const std::string &name,
                       const std::vector<int64_t> &values) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values)
    attribute.add_ints(value);
  return attribute;
}

//===----------------------------------------------------------------------===//
// Building blocks shared by the transformers
//===----------------------------------------------------------------------===//

std::string parplan::zoo::detail::layerNorm(GraphBuilder &b,
                                            const std::string &scope,
                                            const std::string &prefix,
                                            const std::string &x, int64_t width,
                                            int64_t opset) {
  std::string weight =
      b.parameter(prefix + ".weight", {width}, Fill::OnePlusUniform);
  std::string bias = b.parameter(prefix + ".bias", {width});
  if (opset >= 17)
    return b.node(scope, "LayerNormalization", {x, weight, bias},
                  {GraphBuilder::attrInt("axis", -1),
                   GraphBuilder::attrFloat("epsilon", 1e-5f)});
  // torch.onnx's layer_norm symbolic below opset 17; ReduceMean's axes are
  // an attribute until opset 18.
  std::string mean =
      b.node(scope, "ReduceMean", {x}, {GraphBuilder::attrInts("axes", {-1})});
  std::string centered = b.node(scope, "Sub", {x, mean});
  std::string two = b.constantFloat(scope, 2.0f);
  std::string squared = b.node(scope, "Pow", {centered, two});
  std::string variance = b.node(scope, "ReduceMean", {squared},
                                {GraphBuilder::attrInts("axes", {-1})});
  std::string eps = b.constantFloat(scope, 1e-5f);
  std::string shifted = b.node(scope, "Add", {variance, eps});
  std::string stddev = b.node(scope, "Sqrt", {shifted});
  std::string normalized = b.node(scope, "Div", {centered, stddev});
  std::string scaled = b.node(scope, "Mul", {normalized, weight});
  return b.node(scope, "Add", {scaled, bias});
}

std::string parplan::zoo::detail::linear3d(GraphBuilder &b,
                                           const std::string &scope,
                                           const std::string &prefix,
                                           const std::string &x, int64_t in,
                                           int64_t out) {
  std::string weight = b.parameter(prefix + ".weight", {in, out});
  std::string bias = b.parameter(prefix + ".bias", {out});
  std::string product = b.node(scope, "MatMul", {x, weight});
  return b.node(scope, "Add", {bias, product});
}

std::string parplan::zoo::detail::linear2d(GraphBuilder &b,
                                           const std::string &scope,
                                           const std::string &prefix,
                                           const std::string &x, int64_t in,
                                           int64_t out,
                                           const std::string &outputName) {
  std::string weight = b.parameter(prefix + ".weight", {out, in});
  std::string bias = b.parameter(prefix + ".bias", {out});
  return b.node(scope, "Gemm", {x, weight, bias},
                {GraphBuilder::attrFloat("alpha", 1.0f),
                 GraphBuilder::attrFloat("beta", 1.0f),
                 GraphBuilder::attrInt("transB", 1)},
                outputName);
}

std::string parplan::zoo::detail::gelu(GraphBuilder &b,
                                       const std::string &scope,
                                       const std::string &x) {
  std::string sqrt2 = b.constantFloat(scope, 1.4142135f);
  std::string scaled = b.node(scope, "Div", {x, sqrt2});
  std::string erf = b.node(scope, "Erf", {scaled});
  std::string one = b.constantFloat(scope, 1.0f);
  std::string shifted = b.node(scope, "Add", {erf, one});
  std::string product = b.node(scope, "Mul", {x, shifted});
  std::string half = b.constantFloat(scope, 0.5f);
  return b.node(scope, "Mul", {product, half});
}

namespace {

/// Shape(x) -> Gather(index) -> Unsqueeze(axes [0]): dimension `index` of x
/// as a 1-element INT64 tensor, as traced from x.size(index).
std::string traceDim(GraphBuilder &b, const std::string &scope,
                     const std::string &x, int64_t index) {
  std::string shape = b.node(scope, "Shape", {x});
  std::string indexConst = b.constantInt(scope, index);
  std::string dim = b.node(scope, "Gather", {shape, indexConst},
                           {GraphBuilder::attrInt("axis", 0)});
  std::string axes = b.constantInts(scope, {0});
  return b.node(scope, "Unsqueeze", {dim, axes});
}

} // namespace

std::string parplan::zoo::detail::splitHeads(GraphBuilder &b,
                                             const std::string &scope,
                                             const std::string &x,
                                             int64_t heads, int64_t headDim,
                                             const std::vector<int64_t> &perm) {
  std::string batch = traceDim(b, scope, x, 0);
  std::string seq = traceDim(b, scope, x, 1);
  std::string headsConst = b.constantInts(scope, {heads});
  std::string headDimConst = b.constantInts(scope, {headDim});
  std::string shape =
      b.node(scope, "Concat", {batch, seq, headsConst, headDimConst},
             {GraphBuilder::attrInt("axis", 0)});
  std::string reshaped = b.node(scope, "Reshape", {x, shape});
  return b.node(scope, "Transpose", {reshaped},
                {GraphBuilder::attrInts("perm", perm)});
}

std::string parplan::zoo::detail::mergeHeads(GraphBuilder &b,
                                             const std::string &scope,
                                             const std::string &x,
                                             int64_t hidden) {
  std::string transposed = b.node(
      scope, "Transpose", {x}, {GraphBuilder::attrInts("perm", {0, 2, 1, 3})});
  std::string batch = traceDim(b, scope, transposed, 0);
  std::string seq = traceDim(b, scope, transposed, 1);
  std::string hiddenConst = b.constantInts(scope, {hidden});
  std::string shape = b.node(scope, "Concat", {batch, seq, hiddenConst},
                             {GraphBuilder::attrInt("axis", 0)});
  return b.node(scope, "Reshape", {transposed, shape});
}
