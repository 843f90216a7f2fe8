//===- FuzzContract.h - What every fuzz target checks -----------*- C++ -*-===//
//
// The promise each reader makes about bad input (a one-line error that
// names the file, never a crash), checked on every input a fuzz target
// runs. A broken promise aborts, which libFuzzer records as a finding
// beside the input that broke it.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_TEST_FUZZ_FUZZCONTRACT_H
#define PARPLAN_TEST_FUZZ_FUZZCONTRACT_H

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

/// AddressSanitizer's defaults for every fuzz target, so that a finding
/// replays the same without ASAN_OPTIONS. LLVM's and MLIR's libraries are
/// Debian's, built without the sanitizer, while their headers poison and
/// unpoison allocator memory when the code including them is instrumented:
/// half of that bookkeeping runs, and reads of memory the other half
/// handed out look like use-after-poison. Manual poisoning is therefore
/// off (allow_user_poisoning=0); everything else ASan checks stays on.
/// Defined here, not inline: each fuzz target is one source file that
/// includes this header, and the runtime looks the symbol up.
extern "C" __attribute__((used, visibility("default"))) const char *
__asan_default_options() {
  return "allow_user_poisoning=0";
}

namespace parplan::fuzz {

/// Aborts with `what` when `holds` is false.
inline void require(bool holds, const char *what,
                    const std::string &detail = "") {
  if (holds)
    return;
  std::fprintf(stderr, "fuzz contract broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

/// A refusal as users see it: one non-empty line that begins with `name`
/// (the file's path, or the words that name it).
inline void requireOneLineError(const std::string &error,
                                std::string_view name) {
  require(!error.empty(), "a refused input gave no error");
  require(error.find('\n') == std::string::npos,
          "a refused input's error spans lines", error);
  if (!name.empty())
    require(std::string_view(error).find(name) != std::string_view::npos,
            "a refused input's error does not name the file", error);
}

} // namespace parplan::fuzz

#endif // PARPLAN_TEST_FUZZ_FUZZCONTRACT_H
