//===- ShardingCostModel.cpp - prices of layouts on a mesh ----------------===//

#include "parplan/Transforms/Sharding/ShardingCostModel.h"
#include "parplan/Transforms/Sharding/ClusterAnalysis.h"

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Compute.h"
#include "parplan/Cost/Presets.h"
#include "parplan/Dialect/NN/NNInterfaces.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace parplan;

namespace {

/// A small code per entry, 8 bits a mesh axis, so that memo keys are cheap.
uint64_t encode(const NdSbp &layout) {
  uint64_t code = 0;
  for (const Sbp &entry : layout) {
    uint64_t bits = 0;
    if (entry.isPartial())
      bits = 1 + static_cast<uint64_t>(entry.reduce);
    else if (entry.isSplit())
      bits = 5 + static_cast<uint64_t>(entry.axis);
    code = (code << 8) | (bits & 0xff);
  }
  return code;
}

double peakOf(const cost::DeviceType &type, cost::ComputeType dtype) {
  auto peak = type.peakFlops.find(dtype);
  return peak == type.peakFlops.end() ? 0 : peak->second;
}

} // namespace

bool parplan::attachAnnotations(ModuleOp module, const std::string &path,
                                std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    error = "cannot read '" + path + "': " + file.getError().message();
    return false;
  }
  Builder builder(module.getContext());
  module->setAttr(
      kAnnotationsAttrName,
      builder.getDictionaryAttr(
          {builder.getNamedAttr("file", builder.getStringAttr(path)),
           builder.getNamedAttr("text",
                                builder.getStringAttr((*file)->getBuffer()))}));
  return true;
}

std::optional<ShardingCostModel>
ShardingCostModel::load(const std::string &presetName,
                        std::optional<std::vector<int64_t>> meshShape,
                        bool mixedPrecision, std::string &error) {
  std::optional<cost::Cluster> cluster =
      cost::resolveCluster(presetName, error);
  if (!cluster)
    return std::nullopt;
  return load(*cluster, std::move(meshShape), mixedPrecision, error);
}

std::optional<ShardingCostModel>
ShardingCostModel::load(const cost::Cluster &cluster,
                        std::optional<std::vector<int64_t>> meshShape,
                        bool mixedPrecision, std::string &error) {
  std::vector<int64_t> shape =
      meshShape ? *meshShape : cost::defaultMeshShape(cluster);
  std::optional<cost::DeviceMesh> mesh = cost::makeMesh(cluster, shape, error);
  if (!mesh)
    return std::nullopt;
  if (shape.size() > 8) {
    error = "meshes of more than 8 axes are not supported";
    return std::nullopt;
  }
  return onMesh(cluster, std::move(*mesh), mixedPrecision);
}

ShardingCostModel ShardingCostModel::onMesh(const cost::Cluster &cluster,
                                            cost::DeviceMesh mesh,
                                            bool mixedPrecision) {
  ShardingCostModel model;
  model.cluster = cluster;
  model.mesh = std::move(mesh);
  model.mixedPrecision = mixedPrecision;
  for (int64_t axis = 0; axis < static_cast<int64_t>(model.mesh.shape.size());
       ++axis)
    model.axisLinks.push_back(cost::axisLink(model.cluster, model.mesh, axis));
  cost::ComputeType reference =
      mixedPrecision ? cost::ComputeType::BF16 : cost::ComputeType::F32;
  // A device's type as its position in `deviceTypes`.
  auto typeIndex = [&](int64_t device) {
    return static_cast<size_t>(&model.cluster.deviceTypeOf(device) -
                               model.cluster.deviceTypes.data());
  };
  auto slower = [&](size_t a, size_t b) {
    return peakOf(model.cluster.deviceTypes[a], reference) <
           peakOf(model.cluster.deviceTypes[b], reference);
  };
  model.smallestMemoryDevice = model.mesh.devices.front();
  model.slowestType = typeIndex(model.mesh.devices.front());
  for (int64_t device : model.mesh.devices) {
    size_t type = typeIndex(device);
    if (model.cluster.deviceTypes[type].memoryBytes <
        model.cluster.deviceTypeOf(model.smallestMemoryDevice).memoryBytes)
      model.smallestMemoryDevice = device;
    if (slower(type, model.slowestType))
      model.slowestType = type;
  }
  const MeshShares &shares = model.mesh.shares;
  for (size_t axis = 0; axis < shares.size() && model.sharesAxis < 0; ++axis)
    if (hasUnevenShares(shares, axis))
      model.sharesAxis = static_cast<int64_t>(axis);
  if (model.sharesAxis >= 0) {
    const std::vector<int64_t> &weights =
        shares[static_cast<size_t>(model.sharesAxis)];
    cost::PositionLinks &positions = model.positionLinks;
    positions.axis = model.sharesAxis;
    double weightSum = 0;
    for (int64_t weight : weights)
      weightSum += static_cast<double>(weight);
    for (size_t along = 0; along < weights.size(); ++along) {
      double fraction = static_cast<double>(weights[along]) / weightSum;
      cost::DeviceMesh position = cost::subMesh(model.mesh, model.sharesAxis,
                                                static_cast<int64_t>(along));
      std::vector<cost::Link> links;
      for (int64_t axis = 0;
           axis < static_cast<int64_t>(model.mesh.shape.size()); ++axis)
        links.push_back(
            axis == model.sharesAxis
                ? model.axisLinks[static_cast<size_t>(axis)]
                : cost::axisLink(model.cluster, position,
                                 axis < model.sharesAxis ? axis : axis - 1));
      // Positions alike (a type's, of one part) price every step alike:
      // one entry for them all.
      auto sameLinks = [&](const std::vector<cost::Link> &known) {
        return llvm::all_of(llvm::zip(known, links), [](const auto &pair) {
          const auto &[a, b] = pair;
          return a.bandwidth == b.bandwidth && a.latency == b.latency;
        });
      };
      size_t entry = 0;
      while (entry < positions.links.size() &&
             !(positions.fractions[entry] == fraction &&
               sameLinks(positions.links[entry])))
        ++entry;
      model.positionEntries.push_back(entry);
      if (entry < positions.links.size())
        continue;
      positions.fractions.push_back(fraction);
      positions.links.push_back(std::move(links));
    }
    std::vector<bool> seen(weights.size(), false);
    model.shareSlowestTypes.assign(weights.size(), 0);
    for (int64_t position = 0; position < model.mesh.size(); ++position) {
      auto along = static_cast<size_t>(meshCoordinate(
          model.mesh.shape, position)[static_cast<size_t>(model.sharesAxis)]);
      size_t type =
          typeIndex(model.mesh.devices[static_cast<size_t>(position)]);
      if (!seen[along] || slower(type, model.shareSlowestTypes[along]))
        model.shareSlowestTypes[along] = type;
      seen[along] = true;
    }
  }
  model.largestBlock = meshLargestBlock(model.mesh.shape, model.mesh.shares);
  return model;
}

