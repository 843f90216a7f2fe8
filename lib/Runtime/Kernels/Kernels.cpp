//===- Kernels.cpp - reference CPU kernels for the forward nn ops ---------===//
//
// The ground truth for the compiler's tests and the CPU backend of
// parplan-run, so correctness and one code path per op come before speed.
// Float kernels load their operands into double scratch, compute there and
// round each result element once on the way back (KernelSupport.h), which
// covers F16/BF16/F32/F64 alike and accumulates in double. Data movement
// kernels copy bytes and so are exact for every element type.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Kernels.h"

#include "Device/DropoutMask.h"
#include "Device/ResizeSample.h"
#include "KernelSupport.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>

namespace parplan::runtime {

using namespace detail;

namespace {

Status failure(const char *kernel, const std::string &message) {
  return Status::failure(std::string(kernel) + ": " + message);
}

/// Checks that a preallocated result has the shape the operands imply; a
/// plan that disagrees would otherwise read or write out of bounds.
Status requireShape(const char *kernel, const Tensor &result,
                    const Shape &expected) {
  if (result.shape() == expected)
    return Status::success();
  return failure(kernel, "result shape " + toString(result.shape()) +
                             " is not the expected " + toString(expected));
}

Status requireFloatsOfOneType(const char *kernel,
                              std::initializer_list<const Tensor *> tensors) {
  const Tensor *first = *tensors.begin();
  for (const Tensor *tensor : tensors) {
    if (!tensor)
      continue;
    if (Status status = requireFloat(kernel, *tensor); !status.ok())
      return status;
    if (Status status = requireSameType(kernel, *first, *tensor); !status.ok())
      return status;
  }
  return Status::success();
}

void copyElement(std::byte *dst, const std::byte *src, size_t width) {
  switch (width) {
  case 1:
    *dst = *src;
    return;
  case 2:
    std::memcpy(dst, src, 2);
    return;
  case 4:
    std::memcpy(dst, src, 4);
    return;
  default:
    std::memcpy(dst, src, width);
    return;
  }
}

/// result[i] = input[offsets(i)] over the result's elements, for any
/// element type: the body of expand, transpose and slice.
void gatherStrided(const Tensor &input, const std::vector<int64_t> &strides,
                   int64_t base, Tensor &result) {
  size_t width = byteWidth(input.dtype());
  const std::byte *src = input.bytes();
  std::byte *dst = result.bytes();
  walkStrided<1>(result.shape(), {strides},
                 [&](int64_t i, const std::array<int64_t, 1> &offsets) {
                   copyElement(dst + i * width, src + offsets[0] * width,
                               width);
                 },
                 {base});
}

//===----------------------------------------------------------------------===//
// Integer arithmetic (wrapping, as the element types do)
//===----------------------------------------------------------------------===//

int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

/// Integer power; a negative exponent gives 1 / base^-e truncated toward
/// zero, like integer division. Returns false for 0 to a negative power.
bool intPow(int64_t base, int64_t exponent, int64_t &result) {
  if (exponent < 0) {
    if (base == 0)
      return false;
    if (base == 1)
      result = 1;
    else if (base == -1)
      result = (exponent % 2 == 0) ? 1 : -1;
    else
      result = 0;
    return true;
  }
  int64_t value = 1;
  while (exponent) {
    if (exponent & 1)
      value = wrapMul(value, base);
    base = wrapMul(base, base);
    exponent >>= 1;
  }
  result = value;
  return true;
}

double sigmoid(double x) {
  if (x >= 0)
    return 1 / (1 + std::exp(-x));
  double e = std::exp(x);
  return e / (1 + e);
}

} // namespace

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

Status matmul(const Tensor &lhs, const Tensor &rhs, Tensor &result,
              bool transposeLhs, bool transposeRhs, double alpha) {
  const char *kernel = "matmul";
  if (Status s = requireFloatsOfOneType(kernel, {&lhs, &rhs, &result}); !s.ok())
    return s;
  Shape a = lhs.shape(), b = rhs.shape();
  if (a.empty() || b.empty())
    return failure(kernel, "operands must have rank 1 or more");
  if ((transposeLhs && a.size() < 2) || (transposeRhs && b.size() < 2))
    return failure(kernel, "a transposed operand must have rank 2 or more");
  bool promoteLhs = a.size() == 1, promoteRhs = b.size() == 1;
  if (promoteLhs)
    a.insert(a.begin(), 1);
  if (promoteRhs)
    b.push_back(1);
  // m, k and n of op(lhs) [m, k] and op(rhs) [k, n].
  int64_t m = a[a.size() - (transposeLhs ? 1 : 2)];
  int64_t k = a[a.size() - (transposeLhs ? 2 : 1)];
  int64_t kb = b[b.size() - (transposeRhs ? 1 : 2)];
  int64_t n = b[b.size() - (transposeRhs ? 2 : 1)];
  if (kb != k)
    return failure(kernel, "cannot multiply " + toString(lhs.shape()) + " by " +
                               toString(rhs.shape()));
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  std::optional<Shape> batch = broadcastShapes(batchA, batchB);
  if (!batch)
    return failure(kernel, "batch dimensions of " + toString(lhs.shape()) +
                               " and " + toString(rhs.shape()) +
                               " do not broadcast");
  Shape expected = *batch;
  if (!promoteLhs)
    expected.push_back(m);
  if (!promoteRhs)
    expected.push_back(n);
  if (Status s = requireShape(kernel, result, expected); !s.ok())
    return s;

  std::vector<double> x = loadDoubles(lhs), y = loadDoubles(rhs);
  std::vector<double> out(static_cast<size_t>(result.numElements()), 0.0);
  // Broadcast strides count matrices; scale them to elements.
  std::vector<int64_t> stridesA = broadcastStrides(batchA, *batch);
  std::vector<int64_t> stridesB = broadcastStrides(batchB, *batch);
  for (int64_t &stride : stridesA)
    stride *= m * k;
  for (int64_t &stride : stridesB)
    stride *= k * n;
  std::vector<double> opB(transposeRhs ? k * n : 0);
  walkStrided<2>(*batch, {stridesA, stridesB},
                 [&](int64_t index, const std::array<int64_t, 2> &offsets) {
                   const double *pa = x.data() + offsets[0];
                   const double *pb = y.data() + offsets[1];
                   double *pc = out.data() + index * m * n;
                   // op(rhs) row major, so that the inner loop runs over
                   // contiguous rows.
                   if (transposeRhs) {
                     for (int64_t p = 0; p < k; ++p)
                       for (int64_t j = 0; j < n; ++j)
                         opB[p * n + j] = pb[j * k + p];
                     pb = opB.data();
                   }
                   for (int64_t i = 0; i < m; ++i)
                     for (int64_t p = 0; p < k; ++p) {
                       double av = transposeLhs ? pa[p * m + i] : pa[i * k + p];
                       const double *row = pb + p * n;
                       double *dst = pc + i * n;
                       for (int64_t j = 0; j < n; ++j)
                         dst[j] += av * row[j];
                     }
                 });
  if (alpha != 1.0)
    for (double &value : out)
      value *= alpha;
  storeDoubles(out, result);
  return Status::success();
}

Status gemm(const Tensor &a, const Tensor &b, const Tensor *c, double alpha,
            double beta, bool transA, bool transB, Tensor &result) {
  const char *kernel = "gemm";
  if (Status s = requireFloatsOfOneType(kernel, {&a, &b, c, &result}); !s.ok())
    return s;
  if (a.rank() != 2 || b.rank() != 2)
    return failure(kernel, "operands must be 2-D");
  int64_t m = transA ? a.shape()[1] : a.shape()[0];
  int64_t k = transA ? a.shape()[0] : a.shape()[1];
  int64_t kb = transB ? b.shape()[1] : b.shape()[0];
  int64_t n = transB ? b.shape()[0] : b.shape()[1];
  if (k != kb)
    return failure(kernel, "cannot multiply " + toString(a.shape()) + " by " +
                               toString(b.shape()));
  Shape expected{m, n};
  if (Status s = requireShape(kernel, result, expected); !s.ok())
    return s;
  if (c && !broadcastsTo(c->shape(), expected))
    return failure(kernel, "c " + toString(c->shape()) +
                               " does not broadcast to " + toString(expected));

  // Row-major copies of op(a) and op(b) keep the product loop one loop.
  std::vector<double> x = loadDoubles(a), y = loadDoubles(b);
  std::vector<double> opA(m * k), opB(k * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      opA[i * k + p] = transA ? x[p * m + i] : x[i * k + p];
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      opB[p * n + j] = transB ? y[j * k + p] : y[p * n + j];
  std::vector<double> out(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      double av = opA[i * k + p];
      for (int64_t j = 0; j < n; ++j)
        out[i * n + j] += av * opB[p * n + j];
    }
  for (double &value : out)
    value *= alpha;
  if (c) {
    std::vector<double> z = loadDoubles(*c);
    walkStrided<1>(expected, {broadcastStrides(c->shape(), expected)},
                   [&](int64_t i, const std::array<int64_t, 1> &offsets) {
                     out[i] += beta * z[offsets[0]];
                   });
  }
  storeDoubles(out, result);
  return Status::success();
}

Status conv(const Tensor &input, const Tensor &weight, const Tensor *bias,
            const std::vector<int64_t> &strides,
            const std::vector<int64_t> &pads,
            const std::vector<int64_t> &dilations, int64_t group,
            Tensor &result) {
  const char *kernel = "conv";
  if (Status s =
          requireFloatsOfOneType(kernel, {&input, &weight, bias, &result});
      !s.ok())
    return s;
  if (input.rank() < 3 || weight.rank() != input.rank() ||
      result.rank() != input.rank())
    return failure(kernel, "expected [N, C, spatial...] operands of one rank");
  size_t rank = static_cast<size_t>(input.rank() - 2);
  int64_t batch = input.shape()[0], channels = input.shape()[1];
  int64_t features = weight.shape()[0], groupChannels = weight.shape()[1];
  if (group <= 0 || groupChannels * group != channels || features % group != 0)
    return failure(kernel, "weight " + toString(weight.shape()) +
                               " does not fit input " +
                               toString(input.shape()) + " with group " +
                               std::to_string(group));
  PoolWindow window;
  window.kernel.assign(weight.shape().begin() + 2, weight.shape().end());
  window.strides = strides;
  window.pads = pads;
  window.dilations = dilations;
  window = completePoolWindow(window, rank);
  Shape inSpatial = spatialShape(input.shape());
  Shape expected{batch, features};
  for (size_t d = 0; d < rank; ++d)
    expected.push_back(slidingOutputSize(
        inSpatial[d], window.kernel[d], window.strides[d], window.pads[d],
        window.pads[rank + d], window.dilations[d], false));
  if (Status s = requireShape(kernel, result, expected); !s.ok())
    return s;
  if (bias && bias->numElements() != features)
    return failure(kernel, "bias " + toString(bias->shape()) +
                               " does not have " + std::to_string(features) +
                               " elements");

  Shape outSpatial = spatialShape(expected);
  int64_t inCount = numElements(inSpatial);
  int64_t outCount = numElements(outSpatial);
  int64_t kernelCount = numElements(window.kernel);
  // For each (kernel position, output position), the input element it
  // reads within one plane, or -1 in the padding. Shared by all planes.
  std::vector<int64_t> source(kernelCount * outCount, -1);
  std::vector<int64_t> inStrides = stridesOf(inSpatial);
  std::vector<int64_t> kernelIndex(rank, 0);
  for (int64_t kp = 0; kp < kernelCount; ++kp) {
    std::vector<int64_t> outIndex(rank, 0);
    for (int64_t o = 0; o < outCount; ++o) {
      int64_t offset = 0;
      bool inside = true;
      for (size_t d = 0; d < rank && inside; ++d) {
        int64_t pos = outIndex[d] * window.strides[d] - window.pads[d] +
                      kernelIndex[d] * window.dilations[d];
        inside = pos >= 0 && pos < inSpatial[d];
        offset += pos * inStrides[d];
      }
      if (inside)
        source[kp * outCount + o] = offset;
      for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
        if (++outIndex[d] < outSpatial[d])
          break;
        outIndex[d] = 0;
      }
    }
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++kernelIndex[d] < window.kernel[d])
        break;
      kernelIndex[d] = 0;
    }
  }

  std::vector<double> x = loadDoubles(input), w = loadDoubles(weight);
  std::vector<double> b = bias ? loadDoubles(*bias) : std::vector<double>();
  std::vector<double> out(static_cast<size_t>(result.numElements()), 0.0);
  int64_t groupFeatures = features / group;
  for (int64_t nIdx = 0; nIdx < batch; ++nIdx)
    for (int64_t f = 0; f < features; ++f) {
      double *acc = out.data() + (nIdx * features + f) * outCount;
      if (bias)
        std::fill(acc, acc + outCount, b[f]);
      int64_t firstChannel = (f / groupFeatures) * groupChannels;
      for (int64_t gc = 0; gc < groupChannels; ++gc) {
        const double *plane =
            x.data() + (nIdx * channels + firstChannel + gc) * inCount;
        const double *taps = w.data() + (f * groupChannels + gc) * kernelCount;
        for (int64_t kp = 0; kp < kernelCount; ++kp) {
          double tap = taps[kp];
          const int64_t *from = source.data() + kp * outCount;
          for (int64_t o = 0; o < outCount; ++o)
            if (from[o] >= 0)
              acc[o] += tap * plane[from[o]];
        }
      }
    }
  storeDoubles(out, result);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// The shape two operands broadcast to, which `result` must have, and each
