//===- ModelFiles.cpp - reading models and writing IR ---------------------===//

#include "ModelFiles.h"

#include "Diagnostics.h"

#include "parplan/Cost/Mesh.h"
#include "parplan/Import/OnnxImporter.h"
#include "parplan/Transforms/Passes.h"
#include "parplan/Transforms/ShardingCostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/core.h>

using namespace mlir;

OwningOpRef<ModuleOp>
parplan::cli::loadModel(const std::string &path,
                        const std::vector<std::string> &dims, bool raw,
                        MLIRContext &context) {
  if (llvm::StringRef(path).ends_with(".mlir")) {
    if (!dims.empty()) {
      fmt::print(stderr,
                 "parplan: error: --dim binds ONNX dimensions; '{}' is IR\n",
                 path);
      return nullptr;
    }
    return parseIRFile(path, context);
  }
  OnnxImportOptions importOptions;
  for (const std::string &binding : dims)
    if (std::optional<std::string> problem =
            addDimBinding(importOptions, binding)) {
      fmt::print(stderr, "parplan: error: {}\n", *problem);
      return nullptr;
    }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (std::error_code error = buffer.getError()) {
    fmt::print(stderr, "parplan: error: cannot read '{}': {}\n", path,
               error.message());
    return nullptr;
  }
  std::string error;
  OwningOpRef<ModuleOp> module =
      importOnnx((*buffer)->getBuffer(), path, context, importOptions, error);
  if (!module) {
    fmt::print(stderr, "parplan: error: {}\n", error);
    return nullptr;
  }
  if (!raw) {
    OneLineDiagnostics diagnostics(context);
    PassManager pm(&context);
    addCanonicalFormPasses(pm);
    if (failed(pm.run(*module)))
      return nullptr;
  }
  return module;
}

bool parplan::cli::writeFile(
    const std::string &path,
    llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::error_code fileError;
  llvm::raw_fd_ostream out(path, fileError, llvm::sys::fs::OF_Text);
  if (fileError) {
    fmt::print(stderr, "parplan: error: cannot write '{}': {}\n", path,
               fileError.message());
    return false;
  }
  write(out);
  out.close();
  if (out.has_error()) {
    fmt::print(stderr, "parplan: error: cannot write '{}': {}\n", path,
               out.error().message());
    out.clear_error();
    return false;
  }
  return true;
}

bool parplan::cli::writeIR(ModuleOp module, const std::string &path) {
  auto print = [&](llvm::raw_ostream &out) {
    module.print(out);
    out << "\n";
  };
  if (!path.empty())
    return writeFile(path, print);
  print(llvm::outs());
  return true;
}

parplan::sbp::MeshOp parplan::cli::layoutMesh(mlir::ModuleOp module) {
  if (auto mesh = module.lookupSymbol<sbp::MeshOp>("mesh"))
    if (!mesh.getDevices())
      return mesh;
  auto meshes = module.getOps<sbp::MeshOp>();
  return meshes.empty() ? sbp::MeshOp() : *meshes.begin();
}

bool parplan::cli::attachLayoutInputs(mlir::ModuleOp module,
                                      const LayoutOptions &layout,
                                      const char *command) {
  std::string error;
  if (attachCluster(module, layout.cluster, error) &&
      (layout.annotations.empty() ||
       attachAnnotations(module, layout.annotations, error)))
    return true;
  llvm::errs() << "parplan " << command << ": error: " << error << "\n";
  return false;
}

bool parplan::cli::resolveMegatronGrid(mlir::ModuleOp module,
                                       LayoutOptions &layout,
                                       const char *command) {
  if (layout.tensor == 0 && layout.pipeline == 0)
    return true;
  auto fail = [&](const std::string &why) {
    llvm::errs() << "parplan " << command << ": error: " << why << "\n";
    return false;
  };
  if (layout.strategy != "megatron")
    return fail("--tensor and --pipeline are the grid of --strategy "
                "megatron, not of --strategy " +
                layout.strategy);
  if (!layout.mesh.empty() || layout.stages > 0 || layout.autoStages)
    return fail("--tensor and --pipeline set the mesh and the stages; "
                "leave out --mesh and --stages");
  std::string error;
  std::optional<cost::Cluster> cluster =
      loadCluster(module, layout.cluster, error);
  if (!cluster)
    return fail(error);
  int64_t devices = cluster->numDevices();
  // Tensor parallelism inside a node by default, as Megatron-LM runs it.
  int64_t tensor =
      layout.tensor ? layout.tensor : cost::defaultMeshShape(*cluster).back();
  int64_t pipeline = layout.pipeline ? layout.pipeline : 1;
  if (devices % tensor != 0)
    return fail(fmt::format("--tensor {} does not divide the {} devices of "
                            "cluster '{}'",
                            tensor, devices, cluster->name));
  int64_t rows = devices / tensor;
  if (rows % pipeline != 0)
    return fail(fmt::format("--pipeline {} does not divide the {} group{} of "
                            "--tensor {} devices of cluster '{}'",
                            pipeline, rows, rows == 1 ? "" : "s", tensor,
                            cluster->name));
  layout.mesh = fmt::format("{}x{}", rows, tensor);
  layout.stages = pipeline > 1 ? pipeline : 0;
  return true;
}

std::optional<std::pair<parplan::cost::Cluster, std::vector<int64_t>>>
parplan::cli::layoutMesh(mlir::ModuleOp module, const std::string &cluster,
                         const std::string &mesh, std::string &error) {
  std::optional<cost::Cluster> loaded = loadCluster(module, cluster, error);
  if (!loaded)
    return std::nullopt;
  std::vector<int64_t> shape;
  if (mesh.empty()) {
    shape = cost::defaultMeshShape(*loaded);
  } else if (auto parsed = cost::parseMeshShape(mesh, error)) {
    shape = *parsed;
  } else {
    return std::nullopt;
  }
  return std::make_pair(std::move(*loaded), std::move(shape));
}

void parplan::cli::setPipelineOptions(CompilePipelineOptions &pipeline,
                                      const TrainingOptions &training,
                                      const LayoutOptions *layout) {
  pipeline.loss = training.loss;
  pipeline.output = training.outputIndex;
  pipeline.labels = training.labels;
  pipeline.optimizer = training.optimizer;
  pipeline.lr = training.lr;
  pipeline.weightDecay = training.weightDecay;
  pipeline.frozen = training.frozen;
  pipeline.recompute = training.recompute;
  pipeline.recomputeLayers = training.recomputeLayers;
  pipeline.mixedPrecision = training.mixedPrecision;
  pipeline.microBatches = training.microBatches;
  pipeline.batchNorm = training.batchNorm;
  pipeline.dropout = training.dropout;
  pipeline.dropoutSeed = training.dropoutSeed;
  pipeline.untie = llvm::ArrayRef<std::string>(training.untie);
  if (!layout)
    return;
  pipeline.cluster = layout->cluster;
  pipeline.mesh = layout->mesh;
  pipeline.strategy = layout->strategy;
  pipeline.stages = layout->stages;
}
