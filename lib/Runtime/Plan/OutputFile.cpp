//===- OutputFile.cpp - a plan's outputs, gathered and written ------------===//

#include "parplan/Runtime/OutputFile.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

namespace parplan::runtime {

namespace {

void putInteger(std::string &bytes, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

/// Reads what putInteger wrote, advancing `at`; false past the end.
bool takeInteger(const std::string &bytes, size_t &at, uint64_t &value) {
  if (at > bytes.size() || bytes.size() - at < 8)
    return false;
  value = 0;
  for (int i = 0; i < 8; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i]))
             << (8 * i);
  at += 8;
  return true;
}

void putShape(std::string &bytes, const Shape &shape) {
  for (int64_t extent : shape)
    putInteger(bytes, static_cast<uint64_t>(extent));
}

bool takeShape(const std::string &bytes, size_t &at, size_t rank,
               Shape &shape) {
  shape.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    uint64_t value = 0;
    if (!takeInteger(bytes, at, value) || value > (uint64_t{1} << 48))
      return false;
    shape[d] = static_cast<int64_t>(value);
  }
  return true;
}

/// NumPy's name of an element type, and the type a file holds it in.
const char *npyDescr(DType type) {
  switch (type) {
  case DType::F16:
    return "<f2";
  case DType::BF16:
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::I1:
    return "|b1";
  case DType::I8:
    return "|i1";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  }
  return "<f4";
}

} // namespace

std::string serializeOutputBlocks(const std::vector<OutputBlock> &blocks) {
  std::string bytes;
  putInteger(bytes, blocks.size());
  for (const OutputBlock &block : blocks) {
    putInteger(bytes, block.name.size());
    bytes += block.name;
    putInteger(bytes, static_cast<uint64_t>(block.value.dtype()));
    putInteger(bytes, block.logicalShape.size());
    putShape(bytes, block.logicalShape);
    putShape(bytes, block.offsets);
    putShape(bytes, block.value.shape());
    bytes.append(reinterpret_cast<const char *>(block.value.bytes()),
                 block.value.byteSize());
  }
  return bytes;
}

Status parseOutputBlocks(const std::string &bytes,
                         std::vector<OutputBlock> &blocks) {
  auto broken = [] {
    return Status::failure("the outputs a rank sent are not a list of blocks");
  };
  size_t at = 0;
  uint64_t count = 0;
  if (!takeInteger(bytes, at, count))
    return broken();
  for (uint64_t i = 0; i < count; ++i) {
    OutputBlock block;
    uint64_t nameLength = 0, type = 0, rank = 0;
    if (!takeInteger(bytes, at, nameLength) || bytes.size() - at < nameLength)
      return broken();
    block.name = bytes.substr(at, nameLength);
    at += nameLength;
    Shape shape;
    if (!takeInteger(bytes, at, type) ||
        type > static_cast<uint64_t>(DType::I64) ||
        !takeInteger(bytes, at, rank) || rank > 64 ||
        !takeShape(bytes, at, rank, block.logicalShape) ||
        !takeShape(bytes, at, rank, block.offsets) ||
        !takeShape(bytes, at, rank, shape))
      return broken();
    block.value = Tensor(static_cast<DType>(type), shape);
    if (bytes.size() - at < block.value.byteSize())
      return broken();
    std::memcpy(block.value.bytes(), bytes.data() + at, block.value.byteSize());
    at += block.value.byteSize();
    blocks.push_back(std::move(block));
  }
  return at == bytes.size() ? Status::success() : broken();
}

Status assembleOutputs(const std::vector<OutputBlock> &blocks,
                       std::map<std::string, Tensor> &outputs) {
  std::map<std::string, std::vector<bool>> covered;
  for (const OutputBlock &block : blocks) {
    const Shape &logical = block.logicalShape;
    const Shape &shape = block.value.shape();
    auto [found, first] = outputs.try_emplace(block.name);
    if (first)
      found->second = Tensor(block.value.dtype(), logical);
    Tensor &whole = found->second;
    std::vector<bool> &holds = covered[block.name];
    holds.resize(static_cast<size_t>(whole.numElements()), false);
    if (whole.shape() != logical || whole.dtype() != block.value.dtype())
      return Status::failure(
          "output '" + block.name + "': a block of " + toString(logical) + " " +
          toString(block.value.dtype()) + " beside another of " +
          toString(whole.shape()) + " " + toString(whole.dtype()));
    bool inside = block.offsets.size() == logical.size() &&
                  shape.size() == logical.size();
    for (size_t d = 0; inside && d < logical.size(); ++d)
      inside = block.offsets[d] >= 0 && shape[d] >= 0 &&
               block.offsets[d] + shape[d] <= logical[d];
    if (!inside)
      return Status::failure(
          "output '" + block.name + "': block " + toString(shape) + " at " +
          toString(block.offsets) + " lies outside " + toString(logical));
    int64_t elements = block.value.numElements();
    if (elements == 0)
      continue;
    // Row by row: the block's innermost run is contiguous in both.
    size_t rank = logical.size();
    int64_t run = rank ? shape.back() : 1;
    size_t width = byteWidth(whole.dtype());
    Shape index(rank, 0);
    for (int64_t start = 0; start < elements; start += run) {
      int64_t target = 0;
      for (size_t d = 0; d < rank; ++d)
        target = target * logical[d] + block.offsets[d] + index[d];
      std::memcpy(whole.bytes() + static_cast<size_t>(target) * width,
                  block.value.bytes() + static_cast<size_t>(start) * width,
                  static_cast<size_t>(run) * width);
      std::fill_n(holds.begin() + target, run, true);
      // The next row: the index over every dimension but the last.
      for (size_t d = rank > 0 ? rank - 1 : 0; d-- > 0;) {
        if (++index[d] < shape[d])
          break;
        index[d] = 0;
      }
    }
  }
  for (const auto &[name, holds] : covered) {
    size_t missing =
        static_cast<size_t>(std::count(holds.begin(), holds.end(), false));
    if (missing > 0)
      return Status::failure(
          "output '" + name + "': " + std::to_string(missing) + " of " +
          std::to_string(holds.size()) + " elements are in no device's block");
  }
  return Status::success();
}