/// operand's strides over it.
static Status broadcastOperands(const char *kernel, const Tensor &lhs,
                                const Tensor &rhs, const Tensor &result,
                                std::optional<Shape> &shape,
                                std::array<std::vector<int64_t>, 2> &strides) {
  shape = broadcastShapes(lhs.shape(), rhs.shape());
  if (!shape)
    return failure(kernel, toString(lhs.shape()) + " and " +
                               toString(rhs.shape()) + " do not broadcast");
  if (Status s = requireShape(kernel, result, *shape); !s.ok())
    return s;
  strides = {broadcastStrides(lhs.shape(), *shape),
             broadcastStrides(rhs.shape(), *shape)};
  return Status::success();
}

static const char *binaryName(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return "add";
  case BinaryKind::Sub:
    return "sub";
  case BinaryKind::Mul:
    return "mul";
  case BinaryKind::Div:
    return "div";
  case BinaryKind::Pow:
    return "pow";
  }
  return "binary";
}

Status binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs,
              Tensor &result) {
  const char *kernel = binaryName(kind);
  if (Status s = requireSameType(kernel, lhs, rhs); !s.ok())
    return s;
  if (Status s = requireSameType(kernel, lhs, result); !s.ok())
    return s;
  std::optional<Shape> shape;
  std::array<std::vector<int64_t>, 2> strides;
  if (Status s = broadcastOperands(kernel, lhs, rhs, result, shape, strides);
      !s.ok())
    return s;

  if (isFloat(result.dtype())) {
    std::vector<double> x = loadDoubles(lhs), y = loadDoubles(rhs);
    std::vector<double> out(static_cast<size_t>(result.numElements()));
    walkStrided<2>(*shape, strides,
                   [&](int64_t i, const std::array<int64_t, 2> &offsets) {
                     double a = x[offsets[0]], b = y[offsets[1]];
                     switch (kind) {
                     case BinaryKind::Add:
                       out[i] = a + b;
                       break;
                     case BinaryKind::Sub:
                       out[i] = a - b;
                       break;
                     case BinaryKind::Mul:
                       out[i] = a * b;
                       break;
                     case BinaryKind::Div:
                       out[i] = a / b;
                       break;
                     case BinaryKind::Pow:
                       out[i] = std::pow(a, b);
                       break;
                     }
                   });
    storeDoubles(out, result);
    return Status::success();
  }

  std::vector<int64_t> x = loadInts(lhs), y = loadInts(rhs);
  std::vector<int64_t> out(static_cast<size_t>(result.numElements()));
  std::string error;
  walkStrided<2>(
      *shape, strides, [&](int64_t i, const std::array<int64_t, 2> &offsets) {
        int64_t a = x[offsets[0]], b = y[offsets[1]];
        switch (kind) {
        case BinaryKind::Add:
          out[i] = wrapAdd(a, b);
          break;
        case BinaryKind::Sub:
          out[i] = wrapSub(a, b);
          break;
        case BinaryKind::Mul:
          out[i] = wrapMul(a, b);
          break;
        case BinaryKind::Div:
          if (b == 0) {
            if (error.empty())
              error =
                  "integer division by zero at element " + std::to_string(i);
            out[i] = 0;
          } else if (b == -1) {
            out[i] = wrapSub(0, a); // INT64_MIN / -1 wraps
          } else {
            out[i] = a / b; // C++ truncates toward zero
          }
          break;
        case BinaryKind::Pow:
          if (!intPow(a, b, out[i]) && error.empty())
            error = "zero to the negative power " + std::to_string(b) +
                    " at element " + std::to_string(i);
          break;
        }
      });
  if (!error.empty())
    return failure(kernel, error);
  storeInts(out, result);
  return Status::success();
}

