//===- Tensor.h - dense tensors on host memory ------------------*- C++ -*-===//
//
// The executor's tensor: an element type, a static shape and the bytes, row
// major. No MLIR dependency: parplan-run links this without linking MLIR.
// 16-bit floats are stored as their bit patterns and computed in float.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_TENSOR_H
#define PARPLAN_RUNTIME_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parplan::runtime {

enum class DType { F16, BF16, F32, F64, I1, I8, I32, I64 };

/// Bytes of one element (I1 is stored as one byte, 0 or 1).
size_t byteWidth(DType type);
bool isFloat(DType type);
/// "f16", "bf16", "f32", "f64", "i1", "i8", "i32", "i64": the MLIR spelling.
const char *toString(DType type);
std::optional<DType> parseDType(const std::string &text);

using Shape = std::vector<int64_t>;

/// The outcome of a kernel or a runtime step: empty on success, otherwise
/// one line that says what went wrong (a label out of range, a shape the
/// plan did not promise). Runtime code does not throw and never aborts on
/// data.
struct Status {
  std::string error;
  bool ok() const { return error.empty(); }
  static Status success() { return {}; }
  static Status failure(std::string message) { return {std::move(message)}; }
};

int64_t numElements(const Shape &shape);
/// "[2, 3, 4]".
std::string toString(const Shape &shape);

/// IEEE binary16 and bfloat16 conversions (round to nearest even).
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);
float bfloat16ToFloat(uint16_t bits);

/// An owning, contiguous, row-major tensor.
class Tensor {
public:
  Tensor() = default;
  /// Zero-filled.
  Tensor(DType type, Shape shape);
  /// A type and a shape without elements (byteSize() is 0, bytes() null),
  /// for code that reads only those: resolveKernelAttrs for a tensor that
  /// lives on a device. Its elements must not be read or written.
  static Tensor withoutStorage(DType type, Shape shape);

  DType dtype() const { return type_; }
  const Shape &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numElements() const { return runtime::numElements(shape_); }
  size_t byteSize() const { return bytes_.size(); }

  std::byte *bytes() { return bytes_.data(); }
  const std::byte *bytes() const { return bytes_.data(); }
  /// The elements as T; T must match the storage (uint16_t for F16/BF16,
  /// uint8_t for I1).
  template <typename T> T *data() {
    return reinterpret_cast<T *>(bytes_.data());
  }
  template <typename T> const T *data() const {
    return reinterpret_cast<const T *>(bytes_.data());
  }

  /// Element i as a double, whatever the element type.
  double get(int64_t index) const;
  /// Stores a double into element i, converting (and rounding) to the
  /// element type.
  void set(int64_t index, double value);

  /// Same bytes, another shape of as many elements.
  Tensor reshaped(Shape shape) const;

private:
  DType type_ = DType::F32;
  Shape shape_;
  std::vector<std::byte> bytes_;
};

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_TENSOR_H
