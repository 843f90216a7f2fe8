//===- ReshardSweep.cpp - every resharding lowered and run over MPI -------===//
//
// For every pair of layouts (B, P(sum), P(max) and S on each dimension, one
// kind of partial value per layout) of tensors of rank 1 to 3 with uneven
// sizes, on the meshes 4, 2x2, 2x3 and 2x2x2: expand-boxing and
// lower-to-plan write the resharding as plan programs, parplan's executor
// runs them on the MPI ranks, and rank 0 checks that
// - every device ends with exactly its block of the destination (for
//   partial layouts: replicas equal, and the addends combine to the value),
// - the bytes each collective sends per device, averaged over the mesh, add
//   up to what the cost model charged for the resharding, exactly.
//
// Usage: mpirun -np 8 parplan-reshard-sweep [--mesh 2x2] [--rank 3]
// Prints one line per mesh and rank, and "N passed, M failed" last.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/Mesh.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Runtime/Executor.h"
#include "parplan/Runtime/MpiCommunicator.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Sbp/Resharding.h"
#include "parplan/Target/PlanExport.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/Sharding/ShardingCostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace mlir;
using namespace parplan;
namespace rt = parplan::runtime;

namespace {

/// Pairs per plan: enough to amortize compiling and MPI set-up, few enough
/// to keep each plan small.
constexpr size_t kPairsPerPlan = 400;

/// Every layout of entries B, P(sum), P(max), S(0 .. rank-1) over `axes`
/// mesh axes with at most one kind of partial value.
std::vector<NdSbp> layouts(size_t axes, int64_t rank) {
  std::vector<Sbp> entries = {Sbp::broadcast(), Sbp::partial(),
                              Sbp::partial(ReduceKind::Max)};
  for (int64_t d = 0; d < rank; ++d)
    entries.push_back(Sbp::split(d));
  std::vector<NdSbp> all = {{}};
  for (size_t axis = 0; axis < axes; ++axis) {
    std::vector<NdSbp> longer;
    for (const NdSbp &prefix : all)
      for (const Sbp &entry : entries) {
        NdSbp layout = prefix;
        layout.push_back(entry);
        longer.push_back(layout);
      }
    all = std::move(longer);
  }
  std::vector<NdSbp> valid;
  for (const NdSbp &layout : all) {
    std::optional<ReduceKind> kind;
    bool mixed = false;
    for (const Sbp &entry : layout)
      if (entry.isPartial()) {
        mixed |= kind && *kind != entry.reduce;
        kind = entry.reduce;
      }
    if (!mixed)
      valid.push_back(layout);
  }
  return valid;
}

std::string attrText(const NdSbp &layout) {
  std::string text = "[";
  for (size_t i = 0; i < layout.size(); ++i) {
    const Sbp &entry = layout[i];
    text += i ? ", " : "";
    if (entry.isSplit())
      text += "#sbp.s<" + std::to_string(entry.axis) + ">";
    else if (entry.isBroadcast())
      text += "#sbp.b";
    else
      text += std::string("#sbp.p<") + toString(entry.reduce) + ">";
  }
  return text + "]";
}

std::string join(const std::vector<int64_t> &values, const char *separator) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? separator : "") + std::to_string(values[i]);
  return text;
}

using Pair = std::pair<NdSbp, NdSbp>;

/// The MPI world seen as a mesh of its first `devices` ranks: the executor
/// wants one process per program, and the sweep's meshes differ in size.
class MeshWorld : public rt::Transport {
public:
  MeshWorld(rt::Transport &world, int devices)
      : world(world), devices(devices) {}
  int rank() const override { return world.rank(); }
  int size() const override { return devices; }
  rt::Status exchange(const std::vector<Bytes> &outgoing,
                      std::vector<Bytes> &incoming,
                      const rt::Group &group) override {
    return world.exchange(outgoing, incoming, group);
  }
  rt::Status send(const rt::Tensor &data, int64_t peer, int64_t tag) override {
    return world.send(data, peer, tag);
  }
  rt::Status recv(rt::Tensor &data, int64_t peer, int64_t tag) override {
    return world.recv(data, peer, tag);
  }
  rt::Status flushSends() override { return world.flushSends(); }

private:
  rt::Transport &world;
  int devices;
};

