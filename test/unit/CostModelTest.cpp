//===- CostModelTest.cpp - cost formulas against published oracles --------===//

#include "parplan/Cost/Boxing.h"
#include "parplan/Cost/Collectives.h"
#include "parplan/Cost/Compute.h"
#include "parplan/Cost/Memory.h"

#include <catch2/catch.hpp>

using namespace parplan;
using namespace parplan::cost;

namespace {
const Link nvlink{300e9, 5e-6};
const Link nic{25e9, 10e-6};
} // namespace

TEST_CASE("ring all-reduce sends 2(n-1)/n of the buffer per device") {
  for (int64_t n : {2, 4, 8, 64}) {
    double bytes = 1e9;
    CHECK(bytesSentPerDevice(Collective::AllReduce, n, bytes) ==
          Approx(2.0 * (n - 1) / n * bytes));
    CHECK(collectiveTime(Collective::AllReduce, n, bytes, nvlink) ==
          Approx(2.0 * (n - 1) / n * bytes / 300e9 + 2.0 * (n - 1) * 5e-6));
  }
  CHECK(bytesSentPerDevice(Collective::AllReduce, 1, 1e9) == 0);
  CHECK(collectiveTime(Collective::AllReduce, 1, 1e9, nvlink) == 0);
}

TEST_CASE("all-gather, reduce-scatter, all-to-all, broadcast, send/recv") {
  double n = 8, bytes = 64e6;
  for (Collective c :
       {Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll})
    CHECK(collectiveTime(c, 8, bytes, nic) ==
          Approx((n - 1) / n * bytes / 25e9 + (n - 1) * 10e-6));
  CHECK(collectiveTime(Collective::Broadcast, 8, bytes, nic) ==
        Approx(bytes / 25e9 + 7 * 10e-6));
  CHECK(collectiveTime(Collective::SendRecv, 2, bytes, nic) ==
        Approx(bytes / 25e9 + 10e-6));
  // Tree all-reduce: 2 log2(n) latencies, twice the buffer.
  CHECK(collectiveTime(Collective::AllReduce, 8, bytes, nic, Algorithm::Tree) ==
        Approx(2 * 3 * 10e-6 + 2 * bytes / 25e9));
  // The tree wins on latency for small buffers over many devices.
  CHECK(collectiveTime(Collective::AllReduce, 256, 1024, nic, Algorithm::Tree) <
        collectiveTime(Collective::AllReduce, 256, 1024, nic, Algorithm::Ring));
}

TEST_CASE("hierarchical all-reduce: reduce-scatter, all-reduce of shards, "
          "all-gather") {
  double bytes = 1e9;
  double expected =
      collectiveTime(Collective::ReduceScatter, 8, bytes, nvlink) +
      collectiveTime(Collective::AllReduce, 4, bytes / 8, nic) +
      collectiveTime(Collective::AllGather, 8, bytes, nvlink);
  CHECK(hierarchicalAllReduceTime(8, nvlink, 4, nic, bytes) ==
        Approx(expected));
  // Across 4 nodes of 8, it beats one flat ring on the slow link.
  CHECK(hierarchicalAllReduceTime(8, nvlink, 4, nic, bytes) <
        collectiveTime(Collective::AllReduce, 32, bytes, nic));
}

TEST_CASE("Megatron tensor parallelism: 2 all-reduces of b*s*h per layer "
          "forward") {
  // GPT-3, s = 2048, b = 1, h = 12288, t = 8, fp16.
  double elements = 2048.0 * 1 * 12288;
  double bytesPerAllReduce = 2 * elements;
  double perLayer =
      2 * bytesSentPerDevice(Collective::AllReduce, 8, bytesPerAllReduce);
  CHECK(perLayer == 176160768.0);
}

TEST_CASE("GPT parameter count: 174.6B for GPT-3") {
  double count = gptParameterCount(96, 12288, 51200, 2048);
  CHECK(count == Approx(174.6e9).margin(0.05e9));
  // The closed form is exact: 12 l h^2 + 13 l h + (V + s) h.
  CHECK(gptParameterCount(2, 64, 100, 16) ==
        Approx(12.0 * 2 * 64 * 64 + 13.0 * 2 * 64 + (100 + 16) * 64.0));
}

