//===- OnnxConformance.cpp - the importer over ONNX's backend tests -------===//
//
// Walks directory trees for `model.onnx` files (ONNX's backend test data, as
// Debian's libonnx-testdata ships it), imports each one and sorts the results
// into categories:
//
//   imported          the model became a verified nn module, and each result
//                     type agrees with test_data_set_0/output_N.pb
//   unsupported op    the model uses an op the importer has no converter for
//                     (expected; ranked by how many models each op blocks)
//   symbolic dims     a graph input has a symbolic or unknown dimension; no
//                     binding is given, so the model counts as not imported
//   frozen inputs     the import failed as the model is (typically: a shape,
//                     axes or bound arrives as a graph input, and parplan
//                     plans static programs), but succeeded, with the right
//                     result types, once those inputs became Constant nodes
//                     holding their values from test_data_set_0; not counted
//                     as imported, but checks the converter behind them
//   FAILED            every op is supported, yet the import failed or its
//                     result types contradict the test data: an importer bug
//                     or a limitation to look at
//   CRASHED           the importer threw, died on a signal or hung
//
// Every model is imported in a child process with its own MLIRContext, so a
// crash names its model and the run goes on. The last line is exactly
// `imported X of Y`; the exit code is non-zero when X is below --floor or
// anything crashed.
//
//===----------------------------------------------------------------------===//

#include "parplan/Import/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cl = llvm::cl;

namespace {

cl::list<std::string> roots(cl::Positional, cl::OneOrMore,
                            cl::desc("<directory>..."));
cl::opt<unsigned> floorOpt("floor", cl::init(0),
                           cl::desc("Fail when fewer models than this import"),
                           cl::value_desc("N"));
cl::opt<unsigned> jobsOpt("jobs", cl::init(0),
                          cl::desc("Imports run at once (default: one per "
                                   "core)"),
                          cl::value_desc("N"));
cl::opt<unsigned> timeoutOpt("timeout", cl::init(60),
                             cl::desc("Seconds one import may take before it "
                                      "counts as hung"),
                             cl::value_desc("SECONDS"));
cl::opt<bool> listImported("list-imported", cl::init(false),
                           cl::desc("Also list every model that imported"));

enum class Category {
  Imported,
  Unsupported,
  Symbolic,
  ImportedFrozen,
  Failed,
  Crashed
};

/// What a child reports about one model.
struct Result {
  Category category = Category::Crashed;
  std::string message;
  std::vector<std::string> unsupportedOps;
};

//===----------------------------------------------------------------------===//
// The child: one model, one context
//===----------------------------------------------------------------------===//

bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

void collectUnsupported(const onnx::GraphProto &graph,
                        const std::set<std::string> &supported,
                        std::set<std::string> &found) {
  for (const onnx::NodeProto &node : graph.node()) {
    if (!isDefaultDomain(node.domain()))
      found.insert(node.domain() + "::" + node.op_type());
    else if (!supported.count(node.op_type()))
      found.insert(node.op_type());
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.has_g())
        collectUnsupported(attr.g(), supported, found);
      for (const onnx::GraphProto &inner : attr.graphs())
        collectUnsupported(inner, supported, found);
    }
  }
}

/// The first graph input (not an initializer) whose shape is not fully
/// static, described for the report; empty when all are static.
std::string symbolicInput(const onnx::GraphProto &graph) {
  std::set<std::string> initializers;
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializers.insert(tensor.name());
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializers.count(input.name()) || !input.type().has_tensor_type())
      continue;
    const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
    if (!tensor.has_shape())
      return "input '" + input.name() + "' has no shape";
    for (const onnx::TensorShapeProto::Dimension &dim : tensor.shape().dim())
      if (!dim.has_dim_value())
        return "input '" + input.name() + "' has dimension " +
               (dim.has_dim_param() ? "'" + dim.dim_param() + "'" : "?");
  }
  return "";
}

