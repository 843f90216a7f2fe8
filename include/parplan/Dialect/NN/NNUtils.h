//===- NNUtils.h - small helpers for nn ops and their producers -*- C++ -*-===//
//
// Shared by the nn ops' verifiers and shape rules, the sharding rules and
// the ONNX importer, so that axes and shapes read the same everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_DIALECT_NN_NNUTILS_H
#define PARPLAN_DIALECT_NN_NNUTILS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
class Operation;
class Type;
class Value;
} // namespace mlir

#include <cstdint>
#include <optional>
#include <string>

namespace parplan::nn {

class ParamOp;

/// An ONNX axis in [-rank, rank) as [0, rank); std::nullopt out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The parameter `value` is, or reads through casts (a mixed-precision
/// step casts each parameter to the low type where it enters); null for
/// any other value.
ParamOp paramBehindCasts(mlir::Value value);

/// "8x128x768"; "scalar" for rank 0.
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// "[0, 2, 1]".
std::string listString(llvm::ArrayRef<int64_t> values);

/// A number as a user wrote it: "0.9", "1.5", "1e-05" (printf's %g).
std::string numberString(double value);

/// The name a user knows an op by: the ONNX node (its NameLoc), or the
/// initializer or input name of parameters and inputs; empty when none.
std::string nodeName(mlir::Operation *op);

/// An op as messages name it: "nn.matmul (node 'NAME')", or "nn.matmul"
/// when it has no node name.
std::string describeNode(mlir::Operation *op);

/// The name `op`'s location gives (a NameLoc, or the first inside a
/// FusedLoc); empty when none. For a parameter, that of the node it came
/// from, which its optimizer update carries too.
std::string locationName(mlir::Operation *op);

/// The layer a parameter belongs to, by its name up to its first
/// all-digit component ("transformer.h.3.attn.c_attn.weight" ->
/// "transformer.h.3"); empty when there is none. Recomputation works by
/// layer.
std::string layerKey(llvm::StringRef parameterName);

/// The bytes of a statically shaped tensor type: its elements times their
/// width (a byte at least).
int64_t tensorBytes(mlir::Type type);

/// "transformer.h.3" -> "transformer.h": layers named alike but for their
/// number are one class.
llvm::StringRef layerClass(llvm::StringRef layer);

} // namespace parplan::nn

#endif // PARPLAN_DIALECT_NN_NNUTILS_H
