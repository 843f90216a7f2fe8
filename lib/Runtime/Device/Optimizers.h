//===- Optimizers.h - optimizer update kernels for any device ---*- C++ -*-===//
//
// The device kernels of sgd_update, momentum_update and adam_update: one
// thread updates one parameter element and its optimizer state, with the
// formulas of GradKernels.cpp (PyTorch's). Each thread reads all of its
// element's inputs before writing any output, so an output may alias an
// input (state updated in place), as the reference allows.
//
// Adam's step count t is a tensor on the device, not an attribute, so the
// host cannot compute the bias corrections 1 - beta^t: a one-thread kernel
// computes them in double from t into the launcher's workspace (checking
// t >= 1, which the reference reports as an error), and the element kernel
// reads them from there.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_OPTIMIZERS_H
#define PARPLAN_LIB_RUNTIME_DEVICE_OPTIMIZERS_H

#include "Device/Attrs.h"
#include "Device/DeviceTensor.h"
#include "parplan/Runtime/KernelCall.h"

#include <cmath>
#include <string>
#include <vector>

namespace parplan::runtime::device {

/// g = grad / gradScale + weightDecay * param; param' = param - lr * g.
template <typename T> struct SgdFunctor {
  using S = typename T::Storage;
  using C = typename T::Compute;
  struct Values {
    C param, grad;
  };
  const S *param, *grad;
  S *newParam;
  C lr, weightDecay, gradScale;
  PARPLAN_HD Values load(int64_t i) const {
    return {T::load(param, i), T::load(grad, i)};
  }
  PARPLAN_HD void store(int64_t i, Values values) const {
    C g = values.grad / gradScale + weightDecay * values.param;
    T::store(newParam, i, values.param - lr * g);
  }
};

/// g as for SGD; v' = momentum * v + g; d = nesterov ? g + momentum * v' : v';
/// param' = param - lr * d.
template <typename T> struct MomentumFunctor {
  using S = typename T::Storage;
  using C = typename T::Compute;
  struct Values {
    C param, grad, velocity;
  };
  const S *param, *grad, *velocity;
  S *newParam, *newVelocity;
  C lr, momentum, weightDecay, gradScale;
  bool nesterov;
  PARPLAN_HD Values load(int64_t i) const {
    return {T::load(param, i), T::load(grad, i), T::load(velocity, i)};
  }
  PARPLAN_HD void store(int64_t i, Values values) const {
    C g = values.grad / gradScale + weightDecay * values.param;
    C v = momentum * values.velocity + g;
    C direction = nesterov ? g + momentum * v : v;
    T::store(newParam, i, values.param - lr * direction);
    T::store(newVelocity, i, v);
  }
};

/// Adam's scalars in the workspace: the bias corrections 1 - beta1^t and
/// 1 - beta2^t, and whether t was valid.
enum AdamScalar { kCorrection1, kCorrection2, kStepValid, kNumAdamScalars };

/// One thread: reads t from the step tensor (element type St) and fills the
/// scalars, or writes the error code for t < 1 (or NaN).
template <typename St> struct AdamStepFunctor {
  const typename St::Storage *step;
  double beta1, beta2;
  double *scalars;
  int *errorSlot;
  int errorCode;
  PARPLAN_HD void operator()(int64_t) const {
    double t = static_cast<double>(St::load(step, 0));
    if (!(t >= 1)) {
      *errorSlot = errorCode;
      scalars[kStepValid] = 0;
      return;
    }
    scalars[kCorrection1] = 1 - hdPow(beta1, t);
    scalars[kCorrection2] = 1 - hdPow(beta2, t);
    scalars[kStepValid] = 1;
  }
};

/// g = grad / gradScale + coupledDecay * param;
/// m' = b1 m + (1 - b1) g; v' = b2 v + (1 - b2) g^2;
/// param' = param * decoupledFactor
///          - lr * (m' / correction1) / (sqrt(v' / correction2) + epsilon).
/// Leaves every output untouched when t was invalid, as the reference does.
template <typename T> struct AdamFunctor {
  using S = typename T::Storage;
  using C = typename T::Compute;
  const S *param, *grad, *m, *v;
  S *newParam, *newM, *newV;
  const double *scalars;
  C lr, beta1, oneMinusBeta1, beta2, oneMinusBeta2, epsilon, coupledDecay,
      decoupledFactor, gradScale;
  struct Values {
    C param, grad, m, v;
  };
  PARPLAN_HD Values load(int64_t i) const {
    return {T::load(param, i), T::load(grad, i), T::load(m, i), T::load(v, i)};
  }
  PARPLAN_HD void store(int64_t i, Values values) const {
    if (scalars[kStepValid] == 0)
      return;
    C correction1 = static_cast<C>(scalars[kCorrection1]);
    C correction2 = static_cast<C>(scalars[kCorrection2]);
    C p = values.param;
    C g = values.grad / gradScale + coupledDecay * p;
    C m1 = beta1 * values.m + oneMinusBeta1 * g;
    C v1 = beta2 * values.v + oneMinusBeta2 * g * g;
    C update = (m1 / correction1) / (hdSqrt(v1 / correction2) + epsilon);
    T::store(newParam, i, p * decoupledFactor - lr * update);
    T::store(newM, i, m1);
    T::store(newV, i, v1);
  }
};

namespace optimizers {

/// The reference's checks that shapes and the loss scale allow an update;
/// false (with `status` set) when they do not.
inline bool checkUpdate(KernelId op,
                        const std::vector<const DeviceTensor *> &tensors,
                        double gradScale, Status &status) {
  for (const DeviceTensor *tensor : tensors)
    if (tensor->shape != tensors[0]->shape) {
      status =
          failure(op, toString(tensor->shape) + " is not the parameter's " +
                          toString(tensors[0]->shape));
      return false;
    }
  if (gradScale == 0 || !std::isfinite(gradScale)) {
    status = failure(op, "grad_scale must be finite and non-zero, got " +
                             std::to_string(gradScale));
    return false;
  }
  return true;
}

inline bool oneFloatType(const std::vector<const DeviceTensor *> &tensors) {
  for (const DeviceTensor *tensor : tensors)
    if (tensor->dtype != tensors[0]->dtype || !isFloat(tensor->dtype))
      return false;
  return true;
}

template <class L>
Launch adam(L &launcher, const AttrMap &attrs,
            const std::vector<const DeviceTensor *> &operands,
            const std::vector<DeviceTensor *> &results, Status &status) {
  const DeviceTensor &param = *operands[0], &step = *operands[4];
  std::vector<const DeviceTensor *> tensors = {
      operands[0], operands[1], operands[2], operands[3],
      results[0],  results[1],  results[2]};
  if (!oneFloatType(tensors) || !isFloat(step.dtype))
    return Launch::Unsupported;
  double lr = attrFloat(attrs, "lr"), beta1 = attrFloat(attrs, "beta1"),
         beta2 = attrFloat(attrs, "beta2"),
         epsilon = attrFloat(attrs, "epsilon"),
         weightDecay = attrFloat(attrs, "weight_decay"),
         gradScale = attrFloat(attrs, "grad_scale");
  bool decoupled = attrBool(attrs, "decoupled");
  if (!checkUpdate(KernelId::AdamUpdate, tensors, gradScale, status))
    return Launch::Done;
  if (step.numElements() != 1) {
    status =
        failure(KernelId::AdamUpdate, "step must hold one element, has shape " +
                                          toString(step.shape));
    return Launch::Done;
  }

  auto *scalars = static_cast<double *>(
      launcher.workspace(kNumAdamScalars * sizeof(double)));
  if (!scalars) // the launcher has recorded why (or it runs nothing)
    return Launch::Done;
  dispatchFloat(step.dtype, [&](auto stepTraits) {
    using St = decltype(stepTraits);
    launcher.forEach(
        1, AdamStepFunctor<St>{step.as<const typename St::Storage>(), beta1,
                               beta2, scalars, launcher.errorSlot(),
                               launcher.errorCode()});
  });
  dispatchFloat(param.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    launcher.forEachStaged(
        param.numElements(),
        AdamFunctor<T>{operands[0]->as<const S>(), operands[1]->as<const S>(),
                       operands[2]->as<const S>(), operands[3]->as<const S>(),
                       results[0]->as<S>(), results[1]->as<S>(),
                       results[2]->as<S>(), scalars, static_cast<C>(lr),
                       static_cast<C>(beta1), static_cast<C>(1 - beta1),
                       static_cast<C>(beta2), static_cast<C>(1 - beta2),
                       static_cast<C>(epsilon),
                       static_cast<C>(decoupled ? 0.0 : weightDecay),
                       static_cast<C>(decoupled ? 1 - lr * weightDecay : 1.0),
                       static_cast<C>(gradScale)});
  });
  return Launch::Done;
}

} // namespace optimizers

