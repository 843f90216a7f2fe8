//===- SupportFilesTest.cpp - outputs written whole or not at all ---------===//

#include "parplan/Support/Files.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace parplan;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under the system's temporary one, removed at the end.
struct ScratchDirectory {
  fs::path path;
  ScratchDirectory() {
    path = fs::temp_directory_path() /
           ("parplan-files-test-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDirectory() { fs::remove_all(path); }
};

std::string contents(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Files in `directory` other than the lock file.
int entries(const fs::path &directory) {
  int count = 0;
  for (const auto &entry : fs::directory_iterator(directory))
    count += entry.path().filename() != ".parplan-lock";
  return count;
}

} // namespace

TEST_CASE("files: a write creates or replaces the whole file", "[support]") {
  ScratchDirectory scratch;
  std::string path = (scratch.path / "plan.pb").string();
  REQUIRE_FALSE(writeFileAtomically(path, "first"));
  CHECK(contents(path) == "first");
  REQUIRE_FALSE(writeFileAtomically(path, "second, longer"));
  CHECK(contents(path) == "second, longer");
  REQUIRE_FALSE(writeFileAtomically(path, ""));
  CHECK(contents(path).empty());
  // No temporary file is left beside it.
  CHECK(entries(scratch.path) == 1);
}

TEST_CASE("files: a write that fails leaves the previous file", "[support]") {
  ScratchDirectory scratch;
  std::string path = (scratch.path / "summary.json").string();
  REQUIRE_FALSE(writeFileAtomically(path, "previous"));
  SECTION("the disk fills up partway") {
    // A file size limit makes write() fail with EFBIG after 1 KiB, as a
    // full disk fails it with ENOSPC.
    struct rlimit saved;
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    void (*previousHandler)(int) = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved;
    small.rlim_cur = 1024;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::optional<std::string> problem =
        writeFileAtomically(path, std::string(64 * 1024, 'x'));
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previousHandler);
    REQUIRE(problem);
    CHECK(problem->find("cannot write '" + path + "': File too large") == 0);
  }
  SECTION("the directory is gone") {
    std::string missing = (scratch.path / "missing" / "summary.json").string();
    std::optional<std::string> problem = writeFileAtomically(missing, "x");
    REQUIRE(problem);
    CHECK(*problem ==
          "cannot write '" + missing + "': No such file or directory");
  }
  CHECK(contents(path) == "previous");
  CHECK(entries(scratch.path) == 1);
}

TEST_CASE("files: a device is written in place, not replaced", "[support]") {
  REQUIRE_FALSE(writeFileAtomically("/dev/null", "discarded"));
  struct stat status;
  REQUIRE(::stat("/dev/null", &status) == 0);
  CHECK(S_ISCHR(status.st_mode));
  std::optional<std::string> problem = writeFileAtomically("/dev/full", "x");
  REQUIRE(problem);
  CHECK(*problem == "cannot write '/dev/full': No space left on device");
}

TEST_CASE("files: one writer at a time holds a directory's lock", "[support]") {
  ScratchDirectory scratch;
  std::string error;
  std::optional<DirectoryLock> first =
      DirectoryLock::acquire(scratch.path.string(), error);
  REQUIRE(first);
  CHECK_FALSE(DirectoryLock::tryAcquire(scratch.path.string(), error));
  CHECK(error ==
        "'" + scratch.path.string() + "' is being written by another process");
  first.reset();
  CHECK(DirectoryLock::tryAcquire(scratch.path.string(), error));
  CHECK_FALSE(
      DirectoryLock::acquire((scratch.path / "missing").string(), error));
  CHECK(error.find("cannot lock '") == 0);
}

TEST_CASE("files: several files are replaced together or not at all",
          "[support]") {
  ScratchDirectory scratch;
  std::string plan = (scratch.path / "plan.pb").string();
  std::string summary = (scratch.path / "summary.json").string();
  REQUIRE_FALSE(writeFilesAtomically({{plan, "plan 1"}, {summary, "sum 1"}}));
  REQUIRE_FALSE(writeFilesAtomically({{plan, "plan 2"}, {summary, "sum 2"}}));
  CHECK(contents(plan) == "plan 2");
  CHECK(contents(summary) == "sum 2");
  // The second file cannot be written: the first keeps its old contents
  // too, and no temporary file stays.
  std::string missing = (scratch.path / "missing" / "summary.json").string();
  REQUIRE(writeFilesAtomically({{plan, "plan 3"}, {missing, "sum 3"}}));
  CHECK(contents(plan) == "plan 2");
  CHECK(entries(scratch.path) == 2);
}

TEST_CASE("files: a link's target is replaced and keeps its permissions",
          "[support]") {
  ScratchDirectory scratch;
  fs::path target = scratch.path / "target.json";
  fs::path link = scratch.path / "link.json";
  REQUIRE_FALSE(writeFileAtomically(target.string(), "old"));
  fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(target, link);
  REQUIRE_FALSE(writeFileAtomically(link.string(), "new"));
  CHECK(fs::is_symlink(link));
  CHECK(contents(target) == "new");
  CHECK(fs::status(target).permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write));
}
