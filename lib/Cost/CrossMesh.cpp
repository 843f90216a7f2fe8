//===- CrossMesh.cpp - planning a tensor's move between meshes ------------===//
//
// Every transfer is charged where it spends bandwidth: a hop between hosts
// on the sending host's network card (out) and the receiving host's (in),
// a hop within a host on the two devices' intra-node links. Each card and
// link carries one transfer at a time, in the schedule's order, so the
// time is at least the busiest one's and more where cards wait for each
// other; the order of the transfers is what ByOrder balances. A schedule
// that loads every card with only the bytes it must move, without waits,
// meets the lower bound.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/CrossMesh.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace parplan::cost {

const char *toString(CrossMeshMode mode) {
  switch (mode) {
  case CrossMeshMode::SendRecv:
    return "send-recv";
  case CrossMeshMode::SendRecvAllGather:
    return "send-recv+all-gather";
  case CrossMeshMode::Broadcast:
    return "broadcast";
  }
  return "?";
}

const char *toString(CrossMeshBalancing balancing) {
  switch (balancing) {
  case CrossMeshBalancing::None:
    return "none";
  case CrossMeshBalancing::ByBytes:
    return "by-bytes";
  case CrossMeshBalancing::ByOrder:
    return "by-order";
  }
  return "?";
}

std::vector<std::string> crossMeshModeNames() {
  std::vector<std::string> names;
  for (CrossMeshMode mode : kCrossMeshModes)
    names.emplace_back(toString(mode));
  return names;
}

std::vector<std::string> crossMeshBalancingNames() {
  std::vector<std::string> names;
  for (CrossMeshBalancing balancing : kCrossMeshBalancings)
    names.emplace_back(toString(balancing));
  return names;
}

std::optional<CrossMeshMode> parseCrossMeshMode(const std::string &text) {
  for (CrossMeshMode mode : kCrossMeshModes)
    if (text == toString(mode))
      return mode;
  return std::nullopt;
}

std::optional<CrossMeshBalancing>
parseCrossMeshBalancing(const std::string &text) {
  for (CrossMeshBalancing balancing : kCrossMeshBalancings)
    if (text == toString(balancing))
      return balancing;
  return std::nullopt;
}

namespace {

std::string describeMesh(const DeviceMesh &mesh) {
  std::string text = formatMeshShape(mesh.shape);
  if (!mesh.devices.empty())
    text += " on devices " + std::to_string(mesh.devices.front()) + ".." +
            std::to_string(mesh.devices.back());
  return text;
}

/// A part of a tensor and the devices holding it (ascending).
struct Block {
  Slice slice;
  std::vector<int64_t> devices;
};

/// The distinct blocks of a layout on a placed mesh, ordered by their
/// offsets and then sizes, empty blocks left out. Sorted rather than
/// gathered in a map: the estimates of the layout search ask for them
/// thousands of times.
std::vector<Block> blocksOf(const std::vector<int64_t> &shape,
                            const DeviceMesh &mesh, const NdSbp &layout) {
  std::vector<Slice> slices;
  std::vector<size_t> order;
  slices.reserve(mesh.devices.size());
  for (size_t i = 0; i < mesh.devices.size(); ++i) {
    slices.push_back(
        deviceSlice(shape, mesh.shape, layout,
                    meshCoordinate(mesh.shape, static_cast<int64_t>(i))));
    if (slices.back().numElements() != 0)
      order.push_back(i);
  }
  auto key = [&](size_t i) {
    return std::tie(slices[i].offsets, slices[i].sizes, mesh.devices[i]);
  };
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<Block> blocks;
  for (size_t i : order) {
    if (blocks.empty() || blocks.back().slice.offsets != slices[i].offsets ||
        blocks.back().slice.sizes != slices[i].sizes)
      blocks.push_back({slices[i], {}});
    blocks.back().devices.push_back(mesh.devices[i]);
  }
  return blocks;
}

/// When a tile reached a device: a transfer streams it, so a forward may
/// start with the transfer bringing it and ends no sooner.
struct Window {
  double start = 0, end = 0;
};

/// Cards and links each one transfer at a time, in the schedule's order.
/// The ledger charges each hop's bytes where they spend bandwidth and keeps
/// when every card and link is free and when each device got each tile. A
/// transfer pipelines its chain (every hop forwards chunks as they
/// arrive), so it holds the cards and links of all its hops from its start
/// for its bytes over the slowest hop's bandwidth.
class Ledger {
public:
  /// Cards and links a trial placement touched, and the tiles it delivered;
  /// placing into a scratch leaves the ledger as it was.
  /// An entry counts only while it carries the current `stamp`: clearing
  /// is one increment, and a trial looks up its cards and links and its
  /// tile's receivers in constant time.
  struct Scratch {
    std::vector<double> free;
    std::vector<uint64_t> freeStamp;
    std::vector<Window> arrival;
    std::vector<int64_t> arrivalTile;
    std::vector<uint64_t> arrivalStamp;
    uint64_t stamp = 1;
    void clear() { ++stamp; }
  };
  /// A scratch sized for this ledger's cards, links and devices.
  Scratch makeScratch() const {
    Scratch scratch;
    scratch.free.assign(freeAt.size(), 0);
    scratch.freeStamp.assign(freeAt.size(), 0);
    scratch.arrival.assign(devices, Window{});
    scratch.arrivalTile.assign(devices, -1);
    scratch.arrivalStamp.assign(devices, 0);
    return scratch;
  }

