//===- Calibration.h - a cluster description measured on local GPUs -*- C++
//-*-//
//
// `parplan calibrate` measures the local GPUs (matmul throughput per element
// type with cuBLAS, memory bandwidth, NCCL all-reduce between the GPUs) and
// turns the figures into a cluster description (docs/cluster.md, "Calibrated
// clusters"). The measuring lives in the ParplanCalibration library, built
// from CalibrationCuda.cu with CUDA and from a stub without; the rest of this
// header is plain C++ in ParplanCluster, with no CUDA or MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_CALIBRATION_H
#define PARPLAN_COST_CALIBRATION_H

#include "parplan/Cost/Cluster.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parplan::cost {

/// One timed matrix product C[m, n] = A[m, k] x B[k, n].
struct MatmulSample {
  ComputeType dtype = ComputeType::F32;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  /// Median time of one product, seconds.
  double seconds = 0;
  /// 2 m n k / seconds.
  double flopsPerSecond = 0;
};

/// What `parplan calibrate` measured on the local GPUs, all of one kind.
struct GpuMeasurements {
  /// As cudaGetDeviceProperties names it ("NVIDIA H100 80GB HBM3").
  std::string gpuName;
  /// The machine's host name; empty when unknown.
  std::string hostName;
  /// GPUs measured (the first `deviceCount` visible ones).
  int64_t deviceCount = 0;
  /// Device memory, bytes (cudaMemGetInfo's total; the least of the GPUs).
  double memoryBytes = 0;
  /// Device memory bandwidth, bytes/s: 2 x copyBytes / time of a
  /// device-to-device copy (each byte is read once and written once).
  double memoryBandwidth = 0;
  /// Size of the copy that measured memoryBandwidth, bytes.
  double copyBytes = 0;
  /// Seconds per kernel of a small kernel (32K floats) replayed back to
  /// back from a CUDA graph: DeviceType::kernelOverhead. 0 when not
  /// measured.
  double kernelOverhead = 0;
  /// How many launches measured it.
  int64_t kernelLaunches = 0;
  std::vector<MatmulSample> matmuls;
  /// All-reduce bus bandwidth, bytes/s, as nccl-tests reports it:
  /// 2 (n-1)/n x ncclLargeBytes / time (allReduceBusBandwidth). Measured
  /// when deviceCount >= 2.
  std::optional<double> ncclBusBandwidth;
  /// Per-step latency, seconds: the time of an all-reduce of ncclSmallBytes
  /// over the 2 (n-1) steps of a ring (allReduceStepLatency).
  std::optional<double> ncclLatency;
  double ncclLargeBytes = 0;
  double ncclLargeSeconds = 0;
  double ncclSmallBytes = 0;
  double ncclSmallSeconds = 0;
  /// "CUDA runtime 13.0, driver 13.0, cuBLAS 13.0.2".
  std::string cudaVersion;
  /// "NCCL 2.27.7"; empty when NCCL was not used.
  std::string ncclVersion;
  /// When the measurement was taken, "2025-01-31 12:34:56 UTC".
  std::string timestamp;
};

/// How `parplan calibrate` measures.
struct CalibrationOptions {
  /// Use the first `devices` visible GPUs; 0 for all of them.
  int64_t devices = 0;
  /// Fewer shapes, smaller buffers and fewer repeats.
  bool quick = false;
  /// Called before each measurement with what it measures ("bf16 matmul
  /// 8192x8192x8192"); may be empty.
  std::function<void(const std::string &)> progress;
};

/// The bus bandwidth of a ring all-reduce of `bytes` over `devices` devices
/// that took `seconds`: 2 (n-1)/n x bytes / seconds, the per-link bandwidth
/// for which the cost model's all-reduce formula (docs/cost-model.md) gives
/// back `seconds` (less the latency term).
double allReduceBusBandwidth(int64_t devices, double bytes, double seconds);

/// The link latency of a ring all-reduce of a tiny message that took
/// `seconds` over `devices` devices: seconds / (2 (n-1)), the alpha of the
/// cost model's 2 (n-1) alpha term.
double allReduceStepLatency(int64_t devices, double seconds);

/// The cluster the measurements describe: one device type named after the
/// GPU, whose peak FLOP/s per element type is the best matmul measured in
/// it (an element type without a sample is left out), one node (named after
/// the host, else "node0") holding `deviceCount` devices and, with two
/// devices or more, the intra-node link of the all-reduce figures. On
/// missing, zero, negative or non-finite figures returns std::nullopt and
/// sets `error` to what is wrong: the result always passes checkCluster.
std::optional<Cluster> clusterFromMeasurements(const GpuMeasurements &gpus,
                                               const std::string &name,
                                               std::string &error);

/// A short human-readable table of the measurements, several lines, each
/// ending in '\n'.
std::string formatMeasurements(const GpuMeasurements &gpus);

/// One visible GPU, for `parplan calibrate --list-devices`.
struct GpuInfo {
  int index = 0;
  std::string name;
  double memoryBytes = 0;
  /// "9.0".
  std::string computeCapability;
};

/// Lists the visible GPUs. Returns why there are none ("cudaGetDeviceCount:
/// CUDA driver version is insufficient for CUDA runtime version", "this
/// parplan was built without CUDA ...", "no device is visible"), or
/// std::nullopt. Defined in the ParplanCalibration library.
std::optional<std::string> listLocalGpus(std::vector<GpuInfo> &gpus);

/// Measures the local GPUs into `gpus`. Returns one line saying what failed
/// (every CUDA, cuBLAS and NCCL error names its call; no GPU gives "no CUDA
/// device (cudaGetDeviceCount: ...)"), or std::nullopt. Defined in the
/// ParplanCalibration library.
std::optional<std::string> measureLocalGpus(const CalibrationOptions &options,
                                            GpuMeasurements &gpus);

} // namespace parplan::cost

#endif // PARPLAN_COST_CALIBRATION_H