/// The MLIR element type a test-data tensor of this ONNX type should have,
/// or null when the comparison does not apply.
mlir::Type expectedElementType(mlir::MLIRContext &context, int32_t onnxType) {
  mlir::Builder b(&context);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::INT8:
    return b.getI8Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  default:
    return nullptr;
  }
}

std::string typeString(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// Compares the imported function's result types with the tensors in
/// test_data_set_0/output_N.pb beside the model; returns the first
/// disagreement, or an empty string.
std::string checkAgainstTestData(mlir::ModuleOp module,
                                 const std::string &modelPath) {
  llvm::SmallString<256> dataDir(llvm::sys::path::parent_path(modelPath));
  llvm::sys::path::append(dataDir, "test_data_set_0");
  if (!llvm::sys::fs::is_directory(dataDir))
    return "";
  auto function = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!function)
    return "the module has no function @main";
  llvm::ArrayRef<mlir::Type> results = function.getFunctionType().getResults();
  size_t outputs = 0;
  for (;; ++outputs) {
    llvm::SmallString<256> file(dataDir);
    llvm::sys::path::append(file, "output_" + std::to_string(outputs) + ".pb");
    if (!llvm::sys::fs::exists(file))
      break;
    if (outputs >= results.size())
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(file);
    onnx::TensorProto tensor;
    // Outputs that are not plain tensors (sequences, optionals) do not
    // parse as TensorProto: nothing to compare.
    if (!buffer || !tensor.ParseFromArray((*buffer)->getBufferStart(),
                                          (*buffer)->getBufferSize()))
      continue;
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(results[outputs]);
    std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    mlir::Type element =
        expectedElementType(*module.getContext(), tensor.data_type());
    bool shapeMatches =
        type && llvm::equal(type.getShape(), llvm::ArrayRef<int64_t>(dims));
    bool elementMatches =
        !element || (type && type.getElementType() == element);
    if (!shapeMatches || !elementMatches) {
      std::string expected;
      for (int64_t dim : dims)
        expected += std::to_string(dim) + "x";
      expected += element ? typeString(element)
                          : onnx::TensorProto::DataType_Name(
                                static_cast<onnx::TensorProto::DataType>(
                                    tensor.data_type()));
      return "result " + std::to_string(outputs) + " has type " +
             typeString(results[outputs]) + ", the test data says tensor<" +
             expected + ">";
    }
  }
  if (outputs && outputs != results.size())
    return "the function has " + std::to_string(results.size()) +
           " results, the test data " + std::to_string(outputs) + " outputs";
  return "";
}

/// Turns the graph inputs whose test values are int32/int64 tensors or
/// single elements (shapes, axes, bounds) into Constant nodes holding the
/// values in test_data_set_0/input_N.pb; returns how many were frozen.
int freezeInputs(onnx::ModelProto &model, const std::string &modelPath) {
  llvm::SmallString<256> dataDir(llvm::sys::path::parent_path(modelPath));
  llvm::sys::path::append(dataDir, "test_data_set_0");
  onnx::GraphProto &graph = *model.mutable_graph();
  std::set<std::string> initializers;
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializers.insert(tensor.name());
  int frozen = 0;
  int fed = 0; // input_N.pb numbers the inputs without initializers.
  for (int i = 0; i < graph.input_size(); ++i) {
    if (initializers.count(graph.input(i).name()))
      continue;
    llvm::SmallString<256> file(dataDir);
    llvm::sys::path::append(file, "input_" + std::to_string(fed++) + ".pb");
    auto buffer = llvm::MemoryBuffer::getFile(file);
    onnx::TensorProto tensor;
    if (!buffer || !tensor.ParseFromArray((*buffer)->getBufferStart(),
                                          (*buffer)->getBufferSize()))
      continue;
    int64_t elements = 1;
    for (int64_t dim : tensor.dims())
      elements *= dim;
    bool integer = tensor.data_type() == onnx::TensorProto::INT64 ||
                   tensor.data_type() == onnx::TensorProto::INT32;
    if (!integer && elements != 1)
      continue;
    onnx::NodeProto &node = *graph.add_node(); // Nodes are sorted on import.
    node.set_op_type("Constant");
    node.set_name("frozen_" + graph.input(i).name());
    node.add_output(graph.input(i).name());
    onnx::AttributeProto &value = *node.add_attribute();
    value.set_name("value");
    value.set_type(onnx::AttributeProto::TENSOR);
    *value.mutable_t() = tensor;
    value.mutable_t()->clear_name();
    graph.mutable_input()->DeleteSubrange(i--, 1);
    ++frozen;
  }
  return frozen;
}

