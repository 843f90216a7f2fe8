//===- CalibrationCuda.cu - measuring the local GPUs ----------------------===//
//
// `parplan calibrate`'s measurements (docs/cluster.md, "Calibrated
// clusters"): cuBLAS matmuls per element type and a device-to-device copy on
// the first GPU, cudaMemGetInfo on every GPU, and an NCCL all-reduce over
// all of them in one process. Every CUDA, cuBLAS and NCCL call is checked;
// a failure is one line naming the call, and every allocation is released on
// every path (the RAII holders below). cuBLAS is opened with dlopen when
// measuring rather than linked: loading it (and libcublasLt, half a
// gigabyte) would cost every parplan command about 0.4 s at startup.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/Calibration.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

using namespace parplan::cost;

namespace {

using Error = std::optional<std::string>;

/// The function named by a call's text: "cudaMalloc(&p, n)" -> "cudaMalloc".
std::string callName(const char *call) {
  std::string text(call);
  return text.substr(0, text.find('('));
}

Error check(cudaError_t status, const char *call) {
  if (status == cudaSuccess)
    return std::nullopt;
  // Clears the error, unless it is sticky (the context is then lost anyway).
  (void)cudaGetLastError();
  return callName(call) + ": " + cudaGetErrorString(status);
}

//===----------------------------------------------------------------------===//
// cuBLAS, opened on first use
//===----------------------------------------------------------------------===//

#define PARPLAN_STRINGIFY_(x) #x
#define PARPLAN_STRINGIFY(x) PARPLAN_STRINGIFY_(x)

/// The cuBLAS functions used, from the library of the major version the
/// headers are (libcublas.so.13 for CUDA 13).
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) setStream = nullptr;
  decltype(&cublasSetPointerMode_v2) setPointerMode = nullptr;
  /// cublasGemmEx has a C++ overload (cudaDataType compute type): the type
  /// is spelled out.
  cublasStatus_t (*gemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                           int, int, int, const void *, const void *,
                           cudaDataType, int, const void *, cudaDataType, int,
                           const void *, void *, cudaDataType, int,
                           cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusString) statusString = nullptr;
  decltype(&cublasGetProperty) getProperty = nullptr;
};

/// Set once cuBLAS is loaded; the library stays loaded until exit.
const CublasApi *cublas = nullptr;

Error loadCublas() {
  static CublasApi api;
  static Error failure;
  static bool tried = false;
  if (tried)
    return cublas ? std::nullopt : failure;
  tried = true;
  const char *name = "libcublas.so." PARPLAN_STRINGIFY(CUBLAS_VER_MAJOR);
  void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
#ifdef PARPLAN_CUDA_LIBRARY_DIR
  if (!library)
    library =
        dlopen((std::string(PARPLAN_CUDA_LIBRARY_DIR) + "/" + name).c_str(),
               RTLD_NOW | RTLD_LOCAL);
#endif
  if (!library) {
    const char *reason = dlerror();
    failure = std::string("cannot load cuBLAS (dlopen ") + name + ": " +
              (reason ? reason : "not found") + ")";
    return failure;
  }
  auto bind = [&](auto &function, const char *symbol) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
        dlsym(library, symbol));
    if (!function && !failure)
      failure =
          std::string("cannot load cuBLAS: ") + name + " has no " + symbol;
  };
  bind(api.create, PARPLAN_STRINGIFY(cublasCreate));
  bind(api.destroy, PARPLAN_STRINGIFY(cublasDestroy));
  bind(api.setStream, PARPLAN_STRINGIFY(cublasSetStream));
  bind(api.setPointerMode, PARPLAN_STRINGIFY(cublasSetPointerMode));
  bind(api.gemmEx, "cublasGemmEx");
  bind(api.statusString, "cublasGetStatusString");
  bind(api.getProperty, "cublasGetProperty");
  if (failure)
    return failure;
  cublas = &api;
  return std::nullopt;
}

Error check(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  const char *text = cublas ? cublas->statusString(status) : nullptr;
  return callName(call) + ": " +
         (text ? std::string(text)
               : "cuBLAS status " + std::to_string(static_cast<int>(status)));
}

