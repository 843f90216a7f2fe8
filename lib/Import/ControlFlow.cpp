//===- ControlFlow.cpp - ONNX control flow to nn --------------------------===//
//
// If, taken at import when its condition is a constant.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

// The converters are Importer's members: their bodies see its namespace.
using namespace parplan::import;

void Importer::convertIf(const onnx::NodeProto &node) {
  Value condition = input(node, 0);
  auto constant = condition.getDefiningOp<nn::ConstantOp>();
  auto dense =
      constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || dense.getNumElements() != 1)
    failAt(node, "condition " + quote(node.input(0)) +
                     " is not a constant; parplan plans graphs without "
                     "data-dependent control flow (hold the graph input it "
                     "depends on with --input-value NAME=VALUE)");
  if (!isa<IntegerType>(dense.getElementType()))
    failAt(node, "condition " + quote(node.input(0)) + " must be a bool");
  bool taken = dense.getElementType().isInteger(1)
                   ? *dense.getValues<bool>().begin()
                   : !(*dense.getValues<APInt>().begin()).isZero();
  const onnx::AttributeProto *branch =
      attribute(node, taken ? "then_branch" : "else_branch");
  if (!branch || !branch->has_g())
    failAt(node,
           std::string("has no ") + (taken ? "then" : "else") + "_branch");
  const onnx::GraphProto &graph = branch->g();
  registerInitializers(graph);
  importGraphBody(graph, nodeLabel(node) + "/");
  if (graph.output_size() != node.output_size())
    failAt(node, std::string(taken ? "then" : "else") + "_branch has " +
                     std::to_string(graph.output_size()) +
                     (graph.output_size() == 1 ? " output" : " outputs") +
                     " but the node has " + std::to_string(node.output_size()));
  for (int i = 0; i < node.output_size(); ++i)
    define(node, i, lookup(graph.output(i).name(), node));
}
