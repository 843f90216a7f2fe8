//===- OnnxWireFormatTest.cpp - ONNX models without their weights ---------===//

#include "parplan/Import/OnnxWireFormat.h"

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>

#include <cstring>

using namespace parplan;

namespace {

onnx::TensorProto *addInitializer(onnx::GraphProto &graph,
                                  const std::string &name, int32_t type,
                                  int64_t count, char fill) {
  onnx::TensorProto *tensor = graph.add_initializer();
  tensor->add_dims(count);
  tensor->set_data_type(type);
  tensor->set_name(name);
  int64_t width = type == onnx::TensorProto::INT64 ? 8 : 4;
  tensor->set_raw_data(std::string(count * width, fill));
  return tensor;
}

onnx::ModelProto sampleModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("test");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto &graph = *model.mutable_graph();
  graph.set_name("g");
  onnx::NodeProto *node = graph.add_node();
  node->set_op_type("MatMul");
  node->add_input("x");
  node->add_input("big");
  node->add_output("y");
  addInitializer(graph, "big", onnx::TensorProto::FLOAT, 100000, 'a');
  addInitializer(graph, "small", onnx::TensorProto::FLOAT, 4, 'b');
  addInitializer(graph, "ids", onnx::TensorProto::INT64, 100000, 'c');
  // Fields out of the usual order: raw_data before data_type and name.
  onnx::TensorProto reordered;
  reordered.set_raw_data(std::string(8000, 'd'));
  std::string reorderedBytes = reordered.SerializeAsString();
  onnx::TensorProto header;
  header.add_dims(2000);
  header.set_data_type(onnx::TensorProto::FLOAT);
  header.set_name("late_name");
  reorderedBytes += header.SerializeAsString();
  graph.add_initializer()->ParseFromString(reorderedBytes);
  return model;
}

} // namespace

TEST_CASE("stripping leaves out large float payloads and nothing else") {
  onnx::ModelProto model = sampleModel();
  std::string bytes = model.SerializeAsString();
  std::optional<StrippedModel> stripped = stripWeightData(bytes, 1024);
  REQUIRE(stripped);
  // Exactly the two float payloads (400000 and 8000 bytes) are gone, with
  // their tags and length prefixes (a few bytes each).
  uint64_t saved = bytes.size() - stripped->bytes.size();
  CHECK(saved >= 408000);
  CHECK(saved < 408000 + 16);

  onnx::ModelProto parsed;
  REQUIRE(parsed.ParseFromString(stripped->bytes));
  const auto &initializers = parsed.graph().initializer();
  REQUIRE(initializers.size() == 4);
  CHECK_FALSE(initializers[0].has_raw_data());               // big float
  CHECK(initializers[1].raw_data() == std::string(16, 'b')); // small float
  CHECK(initializers[2].raw_data().size() == 800000);        // integer data
  CHECK_FALSE(initializers[3].has_raw_data());               // reordered
  CHECK(initializers[3].name() == "late_name");

  // Apart from the left-out payloads, the model is unchanged.
  onnx::ModelProto expected = model;
  expected.mutable_graph()->mutable_initializer(0)->clear_raw_data();
  expected.mutable_graph()->mutable_initializer(3)->clear_raw_data();
  parsed.mutable_graph()->mutable_initializer(3)->clear_raw_data();
  CHECK(parsed.SerializeAsString().size() ==
        expected.SerializeAsString().size());
  CHECK(parsed.graph().node(0).DebugString() ==
        model.graph().node(0).DebugString());
  CHECK(parsed.opset_import(0).version() == 17);
}

TEST_CASE("recorded ranges point at each initializer's bytes in the file") {
  onnx::ModelProto model = sampleModel();
  std::string bytes = model.SerializeAsString();
  std::optional<StrippedModel> stripped = stripWeightData(bytes, 1024);
  REQUIRE(stripped);
  REQUIRE(stripped->rawData.size() == 4);
  for (const onnx::TensorProto &tensor : model.graph().initializer()) {
    INFO(tensor.name());
    REQUIRE(stripped->rawData.count(tensor.name()));
    ByteRange range = stripped->rawData.at(tensor.name());
    REQUIRE(range.length == tensor.raw_data().size());
    REQUIRE(range.offset + range.length <= bytes.size());
    CHECK(std::memcmp(bytes.data() + range.offset, tensor.raw_data().data(),
                      range.length) == 0);
  }
}

TEST_CASE("malformed bytes are reported, not guessed at") {
  std::string bytes = sampleModel().SerializeAsString();
  CHECK_FALSE(stripWeightData(bytes.substr(0, bytes.size() / 2), 1024));
  CHECK_FALSE(stripWeightData(
      std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), 1024));
  // A group wire type (3) is not ONNX.
  CHECK_FALSE(stripWeightData(std::string("\x0b", 1), 1024));
  std::optional<StrippedModel> empty = stripWeightData("", 1024);
  REQUIRE(empty);
  CHECK(empty->bytes.empty());
}

