//===- CrossMeshTest.cpp - planning a tensor's move between meshes --------===//
//
// crossMeshTiles, planCrossMesh and crossMeshLowerBound (CrossMesh.h) on
// meshes of whole hosts of a uniform cluster, where the bytes each host
// must move are easy to count by hand, and checkCrossMesh's one-line
// errors.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/CrossMesh.h"

#include <catch2/catch.hpp>

#include <map>
#include <numeric>
#include <set>

using namespace parplan;
using namespace parplan::cost;

namespace {

/// Hosts of 4 devices, 10 GB/s between hosts, 100 GB/s within, no latency.
Cluster hosts(int64_t count) {
  Cluster cluster;
  cluster.name = "test";
  DeviceType type;
  type.name = "gpu";
  type.memoryBytes = 16e9;
  type.memoryBandwidth = 900e9;
  type.peakFlops[ComputeType::F32] = 15e12;
  cluster.deviceTypes = {type};
  for (int64_t h = 0; h < count; ++h)
    cluster.nodes.push_back({"host" + std::to_string(h), "gpu", 4, ""});
  cluster.intraNode = {100e9, 0};
  cluster.interNode = {10e9, 0};
  cluster.interRegion = {1e9, 0};
  return cluster;
}

/// A mesh of `shape` on consecutive devices from `first`.
DeviceMesh meshFrom(std::vector<int64_t> shape, int64_t first) {
  DeviceMesh mesh{shape, std::vector<int64_t>(meshSize(shape))};
  std::iota(mesh.devices.begin(), mesh.devices.end(), first);
  return mesh;
}

NdSbp layout(std::initializer_list<Sbp> entries) { return NdSbp(entries); }

/// An 8x8 float tensor replicated on host 0's 4 devices, needed with its
/// rows split over hosts 1 and 2 (a 2x4 mesh, a row of it per host).
CrossMeshProblem oneHostToTwo() {
  return {"x",
          {8, 8},
          4,
          meshFrom({1, 4}, 0),
          meshFrom({2, 4}, 4),
          layout({Sbp::broadcast(), Sbp::broadcast()}),
          layout({Sbp::split(0), Sbp::broadcast()})};
}

/// Why `schedule` does not move `problem`, or "" when it does: every
/// transfer sends from a holder of its tile or a device an earlier transfer
/// gave it to, and every receiver gets each tile it needs exactly once.
std::string scheduleFault(const CrossMeshProblem &problem,
                          const CrossMeshSchedule &schedule) {
  std::vector<CrossMeshTile> tiles = crossMeshTiles(problem);
  std::map<int64_t, std::set<int64_t>> has;
  std::map<std::pair<int64_t, int64_t>, int> got;
  for (size_t t = 0; t < tiles.size(); ++t)
    has[static_cast<int64_t>(t)].insert(tiles[t].holders.begin(),
                                        tiles[t].holders.end());
  for (const CrossMeshTransfer &transfer : schedule.transfers) {
    if (!has[transfer.tile].count(transfer.sender))
      return "device " + std::to_string(transfer.sender) + " sends tile " +
             std::to_string(transfer.tile) + " before it has it";
    for (int64_t receiver : transfer.receivers) {
      has[transfer.tile].insert(receiver);
      ++got[{transfer.tile, receiver}];
    }
  }
  for (size_t t = 0; t < tiles.size(); ++t)
    for (int64_t receiver : tiles[t].receivers)
      if (got[{static_cast<int64_t>(t), receiver}] != 1)
        return "device " + std::to_string(receiver) + " gets tile " +
               std::to_string(t) + " " +
               std::to_string(got[{static_cast<int64_t>(t), receiver}]) +
               " times";
  return "";
}

} // namespace

