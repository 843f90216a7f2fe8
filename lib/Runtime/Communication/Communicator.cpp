//===- Communicator.cpp - tensor collectives on a byte exchange -----------===//
//
// Every collective is one exchange of byte strings: all_reduce and
// all_gather send the whole local tensor to every member, reduce_scatter
// and all_to_all send part r to member r, broadcast sends from the root
// only. Reductions then combine what arrived in member order, so the
// result does not depend on the transport's timing.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/Communicator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace parplan::runtime {

namespace {

/// A tensor dimension as [outer, dim, inner bytes]: outer is the product of
/// the dimensions before `axis`, inner the bytes of one index of `axis`.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
};

AxisView viewAlong(const Tensor &tensor, int64_t axis) {
  AxisView view;
  const Shape &shape = tensor.shape();
  for (int64_t d = 0; d < axis; ++d)
    view.outer *= shape[d];
  view.dim = shape[axis];
  view.inner = static_cast<int64_t>(byteWidth(tensor.dtype()));
  for (size_t d = axis + 1; d < shape.size(); ++d)
    view.inner *= shape[d];
  return view;
}

std::vector<std::byte> bytesOf(const Tensor &tensor) {
  return std::vector<std::byte>(tensor.bytes(),
                                tensor.bytes() + tensor.byteSize());
}

double combine(ReduceKind reduce, double lhs, double rhs) {
  switch (reduce) {
  case ReduceKind::Sum:
    return lhs + rhs;
  case ReduceKind::Max:
    return std::max(lhs, rhs);
  case ReduceKind::Min:
    return std::min(lhs, rhs);
  case ReduceKind::Prod:
    return lhs * rhs;
  }
  return lhs;
}

/// `out` = the reduction of the members' byte strings, each holding a
/// tensor of out's type and shape, in member order.
Status reduceInto(Tensor &out, ReduceKind reduce,
                  const std::vector<std::vector<std::byte>> &members,
                  const char *what) {
  std::vector<Tensor> values;
  values.reserve(members.size());
  for (size_t r = 0; r < members.size(); ++r) {
    if (members[r].size() != out.byteSize())
      return Status::failure(
          std::string(what) + ": member " + std::to_string(r) + " sent " +
          std::to_string(members[r].size()) + " bytes, expected " +
          std::to_string(out.byteSize()) + " (the programs disagree)");
    Tensor value(out.dtype(), out.shape());
    if (!members[r].empty())
      std::memcpy(value.bytes(), members[r].data(), members[r].size());
    values.push_back(std::move(value));
  }
  int64_t count = out.numElements();
  for (int64_t i = 0; i < count; ++i) {
    double acc = values[0].get(i);
    for (size_t r = 1; r < values.size(); ++r)
      acc = combine(reduce, acc, values[r].get(i));
    out.set(i, acc);
  }
  return Status::success();
}

} // namespace

std::vector<std::vector<std::byte>> cutParts(const Tensor &tensor, int64_t axis,
                                             int64_t parts) {
  AxisView view = viewAlong(tensor, axis);
  std::vector<std::vector<std::byte>> result(parts);
  for (int64_t p = 0; p < parts; ++p) {
    Range range = balancedShard(view.dim, parts, p);
    std::vector<std::byte> &bytes = result[p];
    bytes.resize(view.outer * range.size * view.inner);
    // No copy of nothing: an empty tensor's bytes may be null, which
    // memcpy may not be given even for no bytes.
    if (bytes.empty())
      continue;
    for (int64_t o = 0; o < view.outer; ++o)
      std::memcpy(bytes.data() + o * range.size * view.inner,
                  tensor.bytes() + (o * view.dim + range.offset) * view.inner,
                  range.size * view.inner);
  }
  return result;
}

Status placePart(Tensor &tensor, int64_t axis, int64_t parts, int64_t index,
                 const std::vector<std::byte> &bytes) {
  AxisView view = viewAlong(tensor, axis);
  Range range = balancedShard(view.dim, parts, index);
  size_t expected = view.outer * range.size * view.inner;
  if (bytes.size() != expected)
    return Status::failure("member " + std::to_string(index) + " sent " +
                           std::to_string(bytes.size()) + " bytes, expected " +
                           std::to_string(expected) +
                           " (the programs disagree)");
  if (bytes.empty())
    return Status::success();
  for (int64_t o = 0; o < view.outer; ++o)
    std::memcpy(tensor.bytes() + (o * view.dim + range.offset) * view.inner,
                bytes.data() + o * range.size * view.inner,
                range.size * view.inner);
  return Status::success();
}

