//===- AnnotationsTest.cpp - layouts pinned by the user on named nodes ----===//

#include "parplan/Cost/Annotations.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

using namespace parplan;

namespace {

Annotations mustParse(const std::string &text,
                      const std::string &path = "a.yaml") {
  std::string error;
  std::optional<Annotations> annotations = parseAnnotations(text, path, error);
  INFO(error);
  REQUIRE(annotations);
  CHECK(error.empty());
  return *annotations;
}

/// The error of parsing `text` as file `path`; it must be one line.
std::string parseError(const std::string &text,
                       const std::string &path = "a.yaml") {
  std::string error;
  std::optional<Annotations> annotations = parseAnnotations(text, path, error);
  CHECK_FALSE(annotations);
  CHECK(error.find('\n') == std::string::npos);
  return error;
}

NdSbp nd(const std::string &text) {
  std::string error;
  std::optional<NdSbp> sbp = parseNdSbp(text, error);
  INFO(error);
  REQUIRE(sbp);
  return *sbp;
}

using Layouts = LayoutPin::Layouts;

LayoutPin pinOf(const std::string &glob) {
  LayoutPin pin;
  pin.node = glob;
  return pin;
}

} // namespace

TEST_CASE("a YAML annotations file", "[annotations]") {
  const std::string text =
      "# Layouts pinned for sbp-assign\n"                          // 1
      "pins:\n"                                                    // 2
      "  - node: \"transformer.h.*.mlp.c_fc.weight\"   # a glob\n" // 3
      "    results: [\"[B, S(1)]\"]\n"                             // 4
      "  - node: \"/h.0/attn/MatMul\"\n"                           // 5
      "    operands: [\"[S(0), B]\", any]\n"                       // 6
      "    results: [\"[S(0), B]\"]\n"                             // 7
      "  - node: '/h.?/attn/Softmax'\n"                            // 8
      "    operands: [null, ~, \"any\", 'P', [S(0), P(max)]]\n"    // 9
      "  - {node: input_ids, results: [S(0)]}\n"                   // 10
      "  - node: x\n"                                              // 11
      "    operands:\n"                                            // 12
      "      - \"[ P(prod) , B ]\"\n"                              // 13
      "      -\n"                                                  // 14
      "    results: [B]\n";                                        // 15
  Annotations annotations = mustParse(text);
  REQUIRE(annotations.pins.size() == 5);

  const LayoutPin &weight = annotations.pins[0];
  CHECK(weight.node == "transformer.h.*.mlp.c_fc.weight");
  CHECK_FALSE(weight.operands);
  REQUIRE(weight.results);
  CHECK(*weight.results == Layouts{nd("[B, S(1)]")});
  CHECK(weight.location == "a.yaml:3:5");

  const LayoutPin &matmul = annotations.pins[1];
  CHECK(matmul.node == "/h.0/attn/MatMul");
  REQUIRE(matmul.operands);
  CHECK(*matmul.operands == Layouts{nd("[S(0), B]"), std::nullopt});
  CHECK(*matmul.results == Layouts{nd("[S(0), B]")});
  CHECK(matmul.location == "a.yaml:5:5");

  const LayoutPin &softmax = annotations.pins[2];
  CHECK(*softmax.operands ==
        Layouts{std::nullopt, std::nullopt, std::nullopt, NdSbp{Sbp::partial()},
                NdSbp{Sbp::split(0), Sbp::partial(ReduceKind::Max)}});
  CHECK_FALSE(softmax.results);

  const LayoutPin &input = annotations.pins[3];
  CHECK(input.node == "input_ids");
  CHECK(*input.results == Layouts{NdSbp{Sbp::split(0)}});
  CHECK(input.location == "a.yaml:10:5");

  const LayoutPin &x = annotations.pins[4];
  CHECK(*x.operands ==
        Layouts{NdSbp{Sbp::partial(ReduceKind::Prod), Sbp::broadcast()},
                std::nullopt});

  // No pins at all is fine.
  CHECK(mustParse("pins: []\n").pins.empty());
  CHECK(mustParse("# nothing pinned yet\npins: []\n").pins.empty());
  // An empty list of operands pins a node without operands.
  Annotations none = mustParse("pins: [{node: c, operands: []}]\n");
  CHECK(none.pins[0].operands->empty());
}