  Ledger(const ClusterIndex &cluster, const std::vector<CrossMeshTile> &tiles,
         CrossMeshSchedule &schedule)
      : cluster(cluster), tiles(tiles), schedule(schedule),
        hosts(cluster.cluster().nodes.size()),
        devices(static_cast<size_t>(cluster.numDevices())) {
    schedule.hostSent.assign(hosts, 0);
    schedule.hostReceived.assign(hosts, 0);
    schedule.deviceSent.assign(devices, 0);
    schedule.deviceReceived.assign(devices, 0);
    busy.assign(2 * (hosts + devices), 0);
    freeAt.assign(2 * (hosts + devices), 0);
    arrivals.resize(tiles.size());
  }

  /// Runs the transfer of `tile` from `sender` to `receivers` at the
  /// earliest time it can: on the ledger, or with `scratch` only in it.
  /// Returns when it starts and ends.
  Window place(int64_t tile, int64_t sender, llvm::ArrayRef<int64_t> receivers,
               Scratch *scratch = nullptr) {
    Window source = arrival(tile, sender, scratch);
    if (receivers.empty())
      return source;
    double start = source.start, bandwidth = 0;
    held.clear();
    int64_t previous = sender;
    for (int64_t next : receivers) {
      Link link = cluster.link(previous, next);
      bandwidth =
          held.empty() ? link.bandwidth : std::min(bandwidth, link.bandwidth);
      for (size_t resource : resources(previous, next)) {
        held.push_back(resource);
        start = std::max(start, freeTime(resource, scratch));
      }
      previous = next;
    }
    Window window{
        start,
        std::max(start + static_cast<double>(tiles[tile].bytes) / bandwidth,
                 source.end)};
    for (size_t resource : held)
      setFree(resource, window.end, scratch);
    for (int64_t receiver : receivers)
      setArrival(tile, receiver, window, scratch);
    if (!scratch)
      charge(tile, sender, receivers);
    return window;
  }

  /// Seconds a host's card has spent sending, and a device's links.
  double hostSendSeconds(int64_t host) const { return busy[host]; }
  double deviceSendSeconds(int64_t device) const {
    return busy[2 * hosts + static_cast<size_t>(device)];
  }
  /// When a host's card is next free to send.
  double hostSendFree(int64_t host) const { return freeAt[host]; }
  /// When a device's intra-node link is next free to send, counting what
  /// `scratch` placed.
  double deviceSendFree(int64_t device, const Scratch *scratch) const {
    return freeTime(2 * hosts + static_cast<size_t>(device), scratch);
  }

  void finish() const {
    schedule.busiestSeconds = *std::max_element(busy.begin(), busy.end());
    schedule.seconds = *std::max_element(freeAt.begin(), freeAt.end());
    if (schedule.seconds > 0)
      schedule.seconds += latency;
  }

private:
  /// Index of a host's card out and in, then each device's links out and
  /// in.
  std::array<size_t, 2> resources(int64_t from, int64_t to) const {
    auto a = static_cast<size_t>(cluster.nodeOf(from)),
         b = static_cast<size_t>(cluster.nodeOf(to));
    if (a != b)
      return {a, hosts + b};
    return {2 * hosts + static_cast<size_t>(from),
            2 * hosts + devices + static_cast<size_t>(to)};
  }

  double freeTime(size_t resource, const Scratch *scratch) const {
    if (scratch && scratch->freeStamp[resource] == scratch->stamp)
      return scratch->free[resource];
    return freeAt[resource];
  }
  void setFree(size_t resource, double time, Scratch *scratch) {
    if (!scratch) {
      freeAt[resource] = time;
      return;
    }
    scratch->free[resource] = time;
    scratch->freeStamp[resource] = scratch->stamp;
  }
  /// Whether `scratch` holds when `device` got `tile`.
  static bool arrivedIn(const Scratch &scratch, int64_t tile, int64_t device) {
    auto at = static_cast<size_t>(device);
    return scratch.arrivalStamp[at] == scratch.stamp &&
           scratch.arrivalTile[at] == tile;
  }
  Window arrival(int64_t tile, int64_t device, const Scratch *scratch) const {
    if (scratch && arrivedIn(*scratch, tile, device))
      return scratch->arrival[static_cast<size_t>(device)];
    const llvm::DenseMap<int64_t, Window> &got =
        arrivals[static_cast<size_t>(tile)];
    auto found = got.find(device);
    return found == got.end() ? Window{} : found->second;
  }
  void setArrival(int64_t tile, int64_t device, Window window,
                  Scratch *scratch) {
    if (scratch) {
      // The first arrival counts, as on the ledger's timeline.
      if (arrivedIn(*scratch, tile, device))
        return;
      auto at = static_cast<size_t>(device);
      scratch->arrival[at] = window;
      scratch->arrivalTile[at] = tile;
      scratch->arrivalStamp[at] = scratch->stamp;
      return;
    }
    arrivals[static_cast<size_t>(tile)].try_emplace(device, window);
  }

