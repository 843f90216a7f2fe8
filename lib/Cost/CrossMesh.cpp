//===- CrossMesh.cpp - planning a tensor's move between meshes ------------===//
//
// Every transfer is charged where it spends bandwidth: a hop between hosts
// on the sending host's network card (out) and the receiving host's (in),
// a hop within a host on the two devices' intra-node links. All transfers
// run at once, so the busiest card or link sets the time; this is the
// model the lower bound uses too, so a schedule that loads every card with
// only the bytes it must move meets the bound.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/CrossMesh.h"

#include <algorithm>
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
  }
  return "?";
}

std::optional<CrossMeshMode> parseCrossMeshMode(const std::string &text) {
  for (CrossMeshMode mode :
       {CrossMeshMode::SendRecv, CrossMeshMode::SendRecvAllGather,
        CrossMeshMode::Broadcast})
    if (text == toString(mode))
      return mode;
  return std::nullopt;
}

std::optional<CrossMeshBalancing>
parseCrossMeshBalancing(const std::string &text) {
  for (CrossMeshBalancing balancing :
       {CrossMeshBalancing::None, CrossMeshBalancing::ByBytes})
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

/// The distinct blocks of a layout on a placed mesh, each with the devices
/// holding it (ascending), empty blocks left out.
std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>,
         std::vector<int64_t>>
blocksOf(const std::vector<int64_t> &shape, const DeviceMesh &mesh,
         const NdSbp &layout) {
  std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>,
           std::vector<int64_t>>
      blocks;
  for (size_t i = 0; i < mesh.devices.size(); ++i) {
    Slice slice =
        deviceSlice(shape, mesh.shape, layout,
                    meshCoordinate(mesh.shape, static_cast<int64_t>(i)));
    if (slice.numElements() == 0)
      continue;
    blocks[{slice.offsets, slice.sizes}].push_back(mesh.devices[i]);
  }
  for (auto &[block, devices] : blocks)
    std::sort(devices.begin(), devices.end());
  return blocks;
}

/// Where bytes are charged, and the time each resource is busy.
class Ledger {
public:
  Ledger(const Cluster &cluster, CrossMeshSchedule &schedule)
      : cluster(cluster), schedule(schedule) {
    size_t hosts = cluster.nodes.size();
    auto devices = static_cast<size_t>(cluster.numDevices());
    schedule.hostSent.assign(hosts, 0);
    schedule.hostReceived.assign(hosts, 0);
    schedule.deviceSent.assign(devices, 0);
    schedule.deviceReceived.assign(devices, 0);
    hostSentTime.assign(hosts, 0);
    hostReceivedTime.assign(hosts, 0);
    deviceSentTime.assign(devices, 0);
    deviceReceivedTime.assign(devices, 0);
  }

  /// One hop of `bytes` from device `from` to device `to`.
  void hop(int64_t from, int64_t to, double bytes) {
    if (from == to || bytes == 0)
      return;
    Link link = cluster.link(from, to);
    latency = std::max(latency, link.latency);
    double seconds = bytes / link.bandwidth;
    int64_t a = cluster.nodeOf(from), b = cluster.nodeOf(to);
    if (a == b) {
      schedule.deviceSent[from] += bytes;
      schedule.deviceReceived[to] += bytes;
      deviceSentTime[from] += seconds;
      deviceReceivedTime[to] += seconds;
      return;
    }
    schedule.hostSent[a] += bytes;
    schedule.hostReceived[b] += bytes;
    hostSentTime[a] += seconds;
    hostReceivedTime[b] += seconds;
  }

  /// A chain of hops: from `from` through `to` in order.
  void chain(int64_t from, const std::vector<int64_t> &to, double bytes) {
    int64_t previous = from;
    for (int64_t next : to) {
      hop(previous, next, bytes);
      previous = next;
    }
  }

  double hostSendSeconds(int64_t host) const { return hostSentTime[host]; }
  double deviceSendSeconds(int64_t device) const {
    return deviceSentTime[device];
  }

  double seconds() const {
    double busiest = 0;
    for (const std::vector<double> *times :
         {&hostSentTime, &hostReceivedTime, &deviceSentTime,
          &deviceReceivedTime})
      for (double time : *times)
        busiest = std::max(busiest, time);
    return busiest + latency;
  }

private:
  const Cluster &cluster;
  CrossMeshSchedule &schedule;
  std::vector<double> hostSentTime, hostReceivedTime;
  std::vector<double> deviceSentTime, deviceReceivedTime;
  double latency = 0;
};

} // namespace

