//===- KernelOps.h - the kernels the runtime can call, by id ----*- C++ -*-===//
//
// One entry per kernel: the nn ops' entries are generated from their
// definitions (NNOps.td, NNTrainingOps.td) by parplan-tblgen
// -gen-kernel-ops, so the runtime reads the op definitions' operand counts,
// attributes and defaults rather than restating them; the variants lowering
// writes for an op on a block follow them here. A kernel instruction names
// its kernel by mnemonic in the plan file; the executor and the backends
// look the name up once (lookupKernelId) and dispatch on the id. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_KERNELOPS_H
#define PARPLAN_RUNTIME_KERNELOPS_H

#include "parplan/Runtime/AttrValue.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parplan::runtime {

enum class KernelId : uint16_t {
#define GET_KERNEL_IDS
#include "parplan/Runtime/KernelOps.inc"
  // Vocabulary parallelism: nn.gather and its gradient on a block of a table
  // split by rows, with the block's place (`offset`, `extent`); lowering
  // writes them, no nn op is one.
  GatherShard,
  GatherGradShard,
};

/// An attribute's type as the op definition declares it, and the AttrValue
/// kind it arrives as: I64 an Int, F32 and F64 a Float (an F32 rounded to
/// float), Bool and Unit a Bool (a unit attribute is true when present),
/// String and Enum a String (an enum by its case name), I64Array Ints.
enum class AttrType : uint8_t {
  I64,
  F32,
  F64,
  Bool,
  Unit,
  String,
  I64Array,
  Enum
};

/// One attribute of a kernel.
struct KernelAttr {
  const char *name;
  AttrType type;
  /// Neither a default nor optional: a call without it fails.
  bool required;
  /// The op definition's default; none for a required attribute and for an
  /// optional one whose absence the kernel gives a meaning (clip's bounds).
  std::optional<AttrValue> byDefault;
  /// An enum's case names.
  std::vector<std::string> cases;
};

/// One kernel: its mnemonic (the nn op's without "nn."), operand and
/// result counts in ODS order, and attributes.
struct KernelOp {
  KernelId id;
  const char *name;
  /// -1: a variadic list of one or more (concat).
  int numOperands;
  /// How many of the last operands are optional.
  int numOptionalOperands;
  /// -1: a variadic list of one or more (split).
  int numResults;
  std::vector<KernelAttr> attrs;

  /// The attribute `name`, or nullptr when the kernel has none of it.
  const KernelAttr *findAttr(std::string_view name) const;
};

/// Every kernel, in KernelId order.
const std::vector<KernelOp> &kernelOps();
const KernelOp &kernelOp(KernelId id);
/// The kernel of mnemonic `name`, or none.
std::optional<KernelId> lookupKernelId(std::string_view name);
/// The kernel's mnemonic ("matmul").
const char *toString(KernelId id);
/// "i64", "f32", "f64", "bool", "unit", "string", "i64 list", "enum".
const char *toString(AttrType type);
/// The AttrValue kind an attribute of `type` arrives as.
AttrValue::Kind valueKind(AttrType type);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_KERNELOPS_H
