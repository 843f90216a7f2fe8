//===- Elementwise.h - elementwise kernels for any device -------*- C++ -*-===//
//
// The device kernels of the elementwise ops: the broadcasting binary ops
// (add, sub, mul, div, pow) and where, the activations, clip, cast and the
// activation gradients. One thread computes one result element. Operands
// broadcast through per-operand strides (the strided walk of Movement.h);
// float kernels compute in FloatTraits<T>::Compute and round once on store.
//
// Formulas follow Kernels.cpp and GradKernels.cpp operation for operation,
// but for one that is more accurate than the reference's own: exact gelu
// computes Phi(x) as erfc(-x / sqrt 2) / 2, as gelu_grad does, rather than
// (1 + erf(x / sqrt 2)) / 2, which cancels in the left tail.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_ELEMENTWISE_H
#define PARPLAN_LIB_RUNTIME_DEVICE_ELEMENTWISE_H

#include "Device/Attrs.h"
#include "Device/DeviceTensor.h"
#include "Device/DropoutMask.h"
#include "Device/Movement.h"
#include "Kernels/KernelSupport.h"
#include "parplan/Runtime/KernelCall.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parplan::runtime::device {

namespace elementwise {

// Constants as Kernels.cpp and GradKernels.cpp spell them.
constexpr double kSqrtHalf = 0.70710678118654752440; // sqrt(1 / 2)
constexpr double kSqrt2 = 1.4142135623730951;        // sqrt(2)
constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1 / sqrt(2 pi)
constexpr double kGeluCubic = 0.044715;

} // namespace elementwise

//===----------------------------------------------------------------------===//
// Binary operations
//===----------------------------------------------------------------------===//

template <typename C> struct AddOp {
  PARPLAN_HD C operator()(C a, C b) const { return a + b; }
};
template <typename C> struct SubOp {
  PARPLAN_HD C operator()(C a, C b) const { return a - b; }
};
template <typename C> struct MulOp {
  PARPLAN_HD C operator()(C a, C b) const { return a * b; }
};
template <typename C> struct DivOp {
  PARPLAN_HD C operator()(C a, C b) const { return a / b; }
};
template <typename C> struct PowOp {
  PARPLAN_HD C operator()(C a, C b) const { return hdPow(a, b); }
};

// Integer forms, in int64 whatever the storage, wrapping as the element
// types do (through uint64: signed overflow is undefined). `fault` marks
// what the reference reports as an error.
struct IntAddOp {
  PARPLAN_HD int64_t operator()(int64_t a, int64_t b, bool &) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) +
                                static_cast<uint64_t>(b));
  }
};
struct IntSubOp {
  PARPLAN_HD int64_t operator()(int64_t a, int64_t b, bool &) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) -
                                static_cast<uint64_t>(b));
  }
};
struct IntMulOp {
  PARPLAN_HD int64_t operator()(int64_t a, int64_t b, bool &) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) *
                                static_cast<uint64_t>(b));
  }
};
/// Truncates toward zero; division by zero is a fault.
struct IntDivOp {
  PARPLAN_HD int64_t operator()(int64_t a, int64_t b, bool &fault) const {
    if (b == 0) {
      fault = true;
      return 0;
    }
    if (b == -1) // INT64_MIN / -1 traps; negation wraps
      return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
    return a / b;
  }
};
/// A negative exponent gives 1 / base^-e truncated toward zero; zero to a
/// negative power is a fault.
struct IntPowOp {
  PARPLAN_HD int64_t operator()(int64_t base, int64_t exponent,
                                bool &fault) const {
    if (exponent < 0) {
      if (base == 0)
        fault = true;
      if (base == 1)
        return 1;
      if (base == -1)
        return exponent % 2 == 0 ? 1 : -1;
      return 0;
    }
    uint64_t value = 1, factor = static_cast<uint64_t>(base);
    for (; exponent; exponent >>= 1) {
      if (exponent & 1)
        value *= factor;
      factor *= factor;
    }
    return static_cast<int64_t>(value);
  }
};

/// How integer kernels read and write one element type, as int64.
template <DType T> struct IntTraits;
template <> struct IntTraits<DType::I1> {
  using Storage = uint8_t;
  PARPLAN_HD static int64_t load(const Storage *p, int64_t i) {
    return p[i] != 0;
  }
  PARPLAN_HD static void store(Storage *p, int64_t i, int64_t v) {
    p[i] = v != 0;
  }
};
template <typename S> struct WrappingIntTraits {
  using Storage = S;
  PARPLAN_HD static int64_t load(const Storage *p, int64_t i) { return p[i]; }
  PARPLAN_HD static void store(Storage *p, int64_t i, int64_t v) {
    p[i] = static_cast<Storage>(v);
  }
};
template <> struct IntTraits<DType::I8> : WrappingIntTraits<int8_t> {};
template <> struct IntTraits<DType::I32> : WrappingIntTraits<int32_t> {};
template <> struct IntTraits<DType::I64> : WrappingIntTraits<int64_t> {};

