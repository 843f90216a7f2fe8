//===- Calibration.cpp - a cluster description measured on local GPUs -----===//

#include "parplan/Cost/Calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>

using namespace parplan::cost;

namespace {

bool positive(double value) { return std::isfinite(value) && value > 0; }

/// printf into a std::string.
std::string format(const char *pattern, ...)
    __attribute__((format(printf, 1, 2)));
std::string format(const char *pattern, ...) {
  va_list args;
  va_start(args, pattern);
  char buffer[512];
  std::vsnprintf(buffer, sizeof buffer, pattern, args);
  va_end(args);
  return buffer;
}

/// "1 GiB", "256 MiB", "8 B": the sizes the measurements use.
std::string formatSize(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024)
    return format("%g GiB", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024)
    return format("%g MiB", bytes / (1024.0 * 1024));
  if (bytes >= 1024.0)
    return format("%g KiB", bytes / 1024.0);
  return format("%g B", bytes);
}

/// "1.39 ms", "18.6 us".
std::string formatTime(double seconds) {
  if (seconds >= 1)
    return format("%.3g s", seconds);
  if (seconds >= 1e-3)
    return format("%.3g ms", seconds * 1e3);
  return format("%.3g us", seconds * 1e6);
}

std::string matmulName(const MatmulSample &sample) {
  return format("%s matmul %lldx%lldx%lld", toString(sample.dtype),
                static_cast<long long>(sample.m),
                static_cast<long long>(sample.n),
                static_cast<long long>(sample.k));
}

/// The best throughput measured per element type.
std::map<ComputeType, double> bestPerDType(const GpuMeasurements &gpus) {
  std::map<ComputeType, double> best;
  for (const MatmulSample &sample : gpus.matmuls) {
    double &peak = best[sample.dtype];
    peak = std::max(peak, sample.flopsPerSecond);
  }
  return best;
}

} // namespace

double parplan::cost::allReduceBusBandwidth(int64_t devices, double bytes,
                                            double seconds) {
  if (devices < 2 || !(seconds > 0))
    return 0;
  double n = static_cast<double>(devices);
  return 2 * (n - 1) / n * bytes / seconds;
}

double parplan::cost::allReduceStepLatency(int64_t devices, double seconds) {
  if (devices < 2)
    return 0;
  return seconds / (2 * (static_cast<double>(devices) - 1));
}

std::optional<Cluster> parplan::cost::clusterFromMeasurements(
    const GpuMeasurements &gpus, const std::string &name, std::string &error) {
  auto fail = [&](std::string message) -> std::optional<Cluster> {
    error = std::move(message);
    return std::nullopt;
  };
  if (name.empty())
    return fail("the cluster needs a name");
  if (gpus.gpuName.empty())
    return fail("the GPU has no name");
  if (gpus.deviceCount <= 0)
    return fail(format("no GPU was measured (device count %lld)",
                       static_cast<long long>(gpus.deviceCount)));
  if (!positive(gpus.memoryBytes))
    return fail(format("device memory was measured as %g bytes: it must be "
                       "positive",
                       gpus.memoryBytes));
  if (!positive(gpus.memoryBandwidth))
    return fail(format("memory bandwidth was measured as %g B/s: it must be "
                       "positive",
                       gpus.memoryBandwidth));
  if (!std::isfinite(gpus.kernelOverhead) || gpus.kernelOverhead < 0)
    return fail(format("kernel overhead was measured as %g s: it must be "
                       "non-negative",
                       gpus.kernelOverhead));
  for (const MatmulSample &sample : gpus.matmuls) {
    if (sample.m <= 0 || sample.n <= 0 || sample.k <= 0)
      return fail(matmulName(sample) + ": the shape must be positive");
    if (!positive(sample.seconds))
      return fail(format("%s: time was measured as %g s: it must be positive",
                         matmulName(sample).c_str(), sample.seconds));
    if (!positive(sample.flopsPerSecond))
      return fail(format("%s: throughput was measured as %g FLOP/s: it must "
                         "be positive",
                         matmulName(sample).c_str(), sample.flopsPerSecond));
  }
  std::map<ComputeType, double> peaks = bestPerDType(gpus);
  if (peaks.empty())
    return fail("no matmul was measured: the device type would have no peak "
                "FLOP/s");

  Cluster cluster;
  cluster.name = name;
  cluster.source = "measured by parplan calibrate on " +
                   (gpus.timestamp.empty() ? std::string("an unknown date")
                                           : gpus.timestamp);
  std::string versions = gpus.cudaVersion;
  if (!gpus.ncclVersion.empty())
    versions += (versions.empty() ? "" : ", ") + gpus.ncclVersion;
  if (!versions.empty())
    cluster.source += " (" + versions + ")";
  cluster.description =
      format("%lld x %s", static_cast<long long>(gpus.deviceCount),
             gpus.gpuName.c_str()) +
      (gpus.hostName.empty() ? "" : " on " + gpus.hostName) +
      ", measured by parplan calibrate";

  DeviceType type;
  type.name = gpus.gpuName;
  type.peakFlops = peaks;
  type.memoryBytes = gpus.memoryBytes;
  type.memoryBandwidth = gpus.memoryBandwidth;
  // The peaks are what cuBLAS reached, not a datasheet's.
  type.computeEfficiency = 1.0;
  type.kernelOverhead = gpus.kernelOverhead;
  cluster.deviceTypes.push_back(type);

  Node node;
  node.name = gpus.hostName.empty() ? "node0" : gpus.hostName;
  node.deviceType = type.name;
  node.devices = gpus.deviceCount;
  cluster.nodes.push_back(node);

  if (gpus.deviceCount >= 2) {
    if (!gpus.ncclBusBandwidth)
      return fail(format("%lld devices but no all-reduce bandwidth was "
                         "measured",
                         static_cast<long long>(gpus.deviceCount)));
    if (!positive(*gpus.ncclBusBandwidth))
      return fail(format("all-reduce bus bandwidth was measured as %g B/s: "
                         "it must be positive",
                         *gpus.ncclBusBandwidth));
    if (!gpus.ncclLatency)
      return fail(format("%lld devices but no all-reduce latency was measured",
                         static_cast<long long>(gpus.deviceCount)));
    if (!std::isfinite(*gpus.ncclLatency) || *gpus.ncclLatency < 0)
      return fail(format("all-reduce latency was measured as %g s: it must "
                         "be non-negative",
                         *gpus.ncclLatency));
    cluster.intraNode = Link{*gpus.ncclBusBandwidth, *gpus.ncclLatency};
  }

  if (std::optional<std::string> problem = checkCluster(cluster))
    return fail(*problem);
  return cluster;
}