double ShardingCostModel::getDeviceMemoryBytes() const {
  return cluster.deviceTypeOf(smallestMemoryDevice).memoryBytes;
}

const cost::DeviceType &ShardingCostModel::getSlowestDeviceType() const {
  return cluster.deviceTypes[slowestType];
}

cost::ComputeType ShardingCostModel::computeType(Type elementType) const {
  if (elementType.isF64())
    return cost::ComputeType::F64;
  if (elementType.isF16())
    return cost::ComputeType::F16;
  if (elementType.isBF16())
    return cost::ComputeType::BF16;
  if (!isa<FloatType>(elementType)) // Integer work runs on the vector units.
    return cost::ComputeType::F32;
  if (mixedPrecision) {
    const cost::DeviceType &device = getSlowestDeviceType();
    if (peakOf(device, cost::ComputeType::BF16) > 0)
      return cost::ComputeType::BF16;
    if (peakOf(device, cost::ComputeType::F16) > 0)
      return cost::ComputeType::F16;
  }
  return cost::ComputeType::F32;
}

int64_t ShardingCostModel::elementBytes(Type elementType) const {
  if (mixedPrecision && isa<FloatType>(elementType) && !elementType.isF64())
    return 2;
  unsigned bits = elementType.getIntOrFloatBitWidth();
  return bits < 8 ? 1 : bits / 8;
}

double ShardingCostModel::computeTime(double flops, double bytes,
                                      Type elementType) const {
  return computeTime(LocalWork{flops, bytes, computeType(elementType)});
}

double ShardingCostModel::rooflineTime(const LocalWork &work,
                                       const cost::DeviceType &type) const {
  if (std::optional<double> time =
          cost::computeTime(work.flops, work.bytes, type, work.type))
    return *time;
  // A device without a peak for the type: price it at its f32 peak.
  return cost::computeTime(work.flops, work.bytes, type, cost::ComputeType::F32)
      .value_or(std::numeric_limits<double>::infinity());
}

double ShardingCostModel::computeTime(const LocalWork &work) const {
  if (work.positionScales.empty() || sharesAxis < 0)
    return rooflineTime(work, cluster.deviceTypes[slowestType]);
  return *llvm::max_element(positionTimes(work));
}

namespace {
/// `op`'s results, then its operands, as blockWorkFraction pairs them:
/// each one's static shape and its layout.
void tensorsOf(Operation *op, const std::vector<NdSbp> &operands,
               const std::vector<NdSbp> &results,
               std::vector<std::vector<int64_t>> &shapes,
               std::vector<const NdSbp *> &layouts) {
  for (size_t i = 0; i < results.size() && i < op->getNumResults(); ++i) {
    shapes.push_back(
        staticShapeOf(op->getResult(static_cast<unsigned>(i)).getType()));
    layouts.push_back(&results[i]);
  }
  for (size_t i = 0; i < operands.size() && i < op->getNumOperands(); ++i) {
    shapes.push_back(
        staticShapeOf(op->getOperand(static_cast<unsigned>(i)).getType()));
    layouts.push_back(&operands[i]);
  }
}
} // namespace

