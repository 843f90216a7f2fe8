//===- Debug.cpp - why a search decided as it did -------------------------===//

#include "parplan/Transforms/Debug.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"

#include <array>
#include <mutex>

using namespace llvm;

namespace {

constexpr std::array<StringLiteral, 3> kDebugTypes = {
    parplan::kSbpAssignDebugType, parplan::kPipelineSearchDebugType,
    parplan::kRecomputeDebugType};

/// The types turned on, by the option or by enableDebugType.
struct EnabledTypes {
  std::mutex mutex;
  StringSet<> names;
};

EnabledTypes &enabledTypes() {
  static EnabledTypes types;
  return types;
}

struct DebugOnlyParser : cl::parser<std::string> {
  using cl::parser<std::string>::parser;
  bool parse(cl::Option &option, StringRef, StringRef value,
             std::string &result) {
    if (!parplan::enableDebugType(value))
      return option.error("'" + value + "' is not a search that explains " +
                          "itself; use " + parplan::debugTypeNames());
    result = value.str();
    return false;
  }
};

cl::list<std::string, bool, DebugOnlyParser>
    debugOnly("parplan-debug-only", cl::CommaSeparated,
              cl::value_desc("search"),
              cl::desc("Explain the decisions of these searches on stderr "
                       "(sbp-assign, pipeline-search, recompute)"));

} // namespace

bool parplan::isDebugEnabled(StringRef type) {
  EnabledTypes &types = enabledTypes();
  std::lock_guard<std::mutex> lock(types.mutex);
  return types.names.contains(type);
}

bool parplan::enableDebugType(StringRef type) {
  if (!llvm::is_contained(kDebugTypes, type))
    return false;
  EnabledTypes &types = enabledTypes();
  std::lock_guard<std::mutex> lock(types.mutex);
  types.names.insert(type);
  return true;
}

std::string parplan::debugTypeNames() {
  return join(kDebugTypes.begin(), kDebugTypes.end(), ", ");
}

raw_ostream &parplan::debugLine(StringRef type) {
  return errs() << "[" << type << "] ";
}