TEST_CASE("a Constant node's raw value is located by the node's output") {
  // paddle2onnx stores every weight as a Constant node.
  onnx::ModelProto model = sampleModel();
  onnx::GraphProto &graph = *model.mutable_graph();
  auto addConstant = [&](const std::string &opType, const std::string &output,
                         const std::string &attributeName, char fill) {
    onnx::NodeProto *node = graph.add_node();
    node->set_op_type(opType);
    node->add_output(output);
    onnx::AttributeProto *attribute = node->add_attribute();
    attribute->set_name(attributeName);
    attribute->set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto *tensor = attribute->mutable_t();
    tensor->add_dims(6);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->set_raw_data(std::string(24, fill));
  };
  addConstant("Constant", "conv.weight", "value", 'w');
  // Not Constant nodes' values: another op's tensor attribute, and a
  // Constant's attribute of another name.
  addConstant("ConstantOfShape", "zeros", "value", 'z');
  addConstant("Constant", "other", "sparse_value", 's');
  std::string bytes = model.SerializeAsString();
  std::optional<StrippedModel> stripped = stripWeightData(bytes, 1024);
  REQUIRE(stripped);
  REQUIRE(stripped->constantData.size() == 1);
  ByteRange range = stripped->constantData.at("conv.weight");
  REQUIRE(range.length == 24);
  REQUIRE(range.offset + range.length <= bytes.size());
  CHECK(std::string(bytes.data() + range.offset, range.length) ==
        std::string(24, 'w'));
  // The nodes are kept as they are.
  onnx::ModelProto back;
  REQUIRE(back.ParseFromString(stripped->bytes));
  CHECK(back.graph().node_size() == 4);
}

TEST_CASE("the initializers and Constant nodes of If branches are located") {
  // Exporters put a branch's weights in the branch: Silero's voice-activity
  // detector keeps its LSTM weights in the If that its sample rate selects.
  onnx::ModelProto model = sampleModel();
  onnx::NodeProto *branching = model.mutable_graph()->add_node();
  branching->set_op_type("If");
  branching->add_input("condition");
  branching->add_output("y2");
  onnx::AttributeProto *thenBranch = branching->add_attribute();
  thenBranch->set_name("then_branch");
  thenBranch->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto &branch = *thenBranch->mutable_g();
  addInitializer(branch, "branch.weight", onnx::TensorProto::FLOAT, 2000, 'e');
  // A nested If inside the branch, holding a Constant node.
  onnx::NodeProto *nested = branch.add_node();
  nested->set_op_type("If");
  onnx::AttributeProto *elseBranch = nested->add_attribute();
  elseBranch->set_name("else_branch");
  elseBranch->set_type(onnx::AttributeProto::GRAPH);
  onnx::NodeProto *constant = elseBranch->mutable_g()->add_node();
  constant->set_op_type("Constant");
  constant->add_output("nested.value");
  onnx::AttributeProto *value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(3);
  value->mutable_t()->set_raw_data(std::string(12, 'n'));

  std::string bytes = model.SerializeAsString();
  std::optional<StrippedModel> stripped = stripWeightData(bytes, 1024);
  REQUIRE(stripped);
  REQUIRE(stripped->rawData.count("branch.weight"));
  ByteRange range = stripped->rawData.at("branch.weight");
  REQUIRE(range.length == 8000);
  CHECK(std::string(bytes.data() + range.offset, range.length) ==
        std::string(8000, 'e'));
  REQUIRE(stripped->constantData.count("nested.value"));
  range = stripped->constantData.at("nested.value");
  CHECK(std::string(bytes.data() + range.offset, range.length) ==
        std::string(12, 'n'));
  // The branch's large payload is left out too; the rest of it is kept.
  CHECK(bytes.size() - stripped->bytes.size() >= 408000 + 8000);
  onnx::ModelProto back;
  REQUIRE(back.ParseFromString(stripped->bytes));
  const onnx::GraphProto &parsedBranch = back.graph().node(1).attribute(0).g();
  CHECK_FALSE(parsedBranch.initializer(0).has_raw_data());
  CHECK(parsedBranch.initializer(0).name() == "branch.weight");
  CHECK(parsedBranch.node(0)
            .attribute(0)
            .g()
            .node(0)
            .attribute(0)
            .t()
            .raw_data() == std::string(12, 'n'));
}

TEST_CASE("a name two branches give different tensors is not located",
          "[import]") {
  // A then and an else branch may both call their weight `w`: a lookup by
  // name cannot tell them apart, so neither is recorded nor stripped (the
  // importer then reads it from the model, and --weights says it cannot).
  onnx::ModelProto model = sampleModel();
  onnx::NodeProto *branching = model.mutable_graph()->add_node();
  branching->set_op_type("If");
  for (const char *name : {"then_branch", "else_branch"}) {
    onnx::AttributeProto *branch = branching->add_attribute();
    branch->set_name(name);
    branch->set_type(onnx::AttributeProto::GRAPH);
    addInitializer(*branch->mutable_g(), "w", onnx::TensorProto::FLOAT, 2000,
                   name[0]);
  }
  std::string bytes = model.SerializeAsString();
  std::optional<StrippedModel> stripped = stripWeightData(bytes, 1024);
  REQUIRE(stripped);
  CHECK_FALSE(stripped->rawData.count("w"));
  CHECK(stripped->rawData.count("big"));
  onnx::ModelProto back;
  REQUIRE(back.ParseFromString(stripped->bytes));
  const onnx::NodeProto &parsed = back.graph().node(1);
  CHECK(parsed.attribute(0).g().initializer(0).raw_data() ==
        std::string(8000, 't'));
  CHECK(parsed.attribute(1).g().initializer(0).raw_data() ==
        std::string(8000, 'e'));
  CHECK_FALSE(back.graph().initializer(0).has_raw_data());
}