/// dispatchFloat's counterpart for the integer element types.
template <typename Fn> bool dispatchInt(DType type, Fn &&fn) {
  switch (type) {
  case DType::I1:
    fn(IntTraits<DType::I1>{});
    return true;
  case DType::I8:
    fn(IntTraits<DType::I8>{});
    return true;
  case DType::I32:
    fn(IntTraits<DType::I32>{});
    return true;
  case DType::I64:
    fn(IntTraits<DType::I64>{});
    return true;
  default:
    return false;
  }
}

template <typename T, typename Op> struct BinaryFunctor {
  using S = typename T::Storage;
  using C = typename T::Compute;
  struct Values {
    C lhs, rhs;
  };
  const S *lhs, *rhs;
  S *out;
  StridedIndex<2> index;
  Op op;
  PARPLAN_HD Values load(int64_t i) const {
    int64_t offset[2];
    index.offsets(i, offset);
    return {T::load(lhs, offset[0]), T::load(rhs, offset[1])};
  }
  PARPLAN_HD void store(int64_t i, Values values) const {
    T::store(out, i, op(values.lhs, values.rhs));
  }
};

template <typename T, typename Op> struct IntBinaryFunctor {
  using S = typename T::Storage;
  const S *lhs, *rhs;
  S *out;
  StridedIndex<2> index;
  Op op;
  int *errorSlot;
  int errorCode;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t offset[2];
    index.offsets(i, offset);
    bool fault = false;
    int64_t value = op(T::load(lhs, offset[0]), T::load(rhs, offset[1]), fault);
    if (fault)
      *errorSlot = errorCode;
    T::store(out, i, value);
  }
};

/// where: a copy of the chosen operand's word.
template <typename W> struct WhereFunctor {
  const void *condition;
  DType conditionType;
  const W *lhs, *rhs;
  W *out;
  StridedIndex<3> index;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t offset[3];
    index.offsets(i, offset);
    out[i] = hdLoadIndex(condition, conditionType, offset[0]) != 0
                 ? lhs[offset[1]]
                 : rhs[offset[2]];
  }
};

/// Sixteen bytes of words: what one thread of a vector functor reads and
/// writes at once.
template <typename S> struct alignas(16) Vector16 {
  static constexpr int kWords = static_cast<int>(16 / sizeof(S));
  S word[kWords];
};

/// The vector of an operand starting at the result's element `first` (a
/// multiple of the vector): its own elements repeat with `period` (a
/// multiple of the vector), or it is one element, splat when `period` is 1.
template <typename S>
PARPLAN_HD Vector16<S> loadVector(const S *data, int64_t period,
                                  int64_t first) {
  if (period == 1) {
    Vector16<S> splat;
    for (int k = 0; k < Vector16<S>::kWords; ++k)
      splat.word[k] = data[0];
    return splat;
  }
  // A whole operand (the period the result's count) needs no division.
  int64_t offset = first < period ? first : first % period;
  return *reinterpret_cast<const Vector16<S> *>(data + offset);
}

/// A broadcasting binary op on 16-byte vectors (binaryByVectors says
/// when): one thread, one vector of the result.
template <typename T, typename Op> struct BinaryVectorFunctor {
  using S = typename T::Storage;
  static constexpr int kWords = Vector16<S>::kWords;
  const S *lhs, *rhs;
  int64_t lhsPeriod, rhsPeriod;
  S *out;
  Op op;
  PARPLAN_HD void operator()(int64_t v) const {
    int64_t first = v * kWords;
    Vector16<S> a = loadVector(lhs, lhsPeriod, first);
    Vector16<S> b = loadVector(rhs, rhsPeriod, first);
    Vector16<S> result;
    for (int k = 0; k < kWords; ++k)
      T::store(result.word, k, op(T::load(a.word, k), T::load(b.word, k)));
    reinterpret_cast<Vector16<S> *>(out)[v] = result;
  }
};

/// where on 16-byte vectors of words (whereByVectors says when): the
/// condition read an element at a time, repeating with its period.
template <typename W> struct WhereVectorFunctor {
  static constexpr int kWords = Vector16<W>::kWords;
  const void *condition;
  DType conditionType;
  int64_t conditionPeriod;
  const W *lhs, *rhs;
  int64_t lhsPeriod, rhsPeriod;
  W *out;
  PARPLAN_HD void operator()(int64_t v) const {
    int64_t first = v * kWords;
    Vector16<W> a = loadVector(lhs, lhsPeriod, first);
    Vector16<W> b = loadVector(rhs, rhsPeriod, first);
    int64_t c = first < conditionPeriod ? first : first % conditionPeriod;
    Vector16<W> result;
    for (int k = 0; k < kWords; ++k)
      result.word[k] = hdLoadIndex(condition, conditionType, c + k) != 0
                           ? a.word[k]
                           : b.word[k];
    reinterpret_cast<Vector16<W> *>(out)[v] = result;
  }
};

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

