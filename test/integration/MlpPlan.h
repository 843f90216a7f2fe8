//===- MlpPlan.h - a hand-built data-parallel MLP training plan -*- C++ -*-===//
//
// The plan parplan would compile for one SGD step of a two-layer MLP
// (x[B,3] -> matmul -> relu -> matmul -> 5 classes, mean cross entropy)
// data parallel over `devices` devices: each device takes a balanced block
// of the batch, and the weight gradients and the loss's sum are
// all-reduced. With one device it is the plain training step. Shared by
// the executor's unit test and the mpirun integration test, so both run
// exactly the plan whose losses they compare.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TEST_INTEGRATION_MLPPLAN_H
#define PARPLAN_TEST_INTEGRATION_MLPPLAN_H

#include "parplan/Runtime/PlanFile.h"
#include "parplan/Sbp/Sbp.h"

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace parplan::testing {

inline plan::Buffer *
addBuffer(plan::Program &program, const std::string &name,
          std::vector<int64_t> shape,
          plan::Buffer::Kind kind = plan::Buffer::TEMPORARY,
          plan::DType dtype = plan::F32) {
  plan::Buffer *buffer = program.add_buffers();
  buffer->set_name(name);
  buffer->set_dtype(dtype);
  buffer->set_kind(kind);
  buffer->set_arena_offset(-1);
  for (int64_t size : shape)
    buffer->add_shape(size);
  // Blocks of named tensors say how they are cut from the logical tensor
  // (here: not at all, on a mesh of one axis).
  if (kind != plan::Buffer::TEMPORARY && kind != plan::Buffer::CONSTANT &&
      kind != plan::Buffer::ACCUMULATOR) {
    for (int64_t size : shape)
      buffer->add_logical_shape(size);
    buffer->add_splits(-1);
  }
  return buffer;
}

/// Appends a named mesh of one axis over `devices`, in mesh order.
inline plan::Mesh *addMesh(plan::Plan &plan, const std::string &name,
                           const std::vector<int64_t> &devices) {
  plan::Mesh *mesh = plan.add_meshes();
  mesh->set_name(name);
  mesh->add_shape(static_cast<int64_t>(devices.size()));
  for (int64_t device : devices)
    mesh->add_devices(device);
  return mesh;
}

inline plan::Kernel *addKernel(plan::Program &program, const std::string &op,
                               std::vector<int64_t> operands,
                               std::vector<int64_t> results) {
  return runtime::appendKernel(program, op, operands, results);
}

inline void addAllReduce(plan::Program &program, int64_t buffer) {
  plan::Collective *collective =
      program.add_instructions()->mutable_collective();
  collective->set_kind(plan::Collective::ALL_REDUCE);
  collective->set_group("all");
  collective->set_input(buffer);
  collective->set_output(buffer);
  collective->set_reduce(plan::SUM);
}

/// Buffer indices of every program of buildMlpPlan.
enum MlpBuffer : int64_t {
  kX,
  kLabels,
  kW1,
  kW2,
  kH,
  kA,
  kLogits,
  kLosses,
  kLossSum,
  kLoss,
  kInvBatch,
  kDLosses,
  kDLogits,
  kDW2,
  kDA,
  kDH,
  kDW1,
  kNewW1,
  kNewW2,
};

inline constexpr int64_t kMlpIn = 3, kMlpHidden = 8, kMlpClasses = 5;

inline plan::Plan buildMlpPlan(int64_t devices, int64_t batch, double lr,
                               uint64_t seed = 11) {
  plan::Plan result;
  result.set_model("mlp");
  result.set_seed(seed);
  result.add_mesh_shape(devices);
  plan::Group *all = result.add_groups();
  all->set_name("all");
  for (int64_t d = 0; d < devices; ++d)
    all->add_devices(d);
  for (int64_t d = 0; d < devices; ++d) {
    // A program per device: with a batch the devices do not divide, their
    // blocks differ in extent.
    plan::Program &p = *result.add_programs();
    p.add_devices(d);
    int64_t b = balancedShard(batch, devices, d).size;
    plan::Buffer *x = addBuffer(p, "x", {b, kMlpIn}, plan::Buffer::INPUT);
    x->set_logical_shape(0, batch);
    x->set_splits(0, 0);
    plan::Buffer *labels =
        addBuffer(p, "labels", {b}, plan::Buffer::INPUT, plan::I64);
    labels->set_logical_shape(0, batch);
    labels->set_splits(0, 0);
    labels->set_value_bound(kMlpClasses);
    addBuffer(p, "w1", {kMlpIn, kMlpHidden}, plan::Buffer::PARAMETER);
    addBuffer(p, "w2", {kMlpHidden, kMlpClasses}, plan::Buffer::PARAMETER);
    addBuffer(p, "", {b, kMlpHidden});  // h
    addBuffer(p, "", {b, kMlpHidden});  // a
    addBuffer(p, "", {b, kMlpClasses}); // logits
    addBuffer(p, "", {b});              // losses
    addBuffer(p, "", {});               // loss sum
    addBuffer(p, "", {});               // loss
    plan::Buffer *inv =
        addBuffer(p, "", {}, plan::Buffer::CONSTANT); // 1 / batch
    float invBatch = 1.0f / static_cast<float>(batch);
    std::string bytes(sizeof(float), '\0');
    std::memcpy(bytes.data(), &invBatch, sizeof(float));
    inv->set_data(bytes);
    addBuffer(p, "", {b});                       // dlosses
    addBuffer(p, "", {b, kMlpClasses});          // dlogits
    addBuffer(p, "", {kMlpHidden, kMlpClasses}); // dw2
    addBuffer(p, "", {b, kMlpHidden});           // da
    addBuffer(p, "", {b, kMlpHidden});           // dh
    addBuffer(p, "", {kMlpIn, kMlpHidden});      // dw1
    addBuffer(p, "", {kMlpIn, kMlpHidden});      // w1'
    addBuffer(p, "", {kMlpHidden, kMlpClasses}); // w2'

    // Forward; the loss is the global batch's mean: sum, all-reduce, scale.
    addKernel(p, "matmul", {kX, kW1}, {kH});
    addKernel(p, "relu", {kH}, {kA});
    addKernel(p, "matmul", {kA, kW2}, {kLogits});
    addKernel(p, "softmax_cross_entropy", {kLogits, kLabels}, {kLosses});
    plan::Attr *keepdims =
        addKernel(p, "reduce_sum", {kLosses}, {kLossSum})->add_attrs();
    keepdims->set_name("keepdims");
    keepdims->set_bool_value(false);
    addAllReduce(p, kLossSum);
    addKernel(p, "mul", {kLossSum, kInvBatch}, {kLoss});
    // Backward: d(mean)/d(losses) is 1 / batch everywhere.
    addKernel(p, "expand", {kInvBatch}, {kDLosses});
    addKernel(p, "softmax_cross_entropy_grad", {kDLosses, kLogits, kLabels},
              {kDLogits});
    plan::Kernel *dw2 = addKernel(p, "gemm", {kA, kDLogits, -1}, {kDW2});
    dw2->add_attrs()->set_name("trans_a");
    dw2->mutable_attrs(0)->set_bool_value(true);
    plan::Kernel *da = addKernel(p, "gemm", {kDLogits, kW2, -1}, {kDA});
    da->add_attrs()->set_name("trans_b");
    da->mutable_attrs(0)->set_bool_value(true);
    addKernel(p, "relu_grad", {kDA, kH}, {kDH});
    plan::Kernel *dw1 = addKernel(p, "gemm", {kX, kDH, -1}, {kDW1});
    dw1->add_attrs()->set_name("trans_a");
    dw1->mutable_attrs(0)->set_bool_value(true);
    addAllReduce(p, kDW1);
    addAllReduce(p, kDW2);
    for (auto [param, grad, updated] :
         {std::tuple{kW1, kDW1, kNewW1}, std::tuple{kW2, kDW2, kNewW2}}) {
      plan::Attr *rate =
          addKernel(p, "sgd_update", {param, grad}, {updated})->add_attrs();
      rate->set_name("lr");
      rate->set_float_value(lr);
      plan::Update *update = p.add_updates();
      update->set_target(param);
      update->set_source(updated);
    }
    p.set_loss(kLoss);
  }
  return result;
}

} // namespace parplan::testing

#endif // PARPLAN_TEST_INTEGRATION_MLPPLAN_H
