//===- KernelCall.cpp - call a kernel by its nn op name -------------------===//
//
// One table entry per nn op: its operand and result counts and a handler
// that reads the op's attributes (with the .td defaults) and calls the
// kernel. A handler reads every attribute the op has, even one its kernel
// does not need, so that an attribute the op lacks is caught: a new
// attribute in the .td that the runtime ignores would otherwise change
// nothing silently.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/KernelCall.h"

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
/// checked against the signature, and the attributes, read with their
/// defaults. Reading records the first problem instead of failing, so a
/// handler reads all its attributes into locals and then calls `run`, which
/// calls the kernel only if every attribute was fine.
class Call {
public:
  /// With `resolved`, the call records every attribute as read (defaults
  /// filled, axes normalized) there and `run` calls no kernel.
  Call(const std::string &op, const AttrMap &attrs,
       const std::vector<const Tensor *> &operands,
       const std::vector<Tensor *> &results, AttrMap *resolved = nullptr)
      : op(op), attrs(attrs), operands(operands), results(results),
        resolved(resolved) {}

  const Tensor &in(size_t i) const { return *operands[i]; }
  const Tensor *optionalIn(size_t i) const { return operands[i]; }
  Tensor &out(size_t i) const { return *results[i]; }
  const std::vector<const Tensor *> &allIn() const { return operands; }
  const std::vector<Tensor *> &allOut() const { return results; }

  /// An I64Attr.
  int64_t i64(const char *name, std::optional<int64_t> byDefault = {}) {
    const AttrValue *value = find(name, Kind::Int, byDefault.has_value());
    return record(name, value ? *value->getInt() : byDefault.value_or(0));
  }
  /// An F64Attr.
  double f64(const char *name, std::optional<double> byDefault = {}) {
    const AttrValue *value = find(name, Kind::Float, byDefault.has_value());
    return record(name, value ? *value->getFloat() : byDefault.value_or(0));
  }
  /// An F32Attr: rounded to float, as the MLIR attribute holds it, so that
  /// a value written as a double and the default (a float literal, as MLIR
  /// parses the .td's default into an f32) give what the interpreter's
  /// getters give.
  double f32(const char *name, float byDefault) {
    const AttrValue *value = find(name, Kind::Float, true);
    return record(name, value ? static_cast<float>(*value->getFloat())
                              : static_cast<double>(byDefault));
  }
  /// An OptionalAttr<F32Attr> (clip's bounds): absent does not clamp.
  std::optional<double> optionalF32(const char *name) {
    if (const AttrValue *value = find(name, Kind::Float, true))
      return record(
          name, static_cast<double>(static_cast<float>(*value->getFloat())));
    return std::nullopt;
  }
  /// A BoolAttr, or a UnitAttr (true when present).
  bool flag(const char *name, bool byDefault) {
    const AttrValue *value = find(name, Kind::Bool, true);
    return record(name, value ? *value->getBool() : byDefault);
  }
  /// A DenseI64ArrayAttr.
  std::vector<int64_t>
  ints(const char *name, std::optional<std::vector<int64_t>> byDefault = {}) {
    const AttrValue *value = find(name, Kind::Ints, byDefault.has_value());
    return record(name, value ? *value->getInts()
                              : byDefault.value_or(std::vector<int64_t>{}));
  }
  /// An enum attribute, by case name; returns the case's index.
  size_t enumCase(const char *name, std::initializer_list<const char *> cases,
                  size_t byDefault) {
    const AttrValue *value = find(name, Kind::String, true);
    if (!value) {
      record(name, std::string(cases.begin()[byDefault]));
      return byDefault;
    }
    std::string expected;
    size_t index = 0;
    for (const char *option : cases) {
      if (*value->getString() == option) {
        record(name, *value->getString());
        return index;
      }
      expected += (index ? " or \"" : "\"") + std::string(option) + "\"";
      ++index;
    }
    fail("attribute '" + std::string(name) + "' must be " + expected +
         ", not \"" + *value->getString() + "\"");
    return byDefault;
  }
  /// An attribute the kernel does not need (the result shapes say the
  /// same): accepted when of the right kind, and ignored.
  void unused(const char *name, Kind kind) {
    if (const AttrValue *value = find(name, kind, true))
      record(name, *value);
  }

