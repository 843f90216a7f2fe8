//===- WeightFile.cpp - a parameter block from the model's bytes ----------===//
//
// The block is read one innermost run at a time: every run of the block's
// last dimension is contiguous in the stored row-major tensor.
//
//===----------------------------------------------------------------------===//

#include "parplan/Runtime/WeightFile.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace parplan::runtime {

namespace {

/// Reads `block`, which starts at `origin` in a row-major tensor of
/// `stored` shape stored at byte `offset` of `path`.
Status readBlock(const std::string &name, const std::string &path,
                 int64_t offset, const std::vector<int64_t> &stored,
                 const std::vector<int64_t> &origin, Tensor &block) {
  int64_t width = static_cast<int64_t>(byteWidth(block.dtype()));
  std::unique_ptr<FILE, int (*)(FILE *)> file(std::fopen(path.c_str(), "rb"),
                                              &std::fclose);
  if (!file)
    return Status::failure(name + ": cannot open '" + path + "'");
  int64_t rank = block.rank();
  if (rank == 0) {
    if (std::fseek(file.get(), offset, SEEK_SET) != 0 ||
        std::fread(block.bytes(), 1, width, file.get()) !=
            static_cast<size_t>(width))
      return Status::failure(name + ": short read from '" + path + "'");
    return Status::success();
  }
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * stored[d + 1];
  const Shape &shape = block.shape();
  int64_t run = shape.back();
  int64_t runs = run == 0 ? 0 : block.numElements() / run;
  std::vector<int64_t> index(rank, 0);
  for (int64_t r = 0; r < runs; ++r) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat += (origin[d] + index[d]) * strides[d];
    if (std::fseek(file.get(), offset + flat * width, SEEK_SET) != 0 ||
        std::fread(block.bytes() + r * run * width, 1, run * width,
                   file.get()) != static_cast<size_t>(run * width))
      return Status::failure(name + ": short read from '" + path + "'");
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return Status::success();
}

} // namespace

Status parseWeightSource(const std::string &source,
                         std::optional<WeightRange> &range) {
  range.reset();
  std::string rest;
  WeightRange found;
  if (source.rfind("initializer@", 0) == 0 ||
      source.rfind("constant@", 0) == 0) {
    rest = source.substr(source.find('@') + 1);
  } else if (source.rfind("external:", 0) == 0) {
    std::string tail = source.substr(std::string("external:").size());
    size_t at = tail.rfind('@');
    if (at == std::string::npos)
      return Status::failure("source '" + source +
                             "' gives no byte offset (external:FILE@OFFSET)");
    found.location = tail.substr(0, at);
    rest = tail.substr(at + 1);
    // The executor opens the file beside the model: no way out of its
    // folder, as the importer allows none.
    bool climbs = found.location.empty() || found.location.front() == '/';
    for (size_t begin = 0; !climbs && begin <= found.location.size();) {
      size_t slash = found.location.find('/', begin);
      if (slash == std::string::npos)
        slash = found.location.size();
      climbs = found.location.compare(begin, slash - begin, "..") == 0 &&
               slash - begin == 2;
      begin = slash + 1;
    }
    if (climbs)
      return Status::failure("source '" + source +
                             "' names a file outside the model's folder");
  } else {
    return Status::success();
  }
  // OFFSET or OFFSET+LENGTH, decimal digits only, each below 2^62 so that
  // their sum and the reads past them stay in range.
  auto number = [](const std::string &digits, int64_t &value) {
    if (digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    value = std::stoll(digits);
    return value < (int64_t{1} << 62);
  };
  size_t plus = rest.find('+');
  bool ok = number(rest.substr(0, plus), found.offset) &&
            (plus == std::string::npos ||
             number(rest.substr(plus + 1), found.length));
  if (!ok)
    return Status::failure("source '" + source +
                           "' has no valid byte range (OFFSET or "
                           "OFFSET+LENGTH, non-negative integers)");
  range = std::move(found);
  return Status::success();
}

Status loadWeightBlock(const plan::Buffer &buffer, const std::string &modelPath,
                       Tensor &block) {
  std::string name = "parameter '" + buffer.name() + "'";
  std::optional<WeightRange> range;
  if (Status status = parseWeightSource(buffer.source(), range); !status.ok())
    return Status::failure(name + ": " + status.error);
  if (!range)
    return Status::failure(name + ": its weights ('" + buffer.source() +
                           "') cannot be read from a file");
  std::string path = modelPath;
  if (!range->location.empty()) {
    size_t slash = modelPath.rfind('/');
    path = (slash == std::string::npos ? std::string()
                                       : modelPath.substr(0, slash + 1)) +
           range->location;
  }
  // The stored tensor: the logical one, or the tensor a part is cut from.
  std::vector<int64_t> stored(buffer.logical_shape().begin(),
                              buffer.logical_shape().end());
  std::vector<int64_t> origin(buffer.offsets().begin(), buffer.offsets().end());
  if (buffer.part_size() == 3) {
    int64_t axis = buffer.part(0);
    if (axis < 0 || axis >= static_cast<int64_t>(stored.size()))
      return Status::failure(name + ": part axis out of range");
    origin[axis] += buffer.part(1);
    stored[axis] = buffer.part(2);
  }
  int64_t width = static_cast<int64_t>(byteWidth(block.dtype()));
  int64_t storedBytes = numElements(stored) * width;
  if (range->length >= 0 && range->length != storedBytes)
    return Status::failure(name + ": " + std::to_string(range->length) +
                           " bytes in the file, but its stored shape " +
                           toString(stored) + " needs " +
                           std::to_string(storedBytes));
  return readBlock(name, path, range->offset, stored, origin, block);
}

Status loadBatchBlock(const plan::Buffer &buffer, const std::string &directory,
                      int64_t step, Tensor &block) {
  std::string name = "input '" + buffer.name() + "'";
  std::string path = directory + "/" + buffer.name() + ".bin";
  std::vector<int64_t> stored(buffer.logical_shape().begin(),
                              buffer.logical_shape().end());
  std::vector<int64_t> origin(buffer.offsets().begin(), buffer.offsets().end());
  int64_t batchBytes =
      numElements(stored) * static_cast<int64_t>(byteWidth(block.dtype()));
  uint64_t size = 0;
  {
    std::unique_ptr<FILE, int (*)(FILE *)> file(std::fopen(path.c_str(), "rb"),
                                                &std::fclose);
    if (!file)
      return Status::failure(name + ": cannot open its batch file '" + path +
                             "'");
    if (std::fseek(file.get(), 0, SEEK_END) != 0)
      return Status::failure(name + ": cannot read '" + path + "'");
    size = static_cast<uint64_t>(std::ftell(file.get()));
  }
  if (batchBytes <= 0 || size == 0 ||
      size % static_cast<uint64_t>(batchBytes) != 0)
    return Status::failure(name + ": '" + path + "' has " +
                           std::to_string(size) +
                           " bytes, not a whole number of batches of " +
                           std::to_string(batchBytes));
  int64_t batches = static_cast<int64_t>(size / batchBytes);
  return readBlock(name, path, (step % batches) * batchBytes, stored, origin,
                   block);
}

} // namespace parplan::runtime
