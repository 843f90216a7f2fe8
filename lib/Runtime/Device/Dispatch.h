//===- Dispatch.h - an nn op's device kernel, by name -----------*- C++ -*-===//
//
// launchDeviceKernel is the device counterpart of runKernel (KernelCall.h):
// it takes the op's attributes as resolveKernelAttrs returns them (every
// attribute present, defaults filled, axes normalized), so that the device
// and the reference kernels cannot disagree on a default, and launches the
// op's functors through a launcher (DeviceTensor.h).
//
// Each group header (Elementwise.h, Movement.h, Optimizers.h,
// Normalization.h, Gather.h, Sampling.h, Linear.h) has one entry point of
// the form
//
//   template <class L>
//   bool launchXxx(L &launcher, KernelId op, const AttrMap &attrs,
//                  const std::vector<const DeviceTensor *> &operands,
//                  const std::vector<DeviceTensor *> &results,
//                  Launch &launch, Status &status);
//
// which returns false when `op` is not in its group, and otherwise sets
// `launch` (Done, or Unsupported for an element type or rank it has no
// kernel for, launching nothing) and `status` (a failure only for what
// the reference kernel would also reject). Operands follow runKernel's
// conventions: ODS order, nullptr for an absent optional operand; results
// are allocated with their types and shapes.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_DISPATCH_H
#define PARPLAN_LIB_RUNTIME_DEVICE_DISPATCH_H

#include "Device/Attrs.h"
#include "Device/DeviceTensor.h"
#include "Device/Elementwise.h"
#include "Device/Gather.h"
#include "Device/Linear.h"
#include "Device/Movement.h"
#include "Device/Normalization.h"
#include "Device/Optimizers.h"
#include "Device/Sampling.h"
#include "parplan/Runtime/KernelCall.h"

#include <string>
#include <vector>

namespace parplan::runtime::device {

/// Launches nn.<op> on the launcher; Unsupported when no group has a
/// kernel for it (or for these types and ranks), launching nothing.
template <class L>
Launch launchDeviceKernel(L &launcher, KernelId op, const AttrMap &attrs,
                          const std::vector<const DeviceTensor *> &operands,
                          const std::vector<DeviceTensor *> &results,
                          Status &status) {
  Launch launch = Launch::Unsupported;
  status = Status::success();
  if (launchElementwise(launcher, op, attrs, operands, results, launch,
                        status) ||
      launchMovement(launcher, op, attrs, operands, results, launch, status) ||
      launchOptimizers(launcher, op, attrs, operands, results, launch,
                       status) ||
      launchNormalization(launcher, op, attrs, operands, results, launch,
                          status) ||
      launchGather(launcher, op, attrs, operands, results, launch, status) ||
      launchSampling(launcher, op, attrs, operands, results, launch, status) ||
      launchLinear(launcher, op, attrs, operands, results, launch, status))
    return launch;
  return Launch::Unsupported;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_DISPATCH_H
