//===- TrainingStepTest.cpp - nn-autodiff through the interpreter ---------===//
//
// The training step nn-autodiff builds, run by the reference interpreter:
// every backward rule against central finite differences of the loss in
// float64, a two-layer MLP against gradients and updates written out by
// hand, and the FLOPs of GPT training steps against Megatron-LM's formula.
//
//===----------------------------------------------------------------------===//

#include "parplan/Transforms/TrainingStep/TrainingStep.h"
#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Runtime/Tensor.h"
#include "parplan/Sbp/Sbp.h"
#include "parplan/Target/NNInterpreter.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Zoo/Zoo.h"

#include "MlirTestContext.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>

using namespace mlir;
using namespace parplan;
using runtime::DType;
using runtime::Tensor;

namespace {

struct TrainingFixture : testing::MlirTestContext {
  /// Parses a forward program and makes it a training step.
  OwningOpRef<ModuleOp> step(const std::string &source,
                             const std::string &options) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    INFO(diagnostics);
    REQUIRE(module);
    differentiate(*module, options);
    return module;
  }

  void differentiate(ModuleOp module, const std::string &options) {
    runPipeline(module, "nn-autodiff{" + options + "}");
  }

  func::FuncOp mainOf(ModuleOp module) {
    return module.lookupSymbol<func::FuncOp>("main");
  }

  std::vector<Tensor> run(ModuleOp module, const NamedTensors &feeds) {
    FailureOr<std::vector<Tensor>> results = interpret(mainOf(module), feeds);
    INFO(diagnostics);
    REQUIRE(succeeded(results));
    return *results;
  }
};

/// A float64 tensor of the value's type with values in [low, high), or
/// integers in [0, high) for integer types.
Tensor randomTensor(RankedTensorType type, std::mt19937 &rng, double low,
                    double high) {
  Tensor tensor(*toDType(type.getElementType()),
                runtime::Shape(type.getShape().begin(), type.getShape().end()));
  std::uniform_real_distribution<double> real(low, high);
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, runtime::isFloat(tensor.dtype())
                      ? real(rng)
                      : std::floor(real(rng) - low) /* in [0, high - low) */);
  return tensor;
}

/// Feeds every nn.param and nn.input of the step with random values.
NamedTensors randomFeeds(func::FuncOp function, std::mt19937 &rng, double low,
                         double high, int64_t integerBound) {
  NamedTensors feeds;
  function.walk([&](Operation *op) {
    std::string name;
    if (auto param = dyn_cast<nn::ParamOp>(op)) {
      if (param.getSource() && *param.getSource() == "zeros")
        return;
      name = param.getName().str();
    } else if (auto input = dyn_cast<nn::InputOp>(op)) {
      name = input.getName().str();
    } else {
      return;
    }
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    bool integer = !isa<FloatType>(type.getElementType());
    feeds[name] = integer ? randomTensor(type, rng, 0, integerBound)
                          : randomTensor(type, rng, low, high);
  });
  return feeds;
}

/// Checks every gradient the step returns (optimizer none) against central
/// differences of its loss.
void checkGradients(TrainingFixture &fixture, ModuleOp module,
                    NamedTensors feeds) {
  func::FuncOp function = fixture.mainOf(module);
  std::vector<Tensor> results = fixture.run(module, feeds);
  int checked = 0;
  for (unsigned r = 1; r < results.size(); ++r) {
    auto name = function.getResultAttrOfType<StringAttr>(r, "nn.gradient");
    // State the step counts (dropout's step count) is no gradient.
    if (!name && function.getResultAttr(r, "nn.updates"))
      continue;
    REQUIRE(name);
    const Tensor &gradient = results[r];
    Tensor &param = feeds.at(name.str());
    REQUIRE(gradient.shape() == param.shape());
    for (int64_t i = 0; i < param.numElements(); ++i) {
      const double h = 1e-6, original = param.get(i);
      param.set(i, original + h);
      double plus = fixture.run(module, feeds)[0].get(0);
      param.set(i, original - h);
      double minus = fixture.run(module, feeds)[0].get(0);
      param.set(i, original);
      double numeric = (plus - minus) / (2 * h);
      INFO("d loss / d " << name.str() << "[" << i << "]");
      CHECK(gradient.get(i) == Approx(numeric).epsilon(1e-5).margin(1e-7));
      ++checked;
    }
  }
  CHECK(checked > 0);
}

/// A forward program `@main` of float64 parameters: `body` uses %a, %b,
/// ... declared by `params` and returns %y of `resultType`.
std::string program(const std::string &params, const std::string &body,
                    const std::string &resultType) {
  return "func.func @main() -> " + resultType + " {\n" + params + body +
         "\n  return %y : " + resultType + "\n}\n";
}

struct GradientCase {
  const char *name;
  std::string params, body, resultType;
  /// Range of the random parameter values (kept off kinks and poles).
  double low = -1.0, high = 1.0;
  /// nn-autodiff options beyond the loss and the optimizer.
  std::string options = "";
};

} // namespace