  void charge(int64_t tile, int64_t sender, llvm::ArrayRef<int64_t> receivers) {
    auto bytes = static_cast<double>(tiles[tile].bytes);
    int64_t previous = sender;
    for (int64_t next : receivers) {
      Link link = cluster.link(previous, next);
      latency = std::max(latency, link.latency);
      for (size_t resource : resources(previous, next))
        busy[resource] += bytes / link.bandwidth;
      int64_t a = cluster.nodeOf(previous), b = cluster.nodeOf(next);
      if (a == b) {
        schedule.deviceSent[previous] += bytes;
        schedule.deviceReceived[next] += bytes;
      } else {
        schedule.hostSent[a] += bytes;
        schedule.hostReceived[b] += bytes;
      }
      previous = next;
    }
  }

  const ClusterIndex &cluster;
  const std::vector<CrossMeshTile> &tiles;
  CrossMeshSchedule &schedule;
  size_t hosts, devices;
  /// Per card and link (see resources): seconds of transfer charged to it,
  /// and when it is next free.
  std::vector<double> busy, freeAt;
  /// Per tile, when each device that received it got it: a few each, or
  /// every device of a mesh for a tensor replicated on it (a scan per
  /// lookup made planning a move to a 3,251-device stage quadratic).
  std::vector<llvm::DenseMap<int64_t, Window>> arrivals;
  double latency = 0;
  /// place()'s cards and links of the transfer, kept for their capacity.
  std::vector<size_t> held;
};

/// How one tile's transfers choose their senders.
struct Senders {
  /// The holder sending to another host.
  llvm::function_ref<int64_t()> remote;
  /// A holder on the host, if any.
  llvm::function_ref<std::optional<int64_t>(int64_t)> local;
  /// Orders a broadcast's chain of hosts.
  llvm::function_ref<void(std::vector<int64_t> &)> orderChain;
};

/// A tile's receivers or holders by host, hosts in increasing order.
using HostDevices = std::vector<std::pair<int64_t, std::vector<int64_t>>>;

/// `devices` by host, each host's in their order in `devices`.
HostDevices devicesByHost(const ClusterIndex &cluster,
                          const std::vector<int64_t> &devices) {
  std::map<int64_t, std::vector<int64_t>> byHost;
  for (int64_t device : devices)
    byHost[cluster.nodeOf(device)].push_back(device);
  return HostDevices(byHost.begin(), byHost.end());
}

/// The devices of `byHost` on `host` (none where it has none).
llvm::ArrayRef<int64_t> devicesOn(const HostDevices &byHost, int64_t host) {
  auto found = std::lower_bound(
      byHost.begin(), byHost.end(), host,
      [](const auto &entry, int64_t key) { return entry.first < key; });
  if (found == byHost.end() || found->first != host)
    return {};
  return found->second;
}

/// Every tile's receivers (or holders) by host, the same in every trial:
/// what tileTransfers groups the tile's transfers by, and where a host's
/// holders are found without a scan of them all (a tensor replicated on a
/// stage of thousands of devices has as many).
std::vector<HostDevices>
tilesByHost(const ClusterIndex &cluster,
            const std::vector<CrossMeshTile> &tiles,
            std::vector<int64_t> CrossMeshTile::*devices) {
  std::vector<HostDevices> result;
  result.reserve(tiles.size());
  for (const CrossMeshTile &tile : tiles)
    result.push_back(devicesByHost(cluster, tile.*devices));
  return result;
}

/// A transfer of a tile, from a sender to its receivers (in chain order).
using EmitTransfer =
    llvm::function_ref<void(int64_t sender, llvm::ArrayRef<int64_t>)>;

/// The transfers moving one tile in `mode`, handed to `emit` in the order
/// they run (a device forwards a tile only after a transfer brought it).
/// `byHost` is the tile's receiversByHost.
void tileTransfers(const ClusterIndex &cluster, const CrossMeshTile &tile,
                   const HostDevices &byHost, CrossMeshMode mode,
                   const Senders &senders, EmitTransfer emit) {
  auto send = [&](int64_t sender, llvm::ArrayRef<int64_t> receivers) {
    if (!receivers.empty())
      emit(sender, receivers);
  };
  if (mode == CrossMeshMode::SendRecv) {
    for (int64_t receiver : tile.receivers) {
      std::optional<int64_t> local = senders.local(cluster.nodeOf(receiver));
      int64_t sender = local ? *local : senders.remote();
      if (sender != receiver)
        send(sender, receiver);
    }
    return;
  }
  auto receiversOn = [&](int64_t host) { return devicesOn(byHost, host); };
  // Hosts holding the tile pass it on within; the others get it over
  // their card, once.
  std::vector<int64_t> remoteHosts;
  llvm::SmallVector<int64_t, 16> others;
  for (const auto &[host, receivers] : byHost) {
    std::optional<int64_t> local = senders.local(host);
    if (!local) {
      remoteHosts.push_back(host);
      continue;
    }
    others.clear();
    for (int64_t receiver : receivers)
      if (receiver != *local)
        others.push_back(receiver);
    send(*local, others);
  }
  if (remoteHosts.empty())
    return;
  if (mode == CrossMeshMode::SendRecvAllGather) {
    for (int64_t host : remoteHosts) {
      llvm::ArrayRef<int64_t> receivers = receiversOn(host);
      send(senders.remote(), receivers.front());
      send(receivers.front(), receivers.drop_front());
    }
    return;
  }
  // Broadcast: a chain through the hosts.
  int64_t sender = senders.remote();
  senders.orderChain(remoteHosts);
  llvm::SmallVector<int64_t, 16> heads;
  for (int64_t host : remoteHosts)
    heads.push_back(receiversOn(host).front());
  send(sender, heads);
  for (int64_t host : remoteHosts)
    send(receiversOn(host).front(), receiversOn(host).drop_front());
}

/// Of a tile's `holders` (by host), one on `host`, if any: the first, or
/// with `balanced` the one whose links have sent least.
std::optional<int64_t> holderOn(const Ledger &ledger,
                                const HostDevices &holders, int64_t host,
                                bool balanced) {
  std::optional<int64_t> best;
  for (int64_t holder : devicesOn(holders, host))
    if (!best || (balanced && ledger.deviceSendSeconds(holder) <
                                  ledger.deviceSendSeconds(*best)))
      best = holder;
  return best;
}

/// Tiles of the window ByOrder chooses among at each step: the next this
/// many largest. Bounds the planning work to tiles x window x holding
/// hosts.
constexpr size_t kOrderWindow = 256;
/// The most tiles ByOrder list-schedules (tiles x window trials each).
constexpr size_t kOrderTiles = 4096;
/// The most receivers ByOrder's trials place in all (tiles x window x
/// holding hosts x receivers): the window narrows for tiles with many
/// receivers (a replicated tensor to all of two 512-device meshes), and
/// stays kOrderWindow for a tile per receiver up to kOrderTiles.
constexpr double kOrderWork = 4194304;

/// ByOrder's list scheduling. Of the window's tiles, each tried from every
/// holding host, the one whose transfers start first moves next; among
/// those starting together, the larger (`largerFirst`) or the smaller, then
/// the one done first. Tiles of one size take turns between pairs of hosts
/// (the first holder's, the first receiver's), so that the window holds
/// work for every card.
CrossMeshSchedule orderOnTimeline(const std::vector<CrossMeshTile> &tiles,
                                  const ClusterIndex &cluster,
                                  CrossMeshMode mode, bool largerFirst) {
  CrossMeshSchedule schedule;
  schedule.mode = mode;
  schedule.balancing = CrossMeshBalancing::ByOrder;
  Ledger ledger(cluster, tiles, schedule);
  std::map<std::pair<int64_t, int64_t>, int64_t> turns;
  std::vector<int64_t> turn(tiles.size());
  std::vector<size_t> order(tiles.size());
  for (size_t t = 0; t < tiles.size(); ++t) {
    order[t] = t;
    turn[t] = turns[{cluster.nodeOf(tiles[t].holders.front()),
                     cluster.nodeOf(tiles[t].receivers.front())}]++;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(tiles[b].bytes, turn[a]) <
           std::tie(tiles[a].bytes, turn[b]);
  });
  std::vector<HostDevices> byHost =
      tilesByHost(cluster, tiles, &CrossMeshTile::receivers);
  std::vector<HostDevices> holdersByHost =
      tilesByHost(cluster, tiles, &CrossMeshTile::holders);
  // The tile and host a trial sends from, and what it placed so far.
  size_t t = 0;
  int64_t host = 0;
  Ledger::Scratch scratch = ledger.makeScratch();
  auto remote = [&] { return *holderOn(ledger, holdersByHost[t], host, true); };
  // A holder on the host whose link frees first, this tile's transfers
  // so far counted: a host's receivers are served by all its holders.
  auto local = [&](int64_t at) {
    std::optional<int64_t> best;
    for (int64_t holder : devicesOn(holdersByHost[t], at))
      if (!best || ledger.deviceSendFree(holder, &scratch) <
                       ledger.deviceSendFree(*best, &scratch))
        best = holder;
    return best;
  };
  // The host whose card frees first forwards first.
  auto orderChain = [&](std::vector<int64_t> &hosts) {
    std::stable_sort(hosts.begin(), hosts.end(), [&](int64_t a, int64_t b) {
      return ledger.hostSendFree(a) < ledger.hostSendFree(b);
    });
  };
  Senders senders{remote, local, orderChain};
  // When the tile's transfers from the host would start and end; a trial
  // places them in the scratch only, and adds them to `kept` when given.
  auto tryTile = [&](std::vector<CrossMeshTransfer> *kept) {
    Window span{std::numeric_limits<double>::infinity(), 0};
    scratch.clear();
    tileTransfers(cluster, tiles[t], byHost[t], mode, senders,
                  [&](int64_t sender, llvm::ArrayRef<int64_t> receivers) {
                    Window window = ledger.place(static_cast<int64_t>(t),
                                                 sender, receivers, &scratch);
                    span.start = std::min(span.start, window.start);
                    span.end = std::max(span.end, window.end);
                    if (kept)
                      kept->push_back(
                          {static_cast<int64_t>(t), sender, receivers.vec()});
                  });
    return span;
  };
  double work = 0;
  for (size_t tile = 0; tile < tiles.size(); ++tile)
    work += static_cast<double>(holdersByHost[tile].size() *
                                tiles[tile].receivers.size());
  size_t window = kOrderWindow;
  if (work * static_cast<double>(kOrderWindow) > kOrderWork)
    window = std::max<size_t>(1, static_cast<size_t>(kOrderWork / work));
  std::vector<CrossMeshTransfer> chosen;
  while (!order.empty()) {
    std::optional<std::tuple<double, int64_t, double>> bestKey;
    size_t bestPosition = 0;
    int64_t bestHost = 0;
    for (size_t position = 0; position < std::min(order.size(), window);
         ++position) {
      t = order[position];
      for (const auto &[holding, holders] : holdersByHost[t]) {
        host = holding;
        Window span = tryTile(nullptr);
        std::tuple<double, int64_t, double> key{
            span.start, largerFirst ? -tiles[t].bytes : tiles[t].bytes,
            span.end};
        if (bestKey && !(key < *bestKey))
          continue;
        bestKey = key;
        bestPosition = position;
        bestHost = holding;
      }
    }
    // The best trial again, its transfers kept: the ledger has not changed.
    t = order[bestPosition];
    host = bestHost;
    chosen.clear();
    tryTile(&chosen);
    for (CrossMeshTransfer &transfer : chosen) {
      ledger.place(transfer.tile, transfer.sender, transfer.receivers);
      schedule.transfers.push_back(std::move(transfer));
    }
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(bestPosition));
  }
  ledger.finish();
  return schedule;
}

} // namespace

