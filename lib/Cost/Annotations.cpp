//===- Annotations.cpp - layouts pinned by the user on named nodes --------===//
//
// parseYamlTree turns the text into a tree with source positions, then the
// tree is read into pins, one entry at a time: the node glob is compiled and
// every layout is parsed with parseNdSbp.
//
//===----------------------------------------------------------------------===//

#include "parplan/Cost/Annotations.h"
#include "parplan/Cost/YamlTree.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"

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
  if (!cost::checkFields(root, "the annotations file", {"pins"}, diags))
    return std::nullopt;
  const YamlTree *pins = root.get("pins");
  if (!pins) {
    diags.fail(root.loc, "the annotations file: missing required field 'pins'");
    return std::nullopt;
  }
  if (pins->kind != YamlTree::Sequence) {
    diags.fail(valueAt(root, "pins"),
               std::string("pins must be a list, not ") + pins->kindName());
    return std::nullopt;
  }
  Annotations annotations;
  annotations.pins.reserve(pins->children.size());
  for (size_t i = 0; i < pins->children.size(); ++i) {
    LayoutPin pin;
    if (!readPin(pins->children[i], i, pin))
      return std::nullopt;
    annotations.pins.push_back(std::move(pin));
  }
  return annotations;
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

bool LayoutPin::matches(StringRef name) const {
  if (glob && glob->pattern == node)
    return glob->glob.match(name);
  std::shared_ptr<const CompiledGlob> compiled = compileGlob(node, nullptr);
  return compiled && compiled->glob.match(name);
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
