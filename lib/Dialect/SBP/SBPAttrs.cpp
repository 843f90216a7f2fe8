//===- SBPAttrs.cpp - Split / Broadcast / Partial attributes --------------===//

#include "parplan/Dialect/SBP/SBPAttrs.h"
#include "parplan/Dialect/SBP/SBPDialect.h"

#include "parplan/Cost/ClusterFile.h"
#include "parplan/Cost/Presets.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <mutex>

using namespace mlir;
using namespace parplan::sbp;

#include "parplan/Dialect/SBP/SBPEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "parplan/Dialect/SBP/SBPAttrs.cpp.inc"

namespace parplan::sbp::detail {
class ClusterTable {
public:
  const parplan::cost::Cluster *intern(const parplan::cost::Cluster &cluster) {
    // A cluster is held as its JSON text reads back, so that the figures a
    // module is priced on are the ones its printed form gives.
    std::string json = parplan::cost::writeClusterJson(cluster);
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<parplan::cost::Cluster> &held = clusters[json];
    if (!held) {
      std::string error;
      std::optional<parplan::cost::Cluster> readBack =
          parplan::cost::parseCluster(json, "sbp.cluster.json", error);
      held = std::make_unique<parplan::cost::Cluster>(readBack ? *readBack
                                                               : cluster);
    }
    return held.get();
  }

private:
  std::mutex mutex;
  llvm::StringMap<std::unique_ptr<parplan::cost::Cluster>> clusters;
};
} // namespace parplan::sbp::detail

void SBPDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "parplan/Dialect/SBP/SBPAttrs.cpp.inc"
      >();
  clusters = std::make_shared<detail::ClusterTable>();
}

const parplan::cost::Cluster *
SBPDialect::internCluster(const parplan::cost::Cluster &cluster) {
  return clusters->intern(cluster);
}

ClusterAttr ClusterAttr::get(MLIRContext *context,
                             const parplan::cost::Cluster &cluster,
                             StringRef preset) {
  auto *dialect = context->getOrLoadDialect<SBPDialect>();
  return Base::get(context, preset, dialect->internCluster(cluster));
}

ClusterAttr ClusterAttr::fromPreset(MLIRContext *context, StringRef name,
                                    std::string &error) {
  std::optional<parplan::cost::Cluster> cluster =
      parplan::cost::preset(name.str());
  if (!cluster) {
    error = "unknown cluster preset '" + name.str() +
            "' (parplan clusters lists them)";
    return {};
  }
  return get(context, *cluster, name);
}

ClusterAttr ClusterAttr::resolve(MLIRContext *context, StringRef nameOrPath,
                                 std::string &error) {
  if (std::optional<parplan::cost::Cluster> preset =
          parplan::cost::preset(nameOrPath.str()))
    return get(context, *preset, nameOrPath);
  std::optional<parplan::cost::Cluster> cluster =
      parplan::cost::resolveCluster(nameOrPath.str(), error);
  if (!cluster)
    return {};
  return get(context, *cluster);
}

Attribute ClusterAttr::parse(AsmParser &parser, Type) {
  std::string keyword, text;
  SMLoc location = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeywordOrString(&keyword) ||
      parser.parseEqual() || parser.parseString(&text) || parser.parseGreater())
    return {};
  std::string error;
  ClusterAttr cluster;
  if (keyword == "preset") {
    cluster = fromPreset(parser.getContext(), text, error);
  } else if (keyword == "json") {
    std::optional<parplan::cost::Cluster> parsed =
        parplan::cost::parseCluster(text, "sbp.cluster.json", error);
    if (parsed)
      cluster = get(parser.getContext(), *parsed);
  } else {
    error = "expected 'preset' or 'json', not '" + keyword + "'";
  }
  if (!cluster)
    parser.emitError(location) << "#sbp.cluster: " << error;
  return cluster;
}

void ClusterAttr::print(AsmPrinter &printer) const {
  if (!getPreset().empty()) {
    printer << "<preset = ";
    printer.printString(getPreset());
  } else {
    printer << "<json = ";
    printer.printString(
        parplan::cost::writeClusterJson(*getCluster(), /*compact=*/true));
  }
  printer << ">";
}

LogicalResult SplitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t axis) {
  if (axis < 0)
    return emitError() << "split axis must be non-negative, got " << axis;
  return success();
}

parplan::ReduceKind parplan::sbp::toReduceKind(ReduceKind kind) {
  return fromDialectReduceKind(kind);
}

ReduceKind parplan::sbp::toSbpReduceKind(parplan::ReduceKind kind) {
  return toDialectReduceKind<ReduceKind>(kind);
}

std::optional<parplan::Sbp> parplan::sbp::toSbp(Attribute attr) {
  if (auto split = dyn_cast<SplitAttr>(attr))
    return Sbp::split(split.getAxis());
  if (isa<BroadcastAttr>(attr))
    return Sbp::broadcast();
  if (auto partial = dyn_cast<PartialAttr>(attr))
    return Sbp::partial(toReduceKind(partial.getReduce()));
  return std::nullopt;
}