int64_t groupColor(const Group &group, int64_t device) {
  if (std::find(group.begin(), group.end(), device) == group.end())
    return -1;
  return *std::min_element(group.begin(), group.end());
}

Status Transport::memberIndex(const Group &group, int64_t &index) const {
  auto found = std::find(group.begin(), group.end(), rank());
  if (found == group.end())
    return Status::failure("device " + std::to_string(rank()) +
                           " runs a collective over a group without it");
  index = found - group.begin();
  return Status::success();
}

Status Transport::allReduce(Tensor &data, ReduceKind reduce,
                            const Group &group) {
  std::vector<Bytes> outgoing(group.size(), bytesOf(data)), incoming;
  if (Status status = exchange(outgoing, incoming, group); !status.ok())
    return status;
  return reduceInto(data, reduce, incoming, "all_reduce");
}

Status Transport::allGather(const Tensor &in, Tensor &out, int64_t axis,
                            const Group &group) {
  std::vector<Bytes> outgoing(group.size(), bytesOf(in)), incoming;
  if (Status status = exchange(outgoing, incoming, group); !status.ok())
    return status;
  int64_t n = static_cast<int64_t>(group.size());
  for (int64_t r = 0; r < n; ++r)
    if (Status status = placePart(out, axis, n, r, incoming[r]); !status.ok())
      return Status::failure("all_gather: " + status.error);
  return Status::success();
}

Status Transport::reduceScatter(const Tensor &in, Tensor &out, int64_t axis,
                                ReduceKind reduce, const Group &group) {
  std::vector<Bytes> incoming;
  if (Status status =
          exchange(cutParts(in, axis, static_cast<int64_t>(group.size())),
                   incoming, group);
      !status.ok())
    return status;
  return reduceInto(out, reduce, incoming, "reduce_scatter");
}

Status Transport::allToAll(const Tensor &in, Tensor &out, int64_t splitAxis,
                           int64_t concatAxis, const Group &group) {
  int64_t n = static_cast<int64_t>(group.size());
  std::vector<Bytes> incoming;
  if (Status status = exchange(cutParts(in, splitAxis, n), incoming, group);
      !status.ok())
    return status;
  for (int64_t r = 0; r < n; ++r)
    if (Status status = placePart(out, concatAxis, n, r, incoming[r]);
        !status.ok())
      return Status::failure("all_to_all: " + status.error);
  return Status::success();
}

Status Transport::broadcast(Tensor &data, int64_t root, const Group &group) {
  int64_t me = 0;
  if (Status status = memberIndex(group, me); !status.ok())
    return status;
  std::vector<Bytes> outgoing(group.size());
  if (me == root)
    std::fill(outgoing.begin(), outgoing.end(), bytesOf(data));
  std::vector<Bytes> incoming;
  if (Status status = exchange(outgoing, incoming, group); !status.ok())
    return status;
  size_t got = root >= 0 && root < static_cast<int64_t>(incoming.size())
                   ? incoming[root].size()
                   : 0;
  if (got != data.byteSize())
    return Status::failure("broadcast: the root sent " + std::to_string(got) +
                           " bytes, expected " +
                           std::to_string(data.byteSize()));
  if (!incoming[root].empty())
    std::memcpy(data.bytes(), incoming[root].data(), data.byteSize());
  return Status::success();
}

Status LocalCommunicator::exchange(const std::vector<Bytes> &outgoing,
                                   std::vector<Bytes> &incoming,
                                   const Group &group) {
  if (group.size() != 1 || group[0] != 0 || outgoing.size() != 1)
    return Status::failure("a single process runs device 0 only; a group of " +
                           std::to_string(group.size()) +
                           " devices needs parplan-run under mpirun");
  incoming = outgoing;
  return Status::success();
}

Status LocalCommunicator::send(const Tensor &, int64_t peer, int64_t) {
  return Status::failure("a single process has no device " +
                         std::to_string(peer) + " to send to");
}

Status LocalCommunicator::recv(Tensor &, int64_t peer, int64_t) {
  return Status::failure("a single process has no device " +
                         std::to_string(peer) + " to receive from");
}

} // namespace parplan::runtime
