//===- RuntimeCollectiveStepsTest.cpp - the CUDA backend's collectives ----===//
//
// collectiveSteps (Device/CollectiveSteps.h) is what the CUDA backend runs
// for a plan collective. Here n simulated members each take their own steps
// on host buffers sized as the backend sizes them, under an emulation of
// NCCL's semantics: collectives match across members in call order, sends
// and receives inside a group match per (sender, receiver) in order, and a
// group's calls read before any of them writes. Pack and Unpack run the
// device kernels through HostLauncher. Every member's output must then be
// what the Communicator semantics give, built from cutParts and placePart;
// every byte a step touches must lie inside its buffer (input, output, or
// its part of the staging buffer); no two calls of a group may write bytes
// another reads or writes.
//
//===----------------------------------------------------------------------===//

#include "Device/CollectiveSteps.h"
#include "Device/HostLauncher.h"
#include "Device/Pack.h"
#include "parplan/Runtime/Backend.h"
#include "parplan/Runtime/Communicator.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

using namespace parplan;
using namespace parplan::runtime;
using device::CollectiveStep;
using device::Place;
using device::Region;
using device::StepKind;

namespace {

//===----------------------------------------------------------------------===//
// The emulator
//===----------------------------------------------------------------------===//

/// A step NCCL would reject or wait on forever, or one that touches bytes
/// outside its buffer.
struct EmulationError {
  std::string message;
};

[[noreturn]] void fail(const std::string &message) {
  throw EmulationError{message};
}

const char *kindName(StepKind kind) {
  switch (kind) {
  case StepKind::Copy:
    return "Copy";
  case StepKind::Pack:
    return "Pack";
  case StepKind::Unpack:
    return "Unpack";
  case StepKind::AllReduce:
    return "AllReduce";
  case StepKind::Broadcast:
    return "Broadcast";
  case StepKind::AllGather:
    return "AllGather";
  case StepKind::ReduceScatter:
    return "ReduceScatter";
  case StepKind::Reduce:
    return "Reduce";
  case StepKind::Send:
    return "Send";
  case StepKind::Recv:
    return "Recv";
  case StepKind::GroupStart:
    return "GroupStart";
  case StepKind::GroupEnd:
    return "GroupEnd";
  }
  return "?";
}

bool isLocal(StepKind kind) {
  return kind == StepKind::Copy || kind == StepKind::Pack ||
         kind == StepKind::Unpack;
}

/// Bytes [begin, end) of one of a member's buffers: 0 input (and output in
/// place), 1 output, 2 staging.
struct Span {
  int buffer = 0;
  size_t begin = 0, end = 0;
};

bool overlap(const Span &a, const Span &b) {
  return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end;
}

/// One simulated device with the buffers the CUDA backend gives a
/// collective: its input, its output (the input's buffer in place), and a
/// staging buffer of exactly the size the backend allocates for it.
struct Member {
  int64_t index = 0;
  DType type = DType::F32;
  Shape inShape, outShape;
  bool inPlace = false;
  std::vector<std::byte> input, output, staging;
  std::vector<CollectiveStep> steps;
  size_t next = 0;