TEST_CASE("a JSON annotations file", "[annotations]") {
  const std::string text =
      "{\n"
      "  \"pins\": [\n"
      "    {\"node\": \"transformer.h.*.mlp.c_fc.weight\",\n"
      "     \"results\": [\"[B, S(1)]\"]},\n"
      "    {\"node\": \"/h.0/attn/MatMul\",\n"
      "     \"operands\": [\"[S(0), B]\", null],\n"
      "     \"results\": [[\"S(0)\", \"B\"]]}\n"
      "  ]\n"
      "}\n";
  Annotations annotations = mustParse(text, "a.json");
  REQUIRE(annotations.pins.size() == 2);
  CHECK(annotations.pins[0].node == "transformer.h.*.mlp.c_fc.weight");
  CHECK(*annotations.pins[0].results == Layouts{nd("[B, S(1)]")});
  CHECK(annotations.pins[0].location == "a.json:3:5");
  CHECK(*annotations.pins[1].operands ==
        Layouts{nd("[S(0), B]"), std::nullopt});
  CHECK(*annotations.pins[1].results == Layouts{nd("[S(0), B]")});

  // The same file, read as YAML, gives the same pins.
  Annotations yaml = mustParse(text, "a.yaml");
  REQUIRE(yaml.pins.size() == 2);
  CHECK(*yaml.pins[1].results == *annotations.pins[1].results);

  // A .json file must be strict JSON.
  CHECK(parseError("{\"pins\": [],}", "a.json") ==
        "a.json:1:13: invalid JSON: expected object key");
  CHECK(parseError("pins: []\n", "a.json") ==
        "a.json:1:1: invalid JSON: invalid JSON value");
}

TEST_CASE("node globs", "[annotations]") {
  // Exact names.
  CHECK(pinOf("/h.0/attn/MatMul").matches("/h.0/attn/MatMul"));
  CHECK_FALSE(pinOf("/h.0/attn/MatMul").matches("/h.0/attn/MatMul_1"));
  CHECK_FALSE(pinOf("/h.0/attn/MatMul").matches("x/h.0/attn/MatMul"));
  CHECK_FALSE(pinOf("/h.0/attn/MatMul").matches("/h.0/attn/matmul"));
  // '*': any run, across '.' and '/'; the whole name must match.
  LayoutPin weight = pinOf("transformer.h.*.mlp.c_fc.weight");
  CHECK(weight.matches("transformer.h.0.mlp.c_fc.weight"));
  CHECK(weight.matches("transformer.h.11.mlp.c_fc.weight"));
  CHECK(weight.matches("transformer.h.a.b.mlp.c_fc.weight"));
  CHECK_FALSE(weight.matches("transformer.h.0.mlp.c_fc.bias"));
  CHECK_FALSE(weight.matches("transformer.h.0.mlp.c_fc.weight_1"));
  CHECK(pinOf("*").matches(""));
  CHECK(pinOf("*").matches("anything/at.all"));
  CHECK(pinOf("/h.*/MatMul").matches("/h.3/attn/MatMul"));
  // '?': one character.
  CHECK(pinOf("/h.?/attn").matches("/h.7/attn"));
  CHECK_FALSE(pinOf("/h.?/attn").matches("/h.10/attn"));
  CHECK_FALSE(pinOf("/h.?/attn").matches("/h./attn"));
  // Sets and ranges, negated sets.
  CHECK(pinOf("h.[02].w").matches("h.2.w"));
  CHECK_FALSE(pinOf("h.[02].w").matches("h.1.w"));
  CHECK(pinOf("h.[0-3].w").matches("h.3.w"));
  CHECK_FALSE(pinOf("h.[0-3].w").matches("h.4.w"));
  CHECK(pinOf("h.[!0].w").matches("h.1.w"));
  CHECK_FALSE(pinOf("h.[!0].w").matches("h.0.w"));
  CHECK(pinOf("h.[^0].w").matches("h.1.w"));
  CHECK_FALSE(pinOf("h.[^0].w").matches("h.0.w"));
  // '\' escapes; braces are literal.
  CHECK(pinOf("a\\*b").matches("a*b"));
  CHECK_FALSE(pinOf("a\\*b").matches("axb"));
  CHECK(pinOf("w{1,2}").matches("w{1,2}"));
  CHECK_FALSE(pinOf("w{1,2}").matches("w1"));

  // Pins from the reader carry a compiled glob; copies and edits still match
  // by their own node.
  Annotations annotations =
      mustParse("pins:\n  - {node: 'h.*.w', results: [B]}\n"
                "  - {node: 'h.1.w', results: [any]}\n"
                "  - {node: 'g', results: [B]}\n");
  REQUIRE(annotations.pins[0].glob);
  LayoutPin copy = annotations.pins[0];
  CHECK(copy.matches("h.5.w"));
  copy.node = "g.*";
  CHECK(copy.matches("g.1"));
  CHECK_FALSE(copy.matches("h.5.w"));
  CHECK(annotations.pins[0].matches("h.5.w"));
  std::vector<const LayoutPin *> found = annotations.pinsFor("h.1.w");
  REQUIRE(found.size() == 2);
  CHECK(found[0] == &annotations.pins[0]);
  CHECK(found[1] == &annotations.pins[1]);
  CHECK(annotations.pinsFor("nothing").empty());

  // An invalid glob built by hand matches nothing.
  CHECK_FALSE(pinOf("h.[0").matches("h.[0"));
  CHECK(checkNodeGlob("h.[0") == "invalid glob pattern, unmatched '['");
  CHECK_FALSE(checkNodeGlob("h.[0-9]*"));
}

