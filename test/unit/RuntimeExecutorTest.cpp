//===- RuntimeExecutorTest.cpp - running a plan on one device -------------===//
//
// The executor on the hand-built MLP training plan (test/integration/
// MlpPlan.h) with one device: its losses match a direct computation with
// the kernels step for step and fall over ten steps. Then the executor's
// errors, and the part cutting that collectives use to move blocks along
// inner axes.
//
//===----------------------------------------------------------------------===//

#include "MlpPlan.h"

#include "parplan/Runtime/Executor.h"
#include "parplan/Runtime/Initializers.h"
#include "parplan/Runtime/Kernels.h"

#include <catch2/catch.hpp>

using namespace parplan;
using namespace parplan::runtime;
using namespace parplan::testing;

namespace {

/// The MLP's steps computed with the kernels directly, no plan involved;
/// with `sameBatch`, every step trains on step 0's batch.
std::vector<double> directLosses(int64_t batch, double lr, uint64_t seed,
                                 int steps, bool sameBatch = false) {
  Tensor w1(DType::F32, {kMlpIn, kMlpHidden});
  Tensor w2(DType::F32, {kMlpHidden, kMlpClasses});
  REQUIRE(fillBlock(w1, w1.shape(), {0, 0}, seed, "w1",
                    parameterScale(w1.shape()), 0)
              .ok());
  REQUIRE(fillBlock(w2, w2.shape(), {0, 0}, seed, "w2",
                    parameterScale(w2.shape()), 0)
              .ok());
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    int step = sameBatch ? 0 : i;
    Tensor x(DType::F32, {batch, kMlpIn}), labels(DType::I64, {batch});
    REQUIRE(
        fillBlock(x, x.shape(), {0, 0}, seed, batchName("x", step), 1, 0).ok());
    REQUIRE(fillBlock(labels, labels.shape(), {0}, seed,
                      batchName("labels", step), 1, kMlpClasses)
                .ok());
    Tensor h(DType::F32, {batch, kMlpHidden}), a = h;
    Tensor logits(DType::F32, {batch, kMlpClasses});
    Tensor perExample(DType::F32, {batch}), loss(DType::F32, {});
    REQUIRE(matmul(x, w1, h).ok());
    REQUIRE(unary(UnaryKind::Relu, h, a).ok());
    REQUIRE(matmul(a, w2, logits).ok());
    REQUIRE(softmaxCrossEntropy(logits, labels, perExample).ok());
    REQUIRE(reduce(ReduceOp::Mean, perExample, {}, loss).ok());
    losses.push_back(loss.get(0));

    Tensor dLosses(DType::F32, {batch});
    for (int64_t i = 0; i < batch; ++i)
      dLosses.set(i, 1.0 / static_cast<double>(batch));
    Tensor dLogits = logits, dW2 = w2, dA = a, dH = h, dW1 = w1;
    REQUIRE(softmaxCrossEntropyGrad(dLosses, logits, labels, dLogits).ok());
    REQUIRE(gemm(a, dLogits, nullptr, 1, 1, true, false, dW2).ok());
    REQUIRE(gemm(dLogits, w2, nullptr, 1, 1, false, true, dA).ok());
    REQUIRE(unaryGrad(UnaryKind::Relu, dA, h, dH).ok());
    REQUIRE(gemm(x, dH, nullptr, 1, 1, true, false, dW1).ok());
    Tensor newW1 = w1, newW2 = w2;
    REQUIRE(sgdUpdate(w1, dW1, lr, 0, 1, newW1).ok());
    REQUIRE(sgdUpdate(w2, dW2, lr, 0, 1, newW2).ok());
    w1 = newW1;
    w2 = newW2;
  }
  return losses;
}

} // namespace

