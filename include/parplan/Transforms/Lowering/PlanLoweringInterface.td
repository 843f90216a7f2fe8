//===- PlanLoweringInterface.td - ops that lower to plan ---*- tablegen -*-===//
//
// How an op of the laid-out program becomes the work of one device, in the
// manner of upstream MLIR's ShardingInterface::partition. lower-to-plan
// calls it on every op of @main once per device; the nn ops and the sbp
// resharding steps implement it as external models (lib/Transforms), so the
// dialects do not depend on the plan dialect.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_PLAN_LOWERING_INTERFACE
#define PARPLAN_PLAN_LOWERING_INTERFACE

include "mlir/IR/OpBase.td"

def PlanLoweringOpInterface : OpInterface<"PlanLoweringOpInterface"> {
  let cppNamespace = "::parplan";
  let description = [{
    An op that emits, into the program of one device, the plan buffers,
    kernels and collectives that compute that device's block of its
    results from its blocks of its operands (DeviceLowering says which
    device, and holds the buffer of every value lowered so far).
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the op's work on the device `lowering` builds, and maps each
        result to the buffer holding the device's block of it. Fails, with
        an error on the op, for a layout it cannot lower.
      }],
      "::mlir::LogicalResult", "lowerToDevice",
      (ins "::parplan::DeviceLowering &":$lowering)>
  ];
}

#endif // PARPLAN_PLAN_LOWERING_INTERFACE
