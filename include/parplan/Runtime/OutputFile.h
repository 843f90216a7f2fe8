//===- OutputFile.h - a plan's outputs, gathered and written ----*- C++ -*-===//
//
// An inference plan's OUTPUT buffers hold each device's block of the
// model's outputs, one micro-batch at a time. The executor keeps every
// block of a step; the ranks send them to one rank, which puts them
// together into the whole tensors and writes each as a NumPy .npy file
// (docs/inference.md). No MLIR: parplan-run links this.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_OUTPUTFILE_H
#define PARPLAN_RUNTIME_OUTPUTFILE_H

#include "parplan/Runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace parplan::runtime {

/// A device's block of one output of a step: `value` lies at `offsets` of
/// the whole `logicalShape`.
struct OutputBlock {
  std::string name;
  Shape logicalShape, offsets;
  Tensor value;
};

/// `blocks` as bytes, for sending to another rank; parseOutputBlocks reads
/// them back (appending to `blocks`), failing on bytes that are not such
/// a list.
std::string serializeOutputBlocks(const std::vector<OutputBlock> &blocks);
Status parseOutputBlocks(const std::string &bytes,
                         std::vector<OutputBlock> &blocks);

/// The whole tensors, by name, that `blocks` make up (replicated blocks
/// hold the same values: the last one placed stays). A block outside its
/// tensor, blocks of one name that disagree on the shape or type, or an
/// element no block holds is an error naming the output.
Status assembleOutputs(const std::vector<OutputBlock> &blocks,
                       std::map<std::string, Tensor> &outputs);

/// The file name an output is written under: its name with every
/// character but letters, digits, '.', '-' and '_' made '_', then ".npy".
std::string outputFileName(const std::string &name);

/// Writes `value` as a NumPy .npy file (format 1.0, little-endian,
/// C order); bf16, which NumPy lacks, is written as f32. readNpy reads
/// what writeNpy writes back.
Status writeNpy(const Tensor &value, const std::string &path);
Status readNpy(const std::string &path, Tensor &value);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_OUTPUTFILE_H