  /// `bytes` at `place`, which must lie inside the place's region: the
  /// input, the output, or the staging the backend sets aside for either
  /// (StagingIn at 0, StagingOut at alignUp(input bytes); only as many
  /// bytes as the tensor staged there, though the backend's alignment and
  /// other collectives may leave more).
  Span span(Place place, size_t bytes) const {
    std::string who = "member " + std::to_string(index) + ": ";
    Span span;
    size_t size = 0;
    switch (place.region) {
    case Region::None:
      fail(who + "a step reads or writes a null buffer");
    case Region::Input:
      size = input.size();
      break;
    case Region::Output:
      span.buffer = inPlace ? 0 : 1;
      size = inPlace ? input.size() : output.size();
      break;
    case Region::StagingIn:
      span.buffer = 2;
      size = input.size();
      break;
    case Region::StagingOut:
      span.buffer = 2;
      span.begin = device::stagingOutOffset(input.size());
      size = bytesOf(Region::Output);
      break;
    }
    if (place.offset > size || bytes > size - place.offset)
      fail(who + "bytes " + std::to_string(place.offset) + ".." +
           std::to_string(place.offset + bytes) + " of a region of " +
           std::to_string(size));
    span.begin += place.offset;
    span.end = span.begin + bytes;
    return span;
  }
  std::byte *at(const Span &span) {
    std::vector<std::byte> &buffer = span.buffer == 0   ? input
                                     : span.buffer == 1 ? output
                                                        : staging;
    return buffer.data() + span.begin;
  }
  std::vector<std::byte> read(const Span &span) {
    std::byte *first = at(span);
    return std::vector<std::byte>(first, first + (span.end - span.begin));
  }
  void write(const Span &span, const std::vector<std::byte> &bytes) {
    if (bytes.size() != span.end - span.begin)
      fail("a write of the wrong size");
    if (!bytes.empty())
      std::memcpy(at(span), bytes.data(), bytes.size());
  }
  const Shape &shapeOf(Region region) const {
    return region == Region::Input ? inShape : outShape;
  }
  size_t bytesOf(Region region) const {
    return static_cast<size_t>(numElements(shapeOf(region))) * byteWidth(type);
  }
  std::vector<std::byte> &result() { return inPlace ? input : output; }
};

template <typename T> T combine(ReduceKind op, T lhs, T rhs) {
  switch (op) {
  case ReduceKind::Sum:
    return static_cast<T>(lhs + rhs);
  case ReduceKind::Max:
    return std::max(lhs, rhs);
  case ReduceKind::Min:
    return std::min(lhs, rhs);
  case ReduceKind::Prod:
    return static_cast<T>(lhs * rhs);
  }
  return lhs;
}

/// `into` op= `value` elementwise, in `type` as NCCL computes it (booleans
/// are the bytes they are stored as, ncclUint8).
void reduceBytes(DType type, ReduceKind op, std::vector<std::byte> &into,
                 const std::vector<std::byte> &value) {
  auto apply = [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i + sizeof(T) <= into.size(); i += sizeof(T)) {
      T lhs, rhs;
      std::memcpy(&lhs, into.data() + i, sizeof(T));
      std::memcpy(&rhs, value.data() + i, sizeof(T));
      lhs = combine(op, lhs, rhs);
      std::memcpy(into.data() + i, &lhs, sizeof(T));
    }
  };
  switch (type) {
  case DType::F32:
    return apply(float{});
  case DType::F64:
    return apply(double{});
  case DType::I1:
    return apply(uint8_t{});
  case DType::I8:
    return apply(int8_t{});
  case DType::I32:
    return apply(int32_t{});
  case DType::I64:
    return apply(int64_t{});
  default:
    fail(std::string("the emulator has no ") + toString(type) + " reduction");
  }
}

/// The bytes a communication step reads on `member`, as NCCL sizes them
/// (none where the call reads nothing there).
std::optional<Span> readOf(const Member &member, const CollectiveStep &step,
                           int64_t members) {
  size_t bytes = step.bytes();
  switch (step.kind) {
  case StepKind::Broadcast:
    if (member.index != step.root)
      return std::nullopt;
    break;
  case StepKind::ReduceScatter:
    bytes *= members;
    break;
  case StepKind::Recv:
    return std::nullopt;
  default:
    break;
  }
  return member.span(step.source, bytes);
}

/// The bytes a communication step writes on `member`.
std::optional<Span> writeOf(const Member &member, const CollectiveStep &step,
                            int64_t members) {
  size_t bytes = step.bytes();
  switch (step.kind) {
  case StepKind::AllGather:
    bytes *= members;
    break;
  case StepKind::Reduce:
    if (member.index != step.root)
      return std::nullopt;
    break;
  case StepKind::Send:
    return std::nullopt;
  default:
    break;
  }
  return member.span(step.destination, bytes);
}

struct Write {
  int64_t member = 0;
  Span span;
  std::vector<std::byte> bytes;
};

/// Runs every member's steps together.
class Emulator {
public:
  explicit Emulator(std::vector<Member> &members)
      : members_(members), n_(static_cast<int64_t>(members.size())) {}