llvm::SmallVector<double, 8>
ShardingCostModel::positionTimes(const LocalWork &work) const {
  llvm::SmallVector<double, 8> times;
  if (sharesAxis < 0)
    return times;
  for (size_t i = 0; i < shareSlowestTypes.size(); ++i) {
    LocalWork share = work;
    if (!work.positionScales.empty()) {
      share.flops *= work.positionScales[i];
      share.bytes *= work.positionScales[i];
    }
    times.push_back(
        rooflineTime(share, cluster.deviceTypes[shareSlowestTypes[i]]));
  }
  return times;
}

std::optional<ShardingCostModel::LocalWork>
ShardingCostModel::localWork(Operation *op, const std::vector<NdSbp> &operands,
                             const std::vector<NdSbp> &results,
                             const std::vector<int64_t> *coordinate) const {
  auto shardable = dyn_cast<nn::ShardableOpInterface>(op);
  if (!shardable || op->getNumResults() == 0)
    return std::nullopt;
  FailureOr<OpCost> opCost = shardable.getCost();
  if (failed(opCost))
    return std::nullopt;
  Type resultType = op->getResult(0).getType();
  Type elementType = resultType;
  if (auto tensor = dyn_cast<RankedTensorType>(resultType))
    elementType = tensor.getElementType();
  // getCost counts bytes at the tensors' own width; mixed precision moves
  // floating-point values at 2 bytes.
  double byteScale = 1;
  if (elementType.isIntOrFloat()) {
    unsigned bits = elementType.getIntOrFloatBitWidth();
    if (bits >= 8)
      byteScale = static_cast<double>(elementBytes(elementType)) / (bits / 8.0);
  }
  // Each tensor's shape read once: the even-blocks test and every
  // position's block below share them.
  std::vector<std::vector<int64_t>> shapes;
  std::vector<const NdSbp *> layouts;
  tensorsOf(op, operands, results, shapes, layouts);
  bool evenBlocks = true, bySharesAxis = false;
  for (size_t t = 0; t < shapes.size(); ++t) {
    const NdSbp &layout = *layouts[t];
    if (sharesAxis >= 0 && static_cast<size_t>(sharesAxis) < layout.size() &&
        layout[static_cast<size_t>(sharesAxis)].isSplit())
      bySharesAxis = true;
    if (!shapes[t].empty() && layout.size() == mesh.shape.size() &&
        !hasEvenBlocks(shapes[t], mesh.shape, layout, mesh.shares))
      evenBlocks = false;
  }
  auto fractionAt = [&](const std::vector<int64_t> &at) {
    return blockWorkFraction(shapes, layouts, mesh.shape, mesh.shares, at);
  };
  double fraction = 0;
  llvm::SmallVector<double, 8> positionScales;
  if (evenBlocks) {
    fraction = localWorkFraction(operands, results, mesh.shape);
  } else if (coordinate) {
    fraction = fractionAt(*coordinate);
  } else {
    fraction = fractionAt(largestBlock);
    if (bySharesAxis && fraction > 0) {
      std::vector<int64_t> at = largestBlock;
      for (size_t i = 0; i < shareSlowestTypes.size(); ++i) {
        at[static_cast<size_t>(sharesAxis)] = static_cast<int64_t>(i);
        positionScales.push_back(fractionAt(at) / fraction);
      }
    }
  }
  return LocalWork{
      opCost->flops * fraction,
      static_cast<double>(opCost->bytesRead + opCost->bytesWritten) *
          byteScale * fraction,
      computeType(elementType), std::move(positionScales)};
}

std::vector<int64_t> parplan::staticShapeOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return {};
  return std::vector<int64_t>(tensor.getShape().begin(),
                              tensor.getShape().end());
}

cost::TensorExtent ShardingCostModel::extent(Type type) const {
  cost::TensorExtent extent;
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return {{0}, 0};
  extent.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  extent.elementBytes =
      static_cast<double>(elementBytes(tensor.getElementType()));
  return extent;
}

const std::optional<cost::BoxingCost> &
ShardingCostModel::boxing(const NdSbp &from, const NdSbp &to, Type type) const {
  // Types are uniqued: the same shape and element type is the same key.
  auto key =
      std::make_tuple(encode(from), encode(to), type.getAsOpaquePointer());
  auto [found, inserted] = boxingIndex.try_emplace(key, boxingCosts.size());
  if (inserted)
    boxingCosts.push_back(cost::boxingCost(
        from, to, extent(type), mesh.shape, axisLinks, mesh.shares,
        sharesAxis >= 0 ? &positionLinks : nullptr));
  return boxingCosts[found->second];
}

