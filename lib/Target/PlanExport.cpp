//===- PlanExport.cpp - plan dialect programs to plan.proto ---------------===//
//
// A direct walk: every plan op has exactly one proto form, so nothing is
// decided here. What is checked is what the proto cannot say: kernels known
// to the runtime, attributes with a runtime form. checkPlan checks the rest
// (every device in one program) on the result.
//
//===----------------------------------------------------------------------===//

#include "parplan/Target/PlanExport.h"

#include "parplan/Dialect/AttrNames.h"
#include "parplan/Dialect/Plan/PlanOps.h"
#include "parplan/Runtime/KernelCall.h"
#include "parplan/Runtime/PlanFile.h"
#include "parplan/Target/NNInterpreter.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace pp = parplan::plan;
namespace rt = parplan::runtime;

namespace {

template <typename Field>
void copyInts(ArrayRef<int64_t> values, Field *field) {
  field->Add(values.begin(), values.end());
}

/// One program's buffers and instructions.
/// The model node an op comes from: the first name in its location (the
/// importer names each op's location after its ONNX node), or "".
std::string nodeName(Location loc) {
  std::string name;
  loc->walk([&](Location inner) {
    if (auto named = dyn_cast<NameLoc>(inner)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

/// Constants of at least this many bytes go to Plan.constant_data, once
/// per value: the programs of a plan's stages read the same masks and
/// tables, and small ones cost less inline than an index.
constexpr size_t kSharedConstantBytes = 4096;

/// The plan's shared constant data, by the attribute holding it (attributes
/// are uniqued: equal values are one attribute).
struct SharedConstants {
  explicit SharedConstants(pp::Plan &plan) : plan(plan) {}
  pp::Plan &plan;
  llvm::DenseMap<Attribute, int64_t> index;
};

class ProgramExporter {
public:
  /// `moves`: the index of each plan.cross_mesh in the plan's
  /// cross_mesh_moves, by name.
  ProgramExporter(pp::Program &program, const llvm::StringMap<int64_t> &moves,
                  SharedConstants &shared)
      : program(program), moves(moves), shared(shared) {}

  LogicalResult run(pp::ProgramOp op);

private:
  pp::Program &program;
  const llvm::StringMap<int64_t> &moves;
  SharedConstants &shared;
  llvm::DenseMap<Value, int64_t> index;

  int64_t indexOf(Value buffer) { return index.lookup(buffer); }
  void crossMeshPart(pp::CrossMeshPart &part, StringRef move, Value block,
                     Value scratch) {
    part.set_move(moves.lookup(move));
    part.set_block(indexOf(block));
    part.set_scratch(scratch ? indexOf(scratch) : -1);
  }
  LogicalResult buffer(pp::BufferOp op);
  LogicalResult kernel(pp::KernelOp op);
};

LogicalResult ProgramExporter::buffer(pp::BufferOp op) {
  MemRefType type = op.getType();
  std::optional<rt::DType> dtype = parplan::toDType(type.getElementType());
  if (!dtype)
    return op.emitOpError() << "has no plan file form";
  pp::Buffer &buffer = *program.add_buffers();
  index[op.getResult()] = program.buffers_size() - 1;
  buffer.set_dtype(rt::toPlanDType(*dtype));
  copyInts(type.getShape(), buffer.mutable_shape());
  buffer.set_kind(rt::toProto(pp::toBufferKind(op.getKind())));
  buffer.set_arena_offset(op.getOffset() ? static_cast<int64_t>(*op.getOffset())
                                         : -1);
  if (op.getName())
    buffer.set_name(op.getName()->str());
  if (op.getLogicalShape())
    copyInts(*op.getLogicalShape(), buffer.mutable_logical_shape());
  if (op.getSplits())
    copyInts(*op.getSplits(), buffer.mutable_splits());
  if (op.getSource())
    buffer.set_source(op.getSource()->str());
  if (op.getPartOf())
    buffer.set_part_of(op.getPartOf()->str());
  if (op.getPart())
    copyInts(*op.getPart(), buffer.mutable_part());
  if (op.getValueBound())
    buffer.set_value_bound(static_cast<int64_t>(*op.getValueBound()));
  if (op.getSyntheticCenter())
    buffer.set_synthetic_center(op.getSyntheticCenter()->convertToDouble());
  if (auto value = op.getValueAttr()) {
    auto dense = dyn_cast<DenseElementsAttr>(value);
    if (!dense)
      return op.emitOpError() << "holds a constant that is not dense";
    auto type = cast<ShapedType>(dense.getType());
    size_t bytes = static_cast<size_t>(type.getNumElements()) *
                   rt::byteWidth(*parplan::toDType(type.getElementType()));
    if (bytes < kSharedConstantBytes) {
      rt::Tensor tensor = parplan::toTensor(dense);
      buffer.set_data(reinterpret_cast<const char *>(tensor.bytes()),
                      tensor.byteSize());
      return success();
    }
    auto [found, inserted] =
        shared.index.try_emplace(dense, shared.plan.constant_data_size());
    if (inserted) {
      rt::Tensor tensor = parplan::toTensor(dense);
      shared.plan.add_constant_data(
          reinterpret_cast<const char *>(tensor.bytes()), tensor.byteSize());
    }
    buffer.set_shared_data(found->second + 1);
  }
  return success();
}

LogicalResult ProgramExporter::kernel(pp::KernelOp op) {
  std::string name = op.getKernel().str();
  const rt::KernelSignature *signature = rt::lookupKernel(name);
  if (!signature)
    return op.emitOpError()
           << "runs '" << name << "', which the runtime has no kernel for";
  pp::Kernel &kernel = *program.add_instructions()->mutable_kernel();
  kernel.set_op(name);
  const rt::KernelOp &declared = rt::kernelOp(*rt::lookupKernelId(name));
  if (std::optional<DictionaryAttr> attrs = op.getAttrs()) {
    // A DictionaryAttr is sorted by name: the bytes are deterministic.
    for (NamedAttribute attr : *attrs) {
      if (auto offset = dyn_cast<pp::BlockOffsetAttr>(attr.getValue())) {
        pp::Attr &out = *kernel.add_attrs();
        out.set_name(attr.getName().str());
        pp::BlockOffset &block = *out.mutable_block_offset();
        copyInts(offset.getShape().asArrayRef(), block.mutable_shape());
        copyInts(offset.getSplits().asArrayRef(), block.mutable_splits());
        block.set_dim(offset.getDim());
        continue;
      }
      std::optional<rt::AttrValue> value = parplan::toKernelAttr(
          attr.getValue(), declared.findAttr(attr.getName().getValue()));
      if (!value)
        return op.emitOpError() << "attribute '" << attr.getName().getValue()
                                << "' has no runtime form";
      pp::Attr &out = *kernel.add_attrs();
      out.set_name(attr.getName().str());
      if (const int64_t *i = value->getInt())
        out.set_int_value(*i);
      else if (const double *f = value->getFloat())
        out.set_float_value(*f);
      else if (const bool *b = value->getBool())
        out.set_bool_value(*b);
      else if (const std::string *s = value->getString())
        out.set_string_value(*s);
      else if (const std::vector<int64_t> *list = value->getInts())
        out.mutable_ints_value()->mutable_values()->Add(list->begin(),
                                                        list->end());
    }
  }
  if (std::optional<APFloat> flops = op.getFlops())
    kernel.set_flops(flops->convertToDouble());
  if (std::optional<APFloat> bytes = op.getBytes())
    kernel.set_bytes(bytes->convertToDouble());
  if (std::optional<StringRef> type = op.getComputeType())
    kernel.set_compute_type(type->str());
  for (Value in : op.getIns())
    kernel.add_operands(indexOf(in));
  // Absent optional operands (the last ones) are -1 in the file.
  if (signature->numOperands >= 0)
    for (int64_t i = op.getIns().size(); i < signature->numOperands; ++i)
      kernel.add_operands(-1);
  for (Value out : op.getOuts())
    kernel.add_results(indexOf(out));
  return success();
}

LogicalResult ProgramExporter::run(pp::ProgramOp op) {
  copyInts(op.getDevices(), program.mutable_devices());
  if (FlatSymbolRefAttr mesh = op.getMeshAttr())
    program.set_mesh(mesh.getValue().str());
  program.set_loss(-1);
  if (auto arena = op->getAttrOfType<IntegerAttr>(parplan::kArenaBytesAttrName))
    program.set_arena_bytes(arena.getInt());
  for (Operation &inner : op.getBody().front()) {
    auto collective = [&](pp::Collective::Kind kind, StringRef group,
                          Value input, Value output,
                          bool feedsUpdate) -> pp::Collective & {
      pp::Collective &c = *program.add_instructions()->mutable_collective();
      c.set_kind(kind);
      c.set_group(group.str());
      c.set_input(indexOf(input));
      c.set_output(indexOf(output));
      c.set_feeds_update(feedsUpdate);
      return c;
    };
    LogicalResult result = success();
    int instructionsBefore = program.instructions_size();
    llvm::TypeSwitch<Operation *>(&inner)
        .Case([&](pp::BufferOp o) { result = buffer(o); })
        .Case([&](pp::KernelOp o) { result = kernel(o); })
        .Case([&](pp::AllReduceOp o) {
          collective(pp::Collective::ALL_REDUCE, o.getGroup(), o.getBuffer(),
                     o.getBuffer(), o.getFeedsUpdate())
              .set_reduce(rt::toProto(pp::toReduceKind(o.getReduce())));
        })
        .Case([&](pp::AllGatherOp o) {
          collective(pp::Collective::ALL_GATHER, o.getGroup(), o.getInput(),
                     o.getOutput(), o.getFeedsUpdate())
              .set_axis(static_cast<int64_t>(o.getAxis()));
        })
        .Case([&](pp::ReduceScatterOp o) {
          pp::Collective &c =
              collective(pp::Collective::REDUCE_SCATTER, o.getGroup(),
                         o.getInput(), o.getOutput(), o.getFeedsUpdate());
          c.set_axis(static_cast<int64_t>(o.getAxis()));
          c.set_reduce(rt::toProto(pp::toReduceKind(o.getReduce())));
        })
        .Case([&](pp::AllToAllOp o) {
          pp::Collective &c =
              collective(pp::Collective::ALL_TO_ALL, o.getGroup(), o.getInput(),
                         o.getOutput(), false);
          c.set_axis(static_cast<int64_t>(o.getSplitAxis()));
          c.set_concat_axis(static_cast<int64_t>(o.getConcatAxis()));
        })
        .Case([&](pp::BroadcastOp o) {
          collective(pp::Collective::BROADCAST, o.getGroup(), o.getBuffer(),
                     o.getBuffer(), o.getFeedsUpdate())
              .set_root(static_cast<int64_t>(o.getRoot()));
        })
        .Case([&](pp::SendOp o) {
          pp::Send &send = *program.add_instructions()->mutable_send();
          send.set_buffer(indexOf(o.getBuffer()));
          send.set_peer(static_cast<int64_t>(o.getPeer()));
          send.set_tag(static_cast<int64_t>(o.getTag()));
        })
        .Case([&](pp::RecvOp o) {
          pp::Recv &recv = *program.add_instructions()->mutable_recv();
          recv.set_buffer(indexOf(o.getBuffer()));
          recv.set_peer(static_cast<int64_t>(o.getPeer()));
          recv.set_tag(static_cast<int64_t>(o.getTag()));
        })
        .Case([&](pp::CrossMeshSendOp o) {
          crossMeshPart(*program.add_instructions()->mutable_cross_mesh_send(),
                        o.getMove(), o.getBlock(), o.getScratch());
        })
        .Case([&](pp::CrossMeshRecvOp o) {
          crossMeshPart(*program.add_instructions()->mutable_cross_mesh_recv(),
                        o.getMove(), o.getBlock(), o.getScratch());
        })
        .Case([&](pp::LossOp o) { program.set_loss(indexOf(o.getBuffer())); })
        .Case([&](pp::AfterMicroBatchesOp) {
          program.set_update_begin(program.instructions_size());
        })
        .Case([&](pp::ForwardBeginOp) {
          program.set_forward_begin(program.instructions_size());
        })
        .Case([&](pp::BackwardBeginOp) {
          program.set_backward_begin(program.instructions_size());
        })
        .Case([&](pp::ChunkOp o) {
          // By chunk: the backward marks them in reverse.
          auto *begins = program.has_backward_begin()
                             ? program.mutable_backward_chunks()
                             : program.mutable_forward_chunks();
          auto chunk = static_cast<int>(o.getChunk());
          while (begins->size() <= chunk)
            begins->Add(-1);
          begins->Set(chunk, program.instructions_size());
        })
        .Case([&](pp::UpdateOp o) {
          pp::Update &update = *program.add_updates();
          update.set_target(indexOf(o.getTarget()));
          update.set_source(indexOf(o.getSource()));
        })
        .Default([&](Operation *other) {
          result = other->emitOpError() << "has no plan file form";
        });
    if (failed(result))
      return failure();
    if (program.instructions_size() > instructionsBefore)
      program.mutable_instructions()->rbegin()->set_node(
          nodeName(inner.getLoc()));
  }
  return success();
}

} // namespace

FailureOr<pp::Plan> parplan::exportPlan(ModuleOp module) {
  pp::Plan plan;
  if (failed(exportPlan(module, plan)))
    return failure();
  return plan;
}

LogicalResult parplan::exportPlan(ModuleOp module, pp::Plan &plan) {
  if (auto source = module->getAttrOfType<StringAttr>(parplan::kSourceAttrName))
    plan.set_model(source.str());
  if (auto bytes =
          module->getAttrOfType<IntegerAttr>(parplan::kSourceBytesAttrName))
    plan.set_model_bytes(static_cast<uint64_t>(bytes.getInt()));
  if (auto fingerprint = module->getAttrOfType<IntegerAttr>(
          parplan::kSourceFingerprintAttrName))
    plan.set_model_fingerprint(static_cast<uint64_t>(fingerprint.getInt()));
  for (pp::GroupOp group : module.getOps<pp::GroupOp>()) {
    pp::Group &out = *plan.add_groups();
    out.set_name(group.getSymName().str());
    if (std::optional<ArrayRef<int64_t>> devices = group.getDevices())
      copyInts(*devices, out.mutable_devices());
    if (std::optional<ArrayRef<int64_t>> axes = group.getMeshAxes())
      copyInts(*axes, out.mutable_mesh_axes());
    if (FlatSymbolRefAttr mesh = group.getMeshAttr())
      out.set_mesh(mesh.getValue().str());
  }
  for (pp::MeshOp mesh : module.getOps<pp::MeshOp>()) {
    pp::Mesh &out = *plan.add_meshes();
    out.set_name(mesh.getSymName().str());
    copyInts(mesh.getShape(), out.mutable_shape());
    copyInts(mesh.getDevices(), out.mutable_devices());
  }
  llvm::StringMap<int64_t> moves;
  for (pp::CrossMeshOp move : module.getOps<pp::CrossMeshOp>()) {
    moves[move.getSymName()] = plan.cross_mesh_moves_size();
    pp::CrossMeshMove &out = *plan.add_cross_mesh_moves();
    auto type = cast<RankedTensorType>(move.getType());
    std::optional<rt::DType> dtype = parplan::toDType(type.getElementType());
    if (!dtype)
      return move.emitOpError() << "has no plan file form";
    out.set_name(move.getSymName().str());
    out.set_dtype(rt::toPlanDType(*dtype));
    copyInts(type.getShape(), out.mutable_logical_shape());
    out.set_source_mesh(move.getFrom().str());
    copyInts(move.getFromSplits(), out.mutable_source_splits());
    out.set_destination_mesh(move.getTo().str());
    copyInts(move.getToSplits(), out.mutable_destination_splits());
    for (const parplan::Slice &tile : move.getTiles()) {
      pp::CrossMeshTile &region = *out.add_tiles();
      copyInts(tile.offsets, region.mutable_offsets());
      copyInts(tile.sizes, region.mutable_sizes());
    }
    for (const parplan::CrossMeshTransfer &transfer : move.getTransfers()) {
      pp::CrossMeshTransfer &step = *out.add_transfers();
      step.set_tile(transfer.tile);
      step.set_sender(transfer.sender);
      copyInts(transfer.receivers, step.mutable_receivers());
    }
  }
  SmallVector<pp::ProgramOp> programs(module.getOps<pp::ProgramOp>());
  if (programs.empty())
    return module.emitError() << "the module has no plan.program";
  // By first device: the file does not depend on the order of the ops.
  llvm::sort(programs, [](pp::ProgramOp a, pp::ProgramOp b) {
    return a.getDevices().front() < b.getDevices().front();
  });
  // The plan's whole mesh, whatever named mesh a program is on.
  copyInts(pp::planMeshShape(programs.front()), plan.mutable_mesh_shape());
  if (auto shares =
          module->getAttrOfType<ArrayAttr>(parplan::kPlanMeshSharesAttrName)) {
    parplan::MeshShares weights;
    for (Attribute list : shares) {
      auto axis = dyn_cast<DenseI64ArrayAttr>(list);
      if (!axis)
        return module.emitError()
               << parplan::kPlanMeshSharesAttrName << " holds " << list
               << ", not an array<i64> of weights";
      weights.emplace_back(axis.asArrayRef().begin(), axis.asArrayRef().end());
      copyInts(weights.back(), plan.add_mesh_shares()->mutable_weights());
    }
    std::vector<int64_t> meshShape(plan.mesh_shape().begin(),
                                   plan.mesh_shape().end());
    if (std::optional<std::string> error =
            parplan::checkShares(meshShape, weights))
      return module.emitError()
             << parplan::kPlanMeshSharesAttrName << ": " << *error;
  }
  auto microBatches =
      module->getAttrOfType<IntegerAttr>(parplan::kPlanMicroBatchesAttrName);
  if (microBatches && microBatches.getInt() > 1)
    plan.set_micro_batches(microBatches.getInt());
  if (auto schedule =
          module->getAttrOfType<StringAttr>(parplan::kPlanScheduleAttrName))
    plan.set_schedule(schedule.str());
  if (auto cluster = module->getAttrOfType<StringAttr>(kPlanClusterAttrName))
    plan.set_cluster(cluster.str());
  if (auto predicted = module->getAttrOfType<pp::PredictionAttr>(
          parplan::kPlanPredictionAttrName)) {
    pp::Prediction &prediction = *plan.mutable_prediction();
    prediction.set_step_seconds(predicted.getStepTime());
    prediction.set_compute_seconds(predicted.getComputeTime());
    prediction.set_communication_seconds(predicted.getCommunicationTime());
  }
  SharedConstants shared(plan);
  for (pp::ProgramOp program : programs) {
    pp::Program &out = *plan.add_programs();
    ProgramExporter exporter(out, moves, shared);
    if (failed(exporter.run(program)))
      return failure();
    // Without a plan.after_micro_batches, every instruction runs per
    // micro-batch.
    if (plan.micro_batches() > 1 &&
        program.getBody().front().getOps<pp::AfterMicroBatchesOp>().empty())
      out.set_update_begin(out.instructions_size());
    // Without a plan.backward_begin, a micro-batch is all forward.
    if (plan.micro_batches() > 1 &&
        program.getBody().front().getOps<pp::BackwardBeginOp>().empty())
      out.set_backward_begin(out.update_begin());
  }
  if (rt::Status status = rt::checkPlan(plan); !status.ok())
    return module.emitError() << "the plan is invalid: " << status.error;
  return success();
}
