//===- KernelCall.cpp - call a kernel by its id ---------------------------===//
//
// One handler per kernel (KernelOps.h gives its operand and result counts
// and its attributes with the op definition's defaults): it reads the
// attributes and calls the kernel. A handler reads every attribute the op
// has, even one its kernel does not need, and a call fails when one is left
// unread: a new attribute in the .td that the runtime ignored would
// otherwise change nothing silently.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/KernelCall.h"

#include "parplan/Runtime/KernelOps.h"
#include "parplan/Runtime/Kernels.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <utility>

namespace parplan::runtime {

const char *toString(AttrValue::Kind kind) {
  switch (kind) {
  case AttrValue::Kind::Int:
    return "int";
  case AttrValue::Kind::Float:
    return "float";
  case AttrValue::Kind::Bool:
    return "bool";
  case AttrValue::Kind::String:
    return "string";
  case AttrValue::Kind::Ints:
    return "int list";
  }
  return "?";
}

bool operator==(const AttrValue &lhs, const AttrValue &rhs) {
  return lhs.value == rhs.value;
}

namespace {

using Kind = AttrValue::Kind;

/// One kernel call being prepared: the operands and results, already
/// checked against the signature, and the attributes, read with the
/// defaults of the kernel's op definition (KernelOps.h). Reading records the
/// first problem instead of failing, so a handler reads all its attributes
/// into locals and then calls `run`, which calls the kernel only if every
/// attribute was fine.
class Call {
public:
  /// With `resolved`, the call records every attribute as read (defaults
  /// filled, axes normalized) there and `run` calls no kernel.
  Call(const KernelOp &kernel, const AttrMap &attrs,
       const std::vector<const Tensor *> &operands,
       const std::vector<Tensor *> &results, AttrMap *resolved = nullptr)
      : kernel(kernel), attrs(attrs), operands(operands), results(results),
        resolved(resolved) {}

  const Tensor &in(size_t i) const { return *operands[i]; }
  const Tensor *optionalIn(size_t i) const { return operands[i]; }
  Tensor &out(size_t i) const { return *results[i]; }
  const std::vector<const Tensor *> &allIn() const { return operands; }
  const std::vector<Tensor *> &allOut() const { return results; }

  /// An I64Attr.
  int64_t i64(const char *name) {
    const AttrValue *value = find(name, AttrType::I64);
    return record(name, value ? *value->getInt() : 0);
  }
  /// An F64Attr.
  double f64(const char *name) {
    const AttrValue *value = find(name, AttrType::F64);
    return record(name, value ? *value->getFloat() : 0.0);
  }
  /// An F32Attr: rounded to float, as the MLIR attribute holds it, so that
  /// a value written as a double gives what the interpreter's getters give
  /// (the generated defaults are rounded already).
  double f32(const char *name) {
    const AttrValue *value = find(name, AttrType::F32);
    return record(name, value ? roundToFloat(*value->getFloat()) : 0.0);
  }
  /// An OptionalAttr<F32Attr> without a default (clip's bounds, matmul's
  /// alpha): absent is the kernel's to interpret.
  std::optional<double> optionalF32(const char *name) {
    if (const AttrValue *value = find(name, AttrType::F32))
      return record(name, roundToFloat(*value->getFloat()));
    return std::nullopt;
  }
  /// A BoolAttr, or a UnitAttr (true when present).
  bool flag(const char *name) {
    const KernelAttr *attr = kernel.findAttr(name);
    const AttrValue *value =
        find(name, attr && attr->type == AttrType::Unit ? AttrType::Unit
                                                        : AttrType::Bool);
    return record(name, value && *value->getBool());
  }
  /// A DenseI64ArrayAttr.
  std::vector<int64_t> ints(const char *name) {
    const AttrValue *value = find(name, AttrType::I64Array);
    return record(name, value ? *value->getInts() : std::vector<int64_t>{});
  }
  /// An enum attribute's case name.
  std::string enumCase(const char *name) {
    const AttrValue *value = find(name, AttrType::Enum);
    if (!value)
      return "";
    const KernelAttr *attr = kernel.findAttr(name);
    const std::string &caseName = *value->getString();
    if (std::find(attr->cases.begin(), attr->cases.end(), caseName) ==
        attr->cases.end()) {
      std::string expected;
      for (size_t i = 0; i < attr->cases.size(); ++i)
        expected += (i ? " or \"" : "\"") + attr->cases[i] + "\"";
      fail("attribute '" + std::string(name) + "' must be " + expected +
           ", not \"" + caseName + "\"");
      return "";
    }
    return record(name, caseName);
  }
  /// An attribute the kernel does not need (the result shapes say the
  /// same): accepted when of the right type, and ignored.
  void unused(const char *name) {
    const KernelAttr *attr = kernel.findAttr(name);
    if (const AttrValue *value = find(name, attr ? attr->type : AttrType::I64))
      record(name, *value);
  }

