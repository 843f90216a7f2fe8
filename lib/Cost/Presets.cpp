//===- Presets.cpp - built-in cluster descriptions ------------------------===//
//
// Figures are peak (datasheet) figures, dense (no structured sparsity), with
// tensor cores where the device has them for that element type. A datasheet
// quoting "X with sparsity" gives X / 2 here. Link bandwidths are per
// direction: NVIDIA quotes NVLink as the total of both directions, so it is
// halved. Latencies are not on datasheets; the values used are typical
// one-hop figures and are marked "assumed".
//
// Inter-node bandwidth is the rate one device gets from its NIC: with a NIC
// per GPU (DGX) that is the NIC's rate; where all GPUs of a node share one
// NIC (p3.16xlarge) it is still the NIC's full rate, and concurrent transfers
// share it (a contention the cost model must account for).
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/Presets.h"

#include "parplan/Cost/ClusterFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>

// hulkNodeFeatures, hulkEdges: data/hulk/{node_feature.csv,edge.txt}.
#include "HulkData.inc"

using namespace parplan::cost;

namespace {

constexpr double TFLOPS = 1e12;
constexpr double GB = 1e9;
constexpr double GBps = 1e9;
constexpr double Gbps = 1e9 / 8;
constexpr double Mbps = 1e6 / 8;
constexpr double us = 1e-6;
constexpr double ms = 1e-3;

//===----------------------------------------------------------------------===//
// Device types
//===----------------------------------------------------------------------===//

// NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column): FP64 Tensor Core
// 67 TFLOPS, FP32 67 TFLOPS, TF32 Tensor Core 989 TFLOPS*, BF16 and FP16
// Tensor Core 1,979 TFLOPS*, INT8 Tensor Core 3,958 TOPS* (* with sparsity,
// halved here), 80 GB HBM3 at 3.35 TB/s, NVLink 900 GB/s.
DeviceType h100Sxm() {
  return {"H100-SXM5-80GB",
          {{ComputeType::F64, 67 * TFLOPS},
           {ComputeType::F32, 67 * TFLOPS},
           {ComputeType::TF32, 494.5 * TFLOPS},
           {ComputeType::BF16, 989.5 * TFLOPS},
           {ComputeType::F16, 989.5 * TFLOPS},
           {ComputeType::I8, 1979 * TFLOPS}},
          80 * GB,
          3350 * GBps};
}

// NVIDIA A100 Tensor Core GPU datasheet (A100 SXM columns): FP64 Tensor Core
// 19.5 TFLOPS, FP32 19.5 TFLOPS, TF32 156 TFLOPS, BF16 and FP16 312 TFLOPS,
// INT8 624 TOPS (dense); 40 GB HBM2 at 1,555 GB/s or 80 GB HBM2e at
// 2,039 GB/s; NVLink 600 GB/s.
DeviceType a100Sxm(bool memory80) {
  return {memory80 ? "A100-SXM4-80GB" : "A100-SXM4-40GB",
          {{ComputeType::F64, 19.5 * TFLOPS},
           {ComputeType::F32, 19.5 * TFLOPS},
           {ComputeType::TF32, 156 * TFLOPS},
           {ComputeType::BF16, 312 * TFLOPS},
           {ComputeType::F16, 312 * TFLOPS},
           {ComputeType::I8, 624 * TFLOPS}},
          memory80 ? 80 * GB : 40 * GB,
          memory80 ? 2039 * GBps : 1555 * GBps};
}

// NVIDIA Tesla V100 datasheet (SXM2 column): double precision 7.8 TFLOPS,
// single precision 15.7 TFLOPS, tensor (FP16) 125 TFLOPS; 16 or 32 GB HBM2 at
// 900 GB/s; NVLink 300 GB/s. No BF16, TF32 or INT8 tensor cores.
DeviceType v100Sxm2(bool memory32) {
  return {memory32 ? "V100-SXM2-32GB" : "V100-SXM2-16GB",
          {{ComputeType::F64, 7.8 * TFLOPS},
           {ComputeType::F32, 15.7 * TFLOPS},
           {ComputeType::F16, 125 * TFLOPS}},
          memory32 ? 32 * GB : 16 * GB,
          900 * GBps};
}

// NVIDIA Tesla P100 PCIe datasheet (16 GB): double precision 4.7 TFLOPS,
// single precision 9.3 TFLOPS, half precision 18.7 TFLOPS; 16 GB CoWoS HBM2
// at 732 GB/s; PCIe Gen3 x16, 32 GB/s (both directions).
DeviceType p100Pcie() {
  return {"P100-PCIe-16GB",
          {{ComputeType::F64, 4.7 * TFLOPS},
           {ComputeType::F32, 9.3 * TFLOPS},
           {ComputeType::F16, 18.7 * TFLOPS}},
          16 * GB,
          732 * GBps};
}

// NVIDIA A40 datasheet: FP32 37.4 TFLOPS, TF32 Tensor Core 74.8 TFLOPS, BF16
// and FP16 Tensor Core 149.7 TFLOPS, INT8 299.3 TOPS (dense); 48 GB GDDR6 at
// 696 GB/s; PCIe Gen4 64 GB/s (both directions).
DeviceType a40() {
  return {"A40",
          {{ComputeType::F32, 37.4 * TFLOPS},
           {ComputeType::TF32, 74.8 * TFLOPS},
           {ComputeType::BF16, 149.7 * TFLOPS},
           {ComputeType::F16, 149.7 * TFLOPS},
           {ComputeType::I8, 299.3 * TFLOPS}},
          48 * GB,
          696 * GBps};
}

// NVIDIA T4 datasheet: single precision 8.1 TFLOPS, mixed precision
// (FP16/FP32) 65 TFLOPS, INT8 130 TOPS; 16 GB GDDR6 at 320 GB/s; PCIe Gen3.
DeviceType t4() {
  return {"T4",
          {{ComputeType::F32, 8.1 * TFLOPS},
           {ComputeType::F16, 65 * TFLOPS},
           {ComputeType::I8, 130 * TFLOPS}},
          16 * GB,
          320 * GBps};
}

// NVIDIA Tesla P40 datasheet: single precision 12 TFLOPS, INT8 47 TOPS;
// 24 GB GDDR5 at 346 GB/s; PCIe Gen3. (Its FP16 rate is 1/64 of FP32 and is
// not on the datasheet, so f16 is not listed.)
DeviceType p40() {
  return {"P40",
          {{ComputeType::F32, 12 * TFLOPS}, {ComputeType::I8, 47 * TFLOPS}},
          24 * GB,
          346 * GBps};
}

//===----------------------------------------------------------------------===//
// Links
//===----------------------------------------------------------------------===//

// NVLink 4 through NVSwitch (H100 datasheet: 900 GB/s, both directions).
const Link nvlink4{450 * GBps, 2 * us};
// NVLink 3 through NVSwitch (A100 datasheet: 600 GB/s, both directions).
const Link nvlink3{300 * GBps, 2 * us};
// NVLink 2 (V100 datasheet: 300 GB/s, both directions; six links of
// 25 GB/s per direction). In a hybrid cube-mesh (DGX-1, p3.16xlarge) a GPU's
// six links reach four peers: this is the per-GPU total, which ring
// collectives over the whole node use.
const Link nvlink2{150 * GBps, 2 * us};
// PCIe Gen3 x16: 32 GB/s both directions (P100 datasheet), nominal.
const Link pcie3{16 * GBps, 5 * us};
// PCIe Gen4 x16: 64 GB/s both directions (A40 datasheet), nominal.
const Link pcie4{32 * GBps, 5 * us};
// InfiniBand through a NIC per GPU; RDMA latency assumed 5 us.
Link infiniband(double gbps) { return {gbps * Gbps, 5 * us}; }
// TCP over a cloud VPC; latency assumed 50 us.
Link ethernet(double gbps) { return {gbps * Gbps, 50 * us}; }

std::vector<Node> uniformNodes(const std::string &prefix, int64_t count,
                               const std::string &deviceType, int64_t devices) {
  std::vector<Node> nodes;
  for (int64_t i = 0; i < count; ++i)
    nodes.push_back({prefix + std::to_string(i), deviceType, devices, ""});
  return nodes;
}

/// A mixed cluster's nodes, one group of one device type after another;
/// the first group's nodes (the faster parts' own node link, an NVLink
/// generation) joined inside by `firstLink` rather than the intra-node
/// default.
struct NodeGroup {
  const char *prefix;
  int64_t nodes;
  const char *deviceType;
  int64_t devices;
};
void addMixedNodes(Cluster &cluster, std::initializer_list<NodeGroup> groups,
                   const Link &firstLink) {
  for (const NodeGroup &group : groups)
    for (Node &node : uniformNodes(group.prefix, group.nodes, group.deviceType,
                                   group.devices))
      cluster.nodes.push_back(std::move(node));
  for (int64_t n = 0; n < groups.begin()->nodes; ++n)
    cluster.nodeOverrides.push_back({n, n, firstLink});
}

//===----------------------------------------------------------------------===//
// The presets
//===----------------------------------------------------------------------===//

// One NVIDIA DGX H100: 8 H100 SXM5 80 GB, all-to-all NVLink 4 through four
// NVSwitch chips, and eight ConnectX-7 400 Gb/s NICs (one per GPU).
// Sources: NVIDIA H100 Tensor Core GPU datasheet; NVIDIA DGX H100 datasheet.
Cluster dgxH100() {
  Cluster cluster;
  cluster.name = "dgx-h100";
  cluster.description = "one DGX H100: 8 H100 SXM5 80GB, NVLink 4 / NVSwitch";
  cluster.source = "NVIDIA H100 Tensor Core GPU datasheet; NVIDIA DGX H100 "
                   "datasheet (NVLink 900 GB/s, 8x ConnectX-7 400 Gb/s)";
  cluster.deviceTypes = {h100Sxm()};
  cluster.nodes = uniformNodes("dgx", 1, "H100-SXM5-80GB", 8);
  cluster.intraNode = nvlink4;
  // Not crossed by a one-node cluster; what a second DGX H100 would get.
  cluster.interNode = infiniband(400);
  return cluster;
}

// Four NVIDIA DGX A100 (320 GB): 8 A100 SXM4 40 GB each, NVLink 3 through
// six NVSwitch chips, eight ConnectX-6 HDR InfiniBand 200 Gb/s NICs per node
// (one per GPU). Sources: NVIDIA A100 Tensor Core GPU datasheet; NVIDIA DGX
// A100 datasheet.
Cluster a100FourNodes() {
  Cluster cluster;
  cluster.name = "a100-4node";
  cluster.description =
      "4 DGX A100: 8 A100 SXM4 40GB per node, NVLink 3, IB HDR 200 Gb/s";
  cluster.source = "NVIDIA A100 Tensor Core GPU datasheet; NVIDIA DGX A100 "
                   "datasheet (NVLink 600 GB/s, 8x ConnectX-6 HDR 200 Gb/s)";
  cluster.deviceTypes = {a100Sxm(false)};
  cluster.nodes = uniformNodes("dgx", 4, "A100-SXM4-40GB", 8);
  cluster.intraNode = nvlink3;
  cluster.interNode = infiniband(200);
  return cluster;
}

// One NVIDIA DGX A100 (640 GB): 8 A100 SXM4 80 GB, NVLink 3 through six
// NVSwitch chips, eight ConnectX-6 HDR InfiniBand 200 Gb/s NICs (one per
// GPU): the node of the published Megatron-LM and MT-NLG runs (Selene).
// Sources: NVIDIA A100 Tensor Core GPU datasheet; NVIDIA DGX A100
// datasheet.
Cluster dgxA100() {
  Cluster cluster;
  cluster.name = "dgx-a100";
  cluster.description = "one DGX A100: 8 A100 SXM4 80GB, NVLink 3 / NVSwitch";
  cluster.source = "NVIDIA A100 Tensor Core GPU datasheet; NVIDIA DGX A100 "
                   "datasheet (NVLink 600 GB/s, 8x ConnectX-6 HDR 200 Gb/s)";
  cluster.deviceTypes = {a100Sxm(true)};
  cluster.nodes = uniformNodes("dgx", 1, "A100-SXM4-80GB", 8);
  cluster.intraNode = nvlink3;
  // Not crossed by a one-node cluster; what a second DGX A100 would get.
  cluster.interNode = infiniband(200);
  return cluster;
}

// Alpa's testbed: 8 AWS p3.16xlarge, each with 8 V100 16 GB joined by NVLink,
// and a 25 Gbps network between nodes ("Alpa: Automating
// Inter- and Intra-Operator Parallelism for Distributed Deep Learning",
// OSDI 2022, section 8; AWS EC2 P3 instance page: p3.16xlarge, 8 V100,
// NVLink peer to peer, 25 Gbps). V100 figures: NVIDIA Tesla V100 datasheet.
Cluster alpaP3() {
  Cluster cluster;
  cluster.name = "alpa-p3-8node";
  cluster.description =
      "Alpa's testbed: 8 p3.16xlarge, 8 V100 16GB per node, NVLink, 25 Gbps";
  cluster.source = "Alpa (OSDI 2022), section 8; AWS EC2 P3 instances "
                   "(p3.16xlarge: 8 V100, NVLink, 25 Gbps); NVIDIA Tesla "
                   "V100 datasheet";
  cluster.deviceTypes = {v100Sxm2(false)};
  cluster.nodes = uniformNodes("p3-", 8, "V100-SXM2-16GB", 8);
  cluster.intraNode = nvlink2;
  cluster.interNode = ethernet(25);
  return cluster;
}

// Eight AWS p3.2xlarge: one V100 16 GB each, up to 10 Gbps between them
// (AWS EC2 P3 instance page). Every collective crosses the network.
Cluster oneGpuPerNode() {
  Cluster cluster;
  cluster.name = "one-gpu-per-node";
  cluster.description = "8 p3.2xlarge: one V100 16GB per node, 10 Gbps";
  cluster.source = "AWS EC2 P3 instances (p3.2xlarge: 1 V100, up to 10 "
                   "Gbps); NVIDIA Tesla V100 datasheet";
  cluster.deviceTypes = {v100Sxm2(false)};
  cluster.nodes = uniformNodes("p3-", 8, "V100-SXM2-16GB", 1);
  // No node has two devices: the intra-node link is never crossed.
  cluster.intraNode = pcie3;
  cluster.interNode = ethernet(10);
  return cluster;
}

// Five AWS p3.8xlarge: 4 V100 16 GB each joined by NVLink, 10 Gbps between
// hosts (AWS EC2 P3 instance page: p3.8xlarge, 4 V100, NVLink peer to peer,
// 10 Gbps). The testbed of the cross-mesh resharding microbenchmarks ("On
// Optimizing the Communication of Model Parallelism", MLSys
// 2023). Within a p3.8xlarge each V100 has NVLinks to the other three.
Cluster awsP3FiveNodes() {
  Cluster cluster;
  cluster.name = "aws-p3-5node";
  cluster.description = "5 p3.8xlarge: 4 V100 16GB per node, NVLink, 10 Gbps";
  cluster.source = "AWS EC2 P3 instances (p3.8xlarge: 4 V100, NVLink, 10 "
                   "Gbps); cross-mesh resharding microbenchmarks (MLSys "
                   "2023); NVIDIA Tesla V100 datasheet";
  cluster.deviceTypes = {v100Sxm2(false)};
  cluster.nodes = uniformNodes("p3-", 5, "V100-SXM2-16GB", 4);
  cluster.intraNode = nvlink2;
  cluster.interNode = ethernet(10);
  return cluster;
}

// A mixed V100/P100 cluster in the manner of Whale ("Whale:
// Efficient Giant Model Training over Heterogeneous GPUs", USENIX ATC 2022),
// which balances work across V100 and P100 servers of a shared production
// cluster. The node counts (two 8-GPU servers of each kind) are this
// preset's choice, not the paper's. V100 servers: SXM2 32 GB with NVLink 2
// (a node link replaces the intra-node default); P100 servers: PCIe 16 GB,
// PCIe Gen3 between GPUs. The 100 Gbps RDMA network is assumed.
// Sources: Whale (ATC 2022); NVIDIA Tesla V100 and Tesla P100 datasheets.
Cluster whale() {
  Cluster cluster;
  cluster.name = "whale-v100-p100";
  cluster.description = "mixed (Whale): 2 nodes of 8 V100 32GB (NVLink) + 2 "
                        "nodes of 8 P100 16GB (PCIe), 100 Gbps";
  cluster.source = "Whale (USENIX ATC 2022): heterogeneous V100/P100 "
                   "training; NVIDIA Tesla V100 and P100 datasheets; node "
                   "counts and the 100 Gbps network are assumed";
  cluster.deviceTypes = {v100Sxm2(true), p100Pcie()};
  addMixedNodes(
      cluster,
      {{"v100-", 2, "V100-SXM2-32GB", 8}, {"p100-", 2, "P100-PCIe-16GB", 8}},
      nvlink2);
  cluster.intraNode = pcie3;
  cluster.interNode = infiniband(100);
  return cluster;
}

// Mixed clusters of the kinds later heterogeneous planners evaluate on
// (Metis, USENIX ATC 2024: stages on groups of one GPU type; HexiScale,
// 2024): a generation apart (A100 with V100) and a data-center part with
// an inference part (A100 with T4). Node counts and networks are this
// preset's assumptions. Sources: NVIDIA A100, V100 and T4 datasheets.
Cluster mixedA100V100() {
  Cluster cluster;
  cluster.name = "mixed-a100-v100";
  cluster.description = "mixed: 2 nodes of 8 A100 40GB (NVLink 3) + 2 nodes "
                        "of 8 V100 32GB (NVLink 2), 200 Gbps";
  cluster.source = "NVIDIA A100 and Tesla V100 datasheets; mixed A100/V100 "
                   "clusters as in Metis (USENIX ATC 2024); node counts and "
                   "the 200 Gbps network are assumed";
  cluster.deviceTypes = {a100Sxm(false), v100Sxm2(true)};
  addMixedNodes(
      cluster,
      {{"a100-", 2, "A100-SXM4-40GB", 8}, {"v100-", 2, "V100-SXM2-32GB", 8}},
      nvlink3);
  cluster.intraNode = nvlink2;
  cluster.interNode = infiniband(200);
  return cluster;
}

Cluster mixedT4A100() {
  Cluster cluster;
  cluster.name = "mixed-t4-a100";
  cluster.description = "mixed: 1 node of 8 A100 40GB (NVLink 3) + 4 nodes "
                        "of 4 T4 16GB (PCIe), 100 Gbps";
  cluster.source = "NVIDIA A100 and T4 datasheets; A100 with T4 as in Metis "
                   "(USENIX ATC 2024); node counts and the 100 Gbps network "
                   "are assumed";
  cluster.deviceTypes = {a100Sxm(false), t4()};
  addMixedNodes(cluster,
                {{"a100-", 1, "A100-SXM4-40GB", 8}, {"t4-", 4, "T4", 4}},
                nvlink3);
  cluster.intraNode = pcie3;
  cluster.interNode = infiniband(100);
  return cluster;
}

//===----------------------------------------------------------------------===//
// Hulk
//===----------------------------------------------------------------------===//

// Hulk ("Hulk: Graph Neural Networks for Optimizing Regionally
// Distributed Computing Systems", arXiv 2302.13741, 2023) published 47
// machines in 12 cities with their GPUs' compute capability and memory, and
// measured latencies between 613 machine pairs (data/hulk/README.md).
//
// Each machine is a node whose region is its city. Device type from the
// compute capability, device count = floor(Memory / device memory), at least
// one:
//   6.1 -> P40 (24 GB; Pascal's data-center part)       64 -> 2, 128 -> 5
//   7.0 -> V100 SXM2 32 GB (NVLink 2)                   384 -> 12
//   7.5 -> T4 (16 GB; Turing's data-center part)        144 -> 9
//   8.0 -> A100 SXM4: 320 GB and 640 GB are exactly the two DGX A100
//          configurations, 8 x 40 GB and 8 x 80 GB: 80 GB parts when
//          Memory >= 640, else 40 GB                     320 -> 8, 640 -> 8
//   8.6 -> A40 (48 GB; Ampere's data-center part)       76 -> 1, 96 -> 2,
//                                                       152 -> 3, 320 -> 6
// Within a machine: NVLink 3 (A100), NVLink 2 (V100), PCIe Gen4 (A40),
// PCIe Gen3 (T4, P40; the intra-node default).
//
// Between machines, latency is Hulk's measurement (self edges dropped, a
// pair listed twice gets the mean). A pair without a measurement whose two
// cities have measured pairs gets the mean of those (city-pair mean); any
// other pair gets its level's default, the median of the measured latencies
// of that level. The data has no bandwidths; this preset assumes one per
// class of link:
//   same city:         10 Gbps  (1.25 GB/s): a data-center Ethernet port
//                      between machines of one city (metro fiber);
//   same country:       1 Gbps  (125 MB/s): dedicated inter-city WAN
//                      capacity of the order cloud providers sell;
//   different countries: 100 Mbps (12.5 MB/s): Gaia (NSDI 2017)
//                      measured 11 EC2 regions and found WAN
//                      bandwidth up to 12x below LAN within a continent and
//                      down to tens of Mbps between distant regions.
// Source: Hulk's data (data/hulk/), the datasheets above, Gaia.

struct HulkMachine {
  int64_t id;
  std::string city;
  std::string capability;
  int64_t memoryGB;
};

const char *countryOf(const std::string &city) {
  static const std::map<std::string, const char *> countries = {
      {"Beijing", "China"},  {"Neimeng", "China"},  {"Nanjing", "China"},
      {"Quanzhou", "China"}, {"California", "USA"}, {"Tokyo", "Japan"},
      {"Berlin", "Germany"}, {"London", "UK"},      {"New Delhi", "India"},
      {"Paris", "France"},   {"Rome", "Italy"},     {"Brasilia", "Brazil"}};
  auto it = countries.find(city);
  return it == countries.end() ? "" : it->second;
}

const Link hulkSameCity{10 * Gbps, 0};
const Link hulkSameCountry{1 * Gbps, 0};
const Link hulkAbroad{100 * Mbps, 0};

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle]
                           : (values[middle - 1] + values[middle]) / 2;
}

