//===- Communicator.h - collectives and messages between devices -*- C++
//-*-===//
//
// How the executor talks to other devices. A device is a rank of the world
// (device i of a plan runs as rank i); a group is a list of device ids in
// rank order within the group (plan::Group), and every member of a group
// calls a collective over it with the same arguments. Split and gathered
// dimensions are cut into balanced parts (Sbp.h balancedShard): member r of
// a group of n holds or receives part r, so dimensions need not divide.
//
// Reductions combine the members' values in the group's rank order, in
// double, and round once: an N-device result is bitwise the same from run
// to run (MPI_Allreduce promises no order).
//
// Transport implements the tensor collectives on one byte-level primitive,
// an all-to-all of variable-sized byte strings within a group, plus
// point-to-point messages; a transport (MPI, the single-process one below)
// supplies only those. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_RUNTIME_COMMUNICATOR_H
#define PARPLAN_RUNTIME_COMMUNICATOR_H

#include "parplan/Runtime/Tensor.h"
#include "parplan/Sbp/Sbp.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace parplan::runtime {

using Group = std::vector<int64_t>;

/// What identifies `group`'s set of devices among the sets a group name
/// stands for on different devices (a group along mesh axes is each
/// device's own row): its lowest device, the same on every member and
/// different for disjoint sets. -1 when `device` is no member. Backends
/// that split one world communicator into a communicator per set (NCCL)
/// split by it.
int64_t groupColor(const Group &group, int64_t device);

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// In place: every member ends with the reduction of all members' data.
  virtual Status allReduce(Tensor &data, ReduceKind reduce,
                           const Group &group) = 0;
  /// `out` is the members' `in`s concatenated along `axis`.
  virtual Status allGather(const Tensor &in, Tensor &out, int64_t axis,
                           const Group &group) = 0;
  /// `out` is this member's part along `axis` of the reduction of the
  /// members' `in`s.
  virtual Status reduceScatter(const Tensor &in, Tensor &out, int64_t axis,
                               ReduceKind reduce, const Group &group) = 0;
  /// `in` is cut along `splitAxis`, part r going to member r; `out` is the
  /// parts received, concatenated along `concatAxis` in member order.
  virtual Status allToAll(const Tensor &in, Tensor &out, int64_t splitAxis,
                          int64_t concatAxis, const Group &group) = 0;
  /// In place: every member ends with the data of member `root` (a rank
  /// within the group).
  virtual Status broadcast(Tensor &data, int64_t root, const Group &group) = 0;
  /// Point to point, to and from a device (a world rank). `send` returns
  /// once `data` may be reused, which may be before the peer has it: a
  /// pipeline stage sends an activation and goes on computing, and two
  /// stages sending to each other do not wait on each other.
  virtual Status send(const Tensor &data, int64_t peer, int64_t tag) = 0;
  virtual Status recv(Tensor &data, int64_t peer, int64_t tag) = 0;
  /// Returns once every message sent so far has left this process (its
  /// bytes are the transport's or the peer's).
  virtual Status flushSends() { return Status::success(); }
};

/// The tensor collectives on a byte-level exchange.
class Transport : public Communicator {
public:
  using Bytes = std::vector<std::byte>;

  /// Every member sends `outgoing[r]` to member r of `group` and receives
  /// what member r sent it into `incoming[r]` (resized here).
  virtual Status exchange(const std::vector<Bytes> &outgoing,
                          std::vector<Bytes> &incoming, const Group &group) = 0;

  Status allReduce(Tensor &data, ReduceKind reduce,
                   const Group &group) override;
  Status allGather(const Tensor &in, Tensor &out, int64_t axis,
                   const Group &group) override;
  Status reduceScatter(const Tensor &in, Tensor &out, int64_t axis,
                       ReduceKind reduce, const Group &group) override;
  Status allToAll(const Tensor &in, Tensor &out, int64_t splitAxis,
                  int64_t concatAxis, const Group &group) override;
  Status broadcast(Tensor &data, int64_t root, const Group &group) override;

protected:
  /// This process's rank within `group`, or an error when it is not a
  /// member.
  Status memberIndex(const Group &group, int64_t &index) const;
};

/// One process, one device: collectives over a group of one device are
/// copies; there is no peer to send to.
class LocalCommunicator : public Transport {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status exchange(const std::vector<Bytes> &outgoing,
                  std::vector<Bytes> &incoming, const Group &group) override;
  Status send(const Tensor &data, int64_t peer, int64_t tag) override;
  Status recv(Tensor &data, int64_t peer, int64_t tag) override;
};

/// The bytes of the `parts` balanced parts of `tensor` along `axis`, each
/// part contiguous (row major in its own shape), in order. MPI moves
/// contiguous bytes; a part along an inner axis is strided in the tensor.
std::vector<std::vector<std::byte>> cutParts(const Tensor &tensor, int64_t axis,
                                             int64_t parts);
/// The inverse: writes part `index` of `parts` along `axis` of `tensor`
/// from `bytes`; errors when `bytes` is not that part's size.
Status placePart(Tensor &tensor, int64_t axis, int64_t parts, int64_t index,
                 const std::vector<std::byte> &bytes);

} // namespace parplan::runtime

#endif // PARPLAN_RUNTIME_COMMUNICATOR_H