/// One function that reshards parameter src<k> into the layout of dst<k>
/// and returns it as dst<k>'s update, for every pair k; each boxing is
/// located at "pair<k>", which its plan ops inherit.
std::string moduleText(const std::vector<int64_t> &mesh,
                       const std::vector<int64_t> &shape,
                       const std::vector<Pair> &pairs) {
  std::string type = "tensor<" + join(shape, "x") + "xf32>";
  std::ostringstream out;
  out << "sbp.mesh @mesh(shape = " << join(mesh, "x") << ")\n"
      << "func.func @main() -> (";
  for (size_t k = 0; k < pairs.size(); ++k)
    out << (k ? ", " : "") << type << " {nn.updates = \"dst" << k << "\"}";
  out << ") {\n";
  for (size_t k = 0; k < pairs.size(); ++k) {
    const auto &[src, dst] = pairs[k];
    out << "  %d" << k << " = nn.param \"dst" << k
        << "\" {sbp.sharding = #sbp.sharding<@mesh, [] -> [" << attrText(dst)
        << "]>} : " << type << "\n"
        << "  %s" << k << " = nn.param \"src" << k
        << "\" {sbp.sharding = #sbp.sharding<@mesh, [] -> [" << attrText(src)
        << "]>} : " << type << "\n"
        << "  %b" << k << " = sbp.boxing %s" << k << " on @mesh "
        << attrText(src) << " -> " << attrText(dst) << " : " << type
        << " loc(\"pair" << k << "\")\n";
  }
  out << "  return {sbp.sharding = #sbp.sharding<@mesh, [";
  for (size_t k = 0; k < pairs.size(); ++k)
    out << (k ? ", " : "") << attrText(pairs[k].second);
  out << "] -> []>} ";
  for (size_t k = 0; k < pairs.size(); ++k)
    out << (k ? ", " : "") << "%b" << k;
  out << " : ";
  for (size_t k = 0; k < pairs.size(); ++k)
    out << (k ? ", " : "") << type;
  out << "\n}\n";
  return out.str();
}

/// The linear index, over the partial axes of `layout`, of `coordinate`,
/// and how many devices those axes hold.
std::pair<int64_t, int64_t>
partialIndex(const NdSbp &layout, const std::vector<int64_t> &mesh,
             const std::vector<int64_t> &coordinate) {
  int64_t index = 0, count = 1;
  for (size_t axis = 0; axis < layout.size(); ++axis)
    if (layout[axis].isPartial()) {
      index = index * mesh[axis] + coordinate[axis];
      count *= mesh[axis];
    }
  return {index, count};
}

std::optional<ReduceKind> partialKind(const NdSbp &layout) {
  for (const Sbp &entry : layout)
    if (entry.isPartial())
      return entry.reduce;
  return std::nullopt;
}

/// The addend device `q` of `count` holds of the logical value `value`:
/// distinct on every device, combining to `value` under `kind`.
double addend(std::optional<ReduceKind> kind, int64_t q, int64_t count,
              int64_t value) {
  if (!kind)
    return static_cast<double>(value);
  if (*kind == ReduceKind::Sum) {
    if (q > 0)
      return static_cast<double>(3 * q + 1);
    double others = 0;
    for (int64_t p = 1; p < count; ++p)
      others += static_cast<double>(3 * p + 1);
    return static_cast<double>(value) - others;
  }
  // Max: the maximum sits on a different device for different elements.
  return q == value % count ? static_cast<double>(value)
                            : static_cast<double>(value - q - 1);
}

/// Calls `visit(flat logical index, flat block index)` for every element
/// of the block at `offsets` of `sizes` in a tensor of `shape`.
template <typename Visit>
void forEachElement(const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &offsets,
                    const std::vector<int64_t> &sizes, Visit visit) {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      flat = flat * shape[d] + offsets[d] + index[d];
    visit(flat, n);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
  }
}

struct Tally {
  int64_t passed = 0, failed = 0;
  /// Counts a resharding by what went wrong with it, nothing when it
  /// passed; prints the first few failures.
  void count(const std::string &what, const std::string &problem) {
    if (problem.empty()) {
      ++passed;
      return;
    }
    if (failed++ < 20)
      std::printf("FAIL: %s: %s\n", what.c_str(), problem.c_str());
  }
};