Status compare(CompareKind kind, const Tensor &lhs, const Tensor &rhs,
               Tensor &result) {
  static const char *const names[] = {"equal", "less", "greater", "and", "or"};
  const char *kernel = names[static_cast<int>(kind)];
  if (Status s = requireSameType(kernel, lhs, rhs); !s.ok())
    return s;
  if (result.dtype() != DType::I1)
    return failure(kernel, "needs an i1 result");
  if ((kind == CompareKind::And || kind == CompareKind::Or) &&
      lhs.dtype() != DType::I1)
    return failure(kernel, "needs i1 operands");
  std::optional<Shape> shape;
  std::array<std::vector<int64_t>, 2> strides;
  if (Status s = broadcastOperands(kernel, lhs, rhs, result, shape, strides);
      !s.ok())
    return s;
  uint8_t *out = result.data<uint8_t>();
  if (isFloat(lhs.dtype())) {
    std::vector<double> x = loadDoubles(lhs), y = loadDoubles(rhs);
    walkStrided<2>(*shape, strides,
                   [&](int64_t i, const std::array<int64_t, 2> &offsets) {
                     double a = x[offsets[0]], b = y[offsets[1]];
                     out[i] = kind == CompareKind::Equal  ? a == b
                              : kind == CompareKind::Less ? a < b
                                                          : a > b;
                   });
    return Status::success();
  }
  std::vector<int64_t> x = loadInts(lhs), y = loadInts(rhs);
  walkStrided<2>(*shape, strides,
                 [&](int64_t i, const std::array<int64_t, 2> &offsets) {
                   int64_t a = x[offsets[0]], b = y[offsets[1]];
                   switch (kind) {
                   case CompareKind::Equal:
                     out[i] = a == b;
                     break;
                   case CompareKind::Less:
                     out[i] = a < b;
                     break;
                   case CompareKind::Greater:
                     out[i] = a > b;
                     break;
                   case CompareKind::And:
                     out[i] = a != 0 && b != 0;
                     break;
                   case CompareKind::Or:
                     out[i] = a != 0 || b != 0;
                     break;
                   }
                 });
  return Status::success();
}