/// The optimizer updates (Dispatch.h): parameter, gradient, state and
/// results of one float type (adam's step of any float type), any rank.
template <class L>
bool launchOptimizers(L &launcher, KernelId op, const AttrMap &attrs,
                      const std::vector<const DeviceTensor *> &operands,
                      const std::vector<DeviceTensor *> &results,
                      Launch &launch, Status &status) {
  using optimizers::checkUpdate;
  using optimizers::oneFloatType;
  if (op != KernelId::AdamUpdate && op != KernelId::SgdUpdate &&
      op != KernelId::MomentumUpdate)
    return false;
  status = Status::success();
  launch = Launch::Done;
  if (op == KernelId::AdamUpdate) {
    launch = optimizers::adam(launcher, attrs, operands, results, status);
    return true;
  }

  std::vector<const DeviceTensor *> tensors(operands.begin(), operands.end());
  tensors.insert(tensors.end(), results.begin(), results.end());
  if (!oneFloatType(tensors)) {
    launch = Launch::Unsupported;
    return true;
  }
  double lr = attrFloat(attrs, "lr"),
         weightDecay = attrFloat(attrs, "weight_decay"),
         gradScale = attrFloat(attrs, "grad_scale");
  if (!checkUpdate(op, tensors, gradScale, status))
    return true;
  const DeviceTensor &param = *operands[0], &grad = *operands[1];
  dispatchFloat(param.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    if (op == KernelId::SgdUpdate) {
      launcher.forEachStaged(
          param.numElements(),
          SgdFunctor<T>{param.as<const S>(), grad.as<const S>(),
                        results[0]->as<S>(), static_cast<C>(lr),
                        static_cast<C>(weightDecay),
                        static_cast<C>(gradScale)});
      return;
    }
    double momentum = attrFloat(attrs, "momentum");
    launcher.forEachStaged(
        param.numElements(),
        MomentumFunctor<T>{
            param.as<const S>(), grad.as<const S>(), operands[2]->as<const S>(),
            results[0]->as<S>(), results[1]->as<S>(), static_cast<C>(lr),
            static_cast<C>(momentum), static_cast<C>(weightDecay),
            static_cast<C>(gradScale), attrBool(attrs, "nesterov")});
  });
  return true;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_OPTIMIZERS_H