std::string nodeName(const HulkMachine &machine) {
  std::string name = llvm::StringRef(machine.city).lower();
  std::replace(name.begin(), name.end(), ' ', '-');
  return name + "-" + std::to_string(machine.id);
}

Cluster hulk() {
  Cluster cluster;
  cluster.name = "hulk-geo";
  cluster.description =
      "Hulk's 47 machines in 12 cities, measured latencies, assumed WAN rates";
  cluster.source =
      "Hulk (arXiv 2302.13741) data: machines and measured latencies "
      "(data/hulk); NVIDIA P40, V100, T4, A100, A40 datasheets; bandwidths "
      "assumed per class: same city 10 Gbps, same country 1 Gbps, "
      "different countries 100 Mbps (after Gaia, NSDI 2017)";

  std::vector<HulkMachine> machines;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(hulkNodeFeatures).split(lines, '\n', -1, false);
  for (llvm::StringRef line : llvm::ArrayRef(lines).drop_front()) {
    llvm::SmallVector<llvm::StringRef> cells;
    line.trim().split(cells, ',');
    if (cells.size() != 4)
      continue;
    HulkMachine machine;
    if (cells[0].trim().getAsInteger(10, machine.id) ||
        cells[3].trim().getAsInteger(10, machine.memoryGB))
      continue;
    machine.city = cells[1].trim().str();
    machine.capability = cells[2].trim().str();
    machines.push_back(machine);
  }

  cluster.deviceTypes = {p40(),          v100Sxm2(true), t4(),
                         a100Sxm(false), a100Sxm(true),  a40()};
  for (const HulkMachine &machine : machines) {
    DeviceType type;
    Link intra = pcie3;
    if (machine.capability == "6.1") {
      type = p40();
    } else if (machine.capability == "7" || machine.capability == "7.0") {
      type = v100Sxm2(true);
      intra = nvlink2;
    } else if (machine.capability == "7.5") {
      type = t4();
    } else if (machine.capability == "8" || machine.capability == "8.0") {
      type = a100Sxm(machine.memoryGB >= 640);
      intra = nvlink3;
    } else {
      type = a40();
      intra = pcie4;
    }
    int64_t devices = std::max<int64_t>(
        1, static_cast<int64_t>(machine.memoryGB * GB / type.memoryBytes));
    cluster.nodes.push_back(
        {nodeName(machine), type.name, devices, machine.city});
    int64_t node = static_cast<int64_t>(cluster.nodes.size()) - 1;
    if (devices > 1 && intra.bandwidth != pcie3.bandwidth)
      cluster.nodeOverrides.push_back({node, node, intra});
  }
  int64_t numNodes = static_cast<int64_t>(cluster.nodes.size());

  // Measured latencies, ms, per unordered machine pair.
  std::map<std::pair<int64_t, int64_t>, std::vector<double>> measured;
  lines.clear();
  llvm::StringRef(hulkEdges).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef> cells;
    line.trim().split(cells, ' ', -1, false);
    int64_t u = 0, v = 0;
    double latency = 0;
    if (cells.size() != 3 || cells[0].getAsInteger(10, u) ||
        cells[1].getAsInteger(10, v) || cells[2].getAsDouble(latency) ||
        u == v || u < 0 || v < 0 || u >= numNodes || v >= numNodes)
      continue;
    measured[std::minmax(u, v)].push_back(latency);
  }

  auto classLink = [&](int64_t a, int64_t b) {
    const std::string &cityA = cluster.nodes[a].region;
    const std::string &cityB = cluster.nodes[b].region;
    if (cityA == cityB)
      return hulkSameCity;
    if (std::string(countryOf(cityA)) == countryOf(cityB))
      return hulkSameCountry;
    return hulkAbroad;
  };
  auto cityPair = [&](int64_t a, int64_t b) {
    return std::minmax(cluster.nodes[a].region, cluster.nodes[b].region);
  };

  std::map<std::pair<int64_t, int64_t>, double> latencyMs;
  std::map<std::pair<std::string, std::string>, std::vector<double>> perCities;
  std::vector<double> sameCity, otherCity;
  for (const auto &[pair, values] : measured) {
    double mean = 0;
    for (double value : values)
      mean += value;
    mean /= static_cast<double>(values.size());
    latencyMs[pair] = mean;
    perCities[cityPair(pair.first, pair.second)].push_back(mean);
    (cluster.nodes[pair.first].region == cluster.nodes[pair.second].region
         ? sameCity
         : otherCity)
        .push_back(mean);
  }
  for (int64_t a = 0; a < numNodes; ++a)
    for (int64_t b = a + 1; b < numNodes; ++b) {
      if (latencyMs.count({a, b}))
        continue;
      auto it = perCities.find(cityPair(a, b));
      if (it == perCities.end())
        continue;
      double mean = 0;
      for (double value : it->second)
        mean += value;
      latencyMs[{a, b}] = mean / static_cast<double>(it->second.size());
    }
  for (const auto &[pair, latency] : latencyMs) {
    Link link = classLink(pair.first, pair.second);
    link.latency = latency * ms;
    cluster.nodeOverrides.push_back({pair.first, pair.second, link});
  }

  cluster.intraNode = pcie3;
  cluster.interNode = {hulkSameCity.bandwidth, median(sameCity) * ms};
  cluster.interRegion = {hulkAbroad.bandwidth, median(otherCity) * ms};
  return cluster;
}

