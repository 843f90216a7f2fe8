//===- KernelOpsGen.cpp - the runtime's kernel table from the nn ops ------===//
//
// -gen-kernel-ops writes, for every nn op that is a kernel, what the
// MLIR-free runtime needs to call it (parplan/Runtime/KernelOps.h): an id,
// the mnemonic, the operand and result counts, and each attribute with its
// type, whether it may be absent, its default and, for an enum, its cases.
// So the executor reads the op definitions' defaults instead of restating
// them, and an attribute added to an op reaches the runtime's table by
// itself.
//
// A kernel is an op of the nn dialect derived from NN_ComputeOp, except a
// ConstantLike one (its value is data in the plan, not a call); nn.param and
// nn.input are values too. The output is sorted by mnemonic, so that ids
// and the table do not move when the .td files are reordered.
//
// An attribute of a type the runtime has no form for (AttrValue in
// KernelOps.h) stops the build with an error naming the op and attribute.
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/EnumInfo.h"
#include "mlir/TableGen/GenInfo.h"
#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

#include <memory>
#include <string>
#include <vector>

using llvm::raw_ostream;
using llvm::Record;
using llvm::RecordKeeper;
using llvm::StringRef;

namespace {

/// AttrType's cases in KernelOps.h, by the ODS attribute they stand for.
struct AttrTypeName {
  StringRef odsName;
  StringRef runtimeName;
};
constexpr AttrTypeName kAttrTypes[] = {
    {"I64Attr", "I64"},
    {"F32Attr", "F32"},
    {"F64Attr", "F64"},
    {"BoolAttr", "Bool"},
    {"UnitAttr", "Unit"},
    {"StrAttr", "String"},
    {"DenseI64ArrayAttr", "I64Array"},
};

[[noreturn]] void fail(const Record &op, StringRef attrName,
                       const llvm::Twine &message) {
  llvm::PrintFatalError(&op, "nn op attribute '" + attrName + "': " + message);
}

/// The C++ expression of an attribute's ODS default as an AttrValue.
std::string defaultValue(const Record &op, StringRef attrName,
                         StringRef runtimeType, StringRef value,
                         const std::vector<std::string> &cases) {
  value = value.trim();
  if (runtimeType == "I64") {
    int64_t parsed;
    if (!llvm::to_integer(value, parsed))
      fail(op, attrName, "default '" + value + "' is not an integer");
    return "AttrValue(int64_t{" + std::to_string(parsed) + "})";
  }
  if (runtimeType == "F32" || runtimeType == "F64") {
    double parsed;
    if (!llvm::to_float(value, parsed))
      fail(op, attrName, "default '" + value + "' is not a number");
    // An F32Attr holds a float: its default, as MLIR parses it, too.
    return runtimeType == "F32"
               ? "AttrValue(static_cast<double>(static_cast<float>(" +
                     value.str() + ")))"
               : "AttrValue(double{" + value.str() + "})";
  }
  // A unit attribute is present or not; absent reads as false.
  if (runtimeType == "Unit")
    return "AttrValue(false)";
  if (runtimeType == "Bool") {
    if (value != "true" && value != "false")
      fail(op, attrName, "default '" + value + "' is not true or false");
    return "AttrValue(" + value.str() + ")";
  }
  if (runtimeType == "I64Array") {
    if (value != "{}")
      fail(op, attrName, "only an empty default list has a runtime form");
    return "AttrValue(std::vector<int64_t>{})";
  }
  if (runtimeType == "Enum") {
    StringRef caseName = value.rsplit("::").second;
    if (caseName.empty())
      caseName = value;
    if (!llvm::is_contained(cases, caseName.str()))
      fail(op, attrName, "default '" + value + "' is not one of its cases");
    return "AttrValue(\"" + caseName.str() + "\")";
  }
  fail(op, attrName, "a default of type " + runtimeType + " has no form");
}

void emitAttr(const Record &op, const mlir::tblgen::NamedAttribute &named,
              raw_ostream &os) {
  const mlir::tblgen::Attribute &attr = named.attr;
  mlir::tblgen::Attribute base = attr.getBaseAttr();
  StringRef runtimeType;
  std::vector<std::string> cases;
  if (base.isEnumAttr()) {
    runtimeType = "Enum";
    mlir::tblgen::EnumInfo info(base.getDef());
    if (info.isBitEnum())
      fail(op, named.name, "a bit enum has no runtime form");
    // The runtime reads an enum's value as its index among the cases.
    for (const mlir::tblgen::EnumCase &enumCase : info.getAllCases()) {
      if (enumCase.getValue() != static_cast<int64_t>(cases.size()))
        fail(op, named.name,
             "case '" + enumCase.getSymbol() + "' has value " +
                 std::to_string(enumCase.getValue()) + ", not its index " +
                 std::to_string(cases.size()));
      cases.push_back(enumCase.getSymbol().str());
    }
  } else {
    StringRef odsName = base.getDef().getName();
    for (const AttrTypeName &type : kAttrTypes)
      if (type.odsName == odsName)
        runtimeType = type.runtimeName;
    if (runtimeType.empty())
      fail(op, named.name,
           "attributes of type " + odsName +
               " have no runtime form (AttrType)");
  }
  bool required = !attr.isOptional() && !attr.hasDefaultValue();
  os << "    {\"" << named.name << "\", AttrType::" << runtimeType << ", "
     << (required ? "true" : "false") << ", ";
  if (attr.hasDefaultValue())
    os << defaultValue(op, named.name, runtimeType, attr.getDefaultValue(),
                       cases);
  else
    os << "std::nullopt";
  os << ", {";
  llvm::interleaveComma(cases, os,
                        [&](const std::string &c) { os << '"' << c << '"'; });
  os << "}},\n";
}

/// Operand or result counts: the count, -1 for one variadic list.
template <typename Range>
int countOf(const Record &op, Range values, StringRef what) {
  int count = 0;
  for (const auto &value : values) {
    if (value.isVariadic()) {
      if (count || llvm::size(values) != 1)
        llvm::PrintFatalError(&op, "a variadic " + what +
                                       " list beside others has no "
                                       "runtime form");
      return -1;
    }
    ++count;
  }
  return count;
}

bool emitKernelOps(const RecordKeeper &records, raw_ostream &os) {
  // Operator is neither copied nor moved.
  std::vector<std::unique_ptr<mlir::tblgen::Operator>> kernels;
  for (const Record *def : records.getAllDerivedDefinitions("Op")) {
    auto op = std::make_unique<mlir::tblgen::Operator>(def);
    if (op->getDialectName() != "nn" || !def->isSubClassOf("NN_ComputeOp") ||
        op->getTrait("::mlir::OpTrait::ConstantLike"))
      continue;
    kernels.push_back(std::move(op));
  }
  llvm::sort(kernels, [](const auto &lhs, const auto &rhs) {
    return lhs->getOperationName() < rhs->getOperationName();
  });

  llvm::emitSourceFileHeader("The runtime's kernel table (KernelOps.h)", os,
                             records);
  os << "#ifdef GET_KERNEL_IDS\n#undef GET_KERNEL_IDS\n";
  for (const auto &op : kernels)
    os << op->getCppClassName().drop_back(2) << ",\n";
  os << "#endif // GET_KERNEL_IDS\n\n";

  os << "#ifdef GET_KERNEL_OPS\n#undef GET_KERNEL_OPS\n";
  for (const auto &kernel : kernels) {
    const mlir::tblgen::Operator &op = *kernel;
    const Record &def = op.getDef();
    int numOptional = 0;
    for (const mlir::tblgen::NamedTypeConstraint &operand : op.getOperands())
      numOptional += operand.isOptional();
    // Optional operands last: the runtime's calls pass an absent one as a
    // null at its place.
    int numOperands = countOf(def, op.getOperands(), "operand");
    for (int i = 0, e = numOperands < 0 ? 0 : numOperands; i < e; ++i)
      if (i < e - numOptional && op.getOperand(i).isOptional())
        llvm::PrintFatalError(&def, "an optional operand before a required "
                                    "one has no runtime form");
    os << "{KernelId::" << op.getCppClassName().drop_back(2) << ", \""
       << op.getOperationName().substr(3) << "\", " << numOperands << ", "
       << numOptional << ", " << countOf(def, op.getResults(), "result")
       << ", {\n";
    for (const mlir::tblgen::NamedAttribute &named : op.getAttributes())
      if (!named.attr.isDerivedAttr())
        emitAttr(def, named, os);
    os << "}},\n";
  }
  os << "#endif // GET_KERNEL_OPS\n";
  return false;
}

mlir::GenRegistration
    genKernelOps("gen-kernel-ops",
                 "The runtime's kernel table from the nn op definitions",
                 emitKernelOps);

} // namespace
