//===- RuntimeOutputFileTest.cpp - outputs gathered and written -----------===//
//
// parplan-run --outputs (OutputFile.h): blocks of several devices, sent as
// bytes, put back together into the whole tensor; every way the blocks can
// fail to make one (outside it, disagreeing, leaving elements out); and
// the .npy files, byte for byte as NumPy reads them.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/OutputFile.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

using namespace parplan::runtime;

namespace {

/// The block of a [4, 3] tensor whose element (i, j) is 10 * i + j, at
/// `offsets` with `shape`.
OutputBlock blockOf(const Shape &offsets, const Shape &shape,
                    const std::string &name = "logits") {
  OutputBlock block{name, {4, 3}, offsets, Tensor(DType::F32, shape)};
  int64_t k = 0;
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      block.value.set(k++, 10.0 * static_cast<double>(offsets[0] + i) +
                               static_cast<double>(offsets[1] + j));
  return block;
}

std::string fileBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

} // namespace

TEST_CASE("Blocks of a 2-D split and a replica make the whole output",
          "[runtime][outputs]") {
  // Rows split in two, the second half's columns split again, and a
  // replica of the first block (as on a mesh axis that broadcasts).
  std::vector<OutputBlock> sent = {blockOf({0, 0}, {2, 3}),
                                   blockOf({2, 0}, {2, 2}),
                                   blockOf({2, 2}, {2, 1})};
  std::vector<OutputBlock> replica = {blockOf({0, 0}, {2, 3})};
  std::vector<OutputBlock> received;
  REQUIRE(parseOutputBlocks(serializeOutputBlocks(sent), received).ok());
  REQUIRE(parseOutputBlocks(serializeOutputBlocks(replica), received).ok());
  REQUIRE(received.size() == 4);
  std::map<std::string, Tensor> outputs;
  Status status = assembleOutputs(received, outputs);
  INFO(status.error);
  REQUIRE(status.ok());
  REQUIRE(outputs.size() == 1);
  const Tensor &whole = outputs.at("logits");
  REQUIRE(whole.shape() == Shape{4, 3});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      CHECK(whole.get(i * 3 + j) ==
            10.0 * static_cast<double>(i) + static_cast<double>(j));
}

TEST_CASE("Blocks that do not make a whole output are refused by name",
          "[runtime][outputs]") {
  std::map<std::string, Tensor> outputs;
  SECTION("an element no block holds") {
    Status status = assembleOutputs({blockOf({0, 0}, {2, 3})}, outputs);
    CHECK(status.error ==
          "output 'logits': 6 of 12 elements are in no device's block");
  }
  SECTION("a block past the tensor's end") {
    Status status = assembleOutputs({blockOf({3, 0}, {2, 3})}, outputs);
    CHECK(status.error ==
          "output 'logits': block [2, 3] at [3, 0] lies outside [4, 3]");
  }
  SECTION("blocks of one name and two shapes") {
    OutputBlock other = blockOf({0, 0}, {2, 3});
    other.logicalShape = {2, 3};
    Status status = assembleOutputs({blockOf({0, 0}, {2, 3}), other}, outputs);
    CHECK(status.error ==
          "output 'logits': a block of [2, 3] f32 beside another of [4, 3] "
          "f32");
  }
  SECTION("bytes that are not a list of blocks") {
    std::string bytes = serializeOutputBlocks({blockOf({0, 0}, {2, 3})});
    std::vector<OutputBlock> received;
    CHECK(!parseOutputBlocks(bytes.substr(0, bytes.size() - 1), received).ok());
    CHECK(!parseOutputBlocks(bytes + "x", received).ok());
    CHECK(!parseOutputBlocks(std::string(3, '\xff'), received).ok());
  }
}

TEST_CASE("Outputs are written as .npy files NumPy reads",
          "[runtime][outputs]") {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("parplan-outputs-test-" +
                       std::to_string(std::random_device()()) + ".npy"))
                         .string();
  Tensor value(DType::F32, {2, 3});
  for (int64_t i = 0; i < 6; ++i)
    value.set(i, 0.5 * static_cast<double>(i));
  REQUIRE(writeNpy(value, path).ok());
  std::string bytes = fileBytes(path);
  // Magic, version 1.0, the header's length, then the data 64-aligned.
  REQUIRE(bytes.size() == 128 + 6 * 4);
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(bytes.substr(10).find(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") ==
        0);
  CHECK(bytes[127] == '\n');
  Tensor back;
  REQUIRE(readNpy(path, back).ok());
  CHECK(back.shape() == Shape{2, 3});
  CHECK(back.get(5) == 2.5);

  // One dimension and none: NumPy's tuples "(5,)" and "()".
  REQUIRE(writeNpy(Tensor(DType::I64, {5}), path).ok());
  CHECK(fileBytes(path).find("'descr': '<i8', 'fortran_order': False, "
                             "'shape': (5,), }") != std::string::npos);
  REQUIRE(writeNpy(Tensor(DType::F64, {}), path).ok());
  CHECK(fileBytes(path).find("'shape': (), }") != std::string::npos);
  REQUIRE(readNpy(path, back).ok());
  CHECK(back.shape().empty());

  // bf16, which NumPy lacks, as f32.
  Tensor half(DType::BF16, {2});
  half.set(1, 1.5);
  REQUIRE(writeNpy(half, path).ok());
  REQUIRE(readNpy(path, back).ok());
  CHECK(back.dtype() == DType::F32);
  CHECK(back.get(1) == 1.5);

  std::ofstream(path, std::ios::binary) << "not numpy";
  CHECK(!readNpy(path, back).ok());
  std::remove(path.c_str());
  CHECK(writeNpy(value, "/nonexistent-directory/x.npy").error ==
        "cannot write '/nonexistent-directory/x.npy'");
}

TEST_CASE("Output file names keep only safe characters", "[runtime][outputs]") {
  CHECK(outputFileName("logits") == "logits.npy");
  CHECK(outputFileName("output:0") == "output_0.npy");
  CHECK(outputFileName("../etc/passwd") == "_._etc_passwd.npy");
  CHECK(outputFileName("") == "output.npy");
}
