//===- AttrDouble.h - a double attributes hold ------------------*- C++ -*-===//
//
// MLIR hashes and compares attribute parameters through hash_value and ==,
// which a plain double lacks (and == on NaN is false, which would never
// unique). The figures the passes hand on (#sbp.layout_plan,
// #plan.prediction) hold their seconds as this instead: compared and hashed
// bit for bit, read as a double.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DIALECT_ATTRDOUBLE_H
#define PARPLAN_DIALECT_ATTRDOUBLE_H

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/bit.h"

#include <cstdint>

namespace parplan {

struct AttrDouble {
  double value = 0;

  AttrDouble(double value = 0) : value(value) {}
  operator double() const { return value; }
  bool operator==(const AttrDouble &other) const {
    return llvm::bit_cast<uint64_t>(value) ==
           llvm::bit_cast<uint64_t>(other.value);
  }
};

inline llvm::hash_code hash_value(const AttrDouble &number) {
  return llvm::hash_value(llvm::bit_cast<uint64_t>(number.value));
}

} // namespace parplan

#endif // PARPLAN_DIALECT_ATTRDOUBLE_H
