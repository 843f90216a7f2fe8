// Uses parplan's installed dialects, slicing library and cluster presets.
#include "parplan/Cost/Presets.h"
#include "parplan/Dialect/SBP/SBPOps.h"
#include "parplan/InitAllDialects.h"
#include "parplan/Sbp/Sbp.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <cstdio>

int main() {
  mlir::DialectRegistry registry;
  parplan::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  const char *source = R"mlir(
    sbp.mesh @mesh(shape = 4x2)
    func.func @f(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
      %y = sbp.annotate %x on @mesh [#sbp.s<0>, #sbp.b] : tensor<8x6xf32>
      return %y : tensor<8x6xf32>
    })mlir";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return 1;
  int meshes = 0;
  int64_t devices = 0;
  module->walk([&](parplan::sbp::MeshOp mesh) {
    ++meshes;
    devices = mesh.getNumDevices();
  });
  parplan::Slice slice = parplan::deviceSlice(
      {8, 6}, {4, 2}, {parplan::Sbp::split(0), parplan::Sbp::broadcast()},
      parplan::meshCoordinate({4, 2}, 5));
  // The hulk-geo preset's data is embedded in the installed library.
  std::optional<parplan::cost::Cluster> hulk =
      parplan::cost::preset("hulk-geo");
  std::printf("consumer: parsed %d mesh of %lld devices, device 5 holds rows "
              "%lld..%lld; hulk-geo has %lld nodes\n",
              meshes, static_cast<long long>(devices),
              static_cast<long long>(slice.offsets[0]),
              static_cast<long long>(slice.offsets[0] + slice.sizes[0] - 1),
              static_cast<long long>(hulk ? hulk->nodes.size() : 0));
  return 0;
}