TEST_CASE("cross-mesh tiles: where destination blocks meet source blocks",
          "[cross-mesh]") {
  // The same layout on two 2x4 meshes: each destination device needs the
  // block of the source device at its position, held by that one alone.
  CrossMeshProblem same{"x",
                        {8, 8},
                        4,
                        meshFrom({2, 4}, 0),
                        meshFrom({2, 4}, 8),
                        layout({Sbp::split(0), Sbp::split(1)}),
                        layout({Sbp::split(0), Sbp::split(1)})};
  std::vector<CrossMeshTile> tiles = crossMeshTiles(same);
  REQUIRE(tiles.size() == 8);
  int64_t bytes = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    bytes += tiles[i].bytes;
    CHECK(tiles[i].holders == std::vector<int64_t>{static_cast<int64_t>(i)});
    CHECK(tiles[i].receivers ==
          std::vector<int64_t>{static_cast<int64_t>(i) + 8});
  }
  CHECK(bytes == 8 * 8 * 4);

  // Replicated on one host, rows split over the other two: two tiles of
  // half the tensor, each held by all 4 source devices and needed by the 4
  // devices of one host.
  CrossMeshProblem spread = oneHostToTwo();
  tiles = crossMeshTiles(spread);
  REQUIRE(tiles.size() == 2);
  CHECK(tiles[0].region.offsets == std::vector<int64_t>{0, 0});
  CHECK(tiles[0].region.sizes == std::vector<int64_t>{4, 8});
  CHECK(tiles[0].holders == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(tiles[0].receivers == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(tiles[1].receivers == std::vector<int64_t>{8, 9, 10, 11});
}

TEST_CASE("cross-mesh schedules against the lower bound", "[cross-mesh]") {
  Cluster cluster = hosts(5);
  double total = 8 * 8 * 4;

  // One host to two: host 0 must send the whole tensor (it alone holds
  // it), each receiving host must receive half.
  CrossMeshProblem spread = oneHostToTwo();
  REQUIRE_FALSE(checkCrossMesh(spread, cluster));
  double bound = crossMeshLowerBound(spread, cluster);
  CHECK(bound == Approx(total / 10e9));
  CrossMeshSchedule broadcast = planCrossMesh(
      spread, cluster, CrossMeshMode::Broadcast, CrossMeshBalancing::ByBytes);
  CHECK(broadcast.seconds == Approx(bound));
  CHECK(broadcast.hostSent[0] == total);
  CHECK(broadcast.hostReceived[1] == total / 2);
  CHECK(broadcast.hostReceived[2] == total / 2);
  // Every receiver apart: 8 halves leave host 0.
  CrossMeshSchedule sendRecv = planCrossMesh(
      spread, cluster, CrossMeshMode::SendRecv, CrossMeshBalancing::ByBytes);
  CHECK(sendRecv.hostSent[0] == 4 * total);
  CHECK(sendRecv.seconds == Approx(4 * bound));
  // Once per host, then within it.
  CrossMeshSchedule gathered =
      planCrossMesh(spread, cluster, CrossMeshMode::SendRecvAllGather,
                    CrossMeshBalancing::None);
  CHECK(gathered.hostSent[0] == total);
  CHECK(gathered.seconds == Approx(bound));
  CHECK(gathered.deviceReceived[5] == total / 2);

  // Two hosts hold everything: balanced, each sends one half; the bound is
  // what the receiving hosts must take in.
  CrossMeshProblem twoHolders{"x",
                              {8, 8},
                              4,
                              meshFrom({2, 4}, 0),
                              meshFrom({2, 4}, 8),
                              layout({Sbp::broadcast(), Sbp::broadcast()}),
                              layout({Sbp::split(0), Sbp::broadcast()})};
  bound = crossMeshLowerBound(twoHolders, cluster);
  CHECK(bound == Approx(total / 2 / 10e9));
  CrossMeshSchedule unbalanced = planCrossMesh(
      twoHolders, cluster, CrossMeshMode::Broadcast, CrossMeshBalancing::None);
  CrossMeshSchedule balanced =
      planCrossMesh(twoHolders, cluster, CrossMeshMode::Broadcast,
                    CrossMeshBalancing::ByBytes);
  CHECK(unbalanced.hostSent[0] == total);
  CHECK(unbalanced.seconds == Approx(2 * bound));
  CHECK(balanced.hostSent[0] == total / 2);
  CHECK(balanced.hostSent[1] == total / 2);
  CHECK(balanced.seconds == Approx(bound));

  // A replicated destination over two hosts: the tile goes to each host
  // once; a chain through them makes the first forward it.
  CrossMeshProblem replicate{"x",
                             {8, 8},
                             4,
                             meshFrom({4}, 0),
                             meshFrom({2, 4}, 4),
                             layout({Sbp::split(0)}),
                             layout({Sbp::broadcast(), Sbp::broadcast()})};
  bound = crossMeshLowerBound(replicate, cluster);
  CrossMeshSchedule chained =
      planCrossMesh(replicate, cluster, CrossMeshMode::Broadcast,
                    CrossMeshBalancing::ByBytes);
  CHECK(chained.hostReceived[1] == total);
  CHECK(chained.hostReceived[2] == total);
  CHECK(chained.seconds >= bound);
  CHECK(chained.seconds <= planCrossMesh(replicate, cluster,
                                         CrossMeshMode::SendRecv,
                                         CrossMeshBalancing::ByBytes)
                               .seconds);
}

TEST_CASE("cross-mesh problems that cannot be planned", "[cross-mesh]") {
  Cluster cluster = hosts(2);
  CrossMeshProblem problem{"h.0.out",
                           {8, 8},
                           4,
                           meshFrom({4}, 0),
                           meshFrom({4}, 4),
                           layout({Sbp::split(0)}),
                           layout({Sbp::split(1)})};
  CHECK_FALSE(checkCrossMesh(problem, cluster));
  auto error = [&](auto &&edit) {
    CrossMeshProblem broken = problem;
    edit(broken);
    std::optional<std::string> message = checkCrossMesh(broken, cluster);
    REQUIRE(message);
    CHECK(message->find('\n') == std::string::npos);
    return *message;
  };
  CHECK(error([](CrossMeshProblem &p) { p.destination = meshFrom({4}, 2); }) ==
        "moving 'h.0.out' from mesh 4 on devices 0..3 to mesh 4 on devices "
        "2..5: the meshes overlap at device 2");
  CHECK(error([](CrossMeshProblem &p) { p.destination = meshFrom({4}, 6); })
            .find("the destination device 8 is out of range: the cluster has "
                  "8 devices") != std::string::npos);
  CHECK(error([](CrossMeshProblem &p) {
          p.sourceLayout = layout({Sbp::split(2)});
        }).find("the source layout [S(2)]: split axis 2 is out of range") !=
        std::string::npos);
  CHECK(error([](CrossMeshProblem &p) {
          p.sourceLayout = layout({Sbp::partial()});
        }).find("holds partial values; reduce them before the move") !=
        std::string::npos);
  CHECK(error([](CrossMeshProblem &p) {
          p.source.devices.pop_back();
        }).find("the source mesh 4 has 4 positions but lists 3 devices") !=
        std::string::npos);
}

TEST_CASE("cross-mesh balancing by the order of transfers", "[cross-mesh]") {
  Cluster cluster = hosts(4);
  // Columns on hosts 0 and 1, rows wanted on hosts 2 and 3: four quarters,
  // each card sending or taking two of them. In row-major order host 0's
  // second quarter waits for host 2's card to take host 1's first, while
  // host 3's idles: three quarter-times. On the timeline the pairs of
  // cards swap partners after one quarter: two, the bound.
  CrossMeshProblem quarters{"x",
                            {8, 8},
                            4,
                            meshFrom({2, 4}, 0),
                            meshFrom({2, 4}, 8),
                            layout({Sbp::split(1), Sbp::broadcast()}),
                            layout({Sbp::split(0), Sbp::broadcast()})};
  double quarter = 4 * 4 * 4 / 10e9;
  double bound = crossMeshLowerBound(quarters, cluster);
  CHECK(bound == Approx(2 * quarter));
  for (CrossMeshMode mode :
       {CrossMeshMode::SendRecvAllGather, CrossMeshMode::Broadcast}) {
    CAPTURE(toString(mode));
    CrossMeshSchedule inRows =
        planCrossMesh(quarters, cluster, mode, CrossMeshBalancing::None);
    CrossMeshSchedule ordered =
        planCrossMesh(quarters, cluster, mode, CrossMeshBalancing::ByOrder);
    // The same bytes on every card; only the waiting differs.
    CHECK(inRows.hostSent == ordered.hostSent);
    CHECK(inRows.busiestSeconds == Approx(bound));
    CHECK(inRows.seconds == Approx(3 * quarter));
    CHECK(ordered.seconds == Approx(bound));
    CHECK(scheduleFault(quarters, ordered).empty());
  }

  // Every mode and balancing moves every tile, on meshes of one host, two
  // and three, never faster than the busiest card and never faster than
  // the bound.
  Cluster five = hosts(5);
  std::vector<std::pair<DeviceMesh, DeviceMesh>> meshes{
      {meshFrom({1, 2}, 0), meshFrom({1, 2}, 2)},
      {meshFrom({1, 4}, 0), meshFrom({2, 4}, 4)},
      {meshFrom({2, 4}, 0), meshFrom({2, 4}, 8)},
      {meshFrom({2, 2}, 2), meshFrom({3, 2}, 10)}};
  std::vector<std::pair<NdSbp, NdSbp>> layouts{
      {layout({Sbp::split(0), Sbp::broadcast()}),
       layout({Sbp::broadcast(), Sbp::split(0)})},
      {layout({Sbp::split(0), Sbp::split(1)}),
       layout({Sbp::split(1), Sbp::split(0)})},
      {layout({Sbp::broadcast(), Sbp::broadcast()}),
       layout({Sbp::split(0), Sbp::split(1)})},
      {layout({Sbp::split(1), Sbp::broadcast()}),
       layout({Sbp::broadcast(), Sbp::broadcast()})}};
  for (const auto &[source, destination] : meshes)
    for (const auto &[from, to] : layouts) {
      CrossMeshProblem problem{"x",         {12, 8, 6}, 4, source,
                               destination, from,       to};
      REQUIRE_FALSE(checkCrossMesh(problem, five));
      double lower = crossMeshLowerBound(problem, five);
      for (CrossMeshMode mode : kCrossMeshModes) {
        // By order is never slower than the others (it tries their
        // orders too), and faster somewhere below.
        double ordered =
            planCrossMesh(problem, five, mode, CrossMeshBalancing::ByOrder)
                .seconds;
        for (CrossMeshBalancing other :
             {CrossMeshBalancing::None, CrossMeshBalancing::ByBytes})
          CHECK(ordered <= planCrossMesh(problem, five, mode, other).seconds);
        for (CrossMeshBalancing balancing : kCrossMeshBalancings) {
          CAPTURE(formatMeshShape(source.shape), toString(from), toString(to),
                  toString(mode), toString(balancing));
          CrossMeshSchedule schedule =
              planCrossMesh(problem, five, mode, balancing);
          CHECK(scheduleFault(problem, schedule).empty());
          CHECK(schedule.seconds >= schedule.busiestSeconds);
          CHECK(schedule.busiestSeconds >= lower * (1 - 1e-12));
          // Deterministic: planned again, the same transfers.
          CrossMeshSchedule again =
              planCrossMesh(problem, five, mode, balancing);
          REQUIRE(again.transfers.size() == schedule.transfers.size());
          for (size_t i = 0; i < again.transfers.size(); ++i) {
            CHECK(again.transfers[i].tile == schedule.transfers[i].tile);
            CHECK(again.transfers[i].sender == schedule.transfers[i].sender);
            CHECK(again.transfers[i].receivers ==
                  schedule.transfers[i].receivers);
          }
          CHECK(again.seconds == schedule.seconds);
        }
      }
    }

  // Source and destination on one host, the source replicated: each of
  // the host's holders serves one receiver, at once.
  CrossMeshProblem local{"x",
                         {8, 8},
                         4,
                         meshFrom({2}, 0),
                         meshFrom({2}, 2),
                         layout({Sbp::broadcast()}),
                         layout({Sbp::broadcast()})};
  CrossMeshSchedule served = planCrossMesh(local, five, CrossMeshMode::SendRecv,
                                           CrossMeshBalancing::ByOrder);
  REQUIRE(served.transfers.size() == 2);
  CHECK(served.transfers[0].sender != served.transfers[1].sender);
  CHECK(served.seconds == Approx(8 * 8 * 4 / 100e9));
}

TEST_CASE("balancing by order narrows its window on tiles of many receivers",
          "[cross-mesh]") {
  // 256 tiles, each wanted by all 256 devices of 64 hosts: 256 x 256 x 256
  // receivers placed with the full window, past the planner's bound of
  // 2^22, so the window narrows. The schedule still moves every tile,
  // never slower than the orders it tries besides its own.
  Cluster cluster = hosts(128);
  CrossMeshProblem replicate{"x",
                             {256, 16},
                             4,
                             meshFrom({64, 4}, 0),
                             meshFrom({64, 4}, 256),
                             layout({Sbp::split(0), Sbp::split(1)}),
                             layout({Sbp::broadcast(), Sbp::broadcast()})};
  REQUIRE_FALSE(checkCrossMesh(replicate, cluster));
  REQUIRE(crossMeshTiles(replicate).size() == 256);
  double lower = crossMeshLowerBound(replicate, cluster);
  for (CrossMeshMode mode :
       {CrossMeshMode::SendRecvAllGather, CrossMeshMode::Broadcast}) {
    CAPTURE(toString(mode));
    CrossMeshSchedule ordered =
        planCrossMesh(replicate, cluster, mode, CrossMeshBalancing::ByOrder);
    CHECK(scheduleFault(replicate, ordered).empty());
    CHECK(ordered.busiestSeconds >= lower * (1 - 1e-12));
    for (CrossMeshBalancing other :
         {CrossMeshBalancing::None, CrossMeshBalancing::ByBytes})
      CHECK(ordered.seconds <=
            planCrossMesh(replicate, cluster, mode, other).seconds);
  }
}

TEST_CASE("a move shifted by whole nodes is planned as its shift",
          "[cross-mesh]") {
  // 2x4 on hosts 0-1 to 2x4 on hosts 2-3, and the same 3 hosts on: the
  // keys agree and the second plan is the first one's shift, in every mode
  // and balancing, ties included.
  Cluster cluster = hosts(8);
  CrossMeshProblem first{"x",
                         {16, 24},
                         4,
                         meshFrom({2, 4}, 0),
                         meshFrom({2, 4}, 8),
                         layout({Sbp::split(0), Sbp::split(1)}),
                         layout({Sbp::split(1), Sbp::broadcast()})};
  CrossMeshProblem moved = first;
  moved.source = meshFrom({2, 4}, 12);
  moved.destination = meshFrom({2, 4}, 20);
  MeshPlacement at = placeCrossMesh(first, cluster),
                there = placeCrossMesh(moved, cluster);
  CHECK(at.key == there.key);
  CHECK(at.deviceShift == 0);
  CHECK(there.deviceShift == 12);
  CHECK(there.nodeShift == 3);
  for (CrossMeshMode mode : kCrossMeshModes)
    for (CrossMeshBalancing balancing : kCrossMeshBalancings) {
      INFO(toString(mode) << " " << toString(balancing));
      CrossMeshSchedule shifted =
          shiftSchedule(planCrossMesh(first, cluster, mode, balancing), 12, 3);
      CrossMeshSchedule planned =
          planCrossMesh(moved, cluster, mode, balancing);
      CHECK(scheduleFault(moved, shifted).empty());
      CHECK(shifted.seconds == planned.seconds);
      CHECK(shifted.busiestSeconds == planned.busiestSeconds);
      CHECK(shifted.hostSent == planned.hostSent);
      CHECK(shifted.hostReceived == planned.hostReceived);
      CHECK(shifted.deviceSent == planned.deviceSent);
      CHECK(shifted.deviceReceived == planned.deviceReceived);
      REQUIRE(shifted.transfers.size() == planned.transfers.size());
      for (size_t i = 0; i < planned.transfers.size(); ++i) {
        CHECK(shifted.transfers[i].tile == planned.transfers[i].tile);
        CHECK(shifted.transfers[i].sender == planned.transfers[i].sender);
        CHECK(shifted.transfers[i].receivers == planned.transfers[i].receivers);
      }
    }

  // Not shifts of each other: devices within the meshes in another order,
  // a host pair now split across regions, or a link override anywhere
  // (the key then names the devices themselves).
  CrossMeshProblem reordered = moved;
  std::swap(reordered.destination.devices[0], reordered.destination.devices[1]);
  CHECK(placeCrossMesh(reordered, cluster).key != at.key);
  Cluster regions = cluster;
  regions.nodes[5].region = "west";
  CHECK(placeCrossMesh(moved, regions).key != at.key);
  CHECK(placeCrossMesh(first, regions).key == at.key);
  Cluster overridden = cluster;
  overridden.overrides.push_back({30, 31, {1e9, 0}});
  MeshPlacement absolute = placeCrossMesh(moved, overridden);
  CHECK(absolute.deviceShift == 0);
  CHECK(absolute.key != placeCrossMesh(first, overridden).key);
  Cluster uneven = cluster;
  uneven.nodes[7].devices = 2;
  CHECK(placeCrossMesh(moved, uneven).deviceShift == 0);
}