std::optional<std::string> checkCrossMesh(const CrossMeshProblem &problem,
                                          const Cluster &cluster) {
  // Said only on an error: the layout search checks thousands of moves.
  auto what = [&] {
    return "moving '" + problem.tensor + "' from mesh " +
           describeMesh(problem.source) + " to mesh " +
           describeMesh(problem.destination) + ": ";
  };
  for (const auto *mesh : {&problem.source, &problem.destination})
    if (std::optional<std::string> error = checkMesh(cluster, *mesh))
      return what() + "the " +
             (mesh == &problem.source ? "source" : "destination") + " " +
             *error;
  std::set<int64_t> sourceDevices(problem.source.devices.begin(),
                                  problem.source.devices.end());
  for (int64_t device : problem.destination.devices)
    if (sourceDevices.count(device))
      return what() + "the meshes overlap at device " + std::to_string(device);
  if (problem.elementBytes <= 0)
    return what() + "elements need a positive size";
  for (const auto &[layout, mesh, name] :
       {std::tuple{&problem.sourceLayout, &problem.source, "source"},
        std::tuple{&problem.destinationLayout, &problem.destination,
                   "destination"}}) {
    if (std::optional<std::string> error =
            checkLayout(problem.shape, mesh->shape, *layout))
      return what() + "the " + name + " layout " + toString(*layout) + ": " +
             *error;
    for (const Sbp &entry : *layout)
      if (entry.isPartial())
        return what() + "the " + name + " layout " + toString(*layout) +
               " holds partial values; reduce them before the move";
  }
  // Every receiving device gets a part: no empty tensor is sent.
  if (!hasNonEmptyBlocks(problem.shape, problem.destination.shape,
                         problem.destinationLayout))
    return what() + "the destination layout " +
           toString(problem.destinationLayout) +
           " leaves a device no part of the tensor";
  return std::nullopt;
}

