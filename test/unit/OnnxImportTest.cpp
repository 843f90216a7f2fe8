//===- OnnxImportTest.cpp - importer cases only binary models can state ---===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/InitAllDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>

using namespace mlir;
using namespace parplan;

namespace {

void addValueInfo(onnx::ValueInfoProto *info, const std::string &name,
                  std::vector<int64_t> dims) {
  info->set_name(name);
  auto *tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dims)
    tensor->mutable_shape()->add_dim()->set_dim_value(dim);
}

/// y = Add(x, w) with w a [2] float initializer that `setUp` describes.
onnx::ModelProto
addModel(const std::function<void(onnx::TensorProto &)> &setUp) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto &graph = *model.mutable_graph();
  onnx::NodeProto *node = graph.add_node();
  node->set_op_type("Add");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  addValueInfo(graph.add_input(), "x", {2});
  addValueInfo(graph.add_output(), "y", {2});
  onnx::TensorProto *w = graph.add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  setUp(*w);
  return model;
}

void external(onnx::TensorProto &tensor, const std::string &location,
              const std::string &offset, const std::string &length) {
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] :
       {std::pair{"location", location}, std::pair{"offset", offset},
        std::pair{"length", length}}) {
    auto *entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
}

struct ImportFixture {
  ImportFixture() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
  }
  OwningOpRef<ModuleOp> import(const onnx::ModelProto &model) {
    error.clear();
    return importOnnx(model.SerializeAsString(), "m.onnx", context,
                      OnnxImportOptions{}, error);
  }
  std::string sourceOf(ModuleOp module, StringRef name) {
    std::string source;
    module.walk([&](nn::ParamOp param) {
      if (param.getName() == name)
        source = param.getSource().value_or("").str();
    });
    return source;
  }
  MLIRContext context;
  std::string error;
};

} // namespace

TEST_CASE_METHOD(ImportFixture, "external data is located exactly or refused") {
  auto module = import(addModel(
      [](onnx::TensorProto &w) { external(w, "weights.bin", "4096", "8"); }));
  REQUIRE(module);
  CHECK(sourceOf(*module, "w") == "external:weights.bin@4096+8");

  CHECK_FALSE(import(addModel(
      [](onnx::TensorProto &w) { external(w, "weights.bin", "-5xyz", "8"); })));
  CHECK(error == "m.onnx: initializer 'w' has external data offset '-5xyz', "
                 "not a non-negative integer");
  CHECK_FALSE(import(addModel([](onnx::TensorProto &w) {
    external(w, "../../etc/passwd", "0", "8");
  })));
  CHECK(error == "m.onnx: initializer 'w' has external data location "
                 "'../../etc/passwd', which leaves the model's folder");
  CHECK_FALSE(import(addModel(
      [](onnx::TensorProto &w) { external(w, "/etc/passwd", "0", "8"); })));
  CHECK_FALSE(import(addModel(
      [](onnx::TensorProto &w) { external(w, "weights.bin", "0", "3"); })));
  CHECK(error == "m.onnx: initializer 'w' has external data of 3 bytes for "
                 "shape 2, which needs 8");
}

TEST_CASE_METHOD(ImportFixture, "raw float data is located in the file") {
  onnx::ModelProto model = addModel(
      [](onnx::TensorProto &w) { w.set_raw_data(std::string(8, '\0')); });
  auto module = import(model);
  REQUIRE(module);
  std::string bytes = model.SerializeAsString();
  std::string source = sourceOf(*module, "w");
  REQUIRE(StringRef(source).starts_with("initializer@"));
  // The recorded offset points at the 8 raw bytes inside the file.
  size_t at = source.find('@'), plus = source.find('+');
  size_t offset = std::stoull(source.substr(at + 1, plus - at - 1));
  CHECK(source.substr(plus + 1) == "8");
  CHECK(bytes.substr(offset, 8) == std::string(8, '\0'));
}

TEST_CASE_METHOD(ImportFixture, "a Clip bound stored as raw bytes is read") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto &graph = *model.mutable_graph();
  addValueInfo(graph.add_input(), "x", {3});
  addValueInfo(graph.add_output(), "y", {3});
  addValueInfo(graph.add_output(), "z", {3});
  onnx::TensorProto *six = graph.add_initializer();
  six->set_name("six");
  six->set_data_type(onnx::TensorProto::FLOAT);
  float value = 6.0f;
  six->set_raw_data(std::string(reinterpret_cast<char *>(&value), 4));
  for (auto [op, out] : {std::pair{"Clip", "y"}, std::pair{"Add", "z"}}) {
    onnx::NodeProto *node = graph.add_node();
    node->set_op_type(op);
    node->add_input("x");
    if (std::string(op) == "Clip")
      node->add_input("");
    node->add_input("six");
    node->add_output(out);
  }
  auto module = import(model);
  INFO(error);
  REQUIRE(module);
  bool clipped = false;
  module->walk([&](nn::ClipOp clip) {
    clipped = clip.getMax() && clip.getMax()->convertToFloat() == 6.0f;
  });
  CHECK(clipped);
}

TEST_CASE_METHOD(ImportFixture, "a Constant without outputs is named") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::NodeProto *node = model.mutable_graph()->add_node();
  node->set_op_type("Constant");
  node->set_name("c");
  auto *attr = node->add_attribute();
  attr->set_name("value_float");
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->set_f(1.0f);
  CHECK_FALSE(import(model));
  CHECK(error == "m.onnx: node 'c' (Constant): has no output");
}
