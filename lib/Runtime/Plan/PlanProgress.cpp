//===- PlanProgress.cpp - checkProgress: a step that cannot hang ----------===//
//
// Every device runs its program's step in the executor's order (stepOrder)
// and waits where the executor waits: at a collective until every member
// of its group has come to it (at a broadcast, a receiver until the root
// has), at a receive until its sender has sent, at its part of a cross-mesh
// move until every device it receives from, directly or through a device
// that forwards, has come to its own part. Sends and a root's broadcast do
// not wait (docs/pipeline.md). The devices go on in turns until all have
// finished the step, or none can (the step would hang, refused). Within a
// move the transfers run in one order on every device, so that once all
// its parties have come to it, it ends.
//
//===----------------------------------------------------------------------===//

#include "PlanProgress.h"

#include "PlanGroups.h"
#include "parplan/Runtime/CrossMeshSteps.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace parplan::runtime::detail {

namespace {

/// The instructions of a program that may wait or let another device go
/// on, in the order one step runs them.
std::vector<int64_t> communicationOrder(const plan::Program &program,
                                        const StepOrder &order) {
  std::vector<int64_t> sequence;
  auto append = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const plan::Instruction &instruction =
          program.instructions(static_cast<int>(i));
      if (instruction.has_collective() || instruction.has_send() ||
          instruction.has_recv() || CrossMeshParts::partOf(instruction))
        sequence.push_back(i);
    }
  };
  append(0, order.forwardBegin);
  for (size_t t = 0; t < order.tasks.size(); ++t) {
    auto [begin, end] = order.taskRange(t);
    append(begin, end);
  }
  if (!order.updateWithLastTask)
    append(order.updateBegin, order.end);
  return sequence;
}

using MoveSenders = std::map<int64_t, std::vector<std::pair<int64_t, bool>>>;

/// By receiving device of `move`: the devices whose parts it waits for,
/// the senders of its tiles and theirs where they forward, each with its
/// side (true: a destination device, which forwards).
MoveSenders moveSenders(const plan::CrossMeshMove &move) {
  std::map<int64_t, std::set<int64_t>> direct;
  for (const plan::CrossMeshTransfer &transfer : move.transfers())
    for (int64_t receiver : transfer.receivers())
      direct[receiver].insert(transfer.sender());
  MoveSenders result;
  for (const auto &[receiver, senders] : direct) {
    std::set<int64_t> closure, open(senders.begin(), senders.end());
    while (!open.empty()) {
      int64_t sender = *open.begin();
      open.erase(open.begin());
      if (sender == receiver || !closure.insert(sender).second)
        continue;
      if (auto more = direct.find(sender); more != direct.end())
        open.insert(more->second.begin(), more->second.end());
    }
    auto &list = result[receiver];
    for (int64_t sender : closure)
      list.emplace_back(sender, direct.count(sender) != 0);
  }
  return result;
}

class ProgressCheck {
public:
  ProgressCheck(const plan::Plan &plan, bool followSchedule)
      : plan_(plan), followSchedule_(followSchedule) {}

  Status run() {
    int64_t devices = planDevices(plan_);
    program_.assign(static_cast<size_t>(devices), -1);
    for (int p = 0; p < plan_.programs_size(); ++p) {
      const plan::Program &program = plan_.programs(p);
      sequences_.push_back(communicationOrder(
          program, stepOrder(plan_, program, followSchedule_)));
      for (int64_t device : program.devices())
        program_[static_cast<size_t>(device)] = p;
    }
    for (int g = 0; g < plan_.groups_size(); ++g)
      groupIndex_[plan_.groups(g).name()] = g;
    senders_.resize(static_cast<size_t>(plan_.cross_mesh_moves_size()));
    sendersBuilt_.assign(senders_.size(), false);
    arrived_.assign(static_cast<size_t>(devices), false);
    position_.assign(static_cast<size_t>(devices), 0);
    std::vector<int64_t> ready;
    for (int64_t device = devices - 1; device >= 0; --device)
      ready.push_back(device);
    while (!ready.empty()) {
      int64_t device = ready.back();
      ready.pop_back();
      advance(device, ready);
    }
    for (int64_t device = 0; device < devices; ++device)
      if (!finished(device))
        return Status::failure(stuck(device));
    return Status::success();
  }

private:
  /// Why a device waits: on a key of one of the maps below.
  enum class Wait { Message, Collective, Move };
  struct Waiting {
    Wait on;
    std::pair<int64_t, int64_t> key;
  };

