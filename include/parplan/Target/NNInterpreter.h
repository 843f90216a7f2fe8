//===- NNInterpreter.h - run an nn program on the reference kernels -*- C++
//-*-===//
//
// Evaluates an `nn` function op by op with the runtime's CPU kernels, on
// logical (whole) shapes. It is the ground truth for the compiler's tests: a
// training step, a finite-difference check, a partitioned program compared
// with the unpartitioned one.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TARGET_NNINTERPRETER_H
#define PARPLAN_TARGET_NNINTERPRETER_H

#include "parplan/Runtime/KernelCall.h"
#include "parplan/Runtime/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parplan {

/// Values of nn.param and nn.input ops, by name.
using NamedTensors = std::map<std::string, runtime::Tensor>;

/// The runtime element type of an MLIR element type, if it has one.
std::optional<runtime::DType> toDType(mlir::Type elementType);

/// A dense constant as a runtime tensor.
runtime::Tensor toTensor(mlir::DenseElementsAttr value);

/// The inherent attributes of a compute op in the runtime's generic form,
/// as runKernel (KernelCall.h) reads them: integers, floats, bools,
/// strings, i64 arrays, enums as their case names and unit attributes as
/// true. Absent default-valued attributes stay absent (runKernel applies
/// the .td default). Emits an error and fails on an attribute of another
/// kind. Shared with whatever writes kernels for parplan-run, so that both
/// hand the kernels the same attributes.
mlir::FailureOr<runtime::AttrMap> toKernelAttrs(mlir::Operation *op);

/// One kernel attribute in the runtime's form (integers, floats, bools,
/// strings, i64 lists; a unit attribute is true; an enum, which `declared`
/// (the kernel's attribute) says it is, by its case name); none for kinds
/// the runtime has no form of.
std::optional<runtime::AttrValue>
toKernelAttr(mlir::Attribute attr,
             const runtime::KernelAttr *declared = nullptr);

/// Runs `function` (no arguments) and returns its results. Every nn.input
/// and nn.param must be fed, except parameters with `source = "zeros"`,
/// which start at zero when not fed. Every other op runs its kernel through
/// runtime::runKernel. A missing or mistyped feed, an op without a kernel
/// and a kernel's error are emitted as errors at the op and fail.
mlir::FailureOr<std::vector<runtime::Tensor>>
interpret(mlir::func::FuncOp function, const NamedTensors &feeds);

/// For a training step (nn-autodiff's output): the values of the next step,
/// i.e. `feeds` with every result marked `nn.updates = NAME` stored under
/// NAME.
NamedTensors applyUpdates(mlir::func::FuncOp function, NamedTensors feeds,
                          std::vector<runtime::Tensor> results);

} // namespace parplan

#endif // PARPLAN_TARGET_NNINTERPRETER_H
