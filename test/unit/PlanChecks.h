//===- PlanChecks.h - checkPlan's errors in the plan tests -----*- C++ -*-===//
//
// The plan tests break one field of a valid plan at a time and expect
// checkPlan to say what is wrong in one line.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TEST_UNIT_PLANCHECKS_H
#define PARPLAN_TEST_UNIT_PLANCHECKS_H

#include "parplan/Runtime/PlanFile.h"

#include <catch2/catch.hpp>

#include <string>

namespace parplan::testing {

/// checkPlan's error on `plan` after `edit`.
template <typename Edit>
std::string checkErrorAfter(plan::Plan plan, Edit &&edit) {
  edit(plan);
  return runtime::checkPlan(plan).error;
}

/// Whether `error` is one line that says `text`.
inline bool has(const std::string &error, const std::string &text) {
  INFO(error);
  return error.find(text) != std::string::npos &&
         error.find('\n') == std::string::npos;
}

} // namespace parplan::testing

#endif // PARPLAN_TEST_UNIT_PLANCHECKS_H
