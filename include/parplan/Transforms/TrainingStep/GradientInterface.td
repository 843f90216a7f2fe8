//===- GradientInterface.td - ops with a backward rule -----*- tablegen -*-===//
//
// How nn-autodiff differentiates an op: the op's own backward rule, in the
// manner of PlanLoweringOpInterface. The rules are external models
// (lib/Transforms/TrainingStep/NNGradients.cpp), so the nn dialect does not depend on
// the differentiator; an op without one stops nn-autodiff with an error
// naming it.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_GRADIENT_INTERFACE
#define PARPLAN_GRADIENT_INTERFACE

include "mlir/IR/OpBase.td"

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::parplan";
  let description = [{
    An op that, given the cotangents of its results, emits the backward
    ops that give its operands theirs (reverse-mode differentiation on
    logical shapes, docs/training.md).
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the op's backward at the differentiator's insertion point:
        reads the cotangents of its results
        (`differentiator.resultGradient(i)`, null for a result without
        one) and the forward values through `differentiator.primal`, and
        adds each operand's share with `differentiator.accumulate` where
        `differentiator.needs` it. Fails, with an error on the op, for a
        case it cannot differentiate.
      }],
      "::mlir::LogicalResult", "buildGradient",
      (ins "::parplan::Differentiator &":$differentiator)>
  ];
}

#endif // PARPLAN_GRADIENT_INTERFACE