llvm::SmallVector<double, 8>
ShardingCostModel::boxingPositionTimes(const NdSbp &from, const NdSbp &to,
                                       Type type, size_t steps) const {
  const std::optional<cost::BoxingCost> &priced = boxing(from, to, type);
  if (sharesAxis < 0 || !priced)
    return {};
  cost::TensorExtent tensor = extent(type);
  // Each entry's steps, once: positions alike share them.
  std::vector<double> entryTimes;
  for (size_t entry = 0; entry < positionLinks.links.size(); ++entry) {
    cost::PositionLinks own{sharesAxis,
                            {positionLinks.fractions[entry]},
                            {positionLinks.links[entry]}};
    double time = 0;
    for (const cost::BoxingStep &step :
         ArrayRef(priced->steps).take_front(steps))
      time +=
          cost::priceStep(step.step, tensor, mesh.shape, axisLinks, &own).time;
    entryTimes.push_back(time);
  }
  llvm::SmallVector<double, 8> times;
  for (size_t entry : positionEntries)
    times.push_back(entryTimes[entry]);
  return times;
}

std::optional<Annotations> parplan::carriedAnnotations(ModuleOp module,
                                                       std::string &error) {
  error.clear();
  auto carried = module->getAttrOfType<DictionaryAttr>(kAnnotationsAttrName);
  if (!carried)
    return std::nullopt;
  return parseAnnotations(carried.getAs<StringAttr>("text").getValue(),
                          carried.getAs<StringAttr>("file").getValue(), error);
}

const ShardingCostModel *MeshCostModels::get(sbp::MeshOp mesh,
                                             std::string &error) {
  // Meshes placed alike (cost::placeMeshes: on alike nodes, shifted by
  // whole nodes) share a model, and with it the memos of boxings and
  // moves: a pipeline's stages on a uniform cluster are priced once. On
  // one of mixed types or links, each mesh is priced on its own devices (a
  // stage of P100s over PCIe boxes at its pace, not at the first node's).
  if (!cluster) {
    error = kMissingClusterMessage;
    return nullptr;
  }
  if (const ShardingCostModel *known = ofMesh.lookup(mesh))
    return known;
  cost::DeviceMesh placed = deviceMeshOf(mesh);
  std::string key = cost::placeMeshes(*cluster, {&placed}).key;
  for (const std::vector<int64_t> &weights : placed.shares) {
    key += ";";
    for (int64_t weight : weights)
      key += std::to_string(weight) + ",";
  }
  std::optional<ShardingCostModel> &model = models[key];
  if (model)
    return ofMesh[mesh] = &*model;
  if (std::optional<std::string> why = cost::checkMesh(*cluster, placed)) {
    error = "mesh @" + mesh.getSymName().str() + " on cluster '" +
            cluster->name + "': " + *why;
    return nullptr;
  }
  model =
      ShardingCostModel::onMesh(*cluster, std::move(placed), mixedPrecision);
  return ofMesh[mesh] = &*model;
}

cost::DeviceMesh parplan::deviceMeshOf(sbp::MeshOp mesh) {
  cost::DeviceMesh placed;
  placed.shape.assign(mesh.getShape().begin(), mesh.getShape().end());
  for (int64_t i = 0; i < mesh.getNumDevices(); ++i)
    placed.devices.push_back(mesh.getDeviceId(i));
  placed.shares = mesh.getMeshShares();
  return placed;
}