double dropoutUniform(uint64_t seed, uint64_t step, uint64_t microBatch,
                      uint64_t key, uint64_t index) {
  return device::dropoutDraw(seed, step, microBatch, key, index);
}

Status dropout(const Tensor &input, double ratio, int64_t step,
               int64_t microBatch, int64_t seed, int64_t key,
               const std::vector<int64_t> &logicalShape,
               const std::vector<int64_t> &offsets, Tensor &result) {
  const char *kernel = "dropout";
  if (Status s = requireSameType(kernel, input, result); !s.ok())
    return s;
  if (Status s = requireShape(kernel, result, input.shape()); !s.ok())
    return s;
  if (!(ratio >= 0 && ratio < 1))
    return failure(kernel,
                   "ratio " + std::to_string(ratio) + " is outside [0, 1)");
  const Shape &local = input.shape();
  size_t rank = local.size();
  Shape logical = logicalShape.empty() ? local : Shape(logicalShape);
  std::vector<int64_t> start =
      offsets.empty() ? std::vector<int64_t>(rank, 0) : offsets;
  if (logical.size() != rank || start.size() != rank)
    return failure(kernel, "a block of rank " + std::to_string(rank) +
                               " needs a logical shape and offsets of that "
                               "rank");
  for (size_t d = 0; d < rank; ++d)
    if (start[d] < 0 || start[d] + local[d] > logical[d])
      return failure(kernel, "block " + toString(local) + " at offset " +
                                 std::to_string(start[d]) + " of dimension " +
                                 std::to_string(d) + " leaves " +
                                 toString(logical));
  // Nothing dropped (the inference form): the input as it is.
  if (ratio == 0) {
    std::copy_n(input.bytes(), input.byteSize(), result.bytes());
    return Status::success();
  }
  std::vector<double> x = loadDoubles(input);
  std::vector<double> out(x.size());
  double scale = 1.0 / (1.0 - ratio);
  std::vector<int64_t> index(rank, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d)
      flat = flat * logical[d] + start[d] + index[d];
    bool keep =
        dropoutUniform(static_cast<uint64_t>(seed), static_cast<uint64_t>(step),
                       static_cast<uint64_t>(microBatch),
                       static_cast<uint64_t>(key),
                       static_cast<uint64_t>(flat)) >= ratio;
    out[i] = keep ? x[i] * scale : 0.0;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < local[d])
        break;
      index[d] = 0;
    }
  }
  storeDoubles(out, result);
  return Status::success();
}

Status logicalNot(const Tensor &input, Tensor &result) {
  if (input.dtype() != DType::I1 || result.dtype() != DType::I1)
    return failure("not", "needs an i1 input and result");
  if (Status s = requireShape("not", result, input.shape()); !s.ok())
    return s;
  const uint8_t *in = input.data<uint8_t>();
  uint8_t *out = result.data<uint8_t>();
  for (int64_t i = 0; i < input.numElements(); ++i)
    out[i] = in[i] == 0;
  return Status::success();
}

Status where(const Tensor &condition, const Tensor &lhs, const Tensor &rhs,
             Tensor &result) {
  const char *kernel = "where";
  if (Status s = requireSameType(kernel, lhs, rhs); !s.ok())
    return s;
  if (Status s = requireSameType(kernel, lhs, result); !s.ok())
    return s;
  std::optional<Shape> shape = broadcastShapes(lhs.shape(), rhs.shape());
  if (shape)
    shape = broadcastShapes(condition.shape(), *shape);
  if (!shape)
    return failure(kernel, toString(condition.shape()) + ", " +
                               toString(lhs.shape()) + " and " +
                               toString(rhs.shape()) + " do not broadcast");
  if (Status s = requireShape(kernel, result, *shape); !s.ok())
    return s;
  std::vector<int64_t> chosen = condition.dtype() == DType::I1
                                    ? std::vector<int64_t>()
                                    : loadInts(condition);
  size_t width = byteWidth(result.dtype());
  walkStrided<3>(*shape,
                 {broadcastStrides(condition.shape(), *shape),
                  broadcastStrides(lhs.shape(), *shape),
                  broadcastStrides(rhs.shape(), *shape)},
                 [&](int64_t i, const std::array<int64_t, 3> &offsets) {
                   bool pick = condition.dtype() == DType::I1
                                   ? condition.data<uint8_t>()[offsets[0]] != 0
                                   : chosen[offsets[0]] != 0;
                   const std::byte *src =
                       pick ? lhs.bytes() + offsets[1] * width
                            : rhs.bytes() + offsets[2] * width;
                   copyElement(result.bytes() + i * width, src, width);
                 });
  return Status::success();
}

static const char *unaryName(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Relu:
    return "relu";
  case UnaryKind::Tanh:
    return "tanh";
  case UnaryKind::Sqrt:
    return "sqrt";
  case UnaryKind::Exp:
    return "exp";
  case UnaryKind::Log:
    return "log";
  case UnaryKind::Sigmoid:
    return "sigmoid";
  case UnaryKind::Erf:
    return "erf";
  case UnaryKind::HardSwish:
    return "hard_swish";
  case UnaryKind::LeakyRelu:
    return "leaky_relu";
  case UnaryKind::HardSigmoid:
    return "hard_sigmoid";
  case UnaryKind::GeluExact:
  case UnaryKind::GeluTanh:
    return "gelu";
  }
  return "unary";
}

