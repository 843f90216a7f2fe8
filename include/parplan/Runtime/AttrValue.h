//===- AttrValue.h - an nn op's attributes, without MLIR --------*- C++ -*-===//
//
// The form an nn op's attributes take in the runtime: in a plan file's
// kernel instructions, in the interpreter's calls, and in the kernel table
// (KernelOps.h), which gives each attribute its type and default.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_ATTRVALUE_H
#define PARPLAN_RUNTIME_ATTRVALUE_H

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace parplan::runtime {

/// One attribute value: an integer, a float, a bool, a string or a list of
/// integers.
struct AttrValue {
  enum class Kind { Int, Float, Bool, String, Ints };

  AttrValue() = default;
  AttrValue(int64_t value) : value(value) {}
  /// Without it an int literal would be ambiguous between int64, double
  /// and bool.
  AttrValue(int value) : value(int64_t{value}) {}
  AttrValue(double value) : value(value) {}
  AttrValue(bool value) : value(value) {}
  AttrValue(std::string value) : value(std::move(value)) {}
  /// Without it a string literal would become a bool.
  AttrValue(const char *value) : value(std::string(value)) {}
  AttrValue(std::vector<int64_t> value) : value(std::move(value)) {}
  AttrValue(std::initializer_list<int64_t> value)
      : value(std::vector<int64_t>(value)) {}

  Kind kind() const { return static_cast<Kind>(value.index()); }
  /// The value if it has that kind, else nullptr.
  const int64_t *getInt() const { return std::get_if<int64_t>(&value); }
  const double *getFloat() const { return std::get_if<double>(&value); }
  const bool *getBool() const { return std::get_if<bool>(&value); }
  const std::string *getString() const {
    return std::get_if<std::string>(&value);
  }
  const std::vector<int64_t> *getInts() const {
    return std::get_if<std::vector<int64_t>>(&value);
  }

  /// In Kind's order.
  std::variant<int64_t, double, bool, std::string, std::vector<int64_t>> value;
};

/// "int", "float", "bool", "string", "int list".
const char *toString(AttrValue::Kind kind);

bool operator==(const AttrValue &lhs, const AttrValue &rhs);
inline bool operator!=(const AttrValue &lhs, const AttrValue &rhs) {
  return !(lhs == rhs);
}

using AttrMap = std::map<std::string, AttrValue>;

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_ATTRVALUE_H