namespace {

/// The one axis of `mesh` along which its devices' types differ; -1 where
/// they are alike, std::nullopt where they differ along more than one.
std::optional<int64_t> typedAxisOf(const cost::Cluster &cluster,
                                   const cost::DeviceMesh &mesh) {
  int64_t typedAxis = -1;
  for (int64_t position = 0; position < mesh.size(); ++position) {
    std::vector<int64_t> coordinate = meshCoordinate(mesh.shape, position);
    for (size_t axis = 0; axis < mesh.shape.size(); ++axis) {
      if (coordinate[axis] == 0)
        continue;
      std::vector<int64_t> first = coordinate;
      first[axis] = 0;
      int64_t device = mesh.devices[static_cast<size_t>(position)];
      int64_t other =
          mesh.devices[static_cast<size_t>(meshLinearIndex(mesh.shape, first))];
      if (cluster.deviceTypeOf(device).name == cluster.deviceTypeOf(other).name)
        continue;
      if (typedAxis >= 0 && typedAxis != static_cast<int64_t>(axis))
        return std::nullopt;
      typedAxis = static_cast<int64_t>(axis);
    }
  }
  return typedAxis;
}

/// The ops' time by device type: a type's positions run them alike.
using SecondsOfType = std::map<std::string, double>;

/// Each position of `axis`'s speed at `function`'s ops, in thousandths of
/// the fastest's (the inverse of the ops' roofline times, whole, on the
/// position's device at coordinate 0 elsewhere); empty where the times are
/// not positive and finite. `secondsOfType` keeps the types' times.
std::vector<int64_t> positionSpeeds(const cost::Cluster &cluster,
                                    const cost::DeviceMesh &mesh, size_t axis,
                                    func::FuncOp function, bool mixedPrecision,
                                    SecondsOfType &secondsOfType) {
  std::vector<double> seconds;
  for (int64_t i = 0; i < mesh.shape[axis]; ++i) {
    std::vector<int64_t> coordinate(mesh.shape.size(), 0);
    coordinate[axis] = i;
    int64_t device = mesh.devices[static_cast<size_t>(
        meshLinearIndex(mesh.shape, coordinate))];
    auto [known, inserted] =
        secondsOfType.try_emplace(cluster.deviceTypeOf(device).name, 0.0);
    if (inserted) {
      ShardingCostModel model = ShardingCostModel::onMesh(
          cluster, cost::DeviceMesh{{1}, {device}}, mixedPrecision);
      function.walk([&](Operation *op) {
        if (std::optional<ShardingCostModel::LocalWork> work =
                model.localWork(op, {}, {}))
          known->second += model.computeTime(*work);
      });
    }
    seconds.push_back(known->second);
  }
  double fastest = *std::min_element(seconds.begin(), seconds.end());
  if (!(fastest > 0) || !std::isfinite(fastest))
    return {};
  std::vector<int64_t> thousandths;
  for (double time : seconds)
    thousandths.push_back(
        std::max<int64_t>(1, std::llround(1000 * fastest / time)));
  return thousandths;
}

/// `units` whole units over positions of `speeds`, so that the last
/// position to finish does so as early as whole units allow: each starts
/// at its proportional part rounded down, and each unit left goes where it
/// ends soonest, (part + 1) / speed least, the lower index on a tie.
/// Rounding the largest remainders instead ignores the speeds: on
/// mixed-t4-a100 as one axis of 24 it gave half the T4s a third row, a
/// fifth longer than the A100s' 12.
std::vector<int64_t> wholeParts(const std::vector<int64_t> &speeds,
                                int64_t units) {
  int64_t speedSum = 0;
  for (int64_t speed : speeds)
    speedSum += speed;
  std::vector<int64_t> parts;
  int64_t given = 0;
  for (int64_t speed : speeds) {
    parts.push_back(units * speed / speedSum);
    given += parts.back();
  }
  for (; given < units; ++given) {
    size_t soonest = 0;
    for (size_t i = 1; i < parts.size(); ++i)
      if ((parts[i] + 1) * speeds[soonest] < (parts[soonest] + 1) * speeds[i])
        soonest = i;
    ++parts[soonest];
  }
  return parts;
}

/// How much later than in exact proportion to `speeds` the last of
/// `parts` ends: 1 where they are exactly in proportion.
double partsOverProportion(const std::vector<int64_t> &parts,
                           const std::vector<int64_t> &speeds) {
  double latest = 0, total = 0, speedSum = 0;
  for (auto [part, speed] : llvm::zip(parts, speeds)) {
    latest = std::max(latest, static_cast<double>(part) / speed);
    total += part;
    speedSum += speed;
  }
  return latest * speedSum / total;
}

/// The rows each position of `speeds` takes, summing to `rows`: in whole
/// rows per device where `rows` divides by a position's `positionDevices`
/// (a node's part that does not divide by its devices leaves some of them
/// a row more, which the step waits for: on whale-v100-p100 at batch 256,
/// 79 : 49 rows, 9.875 and 6.125 per device), else whole rows per
/// position. Empty where a position gets none or the parts come out even.
std::vector<int64_t> rowParts(const std::vector<int64_t> &speeds, int64_t rows,
                              int64_t positionDevices) {
  auto positions = static_cast<int64_t>(speeds.size());
  int64_t unit =
      rows % positionDevices == 0 && rows / positionDevices >= positions
          ? positionDevices
          : 1;
  std::vector<int64_t> parts = wholeParts(speeds, rows / unit);
  if (llvm::is_contained(parts, 0) || llvm::all_equal(parts))
    return {};
  for (int64_t &part : parts)
    part *= unit;
  return parts;
}

} // namespace

MeshShares parplan::speedShares(const cost::Cluster &cluster,
                                const cost::DeviceMesh &mesh,
                                func::FuncOp function, bool mixedPrecision,
                                int64_t rows) {
  std::optional<int64_t> typedAxis = typedAxisOf(cluster, mesh);
  if (!typedAxis)
    return {};
  // Alike devices take the batch's rows evenly, which whole rows allow
  // only where the first axis divides them: else near-even whole rows
  // along it (64 rows on 10 devices, 7 on four and 6 on six), where even
  // parts would leave the batch whole.
  if (*typedAxis < 0 &&
      (rows <= 0 || mesh.shape.empty() || mesh.shape.front() < 2 ||
       rows % mesh.shape.front() == 0))
    return {};
  auto axis = static_cast<size_t>(std::max<int64_t>(*typedAxis, 0));
  SecondsOfType secondsOfType;
  std::vector<int64_t> speeds = positionSpeeds(cluster, mesh, axis, function,
                                               mixedPrecision, secondsOfType);
  if (speeds.empty())
    return {};
  MeshShares shares(mesh.shape.size());
  if (rows <= 0) {
    shares[axis] = std::move(speeds);
    return shares;
  }
  std::vector<int64_t> parts =
      rowParts(speeds, rows, mesh.size() / mesh.shape[axis]);
  if (parts.empty())
    return {};
  shares[axis] = std::move(parts);
  return shares;
}