Error check(ncclResult_t status, const char *call) {
  if (status == ncclSuccess || status == ncclInProgress)
    return std::nullopt;
  return callName(call) + ": " + ncclGetErrorString(status);
}

/// Returns from the enclosing function with the error of a failed call.
#define TRY(call)                                                              \
  do {                                                                         \
    if (Error tryError_ = check((call), #call))                                \
      return tryError_;                                                        \
  } while (false)

/// The same, naming the call `name` (a call through a function pointer).
#define TRY_AS(name, call)                                                     \
  do {                                                                         \
    if (Error tryError_ = check((call), name))                                 \
      return tryError_;                                                        \
  } while (false)

/// Returns from the enclosing function with an error that is not a call's.
#define TRY_ERROR(expression)                                                  \
  do {                                                                         \
    if (Error tryError_ = (expression))                                        \
      return tryError_;                                                        \
  } while (false)

/// "1.00 GiB", "256 MiB".
std::string formatBytes(size_t bytes) {
  char text[32];
  if (bytes >= (size_t(1) << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(1 << 30));
  else
    std::snprintf(text, sizeof text, "%.0f MiB", bytes / double(1 << 20));
  return text;
}

//===----------------------------------------------------------------------===//
// Holders: each releases what it holds, errors ignored (nothing is left to
// report them to), on the device that owns it.
//===----------------------------------------------------------------------===//

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (pointer && cudaSetDevice(device) == cudaSuccess)
      (void)cudaFree(pointer);
  }
  Error allocate(int owner, size_t size) {
    device = owner;
    TRY(cudaSetDevice(owner));
    if (Error error = check(cudaMalloc(&pointer, size), "cudaMalloc")) {
      pointer = nullptr;
      return *error + " (" + formatBytes(size) + ")";
    }
    return std::nullopt;
  }
  void *get() const { return pointer; }

private:
  int device = 0;
  void *pointer = nullptr;
};

class Stream {
public:
  Stream() = default;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream() {
    if (stream && cudaSetDevice(device) == cudaSuccess)
      (void)cudaStreamDestroy(stream);
  }
  Error create(int owner) {
    device = owner;
    TRY(cudaSetDevice(owner));
    TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return std::nullopt;
  }
  cudaStream_t get() const { return stream; }

private:
  int device = 0;
  cudaStream_t stream = nullptr;
};

class Event {
public:
  Event() = default;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event() {
    if (event && cudaSetDevice(device) == cudaSuccess)
      (void)cudaEventDestroy(event);
  }
  Error create(int owner) {
    device = owner;
    TRY(cudaSetDevice(owner));
    TRY(cudaEventCreate(&event));
    return std::nullopt;
  }
  cudaEvent_t get() const { return event; }

private:
  int device = 0;
  cudaEvent_t event = nullptr;
};

class CublasHandle {
public:
  CublasHandle() = default;
  CublasHandle(const CublasHandle &) = delete;
  CublasHandle &operator=(const CublasHandle &) = delete;
  ~CublasHandle() {
    if (handle && cudaSetDevice(device) == cudaSuccess)
      (void)cublas->destroy(handle);
  }
  Error create(int owner) {
    device = owner;
    TRY(cudaSetDevice(owner));
    TRY_ERROR(loadCublas());
    TRY_AS("cublasCreate", cublas->create(&handle));
    return std::nullopt;
  }
  cublasHandle_t get() const { return handle; }

private:
  int device = 0;
  cublasHandle_t handle = nullptr;
};

/// NCCL communicators of one process over several devices. Destroyed when
/// every collective completed, aborted otherwise (destroying a communicator
/// with work in flight may wait for it forever).
class NcclComms {
public:
  NcclComms() = default;
  NcclComms(const NcclComms &) = delete;
  NcclComms &operator=(const NcclComms &) = delete;
  ~NcclComms() {
    for (ncclComm_t comm : comms)
      if (comm)
        (void)(finished ? ncclCommDestroy(comm) : ncclCommAbort(comm));
  }
  Error initialize(const std::vector<int> &devices) {
    comms.assign(devices.size(), nullptr);
    TRY(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()),
                        devices.data()));
    return std::nullopt;
  }
  ncclComm_t operator[](size_t i) const { return comms[i]; }
  /// Every collective launched so far has completed.
  void markFinished() { finished = true; }

