//===- DeviceTensor.h - kernels for any device, in one source --*- C++ -*-===//
//
// The kernels of the CUDA backend are written once, as functors that compute
// one element (or one row) of a result from raw pointers, and compiled twice:
// by nvcc for the GPU (CudaLauncher launches them over a grid) and by the
// host compiler for the tests (HostLauncher.h runs them in a loop on host
// memory). So the tests check, on a machine without a GPU, every index
// computation, broadcast, reduction and cuBLAS argument that the GPU runs,
// against the reference kernels of Kernels.h; only the launch itself is
// left for a GPU to check.
//
// Rules for code under lib/Runtime/Device:
// - Functions that run on the device are PARPLAN_HD; they use no std::
//   library (not device code), only the math of <cmath> spelled as below
//   (hdExp, hdLog, ...), and no exceptions or allocation.
// - A functor is a small struct of pointers and integers (copied to the
//   device by value) with `PARPLAN_HD void operator()(int64_t i) const`;
//   or, for forEachStaged, a type Values with `Values load(int64_t i)
//   const` (every read of element i) and `void store(int64_t i, Values)
//   const` (every write), so that a thread can issue the loads of several
//   elements before it waits for any: a memory-bound kernel needs that
//   many bytes in flight to approach the memory's bandwidth, and a
//   compiler may not hoist a load above a store that could alias it;
//   or, for a row that its lanes share (forEachRow), a template
//   `operator()(int64_t row, const Lanes &lanes) const`: lane k of
//   lanes.count() takes elements k, k + count, ... and lanes.sum(x) and
//   lanes.max(x) combine the lanes' values, giving each lane the result.
//   Every lane must reach every such call (no lane returns early alone).
// - Element types are dispatched on the host (dispatchFloat); 16-bit floats
//   are stored as uint16_t bit patterns and computed in float, as in
//   Tensor.h.
// - Faults that only the data reveals (an index out of range) cannot return
//   a Status from the device: the functor writes the launcher's error code
//   into the launcher's error slot, and the backend reports it after the
//   step, naming the instruction.
//
// A Launcher L provides:
//   template <class F> void forEach(int64_t n, const F &f);  // f(i), i < n
//   template <class F> void forEachStaged(int64_t n, const F &f);
//       // f.store(i, f.load(i)), i < n, with several elements' loads issued
//       // before their stores
//   template <class F> void forEachRow(int64_t rows, int64_t length,
//                                      const F &f);  // f(row, lanes)
//   int64_t parallelism();  // independent partial results worth computing
//                           // at once: 1 on the host, ~10^5 on a GPU
//   void *workspace(size_t bytes);  // scratch, valid for this kernel only;
//                                   // its contents are unspecified
//   void copy(void *to, const void *from, size_t bytes);  // no overlap
//   template <class W> void transposeMatrices(const W *in, W *out,
//       int64_t matrices, int64_t rows, int64_t columns);
//       // in [matrices][rows][columns] -> out [matrices][columns][rows]
//   int *errorSlot();  int errorCode();
//   Status gemm(const GemmCall &call);  // Linear.h
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_DEVICETENSOR_H
#define PARPLAN_LIB_RUNTIME_DEVICE_DEVICETENSOR_H

#include "parplan/Runtime/KernelOps.h"
#include "parplan/Runtime/Tensor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__CUDACC__)
#define PARPLAN_HD __host__ __device__ inline
#else
#define PARPLAN_HD inline
#endif

namespace parplan::runtime::device {

/// A tensor in the launcher's memory (device memory for CUDA, host memory
/// for HostLauncher): not owned.
struct DeviceTensor {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;