std::vector<cost::DeviceMesh>
parplan::speedGroupedMeshes(const cost::Cluster &cluster,
                            const cost::DeviceMesh &mesh, func::FuncOp function,
                            bool mixedPrecision, int64_t rows) {
  if (mesh.shape.empty() || mesh.shape.size() > 2 || rows <= 0)
    return {};
  std::optional<int64_t> typedAxis = typedAxisOf(cluster, mesh);
  if (!typedAxis || *typedAxis != 0)
    return {};
  SecondsOfType secondsOfType;
  std::vector<int64_t> speeds =
      positionSpeeds(cluster, mesh, 0, function, mixedPrecision, secondsOfType);
  if (speeds.empty())
    return {};
  int64_t perPosition = mesh.size() / mesh.shape[0];
  std::vector<int64_t> byDevice = rowParts(speeds, rows, perPosition);
  // Even parts where whole rows per device cannot follow the speeds.
  double best = partsOverProportion(
      byDevice.empty()
          ? wholeParts(std::vector<int64_t>(speeds.size(), 1), rows)
          : byDevice,
      speeds);
  std::vector<std::pair<double, cost::DeviceMesh>> grouped;
  int64_t devices = mesh.size();
  std::vector<int64_t> nodes;
  for (int64_t device : mesh.devices)
    nodes.push_back(cluster.nodeOf(device));
  for (int64_t group = 2; group <= devices / 2; ++group) {
    if (devices % group != 0)
      continue;
    // Each group within one node, on its links and of one type.
    bool withinNodes = true;
    for (int64_t i = 0; withinNodes && i < devices; ++i)
      withinNodes = nodes[static_cast<size_t>(i)] ==
                    nodes[static_cast<size_t>(i - i % group)];
    if (!withinNodes)
      continue;
    cost::DeviceMesh candidate{{devices / group, group}, mesh.devices, {}};
    std::vector<int64_t> groupSpeeds = positionSpeeds(
        cluster, candidate, 0, function, mixedPrecision, secondsOfType);
    if (groupSpeeds.empty())
      continue;
    // Whole rows per group, however many devices it has.
    std::vector<int64_t> parts = rowParts(groupSpeeds, rows, 1);
    if (parts.empty())
      continue;
    // A hundredth nearer the speeds at least: a group's tensor
    // parallelism costs communication that whole rows per device do not.
    double over = partsOverProportion(parts, groupSpeeds);
    if (!(over < best * 0.99))
      continue;
    candidate.shares = {std::move(parts), {}};
    grouped.emplace_back(over, std::move(candidate));
  }
  // Every k as near as the nearest: which group's tensor parallelism
  // pays best is the search's to find (on mixed-a100-v100 at batch 128,
  // 9 : 7 rows per pair, 18 : 14 per group of 4 and 36 : 28 per node are
  // all exact, and groups of 4 step fastest).
  double nearest = best;
  for (const auto &[over, candidate] : grouped)
    nearest = std::min(nearest, over);
  std::vector<cost::DeviceMesh> meshes;
  for (auto &[over, candidate] : grouped)
    if (over <= nearest * 1.001)
      meshes.push_back(std::move(candidate));
  return meshes;
}

/// `layout` with its Partial entries as Broadcast.
static NdSbp reducedLayout(NdSbp layout) {
  for (Sbp &entry : layout)
    if (entry.isPartial())
      entry = Sbp::broadcast();
  return layout;
}

std::optional<CrossMeshCost>
ShardingCostModel::crossMesh(const cost::DeviceMesh &source, const NdSbp &from,
                             const cost::DeviceMesh &destination,
                             const NdSbp &to, Type type,
                             std::optional<cost::CrossMeshMode> mode,
                             std::string &error, CrossMeshSides sides) const {
  return priceCrossMesh(source, from, destination, to, type, mode, false, sides,
                        error);
}

std::optional<CrossMeshCost> ShardingCostModel::crossMeshEstimate(
    const cost::DeviceMesh &source, const NdSbp &from,
    const cost::DeviceMesh &destination, const NdSbp &to, Type type,
    std::string &error, CrossMeshSides sides) const {
  return priceCrossMesh(source, from, destination, to, type, std::nullopt, true,
                        sides, error);
}

