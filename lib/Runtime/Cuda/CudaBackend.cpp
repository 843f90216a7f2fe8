//===- CudaBackend.cpp - run a device's program on a GPU ------------------===//
//
// Compiled by the host compiler against the CUDA runtime, cuBLAS and NCCL;
// the kernels themselves are in CudaKernels.cu. Every CUDA, cuBLAS and NCCL
// call is checked and a failure names the call, since a GPU fault reported
// as "step failed" would leave the user nothing to go on.
//
// Data faults (an index out of range) cannot stop a kernel: the kernel
// writes its instruction's code into an error slot, the step finishes, and
// the backend reruns that instruction's reference kernel on the host to
// report the reference's own message.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/CudaBackend.h"

#include "Cuda/CudaKernels.h"
#include "Device/CollectiveSteps.h"
#include "Device/KernelPreparation.h"
#include "parplan/Runtime/StreamSchedule.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace parplan::runtime {

using device::alignUp;
using device::CollectiveStep;
using device::CudaLaunchContext;
using device::DeviceTensor;
using device::Region;
using device::StepKind;

namespace {

Status check(cudaError_t error, const char *call) {
  if (error == cudaSuccess)
    return Status::success();
  cudaGetLastError(); // clear a sticky launch error so later calls report
                      // theirs
  return Status::failure(std::string(call) + ": " + cudaGetErrorString(error));
}
Status check(ncclResult_t result, const char *call) {
  if (result == ncclSuccess)
    return Status::success();
  return Status::failure(std::string(call) + ": " + ncclGetErrorString(result));
}
Status check(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::success();
  return Status::failure(std::string(call) + ": " +
                         cublasGetStatusString(status));
}

#define PARPLAN_CHECK(call)                                                    \
  do {                                                                         \
    if (Status status_ = check((call), #call); !status_.ok())                  \
      return status_;                                                          \
  } while (false)

ncclDataType_t ncclType(DType type) {
  switch (type) {
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::I1:
    return ncclUint8;
  case DType::I8:
    return ncclInt8;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  }
  return ncclInt8;
}

/// NCCL's reduction (collectiveSteps has mapped the boolean ones).
ncclRedOp_t ncclOp(ReduceKind reduction) {
  switch (reduction) {
  case ReduceKind::Max:
    return ncclMax;
  case ReduceKind::Min:
    return ncclMin;
  case ReduceKind::Prod:
    return ncclProd;
  case ReduceKind::Sum:
    break;
  }
  return ncclSum;
}

/// An ncclGroupStart/End bracket that is always closed: a failed call
/// inside it is remembered, not returned from, since an open group would
/// defer every later NCCL call of the process, its teardown included.
class NcclGroup {
public:
  NcclGroup() : first_(check(ncclGroupStart(), "ncclGroupStart")) {}
  void note(Status status) {
    if (first_.ok())
      first_ = std::move(status);
  }
  void note(ncclResult_t result, const char *call) {
    note(check(result, call));
  }
  Status end() {
    Status closed = check(ncclGroupEnd(), "ncclGroupEnd");
    return first_.ok() ? closed : first_;
  }

private:
  Status first_;
};

/// A group's NCCL communicator and this process's place in it.
struct GroupComm {
  ncclComm_t comm = nullptr;
  int64_t index = -1;
  int64_t size = 0;
};

class CudaBackend : public Backend {
public:
  CudaBackend(Transport &world, const CudaOptions &options)
      : world_(world), options_(options) {}
  ~CudaBackend() override { release(); }

  Status open();

  std::string describe() const override {
    return "cuda (" + deviceName_ + ", GPU " + std::to_string(device_) + ")";
  }

  Status load(const plan::Program &program, const std::vector<AttrMap> &attrs,
              const std::map<std::string, Group> &groups) override;
  Status write(int64_t buffer, const Tensor &value) override;
  Status fillSynthetic(int64_t buffer, const SyntheticBlock &block,
                       bool &filled) override;
  Status read(int64_t buffer, Tensor &value) override;
  Status run(int64_t begin, int64_t end) override;
  Status applyUpdates() override;
  std::vector<std::string> hostKernels() const override;
  bool runsSchedules() const override { return false; }
  void setProfiling(bool on) override {
    profiling_ = on;
    profile_ = Profile();
  }
  const Profile &profile() const override { return profile_; }
  bool recordsTimeline() const override { return true; }
  void setTimeline(bool on) override;
  std::vector<InstructionRun> takeTimeline() override {
    std::vector<InstructionRun> taken;
    taken.swap(runs_);
    return taken;
  }

private:
  Status allocate();
  Status openNccl();
  /// Launches instructions [begin, end) on their streams.
  Status issue(int64_t begin, int64_t end, std::vector<double> *hostSeconds);
  /// Whether [begin, end) is device kernels alone, which a graph may
  /// replay (CudaOptions::graphs).
  bool deviceKernelsAlone(int64_t begin, int64_t end) const;
  /// Launches [begin, end)'s graph, capturing it on the range's second run;
  /// `launched` false: the caller issues the range itself (a range of
  /// anything but device kernels alone, or whose capture failed twice).
  Status launchGraph(int64_t begin, int64_t end, bool &launched);
  Status runKernelInstruction(int64_t index);
  /// Runs kernel `index`'s reference kernel on copies of its operands;
  /// with `writeBack`, copies the results to the device.
  Status runOnHost(int64_t index, bool writeBack);
  /// Copies a buffer out without waiting for the streams (the caller has).
  Status copyToHost(int64_t buffer, Tensor &value);
  /// Runs the messages first..last (consecutive sends and receives) in one
  /// NCCL group, as MPI's buffered sends would let them progress.
  Status runMessages(int64_t first, int64_t last);
  /// Runs a collective on `stream`: the gradients stream's (feeds_update)
  /// on the group's communicator of that stream.
  Status runCollective(const plan::Collective &collective, cudaStream_t stream);
  /// One of a collective's steps (not a group bracket).
  Status runStep(const CollectiveStep &step, const plan::Collective &collective,
                 const GroupComm &group, cudaStream_t stream);
  /// A communicator of its own, split from the group's, for each group the
  /// program reduces gradients over on the gradients stream, with resources
  /// of its own: a split sharing its parent's would be serialized with the
  /// parent's collectives, which the stream exists to pass.
  Status openGradientComms();
  void *stagingOf(cudaStream_t stream) const {
    return stream == gradientStream_ && gradientStaging_ ? gradientStaging_
                                                         : staging_;
  }
  cudaStream_t cudaStreamOf(Stream stream) const {
    return stream == Stream::Compute         ? computeStream_
           : stream == Stream::Communication ? commStream_
                                             : gradientStream_;
  }
  Status copyAsync(void *target, const void *source, size_t bytes,
                   cudaStream_t stream) {
    if (bytes == 0)
      return Status::success();
    PARPLAN_CHECK(cudaMemcpyAsync(target, source, bytes,
                                  cudaMemcpyDeviceToDevice, stream));
    return Status::success();
  }
  CudaLaunchContext context(cudaStream_t stream, int errorCode) {
    CudaLaunchContext context;
    context.stream = stream;
    context.blas = blas_;
    context.errorSlot = errorSlot_;
    context.errorCode = errorCode;
    bool compute = stream == computeStream_;
    context.scratch = compute ? &computeScratch_ : &commScratch_;
    context.scratchBytes = compute ? &computeScratchBytes_ : &commScratchBytes_;
    context.tf32 = options_.tf32;
    context.capturing = capturing_;
    return context;
  }
  size_t byteSize(int64_t buffer) const {
    return static_cast<size_t>(tensors_[buffer].numElements()) *
           byteWidth(tensors_[buffer].dtype);
  }
  Status synchronize() {
    PARPLAN_CHECK(cudaStreamSynchronize(gradientStream_));
    PARPLAN_CHECK(cudaStreamSynchronize(commStream_));
    PARPLAN_CHECK(cudaStreamSynchronize(computeStream_));
    return Status::success();
  }
  /// Frees what load made (a second load starts afresh).
  void releaseProgram();
  void release();

  Transport &world_;
  CudaOptions options_;
  int device_ = 0;
  std::string deviceName_;
  cudaStream_t computeStream_ = nullptr, commStream_ = nullptr,
               gradientStream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  static constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
  void *blasWorkspace_ = nullptr;
  int *errorSlot_ = nullptr;
  void *computeScratch_ = nullptr, *commScratch_ = nullptr;
  size_t computeScratchBytes_ = 0, commScratchBytes_ = 0;

  const plan::Program *program_ = nullptr;
  const std::vector<AttrMap> *attrs_ = nullptr;
  const std::map<std::string, Group> *groups_ = nullptr;
  void *pool_ = nullptr;
  std::vector<DeviceTensor> tensors_;
  StreamSchedule schedule_;
  std::vector<cudaEvent_t> events_;
  device::KernelPreparation prepared_;
  /// Staging for collectives that need their parts packed, and for the
  /// updates when a source is also a target; the gradients stream's
  /// collectives (a hierarchical all-reduce's scatter and gather) pack in
  /// a region of their own, as they run beside the communication stream's.
  void *staging_ = nullptr;
  void *gradientStaging_ = nullptr;
  bool updatesDisjoint_ = true;

  ncclComm_t worldComm_ = nullptr;
  std::map<std::string, GroupComm> groupComms_;
  /// By group: the gradients stream's communicator (openGradientComms).
  std::map<std::string, GroupComm> gradientComms_;

  /// A range's graph: its runs before capture, failed captures, the
  /// executable graph once made and the scratch it was captured with.
  struct RangeGraph {
    int64_t runs = 0, failures = 0;
    bool refused = false;
    cudaGraphExec_t exec = nullptr;
    void *scratch = nullptr;
    size_t scratchBytes = 0;
  };
  std::map<std::pair<int64_t, int64_t>, RangeGraph> graphs_;
  bool capturing_ = false;

  bool profiling_ = false;
  Profile profile_;
  /// A step failed part-way: collectives may be left queued.
  bool failed_ = false;
  /// Timing events around every instruction, made on the first profiled
  /// or traced step.
  std::vector<cudaEvent_t> starts_, ends_;
  /// With the timeline on: its zero, recorded on the compute stream, which
  /// the other streams wait for, when it was turned on, and the
  /// instructions run since, timed by starts_ and ends_
  /// (recorded as the streams reach them, without synchronizing).
  bool timeline_ = false;
  cudaEvent_t origin_ = nullptr;
  std::vector<InstructionRun> runs_;
};

void CudaBackend::setTimeline(bool on) {
  timeline_ = on;
  runs_.clear();
  if (!on)
    return;
  // The streams are idle between steps; the communication streams wait for
  // the zero, so that no instruction of any starts before it.
  if ((origin_ || cudaEventCreate(&origin_) == cudaSuccess) &&
      cudaEventRecord(origin_, computeStream_) == cudaSuccess &&
      cudaStreamWaitEvent(commStream_, origin_, 0) == cudaSuccess &&
      cudaStreamWaitEvent(gradientStream_, origin_, 0) == cudaSuccess)
    return;
  cudaGetLastError(); // no timeline then: run reports nothing recorded
  timeline_ = false;
}

Status CudaBackend::open() {
  int count = 0;
  PARPLAN_CHECK(cudaGetDeviceCount(&count));
  if (count == 0)
    return Status::failure("no CUDA device");
  device_ = options_.device;
  if (device_ < 0 || device_ >= count)
    return Status::failure("GPU " + std::to_string(device_) +
                           " does not exist: " + std::to_string(count) +
                           " visible");
  PARPLAN_CHECK(cudaSetDevice(device_));
  cudaDeviceProp properties;
  PARPLAN_CHECK(cudaGetDeviceProperties(&properties, device_));
  deviceName_ = properties.name;
  PARPLAN_CHECK(
      cudaStreamCreateWithFlags(&computeStream_, cudaStreamNonBlocking));
  PARPLAN_CHECK(cudaStreamCreateWithFlags(&commStream_, cudaStreamNonBlocking));
  PARPLAN_CHECK(
      cudaStreamCreateWithFlags(&gradientStream_, cudaStreamNonBlocking));
  PARPLAN_CHECK(cublasCreate(&blas_));
  PARPLAN_CHECK(cublasSetStream(blas_, computeStream_));
  // cuBLAS's workspace of its own, so that a graph capture (launchGraph)
  // allocates nothing inside cuBLAS; the size NVIDIA suggests for Hopper.
  PARPLAN_CHECK(cudaMalloc(&blasWorkspace_, kBlasWorkspaceBytes));
  PARPLAN_CHECK(cublasSetWorkspace(blas_, blasWorkspace_, kBlasWorkspaceBytes));
  PARPLAN_CHECK(
      cudaMalloc(reinterpret_cast<void **>(&errorSlot_), sizeof(int)));
  // Streams made non-blocking do not wait for the legacy default stream:
  // every set-up copy goes on the compute stream and is waited for.
  PARPLAN_CHECK(cudaMemsetAsync(errorSlot_, 0, sizeof(int), computeStream_));
  PARPLAN_CHECK(cudaStreamSynchronize(computeStream_));
  return Status::success();
}

void CudaBackend::releaseProgram() {
  // After a failed step, peers may have given up on collectives still
  // queued here: abort the communicators (destroying them would wait for
  // those) before waiting for the streams.
  auto finish = [&](ncclComm_t comm) {
    if (comm)
      failed_ ? ncclCommAbort(comm) : ncclCommDestroy(comm);
  };
  for (auto &[name, group] : gradientComms_)
    finish(group.comm);
  gradientComms_.clear();
  for (auto &[name, group] : groupComms_)
    finish(group.comm);
  groupComms_.clear();
  finish(worldComm_);
  worldComm_ = nullptr;
  if (computeStream_)
    cudaStreamSynchronize(computeStream_);
  if (commStream_)
    cudaStreamSynchronize(commStream_);
  if (gradientStream_)
    cudaStreamSynchronize(gradientStream_);
  for (auto *events : {&events_, &starts_, &ends_}) {
    for (cudaEvent_t event : *events)
      if (event)
        cudaEventDestroy(event);
    events->clear();
  }
  if (origin_)
    cudaEventDestroy(origin_);
  origin_ = nullptr;
  timeline_ = false;
  runs_.clear();
  for (auto &[range, graph] : graphs_)
    if (graph.exec)
      cudaGraphExecDestroy(graph.exec);
  graphs_.clear();
  for (void *memory : {pool_, staging_, gradientStaging_})
    if (memory)
      cudaFree(memory);
  pool_ = staging_ = gradientStaging_ = nullptr;
  failed_ = false;
}

void CudaBackend::release() {
  releaseProgram();
  for (void *memory : {computeScratch_, commScratch_, blasWorkspace_,
                       static_cast<void *>(errorSlot_)})
    if (memory)
      cudaFree(memory);
  computeScratch_ = commScratch_ = blasWorkspace_ = nullptr;
  errorSlot_ = nullptr;
  if (blas_)
    cublasDestroy(blas_);
  blas_ = nullptr;
  for (cudaStream_t stream : {computeStream_, commStream_, gradientStream_})
    if (stream)
      cudaStreamDestroy(stream);
  computeStream_ = commStream_ = gradientStream_ = nullptr;
}

Status CudaBackend::allocate() {
  tensors_.assign(program_->buffers_size(), DeviceTensor());
  std::vector<size_t> offsets(program_->buffers_size());
  size_t total = 0;
  for (int b = 0; b < program_->buffers_size(); ++b) {
    const plan::Buffer &buffer = program_->buffers(b);
    std::optional<DType> type = toRuntimeDType(buffer.dtype());
    if (!type)
      return Status::failure("the plan was not checked (a buffer has no "
                             "dtype)");
    tensors_[b].dtype = *type;
    tensors_[b].shape.assign(buffer.shape().begin(), buffer.shape().end());
    offsets[b] = total;
    total += alignUp(byteSize(b));
  }
  // With planned memory (plan-memory; checkPlan verified that buffers
  // sharing bytes are never live together), the buffers take the arena's
  // offsets and the program needs its planned peak, not every buffer's sum.
  if (program_->arena_bytes() > 0 && program_->buffers_size() > 0 &&
      program_->buffers(0).arena_offset() >= 0) {
    for (int b = 0; b < program_->buffers_size(); ++b)
      offsets[b] = static_cast<size_t>(program_->buffers(b).arena_offset());
    total = static_cast<size_t>(program_->arena_bytes());
  }
  if (total > 0) {
    if (cudaError_t error = cudaMalloc(&pool_, total); error != cudaSuccess) {
      cudaGetLastError();
      size_t free = 0, capacity = 0;
      cudaMemGetInfo(&free, &capacity);
      return Status::failure(
          "the program's " + std::to_string(program_->buffers_size()) +
          " buffers need " + std::to_string(total) + " bytes of GPU memory; " +
          std::to_string(free) + " of " + std::to_string(capacity) +
          " are free (" + cudaGetErrorString(error) + ")");
    }
    PARPLAN_CHECK(cudaMemsetAsync(pool_, 0, total, computeStream_));
    PARPLAN_CHECK(cudaStreamSynchronize(computeStream_));
  }
  for (int b = 0; b < program_->buffers_size(); ++b)
    tensors_[b].data = static_cast<char *>(pool_) + offsets[b];

  // Staging: a collective packs its input and receives into a second
  // region; the updates snapshot every source when they overlap.
  // Only collectives whose steps pack or unpack parts use it (not an
  // all-reduce, nor a split along the outermost dimension).
  auto stagingFor = [&](const plan::Collective &collective) -> size_t {
    auto group = groupComms_.find(collective.group());
    int64_t size = group == groupComms_.end() ? 1 : group->second.size;
    int64_t member = group == groupComms_.end()
                         ? 0
                         : std::max<int64_t>(0, group->second.index);
    const DeviceTensor &in = tensors_[collective.input()];
    for (const CollectiveStep &step : device::collectiveSteps(
             collective, in.shape, tensors_[collective.output()].shape,
             in.dtype, size, member))
      for (Region region : {step.source.region, step.destination.region})
        if (region == Region::StagingIn || region == Region::StagingOut)
          return device::stagingBytes(byteSize(collective.input()),
                                      byteSize(collective.output()));
    return 0;
  };
  size_t staging = 0, gradientStaging = 0;
  for (const plan::Instruction &instruction : program_->instructions())
    if (instruction.has_collective()) {
      size_t &bound =
          instruction.collective().feeds_update() ? gradientStaging : staging;
      bound = std::max(bound, stagingFor(instruction.collective()));
    }
  // Without the gradients stream they run on the communication stream.
  if (!options_.gradientsStream)
    staging = std::max(staging, std::exchange(gradientStaging, 0));
  if (gradientStaging > 0)
    PARPLAN_CHECK(cudaMalloc(&gradientStaging_, gradientStaging));
  updatesDisjoint_ = updatesDisjoint(*program_);
  if (!updatesDisjoint_) {
    size_t updates = 0;
    for (const plan::Update &update : program_->updates())
      updates += alignUp(byteSize(update.source()));
    staging = std::max(staging, updates);
  }
  if (staging > 0)
    PARPLAN_CHECK(cudaMalloc(&staging_, staging));
  return Status::success();
}

Status CudaBackend::openNccl() {
  // Every process takes part in every communicator's creation, in the same
  // order (the plan's groups, by name), whether or not it is a member; the
  // members of one set of devices split off together (groupColor).
  if (world_.size() <= 1)
    return Status::success();
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (world_.rank() == 0)
    PARPLAN_CHECK(ncclGetUniqueId(&id));
  Tensor idBytes(DType::I8, {static_cast<int64_t>(sizeof(id))});
  std::memcpy(idBytes.bytes(), &id, sizeof(id));
  Group everyone(world_.size());
  for (int r = 0; r < world_.size(); ++r)
    everyone[r] = r;
  if (Status status = world_.broadcast(idBytes, 0, everyone); !status.ok())
    return Status::failure("sharing NCCL's id: " + status.error);
  // The root's broadcast returns before delivery; ncclCommInitRank blocks.
  if (Status status = world_.flushSends(); !status.ok())
    return Status::failure("sharing NCCL's id: " + status.error);
  std::memcpy(&id, idBytes.bytes(), sizeof(id));
  PARPLAN_CHECK(
      ncclCommInitRank(&worldComm_, world_.size(), id, world_.rank()));
  for (const auto &[name, devices] : *groups_) {
    GroupComm group;
    group.size = static_cast<int64_t>(devices.size());
    auto member = std::find(devices.begin(), devices.end(), world_.rank());
    if (member != devices.end())
      group.index = member - devices.begin();
    if (group.size > 1) {
      int64_t set = groupColor(devices, world_.rank());
      int color = set >= 0 ? static_cast<int>(set) : NCCL_SPLIT_NOCOLOR;
      // Sharing the world's resources keeps a communicator per group from
      // costing buffers of its own.
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.splitShare = 1;
      PARPLAN_CHECK(ncclCommSplit(worldComm_, color,
                                  static_cast<int>(group.index), &group.comm,
                                  &config));
    }
    groupComms_[name] = group;
  }
  return Status::success();
}

Status CudaBackend::openGradientComms() {
  // Every member of a group runs its collectives alike, so the members that
  // reduce gradients over it all split it, group by group in name order.
  std::set<std::string> reduced;
  for (const plan::Instruction &instruction : program_->instructions())
    if (streamOf(instruction, options_.gradientsStream) == Stream::Gradients)
      reduced.insert(instruction.collective().group());
  for (const std::string &name : reduced) {
    auto found = groupComms_.find(name);
    if (found == groupComms_.end())
      continue; // runCollective reports the missing group
    GroupComm group = found->second;
    if (group.comm) {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.splitShare = 0;
      ncclComm_t own = nullptr;
      PARPLAN_CHECK(ncclCommSplit(
          found->second.comm, 0, static_cast<int>(group.index), &own, &config));
      group.comm = own;
    }
    gradientComms_[name] = group;
  }
  return Status::success();
}

Status CudaBackend::load(const plan::Program &program,
                         const std::vector<AttrMap> &attrs,
                         const std::map<std::string, Group> &groups) {
  releaseProgram();
  program_ = &program;
  attrs_ = &attrs;
  groups_ = &groups;
  // NCCL's own buffers first (the gradients stream's communicators too): a
  // plan sized to fill the GPU must leave them room, and its allocation
  // then says how much is free.
  if (Status status = openNccl(); !status.ok())
    return status;
  if (Status status = openGradientComms(); !status.ok())
    return status;
  if (Status status = allocate(); !status.ok())
    return status;
  if (Status status =
          device::prepareKernels(program, attrs, tensors_, prepared_);
      !status.ok())
    return status;
  schedule_ = scheduleStreams(program, options_.gradientsStream);
  events_.assign(program.instructions_size(), nullptr);
  for (int64_t i = 0; i < program.instructions_size(); ++i)
    if (schedule_.awaited[i])
      PARPLAN_CHECK(
          cudaEventCreateWithFlags(&events_[i], cudaEventDisableTiming));
  return Status::success();
}

Status CudaBackend::write(int64_t buffer, const Tensor &value) {
  const DeviceTensor &target = tensors_[buffer];
  if (value.dtype() != target.dtype || value.shape() != target.shape)
    return Status::failure("buffer " + std::to_string(buffer) + " is " +
                           toString(target.dtype) + toString(target.shape) +
                           ", not " + toString(value.dtype()) +
                           toString(value.shape()));
  if (value.byteSize() == 0)
    return Status::success();
  PARPLAN_CHECK(cudaMemcpyAsync(target.data, value.bytes(), value.byteSize(),
                                cudaMemcpyHostToDevice, computeStream_));
  // The host tensor may go away when this returns.
  PARPLAN_CHECK(cudaStreamSynchronize(computeStream_));
  return Status::success();
}

Status CudaBackend::fillSynthetic(int64_t buffer, const SyntheticBlock &block,
                                  bool &filled) {
  Status status;
  filled = device::fillSyntheticCuda(
      context(computeStream_, 0), tensors_[buffer], block.logicalShape,
      block.offsets, block.key, block.scale, block.integerBound, status);
  if (!status.ok())
    return status;
  // As write: the buffer holds its values when this returns.
  if (filled)
    PARPLAN_CHECK(cudaStreamSynchronize(computeStream_));
  return Status::success();
}

Status CudaBackend::read(int64_t buffer, Tensor &value) {
  if (Status status = synchronize(); !status.ok())
    return status;
  return copyToHost(buffer, value);
}

Status CudaBackend::copyToHost(int64_t buffer, Tensor &value) {
  const DeviceTensor &source = tensors_[buffer];
  value = Tensor(source.dtype, source.shape);
  if (value.byteSize() == 0)
    return Status::success();
  PARPLAN_CHECK(cudaMemcpy(value.bytes(), source.data, value.byteSize(),
                           cudaMemcpyDeviceToHost));
  return Status::success();
}

Status CudaBackend::runOnHost(int64_t index, bool writeBack) {
  PARPLAN_CHECK(cudaStreamSynchronize(computeStream_));
  const plan::Kernel &kernel = program_->instructions(index).kernel();
  std::vector<Tensor> operands(kernel.operands_size()),
      results(kernel.results_size());
  std::vector<const Tensor *> operandPointers;
  std::vector<Tensor *> resultPointers;
  for (int k = 0; k < kernel.operands_size(); ++k) {
    int64_t operand = kernel.operands(k);
    if (operand < 0) {
      operandPointers.push_back(nullptr);
      continue;
    }
    // The compute stream, synchronized above, has waited for whatever the
    // other stream produced for this kernel.
    if (Status status = copyToHost(operand, operands[k]); !status.ok())
      return status;
    operandPointers.push_back(&operands[k]);
  }
  for (int k = 0; k < kernel.results_size(); ++k) {
    results[k] = Tensor(tensors_[kernel.results(k)].dtype,
                        tensors_[kernel.results(k)].shape);
    resultPointers.push_back(&results[k]);
  }
  if (Status status = runKernel(prepared_.ids[index], (*attrs_)[index],
                                operandPointers, resultPointers);
      !status.ok())
    return status;
  if (writeBack)
    for (int k = 0; k < kernel.results_size(); ++k)
      if (Status status = write(kernel.results(k), results[k]); !status.ok())
        return status;
  return Status::success();
}

Status CudaBackend::runKernelInstruction(int64_t index) {
  if (!prepared_.onDevice[index])
    return runOnHost(index, true);
  const plan::Kernel &kernel = program_->instructions(index).kernel();
  std::vector<const DeviceTensor *> operands;
  std::vector<DeviceTensor *> results;
  operands.reserve(kernel.operands_size());
  results.reserve(kernel.results_size());
  for (int64_t operand : kernel.operands())
    operands.push_back(operand < 0 ? nullptr : &tensors_[operand]);
  for (int64_t result : kernel.results())
    results.push_back(&tensors_[result]);
  Status status;
  device::Launch launch = device::launchCudaKernel(
      context(computeStream_, static_cast<int>(index) + 1),
      prepared_.ids[index], prepared_.resolved[index], operands, results,
      status);
  if (!status.ok())
    return status;
  if (launch != device::Launch::Done)
    return runOnHost(index, true);
  return Status::success();
}

Status CudaBackend::runCollective(const plan::Collective &collective,
                                  cudaStream_t stream) {
  const std::map<std::string, GroupComm> &comms =
      stream == gradientStream_ ? gradientComms_ : groupComms_;
  auto found = comms.find(collective.group());
  if (found == comms.end())
    return Status::failure("no group '" + collective.group() + "'");
  const GroupComm &group = found->second;
  if (group.size > 1 && !group.comm)
    return Status::failure("this device is not a member of group '" +
                           collective.group() + "'");
  if (group.size > 1 && !plan::Collective::Kind_IsValid(collective.kind()))
    return Status::failure("unknown collective kind " +
                           std::to_string(collective.kind()));
  const DeviceTensor &in = tensors_[collective.input()];
  std::optional<NcclGroup> grouped;
  for (const CollectiveStep &step : device::collectiveSteps(
           collective, in.shape, tensors_[collective.output()].shape, in.dtype,
           group.size, group.index)) {
    if (step.kind == StepKind::GroupStart) {
      grouped.emplace();
    } else if (step.kind == StepKind::GroupEnd) {
      Status closed = grouped ? grouped->end()
                              : Status::failure("a group end without a start");
      grouped.reset();
      if (!closed.ok())
        return closed;
    } else if (grouped) {
      // Noted, not returned: the group must be closed.
      grouped->note(runStep(step, collective, group, stream));
    } else if (Status status = runStep(step, collective, group, stream);
               !status.ok()) {
      return status;
    }
  }
  return grouped ? grouped->end() : Status::success();
}

Status CudaBackend::runStep(const CollectiveStep &step,
                            const plan::Collective &collective,
                            const GroupComm &group, cudaStream_t stream) {
  DeviceTensor &in = tensors_[collective.input()];
  DeviceTensor &out = tensors_[collective.output()];
  auto address = [&](device::Place place) -> char * {
    char *base = nullptr;
    switch (place.region) {
    case Region::None:
      return nullptr;
    case Region::Input:
      base = static_cast<char *>(in.data);
      break;
    case Region::Output:
      base = static_cast<char *>(out.data);
      break;
    case Region::StagingIn:
      base = static_cast<char *>(stagingOf(stream));
      break;
    case Region::StagingOut:
      base = static_cast<char *>(stagingOf(stream)) +
             device::stagingOutOffset(byteSize(collective.input()));
      break;
    }
    return base + place.offset;
  };
  char *source = address(step.source);
  char *destination = address(step.destination);
  size_t count = static_cast<size_t>(step.count);
  ncclDataType_t type = ncclType(step.type);
  ncclRedOp_t op = ncclOp(step.op);
  int root = static_cast<int>(step.root), peer = static_cast<int>(step.peer);
  switch (step.kind) {
  case StepKind::Copy:
    return copyAsync(destination, source, step.bytes(), stream);
  case StepKind::Pack:
    return device::packPartsCuda(context(stream, 0),
                                 step.source.region == Region::Input ? in : out,
                                 step.axis, step.parts, destination);
  case StepKind::Unpack:
    return device::unpackPartsCuda(
        context(stream, 0), source, step.axis, step.parts,
        step.destination.region == Region::Output ? out : in);
  case StepKind::AllReduce:
    return check(
        ncclAllReduce(source, destination, count, type, op, group.comm, stream),
        "ncclAllReduce");
  case StepKind::Broadcast:
    return check(ncclBroadcast(source, destination, count, type, root,
                               group.comm, stream),
                 "ncclBroadcast");
  case StepKind::AllGather:
    return check(
        ncclAllGather(source, destination, count, type, group.comm, stream),
        "ncclAllGather");
  case StepKind::ReduceScatter:
    return check(ncclReduceScatter(source, destination, count, type, op,
                                   group.comm, stream),
                 "ncclReduceScatter");
  case StepKind::Reduce:
    return check(ncclReduce(source, destination, count, type, op, root,
                            group.comm, stream),
                 "ncclReduce");
  case StepKind::Send:
    return check(ncclSend(source, count, type, peer, group.comm, stream),
                 "ncclSend");
  case StepKind::Recv:
    return check(ncclRecv(destination, count, type, peer, group.comm, stream),
                 "ncclRecv");
  case StepKind::GroupStart:
  case StepKind::GroupEnd:
    break;
  }
  return Status::failure("a group bracket run as a step");
}

Status CudaBackend::runMessages(int64_t first, int64_t last) {
  NcclGroup grouped;
  for (int64_t i = first; i <= last; ++i) {
    const plan::Instruction &instruction = program_->instructions(i);
    if (instruction.has_send()) {
      const plan::Send &send = instruction.send();
      grouped.note(ncclSend(tensors_[send.buffer()].data,
                            byteSize(send.buffer()), ncclInt8,
                            static_cast<int>(send.peer()), worldComm_,
                            commStream_),
                   "ncclSend");
    } else {
      const plan::Recv &recv = instruction.recv();
      grouped.note(ncclRecv(tensors_[recv.buffer()].data,
                            byteSize(recv.buffer()), ncclInt8,
                            static_cast<int>(recv.peer()), worldComm_,
                            commStream_),
                   "ncclRecv");
    }
  }
  return grouped.end();
}

Status CudaBackend::issue(int64_t begin, int64_t end,
                          std::vector<double> *hostSeconds) {
  bool timed = profiling_ || timeline_;
  auto isMessage = [&](int64_t i) {
    return program_->instructions(i).has_send() ||
           program_->instructions(i).has_recv();
  };
  for (int64_t first = begin; first < end; ++first) {
    // Sends and receives in a row go as one group; everything else alone.
    int64_t last = first;
    if (isMessage(first))
      while (last + 1 < end && isMessage(last + 1))
        ++last;
    cudaStream_t stream = cudaStreamOf(schedule_.stream[first]);
    for (int64_t i = first; i <= last; ++i)
      for (int64_t wait : schedule_.waitFor[i])
        if (wait >= 0)
          PARPLAN_CHECK(cudaStreamWaitEvent(stream, events_[wait], 0));
    // Profiled instructions run one at a time, so that each event pair
    // brackets that instruction alone; a timeline's run as they would.
    if (profiling_)
      if (Status status = synchronize(); !status.ok())
        return status;
    if (timed)
      for (int64_t i = first; i <= last; ++i)
        PARPLAN_CHECK(cudaEventRecord(starts_[i], stream));
    const plan::Instruction &instruction = program_->instructions(first);
    auto hostStart = std::chrono::steady_clock::now();
    Status status;
    switch (instruction.op_case()) {
    case plan::Instruction::kKernel:
      status = runKernelInstruction(first);
      if (profiling_) {
        double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - hostStart)
                             .count();
        if (prepared_.onDevice[first]) {
          ++profile_.issue.calls;
          profile_.issue.seconds += seconds;
        } else if (hostSeconds) {
          (*hostSeconds)[first] = seconds;
        }
      }
      break;
    case plan::Instruction::kCollective:
      status = runCollective(instruction.collective(), stream);
      break;
    case plan::Instruction::kSend:
    case plan::Instruction::kRecv:
      status = runMessages(first, last);
      break;
    // instantiateProgram has replaced the parts with their steps.
    case plan::Instruction::kCrossMeshSend:
    case plan::Instruction::kCrossMeshRecv:
    case plan::Instruction::OP_NOT_SET:
      status = Status::failure("empty instruction");
      break;
    }
    for (int64_t i = first; i <= last && status.ok(); ++i) {
      if (schedule_.awaited[i])
        status = check(cudaEventRecord(events_[i], stream), "cudaEventRecord");
      if (status.ok() && timed)
        status = check(cudaEventRecord(ends_[i], stream), "cudaEventRecord");
    }
    if (!status.ok())
      return Status::failure("instruction " + std::to_string(first) + " (" +
                             describeInstruction(instruction) +
                             "): " + status.error);
    first = last;
  }
  return Status::success();
}

bool CudaBackend::deviceKernelsAlone(int64_t begin, int64_t end) const {
  // On the compute stream, which no other stream waits for: a graph's
  // replay records no events for the comm stream.
  for (int64_t i = begin; i < end; ++i)
    if (!program_->instructions(i).has_kernel() || !prepared_.onDevice[i] ||
        std::any_of(schedule_.waitFor[i].begin(), schedule_.waitFor[i].end(),
                    [](int64_t wait) { return wait >= 0; }) ||
        schedule_.awaited[i])
      return false;
  return begin < end;
}

Status CudaBackend::launchGraph(int64_t begin, int64_t end, bool &launched) {
  launched = false;
  auto [found, added] = graphs_.try_emplace({begin, end});
  RangeGraph &graph = found->second;
  // What a range holds is the program's: looked at on its first run only.
  if (added)
    graph.refused = !deviceKernelsAlone(begin, end);
  if (graph.refused)
    return Status::success();
  // A graph holds the scratch's address: when another range has grown the
  // scratch since (freeing the old one), capture this range again.
  if (graph.exec && (graph.scratch != computeScratch_ ||
                     graph.scratchBytes != computeScratchBytes_)) {
    cudaGraphExecDestroy(graph.exec);
    graph.exec = nullptr;
  }
  if (!graph.exec) {
    // The first run grows the scratch to what the range needs; a capture
    // may not allocate.
    if (++graph.runs < 2)
      return Status::success();
    PARPLAN_CHECK(cudaStreamBeginCapture(computeStream_,
                                         cudaStreamCaptureModeThreadLocal));
    capturing_ = true;
    Status issued = issue(begin, end, nullptr);
    capturing_ = false;
    cudaGraph_t captured = nullptr;
    cudaError_t made = cudaStreamEndCapture(computeStream_, &captured);
    if (issued.ok() && made == cudaSuccess && captured)
      made = cudaGraphInstantiate(&graph.exec, captured, 0);
    else if (made == cudaSuccess)
      made = cudaErrorStreamCaptureInvalidated;
    if (captured)
      cudaGraphDestroy(captured);
    graph.scratch = computeScratch_;
    graph.scratchBytes = computeScratchBytes_;
    if (made != cudaSuccess) {
      // Nothing ran: the step goes instruction by instruction, and a
      // second failure gives the range up.
      cudaGetLastError();
      graph.exec = nullptr;
      graph.refused = ++graph.failures >= 2;
      return Status::success();
    }
  }
  PARPLAN_CHECK(cudaGraphLaunch(graph.exec, computeStream_));
  launched = true;
  return Status::success();
}

Status CudaBackend::run(int64_t begin, int64_t end) {
  if (failed_)
    return Status::failure("an earlier step failed; the GPU state is lost");
  failed_ = true; // until the step completes
  PARPLAN_CHECK(cudaMemsetAsync(errorSlot_, 0, sizeof(int), computeStream_));
  int64_t count = program_->instructions_size();
  bool timed = profiling_ || timeline_;
  if (timed && static_cast<int64_t>(starts_.size()) != count) {
    starts_.assign(count, nullptr);
    ends_.assign(count, nullptr);
    for (int64_t i = 0; i < count; ++i) {
      PARPLAN_CHECK(cudaEventCreate(&starts_[i]));
      PARPLAN_CHECK(cudaEventCreate(&ends_[i]));
    }
  }
  // By instruction, with profiling: the host's time for kernels that run
  // on the host (GPU events would time only their copies).
  std::vector<double> hostSeconds(profiling_ ? count : 0, -1.0);
  bool launched = false;
  if (options_.graphs && !profiling_ && !timeline_)
    if (Status status = launchGraph(begin, end, launched); !status.ok())
      return status;
  if (!launched)
    if (Status status = issue(begin, end, &hostSeconds); !status.ok())
      return status;
  if (Status status = synchronize(); !status.ok())
    return status;
  if (timeline_)
    for (int64_t i = begin; i < end; ++i) {
      float start = 0, finish = 0;
      PARPLAN_CHECK(cudaEventElapsedTime(&start, origin_, starts_[i]));
      PARPLAN_CHECK(cudaEventElapsedTime(&finish, origin_, ends_[i]));
      runs_.push_back({i, start * 1e-3, finish * 1e-3});
    }
  if (profiling_)
    for (int64_t i = begin; i < end; ++i) {
      float milliseconds = 0;
      PARPLAN_CHECK(cudaEventElapsedTime(&milliseconds, starts_[i], ends_[i]));
      addToProfile(profile_, *program_, program_->instructions(i),
                   hostSeconds[i] >= 0 ? hostSeconds[i] : milliseconds * 1e-3);
    }
  int fault = 0;
  PARPLAN_CHECK(
      cudaMemcpy(&fault, errorSlot_, sizeof(int), cudaMemcpyDeviceToHost));
  if (fault > 0 && fault <= count) {
    int64_t index = fault - 1;
    // The reference kernel says what was wrong. Its operands are as the
    // step left them, which for a fault in the batch (a label, an index)
    // is what the kernel read.
    Status reference = runOnHost(index, false);
    return Status::failure(
        "instruction " + std::to_string(index) + " (" +
        describeInstruction(program_->instructions(index)) + "): " +
        (reference.ok() ? std::string("an index or label is out of range")
                        : reference.error));
  }
  failed_ = false;
  return Status::success();
}

Status CudaBackend::applyUpdates() {
  if (updatesDisjoint_) {
    for (const plan::Update &update : program_->updates())
      if (Status status = copyAsync(tensors_[update.target()].data,
                                    tensors_[update.source()].data,
                                    byteSize(update.source()), computeStream_);
          !status.ok())
        return status;
  } else {
    std::vector<size_t> offsets;
    size_t offset = 0;
    for (const plan::Update &update : program_->updates()) {
      offsets.push_back(offset);
      if (Status status = copyAsync(static_cast<char *>(staging_) + offset,
                                    tensors_[update.source()].data,
                                    byteSize(update.source()), computeStream_);
          !status.ok())
        return status;
      offset += alignUp(byteSize(update.source()));
    }
    for (int u = 0; u < program_->updates_size(); ++u) {
      const plan::Update &update = program_->updates(u);
      if (Status status = copyAsync(tensors_[update.target()].data,
                                    static_cast<char *>(staging_) + offsets[u],
                                    byteSize(update.source()), computeStream_);
          !status.ok())
        return status;
    }
  }
  PARPLAN_CHECK(cudaStreamSynchronize(computeStream_));
  return Status::success();
}

std::vector<std::string> CudaBackend::hostKernels() const {
  return countedNames(prepared_.referenceCounts);
}

} // namespace

bool cudaBackendBuilt() { return true; }

std::string cudaUnavailableReason() {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device (cudaGetDeviceCount: ") +
           cudaGetErrorString(error) + ")";
  }
  if (count == 0)
    return "no CUDA device";
  return "";
}

int cudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string cudaDeviceAddress(int device) {
  char address[64] = {};
  if (cudaDeviceGetPCIBusId(address, sizeof(address), device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return address;
}

std::unique_ptr<Backend> createCudaBackend(Transport &world,
                                           const CudaOptions &options,
                                           Status &status) {
  if (std::string reason = cudaUnavailableReason(); !reason.empty()) {
    status = Status::failure(reason);
    return nullptr;
  }
  auto backend = std::make_unique<CudaBackend>(world, options);
  status = backend->open();
  if (!status.ok())
    return nullptr;
  return backend;
}

} // namespace parplan::runtime