namespace {

/// A tile handed to a visitor: its region, bytes, holders and receivers
/// (ascending), valid during the call only.
using TileVisitor = llvm::function_ref<void(const Slice &region, int64_t bytes,
                                            llvm::ArrayRef<int64_t> holders,
                                            llvm::ArrayRef<int64_t> receivers)>;

/// Every tile of a valid problem, source block by destination block,
/// without making a list of them (the bound reads each once).
void visitTiles(const CrossMeshProblem &problem, TileVisitor visit) {
  std::vector<Block> sources =
      blocksOf(problem.shape, problem.source, problem.sourceLayout);
  std::vector<Block> destinations =
      blocksOf(problem.shape, problem.destination, problem.destinationLayout);
  size_t rank = problem.shape.size();
  Slice region;
  region.offsets.resize(rank);
  region.sizes.resize(rank);
  for (const Block &source : sources)
    for (const Block &destination : destinations) {
      const Slice &from = source.slice, &to = destination.slice;
      bool empty = false;
      for (size_t d = 0; d < rank; ++d) {
        int64_t begin = std::max(from.offsets[d], to.offsets[d]);
        int64_t end = std::min(from.offsets[d] + from.sizes[d],
                               to.offsets[d] + to.sizes[d]);
        empty |= end <= begin;
        region.offsets[d] = begin;
        region.sizes[d] = std::max<int64_t>(end - begin, 0);
      }
      if (!empty)
        visit(region, region.numElements() * problem.elementBytes,
              source.devices, destination.devices);
    }
}

/// crossMeshLowerBound over the tiles `forEachTile` hands to its visitor.
double lowerBoundOf(llvm::function_ref<void(TileVisitor)> forEachTile,
                    const ClusterIndex &cluster) {
  const Cluster &described = cluster.cluster();
  size_t hosts = described.nodes.size();
  std::vector<double> mustReceive(hosts, 0), mustSend(hosts, 0);
  // Hosts holding or needing a tile: flags while the tiles are read, then
  // the list of them, ascending.
  std::vector<char> isInvolved(hosts, 0);
  // Per host, the last tile it held or needed (stamps: no set per tile).
  std::vector<int64_t> heldAt(hosts, -1), neededAt(hosts, -1);
  std::vector<int64_t> holding, needing;
  int64_t stamp = -1;
  forEachTile([&](const Slice &, int64_t tileBytes,
                  llvm::ArrayRef<int64_t> holders,
                  llvm::ArrayRef<int64_t> receivers) {
    ++stamp;
    holding.clear();
    needing.clear();
    for (int64_t holder : holders) {
      auto host = static_cast<size_t>(cluster.nodeOf(holder));
      if (heldAt[host] != stamp) {
        heldAt[host] = stamp;
        holding.push_back(static_cast<int64_t>(host));
      }
    }
    for (int64_t receiver : receivers) {
      auto host = static_cast<size_t>(cluster.nodeOf(receiver));
      if (neededAt[host] != stamp) {
        neededAt[host] = stamp;
        needing.push_back(static_cast<int64_t>(host));
      }
    }
    for (int64_t host : holding)
      isInvolved[static_cast<size_t>(host)] = 1;
    for (int64_t host : needing)
      isInvolved[static_cast<size_t>(host)] = 1;
    auto bytes = static_cast<double>(tileBytes);
    bool elsewhere = false;
    for (int64_t host : needing)
      if (heldAt[static_cast<size_t>(host)] != stamp) {
        mustReceive[static_cast<size_t>(host)] += bytes;
        elsewhere = true;
      }
    if (holding.size() == 1 && elsewhere)
      mustSend[static_cast<size_t>(holding.front())] += bytes;
  });
  // Each host's card at the fastest rate it has to any other host here.
  std::vector<int64_t> involved;
  std::vector<int64_t> firstDevice(hosts, 0);
  for (size_t host = 0; host < hosts; ++host)
    if (isInvolved[host]) {
      involved.push_back(static_cast<int64_t>(host));
      firstDevice[host] = described.firstDevice(static_cast<int64_t>(host));
    }
  double bound = 0;
  for (int64_t host : involved) {
    double bandwidth = 0;
    for (int64_t other : involved)
      if (other != host)
        bandwidth = std::max(bandwidth,
                             cluster
                                 .link(firstDevice[static_cast<size_t>(host)],
                                       firstDevice[static_cast<size_t>(other)])
                                 .bandwidth);
    if (bandwidth > 0)
      bound = std::max(bound,
                       std::max(mustReceive[host], mustSend[host]) / bandwidth);
  }
  return bound;
}

} // namespace