TEST_CASE("annotations errors name the file, line and column",
          "[annotations]") {
  const std::string good = "pins:\n"                        // 1
                           "  - node: a.*.w\n"              // 2
                           "    results: [\"[S(0), B]\"]\n" // 3
                           "  - node: b\n"                  // 4
                           "    operands: [B, any]\n";      // 5
  mustParse(good);
  auto edit = [&](const std::string &from, const std::string &to) {
    std::string text = good;
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };

  // The file and its pins.
  CHECK(parseError("") == "a.yaml:1:1: empty annotations file");
  CHECK(parseError("# nothing\n") == "a.yaml:1:1: empty annotations file");
  CHECK(parseError("- a\n") ==
        "a.yaml:1:1: the annotations file must be a mapping, not a list");
  CHECK(parseError("pin: []\n") ==
        "a.yaml:1:1: unknown field 'pin' (did you mean 'pins'?)");
  CHECK(parseError("pins: []\nlayouts: []\n") ==
        "a.yaml:2:1: unknown field 'layouts' in the annotations file; "
        "expected pins, stages, replicate, split, balance");
  CHECK(parseError("{}\n") ==
        "a.yaml:1:1: the annotations file: missing 'pins', 'stages', "
        "'replicate' or 'split'");
  CHECK(parseError("pins: 3\n") ==
        "a.yaml:1:7: pins must be a list, not a scalar");
  CHECK(parseError("pins:\n") == "a.yaml:1:1: pins must be a list, not "
                                 "nothing");
  CHECK(parseError("pins: []\n---\npins: []\n") ==
        "a.yaml:3:1: an annotations file holds one YAML document");
  CHECK(parseError("pins: []\npins: []\n") ==
        "a.yaml:2:1: duplicate key 'pins' (first at 1:1)");
  CHECK(parseError("pins: [a\n") ==
        "a.yaml:1:9: invalid YAML: could not find closing ]");
  CHECK(parseError("pins:\n  - &p {node: a, results: [B]}\n  - *p\n") ==
        "a.yaml:3:5: YAML aliases are not supported");

  // Entries.
  CHECK(parseError("pins:\n  - a.*.w\n") ==
        "a.yaml:2:5: pin 0 must be a mapping, not a scalar");
  CHECK(parseError(edit("  - node: b\n", "  - nodes: b\n")) ==
        "a.yaml:4:5: unknown field 'nodes' (did you mean 'node'?)");
  CHECK(parseError(edit("    operands:", "    colour: red\n    operands:")) ==
        "a.yaml:5:5: unknown field 'colour' in pin 'b'; expected node, "
        "operands, results");
  CHECK(parseError(edit("    results:", "    result:")) ==
        "a.yaml:3:5: unknown field 'result' (did you mean 'results'?)");
  CHECK(parseError(edit("  - node: b\n    operands", "  - operands")) ==
        "a.yaml:4:5: pin 1: missing required field 'node'");
  CHECK(parseError(edit("node: b", "node: [b]")) ==
        "a.yaml:4:11: pin 1: node must be a string, not a list");
  CHECK(parseError(edit("node: b", "node: ''")) ==
        "a.yaml:4:11: pin 1: node must not be empty");
  CHECK(parseError(edit("node: b", "node: 'h.[0'")) ==
        "a.yaml:4:12: pin 'h.[0': node: invalid glob pattern, unmatched '['");
  CHECK(parseError(edit("    operands: [B, any]\n", "")) ==
        "a.yaml:4:5: pin 'b': missing 'operands' or 'results' (a pin needs "
        "at least one)");
  CHECK(parseError(edit("operands: [B, any]", "operands: B")) ==
        "a.yaml:5:15: pin 'b': operands must be a list with one entry per "
        "operand, not a scalar");
  CHECK(parseError(edit("results: [\"[S(0), B]\"]", "results:")) ==
        "a.yaml:3:5: pin 'a.*.w': results must be a list with one entry per "
        "result, not nothing");

  // Layouts: the nd-SBP parser's message, at the value.
  CHECK(parseError(edit("[\"[S(0), B]\"]", "[\"[Q(1), B]\"]")) ==
        "a.yaml:3:16: pin 'a.*.w': result 0: expected S(<axis>), B or "
        "P(<reduce>) at 'Q(1), B]'");
  CHECK(parseError(edit("[B, any]", "[B, 'S(-1)']")) ==
        "a.yaml:5:20: pin 'b': operand 1: negative split axis -1");
  CHECK(parseError(edit("[B, any]", "[B, P(avg)]")) ==
        "a.yaml:5:19: pin 'b': operand 1: unknown reduction 'avg'; expected "
        "sum, max, min or prod");
  CHECK(parseError(edit("[B, any]", "[B, '[B,,B]']")) ==
        "a.yaml:5:20: pin 'b': operand 1: expected S(<axis>), B or "
        "P(<reduce>) at ',B]'");
  CHECK(parseError(edit("[B, any]", "[B, {a: 1}]")) ==
        "a.yaml:5:19: pin 'b': operand 1 must be an nd-SBP such as \"[S(0), "
        "B]\", any or null, not a mapping");
  CHECK(parseError(edit("[B, any]", "[B, [S(0), Q]]")) ==
        "a.yaml:5:26: pin 'b': operand 1: mesh axis 1: expected S(<axis>), B "
        "or P(<reduce>) at 'Q'");
  CHECK(parseError(edit("[B, any]", "[B, [S(0), [B]]]")) ==
        "a.yaml:5:26: pin 'b': operand 1: mesh axis 1 must be an SBP such as "
        "S(0), B or P(sum), not a list");
  CHECK(parseError(edit("[B, any]", "[B, \"S(0)\\nB\"]")) ==
        "a.yaml:5:20: pin 'b': operand 1: unexpected '\\x0aB' after S(0)");
  // Names in messages stay one short line.
  CHECK(parseError("pins: [{node: \"a\\nb\"}]\n") ==
        "a.yaml:1:8: pin 'a\\x0ab': missing 'operands' or 'results' (a pin "
        "needs at least one)");
  CHECK(parseError("pins: [{node: " + std::string(1000, 'n') + "}]\n") ==
        "a.yaml:1:8: pin '" + std::string(64, 'n') +
            "...': missing 'operands' or 'results' (a pin needs at least "
            "one)");
}