  void run() {
    for (;;) {
      for (Member &member : members_)
        for (; member.next < member.steps.size() &&
               isLocal(member.steps[member.next].kind);
             ++member.next)
          runLocal(member, member.steps[member.next]);
      auto done = [](const Member &member) {
        return member.next == member.steps.size();
      };
      auto finished = std::count_if(members_.begin(), members_.end(), done);
      if (finished == n_)
        return;
      if (finished > 0)
        fail("a member has no steps left while another waits in a call");
      StepKind kind = current(0).kind;
      for (int64_t m = 1; m < n_; ++m)
        if (current(m).kind != kind)
          fail(std::string("member 0 calls ") + kindName(kind) +
               " while member " + std::to_string(m) + " calls " +
               kindName(current(m).kind));
      if (kind == StepKind::GroupStart) {
        runGroup();
        continue;
      }
      if (kind == StepKind::GroupEnd || kind == StepKind::Send ||
          kind == StepKind::Recv)
        fail(std::string(kindName(kind)) + " outside a group");
      std::vector<const CollectiveStep *> calls;
      for (int64_t m = 0; m < n_; ++m) {
        if (current(m).grouped)
          fail("a step outside a group marked grouped");
        calls.push_back(&current(m));
        ++members_[m].next;
      }
      std::vector<Write> writes;
      runJoint(calls, writes);
      apply(writes);
    }
  }

private:
  const CollectiveStep &current(int64_t m) const {
    return members_[m].steps[members_[m].next];
  }

  void runLocal(Member &member, const CollectiveStep &step) {
    if (step.grouped)
      fail(std::string(kindName(step.kind)) + " marked grouped");
    device::HostLauncher launcher;
    switch (step.kind) {
    case StepKind::Copy: {
      Span from = member.span(step.source, step.bytes());
      Span to = member.span(step.destination, step.bytes());
      member.write(to, member.read(from));
      return;
    }
    case StepKind::Pack:
    case StepKind::Unpack: {
      bool pack = step.kind == StepKind::Pack;
      Place tensorPlace = pack ? step.source : step.destination;
      Place packedPlace = pack ? step.destination : step.source;
      if (step.type != member.type || tensorPlace.offset != 0 ||
          step.count != numElements(member.shapeOf(tensorPlace.region)))
        fail(std::string(kindName(step.kind)) +
             " of another type or size than the tensor's");
      Span tensorSpan =
          member.span(tensorPlace, member.bytesOf(tensorPlace.region));
      Span packedSpan = member.span(packedPlace, step.bytes());
      if (overlap(tensorSpan, packedSpan))
        fail(std::string(kindName(step.kind)) + " onto its own source");
      device::DeviceTensor tensor{member.at(tensorSpan), member.type,
                                  member.shapeOf(tensorPlace.region)};
      if (pack)
        device::packParts(launcher, tensor, step.axis, step.parts,
                          member.at(packedSpan));
      else
        device::unpackParts(launcher, member.at(packedSpan), step.axis,
                            step.parts, tensor);
      return;
    }
    default:
      fail("not a local step");
    }
  }

  /// One call per member, made together: NCCL's collective semantics.
  void runJoint(const std::vector<const CollectiveStep *> &calls,
                std::vector<Write> &writes) {
    const CollectiveStep &first = *calls[0];
    bool rooted =
        first.kind == StepKind::Broadcast || first.kind == StepKind::Reduce;
    for (int64_t m = 1; m < n_; ++m) {
      const CollectiveStep &call = *calls[m];
      if (call.kind != first.kind || call.count != first.count ||
          call.type != first.type || call.op != first.op ||
          (rooted && call.root != first.root))
        fail(std::string("members 0 and ") + std::to_string(m) +
             " make different " + kindName(first.kind) + " calls");
    }
    if (rooted && (first.root < 0 || first.root >= n_))
      fail("root " + std::to_string(first.root) + " outside the group");
    auto readFrom = [&](int64_t m) {
      return members_[m].read(*readOf(members_[m], *calls[m], n_));
    };
    auto writeTo = [&](int64_t m, std::vector<std::byte> bytes) {
      if (std::optional<Span> span = writeOf(members_[m], *calls[m], n_))
        writes.push_back({m, *span, std::move(bytes)});
    };
    auto reduced = [&] {
      std::vector<std::byte> result = readFrom(0);
      for (int64_t m = 1; m < n_; ++m)
        reduceBytes(first.type, first.op, result, readFrom(m));
      return result;
    };
    switch (first.kind) {
    case StepKind::AllReduce:
    case StepKind::Reduce: {
      std::vector<std::byte> result = reduced();
      for (int64_t m = 0; m < n_; ++m)
        writeTo(m, result);
      return;
    }
    case StepKind::Broadcast: {
      std::vector<std::byte> data = readFrom(first.root);
      for (int64_t m = 0; m < n_; ++m)
        writeTo(m, data);
      return;
    }
    case StepKind::AllGather: {
      std::vector<std::byte> gathered;
      for (int64_t m = 0; m < n_; ++m) {
        std::vector<std::byte> part = readFrom(m);
        gathered.insert(gathered.end(), part.begin(), part.end());
      }
      for (int64_t m = 0; m < n_; ++m)
        writeTo(m, gathered);
      return;
    }
    case StepKind::ReduceScatter: {
      std::vector<std::byte> result = reduced();
      size_t share = first.bytes();
      for (int64_t m = 0; m < n_; ++m)
        writeTo(m, std::vector<std::byte>(result.begin() + m * share,
                                          result.begin() + (m + 1) * share));
      return;
    }
    default:
      fail(std::string(kindName(first.kind)) + " is not a collective");
    }
  }