TEST_CASE("the executor runs a one-device MLP training plan", "[executor]") {
  const int64_t batch = 16;
  const double lr = 0.5;
  plan::Plan mlp = buildMlpPlan(1, batch, lr);
  REQUIRE(checkPlan(mlp).error == "");
  LocalCommunicator communicator;
  // Batches are random (labels unrelated to inputs), so only training on
  // one batch again and again must lower the loss; both runs must match the
  // direct computation.
  for (bool sameBatch : {false, true}) {
    Executor executor;
    REQUIRE(executor.load(mlp, 0, communicator).error == "");
    REQUIRE(executor.initialize().error == "");
    std::vector<double> expected =
        directLosses(batch, lr, mlp.seed(), 10, sameBatch);
    std::vector<double> losses;
    for (int step = 0; step < 10; ++step) {
      double loss = 0;
      REQUIRE(executor.step(sameBatch ? 0 : step, &loss).error == "");
      losses.push_back(loss);
      CHECK(loss == Approx(expected[step]).epsilon(1e-6));
    }
    // The first loss is about log(5) (small random weights).
    CHECK(losses[0] == Approx(std::log(5.0)).epsilon(0.2));
    if (sameBatch)
      for (int step = 1; step < 10; ++step)
        CHECK(losses[step] < losses[step - 1]);
  }
}

TEST_CASE("the executor takes another seed", "[executor]") {
  plan::Plan mlp = buildMlpPlan(1, 8, 0.1);
  LocalCommunicator communicator;
  double first = 0, second = 0;
  for (uint64_t seed : {1, 2}) {
    Executor executor;
    REQUIRE(executor.load(mlp, 0, communicator).ok());
    executor.setSeed(seed);
    REQUIRE(executor.initialize().ok());
    REQUIRE(executor.step(0, seed == 1 ? &first : &second).ok());
  }
  CHECK(first != second);
  CHECK(directLosses(8, 0.1, 2, 1)[0] == Approx(second).epsilon(1e-6));
}

TEST_CASE("the weight loader hook fills parameters", "[executor]") {
  plan::Plan mlp = buildMlpPlan(1, 8, 0.1);
  LocalCommunicator communicator;
  Executor executor;
  REQUIRE(executor.load(mlp, 0, communicator).ok());
  executor.setWeightLoader(
      [](const plan::Buffer &buffer, Tensor &block, bool &loaded) {
        loaded = buffer.name() == "w1";
        for (int64_t i = 0; loaded && i < block.numElements(); ++i)
          block.set(i, 0.25);
        return Status::success();
      });
  REQUIRE(executor.initialize().ok());
  CHECK(executor.buffer(kW1).get(5) == 0.25);
  CHECK(executor.buffer(kW2).get(5) != 0.25);
}

TEST_CASE("a parameter's synthetic values are centered on its "
          "synthetic_center",
          "[executor]") {
  // A batch norm's running variance (lower-to-plan marks it) must not be
  // drawn around 0: its square root would be NaN.
  plan::Plan mlp = buildMlpPlan(1, 8, 0.1);
  mlp.mutable_programs(0)->mutable_buffers(kW1)->set_synthetic_center(1.0);
  LocalCommunicator communicator;
  Executor executor;
  REQUIRE(executor.load(mlp, 0, communicator).ok());
  REQUIRE(executor.initialize().ok());
  Tensor w1 = executor.buffer(kW1), drawn = w1;
  REQUIRE(fillBlock(drawn, w1.shape(), {0, 0}, executor.seed(), "w1",
                    parameterScale(w1.shape()), 0)
              .ok());
  for (int64_t i = 0; i < w1.numElements(); ++i)
    REQUIRE(w1.get(i) == Approx(1.0 + drawn.get(i)).epsilon(1e-6));
  // Unset, the values are centered on 0.
  Tensor w2 = executor.buffer(kW2);
  double sum = 0;
  for (int64_t i = 0; i < w2.numElements(); ++i)
    sum += w2.get(i);
  CHECK(std::abs(sum / static_cast<double>(w2.numElements())) < 0.05);
}