std::optional<std::string> checkCrossMesh(const CrossMeshProblem &problem,
                                          const Cluster &cluster) {
  std::string what = "moving '" + problem.tensor + "' from mesh " +
                     describeMesh(problem.source) + " to mesh " +
                     describeMesh(problem.destination) + ": ";
  for (const auto *mesh : {&problem.source, &problem.destination})
    if (std::optional<std::string> error = checkMesh(cluster, *mesh))
      return what + "the " +
             (mesh == &problem.source ? "source" : "destination") + " " +
             *error;
  std::set<int64_t> sourceDevices(problem.source.devices.begin(),
                                  problem.source.devices.end());
  for (int64_t device : problem.destination.devices)
    if (sourceDevices.count(device))
      return what + "the meshes overlap at device " + std::to_string(device);
  if (problem.elementBytes <= 0)
    return what + "elements need a positive size";
  for (const auto &[layout, mesh, name] :
       {std::tuple{&problem.sourceLayout, &problem.source, "source"},
        std::tuple{&problem.destinationLayout, &problem.destination,
                   "destination"}}) {
    if (std::optional<std::string> error =
            checkLayout(problem.shape, mesh->shape, *layout))
      return what + "the " + name + " layout " + toString(*layout) + ": " +
             *error;
    for (const Sbp &entry : *layout)
      if (entry.isPartial())
        return what + "the " + name + " layout " + toString(*layout) +
               " holds partial values; reduce them before the move";
  }
  return std::nullopt;
}

std::vector<CrossMeshTile> crossMeshTiles(const CrossMeshProblem &problem) {
  auto sources = blocksOf(problem.shape, problem.source, problem.sourceLayout);
  auto destinations =
      blocksOf(problem.shape, problem.destination, problem.destinationLayout);
  std::vector<CrossMeshTile> tiles;
  size_t rank = problem.shape.size();
  for (const auto &[source, holders] : sources)
    for (const auto &[destination, receivers] : destinations) {
      CrossMeshTile tile;
      tile.region.offsets.resize(rank);
      tile.region.sizes.resize(rank);
      bool empty = false;
      for (size_t d = 0; d < rank; ++d) {
        int64_t begin = std::max(source.first[d], destination.first[d]);
        int64_t end = std::min(source.first[d] + source.second[d],
                               destination.first[d] + destination.second[d]);
        empty |= end <= begin;
        tile.region.offsets[d] = begin;
        tile.region.sizes[d] = std::max<int64_t>(end - begin, 0);
      }
      if (empty)
        continue;
      tile.bytes = tile.region.numElements() * problem.elementBytes;
      tile.holders = holders;
      tile.receivers = receivers;
      tiles.push_back(std::move(tile));
    }
  std::sort(tiles.begin(), tiles.end(),
            [](const CrossMeshTile &a, const CrossMeshTile &b) {
              return std::tie(a.region.offsets, a.region.sizes, a.receivers) <
                     std::tie(b.region.offsets, b.region.sizes, b.receivers);
            });
  return tiles;
}