  /// GroupStart..GroupEnd on every member: the k-th collectives of the
  /// members go together, sends and receives match per (sender, receiver)
  /// in order, and every call reads before any writes.
  void runGroup() {
    std::vector<std::vector<const CollectiveStep *>> blocks(n_),
        collectives(n_);
    std::map<std::pair<int64_t, int64_t>, std::vector<const CollectiveStep *>>
        sends, receives;
    for (int64_t m = 0; m < n_; ++m) {
      Member &member = members_[m];
      if (member.steps[member.next++].grouped)
        fail("a GroupStart marked grouped");
      for (;;) {
        if (member.next == member.steps.size())
          fail("a group that is never closed");
        const CollectiveStep &step = member.steps[member.next++];
        if (step.kind == StepKind::GroupEnd)
          break;
        if (step.kind == StepKind::GroupStart)
          fail("a group inside a group");
        if (isLocal(step.kind))
          fail(std::string(kindName(step.kind)) +
               " inside a group (its kernel would run before the calls)");
        if (!step.grouped)
          fail("a step inside a group not marked grouped");
        if (step.count == 0)
          fail(std::string("an empty ") + kindName(step.kind) +
               " in a group (empty parts are skipped)");
        blocks[m].push_back(&step);
        if ((step.kind == StepKind::Send || step.kind == StepKind::Recv) &&
            (step.peer < 0 || step.peer >= n_))
          fail("peer " + std::to_string(step.peer) + " outside the group");
        if (step.kind == StepKind::Send)
          sends[{m, step.peer}].push_back(&step);
        else if (step.kind == StepKind::Recv)
          receives[{step.peer, m}].push_back(&step);
        else
          collectives[m].push_back(&step);
      }
    }
    checkHazards(blocks);
    std::vector<Write> writes;
    for (int64_t m = 1; m < n_; ++m)
      if (collectives[m].size() != collectives[0].size())
        fail("members make different numbers of collective calls in a group");
    for (size_t k = 0; k < collectives[0].size(); ++k) {
      std::vector<const CollectiveStep *> calls;
      for (int64_t m = 0; m < n_; ++m)
        calls.push_back(collectives[m][k]);
      runJoint(calls, writes);
    }
    for (const auto &[pair, received] : receives)
      if (!sends.count(pair))
        fail("member " + std::to_string(pair.second) +
             " receives from member " + std::to_string(pair.first) +
             ", which sends nothing");
    for (const auto &[pair, sent] : sends) {
      auto [from, to] = pair;
      const std::vector<const CollectiveStep *> &received = receives[pair];
      if (received.size() != sent.size())
        fail("member " + std::to_string(from) + " sends " +
             std::to_string(sent.size()) + " messages to member " +
             std::to_string(to) + ", which receives " +
             std::to_string(received.size()));
      for (size_t k = 0; k < sent.size(); ++k) {
        if (sent[k]->count != received[k]->count ||
            sent[k]->type != received[k]->type)
          fail("member " + std::to_string(from) + " sends " +
               std::to_string(sent[k]->bytes()) + " bytes to member " +
               std::to_string(to) + ", which receives " +
               std::to_string(received[k]->bytes()));
        writes.push_back(
            {to, *writeOf(members_[to], *received[k], n_),
             members_[from].read(*readOf(members_[from], *sent[k], n_))});
      }
    }
    apply(writes);
  }