std::string outputFileName(const std::string &name) {
  std::string file = name.empty() ? std::string("output") : name;
  for (char &c : file)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' &&
        c != '_')
      c = '_';
  // Not a hidden file, nor "." or "..".
  if (file.front() == '.')
    file.front() = '_';
  return file + ".npy";
}

Status writeNpy(const Tensor &value, const std::string &path) {
  Tensor stored = value;
  if (value.dtype() == DType::BF16) {
    stored = Tensor(DType::F32, value.shape());
    for (int64_t i = 0; i < value.numElements(); ++i)
      stored.set(i, value.get(i));
  }
  std::string shape = "(";
  for (int64_t extent : stored.shape())
    shape += std::to_string(extent) + ", ";
  if (stored.rank() > 1)
    shape.resize(shape.size() - 2);
  else if (stored.rank() == 1)
    shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + npyDescr(value.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // The magic, the version and the length take 10 bytes; the data starts
  // 64-byte aligned, after spaces and a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Status::failure("cannot write '" + path + "'");
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, sizeof(magic));
  auto length = static_cast<uint16_t>(header.size());
  const char lengthBytes[] = {static_cast<char>(length & 0xff),
                              static_cast<char>(length >> 8)};
  out.write(lengthBytes, 2);
  out << header;
  out.write(reinterpret_cast<const char *>(stored.bytes()),
            static_cast<std::streamsize>(stored.byteSize()));
  out.close();
  if (!out)
    return Status::failure("cannot write '" + path + "' (the disk is full?)");
  return Status::success();
}

Status readNpy(const std::string &path, Tensor &value) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::failure("cannot read '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  auto broken = [&](const std::string &why) {
    return Status::failure("'" + path +
                           "' is not a .npy file parplan-run "
                           "writes: " +
                           why);
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return broken("no .npy magic");
  size_t length =
      static_cast<unsigned char>(bytes[8]) |
      (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
  if (bytes[6] != 1 || bytes.size() < 10 + length)
    return broken("not format 1.0");
  std::string header = bytes.substr(10, length);
  size_t descrAt = header.find("'descr': '");
  size_t shapeAt = header.find("'shape': (");
  if (descrAt == std::string::npos || shapeAt == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos)
    return broken("no C-order descr and shape");
  std::string descr = header.substr(descrAt + 10, 3);
  std::optional<DType> type;
  for (DType candidate : {DType::F16, DType::F32, DType::F64, DType::I1,
                          DType::I8, DType::I32, DType::I64})
    if (descr == npyDescr(candidate))
      type = candidate;
  if (!type)
    return broken("element type '" + descr + "'");
  Shape shape;
  std::istringstream extents(
      header.substr(shapeAt + 10, header.find(')', shapeAt) - shapeAt - 10));
  std::string extent;
  while (std::getline(extents, extent, ',')) {
    extent.erase(std::remove(extent.begin(), extent.end(), ' '), extent.end());
    if (extent.empty())
      continue;
    if (extent.size() > 15 ||
        !std::all_of(extent.begin(), extent.end(),
                     [](char c) { return std::isdigit(c) != 0; }))
      return broken("shape extent '" + extent + "'");
    shape.push_back(std::stoll(extent));
  }
  value = Tensor(*type, shape);
  if (bytes.size() - 10 - length != value.byteSize())
    return broken("its data is not " + toString(shape) + " " + toString(*type));
  std::memcpy(value.bytes(), bytes.data() + 10 + length, value.byteSize());
  return Status::success();
}

} // namespace parplan::runtime
