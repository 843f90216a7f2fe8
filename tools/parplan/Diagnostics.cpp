//===- Diagnostics.cpp - one-line diagnostics for the CLI -----------------===//

#include "Diagnostics.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>
#include <set>
#include <string>

using namespace mlir;

namespace {

const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  return "error";
}

} // namespace

parplan::cli::OneLineDiagnostics::OneLineDiagnostics(MLIRContext &context)
    : handler(&context, [this](Diagnostic &diag) {
        // MLIR follows a failed shape rule's own error with a generic one
        // at the same place; the first says what is wrong.
        if (diag.getSeverity() == DiagnosticSeverity::Error &&
            StringRef(diag.str())
                .ends_with("op failed to infer returned types") &&
            lastErrorLocation == diag.getLocation())
          return success();
        if (diag.getSeverity() == DiagnosticSeverity::Error)
          lastErrorLocation = diag.getLocation();
        // A command that runs a pass several times (compile's trials, each
        // with its handler) says each warning once.
        static std::mutex warnedMutex;
        static std::set<std::string> warned;
        if (diag.getSeverity() == DiagnosticSeverity::Warning) {
          std::lock_guard<std::mutex> lock(warnedMutex);
          if (!warned.insert(diag.str()).second)
            return success();
        }
        auto print = [&] {
          if (auto fileLoc =
                  diag.getLocation()->findInstanceOf<FileLineColLoc>())
            llvm::errs() << fileLoc.getFilename().getValue() << ":"
                         << fileLoc.getLine() << ":" << fileLoc.getColumn();
          else
            llvm::errs() << diag.getLocation();
          llvm::errs() << ": " << severityName(diag.getSeverity()) << ": "
                       << diag.str() << "\n";
        };
        if (writer)
          writer(print);
        else
          print();
        return success();
      }) {}

OwningOpRef<ModuleOp> parplan::cli::parseIRFile(const std::string &path,
                                                MLIRContext &context) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (std::error_code error = buffer.getError()) {
    llvm::errs() << "parplan: error: cannot read '" << path
                 << "': " << error.message() << "\n";
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  OneLineDiagnostics diagnostics(context);
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}