  /// Calls of one group run in any order: none may write bytes that another
  /// reads or writes.
  void checkHazards(
      const std::vector<std::vector<const CollectiveStep *>> &blocks) const {
    for (int64_t m = 0; m < n_; ++m) {
      const Member &member = members_[m];
      for (size_t i = 0; i < blocks[m].size(); ++i) {
        std::optional<Span> written = writeOf(member, *blocks[m][i], n_);
        if (!written)
          continue;
        for (size_t j = 0; j < blocks[m].size(); ++j) {
          if (j == i)
            continue;
          std::optional<Span> read = readOf(member, *blocks[m][j], n_);
          std::optional<Span> alsoWritten = writeOf(member, *blocks[m][j], n_);
          if ((read && overlap(*written, *read)) ||
              (alsoWritten && overlap(*written, *alsoWritten)))
            fail("member " + std::to_string(m) + ": grouped calls " +
                 std::to_string(i) + " and " + std::to_string(j) +
                 " share bytes that one writes");
        }
      }
    }
  }

  void apply(const std::vector<Write> &writes) {
    for (const Write &write : writes)
      members_[write.member].write(write.span, write.bytes);
  }

  std::vector<Member> &members_;
  int64_t n_;
};

//===----------------------------------------------------------------------===//
// Cases and the Communicator's results
//===----------------------------------------------------------------------===//

struct Case {
  plan::Collective::Kind kind = plan::Collective::ALL_REDUCE;
  DType type = DType::F32;
  plan::Reduction reduce = plan::SUM;
  int64_t members = 1;
  /// all_reduce, broadcast, reduce_scatter: every member's input;
  /// all_gather: the gathered tensor; all_to_all: the tensor the inputs are
  /// cut from along the concatenated axis (when it is the split axis,
  /// every member's input).
  Shape shape;
  int64_t axis = 0, concatAxis = 0, root = 0;

  std::string describe() const {
    std::ostringstream text;
    text << plan::Collective::Kind_Name(kind) << " " << toString(type) << " "
         << plan::Reduction_Name(reduce) << " over " << members << ", "
         << toString(shape) << " axis " << axis << " concat " << concatAxis
         << " root " << root;
    return text.str();
  }
};

Case caseOf(plan::Collective::Kind kind, DType type, int64_t members,
            Shape shape, int64_t axis = 0, int64_t concatAxis = 0) {
  Case c;
  c.kind = kind;
  c.type = type;
  c.members = members;
  c.shape = std::move(shape);
  c.axis = axis;
  c.concatAxis = concatAxis;
  return c;
}

int64_t partSize(int64_t dim, int64_t parts, int64_t index) {
  return balancedShard(dim, parts, index).size;
}

Shape withDim(Shape shape, int64_t axis, int64_t size) {
  shape[axis] = size;
  return shape;
}

/// Member m's input and output shapes: the members hold balanced parts.
std::pair<Shape, Shape> memberShapes(const Case &c, int64_t m) {
  int64_t n = c.members;
  const Shape &s = c.shape;
  switch (c.kind) {
  case plan::Collective::ALL_GATHER:
    return {withDim(s, c.axis, partSize(s[c.axis], n, m)), s};
  case plan::Collective::REDUCE_SCATTER:
    return {s, withDim(s, c.axis, partSize(s[c.axis], n, m))};
  case plan::Collective::ALL_TO_ALL:
    if (c.axis == c.concatAxis)
      return {s, withDim(s, c.axis, n * partSize(s[c.axis], n, m))};
    return {withDim(s, c.concatAxis, partSize(s[c.concatAxis], n, m)),
            withDim(s, c.axis, partSize(s[c.axis], n, m))};
  default:
    return {s, s};
  }
}

/// Member m's input: small integers (exact in every type and every order
/// of reduction), some negative; 1 to 3 in size for products; booleans
/// mostly false, so that "any" and "all" both vary.
Tensor memberInput(const Case &c, const Shape &shape, int64_t m) {
  Tensor tensor(c.type, shape);
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    uint64_t h = static_cast<uint64_t>(m * 7919 + i * 104729 + 12345);
    h ^= h >> 7;
    h *= 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    double value = static_cast<double>(h % 41) - 20;
    if (c.type == DType::I1)
      value = h % 3 == 0 ? 1 : 0;
    else if (c.reduce == plan::PROD)
      value = static_cast<double>(h % 3 + 1) * (h % 7 == 0 ? -1 : 1);
    tensor.set(i, value);
  }
  return tensor;
}

std::vector<std::byte> bytesOf(const Tensor &tensor) {
  return std::vector<std::byte>(tensor.bytes(),
                                tensor.bytes() + tensor.byteSize());
}

