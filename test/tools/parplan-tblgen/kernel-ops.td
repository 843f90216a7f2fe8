// parplan-tblgen -gen-kernel-ops: the runtime's kernel table from nn op
// definitions. Each error case is one -D; TableGen has no split-input-file.
//
// RUN: parplan-tblgen -gen-kernel-ops -I %mlir_include_dir %s | FileCheck %s
// RUN: not parplan-tblgen -gen-kernel-ops -I %mlir_include_dir -DELEMENTS %s 2>&1 | FileCheck %s --check-prefix=ELEMENTS
// RUN: not parplan-tblgen -gen-kernel-ops -I %mlir_include_dir -DBAD_DEFAULT %s 2>&1 | FileCheck %s --check-prefix=BAD-DEFAULT
// RUN: not parplan-tblgen -gen-kernel-ops -I %mlir_include_dir -DOPTIONAL_FIRST %s 2>&1 | FileCheck %s --check-prefix=OPTIONAL-FIRST

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::test";
}
class NN_Op<string mnemonic> : Op<NN_Dialect, mnemonic>;
class NN_ComputeOp<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

def Mode : I32EnumAttr<"Mode", "", [I32EnumAttrCase<"fast", 0>,
                                    I32EnumAttrCase<"exact", 1>]> {
  let cppNamespace = "::test";
}

// Sorted by mnemonic, whatever the order of the definitions; values
// (param-like NN_Op, ConstantLike) are not kernels.
// CHECK:      #ifdef GET_KERNEL_IDS
// CHECK-NEXT: #undef GET_KERNEL_IDS
// CHECK-NEXT: Alpha,
// CHECK-NEXT: Zeta,
// CHECK-NEXT: #endif
def NN_ZetaOp : NN_ComputeOp<"zeta"> {
  let arguments = (ins Variadic<AnyType>:$inputs, I64Attr:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta,
                       DefaultValuedAttr<Mode, "::test::Mode::exact">:$mode,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       OptionalAttr<F32Attr>:$min, UnitAttr:$flag,
                       DefaultValuedAttr<BoolAttr, "true">:$on,
                       StrAttr:$tag);
  let results = (outs AnyType:$out);
}
def NN_AlphaOp : NN_ComputeOp<"alpha"> {
  let arguments = (ins AnyType:$lhs, Optional<AnyType>:$bias);
  let results = (outs Variadic<AnyType>:$parts);
}
def NN_ValueOp : NN_Op<"value"> {
  let results = (outs AnyType:$out);
}
def NN_ConstOp : NN_ComputeOp<"const", [ConstantLike]> {
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyType:$out);
}

// CHECK:      #ifdef GET_KERNEL_OPS
// CHECK:      {KernelId::Alpha, "alpha", 2, 1, -1, {
// CHECK-NEXT: }},
// CHECK-NEXT: {KernelId::Zeta, "zeta", -1, 0, 1, {
// CHECK-NEXT:     {"axis", AttrType::I64, true, std::nullopt, {}},
// CHECK-NEXT:     {"epsilon", AttrType::F32, false, AttrValue(static_cast<double>(static_cast<float>(1.0e-05))), {}},
// CHECK-NEXT:     {"beta", AttrType::F64, false, AttrValue(double{0.999}), {}},
// CHECK-NEXT:     {"mode", AttrType::Enum, false, AttrValue("exact"), {"fast", "exact"}},
// CHECK-NEXT:     {"axes", AttrType::I64Array, false, AttrValue(std::vector<int64_t>{}), {}},
// CHECK-NEXT:     {"min", AttrType::F32, false, std::nullopt, {}},
// CHECK-NEXT:     {"flag", AttrType::Unit, false, AttrValue(false), {}},
// CHECK-NEXT:     {"on", AttrType::Bool, false, AttrValue(true), {}},
// CHECK-NEXT:     {"tag", AttrType::String, true, std::nullopt, {}},
// CHECK-NEXT: }},
// CHECK-NEXT: #endif

#ifdef ELEMENTS
// ELEMENTS: error: nn op attribute 'data': attributes of type ElementsAttr have no runtime form (AttrType)
def NN_DataOp : NN_ComputeOp<"data"> {
  let arguments = (ins ElementsAttr:$data);
}
#endif

#ifdef BAD_DEFAULT
// BAD-DEFAULT: error: nn op attribute 'count': default 'two' is not an integer
def NN_CountOp : NN_ComputeOp<"count"> {
  let arguments = (ins DefaultValuedAttr<I64Attr, "two">:$count);
}
#endif

#ifdef OPTIONAL_FIRST
// OPTIONAL-FIRST: error: an optional operand before a required one has no runtime form
def NN_MixedOp : NN_ComputeOp<"mixed"> {
  let arguments = (ins Optional<AnyType>:$bias, AnyType:$lhs);
}
#endif
