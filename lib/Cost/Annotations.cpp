//===- Annotations.cpp - layouts pinned by the user on named nodes --------===//
//
// parseYamlTree turns the text into a tree with source positions, then the
// tree is read into pins, one entry at a time: the node glob is compiled and
// every layout is parsed with parseNdSbp.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/Annotations.h"
#include "parplan/Cost/Mesh.h"
#include "parplan/Cost/YamlTree.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>

using namespace parplan;
using llvm::StringRef;
using parplan::cost::YamlDiagnostics;
using parplan::cost::YamlTree;

/// A glob and the pattern text it points into: llvm::GlobPattern keeps a
/// StringRef to its pattern, so the two live (and are shared) together.
struct LayoutPin::CompiledGlob {
  std::string pattern;
  llvm::GlobPattern glob;
};

namespace {

/// Compiles `pattern`; on failure returns nullptr and, when `error` is
/// given, sets it to LLVM's reason as a clause.
std::shared_ptr<const LayoutPin::CompiledGlob> compileGlob(StringRef pattern,
                                                           std::string *error) {
  auto compiled = std::make_shared<LayoutPin::CompiledGlob>();
  compiled->pattern = pattern.str();
  // No brace expansion: braces are literal.
  llvm::Expected<llvm::GlobPattern> glob =
      llvm::GlobPattern::create(compiled->pattern);
  if (!glob) {
    std::string message = cost::messageClause(llvm::toString(glob.takeError()));
    if (error)
      *error = message;
    return nullptr;
  }
  compiled->glob = std::move(*glob);
  return compiled;
}

/// `text` quoted for a one-line message: control characters escaped, long
/// text shortened.
std::string quoted(StringRef text) {
  constexpr size_t kShown = 64;
  std::string out = "'";
  size_t i = 0;
  for (; i < text.size() &&
         (i < kShown || (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80);
       ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      static const char digits[] = "0123456789abcdef";
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + (i < text.size() ? "...'" : "'");
}

/// YAML's spellings of null, and "any": no layout is pinned.
bool isFree(StringRef text) {
  return text == "any" || text == "null" || text == "Null" || text == "NULL" ||
         text == "~";
}

/// Where to point at the value of `key` in `mapping`: the value, or the key
/// when the value is missing ("key:" and nothing: the YAML parser places
/// an empty value after it, often on the next line).
const char *valueAt(const YamlTree &mapping, StringRef key) {
  for (size_t i = 0; i < mapping.keys.size(); ++i)
    if (mapping.keys[i].first == key)
      return mapping.children[i].kind == YamlTree::Null
                 ? mapping.keys[i].second
                 : mapping.children[i].loc;
  return mapping.loc;
}

class Reader {
public:
  explicit Reader(YamlDiagnostics &diags) : diags(diags) {}

  std::optional<Annotations> read(const YamlTree &root);

private:
  bool readPin(const YamlTree &entry, size_t index, LayoutPin &pin);
  bool readStage(const YamlTree &entry, size_t index, StagePin &stage);
  /// `key`'s list of globs in `entry`, or none where it is absent and
  /// not `required`.
  bool
  readGlobs(const YamlTree &entry, const char *key, const std::string &what,
            bool required, std::vector<std::string> &nodes,
            std::vector<std::shared_ptr<const LayoutPin::CompiledGlob>> &globs);
  /// A replicate or split scope of `entry` (the file or a stage), if any.
  bool readScope(const YamlTree &entry, const char *key, ScopePin::Kind kind,
                 const std::string &stage, const std::string &what,
                 std::vector<ScopePin> &scopes);
  bool readIntegers(const YamlTree *list, const char *listAt,
                    const std::string &what, int64_t minimum,
                    std::vector<int64_t> &out);
  bool readLayouts(const YamlTree &list, const char *listAt,
                   const std::string &what, const char *item,
                   LayoutPin::Layouts &out);
  bool readLayout(const YamlTree &item, const std::string &what,
                  std::optional<NdSbp> &out);

  YamlDiagnostics &diags;
};

std::optional<Annotations> Reader::read(const YamlTree &root) {
  if (root.kind == YamlTree::Null) {
    diags.failAt(1, 1, "empty annotations file");
    return std::nullopt;
  }
  if (!cost::checkFields(root, "the annotations file",
                         {"pins", "stages", "replicate", "split", "balance"},
                         diags))
    return std::nullopt;
  const YamlTree *pins = root.get("pins");
  const YamlTree *stages = root.get("stages");
  if (!pins && !stages && !root.get("replicate") && !root.get("split")) {
    diags.fail(root.loc, "the annotations file: missing 'pins', 'stages', "
                         "'replicate' or 'split'");
    return std::nullopt;
  }
  Annotations annotations;
  if (const YamlTree *balance = root.get("balance")) {
    if (balance->kind != YamlTree::Scalar ||
        (balance->value != "speed" && balance->value != "even")) {
      diags.fail(valueAt(root, "balance"),
                 "balance must be speed (each device's share by its speed) "
                 "or even");
      return std::nullopt;
    }
    annotations.evenShares = balance->value == "even";
  }
  if (!readScope(root, "replicate", ScopePin::Kind::Replicate, "", "replicate",
                 annotations.scopes) ||
      !readScope(root, "split", ScopePin::Kind::Split, "", "split",
                 annotations.scopes))
    return std::nullopt;
  for (auto [key, list] : {std::pair{"pins", pins}, {"stages", stages}}) {
    if (list && list->kind != YamlTree::Sequence) {
      diags.fail(valueAt(root, key),
                 std::string(key) + " must be a list, not " + list->kindName());
      return std::nullopt;
    }
  }
  if (pins) {
    annotations.pins.reserve(pins->children.size());
    for (size_t i = 0; i < pins->children.size(); ++i) {
      LayoutPin pin;
      if (!readPin(pins->children[i], i, pin))
        return std::nullopt;
      annotations.pins.push_back(std::move(pin));
    }
  }
  if (stages) {
    std::map<int64_t, std::string> deviceStage;
    for (size_t i = 0; i < stages->children.size(); ++i) {
      StagePin stage;
      if (!readStage(stages->children[i], i, stage) ||
          !readScope(stages->children[i], "split", ScopePin::Kind::Split,
                     stage.mesh, "stage " + quoted(stage.mesh) + ": split",
                     annotations.scopes))
        return std::nullopt;
      for (const StagePin &earlier : annotations.stages)
        if (earlier.mesh == stage.mesh) {
          diags.fail(valueAt(stages->children[i], "mesh"),
                     "stage '" + stage.mesh +
                         "': mesh has the name of an earlier stage's");
          return std::nullopt;
        }
      for (int64_t device : stage.devices) {
        auto [it, inserted] = deviceStage.emplace(device, stage.mesh);
        if (!inserted) {
          diags.fail(valueAt(stages->children[i], "devices"),
                     "stage '" + stage.mesh + "': device " +
                         std::to_string(device) +
                         (it->second == stage.mesh
                              ? " is listed twice"
                              : " is on stage '" + it->second + "' too"));
          return std::nullopt;
        }
      }
      annotations.stages.push_back(std::move(stage));
    }
  }
  return annotations;
}

/// A list of integers of at least `minimum` each, not empty.
bool Reader::readIntegers(const YamlTree *list, const char *listAt,
                          const std::string &what, int64_t minimum,
                          std::vector<int64_t> &out) {
  if (!list || list->kind != YamlTree::Sequence || list->children.empty())
    return diags.fail(listAt, what + " must be a non-empty list of integers");
  for (const YamlTree &item : list->children) {
    int64_t value = 0;
    if (item.kind != YamlTree::Scalar ||
        StringRef(item.value).getAsInteger(10, value) || value < minimum ||
        value > (int64_t{1} << 40))
      return diags.fail(item.loc, what + ": expected an integer of at least " +
                                      std::to_string(minimum) + ", not " +
                                      (item.kind == YamlTree::Scalar
                                           ? quoted(item.value)
                                           : std::string(item.kindName())));
    out.push_back(value);
  }
  return true;
}

bool Reader::readStage(const YamlTree &entry, size_t index, StagePin &stage) {
  std::string what = "stage " + std::to_string(index);
  if (entry.kind == YamlTree::Mapping)
    if (const YamlTree *mesh = entry.get("mesh"))
      if (mesh->kind == YamlTree::Scalar && !mesh->value.empty())
        what = "stage " + quoted(mesh->value);
  if (!cost::checkFields(entry, what,
                         {"mesh", "devices", "shape", "nodes", "split"}, diags))
    return false;
  stage.location = diags.location(entry.loc);
  const YamlTree *mesh = entry.get("mesh");
  if (!mesh || mesh->kind != YamlTree::Scalar || mesh->value.empty())
    return diags.fail(mesh ? valueAt(entry, "mesh") : entry.loc,
                      what + ": mesh must name the stage's mesh");
  stage.mesh = mesh->value;
  if (!readIntegers(entry.get("devices"), valueAt(entry, "devices"),
                    what + ": devices", 0, stage.devices))
    return false;
  if (const YamlTree *shape = entry.get("shape")) {
    if (!readIntegers(shape, valueAt(entry, "shape"), what + ": shape", 1,
                      stage.shape))
      return false;
    int64_t size = 1;
    for (int64_t extent : stage.shape)
      size = size > (int64_t{1} << 40) / extent ? -1 : size * extent;
    if (size != static_cast<int64_t>(stage.devices.size()))
      return diags.fail(valueAt(entry, "shape"),
                        what + ": shape " + cost::formatMeshShape(stage.shape) +
                            " does not hold its " +
                            std::to_string(stage.devices.size()) + " devices");
  } else {
    stage.shape = {static_cast<int64_t>(stage.devices.size())};
  }
  return readGlobs(entry, "nodes", what + ": nodes", /*required=*/true,
                   stage.nodes, stage.globs);
}

bool Reader::readGlobs(
    const YamlTree &entry, const char *key, const std::string &what,
    bool required, std::vector<std::string> &nodes,
    std::vector<std::shared_ptr<const LayoutPin::CompiledGlob>> &globs) {
  const YamlTree *list = entry.get(key);
  if (!list && !required)
    return true;
  if (!list || list->kind != YamlTree::Sequence || list->children.empty())
    return diags.fail(list ? valueAt(entry, key) : entry.loc,
                      what + " must be a non-empty list of globs");
  for (const YamlTree &item : list->children) {
    if (item.kind != YamlTree::Scalar || item.value.empty())
      return diags.fail(item.loc, what + ": expected a glob, not " +
                                      (item.kind == YamlTree::Scalar
                                           ? std::string("an empty string")
                                           : std::string(item.kindName())));
    std::string reason;
    std::shared_ptr<const LayoutPin::CompiledGlob> glob =
        compileGlob(item.value, &reason);
    if (!glob)
      return diags.fail(item.valueLoc, what + ": " + reason);
    nodes.push_back(item.value);
    globs.push_back(std::move(glob));
  }
  return true;
}

bool Reader::readScope(const YamlTree &entry, const char *key,
                       ScopePin::Kind kind, const std::string &stage,
                       const std::string &what, std::vector<ScopePin> &scopes) {
  if (!entry.get(key))
    return true;
  ScopePin scope;
  scope.kind = kind;
  scope.stage = stage;
  scope.location = diags.location(valueAt(entry, key));
  if (!readGlobs(entry, key, what, /*required=*/true, scope.nodes, scope.globs))
    return false;
  scopes.push_back(std::move(scope));
  return true;
}

bool Reader::readPin(const YamlTree &entry, size_t index, LayoutPin &pin) {
  // Named by its glob once that is known to be a string.
  std::string what = "pin " + std::to_string(index);
  if (entry.kind == YamlTree::Mapping)
    if (const YamlTree *node = entry.get("node"))
      if (node->kind == YamlTree::Scalar && !node->value.empty())
        what = "pin " + quoted(node->value);
  if (!cost::checkFields(entry, what, {"node", "operands", "results"}, diags))
    return false;
  pin.location = diags.location(entry.loc);

  const YamlTree *node = entry.get("node");
  if (!node)
    return diags.fail(entry.loc, what + ": missing required field 'node'");
  if (node->kind != YamlTree::Scalar)
    return diags.fail(valueAt(entry, "node"),
                      what + ": node must be a string, not " +
                          node->kindName());
  if (node->value.empty())
    return diags.fail(node->loc, what + ": node must not be empty");
  pin.node = node->value;
  std::string reason;
  pin.glob = compileGlob(pin.node, &reason);
  if (!pin.glob)
    return diags.fail(node->valueLoc, what + ": node: " + reason);

  const YamlTree *operands = entry.get("operands");
  const YamlTree *results = entry.get("results");
  if (!operands && !results)
    return diags.fail(entry.loc, what + ": missing 'operands' or 'results' "
                                        "(a pin needs at least one)");
  if (operands) {
    pin.operands.emplace();
    if (!readLayouts(*operands, valueAt(entry, "operands"), what + ": operands",
                     "operand", *pin.operands))
      return false;
  }
  if (results) {
    pin.results.emplace();
    if (!readLayouts(*results, valueAt(entry, "results"), what + ": results",
                     "result", *pin.results))
      return false;
  }
  return true;
}

bool Reader::readLayouts(const YamlTree &list, const char *listAt,
                         const std::string &what, const char *item,
                         LayoutPin::Layouts &out) {
  if (list.kind != YamlTree::Sequence)
    return diags.fail(listAt, what + " must be a list with one entry per " +
                                  item + ", not " + list.kindName());
  // "pin 'x': operands" -> "pin 'x': operand 3".
  std::string prefix = what.substr(0, what.rfind(": ")) + ": " + item + " ";
  out.reserve(list.children.size());
  for (size_t i = 0; i < list.children.size(); ++i) {
    std::optional<NdSbp> layout;
    if (!readLayout(list.children[i], prefix + std::to_string(i), layout))
      return false;
    out.push_back(std::move(layout));
  }
  return true;
}

bool Reader::readLayout(const YamlTree &item, const std::string &what,
                        std::optional<NdSbp> &out) {
  std::string error;
  switch (item.kind) {
  case YamlTree::Null:
    out.reset();
    return true;
  case YamlTree::Scalar: {
    if (isFree(item.value)) {
      out.reset();
      return true;
    }
    out = parseNdSbp(item.value, error);
    if (!out)
      return diags.fail(item.valueLoc, what + ": " + error);
    return true;
  }
  case YamlTree::Sequence: {
    // [[S(0), B]]: YAML reads an unquoted nd-SBP as a list of SBPs.
    NdSbp layout;
    for (size_t axis = 0; axis < item.children.size(); ++axis) {
      const YamlTree &entry = item.children[axis];
      std::string where = what + ": mesh axis " + std::to_string(axis);
      if (entry.kind != YamlTree::Scalar)
        return diags.fail(entry.loc, where +
                                         " must be an SBP such as S(0), B or "
                                         "P(sum), not " +
                                         entry.kindName());
      std::optional<Sbp> sbp = parseSbp(entry.value, error);
      if (!sbp)
        return diags.fail(entry.valueLoc, where + ": " + error);
      layout.push_back(*sbp);
    }
    out = std::move(layout);
    return true;
  }
  case YamlTree::Mapping:
    break;
  }
  return diags.fail(item.loc, what +
                                  " must be an nd-SBP such as \"[S(0), B]\", "
                                  "any or null, not " +
                                  item.kindName());
}

} // namespace

/// Whether `pattern` matches the whole of `name`, through `glob` when it
/// was compiled from `pattern`.
static bool
globMatches(const std::string &pattern,
            const std::shared_ptr<const LayoutPin::CompiledGlob> &glob,
            StringRef name) {
  if (glob && glob->pattern == pattern)
    return glob->glob.match(name);
  std::shared_ptr<const LayoutPin::CompiledGlob> compiled =
      compileGlob(pattern, nullptr);
  return compiled && compiled->glob.match(name);
}

bool LayoutPin::matches(StringRef name) const {
  return globMatches(node, glob, name);
}

/// Whether one of `nodes` (compiled as `globs`, where set) matches `name`.
static bool anyGlobMatches(
    const std::vector<std::string> &nodes,
    const std::vector<std::shared_ptr<const LayoutPin::CompiledGlob>> &globs,
    StringRef name) {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (globMatches(nodes[i], i < globs.size() ? globs[i] : nullptr, name))
      return true;
  return false;
}

bool StagePin::matches(StringRef name) const {
  return anyGlobMatches(nodes, globs, name);
}

bool ScopePin::matches(StringRef name) const {
  return anyGlobMatches(nodes, globs, name);
}

const char *ScopePin::kindName() const {
  return kind == Kind::Replicate ? "replicate" : "split";
}

std::vector<const LayoutPin *> Annotations::pinsFor(StringRef name) const {
  std::vector<const LayoutPin *> found;
  for (const LayoutPin &pin : pins)
    if (pin.matches(name))
      found.push_back(&pin);
  return found;
}

std::optional<std::string> parplan::checkNodeGlob(StringRef pattern) {
  std::string reason;
  if (compileGlob(pattern, &reason))
    return std::nullopt;
  return reason;
}

std::optional<Annotations>
parplan::parseAnnotations(StringRef text, StringRef path, std::string &error) {
  YamlDiagnostics diags(text, path);
  if (path.ends_with_insensitive(".json") &&
      !cost::checkStrictJson(text, diags, kMaxAnnotationsFileDepth)) {
    error = diags.message();
    return std::nullopt;
  }
  YamlTree root;
  if (!cost::parseYamlTree(text, root, diags, "annotations file",
                           kMaxAnnotationsFileDepth)) {
    error = diags.message();
    return std::nullopt;
  }
  std::optional<Annotations> annotations = Reader(diags).read(root);
  if (!annotations)
    error = diags.message();
  return annotations;
}

std::optional<Annotations> parplan::loadAnnotations(const std::string &path,
                                                    std::string &error) {
  std::optional<std::string> text = cost::readTextFile(path, error);
  if (!text)
    return std::nullopt;
  return parseAnnotations(*text, path, error);
}