/// The reduction of the members' tensors as the Communicator computes it:
/// in member order, in double, rounded once (a boolean sum is "any").
Tensor reduceAll(const std::vector<Tensor> &inputs, ReduceKind reduce) {
  Tensor result = inputs[0];
  for (int64_t i = 0; i < result.numElements(); ++i) {
    double value = inputs[0].get(i);
    for (size_t m = 1; m < inputs.size(); ++m)
      value = combine(reduce, value, inputs[m].get(i));
    result.set(i, value);
  }
  return result;
}

/// Every member's output under Communicator.h's semantics.
std::vector<Tensor> communicatorResults(const Case &c,
                                        const std::vector<Tensor> &inputs) {
  int64_t n = c.members;
  std::vector<Tensor> outputs;
  for (int64_t m = 0; m < n; ++m)
    outputs.emplace_back(c.type, memberShapes(c, m).second);
  ReduceKind reduce = toReduceKind(c.reduce).value_or(ReduceKind::Sum);
  for (int64_t m = 0; m < n; ++m) {
    Tensor &out = outputs[m];
    switch (c.kind) {
    case plan::Collective::ALL_REDUCE:
      out = reduceAll(inputs, reduce);
      break;
    case plan::Collective::BROADCAST:
      out = inputs[c.root];
      break;
    case plan::Collective::ALL_GATHER:
      for (int64_t r = 0; r < n; ++r)
        REQUIRE(placePart(out, c.axis, n, r, bytesOf(inputs[r])).ok());
      break;
    case plan::Collective::REDUCE_SCATTER:
      REQUIRE(placePart(out, c.axis, 1, 0,
                        cutParts(reduceAll(inputs, reduce), c.axis, n)[m])
                  .ok());
      break;
    case plan::Collective::ALL_TO_ALL:
      for (int64_t r = 0; r < n; ++r)
        REQUIRE(placePart(out, c.concatAxis, n, r,
                          cutParts(inputs[r], c.axis, n)[m])
                    .ok());
      break;
    default:
      FAIL("unknown kind");
    }
  }
  return outputs;
}

plan::Collective collectiveOf(const Case &c) {
  plan::Collective collective;
  collective.set_kind(c.kind);
  collective.set_group("g");
  collective.set_input(0);
  bool inPlace = c.kind == plan::Collective::ALL_REDUCE ||
                 c.kind == plan::Collective::BROADCAST;
  collective.set_output(inPlace ? 0 : 1);
  collective.set_axis(c.axis);
  collective.set_concat_axis(c.concatAxis);
  collective.set_reduce(c.reduce);
  collective.set_root(c.root);
  return collective;
}

/// The members of `c` with their inputs, outputs and staging filled with
/// a pattern no result has, and their steps.
std::vector<Member> makeMembers(const Case &c,
                                const std::vector<Tensor> &inputs) {
  plan::Collective collective = collectiveOf(c);
  std::vector<Member> members(c.members);
  for (int64_t m = 0; m < c.members; ++m) {
    Member &member = members[m];
    member.index = m;
    member.type = c.type;
    std::tie(member.inShape, member.outShape) = memberShapes(c, m);
    member.inPlace = collective.input() == collective.output();
    member.input = bytesOf(inputs[m]);
    size_t outBytes = member.bytesOf(Region::Output);
    if (!member.inPlace)
      member.output.assign(outBytes, std::byte{0xA5});
    member.staging.assign(device::stagingBytes(member.input.size(), outBytes),
                          std::byte{0xA5});
    member.steps = device::collectiveSteps(
        collective, member.inShape, member.outShape, c.type, c.members, m);
  }
  return members;
}

/// Where member m's output first differs from the expected tensor; empty
/// when it does not.
std::string difference(const std::vector<std::byte> &got,
                       const Tensor &expected, int64_t m) {
  std::ostringstream text;
  text << "member " << m << ": ";
  if (got.size() != expected.byteSize()) {
    text << got.size() << " bytes, expected " << expected.byteSize();
    return text.str();
  }
  auto first = std::mismatch(got.begin(), got.end(), expected.bytes()).first;
  if (first == got.end())
    return "";
  size_t width = byteWidth(expected.dtype());
  size_t element = static_cast<size_t>(first - got.begin()) / width;
  Tensor value(expected.dtype(), {1});
  std::memcpy(value.bytes(), got.data() + element * width, width);
  text << "element " << element << " is " << value.get(0) << ", expected "
       << expected.get(static_cast<int64_t>(element));
  return text.str();
}

std::vector<Tensor> inputsOf(const Case &c) {
  std::vector<Tensor> inputs;
  for (int64_t m = 0; m < c.members; ++m)
    inputs.push_back(memberInput(c, memberShapes(c, m).first, m));
  return inputs;
}