TEST_CASE_METHOD(TrainingFixture,
                 "every backward rule matches finite differences (float64)",
                 "[training]") {
  const std::string a23 = "  %a = nn.param \"a\" : tensor<2x3xf64>\n";
  const std::string b23 = "  %b = nn.param \"b\" : tensor<2x3xf64>\n";
  const std::string b3 = "  %b = nn.param \"b\" : tensor<3xf64>\n";
  const std::string x = "  %x = nn.param \"x\" : tensor<2x3x4x4xf64>\n";
  const std::string batchNormParams =
      x + "  %s = nn.param \"s\" : tensor<3xf64>\n"
          "  %c = nn.param \"c\" : tensor<3xf64>\n"
          "  %m = nn.constant dense<[0.1, -0.2, 0.3]> : tensor<3xf64>\n"
          "  %v = nn.constant dense<[0.5, 1.5, 2.0]> : tensor<3xf64>\n";
  const std::string batchNorm =
      "  %y = nn.batch_norm %x, %s, %c, %m, %v : tensor<2x3x4x4xf64>, "
      "tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64> -> "
      "tensor<2x3x4x4xf64>";
  auto unaryCase = [&](const char *name, const std::string &op,
                       const std::string &attrs = "", double low = -1.0,
                       double high = 1.0) {
    return GradientCase{name,
                        a23,
                        "  %y = nn." + op + " %a " + attrs +
                            " : tensor<2x3xf64>",
                        "tensor<2x3xf64>",
                        low,
                        high};
  };
  std::vector<GradientCase> cases = {
      {"matmul", a23 + "  %b = nn.param \"b\" : tensor<3x4xf64>\n",
       "  %y = nn.matmul %a, %b : tensor<2x3xf64>, tensor<3x4xf64> -> "
       "tensor<2x4xf64>",
       "tensor<2x4xf64>"},
      {"matmul with a shared weight",
       "  %a = nn.param \"a\" : tensor<2x2x3xf64>\n"
       "  %b = nn.param \"b\" : tensor<3x4xf64>\n",
       "  %y = nn.matmul %a, %b : tensor<2x2x3xf64>, tensor<3x4xf64> -> "
       "tensor<2x2x4xf64>",
       "tensor<2x2x4xf64>"},
      {"batched matmul with broadcasting",
       "  %a = nn.param \"a\" : tensor<2x1x2x3xf64>\n"
       "  %b = nn.param \"b\" : tensor<3x3x2xf64>\n",
       "  %y = nn.matmul %a, %b : tensor<2x1x2x3xf64>, tensor<3x3x2xf64> -> "
       "tensor<2x3x2x2xf64>",
       "tensor<2x3x2x2xf64>"},
      {"matmul of vectors",
       "  %a = nn.param \"a\" : tensor<3xf64>\n"
       "  %b = nn.param \"b\" : tensor<3x2xf64>\n",
       "  %y = nn.matmul %a, %b : tensor<3xf64>, tensor<3x2xf64> -> "
       "tensor<2xf64>",
       "tensor<2xf64>"},
      {"matmul by a vector", a23 + b3,
       "  %y = nn.matmul %a, %b : tensor<2x3xf64>, tensor<3xf64> -> "
       "tensor<2xf64>",
       "tensor<2xf64>"},
      {"gemm",
       "  %a = nn.param \"a\" : tensor<3x2xf64>\n"
       "  %b = nn.param \"b\" : tensor<4x3xf64>\n"
       "  %c = nn.param \"c\" : tensor<4xf64>\n",
       "  %y = nn.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, "
       "trans_a = true, trans_b = true} : tensor<3x2xf64>, tensor<4x3xf64>, "
       "tensor<4xf64> -> tensor<2x4xf64>",
       "tensor<2x4xf64>"},
      {"conv with groups, strides, padding and dilation",
       "  %x = nn.param \"x\" : tensor<2x2x5x5xf64>\n"
       "  %w = nn.param \"w\" : tensor<4x1x3x3xf64>\n"
       "  %c = nn.param \"c\" : tensor<4xf64>\n",
       "  %y = nn.conv %x, %w, %c strides = [2, 1] pads = [1, 0, 1, 1] "
       "dilations = [1, 2] group = 2 : tensor<2x2x5x5xf64>, "
       "tensor<4x1x3x3xf64>, tensor<4xf64> -> tensor<2x4x3x2xf64>",
       "tensor<2x4x3x2xf64>"},
      {"transposed conv (ConvTranspose) with stride 2, padding, "
       "output_padding and groups",
       "  %x = nn.param \"x\" : tensor<2x4x3x3xf64>\n"
       "  %w = nn.param \"w\" : tensor<4x1x3x3xf64>\n",
       "  %y = nn.conv_grad_input %x, %w strides = [2, 2] pads = [1, 1, 1, 0] "
       "dilations = [1, 1] group = 2 : tensor<2x4x3x3xf64>, "
       "tensor<4x1x3x3xf64> -> tensor<2x2x6x6xf64>",
       "tensor<2x2x6x6xf64>"},
      {"resize, linear with half-pixel coordinates (a segmentation head's "
       "upsampling)",
       "  %x = nn.param \"x\" : tensor<2x2x3x3xf64>\n",
       "  %y = nn.resize %x mode = linear coordinates = half_pixel : "
       "tensor<2x2x3x3xf64> -> tensor<2x2x6x5xf64>",
       "tensor<2x2x6x5xf64>"},
      {"resize, nearest with asymmetric coordinates",
       "  %x = nn.param \"x\" : tensor<2x2x3x3xf64>\n",
       "  %y = nn.resize %x coordinates = asymmetric rounding = floor : "
       "tensor<2x2x3x3xf64> -> tensor<2x2x6x9xf64>",
       "tensor<2x2x6x9xf64>"},
      {"depthwise conv with stride 2 and padding (MobileNetV2's)",
       "  %x = nn.param \"x\" : tensor<2x3x6x6xf64>\n"
       "  %w = nn.param \"w\" : tensor<3x1x3x3xf64>\n",
       "  %y = nn.conv %x, %w strides = [2, 2] pads = [1, 1, 1, 1] "
       "dilations = [1, 1] group = 3 : tensor<2x3x6x6xf64>, "
       "tensor<3x1x3x3xf64> -> tensor<2x3x3x3xf64>",
       "tensor<2x3x3x3xf64>"},
      {"an inverted residual (MobileNetV2's): expand, depthwise, project, "
       "batch norms, ReLU6 as clip, and the shortcut",
       "  %x = nn.param \"x\" : tensor<2x4x4x4xf64>\n"
       "  %w1 = nn.param \"w1\" : tensor<8x4x1x1xf64>\n"
       "  %w2 = nn.param \"w2\" : tensor<8x1x3x3xf64>\n"
       "  %w3 = nn.param \"w3\" : tensor<4x8x1x1xf64>\n"
       "  %s1 = nn.param \"s1\" : tensor<8xf64>\n"
       "  %c1 = nn.param \"c1\" : tensor<8xf64>\n"
       "  %s2 = nn.param \"s2\" : tensor<8xf64>\n"
       "  %c2 = nn.param \"c2\" : tensor<8xf64>\n"
       "  %s3 = nn.param \"s3\" : tensor<4xf64>\n"
       "  %c3 = nn.param \"c3\" : tensor<4xf64>\n"
       "  %m8 = nn.constant dense<0.0> : tensor<8xf64>\n"
       "  %v8 = nn.constant dense<1.0> : tensor<8xf64>\n"
       "  %m4 = nn.constant dense<0.0> : tensor<4xf64>\n"
       "  %v4 = nn.constant dense<1.0> : tensor<4xf64>\n",
       "  %e = nn.conv %x, %w1 strides = [1, 1] pads = [0, 0, 0, 0] "
       "dilations = [1, 1] group = 1 : tensor<2x4x4x4xf64>, "
       "tensor<8x4x1x1xf64> -> tensor<2x8x4x4xf64>\n"
       "  %n1 = nn.batch_norm %e, %s1, %c1, %m8, %v8 : tensor<2x8x4x4xf64>, "
       "tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64> -> "
       "tensor<2x8x4x4xf64>\n"
       "  %r1 = nn.clip %n1 min = 0.0 max = 6.0 : tensor<2x8x4x4xf64>\n"
       "  %d = nn.conv %r1, %w2 strides = [1, 1] pads = [1, 1, 1, 1] "
       "dilations = [1, 1] group = 8 : tensor<2x8x4x4xf64>, "
       "tensor<8x1x3x3xf64> -> tensor<2x8x4x4xf64>\n"
       "  %n2 = nn.batch_norm %d, %s2, %c2, %m8, %v8 : tensor<2x8x4x4xf64>, "
       "tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64> -> "
       "tensor<2x8x4x4xf64>\n"
       "  %r2 = nn.clip %n2 min = 0.0 max = 6.0 : tensor<2x8x4x4xf64>\n"
       "  %p = nn.conv %r2, %w3 strides = [1, 1] pads = [0, 0, 0, 0] "
       "dilations = [1, 1] group = 1 : tensor<2x8x4x4xf64>, "
       "tensor<4x8x1x1xf64> -> tensor<2x4x4x4xf64>\n"
       "  %n3 = nn.batch_norm %p, %s3, %c3, %m4, %v4 : tensor<2x4x4x4xf64>, "
       "tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64> -> "
       "tensor<2x4x4x4xf64>\n"
       "  %y = nn.add %n3, %x : tensor<2x4x4x4xf64>, tensor<2x4x4x4xf64> -> "
       "tensor<2x4x4x4xf64>",
       "tensor<2x4x4x4xf64>"},
      {"add and sub with broadcasting", a23 + b3,
       "  %s = nn.add %a, %b : tensor<2x3xf64>, tensor<3xf64> -> "
       "tensor<2x3xf64>\n"
       "  %y = nn.sub %b, %s : tensor<3xf64>, tensor<2x3xf64> -> "
       "tensor<2x3xf64>",
       "tensor<2x3xf64>"},
      {"mul and div", a23 + b3,
       "  %m = nn.mul %a, %b : tensor<2x3xf64>, tensor<3xf64> -> "
       "tensor<2x3xf64>\n"
       "  %y = nn.div %m, %b : tensor<2x3xf64>, tensor<3xf64> -> "
       "tensor<2x3xf64>",
       "tensor<2x3xf64>", 0.5, 1.5},
      {"pow", a23 + b23,
       "  %y = nn.pow %a, %b : tensor<2x3xf64>, tensor<2x3xf64> -> "
       "tensor<2x3xf64>",
       "tensor<2x3xf64>", 0.5, 1.5},
      {"where",
       a23 + b3 +
           "  %c = nn.constant dense<[[true, false, true], [false, "
           "false, true]]> : tensor<2x3xi1>\n",
       "  %y = nn.where %c, %a, %b : tensor<2x3xi1>, tensor<2x3xf64>, "
       "tensor<3xf64> -> tensor<2x3xf64>",
       "tensor<2x3xf64>"},
      {"where with a broadcast mask, as a causal mask is",
       a23 + b23 +
           "  %c = nn.constant dense<[[true, false, true]]> : "
           "tensor<1x3xi1>\n",
       "  %y = nn.where %c, %a, %b : tensor<1x3xi1>, tensor<2x3xf64>, "
       "tensor<2x3xf64> -> tensor<2x3xf64>",
       "tensor<2x3xf64>"},
      unaryCase("relu", "relu"),
      unaryCase("tanh", "tanh"),
      unaryCase("sqrt", "sqrt", "", 0.5, 2.0),
      unaryCase("exp", "exp"),
      unaryCase("log", "log", "", 0.5, 2.0),
      unaryCase("sigmoid", "sigmoid"),
      unaryCase("erf", "erf"),
      unaryCase("hard_swish", "hard_swish", "", -4.0, 4.0),
      unaryCase("leaky_relu", "leaky_relu", "alpha = 0.2"),
      unaryCase("hard_sigmoid", "hard_sigmoid", "alpha = 0.3 beta = 0.4", -4.0,
                4.0),
      unaryCase("clip", "clip", "min = -0.5 max = 0.5"),
      unaryCase("gelu", "gelu", "", -3.0, 3.0),
      unaryCase("gelu (tanh)", "gelu", "approximate = tanh", -3.0, 3.0),
      {"softmax on a middle axis",
       "  %a = nn.param \"a\" : tensor<2x3x2xf64>\n",
       "  %y = nn.softmax %a axis = 1 : tensor<2x3x2xf64>",
       "tensor<2x3x2xf64>"},
      {"log_softmax", a23, "  %y = nn.log_softmax %a : tensor<2x3xf64>",
       "tensor<2x3xf64>"},
      {"layer_norm over two dimensions",
       "  %a = nn.param \"a\" : tensor<2x2x3xf64>\n"
       "  %g = nn.param \"g\" : tensor<2x3xf64>\n"
       "  %c = nn.param \"c\" : tensor<2x3xf64>\n",
       "  %y = nn.layer_norm %a, %g, %c axis = 1 epsilon = 1.0e-3 : "
       "tensor<2x2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64> -> "
       "tensor<2x2x3xf64>",
       "tensor<2x2x3xf64>"},
      {"batch_norm (the batch's statistics)", batchNormParams, batchNorm,
       "tensor<2x3x4x4xf64>"},
      {"batch_norm (frozen statistics)", batchNormParams, batchNorm,
       "tensor<2x3x4x4xf64>", -1.0, 1.0, "batch-norm=frozen"},
      {"dropout (the same mask forward and backward)", a23,
       "  %y = nn.dropout %a ratio = 0.5 : tensor<2x3xf64>", "tensor<2x3xf64>"},
      {"max_pool", x,
       "  %y = nn.max_pool %x kernel = [3, 2] strides = [1, 2] pads = [1, 0, "
       "1, 0] dilations = [1, 1] : tensor<2x3x4x4xf64> -> tensor<2x3x4x2xf64>",
       "tensor<2x3x4x2xf64>"},
      {"avg_pool", x,
       "  %y = nn.avg_pool %x kernel = [2, 3] strides = [2, 1] pads = [1, 1, "
       "0, 1] dilations = [1, 1] : tensor<2x3x4x4xf64> -> tensor<2x3x2x4xf64>",
       "tensor<2x3x2x4xf64>"},
      {"reshape, transpose and expand",
       "  %a = nn.param \"a\" : tensor<6xf64>\n"
       "  %b = nn.param \"b\" : tensor<1x3x1xf64>\n",
       "  %r = nn.reshape %a : tensor<6xf64> -> tensor<2x3xf64>\n"
       "  %t = nn.transpose %r perm = [1, 0] : tensor<2x3xf64> -> "
       "tensor<3x2xf64>\n"
       "  %e = nn.expand %b : tensor<1x3x1xf64> -> tensor<2x3x2xf64>\n"
       "  %y = nn.mul %e, %t : tensor<2x3x2xf64>, tensor<3x2xf64> -> "
       "tensor<2x3x2xf64>",
       "tensor<2x3x2xf64>"},
      {"concat, split and slice", a23 + b23,
       "  %c = nn.concat %a, %b axis = 0 : tensor<2x3xf64>, tensor<2x3xf64> "
       "-> tensor<4x3xf64>\n"
       "  %p:2 = nn.split %c axis = 1 sizes = [1, 2] : tensor<4x3xf64> -> "
       "tensor<4x1xf64>, tensor<4x2xf64>\n"
       "  %y = nn.slice %p#1 starts = [3, 0] sizes = [2, 2] steps = [-2, 1] "
       ": tensor<4x2xf64> -> tensor<2x2xf64>",
       "tensor<2x2xf64>"},
      {"gather with repeated indices",
       "  %a = nn.param \"a\" : tensor<4x3xf64>\n"
       "  %i = nn.constant dense<[[1, 3], [1, -4]]> : tensor<2x2xi64>\n",
       "  %y = nn.gather %a, %i axis = 0 : tensor<4x3xf64>, tensor<2x2xi64> -> "
       "tensor<2x2x3xf64>",
       "tensor<2x2x3xf64>"},
      {"reductions", "  %a = nn.param \"a\" : tensor<2x3x4xf64>\n",
       "  %s = nn.reduce_sum %a axes = [1] keepdims = false : "
       "tensor<2x3x4xf64> -> tensor<2x4xf64>\n"
       "  %y = nn.reduce_mean %s axes = [-1] : tensor<2x4xf64> -> "
       "tensor<2x1xf64>",
       "tensor<2x1xf64>"},
  };
  std::mt19937 rng(7);
  for (const GradientCase &c : cases) {
    SECTION(c.name) {
      OwningOpRef<ModuleOp> module =
          step(program(c.params, c.body, c.resultType),
               "loss=mse optimizer=none " + c.options);
      NamedTensors feeds = randomFeeds(mainOf(*module), rng, c.low, c.high, 1);
      // The mse targets need no particular range.
      checkGradients(*this, *module, feeds);
    }
  }
}