parplan::NdSbp parplan::sbp::toNdSbp(ArrayAttr attrs) {
  NdSbp sbp;
  for (Attribute attr : attrs)
    sbp.push_back(*toSbp(attr));
  return sbp;
}

Attribute parplan::sbp::getSbpAttr(MLIRContext *context, const Sbp &sbp) {
  switch (sbp.kind) {
  case SbpKind::Split:
    return SplitAttr::get(context, sbp.axis);
  case SbpKind::Broadcast:
    return BroadcastAttr::get(context);
  case SbpKind::Partial:
    return PartialAttr::get(context, toSbpReduceKind(sbp.reduce));
  }
  llvm_unreachable("unknown SBP kind");
}

ArrayAttr parplan::sbp::getNdSbpAttr(MLIRContext *context, const NdSbp &sbp) {
  SmallVector<Attribute> attrs;
  for (const Sbp &entry : sbp)
    attrs.push_back(getSbpAttr(context, entry));
  return ArrayAttr::get(context, attrs);
}

//===----------------------------------------------------------------------===//
// sharding
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyNdSbpList(function_ref<InFlightDiagnostic()> emitError,
                              ArrayAttr list, StringRef role,
                              std::optional<size_t> &meshRank) {
  for (auto [index, element] : llvm::enumerate(list)) {
    auto ndSbp = dyn_cast<ArrayAttr>(element);
    if (!ndSbp || !llvm::all_of(ndSbp, [](Attribute entry) {
          return parplan::sbp::toSbp(entry).has_value();
        }))
      return emitError() << role << " " << index
                         << " is not an nd-SBP (an array of #sbp.s, #sbp.b, "
                            "#sbp.p): "
                         << element;
    if (meshRank && *meshRank != ndSbp.size())
      return emitError() << role << " " << index << " has " << ndSbp.size()
                         << " entries, others have " << *meshRank;
    meshRank = ndSbp.size();
  }
  return success();
}
} // namespace

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr, ArrayAttr operands,
                                   ArrayAttr results) {
  std::optional<size_t> meshRank;
  if (failed(verifyNdSbpList(emitError, operands, "operand", meshRank)))
    return failure();
  return verifyNdSbpList(emitError, results, "result", meshRank);
}

parplan::NdSbp ShardingAttr::getOperandSbp(unsigned index) const {
  return toNdSbp(cast<ArrayAttr>(getOperands()[index]));
}

parplan::NdSbp ShardingAttr::getResultSbp(unsigned index) const {
  return toNdSbp(cast<ArrayAttr>(getResults()[index]));
}

ShardingAttr ShardingAttr::get(MLIRContext *context, StringRef mesh,
                               ArrayRef<NdSbp> operands,
                               ArrayRef<NdSbp> results) {
  auto toList = [&](ArrayRef<NdSbp> layouts) {
    SmallVector<Attribute> list;
    for (const NdSbp &layout : layouts)
      list.push_back(getNdSbpAttr(context, layout));
    return ArrayAttr::get(context, list);
  };
  return get(context, FlatSymbolRefAttr::get(context, mesh), toList(operands),
             toList(results));
}

LogicalResult LayoutPlanAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef, StringRef,
    StringRef, BoolAttr, parplan::AttrDouble, parplan::AttrDouble,
    parplan::AttrDouble, parplan::AttrDouble overlapTime, int64_t, int64_t,
    parplan::AttrDouble memorySlowdown, DictionaryAttr baselines,
    ArrayAttr stages, StringRef, int64_t) {
  if (!(static_cast<double>(overlapTime) >= 0))
    return emitError() << "overlap_time must be at least 0 seconds, not "
                       << static_cast<double>(overlapTime);
  if (!(static_cast<double>(memorySlowdown) >= 0))
    return emitError() << "memory_slowdown must be at least 0, not "
                       << static_cast<double>(memorySlowdown);
  for (NamedAttribute baseline : baselines)
    if (!isa<FloatAttr>(baseline.getValue()))
      return emitError() << "baseline '" << baseline.getName().getValue()
                         << "' must be a float (its predicted seconds)";
  for (Attribute stage : stages)
    if (!isa<StageFiguresAttr>(stage))
      return emitError() << "stages must be #sbp.stage_figures, not " << stage;
  return success();
}

std::optional<double> LayoutPlanAttr::getBaseline(StringRef name) const {
  if (auto seconds = getBaselines().getAs<FloatAttr>(name))
    return seconds.getValueAsDouble();
  return std::nullopt;
}

LayoutPlanAttr LayoutPlanAttr::withBaseline(StringRef name,
                                            double seconds) const {
  MLIRContext *context = getContext();
  NamedAttrList baselines(getBaselines());
  baselines.set(name, FloatAttr::get(Float64Type::get(context), seconds));
  return get(context, getCluster(), getStrategy(), getStart(), getTraining(),
             getStepTime(), getComputeTime(), getCommunicationTime(),
             getOverlapTime(), getMemoryBytes(), getDeviceMemoryBytes(),
             getMemorySlowdown(), baselines.getDictionary(context), getStages(),
             getSchedule(), getSearchNodes());
}