template <typename C> struct ReluOp {
  // Keeps NaN, as the reference does.
  PARPLAN_HD C operator()(C x) const { return x < 0 ? C(0) : x; }
};
template <typename C> struct TanhOp {
  PARPLAN_HD C operator()(C x) const { return hdTanh(x); }
};
template <typename C> struct SqrtOp {
  PARPLAN_HD C operator()(C x) const { return hdSqrt(x); }
};
template <typename C> struct ExpOp {
  PARPLAN_HD C operator()(C x) const { return hdExp(x); }
};
template <typename C> struct LogOp {
  PARPLAN_HD C operator()(C x) const { return hdLog(x); }
};
template <typename C> struct SigmoidOp {
  // exp of a non-positive argument only, so nothing overflows.
  PARPLAN_HD C operator()(C x) const {
    if (x >= 0)
      return C(1) / (C(1) + hdExp(-x));
    C e = hdExp(x);
    return e / (C(1) + e);
  }
};
template <typename C> struct ErfOp {
  PARPLAN_HD C operator()(C x) const { return hdErf(x); }
};
template <typename C> struct HardSwishOp {
  PARPLAN_HD C operator()(C x) const {
    return x * hdMax(C(0), hdMin(C(1), x / C(6) + C(0.5)));
  }
};
template <typename C> struct LeakyReluOp {
  C alpha;
  PARPLAN_HD C operator()(C x) const { return x >= 0 ? x : alpha * x; }
};
template <typename C> struct HardSigmoidOp {
  C alpha, beta;
  PARPLAN_HD C operator()(C x) const {
    return hdMax(C(0), hdMin(C(1), alpha * x + beta));
  }
};
template <typename C> struct GeluExactOp {
  PARPLAN_HD C operator()(C x) const {
    return C(0.5) * x * hdErfc(-x * C(elementwise::kSqrtHalf));
  }
};
template <typename C> struct GeluTanhOp {
  PARPLAN_HD C operator()(C x) const {
    C inner = C(elementwise::kSqrt2OverPi) *
              (x + C(elementwise::kGeluCubic) * x * x * x);
    return C(0.5) * x * (C(1) + hdTanh(inner));
  }
};
/// Absent bounds do not clamp; NaN passes through (comparisons are false).
template <typename C> struct ClipOp {
  bool hasMin, hasMax;
  C min, max;
  PARPLAN_HD C operator()(C x) const {
    if (hasMin && x < min)
      x = min;
    if (hasMax && x > max)
      x = max;
    return x;
  }
};

template <typename T, typename Op> struct UnaryFunctor {
  using S = typename T::Storage;
  using Values = typename T::Compute;
  const S *in;
  S *out;
  Op op;
  PARPLAN_HD Values load(int64_t i) const { return T::load(in, i); }
  PARPLAN_HD void store(int64_t i, Values x) const { T::store(out, i, op(x)); }
};

/// dropout's training form on a block (Kernels.h: runtime::dropout): the
/// logical index of element i from the block's shape, where it starts and
/// the logical shape; the step count and micro-batch index read from their
/// device scalars.
template <typename T> struct DropoutFunctor {
  using S = typename T::Storage;
  using C = typename T::Compute;
  const S *in;
  S *out;
  const float *step;
  const int64_t *microBatch; // null: micro-batch 0
  uint64_t seed, key;
  double ratio;
  C scale;
  Dims local, logical, offset;
  PARPLAN_HD void operator()(int64_t i) const {
    int64_t rest = i, flat = 0, stride = 1;
    for (int64_t d = local.rank - 1; d >= 0; --d) {
      int64_t at = rest % local.size[d];
      rest /= local.size[d];
      flat += (offset.size[d] + at) * stride;
      stride *= logical.size[d];
    }
    uint64_t count = static_cast<uint64_t>(static_cast<int64_t>(*step + 0.5f));
    uint64_t index = microBatch ? static_cast<uint64_t>(*microBatch) : 0;
    bool keep = dropoutDraw(seed, count, index, key,
                            static_cast<uint64_t>(flat)) >= ratio;
    T::store(out, i, keep ? T::load(in, i) * scale : C(0));
  }
};

//===----------------------------------------------------------------------===//
// Activation gradients: dx from dy and the forward input x
//===----------------------------------------------------------------------===//