  const std::vector<int64_t> &sequence(int64_t device) const {
    return sequences_[static_cast<size_t>(
        program_[static_cast<size_t>(device)])];
  }
  bool finished(int64_t device) const {
    return position_[static_cast<size_t>(device)] >= sequence(device).size();
  }
  const plan::Instruction &instructionAt(int64_t device) const {
    const plan::Program &program =
        plan_.programs(program_[static_cast<size_t>(device)]);
    return program.instructions(static_cast<int>(
        sequence(device)[position_[static_cast<size_t>(device)]]));
  }

  /// The device's group `name`: its lowest member (the group's key: the
  /// groups of devices along mesh axes partition the mesh), its size and
  /// the device at `root`.
  struct GroupView {
    int64_t lowest = 0, size = 0, root = 0;
  };
  GroupView groupOf(int64_t device, const plan::Collective &collective) {
    int group = groupIndex_.at(collective.group());
    auto key = std::make_pair(int64_t{group}, device);
    auto found = groupViews_.find(key);
    if (found != groupViews_.end())
      return found->second;
    const plan::Group &message = plan_.groups(group);
    std::vector<int64_t> members =
        groupDevices(message, meshView(plan_, message.mesh()), device);
    GroupView view{
        *std::min_element(members.begin(), members.end()),
        static_cast<int64_t>(members.size()),
        members[static_cast<size_t>(std::clamp<int64_t>(
            collective.root(), 0, static_cast<int64_t>(members.size()) - 1))]};
    return groupViews_[key] = view;
  }

  const std::vector<std::pair<int64_t, bool>> &sendersOf(int64_t move,
                                                         int64_t device) {
    auto &ofMove = senders_[static_cast<size_t>(move)];
    if (!sendersBuilt_[static_cast<size_t>(move)]) {
      sendersBuilt_[static_cast<size_t>(move)] = true;
      ofMove = moveSenders(plan_.cross_mesh_moves(static_cast<int>(move)));
    }
    static const std::vector<std::pair<int64_t, bool>> none;
    auto found = ofMove.find(device);
    return found == ofMove.end() ? none : found->second;
  }

  /// Runs `device` until it waits or ends; whom its steps let go on join
  /// `ready`.
  void advance(int64_t device, std::vector<int64_t> &ready) {
    size_t &position = position_[static_cast<size_t>(device)];
    while (position < sequence(device).size()) {
      if (!arrived_[static_cast<size_t>(device)]) {
        arrive(device, ready);
        arrived_[static_cast<size_t>(device)] = true;
      }
      if (!mayLeave(device))
        return;
      leave(device);
      arrived_[static_cast<size_t>(device)] = false;
      ++position;
    }
  }

  /// The device comes to its instruction: a send is sent, an arrival at
  /// a collective or a move is counted.
  void arrive(int64_t device, std::vector<int64_t> &ready) {
    const plan::Instruction &instruction = instructionAt(device);
    if (instruction.has_send()) {
      MessageKey key{device, instruction.send().peer(),
                     instruction.send().tag()};
      ++sent_[key];
      wake({Wait::Message, {key.to, key.tag}}, key.from, ready);
    } else if (instruction.has_collective()) {
      GroupView group = groupOf(device, instruction.collective());
      auto key = std::make_pair(
          int64_t{groupIndex_.at(instruction.collective().group())},
          group.lowest);
      int64_t k = ++arrivals_[{key, device}];
      ++reached_[key][k];
      wakeAll({Wait::Collective, key}, ready);
    } else if (const plan::CrossMeshPart *part =
                   CrossMeshParts::partOf(instruction)) {
      bool destination = instruction.has_cross_mesh_recv();
      ++moveArrivals_[{part->move(), destination ? device : ~device}];
      wakeAll({Wait::Move, {part->move(), 0}}, ready);
    }
  }