  /// A signed axis (ONNX: [-rank, rank)) of a tensor of rank `rank`, as an
  /// index in [0, rank).
  int64_t axis(const char *name, int64_t rank) {
    int64_t value = i64(name);
    return record(name, normalize(name, value, rank));
  }
  /// Reduction axes: signed, normalized, sorted, without repeats; empty
  /// (the default) reduces every dimension.
  std::vector<int64_t> axes(const char *name, int64_t rank) {
    std::vector<int64_t> values = ints(name);
    for (int64_t &value : values)
      value = normalize(name, value, rank);
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return record(name, values);
  }

  /// A window over the spatial dimensions of `input` ([N, C, D1..Dk]):
  /// `kernel` (pooling only; conv's is the weight's shape), strides, pads
  /// (k begins, then k ends) and dilations, checked as the verifier checks
  /// them, since the forward kernels trust their lengths.
  PoolWindow window(const Tensor &input, bool withKernel) {
    PoolWindow window;
    if (withKernel)
      window.kernel = ints("kernel");
    window.strides = ints("strides");
    window.pads = ints("pads");
    window.dilations = ints("dilations");
    // A rank below 3 is the kernel's error to report.
    size_t k = input.rank() >= 3 ? static_cast<size_t>(input.rank() - 2) : 0;
    if (!k || !error.empty())
      return window;
    auto allAtLeast = [](const std::vector<int64_t> &values, int64_t least) {
      return std::all_of(values.begin(), values.end(),
                         [&](int64_t v) { return v >= least; });
    };
    if ((withKernel && window.kernel.size() != k) ||
        window.strides.size() != k || window.dilations.size() != k ||
        window.pads.size() != 2 * k)
      fail("needs " + std::to_string(k) +
           std::string(withKernel ? " kernel sizes, " : " ") +
           "strides and dilations and " + std::to_string(2 * k) + " pads for " +
           std::to_string(k) + " spatial dimensions");
    else if (!allAtLeast(window.kernel, 1) || !allAtLeast(window.strides, 1) ||
             !allAtLeast(window.dilations, 1) || !allAtLeast(window.pads, 0))
      fail("kernel sizes, strides and dilations must be positive and pads "
           "non-negative");
    return window;
  }

  /// Calls `kernel` unless an attribute was missing, of the wrong kind or
  /// out of range, or the map holds one the op does not have. An attribute
  /// of the op that the handler did not read is the runtime's bug (a new
  /// attribute in the .td that no kernel honours), reported as such.
  template <typename Fn> Status run(Fn &&kernelCall) {
    if (error.empty())
      for (const auto &[name, value] : attrs)
        if (!kernel.findAttr(name)) {
          fail("unknown attribute '" + name + "'");
          break;
        }
    if (error.empty())
      for (const KernelAttr &attr : kernel.attrs)
        if (!read.count(attr.name)) {
          fail("the runtime does not read attribute '" +
               std::string(attr.name) + "'");
          break;
        }
    if (!error.empty())
      return Status::failure(error);
    return resolved ? Status::success() : kernelCall();
  }

private:
  const KernelOp &kernel;
  const AttrMap &attrs;
  const std::vector<const Tensor *> &operands;
  const std::vector<Tensor *> &results;
  AttrMap *resolved;
  std::set<std::string> read;
  std::string error;

  static double roundToFloat(double value) {
    return static_cast<double>(static_cast<float>(value));
  }

  template <typename T> T record(const char *name, T value) {
    if (resolved)
      (*resolved)[name] = AttrValue(value);
    return value;
  }

  void fail(const std::string &message) {
    if (error.empty())
      error = "nn." + std::string(kernel.name) + ": " + message;
  }