//===----------------------------------------------------------------------===//
// Generated geo-distributed clusters
//===----------------------------------------------------------------------===//

// splitmix64: the draws of a generated cluster are this generator's, so that
// a spec gives the same cluster whatever the standard library.
class Draws {
public:
  explicit Draws(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// In [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// An index drawn with the given weights.
  size_t weighted(llvm::ArrayRef<double> weights) {
    double total = 0;
    for (double weight : weights)
      total += weight;
    double at = uniform() * total;
    for (size_t i = 0; i + 1 < weights.size(); ++i) {
      if (at < weights[i])
        return i;
      at -= weights[i];
    }
    return weights.size() - 1;
  }

private:
  uint64_t state;
};

// The machines a generated cluster draws from, with the share of machines
// of each kind (of the order of Hulk's published mix: V100s and A40s most,
// then A100s, P40s and T4s) and the link within a machine of that kind.
struct GeneratedMachineKind {
  DeviceType (*deviceType)();
  double weight;
  Link intraNode;
};

const GeneratedMachineKind generatedMachineKinds[] = {
    {[] { return v100Sxm2(true); }, 24, nvlink2},
    {[] { return v100Sxm2(false); }, 10, nvlink2},
    {[] { return a100Sxm(false); }, 14, nvlink3},
    {[] { return a100Sxm(true); }, 8, nvlink3},
    {h100Sxm, 6, nvlink4},
    {a40, 16, pcie4},
    {t4, 10, pcie3},
    {p40, 12, pcie3},
};

// Devices per machine: 1, 2, 4 or 8, with these shares.
const int64_t generatedDeviceCounts[] = {1, 2, 4, 8};
const double generatedDeviceCountWeights[] = {25, 20, 25, 30};

// DT-FM's world-wide case: wide-area links of 10 to 250 ms and 0.3 to 1.2
// Gbit/s. Latency grows linearly with the great-circle distance, from
// 10 ms between neighbours to 250 ms between antipodes; bandwidth falls
// with latency in the steps examples/clusters/world-8x8.yaml assumes.
Link generatedWideAreaLink(double angleOverPi) {
  // To a tenth of a millisecond: files that read as written.
  double latencyMs = std::round((10 + 240 * angleOverPi) * 10) / 10;
  double gbitPerS = latencyMs < 40    ? 1.2
                    : latencyMs < 100 ? 0.8
                    : latencyMs < 180 ? 0.5
                                      : 0.3;
  return {gbitPerS * Gbps, latencyMs * ms};
}

// Between the machines of a region: a data-center Ethernet port.
const Link generatedWithinRegion{10 * Gbps, 0.1 * ms};

std::string zeroPadded(int64_t value, int64_t largest) {
  std::string text = std::to_string(value);
  size_t width = std::to_string(largest).size();
  return std::string(width > text.size() ? width - text.size() : 0, '0') + text;
}

struct PresetEntry {
  const char *name;
  Cluster (*build)();
};

const PresetEntry presets[] = {
    {"dgx-h100", dgxH100},
    {"a100-4node", a100FourNodes},
    {"dgx-a100", dgxA100},
    {"alpa-p3-8node", alpaP3},
    {"one-gpu-per-node", oneGpuPerNode},
    {"aws-p3-5node", awsP3FiveNodes},
    {"whale-v100-p100", whale},
    {"mixed-a100-v100", mixedA100V100},
    {"mixed-t4-a100", mixedT4A100},
    {"hulk-geo", hulk},
};

} // namespace

