//===- Annotations.h - layouts pinned by the user on named nodes -*- C++
//-*-===//
//
// Reads the annotations file of docs/sbp-annotations.md: nd-SBP layouts the
// user pins on the operands and results of named model nodes, for the
// sharding search to honour. YAML, or JSON when the name ends in ".json"
// (checked to be strict JSON first), read through parplan/Cost/YamlTree.h.
// Every error is one line, "FILE:LINE:COL: what is wrong".
//
// The reader checks the file alone: whether a pin's nd-SBPs fit the mesh, or
// its lists the node's operands and results, is for the consumer to check
// against the model. MLIR-free.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_COST_ANNOTATIONS_H
#define PARPLAN_COST_ANNOTATIONS_H

#include "parplan/Sbp/Sbp.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace parplan {

/// How deeply the mappings and lists of an annotations file may nest.
inline constexpr int kMaxAnnotationsFileDepth = 64;

/// One pin: the layouts of the operands and/or results of every node whose
/// name matches a glob.
struct LayoutPin {
  /// One entry per operand (or result): the nd-SBP it must have, or
  /// std::nullopt where the file says "any" or null (the search is free).
  using Layouts = std::vector<std::optional<NdSbp>>;

  /// The glob as written: `*` matches any run of characters (including
  /// none; it crosses '/' and '.'), `?` one character, `[abc]`, `[a-z]`,
  /// `[!a]`/`[^a]` one of a set, and `\` makes the next character literal.
  /// Braces are literal.
  std::string node;
  /// Absent: the operands (results) are free.
  std::optional<Layouts> operands;
  std::optional<Layouts> results;
  /// "FILE:LINE:COL" of the entry, for the consumer's messages.
  std::string location;

  /// Whether the glob matches the whole of `name`. An invalid glob (only
  /// possible in a pin built by hand) matches nothing.
  bool matches(llvm::StringRef name) const;

  /// The compiled `node` glob, shared between copies; set by the reader.
  /// matches() compiles `node` again when this is unset or was compiled from
  /// another pattern, so a pin built or edited by hand works as well.
  struct CompiledGlob;
  std::shared_ptr<const CompiledGlob> glob;
};

/// A stage pinned by the user (Whale's `stage`): every node whose name
/// matches one of `nodes` runs on the mesh `mesh`, of shape `shape` over the
/// cluster devices `devices` (row-major).
struct StagePin {
  std::string mesh;
  std::vector<int64_t> shape;
  std::vector<int64_t> devices;
  /// Globs, as LayoutPin::node.
  std::vector<std::string> nodes;
  /// "FILE:LINE:COL" of the entry.
  std::string location;

  /// Whether one of the globs matches the whole of `name`.
  bool matches(llvm::StringRef name) const;

  /// The compiled globs, one per entry of `nodes`; set by the reader.
  std::vector<std::shared_ptr<const LayoutPin::CompiledGlob>> globs;
};

/// A scope of Whale's primitives over named nodes: `replicate` keeps the
/// parameters of the nodes it names whole on every device (data
/// parallelism around them); `split` splits their matrix products over
/// the mesh's last axis, column then row (tensor parallelism, as
/// Megatron-LM splits a transformer's). A scope inside a stage
/// (`stages[].split`) holds only that stage's nodes.
struct ScopePin {
  enum class Kind { Replicate, Split };
  Kind kind = Kind::Replicate;
  /// Globs, as LayoutPin::node.
  std::vector<std::string> nodes;
  /// The stage's mesh the scope is nested in; empty at the top.
  std::string stage;
  /// "FILE:LINE:COL" of the scope.
  std::string location;

  /// Whether one of the globs matches the whole of `name`.
  bool matches(llvm::StringRef name) const;
  /// "replicate" or "split".
  const char *kindName() const;

  std::vector<std::shared_ptr<const LayoutPin::CompiledGlob>> globs;
};

/// The contents of an annotations file.
struct Annotations {
  /// In file order.
  std::vector<LayoutPin> pins;
  /// In file order: the stages' meshes are disjoint.
  std::vector<StagePin> stages;
  /// Whale's replicate and split scopes, at the top first, then each
  /// stage's, in file order.
  std::vector<ScopePin> scopes;
  /// Whale's switch from hardware-aware balancing to even shares
  /// (`balance: even`; default `speed`).
  bool evenShares = false;

  /// The pins whose glob matches `name`, in file order.
  std::vector<const LayoutPin *> pinsFor(llvm::StringRef name) const;
};

/// Checks `pattern` as a pin's node glob: the reason it is invalid, or
/// std::nullopt.
std::optional<std::string> checkNodeGlob(llvm::StringRef pattern);

/// Parses an annotations file. `path` names the text in errors and, when it
/// ends in ".json", asks for strict JSON. On failure returns std::nullopt and
/// sets `error` to "PATH:LINE:COL: message".
std::optional<Annotations> parseAnnotations(llvm::StringRef text,
                                            llvm::StringRef path,
                                            std::string &error);

/// Reads and parses the file at `path`. A file that cannot be read gives
/// "cannot read 'PATH': reason".
std::optional<Annotations> loadAnnotations(const std::string &path,
                                           std::string &error);

} // namespace parplan

#endif // PARPLAN_COST_ANNOTATIONS_H