  /// The attribute as given or, absent, its default; nullptr when absent
  /// without a default (and a recorded error if it is required) or of
  /// another kind. `type` is what the handler reads it as: a handler
  /// reading an attribute its op does not declare so is a runtime bug.
  const AttrValue *find(const char *name, AttrType type) {
    read.insert(name);
    const KernelAttr *attr = kernel.findAttr(name);
    if (!attr) {
      fail(std::string("the runtime reads attribute '") + name +
           "', which the op does not declare");
      return nullptr;
    }
    if (attr->type != type) {
      fail(std::string("the runtime reads attribute '") + name + "' as " +
           toString(type) + ", which the op declares as " +
           toString(attr->type));
      return nullptr;
    }
    auto it = attrs.find(name);
    if (it == attrs.end()) {
      if (attr->required)
        fail("missing attribute '" + std::string(name) + "'");
      return attr->byDefault ? &*attr->byDefault : nullptr;
    }
    AttrValue::Kind kind = valueKind(type);
    if (it->second.kind() != kind) {
      fail("attribute '" + std::string(name) + "' must be " +
           std::string(kind == Kind::Int || kind == Kind::Ints ? "an " : "a ") +
           toString(kind) + ", not " + toString(it->second.kind()));
      return nullptr;
    }
    return &it->second;
  }

