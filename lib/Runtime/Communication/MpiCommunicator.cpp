//===- MpiCommunicator.cpp - collectives over MPI -------------------------===//
//
// One primitive, MPI_Alltoallv of bytes on a communicator per group (made
// once, with MPI_Comm_create_group, which only the group's members call),
// carries every collective (Communicator.h) but broadcast; reductions
// happen after it, in member order, so results are bitwise reproducible.
// Sends are non-blocking (MPI_Isend of a copy), and a broadcast is the
// root's sends to the others on the group's communicator: a root never
// waits for its receivers, so pipeline stages that run their micro-batches
// in different orders (a schedule) only ever wait for data they need. MPI
// counts are ints: an exchange of 2 GiB or more is an error rather than a
// silent overflow.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/MpiCommunicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <map>

namespace parplan::runtime {

namespace {

std::string mpiError(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(call) + " failed: " + std::string(text, length);
}

class MpiCommunicator : public Transport {
public:
  MpiCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override {
    (void)flushSends();
    for (auto &[group, comm] : comms_)
      MPI_Comm_free(&comm);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status exchange(const std::vector<Bytes> &outgoing,
                  std::vector<Bytes> &incoming, const Group &group) override {
    MPI_Comm comm;
    if (Status status = communicatorOf(group, comm); !status.ok())
      return status;
    int n = static_cast<int>(group.size());
    if (static_cast<int>(outgoing.size()) != n)
      return Status::failure("exchange over a group of " + std::to_string(n) +
                             " with " + std::to_string(outgoing.size()) +
                             " parts");
    std::vector<int64_t> sendSizes(n), recvSizes(n);
    for (int r = 0; r < n; ++r)
      sendSizes[r] = static_cast<int64_t>(outgoing[r].size());
    if (int code = MPI_Alltoall(sendSizes.data(), 1, MPI_INT64_T,
                                recvSizes.data(), 1, MPI_INT64_T, comm);
        code != MPI_SUCCESS)
      return Status::failure(mpiError("MPI_Alltoall", code));
    std::vector<int> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
    int64_t sendTotal = 0, recvTotal = 0;
    for (int r = 0; r < n; ++r) {
      sendDispls[r] = static_cast<int>(sendTotal);
      recvDispls[r] = static_cast<int>(recvTotal);
      sendTotal += sendSizes[r];
      recvTotal += recvSizes[r];
      if (sendTotal > INT_MAX || recvTotal > INT_MAX || recvSizes[r] < 0)
        return Status::failure(
            "a collective of 2 GiB or more per device is not supported yet");
      sendCounts[r] = static_cast<int>(sendSizes[r]);
      recvCounts[r] = static_cast<int>(recvSizes[r]);
    }
    std::vector<std::byte> sendBuffer(sendTotal), recvBuffer(recvTotal);
    for (int r = 0; r < n; ++r)
      std::copy(outgoing[r].begin(), outgoing[r].end(),
                sendBuffer.begin() + sendDispls[r]);
    if (int code =
            MPI_Alltoallv(sendBuffer.data(), sendCounts.data(),
                          sendDispls.data(), MPI_BYTE, recvBuffer.data(),
                          recvCounts.data(), recvDispls.data(), MPI_BYTE, comm);
        code != MPI_SUCCESS)
      return Status::failure(mpiError("MPI_Alltoallv", code));
    incoming.assign(n, Bytes());
    for (int r = 0; r < n; ++r)
      incoming[r].assign(recvBuffer.begin() + recvDispls[r],
                         recvBuffer.begin() + recvDispls[r] + recvCounts[r]);
    return Status::success();
  }

  Status send(const Tensor &data, int64_t peer, int64_t tag) override {
    if (Status status = checkMessage(data, peer, tag); !status.ok())
      return status;
    return post(data.bytes(), data.byteSize(), static_cast<int>(peer),
                static_cast<int>(tag), MPI_COMM_WORLD);
  }

  Status broadcast(Tensor &data, int64_t root, const Group &group) override {
    MPI_Comm comm;
    if (Status status = communicatorOf(group, comm); !status.ok())
      return status;
    int64_t me = 0;
    if (Status status = memberIndex(group, me); !status.ok())
      return status;
    if (root < 0 || root >= static_cast<int64_t>(group.size()))
      return Status::failure("broadcast root " + std::to_string(root) +
                             " is outside its group of " +
                             std::to_string(group.size()));
    if (data.byteSize() > static_cast<size_t>(INT_MAX))
      return Status::failure("a message of 2 GiB or more is not supported yet");
    if (me == root) {
      for (int r = 0; r < static_cast<int>(group.size()); ++r)
        if (r != root)
          if (Status status =
                  post(data.bytes(), data.byteSize(), r, kBroadcastTag, comm);
              !status.ok())
            return status;
      return Status::success();
    }
    return receive(data, static_cast<int>(root), kBroadcastTag, comm,
                   "device " + std::to_string(group[root]));
  }

  Status flushSends() override {
    if (pending_.empty())
      return Status::success();
    std::vector<MPI_Request> requests;
    requests.reserve(pending_.size());
    for (PendingSend &send : pending_)
      requests.push_back(send.request);
    int code = MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                           MPI_STATUSES_IGNORE);
    pending_.clear();
    if (code != MPI_SUCCESS)
      return Status::failure(mpiError("MPI_Waitall", code));
    return Status::success();
  }