// The piecewise kinds select dy or 0 rather than multiply by a 0/1
// derivative, so an infinite dy in a flat region still gives 0.
template <typename C> struct ReluGradOp {
  PARPLAN_HD C operator()(C dy, C x) const { return x > 0 ? dy : C(0); }
};
template <typename C> struct LeakyReluGradOp {
  C alpha;
  PARPLAN_HD C operator()(C dy, C x) const { return x >= 0 ? dy : alpha * dy; }
};
template <typename C> struct HardSigmoidGradOp {
  C alpha, beta;
  PARPLAN_HD C operator()(C dy, C x) const {
    C t = alpha * x + beta;
    return t > 0 && t < 1 ? alpha * dy : C(0);
  }
};
template <typename C> struct HardSwishGradOp {
  PARPLAN_HD C operator()(C dy, C x) const {
    if (x < -3)
      return C(0);
    if (x > 3)
      return dy;
    return dy * (x / C(3) + C(0.5));
  }
};
template <typename C> struct GeluExactGradOp {
  PARPLAN_HD C operator()(C dy, C x) const {
    C cdf = C(0.5) * hdErfc(-x / C(elementwise::kSqrt2));
    C pdf = C(elementwise::kInvSqrt2Pi) * hdExp(C(-0.5) * x * x);
    return dy * (cdf + x * pdf);
  }
};
template <typename C> struct GeluTanhGradOp {
  PARPLAN_HD C operator()(C dy, C x) const {
    C k = C(elementwise::kSqrt2OverPi), cubic = C(elementwise::kGeluCubic);
    C t = hdTanh(k * (x + cubic * x * x * x));
    C du = k * (C(1) + C(3) * cubic * x * x);
    return dy * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * du);
  }
};
/// dy where min <= x <= max (absent bounds pass), else 0; NaN x gives 0.
template <typename C> struct ClipGradOp {
  bool hasMin, hasMax;
  C min, max;
  PARPLAN_HD C operator()(C dy, C x) const {
    bool passes = (!hasMin || x >= min) && (!hasMax || x <= max);
    return passes ? dy : C(0);
  }
};

template <typename T, typename Op> struct GradFunctor {
  using S = typename T::Storage;
  using C = typename T::Compute;
  struct Values {
    C dy, x;
  };
  const S *dy, *x;
  S *dx;
  Op op;
  PARPLAN_HD Values load(int64_t i) const {
    return {T::load(dy, i), T::load(x, i)};
  }
  PARPLAN_HD void store(int64_t i, Values values) const {
    T::store(dx, i, op(values.dy, values.x));
  }
};

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

/// Rounds a double to float with round-to-odd, so that rounding the float
/// again to f16 or bf16 gives the correctly rounded double (as Tensor::set
/// does), where plain double -> float -> half could round twice.
PARPLAN_HD float hdToFloatRoundToOdd(double value) {
  float nearest = static_cast<float>(value);
  uint32_t bits = hdFloatToBits(nearest);
  bool infinite = (bits & 0x7fffffffu) == 0x7f800000u;
  if (value != value || infinite || static_cast<double>(nearest) == value)
    return nearest;
  if (hdAbs(static_cast<double>(nearest)) > hdAbs(value))
    --bits; // one step toward zero
  return hdBitsToFloat(bits | 1u);
}

/// Element i of any type as a double (I64 beyond 2^53 rounds, as
/// Tensor::get does).
PARPLAN_HD double hdLoadAsDouble(const void *data, DType type, int64_t i) {
  switch (type) {
  case DType::F16:
    return hdHalfToFloat(static_cast<const uint16_t *>(data)[i]);
  case DType::BF16:
    return hdBFloat16ToFloat(static_cast<const uint16_t *>(data)[i]);
  case DType::F32:
    return static_cast<const float *>(data)[i];
  case DType::F64:
    return static_cast<const double *>(data)[i];
  case DType::I1:
    return static_cast<const uint8_t *>(data)[i] != 0 ? 1.0 : 0.0;
  default:
    return static_cast<double>(hdLoadIndex(data, type, i));
  }
}

/// Integers from a float: truncated toward zero, saturated, NaN as 0 (as
/// Tensor::set does; the plain conversion is undefined out of range).
PARPLAN_HD int64_t hdSaturate(double value, int64_t lo, int64_t hi) {
  if (value != value)
    return 0;
  if (value <= static_cast<double>(lo))
    return lo;
  // For int64 the bound is 2^63, itself out of range: hence >=.
  if (value >= static_cast<double>(hi))
    return hi;
  return static_cast<int64_t>(value);
}

/// Stores a double into element i of any type, rounding once.
PARPLAN_HD void hdStoreDouble(void *data, DType type, int64_t i, double value) {
  switch (type) {
  case DType::F16:
    static_cast<uint16_t *>(data)[i] =
        hdFloatToHalf(hdToFloatRoundToOdd(value));
    return;
  case DType::BF16:
    static_cast<uint16_t *>(data)[i] =
        hdFloatToBFloat16(hdToFloatRoundToOdd(value));
    return;
  case DType::F32:
    static_cast<float *>(data)[i] = static_cast<float>(value);
    return;
  case DType::F64:
    static_cast<double *>(data)[i] = value;
    return;
  case DType::I1:
    static_cast<uint8_t *>(data)[i] = value != 0; // NaN too
    return;
  case DType::I8:
    static_cast<int8_t *>(data)[i] =
        static_cast<int8_t>(hdSaturate(value, INT8_MIN, INT8_MAX));
    return;
  case DType::I32:
    static_cast<int32_t *>(data)[i] =
        static_cast<int32_t>(hdSaturate(value, INT32_MIN, INT32_MAX));
    return;
  case DType::I64:
    static_cast<int64_t *>(data)[i] = hdSaturate(value, INT64_MIN, INT64_MAX);
    return;
  }
}