  int64_t normalize(const char *name, int64_t axis, int64_t rank) {
    if (axis < -rank || axis >= rank) {
      fail("attribute '" + std::string(name) + "' = " + std::to_string(axis) +
           " is out of range for rank " + std::to_string(rank));
      return 0;
    }
    return axis < 0 ? axis + rank : axis;
  }
};

using Handler = std::function<Status(Call &)>;

/// A kernel's handler and, for each result, the operand it may share
/// storage with (KernelSignature::inPlaceOperand).
struct Entry {
  KernelId id;
  Handler handler;
  std::vector<int> inPlaceOperand = {};
};

/// The kernels that take no attributes and one or two operands.
Handler binaryOp(BinaryKind kind) {
  return [kind](Call &c) {
    return c.run([&] { return binary(kind, c.in(0), c.in(1), c.out(0)); });
  };
}
Handler compareOp(CompareKind kind) {
  return [kind](Call &c) {
    return c.run([&] { return compare(kind, c.in(0), c.in(1), c.out(0)); });
  };
}
/// nn.resize and nn.resize_grad: the same attributes, one kernel each.
Handler resizeOp(Status (*kernel)(const Tensor &, const std::string &,
                                  const std::string &, const std::string &,
                                  Tensor &)) {
  return [kernel](Call &c) {
    std::string mode = c.enumCase("mode");
    std::string coordinates = c.enumCase("coordinates");
    std::string rounding = c.enumCase("rounding");
    return c.run(
        [&] { return kernel(c.in(0), mode, coordinates, rounding, c.out(0)); });
  };
}
Handler unaryOp(UnaryKind kind) {
  return [kind](Call &c) {
    return c.run([&] { return unary(kind, c.in(0), c.out(0)); });
  };
}
Handler unaryGradOp(UnaryKind kind) {
  return [kind](Call &c) {
    return c.run([&] { return unaryGrad(kind, c.in(0), c.in(1), c.out(0)); });
  };
}

/// gelu and gelu_grad: the "approximate" enum, default "none".
UnaryKind geluKind(Call &c) {
  return c.enumCase("approximate") == "tanh" ? UnaryKind::GeluTanh
                                             : UnaryKind::GeluExact;
}

/// reduce_sum and reduce_mean.
Handler reduceOp(ReduceOp kind) {
  return [kind](Call &c) {
    std::vector<int64_t> axes = c.axes("axes", c.in(0).rank());
    c.unused("keepdims");
    return c.run([&] { return reduce(kind, c.in(0), axes, c.out(0)); });
  };
}

/// Products and convolutions.
std::vector<Entry> contractionEntries() {
  return {
      {KernelId::MatMul,
       [](Call &c) {
         bool transposeLhs = c.flag("transpose_lhs");
         bool transposeRhs = c.flag("transpose_rhs");
         // Absent: no scaling.
         double alpha = c.optionalF32("alpha").value_or(1.0);
         return c.run([&] {
           return matmul(c.in(0), c.in(1), c.out(0), transposeLhs, transposeRhs,
                         alpha);
         });
       }},
      {KernelId::Gemm,
       [](Call &c) {
         double alpha = c.f32("alpha"), beta = c.f32("beta");
         bool transA = c.flag("trans_a");
         bool transB = c.flag("trans_b");
         return c.run([&] {
           return gemm(c.in(0), c.in(1), c.optionalIn(2), alpha, beta, transA,
                       transB, c.out(0));
         });
       }},
      {KernelId::Conv,
       [](Call &c) {
         PoolWindow window = c.window(c.in(0), false);
         int64_t group = c.i64("group");
         return c.run([&] {
           return conv(c.in(0), c.in(1), c.optionalIn(2), window.strides,
                       window.pads, window.dilations, group, c.out(0));
         });
       }},
  };
}

/// Elementwise ops, dropout and the step's bookkeeping.
std::vector<Entry> elementwiseEntries() {
  return {
      {KernelId::Add, binaryOp(BinaryKind::Add)},
      // nn.accumulate's sum, added to in place: sum + value -> sum.
      {KernelId::Accumulate, binaryOp(BinaryKind::Add), {0}},
      {KernelId::Sub, binaryOp(BinaryKind::Sub)},
      {KernelId::Mul, binaryOp(BinaryKind::Mul)},
      {KernelId::Div, binaryOp(BinaryKind::Div)},
      {KernelId::Pow, binaryOp(BinaryKind::Pow)},
      {KernelId::Where,
       [](Call &c) {
         return c.run(
             [&] { return where(c.in(0), c.in(1), c.in(2), c.out(0)); });
       }},
      // The inference form (no step) is the identity; the training form
      // reads the step count and, on a block, where the block lies in the
      // logical tensor (`shape`, `offset`; lowering adds them).
      {KernelId::Dropout,
       [](Call &c) {
         double ratio = c.f32("ratio");
         int64_t seed = c.i64("seed"), key = c.i64("key");
         std::vector<int64_t> shape = c.ints("shape");
         std::vector<int64_t> offset = c.ints("offset");
         return c.run([&] {
           const Tensor *step = c.optionalIn(1);
           const Tensor *microBatch = c.optionalIn(2);
           if (!step)
             return dropout(c.in(0), 0.0, 0, 0, seed, key, shape, offset,
                            c.out(0));
           if (step->numElements() != 1 ||
               (microBatch && microBatch->numElements() != 1))
             return Status::failure("dropout: the step count and the "
                                    "micro-batch index are one value each");
           return dropout(
               c.in(0), ratio, static_cast<int64_t>(std::llround(step->get(0))),
               microBatch ? static_cast<int64_t>(microBatch->get(0)) : 0, seed,
               key, shape, offset, c.out(0));
         });
       }},
      // A program run whole is micro-batch 0 (lowered programs read the
      // index the executor writes instead).
      {KernelId::MicroBatch,
       [](Call &c) {
         return c.run([&] {
           c.out(0).set(0, 0.0);
           return Status::success();
         });
       }},
      {KernelId::Equal, compareOp(CompareKind::Equal)},
      {KernelId::Less, compareOp(CompareKind::Less)},
      {KernelId::Greater, compareOp(CompareKind::Greater)},
      {KernelId::And, compareOp(CompareKind::And)},
      {KernelId::Or, compareOp(CompareKind::Or)},
      {KernelId::Not,
       [](Call &c) {
         return c.run([&] { return logicalNot(c.in(0), c.out(0)); });
       }},
      {KernelId::Relu, unaryOp(UnaryKind::Relu)},
      {KernelId::Tanh, unaryOp(UnaryKind::Tanh)},
      {KernelId::Sqrt, unaryOp(UnaryKind::Sqrt)},
      {KernelId::Exp, unaryOp(UnaryKind::Exp)},
      {KernelId::Log, unaryOp(UnaryKind::Log)},
      {KernelId::Sigmoid, unaryOp(UnaryKind::Sigmoid)},
      {KernelId::Erf, unaryOp(UnaryKind::Erf)},
      {KernelId::HardSwish, unaryOp(UnaryKind::HardSwish)},
      {KernelId::LeakyRelu,
       [](Call &c) {
         double alpha = c.f32("alpha");
         return c.run([&] {
           return unary(UnaryKind::LeakyRelu, c.in(0), c.out(0), alpha);
         });
       }},
      {KernelId::HardSigmoid,
       [](Call &c) {
         double alpha = c.f32("alpha"), beta = c.f32("beta");
         return c.run([&] {
           return unary(UnaryKind::HardSigmoid, c.in(0), c.out(0), alpha, beta);
         });
       }},
      {KernelId::Gelu,
       [](Call &c) {
         UnaryKind kind = geluKind(c);
         return c.run([&] { return unary(kind, c.in(0), c.out(0)); });
       }},
      {KernelId::TopK,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(0).rank());
         bool largest = c.flag("largest");
         // k is the results' extent; sorted or not, they come sorted.
         c.unused("k");
         c.unused("sorted");
         return c.run(
             [&] { return topK(c.in(0), axis, largest, c.out(0), c.out(1)); });
       }},
      {KernelId::Resize, resizeOp(resize)},
      {KernelId::ResizeGrad, resizeOp(resizeGrad)},
      {KernelId::Clip,
       [](Call &c) {
         std::optional<double> min = c.optionalF32("min");
         std::optional<double> max = c.optionalF32("max");
         return c.run([&] { return clip(c.in(0), min, max, c.out(0)); });
       }},
      {KernelId::Cast,
       [](Call &c) { return c.run([&] { return cast(c.in(0), c.out(0)); }); }},
  };
}