Status unary(UnaryKind kind, const Tensor &input, Tensor &result, double alpha,
             double beta) {
  const char *kernel = unaryName(kind);
  if (Status s = requireFloatsOfOneType(kernel, {&input, &result}); !s.ok())
    return s;
  if (Status s = requireShape(kernel, result, input.shape()); !s.ok())
    return s;
  std::vector<double> values = loadDoubles(input);
  const double sqrtHalf = std::sqrt(0.5);
  const double sqrtTwoOverPi = std::sqrt(2.0 / 3.14159265358979323846);
  for (double &x : values) {
    switch (kind) {
    case UnaryKind::Relu:
      // Keeps NaN (std::max(x, 0.0) would not for a NaN x).
      x = x < 0 ? 0.0 : x;
      break;
    case UnaryKind::Tanh:
      x = std::tanh(x);
      break;
    case UnaryKind::Sqrt:
      x = std::sqrt(x);
      break;
    case UnaryKind::Exp:
      x = std::exp(x);
      break;
    case UnaryKind::Log:
      x = std::log(x);
      break;
    case UnaryKind::Sigmoid:
      x = sigmoid(x);
      break;
    case UnaryKind::Erf:
      x = std::erf(x);
      break;
    case UnaryKind::HardSwish:
      x = x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
      break;
    case UnaryKind::LeakyRelu:
      x = x >= 0 ? x : alpha * x;
      break;
    case UnaryKind::HardSigmoid:
      x = std::max(0.0, std::min(1.0, alpha * x + beta));
      break;
    case UnaryKind::GeluExact:
      x = 0.5 * x * (1 + std::erf(x * sqrtHalf));
      break;
    case UnaryKind::GeluTanh:
      x = 0.5 * x * (1 + std::tanh(sqrtTwoOverPi * (x + 0.044715 * x * x * x)));
      break;
    }
  }
  storeDoubles(values, result);
  return Status::success();
}

namespace {

/// What each output element of nn.resize reads: per axis and output index,
/// the input's two indices around its coordinate and the second's weight
/// (one index and weight 0 where the axis keeps its extent or the mode is
/// nearest). resize and resizeGrad walk the same samples, one to gather,
/// the other to scatter back.
struct ResizeSamples {
  ResizeSamples(const Shape &in, const Shape &out, const std::string &mode,
                const std::string &coordinates, const std::string &rounding)
      : out(out), linear(mode == "linear"), low(in.size()), high(in.size()),
        weight(in.size()), inStride(in.size(), 1) {
    size_t rank = in.size();
    for (size_t d = rank; d-- > 1;)
      inStride[d - 1] = inStride[d] * in[d];
    device::ResizeMode parsed = device::resizeMode(mode, coordinates, rounding);
    for (size_t d = 0; d < rank; ++d)
      for (int64_t x = 0; x < out[d]; ++x) {
        int64_t below = 0, above = 0;
        double upper = 0;
        device::resizeAxisSample(parsed, in[d], out[d], x, below, above, upper);
        low[d].push_back(below);
        high[d].push_back(above);
        weight[d].push_back(upper);
      }
  }

  /// Calls `visit(outputElement, inputElement, weight)` for every input
  /// element each output element reads, with a weight that is not zero.
  template <typename Visit> void forEach(Visit visit) const {
    size_t rank = out.size();
    int64_t elements = numElements(out);
    int64_t corners = int64_t{1} << (linear ? rank : 0);
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0; i < elements; ++i) {
      for (int64_t corner = 0; corner < corners; ++corner) {
        double cornerWeight = 1;
        int64_t source = 0;
        for (size_t d = 0; d < rank && cornerWeight != 0; ++d) {
          auto x = static_cast<size_t>(index[d]);
          bool upper = (corner >> d) & 1;
          double w = weight[d][x];
          cornerWeight *= upper ? w : 1 - w;
          source += (upper ? high[d] : low[d])[x] * inStride[d];
        }
        if (cornerWeight != 0)
          visit(i, source, cornerWeight);
      }
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < out[d])
          break;
        index[d] = 0;
      }
    }
  }

  Shape out;
  bool linear;
  std::vector<std::vector<int64_t>> low, high;
  std::vector<std::vector<double>> weight;
  std::vector<int64_t> inStride;
};

Status checkResizeShapes(const char *kernel, const Tensor &input,
                         const Tensor &result) {
  if (Status s = requireFloatsOfOneType(kernel, {&input, &result}); !s.ok())
    return s;
  if (input.rank() != result.rank())
    return Status::failure(std::string(kernel) + ": an input of rank " +
                           std::to_string(input.rank()) +
                           " and a result of rank " +
                           std::to_string(result.rank()));
  return Status::success();
}

} // namespace

Status topK(const Tensor &input, int64_t axis, bool largest, Tensor &values,
            Tensor &indices) {
  const char *kernel = "top_k";
  if (Status s = requireFloatsOfOneType(kernel, {&input, &values}); !s.ok())
    return s;
  Shape shape = input.shape();
  if (axis < 0 || axis >= input.rank() || indices.dtype() != DType::I64 ||
      values.shape() != indices.shape() || values.rank() != input.rank())
    return Status::failure("top_k: values and i64 indices of one shape, "
                           "along an axis of the input, expected");
  int64_t k = values.shape()[static_cast<size_t>(axis)];
  int64_t n = shape[static_cast<size_t>(axis)];
  shape[static_cast<size_t>(axis)] = k;
  if (Status s = requireShape(kernel, values, shape); !s.ok())
    return s;
  if (k > n)
    return Status::failure("top_k: k " + std::to_string(k) + " is more than " +
                           std::to_string(n) + " elements");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= input.shape()[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < input.rank(); ++d)
    inner *= input.shape()[static_cast<size_t>(d)];
  std::vector<int64_t> order(static_cast<size_t>(n));
  auto *out = indices.data<int64_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return input.get((o * n + j) * inner + i); };
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t a, int64_t b) {
                          double x = at(a), y = at(b);
                          if (x != y)
                            return largest ? x > y : x < y;
                          return a < b;
                        });
      for (int64_t j = 0; j < k; ++j) {
        int64_t position = (o * k + j) * inner + i;
        values.set(position, at(order[static_cast<size_t>(j)]));
        out[position] = order[static_cast<size_t>(j)];
      }
    }
  return Status::success();
}

Status resize(const Tensor &input, const std::string &mode,
              const std::string &coordinates, const std::string &rounding,
              Tensor &result) {
  if (Status s = checkResizeShapes("resize", input, result); !s.ok())
    return s;
  if (input.numElements() == 0 || result.numElements() == 0)
    return Status::success();
  std::vector<double> sums(static_cast<size_t>(result.numElements()), 0);
  ResizeSamples(input.shape(), result.shape(), mode, coordinates, rounding)
      .forEach([&](int64_t at, int64_t source, double weight) {
        sums[static_cast<size_t>(at)] += weight * input.get(source);
      });
  for (int64_t i = 0; i < result.numElements(); ++i)
    result.set(i, sums[static_cast<size_t>(i)]);
  return Status::success();
}

