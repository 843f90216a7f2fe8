//===- PlanExecutionTest.cpp - compiled plans compute the step's numbers --===//
//
// The whole way from a model to the executor: a zoo model's training step
// is lowered to a plan, written to plan.proto, and run by the executor; the
// losses must be those the interpreter computes on the nn program with the
// same synthetic weights and batches.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Runtime/Communicator.h"
#include "parplan/Runtime/Executor.h"
#include "parplan/Runtime/Initializers.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/WeightFile.h"
#include "parplan/Target/NNInterpreter.h"
#include "parplan/Target/PlanExport.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Zoo/Zoo.h"

#include "MlirTestContext.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/FileSystem.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>

using namespace mlir;
using namespace parplan;
namespace rt = parplan::runtime;

namespace {

struct PlanFixture : testing::MlirTestContext {
  OwningOpRef<ModuleOp> trainingStep(const zoo::ModelSpec &spec,
                                     const std::string &options) {
    std::string error;
    OwningOpRef<ModuleOp> module =
        importOnnx(zoo::build(spec).model.SerializeAsString(), "model.onnx",
                   context, OnnxImportOptions{}, error);
    INFO(error);
    REQUIRE(module);
    runPipeline(*module, "nn-autodiff{" + options + "}");
    return module;
  }
};

/// A 12-16-5 MLP on batches of 8.
zoo::ModelSpec smallMlp() {
  zoo::ModelSpec mlp;
  mlp.kind = zoo::ModelKind::Mlp;
  mlp.common.batch = 8;
  mlp.mlp.sizes = {12, 16, 5};
  return mlp;
}

/// A GPT of `layers` layers, hidden size 16, 2 heads, 8 tokens of a
/// vocabulary of 20, on batches of 2.
zoo::ModelSpec smallGpt(int64_t layers) {
  zoo::ModelSpec gpt;
  gpt.kind = zoo::ModelKind::Gpt;
  gpt.common.batch = 2;
  gpt.gpt.layers = layers;
  gpt.gpt.hidden = 16;
  gpt.gpt.heads = 2;
  gpt.gpt.seq = 8;
  gpt.gpt.vocab = 20;
  return gpt;
}

/// The losses of `steps` steps of the interpreter on `step`, fed as the
/// executor feeds its plan: parameters and batches from the synthetic
/// generator, integer inputs bounded as the plan's buffers say.
std::vector<double> interpretedLosses(func::FuncOp step, const plan::Plan &plan,
                                      uint64_t seed, int steps,
                                      const NamedTensors &weights = {}) {
  std::map<std::string, const plan::Buffer *> buffers;
  for (const plan::Buffer &buffer : plan.programs(0).buffers())
    if (!buffer.name().empty())
      buffers[buffer.name()] = &buffer;
  NamedTensors feeds;
  step.walk([&](nn::ParamOp param) {
    if (param.getSource() && *param.getSource() == "zeros")
      return;
    if (weights.count(param.getName().str())) {
      feeds[param.getName().str()] = weights.at(param.getName().str());
      return;
    }
    auto type = param.getType();
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    rt::Tensor tensor(*toDType(type.getElementType()), shape);
    REQUIRE(rt::fillBlock(tensor, shape, std::vector<int64_t>(shape.size(), 0),
                          seed, param.getName().str(),
                          rt::parameterScale(shape), 1)
                .ok());
    feeds[param.getName().str()] = tensor;
  });
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    step.walk([&](nn::InputOp input) {
      auto type = input.getType();
      std::vector<int64_t> shape(type.getShape().begin(),
                                 type.getShape().end());
      rt::Tensor tensor(*toDType(type.getElementType()), shape);
      int64_t bound = buffers.at(input.getName().str())->value_bound();
      REQUIRE(rt::fillBlock(tensor, shape,
                            std::vector<int64_t>(shape.size(), 0), seed,
                            rt::batchName(input.getName().str(), s), 1.0,
                            bound > 0 ? bound : 1)
                  .ok());
      feeds[input.getName().str()] = tensor;
    });
    FailureOr<std::vector<rt::Tensor>> results = interpret(step, feeds);
    REQUIRE(succeeded(results));
    losses.push_back(results->front().get(0));
    feeds = applyUpdates(step, std::move(feeds), std::move(*results));
  }
  return losses;
}

} // namespace