Result importOne(const std::string &path,
                 const std::set<std::string> &supported) {
  Result result;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    result.category = Category::Failed;
    result.message = path + ": cannot read: " + buffer.getError().message();
    return result;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();

  // Classify from the model itself, independently of the importer.
  onnx::ModelProto model;
  std::string symbolic;
  if (model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    std::set<std::string> found;
    collectUnsupported(model.graph(), supported, found);
    result.unsupportedOps.assign(found.begin(), found.end());
    symbolic = symbolicInput(model.graph());
  }

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  try {
    module = parplan::importOnnx(bytes, path, context,
                                 parplan::OnnxImportOptions(), error);
  } catch (const std::exception &exception) {
    result.category = Category::Crashed;
    result.message = path + ": importOnnx threw: " + exception.what();
    return result;
  } catch (...) {
    result.category = Category::Crashed;
    result.message = path + ": importOnnx threw a non-standard exception";
    return result;
  }

  if (!result.unsupportedOps.empty()) {
    result.category = module ? Category::Failed : Category::Unsupported;
    result.message = module ? path + ": imported although it uses " +
                                  result.unsupportedOps.front()
                            : error;
    return result;
  }
  if (!symbolic.empty()) {
    result.category = Category::Symbolic;
    result.message = path + ": " + symbolic;
    return result;
  }
  if (module) {
    std::string mismatch = checkAgainstTestData(*module, path);
    result.category = mismatch.empty() ? Category::Imported : Category::Failed;
    result.message = path + ": " + mismatch;
    return result;
  }
  result.category = Category::Failed;
  result.message = error.empty() ? path + ": failed with no message" : error;

  // Try again with the shape-like inputs frozen to their test values.
  if (model.ByteSizeLong() == 0 || !freezeInputs(model, path))
    return result;
  std::string frozenBytes = model.SerializeAsString();
  mlir::MLIRContext frozenContext(mlir::MLIRContext::Threading::DISABLED);
  std::string frozenError;
  mlir::OwningOpRef<mlir::ModuleOp> frozen;
  try {
    frozen = parplan::importOnnx(frozenBytes, path, frozenContext,
                                 parplan::OnnxImportOptions(), frozenError);
  } catch (const std::exception &exception) {
    result.category = Category::Crashed;
    result.message =
        path + ": importOnnx threw (inputs frozen): " + exception.what();
    return result;
  } catch (...) {
    result.category = Category::Crashed;
    result.message =
        path + ": importOnnx threw a non-standard exception (inputs frozen)";
    return result;
  }
  std::string mismatch =
      frozen
          ? checkAgainstTestData(*frozen, path)
          : frozenError.substr(std::min(frozenError.size(), path.size() + 2));
  if (mismatch.empty())
    result.category = Category::ImportedFrozen;
  else
    result.message += " [inputs frozen to their test values: " + mismatch + "]";
  return result;
}

/// The record a child writes to its pipe: one field per line.
std::string serialize(const Result &result) {
  auto oneLine = [](std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    if (text.size() > 4000)
      text = text.substr(0, 4000) + "...";
    return text;
  };
  std::string record = std::to_string(static_cast<int>(result.category)) +
                       "\n" + oneLine(result.message) + "\n";
  for (const std::string &op : result.unsupportedOps)
    record += oneLine(op) + "\n";
  return record.substr(0, 32768); // Well below a pipe's buffer.
}