TEST_CASE("activation memory per layer (arXiv 2205.05198)") {
  CHECK(transformerActivationBytes(2048, 1, 12288, 96, 1, false,
                                   Recompute::None) == 2868903936.0);
  CHECK(transformerActivationBytes(2048, 1, 12288, 96, 8, false,
                                   Recompute::None) == 578813952.0);
  // Sequence parallelism divides everything by t: sbh (34 + 80) / 8.
  CHECK(transformerActivationBytes(2048, 1, 12288, 96, 8, true,
                                   Recompute::None) ==
        Approx(2048.0 * 12288 * 114 / 8));
  // Selective recomputation drops the attention term; full keeps 2sbh.
  CHECK(transformerActivationBytes(2048, 1, 12288, 96, 8, true,
                                   Recompute::Selective) ==
        Approx(2048.0 * 12288 * 34 / 8));
  CHECK(transformerActivationBytes(2048, 1, 12288, 96, 1, false,
                                   Recompute::Full) ==
        Approx(2 * 2048.0 * 12288));
}

TEST_CASE("ZeRO model-state bytes: 4P+12P/N, 2P+14P/N, 16P/N") {
  double p = 1.5e9;
  for (int64_t n : {1, 8, 64}) {
    CHECK(modelState(p, Optimizer::Adam, true, 0, n).total() == Approx(16 * p));
    CHECK(modelState(p, Optimizer::Adam, true, 1, n).total() ==
          Approx(4 * p + 12 * p / n));
    CHECK(modelState(p, Optimizer::Adam, true, 2, n).total() ==
          Approx(2 * p + 14 * p / n));
    CHECK(modelState(p, Optimizer::AdamW, true, 3, n).total() ==
          Approx(16 * p / n));
  }
  // fp32: parameters and gradients 4 bytes each, Adam 8, momentum 4, SGD 0.
  CHECK(modelState(p, Optimizer::Adam, false, 0, 1).total() == Approx(16 * p));
  CHECK(modelState(p, Optimizer::Momentum, false, 0, 1).total() ==
        Approx(12 * p));
  CHECK(modelState(p, Optimizer::SGD, false, 0, 1).total() == Approx(8 * p));
  CHECK(parseOptimizer("adamw") == Optimizer::AdamW);
  CHECK_FALSE(parseOptimizer("lamb"));
}

TEST_CASE("pipeline bubble: (p-1)/(m+p-1)") {
  CHECK(pipelineBubbleFraction(4, 8) == Approx(3.0 / 11));
  CHECK(pipelineBubbleFraction(1, 8) == 0);
  CHECK(pipelineBubbleFraction(8, 1) == Approx(7.0 / 8));
}

TEST_CASE("1-D SBP transitions use OneFlow's collectives") {
  TensorExtent tensor{{25000, 1000}, 4};
  double bytes = tensor.bytes();
  std::vector<int64_t> mesh = {4};
  std::vector<Link> links = {nvlink};
  auto only = [&](Sbp from, Sbp to) {
    auto cost = boxingCost({from}, {to}, tensor, mesh, links);
    REQUIRE(cost);
    REQUIRE(cost->steps.size() == 1);
    return cost->steps[0];
  };
  BoxingStep gather = only(Sbp::split(0), Sbp::broadcast());
  CHECK(gather.step.kind == ReshardKind::AllGather);
  CHECK(gather.collective == Collective::AllGather);
  CHECK(gather.time ==
        Approx(collectiveTime(Collective::AllGather, 4, bytes, nvlink)));
  CHECK(gather.bytesSent == Approx(0.75 * bytes));
  CHECK(only(Sbp::partial(), Sbp::broadcast()).collective ==
        Collective::AllReduce);
  CHECK(only(Sbp::partial(), Sbp::split(1)).collective ==
        Collective::ReduceScatter);
  BoxingStep toAll = only(Sbp::split(0), Sbp::split(1));
  CHECK(toAll.collective == Collective::AllToAll);
  CHECK(toAll.bytes == Approx(bytes / 4)); // Each device re-cuts its part.
  // Local transitions are free.
  for (auto [from, to] : {std::pair{Sbp::broadcast(), Sbp::split(0)},
                          std::pair{Sbp::broadcast(), Sbp::partial()},
                          std::pair{Sbp::split(1), Sbp::partial()}}) {
    BoxingStep step = only(from, to);
    CHECK_FALSE(step.collective);
    CHECK(step.time == 0);
    CHECK(step.bytesSent == 0);
  }
  // Same SBP: nothing to do.
  CHECK(boxingCost({Sbp::split(0)}, {Sbp::split(0)}, tensor, mesh, links)
            ->steps.empty());
  // P(sum) -> P(max): reduce first, then every device keeps the value.
  auto relabel =
      boxingCost({Sbp::partial(ReduceKind::Sum)},
                 {Sbp::partial(ReduceKind::Max)}, tensor, mesh, links);
  REQUIRE(relabel);
  REQUIRE(relabel->steps.size() == 2);
  CHECK(relabel->steps[0].step.kind == ReshardKind::AllReduce);
  CHECK(relabel->steps[0].step.reduce() == ReduceKind::Sum);
  CHECK(relabel->steps[1].step.kind == ReshardKind::ToPartial);
  // Nothing writes ones: P(prod) is reachable from itself only.
  CHECK_FALSE(boxingCost({Sbp::broadcast()}, {Sbp::partial(ReduceKind::Prod)},
                         tensor, mesh, links));
}

