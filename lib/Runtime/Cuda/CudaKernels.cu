//===- CudaKernels.cu - the device kernels, compiled for CUDA -------------===//

#include "Cuda/CudaKernels.h"

#include "Cuda/CudaLauncher.h"
#include "Device/Dispatch.h"
#include "Device/Pack.h"
#include "Device/Synthetic.h"

namespace parplan::runtime::device {

namespace {

CudaLauncher launcherFor(const CudaLaunchContext &context) {
  CudaLauncher launcher(context.stream, context.blas, context.errorSlot,
                        context.errorCode, context.scratch,
                        context.scratchBytes, context.capturing);
  launcher.setTf32(context.tf32);
  return launcher;
}

Status launchStatus(const CudaLauncher &launcher) {
  return launcher.ok() ? Status::success()
                       : Status::failure("CUDA: " + launcher.launchError());
}

} // namespace

Launch launchCudaKernel(const CudaLaunchContext &context, KernelId op,
                        const AttrMap &attrs,
                        const std::vector<const DeviceTensor *> &operands,
                        const std::vector<DeviceTensor *> &results,
                        Status &status) {
  CudaLauncher launcher = launcherFor(context);
  Launch launch =
      launchDeviceKernel(launcher, op, attrs, operands, results, status);
  if (status.ok())
    status = launchStatus(launcher);
  return launch;
}

bool fillSyntheticCuda(const CudaLaunchContext &context,
                       const DeviceTensor &tensor,
                       const std::vector<int64_t> &logicalShape,
                       const std::vector<int64_t> &offsets, uint64_t key,
                       double scale, int64_t integerBound, Status &status) {
  CudaLauncher launcher = launcherFor(context);
  bool filled = fillSynthetic(launcher, tensor, logicalShape, offsets, key,
                              scale, integerBound);
  status = launchStatus(launcher);
  return filled;
}

Status packPartsCuda(const CudaLaunchContext &context,
                     const DeviceTensor &tensor, int64_t axis, int64_t parts,
                     void *packed) {
  CudaLauncher launcher = launcherFor(context);
  packParts(launcher, tensor, axis, parts, packed);
  return launchStatus(launcher);
}

Status unpackPartsCuda(const CudaLaunchContext &context, const void *packed,
                       int64_t axis, int64_t parts, DeviceTensor &tensor) {
  CudaLauncher launcher = launcherFor(context);
  unpackParts(launcher, packed, axis, parts, tensor);
  return launchStatus(launcher);
}

} // namespace parplan::runtime::device