TEST_CASE_METHOD(TrainingFixture,
                 "cross-entropy and every optimizer's state thread through "
                 "steps",
                 "[training]") {
  const std::string source =
      program("  %a = nn.param \"a\" : tensor<2x3x5xf64>\n"
              "  %w = nn.param \"w\" : tensor<5x4xf64>\n",
              "  %y = nn.matmul %a, %w : tensor<2x3x5xf64>, tensor<5x4xf64> -> "
              "tensor<2x3x4xf64>",
              "tensor<2x3x4xf64>");
  std::mt19937 rng(11);
  SECTION("cross-entropy gradients") {
    OwningOpRef<ModuleOp> module = step(source, "optimizer=none");
    checkGradients(*this, *module, randomFeeds(mainOf(*module), rng, -1, 1, 4));
  }
  for (const char *optimizer : {"sgd", "momentum", "adam", "adamw"}) {
    SECTION(std::string("the loss falls with ") + optimizer) {
      OwningOpRef<ModuleOp> module =
          step(source, std::string("optimizer=") + optimizer +
                           " lr=" + (optimizer[0] == 'a' ? "0.05" : "0.5"));
      func::FuncOp function = mainOf(*module);
      NamedTensors feeds = randomFeeds(function, rng, -1, 1, 4);
      std::vector<double> losses;
      for (int i = 0; i < 20; ++i) {
        std::vector<Tensor> results = run(*module, feeds);
        losses.push_back(results[0].get(0));
        feeds = applyUpdates(function, std::move(feeds), std::move(results));
      }
      INFO(optimizer << ": " << losses.front() << " -> " << losses.back());
      CHECK(losses.back() < 0.9 * losses.front());
      if (std::string(optimizer).rfind("adam", 0) == 0)
        CHECK(feeds.at("optimizer.step").get(0) == 20.0);
    }
  }
}