private:
  std::vector<ncclComm_t> comms;
  bool finished = false;
};

//===----------------------------------------------------------------------===//
// Filling buffers with values in [-1, 1): zeros would let the GPU draw less
// power (and clock higher) than real data does.
//===----------------------------------------------------------------------===//

template <typename T> __device__ T fromFloat(float value);
template <> __device__ float fromFloat<float>(float value) { return value; }
template <> __device__ double fromFloat<double>(float value) { return value; }
template <> __device__ __half fromFloat<__half>(float value) {
  return __float2half(value);
}
template <> __device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float value) {
  return __float2bfloat16(value);
}

template <typename T>
__global__ void fillKernel(T *data, size_t count, uint32_t seed) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    data[i] =
        fromFloat<T>(static_cast<float>(x >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

template <typename T>
Error fill(void *data, size_t count, uint32_t seed, cudaStream_t stream) {
  if (count == 0)
    return std::nullopt;
  unsigned threads = 256;
  size_t blocks = std::min<size_t>(4096, (count + threads - 1) / threads);
  fillKernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
      static_cast<T *>(data), count, seed);
  TRY(cudaGetLastError());
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  if (n == 0)
    return 0;
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// How long and how often each measurement runs.
struct Plan {
  /// Warm-up: at least this long (clocks ramp up) and this many runs.
  double warmupSeconds;
  int minWarmupRuns;
  /// Timed runs: as many as fit in `budgetSeconds`, within these bounds.
  double budgetSeconds;
  int minRuns;
  int maxRuns;
};

Plan timingPlan(bool quick) {
  return quick ? Plan{0.05, 1, 0.25, 3, 5} : Plan{0.2, 3, 1.0, 5, 20};
}

/// Times `launch` (which enqueues one run on `stream`) with CUDA events:
/// warm-up, then runs timed one by one. Sets `seconds` to the median.
template <typename Launch>
Error timeOnStream(int device, cudaStream_t stream, const Plan &plan,
                   Launch launch, double &seconds) {
  Event start, stop;
  TRY_ERROR(start.create(device));
  TRY_ERROR(stop.create(device));
  auto timeRuns = [&](int runs, double &elapsed) -> Error {
    TRY(cudaEventRecord(start.get(), stream));
    for (int i = 0; i < runs; ++i)
      TRY_ERROR(launch());
    TRY(cudaEventRecord(stop.get(), stream));
    TRY(cudaEventSynchronize(stop.get()));
    float ms = 0;
    TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    elapsed = ms * 1e-3;
    return std::nullopt;
  };

  // Warm-up, in batches sized from the runs so far.
  double spent = 0, single = 0;
  int done = 0;
  while (done < plan.minWarmupRuns || spent < plan.warmupSeconds) {
    int batch = 1;
    if (done > 0 && single > 0)
      batch = static_cast<int>(
          std::clamp((plan.warmupSeconds - spent) / single, 1.0, 1000.0));
    double elapsed = 0;
    TRY_ERROR(timeRuns(batch, elapsed));
    spent += elapsed;
    done += batch;
    // The latest batch: the first run also loads kernels and picks one.
    single = elapsed / batch;
    if (done >= 100000)
      break;
  }

  int runs = plan.maxRuns;
  if (single > 0)
    runs = static_cast<int>(std::clamp(plan.budgetSeconds / single,
                                       static_cast<double>(plan.minRuns),
                                       static_cast<double>(plan.maxRuns)));
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    double elapsed = 0;
    TRY_ERROR(timeRuns(1, elapsed));
    times.push_back(elapsed);
  }
  seconds = median(times);
  if (!(seconds > 0))
    return std::string("cudaEventElapsedTime: measured no time");
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Matmuls
//===----------------------------------------------------------------------===//

struct GemmType {
  ComputeType dtype;
  cudaDataType_t dataType;
  cublasComputeType_t computeType;
  size_t elementBytes;
};

/// f32 is pedantic (no TF32 or emulation: what fp32 training gets by
/// default); tf32 runs f32 data on the tensor cores; bf16 and f16
/// accumulate in f32.
const GemmType kGemmTypes[] = {
    {ComputeType::F64, CUDA_R_64F, CUBLAS_COMPUTE_64F, 8},
    {ComputeType::F32, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 4},
    {ComputeType::TF32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4},
    {ComputeType::BF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2},
    {ComputeType::F16, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2},
};

struct GemmShape {
  int m, n, k;
};

/// Square products and the MLP up-projection of a 4096-wide transformer
/// over 8192 tokens (m tokens, k hidden, n = 4 x hidden).
const GemmShape kFullShapes[] = {
    {4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 16384, 4096}};
const GemmShape kQuickShapes[] = {{4096, 4096, 4096}};

Error fillMatrix(const GemmType &type, void *data, size_t count, uint32_t seed,
                 cudaStream_t stream) {
  switch (type.dataType) {
  case CUDA_R_64F:
    return fill<double>(data, count, seed, stream);
  case CUDA_R_16BF:
    return fill<__nv_bfloat16>(data, count, seed, stream);
  case CUDA_R_16F:
    return fill<__half>(data, count, seed, stream);
  default:
    return fill<float>(data, count, seed, stream);
  }
}

Error measureMatmuls(const CalibrationOptions &options, int device,
                     std::vector<MatmulSample> &samples) {
  const GemmShape *shapes = options.quick ? kQuickShapes : kFullShapes;
  size_t numShapes =
      options.quick ? std::size(kQuickShapes) : std::size(kFullShapes);
  size_t largest = 0;
  for (size_t s = 0; s < numShapes; ++s) {
    const GemmShape &shape = shapes[s];
    largest = std::max(largest, size_t(shape.m) * shape.k +
                                    size_t(shape.k) * shape.n +
                                    size_t(shape.m) * shape.n);
  }
  DeviceBuffer pool;
  TRY_ERROR(pool.allocate(device, largest * sizeof(double)));
  Stream stream;
  TRY_ERROR(stream.create(device));
  CublasHandle handle;
  TRY_ERROR(handle.create(device));
  TRY_AS("cublasSetStream", cublas->setStream(handle.get(), stream.get()));
  TRY_AS("cublasSetPointerMode",
         cublas->setPointerMode(handle.get(), CUBLAS_POINTER_MODE_HOST));
  Plan plan = timingPlan(options.quick);

  for (const GemmType &type : kGemmTypes) {
    for (size_t s = 0; s < numShapes; ++s) {
      const GemmShape &shape = shapes[s];
      MatmulSample sample;
      sample.dtype = type.dtype;
      sample.m = shape.m;
      sample.n = shape.n;
      sample.k = shape.k;
      if (options.progress)
        options.progress(std::string(toString(type.dtype)) + " matmul " +
                         std::to_string(shape.m) + "x" +
                         std::to_string(shape.n) + "x" +
                         std::to_string(shape.k));
      size_t countA = size_t(shape.m) * shape.k;
      size_t countB = size_t(shape.k) * shape.n;
      size_t countC = size_t(shape.m) * shape.n;
      char *base = static_cast<char *>(pool.get());
      void *a = base;
      void *b = base + countA * type.elementBytes;
      void *c = base + (countA + countB) * type.elementBytes;
      TRY_ERROR(fillMatrix(type, a, countA, 1, stream.get()));
      TRY_ERROR(fillMatrix(type, b, countB, 2, stream.get()));
      TRY_ERROR(fillMatrix(type, c, countC, 3, stream.get()));

      double alpha64 = 1, beta64 = 0;
      float alpha32 = 1, beta32 = 0;
      bool wide = type.computeType == CUBLAS_COMPUTE_64F;
      const void *alpha = wide ? static_cast<const void *>(&alpha64)
                               : static_cast<const void *>(&alpha32);
      const void *beta = wide ? static_cast<const void *>(&beta64)
                              : static_cast<const void *>(&beta32);
      // Column-major C[m, n] = A[m, k] B[k, n].
      auto launch = [&]() -> Error {
        TRY_AS("cublasGemmEx",
               cublas->gemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, shape.m,
                              shape.n, shape.k, alpha, a, type.dataType,
                              shape.m, b, type.dataType, shape.k, beta, c,
                              type.dataType, shape.m, type.computeType,
                              CUBLAS_GEMM_DEFAULT));
        return std::nullopt;
      };
      TRY_ERROR(
          timeOnStream(device, stream.get(), plan, launch, sample.seconds));
      sample.flopsPerSecond = 2.0 * double(shape.m) * double(shape.n) *
                              double(shape.k) / sample.seconds;
      samples.push_back(sample);
    }
  }
  TRY(cudaStreamSynchronize(stream.get()));
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Memory bandwidth
//===----------------------------------------------------------------------===//

Error measureCopy(const CalibrationOptions &options, int device,
                  GpuMeasurements &gpus) {
  size_t bytes = options.quick ? size_t(256) << 20 : size_t(1) << 30;
  if (options.progress)
    options.progress("device-to-device copy of " + formatBytes(bytes));
  DeviceBuffer source, target;
  TRY_ERROR(source.allocate(device, bytes));
  TRY_ERROR(target.allocate(device, bytes));
  Stream stream;
  TRY_ERROR(stream.create(device));
  TRY_ERROR(fill<float>(source.get(), bytes / sizeof(float), 4, stream.get()));
  auto launch = [&]() -> Error {
    TRY(cudaMemcpyAsync(target.get(), source.get(), bytes,
                        cudaMemcpyDeviceToDevice, stream.get()));
    return std::nullopt;
  };
  double seconds = 0;
  TRY_ERROR(timeOnStream(device, stream.get(), timingPlan(options.quick),
                         launch, seconds));
  TRY(cudaStreamSynchronize(stream.get()));
  gpus.copyBytes = static_cast<double>(bytes);
  gpus.memoryBandwidth = 2.0 * static_cast<double>(bytes) / seconds;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Kernel overhead
//===----------------------------------------------------------------------===//

/// A small kernel as a step has many of: every thread reads, adds and
/// writes one float (the next kernel on the stream reads what it wrote).
__global__ void touchKernel(float *data, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count)
    data[i] += 1.0f;
}

/// The time per kernel of a small kernel (touchKernel over 32K floats,
/// 128 blocks of 256 threads) replayed back to back from a CUDA graph, as
/// parplan-run's CUDA backend replays a step's device kernels
/// (CudaOptions::graphs): the least time a kernel of a step takes, its
/// start on the GPU and a round trip to memory. Host wall time from the
/// graph's launch to the stream's synchronization, over its kernels; the
/// median of three replays after a warm-up replay.
Error measureKernelOverhead(const CalibrationOptions &options, int device,
                            GpuMeasurements &gpus) {
  int launches = options.quick ? 1000 : 5000;
  if (options.progress)
    options.progress(std::to_string(launches) +
                     " small kernels replayed from a graph");
  constexpr int kCount = 32 << 10, kThreads = 256;
  DeviceBuffer data;
  TRY_ERROR(data.allocate(device, kCount * sizeof(float)));
  Stream stream;
  TRY_ERROR(stream.create(device));
  TRY(cudaMemsetAsync(data.get(), 0, kCount * sizeof(float), stream.get()));
  TRY(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < launches; ++i)
    touchKernel<<<kCount / kThreads, kThreads, 0, stream.get()>>>(
        static_cast<float *>(data.get()), kCount);
  cudaGraph_t graph = nullptr;
  cudaError_t captured = cudaStreamEndCapture(stream.get(), &graph);
  cudaGraphExec_t exec = nullptr;
  if (captured == cudaSuccess)
    captured = cudaGraphInstantiate(&exec, graph, 0);
  if (graph)
    cudaGraphDestroy(graph);
  TRY(captured);
  std::vector<double> perKernel;
  cudaError_t replayed = cudaSuccess;
  for (int replay = 0; replay < 4 && replayed == cudaSuccess; ++replay) {
    auto start = std::chrono::steady_clock::now();
    replayed = cudaGraphLaunch(exec, stream.get());
    if (replayed == cudaSuccess)
      replayed = cudaStreamSynchronize(stream.get());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (replay > 0)
      perKernel.push_back(seconds / launches);
  }
  cudaGraphExecDestroy(exec);
  TRY(replayed);
  gpus.kernelOverhead = median(perKernel);
  gpus.kernelLaunches = launches;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// NCCL all-reduce
//===----------------------------------------------------------------------===//

/// Per device: a stream and the send and receive buffers.
struct Rank {
  Stream stream;
  DeviceBuffer send, receive;
};

/// One all-reduce of `count` floats on every device, in one group.
Error allReduce(NcclComms &comms, std::vector<std::unique_ptr<Rank>> &ranks,
                size_t count) {
  TRY(ncclGroupStart());
  Error failed;
  for (size_t i = 0; i < ranks.size() && !failed; ++i)
    failed = check(ncclAllReduce(ranks[i]->send.get(), ranks[i]->receive.get(),
                                 count, ncclFloat, ncclSum, comms[i],
                                 ranks[i]->stream.get()),
                   "ncclAllReduce");
  // The group is closed whatever happened inside it.
  Error ended = check(ncclGroupEnd(), "ncclGroupEnd");
  return failed ? failed : ended;
}

Error synchronizeAll(std::vector<std::unique_ptr<Rank>> &ranks) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    TRY(cudaSetDevice(static_cast<int>(i)));
    TRY(cudaStreamSynchronize(ranks[i]->stream.get()));
  }
  return std::nullopt;
}

/// Median time of one all-reduce of `count` floats: each sample runs
/// `iterations` back to back between two synchronizations, on the host
/// clock (as nccl-tests does), after `warmup` untimed ones.
Error timeAllReduce(NcclComms &comms, std::vector<std::unique_ptr<Rank>> &ranks,
                    size_t count, int warmup, int samples, int iterations,
                    double &seconds) {
  for (int i = 0; i < warmup; ++i)
    TRY_ERROR(allReduce(comms, ranks, count));
  TRY_ERROR(synchronizeAll(ranks));
  std::vector<double> times;
  for (int s = 0; s < samples; ++s) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i)
      TRY_ERROR(allReduce(comms, ranks, count));
    TRY_ERROR(synchronizeAll(ranks));
    std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    times.push_back(elapsed.count() / iterations);
  }
  seconds = median(times);
  if (!(seconds > 0))
    return std::string("all-reduce: measured no time");
  return std::nullopt;
}

