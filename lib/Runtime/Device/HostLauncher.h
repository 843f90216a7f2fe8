//===- HostLauncher.h - run device kernels on the host ----------*- C++ -*-===//
//
// The launcher of DeviceTensor.h on host memory: forEach is a loop, gemm is
// a loop nest with cuBLAS's meanings (GemmCall.h). The tests use it to run
// the CUDA backend's kernels and dispatch on a machine without a GPU.
// ProbeLauncher runs nothing: dispatching with it answers whether an op has
// a device kernel for these operands, without touching memory.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_HOSTLAUNCHER_H
#define PARPLAN_LIB_RUNTIME_DEVICE_HOSTLAUNCHER_H

#include "Device/DeviceTensor.h"
#include "Device/GemmCall.h"

#include <vector>

namespace parplan::runtime::device {

class HostLauncher {
public:
  template <typename F> void forEach(int64_t n, const F &f) {
    for (int64_t i = 0; i < n; ++i)
      f(i);
  }
  template <typename F> void forEachRow(int64_t rows, int64_t, const F &f) {
    for (int64_t row = 0; row < rows; ++row)
      f(row, SingleLane{});
  }
  /// 1: a loop gains nothing from splitting a sum into partial sums. The
  /// tests set more to run the split paths a GPU takes.
  int64_t parallelism() const { return parallelism_; }
  void setParallelism(int64_t parallelism) { parallelism_ = parallelism; }
  void *workspace(size_t bytes) {
    scratch_.assign((bytes + sizeof(double) - 1) / sizeof(double), 0.0);
    return scratch_.data();
  }
  int *errorSlot() { return &error_; }
  int errorCode() const { return 1; }
  /// The code a kernel wrote, 0 when none; cleared by the call.
  int takeError() {
    int error = error_;
    error_ = 0;
    return error;
  }

  Status gemm(const GemmCall &call) {
    bool ok = dispatchFloat(call.type, [&](auto traits) {
      using T = decltype(traits);
      using Acc = typename T::Compute;
      auto *a = static_cast<const typename T::Storage *>(call.a);
      auto *b = static_cast<const typename T::Storage *>(call.b);
      auto *c = static_cast<typename T::Storage *>(call.c);
      for (int64_t batch = 0; batch < call.batch; ++batch)
        for (int64_t j = 0; j < call.n; ++j)
          for (int64_t i = 0; i < call.m; ++i) {
            Acc sum = 0;
            for (int64_t l = 0; l < call.k; ++l) {
              int64_t ai = call.transA ? l + i * call.lda : i + l * call.lda;
              int64_t bi = call.transB ? j + l * call.ldb : l + j * call.ldb;
              sum += T::load(a, batch * call.strideA + ai) *
                     T::load(b, batch * call.strideB + bi);
            }
            int64_t ci = batch * call.strideC + i + j * call.ldc;
            Acc value = static_cast<Acc>(call.alpha) * sum;
            if (call.beta != 0)
              value += static_cast<Acc>(call.beta) * T::load(c, ci);
            T::store(c, ci, value);
          }
    });
    return ok ? Status::success()
              : Status::failure(std::string("gemm: no product for ") +
                                toString(call.type));
  }

private:
  std::vector<double> scratch_;
  int error_ = 0;
  int64_t parallelism_ = 1;
};

class ProbeLauncher {
public:
  template <typename F> void forEach(int64_t, const F &) {}
  template <typename F> void forEachRow(int64_t, int64_t, const F &) {}
  int64_t parallelism() const { return 1; }
  void *workspace(size_t) { return nullptr; }
  int *errorSlot() { return nullptr; }
  int errorCode() const { return 1; }
  Status gemm(const GemmCall &) { return Status::success(); }
};

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_HOSTLAUNCHER_H