  bool mayLeave(int64_t device) {
    const plan::Instruction &instruction = instructionAt(device);
    if (instruction.has_recv()) {
      MessageKey key{instruction.recv().peer(), device,
                     instruction.recv().tag()};
      if (sent_[key] > received_[key])
        return true;
      wait(device, {Wait::Message, {device, key.tag}}, key.from);
      return false;
    }
    if (instruction.has_collective()) {
      const plan::Collective &collective = instruction.collective();
      GroupView group = groupOf(device, collective);
      auto key = std::make_pair(int64_t{groupIndex_.at(collective.group())},
                                group.lowest);
      int64_t k = arrivals_[{key, device}];
      bool done =
          collective.kind() == plan::Collective::BROADCAST
              ? group.root == device || arrivals_[{key, group.root}] >= k
              : reached_[key][k] >= group.size;
      if (!done)
        wait(device, {Wait::Collective, key});
      return done;
    }
    if (instruction.has_cross_mesh_recv()) {
      int64_t move = instruction.cross_mesh_recv().move();
      int64_t k = moveArrivals_[{move, device}];
      for (const auto &[sender, destination] : sendersOf(move, device))
        if (moveArrivals_[{move, destination ? sender : ~sender}] < k) {
          wait(device, {Wait::Move, {move, 0}});
          return false;
        }
    }
    return true;
  }

  void leave(int64_t device) {
    const plan::Instruction &instruction = instructionAt(device);
    if (instruction.has_recv())
      ++received_[{instruction.recv().peer(), device,
                   instruction.recv().tag()}];
  }

  /// Waits on `on` (for a message, from `from`).
  void wait(int64_t device, Waiting on, int64_t from = -1) {
    waiters_[{static_cast<int>(on.on), on.key.first, on.key.second, from}]
        .push_back(device);
  }
  void wake(Waiting on, int64_t from, std::vector<int64_t> &ready) {
    auto found = waiters_.find(
        {static_cast<int>(on.on), on.key.first, on.key.second, from});
    if (found == waiters_.end())
      return;
    for (int64_t device : found->second)
      ready.push_back(device);
    waiters_.erase(found);
  }
  void wakeAll(Waiting on, std::vector<int64_t> &ready) { wake(on, -1, ready); }

  /// "instruction I of program P (what it runs)" for where `device` is.
  std::string whereIs(int64_t device) const {
    const plan::Instruction &instruction = instructionAt(device);
    std::string what;
    if (instruction.has_recv())
      what = "a receive from device " +
             std::to_string(instruction.recv().peer()) + ", tag " +
             std::to_string(instruction.recv().tag());
    else if (instruction.has_collective())
      what = std::string(collectiveName(instruction.collective().kind())) +
             " over '" + instruction.collective().group() + "'";
    else
      what = "its part of move '" +
             plan_
                 .cross_mesh_moves(static_cast<int>(
                     CrossMeshParts::partOf(instruction)->move()))
                 .name() +
             "'";
    return "instruction " +
           std::to_string(
               sequence(device)[position_[static_cast<size_t>(device)]]) +
           " of program " +
           std::to_string(program_[static_cast<size_t>(device)]) + " (" + what +
           ")";
  }

  /// A device that `device`, stuck, waits for.
  int64_t blockerOf(int64_t device) {
    const plan::Instruction &instruction = instructionAt(device);
    if (instruction.has_recv())
      return instruction.recv().peer();
    if (instruction.has_collective()) {
      const plan::Collective &collective = instruction.collective();
      GroupView group = groupOf(device, collective);
      auto key = std::make_pair(int64_t{groupIndex_.at(collective.group())},
                                group.lowest);
      if (collective.kind() == plan::Collective::BROADCAST)
        return group.root;
      const plan::Group &message = plan_.groups(static_cast<int>(key.first));
      int64_t k = arrivals_[{key, device}];
      for (int64_t member :
           groupDevices(message, meshView(plan_, message.mesh()), device))
        if (arrivals_[{key, member}] < k)
          return member;
    }
    if (instruction.has_cross_mesh_recv()) {
      int64_t move = instruction.cross_mesh_recv().move();
      int64_t k = moveArrivals_[{move, device}];
      for (const auto &[sender, destination] : sendersOf(move, device))
        if (moveArrivals_[{move, destination ? sender : ~sender}] < k)
          return sender;
    }
    return device;
  }

  /// One line: where the lowest stuck device waits, and for whom.
  std::string stuck(int64_t device) {
    int64_t blocker = blockerOf(device);
    std::string why = finished(blocker)
                          ? "device " + std::to_string(blocker) +
                                ", which ends its step without coming to it"
                          : "device " + std::to_string(blocker) +
                                ", itself waiting at " + whereIs(blocker);
    return "the step never ends: device " + std::to_string(device) +
           " waits forever at " + whereIs(device) + " for " + why +
           (followSchedule_ && !plan_.schedule().empty() &&
                    plan_.micro_batches() > 1
                ? " (under schedule '" + plan_.schedule() + "')"
                : std::string());
  }