TEST_CASE_METHOD(TrainingFixture,
                 "mixed precision trains from fp32 master weights",
                 "[training]") {
  const std::string source =
      program("  %a = nn.param \"a\" : tensor<2x3x5xf32>\n"
              "  %w = nn.param \"w\" : tensor<5x4xf32>\n",
              "  %y = nn.matmul %a, %w : tensor<2x3x5xf32>, tensor<5x4xf32> -> "
              "tensor<2x3x4xf32>",
              "tensor<2x3x4xf32>");
  for (const char *precision : {"bf16", "fp16"}) {
    SECTION(precision) {
      OwningOpRef<ModuleOp> module =
          step(source, std::string("optimizer=adam lr=0.05 mixed-precision=") +
                           precision);
      func::FuncOp function = mainOf(*module);
      // The parameters and their updates stay fp32.
      CHECK(cast<ShapedType>(function.getResultTypes()[2])
                .getElementType()
                .isF32());
      std::mt19937 rng(5);
      NamedTensors feeds = randomFeeds(function, rng, -1, 1, 4);
      std::vector<double> losses;
      for (int i = 0; i < 20; ++i) {
        std::vector<Tensor> results = run(*module, feeds);
        losses.push_back(results[0].get(0));
        feeds = applyUpdates(function, std::move(feeds), std::move(results));
      }
      INFO(precision << ": " << losses.front() << " -> " << losses.back());
      CHECK(losses.back() < 0.9 * losses.front());
      CHECK(feeds.at("w").dtype() == DType::F32);
    }
  }
}

