//===- KernelPreparation.cpp - which kernels run on the device ------------===//

#include "Device/KernelPreparation.h"

#include "Device/Dispatch.h"
#include "Device/HostLauncher.h"

namespace parplan::runtime::device {

Status prepareKernels(const plan::Program &program,
                      const std::vector<AttrMap> &attrs,
                      std::vector<DeviceTensor> &buffers,
                      KernelPreparation &preparation) {
  int64_t count = program.instructions_size();
  preparation.ids.assign(count, KernelId{});
  preparation.resolved.assign(count, AttrMap());
  preparation.onDevice.assign(count, false);
  preparation.referenceCounts.clear();
  ProbeLauncher probe;
  for (int64_t i = 0; i < count; ++i) {
    if (!program.instructions(i).has_kernel())
      continue;
    const plan::Kernel &kernel = program.instructions(i).kernel();
    // Shape-only host tensors: resolution reads types and ranks.
    std::vector<Tensor> shapes;
    shapes.reserve(kernel.operands_size() + kernel.results_size());
    for (int64_t operand : kernel.operands())
      if (operand >= 0)
        shapes.push_back(Tensor::withoutStorage(buffers[operand].dtype,
                                                buffers[operand].shape));
    for (int64_t result : kernel.results())
      shapes.push_back(
          Tensor::withoutStorage(buffers[result].dtype, buffers[result].shape));
    std::vector<const Tensor *> operands;
    std::vector<Tensor *> results;
    std::vector<const DeviceTensor *> deviceOperands;
    std::vector<DeviceTensor *> deviceResults;
    size_t next = 0;
    for (int64_t operand : kernel.operands()) {
      operands.push_back(operand < 0 ? nullptr : &shapes[next++]);
      deviceOperands.push_back(operand < 0 ? nullptr : &buffers[operand]);
    }
    for (int64_t result : kernel.results()) {
      results.push_back(&shapes[next++]);
      deviceResults.push_back(&buffers[result]);
    }
    std::optional<KernelId> id = lookupKernelId(kernel.op());
    if (!id)
      return Status::failure("instruction " + std::to_string(i) +
                             ": no kernel for nn." + kernel.op());
    preparation.ids[i] = *id;
    if (Status status = resolveKernelAttrs(*id, attrs[i], operands, results,
                                           preparation.resolved[i]);
        !status.ok())
      return Status::failure("instruction " + std::to_string(i) + ": " +
                             status.error);
    Status status;
    preparation.onDevice[i] =
        launchDeviceKernel(probe, *id, preparation.resolved[i], deviceOperands,
                           deviceResults, status) == Launch::Done &&
        status.ok();
    if (!preparation.onDevice[i])
      ++preparation.referenceCounts[kernel.op()];
  }
  return Status::success();
}

} // namespace parplan::runtime::device