TEST_CASE("executor errors", "[executor]") {
  LocalCommunicator communicator;
  SECTION("a plan for more devices than processes") {
    Executor executor;
    CHECK(executor.load(buildMlpPlan(2, 8, 0.1), 0, communicator).error ==
          "the plan is for 2 device(s) but runs on 1 process(es); run it with "
          "mpirun -np 2");
    CHECK(executor.load(buildMlpPlan(1, 8, 0.1), 3, communicator).error ==
          "device 3 is outside the plan's mesh of 1 device(s)");
  }
  SECTION("steps before initialize") {
    Executor executor;
    REQUIRE(executor.load(buildMlpPlan(1, 8, 0.1), 0, communicator).ok());
    CHECK(executor.step(0, nullptr).error.find("not initialized") !=
          std::string::npos);
  }
  SECTION("a fault only the data reveals names the instruction") {
    plan::Plan mlp = buildMlpPlan(1, 8, 0.1);
    mlp.mutable_programs(0)->mutable_buffers(kLabels)->set_value_bound(50);
    REQUIRE(checkPlan(mlp).ok());
    Executor executor;
    REQUIRE(executor.load(mlp, 0, communicator).ok());
    REQUIRE(executor.initialize().ok());
    std::string error = executor.step(0, nullptr).error;
    CHECK(error.find("device 0 instruction 3 (nn.softmax_cross_entropy): ") ==
          0);
  }
  SECTION("a collective over more devices than one process has") {
    Tensor data(DType::F32, {2});
    CHECK(communicator.allReduce(data, ReduceKind::Sum, {0, 1})
              .error.find("needs parplan-run under mpirun") !=
          std::string::npos);
    CHECK(!communicator.send(data, 1, 0).ok());
  }
}

TEST_CASE("collectives of one device are copies", "[executor]") {
  LocalCommunicator communicator;
  Tensor in(DType::F32, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    in.set(i, static_cast<double>(i));
  Tensor out(DType::F32, {2, 3});
  REQUIRE(communicator.allGather(in, out, 1, {0}).ok());
  CHECK(out.get(4) == 4);
  Tensor scattered(DType::F32, {2, 3});
  REQUIRE(
      communicator.reduceScatter(in, scattered, 0, ReduceKind::Sum, {0}).ok());
  CHECK(scattered.get(5) == 5);
  Tensor swapped(DType::F32, {2, 3});
  REQUIRE(communicator.allToAll(in, swapped, 0, 1, {0}).ok());
  CHECK(swapped.get(3) == 3);
  REQUIRE(communicator.broadcast(in, 0, {0}).ok());
  REQUIRE(communicator.allReduce(in, ReduceKind::Max, {0}).ok());
  CHECK(in.get(2) == 2);
}

TEST_CASE("parts along an inner axis round trip", "[executor]") {
  // 2x5x3 cut along the middle axis into 3 balanced parts: 2, 2, 1.
  Tensor tensor(DType::F64, {2, 5, 3});
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, static_cast<double>(i));
  auto parts = cutParts(tensor, 1, 3);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].size() == 2 * 2 * 3 * sizeof(double));
  CHECK(parts[2].size() == 2 * 1 * 3 * sizeof(double));
  // Part 1 holds rows 2 and 3 of the middle axis: elements 6..11, 21..26.
  Tensor part(DType::F64, {2, 2, 3});
  std::memcpy(part.bytes(), parts[1].data(), parts[1].size());
  CHECK(part.get(0) == 6);
  CHECK(part.get(6) == 21);
  Tensor rebuilt(DType::F64, {2, 5, 3});
  for (int64_t p = 0; p < 3; ++p)
    REQUIRE(placePart(rebuilt, 1, 3, p, parts[p]).ok());
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    CHECK(rebuilt.get(i) == tensor.get(i));
  CHECK(!placePart(rebuilt, 1, 3, 0, parts[2]).ok());
}