Status resizeGrad(const Tensor &dy, const std::string &mode,
                  const std::string &coordinates, const std::string &rounding,
                  Tensor &dx) {
  if (Status s = checkResizeShapes("resize_grad", dx, dy); !s.ok())
    return s;
  std::vector<double> sums(static_cast<size_t>(dx.numElements()), 0);
  if (dx.numElements() > 0 && dy.numElements() > 0)
    ResizeSamples(dx.shape(), dy.shape(), mode, coordinates, rounding)
        .forEach([&](int64_t at, int64_t source, double weight) {
          sums[static_cast<size_t>(source)] += weight * dy.get(at);
        });
  for (int64_t i = 0; i < dx.numElements(); ++i)
    dx.set(i, sums[static_cast<size_t>(i)]);
  return Status::success();
}

Status clip(const Tensor &input, std::optional<double> min,
            std::optional<double> max, Tensor &result) {
  const char *kernel = "clip";
  if (Status s = requireFloatsOfOneType(kernel, {&input, &result}); !s.ok())
    return s;
  if (Status s = requireShape(kernel, result, input.shape()); !s.ok())
    return s;
  std::vector<double> values = loadDoubles(input);
  // Comparisons with NaN are false, so NaN passes through as in ONNX.
  for (double &x : values) {
    if (min && x < *min)
      x = *min;
    if (max && x > *max)
      x = *max;
  }
  storeDoubles(values, result);
  return Status::success();
}

Status cast(const Tensor &input, Tensor &result) {
  if (input.numElements() != result.numElements())
    return failure("cast", "input " + toString(input.shape()) + " and result " +
                               toString(result.shape()) + " differ in size");
  // Integer to integer stays exact (and wraps) without a trip through
  // double, which would lose I64 values beyond 2^53.
  if (!isFloat(input.dtype()) && !isFloat(result.dtype())) {
    storeInts(loadInts(input), result);
    return Status::success();
  }
  storeDoubles(loadDoubles(input), result);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

static Status softmaxImpl(const char *kernel, bool logarithm,
                          const Tensor &input, int64_t axis, Tensor &result) {
  if (Status s = requireFloatsOfOneType(kernel, {&input, &result}); !s.ok())
    return s;
  if (Status s = requireShape(kernel, result, input.shape()); !s.ok())
    return s;
  axis = normalizeAxis(axis, input.rank());
  if (axis < 0 || axis >= input.rank())
    return failure(kernel, "axis out of range for " + toString(input.shape()));
  int64_t outer = productOf(input.shape(), 0, axis);
  int64_t size = input.shape()[axis];
  int64_t inner = productOf(input.shape(), axis + 1, input.rank());
  std::vector<double> x = loadDoubles(input);
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * size * inner + in;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < size; ++j)
        max = std::max(max, x[base + j * inner]);
      double sum = 0;
      for (int64_t j = 0; j < size; ++j)
        sum += std::exp(x[base + j * inner] - max);
      double logSum = std::log(sum);
      for (int64_t j = 0; j < size; ++j) {
        double shifted = x[base + j * inner] - max;
        out[base + j * inner] =
            logarithm ? shifted - logSum : std::exp(shifted) / sum;
      }
    }
  storeDoubles(out, result);
  return Status::success();
}

Status softmax(const Tensor &input, int64_t axis, Tensor &result) {
  return softmaxImpl("softmax", false, input, axis, result);
}

Status logSoftmax(const Tensor &input, int64_t axis, Tensor &result) {
  return softmaxImpl("log_softmax", true, input, axis, result);
}

Status layerNorm(const Tensor &input, const Tensor &scale, const Tensor *bias,
                 int64_t axis, double epsilon, Tensor &result) {
  const char *kernel = "layer_norm";
  if (Status s =
          requireFloatsOfOneType(kernel, {&input, &scale, bias, &result});
      !s.ok())
    return s;
  if (Status s = requireShape(kernel, result, input.shape()); !s.ok())
    return s;
  axis = normalizeAxis(axis, input.rank());
  if (axis < 0 || axis > input.rank())
    return failure(kernel, "axis out of range for " + toString(input.shape()));
  Shape normalized(input.shape().begin() + axis, input.shape().end());
  if (!broadcastsTo(scale.shape(), normalized) ||
      (bias && !broadcastsTo(bias->shape(), normalized)))
    return failure(kernel, "scale or bias does not broadcast to " +
                               toString(normalized));
  int64_t outer = productOf(input.shape(), 0, axis);
  int64_t inner = numElements(normalized);
  // Scale and bias spelled out over the normalized shape.
  auto spread = [&](const Tensor &tensor) {
    std::vector<double> own = loadDoubles(tensor), full(inner);
    walkStrided<1>(normalized, {broadcastStrides(tensor.shape(), normalized)},
                   [&](int64_t i, const std::array<int64_t, 1> &offsets) {
                     full[i] = own[offsets[0]];
                   });
    return full;
  };
  std::vector<double> gamma = spread(scale);
  std::vector<double> beta =
      bias ? spread(*bias) : std::vector<double>(inner, 0.0);
  std::vector<double> x = loadDoubles(input), out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    const double *row = x.data() + o * inner;
    double mean = 0;
    for (int64_t j = 0; j < inner; ++j)
      mean += row[j];
    mean /= static_cast<double>(inner);
    double variance = 0;
    for (int64_t j = 0; j < inner; ++j)
      variance += (row[j] - mean) * (row[j] - mean);
    variance /= static_cast<double>(inner);
    double inverse = 1 / std::sqrt(variance + epsilon);
    for (int64_t j = 0; j < inner; ++j)
      out[o * inner + j] = (row[j] - mean) * inverse * gamma[j] + beta[j];
  }
  storeDoubles(out, result);
  return Status::success();
}

