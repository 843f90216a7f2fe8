//===- Vision.cpp - torchvision VGG16 and ResNet50 graphs -----------------===//
//
// Layouts follow torch.onnx.export of torchvision.models.vgg16 and
// torchvision.models.resnet50 at 224x224. Dropout is kept as a Dropout node
// (ratio 0.5, inference semantics); BatchNormalization is kept unfolded.
//
//===----------------------------------------------------------------------===//

#include "GraphBuilder.h"

using namespace parplan::zoo;
using namespace parplan::zoo::detail;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int64_t kImage = 224;

/// nn.Conv2d(cin, cout, k, stride, pad): Conv with "<prefix>.weight" [cout,
/// cin, k, k] and, when `bias`, "<prefix>.bias".
std::string conv(GraphBuilder &b, const std::string &scope,
                 const std::string &prefix, const std::string &x, int64_t cin,
                 int64_t cout, int64_t kernel, int64_t stride, int64_t pad,
                 bool bias) {
  std::vector<std::string> inputs{
      x, b.parameter(prefix + ".weight", {cout, cin, kernel, kernel})};
  if (bias)
    inputs.push_back(b.parameter(prefix + ".bias", {cout}));
  return b.node(scope, "Conv", inputs,
                {GraphBuilder::attrInts("dilations", {1, 1}),
                 GraphBuilder::attrInt("group", 1),
                 GraphBuilder::attrInts("kernel_shape", {kernel, kernel}),
                 GraphBuilder::attrInts("pads", {pad, pad, pad, pad}),
                 GraphBuilder::attrInts("strides", {stride, stride})});
}

std::string maxPool(GraphBuilder &b, const std::string &scope,
                    const std::string &x, int64_t kernel, int64_t stride,
                    int64_t pad) {
  return b.node(scope, "MaxPool", {x},
                {GraphBuilder::attrInt("ceil_mode", 0),
                 GraphBuilder::attrInts("kernel_shape", {kernel, kernel}),
                 GraphBuilder::attrInts("pads", {pad, pad, pad, pad}),
                 GraphBuilder::attrInts("strides", {stride, stride})});
}

/// nn.BatchNorm2d in eval mode: scale and bias are parameters, the running
/// statistics buffers.
std::string batchNorm(GraphBuilder &b, const std::string &scope,
                      const std::string &prefix, const std::string &x,
                      int64_t channels) {
  std::string scale =
      b.parameter(prefix + ".weight", {channels}, Fill::OnePlusUniform);
  std::string bias = b.parameter(prefix + ".bias", {channels});
  std::string mean =
      b.buffer(prefix + ".running_mean", {channels}, kFloat, Fill::Uniform);
  std::string var = b.buffer(prefix + ".running_var", {channels}, kFloat,
                             Fill::OnePlusUniform);
  return b.node(scope, "BatchNormalization", {x, scale, bias, mean, var},
                {GraphBuilder::attrFloat("epsilon", 1e-5f),
                 GraphBuilder::attrFloat("momentum", 0.9f)});
}

/// torchvision's cfg "D": channels, 0 for a max pool.
const std::vector<int64_t> &vggConfig() {
  static const std::vector<int64_t> config{64,  64,  0,   128, 128, 0,
                                           256, 256, 256, 0,   512, 512,
                                           512, 0,   512, 512, 512, 0};
  return config;
}

struct Stage {
  int64_t blocks, width, stride;
};

const std::vector<Stage> &resnetStages() {
  static const std::vector<Stage> stages{
      {3, 64, 1}, {4, 128, 2}, {6, 256, 2}, {3, 512, 2}};
  return stages;
}

constexpr int64_t kExpansion = 4;

} // namespace

int64_t parplan::zoo::detail::vgg16Parameters(int64_t numClasses) {
  int64_t count = 0, channels = 3;
  for (int64_t out : vggConfig()) {
    if (out == 0)
      continue;
    count += (channels * 9 + 1) * out;
    channels = out;
  }
  count += (512 * 7 * 7 + 1) * 4096 + (4096 + 1) * 4096;
  return count + (4096 + 1) * numClasses;
}

int64_t parplan::zoo::detail::resnet50Parameters(int64_t numClasses) {
  auto convBn = [](int64_t cin, int64_t cout, int64_t k) {
    return cin * cout * k * k + 2 * cout;
  };
  int64_t count = convBn(3, 64, 7), inplanes = 64;
  for (const Stage &stage : resnetStages()) {
    int64_t out = stage.width * kExpansion;
    for (int64_t i = 0; i < stage.blocks; ++i) {
      count += convBn(inplanes, stage.width, 1) +
               convBn(stage.width, stage.width, 3) +
               convBn(stage.width, out, 1);
      if (i == 0)
        count += convBn(inplanes, out, 1);
      inplanes = out;
    }
  }
  return count + (inplanes + 1) * numClasses;
}