TEST_CASE("checkOutputs compares OUTPUT blocks with their tensor's values",
          "[executor]") {
  // x and y (4x3) are parameters; the OUTPUT named x gets a copy of x
  // (right) or of y (wrong).
  auto mismatchesAfterCopying = [](int64_t from) {
    plan::Plan plan;
    plan.add_mesh_shape(1);
    plan::Program &program = *plan.add_programs();
    program.add_devices(0);
    program.set_loss(-1);
    addBuffer(program, "x", {4, 3}, plan::Buffer::PARAMETER);
    addBuffer(program, "y", {4, 3}, plan::Buffer::PARAMETER);
    addBuffer(program, "x", {4, 3}, plan::Buffer::OUTPUT);
    plan::Kernel *copy = addKernel(program, "slice", {from}, {2});
    using Values = std::vector<int64_t>;
    for (auto [name, values] :
         {std::pair{"starts", Values{0, 0}}, std::pair{"sizes", Values{4, 3}},
          std::pair{"steps", Values{1, 1}}}) {
      plan::Attr *attr = copy->add_attrs();
      attr->set_name(name);
      for (int64_t value : values)
        attr->mutable_ints_value()->add_values(value);
    }
    REQUIRE(checkPlan(plan).error == "");
    LocalCommunicator communicator;
    Executor executor;
    REQUIRE(executor.load(plan, 0, communicator).ok());
    REQUIRE(executor.initialize().ok());
    std::vector<Executor::OutputCheck> checks;
    // Before the step the OUTPUT holds zeros: every element differs.
    REQUIRE(executor.checkOutputs(checks).ok());
    REQUIRE(checks.size() == 1);
    CHECK(checks[0].mismatches == 12);
    REQUIRE(executor.step(0, nullptr).ok());
    REQUIRE(executor.checkOutputs(checks).ok());
    REQUIRE(checks.size() == 1);
    CHECK(checks[0].name == "x");
    CHECK(checks[0].elements == 12);
    CHECK(checks[0].offsets == std::vector<int64_t>{0, 0});
    return checks[0].mismatches;
  };
  CHECK(mismatchesAfterCopying(0) == 0);
  CHECK(mismatchesAfterCopying(1) == 12);
}

namespace {

/// A plan of `microBatches` micro-batches of 2 rows of x (2x3): each adds
/// its block to an accumulator; once, after them, the loss is the sum of
/// the accumulator.
plan::Plan accumulatingPlan(int64_t microBatches) {
  plan::Plan plan;
  plan.add_mesh_shape(1);
  plan.set_micro_batches(microBatches);
  plan::Program &program = *plan.add_programs();
  program.add_devices(0);
  addBuffer(program, "x", {2, 3}, plan::Buffer::INPUT);
  addBuffer(program, "sum", {2, 3}, plan::Buffer::ACCUMULATOR);
  addBuffer(program, "total", {});
  addKernel(program, "accumulate", {1, 0}, {1});
  plan::Kernel *total = addKernel(program, "reduce_sum", {1}, {2});
  plan::Attr *keepdims = total->add_attrs();
  keepdims->set_name("keepdims");
  keepdims->set_bool_value(false);
  program.set_update_begin(1);
  program.set_loss(2);
  return plan;
}

} // namespace