Status batchNorm(const Tensor &input, const Tensor &scale, const Tensor &bias,
                 const Tensor &mean, const Tensor &variance, double epsilon,
                 Tensor &result) {
  const char *kernel = "batch_norm";
  if (Status s = requireFloatsOfOneType(
          kernel, {&input, &scale, &bias, &mean, &variance, &result});
      !s.ok())
    return s;
  if (Status s = requireShape(kernel, result, input.shape()); !s.ok())
    return s;
  if (input.rank() < 2)
    return failure(kernel, "expected an [N, C, ...] input");
  int64_t channels = input.shape()[1];
  for (const Tensor *stat : {&scale, &bias, &mean, &variance})
    if (stat->numElements() != channels)
      return failure(kernel, "statistics " + toString(stat->shape()) +
                                 " do not have " + std::to_string(channels) +
                                 " elements");
  int64_t inner = productOf(input.shape(), 2, input.rank());
  std::vector<double> x = loadDoubles(input), gamma = loadDoubles(scale),
                      beta = loadDoubles(bias), mu = loadDoubles(mean),
                      var = loadDoubles(variance);
  for (int64_t n = 0; n < input.shape()[0]; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      double factor = gamma[c] / std::sqrt(var[c] + epsilon);
      double *plane = x.data() + (n * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        plane[i] = (plane[i] - mu[c]) * factor + beta[c];
    }
  storeDoubles(x, result);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

static Status poolImpl(const char *kernel, bool average, const Tensor &input,
                       const PoolWindow &window, Tensor &result) {
  if (Status s = requireFloatsOfOneType(kernel, {&input, &result}); !s.ok())
    return s;
  if (input.rank() < 3 || result.rank() != input.rank() ||
      window.kernel.size() != static_cast<size_t>(input.rank() - 2))
    return failure(kernel, "expected [N, C, spatial...] with one kernel "
                           "size per spatial dimension");
  size_t rank = window.kernel.size();
  PoolWindow full = completePoolWindow(window, rank);
  Shape inSpatial = spatialShape(input.shape());
  Shape expected{input.shape()[0], input.shape()[1]};
  for (size_t d = 0; d < rank; ++d)
    expected.push_back(slidingOutputSize(
        inSpatial[d], full.kernel[d], full.strides[d], full.pads[d],
        full.pads[rank + d], full.dilations[d], full.ceilMode));
  if (Status s = requireShape(kernel, result, expected); !s.ok())
    return s;
  Shape outSpatial = spatialShape(expected);
  int64_t planes = expected[0] * expected[1];
  int64_t inCount = numElements(inSpatial), outCount = numElements(outSpatial);
  std::vector<double> x = loadDoubles(input);
  std::vector<double> out(static_cast<size_t>(result.numElements()));
  forEachPoolWindow(
      full, inSpatial, outSpatial,
      [&](int64_t o, const PoolWindowElements &elements) {
        int64_t divisor = full.countIncludePad
                              ? elements.paddedCount
                              : static_cast<int64_t>(elements.offsets.size());
        for (int64_t p = 0; p < planes; ++p) {
          const double *plane = x.data() + p * inCount;
          double value;
          if (average) {
            double sum = 0;
            for (int64_t offset : elements.offsets)
              sum += plane[offset];
            value = divisor ? sum / static_cast<double>(divisor) : 0.0;
          } else {
            value = -std::numeric_limits<double>::infinity();
            for (int64_t offset : elements.offsets) {
              double v = plane[offset];
              if (std::isnan(v)) {
                value = v;
                break;
              }
              if (v > value)
                value = v;
            }
          }
          out[p * outCount + o] = value;
        }
      });
  storeDoubles(out, result);
  return Status::success();
}

Status maxPool(const Tensor &input, const PoolWindow &window, Tensor &result) {
  return poolImpl("max_pool", false, input, window, result);
}

Status avgPool(const Tensor &input, const PoolWindow &window, Tensor &result) {
  return poolImpl("avg_pool", true, input, window, result);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

Status reshape(const Tensor &input, Tensor &result) {
  if (Status s = requireSameType("reshape", input, result); !s.ok())
    return s;
  if (input.byteSize() != result.byteSize())
    return failure("reshape", "cannot reshape " + toString(input.shape()) +
                                  " to " + toString(result.shape()));
  if (input.byteSize())
    std::memcpy(result.bytes(), input.bytes(), input.byteSize());
  return Status::success();
}

Status expand(const Tensor &input, Tensor &result) {
  if (Status s = requireSameType("expand", input, result); !s.ok())
    return s;
  if (!broadcastsTo(input.shape(), result.shape()))
    return failure("expand", toString(input.shape()) +
                                 " does not broadcast to " +
                                 toString(result.shape()));
  gatherStrided(input, broadcastStrides(input.shape(), result.shape()), 0,
                result);
  return Status::success();
}

Status transpose(const Tensor &input, const std::vector<int64_t> &perm,
                 Tensor &result) {
  const char *kernel = "transpose";
  if (Status s = requireSameType(kernel, input, result); !s.ok())
    return s;
  if (perm.size() != input.shape().size())
    return failure(kernel, "permutation of the wrong length");
  Shape expected(perm.size());
  std::vector<int64_t> own = stridesOf(input.shape()), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= input.rank())
      return failure(kernel, "permutation entry out of range");
    expected[i] = input.shape()[perm[i]];
    strides[i] = own[perm[i]];
  }
  if (Status s = requireShape(kernel, result, expected); !s.ok())
    return s;
  gatherStrided(input, strides, 0, result);
  return Status::success();
}

Status concat(const std::vector<const Tensor *> &inputs, int64_t axis,
              Tensor &result) {
  const char *kernel = "concat";
  axis = normalizeAxis(axis, result.rank());
  if (axis < 0 || axis >= result.rank())
    return failure(kernel, "axis out of range");
  int64_t total = 0;
  for (const Tensor *input : inputs) {
    if (Status s = requireSameType(kernel, *input, result); !s.ok())
      return s;
    Shape expected = result.shape();
    expected[axis] =
        input->shape().size() == expected.size() ? input->shape()[axis] : -1;
    if (input->shape() != expected)
      return failure(kernel, "operand " + toString(input->shape()) +
                                 " does not fit result " +
                                 toString(result.shape()));
    total += input->shape()[axis];
  }
  if (total != result.shape()[axis])
    return failure(kernel, "operand sizes along the axis do not add up");
  size_t width = byteWidth(result.dtype());
  int64_t outer = productOf(result.shape(), 0, axis);
  int64_t inner = productOf(result.shape(), axis + 1, result.rank());
  int64_t resultRow = result.shape()[axis] * inner;
  int64_t at = 0;
  for (const Tensor *input : inputs) {
    int64_t row = input->shape()[axis] * inner;
    for (int64_t o = 0; o < outer && row; ++o)
      std::memcpy(result.bytes() + (o * resultRow + at) * width,
                  input->bytes() + o * row * width, row * width);
    at += row;
  }
  return Status::success();
}

Status split(const Tensor &input, int64_t axis,
             const std::vector<Tensor *> &results) {
  const char *kernel = "split";
  axis = normalizeAxis(axis, input.rank());
  if (axis < 0 || axis >= input.rank())
    return failure(kernel, "axis out of range");
  int64_t total = 0;
  for (Tensor *result : results) {
    if (Status s = requireSameType(kernel, input, *result); !s.ok())
      return s;
    Shape expected = input.shape();
    expected[axis] =
        result->shape().size() == expected.size() ? result->shape()[axis] : -1;
    if (result->shape() != expected)
      return failure(kernel, "result " + toString(result->shape()) +
                                 " does not fit operand " +
                                 toString(input.shape()));
    total += result->shape()[axis];
  }
  if (total != input.shape()[axis])
    return failure(kernel, "result sizes along the axis do not add up");
  size_t width = byteWidth(input.dtype());
  int64_t outer = productOf(input.shape(), 0, axis);
  int64_t inner = productOf(input.shape(), axis + 1, input.rank());
  int64_t inputRow = input.shape()[axis] * inner;
  int64_t at = 0;
  for (Tensor *result : results) {
    int64_t row = result->shape()[axis] * inner;
    for (int64_t o = 0; o < outer && row; ++o)
      std::memcpy(result->bytes() + o * row * width,
                  input.bytes() + (o * inputRow + at) * width, row * width);
    at += row;
  }
  return Status::success();
}

Status slice(const Tensor &input, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &steps, Tensor &result) {
  const char *kernel = "slice";
  if (Status s = requireSameType(kernel, input, result); !s.ok())
    return s;
  size_t rank = input.shape().size();
  if (starts.size() != rank || steps.size() != rank ||
      result.shape().size() != rank)
    return failure(kernel, "starts, steps and result must have the input's "
                           "rank");
  std::vector<int64_t> own = stridesOf(input.shape()), strides(rank);
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    int64_t size = result.shape()[d];
    if (steps[d] == 0)
      return failure(kernel, "step 0 in dimension " + std::to_string(d));
    int64_t last = starts[d] + (size - 1) * steps[d];
    if (size > 0 && (starts[d] < 0 || starts[d] >= input.shape()[d] ||
                     last < 0 || last >= input.shape()[d]))
      return failure(kernel, "dimension " + std::to_string(d) + ": " +
                                 std::to_string(size) + " elements from " +
                                 std::to_string(starts[d]) + " by step " +
                                 std::to_string(steps[d]) + " leave [0, " +
                                 std::to_string(input.shape()[d]) + ")");
    base += starts[d] * own[d];
    strides[d] = steps[d] * own[d];
  }
  if (result.numElements() == 0)
    return Status::success();
  gatherStrided(input, strides, base, result);
  return Status::success();
}