/// Normalizations and pooling.
std::vector<Entry> normalizationEntries() {
  return {
      {KernelId::Softmax,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(0).rank());
         return c.run([&] { return softmax(c.in(0), axis, c.out(0)); });
       }},
      {KernelId::LogSoftmax,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(0).rank());
         return c.run([&] { return logSoftmax(c.in(0), axis, c.out(0)); });
       }},
      {KernelId::LayerNorm,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(0).rank());
         double epsilon = c.f32("epsilon");
         return c.run([&] {
           return layerNorm(c.in(0), c.in(1), c.optionalIn(2), axis, epsilon,
                            c.out(0));
         });
       }},
      {KernelId::BatchNorm,
       [](Call &c) {
         double epsilon = c.f32("epsilon");
         // The running statistics' update weight: the inference form
         // does not update them (a training step's ops do).
         (void)c.f32("momentum");
         return c.run([&] {
           return batchNorm(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4),
                            epsilon, c.out(0));
         });
       }},
      // Pooling.
      {KernelId::MaxPool,
       [](Call &c) {
         PoolWindow window = c.window(c.in(0), true);
         window.ceilMode = c.flag("ceil_mode");
         // The op has it (the pool ops share their attributes); a
         // maximum has no divisor.
         c.unused("count_include_pad");
         return c.run([&] { return maxPool(c.in(0), window, c.out(0)); });
       }},
      {KernelId::AvgPool,
       [](Call &c) {
         PoolWindow window = c.window(c.in(0), true);
         window.ceilMode = c.flag("ceil_mode");
         window.countIncludePad = c.flag("count_include_pad");
         return c.run([&] { return avgPool(c.in(0), window, c.out(0)); });
       }},
  };
}

/// Data movement, and the vocabulary-parallel gathers.
std::vector<Entry> movementEntries() {
  return {
      {KernelId::Reshape,
       [](Call &c) {
         return c.run([&] { return reshape(c.in(0), c.out(0)); });
       }},
      {KernelId::Expand,
       [](Call &c) {
         return c.run([&] { return expand(c.in(0), c.out(0)); });
       }},
      {KernelId::Transpose,
       [](Call &c) {
         std::vector<int64_t> perm = c.ints("perm");
         return c.run([&] { return transpose(c.in(0), perm, c.out(0)); });
       }},
      {KernelId::Concat,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.out(0).rank());
         return c.run([&] { return concat(c.allIn(), axis, c.out(0)); });
       }},
      {KernelId::Split,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(0).rank());
         c.unused("sizes");
         return c.run([&] { return split(c.in(0), axis, c.allOut()); });
       }},
      {KernelId::Slice,
       [](Call &c) {
         std::vector<int64_t> starts = c.ints("starts");
         std::vector<int64_t> steps = c.ints("steps");
         c.unused("sizes");
         return c.run([&] { return slice(c.in(0), starts, steps, c.out(0)); });
       }},
      {KernelId::Gather,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(0).rank());
         return c.run([&] { return gather(c.in(0), c.in(1), axis, c.out(0)); });
       }},
      // Vocabulary parallelism: a block of a table split by rows (not nn
      // ops: lower-to-plan writes them for gathers on such blocks).
      {KernelId::GatherShard,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(0).rank());
         int64_t offset = c.i64("offset"), extent = c.i64("extent");
         return c.run([&] {
           return gatherShard(c.in(0), c.in(1), axis, offset, extent, c.out(0));
         });
       }},
      {KernelId::GatherGradShard,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.out(0).rank());
         int64_t offset = c.i64("offset"), extent = c.i64("extent");
         return c.run([&] {
           return gatherGradShard(c.in(0), c.in(1), axis, offset, extent,
                                  c.out(0));
         });
       }},
      {KernelId::Shape,
       [](Call &c) {
         return c.run([&] {
           const Shape &shape = c.in(0).shape();
           Tensor &result = c.out(0);
           if (result.dtype() != DType::I64 ||
               result.shape() != Shape{c.in(0).rank()})
             return Status::failure("shape: result must be i64 [" +
                                    std::to_string(c.in(0).rank()) + "], not " +
                                    toString(result.dtype()) + " " +
                                    toString(result.shape()));
           std::copy(shape.begin(), shape.end(), result.data<int64_t>());
           return Status::success();
         });
       }},
  };
}