TEST_CASE("micro-batches slice the batch and accumulate", "[executor]") {
  const int64_t microBatches = 3;
  plan::Plan plan = accumulatingPlan(microBatches);
  REQUIRE(checkPlan(plan).error == "");
  LocalCommunicator communicator;
  Executor executor;
  REQUIRE(executor.load(plan, 0, communicator).ok());
  REQUIRE(executor.initialize().ok());
  for (int64_t step = 0; step < 2; ++step) {
    // The step's whole batch: 3 micro-batches of 2 rows.
    Tensor batch(DType::F32, {6, 3});
    REQUIRE(fillBlock(batch, batch.shape(), {0, 0}, executor.seed(),
                      batchName("x", step), 1, 0)
                .ok());
    double loss = 0;
    REQUIRE(executor.step(step, &loss).ok());
    // Row i of the sum adds rows i, 2 + i and 4 + i, once each: every
    // micro-batch read its own slice, and the sum started from zero.
    Tensor sum = executor.buffer(1);
    double total = 0;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double expected = 0;
        for (int64_t k = 0; k < microBatches; ++k)
          expected += batch.get((k * 2 + i) * 3 + j);
        CHECK(sum.get(i * 3 + j) == Approx(expected).epsilon(1e-6));
        total += expected;
      }
    CHECK(loss == Approx(total).epsilon(1e-6));
  }
}

TEST_CASE("what precedes forward_begin runs once, before the micro-batches",
          "[executor]") {
  // A copy of the parameter w made before the micro-batches (an
  // accumulator added to once: run per micro-batch, it would grow), which
  // every micro-batch reads: sum = sum over micro-batches of x_k * w.
  const int64_t microBatches = 3;
  plan::Plan plan;
  plan.add_mesh_shape(1);
  plan.set_micro_batches(microBatches);
  plan::Program &program = *plan.add_programs();
  program.add_devices(0);
  addBuffer(program, "w", {2, 3}, plan::Buffer::PARAMETER);      // 0
  addBuffer(program, "copy", {2, 3}, plan::Buffer::ACCUMULATOR); // 1
  addBuffer(program, "x", {2, 3}, plan::Buffer::INPUT);          // 2
  addBuffer(program, "y", {2, 3});                               // 3
  addBuffer(program, "sum", {2, 3}, plan::Buffer::ACCUMULATOR);  // 4
  addBuffer(program, "total", {});                               // 5
  addKernel(program, "accumulate", {1, 0}, {1});
  program.set_forward_begin(1);
  addKernel(program, "mul", {2, 1}, {3});
  addKernel(program, "accumulate", {4, 3}, {4});
  program.set_update_begin(3);
  plan::Kernel *total = addKernel(program, "reduce_sum", {4}, {5});
  plan::Attr *keepdims = total->add_attrs();
  keepdims->set_name("keepdims");
  keepdims->set_bool_value(false);
  program.set_loss(5);
  REQUIRE(checkPlan(plan).error == "");
  for (const char *schedule : {"", "1f1b"}) {
    plan.set_schedule(schedule);
    LocalCommunicator communicator;
    Executor executor;
    REQUIRE(executor.load(plan, 0, communicator).ok());
    REQUIRE(executor.initialize().ok());
    Tensor w = executor.buffer(0);
    Tensor batch(DType::F32, {6, 3});
    REQUIRE(fillBlock(batch, batch.shape(), {0, 0}, executor.seed(),
                      batchName("x", 0), 1, 0)
                .ok());
    double loss = 0;
    REQUIRE(executor.step(0, &loss).ok());
    Tensor sum = executor.buffer(4);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double expected = 0;
        for (int64_t k = 0; k < microBatches; ++k)
          expected += batch.get((k * 2 + i) * 3 + j) * w.get(i * 3 + j);
        CHECK(sum.get(i * 3 + j) == Approx(expected).epsilon(1e-6));
      }
    CHECK(executor.buffer(1).get(0) == Approx(w.get(0)));
  }
}