Result deserialize(const std::string &record) {
  Result result;
  std::istringstream in(record);
  std::string line;
  if (!std::getline(in, line) || line.empty()) {
    result.message = "the child reported nothing";
    return result;
  }
  result.category = static_cast<Category>(std::stoi(line));
  std::getline(in, result.message);
  while (std::getline(in, line))
    if (!line.empty())
      result.unsupportedOps.push_back(line);
  return result;
}

[[noreturn]] void runChild(int fd, const std::string &path,
                           const std::set<std::string> &supported) {
  alarm(timeoutOpt);
  std::string record = serialize(importOne(path, supported));
  const char *data = record.data();
  size_t left = record.size();
  while (left) {
    ssize_t written = write(fd, data, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      break;
    data += written;
    left -= static_cast<size_t>(written);
  }
  close(fd);
  // Skip static destructors: the parent only needs the record.
  _exit(0);
}

//===----------------------------------------------------------------------===//
// The parent: a pool of children
//===----------------------------------------------------------------------===//

struct Running {
  size_t index;
  int fd;
  std::string record;
};

std::string drain(int fd) {
  std::string data;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    data.append(chunk, static_cast<size_t>(n));
  }
  return data;
}

std::vector<Result> importAll(const std::vector<std::string> &models,
                              const std::set<std::string> &supported,
                              unsigned jobs) {
  std::vector<Result> results(models.size());
  std::map<pid_t, Running> running;
  size_t next = 0;
  while (next < models.size() || !running.empty()) {
    while (next < models.size() && running.size() < jobs) {
      int fds[2];
      if (pipe(fds) != 0) {
        llvm::errs() << "error: pipe: " << std::strerror(errno) << "\n";
        std::exit(2);
      }
      llvm::outs().flush();
      llvm::errs().flush();
      pid_t pid = fork();
      if (pid < 0) {
        llvm::errs() << "error: fork: " << std::strerror(errno) << "\n";
        std::exit(2);
      }
      if (pid == 0) {
        close(fds[0]);
        runChild(fds[1], models[next], supported);
      }
      close(fds[1]);
      running[pid] = Running{next, fds[0], ""};
      ++next;
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR)
        continue;
      llvm::errs() << "error: waitpid: " << std::strerror(errno) << "\n";
      std::exit(2);
    }
    auto it = running.find(pid);
    if (it == running.end())
      continue;
    Running child = std::move(it->second);
    running.erase(it);
    std::string record = drain(child.fd);
    close(child.fd);
    const std::string &path = models[child.index];
    Result &result = results[child.index];
    if (WIFSIGNALED(status)) {
      int signal = WTERMSIG(status);
      result.category = Category::Crashed;
      result.message =
          path + ": " +
          (signal == SIGALRM
               ? "hung: no result after " + std::to_string(timeoutOpt) + " s"
               : std::string("died on signal ") + strsignal(signal));
    } else if (WEXITSTATUS(status) != 0 || record.empty()) {
      result.category = Category::Crashed;
      result.message = path + ": exited with status " +
                       std::to_string(WEXITSTATUS(status)) +
                       " before reporting";
    } else {
      result = deserialize(record);
    }
  }
  return results;
}