TEST_CASE("n-D transitions go axis by axis in the cheapest order") {
  TensorExtent tensor{{250000, 1000}, 4};
  // 2 nodes x 4 GPUs: mesh axis 0 crosses the NIC, axis 1 NVLink. Gathering
  // [S(0), S(1)] to [B, B]: gathering across nodes first moves a quarter of
  // the tensor over the NIC; gathering within nodes first would move half.
  double bytes = tensor.bytes();
  std::vector<int64_t> mesh = {2, 4};
  std::vector<Link> links = {nic, nvlink};
  auto cost =
      boxingCost({Sbp::split(0), Sbp::split(1)},
                 {Sbp::broadcast(), Sbp::broadcast()}, tensor, mesh, links);
  REQUIRE(cost);
  REQUIRE(cost->steps.size() == 2);
  CHECK(cost->steps[0].step.meshAxis == 0);
  CHECK(cost->steps[0].bytes == Approx(bytes / 4));
  CHECK(cost->steps[1].bytes == Approx(bytes));
  double nicFirst = collectiveTime(Collective::AllGather, 2, bytes / 4, nic) +
                    collectiveTime(Collective::AllGather, 4, bytes, nvlink);
  double nvlinkFirst =
      collectiveTime(Collective::AllGather, 4, bytes / 2, nvlink) +
      collectiveTime(Collective::AllGather, 2, bytes, nic);
  CHECK(nicFirst < nvlinkFirst);
  CHECK(cost->time == Approx(nicFirst));
  CHECK(cost->bytesSent() ==
        Approx(bytesSentPerDevice(Collective::AllGather, 2, bytes / 4) +
               bytesSentPerDevice(Collective::AllGather, 4, bytes)));

  // When both axes split dimension 0, the NIC's parts are not whole
  // blocks until the inner axis is gathered: the only order is NVLink
  // first, and that is what is priced.
  auto nested =
      boxingCost({Sbp::split(0), Sbp::split(0)},
                 {Sbp::broadcast(), Sbp::broadcast()}, tensor, mesh, links);
  REQUIRE(nested);
  REQUIRE(nested->steps.size() == 2);
  CHECK(nested->steps[0].step.meshAxis == 1);
  CHECK(nested->time == Approx(nvlinkFirst));

  // Data-parallel gradients: [P, S(1)] -> [B, S(1)] all-reduces only the
  // 1/4 each node-group holds, across nodes.
  auto grads =
      boxingCost({Sbp::partial(), Sbp::split(1)},
                 {Sbp::broadcast(), Sbp::split(1)}, tensor, mesh, links);
  REQUIRE(grads);
  CHECK(grads->time ==
        Approx(collectiveTime(Collective::AllReduce, 2, bytes / 4, nic)));
  // Data-parallel gradients over both axes: [P, P] -> [B, B] is the
  // hierarchical all-reduce, the NIC carrying a quarter of the bytes:
  // reduce-scatter within the node, all-reduce of the parts across
  // nodes, all-gather within the node.
  auto both =
      boxingCost({Sbp::partial(), Sbp::partial()},
                 {Sbp::broadcast(), Sbp::broadcast()}, tensor, mesh, links);
  REQUIRE(both);
  REQUIRE(both->steps.size() == 3);
  CHECK(both->steps[0].step.kind == ReshardKind::ReduceScatter);
  CHECK(both->steps[0].step.meshAxis == 1);
  CHECK(both->steps[0].step.to[1] == Sbp::split(0));
  CHECK(both->steps[1].step.kind == ReshardKind::AllReduce);
  CHECK(both->steps[1].step.meshAxis == 0);
  CHECK(both->steps[1].bytes == Approx(bytes / 4));
  CHECK(both->steps[2].step.kind == ReshardKind::AllGather);
  CHECK(both->time ==
        Approx(hierarchicalAllReduceTime(4, nvlink, 2, nic, bytes)));
  CHECK(both->time < collectiveTime(Collective::AllReduce, 4, bytes, nvlink) +
                         collectiveTime(Collective::AllReduce, 2, bytes, nic));
  // A tensor no dimension of which the 8 devices divide evenly is reduced
  // axis by axis.
  auto odd = boxingCost({Sbp::partial(), Sbp::partial()},
                        {Sbp::broadcast(), Sbp::broadcast()},
                        TensorExtent{{250001, 999}, 4}, mesh, links);
  REQUIRE(odd);
  REQUIRE(odd->steps.size() == 2);
  CHECK(odd->steps[0].step.kind == ReshardKind::AllReduce);
  CHECK(odd->steps[1].step.kind == ReshardKind::AllReduce);
  // Equal layouts cost nothing; mismatched ranks are rejected.
  CHECK(boxingCost({Sbp::split(0), Sbp::broadcast()},
                   {Sbp::split(0), Sbp::broadcast()}, tensor, mesh, links)
            ->time == 0);
  CHECK_FALSE(
      boxingCost({Sbp::split(0)}, {Sbp::broadcast()}, tensor, mesh, links));
}