/// Any element type to any other. Integer to integer goes through int64,
/// exact and wrapping; everything else through double.
struct CastFunctor {
  const void *in;
  DType inType;
  void *out;
  DType outType;
  PARPLAN_HD static bool isInteger(DType type) {
    return type == DType::I1 || type == DType::I8 || type == DType::I32 ||
           type == DType::I64;
  }
  PARPLAN_HD void operator()(int64_t i) const {
    if (!isInteger(inType) || !isInteger(outType)) {
      hdStoreDouble(out, outType, i, hdLoadAsDouble(in, inType, i));
      return;
    }
    int64_t value = hdLoadIndex(in, inType, i);
    switch (outType) {
    case DType::I1:
      static_cast<uint8_t *>(out)[i] = value != 0;
      return;
    case DType::I8:
      static_cast<int8_t *>(out)[i] = static_cast<int8_t>(value);
      return;
    case DType::I32:
      static_cast<int32_t *>(out)[i] = static_cast<int32_t>(value);
      return;
    default:
      static_cast<int64_t *>(out)[i] = value;
      return;
    }
  }
};

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

namespace elementwise {

/// The elements of `result` in a 16-byte vector; 0 when vectors do not
/// fit: elements of 1 byte, a count they do not divide, a result not
/// 16-byte aligned.
inline int64_t vectorWords(const DeviceTensor &result) {
  int64_t width = static_cast<int64_t>(byteWidth(result.dtype));
  int64_t count = result.numElements();
  if ((width != 2 && width != 4 && width != 8) || count == 0 ||
      reinterpret_cast<uintptr_t>(result.data) % 16 != 0)
    return 0;
  int64_t words = 16 / width;
  return count % words == 0 ? words : 0;
}

/// How `operand` repeats over `result` when read `words` elements at a
/// time: the period of its elements when they are the result's trailing
/// ones (dimensions of 1 before them only; the whole operand when it has
/// the result's shape), a multiple of `words`; 1 for a single element
/// when `scalar` allows one; std::nullopt for any other broadcast. With
/// `load`, the operand is read by 16-byte vectors and must be aligned.
inline std::optional<int64_t> vectorPeriod(const DeviceTensor &operand,
                                           const Shape &result, int64_t words,
                                           bool scalar, bool load) {
  int64_t period = operand.numElements();
  if (period == 1 && scalar)
    return 1;
  size_t trailing = operand.shape.size();
  while (trailing > 0 && operand.shape[operand.shape.size() - trailing] == 1)
    --trailing;
  bool repeats =
      trailing <= result.size() &&
      std::equal(operand.shape.end() - static_cast<int64_t>(trailing),
                 operand.shape.end(),
                 result.end() - static_cast<int64_t>(trailing));
  if (!repeats || period == 0 || period % words != 0 ||
      (load && reinterpret_cast<uintptr_t>(operand.data) % 16 != 0))
    return std::nullopt;
  return period;
}

/// A float binary op by BinaryVectorFunctor when the layouts allow it: a
/// result of 16-byte vectors, each operand a single element or repeating
/// over leading dimensions (a bias, a residual of the result's shape);
/// false, launching nothing, otherwise.
template <class L, template <typename> class FloatOp>
bool binaryByVectors(L &launcher, const DeviceTensor &lhs,
                     const DeviceTensor &rhs, const DeviceTensor &result) {
  int64_t words = vectorWords(result);
  if (words == 0)
    return false;
  std::optional<int64_t> lhsPeriod =
      vectorPeriod(lhs, result.shape, words, true, true);
  std::optional<int64_t> rhsPeriod =
      vectorPeriod(rhs, result.shape, words, true, true);
  if (!lhsPeriod || !rhsPeriod)
    return false;
  return dispatchFloat(result.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    launcher.forEach(
        result.numElements() / words,
        BinaryVectorFunctor<T, FloatOp<typename T::Compute>>{lhs.as<const S>(),
                                                             rhs.as<const S>(),
                                                             *lhsPeriod,
                                                             *rhsPeriod,
                                                             result.as<S>(),
                                                             {}});
  });
}

/// where by WhereVectorFunctor when the layouts allow it: as
/// binaryByVectors, and a condition repeating with a period of whole
/// vectors (an attention mask over batch and heads); false, launching
/// nothing, otherwise.
template <class L>
bool whereByVectors(L &launcher, const DeviceTensor &condition,
                    const DeviceTensor &lhs, const DeviceTensor &rhs,
                    const DeviceTensor &result) {
  int64_t words = vectorWords(result);
  if (words == 0)
    return false;
  std::optional<int64_t> conditionPeriod =
      vectorPeriod(condition, result.shape, words, false, false);
  std::optional<int64_t> lhsPeriod =
      vectorPeriod(lhs, result.shape, words, true, true);
  std::optional<int64_t> rhsPeriod =
      vectorPeriod(rhs, result.shape, words, true, true);
  if (!conditionPeriod || !lhsPeriod || !rhsPeriod)
    return false;
  dispatchWord(result.dtype, [&](auto word) {
    using W = decltype(word);
    launcher.forEach(result.numElements() / words,
                     WhereVectorFunctor<W>{condition.data, condition.dtype,
                                           *conditionPeriod, lhs.as<const W>(),
                                           rhs.as<const W>(), *lhsPeriod,
                                           *rhsPeriod, result.as<W>()});
  });
  return true;
}