/// Reductions, the gradients of the forward kernels and the losses.
std::vector<Entry> gradientEntries() {
  return {
      {KernelId::ReduceSum, reduceOp(ReduceOp::Sum)},
      {KernelId::ReduceMean, reduceOp(ReduceOp::Mean)},
      // Activation gradients.
      {KernelId::ReluGrad, unaryGradOp(UnaryKind::Relu)},
      {KernelId::HardSwishGrad, unaryGradOp(UnaryKind::HardSwish)},
      {KernelId::LeakyReluGrad,
       [](Call &c) {
         double alpha = c.f32("alpha");
         return c.run([&] {
           return unaryGrad(UnaryKind::LeakyRelu, c.in(0), c.in(1), c.out(0),
                            alpha);
         });
       }},
      {KernelId::HardSigmoidGrad,
       [](Call &c) {
         double alpha = c.f32("alpha"), beta = c.f32("beta");
         return c.run([&] {
           return unaryGrad(UnaryKind::HardSigmoid, c.in(0), c.in(1), c.out(0),
                            alpha, beta);
         });
       }},
      {KernelId::ClipGrad,
       [](Call &c) {
         std::optional<double> min = c.optionalF32("min");
         std::optional<double> max = c.optionalF32("max");
         return c.run(
             [&] { return clipGrad(c.in(0), c.in(1), min, max, c.out(0)); });
       }},
      {KernelId::GeluGrad,
       [](Call &c) {
         UnaryKind kind = geluKind(c);
         return c.run(
             [&] { return unaryGrad(kind, c.in(0), c.in(1), c.out(0)); });
       }},
      // Normalization gradients: axes of the forward output (operand 1).
      {KernelId::SoftmaxGrad,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(1).rank());
         return c.run(
             [&] { return softmaxGrad(c.in(0), c.in(1), axis, c.out(0)); });
       }},
      {KernelId::LogSoftmaxGrad,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(1).rank());
         return c.run(
             [&] { return logSoftmaxGrad(c.in(0), c.in(1), axis, c.out(0)); });
       }},
      {KernelId::LayerNormGrad,
       [](Call &c) {
         int64_t axis = c.axis("axis", c.in(1).rank());
         double epsilon = c.f32("epsilon");
         return c.run([&] {
           return layerNormGrad(c.in(0), c.in(1), c.in(2), axis, epsilon,
                                c.out(0), c.out(1), c.out(2));
         });
       }},
      // Convolution and pooling gradients: windows over dy's spatial
      // dimensions, which are as many as the forward input's.
      {KernelId::ConvGradInput,
       [](Call &c) {
         PoolWindow window = c.window(c.in(0), false);
         int64_t group = c.i64("group");
         return c.run([&] {
           return convGradInput(c.in(0), c.in(1), window.strides, window.pads,
                                window.dilations, group, c.out(0));
         });
       }},
      {KernelId::ConvGradWeight,
       [](Call &c) {
         PoolWindow window = c.window(c.in(0), false);
         int64_t group = c.i64("group");
         return c.run([&] {
           return convGradWeight(c.in(0), c.in(1), window.strides, window.pads,
                                 window.dilations, group, c.out(0));
         });
       }},
      {KernelId::MaxPoolGrad,
       [](Call &c) {
         PoolWindow window = c.window(c.in(0), true);
         window.ceilMode = c.flag("ceil_mode");
         return c.run(
             [&] { return maxPoolGrad(c.in(0), c.in(1), window, c.out(0)); });
       }},
      {KernelId::AvgPoolGrad,
       [](Call &c) {
         PoolWindow window = c.window(c.in(0), true);
         window.ceilMode = c.flag("ceil_mode");
         window.countIncludePad = c.flag("count_include_pad");
         return c.run([&] { return avgPoolGrad(c.in(0), window, c.out(0)); });
       }},
      // Data movement gradients.
      {KernelId::SliceGrad,
       [](Call &c) {
         std::vector<int64_t> starts = c.ints("starts");
         std::vector<int64_t> steps = c.ints("steps");
         return c.run(
             [&] { return sliceGrad(c.in(0), starts, steps, c.out(0)); });
       }},
      {KernelId::GatherGrad,
       [](Call &c) {
         // The axis of the forward input, which the result is shaped as.
         int64_t axis = c.axis("axis", c.out(0).rank());
         return c.run(
             [&] { return gatherGrad(c.in(0), c.in(1), axis, c.out(0)); });
       }},
      // Losses.
      {KernelId::SoftmaxCrossEntropy,
       [](Call &c) {
         return c.run(
             [&] { return softmaxCrossEntropy(c.in(0), c.in(1), c.out(0)); });
       }},
      {KernelId::SoftmaxCrossEntropyGrad,
       [](Call &c) {
         return c.run([&] {
           return softmaxCrossEntropyGrad(c.in(0), c.in(1), c.in(2), c.out(0));
         });
       }},
  };
}