TEST_CASE_METHOD(TrainingFixture,
                 "a two-layer MLP step matches gradients written out by hand",
                 "[training]") {
  // y = relu(x W1 + b1) W2 with mse against t, then one SGD step.
  OwningOpRef<ModuleOp> module = step(
      program("  %x = nn.input \"x\" : tensor<2x3xf32>\n"
              "  %w1 = nn.param \"w1\" : tensor<3x2xf32>\n"
              "  %b1 = nn.param \"b1\" : tensor<2xf32>\n"
              "  %w2 = nn.param \"w2\" : tensor<2x2xf32>\n",
              "  %h = nn.matmul %x, %w1 : tensor<2x3xf32>, tensor<3x2xf32> -> "
              "tensor<2x2xf32>\n"
              "  %hb = nn.add %h, %b1 : tensor<2x2xf32>, tensor<2xf32> -> "
              "tensor<2x2xf32>\n"
              "  %r = nn.relu %hb : tensor<2x2xf32>\n"
              "  %y = nn.matmul %r, %w2 : tensor<2x2xf32>, tensor<2x2xf32> -> "
              "tensor<2x2xf32>",
              "tensor<2x2xf32>"),
      "loss=mse labels=t optimizer=sgd lr=0.5");
  auto tensor = [](runtime::Shape shape, std::vector<double> values) {
    Tensor t(DType::F32, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i)
      t.set(static_cast<int64_t>(i), values[i]);
    return t;
  };
  NamedTensors feeds;
  feeds["x"] = tensor({2, 3}, {1, 2, 0, 0, 1, -1});
  feeds["w1"] = tensor({3, 2}, {0.5, -1, 0.25, 1, -0.5, 0.5});
  feeds["b1"] = tensor({2}, {0.1, -0.2});
  feeds["w2"] = tensor({2, 2}, {1, -1, 2, 0.5});
  feeds["t"] = tensor({2, 2}, {1, 0, 0, 1});
  // Forward: h = x W1 + b1 = [[1.1, 0.8], [0.85, 0.3]]; both positive, so
  // r = h; y = r W2 = [[2.7, -0.7], [1.45, -0.7]].
  // Loss = mean((y - t)^2) over 4 = (1.7^2 + 0.7^2 + 1.45^2 + 1.7^2) / 4.
  double loss = (1.7 * 1.7 + 0.7 * 0.7 + 1.45 * 1.45 + 1.7 * 1.7) / 4;
  // dy = 2 (y - t) / 4 = [[0.85, -0.35], [0.725, -0.85]].
  // dW2 = r^T dy = [[1.1*0.85 + 0.85*0.725, 1.1*-0.35 + 0.85*-0.85],
  //                 [0.8*0.85 + 0.3*0.725, 0.8*-0.35 + 0.3*-0.85]].
  double dW2[4] = {1.1 * 0.85 + 0.85 * 0.725, 1.1 * -0.35 + 0.85 * -0.85,
                   0.8 * 0.85 + 0.3 * 0.725, 0.8 * -0.35 + 0.3 * -0.85};
  // dr = dy W2^T = [[0.85 + 0.35, 1.7 - 0.175], [0.725 + 0.85, 1.45 - 0.425]]
  // and dh = dr (relu passes everything); db1 = column sums of dh.
  double dh[2][2] = {{1.2, 1.525}, {1.575, 1.025}};
  double db1[2] = {dh[0][0] + dh[1][0], dh[0][1] + dh[1][1]};
  // dW1 = x^T dh.
  double xs[2][3] = {{1, 2, 0}, {0, 1, -1}};
  double dW1[6];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      dW1[i * 2 + j] = xs[0][i] * dh[0][j] + xs[1][i] * dh[1][j];

  func::FuncOp function = mainOf(*module);
  std::vector<Tensor> results = run(*module, feeds);
  CHECK(results[0].get(0) == Approx(loss).epsilon(1e-6));
  NamedTensors next = applyUpdates(function, feeds, results);
  const double lr = 0.5;
  for (int i = 0; i < 4; ++i)
    CHECK(next.at("w2").get(i) ==
          Approx(feeds.at("w2").get(i) - lr * dW2[i]).epsilon(1e-6));
  for (int i = 0; i < 2; ++i)
    CHECK(next.at("b1").get(i) ==
          Approx(feeds.at("b1").get(i) - lr * db1[i]).epsilon(1e-6));
  for (int i = 0; i < 6; ++i)
    CHECK(next.at("w1").get(i) ==
          Approx(feeds.at("w1").get(i) - lr * dW1[i]).epsilon(1e-6));
  // The input is not a parameter: it is neither updated nor returned.
  CHECK(next.at("x").get(0) == 1.0);
  CHECK(function.getNumResults() == 4);
}