size_t
ShardingCostModel::placementOf(const cost::DeviceMesh &source,
                               const cost::DeviceMesh &destination) const {
  std::vector<int64_t> meshes;
  for (const cost::DeviceMesh *mesh : {&source, &destination}) {
    meshes.push_back(static_cast<int64_t>(mesh->shape.size()));
    meshes.insert(meshes.end(), mesh->shape.begin(), mesh->shape.end());
    meshes.push_back(static_cast<int64_t>(mesh->devices.size()));
    meshes.insert(meshes.end(), mesh->devices.begin(), mesh->devices.end());
  }
  auto [found, inserted] = placementOfMeshes.try_emplace(std::move(meshes));
  if (inserted)
    found->second =
        placementKeys
            .try_emplace(
                cost::placeMeshes(cluster, {&source, &destination}).key,
                placementKeys.size())
            .first->second;
  return found->second;
}

const cost::ClusterIndex &ShardingCostModel::clusterIndex() const {
  if (!indexedCluster || &indexedCluster->cluster() != &cluster)
    indexedCluster = std::make_shared<const cost::ClusterIndex>(cluster);
  return *indexedCluster;
}

ShardingCostModel::PlannedMove ShardingCostModel::planMove(
    const cost::DeviceMesh &source, const NdSbp &sent,
    const cost::DeviceMesh &destination, const NdSbp &received, Type type,
    std::optional<cost::CrossMeshMode> mode, bool estimate) const {
  PlannedMove move;
  cost::CrossMeshProblem problem;
  problem.shape = extent(type).shape;
  problem.elementBytes =
      elementBytes(cast<RankedTensorType>(type).getElementType());
  problem.source = source;
  problem.destination = destination;
  problem.sourceLayout = sent;
  problem.destinationLayout = received;
  if (cost::checkCrossMesh(problem, cluster)) {
    // The tensor named only in the error: the search checks thousands.
    llvm::raw_string_ostream(problem.tensor) << type;
    move.error = *cost::checkCrossMesh(problem, cluster);
    return move;
  }
  const cost::ClusterIndex &links = clusterIndex();
  if (estimate) {
    move.moveTime =
        cost::crossMeshLowerBound(problem, links) +
        links.link(source.devices.front(), destination.devices.front()).latency;
    return move;
  }
  // The tiles, once for the bound and every schedule.
  std::vector<cost::CrossMeshTile> tiles = cost::crossMeshTiles(problem);
  double bound = cost::crossMeshLowerBound(tiles, links);
  // No schedule beats the bound plus the least latency between the meshes:
  // once one meets it, the later ones (which lose ties) are not planned.
  double leastLatency = links.leastLatency(source.devices, destination.devices);
  bool planned = false, unbeatable = false;
  for (cost::CrossMeshMode candidate : cost::kCrossMeshModes) {
    if (mode && candidate != *mode)
      continue;
    for (cost::CrossMeshBalancing balancing : cost::kCrossMeshBalancings) {
      if (unbeatable)
        break;
      cost::CrossMeshSchedule schedule =
          cost::planCrossMesh(tiles, links, candidate, balancing);
      // Ties go to the simpler mode and balancing, listed first.
      if (planned && schedule.seconds >= move.moveTime)
        continue;
      planned = true;
      move.mode = candidate;
      move.balancing = balancing;
      move.moveTime = schedule.seconds;
      unbeatable = schedule.seconds <= bound + leastLatency;
    }
  }
  return move;
}

std::optional<CrossMeshCost> ShardingCostModel::priceCrossMesh(
    const cost::DeviceMesh &source, const NdSbp &from,
    const cost::DeviceMesh &destination, const NdSbp &to, Type type,
    std::optional<cost::CrossMeshMode> mode, bool estimate,
    CrossMeshSides sides, std::string &error) const {
  // Moves between other meshes of alike nodes cost the same (placeMeshes):
  // a pipeline's boundaries are planned once. Types are uniqued: the same
  // shape and element type is the same key.
  size_t placement = placementOf(source, destination);
  int modeCode = estimate ? -2 : mode ? static_cast<int>(*mode) : -1;
  const ShardingCostModel &sender = sides.source ? *sides.source : *this;
  const ShardingCostModel &receiver =
      sides.destination ? *sides.destination : *this;
  auto [found, inserted] =
      crossMeshCosts.try_emplace({MoveKey(placement, encode(from), encode(to),
                                          type.getAsOpaquePointer(), modeCode),
                                  &sender, &receiver});
  PricedMove &priced = found->second;
  std::optional<CrossMeshCost> &result = priced.cost;
  if (!inserted) {
    if (!result)
      error = priced.error;
    return result;
  }
  CrossMeshCost best;
  best.sent = reducedLayout(from);
  best.received = reducedLayout(to);
  const std::optional<cost::BoxingCost> &before =
      sender.boxing(from, best.sent, type);
  const std::optional<cost::BoxingCost> &after =
      receiver.boxing(best.received, to, type);
  if (!before || !after) {
    error = priced.error = "no boxing turns " +
                           toString(!before ? from : best.received) + " into " +
                           toString(!before ? best.sent : to);
    return std::nullopt;
  }
  auto [plannedAt, unplanned] = plannedMoves.try_emplace(
      MoveKey(placement, encode(best.sent), encode(best.received),
              type.getAsOpaquePointer(), modeCode));
  if (unplanned)
    plannedAt->second = planMove(source, best.sent, destination, best.received,
                                 type, mode, estimate);
  const PlannedMove &move = plannedAt->second;
  if (!move.error.empty()) {
    error = priced.error = move.error;
    return std::nullopt;
  }
  best.mode = move.mode;
  best.balancing = move.balancing;
  best.moveTime = move.moveTime;
  best.beforeTime = before->time;
  best.time = before->time + best.moveTime + after->time;
  result = best;
  return result;
}