std::vector<CrossMeshTile> crossMeshTiles(const CrossMeshProblem &problem) {
  std::vector<CrossMeshTile> tiles;
  visitTiles(problem, [&](const Slice &region, int64_t bytes,
                          llvm::ArrayRef<int64_t> holders,
                          llvm::ArrayRef<int64_t> receivers) {
    tiles.push_back({region, bytes, holders.vec(), receivers.vec()});
  });
  std::sort(tiles.begin(), tiles.end(),
            [](const CrossMeshTile &a, const CrossMeshTile &b) {
              return std::tie(a.region.offsets, a.region.sizes, a.receivers) <
                     std::tie(b.region.offsets, b.region.sizes, b.receivers);
            });
  return tiles;
}

namespace {

/// The tiles in rounds over their pairs of hosts (the first holder's, the
/// first receiver's): round r moves each pair's r-th tile, the pairs in
/// turn by how far the receiving host lies from the sending one among the
/// hosts receiving, so that consecutive transfers use other cards. An
/// all-to-all between two stages' hosts (a sequence split turned into a
/// hidden split: every host sends a part to every other) placed in this
/// order keeps every card busy, where the tiles' own order sends a host's
/// parts one after another to the same receiving card, 21 times the bound
/// on 24 hosts each way.
std::vector<size_t> rotationOrder(const std::vector<CrossMeshTile> &tiles,
                                  const ClusterIndex &cluster) {
  std::map<int64_t, int64_t> senderRank, receiverRank;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(tiles.size());
  for (const CrossMeshTile &tile : tiles) {
    pairs.emplace_back(cluster.nodeOf(tile.holders.front()),
                       cluster.nodeOf(tile.receivers.front()));
    senderRank.try_emplace(pairs.back().first, 0);
    receiverRank.try_emplace(pairs.back().second, 0);
  }
  for (auto *ranks : {&senderRank, &receiverRank}) {
    int64_t next = 0;
    for (auto &[host, rank] : *ranks)
      rank = next++;
  }
  auto receivingHosts = static_cast<int64_t>(receiverRank.size());
  std::map<std::pair<int64_t, int64_t>, int64_t> turns;
  std::vector<std::tuple<int64_t, int64_t, int64_t, size_t>> keys;
  keys.reserve(tiles.size());
  for (size_t t = 0; t < tiles.size(); ++t) {
    int64_t sender = senderRank[pairs[t].first];
    int64_t distance =
        ((receiverRank[pairs[t].second] - sender) % receivingHosts +
         receivingHosts) %
        receivingHosts;
    keys.emplace_back(turns[pairs[t]]++, distance, sender, t);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<size_t> order;
  order.reserve(tiles.size());
  for (const auto &key : keys)
    order.push_back(std::get<3>(key));
  return order;
}

/// List scheduling of `tiles` in `order`: each tile's transfers at the
/// earliest its cards and links allow, sent by the holder whose host's
/// card has sent least with `byBytes`, else the first.
CrossMeshSchedule placeInOrder(const std::vector<CrossMeshTile> &tiles,
                               const ClusterIndex &cluster, CrossMeshMode mode,
                               CrossMeshBalancing balancing,
                               const std::vector<size_t> &order, bool byBytes);

CrossMeshSchedule planOn(const std::vector<CrossMeshTile> &tiles,
                         const ClusterIndex &cluster, CrossMeshMode mode,
                         CrossMeshBalancing balancing) {
  if (balancing == CrossMeshBalancing::ByOrder) {
    // The fastest of list scheduling preferring the larger tile and the
    // smaller where tiles can start together, and of the other balancings'
    // orders (also orders on the timeline), so that it is never slower.
    // Past kOrderTiles tiles, the other balancings' and the tiles in
    // rounds over the pairs of hosts.
    std::vector<CrossMeshSchedule> candidates;
    if (tiles.size() <= kOrderTiles) {
      candidates.push_back(orderOnTimeline(tiles, cluster, mode, true));
      // Tiles of one size leave nothing to prefer: the same schedule.
      bool oneSize = llvm::all_of(tiles, [&](const CrossMeshTile &tile) {
        return tile.bytes == tiles.front().bytes;
      });
      if (!oneSize)
        candidates.push_back(orderOnTimeline(tiles, cluster, mode, false));
    }
    for (CrossMeshBalancing other :
         {CrossMeshBalancing::ByBytes, CrossMeshBalancing::None})
      candidates.push_back(planOn(tiles, cluster, mode, other));
    // Past kOrderTiles, the tiles in rounds over the pairs of hosts: the
    // list scheduling's window balances the cards on fewer tiles, and a
    // move of many receivers per tile makes the rounds' placement as long
    // as the other orders' (2.5 s more of 36 s on 256 generated machines).
    if (tiles.size() > kOrderTiles)
      candidates.push_back(placeInOrder(tiles, cluster, mode,
                                        CrossMeshBalancing::ByOrder,
                                        rotationOrder(tiles, cluster), true));
    CrossMeshSchedule best = candidates.front();
    for (const CrossMeshSchedule &candidate : candidates)
      if (candidate.seconds < best.seconds)
        best = candidate;
    best.balancing = CrossMeshBalancing::ByOrder;
    return best;
  }
  std::vector<size_t> order(tiles.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  bool byBytes = balancing == CrossMeshBalancing::ByBytes;
  if (byBytes)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return tiles[a].bytes > tiles[b].bytes;
    });
  return placeInOrder(tiles, cluster, mode, balancing, order, byBytes);
}

CrossMeshSchedule placeInOrder(const std::vector<CrossMeshTile> &tiles,
                               const ClusterIndex &cluster, CrossMeshMode mode,
                               CrossMeshBalancing balancing,
                               const std::vector<size_t> &order, bool byBytes) {
  CrossMeshSchedule schedule;
  schedule.mode = mode;
  schedule.balancing = balancing;
  Ledger ledger(cluster, tiles, schedule);
  std::vector<HostDevices> byHost =
      tilesByHost(cluster, tiles, &CrossMeshTile::receivers);
  std::vector<HostDevices> holdersByHost =
      tilesByHost(cluster, tiles, &CrossMeshTile::holders);
  for (size_t t : order) {
    const CrossMeshTile &tile = tiles[t];
    // The first holder, or the one on the host whose card has sent least.
    auto remote = [&] {
      int64_t best = tile.holders.front();
      if (byBytes)
        for (int64_t holder : tile.holders)
          if (ledger.hostSendSeconds(cluster.nodeOf(holder)) <
              ledger.hostSendSeconds(cluster.nodeOf(best)))
            best = holder;
      return best;
    };
    auto local = [&](int64_t host) {
      return holderOn(ledger, holdersByHost[t], host, byBytes);
    };
    // The busiest sender last: the last host forwards nothing.
    auto orderChain = [&](std::vector<int64_t> &hosts) {
      if (byBytes)
        std::stable_sort(hosts.begin(), hosts.end(), [&](int64_t a, int64_t b) {
          return ledger.hostSendSeconds(a) < ledger.hostSendSeconds(b);
        });
    };
    Senders senders{remote, local, orderChain};
    tileTransfers(cluster, tile, byHost[t], mode, senders,
                  [&](int64_t sender, llvm::ArrayRef<int64_t> receivers) {
                    ledger.place(static_cast<int64_t>(t), sender, receivers);
                    schedule.transfers.push_back(
                        {static_cast<int64_t>(t), sender, receivers.vec()});
                  });
  }
  ledger.finish();
  return schedule;
}

} // namespace

