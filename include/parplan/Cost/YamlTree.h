//===- YamlTree.h - YAML and JSON files as trees with positions -*- C++ -*-===//
//
// The reading half shared by parplan's YAML/JSON side files (cluster files,
// layout annotations): llvm::yaml::Stream turns the text into a small tree
// that keeps the source position of every node (the YAML parser is lazy and
// forward only, so the tree lets a reader look fields up in any order), and
// every error becomes one line, "PATH:LINE:COL: message". JSON is read as
// YAML (JSON is a subset of YAML); checkStrictJson first checks a ".json"
// file to be strict JSON. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_YAMLTREE_H
#define PARPLAN_COST_YAMLTREE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parplan::cost {

/// How deeply the mappings and lists of a side file may nest, unless its
/// reader asks for another limit: deeper text is "nesting too deep".
inline constexpr int kMaxYamlTreeDepth = 64;

/// One YAML node: a scalar, a mapping or a list, with where it starts.
/// Pointers point into the text that was parsed, which must outlive the
/// tree.
struct YamlTree {
  enum Kind { Null, Scalar, Mapping, Sequence };
  Kind kind = Null;
  /// Where the node starts in the text (a flow collection: its bracket).
  const char *loc = nullptr;
  /// Scalar: the value (quotes and escapes resolved) and where the value's
  /// characters start (after an opening quote).
  std::string value;
  const char *valueLoc = nullptr;
  /// Mapping: keys in order, with where each key starts; children[i] is the
  /// value of keys[i]. Keys are unique (a duplicate is a parse error).
  std::vector<std::pair<std::string, const char *>> keys;
  /// Mapping: the values; Sequence: the items.
  std::vector<YamlTree> children;

  /// "nothing", "a scalar", "a mapping", "a list": for "X must be ..., not
  /// KIND" messages.
  const char *kindName() const;

  /// Mapping: the value of `key`, or nullptr when there is none.
  const YamlTree *get(llvm::StringRef key) const;
};

/// Collects the first error, as "PATH:LINE:COL: message". Later errors are
/// dropped: a reader stops at the first.
class YamlDiagnostics {
public:
  YamlDiagnostics(llvm::StringRef text, llvm::StringRef path)
      : text(text), path(path) {}

  bool failed() const { return !error.empty(); }
  const std::string &message() const { return error; }

  /// Records an error at `loc` (a pointer into the text) unless one is
  /// recorded already. Returns false, for `return fail(...)`.
  bool fail(const char *loc, const llvm::Twine &message);
  /// The same at a line and column (both from 1).
  bool failAt(unsigned line, unsigned column, const llvm::Twine &message);

  /// "PATH:LINE:COL" of a pointer into the text.
  std::string location(const char *loc) const;
  /// "LINE:COL" of a pointer into the text, both from 1 (1:1 for a pointer
  /// outside the text). Logarithmic in the number of lines, after one pass
  /// over the text on the first call.
  std::string lineColumn(const char *loc) const;

  /// The text being read.
  llvm::StringRef text;

private:
  llvm::StringRef path;
  std::string error;
  /// Offsets at which lines start, built on the first lineColumn().
  mutable std::vector<size_t> lineStarts;
};

/// LLVM's YAML and JSON messages are sentences ("Could not find closing
/// ]!"); parplan's are lower-case clauses ("could not find closing ]").
std::string messageClause(llvm::StringRef message);

/// The text of the file at `path`, or std::nullopt with `error` set to
/// "cannot read 'PATH': reason".
std::optional<std::string> readTextFile(const std::string &path,
                                        std::string &error);

/// Parses `text` (one YAML document) into `tree`. `fileNoun` names the kind
/// of file in the messages that have no better subject: "empty cluster
/// file", "a cluster file holds one YAML document". Mappings and lists may
/// nest `maxDepth` deep. Fails on YAML syntax errors, aliases, non-scalar and
/// duplicate keys. Returns false with the error in `diags`.
bool parseYamlTree(llvm::StringRef text, YamlTree &tree, YamlDiagnostics &diags,
                   llvm::StringRef fileNoun, int maxDepth = kMaxYamlTreeDepth);

/// Checks that `text` is strict JSON (for files named "*.json", before
/// parseYamlTree reads them): "invalid JSON: ..." at llvm::json's position.
/// Text nested deeper than `maxDepth` is rejected before llvm::json (which
/// recurses once per level) sees it.
bool checkStrictJson(llvm::StringRef text, YamlDiagnostics &diags,
                     int maxDepth = kMaxYamlTreeDepth);

/// The entry of `known` closest to `word` by edit distance, or "" when none
/// is close enough to be a likely typo: for "did you mean '...'?".
std::string closestName(llvm::StringRef word,
                        const std::vector<std::string> &known);

/// "a, b, c".
std::string joinNames(const std::vector<std::string> &names);

/// Checks that `tree` is a mapping (else "WHAT must be a mapping, not KIND"
/// at the node) whose keys are all in `known`; else "unknown field 'KEY'
/// (did you mean 'CLOSE'?)" or "unknown field 'KEY' in WHAT; expected
/// KNOWN..." at the key.
bool checkFields(const YamlTree &tree, const std::string &what,
                 const std::vector<std::string> &known, YamlDiagnostics &diags);

} // namespace parplan::cost

#endif // PARPLAN_COST_YAMLTREE_H