template <class L, template <typename> class FloatOp, class IntOp>
Launch binary(L &launcher, KernelId op, const DeviceTensor &lhs,
              const DeviceTensor &rhs, const DeviceTensor &result,
              Status &status) {
  if (lhs.dtype != result.dtype || rhs.dtype != result.dtype)
    return Launch::Unsupported;
  std::optional<Shape> broadcast =
      detail::broadcastShapes(lhs.shape, rhs.shape);
  if (!broadcast || *broadcast != result.shape) {
    status = failure(op, toString(lhs.shape) + " and " + toString(rhs.shape) +
                             " do not broadcast to " + toString(result.shape));
    return Launch::Done;
  }
  const Shape &shape = *broadcast;
  if (binaryByVectors<L, FloatOp>(launcher, lhs, rhs, result))
    return Launch::Done;
  StridedIndex<2> index;
  if (!makeStridedIndex<2>(shape,
                           {detail::broadcastStrides(lhs.shape, shape),
                            detail::broadcastStrides(rhs.shape, shape)},
                           index))
    return Launch::Unsupported;
  int64_t count = result.numElements();
  bool handled = dispatchFloat(result.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    launcher.forEachStaged(
        count,
        BinaryFunctor<T, FloatOp<typename T::Compute>>{
            lhs.as<const S>(), rhs.as<const S>(), result.as<S>(), index, {}});
  });
  if (handled)
    return Launch::Done;
  bool isInt = dispatchInt(result.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    launcher.forEach(count, IntBinaryFunctor<T, IntOp>{lhs.as<const S>(),
                                                       rhs.as<const S>(),
                                                       result.as<S>(),
                                                       index,
                                                       {},
                                                       launcher.errorSlot(),
                                                       launcher.errorCode()});
  });
  return isInt ? Launch::Done : Launch::Unsupported;
}

template <class L>
Launch where(L &launcher, const DeviceTensor &condition,
             const DeviceTensor &lhs, const DeviceTensor &rhs,
             const DeviceTensor &result, Status &status) {
  if (lhs.dtype != result.dtype || rhs.dtype != result.dtype ||
      isFloat(condition.dtype))
    return Launch::Unsupported;
  std::optional<Shape> values = detail::broadcastShapes(lhs.shape, rhs.shape);
  std::optional<Shape> broadcast =
      values ? detail::broadcastShapes(condition.shape, *values) : std::nullopt;
  if (!broadcast || *broadcast != result.shape) {
    status = failure(KernelId::Where,
                     toString(condition.shape) + ", " + toString(lhs.shape) +
                         " and " + toString(rhs.shape) +
                         " do not broadcast to " + toString(result.shape));
    return Launch::Done;
  }
  const Shape &shape = *broadcast;
  if (whereByVectors(launcher, condition, lhs, rhs, result))
    return Launch::Done;
  StridedIndex<3> index;
  if (!makeStridedIndex<3>(shape,
                           {detail::broadcastStrides(condition.shape, shape),
                            detail::broadcastStrides(lhs.shape, shape),
                            detail::broadcastStrides(rhs.shape, shape)},
                           index))
    return Launch::Unsupported;
  dispatchWord(result.dtype, [&](auto word) {
    using W = decltype(word);
    launcher.forEach(result.numElements(),
                     WhereFunctor<W>{condition.data, condition.dtype,
                                     lhs.as<const W>(), rhs.as<const W>(),
                                     result.as<W>(), index});
  });
  return Launch::Done;
}

/// An activation: makeOp(C{}) gives the op computing in C.
template <class L, class MakeOp>
Launch unary(L &launcher, KernelId op, const DeviceTensor &input,
             const DeviceTensor &result, MakeOp makeOp, Status &status) {
  if (input.dtype != result.dtype)
    return Launch::Unsupported;
  if (input.shape != result.shape) {
    status = failure(op, "result shape " + toString(result.shape) +
                             " is not the input's " + toString(input.shape));
    return Launch::Done;
  }
  bool handled = dispatchFloat(input.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    auto functor = makeOp(typename T::Compute{});
    launcher.forEachStaged(result.numElements(),
                           UnaryFunctor<T, decltype(functor)>{
                               input.as<const S>(), result.as<S>(), functor});
  });
  return handled ? Launch::Done : Launch::Unsupported;
}

/// An activation gradient from dy and the forward input.
template <class L, class MakeOp>
Launch grad(L &launcher, KernelId op, const DeviceTensor &dy,
            const DeviceTensor &input, const DeviceTensor &dx, MakeOp makeOp,
            Status &status) {
  if (input.dtype != dy.dtype || dx.dtype != dy.dtype)
    return Launch::Unsupported;
  if (input.shape != dy.shape || dx.shape != dy.shape) {
    status = failure(op, "dy " + toString(dy.shape) + ", input " +
                             toString(input.shape) + " and dx " +
                             toString(dx.shape) + " differ in shape");
    return Launch::Done;
  }
  bool handled = dispatchFloat(dy.dtype, [&](auto traits) {
    using T = decltype(traits);
    using S = typename T::Storage;
    auto functor = makeOp(typename T::Compute{});
    launcher.forEachStaged(
        dx.numElements(),
        GradFunctor<T, decltype(functor)>{dy.as<const S>(), input.as<const S>(),
                                          dx.as<S>(), functor});
  });
  return handled ? Launch::Done : Launch::Unsupported;
}