const std::vector<std::string> &parplan::cost::presetNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> names;
    for (const PresetEntry &entry : presets)
      names.push_back(entry.name);
    return names;
  }();
  return names;
}

namespace {

/// `copies` copies of `base`, side by side: device ids, node ids and
/// overrides of copy k are those of the base shifted by k times its size;
/// copies are joined by the base's inter-node link (the inter-region link
/// between nodes of different regions, as within the base).
Cluster scaleCluster(const Cluster &base, int64_t copies,
                     const std::string &name) {
  Cluster cluster = base;
  cluster.name = name;
  cluster.description =
      std::to_string(copies) + " x (" + base.description + ")";
  cluster.nodes.clear();
  cluster.overrides.clear();
  cluster.nodeOverrides.clear();
  int64_t baseNodes = static_cast<int64_t>(base.nodes.size());
  int64_t baseDevices = base.numDevices();
  // Nodes numbered by their index (dgx0, dgx1, ...) go on counting, so that
  // listings group them; other names get the copy as a suffix.
  bool numbered = llvm::all_of(llvm::enumerate(base.nodes), [](auto entry) {
    llvm::StringRef name(entry.value().name);
    std::string number = std::to_string(entry.index());
    return name.size() > number.size() && name.ends_with(number) &&
           !llvm::isDigit(name.drop_back(number.size()).back());
  });
  for (int64_t copy = 0; copy < copies; ++copy) {
    for (auto [index, baseNode] : llvm::enumerate(base.nodes)) {
      Node node = baseNode;
      if (numbered) {
        std::string number = std::to_string(index);
        node.name = node.name.substr(0, node.name.size() - number.size()) +
                    std::to_string(copy * baseNodes + index);
      } else if (copy > 0) {
        node.name += "-" + std::to_string(copy);
      }
      cluster.nodes.push_back(std::move(node));
    }
    for (LinkOverride link : base.overrides) {
      link.deviceA += copy * baseDevices;
      link.deviceB += copy * baseDevices;
      cluster.overrides.push_back(link);
    }
    for (NodeLinkOverride link : base.nodeOverrides) {
      link.nodeA += copy * baseNodes;
      link.nodeB += copy * baseNodes;
      cluster.nodeOverrides.push_back(link);
    }
  }
  return cluster;
}

} // namespace

