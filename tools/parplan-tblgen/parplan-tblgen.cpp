//===- parplan-tblgen.cpp - parplan's TableGen backends -------------------===//
//
// mlir-tblgen's driver with parplan's generators registered beside MLIR's
// (each registers itself through mlir::GenRegistration):
//   -gen-kernel-ops  the runtime's kernel table from the nn ops
//                    (KernelOpsGen.cpp).
//
//===----------------------------------------------------------------------===//

#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