namespace {

/// Micro-batches whose backward reads what their forward computed (h = x
/// *namespace {

/// Micro-batches whose backward reads what their forward computed (h = x *
/// x) and the batch (x): y = h * x, summed; the loss is the sum of the
/// cubes of the whole batch's elements.
plan::Plan scheduledPlan(int64_t microBatches, const std::string &schedule) {
  plan::Plan plan;
  plan.add_mesh_shape(1);
  plan.set_micro_batches(microBatches);
  plan.set_schedule(schedule);
  plan::Program &program = *plan.add_programs();
  program.add_devices(0);
  addBuffer(program, "x", {2, 3}, plan::Buffer::INPUT);
  addBuffer(program, "h", {2, 3});
  addBuffer(program, "y", {2, 3});
  addBuffer(program, "sum", {2, 3}, plan::Buffer::ACCUMULATOR);
  addBuffer(program, "total", {});
  addKernel(program, "mul", {0, 0}, {1});
  program.set_backward_begin(1);
  addKernel(program, "mul", {1, 0}, {2});
  addKernel(program, "accumulate", {3, 2}, {3});
  program.set_update_begin(3);
  plan::Kernel *total = addKernel(program, "reduce_sum", {3}, {4});
  plan::Attr *keepdims = total->add_attrs();
  keepdims->set_name("keepdims");
  keepdims->set_bool_value(false);
  program.set_loss(4);
  return plan;
}

/// The sum of x^3 over step 0's synthetic batch of `microBatches` slices
/// of x (2 x 3 each).
double sumOfCubes(int64_t microBatches) {
  Tensor batch(DType::F32, {2 * microBatches, 3});
  REQUIRE(
      fillBlock(batch, batch.shape(), {0, 0}, 0, batchName("x", 0), 1, 0).ok());
  double cubes = 0;
  for (int64_t i = 0; i < batch.numElements(); ++i)
    cubes += batch.get(i) * batch.get(i) * batch.get(i);
  return cubes;
}

/// One stage of two model chunks, by the interleaved schedule: chunk 0's
/// forward a = x * x, chunk 1's b = x * x; the backward goes back through
/// them, chunk 1's adding b * x to the sum and chunk 0's a * x: the loss
/// is twice the sum of x^3 over the batch.
plan::Plan chunkedPlan(int64_t microBatches) {
  plan::Plan plan;
  plan.add_mesh_shape(1);
  plan.set_micro_batches(microBatches);
  plan.set_schedule("interleaved");
  plan::Program &program = *plan.add_programs();
  program.add_devices(0);
  addBuffer(program, "x", {2, 3}, plan::Buffer::INPUT);         // 0
  addBuffer(program, "a", {2, 3});                              // 1
  addBuffer(program, "b", {2, 3});                              // 2
  addBuffer(program, "c", {2, 3});                              // 3
  addBuffer(program, "d", {2, 3});                              // 4
  addBuffer(program, "sum", {2, 3}, plan::Buffer::ACCUMULATOR); // 5
  addBuffer(program, "total", {});                              // 6
  addKernel(program, "mul", {0, 0}, {1});
  addKernel(program, "mul", {0, 0}, {2});
  program.set_backward_begin(2);
  addKernel(program, "mul", {2, 0}, {3});
  addKernel(program, "accumulate", {5, 3}, {5});
  addKernel(program, "mul", {1, 0}, {4});
  addKernel(program, "accumulate", {5, 4}, {5});
  program.set_update_begin(6);
  for (int64_t begin : {0, 1})
    program.add_forward_chunks(begin);
  for (int64_t begin : {4, 2})
    program.add_backward_chunks(begin);
  plan::Kernel *total = addKernel(program, "reduce_sum", {5}, {6});
  plan::Attr *keepdims = total->add_attrs();
  keepdims->set_name("keepdims");
  keepdims->set_bool_value(false);
  program.set_loss(6);
  return plan;
}

} // namespace