std::optional<Cluster> parplan::cost::preset(const std::string &name) {
  for (const PresetEntry &entry : presets)
    if (name == entry.name)
      return entry.build();
  // NAMExN: N copies of the preset NAME.
  llvm::StringRef text(name);
  size_t cross = text.rfind('x');
  int64_t copies = 0;
  if (cross == llvm::StringRef::npos ||
      text.drop_front(cross + 1).getAsInteger(10, copies) || copies < 1 ||
      copies > maxPresetCopies)
    return std::nullopt;
  for (const PresetEntry &entry : presets)
    if (text.take_front(cross) == entry.name)
      return scaleCluster(entry.build(), copies, name);
  return std::nullopt;
}

std::optional<Cluster>
parplan::cost::resolveCluster(const std::string &nameOrPath,
                              std::string &error) {
  if (std::optional<Cluster> cluster = preset(nameOrPath))
    return cluster;
  llvm::StringRef argument(nameOrPath);
  bool looksLikePath = argument.contains('/') ||
                       argument.ends_with_insensitive(".yaml") ||
                       argument.ends_with_insensitive(".yml") ||
                       argument.ends_with_insensitive(".json");
  if (looksLikePath || llvm::sys::fs::exists(nameOrPath))
    return loadCluster(nameOrPath, error);
  std::string names;
  for (const std::string &name : presetNames())
    names += (names.empty() ? "" : ", ") + name;
  error = "unknown cluster '" + nameOrPath +
          "': neither a preset nor a file; presets: " + names +
          " (NAMExN for N copies of one, N up to " +
          std::to_string(maxPresetCopies) + ")";
  return std::nullopt;
}

