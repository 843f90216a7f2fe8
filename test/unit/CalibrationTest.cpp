//===- CalibrationTest.cpp - clusters from GPU measurements ---------------===//
//
// `parplan calibrate`'s conversion of measurements into a cluster, on
// hand-made measurements: the measuring itself needs a GPU (the lit test
// calibrate-gpu.test runs it where there is one).
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/Calibration.h"
#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Collectives.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unistd.h>

using namespace parplan::cost;

namespace {

MatmulSample sample(ComputeType dtype, int64_t m, int64_t n, int64_t k,
                    double seconds) {
  MatmulSample result;
  result.dtype = dtype;
  result.m = m;
  result.n = n;
  result.k = k;
  result.seconds = seconds;
  result.flopsPerSecond = 2.0 * m * n * k / seconds;
  return result;
}

/// One H100-like GPU: every element type at two shapes.
GpuMeasurements oneGpu() {
  GpuMeasurements gpus;
  gpus.gpuName = "NVIDIA H100 80GB HBM3";
  gpus.hostName = "gpu-host";
  gpus.deviceCount = 1;
  gpus.memoryBytes = 85029158912;
  gpus.copyBytes = 1 << 30;
  gpus.memoryBandwidth = 2.0 * (1 << 30) / 0.78e-3;
  gpus.kernelOverhead = 2.4e-6;
  gpus.kernelLaunches = 5000;
  gpus.matmuls = {
      sample(ComputeType::F64, 4096, 4096, 4096, 2.7e-3),
      sample(ComputeType::F64, 8192, 8192, 8192, 21.1e-3),
      sample(ComputeType::F32, 4096, 4096, 4096, 2.9e-3),
      sample(ComputeType::TF32, 4096, 4096, 4096, 0.41e-3),
      sample(ComputeType::BF16, 4096, 4096, 4096, 0.205e-3),
      sample(ComputeType::BF16, 8192, 8192, 8192, 1.57e-3),
      sample(ComputeType::BF16, 8192, 16384, 4096, 1.61e-3),
      sample(ComputeType::F16, 4096, 4096, 4096, 0.201e-3),
  };
  gpus.cudaVersion = "CUDA runtime 13.0, driver 13.0, cuBLAS 13.0.2";
  gpus.timestamp = "2025-01-31 12:34:56 UTC";
  return gpus;
}

/// Four of them, with the all-reduce figures of NVLink.
GpuMeasurements fourGpus() {
  GpuMeasurements gpus = oneGpu();
  gpus.deviceCount = 4;
  gpus.ncclLargeBytes = 256 << 20;
  gpus.ncclLargeSeconds = 1.2e-3;
  gpus.ncclSmallBytes = 8;
  gpus.ncclSmallSeconds = 18e-6;
  gpus.ncclBusBandwidth =
      allReduceBusBandwidth(4, gpus.ncclLargeBytes, gpus.ncclLargeSeconds);
  gpus.ncclLatency = allReduceStepLatency(4, gpus.ncclSmallSeconds);
  gpus.ncclVersion = "NCCL 2.28.9";
  return gpus;
}

Cluster mustConvert(const GpuMeasurements &gpus,
                    const std::string &name = "calibrated") {
  std::string error;
  std::optional<Cluster> cluster = clusterFromMeasurements(gpus, name, error);
  INFO(error);
  REQUIRE(cluster);
  CHECK(error.empty());
  CHECK_FALSE(checkCluster(*cluster));
  return *cluster;
}

/// The error of converting `gpus`, which must fail.
std::string conversionError(const GpuMeasurements &gpus,
                            const std::string &name = "calibrated") {
  std::string error;
  std::optional<Cluster> cluster = clusterFromMeasurements(gpus, name, error);
  CHECK_FALSE(cluster);
  CHECK_FALSE(error.empty());
  return error;
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

void checkSameFigures(const Cluster &a, const Cluster &b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  CHECK(a.source == b.source);
  REQUIRE(a.deviceTypes.size() == 1);
  REQUIRE(b.deviceTypes.size() == 1);
  const DeviceType &x = a.deviceTypes[0], &y = b.deviceTypes[0];
  CHECK(x.name == y.name);
  CHECK(near(x.memoryBytes, y.memoryBytes));
  CHECK(near(x.memoryBandwidth, y.memoryBandwidth));
  CHECK(near(x.kernelOverhead, y.kernelOverhead));
  REQUIRE(x.peakFlops.size() == y.peakFlops.size());
  for (const auto &[dtype, flops] : x.peakFlops) {
    INFO(toString(dtype));
    REQUIRE(y.peakFlops.count(dtype));
    CHECK(near(flops, y.peakFlops.at(dtype)));
  }
  REQUIRE(a.nodes.size() == 1);
  REQUIRE(b.nodes.size() == 1);
  CHECK(a.nodes[0].name == b.nodes[0].name);
  CHECK(a.nodes[0].deviceType == b.nodes[0].deviceType);
  CHECK(a.nodes[0].devices == b.nodes[0].devices);
  CHECK(near(a.intraNode.bandwidth, b.intraNode.bandwidth));
  CHECK(near(a.intraNode.latency, b.intraNode.latency));
  CHECK(b.interNode.bandwidth == 0);
  CHECK(b.interRegion.bandwidth == 0);
}

/// Writes `cluster` as YAML and as JSON, parses both back and loads both
/// from files, and checks every figure survives.
void checkRoundTrip(const Cluster &cluster) {
  std::string error;
  std::string yaml = writeClusterYaml(cluster);
  std::string json = writeClusterJson(cluster);
  std::optional<Cluster> fromYaml = parseCluster(yaml, "c.yaml", error);
  INFO(yaml << error);
  REQUIRE(fromYaml);
  checkSameFigures(cluster, *fromYaml);
  std::optional<Cluster> fromJson = parseCluster(json, "c.json", error);
  INFO(json << error);
  REQUIRE(fromJson);
  checkSameFigures(cluster, *fromJson);

  std::filesystem::path directory =
      std::filesystem::temp_directory_path() /
      ("parplan-calibration-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  for (const auto &[file, text] :
       {std::pair{directory / "cluster.yaml", yaml},
        std::pair{directory / "cluster.json", json}}) {
    std::ofstream(file) << text;
    std::optional<Cluster> loaded = loadCluster(file.string(), error);
    INFO(file.string() << ": " << error);
    REQUIRE(loaded);
    checkSameFigures(cluster, *loaded);
  }
  std::filesystem::remove_all(directory);
}

} // namespace

TEST_CASE("calibration: one GPU is one node and no intra-node link",
          "[calibration]") {
  GpuMeasurements gpus = oneGpu();
  Cluster cluster = mustConvert(gpus, "my-box");
  CHECK(cluster.name == "my-box");
  CHECK(cluster.source == "measured by parplan calibrate on 2025-01-31 "
                          "12:34:56 UTC (CUDA runtime 13.0, driver 13.0, "
                          "cuBLAS 13.0.2)");
  CHECK(cluster.description ==
        "1 x NVIDIA H100 80GB HBM3 on gpu-host, measured by parplan calibrate");
  REQUIRE(cluster.deviceTypes.size() == 1);
  const DeviceType &type = cluster.deviceTypes[0];
  CHECK(type.name == "NVIDIA H100 80GB HBM3");
  CHECK(type.memoryBytes == gpus.memoryBytes);
  CHECK(type.memoryBandwidth == gpus.memoryBandwidth);
  CHECK(type.kernelOverhead == gpus.kernelOverhead);
  CHECK(writeClusterYaml(cluster).find("kernel_overhead: 2.4 us") !=
        std::string::npos);
  CHECK(formatMeasurements(gpus).find(
            "kernel overhead   2.4 us per kernel (5000 small kernels "
            "replayed from a graph)\n") != std::string::npos);
  REQUIRE(cluster.nodes.size() == 1);
  CHECK(cluster.nodes[0].name == "gpu-host");
  CHECK(cluster.nodes[0].deviceType == type.name);
  CHECK(cluster.nodes[0].devices == 1);
  CHECK(cluster.numDevices() == 1);
  // No pair of devices, no link: the writer leaves out `links` entries.
  CHECK(cluster.intraNode.bandwidth == 0);
  CHECK(cluster.interNode.bandwidth == 0);
  CHECK(cluster.interRegion.bandwidth == 0);
  CHECK(writeClusterYaml(cluster).find("intra_node") == std::string::npos);
  // NCCL figures of a lone GPU (there are none in practice) are ignored.
  gpus.ncclBusBandwidth = 1e9;
  gpus.ncclLatency = 1e-6;
  CHECK(mustConvert(gpus).intraNode.bandwidth == 0);
  // Without a host name the node is node0.
  gpus.hostName.clear();
  Cluster anonymous = mustConvert(gpus);
  CHECK(anonymous.nodes[0].name == "node0");
  CHECK(anonymous.description ==
        "1 x NVIDIA H100 80GB HBM3, measured by parplan calibrate");
}

TEST_CASE("calibration: four GPUs get the all-reduce link", "[calibration]") {
  GpuMeasurements gpus = fourGpus();
  Cluster cluster = mustConvert(gpus);
  CHECK(cluster.numDevices() == 4);
  CHECK(cluster.nodes.size() == 1);
  CHECK(cluster.intraNode.bandwidth == *gpus.ncclBusBandwidth);
  CHECK(cluster.intraNode.latency == *gpus.ncclLatency);
  CHECK(cluster.level(0, 3) == LinkLevel::IntraNode);
  CHECK(cluster.link(1, 2).bandwidth == *gpus.ncclBusBandwidth);
  CHECK(cluster.source.find("NCCL 2.28.9") != std::string::npos);
  // 2 (n-1)/n x 256 MiB / 1.2 ms, and 18 us over 2 (n-1) = 6 ring steps.
  CHECK(near(*gpus.ncclBusBandwidth, 1.5 * (256 << 20) / 1.2e-3));
  CHECK(near(*gpus.ncclLatency, 3e-6));
}

TEST_CASE("calibration: the all-reduce figures give back the measured times",
          "[calibration]") {
  // The cost model's ring all-reduce on the calibrated link: a tiny message
  // takes the measured small time, a large one the measured large time plus
  // that latency (the bus bandwidth is nccl-tests', latency included).
  for (int64_t n : {2, 4, 8}) {
    double small = 20e-6, large = 2e-3, bytes = 256 << 20;
    Link link{allReduceBusBandwidth(n, bytes, large),
              allReduceStepLatency(n, small)};
    INFO("n = " << n);
    CHECK(collectiveTime(Collective::AllReduce, n, 0, link) ==
          Approx(small).epsilon(1e-12));
    CHECK(collectiveTime(Collective::AllReduce, n, bytes, link) ==
          Approx(large + small).epsilon(1e-12));
  }
  CHECK(allReduceBusBandwidth(1, 1e9, 1) == 0);
  CHECK(allReduceBusBandwidth(4, 1e9, 0) == 0);
  CHECK(allReduceStepLatency(1, 1e-5) == 0);
}

TEST_CASE("calibration: the peak of a type is its best matmul",
          "[calibration]") {
  GpuMeasurements gpus = oneGpu();
  Cluster cluster = mustConvert(gpus);
  const std::map<ComputeType, double> &peaks = cluster.deviceTypes[0].peakFlops;
  CHECK(peaks.size() == 5);
  auto flops = [](double m, double n, double k, double seconds) {
    return 2 * m * n * k / seconds;
  };
  // bf16: 8192^3 in 1.57 ms beats 4096^3 and the skinny shape.
  CHECK(peaks.at(ComputeType::BF16) == flops(8192, 8192, 8192, 1.57e-3));
  CHECK(peaks.at(ComputeType::F64) == flops(8192, 8192, 8192, 21.1e-3));
  CHECK(peaks.at(ComputeType::F32) == flops(4096, 4096, 4096, 2.9e-3));
  CHECK(peaks.at(ComputeType::TF32) == flops(4096, 4096, 4096, 0.41e-3));
  CHECK(peaks.at(ComputeType::F16) == flops(4096, 4096, 4096, 0.201e-3));
  for (const MatmulSample &s : gpus.matmuls)
    CHECK(s.flopsPerSecond <= peaks.at(s.dtype));

  // A type without a sample is left out, not written as 0.
  std::vector<MatmulSample> kept;
  for (const MatmulSample &s : gpus.matmuls)
    if (s.dtype != ComputeType::F64 && s.dtype != ComputeType::TF32)
      kept.push_back(s);
  gpus.matmuls = kept;
  Cluster fewer = mustConvert(gpus);
  const std::map<ComputeType, double> &fewerPeaks =
      fewer.deviceTypes[0].peakFlops;
  CHECK(fewerPeaks.size() == 3);
  CHECK_FALSE(fewerPeaks.count(ComputeType::F64));
  CHECK_FALSE(fewerPeaks.count(ComputeType::TF32));
  CHECK_FALSE(fewerPeaks.count(ComputeType::I8));
  std::string yaml = writeClusterYaml(fewer);
  CHECK(yaml.find("f64") == std::string::npos);
  CHECK(yaml.find("tf32") == std::string::npos);
  checkRoundTrip(fewer);
}

TEST_CASE("calibration: clusters round-trip through YAML and JSON",
          "[calibration]") {
  checkRoundTrip(mustConvert(oneGpu()));
  checkRoundTrip(mustConvert(fourGpus(), "four"));

  // Odd figures and names survive too: a slow GPU (GFLOP/s, MB/s), a
  // latency of zero, quotes and a colon in the name.
  GpuMeasurements odd = fourGpus();
  odd.gpuName = "Tesla \"K80\": old";
  odd.hostName = "host #1";
  odd.memoryBandwidth = 512.25e6;
  odd.matmuls = {sample(ComputeType::F32, 1000, 999, 7, 0.123456789)};
  odd.ncclBusBandwidth = 123456.789;
  odd.ncclLatency = 0;
  Cluster cluster = mustConvert(odd, "odd: \"one\"");
  CHECK(cluster.deviceTypes[0].peakFlops.at(ComputeType::F32) < 1e9);
  checkRoundTrip(cluster);
}

TEST_CASE("calibration: measurements that make no valid cluster are errors",
          "[calibration]") {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();

  CHECK(conversionError(oneGpu(), "") == "the cluster needs a name");
  {
    GpuMeasurements gpus = oneGpu();
    gpus.gpuName.clear();
    CHECK(conversionError(gpus) == "the GPU has no name");
  }
  for (int64_t count : {0, -1}) {
    GpuMeasurements gpus = oneGpu();
    gpus.deviceCount = count;
    CHECK_THAT(conversionError(gpus), Catch::StartsWith("no GPU was measured"));
  }
  for (double bytes : {0.0, -1.0, nan, inf}) {
    GpuMeasurements gpus = oneGpu();
    gpus.memoryBytes = bytes;
    CHECK_THAT(conversionError(gpus),
               Catch::StartsWith("device memory was measured as"));
  }
  for (double bandwidth : {0.0, -5e9, nan, inf}) {
    GpuMeasurements gpus = oneGpu();
    gpus.memoryBandwidth = bandwidth;
    CHECK_THAT(conversionError(gpus),
               Catch::StartsWith("memory bandwidth was measured as"));
  }
  {
    GpuMeasurements gpus = oneGpu();
    gpus.matmuls.clear();
    CHECK_THAT(conversionError(gpus), Catch::StartsWith("no matmul was "
                                                        "measured"));
  }
  // One bad sample spoils the lot, even beside good samples of its type: a
  // timer that read 0 once is not to be trusted with the others.
  for (double flops : {0.0, -1e12, nan, inf}) {
    GpuMeasurements gpus = oneGpu();
    gpus.matmuls[4].flopsPerSecond = flops;
    CHECK_THAT(conversionError(gpus),
               Catch::StartsWith("bf16 matmul 4096x4096x4096: throughput was "
                                 "measured as"));
  }
  for (double seconds : {0.0, -1.0, nan}) {
    GpuMeasurements gpus = oneGpu();
    gpus.matmuls[0].seconds = seconds;
    CHECK_THAT(conversionError(gpus),
               Catch::StartsWith("f64 matmul 4096x4096x4096: time was "
                                 "measured as"));
  }
  {
    GpuMeasurements gpus = oneGpu();
    gpus.matmuls[2].k = 0;
    CHECK(conversionError(gpus) ==
          "f32 matmul 4096x4096x0: the shape must be positive");
  }
  // Several GPUs need the link between them.
  {
    GpuMeasurements gpus = fourGpus();
    gpus.ncclBusBandwidth.reset();
    CHECK(conversionError(gpus) ==
          "4 devices but no all-reduce bandwidth was measured");
  }
  {
    GpuMeasurements gpus = fourGpus();
    gpus.ncclLatency.reset();
    CHECK(conversionError(gpus) ==
          "4 devices but no all-reduce latency was measured");
  }
  for (double bandwidth : {0.0, -1.0, nan, inf}) {
    GpuMeasurements gpus = fourGpus();
    gpus.ncclBusBandwidth = bandwidth;
    CHECK_THAT(conversionError(gpus),
               Catch::StartsWith("all-reduce bus bandwidth was measured as"));
  }
  for (double latency : {-1e-6, nan, inf}) {
    GpuMeasurements gpus = fourGpus();
    gpus.ncclLatency = latency;
    CHECK_THAT(conversionError(gpus),
               Catch::StartsWith("all-reduce latency was measured as"));
  }
  // A latency of 0 is a valid link (the file format allows it).
  GpuMeasurements instant = fourGpus();
  instant.ncclLatency = 0;
  checkRoundTrip(mustConvert(instant));
}

TEST_CASE("calibration: the table of measurements", "[calibration]") {
  std::string one = formatMeasurements(oneGpu());
  INFO(one);
  CHECK_THAT(one, Catch::StartsWith("calibrated 1 x NVIDIA H100 80GB HBM3 on "
                                    "gpu-host, 2025-01-31 12:34:56 UTC\n"));
  CHECK_THAT(one, Catch::Contains("CUDA runtime 13.0"));
  CHECK_THAT(one, Catch::Contains("memory            85.03 GB per device"));
  CHECK_THAT(one, Catch::Contains("(device-to-device copy of 1 GiB)"));
  CHECK_THAT(one,
             Catch::Contains("  bf16     8192    8192    8192     1.57 ms"));
  CHECK_THAT(one, Catch::Contains("peak TFLOP/s      f64 52.11, f32 47.39, "
                                  "tf32 335.2, bf16 700.3, f16 683.8"));
  CHECK_THAT(one, Catch::Contains("all-reduce        not measured (one "
                                  "device"));
  CHECK(one.back() == '\n');

  std::string four = formatMeasurements(fourGpus());
  INFO(four);
  CHECK_THAT(four, Catch::Contains("NCCL 2.28.9"));
  CHECK_THAT(four, Catch::Contains("all-reduce        335.5 GB/s bus bandwidth "
                                   "(256 MiB in 1.2 ms), 3 us latency per "
                                   "step (8 B in 18 us), 4 devices"));
}