/// dropout: the identity without a step (the inference form), else the
/// training form of DropoutFunctor; the block's place in the logical
/// tensor comes from the `shape` and `offset` lowering adds (the whole
/// tensor when empty).
template <class L>
Launch dropout(L &launcher, const AttrMap &attrs, const DeviceTensor &input,
               const DeviceTensor *step, const DeviceTensor *microBatch,
               const DeviceTensor &result, Status &status) {
  if (input.dtype != result.dtype || input.shape != result.shape ||
      (step && (step->dtype != DType::F32 || step->numElements() != 1)) ||
      (microBatch &&
       (microBatch->dtype != DType::I64 || microBatch->numElements() != 1)))
    return Launch::Unsupported;
  double ratio = step ? attrFloat(attrs, "ratio", 0.5) : 0.0;
  // Empty (or absent): the block is the whole tensor.
  Shape logical = attrInts(attrs, "shape");
  if (logical.empty())
    logical = input.shape;
  std::vector<int64_t> offset = attrInts(attrs, "offset");
  if (offset.empty())
    offset.assign(input.shape.size(), 0);
  Dims localDims, logicalDims, offsetDims;
  if (!toDims(input.shape, localDims) || !toDims(logical, logicalDims) ||
      !toDims(Shape(offset.begin(), offset.end()), offsetDims) ||
      logical.size() != input.shape.size() ||
      offset.size() != input.shape.size())
    return Launch::Unsupported;
  for (size_t d = 0; d < input.shape.size(); ++d)
    if (offset[d] < 0 || offset[d] + input.shape[d] > logical[d]) {
      status = failure(KernelId::Dropout,
                       "block " + toString(input.shape) + " at offset " +
                           std::to_string(offset[d]) + " of dimension " +
                           std::to_string(d) + " leaves " + toString(logical));
      return Launch::Done;
    }
  if (!step) {
    launcher.copy(result.data, input.data,
                  static_cast<size_t>(result.numElements()) *
                      static_cast<size_t>(byteWidth(input.dtype)));
    return Launch::Done;
  }
  bool handled = dispatchFloat(input.dtype, [&](auto traits) {
    using T = decltype(traits);
    using C = typename T::Compute;
    launcher.forEach(result.numElements(),
                     DropoutFunctor<T>{
                         input.as<const typename T::Storage>(),
                         result.as<typename T::Storage>(),
                         step->as<const float>(),
                         microBatch ? microBatch->as<const int64_t>() : nullptr,
                         static_cast<uint64_t>(attrInt(attrs, "seed", 0)),
                         static_cast<uint64_t>(attrInt(attrs, "key", 0)), ratio,
                         static_cast<C>(1.0 / (1.0 - ratio)), localDims,
                         logicalDims, offsetDims});
  });
  return handled ? Launch::Done : Launch::Unsupported;
}

/// clip's and clip_grad's bounds: present only when given.
struct Bounds {
  bool hasMin, hasMax;
  double min, max;
  explicit Bounds(const AttrMap &attrs)
      : hasMin(hasAttr(attrs, "min")), hasMax(hasAttr(attrs, "max")),
        min(attrFloat(attrs, "min")), max(attrFloat(attrs, "max")) {}
};

} // namespace elementwise