/// Runs the members' steps; what went wrong, or empty.
std::string emulate(std::vector<Member> &members) {
  try {
    Emulator(members).run();
  } catch (const EmulationError &failure) {
    return failure.message;
  }
  return "";
}

/// Runs `c` on the emulator and checks every member's output.
void check(const Case &c) {
  INFO(c.describe());
  std::vector<Tensor> inputs = inputsOf(c);
  std::vector<Tensor> expected = communicatorResults(c, inputs);
  std::vector<Member> members = makeMembers(c, inputs);
  std::string error = emulate(members);
  CHECK(error == "");
  if (!error.empty())
    return;
  for (int64_t m = 0; m < c.members; ++m)
    CHECK(difference(members[m].result(), expected[m], m) == "");
}

const DType kTypes[] = {DType::F32, DType::F64, DType::I64, DType::I1};
const plan::Reduction kReductions[] = {plan::SUM, plan::MAX, plan::MIN,
                                       plan::PROD};
/// check(c) with every reduction.
void checkReductions(Case c) {
  for (plan::Reduction reduce : kReductions) {
    c.reduce = reduce;
    check(c);
  }
}

/// Dimensions to cut: even for every group size here, uneven, and fewer
/// than the members (an empty part for 3 and 4).
const int64_t kDims[] = {12, 7, 2};

/// Tensors with dimension `dim` at the axis they are cut along: axis 0
/// (parts contiguous), inner axes (packed), and an inner axis after a
/// dimension of 1 (contiguous again).
std::vector<std::pair<Shape, int64_t>> cutShapes(int64_t dim) {
  return {{{dim, 3}, 0}, {{2, dim, 3}, 1}, {{3, 2, dim}, 2}, {{1, dim, 3}, 1}};
}

} // namespace

TEST_CASE("collective steps: all_reduce and broadcast on every group size",
          "[runtime]") {
  for (int64_t n = 1; n <= 4; ++n)
    for (DType type : kTypes) {
      checkReductions(caseOf(plan::Collective::ALL_REDUCE, type, n, {3, 5}));
      Case c = caseOf(plan::Collective::BROADCAST, type, n, {2, 7});
      for (int64_t root : {int64_t{0}, int64_t{2}, n - 1})
        if (root < n) {
          c.root = root;
          check(c);
        }
    }
}

TEST_CASE("collective steps: all_gather and reduce_scatter, even and uneven",
          "[runtime]") {
  for (int64_t n = 1; n <= 4; ++n)
    for (DType type : kTypes)
      for (int64_t dim : kDims)
        for (const auto &[shape, axis] : cutShapes(dim)) {
          check(caseOf(plan::Collective::ALL_GATHER, type, n, shape, axis));
          checkReductions(
              caseOf(plan::Collective::REDUCE_SCATTER, type, n, shape, axis));
        }
}

TEST_CASE("collective steps: all_to_all along the same and other axes",
          "[runtime]") {
  for (int64_t n = 1; n <= 4; ++n)
    for (DType type : kTypes)
      for (int64_t split = 0; split < 3; ++split)
        for (int64_t concat = 0; concat < 3; ++concat)
          for (int64_t dim : kDims)
            for (int64_t other : {int64_t{5}, int64_t{2}}) {
              if (split == concat && other != 5)
                continue; // the same case again
              Shape shape = {3, 4, 2};
              shape[concat] = other;
              shape[split] = dim;
              check(caseOf(plan::Collective::ALL_TO_ALL, type, n, shape, split,
                           concat));
            }
  // A concatenated dimension of 4 over 3: member 0 holds 2 rows and packs
  // before sending along axis 1, members 1 and 2 hold 1 and send directly.
  check(caseOf(plan::Collective::ALL_TO_ALL, DType::F32, 3, {4, 7, 2}, 1, 0));
}