std::vector<std::string> findModels() {
  std::vector<std::string> models;
  for (const std::string &root : roots) {
    if (!llvm::sys::fs::is_directory(root)) {
      llvm::errs() << "error: " << root << " is not a directory\n";
      std::exit(2);
    }
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::sys::path::filename(it->path()) == "model.onnx")
        models.push_back(it->path());
    if (ec) {
      llvm::errs() << "error: walking " << root << ": " << ec.message() << "\n";
      std::exit(2);
    }
  }
  std::sort(models.begin(), models.end());
  return models;
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(
      argc, argv,
      "Imports every model.onnx under the given directories and sorts the "
      "results: imported, unsupported op, symbolic dims, FAILED, CRASHED.\n");
  auto start = std::chrono::steady_clock::now();

  std::vector<std::string> models = findModels();
  if (models.empty()) {
    llvm::errs() << "error: no model.onnx under the given directories\n";
    return 2;
  }
  std::vector<std::string> names = parplan::supportedOnnxOps();
  std::set<std::string> supported(names.begin(), names.end());
  unsigned jobs = jobsOpt ? jobsOpt.getValue()
                          : std::max(1u, std::thread::hardware_concurrency());

  std::vector<Result> results = importAll(models, supported, jobs);

  std::map<Category, std::vector<size_t>> byCategory;
  // Per op type: the models it blocks, and those it alone blocks.
  std::map<std::string, std::pair<size_t, size_t>> blocking;
  for (size_t i = 0; i < results.size(); ++i) {
    byCategory[results[i].category].push_back(i);
    if (results[i].category == Category::Unsupported)
      for (const std::string &op : results[i].unsupportedOps) {
        ++blocking[op].first;
        blocking[op].second += results[i].unsupportedOps.size() == 1;
      }
  }
  auto count = [&](Category category) { return byCategory[category].size(); };

  llvm::outs() << "supported ops (" << names.size()
               << "): " << llvm::join(names, " ") << "\n\n";

  std::vector<std::pair<std::string, std::pair<size_t, size_t>>> ranked(
      blocking.begin(), blocking.end());
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const auto &a, const auto &b) { return a.second > b.second; });
  llvm::outs() << "unsupported op types (" << ranked.size()
               << "), by the number of models they block; 'alone': the "
                  "models that use no other unsupported op\n"
               << "  blocks\talone\top\n";
  for (const auto &[op, blocked] : ranked)
    llvm::outs() << "  " << blocked.first << "\t" << blocked.second << "\t"
                 << op << "\n";

  if (listImported) {
    llvm::outs() << "\nimported:\n";
    for (size_t i : byCategory[Category::Imported])
      llvm::outs() << "  " << models[i] << "\n";
  }
  llvm::outs() << "\nsymbolic dims (not imported, expected):\n";
  for (size_t i : byCategory[Category::Symbolic])
    llvm::outs() << "  " << results[i].message << "\n";
  llvm::outs() << "\nimported only with inputs frozen to their test values ("
               << count(Category::ImportedFrozen) << "):\n";
  for (size_t i : byCategory[Category::ImportedFrozen])
    llvm::outs() << "  " << results[i].message << "\n";
  llvm::outs() << "\nFAILED although every op is supported ("
               << count(Category::Failed) << "):\n";
  for (size_t i : byCategory[Category::Failed])
    llvm::outs() << "  " << results[i].message << "\n";
  llvm::outs() << "\nCRASHED (" << count(Category::Crashed) << "):\n";
  for (size_t i : byCategory[Category::Crashed])
    llvm::outs() << "  " << results[i].message << "\n";

  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  llvm::outs() << "\nsummary (" << models.size() << " models, " << jobs
               << " jobs, " << llvm::format("%.1f", seconds) << " s):\n"
               << "  imported:                 " << count(Category::Imported)
               << "\n"
               << "  rejected, unsupported op: " << count(Category::Unsupported)
               << " (expected)\n"
               << "  rejected, symbolic dims:  " << count(Category::Symbolic)
               << " (expected)\n"
               << "  only with frozen inputs:  "
               << count(Category::ImportedFrozen) << " (not counted)\n"
               << "  FAILED:                   " << count(Category::Failed)
               << "\n"
               << "  CRASHED:                  " << count(Category::Crashed)
               << "\n";

  size_t imported = count(Category::Imported);
  int status = 0;
  if (count(Category::Crashed)) {
    llvm::outs() << "error: the importer crashed on "
                 << count(Category::Crashed) << " models\n";
    status = 1;
  }
  if (imported < floorOpt) {
    llvm::outs() << "error: " << imported
                 << " models imported, below the floor " << floorOpt << "\n";
    status = 1;
  } else if (imported > floorOpt) {
    llvm::outs() << "note: above the floor " << floorOpt
                 << "; raise it in test/integration/CMakeLists.txt\n";
  }
  llvm::outs() << "imported " << imported << " of " << models.size() << "\n";
  llvm::outs().flush();
  return status;
}