std::string parplan::cost::formatMeasurements(const GpuMeasurements &gpus) {
  std::string out =
      format("calibrated %lld x %s", static_cast<long long>(gpus.deviceCount),
             gpus.gpuName.c_str());
  if (!gpus.hostName.empty())
    out += " on " + gpus.hostName;
  if (!gpus.timestamp.empty())
    out += ", " + gpus.timestamp;
  out += "\n";
  std::string versions = gpus.cudaVersion;
  if (!gpus.ncclVersion.empty())
    versions += (versions.empty() ? "" : ", ") + gpus.ncclVersion;
  if (!versions.empty())
    out += "  " + versions + "\n";

  out +=
      format("memory            %.4g GB per device\n", gpus.memoryBytes / 1e9);
  out += format("memory bandwidth  %.4g GB/s", gpus.memoryBandwidth / 1e9);
  if (gpus.copyBytes > 0)
    out += " (device-to-device copy of " + formatSize(gpus.copyBytes) + ")";
  out += "\n";

  if (gpus.kernelOverhead > 0)
    out += format("kernel overhead   %s per kernel (%lld small kernels "
                  "replayed from a graph)\n",
                  formatTime(gpus.kernelOverhead).c_str(),
                  static_cast<long long>(gpus.kernelLaunches));
  out += "matmul (cuBLAS, median of the timed runs):\n";
  out += format("  %-5s %7s %7s %7s %11s %9s\n", "dtype", "m", "n", "k", "time",
                "TFLOP/s");
  for (const MatmulSample &sample : gpus.matmuls)
    out += format(
        "  %-5s %7lld %7lld %7lld %11s %9.2f\n", toString(sample.dtype),
        static_cast<long long>(sample.m), static_cast<long long>(sample.n),
        static_cast<long long>(sample.k), formatTime(sample.seconds).c_str(),
        sample.flopsPerSecond / 1e12);
  std::string peaks;
  for (const auto &[dtype, flops] : bestPerDType(gpus))
    peaks += format("%s%s %.4g", peaks.empty() ? "" : ", ", toString(dtype),
                    flops / 1e12);
  out += "peak TFLOP/s      " + (peaks.empty() ? "-" : peaks) +
         " (the best of each type)\n";

  if (gpus.deviceCount < 2) {
    out += "all-reduce        not measured (one device: no intra-node link)\n";
  } else if (gpus.ncclBusBandwidth && gpus.ncclLatency) {
    out += format("all-reduce        %.4g GB/s bus bandwidth (%s in %s), ",
                  *gpus.ncclBusBandwidth / 1e9,
                  formatSize(gpus.ncclLargeBytes).c_str(),
                  formatTime(gpus.ncclLargeSeconds).c_str());
    out += format("%s latency per step (%s in %s), %lld devices\n",
                  formatTime(*gpus.ncclLatency).c_str(),
                  formatSize(gpus.ncclSmallBytes).c_str(),
                  formatTime(gpus.ncclSmallSeconds).c_str(),
                  static_cast<long long>(gpus.deviceCount));
  } else {
    out += "all-reduce        not measured\n";
  }
  return out;
}