TEST_CASE("stages pin nodes to meshes", "[annotations]") {
  Annotations annotations = mustParse("stages:\n"
                                      "  - mesh: first\n"
                                      "    devices: [0, 1, 2, 3]\n"
                                      "    shape: [2, 2]\n"
                                      "    nodes: [\"/fc1/*\", \"fc1.*\"]\n"
                                      "  - mesh: second\n"
                                      "    devices: [5, 4]\n"
                                      "    nodes: [\"*\"]\n");
  CHECK(annotations.pins.empty());
  REQUIRE(annotations.stages.size() == 2);
  const StagePin &first = annotations.stages[0];
  CHECK(first.mesh == "first");
  CHECK(first.shape == std::vector<int64_t>{2, 2});
  CHECK(first.devices == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(first.location == "a.yaml:2:5");
  CHECK(first.matches("/fc1/MatMul"));
  CHECK(first.matches("fc1.weight"));
  CHECK_FALSE(first.matches("/fc2/MatMul"));
  CHECK_FALSE(first.matches("fc1"));
  // Without a shape, the devices in a row; their order is kept.
  CHECK(annotations.stages[1].shape == std::vector<int64_t>{2});
  CHECK(annotations.stages[1].devices == std::vector<int64_t>{5, 4});
  // A stage built by hand matches too.
  StagePin byHand;
  byHand.nodes = {"a?"};
  CHECK(byHand.matches("ab"));
  CHECK_FALSE(byHand.matches("abc"));
}

TEST_CASE("Whale's replicate and split scopes, nested in stages",
          "[annotations]") {
  // Whale's pipeline of stages, a split inside the second stage, a
  // replicated scope around them, and its switch to even shares.
  Annotations annotations = mustParse("replicate: [\"transformer.*\"]\n"
                                      "split: [\"classifier.*\"]\n"
                                      "balance: even\n"
                                      "stages:\n"
                                      "  - mesh: first\n"
                                      "    devices: [0, 1]\n"
                                      "    nodes: [\"/h.0/*\"]\n"
                                      "  - mesh: second\n"
                                      "    devices: [2, 3]\n"
                                      "    nodes: [\"/h.1/*\"]\n"
                                      "    split: [\"/h.1/mlp/*\"]\n");
  CHECK(annotations.evenShares);
  REQUIRE(annotations.scopes.size() == 3);
  const ScopePin &replicate = annotations.scopes[0];
  CHECK(replicate.kind == ScopePin::Kind::Replicate);
  CHECK(std::string(replicate.kindName()) == "replicate");
  CHECK(replicate.stage.empty());
  CHECK(replicate.location == "a.yaml:1:12");
  CHECK(replicate.matches("transformer.h.0.mlp.c_fc.weight"));
  CHECK_FALSE(replicate.matches("classifier.weight"));
  CHECK(annotations.scopes[1].kind == ScopePin::Kind::Split);
  CHECK(annotations.scopes[1].matches("classifier.bias"));
  const ScopePin &nested = annotations.scopes[2];
  CHECK(nested.kind == ScopePin::Kind::Split);
  CHECK(nested.stage == "second");
  CHECK(nested.matches("/h.1/mlp/MatMul"));
  CHECK(nested.location == "a.yaml:11:12");
  // Scopes alone make a file; balance is speed by default.
  Annotations alone = mustParse("split: [\"fc*\"]\n");
  CHECK_FALSE(alone.evenShares);
  CHECK(alone.scopes.size() == 1);

  CHECK(parseError("split: fc\n") ==
        "a.yaml:1:8: split must be a non-empty list of globs");
  CHECK(parseError("replicate: []\n") ==
        "a.yaml:1:12: replicate must be a non-empty list of globs");
  CHECK(parseError("split: [\"h.[0\"]\n") ==
        "a.yaml:1:10: split: invalid glob pattern, unmatched '['");
  CHECK(parseError("split: [a]\nbalance: fast\n") ==
        "a.yaml:2:10: balance must be speed (each device's share by its "
        "speed) or even");
  CHECK(parseError("stages:\n  - mesh: a\n    devices: [0]\n"
                   "    nodes: [x]\n    split: [[x]]\n") ==
        "a.yaml:5:13: stage 'a': split: expected a glob, not a list");
}

TEST_CASE("stage errors name the file, line and column", "[annotations]") {
  const std::string good = "stages:\n"
                           "  - mesh: a\n"
                           "    devices: [0, 1]\n"
                           "    nodes: [x]\n"
                           "  - mesh: b\n"
                           "    devices: [2, 3]\n"
                           "    nodes: [y]\n";
  mustParse(good);
  auto edit = [&](const std::string &from, const std::string &to) {
    std::string text = good;
    size_t at = text.rfind(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  CHECK(parseError("stages: 3\n") ==
        "a.yaml:1:9: stages must be a list, not a scalar");
  CHECK(parseError(edit("nodes: [y]", "node: [y]")) ==
        "a.yaml:7:5: unknown field 'node' (did you mean 'nodes'?)");
  CHECK(parseError(edit("    nodes: [y]\n", "")) ==
        "a.yaml:5:5: stage 'b': nodes must be a non-empty list of globs");
  CHECK(parseError(edit("nodes: [y]", "nodes: ['h.[0']")) ==
        "a.yaml:7:14: stage 'b': nodes: invalid glob pattern, unmatched '['");
  CHECK(parseError(edit("nodes: [y]", "nodes: [[y]]")) ==
        "a.yaml:7:13: stage 'b': nodes: expected a glob, not a list");
  CHECK(parseError(edit("mesh: b", "mesh: ''")) ==
        "a.yaml:5:11: stage 1: mesh must name the stage's mesh");
  CHECK(parseError(edit("mesh: b", "mesh: a")) ==
        "a.yaml:5:11: stage 'a': mesh has the name of an earlier stage's");
  CHECK(parseError(edit("devices: [2, 3]", "devices: []")) ==
        "a.yaml:6:14: stage 'b': devices must be a non-empty list of "
        "integers");
  CHECK(parseError(edit("devices: [2, 3]", "devices: [2, -3]")) ==
        "a.yaml:6:18: stage 'b': devices: expected an integer of at least 0, "
        "not '-3'");
  CHECK(parseError(edit("devices: [2, 3]", "devices: [2, 1]")) ==
        "a.yaml:6:14: stage 'b': device 1 is on stage 'a' too");
  CHECK(parseError(edit("devices: [2, 3]", "devices: [2, 2]")) ==
        "a.yaml:6:14: stage 'b': device 2 is listed twice");
  CHECK(
      parseError(edit("devices: [2, 3]", "devices: [2, 3]\n    shape: [3]")) ==
      "a.yaml:7:12: stage 'b': shape 3 does not hold its 2 devices");
  CHECK(parseError(
            edit("devices: [2, 3]", "devices: [2, 3]\n    shape: [0, 2]")) ==
        "a.yaml:7:13: stage 'b': shape: expected an integer of at least 1, "
        "not '0'");
}

TEST_CASE("deep nesting and huge annotations files do not crash",
          "[annotations]") {
  CHECK(parseError("pins: " + std::string(50000, '[')) ==
        "a.yaml:1:72: nesting too deep");
  CHECK(parseError(std::string(50000, '['), "a.json") ==
        "a.json:1:65: nesting too deep");
  CHECK(parseError("{\"pins\": " + std::string(100000, '{'), "a.json") ==
        "a.json:1:73: nesting too deep");
  CHECK(parseError("pins: [{node: a, results: [" + std::string(70, '[') +
                   std::string(70, ']') + "]}]\n") ==
        "a.yaml:1:" + std::to_string(28 + 62) + ": nesting too deep");

  // 20,000 pins, YAML and JSON.
  const int count = 20000;
  std::string yaml = "pins:\n", json = "{\"pins\": [\n";
  for (int i = 0; i < count; ++i) {
    std::string name = "layer." + std::to_string(i) + ".*";
    yaml += "  - node: " + name + "\n    results: ['[S(0), B]', any]\n";
    json += std::string(i ? "," : "") + "{\"node\": \"" + name +
            "\", \"operands\": [\"[P, S(1)]\"]}\n";
  }
  json += "]}\n";
  Annotations fromYaml = mustParse(yaml);
  REQUIRE(fromYaml.pins.size() == count);
  CHECK(fromYaml.pins.back().location ==
        "a.yaml:" + std::to_string(2 * count) + ":5");
  CHECK(fromYaml.pinsFor("layer.19999.x").size() == 1);
  Annotations fromJson = mustParse(json, "a.json");
  REQUIRE(fromJson.pins.size() == count);
  CHECK(*fromJson.pins.back().operands == Layouts{nd("[P(sum), S(1)]")});

  // A huge value and a huge error.
  std::string wide = "[" + std::string(1000000, 'B') + "]";
  CHECK(parseError("pins: [{node: a, results: ['" + wide + "']}]\n") ==
        "a.yaml:1:29: pin 'a': result 0: expected ',' or ']' at "
        "'BBBBBBBBBBBBBBBBBBBBBBBB...'");
  std::string many = "[B";
  for (int i = 0; i < 100000; ++i)
    many += ", S(1)";
  many += "]";
  Annotations wideLayout =
      mustParse("pins: [{node: a, results: ['" + many + "']}]\n");
  CHECK((*wideLayout.pins[0].results)[0]->size() == 100001);
}

TEST_CASE("loading annotations files", "[annotations]") {
  std::string error;
  CHECK_FALSE(loadAnnotations("/nonexistent/pins.yaml", error));
  CHECK(error ==
        "cannot read '/nonexistent/pins.yaml': No such file or directory");

  std::string path = (std::filesystem::temp_directory_path() /
                      ("parplan-annotations-" +
                       std::to_string(std::random_device()()) + ".json"))
                         .string();
  {
    std::ofstream out(path);
    out << "{\"pins\": [{\"node\": \"w*\", \"results\": [\"B\"]}]}\n";
  }
  std::optional<Annotations> annotations = loadAnnotations(path, error);
  std::remove(path.c_str());
  REQUIRE(annotations);
  REQUIRE(annotations->pins.size() == 1);
  CHECK(annotations->pins[0].location == path + ":1:11");
  CHECK(annotations->pins[0].matches("w1"));
}