Error measureAllReduce(const CalibrationOptions &options, int devices,
                       GpuMeasurements &gpus) {
  size_t largeBytes = options.quick ? size_t(64) << 20 : size_t(256) << 20;
  size_t smallBytes = 8;
  if (options.progress)
    options.progress("NCCL all-reduce over " + std::to_string(devices) +
                     " devices");
  // Buffers and streams first: they outlive the communicators, which are
  // torn down first.
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int i = 0; i < devices; ++i) {
    ranks.push_back(std::make_unique<Rank>());
    Rank &rank = *ranks.back();
    TRY_ERROR(rank.stream.create(i));
    TRY_ERROR(rank.send.allocate(i, largeBytes));
    TRY_ERROR(rank.receive.allocate(i, largeBytes));
    TRY_ERROR(fill<float>(rank.send.get(), largeBytes / sizeof(float),
                          5 + static_cast<uint32_t>(i), rank.stream.get()));
  }
  TRY_ERROR(synchronizeAll(ranks));
  std::vector<int> ids(devices);
  std::iota(ids.begin(), ids.end(), 0);
  NcclComms comms;
  TRY_ERROR(comms.initialize(ids));

  double largeSeconds = 0, smallSeconds = 0;
  int samples = options.quick ? 3 : 5;
  TRY_ERROR(timeAllReduce(comms, ranks, largeBytes / sizeof(float), 2, samples,
                          options.quick ? 2 : 5, largeSeconds));
  TRY_ERROR(timeAllReduce(comms, ranks, smallBytes / sizeof(float), 20, samples,
                          options.quick ? 20 : 100, smallSeconds));
  comms.markFinished();

  gpus.ncclLargeBytes = static_cast<double>(largeBytes);
  gpus.ncclLargeSeconds = largeSeconds;
  gpus.ncclSmallBytes = static_cast<double>(smallBytes);
  gpus.ncclSmallSeconds = smallSeconds;
  gpus.ncclBusBandwidth = allReduceBusBandwidth(
      devices, static_cast<double>(largeBytes), largeSeconds);
  gpus.ncclLatency = allReduceStepLatency(devices, smallSeconds);
  int version = 0;
  TRY(ncclGetVersion(&version));
  gpus.ncclVersion = "NCCL " + std::to_string(version / 10000) + "." +
                     std::to_string(version / 100 % 100) + "." +
                     std::to_string(version % 100);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Devices and versions
