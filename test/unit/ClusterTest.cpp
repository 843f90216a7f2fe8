//===- ClusterTest.cpp - cluster files, presets and device meshes ---------===//

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Cost/Presets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

using namespace parplan::cost;

namespace {

Cluster mustPreset(const std::string &name) {
  std::optional<Cluster> cluster = preset(name);
  REQUIRE(cluster);
  return *cluster;
}

Cluster mustParse(const std::string &text, const std::string &path) {
  std::string error;
  std::optional<Cluster> cluster = parseCluster(text, path, error);
  INFO(error);
  REQUIRE(cluster);
  CHECK(error.empty());
  return *cluster;
}

/// The error of parsing `text` as file `path`.
std::string parseError(const std::string &text,
                       const std::string &path = "c.yaml") {
  std::string error;
  std::optional<Cluster> cluster = parseCluster(text, path, error);
  CHECK_FALSE(cluster);
  return error;
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

void checkSameLink(const Link &a, const Link &b) {
  CHECK(near(a.bandwidth, b.bandwidth));
  CHECK(near(a.latency, b.latency));
}

void checkSameCluster(const Cluster &a, const Cluster &b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  CHECK(a.source == b.source);
  REQUIRE(a.deviceTypes.size() == b.deviceTypes.size());
  for (size_t i = 0; i < a.deviceTypes.size(); ++i) {
    const DeviceType &x = a.deviceTypes[i], &y = b.deviceTypes[i];
    CHECK(x.name == y.name);
    CHECK(near(x.memoryBytes, y.memoryBytes));
    CHECK(near(x.memoryBandwidth, y.memoryBandwidth));
    CHECK(x.computeEfficiency == y.computeEfficiency);
    CHECK(x.kernelOverhead == Approx(y.kernelOverhead));
    REQUIRE(x.peakFlops.size() == y.peakFlops.size());
    for (const auto &[dtype, flops] : x.peakFlops)
      CHECK(near(flops, y.peakFlops.at(dtype)));
  }
  REQUIRE(a.nodes.size() == b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    CHECK(a.nodes[i].name == b.nodes[i].name);
    CHECK(a.nodes[i].deviceType == b.nodes[i].deviceType);
    CHECK(a.nodes[i].devices == b.nodes[i].devices);
    CHECK(a.nodes[i].region == b.nodes[i].region);
  }
  // Links of unused levels may be left out of a file.
  if (b.intraNode.bandwidth > 0)
    checkSameLink(a.intraNode, b.intraNode);
  if (b.interNode.bandwidth > 0)
    checkSameLink(a.interNode, b.interNode);
  if (b.interRegion.bandwidth > 0)
    checkSameLink(a.interRegion, b.interRegion);
  REQUIRE(a.overrides.size() == b.overrides.size());
  for (size_t i = 0; i < a.overrides.size(); ++i) {
    CHECK(a.overrides[i].deviceA == b.overrides[i].deviceA);
    CHECK(a.overrides[i].deviceB == b.overrides[i].deviceB);
    checkSameLink(a.overrides[i].link, b.overrides[i].link);
  }
  REQUIRE(a.nodeOverrides.size() == b.nodeOverrides.size());
  for (size_t i = 0; i < a.nodeOverrides.size(); ++i) {
    CHECK(a.nodeOverrides[i].nodeA == b.nodeOverrides[i].nodeA);
    CHECK(a.nodeOverrides[i].nodeB == b.nodeOverrides[i].nodeB);
    checkSameLink(a.nodeOverrides[i].link, b.nodeOverrides[i].link);
  }
  REQUIRE(a.regionOverrides.size() == b.regionOverrides.size());
  for (size_t i = 0; i < a.regionOverrides.size(); ++i) {
    CHECK(a.regionOverrides[i].regionA == b.regionOverrides[i].regionA);
    CHECK(a.regionOverrides[i].regionB == b.regionOverrides[i].regionB);
    checkSameLink(a.regionOverrides[i].link, b.regionOverrides[i].link);
  }
}

/// axisLink and axisLevel the slow way: every pair of devices of every
/// group, through Cluster::link and Cluster::level.
std::pair<Link, LinkLevel> walkAxis(const Cluster &cluster,
                                    const DeviceMesh &mesh, int64_t axis) {
  Link slowest{std::numeric_limits<double>::infinity(), 0.0};
  LinkLevel highest = LinkLevel::Local;
  for (const std::vector<int64_t> &group : axisGroups(mesh, axis))
    for (size_t i = 0; i < group.size(); ++i)
      for (size_t j = i + 1; j < group.size(); ++j) {
        Link link = cluster.link(group[i], group[j]);
        slowest.bandwidth = std::min(slowest.bandwidth, link.bandwidth);
        slowest.latency = std::max(slowest.latency, link.latency);
        highest = std::max(highest, cluster.level(group[i], group[j]));
      }
  return {slowest, highest};
}

constexpr double GBps = 1e9;
constexpr double us = 1e-6;
constexpr double ms = 1e-3;

} // namespace

//===----------------------------------------------------------------------===//
// ComputeType and Cluster
//===----------------------------------------------------------------------===//

TEST_CASE("dtype names and widths", "[cluster]") {
  for (ComputeType dtype :
       {ComputeType::F64, ComputeType::F32, ComputeType::TF32,
        ComputeType::BF16, ComputeType::F16, ComputeType::I8})
    CHECK(parseComputeType(toString(dtype)) == dtype);
  CHECK_FALSE(parseComputeType("fp16"));
  CHECK(byteWidth(ComputeType::F64) == 8);
  CHECK(byteWidth(ComputeType::TF32) == 4);
  CHECK(byteWidth(ComputeType::BF16) == 2);
  CHECK(byteWidth(ComputeType::I8) == 1);
  CHECK(std::string(toString(LinkLevel::InterRegion)) == "inter-region");
}

TEST_CASE("cluster device numbering and link lookup", "[cluster]") {
  Cluster cluster;
  cluster.deviceTypes = {{"gpu", {{ComputeType::F32, 1e12}}, 1e9, 1e11}};
  cluster.nodes = {{"a", "gpu", 2, "east"},
                   {"b", "gpu", 3, "east"},
                   {"c", "gpu", 1, "west"}};
  cluster.intraNode = {100, 1};
  cluster.interNode = {10, 2};
  cluster.interRegion = {1, 3};
  cluster.nodeOverrides = {{0, 1, {50, 4}}, {1, 1, {200, 5}}};
  cluster.overrides = {{4, 1, {7, 6}}};
  REQUIRE_FALSE(checkCluster(cluster));
  CHECK(cluster.numDevices() == 6);
  CHECK(cluster.nodeOf(0) == 0);
  CHECK(cluster.nodeOf(2) == 1);
  CHECK(cluster.nodeOf(5) == 2);
  CHECK(cluster.nodeOf(6) == -1);
  CHECK(cluster.firstDevice(2) == 5);
  CHECK(cluster.deviceTypeOf(3).name == "gpu");
  CHECK(cluster.level(3, 3) == LinkLevel::Local);
  CHECK(cluster.level(0, 1) == LinkLevel::IntraNode);
  CHECK(cluster.level(1, 2) == LinkLevel::InterNode);
  CHECK(cluster.level(2, 5) == LinkLevel::InterRegion);
  CHECK(std::isinf(cluster.link(3, 3).bandwidth));
  CHECK(cluster.link(3, 3).latency == 0);
  CHECK(cluster.link(0, 1).bandwidth == 100); // level default
  CHECK(cluster.link(2, 3).bandwidth == 200); // node 1's own link
  CHECK(cluster.link(0, 3).bandwidth == 50);  // node pair 0-1
  CHECK(cluster.link(3, 0).bandwidth == 50);  // either order
  CHECK(cluster.link(1, 4).bandwidth == 7);   // device pair first
  CHECK(cluster.link(4, 1).latency == 6);
  CHECK(cluster.link(0, 5).bandwidth == 1); // inter-region default

  Cluster broken = cluster;
  broken.nodes[1].deviceType = "tpu";
  CHECK(checkCluster(broken) ==
        std::string("node 'b': device type 'tpu' is not defined"));
  broken = cluster;
  broken.overrides[0].deviceB = 6;
  CHECK(checkCluster(broken) ==
        std::string("device link 4-6: device 6 is out of range (the cluster "
                    "has 6 devices)"));
  broken = cluster;
  broken.interRegion.bandwidth = 0;
  CHECK(checkCluster(broken) ==
        std::string("inter-region link: bandwidth must be positive"));
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

TEST_CASE("every preset loads and passes the checks", "[cluster][preset]") {
  REQUIRE(presetNames() == std::vector<std::string>{
                               "dgx-h100", "a100-4node", "dgx-a100",
                               "alpa-p3-8node", "one-gpu-per-node",
                               "aws-p3-5node", "whale-v100-p100",
                               "mixed-a100-v100", "mixed-t4-a100", "hulk-geo"});
  for (const std::string &name : presetNames()) {
    INFO(name);
    Cluster cluster = mustPreset(name);
    CHECK(cluster.name == name);
    CHECK_FALSE(cluster.description.empty());
    CHECK_FALSE(cluster.source.empty());
    CHECK(checkCluster(cluster) == std::nullopt);
    std::string error;
    std::optional<DeviceMesh> mesh =
        makeMesh(cluster, defaultMeshShape(cluster), error);
    INFO(error);
    REQUIRE(mesh);
    CHECK(mesh->size() == cluster.numDevices());
  }
  CHECK_FALSE(preset("dgx-b200"));
}

TEST_CASE("preset sizes and figures", "[cluster][preset]") {
  Cluster dgx = mustPreset("dgx-h100");
  CHECK(dgx.numDevices() == 8);
  CHECK(dgx.nodes.size() == 1);
  CHECK(dgx.deviceTypeOf(7).name == "H100-SXM5-80GB");
  CHECK(dgx.deviceTypeOf(7).peakFlops.at(ComputeType::BF16) == 989.5e12);
  CHECK(dgx.deviceTypeOf(7).memoryBytes == 80e9);
  CHECK(dgx.link(0, 7).bandwidth == 450 * GBps);
  CHECK(defaultMeshShape(dgx) == std::vector<int64_t>{8});

  Cluster a100 = mustPreset("a100-4node");
  CHECK(a100.numDevices() == 32);
  CHECK(a100.nodes.size() == 4);
  CHECK(a100.level(0, 7) == LinkLevel::IntraNode);
  CHECK(a100.link(0, 7).bandwidth == 300 * GBps); // NVLink 3
  CHECK(a100.level(7, 8) == LinkLevel::InterNode);
  CHECK(a100.link(7, 8).bandwidth == 25 * GBps); // HDR 200 Gb/s
  CHECK(a100.link(7, 8).latency == 5 * us);
  CHECK(defaultMeshShape(a100) == std::vector<int64_t>{4, 8});

  Cluster alpa = mustPreset("alpa-p3-8node");
  CHECK(alpa.numDevices() == 64);
  CHECK(alpa.deviceTypeOf(63).memoryBytes == 16e9);
  CHECK(alpa.link(0, 1).bandwidth == 150 * GBps); // NVLink 2
  CHECK(alpa.link(0, 8).bandwidth == 25e9 / 8);   // 25 Gbps

  Cluster single = mustPreset("one-gpu-per-node");
  CHECK(single.numDevices() == 8);
  CHECK(single.nodes.size() == 8);
  CHECK(single.level(0, 1) == LinkLevel::InterNode);
  CHECK(defaultMeshShape(single) == std::vector<int64_t>{8});

  Cluster whale = mustPreset("whale-v100-p100");
  CHECK(whale.numDevices() == 32);
  CHECK(whale.deviceTypeOf(0).name == "V100-SXM2-32GB");
  CHECK(whale.deviceTypeOf(31).name == "P100-PCIe-16GB");
  CHECK(whale.link(0, 1).bandwidth == 150 * GBps);  // V100 node: NVLink
  CHECK(whale.link(16, 17).bandwidth == 16 * GBps); // P100 node: PCIe
  CHECK(whale.level(15, 16) == LinkLevel::InterNode);
}

TEST_CASE("scaled presets: NAMExN is N copies of NAME", "[cluster][preset]") {
  std::optional<Cluster> scaled = preset("dgx-h100x128");
  REQUIRE(scaled);
  CHECK_FALSE(checkCluster(*scaled));
  CHECK(scaled->name == "dgx-h100x128");
  CHECK(scaled->numDevices() == 1024);
  CHECK(scaled->nodes.size() == 128);
  CHECK(scaled->nodes[127].name == "dgx127");
  CHECK(scaled->nodeOf(1023) == 127);
  CHECK(scaled->level(0, 7) == LinkLevel::IntraNode);
  CHECK(scaled->level(7, 8) == LinkLevel::InterNode);
  CHECK(scaled->link(7, 8).bandwidth ==
        preset("dgx-h100")->interNode.bandwidth);
  CHECK(defaultMeshShape(*scaled) == std::vector<int64_t>{128, 8});

  // Node overrides follow their copy: whale's PCIe nodes stay PCIe.
  Cluster whale = *preset("whale-v100-p100");
  std::optional<Cluster> twice = preset("whale-v100-p100x2");
  REQUIRE(twice);
  CHECK_FALSE(checkCluster(*twice));
  REQUIRE(twice->nodeOverrides.size() == 2 * whale.nodeOverrides.size());
  int64_t devices = whale.numDevices();
  for (int64_t a : {0, 17, 30})
    for (int64_t b : {1, 18, 31}) {
      CHECK(twice->link(a + devices, b + devices).bandwidth ==
            whale.link(a, b).bandwidth);
      CHECK(twice->deviceTypeOf(a + devices).name ==
            whale.deviceTypeOf(a).name);
    }
  std::set<std::string> names;
  for (const Node &node : twice->nodes)
    CHECK(names.insert(node.name).second);

  // One copy is the preset under the scaled name.
  CHECK(preset("a100-4nodex1")->numDevices() == 32);

  for (const char *bad : {"dgx-h100x0", "dgx-h100x", "dgx-h100x4097",
                          "dgx-h100x-2", "x4", "no-suchx4", "dgx-h100x4x2"})
    CHECK_FALSE(preset(bad));
}

TEST_CASE("hulk-geo: machines, device mapping and measured latencies",
          "[cluster][preset]") {
  Cluster hulk = mustPreset("hulk-geo");
  REQUIRE(hulk.nodes.size() == 47);
  std::set<std::string> regions;
  for (const Node &node : hulk.nodes)
    regions.insert(node.region);
  CHECK(regions.size() == 12);
  CHECK(regions.count("Neimeng")); // trailing space trimmed
  CHECK(regions.count("New Delhi"));

  // node_feature.csv: 0,Beijing,8.6,152 / 1,Beijing,8,320 / 3,Beijing,7,384
  // 10,Nanjing,6.1,128 / 11,Nanjing,8.6,76 / 18,Quanzhou,7.5,144
  // 44,Rome,8,640
  CHECK(hulk.nodes[0].name == "beijing-0");
  CHECK(hulk.nodes[0].deviceType == "A40");
  CHECK(hulk.nodes[0].devices == 3);
  CHECK(hulk.nodes[1].deviceType == "A100-SXM4-40GB");
  CHECK(hulk.nodes[1].devices == 8);
  CHECK(hulk.nodes[3].deviceType == "V100-SXM2-32GB");
  CHECK(hulk.nodes[3].devices == 12);
  CHECK(hulk.nodes[10].deviceType == "P40");
  CHECK(hulk.nodes[10].devices == 5);
  CHECK(hulk.nodes[11].devices == 1);
  CHECK(hulk.nodes[18].deviceType == "T4");
  CHECK(hulk.nodes[18].devices == 9);
  CHECK(hulk.nodes[44].deviceType == "A100-SXM4-80GB");
  CHECK(hulk.nodes[44].devices == 8);
  CHECK(hulk.nodes[34].name == "new-delhi-34");

  auto device = [&](int64_t node, int64_t index = 0) {
    return hulk.firstDevice(node) + index;
  };
  // edge.txt "0 1 10": Beijing to Beijing, 10 ms, same-city class.
  CHECK(hulk.level(device(0), device(1)) == LinkLevel::InterNode);
  CHECK(hulk.link(device(0), device(1)).latency == 10 * ms);
  CHECK(hulk.link(device(0, 2), device(1, 7)).latency == 10 * ms);
  CHECK(hulk.link(device(0), device(1)).bandwidth == 1.25 * GBps);
  // "0 5 28": Beijing to Neimeng, same country.
  CHECK(hulk.level(device(0), device(5)) == LinkLevel::InterRegion);
  CHECK(hulk.link(device(5), device(0)).latency == 28 * ms);
  CHECK(hulk.link(device(0), device(5)).bandwidth == 125e6);
  // "0 20 89": Beijing to California, the paper's 89.1 ms.
  CHECK(hulk.link(device(0), device(20)).latency == 89 * ms);
  CHECK(hulk.link(device(0), device(20)).bandwidth == 12.5e6);
  // Listed twice, "11 30 214" and "11 30 265": the mean.
  CHECK(hulk.link(device(11), device(30)).latency == Approx(239.5 * ms));
  // "13 14 10" and "14 13 4".
  CHECK(hulk.link(device(13), device(14)).latency == Approx(7 * ms));
  // Within machines: NVLink 3 on A100, NVLink 2 on V100, PCIe 4 on A40,
  // PCIe 3 on P40.
  CHECK(hulk.link(device(1, 0), device(1, 1)).bandwidth == 300 * GBps);
  CHECK(hulk.link(device(3, 0), device(3, 11)).bandwidth == 150 * GBps);
  CHECK(hulk.link(device(0, 0), device(0, 1)).bandwidth == 32 * GBps);
  CHECK(hulk.link(device(10, 0), device(10, 1)).bandwidth == 16 * GBps);
  // No measurement for 0-9 (Beijing, Neimeng): the mean of the measured
  // Beijing-Neimeng pairs.
  Link filled = hulk.link(device(0), device(9));
  CHECK(filled.latency > 24 * ms);
  CHECK(filled.latency < 31 * ms);
  // No Berlin-London pair is measured: the inter-region default.
  CHECK(hulk.link(device(30), device(33)).latency == hulk.interRegion.latency);
  CHECK(hulk.interRegion.bandwidth == 12.5e6);
}

//===----------------------------------------------------------------------===//
// Meshes
//===----------------------------------------------------------------------===//

TEST_CASE("mesh axes of a 4x8 mesh on a100-4node", "[cluster][mesh]") {
  Cluster cluster = mustPreset("a100-4node");
  std::string error;
  std::optional<DeviceMesh> mesh = makeMesh(cluster, {4, 8}, error);
  REQUIRE(mesh);
  CHECK(mesh->size() == 32);
  CHECK(mesh->devices[9] == 9);

  auto groups0 = axisGroups(*mesh, 0);
  REQUIRE(groups0.size() == 8);
  CHECK(groups0[0] == std::vector<int64_t>{0, 8, 16, 24});
  CHECK(groups0[7] == std::vector<int64_t>{7, 15, 23, 31});
  auto groups1 = axisGroups(*mesh, 1);
  REQUIRE(groups1.size() == 4);
  CHECK(groups1[2] == std::vector<int64_t>{16, 17, 18, 19, 20, 21, 22, 23});

  CHECK(axisLevel(cluster, *mesh, 0) == LinkLevel::InterNode);
  CHECK(axisLevel(cluster, *mesh, 1) == LinkLevel::IntraNode);
  CHECK(axisLink(cluster, *mesh, 0).bandwidth == 25 * GBps);
  CHECK(axisLink(cluster, *mesh, 0).latency == 5 * us);
  CHECK(axisLink(cluster, *mesh, 1).bandwidth == 300 * GBps);

  // 8x4: axis 1 groups stay within a node, axis 0 groups cross nodes.
  mesh = makeMesh(cluster, {8, 4}, error);
  REQUIRE(mesh);
  CHECK(axisLevel(cluster, *mesh, 0) == LinkLevel::InterNode);
  CHECK(axisLevel(cluster, *mesh, 1) == LinkLevel::IntraNode);

  // 2x16: each axis-1 group spans two nodes, so it is priced by the NIC.
  mesh = makeMesh(cluster, {2, 16}, error);
  REQUIRE(mesh);
  CHECK(axisLevel(cluster, *mesh, 1) == LinkLevel::InterNode);
  CHECK(axisLink(cluster, *mesh, 1).bandwidth == 25 * GBps);

  // An axis of size 1 crosses nothing.
  mesh = makeMesh(cluster, {1, 8}, error);
  REQUIRE(mesh);
  CHECK(axisLevel(cluster, *mesh, 0) == LinkLevel::Local);
  CHECK(std::isinf(axisLink(cluster, *mesh, 0).bandwidth));
}

TEST_CASE("axisLink takes the slowest pair, overrides included",
          "[cluster][mesh]") {
  Cluster cluster = mustPreset("dgx-h100");
  cluster.overrides.push_back({2, 6, {10 * GBps, 9 * us}});
  std::string error;
  std::optional<DeviceMesh> mesh = makeMesh(cluster, {2, 4}, error);
  REQUIRE(mesh);
  // Axis 0 groups: {0,4}, {1,5}, {2,6}, {3,7}: one is slow.
  CHECK(axisLink(cluster, *mesh, 0).bandwidth == 10 * GBps);
  CHECK(axisLink(cluster, *mesh, 0).latency == 9 * us);
  CHECK(axisLink(cluster, *mesh, 1).bandwidth == 450 * GBps);
  CHECK(axisLevel(cluster, *mesh, 0) == LinkLevel::IntraNode);

  // Hulk: a mesh over the two first Beijing machines.
  Cluster hulk = mustPreset("hulk-geo");
  DeviceMesh pair{{2}, {hulk.firstDevice(0), hulk.firstDevice(1)}};
  REQUIRE_FALSE(checkMesh(hulk, pair));
  CHECK(axisLevel(hulk, pair, 0) == LinkLevel::InterNode);
  CHECK(axisLink(hulk, pair, 0).latency == 10 * ms);
  // Beijing (0) and California (20).
  DeviceMesh far{{2}, {hulk.firstDevice(0), hulk.firstDevice(20)}};
  CHECK(axisLevel(hulk, far, 0) == LinkLevel::InterRegion);
  CHECK(axisLink(hulk, far, 0).latency == 89 * ms);
}

TEST_CASE("splitMesh cuts the first axis into blocks of consecutive devices",
          "[cluster][mesh]") {
  DeviceMesh mesh{{4, 2}, {}};
  for (int64_t i = 0; i < 8; ++i)
    mesh.devices.push_back(10 + i);
  std::string error;
  std::optional<std::vector<DeviceMesh>> halves = splitMesh(mesh, 2, error);
  REQUIRE(halves);
  REQUIRE(halves->size() == 2);
  CHECK((*halves)[0].shape == std::vector<int64_t>{2, 2});
  CHECK((*halves)[0].devices == std::vector<int64_t>{10, 11, 12, 13});
  CHECK((*halves)[1].devices == std::vector<int64_t>{14, 15, 16, 17});
  std::optional<std::vector<DeviceMesh>> rows = splitMesh(mesh, 4, error);
  REQUIRE(rows);
  CHECK(rows->back().shape == std::vector<int64_t>{1, 2});
  CHECK(rows->back().devices == std::vector<int64_t>{16, 17});
  std::optional<std::vector<DeviceMesh>> whole = splitMesh(mesh, 1, error);
  REQUIRE(whole);
  CHECK(whole->front().devices == mesh.devices);

  CHECK_FALSE(splitMesh(mesh, 3, error));
  CHECK(error == "3 parts do not divide the first axis of mesh 4x2 (4) into "
                 "equal blocks");
  CHECK_FALSE(splitMesh(mesh, 0, error));
  CHECK_FALSE(splitMesh(mesh, 8, error));
  CHECK_FALSE(splitMesh(DeviceMesh{{}, {0}}, 1, error));
  CHECK(error == "a mesh without axes has no first axis to split");
}

TEST_CASE("sub-meshes", "[cluster][mesh]") {
  DeviceMesh mesh{{2, 3, 4}, {}};
  for (int64_t i = 0; i < 24; ++i)
    mesh.devices.push_back(100 + i);
  DeviceMesh stage = subMesh(mesh, 0, 1);
  CHECK(stage.shape == std::vector<int64_t>{3, 4});
  REQUIRE(stage.devices.size() == 12);
  CHECK(stage.devices.front() == 112);
  CHECK(stage.devices.back() == 123);
  DeviceMesh middle = subMesh(mesh, 1, 2);
  CHECK(middle.shape == std::vector<int64_t>{2, 4});
  CHECK(middle.devices ==
        std::vector<int64_t>{108, 109, 110, 111, 120, 121, 122, 123});
  DeviceMesh last = subMesh(mesh, 2, 3);
  CHECK(last.shape == std::vector<int64_t>{2, 3});
  CHECK(last.devices == std::vector<int64_t>{103, 107, 111, 115, 119, 123});
  DeviceMesh point = subMesh(subMesh(last, 0, 1), 0, 2);
  CHECK(point.shape.empty());
  CHECK(point.size() == 1);
  CHECK(point.devices == std::vector<int64_t>{123});

  // Pipeline stages of a100-4node: one node each.
  Cluster cluster = mustPreset("a100-4node");
  std::string error;
  std::optional<DeviceMesh> full = makeMesh(cluster, {4, 8}, error);
  REQUIRE(full);
  DeviceMesh node2 = subMesh(*full, 0, 2);
  CHECK_FALSE(checkMesh(cluster, node2));
  CHECK(node2.devices.front() == 16);
  CHECK(axisLevel(cluster, node2, 0) == LinkLevel::IntraNode);
}

TEST_CASE("meshes that do not fit", "[cluster][mesh]") {
  Cluster cluster = mustPreset("dgx-h100");
  std::string error;
  CHECK_FALSE(makeMesh(cluster, {3, 3}, error));
  CHECK(error == "mesh 3x3 needs 9 devices but the cluster has 8");
  CHECK_FALSE(makeMesh(cluster, {2, 0}, error));
  CHECK(error ==
        "mesh axis 1 has size 0; every axis needs at least one device");
  CHECK_FALSE(makeMesh(cluster, {}, error));
  CHECK(error == "the mesh has no axes");
  CHECK_FALSE(makeMesh(cluster, {4, int64_t(1) << 62}, error));
  CHECK(error == "mesh 4x4611686018427387904 is too large");

  // Fewer devices than the cluster: the first ones.
  std::optional<DeviceMesh> small = makeMesh(cluster, {2, 2}, error);
  REQUIRE(small);
  CHECK(small->devices == std::vector<int64_t>{0, 1, 2, 3});

  CHECK(checkMesh(cluster, {{2, 2}, {0, 1, 2, 2}}) ==
        std::string("device 2 appears twice in the mesh"));
  CHECK(checkMesh(cluster, {{2, 2}, {0, 1, 2, 8}}) ==
        std::string("device 8 is out of range: the cluster has 8 devices "
                    "(0..7)"));
  CHECK(checkMesh(cluster, {{2, 2}, {0, 1, -1, 3}}) ==
        std::string("device -1 is out of range: the cluster has 8 devices "
                    "(0..7)"));
  CHECK(checkMesh(cluster, {{2, 2}, {0, 1, 2}}) ==
        std::string("mesh 2x2 has 4 positions but lists 3 devices"));
  CHECK_FALSE(checkMesh(cluster, {{2, 2}, {7, 5, 3, 1}}));
}

TEST_CASE("mesh shapes parse", "[cluster][mesh]") {
  std::string error;
  CHECK(parseMeshShape("2x4", error) == std::vector<int64_t>{2, 4});
  CHECK(parseMeshShape("8", error) == std::vector<int64_t>{8});
  CHECK(parseMeshShape("2x2x2", error) == std::vector<int64_t>{2, 2, 2});
  CHECK(formatMeshShape({2, 2, 2}) == "2x2x2");
  for (const char *bad :
       {"", "x", "2x", "x2", "2*4", "-2x4", "2 x 4", "2x4x"}) {
    INFO(bad);
    CHECK_FALSE(parseMeshShape(bad, error));
    CHECK(error == "invalid mesh shape '" + std::string(bad) +
                       "': expected positive sizes separated by 'x', such "
                       "as 2x4");
  }
  CHECK_FALSE(parseMeshShape("2x0", error));
  CHECK(error == "invalid mesh shape '2x0': axis 1 has size 0");
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

TEST_CASE("the example files load, YAML and JSON alike", "[cluster][file]") {
  std::string error;
  std::string dir = PARPLAN_SOURCE_DIR "/examples/clusters/";
  std::optional<Cluster> yaml = loadCluster(dir + "two-nodes.yaml", error);
  INFO(error);
  REQUIRE(yaml);
  std::optional<Cluster> json = loadCluster(dir + "two-nodes.json", error);
  INFO(error);
  REQUIRE(json);
  checkSameCluster(*yaml, *json);

  CHECK(yaml->name == "two-nodes");
  CHECK(yaml->numDevices() == 8);
  CHECK(yaml->deviceTypeOf(0).name == "A100-SXM4-40GB");
  CHECK(yaml->deviceTypeOf(4).name == "V100-SXM2-32GB");
  CHECK(yaml->deviceTypeOf(0).peakFlops.at(ComputeType::I8) == 624e12);
  CHECK(yaml->deviceTypeOf(4).peakFlops.count(ComputeType::BF16) == 0);
  CHECK(yaml->deviceTypeOf(4).memoryBytes == 32e9);
  CHECK(yaml->link(0, 1).bandwidth == 300 * GBps);
  CHECK(yaml->link(4, 5).bandwidth == 150 * GBps);  // node link
  CHECK(yaml->link(0, 5).bandwidth == 12.5 * GBps); // 100 Gbps
  CHECK(yaml->link(0, 5).latency == 5 * us);
  CHECK(yaml->link(3, 4).bandwidth == 25 * GBps); // device link
  CHECK(yaml->link(3, 4).latency == 3 * us);
  std::optional<DeviceMesh> mesh =
      makeMesh(*yaml, defaultMeshShape(*yaml), error);
  REQUIRE(mesh);
  CHECK(mesh->shape == std::vector<int64_t>{2, 4});
  // Axis 0 pairs (0,4) (1,5) (2,6) (3,7): (3,4) is not among them.
  CHECK(axisLink(*yaml, *mesh, 0).bandwidth == 12.5 * GBps);
  CHECK(axisLink(*yaml, *mesh, 1).bandwidth == 150 * GBps);

  std::optional<Cluster> missing = loadCluster(dir + "missing.yaml", error);
  CHECK_FALSE(missing);
  CHECK(error ==
        "cannot read '" + dir + "missing.yaml': No such file or directory");
}

TEST_CASE("every preset round-trips through YAML and JSON", "[cluster][file]") {
  for (const std::string &name : presetNames()) {
    INFO(name);
    Cluster cluster = mustPreset(name);
    std::string yaml = writeClusterYaml(cluster);
    checkSameCluster(mustParse(yaml, name + ".yaml"), cluster);
    std::string json = writeClusterJson(cluster);
    checkSameCluster(mustParse(json, name + ".json"), cluster);
  }
  Cluster two = mustParse(writeClusterYaml(mustPreset("dgx-h100")), "x.yaml");
  CHECK(two.link(0, 1).bandwidth == 450 * GBps);
}

TEST_CASE("generated geo-distributed clusters", "[cluster][generate]") {
  std::string error;
  for (auto [machines, regions] :
       {std::pair<int64_t, int64_t>{1, 1}, {10, 0}, {97, 9}, {4096, 0}}) {
    INFO(machines << " machines, " << regions << " regions");
    std::optional<Cluster> cluster =
        generateGeoCluster({machines, regions, 3}, error);
    INFO(error);
    REQUIRE(cluster);
    CHECK(checkCluster(*cluster) == std::nullopt);
    CHECK(static_cast<int64_t>(cluster->nodes.size()) == machines);
    std::map<std::string, int64_t> perRegion;
    std::set<std::string> names;
    for (const Node &node : cluster->nodes) {
      ++perRegion[node.region];
      names.insert(node.name);
      CHECK((node.devices == 1 || node.devices == 2 || node.devices == 4 ||
             node.devices == 8));
      CHECK(cluster->findDeviceType(node.deviceType));
    }
    int64_t expectedRegions =
        regions ? regions
                : std::min<int64_t>(64, std::llround(std::sqrt(machines)));
    CHECK(static_cast<int64_t>(perRegion.size()) == expectedRegions);
    CHECK(static_cast<int64_t>(names.size()) == machines);
    CHECK(static_cast<int64_t>(cluster->regionOverrides.size()) ==
          expectedRegions * (expectedRegions - 1) / 2);
    for (const RegionLinkOverride &link : cluster->regionOverrides) {
      CHECK(link.link.latency >= 10e-3);
      CHECK(link.link.latency <= 250e-3);
      CHECK(link.link.bandwidth >= 0.3e9 / 8);
      CHECK(link.link.bandwidth <= 1.2e9 / 8);
    }
    // The same spec, the same cluster; it survives the file format.
    std::optional<Cluster> again =
        generateGeoCluster({machines, regions, 3}, error);
    REQUIRE(again);
    CHECK(writeClusterJson(*again) == writeClusterJson(*cluster));
    if (machines <= 100)
      checkSameCluster(mustParse(writeClusterYaml(*cluster), "g.yaml"),
                       *cluster);
  }
  std::optional<Cluster> other = generateGeoCluster({97, 9, 4}, error);
  REQUIRE(other);
  CHECK(writeClusterJson(*other) !=
        writeClusterJson(*generateGeoCluster({97, 9, 3}, error)));

  CHECK_FALSE(generateGeoCluster({0, 0, 1}, error));
  CHECK(error == "--machines must be from 1 to 65536 (got 0)");
  CHECK_FALSE(generateGeoCluster({4, 5, 1}, error));
  CHECK(error == "--regions (5) must not exceed --machines (4): every region "
                 "has a machine");
  CHECK_FALSE(generateGeoCluster({4, -1, 1}, error));
  CHECK(error == "--regions must be from 1 to 1024 (got -1)");
}

/// A one-device cluster file whose device type 'g' has `line` (a field, or
/// nothing) between its memory bandwidth and its peaks, on line 6.
static std::string clusterWithDeviceField(const std::string &line) {
  return "name: e\n"
         "device_types:\n"
         "  - name: g\n"
         "    memory: 16 GB\n"
         "    memory_bandwidth: 1 TB/s\n" +
         line +
         "    peak_flops: {f32: 10 TFLOP/s}\n"
         "nodes:\n"
         "  - {name: n, device_type: g, devices: 1}\n";
}

TEST_CASE("compute efficiency: 0.7 unless the file says", "[cluster][file]") {
  auto withEfficiency = clusterWithDeviceField;
  Cluster datasheet = mustParse(withEfficiency(""), "e.yaml");
  CHECK(datasheet.deviceTypes[0].computeEfficiency == 0.7);
  // The writer leaves the default out, and writes any other value.
  CHECK(writeClusterYaml(datasheet).find("compute_efficiency") ==
        std::string::npos);
  Cluster measured =
      mustParse(withEfficiency("    compute_efficiency: 1\n"), "e.yaml");
  CHECK(measured.deviceTypes[0].computeEfficiency == 1.0);
  checkSameCluster(mustParse(writeClusterYaml(measured), "e.yaml"), measured);
  checkSameCluster(mustParse(writeClusterJson(measured), "e.json"), measured);
  CHECK(mustParse(withEfficiency("    compute_efficiency: 0.85\n"), "e.yaml")
            .deviceTypes[0]
            .computeEfficiency == 0.85);
  CHECK(parseError(withEfficiency("    compute_efficiency: 0\n")) ==
        "c.yaml:6:25: device type 'g': compute_efficiency must be a number "
        "in (0, 1], not '0'");
  CHECK(parseError(withEfficiency("    compute_efficiency: 1.5\n")) ==
        "c.yaml:6:25: device type 'g': compute_efficiency must be a number "
        "in (0, 1], not '1.5'");
  CHECK(parseError(withEfficiency("    compute_efficiency: 70%\n")) ==
        "c.yaml:6:25: device type 'g': compute_efficiency must be a number "
        "in (0, 1], not '70%'");
}

TEST_CASE("kernel overhead: 0 unless the file says", "[cluster][file]") {
  auto withOverhead = clusterWithDeviceField;
  Cluster none = mustParse(withOverhead(""), "k.yaml");
  CHECK(none.deviceTypes[0].kernelOverhead == 0);
  CHECK(writeClusterYaml(none).find("kernel_overhead") == std::string::npos);
  Cluster measured =
      mustParse(withOverhead("    kernel_overhead: 2.5 us\n"), "k.yaml");
  CHECK(measured.deviceTypes[0].kernelOverhead == Approx(2.5e-6));
  checkSameCluster(mustParse(writeClusterYaml(measured), "k.yaml"), measured);
  checkSameCluster(mustParse(writeClusterJson(measured), "k.json"), measured);
  CHECK(mustParse(withOverhead("    kernel_overhead: 0 s\n"), "k.yaml")
            .deviceTypes[0]
            .kernelOverhead == 0);
  CHECK(parseError(withOverhead("    kernel_overhead: 3 GB\n"))
            .find("device type 'g': kernel_overhead") != std::string::npos);
  CHECK(parseError(withOverhead("    kernel_overhead: fast\n"))
            .find("device type 'g': kernel_overhead") != std::string::npos);
}

TEST_CASE("units", "[cluster][file]") {
  auto withLink = [](const std::string &bandwidth, const std::string &latency) {
    return "name: u\n"
           "device_types:\n"
           "  - {name: g, memory: 16 GiB, memory_bandwidth: 1 TB/s,\n"
           "     peak_flops: {f32: 1.5e1 TFLOPS, i8: 100 TOPS}}\n"
           "nodes:\n"
           "  - {name: n, device_type: g, devices: 2}\n"
           "links:\n"
           "  intra_node: {bandwidth: " +
           bandwidth + ", latency: " + latency + "}\n";
  };
  Cluster cluster = mustParse(withLink("100 Gbps", "1.5 us"), "u.yaml");
  CHECK(cluster.intraNode.bandwidth == 12.5e9);
  CHECK(cluster.intraNode.latency == Approx(1.5e-6));
  CHECK(cluster.deviceTypes[0].memoryBytes == 16.0 * 1024 * 1024 * 1024);
  CHECK(cluster.deviceTypes[0].memoryBandwidth == 1e12);
  CHECK(cluster.deviceTypes[0].peakFlops.at(ComputeType::F32) == 15e12);
  CHECK(cluster.deviceTypes[0].peakFlops.at(ComputeType::I8) == 100e12);
  CHECK(
      mustParse(withLink("800 Mbit/s", "2ms"), "u.yaml").intraNode.bandwidth ==
      100e6);
  CHECK(mustParse(withLink("1 GiB/s", "\"3 \xc2\xb5s\""), "u.yaml")
            .intraNode.latency == Approx(3e-6));
  CHECK(mustParse(withLink("\"64 GB/s\"", "0 s"), "u.yaml").intraNode.latency ==
        0);

  CHECK(parseError(withLink("900 GBps", "1 us")) ==
        "c.yaml:8:31: links: intra_node: bandwidth: unknown bandwidth unit "
        "'GBps' (did you mean 'GB/s'?)");
  CHECK(parseError(withLink("900 furlongs", "1 us")) ==
        "c.yaml:8:31: links: intra_node: bandwidth: unknown bandwidth unit "
        "'furlongs'; expected one of B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, "
        "MiB/s, GiB/s, TiB/s, bit/s, Kbit/s, Mbit/s, Gbit/s, Tbit/s, bps, "
        "Kbps, Mbps, Gbps, Tbps");
  CHECK(parseError(withLink("900", "1 us")) ==
        "c.yaml:8:27: links: intra_node: bandwidth: missing unit after '900', "
        "write e.g. '900 GB/s'");
  CHECK(parseError(withLink("fast", "1 us")) ==
        "c.yaml:8:27: links: intra_node: bandwidth: expected a number and a "
        "unit, such as '900 GB/s', not 'fast'");
  CHECK(parseError(withLink("0 GB/s", "1 us")) ==
        "c.yaml:8:27: links: intra_node: bandwidth must be positive, not "
        "'0 GB/s'");
  CHECK(parseError(withLink("-5 GB/s", "1 us")) ==
        "c.yaml:8:27: links: intra_node: bandwidth must be positive, not "
        "'-5 GB/s'");
  CHECK(parseError(withLink("5 GB/s", "-1 us")) ==
        "c.yaml:8:44: links: intra_node: latency must be non-negative, not "
        "'-1 us'");
  CHECK(parseError(withLink("5 GB/s", "1 GB")) ==
        "c.yaml:8:46: links: intra_node: latency: unknown time unit 'GB'; "
        "expected one of s, ms, us, \xc2\xb5s, ns");
  CHECK(parseError(withLink("[5, GB/s]", "1 us")) ==
        "c.yaml:8:27: links: intra_node: bandwidth must be a bandwidth such "
        "as '900 GB/s', not a list");
}

TEST_CASE("validation errors name the file, line and column",
          "[cluster][file]") {
  const std::string good =
      "name: c\n"                             // 1
      "device_types:\n"                       // 2
      "  - name: A100\n"                      // 3
      "    memory: 40 GB\n"                   // 4
      "    memory_bandwidth: 1555 GB/s\n"     // 5
      "    peak_flops: {bf16: 312 TFLOP/s}\n" // 6
      "nodes:\n"                              // 7
      "  - name: n1\n"                        // 8
      "    device_type: A100\n"               // 9
      "    devices: 8\n"                      // 10
      "  - name: n2\n"                        // 11
      "    device_type: A100\n"               // 12
      "    devices: 8\n"                      // 13
      "links:\n"                              // 14
      "  intra_node: {bandwidth: 300 GB/s, latency: 2 us}\n"
      "  inter_node: {bandwidth: 25 GB/s, latency: 5 us}\n";
  Cluster cluster = mustParse(good, "c.yaml");
  CHECK(cluster.numDevices() == 16);

  auto edit = [&](const std::string &from, const std::string &to) {
    std::string text = good;
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };

  CHECK(parseError(edit("device_type: A100\n    devices: 8\nlinks",
                        "device_type: A800\n    devices: 8\nlinks")) ==
        "c.yaml:12:18: node 'n2': device type 'A800' is not defined (did you "
        "mean 'A100'?)");
  CHECK(parseError(edit("device_type: A100\n    devices: 8\nlinks",
                        "device_type: H20\n    devices: 8\nlinks")) ==
        "c.yaml:12:18: node 'n2': device type 'H20' is not defined");
  CHECK(parseError(edit("{bandwidth: 300 GB/s", "{bandwith: 300 GB/s")) ==
        "c.yaml:15:16: unknown field 'bandwith' (did you mean 'bandwidth'?)");
  CHECK(parseError(edit("    devices: 8\n  - name: n2",
                        "    devices: 8\n    colour: red\n  - name: n2")) ==
        "c.yaml:11:5: unknown field 'colour' in node 'n1'; expected name, "
        "device_type, devices, region, count");
  CHECK(parseError(edit("name: c\n", "name: c\nname: d\n")) ==
        "c.yaml:2:1: duplicate key 'name' (first at 1:1)");
  CHECK(parseError(edit("  - name: n2", "  - name: n1")) ==
        "c.yaml:11:11: node 'n1' is defined twice (first at 8:11)");
  CHECK(parseError(edit("    memory: 40 GB\n", "")) ==
        "c.yaml:3:5: device type 'A100': missing required field 'memory'");
  CHECK(parseError(edit("name: c\n", "")) ==
        "c.yaml:1:1: the cluster file: missing required field 'name'");
  CHECK(parseError(edit("    devices: 8\n  - name: n2",
                        "    devices: 0\n  - name: n2")) ==
        "c.yaml:10:14: node 'n1': devices must be a positive integer, not "
        "'0'");
  CHECK(parseError(edit("    devices: 8\n  - name: n2",
                        "    devices: 7.5\n  - name: n2")) ==
        "c.yaml:10:14: node 'n1': devices must be a positive integer, not "
        "'7.5'");
  CHECK(parseError(edit("{bf16: 312 TFLOP/s}", "{fp16: 312 TFLOP/s}")) ==
        "c.yaml:6:18: unknown field 'fp16' (did you mean 'f16'?)");
  CHECK(parseError(edit("{bf16: 312 TFLOP/s}", "{}")) ==
        "c.yaml:6:17: device type 'A100': peak_flops needs at least one "
        "element type");
  CHECK(parseError(
            edit("  inter_node: {bandwidth: 25 GB/s, latency: 5 us}\n", "")) ==
        "c.yaml:15:3: links: missing 'inter_node', needed because nodes 'n1' "
        "and 'n2' are both in the default region");
  CHECK(parseError(edit("nodes:\n  - name: n1\n    device_type: A100\n    "
                        "devices: 8\n  - name: n2\n    device_type: A100\n   "
                        " devices: 8\n",
                        "nodes: []\n")) ==
        "c.yaml:7:8: nodes: at least one entry is required");
  CHECK(parseError("name: c\ndevice_types: 3\nnodes: []\n") ==
        "c.yaml:2:15: device_types must be a list, not a scalar");
  CHECK(parseError(good + "device_links:\n  - {devices: [0, 16], bandwidth: 1 "
                          "GB/s, latency: 1 us}\n") ==
        "c.yaml:18:19: device link 0: device 16 is out of range: the cluster "
        "has 16 devices (0..15)");
  CHECK(parseError(good + "device_links:\n  - {devices: [3, 3], bandwidth: 1 "
                          "GB/s, latency: 1 us}\n") ==
        "c.yaml:18:15: device link 0: a device link joins two different "
        "devices, not device 3 to itself");
  CHECK(parseError(good + "device_links:\n"
                          "  - {devices: [0, 9], bandwidth: 1 GB/s, latency: "
                          "1 us}\n"
                          "  - {devices: [9, 0], bandwidth: 2 GB/s, latency: "
                          "1 us}\n") ==
        "c.yaml:19:15: device link 1: devices 9 and 0 already have a link (at "
        "18:5)");
  CHECK(parseError(good + "node_links:\n  - {nodes: [n1, n3], bandwidth: 1 "
                          "GB/s, latency: 1 us}\n") ==
        "c.yaml:18:18: node link 0: node 'n3' is not defined (did you mean "
        "'n1'?)");
  CHECK(parseError(good + "node_links:\n  - {nodes: [n1], bandwidth: 1 "
                          "GB/s, latency: 1 us}\n") ==
        "c.yaml:18:13: node link 0: nodes must name two nodes, not 1");
  CHECK(parseError(good + "node_links:\n  - {nodes: [n1, n2], bandwidth: 1 "
                          "GB/s}\n") ==
        "c.yaml:18:5: node link 0: missing required field 'latency'");
}

TEST_CASE("node counts, regions and the links they need", "[cluster][file]") {
  const std::string types = "name: r\n"
                            "device_types:\n"
                            "  - {name: g, memory: 16 GB, memory_bandwidth: "
                            "900 GB/s, peak_flops: {f16: 125 TFLOP/s}}\n";
  // One device on one node: no link is crossed, none is needed.
  Cluster single = mustParse(
      types + "nodes:\n  - {name: solo, device_type: g, devices: 1}\n",
      "r.yaml");
  CHECK(single.numDevices() == 1);

  // count: identical nodes named NAME0, NAME1, ...; regions.
  const std::string nodes =
      "nodes:\n" // 4
      "  - {name: east, device_type: g, devices: 2, count: 2, region: e}\n"
      "  - {name: west, device_type: g, devices: 2, region: w}\n" // 6
      "links:\n"                                                  // 7
      "  intra_node: {bandwidth: 100 GB/s, latency: 1 us}\n"      // 8
      "  inter_node: {bandwidth: 10 GB/s, latency: 5 us}\n";      // 9
  Cluster cluster = mustParse(
      types + nodes + "  inter_region: {bandwidth: 1 Gbit/s, latency: 20 ms}\n",
      "r.yaml");
  REQUIRE(cluster.nodes.size() == 3);
  CHECK(cluster.nodes[0].name == "east0");
  CHECK(cluster.nodes[1].name == "east1");
  CHECK(cluster.nodes[1].region == "e");
  CHECK(cluster.level(0, 2) == LinkLevel::InterNode);
  CHECK(cluster.level(0, 4) == LinkLevel::InterRegion);
  CHECK(cluster.link(3, 5).latency == Approx(20 * ms));
  CHECK(parseError(types + nodes) ==
        "c.yaml:8:3: links: missing 'inter_region', needed because nodes are "
        "in region 'e' and region 'w'");
  CHECK(parseError(types + "nodes:\n  - {name: n, device_type: g, devices: "
                           "2}\n") ==
        "c.yaml:1:1: the cluster file: missing 'links' with 'intra_node', "
        "needed because node 'n' has 2 devices");
  CHECK(parseError(types +
                   "nodes:\n"
                   "  - {name: n, device_type: g, devices: 1, count: "
                   "2}\n"
                   "  - {name: n1, device_type: g, devices: 1}\n"
                   "links:\n"
                   "  inter_node: {bandwidth: 1 GB/s, latency: 1 us}\n") ==
        "c.yaml:6:12: node 'n1' is defined twice (first at 5:12)");
}

TEST_CASE("region links: a world-wide cluster by its region pairs",
          "[cluster][file]") {
  const std::string cluster =
      "name: world\n"
      "device_types:\n"
      "  - {name: g, memory: 16 GB, memory_bandwidth: 900 GB/s, peak_flops: "
      "{f16: 125 TFLOP/s}}\n"
      "nodes:\n" // 4
      "  - {name: us, device_type: g, devices: 1, count: 2, region: "
      "oregon}\n"
      "  - {name: eu, device_type: g, devices: 1, count: 2, region: paris}\n"
      "  - {name: jp, device_type: g, devices: 1, region: tokyo}\n"
      "links:\n" // 8
      "  inter_node: {bandwidth: 10 Gbit/s, latency: 1 ms}\n"
      "region_links:\n" // 10
      "  - {regions: [oregon, paris], bandwidth: 1.2 Gbit/s, latency: 140 "
      "ms}\n"
      "  - {regions: [tokyo, oregon], bandwidth: 0.6 Gbit/s, latency: 100 "
      "ms}\n"
      "  - {regions: [paris, tokyo], bandwidth: 0.3 Gbit/s, latency: 250 "
      "ms}\n"
      "  - {regions: [paris, paris], bandwidth: 25 Gbit/s, latency: 0.5 "
      "ms}\n";
  // Every pair of regions has its link: no inter_region default needed.
  Cluster world = mustParse(cluster, "world.yaml");
  REQUIRE(world.regionOverrides.size() == 4);
  // Devices: us0 0, us1 1, eu0 2, eu1 3, jp0 4.
  CHECK(world.link(0, 1).latency == Approx(1e-3));
  CHECK(world.link(2, 3).latency == Approx(0.5e-3));
  CHECK(world.link(3, 2).bandwidth == Approx(25e9 / 8));
  CHECK(world.link(1, 3).latency == Approx(140e-3));
  CHECK(world.link(4, 0).latency == Approx(100e-3));
  CHECK(world.link(2, 4).bandwidth == Approx(0.3e9 / 8));
  CHECK(world.level(2, 4) == LinkLevel::InterRegion);
  // A node link comes before its regions'.
  Cluster overridden = mustParse(
      cluster + "node_links:\n  - {nodes: [us1, jp], bandwidth: 2 Gbit/s, "
                "latency: 90 ms}\n",
      "world.yaml");
  CHECK(overridden.link(1, 4).latency == Approx(90e-3));
  CHECK(overridden.link(0, 4).latency == Approx(100e-3));
  // The mesh's axis summary finds the slowest region pair.
  std::string error;
  std::optional<DeviceMesh> all = makeMesh(world, {5}, error);
  REQUIRE(all);
  CHECK(axisLink(world, *all, 0).bandwidth == Approx(0.3e9 / 8));
  CHECK(axisLink(world, *all, 0).latency == Approx(250e-3));
  ClusterIndex index(world);
  CHECK(index.hasOverrides());
  CHECK(index.link(2, 4).latency == Approx(250e-3));
  // Written out and read back, the region links stay region links.
  checkSameCluster(mustParse(writeClusterYaml(world), "w.yaml"), world);
  checkSameCluster(mustParse(writeClusterJson(world), "w.json"), world);

  // Without the Tokyo-Paris link, that pair needs the default.
  std::string lessLinks =
      cluster.substr(0, cluster.find("  - {regions: [paris, tokyo]")) +
      "  - {regions: [paris, paris], bandwidth: 25 Gbit/s, "
      "latency: 0.5 ms}\n";
  CHECK(parseError(lessLinks) ==
        "c.yaml:9:3: links: missing 'inter_region', needed because nodes are "
        "in region 'paris' and region 'tokyo', which have no region link");
  // Without Paris's own link, its two nodes need the inter-node default.
  std::string noInterNode = cluster;
  noInterNode.replace(noInterNode.find("  inter_node"),
                      noInterNode.find("region_links") -
                          noInterNode.find("  inter_node"),
                      "  intra_node: {bandwidth: 1 GB/s, latency: 1 us}\n");
  CHECK(parseError(noInterNode) ==
        "c.yaml:9:3: links: missing 'inter_node', needed because nodes 'us0' "
        "and 'us1' are both in region 'oregon', which has no region link of "
        "its own");
  CHECK(parseError(cluster + "  - {regions: [paris, lisbon], bandwidth: 1 "
                             "Gbit/s, latency: 1 ms}\n") ==
        "c.yaml:15:23: region link 4: no node is in region 'lisbon'");
  CHECK(parseError(cluster + "  - {regions: [paris, oregn], bandwidth: 1 "
                             "Gbit/s, latency: 1 ms}\n") ==
        "c.yaml:15:23: region link 4: no node is in region 'oregn' (did you "
        "mean 'oregon'?)");
  CHECK(parseError(cluster + "  - {regions: [paris, oregon], bandwidth: 1 "
                             "Gbit/s, latency: 1 ms}\n") ==
        "c.yaml:15:15: region link 4: regions 'paris' and 'oregon' already "
        "have a link (at 11:5)");
  CHECK(parseError(cluster + "  - {regions: [paris], bandwidth: 1 "
                             "Gbit/s, latency: 1 ms}\n") ==
        "c.yaml:15:15: region link 4: regions must name two regions (the same "
        "one twice for the links between its nodes), not 1");
  // checkCluster's net: a region override naming no node's region.
  Cluster stray = world;
  stray.regionOverrides.push_back({"oregon", "mars", {1e9, 0.1}});
  REQUIRE(checkCluster(stray));
  CHECK(*checkCluster(stray) ==
        "region link 'oregon'-'mars': no node is in region 'mars'");
}

TEST_CASE("syntax errors and strict JSON", "[cluster][file]") {
  CHECK(parseError("name: [a, b\n") ==
        "c.yaml:1:12: invalid YAML: could not find closing ]");
  CHECK(parseError("name: c\n bad: 2\n") ==
        "c.yaml:2:5: invalid YAML: unexpected token; expected Key or Block "
        "End");
  CHECK(parseError("") == "c.yaml:1:1: empty cluster file");
  CHECK(parseError("# nothing\n") == "c.yaml:1:1: empty cluster file");
  CHECK(parseError("- a\n- b\n") ==
        "c.yaml:1:1: the cluster file must be a mapping, not a list");
  CHECK(parseError("name: c\n---\nname: d\n") ==
        "c.yaml:3:1: a cluster file holds one YAML document");
  CHECK(parseError("name: &x c\ndescription: *x\n") ==
        "c.yaml:2:14: YAML aliases are not supported");
  // JSON is read as YAML, but a .json file must be strict JSON.
  CHECK(parseError("{\"name\": \"c\",}", "c.json") ==
        "c.json:1:14: invalid JSON: expected object key");
  CHECK(parseError("{\n  \"name\": \"c\",\n  \"nodes\": [}\n", "c.json") ==
        "c.json:3:13: invalid JSON: invalid JSON value");
  CHECK(parseError("{\"name\": \"c\", \"nodes\": []}", "c.json") ==
        "c.json:1:1: the cluster file: missing required field 'device_types'");
  CHECK(parseError("{\"name\": \"c\", \"name\": \"d\"}", "c.json") ==
        "c.json:1:15: duplicate key 'name' (first at 1:2)");
  // Found by the cluster file fuzz target (test/fuzz/cluster-file): a
  // byte that is not UTF-8 was read in YAML and written out as JSON that
  // does not read back; a key with a line break broke the error's line.
  CHECK(parseError("name: c\ndescription: \"caf\xe9\"\n") ==
        "c.yaml:2:18: invalid UTF-8 sequence");
  CHECK(parseError("{a\n\nn}")
            .find("c.yaml:1:2: unknown field 'a\\nn' in the cluster file") ==
        0);
}

TEST_CASE("deeply nested JSON is rejected before llvm::json parses it",
          "[cluster][file]") {
  // llvm::json::parse recurses once per level: 50,000 levels overflowed the
  // stack.
  CHECK(parseError(std::string(50000, '['), "c.json") ==
        "c.json:1:65: nesting too deep");
  CHECK(parseError("{\n  \"name\": " + std::string(100000, '{'), "c.json") ==
        "c.json:2:74: nesting too deep");
  // The same text as YAML stops in the tree builder.
  CHECK(parseError(std::string(50000, '[')) == "c.yaml:1:67: nesting too deep");
  // Brackets in strings (escaped quotes included) do not count.
  std::string deepString = "\"\\\"" + std::string(1000, '[') + "\"";
  CHECK(parseError("{\"name\": " + deepString + "}", "c.json") ==
        "c.json:1:1: the cluster file: missing required field "
        "'device_types'");
  // 64 levels are fine for the check (the reader then wants a string).
  CHECK(parseError(
            "{\"name\": " + std::string(63, '[') + std::string(63, ']') + "}",
            "c.json") == "c.json:1:10: name must be a string, not a list");
}

TEST_CASE("clusters have at most 2^20 devices and nodes", "[cluster][file]") {
  const std::string types = "name: big\n"
                            "device_types:\n"
                            "  - {name: g, memory: 16 GB, memory_bandwidth: "
                            "900 GB/s, peak_flops: {f16: 125 TFLOP/s}}\n"
                            "nodes:\n";
  const std::string links =
      "links:\n"
      "  intra_node: {bandwidth: 100 GB/s, latency: 1 us}\n"
      "  inter_node: {bandwidth: 10 GB/s, latency: 5 us}\n";
  CHECK(parseError(types +
                   "  - {name: n, device_type: g, devices: 1099511627776}\n" +
                   links) ==
        "c.yaml:5:40: node 'n': devices: 1099511627776 is too many: a "
        "cluster has at most 1048576 devices");
  CHECK(parseError(types +
                   "  - {name: n, device_type: g, devices: 1, count: "
                   "1099511627776}\n" +
                   links) ==
        "c.yaml:5:50: node 'n': count: 1099511627776 is too many: a cluster "
        "has at most 1048576 nodes");
  CHECK(parseError(types +
                   "  - {name: n, device_type: g, devices: 8, count: "
                   "200000}\n" +
                   links) ==
        "c.yaml:5:50: node 'n': count: 200000 nodes of 8 devices is too many: "
        "a cluster has at most 1048576 devices");
  CHECK(parseError(types +
                   "  - {name: n, device_type: g, devices: 1048575}\n"
                   "  - {name: m, device_type: g, devices: 2}\n" +
                   links) ==
        "c.yaml:6:40: node 'm': devices: 2 is too many: a cluster has at most "
        "1048576 devices (the nodes before have 1048575)");

  // The cap itself is fine, and one axis over all of it is quick.
  Cluster cluster = mustParse(
      types + "  - {name: n, device_type: g, devices: 1048576}\n" + links,
      "big.yaml");
  CHECK(cluster.numDevices() == kMaxClusterDevices);
  std::string error;
  std::optional<DeviceMesh> mesh = makeMesh(cluster, {1048576}, error);
  REQUIRE(mesh);
  CHECK(axisLevel(cluster, *mesh, 0) == LinkLevel::IntraNode);
  CHECK(axisLink(cluster, *mesh, 0).bandwidth == 100 * GBps);
}

TEST_CASE("axisLink walks node pairs, not device pairs", "[cluster][mesh]") {
  // 1024 nodes of 8: the pair walk visited 8 x 1024^2 / 2 device pairs on
  // axis 0.
  Cluster cluster = mustParse(
      "name: wide\n"
      "device_types:\n"
      "  - {name: g, memory: 16 GB, memory_bandwidth: 900 GB/s, peak_flops: "
      "{f16: 125 TFLOP/s}}\n"
      "nodes:\n"
      "  - {name: n, device_type: g, devices: 8, count: 1024}\n"
      "links:\n"
      "  intra_node: {bandwidth: 100 GB/s, latency: 1 us}\n"
      "  inter_node: {bandwidth: 10 GB/s, latency: 5 us}\n"
      "device_links:\n"
      "  - {devices: [3, 8003], bandwidth: 1 GB/s, latency: 50 us}\n",
      "wide.yaml");
  std::string error;
  std::optional<DeviceMesh> mesh = makeMesh(cluster, {1024, 8}, error);
  REQUIRE(mesh);
  CHECK(axisLevel(cluster, *mesh, 0) == LinkLevel::InterNode);
  CHECK(axisLink(cluster, *mesh, 0).bandwidth == 1 * GBps);
  CHECK(axisLink(cluster, *mesh, 0).latency == 50 * us);
  CHECK(axisLevel(cluster, *mesh, 1) == LinkLevel::IntraNode);
  CHECK(axisLink(cluster, *mesh, 1).bandwidth == 100 * GBps);
  CHECK(axisLink(cluster, *mesh, 1).latency == 1 * us);
  mesh = makeMesh(cluster, {8192}, error);
  REQUIRE(mesh);
  CHECK(axisLink(cluster, *mesh, 0).bandwidth == 1 * GBps);
}

/// Two regions, nodes of 1 to 3 devices, node and device overrides (one
/// overriding every device pair of a node pair, one a duplicate).
static Cluster regionsAndOverrides() {
  Cluster cluster;
  cluster.deviceTypes = {{"gpu", {{ComputeType::F32, 1e12}}, 1e9, 1e11}};
  cluster.nodes = {{"a", "gpu", 2, "east"}, {"b", "gpu", 3, "east"},
                   {"c", "gpu", 1, "west"}, {"d", "gpu", 2, "west"},
                   {"e", "gpu", 1, "east"}, {"f", "gpu", 3, "north"}};
  cluster.intraNode = {100, 1};
  cluster.interNode = {10, 2};
  cluster.interRegion = {1, 3};
  cluster.nodeOverrides = {
      {0, 1, {50, 4}}, {1, 1, {200, 5}}, {3, 2, {0.5, 7}}, {1, 0, {0.1, 99}}};
  // Devices: a 0-1, b 2-4, c 5, d 6-7, e 8, f 9-11.
  cluster.overrides = {{4, 1, {7, 6}},     {0, 1, {300, 0.5}},
                       {1, 0, {0.2, 80}},  {5, 6, {20, 0.25}},
                       {5, 7, {30, 0.75}}, {10, 2, {0.3, 11}}};
  // east-east replaces the inter-node default for a-e and b-e (a-b has a
  // node link); west-east the inter-region one; north pairs keep it.
  cluster.regionOverrides = {{"west", "east", {0.7, 13}},
                             {"east", "east", {8, 2.5}}};
  return cluster;
}

TEST_CASE("axisLink and axisLevel agree with the pair walk",
          "[cluster][mesh]") {
  Cluster cluster = regionsAndOverrides();
  REQUIRE_FALSE(checkCluster(cluster));
  int64_t numDevices = cluster.numDevices();
  std::vector<std::vector<int64_t>> shapes = {
      {12},      {2, 6}, {6, 2}, {3, 4}, {4, 3}, {2, 2, 3},
      {3, 2, 2}, {2, 3}, {5},    {1, 4}, {4, 1}};
  std::mt19937 random(7);
  for (const std::vector<int64_t> &shape : shapes)
    for (int trial = 0; trial < 40; ++trial) {
      // Distinct devices in a random order (the first trial: in order).
      std::vector<int64_t> devices(numDevices);
      for (int64_t i = 0; i < numDevices; ++i)
        devices[i] = i;
      if (trial > 0)
        std::shuffle(devices.begin(), devices.end(), random);
      DeviceMesh mesh{shape, {}};
      devices.resize(mesh.size());
      mesh.devices = devices;
      REQUIRE_FALSE(checkMesh(cluster, mesh));
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size());
           ++axis) {
        INFO("mesh " << formatMeshShape(shape) << " trial " << trial << " axis "
                     << axis);
        auto [link, level] = walkAxis(cluster, mesh, axis);
        Link fast = axisLink(cluster, mesh, axis);
        CHECK(fast.bandwidth == link.bandwidth);
        CHECK(fast.latency == link.latency);
        CHECK(axisLevel(cluster, mesh, axis) == level);
      }
    }

  // The dgx-h100 override case, both ways.
  Cluster dgx = mustPreset("dgx-h100");
  dgx.overrides.push_back({2, 6, {10 * GBps, 9 * us}});
  std::string error;
  std::optional<DeviceMesh> mesh = makeMesh(dgx, {2, 4}, error);
  REQUIRE(mesh);
  for (int64_t axis = 0; axis < 2; ++axis) {
    auto [link, level] = walkAxis(dgx, *mesh, axis);
    CHECK(axisLink(dgx, *mesh, axis).bandwidth == link.bandwidth);
    CHECK(axisLink(dgx, *mesh, axis).latency == link.latency);
    CHECK(axisLevel(dgx, *mesh, axis) == level);
  }
}

TEST_CASE("ClusterIndex answers as Cluster does", "[cluster]") {
  // The first override naming a pair wins, in either order.
  Cluster cluster = regionsAndOverrides();
  REQUIRE_FALSE(checkCluster(cluster));
  // Past 256 nodes the index answers without its table of node pairs.
  Cluster wide = cluster;
  for (int i = 0; i < 300; ++i)
    wide.nodes.push_back({"w" + std::to_string(i), "gpu", 1 + i % 2,
                          i % 3 == 0   ? "east"
                          : i % 3 == 1 ? "west"
                                       : "south"});
  wide.nodeOverrides.push_back({7, 200, {3, 9}});
  wide.nodeOverrides.push_back({100, 100, {40, 0.5}});
  REQUIRE_FALSE(checkCluster(wide));
  for (const Cluster &tested : {cluster, wide, mustPreset("dgx-h100x4")}) {
    ClusterIndex index(tested);
    INFO(tested.name);
    CHECK(index.numDevices() == tested.numDevices());
    CHECK(index.hasOverrides() ==
          (!tested.overrides.empty() || !tested.nodeOverrides.empty() ||
           !tested.regionOverrides.empty()));
    for (int64_t a = -1; a <= tested.numDevices(); ++a) {
      CHECK(index.nodeOf(a) == tested.nodeOf(a));
      for (int64_t b = -1; b <= tested.numDevices(); ++b) {
        INFO("devices " << a << ", " << b);
        CHECK(index.level(a, b) == tested.level(a, b));
        Link fast = index.link(a, b), reference = tested.link(a, b);
        CHECK(fast.bandwidth == reference.bandwidth);
        CHECK(fast.latency == reference.latency);
      }
    }
  }
}

TEST_CASE("ClusterIndex's least latency is the least over every pair",
          "[cluster]") {
  // With and without device-pair overrides (the per-node shortcut is taken
  // only without), with node and region overrides, on a preset of many
  // nodes too.
  Cluster overridden = regionsAndOverrides();
  Cluster byNode = overridden;
  byNode.overrides.clear();
  Cluster hulk = mustPreset("hulk-geo");
  std::mt19937 random(11);
  for (const Cluster *tested : {&overridden, &byNode, &hulk}) {
    ClusterIndex index(*tested);
    INFO(tested->name);
    int64_t count = tested->numDevices();
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<int64_t> devices(count);
      for (int64_t i = 0; i < count; ++i)
        devices[i] = i;
      std::shuffle(devices.begin(), devices.end(), random);
      // Two meshes of random sizes, disjoint, or sharing a device every
      // fourth trial; a device the cluster does not have now and then.
      int64_t size =
          1 + static_cast<int64_t>(random() % std::min<int64_t>(count / 2, 40));
      std::vector<int64_t> from(devices.begin(), devices.begin() + size);
      std::vector<int64_t> to(devices.begin() + size,
                              devices.begin() + 2 * size);
      if (trial % 4 == 3)
        to.push_back(from.back());
      if (trial % 5 == 4)
        to.push_back(count);
      double least = std::numeric_limits<double>::infinity();
      for (int64_t a : from)
        for (int64_t b : to)
          least = std::min(least, tested->link(a, b).latency);
      CHECK(index.leastLatency(from, to) == least);
    }
  }
}