NdSbp parplan::gradientLayout(const NdSbp &layout) {
  NdSbp gradient = layout;
  for (Sbp &entry : gradient) {
    if (entry.isBroadcast())
      entry = Sbp::partial();
    else if (entry.isPartial())
      entry = Sbp::broadcast();
  }
  return gradient;
}

namespace {
double elementCount(const std::vector<int64_t> &sizes) {
  double count = 1;
  for (int64_t size : sizes)
    count *= static_cast<double>(size);
  return count;
}
} // namespace

std::vector<int64_t>
parplan::meshLargestBlock(const std::vector<int64_t> &meshShape,
                          const MeshShares &shares) {
  std::vector<int64_t> coordinate(meshShape.size(), 0);
  for (size_t axis = 0; axis < shares.size() && axis < meshShape.size(); ++axis)
    if (hasUnevenShares(shares, axis))
      coordinate[axis] =
          std::max_element(shares[axis].begin(), shares[axis].end()) -
          shares[axis].begin();
  return coordinate;
}

double parplan::blockWorkFraction(Operation *op,
                                  const std::vector<NdSbp> &operands,
                                  const std::vector<NdSbp> &results,
                                  const std::vector<int64_t> &meshShape,
                                  const MeshShares &shares,
                                  const std::vector<int64_t> &coordinate) {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<const NdSbp *> layouts;
  tensorsOf(op, operands, results, shapes, layouts);
  return blockWorkFraction(shapes, layouts, meshShape, shares, coordinate);
}

double
parplan::blockWorkFraction(const std::vector<std::vector<int64_t>> &shapes,
                           const std::vector<const NdSbp *> &layouts,
                           const std::vector<int64_t> &meshShape,
                           const MeshShares &shares,
                           const std::vector<int64_t> &coordinate) {
  auto splits = [&](size_t tensor, size_t axis) {
    const NdSbp &layout = *layouts[tensor];
    return !shapes[tensor].empty() && layout.size() == meshShape.size() &&
           layout[axis].isSplit();
  };
  // The tensor split along the most mesh axes (the first on a tie).
  size_t widest = shapes.size();
  size_t widestAxes = 0;
  for (size_t t = 0; t < shapes.size(); ++t) {
    size_t axes = 0;
    for (size_t axis = 0; axis < meshShape.size(); ++axis)
      axes += splits(t, axis) ? 1 : 0;
    if (axes > widestAxes) {
      widest = t;
      widestAxes = axes;
    }
  }
  if (widest == shapes.size())
    return 1;
  auto blockOf = [&](size_t tensor, const NdSbp &layout) {
    double whole = elementCount(shapes[tensor]);
    if (!(whole > 0))
      return 1.0;
    return elementCount(localShape(shapes[tensor], meshShape, layout,
                                   coordinate, shares)) /
           whole;
  };
  double fraction = blockOf(widest, *layouts[widest]);
  for (size_t axis = 0; axis < meshShape.size(); ++axis) {
    if (splits(widest, axis))
      continue;
    for (size_t t = 0; t < shapes.size(); ++t) {
      if (!splits(t, axis))
        continue;
      NdSbp alone(meshShape.size(), Sbp::broadcast());
      alone[axis] = (*layouts[t])[axis];
      fraction *= blockOf(t, alone);
      break;
    }
  }
  return fraction;
}

double parplan::localWorkFraction(const std::vector<NdSbp> &operands,
                                  const std::vector<NdSbp> &results,
                                  const std::vector<int64_t> &meshShape) {
  double work = 1;
  for (size_t axis = 0; axis < meshShape.size(); ++axis) {
    bool splits = false;
    for (const NdSbp &layout : operands)
      splits |= axis < layout.size() && layout[axis].isSplit();
    for (const NdSbp &layout : results)
      splits |= axis < layout.size() && layout[axis].isSplit();
    if (splits)
      work /= static_cast<double>(meshShape[axis]);
  }
  return work;
}