//===----------------------------------------------------------------------===//

/// The number of visible devices, or why there is none.
Error visibleDevices(int &count) {
  count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
  }
  if (count <= 0)
    return std::string("cudaGetDeviceCount: no device is visible");
  return std::nullopt;
}

std::string cudaVersions() {
  int runtime = 0, driver = 0, major = 0, minor = 0, patch = 0;
  std::string text;
  auto version = [](int code) {
    return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
  };
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    text += "CUDA runtime " + version(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0)
    text +=
        (text.empty() ? "" : ", ") + std::string("driver ") + version(driver);
  if (cublas &&
      cublas->getProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublas->getProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublas->getProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    text += (text.empty() ? "" : ", ") + std::string("cuBLAS ") +
            std::to_string(major) + "." + std::to_string(minor) + "." +
            std::to_string(patch);
  return text;
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  char text[64] = "";
  if (gmtime_r(&now, &utc))
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

std::string hostName() {
  char name[256] = "";
  if (gethostname(name, sizeof name - 1) != 0)
    return "";
  name[sizeof name - 1] = '\0';
  return name;
}

Error measure(const CalibrationOptions &options, GpuMeasurements &gpus) {
  int visible = 0;
  if (Error reason = visibleDevices(visible))
    return "no CUDA device (" + *reason + ")";
  if (options.devices < 0)
    return std::string("--devices must be positive");
  if (options.devices > visible)
    return "--devices " + std::to_string(options.devices) + " but only " +
           std::to_string(visible) + " CUDA device" +
           (visible == 1 ? " is" : "s are") + " visible";
  int devices = options.devices ? static_cast<int>(options.devices) : visible;
  TRY_ERROR(loadCublas());

  gpus = GpuMeasurements();
  gpus.timestamp = utcNow();
  gpus.hostName = hostName();
  gpus.deviceCount = devices;
  gpus.cudaVersion = cudaVersions();
  for (int i = 0; i < devices; ++i) {
    cudaDeviceProp properties{};
    TRY(cudaGetDeviceProperties(&properties, i));
    std::string name(properties.name);
    if (i == 0)
      gpus.gpuName = name;
    else if (name != gpus.gpuName)
      return "device " + std::to_string(i) + " is a " + name +
             " but device 0 a " + gpus.gpuName +
             ": calibrate GPUs of one kind (--devices N takes the first N)";
    TRY(cudaSetDevice(i));
    size_t freeBytes = 0, total = 0;
    TRY(cudaMemGetInfo(&freeBytes, &total));
    double bytes = static_cast<double>(total);
    gpus.memoryBytes = i == 0 ? bytes : std::min(gpus.memoryBytes, bytes);
  }

  TRY_ERROR(measureCopy(options, 0, gpus));
  TRY_ERROR(measureKernelOverhead(options, 0, gpus));
  TRY_ERROR(measureMatmuls(options, 0, gpus.matmuls));
  if (devices >= 2)
    TRY_ERROR(measureAllReduce(options, devices, gpus));
  return std::nullopt;
}

} // namespace

std::optional<std::string>
parplan::cost::listLocalGpus(std::vector<GpuInfo> &gpus) {
  gpus.clear();
  int visible = 0;
  if (Error reason = visibleDevices(visible))
    return reason;
  for (int i = 0; i < visible; ++i) {
    cudaDeviceProp properties{};
    TRY(cudaGetDeviceProperties(&properties, i));
    GpuInfo info;
    info.index = i;
    info.name = properties.name;
    info.memoryBytes = static_cast<double>(properties.totalGlobalMem);
    info.computeCapability = std::to_string(properties.major) + "." +
                             std::to_string(properties.minor);
    gpus.push_back(info);
  }
  return std::nullopt;
}

std::optional<std::string>
parplan::cost::measureLocalGpus(const CalibrationOptions &options,
                                GpuMeasurements &gpus) {
  Error error = measure(options, gpus);
  // Leave device 0 current, whatever was measured last.
  int visible = 0;
  if (cudaGetDeviceCount(&visible) == cudaSuccess && visible > 0)
    (void)cudaSetDevice(0);
  else
    (void)cudaGetLastError();
  return error;
}