  /// A signed axis (ONNX: [-rank, rank)) of a tensor of rank `rank`, as an
  /// index in [0, rank).
  int64_t axis(const char *name, std::optional<int64_t> byDefault,
               int64_t rank) {
    int64_t value = i64(name, byDefault);
    return record(name, normalize(name, value, rank));
  }
  /// Reduction axes: signed, normalized, sorted, without repeats; empty
  /// (the default) reduces every dimension.
  std::vector<int64_t> axes(const char *name, int64_t rank) {
    std::vector<int64_t> values = ints(name, std::vector<int64_t>{});
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
  /// out of range, or the map holds one the op does not have.
  template <typename Fn> Status run(Fn &&kernel) {
    if (error.empty())
      for (const auto &[name, value] : attrs)
        if (!read.count(name)) {
          fail("unknown attribute '" + name + "'");
          break;
        }
    if (!error.empty())
      return Status::failure(error);
    return resolved ? Status::success() : kernel();
  }

private:
  const std::string &op;
  const AttrMap &attrs;
  const std::vector<const Tensor *> &operands;
  const std::vector<Tensor *> &results;
  AttrMap *resolved;
  std::set<std::string> read;
  std::string error;

  template <typename T> T record(const char *name, T value) {
    if (resolved)
      (*resolved)[name] = AttrValue(value);
    return value;
  }

  void fail(const std::string &message) {
    if (error.empty())
      error = "nn." + op + ": " + message;
  }

  /// The attribute if present and of `kind`; nullptr (and a recorded
  /// error unless `optional`) otherwise.
  const AttrValue *find(const char *name, Kind kind, bool optional) {
    read.insert(name);
    auto it = attrs.find(name);
    if (it == attrs.end()) {
      if (!optional)
        fail("missing attribute '" + std::string(name) + "'");
      return nullptr;
    }
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

struct Entry {
  KernelSignature signature;
  Handler handler;
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
  return c.enumCase("approximate", {"none", "tanh"}, 0) == 1
             ? UnaryKind::GeluTanh
             : UnaryKind::GeluExact;
}

/// reduce_sum and reduce_mean.
Handler reduceOp(ReduceOp kind) {
  return [kind](Call &c) {
    std::vector<int64_t> axes = c.axes("axes", c.in(0).rank());
    c.unused("keepdims", Kind::Bool);
    return c.run([&] { return reduce(kind, c.in(0), axes, c.out(0)); });
  };
}

/// The ODS defaults below are the .td's; F32Attr defaults are float
/// literals (Call::f32).
const std::map<std::string, Entry> &kernelTable() {
  static const std::map<std::string, Entry> table = {
      // Contractions.
      {"matmul",
       {{2, 0, 1},
        [](Call &c) {
          bool transposeLhs = c.flag("transpose_lhs", false);
          bool transposeRhs = c.flag("transpose_rhs", false);
          double alpha = c.f32("alpha", 1.0f);
          return c.run([&] {
            return matmul(c.in(0), c.in(1), c.out(0), transposeLhs,
                          transposeRhs, alpha);
          });
        }}},
      {"gemm",
       {{3, 1, 1},
        [](Call &c) {
          double alpha = c.f32("alpha", 1.0f), beta = c.f32("beta", 1.0f);
          bool transA = c.flag("trans_a", false);
          bool transB = c.flag("trans_b", false);
          return c.run([&] {
            return gemm(c.in(0), c.in(1), c.optionalIn(2), alpha, beta, transA,
                        transB, c.out(0));
          });
        }}},
      {"conv",
       {{3, 1, 1},
        [](Call &c) {
          PoolWindow window = c.window(c.in(0), false);
          int64_t group = c.i64("group", 1);
          return c.run([&] {
            return conv(c.in(0), c.in(1), c.optionalIn(2), window.strides,
                        window.pads, window.dilations, group, c.out(0));
          });
        }}},
      // Elementwise.
      {"add", {{2, 0, 1}, binaryOp(BinaryKind::Add)}},
      // nn.accumulate's sum, added to in place: sum + value -> sum.
      {"accumulate", {{2, 0, 1, {0}}, binaryOp(BinaryKind::Add)}},
      {"sub", {{2, 0, 1}, binaryOp(BinaryKind::Sub)}},
      {"mul", {{2, 0, 1}, binaryOp(BinaryKind::Mul)}},
      {"div", {{2, 0, 1}, binaryOp(BinaryKind::Div)}},
      {"pow", {{2, 0, 1}, binaryOp(BinaryKind::Pow)}},
      {"where",
       {{3, 0, 1},
        [](Call &c) {
          return c.run(
              [&] { return where(c.in(0), c.in(1), c.in(2), c.out(0)); });
        }}},
      // The inference form (no step) is the identity; the training form
      // reads the step count and, on a block, where the block lies in the
      // logical tensor (`shape`, `offset`; lowering adds them).
      {"dropout",
       {{3, 2, 1},
        [](Call &c) {
          double ratio = c.f32("ratio", 0.5f);
          int64_t seed = c.i64("seed", 0), key = c.i64("key", 0);
          std::vector<int64_t> shape = c.ints("shape", std::vector<int64_t>{});
          std::vector<int64_t> offset =
              c.ints("offset", std::vector<int64_t>{});
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
            return dropout(c.in(0), ratio,
                           static_cast<int64_t>(std::llround(step->get(0))),
                           microBatch ? static_cast<int64_t>(microBatch->get(0))
                                      : 0,
                           seed, key, shape, offset, c.out(0));
          });
        }}},
      // A program run whole is micro-batch 0 (lowered programs read the
      // index the executor writes instead).
      {"micro_batch",
       {{0, 0, 1},
        [](Call &c) {
          return c.run([&] {
            c.out(0).set(0, 0.0);
            return Status::success();
          });
        }}},
      {"equal", {{2, 0, 1}, compareOp(CompareKind::Equal)}},
      {"less", {{2, 0, 1}, compareOp(CompareKind::Less)}},
      {"greater", {{2, 0, 1}, compareOp(CompareKind::Greater)}},
      {"and", {{2, 0, 1}, compareOp(CompareKind::And)}},
      {"or", {{2, 0, 1}, compareOp(CompareKind::Or)}},
      {"not",
       {{1, 0, 1},
        [](Call &c) {
          return c.run([&] { return logicalNot(c.in(0), c.out(0)); });
        }}},
      {"relu", {{1, 0, 1}, unaryOp(UnaryKind::Relu)}},
      {"tanh", {{1, 0, 1}, unaryOp(UnaryKind::Tanh)}},
      {"sqrt", {{1, 0, 1}, unaryOp(UnaryKind::Sqrt)}},
      {"exp", {{1, 0, 1}, unaryOp(UnaryKind::Exp)}},
      {"log", {{1, 0, 1}, unaryOp(UnaryKind::Log)}},
      {"sigmoid", {{1, 0, 1}, unaryOp(UnaryKind::Sigmoid)}},
      {"erf", {{1, 0, 1}, unaryOp(UnaryKind::Erf)}},
      {"hard_swish", {{1, 0, 1}, unaryOp(UnaryKind::HardSwish)}},
      {"leaky_relu",
       {{1, 0, 1},
        [](Call &c) {
          double alpha = c.f32("alpha", 0.01f);
          return c.run([&] {
            return unary(UnaryKind::LeakyRelu, c.in(0), c.out(0), alpha);
          });
        }}},
      {"hard_sigmoid",
       {{1, 0, 1},
        [](Call &c) {
          double alpha = c.f32("alpha", 0.2f), beta = c.f32("beta", 0.5f);
          return c.run([&] {
            return unary(UnaryKind::HardSigmoid, c.in(0), c.out(0), alpha,
                         beta);
          });
        }}},
      {"gelu",
       {{1, 0, 1},
        [](Call &c) {
          UnaryKind kind = geluKind(c);
          return c.run([&] { return unary(kind, c.in(0), c.out(0)); });
        }}},
      {"clip",
       {{1, 0, 1},
        [](Call &c) {
          std::optional<double> min = c.optionalF32("min");
          std::optional<double> max = c.optionalF32("max");
          return c.run([&] { return clip(c.in(0), min, max, c.out(0)); });
        }}},
      {"cast",
       {{1, 0, 1},
        [](Call &c) {
          return c.run([&] { return cast(c.in(0), c.out(0)); });
        }}},
      // Normalizations.
      {"softmax",
       {{1, 0, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", -1, c.in(0).rank());
          return c.run([&] { return softmax(c.in(0), axis, c.out(0)); });
        }}},
      {"log_softmax",
       {{1, 0, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", -1, c.in(0).rank());
          return c.run([&] { return logSoftmax(c.in(0), axis, c.out(0)); });
        }}},
      {"layer_norm",
       {{3, 1, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", -1, c.in(0).rank());
          double epsilon = c.f32("epsilon", 1.0e-05f);
          return c.run([&] {
            return layerNorm(c.in(0), c.in(1), c.optionalIn(2), axis, epsilon,
                             c.out(0));
          });
        }}},
      {"batch_norm",
       {{5, 0, 1},
        [](Call &c) {
          double epsilon = c.f32("epsilon", 1.0e-05f);
          // The running statistics' update weight: the inference form
          // does not update them (a training step's ops do).
          (void)c.f32("momentum", 0.9f);
          return c.run([&] {
            return batchNorm(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4),
                             epsilon, c.out(0));
          });
        }}},
      // Pooling.
      {"max_pool",
       {{1, 0, 1},
        [](Call &c) {
          PoolWindow window = c.window(c.in(0), true);
          window.ceilMode = c.flag("ceil_mode", false);
          // The op has it (the pool ops share their attributes); a
          // maximum has no divisor.
          c.unused("count_include_pad", Kind::Bool);
          return c.run([&] { return maxPool(c.in(0), window, c.out(0)); });
        }}},
      {"avg_pool",
       {{1, 0, 1},
        [](Call &c) {
          PoolWindow window = c.window(c.in(0), true);
          window.ceilMode = c.flag("ceil_mode", false);
          window.countIncludePad = c.flag("count_include_pad", false);
          return c.run([&] { return avgPool(c.in(0), window, c.out(0)); });
        }}},
      // Data movement.
      {"reshape",
       {{1, 0, 1},
        [](Call &c) {
          return c.run([&] { return reshape(c.in(0), c.out(0)); });
        }}},
      {"expand",
       {{1, 0, 1},
        [](Call &c) {
          return c.run([&] { return expand(c.in(0), c.out(0)); });
        }}},
      {"transpose",
       {{1, 0, 1},
        [](Call &c) {
          std::vector<int64_t> perm = c.ints("perm");
          return c.run([&] { return transpose(c.in(0), perm, c.out(0)); });
        }}},
      {"concat",
       {{-1, 0, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", std::nullopt, c.out(0).rank());
          return c.run([&] { return concat(c.allIn(), axis, c.out(0)); });
        }}},
      {"split",
       {{1, 0, -1},
        [](Call &c) {
          int64_t axis = c.axis("axis", std::nullopt, c.in(0).rank());
          c.unused("sizes", Kind::Ints);
          return c.run([&] { return split(c.in(0), axis, c.allOut()); });
        }}},
      {"slice",
       {{1, 0, 1},
        [](Call &c) {
          std::vector<int64_t> starts = c.ints("starts");
          std::vector<int64_t> steps = c.ints("steps");
          c.unused("sizes", Kind::Ints);
          return c.run([&] { return slice(c.in(0), starts, steps, c.out(0)); });
        }}},
      {"gather",
       {{2, 0, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", 0, c.in(0).rank());
          return c.run(
              [&] { return gather(c.in(0), c.in(1), axis, c.out(0)); });
        }}},
      // Vocabulary parallelism: a block of a table split by rows (not nn
      // ops: lower-to-plan writes them for gathers on such blocks).
      {"gather_shard",
       {{2, 0, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", 0, c.in(0).rank());
          int64_t offset = c.i64("offset"), extent = c.i64("extent");
          return c.run([&] {
            return gatherShard(c.in(0), c.in(1), axis, offset, extent,
                               c.out(0));
          });
        }}},
      {"gather_grad_shard",
       {{2, 0, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", 0, c.out(0).rank());
          int64_t offset = c.i64("offset"), extent = c.i64("extent");
          return c.run([&] {
            return gatherGradShard(c.in(0), c.in(1), axis, offset, extent,
                                   c.out(0));
          });
        }}},
      {"shape",
       {{1, 0, 1},
        [](Call &c) {
          return c.run([&] {
            const Shape &shape = c.in(0).shape();
            Tensor &result = c.out(0);
            if (result.dtype() != DType::I64 ||
                result.shape() != Shape{c.in(0).rank()})
              return Status::failure("shape: result must be i64 [" +
                                     std::to_string(c.in(0).rank()) +
                                     "], not " + toString(result.dtype()) +
                                     " " + toString(result.shape()));
            std::copy(shape.begin(), shape.end(), result.data<int64_t>());
            return Status::success();
          });
        }}},
      // Reductions.
      {"reduce_sum", {{1, 0, 1}, reduceOp(ReduceOp::Sum)}},
      {"reduce_mean", {{1, 0, 1}, reduceOp(ReduceOp::Mean)}},

      // Activation gradients.
      {"relu_grad", {{2, 0, 1}, unaryGradOp(UnaryKind::Relu)}},
      {"hard_swish_grad", {{2, 0, 1}, unaryGradOp(UnaryKind::HardSwish)}},
      {"leaky_relu_grad",
       {{2, 0, 1},
        [](Call &c) {
          double alpha = c.f32("alpha", 0.01f);
          return c.run([&] {
            return unaryGrad(UnaryKind::LeakyRelu, c.in(0), c.in(1), c.out(0),
                             alpha);
          });
        }}},
      {"hard_sigmoid_grad",
       {{2, 0, 1},
        [](Call &c) {
          double alpha = c.f32("alpha", 0.2f), beta = c.f32("beta", 0.5f);
          return c.run([&] {
            return unaryGrad(UnaryKind::HardSigmoid, c.in(0), c.in(1), c.out(0),
                             alpha, beta);
          });
        }}},
      {"clip_grad",
       {{2, 0, 1},
        [](Call &c) {
          std::optional<double> min = c.optionalF32("min");
          std::optional<double> max = c.optionalF32("max");
          return c.run(
              [&] { return clipGrad(c.in(0), c.in(1), min, max, c.out(0)); });
        }}},
      {"gelu_grad",
       {{2, 0, 1},
        [](Call &c) {
          UnaryKind kind = geluKind(c);
          return c.run(
              [&] { return unaryGrad(kind, c.in(0), c.in(1), c.out(0)); });
        }}},
      // Normalization gradients: axes of the forward output (operand 1).
      {"softmax_grad",
       {{2, 0, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", -1, c.in(1).rank());
          return c.run(
              [&] { return softmaxGrad(c.in(0), c.in(1), axis, c.out(0)); });
        }}},
      {"log_softmax_grad",
       {{2, 0, 1},
        [](Call &c) {
          int64_t axis = c.axis("axis", -1, c.in(1).rank());
          return c.run(
              [&] { return logSoftmaxGrad(c.in(0), c.in(1), axis, c.out(0)); });
        }}},
      {"layer_norm_grad",
       {{3, 0, 3},
        [](Call &c) {
          int64_t axis = c.axis("axis", -1, c.in(1).rank());
          double epsilon = c.f32("epsilon", 1.0e-05f);
          return c.run([&] {
            return layerNormGrad(c.in(0), c.in(1), c.in(2), axis, epsilon,
                                 c.out(0), c.out(1), c.out(2));
          });
        }}},
      // Convolution and pooling gradients: windows over dy's spatial
      // dimensions, which are as many as the forward input's.
      {"conv_grad_input",
       {{2, 0, 1},
        [](Call &c) {
          PoolWindow window = c.window(c.in(0), false);
          int64_t group = c.i64("group", 1);
          return c.run([&] {
            return convGradInput(c.in(0), c.in(1), window.strides, window.pads,
                                 window.dilations, group, c.out(0));
          });
        }}},
      {"conv_grad_weight",
       {{2, 0, 1},
        [](Call &c) {
          PoolWindow window = c.window(c.in(0), false);
          int64_t group = c.i64("group", 1);
          return c.run([&] {
            return convGradWeight(c.in(0), c.in(1), window.strides, window.pads,
                                  window.dilations, group, c.out(0));
          });
        }}},
      {"max_pool_grad",
       {{2, 0, 1},
        [](Call &c) {
          PoolWindow window = c.window(c.in(0), true);
          window.ceilMode = c.flag("ceil_mode", false);
          return c.run(
              [&] { return maxPoolGrad(c.in(0), c.in(1), window, c.out(0)); });
        }}},
      {"avg_pool_grad",
       {{1, 0, 1},
        [](Call &c) {
          PoolWindow window = c.window(c.in(0), true);
          window.ceilMode = c.flag("ceil_mode", false);
          window.countIncludePad = c.flag("count_include_pad", false);
          return c.run([&] { return avgPoolGrad(c.in(0), window, c.out(0)); });
        }}},
      // Data movement gradients.
      {"slice_grad",
       {{1, 0, 1},
        [](Call &c) {
          std::vector<int64_t> starts = c.ints("starts");
          std::vector<int64_t> steps = c.ints("steps");
          return c.run(
              [&] { return sliceGrad(c.in(0), starts, steps, c.out(0)); });
        }}},
      {"gather_grad",
       {{2, 0, 1},
        [](Call &c) {
          // The axis of the forward input, which the result is shaped as.
          int64_t axis = c.axis("axis", 0, c.out(0).rank());
          return c.run(
              [&] { return gatherGrad(c.in(0), c.in(1), axis, c.out(0)); });
        }}},
      // Losses.
      {"softmax_cross_entropy",
       {{2, 0, 1},
        [](Call &c) {
          return c.run(
              [&] { return softmaxCrossEntropy(c.in(0), c.in(1), c.out(0)); });
        }}},
      {"softmax_cross_entropy_grad",
       {{3, 0, 1},
        [](Call &c) {
          return c.run([&] {
            return softmaxCrossEntropyGrad(c.in(0), c.in(1), c.in(2), c.out(0));
          });
        }}},
      // Optimizer updates.
      {"sgd_update",
       {{2, 0, 1, {0}},
        [](Call &c) {
          double lr = c.f64("lr");
          double weightDecay = c.f64("weight_decay", 0.0);
          double gradScale = c.f64("grad_scale", 1.0);
          return c.run([&] {
            return sgdUpdate(c.in(0), c.in(1), lr, weightDecay, gradScale,
                             c.out(0));
          });
        }}},
      {"momentum_update",
       {{3, 0, 2, {0, 2}},
        [](Call &c) {
          double lr = c.f64("lr"), momentum = c.f64("momentum");
          double weightDecay = c.f64("weight_decay", 0.0);
          bool nesterov = c.flag("nesterov", false);
          double gradScale = c.f64("grad_scale", 1.0);
          return c.run([&] {
            return momentumUpdate(c.in(0), c.in(1), c.in(2), lr, momentum,
                                  weightDecay, nesterov, gradScale, c.out(0),
                                  c.out(1));
          });
        }}},
      {"adam_update",
       {{5, 0, 3, {0, 2, 3}},
        [](Call &c) {
          AdamOptions options;
          options.lr = c.f64("lr");
          options.beta1 = c.f64("beta1", 0.9);
          options.beta2 = c.f64("beta2", 0.999);
          options.epsilon = c.f64("epsilon", 1.0e-08);
          options.weightDecay = c.f64("weight_decay", 0.0);
          options.decoupled = c.flag("decoupled", false);
          options.gradScale = c.f64("grad_scale", 1.0);
          return c.run([&] {
            return adamUpdate(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4),
                              options, c.out(0), c.out(1), c.out(2));
          });
        }}},
  };
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
Status checkArity(const std::string &op, const KernelSignature &signature,
                  const std::vector<const Tensor *> &operands,
                  const std::vector<Tensor *> &results) {
  auto failure = [&](const std::string &message) {
    return Status::failure("nn." + op + ": " + message);
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

} // namespace

const KernelSignature *lookupKernel(const std::string &opName) {
  const auto &table = kernelTable();
  auto it = table.find(opName);
  return it == table.end() ? nullptr : &it->second.signature;
}

/// Runs nn.<opName>'s handler: the kernel, or with `resolved` only the
/// reading of its attributes.
static Status callHandler(const std::string &opName, const AttrMap &attrs,
                          const std::vector<const Tensor *> &operands,
                          const std::vector<Tensor *> &results,
                          AttrMap *resolved) {
  const auto &table = kernelTable();
  auto it = table.find(opName);
  if (it == table.end())
    return Status::failure("no kernel for nn." + opName);
  const Entry &entry = it->second;
  if (Status status = checkArity(opName, entry.signature, operands, results);
      !status.ok())
    return status;
  Call call(opName, attrs, operands, results, resolved);
  return entry.handler(call);
}

Status runKernel(const std::string &opName, const AttrMap &attrs,
                 const std::vector<const Tensor *> &operands,
                 const std::vector<Tensor *> &results) {
  return callHandler(opName, attrs, operands, results, nullptr);
}

Status resolveKernelAttrs(const std::string &opName, const AttrMap &attrs,
                          const std::vector<const Tensor *> &operands,
                          const std::vector<Tensor *> &results,
                          AttrMap &resolved) {
  resolved.clear();
  return callHandler(opName, attrs, operands, results, &resolved);
}

} // namespace parplan::runtime