CrossMeshSchedule planCrossMesh(const CrossMeshProblem &problem,
                                const Cluster &cluster, CrossMeshMode mode,
                                CrossMeshBalancing balancing) {
  CrossMeshSchedule schedule;
  schedule.mode = mode;
  schedule.balancing = balancing;
  Ledger ledger(cluster, schedule);
  std::vector<CrossMeshTile> tiles = crossMeshTiles(problem);
  std::vector<size_t> order(tiles.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  if (balancing == CrossMeshBalancing::ByBytes)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return tiles[a].bytes > tiles[b].bytes;
    });

  // The holder sending a tile to another host: the first, or the one on
  // the host whose card has been busy least.
  auto remoteHolder = [&](const CrossMeshTile &tile) {
    if (balancing == CrossMeshBalancing::None)
      return tile.holders.front();
    int64_t best = tile.holders.front();
    for (int64_t holder : tile.holders)
      if (ledger.hostSendSeconds(cluster.nodeOf(holder)) <
          ledger.hostSendSeconds(cluster.nodeOf(best)))
        best = holder;
    return best;
  };
  // A holder on `host`, if any: the first, or the least busy one.
  auto localHolder = [&](const CrossMeshTile &tile,
                         int64_t host) -> std::optional<int64_t> {
    std::optional<int64_t> best;
    for (int64_t holder : tile.holders)
      if (cluster.nodeOf(holder) == host &&
          (!best || (balancing == CrossMeshBalancing::ByBytes &&
                     ledger.deviceSendSeconds(holder) <
                         ledger.deviceSendSeconds(*best))))
        best = holder;
    return best;
  };
  auto record = [&](size_t tile, int64_t sender,
                    std::vector<int64_t> receivers) {
    if (receivers.empty())
      return;
    ledger.chain(sender, receivers, static_cast<double>(tiles[tile].bytes));
    schedule.transfers.push_back(
        {static_cast<int64_t>(tile), sender, std::move(receivers)});
  };

  for (size_t t : order) {
    const CrossMeshTile &tile = tiles[t];
    // The tile's receivers by host.
    std::map<int64_t, std::vector<int64_t>> byHost;
    for (int64_t receiver : tile.receivers)
      byHost[cluster.nodeOf(receiver)].push_back(receiver);
    if (mode == CrossMeshMode::SendRecv) {
      for (int64_t receiver : tile.receivers) {
        std::optional<int64_t> local =
            localHolder(tile, cluster.nodeOf(receiver));
        int64_t sender = local ? *local : remoteHolder(tile);
        if (sender != receiver)
          record(t, sender, {receiver});
      }
      continue;
    }
    // Hosts holding the tile pass it on within; the others get it over
    // their card, once.
    std::vector<int64_t> remoteHosts;
    for (auto &[host, receivers] : byHost) {
      std::optional<int64_t> local = localHolder(tile, host);
      if (!local) {
        remoteHosts.push_back(host);
        continue;
      }
      std::vector<int64_t> others;
      for (int64_t receiver : receivers)
        if (receiver != *local)
          others.push_back(receiver);
      record(t, *local, others);
    }
    if (remoteHosts.empty())
      continue;
    if (mode == CrossMeshMode::SendRecvAllGather) {
      for (int64_t host : remoteHosts) {
        const std::vector<int64_t> &receivers = byHost[host];
        record(t, remoteHolder(tile), {receivers.front()});
        record(t, receivers.front(),
               std::vector<int64_t>(receivers.begin() + 1, receivers.end()));
      }
      continue;
    }
    // Broadcast: a chain through the hosts, the busiest sender last (the
    // last host forwards nothing).
    int64_t sender = remoteHolder(tile);
    if (balancing == CrossMeshBalancing::ByBytes)
      std::stable_sort(
          remoteHosts.begin(), remoteHosts.end(), [&](int64_t a, int64_t b) {
            return ledger.hostSendSeconds(a) < ledger.hostSendSeconds(b);
          });
    std::vector<int64_t> heads;
    for (int64_t host : remoteHosts)
      heads.push_back(byHost[host].front());
    record(t, sender, heads);
    for (int64_t host : remoteHosts) {
      const std::vector<int64_t> &receivers = byHost[host];
      record(t, receivers.front(),
             std::vector<int64_t>(receivers.begin() + 1, receivers.end()));
    }
  }
  schedule.seconds = ledger.seconds();
  return schedule;
}

double crossMeshLowerBound(const CrossMeshProblem &problem,
                           const Cluster &cluster) {
  std::vector<CrossMeshTile> tiles = crossMeshTiles(problem);
  size_t hosts = cluster.nodes.size();
  std::vector<double> mustReceive(hosts, 0), mustSend(hosts, 0);
  std::set<int64_t> involved;
  for (const CrossMeshTile &tile : tiles) {
    std::set<int64_t> holding, needing;
    for (int64_t holder : tile.holders)
      holding.insert(cluster.nodeOf(holder));
    for (int64_t receiver : tile.receivers)
      needing.insert(cluster.nodeOf(receiver));
    involved.insert(holding.begin(), holding.end());
    involved.insert(needing.begin(), needing.end());
    auto bytes = static_cast<double>(tile.bytes);
    bool elsewhere = false;
    for (int64_t host : needing)
      if (!holding.count(host)) {
        mustReceive[host] += bytes;
        elsewhere = true;
      }
    if (holding.size() == 1 && elsewhere)
      mustSend[*holding.begin()] += bytes;
  }
  // Each host's card at the fastest rate it has to any other host here.
  double bound = 0;
  for (int64_t host : involved) {
    double bandwidth = 0;
    for (int64_t other : involved)
      if (other != host)
        bandwidth = std::max(
            bandwidth,
            cluster.link(cluster.firstDevice(host), cluster.firstDevice(other))
                .bandwidth);
    if (bandwidth > 0)
      bound = std::max(bound,
                       std::max(mustReceive[host], mustSend[host]) / bandwidth);
  }
  return bound;
}

} // namespace parplan::cost