std::string describe(const std::vector<int64_t> &mesh, const Pair &pair) {
  return "mesh " + join(mesh, "x") + ": " + toString(pair.first) + " -> " +
         toString(pair.second);
}

/// Rank 0: the bytes each pair's collectives send, per device, averaged
/// over the mesh, against the cost model's charge.
void checkBytes(ModuleOp module, const std::vector<int64_t> &mesh,
                const std::vector<Pair> &pairs,
                const std::vector<int64_t> &shape,
                std::vector<std::string> &problems) {
  int64_t devices = meshSize(mesh);
  // Per pair, per device: bytes sent.
  std::vector<std::vector<double>> sent(pairs.size(),
                                        std::vector<double>(devices, 0));
  module.walk([&](Operation *op) {
    auto location = dyn_cast<NameLoc>(op->getLoc());
    if (!location || !isa<plan::PlanDialect>(op->getDialect()))
      return;
    auto program = op->getParentOfType<plan::ProgramOp>();
    size_t pair = std::stoul(location.getName().str().substr(4));
    // The devices sharing a program have the same blocks, so send alike.
    for (int64_t device : program.getDevices())
      sent[pair][device] += plan::bytesSent(op);
  });
  std::string error;
  std::optional<ShardingCostModel> model =
      ShardingCostModel::load("dgx-h100", mesh, false, error);
  auto type =
      RankedTensorType::get(shape, Float32Type::get(module.getContext()));
  for (size_t k = 0; k < pairs.size(); ++k) {
    const std::optional<cost::BoxingCost> &cost =
        model->boxing(pairs[k].first, pairs[k].second, type);
    double charged = cost ? cost->bytesSent() : -1;
    double total = 0, least = sent[k][0], most = sent[k][0];
    for (double bytes : sent[k]) {
      total += bytes;
      least = std::min(least, bytes);
      most = std::max(most, bytes);
    }
    double mean = total / static_cast<double>(devices);
    bool ok = std::fabs(mean - charged) <= 1e-9 * std::max(1.0, charged);
    if (!ok)
      problems[k] = "the plan sends " + std::to_string(mean) +
                    " bytes per device (" + std::to_string(least) + " to " +
                    std::to_string(most) + "), the cost model charged " +
                    std::to_string(charged);
  }
}

/// Rank 0: every device's destination blocks against the logical values.
void checkBlocks(const std::vector<int64_t> &mesh,
                 const std::vector<int64_t> &shape,
                 const std::vector<Pair> &pairs,
                 const std::vector<std::vector<double>> &blocks,
                 std::vector<std::string> &problems) {
  int64_t devices = meshSize(mesh);
  // Where each device's block of the current pair starts: the blocks are
  // packed in pair order.
  std::vector<size_t> offsets(devices, 0);
  for (size_t k = 0; k < pairs.size(); ++k) {
    const NdSbp &dst = pairs[k].second;
    std::optional<ReduceKind> kind = partialKind(dst);
    // Per logical element, per partial index: the value held there.
    std::map<int64_t, std::vector<std::optional<double>>> held;
    std::string problem;
    for (int64_t device = 0; device < devices; ++device) {
      std::vector<int64_t> coordinate = meshCoordinate(mesh, device);
      auto [q, count] = partialIndex(dst, mesh, coordinate);
      Slice slice = deviceSlice(shape, mesh, dst, coordinate);
      size_t offset = offsets[device];
      offsets[device] += static_cast<size_t>(slice.numElements());
      const std::vector<double> &values = blocks[device];
      if (offset + slice.numElements() > values.size()) {
        problem = "device " + std::to_string(device) + " has too few values";
        continue;
      }
      forEachElement(shape, slice.offsets, slice.sizes,
                     [&](int64_t flat, int64_t n) {
                       double value = values[offset + n];
                       std::vector<std::optional<double>> &slots = held[flat];
                       slots.resize(count);
                       if (slots[q] && *slots[q] != value && problem.empty())
                         problem = "device " + std::to_string(device) +
                                   " holds " + std::to_string(value) +
                                   " at element " + std::to_string(flat) +
                                   ", its replica " + std::to_string(*slots[q]);
                       slots[q] = value;
                     });
    }
    int64_t elements = 1;
    for (int64_t size : shape)
      elements *= size;
    for (int64_t flat = 0; flat < elements && problem.empty(); ++flat) {
      const std::vector<std::optional<double>> &slots = held[flat];
      double combined = kind == ReduceKind::Max ? -INFINITY : 0;
      for (const std::optional<double> &slot : slots) {
        if (!slot) {
          problem = "element " + std::to_string(flat) + " has no holder";
          break;
        }
        combined = kind == ReduceKind::Max ? std::max(combined, *slot)
                                           : combined + *slot;
      }
      if (problem.empty() && combined != static_cast<double>(flat))
        problem = "element " + std::to_string(flat) + " is " +
                  std::to_string(combined);
    }
    if (problems[k].empty())
      problems[k] = problem;
  }
}

