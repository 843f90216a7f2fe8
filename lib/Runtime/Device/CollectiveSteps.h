//===- CollectiveSteps.h - collectives as NCCL calls, as data ---*- C++ -*-===//
//
// The CUDA backend runs a plan collective (Communicator.h: balanced parts,
// member r holds or receives part r) as NCCL calls and pack kernels
// (Pack.h) around a staging buffer. collectiveSteps returns that sequence
// as data: the backend maps each step to its call, and the tests run the
// same steps on the host through an emulation of NCCL's semantics
// (RuntimeCollectiveStepsTest.cpp), so the decomposition is checked without
// a GPU.
//
// Staging: a collective packs its input at the start of the staging buffer
// (StagingIn) and receives at alignUp(input bytes) (StagingOut); the
// backend allocates the largest stagingBytes over the program's
// collectives.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_COLLECTIVESTEPS_H
#define PARPLAN_LIB_RUNTIME_DEVICE_COLLECTIVESTEPS_H

#include "parplan/Runtime/PlanFile.h"
#include "parplan/Runtime/Tensor.h"
#include "parplan/Sbp/Sbp.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace parplan::runtime::device {

/// Device buffers start at multiples of this (cuBLAS and vector loads like
/// 256-byte alignment): the pool's buffers and the staging regions.
inline constexpr size_t kAlignment = 256;

inline size_t alignUp(size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// Where StagingOut starts in the staging buffer.
inline size_t stagingOutOffset(size_t inputBytes) {
  return alignUp(inputBytes);
}

/// The staging a collective of these input and output sizes uses.
inline size_t stagingBytes(size_t inputBytes, size_t outputBytes) {
  return alignUp(inputBytes) + alignUp(outputBytes);
}

/// The buffers a step reads and writes. Output is Input's buffer when the
/// collective works in place; None stands for a null pointer.
enum class Region { None, Input, Output, StagingIn, StagingOut };

/// A byte offset into a region.
struct Place {
  Region region = Region::None;
  size_t offset = 0;
};

enum class StepKind {
  /// cudaMemcpyAsync from source to destination (groups of one).
  Copy,
  /// packParts of the whole tensor at source (Input) to destination.
  Pack,
  /// unpackParts of source into the whole tensor at destination (Output).
  Unpack,
  /// The NCCL calls of the same names.
  AllReduce,
  Broadcast,
  AllGather,
  ReduceScatter,
  Reduce,
  Send,
  Recv,
  /// ncclGroupStart and ncclGroupEnd around the steps between them.
  GroupStart,
  GroupEnd,
};

struct CollectiveStep {
  StepKind kind = StepKind::Copy;
  /// What the step reads and writes: None for a Send's destination, a
  /// Recv's source and a Reduce's result on members other than the root.
  Place source, destination;
  /// Elements of `type`: DType::I8 where the step moves raw bytes (the
  /// count is in bytes), the collective's type where it reduces, and for
  /// Pack and Unpack, the tensor's elements. For AllGather and
  /// ReduceScatter, one member's share, as NCCL counts it.
  int64_t count = 0;
  DType type = DType::I8;
  /// Broadcast, Reduce: the member that sends or receives the result.
  int64_t root = -1;
  /// Send, Recv: the member at the other end.
  int64_t peer = -1;
  /// AllReduce, ReduceScatter, Reduce: NCCL's reduction (booleans take Max
  /// for a sum, "any", and Min for a product, "all").
  ReduceKind op = ReduceKind::Sum;
  /// Pack, Unpack: the axis and the number of parts (the group's size).
  int64_t axis = 0, parts = 1;
  /// Between a GroupStart and its GroupEnd.
  bool grouped = false;

  size_t bytes() const { return static_cast<size_t>(count) * byteWidth(type); }
};

/// The steps that run `collective` on member `member` of a group of
/// `groupSize` (a group of one needs no member index), whose input has
/// `inShape`, output `outShape` and elements `type`. Empty for an in-place
/// collective over one device, and for a kind the plan file does not know.
std::vector<CollectiveStep> collectiveSteps(const plan::Collective &collective,
                                            const Shape &inShape,
                                            const Shape &outShape, DType type,
                                            int64_t groupSize, int64_t member);

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_COLLECTIVESTEPS_H