  int64_t numElements() const { return runtime::numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// At most this many dimensions in a functor's fixed-size index arrays
/// (broadcasting, transposes); dispatch refuses higher ranks, so the
/// backend falls back to the host kernel for them.
inline constexpr int kMaxRank = 8;

/// Launchers transpose matrices in square tiles of this side (a GPU
/// block stages a tile in shared memory so that both its reads and its
/// writes run along rows); matrices narrower than a tile go through the
/// strided walk instead.
inline constexpr int64_t kTransposeTile = 32;

/// Shapes and strides by value, for functors.
struct Dims {
  int64_t size[kMaxRank] = {};
  int64_t rank = 0;
};

/// Division by a divisor fixed when a kernel is launched, as a multiply-high
/// and a shift (the round-up method of Granlund and Montgomery): exact for
/// dividends and divisors below 2^31. A GPU divides 64-bit integers in a
/// software loop of dozens of instructions, so index arithmetic over a
/// shape, per element, would otherwise cost more than the memory access it
/// computes.
struct FastDivisor {
  uint32_t multiplier = 0, shift = 0; // multiplier 0: divide by 1

  /// `divisor` in [1, 2^31).
  static FastDivisor of(int64_t divisor) {
    FastDivisor fast;
    if (divisor <= 1)
      return fast;
    uint32_t log2 = 0; // ceil(log2(divisor))
    while ((int64_t{1} << log2) < divisor)
      ++log2;
    uint32_t exponent = 31 + log2;
    fast.multiplier = static_cast<uint32_t>(
        ((uint64_t{1} << exponent) + static_cast<uint64_t>(divisor) - 1) /
        static_cast<uint64_t>(divisor));
    fast.shift = exponent - 32;
    return fast;
  }

  /// n / divisor, for n below 2^31.
  PARPLAN_HD uint32_t divide(uint32_t n) const {
    if (multiplier == 0)
      return n;
#if defined(__CUDA_ARCH__)
    return __umulhi(n, multiplier) >> shift;
#else
    return static_cast<uint32_t>((static_cast<uint64_t>(n) * multiplier) >>
                                 32) >>
           shift;
#endif
  }
};

/// Whether index arithmetic over `count` elements fits FastDivisor.
inline bool fitsFastDivision(int64_t count) {
  return count >= 0 && count < (int64_t{1} << 31);
}

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

PARPLAN_HD float hdBitsToFloat(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}
PARPLAN_HD uint32_t hdFloatToBits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// bfloat16 <-> float, round to nearest even (as floatToBFloat16).
PARPLAN_HD float hdBFloat16ToFloat(uint16_t bits) {
  return hdBitsToFloat(static_cast<uint32_t>(bits) << 16);
}
PARPLAN_HD uint16_t hdFloatToBFloat16(float value) {
  uint32_t bits = hdFloatToBits(value);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu))
    return static_cast<uint16_t>((bits >> 16) | 0x40u); // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

/// IEEE binary16 <-> float, round to nearest even (as floatToHalf).
PARPLAN_HD float hdHalfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f)
    return hdBitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal: mantissa * 2^-24, exact in float.
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return hdBitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}
PARPLAN_HD uint16_t hdFloatToHalf(float value) {
  uint32_t bits = hdFloatToBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t exponent = (bits >> 23) & 0xffu;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff)
    return mantissa == 0
               ? static_cast<uint16_t>(sign | 0x7c00u)
               : static_cast<uint16_t>(sign | 0x7e00u | (mantissa >> 13));
  int32_t unbiased = static_cast<int32_t>(exponent) - 127;
  if (unbiased > 15)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (unbiased >= -14) {
    uint32_t half =
        (static_cast<uint32_t>(unbiased + 15) << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
      ++half; // may carry into the exponent, up to infinity: still right
    return static_cast<uint16_t>(sign | half);
  }
  if (unbiased < -25)
    return sign;
  // Subnormal: shift the implicit bit in, round to nearest even.
  uint32_t full = mantissa | 0x800000u;
  int shift = -unbiased - 14 + 13;
  uint32_t half = full >> shift;
  uint32_t rest = full & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

/// How a float kernel reads and writes one element type: Storage is what
/// memory holds, Compute what arithmetic runs in.
template <DType T> struct FloatTraits;
template <> struct FloatTraits<DType::F32> {
  using Storage = float;
  using Compute = float;
  PARPLAN_HD static Compute load(const Storage *p, int64_t i) { return p[i]; }
  PARPLAN_HD static void store(Storage *p, int64_t i, Compute v) { p[i] = v; }
};
template <> struct FloatTraits<DType::F64> {
  using Storage = double;
  using Compute = double;
  PARPLAN_HD static Compute load(const Storage *p, int64_t i) { return p[i]; }
  PARPLAN_HD static void store(Storage *p, int64_t i, Compute v) { p[i] = v; }
};
template <> struct FloatTraits<DType::F16> {
  using Storage = uint16_t;
  using Compute = float;
  PARPLAN_HD static Compute load(const Storage *p, int64_t i) {
    return hdHalfToFloat(p[i]);
  }
  PARPLAN_HD static void store(Storage *p, int64_t i, Compute v) {
    p[i] = hdFloatToHalf(v);
  }
};
template <> struct FloatTraits<DType::BF16> {
  using Storage = uint16_t;
  using Compute = float;
  PARPLAN_HD static Compute load(const Storage *p, int64_t i) {
    return hdBFloat16ToFloat(p[i]);
  }
  PARPLAN_HD static void store(Storage *p, int64_t i, Compute v) {
    p[i] = hdFloatToBFloat16(v);
  }
};

/// Reads element i of an integer tensor (indices, labels) as int64.
PARPLAN_HD int64_t hdLoadIndex(const void *data, DType type, int64_t i) {
  switch (type) {
  case DType::I64:
    return static_cast<const int64_t *>(data)[i];
  case DType::I32:
    return static_cast<const int32_t *>(data)[i];
  case DType::I8:
    return static_cast<const int8_t *>(data)[i];
  case DType::I1:
    return static_cast<const uint8_t *>(data)[i];
  default:
    return 0;
  }
}

/// Calls fn(FloatTraits<T>{}) for the float element type `type` (a generic
/// lambda takes it as `auto traits` and names `decltype(traits)`); returns
/// false, calling nothing, for other types.
template <typename Fn> bool dispatchFloat(DType type, Fn &&fn) {
  switch (type) {
  case DType::F32:
    fn(FloatTraits<DType::F32>{});
    return true;
  case DType::F64:
    fn(FloatTraits<DType::F64>{});
    return true;
  case DType::F16:
    fn(FloatTraits<DType::F16>{});
    return true;
  case DType::BF16:
    fn(FloatTraits<DType::BF16>{});
    return true;
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Math, overloaded for float and double
//===----------------------------------------------------------------------===//

PARPLAN_HD float hdExp(float x) { return expf(x); }
PARPLAN_HD double hdExp(double x) { return exp(x); }
PARPLAN_HD float hdLog(float x) { return logf(x); }
PARPLAN_HD double hdLog(double x) { return log(x); }
PARPLAN_HD float hdSqrt(float x) { return sqrtf(x); }
PARPLAN_HD double hdSqrt(double x) { return sqrt(x); }
PARPLAN_HD float hdTanh(float x) { return tanhf(x); }
PARPLAN_HD double hdTanh(double x) { return tanh(x); }
PARPLAN_HD float hdErf(float x) { return erff(x); }
PARPLAN_HD double hdErf(double x) { return erf(x); }
/// 1 - erf(x) without its cancellation in the left tail (exact gelu).
PARPLAN_HD float hdErfc(float x) { return erfcf(x); }
PARPLAN_HD double hdErfc(double x) { return erfc(x); }
PARPLAN_HD float hdPow(float x, float y) { return powf(x, y); }
PARPLAN_HD double hdPow(double x, double y) { return pow(x, y); }
PARPLAN_HD float hdAbs(float x) { return fabsf(x); }
PARPLAN_HD double hdAbs(double x) { return fabs(x); }
template <typename T> PARPLAN_HD T hdMax(T a, T b) { return a < b ? b : a; }

/// *address += value, atomically on the GPU (where threads of one kernel
/// may add to the same element); a plain addition on the host, whose
/// launcher runs one element at a time.
PARPLAN_HD void hdAtomicAdd(float *address, float value) {
#if defined(__CUDA_ARCH__)
  atomicAdd(address, value);
#else
  *address += value;
#endif
}
PARPLAN_HD void hdAtomicAdd(double *address, double value) {
#if defined(__CUDA_ARCH__)
  atomicAdd(address, value);
#else
  *address += value;
#endif
}
template <typename T> PARPLAN_HD T hdMin(T a, T b) { return b < a ? b : a; }

/// The scatter-adds' sums (gather_grad, resize_grad): zeroed first, then
/// added to atomically; 16-bit results sum in a float workspace, stored
/// rounded once at the end.
template <typename A> struct ZeroFill {
  A *data;
  PARPLAN_HD void operator()(int64_t i) const { data[i] = A(0); }
};
template <typename T> struct StoreSums {
  const float *sums;
  typename T::Storage *result;
  PARPLAN_HD void operator()(int64_t i) const {
    T::store(result, i, static_cast<typename T::Compute>(sums[i]));
  }
};

/// Elements a thread of forEachStaged takes at once: on a GPU, spaced by
/// the grid's thread count; on the host, consecutive.
inline constexpr int kStagedElements = 4;

/// The lanes of a row on the host: one, so a row's loop is the plain loop
/// over its elements in order and combining is the identity.
struct SingleLane {
  PARPLAN_HD int64_t lane() const { return 0; }
  PARPLAN_HD int64_t count() const { return 1; }
  template <typename C> PARPLAN_HD C sum(C value) const { return value; }
  template <typename C> PARPLAN_HD C max(C value) const { return value; }
};

/// Runs a row's loop for one lane: its elements j = lane, lane + count, ...
/// below `length`, kStagedElements at a time, load(j) for each element of
/// a group before use(j, value) for each in order. A lane's loads of a
/// group are then in flight together, where the plain loop waits a memory
/// latency per element (a compiler may not hoist a load above a store that
/// could alias it); the uses run in the plain loop's order, so sums round
/// as its do.
template <class Lanes, class Load, class Use>
PARPLAN_HD void forLaneElements(const Lanes &lanes, int64_t length,
                                const Load &load, const Use &use) {
  int64_t step = lanes.count(), j = lanes.lane();
  for (; j + (kStagedElements - 1) * step < length;
       j += kStagedElements * step) {
    decltype(load(j)) values[kStagedElements];
    for (int k = 0; k < kStagedElements; ++k)
      values[k] = load(j + k * step);
    for (int k = 0; k < kStagedElements; ++k)
      use(j + k * step, values[k]);
  }
  for (; j < length; j += step)
    use(j, load(j));
}

//===----------------------------------------------------------------------===//
// Helpers for dispatch
//===----------------------------------------------------------------------===//

/// Dims of a shape, or false when its rank exceeds kMaxRank.
inline bool toDims(const Shape &shape, Dims &dims) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return false;
  dims.rank = static_cast<int64_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    dims.size[d] = shape[d];
  return true;
}

/// "slice: MESSAGE": a dispatch's failure, worded as the reference
/// kernel's.
inline Status failure(KernelId op, const std::string &message) {
  return Status::failure(std::string(toString(op)) + ": " + message);
}

/// The result of dispatching an op to a device kernel.
enum class Launch {
  /// Launched (or, for HostLauncher, run).
  Done,
  /// No device kernel for this op, element type or rank: the backend runs
  /// the host kernel instead (and says so when the plan is loaded).
  Unsupported,
};

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_DEVICETENSOR_H