/// Optimizer updates.
std::vector<Entry> optimizerEntries() {
  return {
      {KernelId::SgdUpdate,
       [](Call &c) {
         double lr = c.f64("lr");
         double weightDecay = c.f64("weight_decay");
         double gradScale = c.f64("grad_scale");
         return c.run([&] {
           return sgdUpdate(c.in(0), c.in(1), lr, weightDecay, gradScale,
                            c.out(0));
         });
       },
       {0}},
      {KernelId::MomentumUpdate,
       [](Call &c) {
         double lr = c.f64("lr"), momentum = c.f64("momentum");
         double weightDecay = c.f64("weight_decay");
         bool nesterov = c.flag("nesterov");
         double gradScale = c.f64("grad_scale");
         return c.run([&] {
           return momentumUpdate(c.in(0), c.in(1), c.in(2), lr, momentum,
                                 weightDecay, nesterov, gradScale, c.out(0),
                                 c.out(1));
         });
       },
       {0, 2}},
      {KernelId::AdamUpdate,
       [](Call &c) {
         AdamOptions options;
         options.lr = c.f64("lr");
         options.beta1 = c.f64("beta1");
         options.beta2 = c.f64("beta2");
         options.epsilon = c.f64("epsilon");
         options.weightDecay = c.f64("weight_decay");
         options.decoupled = c.flag("decoupled");
         options.gradScale = c.f64("grad_scale");
         return c.run([&] {
           return adamUpdate(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4),
                             options, c.out(0), c.out(1), c.out(2));
         });
       },
       {0, 2, 3}},
  };
}

/// Every kernel's entry; the attributes' defaults are the op definitions'
/// (KernelOps.h).
const std::vector<Entry> &kernelEntries() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> entries;
    for (std::vector<Entry> (*group)() :
         {contractionEntries, elementwiseEntries, normalizationEntries,
          movementEntries, gradientEntries, optimizerEntries})
      for (Entry &entry : group())
        entries.push_back(std::move(entry));
    return entries;
  }();
  return table;
}

