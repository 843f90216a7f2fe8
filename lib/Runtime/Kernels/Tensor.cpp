//===- Tensor.cpp - dense tensors on host memory --------------------------===//
//
// Element access and the 16-bit float conversions. The conversions are
// written out bit by bit (no compiler half type) so that every host and
// GPU rounds the same way, round to nearest even, with subnormals,
// infinities and NaNs: the code is DeviceTensor.h's, which runs on both.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Tensor.h"

#include "Device/DeviceTensor.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace parplan::runtime {

namespace {

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Rounds a double to float with round-to-odd. Rounding that float again to
/// a format of at most 22 significand bits then gives the correctly rounded
/// result of the double, where plain double -> float -> half could round
/// twice.
float toFloatRoundToOdd(double value) {
  float nearest = static_cast<float>(value);
  if (std::isnan(value) || std::isinf(nearest) ||
      static_cast<double>(nearest) == value)
    return nearest;
  float truncated = nearest;
  if (std::fabs(static_cast<double>(nearest)) > std::fabs(value))
    truncated = std::nextafter(nearest, 0.0f);
  return bitsFloat(floatBits(truncated) | 1u);
}

/// Saturating, truncating conversion; NaN becomes 0. The C++ conversion is
/// undefined out of range, and data must not make a kernel undefined.
int64_t toInteger(double value, int64_t lo, int64_t hi) {
  if (std::isnan(value))
    return 0;
  value = std::trunc(value);
  if (value <= static_cast<double>(lo))
    return lo;
  // For INT64_MAX the bound is 2^63, itself out of range: hence >=.
  if (value >= static_cast<double>(hi))
    return hi;
  return static_cast<int64_t>(value);
}

} // namespace

size_t byteWidth(DType type) {
  switch (type) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I1:
  case DType::I8:
    return 1;
  }
  return 0;
}

bool isFloat(DType type) {
  return type == DType::F16 || type == DType::BF16 || type == DType::F32 ||
         type == DType::F64;
}

const char *toString(DType type) {
  switch (type) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

std::optional<DType> parseDType(const std::string &text) {
  for (DType type : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I1,
                     DType::I8, DType::I32, DType::I64})
    if (text == toString(type))
      return type;
  return std::nullopt;
}

int64_t numElements(const Shape &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

std::string toString(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

// One implementation of the 16-bit conversions, the one the device kernels
// run (DeviceTensor.h), so host and GPU round alike.
uint16_t floatToHalf(float value) { return device::hdFloatToHalf(value); }
float halfToFloat(uint16_t bits) { return device::hdHalfToFloat(bits); }
uint16_t floatToBFloat16(float value) {
  return device::hdFloatToBFloat16(value);
}
float bfloat16ToFloat(uint16_t bits) { return device::hdBFloat16ToFloat(bits); }

Tensor::Tensor(DType type, Shape shape)
    : type_(type), shape_(std::move(shape)),
      bytes_(static_cast<size_t>(runtime::numElements(shape_)) *
                 byteWidth(type),
             std::byte{0}) {}

Tensor Tensor::withoutStorage(DType type, Shape shape) {
  Tensor tensor;
  tensor.type_ = type;
  tensor.shape_ = std::move(shape);
  return tensor;
}

double Tensor::get(int64_t index) const {
  switch (type_) {
  case DType::F16:
    return halfToFloat(data<uint16_t>()[index]);
  case DType::BF16:
    return bfloat16ToFloat(data<uint16_t>()[index]);
  case DType::F32:
    return data<float>()[index];
  case DType::F64:
    return data<double>()[index];
  case DType::I1:
    return data<uint8_t>()[index] ? 1.0 : 0.0;
  case DType::I8:
    return data<int8_t>()[index];
  case DType::I32:
    return data<int32_t>()[index];
  case DType::I64:
    return static_cast<double>(data<int64_t>()[index]);
  }
  return 0;
}

void Tensor::set(int64_t index, double value) {
  switch (type_) {
  case DType::F16:
    data<uint16_t>()[index] = floatToHalf(toFloatRoundToOdd(value));
    return;
  case DType::BF16:
    data<uint16_t>()[index] = floatToBFloat16(toFloatRoundToOdd(value));
    return;
  case DType::F32:
    data<float>()[index] = static_cast<float>(value);
    return;
  case DType::F64:
    data<double>()[index] = value;
    return;
  case DType::I1:
    data<uint8_t>()[index] = value != 0 ? 1 : 0;
    return;
  case DType::I8:
    data<int8_t>()[index] =
        static_cast<int8_t>(toInteger(value, INT8_MIN, INT8_MAX));
    return;
  case DType::I32:
    data<int32_t>()[index] =
        static_cast<int32_t>(toInteger(value, INT32_MIN, INT32_MAX));
    return;
  case DType::I64:
    data<int64_t>()[index] = toInteger(value, INT64_MIN, INT64_MAX);
    return;
  }
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor result;
  result.type_ = type_;
  result.shape_ = std::move(shape);
  result.bytes_ = bytes_;
  return result;
}

} // namespace parplan::runtime
