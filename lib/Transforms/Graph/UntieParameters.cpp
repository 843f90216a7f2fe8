//===- UntieParameters.cpp - parameters shared by layers ------------------===//
//
// An initializer that several layers read is one tensor to the optimizer:
// the layers' updates all land on it. Exporters create such ties silently
// (equal initializers merged), so they are named, and undone on request by
// giving each layer a copy that loads the same bytes.
//
//===----------------------------------------------------------------------===//

#include "parplan/Dialect/NN/NNOps.h"
#include "parplan/Dialect/NN/NNUtils.h"
#include "parplan/Transforms/Graph/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

#include <map>
#include <string>
#include <vector>

namespace parplan {
#define GEN_PASS_DEF_NNUNTIEPARAMETERS
#include "parplan/Transforms/Graph/Passes.h.inc"
} // namespace parplan

using namespace mlir;
using namespace parplan::nn;

namespace {

/// The uses of a parameter by tie group (useGroup), in the order of each
/// group's first use.
using UsesByLayer = llvm::MapVector<std::string, SmallVector<OpOperand *>,
                                    std::map<std::string, unsigned>>;

/// Which tie a use is part of: the layer of the op reading it (its node
/// name up to the last '/', or the whole name, quoted), and whether it is a
/// batch norm's running statistic there: the step updates those itself, so
/// they cannot share a tensor with anything else (a zero bias merged with
/// a zero running mean is the exporters' commonest tie).
std::string useGroup(OpOperand &use) {
  Operation *op = use.getOwner();
  std::string name = locationName(op);
  size_t slash = name.rfind('/');
  std::string layer =
      slash == std::string::npos || slash == 0 ? name : name.substr(0, slash);
  layer = layer.empty() ? std::string("(unnamed)") : "'" + layer + "'";
  if (isa<BatchNormOp>(op) && use.getOperandNumber() >= 3)
    layer += " (running statistic)";
  return layer;
}

struct NNUntieParametersPass
    : parplan::impl::NNUntieParametersBase<NNUntieParametersPass> {
  using NNUntieParametersBase::NNUntieParametersBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    std::vector<llvm::GlobPattern> frozenGlobs;
    SmallVector<StringRef> patterns;
    StringRef(frozen).split(patterns, ',', -1, /*KeepEmpty=*/false);
    for (StringRef pattern : patterns)
      if (auto glob = llvm::GlobPattern::create(pattern.trim()))
        frozenGlobs.push_back(std::move(*glob));
      else
        llvm::consumeError(glob.takeError()); // nn-autodiff reports it
    llvm::StringSet<> requested;
    for (const std::string &name : untie)
      requested.insert(name);

    llvm::StringSet<> seen;
    for (ParamOp param :
         llvm::make_early_inc_range(function.getOps<ParamOp>())) {
      StringRef name = param.getName();
      seen.insert(name);
      auto type = param.getType();
      if (!isa<FloatType>(type.getElementType())) {
        if (requested.contains(name)) {
          param.emitError() << "--untie " << name << ": '" << name << "' holds "
                            << type.getElementType()
                            << " values, which are not trained: nothing to "
                               "untie";
          return signalPassFailure();
        }
        continue;
      }
      // The uses of each place, in program order of the places' first use.
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : param.getResult().getUses())
        uses.push_back(&use);
      llvm::sort(uses, [](OpOperand *a, OpOperand *b) {
        return a->getOwner() != b->getOwner()
                   ? a->getOwner()->isBeforeInBlock(b->getOwner())
                   : a->getOperandNumber() < b->getOperandNumber();
      });
      UsesByLayer layers;
      for (OpOperand *use : uses)
        layers[useGroup(*use)].push_back(use);
      if (layers.size() < 2) {
        if (requested.contains(name)) {
          param.emitError() << "--untie " << name << ": '" << name
                            << "' is read in one place only, nothing to "
                               "untie";
          return signalPassFailure();
        }
        continue;
      }
      if (requested.contains(name)) {
        if (type.getRank() == 0) {
          param.emitError() << "--untie " << name
                            << ": a scalar parameter cannot be untied (its "
                               "copies would have no dimension to be a part "
                               "along)";
          return signalPassFailure();
        }
        untieParam(param, layers);
        continue;
      }
      if (llvm::any_of(frozenGlobs, [&](const llvm::GlobPattern &glob) {
            return glob.match(name);
          }))
        continue;
      std::string listed;
      unsigned shown = 0;
      for (auto &entry : layers) {
        if (shown == 3) {
          listed += ", ...";
          break;
        }
        listed += (shown++ ? ", " : "") + entry.first;
      }
      // At the model's location: the line names the file, the parameter
      // and the places (layers, running statistics) reading it.
      emitWarning(function.getLoc())
          << "parameter '" << name << "' is read in " << layers.size()
          << " places (" << listed
          << ") and will be trained as one tied parameter "
             "(exporters merge initializers of equal "
             "values); --untie "
          << name << " gives each place its own copy, --frozen " << name
          << " trains it not at all (a buffer such as a mask)";
    }
    for (const std::string &name : untie)
      if (!seen.contains(name)) {
        function.emitError() << "--untie " << name
                             << ": the model has no parameter '" << name << "'";
        return signalPassFailure();
      }
  }

private:
  /// The first layer keeps `param`; each other reads a copy.
  void untieParam(ParamOp param, UsesByLayer &layers) {
    OpBuilder b(param);
    b.setInsertionPointAfter(param);
    auto type = param.getType();
    // A part of the stored tensor: the whole of it, or the same block when
    // the parameter already is one.
    StringAttr stored =
        param.getPartOfAttr() ? param.getPartOfAttr() : param.getNameAttr();
    DenseI64ArrayAttr part =
        param.getPartAttr()
            ? param.getPartAttr()
            : b.getDenseI64ArrayAttr({0, 0, type.getDimSize(0)});
    unsigned copy = 0;
    for (auto &entry : llvm::drop_begin(layers)) {
      std::string name =
          param.getName().str() + ".untied." + std::to_string(++copy);
      auto copyOp =
          ParamOp::create(b, param.getLoc(), type, b.getStringAttr(name),
                          param.getSourceAttr(), stored, part);
      for (OpOperand *use : entry.second)
        use->set(copyOp.getResult());
    }
  }
};

} // namespace
