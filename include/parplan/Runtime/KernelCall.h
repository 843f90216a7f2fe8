//===- KernelCall.h - call a kernel by its id -------------------*- C++ -*-===//
//
// The one place where an nn op's name and attributes become a call of its
// kernel (Kernels.h). The interpreter converts an op's MLIR attributes to
// the generic form below and calls runKernel; parplan-run reads the same
// form from its Protobuf program and calls runKernel too. So both run the
// same kernels with the same attribute handling (defaults, signed axes), and
// adding a kernel touches the runtime only. No MLIR dependency.
//
// Conventions:
// - A kernel is a KernelId (KernelOps.h), or by name the nn op's mnemonic
//   without "nn.": "matmul", "gemm", "conv_grad_input", "adam_update", ...
//   Callers that run a kernel often look its id up once.
// - Operands follow the op's ODS operand order. An absent optional operand
//   (gemm's c, conv's bias, layer_norm's bias) is a nullptr entry at its
//   position, so the operand count is always the op's ODS count (any
//   number, at least one, for concat's variadic inputs). Results likewise
//   (any number, at least one, for split), preallocated by the caller with
//   their element types and shapes as for every kernel.
// - Attributes are named as in the .td (snake_case: "trans_a",
//   "count_include_pad", "grad_scale"). An attribute that has a default in
//   the .td may be absent and then takes that default, read from the
//   generated kernel table (KernelOps.h); F32Attr values (and
//   defaults) are rounded to float, as the MLIR attribute holds them.
//   Signed axes ("axis", reduce "axes") may be negative; runKernel
//   normalizes them, and sorts and deduplicates reduce axes (empty: all).
//   gelu's enum "approximate" is its case name, "none" or "tanh"; a unit
//   attribute (adam's "decoupled") is a bool. Attributes the kernels do not
//   need but the op has (slice's and split's "sizes", reduce's "keepdims":
//   the result shapes say the same) are accepted and ignored.
// - Every problem is a Status, never a crash: an unknown op ("no kernel for
//   nn.foo"), a missing required attribute, an attribute of the wrong kind
//   or one the op does not have, a wrong number of operands or results, a
//   null required operand, and whatever the kernel itself reports (a shape
//   the attributes do not imply, a label out of range).
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_KERNELCALL_H
#define PARPLAN_RUNTIME_KERNELCALL_H

#include "parplan/Runtime/AttrValue.h"
#include "parplan/Runtime/KernelOps.h"
#include "parplan/Runtime/Tensor.h"

#include <string>
#include <vector>

namespace parplan::runtime {

/// How many operands and results a kernel takes, in ODS order.
struct KernelSignature {
  /// -1: a variadic list of one or more (concat).
  int numOperands = 0;
  /// How many of the last operands are optional (in the nn dialect
  /// optional operands always come last).
  int numOptionalOperands = 0;
  /// -1: a variadic list of one or more (split).
  int numResults = 1;
  /// For each result, the operand it may share storage with (-1: none):
  /// the kernel reads every input of an element before writing the
  /// outputs of that element, on every backend. Lowering writes an
  /// optimizer's new parameter and state over the old ones through it.
  std::vector<int> inPlaceOperand = {};
};

/// The signature of a kernel, or nullptr when the name is no kernel's
/// (nn.param, nn.input and nn.constant are values, not kernels).
const KernelSignature *lookupKernel(KernelId id);
const KernelSignature *lookupKernel(const std::string &opName);

/// Runs the kernel on `operands` into `results`, following the conventions
/// at the top of this file. The name form looks the id up first.
Status runKernel(KernelId id, const AttrMap &attrs,
                 const std::vector<const Tensor *> &operands,
                 const std::vector<Tensor *> &results);
Status runKernel(const std::string &opName, const AttrMap &attrs,
                 const std::vector<const Tensor *> &operands,
                 const std::vector<Tensor *> &results);

/// Checks `attrs` and the operand and result counts as runKernel does,
/// without running anything, and returns in `resolved` every attribute the
/// op has: defaults filled in, F32 values rounded to float, signed axes
/// normalized (reduce axes sorted, without repeats), enums by case name;
/// an optional attribute without a default (clip's bounds) only when given.
/// Operands and results are read for their types and shapes only
/// (Tensor::withoutStorage serves). Backends other than the reference
/// kernels read this map, so no backend has defaults of its own.
Status resolveKernelAttrs(KernelId id, const AttrMap &attrs,
                          const std::vector<const Tensor *> &operands,
                          const std::vector<Tensor *> &results,
                          AttrMap &resolved);
Status resolveKernelAttrs(const std::string &opName, const AttrMap &attrs,
                          const std::vector<const Tensor *> &operands,
                          const std::vector<Tensor *> &results,
                          AttrMap &resolved);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_KERNELCALL_H
