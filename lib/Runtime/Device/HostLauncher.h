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

#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace parplan::runtime::device {

/// The lanes of a row as threads, for the tests: HostLauncher::setLanes(n)
/// runs each row on n threads that combine as a GPU block's lanes do (every
/// lane writes its value, waits for the others, and reduces the values in
/// lane order), so that the strided loops and combines the GPU runs are
/// checked on the host.
class ThreadLanes {
public:
  /// What the threads of one row share: a slot per lane and a barrier.
  class Shared {
  public:
    explicit Shared(int count) : slots(count), count(count) {}
    std::vector<double> slots;
    void wait() {
      std::unique_lock<std::mutex> lock(mutex);
      int64_t generation = passed;
      if (++waiting == count) {
        waiting = 0;
        ++passed;
        released.notify_all();
        return;
      }
      released.wait(lock, [&] { return passed != generation; });
    }

  private:
    std::mutex mutex;
    std::condition_variable released;
    int count, waiting = 0;
    int64_t passed = 0;
  };

  ThreadLanes(int lane, Shared &shared) : lane_(lane), shared_(&shared) {}
  int64_t lane() const { return lane_; }
  int64_t count() const { return static_cast<int64_t>(shared_->slots.size()); }
  template <typename C> C sum(C value) const { return combine(value, false); }
  template <typename C> C max(C value) const { return combine(value, true); }

private:
  template <typename C> C combine(C value, bool maximum) const {
    // The last combination's readers are done with the slots.
    shared_->wait();
    shared_->slots[lane_] = static_cast<double>(value);
    shared_->wait();
    C result = static_cast<C>(shared_->slots[0]);
    for (size_t k = 1; k < shared_->slots.size(); ++k) {
      C other = static_cast<C>(shared_->slots[k]);
      result = maximum ? hdMax(result, other) : result + other;
    }
    return result;
  }

  int lane_;
  Shared *shared_;
};

class HostLauncher {
public:
  template <typename F> void forEach(int64_t n, const F &f) {
    for (int64_t i = 0; i < n; ++i)
      f(i);
  }
  /// In groups of kStagedElements consecutive elements, each group's loads
  /// before its stores, the order a GPU thread issues them in: a row of
  /// one lane (forLaneElements).
  template <typename F> void forEachStaged(int64_t n, const F &f) {
    forLaneElements(
        SingleLane{}, n, [&](int64_t i) { return f.load(i); },
        [&](int64_t i, const typename F::Values &values) {
          f.store(i, values);
        });
  }
  template <typename F> void forEachRow(int64_t rows, int64_t, const F &f) {
    for (int64_t row = 0; row < rows; ++row) {
      if (lanes_ == 1) {
        f(row, SingleLane{});
        continue;
      }
      ThreadLanes::Shared shared(lanes_);
      std::vector<std::thread> threads;
      for (int lane = 0; lane < lanes_; ++lane)
        threads.emplace_back([&, lane] { f(row, ThreadLanes(lane, shared)); });
      for (std::thread &thread : threads)
        thread.join();
    }
  }
  /// 1 (default): a row is a plain loop. More: each row runs on that many
  /// threads (ThreadLanes), as a GPU block's lanes.
  void setLanes(int lanes) { lanes_ = lanes < 1 ? 1 : lanes; }
  /// 1: a loop gains nothing from splitting a sum into partial sums. The
  /// tests set more to run the split paths a GPU takes.
  int64_t parallelism() const { return parallelism_; }
  void setParallelism(int64_t parallelism) { parallelism_ = parallelism; }
  /// Filled with NaNs, so that a kernel that reads scratch it did not
  /// write fails its test (the GPU's scratch holds whatever came before).
  void *workspace(size_t bytes) {
    scratch_.assign((bytes + sizeof(double) - 1) / sizeof(double),
                    std::numeric_limits<double>::quiet_NaN());
    return scratch_.data();
  }
  void copy(void *to, const void *from, size_t bytes) {
    if (bytes && to != from)
      std::memcpy(to, from, bytes);
  }
  template <typename W>
  void transposeMatrices(const W *in, W *out, int64_t matrices, int64_t rows,
                         int64_t columns) {
    for (int64_t m = 0; m < matrices;
         ++m, in += rows * columns, out += rows * columns)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < columns; ++c)
          out[c * rows + r] = in[r * columns + c];
    ++transposedMatrices_;
  }
  /// Calls of transposeMatrices so far: the tests check that a transpose
  /// took the tiled path.
  int64_t transposedMatrices() const { return transposedMatrices_; }
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
  int64_t transposedMatrices_ = 0;
  int error_ = 0;
  int64_t parallelism_ = 1;
  int lanes_ = 1;
};

class ProbeLauncher {
public:
  template <typename F> void forEach(int64_t, const F &) {}
  template <typename F> void forEachStaged(int64_t, const F &) {}
  template <typename F> void forEachRow(int64_t, int64_t, const F &) {}
  int64_t parallelism() const { return 1; }
  void *workspace(size_t) { return nullptr; }
  void copy(void *, const void *, size_t) {}
  template <typename W>
  void transposeMatrices(const W *, W *, int64_t, int64_t, int64_t) {}
  int *errorSlot() { return nullptr; }
  int errorCode() const { return 1; }
  Status gemm(const GemmCall &) { return Status::success(); }
};

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_HOSTLAUNCHER_H