TEST_CASE("interleaved runs each chunk's forward and backward apart",
          "[executor]") {
  const int64_t microBatches = 4;
  double cubes = sumOfCubes(microBatches);
  plan::Plan plan = chunkedPlan(microBatches);
  REQUIRE(checkPlan(plan).error == "");
  ChunkRanges ranges = chunkRanges(plan.programs(0), 6);
  CHECK(ranges.forward ==
        std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}});
  CHECK(ranges.backward ==
        std::vector<std::pair<int64_t, int64_t>>{{4, 6}, {2, 4}});
  LocalCommunicator communicator;
  Executor executor;
  REQUIRE(executor.load(plan, 0, communicator).ok());
  CHECK(executor.schedule() == "interleaved");
  executor.setSeed(0);
  REQUIRE(executor.initialize().ok());
  double loss = 0;
  REQUIRE(executor.step(0, &loss).ok());
  CHECK(loss == Approx(2 * cubes).epsilon(1e-5));

  SECTION("checkPlan names what is wrong with chunks") {
    auto errorAfter = [&](auto &&edit) {
      plan::Plan broken = chunkedPlan(microBatches);
      edit(broken);
      return checkPlan(broken).error;
    };
    CHECK(errorAfter([](plan::Plan &p) {
            p.mutable_programs(0)->mutable_backward_chunks()->RemoveLast();
          }) == "program 0 marks 2 forward and 1 backward chunks; a program "
                "of chunks marks V > 1 of each");
    CHECK(errorAfter([](plan::Plan &p) {
            p.mutable_programs(0)->set_backward_chunks(0, 2);
            p.mutable_programs(0)->set_backward_chunks(1, 4);
          }) == "program 0 forward_chunks [0, 1] and backward_chunks [2, 4] "
                "are not the forward's chunks in order from 0 and the "
                "backward's in reverse from backward_begin 2 to update_begin "
                "6");
    // Chunk 1's forward reading what chunk 0's writes.
    CHECK(errorAfter([](plan::Plan &p) {
            p.mutable_programs(0)
                ->mutable_instructions(1)
                ->mutable_kernel()
                ->set_operands(0, 1);
          }) == "program 0 instruction 1 of chunk 1 uses buffer 1, which "
                "chunk 0 uses too: a schedule runs a micro-batch's chunks at "
                "different times, so a temporary is one chunk's");
    // Chunk 0's backward writing what chunk 1's backward wrote.
    CHECK(errorAfter([](plan::Plan &p) {
            p.mutable_programs(0)
                ->mutable_instructions(4)
                ->mutable_kernel()
                ->set_results(0, 3);
          }) == "program 0 instruction 2 of chunk 1 uses buffer 3, which "
                "chunk 0 uses too: a schedule runs a micro-batch's chunks at "
                "different times, so a temporary is one chunk's");
    CHECK(errorAfter([](plan::Plan &p) { p.set_schedule("1f1b"); }) ==
          "plan schedule '1f1b' runs stages of one model chunk, but they "
          "hold 2: use interleaved");
  }
}

TEST_CASE("a schedule runs forwards ahead and keeps what backwards read",
          "[executor]") {
  // On one stage, gpipe runs every forward before the backwards (last
  // micro-batch first): each backward must see its own micro-batch's h and
  // x, not the last forward's.
  const int64_t microBatches = 3;
  double cubes = sumOfCubes(microBatches);
  for (const std::string &schedule :
       {std::string(), std::string("gpipe"), std::string("1f1b"),
        std::string("eager-1f1b")}) {
    CAPTURE(schedule);
    plan::Plan plan = scheduledPlan(microBatches, schedule);
    REQUIRE(checkPlan(plan).error == "");
    LocalCommunicator communicator;
    Executor executor;
    REQUIRE(executor.load(plan, 0, communicator).ok());
    CHECK(executor.schedule() == (schedule.empty() ? "sequential" : schedule));
    executor.setSeed(0);
    REQUIRE(executor.initialize().ok());
    double loss = 0;
    REQUIRE(executor.step(0, &loss).ok());
    CHECK(loss == Approx(cubes).epsilon(1e-5));
  }
}

