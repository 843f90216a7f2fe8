//===- KernelOps.cpp - the kernels the runtime can call, by id ------------===//

#include "parplan/Runtime/KernelOps.h"

#include <unordered_map>

namespace parplan::runtime {

const KernelAttr *KernelOp::findAttr(std::string_view name) const {
  for (const KernelAttr &attr : attrs)
    if (name == attr.name)
      return &attr;
  return nullptr;
}

const std::vector<KernelOp> &kernelOps() {
  static const std::vector<KernelOp> ops = [] {
    std::vector<KernelOp> table = {
#define GET_KERNEL_OPS
#include "parplan/Runtime/KernelOps.inc"
    };
    // The variants read the generated entries, by id.
    auto variant = [&](KernelId id, const char *name, KernelId forward) {
      KernelOp op = table[static_cast<size_t>(forward)];
      op.id = id;
      op.name = name;
      op.attrs.push_back({"offset", AttrType::I64, true, std::nullopt, {}});
      op.attrs.push_back({"extent", AttrType::I64, true, std::nullopt, {}});
      table.push_back(std::move(op));
    };
    // Where lowering's kernel differs from the op. A dropout on a block
    // is told where the block lies in the logical tensor, so that each
    // element draws the mask bit of its logical index.
    for (const char *name : {"shape", "offset"})
      table[static_cast<size_t>(KernelId::Dropout)].attrs.push_back(
          {name,
           AttrType::I64Array,
           false,
           AttrValue(std::vector<int64_t>{}),
           {}});
    // An accumulation adds the op's input to the accumulator buffer it
    // writes in place: (sum, input) -> sum.
    table[static_cast<size_t>(KernelId::Accumulate)].numOperands = 2;
    variant(KernelId::GatherShard, "gather_shard", KernelId::Gather);
    variant(KernelId::GatherGradShard, "gather_grad_shard",
            KernelId::GatherGrad);
    return table;
  }();
  return ops;
}

const KernelOp &kernelOp(KernelId id) {
  return kernelOps()[static_cast<size_t>(id)];
}

std::optional<KernelId> lookupKernelId(std::string_view name) {
  static const std::unordered_map<std::string_view, KernelId> byName = [] {
    std::unordered_map<std::string_view, KernelId> map;
    for (const KernelOp &op : kernelOps())
      map.emplace(op.name, op.id);
    return map;
  }();
  auto it = byName.find(name);
  if (it == byName.end())
    return std::nullopt;
  return it->second;
}

const char *toString(KernelId id) { return kernelOp(id).name; }

const char *toString(AttrType type) {
  switch (type) {
  case AttrType::I64:
    return "i64";
  case AttrType::F32:
    return "f32";
  case AttrType::F64:
    return "f64";
  case AttrType::Bool:
    return "bool";
  case AttrType::Unit:
    return "unit";
  case AttrType::String:
    return "string";
  case AttrType::I64Array:
    return "i64 list";
  case AttrType::Enum:
    return "enum";
  }
  return "?";
}

AttrValue::Kind valueKind(AttrType type) {
  switch (type) {
  case AttrType::I64:
    return AttrValue::Kind::Int;
  case AttrType::F32:
  case AttrType::F64:
    return AttrValue::Kind::Float;
  case AttrType::Bool:
  case AttrType::Unit:
    return AttrValue::Kind::Bool;
  case AttrType::String:
  case AttrType::Enum:
    return AttrValue::Kind::String;
  case AttrType::I64Array:
    return AttrValue::Kind::Ints;
  }
  return AttrValue::Kind::Int;
}

} // namespace parplan::runtime