  Status recv(Tensor &data, int64_t peer, int64_t tag) override {
    if (Status status = checkMessage(data, peer, tag); !status.ok())
      return status;
    return receive(data, static_cast<int>(peer), static_cast<int>(tag),
                   MPI_COMM_WORLD, "device " + std::to_string(peer));
  }

private:
  /// Apart from the collectives on a group's communicator, which MPI keeps
  /// apart from its messages anyway.
  static constexpr int kBroadcastTag = 1;

  struct PendingSend {
    std::vector<std::byte> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  /// MPI_Isend of a copy of the bytes; first frees the sends delivered.
  Status post(const std::byte *bytes, size_t size, int peer, int tag,
              MPI_Comm comm) {
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [](PendingSend &send) {
                                    int done = 0;
                                    MPI_Test(&send.request, &done,
                                             MPI_STATUS_IGNORE);
                                    return done != 0;
                                  }),
                   pending_.end());
    PendingSend &send = pending_.emplace_back();
    send.bytes.assign(bytes, bytes + size);
    if (int code = MPI_Isend(send.bytes.data(), static_cast<int>(size),
                             MPI_BYTE, peer, tag, comm, &send.request);
        code != MPI_SUCCESS) {
      pending_.pop_back();
      return Status::failure(mpiError("MPI_Isend", code));
    }
    return Status::success();
  }

  Status receive(Tensor &data, int peer, int tag, MPI_Comm comm,
                 const std::string &from) {
    MPI_Status status;
    if (int code = MPI_Recv(data.bytes(), static_cast<int>(data.byteSize()),
                            MPI_BYTE, peer, tag, comm, &status);
        code != MPI_SUCCESS)
      return Status::failure(mpiError("MPI_Recv", code));
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (static_cast<size_t>(count) != data.byteSize())
      return Status::failure("received " + std::to_string(count) +
                             " bytes from " + from + ", expected " +
                             std::to_string(data.byteSize()));
    return Status::success();
  }

  Status checkMessage(const Tensor &data, int64_t peer, int64_t tag) const {
    void *value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    int64_t tagBound = found ? *static_cast<int *>(value) : 32767;
    if (peer < 0 || peer >= size_ || tag < 0 || tag > tagBound)
      return Status::failure("message to or from device " +
                             std::to_string(peer) + " with tag " +
                             std::to_string(tag) + " is out of MPI's range");
    if (data.byteSize() > static_cast<size_t>(INT_MAX))
      return Status::failure("a message of 2 GiB or more is not supported yet");
    return Status::success();
  }

  /// The communicator of `group`, whose members are world ranks; its ranks
  /// follow the group's order.
  Status communicatorOf(const Group &group, MPI_Comm &comm) {
    auto found = comms_.find(group);
    if (found != comms_.end()) {
      comm = found->second;
      return Status::success();
    }
    int64_t me = 0;
    if (Status status = memberIndex(group, me); !status.ok())
      return status;
    std::vector<int> ranks;
    for (int64_t device : group) {
      if (device < 0 || device >= size_)
        return Status::failure("group names device " + std::to_string(device) +
                               " of a world of " + std::to_string(size_));
      ranks.push_back(static_cast<int>(device));
    }
    MPI_Group world, members;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(),
                   &members);
    // Distinct tags keep concurrent creations of overlapping groups apart.
    int tag = 0;
    for (int rank : ranks)
      tag = (tag * 131 + rank + 1) % 32768;
    int code = MPI_Comm_create_group(MPI_COMM_WORLD, members, tag, &comm);
    MPI_Group_free(&members);
    MPI_Group_free(&world);
    if (code != MPI_SUCCESS)
      return Status::failure(mpiError("MPI_Comm_create_group", code));
    comms_.emplace(group, comm);
    return Status::success();
  }

  int rank_ = 0, size_ = 1;
  std::map<Group, MPI_Comm> comms_;
  /// Moving a PendingSend moves its vector's heap block, not the bytes
  /// MPI reads.
  std::vector<PendingSend> pending_;
};

} // namespace

std::unique_ptr<Transport> createMpiCommunicator() {
  return std::make_unique<MpiCommunicator>();
}

} // namespace parplan::runtime