Status gather(const Tensor &input, const Tensor &indices, int64_t axis,
              Tensor &result) {
  const char *kernel = "gather";
  if (Status s = requireSameType(kernel, input, result); !s.ok())
    return s;
  if (indices.dtype() != DType::I32 && indices.dtype() != DType::I64)
    return failure(kernel, std::string("indices must be i32 or i64, got ") +
                               toString(indices.dtype()));
  axis = normalizeAxis(axis, input.rank());
  if (axis < 0 || axis >= input.rank())
    return failure(kernel, "axis out of range");
  Shape expected(input.shape().begin(), input.shape().begin() + axis);
  expected.insert(expected.end(), indices.shape().begin(),
                  indices.shape().end());
  expected.insert(expected.end(), input.shape().begin() + axis + 1,
                  input.shape().end());
  if (Status s = requireShape(kernel, result, expected); !s.ok())
    return s;
  int64_t bound = input.shape()[axis];
  int64_t count = indices.numElements();
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = indexAt(indices, j);
    if (index < -bound || index >= bound)
      return failure(kernel, "index " + std::to_string(index) +
                                 " out of range [" + std::to_string(-bound) +
                                 ", " + std::to_string(bound) + ")");
    rows[j] = index < 0 ? index + bound : index;
  }
  size_t width = byteWidth(input.dtype());
  int64_t outer = productOf(input.shape(), 0, axis);
  int64_t inner = productOf(input.shape(), axis + 1, input.rank());
  size_t chunk = static_cast<size_t>(inner) * width;
  if (chunk == 0)
    return Status::success();
  std::byte *dst = result.bytes();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      std::memcpy(dst, input.bytes() + (o * bound + rows[j]) * chunk, chunk);
      dst += chunk;
    }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Status reduce(ReduceOp op, const Tensor &input,
              const std::vector<int64_t> &axes, Tensor &result) {
  const char *kernel = op == ReduceOp::Sum ? "reduce_sum" : "reduce_mean";
  if (Status s = requireSameType(kernel, input, result); !s.ok())
    return s;
  Shape kept = input.shape();
  std::vector<bool> reduced(kept.size(), axes.empty());
  for (int64_t axis : axes) {
    axis = normalizeAxis(axis, input.rank());
    if (axis < 0 || axis >= input.rank())
      return failure(kernel, "axis " + std::to_string(axis) +
                                 " out of range for " +
                                 toString(input.shape()));
    reduced[axis] = true;
  }
  int64_t count = 1;
  for (size_t d = 0; d < kept.size(); ++d)
    if (reduced[d]) {
      count *= kept[d];
      kept[d] = 1;
    }
  if (result.numElements() != numElements(kept))
    return failure(kernel, "result " + toString(result.shape()) +
                               " does not hold the reduction of " +
                               toString(input.shape()));
  // Walking the input, each element lands in the result element of its
  // unreduced coordinates: the keepdims strides with 0 on reduced axes.
  std::vector<int64_t> strides = stridesOf(kept);
  for (size_t d = 0; d < kept.size(); ++d)
    if (reduced[d])
      strides[d] = 0;

  if (isFloat(input.dtype())) {
    std::vector<double> x = loadDoubles(input);
    std::vector<double> out(static_cast<size_t>(result.numElements()), 0.0);
    walkStrided<1>(input.shape(), {strides},
                   [&](int64_t i, const std::array<int64_t, 1> &offsets) {
                     out[offsets[0]] += x[i];
                   });
    if (op == ReduceOp::Mean)
      for (double &value : out)
        value /= static_cast<double>(count);
    storeDoubles(out, result);
    return Status::success();
  }
  std::vector<int64_t> x = loadInts(input);
  std::vector<int64_t> out(static_cast<size_t>(result.numElements()), 0);
  walkStrided<1>(input.shape(), {strides},
                 [&](int64_t i, const std::array<int64_t, 1> &offsets) {
                   out[offsets[0]] = wrapAdd(out[offsets[0]], x[i]);
                 });
  if (op == ReduceOp::Mean && count > 0)
    for (int64_t &value : out)
      value /= count;
  storeInts(out, result);
  return Status::success();
}

} // namespace parplan::runtime
