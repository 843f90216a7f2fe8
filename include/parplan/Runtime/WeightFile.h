//===- WeightFile.h - a parameter block from the model's bytes --*- C++ -*-===//
//
// Each rank reads only the block of each parameter its program holds,
// straight from the ONNX file (or its external data file), at the byte
// range the importer recorded in the parameter's `source`, and only its
// block of each batch from a batch file. No ONNX parsing, no MLIR: a seek
// and a read per contiguous run of the block.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_WEIGHTFILE_H
#define PARPLAN_RUNTIME_WEIGHTFILE_H

#include "parplan/Runtime/Tensor.h"
#include "parplan/Runtime/plan.pb.h"

#include <cstdint>
#include <optional>
#include <string>

namespace parplan::runtime {

/// Where a parameter's bytes lie, as its `source` says: in the model file
/// ("initializer@OFFSET+LENGTH", "constant@OFFSET+LENGTH") or in a file
/// beside it ("external:LOCATION@OFFSET" with an optional "+LENGTH").
struct WeightRange {
  /// Empty for the model file; else the file's path relative to the
  /// model's folder.
  std::string location;
  int64_t offset = 0;
  /// -1 where the source gives none.
  int64_t length = -1;
};

/// Reads `source` into `range`: nothing (and success) for a source that
/// names no bytes ("zeros", "initializer" of typed values, a constant by
/// its node); an error for a byte range that is malformed, negative, past
/// 2^62, or, for external data, a location that is absolute or climbs out
/// of the model's folder ("..").
Status parseWeightSource(const std::string &source,
                         std::optional<WeightRange> &range);

/// Fills `block` (a PARAMETER buffer's local block) from the model at
/// `modelPath`. `source` is "initializer@OFFSET+LENGTH" (bytes of the model
/// file) or "external:FILE@OFFSET+LENGTH" (FILE beside the model); the
/// stored tensor is the logical one, or, for a part (`part_of`, `part`),
/// the tensor it is a block of. Any other source, a missing file, a byte
/// range that does not hold the stored tensor or a short read is an error
/// naming the parameter.
Status loadWeightBlock(const plan::Buffer &buffer, const std::string &modelPath,
                       Tensor &block);

/// Fills `block` (an INPUT buffer's local block) with step `step`'s batch
/// from `directory`/NAME.bin, which holds K >= 1 whole logical batches of
/// the input, row-major, in its element type (little-endian; I1 as bytes),
/// one after the other: step s reads batch s mod K. A missing file or one
/// whose size is not a multiple of a batch is an error naming the input.
Status loadBatchBlock(const plan::Buffer &buffer, const std::string &directory,
                      int64_t step, Tensor &block);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_WEIGHTFILE_H