  struct MessageKey {
    int64_t from, to, tag;
    bool operator==(const MessageKey &other) const {
      return from == other.from && to == other.to && tag == other.tag;
    }
    bool operator<(const MessageKey &other) const {
      return std::tie(from, to, tag) <
             std::tie(other.from, other.to, other.tag);
    }
  };

  const plan::Plan &plan_;
  bool followSchedule_;
  std::vector<std::vector<int64_t>> sequences_;
  std::vector<int> program_;
  std::vector<size_t> position_;
  std::map<std::string, int> groupIndex_;
  std::map<std::pair<int64_t, int64_t>, GroupView> groupViews_;
  std::vector<MoveSenders> senders_;
  std::vector<bool> sendersBuilt_;
  /// Whether each device has come to its current instruction.
  std::vector<bool> arrived_;
  std::map<MessageKey, int64_t> sent_, received_;
  std::map<std::pair<std::pair<int64_t, int64_t>, int64_t>, int64_t> arrivals_;
  std::map<std::pair<int64_t, int64_t>, std::map<int64_t, int64_t>> reached_;
  std::map<std::pair<int64_t, int64_t>, int64_t> moveArrivals_;
  std::map<std::tuple<int, int64_t, int64_t, int64_t>, std::vector<int64_t>>
      waiters_;
};

/// The same walk with each program's devices in step: a program goes past
/// an instruction only when all its devices may. Since every wait is for
/// other devices to come far enough, holding devices back only delays
/// them: a step that ends in step ends without. It costs a walk per
/// program rather than per device, so checkProgress tries it first and
/// walks the devices only where it gets stuck.
class ProgramProgress {
public:
  ProgramProgress(const plan::Plan &plan, bool followSchedule)
      : plan_(plan), followSchedule_(followSchedule) {}

  bool finishes() {
    int programs = plan_.programs_size();
    program_.assign(static_cast<size_t>(planDevices(plan_)), -1);
    for (int p = 0; p < programs; ++p) {
      const plan::Program &program = plan_.programs(p);
      sequences_.push_back(communicationOrder(
          program, stepOrder(plan_, program, followSchedule_)));
      for (int64_t device : program.devices())
        program_[static_cast<size_t>(device)] = p;
    }
    position_.assign(static_cast<size_t>(programs), 0);
    arrived_.assign(static_cast<size_t>(programs), false);
    for (bool moved = true; moved;) {
      moved = false;
      for (int p = 0; p < programs; ++p)
        while (position_[p] < sequences_[p].size()) {
          if (!arrived_[p]) {
            arrive(p);
            arrived_[p] = true;
          }
          if (!mayLeave(p))
            break;
          leave(p);
          arrived_[p] = false;
          ++position_[p];
          moved = true;
        }
    }
    for (int p = 0; p < programs; ++p)
      if (position_[p] < sequences_[p].size())
        return false;
    return true;
  }

private:
  const plan::Instruction &instructionAt(int p) const {
    return plan_.programs(p).instructions(
        static_cast<int>(sequences_[p][position_[p]]));
  }

  /// The programs holding a member of a device of program `p`'s group of
  /// `collective` (the roots only, for a broadcast) but `p`.
  const std::vector<int> &peersOf(int p, const plan::Collective &collective) {
    bool roots = collective.kind() == plan::Collective::BROADCAST;
    auto key = std::make_tuple(p, collective.group(), roots,
                               roots ? collective.root() : int64_t{0});
    auto found = peers_.find(key);
    if (found != peers_.end())
      return found->second;
    const plan::Group *group = nullptr;
    for (const plan::Group &candidate : plan_.groups())
      if (candidate.name() == collective.group())
        group = &candidate;
    const plan::Program &program = plan_.programs(p);
    std::set<int> programs;
    // A group along axes of the program's own mesh, which the program
    // covers, holds the program's devices alone.
    bool ownMesh = group->devices_size() == 0 &&
                   group->mesh() == program.mesh() &&
                   static_cast<int64_t>(program.devices_size()) ==
                       numElements(meshView(plan_, program.mesh()).shape);
    if (!ownMesh) {
      PlacedMesh mesh = meshView(plan_, group->mesh());
      for (int64_t device : program.devices()) {
        std::vector<int64_t> members = groupDevices(*group, mesh, device);
        if (roots) {
          int64_t root = members[static_cast<size_t>(std::clamp<int64_t>(
              collective.root(), 0, static_cast<int64_t>(members.size()) - 1))];
          programs.insert(program_[static_cast<size_t>(root)]);
        } else {
          for (int64_t member : members)
            programs.insert(program_[static_cast<size_t>(member)]);
        }
      }
    }
    programs.erase(p);
    return peers_[key] = std::vector<int>(programs.begin(), programs.end());
  }

