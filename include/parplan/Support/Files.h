//===- Files.h - writing outputs that are whole or absent -------*- C++ -*-===//
//
// A compile that fails or is interrupted while writing must leave the
// previous outputs as they were, and two compiles into one directory must
// not leave one's plan beside the other's summary. Outputs are written to a
// temporary file beside their path and renamed over it (rename replaces a
// file atomically on POSIX file systems), under an advisory lock on the
// directory held while a set of files is replaced.
//
//===----------------------------------------------------------------------===//

#ifndef PARPLAN_SUPPORT_FILES_H
#define PARPLAN_SUPPORT_FILES_H

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parplan {

/// Writes `bytes` to `path` so that the file holds either what it held
/// before or all of `bytes`: into `path.tmp-PID`, flushed to disk, then
/// renamed over `path` (a symbolic link's target; the file's permissions
/// kept); the temporary file is removed on failure. A path that is not a
/// regular file (/dev/null) is written in place. Returns the reason
/// ("cannot write 'PATH': No space left on device") on failure.
std::optional<std::string> writeFileAtomically(const std::string &path,
                                               std::string_view bytes);

/// The same for several files, replaced together: every temporary file is
/// written and flushed before the first rename, so a failure while writing
/// leaves every previous file.
std::optional<std::string> writeFilesAtomically(
    const std::vector<std::pair<std::string, std::string_view>> &files);

/// An exclusive advisory lock (flock) on DIRECTORY/.parplan-lock, held
/// until the object is destroyed: writers of one directory's outputs take
/// it so that their files are replaced together.
class DirectoryLock {
public:
  /// Waits for the lock; on failure (the lock file cannot be made) returns
  /// none and sets `error`.
  static std::optional<DirectoryLock> acquire(const std::string &directory,
                                              std::string &error);
  /// The same without waiting: none, with `error` saying so, when another
  /// process holds it.
  static std::optional<DirectoryLock> tryAcquire(const std::string &directory,
                                                 std::string &error);
  DirectoryLock(DirectoryLock &&other) noexcept : fd(other.fd) {
    other.fd = -1;
  }
  DirectoryLock(const DirectoryLock &) = delete;
  DirectoryLock &operator=(const DirectoryLock &) = delete;
  DirectoryLock &operator=(DirectoryLock &&) = delete;
  ~DirectoryLock();

private:
  explicit DirectoryLock(int fd) : fd(fd) {}
  static std::optional<DirectoryLock> lock(const std::string &directory,
                                           bool wait, std::string &error);
  int fd = -1;
};

} // namespace parplan

#endif // PARPLAN_SUPPORT_FILES_H
