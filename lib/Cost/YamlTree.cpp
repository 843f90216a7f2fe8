//===- YamlTree.cpp - YAML and JSON files as trees with positions ---------===//

#include "parplan/Cost/YamlTree.h"
#include "parplan/Support/Text.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace parplan::cost;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// YamlTree and YamlDiagnostics
//===----------------------------------------------------------------------===//

const char *YamlTree::kindName() const {
  switch (kind) {
  case Null:
    return "nothing";
  case Scalar:
    return "a scalar";
  case Mapping:
    return "a mapping";
  case Sequence:
    return "a list";
  }
  return "nothing";
}

const YamlTree *YamlTree::get(StringRef key) const {
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i].first == key)
      return &children[i];
  return nullptr;
}

bool YamlDiagnostics::fail(const char *loc, const llvm::Twine &message) {
  if (error.empty())
    error = oneLine(location(loc) + ": " + message.str());
  return false;
}

bool YamlDiagnostics::failAt(unsigned line, unsigned column,
                             const llvm::Twine &message) {
  if (error.empty())
    error = oneLine(path.str() + ":" + std::to_string(line) + ":" +
                    std::to_string(column) + ": " + message.str());
  return false;
}

std::string YamlDiagnostics::location(const char *loc) const {
  return path.str() + ":" + lineColumn(loc);
}