/// The elementwise ops (Dispatch.h). Binary ops: every float and integer
/// type (integer division by zero and zero to a negative power write the
/// launcher's error code); where: any value type with an integer
/// condition; activations, clip and the gradients: float types; cast: any
/// pair of types. Ranks are unlimited where operands share one shape and at
/// most kMaxRank after collapsing where they broadcast.
template <class L>
bool launchElementwise(L &launcher, KernelId op, const AttrMap &attrs,
                       const std::vector<const DeviceTensor *> &operands,
                       const std::vector<DeviceTensor *> &results,
                       Launch &launch, Status &status) {
  // Out-parameters stay untouched for another group's op.
  Status outcome = Status::success();
  Launch launched = Launch::Done;
  const DeviceTensor &result = *results[0];
  auto in = [&](size_t i) -> const DeviceTensor & { return *operands[i]; };

  // Binary ops and where.
  if (op == KernelId::Add || op == KernelId::Accumulate)
    launched = elementwise::binary<L, AddOp, IntAddOp>(launcher, op, in(0),
                                                       in(1), result, outcome);
  else if (op == KernelId::Sub)
    launched = elementwise::binary<L, SubOp, IntSubOp>(launcher, op, in(0),
                                                       in(1), result, outcome);
  else if (op == KernelId::Mul)
    launched = elementwise::binary<L, MulOp, IntMulOp>(launcher, op, in(0),
                                                       in(1), result, outcome);
  else if (op == KernelId::Div)
    launched = elementwise::binary<L, DivOp, IntDivOp>(launcher, op, in(0),
                                                       in(1), result, outcome);
  else if (op == KernelId::Pow)
    launched = elementwise::binary<L, PowOp, IntPowOp>(launcher, op, in(0),
                                                       in(1), result, outcome);
  else if (op == KernelId::Where)
    launched =
        elementwise::where(launcher, in(0), in(1), in(2), result, outcome);

  // Activations.
  else if (op == KernelId::Relu)
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [](auto c) { return ReluOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::Tanh)
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [](auto c) { return TanhOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::Sqrt)
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [](auto c) { return SqrtOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::Exp)
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [](auto c) { return ExpOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::Log)
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [](auto c) { return LogOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::Sigmoid)
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [](auto c) { return SigmoidOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::Erf)
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [](auto c) { return ErfOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::HardSwish)
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [](auto c) { return HardSwishOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::LeakyRelu) {
    double alpha = attrFloat(attrs, "alpha");
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [&](auto c) {
          using C = decltype(c);
          return LeakyReluOp<C>{static_cast<C>(alpha)};
        },
        outcome);
  } else if (op == KernelId::HardSigmoid) {
    double alpha = attrFloat(attrs, "alpha"), beta = attrFloat(attrs, "beta");
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [&](auto c) {
          using C = decltype(c);
          return HardSigmoidOp<C>{static_cast<C>(alpha), static_cast<C>(beta)};
        },
        outcome);
  } else if (op == KernelId::Gelu) {
    if (attrString(attrs, "approximate") == "tanh")
      launched = elementwise::unary(
          launcher, op, in(0), result,
          [](auto c) { return GeluTanhOp<decltype(c)>{}; }, outcome);
    else
      launched = elementwise::unary(
          launcher, op, in(0), result,
          [](auto c) { return GeluExactOp<decltype(c)>{}; }, outcome);
  } else if (op == KernelId::Clip) {
    elementwise::Bounds bounds(attrs);
    launched = elementwise::unary(
        launcher, op, in(0), result,
        [&](auto c) {
          using C = decltype(c);
          return ClipOp<C>{bounds.hasMin, bounds.hasMax,
                           static_cast<C>(bounds.min),
                           static_cast<C>(bounds.max)};
        },
        outcome);
  } else if (op == KernelId::Dropout) {
    launched = elementwise::dropout(
        launcher, attrs, in(0), operands.size() > 1 ? operands[1] : nullptr,
        operands.size() > 2 ? operands[2] : nullptr, result, outcome);
  } else if (op == KernelId::Cast) {
    if (in(0).numElements() != result.numElements())
      outcome = failure(KernelId::Cast,
                        "input " + toString(in(0).shape) + " and result " +
                            toString(result.shape) + " differ in size");
    else
      launcher.forEach(
          result.numElements(),
          CastFunctor{in(0).data, in(0).dtype, result.data, result.dtype});
  }

  // Activation gradients: operands (dy, forward input).
  else if (op == KernelId::ReluGrad)
    launched = elementwise::grad(
        launcher, op, in(0), in(1), result,
        [](auto c) { return ReluGradOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::HardSwishGrad)
    launched = elementwise::grad(
        launcher, op, in(0), in(1), result,
        [](auto c) { return HardSwishGradOp<decltype(c)>{}; }, outcome);
  else if (op == KernelId::LeakyReluGrad) {
    double alpha = attrFloat(attrs, "alpha");
    launched = elementwise::grad(
        launcher, op, in(0), in(1), result,
        [&](auto c) {
          using C = decltype(c);
          return LeakyReluGradOp<C>{static_cast<C>(alpha)};
        },
        outcome);
  } else if (op == KernelId::HardSigmoidGrad) {
    double alpha = attrFloat(attrs, "alpha"), beta = attrFloat(attrs, "beta");
    launched = elementwise::grad(
        launcher, op, in(0), in(1), result,
        [&](auto c) {
          using C = decltype(c);
          return HardSigmoidGradOp<C>{static_cast<C>(alpha),
                                      static_cast<C>(beta)};
        },
        outcome);
  } else if (op == KernelId::ClipGrad) {
    elementwise::Bounds bounds(attrs);
    launched = elementwise::grad(
        launcher, op, in(0), in(1), result,
        [&](auto c) {
          using C = decltype(c);
          return ClipGradOp<C>{bounds.hasMin, bounds.hasMax,
                               static_cast<C>(bounds.min),
                               static_cast<C>(bounds.max)};
        },
        outcome);
  } else if (op == KernelId::GeluGrad) {
    if (attrString(attrs, "approximate") == "tanh")
      launched = elementwise::grad(
          launcher, op, in(0), in(1), result,
          [](auto c) { return GeluTanhGradOp<decltype(c)>{}; }, outcome);
    else
      launched = elementwise::grad(
          launcher, op, in(0), in(1), result,
          [](auto c) { return GeluExactGradOp<decltype(c)>{}; }, outcome);
  } else {
    return false;
  }
  launch = launched;
  status = outcome;
  return true;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_ELEMENTWISE_H