  /// The programs (and sides) whose parts of `move` program `p`'s devices
  /// wait for, but `p`'s own destination part.
  const std::vector<std::pair<int, bool>> &moveDependencies(int p,
                                                            int64_t move) {
    auto key = std::make_pair(p, move);
    auto found = moveDependencies_.find(key);
    if (found != moveDependencies_.end())
      return found->second;
    MoveSenders senders =
        moveSenders(plan_.cross_mesh_moves(static_cast<int>(move)));
    std::set<std::pair<int, bool>> programs;
    for (int64_t device : plan_.programs(p).devices())
      if (auto own = senders.find(device); own != senders.end())
        for (const auto &[sender, destination] : own->second)
          programs.emplace(program_[static_cast<size_t>(sender)], destination);
    programs.erase({p, true});
    return moveDependencies_[key] = std::vector<std::pair<int, bool>>(
               programs.begin(), programs.end());
  }

  void arrive(int p) {
    const plan::Instruction &instruction = instructionAt(p);
    if (instruction.has_send()) {
      ++sent_[{p, instruction.send().peer(), instruction.send().tag()}];
    } else if (instruction.has_collective()) {
      ++collectiveArrivals_[{instruction.collective().group(), p}];
    } else if (const plan::CrossMeshPart *part =
                   CrossMeshParts::partOf(instruction)) {
      ++moveArrivals_[{part->move(), p, instruction.has_cross_mesh_recv()}];
    }
  }

  bool mayLeave(int p) {
    const plan::Instruction &instruction = instructionAt(p);
    if (instruction.has_recv()) {
      const plan::Recv &recv = instruction.recv();
      int from = program_[static_cast<size_t>(recv.peer())];
      int64_t received = received_[{p, recv.peer(), recv.tag()}];
      for (int64_t device : plan_.programs(p).devices())
        if (sent_[{from, device, recv.tag()}] <= received)
          return false;
      return true;
    }
    if (instruction.has_collective()) {
      const plan::Collective &collective = instruction.collective();
      int64_t k = collectiveArrivals_[{collective.group(), p}];
      for (int peer : peersOf(p, collective))
        if (collectiveArrivals_[{collective.group(), peer}] < k)
          return false;
      return true;
    }
    if (instruction.has_cross_mesh_recv()) {
      int64_t move = instruction.cross_mesh_recv().move();
      int64_t k = moveArrivals_[{move, p, true}];
      for (const auto &[peer, destination] : moveDependencies(p, move))
        if (moveArrivals_[{move, peer, destination}] < k)
          return false;
    }
    return true;
  }

  void leave(int p) {
    const plan::Instruction &instruction = instructionAt(p);
    if (instruction.has_recv())
      ++received_[{p, instruction.recv().peer(), instruction.recv().tag()}];
  }

  const plan::Plan &plan_;
  bool followSchedule_;
  std::vector<std::vector<int64_t>> sequences_;
  std::vector<int> program_;
  std::vector<size_t> position_;
  std::vector<bool> arrived_;
  std::map<std::tuple<int, std::string, bool, int64_t>, std::vector<int>>
      peers_;
  std::map<std::pair<int, int64_t>, std::vector<std::pair<int, bool>>>
      moveDependencies_;
  /// Sends by (program, peer device, tag); receives by (program, peer
  /// device, tag), as many for each of the program's devices.
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> sent_, received_;
  std::map<std::pair<std::string, int>, int64_t> collectiveArrivals_;
  std::map<std::tuple<int64_t, int, bool>, int64_t> moveArrivals_;
};

} // namespace

Status checkProgress(const plan::Plan &plan) {
  // A backend that cannot run schedules runs one micro-batch after another.
  bool twoOrders = !plan.schedule().empty() &&
                   plan.schedule() != "sequential" && plan.micro_batches() > 1;
  for (bool followSchedule : {true, false}) {
    if (!followSchedule && !twoOrders)
      break;
    if (ProgramProgress(plan, followSchedule).finishes())
      continue;
    if (Status status = ProgressCheck(plan, followSchedule).run(); !status.ok())
      return status;
  }
  return Status::success();
}

} // namespace parplan::runtime::detail