void parplan::zoo::detail::buildVgg16Graph(GraphBuilder &b,
                                           const Vgg16Options &options) {
  b.input("input", kFloat, {kBatch, 3, kImage, kImage});
  std::string x = "input";
  int64_t channels = 3, index = 0;
  for (int64_t out : vggConfig()) {
    std::string name = "features." + std::to_string(index);
    std::string scope = "/features/" + name;
    if (out == 0) {
      x = maxPool(b, scope, x, 2, 2, 0);
      ++index;
      continue;
    }
    x = conv(b, scope, name, x, channels, out, 3, 1, 1, /*bias=*/true);
    x = b.node("/features/features." + std::to_string(index + 1), "Relu", {x});
    channels = out;
    index += 2;
  }
  // AdaptiveAvgPool2d((7, 7)) is the identity on the 7x7 map of a 224x224
  // input: no node.
  x = b.node("", "Flatten", {x}, {GraphBuilder::attrInt("axis", 1)});
  int64_t in = channels * 7 * 7;
  for (int64_t i = 0; i < 2; ++i) {
    std::string gemm = "classifier." + std::to_string(3 * i);
    x = linear2d(b, "/classifier/" + gemm, gemm, x, in, 4096);
    x = b.node("/classifier/classifier." + std::to_string(3 * i + 1), "Relu",
               {x});
    std::string dropout = "/classifier/classifier." + std::to_string(3 * i + 2);
    std::string ratio = b.constantFloat(dropout, 0.5f);
    x = b.node(dropout, "Dropout", {x, ratio});
    in = 4096;
  }
  linear2d(b, "/classifier/classifier.6", "classifier.6", x, in,
           options.numClasses, "output");
  b.output("output", kFloat, {kBatch, options.numClasses});
}

void parplan::zoo::detail::buildResNet50Graph(GraphBuilder &b,
                                              const ResNet50Options &options) {
  b.input("input", kFloat, {kBatch, 3, kImage, kImage});
  std::string x = conv(b, "/conv1", "conv1", "input", 3, 64, 7, 2, 3, false);
  x = batchNorm(b, "/bn1", "bn1", x, 64);
  x = b.node("/relu", "Relu", {x});
  x = maxPool(b, "/maxpool", x, 3, 2, 1);

  int64_t inplanes = 64;
  for (size_t s = 0; s < resnetStages().size(); ++s) {
    const Stage &stage = resnetStages()[s];
    std::string layer = "layer" + std::to_string(s + 1);
    int64_t out = stage.width * kExpansion;
    for (int64_t i = 0; i < stage.blocks; ++i) {
      std::string prefix = layer + "." + std::to_string(i);
      std::string scope = "/" + layer + "/" + prefix;
      int64_t stride = i == 0 ? stage.stride : 1;
      std::string y = conv(b, scope + "/conv1", prefix + ".conv1", x, inplanes,
                           stage.width, 1, 1, 0, false);
      y = batchNorm(b, scope + "/bn1", prefix + ".bn1", y, stage.width);
      y = b.node(scope + "/relu", "Relu", {y});
      y = conv(b, scope + "/conv2", prefix + ".conv2", y, stage.width,
               stage.width, 3, stride, 1, false);
      y = batchNorm(b, scope + "/bn2", prefix + ".bn2", y, stage.width);
      y = b.node(scope + "/relu_1", "Relu", {y});
      y = conv(b, scope + "/conv3", prefix + ".conv3", y, stage.width, out, 1,
               1, 0, false);
      y = batchNorm(b, scope + "/bn3", prefix + ".bn3", y, out);
      std::string identity = x;
      if (i == 0) {
        std::string down = scope + "/downsample";
        identity = conv(b, down + "/downsample.0", prefix + ".downsample.0", x,
                        inplanes, out, 1, stride, 0, false);
        identity = batchNorm(b, down + "/downsample.1",
                             prefix + ".downsample.1", identity, out);
      }
      x = b.node(scope, "Add", {y, identity});
      x = b.node(scope + "/relu_2", "Relu", {x});
      inplanes = out;
    }
  }

  x = b.node("/avgpool", "GlobalAveragePool", {x});
  x = b.node("", "Flatten", {x}, {GraphBuilder::attrInt("axis", 1)});
  linear2d(b, "/fc", "fc", x, inplanes, options.numClasses, "output");
  b.output("output", kFloat, {kBatch, options.numClasses});
}