std::optional<Cluster>
parplan::cost::generateGeoCluster(const GeoClusterSpec &spec,
                                  std::string &error) {
  if (spec.machines < 1 || spec.machines > maxGeneratedMachines) {
    error = "--machines must be from 1 to " +
            std::to_string(maxGeneratedMachines) + " (got " +
            std::to_string(spec.machines) + ")";
    return std::nullopt;
  }
  int64_t regions = spec.regions;
  if (regions == 0)
    regions = std::clamp<int64_t>(
        std::llround(std::sqrt(static_cast<double>(spec.machines))), 1, 64);
  if (regions < 1 || regions > maxGeneratedRegions) {
    error = "--regions must be from 1 to " +
            std::to_string(maxGeneratedRegions) + " (got " +
            std::to_string(regions) + ")";
    return std::nullopt;
  }
  if (regions > spec.machines) {
    error = "--regions (" + std::to_string(regions) +
            ") must not exceed --machines (" + std::to_string(spec.machines) +
            "): every region has a machine";
    return std::nullopt;
  }

  Draws draws(spec.seed);
  Cluster cluster;
  cluster.name = "geo-" + std::to_string(spec.machines) + "x" +
                 std::to_string(regions) + "-seed" + std::to_string(spec.seed);
  cluster.description = std::to_string(spec.machines) + " machines in " +
                        std::to_string(regions) +
                        " regions, generated from seed " +
                        std::to_string(spec.seed);
  cluster.source =
      "parplan cluster generate (docs/cluster.md#generated-geo-distributed-"
      "clusters): wide-area links as in DT-FM's world-wide case (NeurIPS "
      "2022), 10 to 250 ms by distance and 0.3 to 1.2 Gbit/s by latency; "
      "10 Gbit/s within a region; the presets' device types and links "
      "within a machine";

  // Regions at points drawn evenly over the inhabited latitudes (40 S to
  // 60 N), each with a weight for its share of the machines.
  constexpr double pi = 3.14159265358979323846;
  std::vector<std::string> regionNames;
  std::vector<double> latitudes, longitudes, weights;
  double south = std::sin(-40 * pi / 180), north = std::sin(60 * pi / 180);
  for (int64_t r = 0; r < regions; ++r) {
    regionNames.push_back("r" + zeroPadded(r, regions - 1));
    latitudes.push_back(std::asin(south + (north - south) * draws.uniform()));
    longitudes.push_back((2 * draws.uniform() - 1) * pi);
    weights.push_back(0.25 + draws.uniform());
  }

  // Each region one machine, the rest by weight (largest remainder, ties to
  // the lower region).
  std::vector<int64_t> machinesOf(regions, 1);
  int64_t rest = spec.machines - regions;
  double totalWeight = 0;
  for (double weight : weights)
    totalWeight += weight;
  std::vector<std::pair<double, int64_t>> remainders;
  int64_t given = 0;
  for (int64_t r = 0; r < regions; ++r) {
    double share = static_cast<double>(rest) * weights[r] / totalWeight;
    int64_t whole = static_cast<int64_t>(std::floor(share));
    machinesOf[r] += whole;
    given += whole;
    remainders.push_back({-(share - static_cast<double>(whole)), r});
  }
  std::sort(remainders.begin(), remainders.end());
  for (int64_t i = 0; i < rest - given; ++i)
    ++machinesOf[remainders[static_cast<size_t>(i)].second];

  std::vector<double> kindWeights;
  for (const GeneratedMachineKind &kind : generatedMachineKinds)
    kindWeights.push_back(kind.weight);
  std::vector<bool> kindUsed(kindWeights.size(), false);
  int64_t machine = 0;
  for (int64_t r = 0; r < regions; ++r)
    for (int64_t i = 0; i < machinesOf[r]; ++i, ++machine) {
      size_t kind = draws.weighted(kindWeights);
      int64_t devices =
          generatedDeviceCounts[draws.weighted(generatedDeviceCountWeights)];
      kindUsed[kind] = true;
      const GeneratedMachineKind &machineKind = generatedMachineKinds[kind];
      cluster.nodes.push_back(
          {regionNames[r] + "-m" + zeroPadded(machine, spec.machines - 1),
           machineKind.deviceType().name, devices, regionNames[r]});
      int64_t node = static_cast<int64_t>(cluster.nodes.size()) - 1;
      if (devices > 1 && machineKind.intraNode.bandwidth != pcie3.bandwidth)
        cluster.nodeOverrides.push_back({node, node, machineKind.intraNode});
    }
  for (size_t kind = 0; kind < kindUsed.size(); ++kind)
    if (kindUsed[kind])
      cluster.deviceTypes.push_back(generatedMachineKinds[kind].deviceType());

  for (int64_t a = 0; a < regions; ++a)
    for (int64_t b = a + 1; b < regions; ++b) {
      // Haversine: the angle between the two points, over pi.
      double dLat = latitudes[b] - latitudes[a];
      double dLon = longitudes[b] - longitudes[a];
      double h = std::sin(dLat / 2) * std::sin(dLat / 2) +
                 std::cos(latitudes[a]) * std::cos(latitudes[b]) *
                     std::sin(dLon / 2) * std::sin(dLon / 2);
      double angle = 2 * std::asin(std::min(1.0, std::sqrt(h)));
      cluster.regionOverrides.push_back(
          {regionNames[a], regionNames[b], generatedWideAreaLink(angle / pi)});
    }

  cluster.intraNode = pcie3;
  cluster.interNode = generatedWithinRegion;
  cluster.interRegion = generatedWideAreaLink(1);
  return cluster;
}