TEST_CASE("collective steps: the calls the CUDA backend makes", "[runtime]") {
  auto stepsOf = [](const Case &c, int64_t member) {
    auto [in, out] = memberShapes(c, member);
    return device::collectiveSteps(collectiveOf(c), in, out, c.type, c.members,
                                   member);
  };
  auto kinds = [](const std::vector<CollectiveStep> &steps) {
    std::vector<std::string> names;
    for (const CollectiveStep &step : steps)
      names.push_back(kindName(step.kind));
    return names;
  };
  using Names = std::vector<std::string>;
  DType f32 = DType::F32;

  SECTION("groups of one copy, or do nothing in place") {
    CHECK(stepsOf(caseOf(plan::Collective::ALL_REDUCE, f32, 1, {2, 3}), 0)
              .empty());
    std::vector<CollectiveStep> steps =
        stepsOf(caseOf(plan::Collective::ALL_GATHER, f32, 1, {2, 3}), 0);
    REQUIRE(kinds(steps) == Names{"Copy"});
    CHECK(steps[0].bytes() == 24);
  }
  SECTION("an even all_gather along axis 0 lands in the output") {
    std::vector<CollectiveStep> steps =
        stepsOf(caseOf(plan::Collective::ALL_GATHER, f32, 2, {4, 3}), 1);
    REQUIRE(kinds(steps) == Names{"AllGather"});
    CHECK(steps[0].destination.region == Region::Output);
    CHECK(steps[0].type == DType::I8);
    CHECK(steps[0].count == 24);
  }
  SECTION("an uneven reduce_scatter skips empty parts and packs inner axes") {
    std::vector<CollectiveStep> steps =
        stepsOf(caseOf(plan::Collective::REDUCE_SCATTER, f32, 3, {3, 2}, 1), 1);
    REQUIRE(kinds(steps) ==
            Names{"Pack", "GroupStart", "Reduce", "Reduce", "GroupEnd"});
    CHECK(steps[2].source.region == Region::StagingIn);
    CHECK(steps[2].root == 0);
    CHECK(steps[2].destination.region == Region::None);
    CHECK(steps[3].source.offset == 3 * 4);
    CHECK(steps[3].root == 1);
    CHECK(steps[3].destination.region == Region::Output);
    CHECK(steps[3].type == DType::F32);
    CHECK(steps[3].grouped);
    CHECK_FALSE(steps[4].grouped);
  }
  SECTION("an all_to_all along an inner axis unpacks from StagingOut") {
    std::vector<CollectiveStep> steps =
        stepsOf(caseOf(plan::Collective::ALL_TO_ALL, f32, 2, {3, 4}, 1, 1), 0);
    REQUIRE(kinds(steps) == Names{"Pack", "GroupStart", "Send", "Recv", "Send",
                                  "Recv", "GroupEnd", "Unpack"});
    CHECK(steps[3].destination.region == Region::StagingOut);
    CHECK(steps[5].destination.offset == 3 * 2 * 4);
    CHECK(steps[4].peer == 1);
    // The input is 48 bytes: StagingOut starts at 256.
    CHECK(device::stagingOutOffset(48) == 256);
    CHECK(device::stagingBytes(48, 48) == 512);
  }
  SECTION("booleans reduce with max for a sum and min for a product") {
    Case c = caseOf(plan::Collective::ALL_REDUCE, DType::I1, 2, {4});
    CHECK(stepsOf(c, 0)[0].op == ReduceKind::Max);
    c.reduce = plan::PROD;
    CHECK(stepsOf(c, 0)[0].op == ReduceKind::Min);
    c.type = DType::F32;
    CHECK(stepsOf(c, 0)[0].op == ReduceKind::Prod);
  }
}

TEST_CASE("collective steps: the emulator rejects what NCCL would",
          "[runtime]") {
  Case c = caseOf(plan::Collective::ALL_TO_ALL, DType::F32, 2, {3, 4}, 1, 1);
  std::vector<Tensor> inputs = inputsOf(c);
  auto errorOf = [&](auto &&change) {
    std::vector<Member> members = makeMembers(c, inputs);
    change(members);
    return emulate(members);
  };
  CHECK(errorOf([](std::vector<Member> &) {}) == "");
  // Steps: Pack, GroupStart, Send, Recv, Send, Recv, GroupEnd, Unpack.
  CHECK(errorOf([](std::vector<Member> &members) {
          members[0].steps[5].destination.offset += 4;
        }) == "member 0: bytes 28..52 of a region of 48");
  CHECK(errorOf([](std::vector<Member> &members) {
          members[1].steps[4].count -= 4;
        }) == "member 1 sends 20 bytes to member 1, which receives 24");
  CHECK(errorOf([](std::vector<Member> &members) {
          members[0].steps[3].destination = members[0].steps[5].destination;
        }) == "member 0: grouped calls 1 and 3 share bytes that one writes");
  CHECK(errorOf([](std::vector<Member> &members) {
          members[1].steps.resize(1);
        }) == "a member has no steps left while another waits in a call");
}
