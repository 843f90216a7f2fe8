//===- CalibrateCommand.cpp - parplan calibrate ---------------------------===//

#include "Commands.h"

#include "parplan/Cost/Calibration.h"
#include "parplan/Cost/ClusterFile.h"

#include "llvm/ADT/StringRef.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace {

/// `parplan calibrate --list-devices`: one line per visible GPU, or why
/// there is none; exits 0 either way.
int listDevices() {
  std::vector<parplan::cost::GpuInfo> gpus;
  if (std::optional<std::string> reason = parplan::cost::listLocalGpus(gpus)) {
    std::printf("no CUDA device: %s\n", reason->c_str());
    return 0;
  }
  for (const parplan::cost::GpuInfo &gpu : gpus)
    std::printf("%d: %s, %.4g GB, compute capability %s\n", gpu.index,
                gpu.name.c_str(), gpu.memoryBytes / 1e9,
                gpu.computeCapability.c_str());
  return 0;
}

/// Writes `text` to `path`; false, the reason printed, when it cannot.
bool writeFile(const std::string &path, const std::string &text) {
  std::FILE *file = std::fopen(path.c_str(), "w");
  bool written =
      file && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  int error = errno;
  if (file && std::fclose(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written)
    std::fprintf(stderr, "parplan calibrate: cannot write '%s': %s\n",
                 path.c_str(), std::strerror(error));
  return written;
}

} // namespace

/// `parplan calibrate`: measure the local GPUs and write the cluster file
/// (docs/cluster.md, "Calibrated clusters").
int parplan::cli::runCalibrate(const CalibrateOptions &options) {
  using namespace parplan::cost;
  if (options.listDevices)
    return listDevices();
  auto fail = [](const std::string &error) {
    std::fprintf(stderr, "parplan calibrate: %s\n", error.c_str());
    return 1;
  };
  // What can be checked is checked before measuring, which takes a while.
  if (options.name.empty())
    return fail("--name must not be empty");
  if (!options.output.empty()) {
    std::string directory = options.output;
    size_t slash = directory.find_last_of('/');
    directory = slash == std::string::npos ? "."
                : slash == 0               ? "/"
                                           : directory.substr(0, slash);
    if (access(directory.c_str(), W_OK) != 0)
      return fail("cannot write '" + options.output +
                  "': " + std::strerror(errno));
  }
  CalibrationOptions calibration;
  calibration.devices = options.devices;
  calibration.quick = options.quick;
  // Progress only where someone watches: measuring takes a while.
  if (isatty(STDERR_FILENO))
    calibration.progress = [](const std::string &what) {
      std::fprintf(stderr, "parplan calibrate: measuring %s\n", what.c_str());
    };
  GpuMeasurements gpus;
  if (std::optional<std::string> error = measureLocalGpus(calibration, gpus))
    return fail(*error);
  std::string error;
  std::optional<Cluster> cluster =
      clusterFromMeasurements(gpus, options.name, error);
  if (!cluster)
    return fail("the measurements make no valid cluster: " + error);

  bool json = llvm::StringRef(options.output).ends_with_insensitive(".json");
  std::string text =
      json ? writeClusterJson(*cluster) : writeClusterYaml(*cluster);
  // What is written must load back: check it before writing it.
  std::string check;
  if (!parseCluster(text, json ? "calibrated.json" : "calibrated.yaml", check))
    return fail("the calibrated cluster does not load back: " + check);

  std::string table = formatMeasurements(gpus);
  if (options.output.empty()) {
    // The file on stdout, the table beside it on stderr.
    std::fputs(table.c_str(), stderr);
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  if (!writeFile(options.output, text))
    return 1;
  std::fputs(table.c_str(), stdout);
  std::printf("wrote %s: cluster '%s', %lld x %s\n", options.output.c_str(),
              cluster->name.c_str(),
              static_cast<long long>(cluster->numDevices()),
              cluster->deviceTypes.front().name.c_str());
  return 0;
}