CrossMeshSchedule planCrossMesh(const CrossMeshProblem &problem,
                                const Cluster &cluster, CrossMeshMode mode,
                                CrossMeshBalancing balancing) {
  return planOn(crossMeshTiles(problem), ClusterIndex(cluster), mode,
                balancing);
}

CrossMeshSchedule planCrossMesh(const std::vector<CrossMeshTile> &tiles,
                                const ClusterIndex &cluster, CrossMeshMode mode,
                                CrossMeshBalancing balancing) {
  return planOn(tiles, cluster, mode, balancing);
}

CrossMeshSchedule timeCrossMesh(const std::vector<CrossMeshTile> &tiles,
                                std::vector<CrossMeshTransfer> transfers,
                                const ClusterIndex &cluster) {
  CrossMeshSchedule schedule;
  Ledger ledger(cluster, tiles, schedule);
  for (const CrossMeshTransfer &transfer : transfers)
    ledger.place(transfer.tile, transfer.sender, transfer.receivers);
  schedule.transfers = std::move(transfers);
  ledger.finish();
  return schedule;
}

MeshPlacement placeCrossMesh(const CrossMeshProblem &problem,
                             const Cluster &cluster) {
  MeshPlacement placement =
      placeMeshes(cluster, {&problem.source, &problem.destination});
  placement.key += ";tensor " + formatMeshShape(problem.shape) + " of " +
                   std::to_string(problem.elementBytes) + " bytes from " +
                   toString(problem.sourceLayout) + " to " +
                   toString(problem.destinationLayout);
  return placement;
}