std::string YamlDiagnostics::lineColumn(const char *loc) const {
  size_t line = 1, column = 1;
  if (loc && loc >= text.begin() && loc <= text.end()) {
    if (lineStarts.empty()) {
      lineStarts.push_back(0);
      for (size_t i = 0; i < text.size(); ++i)
        if (text[i] == '\n')
          lineStarts.push_back(i + 1);
    }
    size_t offset = static_cast<size_t>(loc - text.begin());
    // The last line that starts at or before `offset`.
    auto next = std::upper_bound(lineStarts.begin(), lineStarts.end(), offset);
    size_t index = static_cast<size_t>(next - lineStarts.begin()) - 1;
    line += index;
    column += offset - lineStarts[index];
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

std::string parplan::cost::messageClause(StringRef message) {
  std::string text = message.rtrim(" .!").str();
  for (size_t at = text.find(". "); at != std::string::npos;
       at = text.find(". ", at)) {
    text.replace(at, 2, "; ");
    if (at + 2 < text.size() && text[at + 2] >= 'A' && text[at + 2] <= 'Z')
      text[at + 2] = static_cast<char>(text[at + 2] - 'A' + 'a');
  }
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z' &&
      !(text.size() > 1 && text[1] >= 'A' && text[1] <= 'Z'))
    text[0] = static_cast<char>(text[0] - 'A' + 'a');
  return text;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

bool buildTree(llvm::yaml::Node *node, YamlTree &tree, YamlDiagnostics &diags,
               int depth, int maxDepth) {
  if (!node)
    return false; // a syntax error, reported by the stream
  tree.loc = node->getSourceRange().Start.getPointer();
  if (depth > maxDepth)
    return diags.fail(tree.loc, "nesting too deep");
  if (llvm::isa<llvm::yaml::NullNode>(node)) {
    tree.kind = YamlTree::Null;
    return true;
  }
  if (auto *alias = llvm::dyn_cast<llvm::yaml::AliasNode>(node)) {
    // The alias' range is not set; its name points into the text.
    const char *name = alias->getName().data();
    return diags.fail(name && name > diags.text.begin() ? name - 1 : tree.loc,
                      "YAML aliases are not supported");
  }
  if (auto *scalar = llvm::dyn_cast<llvm::yaml::ScalarNode>(node)) {
    tree.kind = YamlTree::Scalar;
    llvm::SmallString<64> storage;
    tree.value = scalar->getValue(storage).str();
    StringRef raw = scalar->getRawValue();
    tree.valueLoc = raw.data();
    if (raw.starts_with("\"") || raw.starts_with("'"))
      ++tree.valueLoc;
    return true;
  }
  if (auto *block = llvm::dyn_cast<llvm::yaml::BlockScalarNode>(node)) {
    tree.kind = YamlTree::Scalar;
    tree.value = block->getValue().str();
    tree.valueLoc = tree.loc;
    return true;
  }
  if (llvm::isa<llvm::yaml::MappingNode, llvm::yaml::SequenceNode>(node)) {
    // A flow collection's range starts after its bracket: point at the
    // bracket.
    const char *p = tree.loc;
    while (p > diags.text.begin() && llvm::isSpace(p[-1]))
      --p;
    if (p > diags.text.begin() && (p[-1] == '{' || p[-1] == '['))
      tree.loc = p - 1;
  }
  if (auto *mapping = llvm::dyn_cast<llvm::yaml::MappingNode>(node)) {
    tree.kind = YamlTree::Mapping;
    std::map<std::string, const char *> seen;
    for (llvm::yaml::KeyValueNode &entry : *mapping) {
      llvm::yaml::Node *keyNode = entry.getKey();
      if (!keyNode)
        return false;
      auto *key = llvm::dyn_cast<llvm::yaml::ScalarNode>(keyNode);
      const char *keyLoc = keyNode->getSourceRange().Start.getPointer();
      if (!key)
        return diags.fail(keyLoc, "a key must be a plain name");
      llvm::SmallString<32> storage;
      std::string name = key->getValue(storage).str();
      auto [it, inserted] = seen.emplace(name, keyLoc);
      if (!inserted)
        return diags.fail(keyLoc, "duplicate key '" + name + "' (first at " +
                                      diags.lineColumn(it->second) + ")");
      YamlTree child;
      if (!buildTree(entry.getValue(), child, diags, depth + 1, maxDepth))
        return false;
      tree.keys.emplace_back(name, keyLoc);
      tree.children.push_back(std::move(child));
    }
    return true;
  }
  if (auto *sequence = llvm::dyn_cast<llvm::yaml::SequenceNode>(node)) {
    tree.kind = YamlTree::Sequence;
    for (llvm::yaml::Node &item : *sequence) {
      YamlTree child;
      if (!buildTree(&item, child, diags, depth + 1, maxDepth))
        return false;
      tree.children.push_back(std::move(child));
    }
    return true;
  }
  return diags.fail(tree.loc, "unsupported YAML node");
}

/// "a cluster file", "an annotations file".
std::string withArticle(StringRef noun) {
  bool vowel = !noun.empty() && StringRef("aeiouAEIOU").contains(noun[0]);
  return (vowel ? "an " : "a ") + noun.str();
}

} // namespace

bool parplan::cost::parseYamlTree(StringRef text, YamlTree &tree,
                                  YamlDiagnostics &diags, StringRef fileNoun,
                                  int maxDepth) {
  // YAML is Unicode: a byte that is not UTF-8 would pass into names and
  // messages, and out into the JSON parplan writes.
  const auto *first = reinterpret_cast<const llvm::UTF8 *>(text.begin());
  if (!llvm::isLegalUTF8String(
          &first, reinterpret_cast<const llvm::UTF8 *>(text.end())))
    return diags.fail(reinterpret_cast<const char *>(first),
                      "invalid UTF-8 sequence");
  llvm::SourceMgr sourceMgr;
  struct Context {
    YamlDiagnostics *diags;
    bool reported = false;
  } context{&diags};
  sourceMgr.setDiagHandler(
      [](const llvm::SMDiagnostic &diagnostic, void *opaque) {
        auto *context = static_cast<Context *>(opaque);
        if (context->reported)
          return;
        context->reported = true;
        const char *loc = diagnostic.getLoc().getPointer();
        if (loc && loc >= context->diags->text.begin() &&
            loc <= context->diags->text.end())
          context->diags->fail(loc, "invalid YAML: " +
                                        messageClause(diagnostic.getMessage()));
        else
          context->diags->failAt(
              static_cast<unsigned>(diagnostic.getLineNo()),
              static_cast<unsigned>(diagnostic.getColumnNo()) + 1,
              "invalid YAML: " + messageClause(diagnostic.getMessage()));
      },
      &context);
  llvm::yaml::Stream stream(text, sourceMgr, /*ShowColors=*/false);
  auto document = stream.begin();
  if (document == stream.end())
    return diags.failAt(1, 1, "empty " + fileNoun);
  bool built = buildTree(document->getRoot(), tree, diags, 0, maxDepth);
  if (diags.failed())
    return false;
  if (!built || stream.failed())
    return diags.failAt(1, 1, "invalid YAML");
  if (++document != stream.end()) {
    llvm::yaml::Node *second = document->getRoot();
    if (diags.failed())
      return false;
    return diags.fail(second ? second->getSourceRange().Start.getPointer()
                             : nullptr,
                      withArticle(fileNoun) + " holds one YAML document");
  }
  if (stream.failed())
    return diags.failAt(1, 1, "invalid YAML");
  return !diags.failed();
}

bool parplan::cost::checkStrictJson(StringRef text, YamlDiagnostics &diags,
                                    int maxDepth) {
  // llvm::json::parse recurses once per level, without a limit: reject deep
  // nesting first, as the YAML reader does.
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return diags.fail(text.data() + i, "nesting too deep");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  // llvm::json reports "[LINE:COL, byte=N]: message".
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (value)
    return true;
  std::string message = llvm::toString(value.takeError());
  unsigned line = 1, column = 1;
  StringRef rest(message);
  if (rest.consume_front("[")) {
    auto [position, tail] = rest.split("]: ");
    auto [lineText, columnText] = position.split(',').first.split(':');
    lineText.getAsInteger(10, line);
    columnText.getAsInteger(10, column);
    rest = tail;
  }
  return diags.failAt(std::max(line, 1u), std::max(column, 1u),
                      "invalid JSON: " + messageClause(rest));
}

//===----------------------------------------------------------------------===//
// Field checks
//===----------------------------------------------------------------------===//

std::string parplan::cost::closestName(StringRef word,
                                       const std::vector<std::string> &known) {
  std::string best;
  unsigned bestDistance = std::numeric_limits<unsigned>::max();
  for (const std::string &candidate : known) {
    unsigned distance = word.edit_distance(candidate, /*AllowReplacements=*/
                                           true, /*MaxEditDistance=*/3);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  if (bestDistance <=
          std::max<size_t>(1, std::min(word.size(), best.size()) / 3) &&
      bestDistance <= 3)
    return best;
  return "";
}

std::string parplan::cost::joinNames(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

bool parplan::cost::checkFields(const YamlTree &tree, const std::string &what,
                                const std::vector<std::string> &known,
                                YamlDiagnostics &diags) {
  if (tree.kind != YamlTree::Mapping)
    return diags.fail(tree.loc,
                      what + " must be a mapping, not " + tree.kindName());
  for (const auto &[key, loc] : tree.keys) {
    if (std::find(known.begin(), known.end(), key) != known.end())
      continue;
    std::string close = closestName(key, known);
    if (!close.empty())
      return diags.fail(loc, "unknown field '" + key + "' (did you mean '" +
                                 close + "'?)");
    return diags.fail(loc, "unknown field '" + key + "' in " + what +
                               "; expected " + joinNames(known));
  }
  return true;
}

std::optional<std::string> parplan::cost::readTextFile(const std::string &path,
                                                       std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (std::error_code code = buffer.getError()) {
    error = "cannot read '" + path + "': " + code.message();
    return std::nullopt;
  }
  return (*buffer)->getBuffer().str();
}
