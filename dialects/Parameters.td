//===- Parameters.td - attribute parameters the dialects share -*- tablegen -*-===//
//
// Parameters of the figures a pass leaves for the next (predicted seconds,
// bytes), printed so that they read back to the same value.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_PARAMETERS
#define PARPLAN_PARAMETERS

include "mlir/IR/AttrTypeBase.td"

// A double (parplan::AttrDouble, which hashes and compares bit for bit),
// read as a double and printed as a float literal that reads back to the
// same value (MLIR has no field parser for doubles).
class Parplan_DoubleParameter<string desc> :
    AttrOrTypeParameter<"::parplan::AttrDouble", desc, "double"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::parplan::AttrDouble> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::parplan::AttrDouble(value);
  }() }];
  let printer = [{ $_printer << static_cast<double>($_self) }];
}

// The same, 0 where left out (and not printed when 0).
class Parplan_DoubleParameterOrZero<string desc> :
    Parplan_DoubleParameter<desc> {
  let defaultValue = "::parplan::AttrDouble(0.0)";
}

#endif // PARPLAN_PARAMETERS