TEST_CASE_METHOD(TrainingFixture,
                 "batch norm trains on the batch's statistics and updates "
                 "the running ones as PyTorch does",
                 "[training]") {
  // x [N = 2, C = 2, L = 3]; mse against t; one SGD step with lr 1, so each
  // update is the parameter minus its gradient. ONNX's momentum 0.9 is
  // PyTorch's 0.1.
  OwningOpRef<ModuleOp> module =
      step(program("  %x = nn.input \"x\" : tensor<2x2x3xf32>\n"
                   "  %s = nn.param \"s\" : tensor<2xf32>\n"
                   "  %b = nn.param \"b\" : tensor<2xf32>\n"
                   "  %m = nn.param \"m\" : tensor<2xf32>\n"
                   "  %v = nn.param \"v\" : tensor<2xf32>\n",
                   "  %y = nn.batch_norm %x, %s, %b, %m, %v epsilon = 0.001 "
                   ": tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>, "
                   "tensor<2xf32>, tensor<2xf32> -> tensor<2x2x3xf32>",
                   "tensor<2x2x3xf32>"),
           "loss=mse labels=t optimizer=sgd lr=1");
  const double xs[2][2][3] = {{{1, 2, 4}, {0, -1, 3}},
                              {{-2, 0.5, 1}, {2, 2, -4}}};
  const double ts[2][2][3] = {{{0, 1, 0}, {1, 0, 0}}, {{0, 0, 1}, {0, 1, 0}}};
  const double scale[2] = {1.5, -0.5}, bias[2] = {0.25, 1};
  const double running[2][2] = {{0.1, -0.2}, {0.8, 1.2}}; // mean, var
  const double epsilon = 0.001, momentum = 0.1;
  auto fill = [](runtime::Shape shape, const double *values) {
    Tensor t(DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, values[i]);
    return t;
  };
  NamedTensors feeds;
  feeds["x"] = fill({2, 2, 3}, &xs[0][0][0]);
  feeds["t"] = fill({2, 2, 3}, &ts[0][0][0]);
  feeds["s"] = fill({2}, scale);
  feeds["b"] = fill({2}, bias);
  feeds["m"] = fill({2}, running[0]);
  feeds["v"] = fill({2}, running[1]);

  // The reference, channel by channel: PyTorch's training batch norm.
  double loss = 0, dscale[2] = {0, 0}, dbias[2] = {0, 0};
  double newMean[2], newVar[2];
  const int count = 6; // N x L values per channel
  for (int c = 0; c < 2; ++c) {
    double mean = 0, var = 0;
    for (int n = 0; n < 2; ++n)
      for (int l = 0; l < 3; ++l)
        mean += xs[n][c][l] / count;
    for (int n = 0; n < 2; ++n)
      for (int l = 0; l < 3; ++l)
        var += (xs[n][c][l] - mean) * (xs[n][c][l] - mean) / count;
    for (int n = 0; n < 2; ++n)
      for (int l = 0; l < 3; ++l) {
        double xhat = (xs[n][c][l] - mean) / std::sqrt(var + epsilon);
        double y = xhat * scale[c] + bias[c];
        loss += (y - ts[n][c][l]) * (y - ts[n][c][l]) / 12;
        double dy = 2 * (y - ts[n][c][l]) / 12;
        dscale[c] += dy * xhat;
        dbias[c] += dy;
      }
    newMean[c] = (1 - momentum) * running[0][c] + momentum * mean;
    newVar[c] =
        (1 - momentum) * running[1][c] + momentum * var * count / (count - 1);
  }

  func::FuncOp function = mainOf(*module);
  std::vector<Tensor> results = run(*module, feeds);
  CHECK(results[0].get(0) == Approx(loss).epsilon(1e-5));
  NamedTensors next = applyUpdates(function, feeds, results);
  for (int c = 0; c < 2; ++c) {
    INFO("channel " << c);
    CHECK(next.at("s").get(c) == Approx(scale[c] - dscale[c]).epsilon(1e-5));
    CHECK(next.at("b").get(c) == Approx(bias[c] - dbias[c]).epsilon(1e-5));
    CHECK(next.at("m").get(c) == Approx(newMean[c]).epsilon(1e-5));
    CHECK(next.at("v").get(c) == Approx(newVar[c]).epsilon(1e-5));
  }
  // The running statistics are returned as such, and trained by nothing.
  unsigned marked = 0;
  for (unsigned r = 0; r < function.getNumResults(); ++r)
    marked += function.getResultAttr(r, "nn.running_statistic") ? 1 : 0;
  CHECK(marked == 2);
  CHECK(function.getNumResults() == 5);
}