/// Runs one plan of `pairs` on this rank and returns, on rank 0, every
/// device's destination blocks in pair order.
std::vector<std::vector<double>>
runPlan(const plan::Plan &plan, const std::vector<int64_t> &mesh,
        const std::vector<int64_t> &shape, const std::vector<Pair> &pairs,
        rt::Communicator &communicator, int rank, int worldSize) {
  int64_t devices = meshSize(mesh);
  std::vector<double> mine;
  if (rank < devices) {
    rt::Executor executor;
    std::vector<int64_t> coordinate = meshCoordinate(mesh, rank);
    executor.setWeightLoader([&](const plan::Buffer &buffer, rt::Tensor &block,
                                 bool &loaded) {
      loaded = true;
      if (buffer.name().rfind("src", 0) != 0)
        return rt::Status::success(); // Destinations start as zeros.
      const NdSbp &src = pairs[std::stoul(buffer.name().substr(3))].first;
      auto [q, count] = partialIndex(src, mesh, coordinate);
      std::vector<int64_t> offsets(buffer.offsets().begin(),
                                   buffer.offsets().end());
      forEachElement(shape, offsets, block.shape(),
                     [&](int64_t flat, int64_t n) {
                       block.set(n, addend(partialKind(src), q, count, flat));
                     });
      return rt::Status::success();
    });
    rt::Status status = executor.load(plan, rank, communicator);
    if (status.ok())
      status = executor.initialize();
    if (status.ok())
      status = executor.step(0, nullptr);
    if (!status.ok()) {
      std::printf("FAIL: rank %d: %s\n", rank, status.error.c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const plan::Program &program = executor.program();
    for (size_t k = 0; k < pairs.size(); ++k)
      for (int64_t index = 0; index < program.buffers_size(); ++index)
        if (program.buffers(index).name() == "dst" + std::to_string(k)) {
          rt::Tensor value = executor.buffer(index);
          for (int64_t i = 0; i < value.numElements(); ++i)
            mine.push_back(value.get(i));
        }
  }
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(worldSize), displacements(worldSize, 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<double> all;
  if (rank == 0) {
    for (int r = 1; r < worldSize; ++r)
      displacements[r] = displacements[r - 1] + counts[r - 1];
    all.resize(displacements.back() + counts.back());
  }
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(),
              displacements.data(), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::vector<std::vector<double>> blocks;
  if (rank == 0)
    for (int64_t device = 0; device < devices; ++device)
      blocks.emplace_back(all.begin() + displacements[device],
                          all.begin() + displacements[device] + counts[device]);
  return blocks;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, worldSize = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  std::vector<std::vector<int64_t>> meshes = {{4}, {2, 2}, {2, 3}, {2, 2, 2}};
  int64_t maxRank = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    std::string error;
    if (flag == "--mesh") {
      std::optional<std::vector<int64_t>> mesh =
          cost::parseMeshShape(value, error);
      if (mesh)
        meshes = {*mesh};
    } else if (flag == "--rank" &&
               llvm::StringRef(value).getAsInteger(10, maxRank)) {
      error = "not a number";
    }
    if (!error.empty()) {
      if (rank == 0)
        std::fprintf(stderr, "parplan-reshard-sweep: error: %s '%s': %s\n",
                     flag.c_str(), value.c_str(), error.c_str());
      MPI_Finalize();
      return 1;
    }
  }
  for (const std::vector<int64_t> &mesh : meshes)
    if (meshSize(mesh) > worldSize) {
      if (rank == 0)
        std::printf("parplan-reshard-sweep: mesh %s needs %lld ranks, "
                    "mpirun gave %d\n",
                    join(mesh, "x").c_str(),
                    static_cast<long long>(meshSize(mesh)), worldSize);
      MPI_Finalize();
      return 1;
    }

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::unique_ptr<rt::Transport> communicator = rt::createMpiCommunicator();
  // Sizes that no mesh axis divides evenly, and some that do.
  const std::vector<std::vector<int64_t>> shapes = {{7}, {5, 6}, {3, 5, 4}};

  Tally tally;
  for (const std::vector<int64_t> &mesh : meshes)
    for (int64_t tensorRank = 1; tensorRank <= maxRank; ++tensorRank) {
      const std::vector<int64_t> &shape = shapes[tensorRank - 1];
      std::vector<NdSbp> all = layouts(mesh.size(), tensorRank);
      std::vector<Pair> pairs;
      for (const NdSbp &src : all)
        for (const NdSbp &dst : all)
          pairs.emplace_back(src, dst);
      Tally before = tally;
      for (size_t first = 0; first < pairs.size(); first += kPairsPerPlan) {
        std::vector<Pair> chunk(
            pairs.begin() + first,
            pairs.begin() + std::min(pairs.size(), first + kPairsPerPlan));
        // Rank 0 compiles and checks the bytes; every rank runs the plan.
        std::vector<std::string> problems(chunk.size());
        std::string serialized;
        if (rank == 0) {
          OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
              moduleText(mesh, shape, chunk), &context);
          PassManager pm(&context);
          pm.addPass(createAttachCluster());
          ExpandBoxingOptions expand;
          expand.mixedPrecision = false;
          pm.addPass(createExpandBoxing(expand));
          pm.addPass(createLowerToPlan());
          if (!module || failed(pm.run(*module))) {
            std::printf("FAIL: mesh %s rank %lld: the plan does not compile\n",
                        join(mesh, "x").c_str(),
                        static_cast<long long>(tensorRank));
            MPI_Abort(MPI_COMM_WORLD, 1);
          }
          checkBytes(*module, mesh, chunk, shape, problems);
          FailureOr<plan::Plan> plan = exportPlan(*module);
          if (failed(plan) || !rt::checkPlan(*plan).ok()) {
            std::printf("FAIL: mesh %s: the plan does not check\n",
                        join(mesh, "x").c_str());
            MPI_Abort(MPI_COMM_WORLD, 1);
          }
          serialized = plan->SerializeAsString();
        }
        int64_t size = static_cast<int64_t>(serialized.size());
        MPI_Bcast(&size, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
        serialized.resize(size);
        MPI_Bcast(serialized.data(), static_cast<int>(size), MPI_BYTE, 0,
                  MPI_COMM_WORLD);
        plan::Plan plan;
        plan.ParseFromString(serialized);
        MeshWorld meshWorld(*communicator, static_cast<int>(meshSize(mesh)));
        std::vector<std::vector<double>> blocks =
            runPlan(plan, mesh, shape, chunk, meshWorld, rank, worldSize);
        if (rank == 0) {
          checkBlocks(mesh, shape, chunk, blocks, problems);
          for (size_t k = 0; k < chunk.size(); ++k)
            tally.count(describe(mesh, chunk[k]), problems[k]);
        }
      }
      if (rank == 0)
        std::printf("mesh %s, rank %lld (%s): %lld reshardings, %lld "
                    "failed\n",
                    join(mesh, "x").c_str(), static_cast<long long>(tensorRank),
                    join(shape, "x").c_str(),
                    static_cast<long long>(pairs.size()),
                    static_cast<long long>(tally.failed - before.failed));
    }
  if (rank == 0)
    std::printf("%lld passed, %lld failed\n",
                static_cast<long long>(tally.passed),
                static_cast<long long>(tally.failed));
  communicator.reset();
  MPI_Finalize();
  return rank == 0 && tally.failed ? 1 : 0;
}