TEST_CASE("the activations a schedule keeps aside", "[executor]") {
  // The backward reads x (an input) and h (a forward result), 24 bytes
  // each: GPipe on one stage holds all 3 micro-batches in flight, 2 of them
  // aside; 1F1B holds one, in its buffers.
  CHECK(keptActivationBytes(scheduledPlan(3, "gpipe"),
                            scheduledPlan(3, "gpipe").programs(0)) == 2 * 48);
  CHECK(keptActivationBytes(scheduledPlan(3, "1f1b"),
                            scheduledPlan(3, "1f1b").programs(0)) == 0);
  CHECK(keptActivationBytes(scheduledPlan(3, ""),
                            scheduledPlan(3, "").programs(0)) == 0);
  // Interleaved on one stage of two chunks, 4 micro-batches: each chunk's
  // backward reads x and its own product.
  plan::Plan chunked = chunkedPlan(4);
  std::vector<std::vector<int64_t>> kept = backwardReadsOfForward(
      chunked.programs(0), chunkRanges(chunked.programs(0), 6));
  CHECK(kept == std::vector<std::vector<int64_t>>{{0, 1}, {0, 2}});
  CHECK(keptActivationBytes(chunked, chunked.programs(0)) > 0);
}

TEST_CASE("checkPlan rejects schedules the executor cannot run", "[executor]") {
  plan::Plan plan = scheduledPlan(2, "1f1b");
  REQUIRE(checkPlan(plan).error == "");
  SECTION("an unknown schedule") {
    plan.set_schedule("zigzag");
    CHECK(checkPlan(plan).error ==
          "plan schedule 'zigzag' is unknown to the executor; it runs "
          "sequential, gpipe, 1f1b, eager-1f1b, interleaved");
  }
  SECTION("interleaved on stages of one chunk") {
    plan.set_schedule("interleaved");
    CHECK(checkPlan(plan).error ==
          "plan schedule 'interleaved' needs stages of several model "
          "chunks");
  }
  SECTION("a backward beginning after the micro-batch") {
    plan.mutable_programs(0)->set_backward_begin(4);
    CHECK(checkPlan(plan).error ==
          "program 0 backward_begin 4 is not an instruction index of the "
          "micro-batch (0 to 3)");
  }
}

TEST_CASE("checkPlan rejects malformed micro-batches", "[executor]") {
  plan::Plan plan = accumulatingPlan(2);
  SECTION("a negative count") {
    plan.set_micro_batches(-1);
    CHECK(checkPlan(plan).error ==
          "plan micro_batches -1 is outside 0 to 16777216");
  }
  SECTION("update_begin past the instructions") {
    plan.mutable_programs(0)->set_update_begin(3);
    CHECK(checkPlan(plan).error ==
          "program 0 update_begin 3 is not an instruction index (0 to 2)");
  }
  SECTION("forward_begin past the micro-batch's forward") {
    plan.mutable_programs(0)->set_forward_begin(2);
    CHECK(checkPlan(plan).error ==
          "program 0 forward_begin 2 is not an instruction index before the "
          "backward (0 to 1)");
  }
  SECTION("forward_begin without micro-batches") {
    plan.set_micro_batches(1);
    plan.mutable_programs(0)->set_forward_begin(1);
    CHECK(checkPlan(plan).error ==
          "program 0 forward_begin 1 without micro-batches (a step of one "
          "runs everything once)");
  }
  SECTION("an input with no dimension to slice") {
    plan::Program &program = *plan.mutable_programs(0);
    addBuffer(program, "scale", {}, plan::Buffer::INPUT);
    CHECK(checkPlan(plan).error ==
          "program 0 buffer 3 'scale' is an input of logical shape [], which "
          "2 micro-batches cannot slice along dimension 0");
  }
  SECTION("an accumulator that claims a block") {
    plan.mutable_programs(0)->mutable_buffers(1)->add_splits(-1);
    CHECK(checkPlan(plan).error ==
          "program 0 buffer 1 'sum' is an accumulator with splits or a "
          "logical_shape; only blocks of named tensors and constants have "
          "them");
  }
}