TEST_CASE("an all-to-all of uneven parts charges what the devices send") {
  // 3x5 over 2 devices, rows to columns: device 0 holds 2 rows and keeps 3
  // of 5 columns of them (sends 4 values), device 1 holds 1 row and keeps
  // 2 (sends 3): 14 bytes on average, and the step lasts as long as
  // device 0's 16 bytes take (the buffer of 32 whose ring volume is 16).
  std::vector<int64_t> mesh = {2};
  auto cost =
      boxingCost({Sbp::split(0)}, {Sbp::split(1)}, {{3, 5}, 4}, mesh, {nvlink});
  REQUIRE(cost);
  REQUIRE(cost->steps.size() == 1);
  CHECK(cost->steps[0].bytesSent == Approx(14));
  CHECK(cost->steps[0].bytes == Approx(28));
  CHECK(cost->time ==
        Approx(collectiveTime(Collective::AllToAll, 2, 32, nvlink)));
  // More devices than rows: 16 rows of 512x32000 f32 split over a 4x8
  // mesh's both axes leave half the devices along the second axis a row
  // and the rest none. The re-cut along that axis (rows to the last dimension)
  // sends, on the devices with a row, 7/8 of it; on the mean, half that.
  // The step takes as long as a whole row's all-to-all: the mean would
  // price it at half (a plan on P100s whose prediction missed by 7.6%).
  Link pcie{16e9, 5e-6}, network{12.5e9, 5e-6};
  std::vector<int64_t> grid = {4, 8};
  TensorExtent logits{{16, 512, 32000}, 4};
  double row = 512.0 * 32000 * 4;
  auto ragged =
      boxingCost({Sbp::split(0), Sbp::split(0)}, {Sbp::split(0), Sbp::split(2)},
                 logits, grid, {network, pcie});
  REQUIRE(ragged);
  REQUIRE(ragged->steps.size() == 1);
  CHECK(ragged->steps[0].collective == Collective::AllToAll);
  CHECK(ragged->steps[0].bytesSent == Approx(0.5 * 7.0 / 8 * row));
  CHECK(ragged->time ==
        Approx(collectiveTime(Collective::AllToAll, 8, row, pcie)));
  CHECK(ragged->time >
        1.5 * collectiveTime(Collective::AllToAll, 8, 0.5 * row, pcie));
  // Evenly divided, it is (n-1)/n of a device's part.
  auto even =
      boxingCost({Sbp::split(0)}, {Sbp::split(1)}, {{4, 6}, 4}, mesh, {nvlink});
  CHECK(even->steps[0].bytesSent == Approx(0.5 * 48));
}