namespace {

/// FLOPs of the matrix products of a function (the terms of Megatron-LM's
/// count; elementwise work is left out of it).
double matmulFlops(func::FuncOp function) {
  double flops = 0;
  function.walk([&](Operation *op) {
    if (isa<nn::MatMulOp, nn::GemmOp>(op))
      flops += cast<nn::ShardableOpInterface>(op).getCost()->flops;
  });
  return flops;
}

} // namespace

TEST_CASE_METHOD(TrainingFixture, "GPT training steps have Megatron-LM's FLOPs",
                 "[training]") {
  struct Config {
    int64_t batch, layers, hidden, heads, seq, vocab;
  };
  for (Config config :
       {Config{2, 2, 64, 4, 32, 128}, Config{4, 3, 48, 3, 16, 500},
        Config{1, 1, 32, 2, 64, 64}}) {
    zoo::ModelSpec spec;
    spec.kind = zoo::ModelKind::Gpt;
    spec.common.batch = config.batch;
    spec.common.shapeOnly = true;
    spec.common.externalDataLocation = "gpt.weights.bin";
    spec.gpt.layers = config.layers;
    spec.gpt.hidden = config.hidden;
    spec.gpt.heads = config.heads;
    spec.gpt.seq = config.seq;
    spec.gpt.vocab = config.vocab;
    std::string bytes = zoo::build(spec).model.SerializeAsString();
    double B = config.batch, s = config.seq, l = config.layers,
           h = config.hidden, V = config.vocab;
    for (const char *recompute : {"none", "selective", "full"}) {
      std::string error;
      OwningOpRef<ModuleOp> module =
          importOnnx(bytes, "gpt.onnx", context, OnnxImportOptions{}, error);
      INFO(error);
      REQUIRE(module);
      differentiate(*module, std::string("recompute=") + recompute);
      double expected =
          72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
      if (std::string(recompute) == "full")
        // Every layer's forward again; the logits layer is not recomputed,
        // nor the projection that ends every layer but the last: only the
        // layer's output reads it, saved as the next layer's input.
        expected =
            96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)) -
            2 * B * s * (4 * h) * h * (l - 1);
      if (std::string(recompute) == "selective")
        // The attention scores, Q K^T, again in every layer.
        expected += 2 * B * s * s * h * l;
      INFO("recompute " << recompute << ", l=" << l << " h=" << h);
      CHECK(matmulFlops(mainOf(*module)) == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE_METHOD(TrainingFixture,
                 "the sharding search prices a GPT training step's memory as "
                 "the parameters and state its layouts leave on a device and "
                 "the most its values hold at once, as memory planning lays "
                 "them out",
                 "[training]") {
  zoo::ModelSpec spec;
  spec.kind = zoo::ModelKind::Gpt;
  spec.common.batch = 8;
  spec.common.shapeOnly = true;
  spec.common.externalDataLocation = "gpt.weights.bin";
  spec.gpt.layers = 2;
  spec.gpt.hidden = 64;
  spec.gpt.heads = 4;
  spec.gpt.seq = 32;
  spec.gpt.vocab = 128;
  std::string bytes = zoo::build(spec).model.SerializeAsString();
  struct Layout {
    const char *mesh;
    std::vector<int64_t> shape;
    const char *strategy;
  };
  for (const Layout &layout :
       {Layout{"1", {1}, "auto"}, Layout{"4", {4}, "data-parallel"},
        Layout{"1x4", {1, 4}, "megatron"}, Layout{"2x2", {2, 2}, "auto"}})
    for (const char *recompute : {"none", "selective", "full"}) {
      std::string error;
      OwningOpRef<ModuleOp> module =
          importOnnx(bytes, "gpt.onnx", context, OnnxImportOptions{}, error);
      REQUIRE(module);
      differentiate(*module, std::string("recompute=") + recompute);
      func::FuncOp function = mainOf(*module);
      TrainingStepStats stats = analyzeTrainingStep(function);
      runPipeline(*module, std::string("attach-cluster,sbp-assign{mesh=") +
                               layout.mesh + " strategy=" + layout.strategy +
                               "}");
      // What the plan holds on device 0, read back from the layouts it
      // chose: every parameter and state tensor, every saved activation,
      // each at its local shape.
      const std::vector<int64_t> &mesh = layout.shape;
      std::vector<int64_t> device0(mesh.size(), 0);
      auto localBytesAs = [&](Value value, const NdSbp &layout) {
        auto type = cast<ShapedType>(value.getType());
        std::vector<int64_t> shape(type.getShape().begin(),
                                   type.getShape().end());
        int64_t elements = 1;
        for (int64_t extent : localShape(shape, mesh, layout, device0))
          elements *= extent;
        return static_cast<double>(elements * type.getElementTypeBitWidth() /
                                   8);
      };
      auto shardingOf = [](Operation *op) {
        return op->getAttrOfType<sbp::ShardingAttr>("sbp.sharding");
      };
      auto localBytes = [&](Value value) {
        auto result = cast<OpResult>(value);
        return localBytesAs(value, shardingOf(result.getOwner())
                                       .getResultSbp(result.getResultNumber()));
      };
      double held = 0, activations = 0;
      function.walk([&](nn::ParamOp param) { held += localBytes(param); });
      DenseSet<Value> saved = savedActivations(function);
      for (Value value : saved)
        activations += localBytes(value);
      auto plan = (*module)->getAttrOfType<sbp::LayoutPlanAttr>(
          parplan::kLayoutPlanAttrName);
      REQUIRE(plan);
      INFO("recompute " << recompute << ", " << layout.strategy << " on "
                        << layout.mesh);
      auto estimate = static_cast<double>(plan.getMemoryBytes());
      // Every activation kept for the backward lives at the turn from the
      // forward to the backward, beside the parameters and state.
      CHECK(estimate >= held + activations);
      if (layout.shape == std::vector<int64_t>{1}) {
        CHECK(held ==
              static_cast<double>(stats.parameterBytes + stats.stateBytes));
        CHECK(activations == static_cast<double>(stats.savedActivationBytes));
      }
      // The arena memory planning lays out on the fullest device: the
      // estimate within 3% of it (the arena also holds the gaps between
      // its buffers).
      runPipeline(*module,
                  "insert-boxing,expand-boxing,lower-to-plan,plan-memory");
      int64_t arena = 0;
      for (auto program : module->getOps<plan::ProgramOp>())
        if (auto bytes = program->getAttrOfType<IntegerAttr>(
                parplan::kArenaBytesAttrName))
          arena = std::max(arena, bytes.getInt());
      REQUIRE(arena > 0);
      CHECK(estimate == Approx(static_cast<double>(arena)).epsilon(0.03));
    }
}

TEST_CASE_METHOD(TrainingFixture,
                 "split fused projections train as the fused weight does",
                 "[training]") {
  // One fused projection split three ways, then a product of the parts so
  // that each part matters to the loss.
  const std::string source = program(
      "  %x = nn.input \"x\" : tensor<4x6xf64>\n"
      "  %w = nn.param \"w\" : tensor<6x9xf64>\n"
      "  %b = nn.param \"b\" : tensor<9xf64>\n",
      "  %p = nn.matmul %x, %w : tensor<4x6xf64>, tensor<6x9xf64> -> "
      "tensor<4x9xf64>\n"
      "  %pb = nn.add %b, %p : tensor<9xf64>, tensor<4x9xf64> -> "
      "tensor<4x9xf64>\n"
      "  %q, %k, %v = nn.split %pb axis = 1 sizes = [3, 3, 3] : "
      "tensor<4x9xf64> -> tensor<4x3xf64>, tensor<4x3xf64>, tensor<4x3xf64>\n"
      "  %qk = nn.mul %q, %k : tensor<4x3xf64>, tensor<4x3xf64> -> "
      "tensor<4x3xf64>\n"
      "  %y = nn.add %qk, %v : tensor<4x3xf64>, tensor<4x3xf64> -> "
      "tensor<4x3xf64>",
      "tensor<4x3xf64>");
  std::mt19937 rng(3);
  OwningOpRef<ModuleOp> fused = step(source, "optimizer=adam lr=0.1");
  NamedTensors feeds = randomFeeds(mainOf(*fused), rng, -1, 1, 3);

  OwningOpRef<ModuleOp> split = parseSourceString<ModuleOp>(source, &context);
  REQUIRE(split);
  runPipeline(*split, "func.func(nn-split-fused-projections),"
                      "nn-autodiff{optimizer=adam lr=0.1}");
  int parts = 0;
  mainOf(*split).walk(
      [&](nn::ParamOp param) { parts += param.getPart() ? 1 : 0; });
  CHECK(parts == 6);

  // The parts start from blocks of the fed weights; three Adam steps later
  // the losses agree with the fused step's.
  NamedTensors fusedFeeds = feeds, splitFeeds = feeds;
  for (int i = 0; i < 3; ++i) {
    std::vector<Tensor> a = run(*fused, fusedFeeds);
    std::vector<Tensor> b = run(*split, splitFeeds);
    CHECK(b[0].get(0) == Approx(a[0].get(0)).epsilon(1e-12));
    fusedFeeds =
        applyUpdates(mainOf(*fused), std::move(fusedFeeds), std::move(a));
    splitFeeds =
        applyUpdates(mainOf(*split), std::move(splitFeeds), std::move(b));
  }
  // Each updated part equals its block of the updated fused weight.
  const Tensor &whole = fusedFeeds.at("w");
  const Tensor &middle = splitFeeds.at("w[:, 3:6]");
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 3; ++c)
      CHECK(middle.get(r * 3 + c) ==
            Approx(whole.get(r * 9 + 3 + c)).epsilon(1e-12));
}