CrossMeshSchedule shiftSchedule(const CrossMeshSchedule &schedule,
                                int64_t deviceShift, int64_t nodeShift) {
  CrossMeshSchedule shifted = schedule;
  for (CrossMeshTransfer &transfer : shifted.transfers) {
    transfer.sender += deviceShift;
    for (int64_t &receiver : transfer.receivers)
      receiver += deviceShift;
  }
  // Per-node and per-device figures over the whole cluster: what is not 0
  // lies on the problem's own nodes and devices, which stay in range.
  auto shiftFigures = [](const std::vector<double> &figures, int64_t shift) {
    std::vector<double> moved(figures.size(), 0);
    for (size_t i = 0; i < figures.size(); ++i)
      if (figures[i] != 0)
        moved.at(static_cast<size_t>(static_cast<int64_t>(i) + shift)) =
            figures[i];
    return moved;
  };
  shifted.hostSent = shiftFigures(schedule.hostSent, nodeShift);
  shifted.hostReceived = shiftFigures(schedule.hostReceived, nodeShift);
  shifted.deviceSent = shiftFigures(schedule.deviceSent, deviceShift);
  shifted.deviceReceived = shiftFigures(schedule.deviceReceived, deviceShift);
  return shifted;
}

double crossMeshLowerBound(const CrossMeshProblem &problem,
                           const Cluster &described) {
  return crossMeshLowerBound(problem, ClusterIndex(described));
}

double crossMeshLowerBound(const CrossMeshProblem &problem,
                           const ClusterIndex &cluster) {
  return lowerBoundOf([&](TileVisitor visit) { visitTiles(problem, visit); },
                      cluster);
}

double crossMeshLowerBound(const std::vector<CrossMeshTile> &tiles,
                           const ClusterIndex &cluster) {
  return lowerBoundOf(
      [&](TileVisitor visit) {
        for (const CrossMeshTile &tile : tiles)
          visit(tile.region, tile.bytes, tile.holders, tile.receivers);
      },
      cluster);
}

} // namespace parplan::cost