TEST_CASE("a step beside uneven shares lasts as long as the slowest "
          "position's") {
  // An A100 node (NVLink) with 3/4 of the rows and a T4 node (PCIe) with
  // 1/4, tensor-parallel within each: the partial sums of a [64, 1024]
  // product are all-reduced within each node, over its own links, on its
  // own rows. The mesh's mean part (half the rows) over its slowest link
  // (PCIe) would price 2x the T4s' and miss the A100s' altogether.
  Link pcie{16e9, 5e-6};
  std::vector<int64_t> mesh = {2, 4};
  TensorExtent tensor{{64, 1024}, 4};
  double bytes = tensor.bytes();
  PositionLinks positions{0, {0.75, 0.25}, {{nic, nvlink}, {nic, pcie}}};
  auto byPosition = boxingCost({Sbp::split(0), Sbp::partial()},
                               {Sbp::split(0), Sbp::broadcast()}, tensor, mesh,
                               {nic, pcie}, {{3, 1}, {}}, &positions);
  REQUIRE(byPosition);
  REQUIRE(byPosition->steps.size() == 1);
  double a100 = collectiveTime(Collective::AllReduce, 4, 0.75 * bytes, nvlink);
  double t4 = collectiveTime(Collective::AllReduce, 4, 0.25 * bytes, pcie);
  CHECK(byPosition->time == Approx(std::max(a100, t4)));
  CHECK(byPosition->steps[0].bytes == Approx(bytes / 2));
  auto byMean = boxingCost({Sbp::split(0), Sbp::partial()},
                           {Sbp::split(0), Sbp::broadcast()}, tensor, mesh,
                           {nic, pcie}, {{3, 1}, {}});
  REQUIRE(byMean);
  CHECK(byMean->time ==
        Approx(collectiveTime(Collective::AllReduce, 4, bytes / 2, pcie)));
  // Not split along the shares' axis, every position all-reduces the
  // whole tensor: the slower links' time.
  auto whole = boxingCost({Sbp::broadcast(), Sbp::partial()},
                          {Sbp::broadcast(), Sbp::broadcast()}, tensor, mesh,
                          {nic, pcie}, {{3, 1}, {}}, &positions);
  REQUIRE(whole);
  CHECK(whole->time ==
        Approx(collectiveTime(Collective::AllReduce, 4, bytes, pcie)));
  // A step along the shares' axis itself spans the positions: priced as
  // before, over the mesh's link along it.
  auto across = boxingCost({Sbp::partial(), Sbp::broadcast()},
                           {Sbp::broadcast(), Sbp::broadcast()}, tensor, mesh,
                           {nic, pcie}, {{3, 1}, {}}, &positions);
  REQUIRE(across);
  CHECK(across->time ==
        Approx(collectiveTime(Collective::AllReduce, 2, bytes, nic)));
}

TEST_CASE("roofline: FLOP-bound and memory-bound") {
  DeviceType h100{"H100",
                  {{ComputeType::BF16, 989e12}, {ComputeType::F32, 67e12}},
                  80e9,
                  3.35e12};
  double gemmFlops = 2.0 * 8192 * 8192 * 8192,
         gemmBytes = 3.0 * 8192 * 8192 * 2;
  // Datasheet peaks are reached to 0.7 by default; a kernel's memory
  // traffic adds to its arithmetic (a GEMM's loads and stores of its tiles
  // do not all hide behind its multiply-adds).
  CHECK(h100.computeEfficiency == 0.7);
  CHECK(*computeTime(gemmFlops, gemmBytes, h100, ComputeType::BF16) ==
        Approx(gemmFlops / (989e12 * 0.7) + gemmBytes / 3.35e12));
  double addBytes = 3.0 * 4e8;
  CHECK(*computeTime(4e8, addBytes, h100, ComputeType::BF16) ==
        Approx(4e8 / (989e12 * 0.7) + addBytes / 3.35e12));
  // A calibrated (achieved) peak is reached in full.
  h100.computeEfficiency = 1.0;
  CHECK(*computeTime(gemmFlops, gemmBytes, h100, ComputeType::F32) ==
        Approx(gemmFlops / 67e12 + gemmBytes / 3.35e12));
  CHECK_FALSE(computeTime(1, 1, h100, ComputeType::F16));
  // Work without FLOPs needs no peak: a copy is priced on any device.
  CHECK(*computeTime(0, addBytes, h100, ComputeType::F16) ==
        Approx(addBytes / 3.35e12));
  // A kernel overhead comes before the work of any op that launches a
  // kernel, and ops that launch nothing cost nothing.
  h100.kernelOverhead = 3e-6;
  CHECK(*computeTime(1e3, 1e3, h100, ComputeType::F32) ==
        Approx(3e-6 + 1e3 / 67e12 + 1e3 / 3.35e12));
  CHECK(*computeTime(0, 64, h100, ComputeType::F32) ==
        Approx(3e-6 + 64 / 3.35e12));
  CHECK(*computeTime(0, 0, h100, ComputeType::F32) == 0);
  CHECK(*computeTime(gemmFlops, gemmBytes, h100, ComputeType::F32) ==
        Approx(gemmFlops / 67e12 + gemmBytes / 3.35e12 + 3e-6));
}
