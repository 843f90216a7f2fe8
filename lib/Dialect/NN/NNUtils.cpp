//===- NNUtils.cpp - small helpers for nn ops and their producers ---------===//

#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Dialect/NN/NNOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

parplan::nn::ParamOp parplan::nn::paramBehindCasts(mlir::Value value) {
  while (auto cast = value.getDefiningOp<CastOp>())
    value = cast.getInput();
  return value.getDefiningOp<ParamOp>();
}

std::optional<int64_t> parplan::nn::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::string parplan::nn::shapeString(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(shape, os, "x");
  return text;
}

std::string parplan::nn::listString(llvm::ArrayRef<int64_t> values) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(values, os);
  return text + "]";
}

std::string parplan::nn::numberString(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

std::string parplan::nn::nodeName(mlir::Operation *op) {
  if (auto param = llvm::dyn_cast<ParamOp>(op))
    return param.getName().str();
  if (auto input = llvm::dyn_cast<InputOp>(op))
    return input.getName().str();
  return locationName(op);
}

std::string parplan::nn::describeNode(mlir::Operation *op) {
  std::string name = nodeName(op);
  std::string text = op->getName().getStringRef().str();
  if (!name.empty())
    text += " (node '" + name + "')";
  return text;
}

std::string parplan::nn::locationName(mlir::Operation *op) {
  mlir::Location loc = op->getLoc();
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc))
    for (mlir::Location inner : fused.getLocations())
      if (llvm::isa<mlir::NameLoc>(inner)) {
        loc = inner;
        break;
      }
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc))
    return name.getName().str();
  return "";
}

std::string parplan::nn::layerKey(llvm::StringRef parameterName) {
  llvm::SmallVector<llvm::StringRef> parts;
  parameterName.split(parts, '.');
  std::string key;
  for (llvm::StringRef part : parts) {
    if (!key.empty())
      key += '.';
    key += part.str();
    if (!part.empty() && llvm::all_of(part, llvm::isDigit))
      return key;
  }
  return "";
}

int64_t parplan::nn::tensorBytes(mlir::Type type) {
  auto shaped = mlir::cast<mlir::ShapedType>(type);
  return shaped.getNumElements() *
         std::max<int64_t>(1, shaped.getElementTypeBitWidth() / 8);
}

llvm::StringRef parplan::nn::layerClass(llvm::StringRef layer) {
  return layer.rsplit('.').first;
}