TEST_CASE_METHOD(PlanFixture,
                 "a one-device plan of a training step gives the "
                 "interpreter's losses",
                 "[plan]") {
  zoo::ModelSpec mlp = smallMlp(), gpt = smallGpt(1);
  for (auto [name, spec, options] :
       {std::tuple{"mlp, adam", mlp, "optimizer=adam lr=0.01"},
        std::tuple{"gpt, momentum, full recomputation", gpt,
                   "optimizer=momentum lr=0.1 recompute=full"}}) {
    SECTION(name) {
      OwningOpRef<ModuleOp> step = trainingStep(spec, options);
      OwningOpRef<ModuleOp> lowered(step->clone());
      runPipeline(*lowered, "lower-to-plan");
      FailureOr<plan::Plan> exported = exportPlan(*lowered);
      INFO(diagnostics);
      REQUIRE(succeeded(exported));
      // Through the file format, as parplan-run reads it.
      plan::Plan plan;
      REQUIRE(rt::parsePlanFile(rt::serializePlan(*exported), "plan.pb", plan)
                  .ok());
      REQUIRE(rt::checkPlan(plan).ok());

      const uint64_t seed = 42;
      rt::LocalCommunicator communicator;
      rt::Executor executor;
      REQUIRE(executor.load(plan, 0, communicator).ok());
      executor.setSeed(seed);
      REQUIRE(executor.initialize().ok());
      // The executor's parameters are the synthetic values of the logical
      // tensors.
      for (int b = 0; b < plan.programs(0).buffers_size(); ++b) {
        const plan::Buffer &buffer = plan.programs(0).buffers(b);
        if (buffer.kind() != plan::Buffer::PARAMETER)
          continue;
        std::vector<int64_t> shape(buffer.logical_shape().begin(),
                                   buffer.logical_shape().end());
        rt::Tensor value = executor.buffer(b);
        REQUIRE(value.numElements() > 0);
        for (int64_t i = 0; i < value.numElements(); i += 7)
          CHECK(value.get(i) ==
                Approx(rt::parameterScale(shape) *
                       rt::syntheticValue(seed, buffer.name(), i)));
      }
      std::vector<double> executed;
      for (int s = 0; s < 3; ++s) {
        double loss = 0;
        rt::Status status = executor.step(s, &loss);
        INFO(status.error);
        REQUIRE(status.ok());
        executed.push_back(loss);
      }
      std::vector<double> interpreted = interpretedLosses(
          step->lookupSymbol<func::FuncOp>("main"), plan, seed, 3);
      for (int s = 0; s < 3; ++s) {
        INFO("step " << s);
        CHECK(executed[s] == Approx(interpreted[s]).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE_METHOD(PlanFixture,
                 "each rank reads its blocks of the weights from the model "
                 "file",
                 "[plan]") {
  zoo::ModelSpec spec = smallMlp();
  spec.common.seed = 3;
  onnx::ModelProto model = zoo::build(spec).model;
  std::string bytes = model.SerializeAsString();
  llvm::SmallString<128> path;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("weights", "onnx", path));
  {
    std::ofstream out(path.c_str(), std::ios::binary);
    out << bytes;
  }
  // The interpreter is fed the initializers themselves.
  NamedTensors weights;
  for (const onnx::TensorProto &tensor : model.graph().initializer()) {
    std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
    rt::Tensor value(rt::DType::F32, shape);
    REQUIRE(tensor.raw_data().size() == value.byteSize());
    std::memcpy(value.bytes(), tensor.raw_data().data(), value.byteSize());
    weights[tensor.name()] = value;
  }
  std::string error;
  OwningOpRef<ModuleOp> step =
      importOnnx(bytes, path.str(), context, OnnxImportOptions{}, error);
  REQUIRE(step);
  runPipeline(*step, "nn-autodiff{optimizer=sgd lr=0.1}");

  for (const char *mesh : {"1", "2", "1x2"}) {
    SECTION(std::string("mesh ") + mesh) {
      OwningOpRef<ModuleOp> lowered(step->clone());
      runPipeline(*lowered, std::string("attach-cluster,sbp-assign{mesh=") +
                                mesh +
                                " strategy=data-parallel},insert-boxing,expand-"
                                "boxing,lower-to-plan");
      FailureOr<plan::Plan> plan = exportPlan(*lowered);
      REQUIRE(succeeded(plan));
      // Device 0's blocks, read from the file, are the initializers' blocks.
      rt::LocalCommunicator communicator;
      rt::Executor executor;
      plan::Plan single = *plan;
      if (rt::planDevices(single) == 1) {
        REQUIRE(executor.load(single, 0, communicator).ok());
        executor.setSeed(9);
        executor.setWeightLoader(
            [&](const plan::Buffer &buffer, rt::Tensor &block, bool &loaded) {
              rt::Status status =
                  rt::loadWeightBlock(buffer, path.str().str(), block);
              loaded = status.ok();
              return status;
            });
        REQUIRE(executor.initialize().ok());
        std::vector<double> interpreted = interpretedLosses(
            step->lookupSymbol<func::FuncOp>("main"), single, 9, 2, weights);
        for (int s = 0; s < 2; ++s) {
          double loss = 0;
          REQUIRE(executor.step(s, &loss).ok());
          CHECK(loss == Approx(interpreted[s]).epsilon(1e-6));
        }
      }
      rt::DeviceProgram device0;
      REQUIRE(rt::instantiateProgram(*plan, 0, device0).ok());
      for (const plan::Buffer &buffer : device0.program.buffers()) {
        if (buffer.kind() != plan::Buffer::PARAMETER)
          continue;
        std::vector<int64_t> shape(buffer.shape().begin(),
                                   buffer.shape().end());
        rt::Tensor block(rt::DType::F32, shape);
        REQUIRE(rt::loadWeightBlock(buffer, path.str().str(), block).ok());
        const rt::Tensor &whole = weights.at(buffer.name());
        int64_t columns = whole.rank() == 2 ? whole.shape()[1] : 1;
        for (int64_t i = 0; i < block.numElements(); ++i) {
          int64_t row = whole.rank() == 2 ? i / shape[1] : i;
          int64_t column = whole.rank() == 2 ? i % shape[1] : 0;
          int64_t r = row + buffer.offsets(0);
          int64_t c = whole.rank() == 2 ? column + buffer.offsets(1) : 0;
          CHECK(block.get(i) == whole.get(r * columns + c));
        }
      }
    }
  }
  // A missing file is one line naming the parameter and the file.
  const plan::Buffer *first = nullptr;
  OwningOpRef<ModuleOp> lowered(step->clone());
  runPipeline(*lowered, "lower-to-plan");
  FailureOr<plan::Plan> plan = exportPlan(*lowered);
  REQUIRE(succeeded(plan));
  rt::DeviceProgram device0;
  REQUIRE(rt::instantiateProgram(*plan, 0, device0).ok());
  for (const plan::Buffer &buffer : device0.program.buffers())
    if (buffer.kind() == plan::Buffer::PARAMETER && !first)
      first = &buffer;
  REQUIRE(first);
  rt::Tensor block(rt::DType::F32, std::vector<int64_t>(first->shape().begin(),
                                                        first->shape().end()));
  CHECK(rt::loadWeightBlock(*first, "/nonexistent/model.onnx", block).error ==
        "parameter '" + first->name() +
            "': cannot open '/nonexistent/model.onnx'");
  llvm::sys::fs::remove(path);
}

TEST_CASE_METHOD(PlanFixture,
                 "the CUDA backend's kernels, run on the host, give the "
                 "reference kernels' steps",
                 "[plan]") {
  // The kernels the GPU runs (lib/Runtime/Device) through whole training
  // steps, on the host: every op of these models must have one (nothing
  // left to the reference kernels), and the losses and the trained weights
  // must be the reference's to float32 rounding.
  zoo::ModelSpec mlp = smallMlp(), gpt = smallGpt(2);
  for (auto [name, spec, options, tolerance] :
       {std::tuple{"mlp, adam", mlp, std::string("optimizer=adam lr=0.01"),
                   1e-5},
        std::tuple{"mlp, sgd, mse", mlp,
                   std::string("optimizer=sgd lr=0.1 loss=mse"), 1e-5},
        // Adam divides each gradient by its own root mean square: where
        // the causal mask leaves a gradient small, the kernels' different
        // summation orders move the update by a few times float32's
        // rounding of it.
        std::tuple{"gpt, adamw", gpt, std::string("optimizer=adamw lr=0.01"),
                   3e-5},
        std::tuple{"gpt, momentum, selective recomputation", gpt,
                   std::string("optimizer=momentum lr=0.1 "
                               "recompute=selective"),
                   1e-5},
        std::tuple{"gpt, bf16", gpt,
                   std::string("optimizer=adam lr=0.01 mixed-precision=bf16"),
                   2e-2}}) {
    SECTION(name) {
      OwningOpRef<ModuleOp> step = trainingStep(spec, options);
      // With planned memory, as `parplan compile` writes plans: the device
      // kernels run on buffers at their arena offsets, sharing bytes.
      runPipeline(*step, "lower-to-plan,plan-memory");
      FailureOr<plan::Plan> plan = exportPlan(*step);
      INFO(diagnostics);
      REQUIRE(succeeded(plan));
      rt::Status checked = rt::checkPlan(*plan);
      INFO(checked.error);
      REQUIRE(checked.ok());
      REQUIRE(plan->programs(0).arena_bytes() > 0);
      CHECK_FALSE(rt::arenaOverlaps(plan->programs(0)).empty());

      rt::LocalCommunicator communicator;
      auto train = [&](rt::HostKernels kernels, std::vector<double> &losses,
                       std::vector<std::string> &hostKernels) {
        auto executor = std::make_unique<rt::Executor>();
        executor->setBackend(rt::createCpuBackend(communicator, kernels));
        REQUIRE(executor->load(*plan, 0, communicator).ok());
        REQUIRE(executor->initialize().ok());
        for (int s = 0; s < 3; ++s) {
          double loss = 0;
          rt::Status status = executor->step(s, &loss);
          INFO(status.error);
          REQUIRE(status.ok());
          losses.push_back(loss);
        }
        hostKernels = executor->backend()->hostKernels();
        return executor;
      };
      std::vector<double> referenceLosses, deviceLosses;
      std::vector<std::string> none, leftToReference;
      auto reference = train(rt::HostKernels::Reference, referenceLosses, none);
      auto device =
          train(rt::HostKernels::Device, deviceLosses, leftToReference);
      CHECK(device->backend()->describe() ==
            "cpu (the CUDA kernels and memory plan, on the host)");
      INFO("left to the reference kernels: " << leftToReference.size());
      for (const std::string &kernel : leftToReference)
        UNSCOPED_INFO(kernel);
      CHECK(leftToReference.empty());
      for (int s = 0; s < 3; ++s) {
        INFO("step " << s);
        CHECK(deviceLosses[s] == Approx(referenceLosses[s]).epsilon(tolerance));
      }
      // Every parameter and optimizer state, element by element.
      int64_t compared = 0;
      for (int b = 0; b < plan->programs(0).buffers_size(); ++b) {
        plan::Buffer::Kind kind = plan->programs(0).buffers(b).kind();
        if (kind != plan::Buffer::PARAMETER && kind != plan::Buffer::STATE)
          continue;
        rt::Tensor want = reference->buffer(b), got = device->buffer(b);
        REQUIRE(want.numElements() == got.numElements());
        double scale = 0;
        for (int64_t i = 0; i < want.numElements(); ++i)
          scale = std::max(scale, std::abs(want.get(i)));
        for (int64_t i = 0; i < want.numElements(); ++i, ++compared) {
          INFO(plan->programs(0).buffers(b).name() << "[" << i << "]");
          CHECK(got.get(i) == Approx(want.get(i))
                                  .epsilon(tolerance)
                                  .margin(tolerance * scale + 1e-12));
        }
      }
      CHECK(compared > 100);
    }
  }
}

TEST_CASE_METHOD(PlanFixture,
                 "a large constant read by several programs is stored once",
                 "[plan]") {
  // Two stages' programs read one 4 KiB mask; each also has a small
  // constant, which stays in its buffer.
  const char *source = R"mlir(
module attributes {plan.mesh_shape = array<i64: 2>} {
  plan.program @first devices = [0] {
    %mask = plan.buffer kind = constant {value = dense<true> : tensor<64x64xi1>} : memref<64x64xi1>
    %small = plan.buffer kind = constant {value = dense<2.0> : tensor<4xf32>} : memref<4xf32>
  }
  plan.program @second devices = [1] {
    %small = plan.buffer kind = constant {value = dense<3.0> : tensor<4xf32>} : memref<4xf32>
    %mask = plan.buffer kind = constant {value = dense<true> : tensor<64x64xi1>} : memref<64x64xi1>
  }
}
)mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  INFO(diagnostics);
  REQUIRE(module);
  FailureOr<plan::Plan> exported = exportPlan(*module);
  REQUIRE(succeeded(exported));
  REQUIRE(exported->constant_data_size() == 1);
  CHECK(exported->constant_data(0) == std::string(64 * 64, '\1'));
  CHECK(exported->programs(0).buffers(0).shared_data() == 1);
  CHECK(exported->programs(0).buffers(0).data().empty());
  CHECK(exported->programs(1).buffers(1).shared_data() == 1);
  CHECK(exported->programs(0).buffers(1).shared_data() == 0);
  CHECK(exported->programs(0).buffers(1).data().size() == 16);
  // Each device's program holds the mask's bytes again.
  for (int64_t device : {0, 1}) {
    rt::DeviceProgram program;
    REQUIRE(rt::instantiateProgram(*exported, device, program).ok());
    const plan::Buffer &mask = program.program.buffers(device == 0 ? 0 : 1);
    CHECK(mask.shared_data() == 0);
    CHECK(mask.data() == exported->constant_data(0));
  }
}
