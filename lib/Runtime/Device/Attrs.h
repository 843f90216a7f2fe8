//===- Attrs.h - resolved attributes, for the device kernels ----*- C++ -*-===//
//
// The group headers of lib/Runtime/Device read an op's attributes from the
// map resolveKernelAttrs (KernelCall.h) returns: every attribute the op has
// is present, with its default, so these readers need none of their own.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_LIB_RUNTIME_DEVICE_ATTRS_H
#define PARPLAN_LIB_RUNTIME_DEVICE_ATTRS_H

#include "parplan/Runtime/KernelCall.h"

#include <string>
#include <vector>

namespace parplan::runtime::device {

/// Reads a resolved attribute (resolveKernelAttrs filled every one the op
/// has, so a missing one is a bug in the caller, answered with the
/// fallback).
inline int64_t attrInt(const AttrMap &attrs, const char *name,
                       int64_t fallback = 0) {
  auto it = attrs.find(name);
  const int64_t *value = it == attrs.end() ? nullptr : it->second.getInt();
  return value ? *value : fallback;
}
inline double attrFloat(const AttrMap &attrs, const char *name,
                        double fallback = 0) {
  auto it = attrs.find(name);
  const double *value = it == attrs.end() ? nullptr : it->second.getFloat();
  return value ? *value : fallback;
}
inline bool attrBool(const AttrMap &attrs, const char *name,
                     bool fallback = false) {
  auto it = attrs.find(name);
  const bool *value = it == attrs.end() ? nullptr : it->second.getBool();
  return value ? *value : fallback;
}
inline std::vector<int64_t> attrInts(const AttrMap &attrs, const char *name) {
  auto it = attrs.find(name);
  const std::vector<int64_t> *value =
      it == attrs.end() ? nullptr : it->second.getInts();
  return value ? *value : std::vector<int64_t>{};
}
inline std::string attrString(const AttrMap &attrs, const char *name) {
  auto it = attrs.find(name);
  const std::string *value =
      it == attrs.end() ? nullptr : it->second.getString();
  return value ? *value : std::string();
}
inline bool hasAttr(const AttrMap &attrs, const char *name) {
  return attrs.count(name) != 0;
}

} // namespace parplan::runtime::device

#endif // PARPLAN_LIB_RUNTIME_DEVICE_ATTRS_H