/// "3 operands", "1 result", "one or more operands".
std::string count(int n, const char *noun) {
  if (n < 0)
    return std::string("one or more ") + noun + "s";
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

/// Checks `operands` and `results` against `signature`; every entry must
/// be non-null but an optional operand.
Status checkArity(const char *op, const KernelSignature &signature,
                  const std::vector<const Tensor *> &operands,
                  const std::vector<Tensor *> &results) {
  auto failure = [&](const std::string &message) {
    return Status::failure("nn." + std::string(op) + ": " + message);
  };
  bool operandsFit = signature.numOperands < 0
                         ? !operands.empty()
                         : operands.size() == size_t(signature.numOperands);
  if (!operandsFit) {
    std::string expected = count(signature.numOperands, "operand");
    if (signature.numOptionalOperands)
      expected += " (absent optional ones as null)";
    return failure("expects " + expected + ", got " +
                   std::to_string(operands.size()));
  }
  bool resultsFit = signature.numResults < 0
                        ? !results.empty()
                        : results.size() == size_t(signature.numResults);
  if (!resultsFit)
    return failure("expects " + count(signature.numResults, "result") +
                   ", got " + std::to_string(results.size()));
  size_t required =
      signature.numOperands < 0
          ? operands.size()
          : size_t(signature.numOperands - signature.numOptionalOperands);
  for (size_t i = 0; i < required; ++i)
    if (!operands[i])
      return failure("operand " + std::to_string(i) + " is null");
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i])
      return failure("result " + std::to_string(i) + " is null");
  return Status::success();
}

/// The entries and signatures by KernelId; null where a kernel has no
/// handler (a test checks that none lacks one).
struct KernelTable {
  std::vector<const Entry *> entries;
  std::vector<KernelSignature> signatures;
};

const KernelTable &kernelTable() {
  static const KernelTable table = [] {
    KernelTable byId;
    byId.entries.resize(kernelOps().size(), nullptr);
    byId.signatures.resize(kernelOps().size());
    for (const Entry &entry : kernelEntries()) {
      size_t index = static_cast<size_t>(entry.id);
      const KernelOp &op = kernelOps()[index];
      byId.entries[index] = &entry;
      byId.signatures[index] = {op.numOperands, op.numOptionalOperands,
                                op.numResults, entry.inPlaceOperand};
    }
    return byId;
  }();
  return table;
}

/// Runs the kernel's handler: the kernel, or with `resolved` only the
/// reading of its attributes.
Status callHandler(KernelId id, const AttrMap &attrs,
                   const std::vector<const Tensor *> &operands,
                   const std::vector<Tensor *> &results, AttrMap *resolved) {
  const KernelTable &table = kernelTable();
  size_t index = static_cast<size_t>(id);
  const KernelOp &op = kernelOp(id);
  if (!table.entries[index])
    return Status::failure("no kernel for nn." + std::string(op.name));
  if (Status status =
          checkArity(op.name, table.signatures[index], operands, results);
      !status.ok())
    return status;
  Call call(op, attrs, operands, results, resolved);
  return table.entries[index]->handler(call);
}

} // namespace

const KernelSignature *lookupKernel(KernelId id) {
  size_t index = static_cast<size_t>(id);
  const KernelTable &table = kernelTable();
  return table.entries[index] ? &table.signatures[index] : nullptr;
}

const KernelSignature *lookupKernel(const std::string &opName) {
  std::optional<KernelId> id = lookupKernelId(opName);
  return id ? lookupKernel(*id) : nullptr;
}

Status runKernel(KernelId id, const AttrMap &attrs,
                 const std::vector<const Tensor *> &operands,
                 const std::vector<Tensor *> &results) {
  return callHandler(id, attrs, operands, results, nullptr);
}

Status runKernel(const std::string &opName, const AttrMap &attrs,
                 const std::vector<const Tensor *> &operands,
                 const std::vector<Tensor *> &results) {
  std::optional<KernelId> id = lookupKernelId(opName);
  if (!id)
    return Status::failure("no kernel for nn." + opName);
  return runKernel(*id, attrs, operands, results);
}

Status resolveKernelAttrs(KernelId id, const AttrMap &attrs,
                          const std::vector<const Tensor *> &operands,
                          const std::vector<Tensor *> &results,
                          AttrMap &resolved) {
  resolved.clear();
  return callHandler(id, attrs, operands, results, &resolved);
}

Status resolveKernelAttrs(const std::string &opName, const AttrMap &attrs,
                          const std::vector<const Tensor *> &operands,
                          const std::vector<Tensor *> &results,
                          AttrMap &resolved) {
  std::optional<KernelId> id = lookupKernelId(opName);
  if (!id) {
    resolved.clear();
    return Status::failure("no kernel for nn." + opName);
  }
  return resolveKernelAttrs(*id, attrs, operands, results, resolved);
}

} // namespace parplan::runtime
