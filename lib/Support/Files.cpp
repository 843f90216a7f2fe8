//===- Files.cpp - writing outputs that are whole or absent ---------------===//

#include "parplan/Support/Files.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace parplan {

namespace {

std::string reason(const std::string &what, const std::string &path,
                   int error) {
  return "cannot " + what + " '" + path + "': " + std::strerror(error);
}

/// Writes all of `bytes` to `fd`; errno's value on failure, else 0.
int writeAll(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote <= 0)
      return wrote < 0 ? errno : EIO;
    done += static_cast<size_t>(wrote);
  }
  return 0;
}

} // namespace

std::optional<std::string> writeFilesAtomically(
    const std::vector<std::pair<std::string, std::string_view>> &files) {
  // Each file's data goes to a temporary file beside it first; only when
  // every one is on disk are they renamed, back to back.
  std::vector<std::pair<std::string, std::string>> renames;
  auto removeTemporaries = [&] {
    for (const auto &[temporary, target] : renames)
      ::unlink(temporary.c_str());
  };
  for (const auto &[given, bytes] : files) {
    // A symbolic link's target is replaced, not the link.
    std::string path = given;
    if (char *resolved = ::realpath(given.c_str(), nullptr)) {
      path = resolved;
      std::free(resolved);
    }
    // A path that is not a regular file (/dev/null, a pipe) is written in
    // place: renaming over it would replace the device.
    struct stat existing;
    bool exists = ::stat(path.c_str(), &existing) == 0;
    if (exists && !S_ISREG(existing.st_mode)) {
      int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
      int error = fd < 0 ? errno : writeAll(fd, bytes);
      if (fd >= 0 && ::close(fd) != 0 && error == 0)
        error = errno;
      if (error != 0) {
        removeTemporaries();
        return reason("write", given, error);
      }
      continue;
    }
    std::string temporary = path + ".tmp-" + std::to_string(::getpid());
    int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                    0644);
    if (fd < 0) {
      removeTemporaries();
      return reason("write", given, errno);
    }
    renames.emplace_back(temporary, path);
    // The data reaches the disk before the name does: a crash after the
    // rename cannot leave an empty file under the old name. A replaced
    // file keeps its permissions.
    int error = writeAll(fd, bytes);
    if (error == 0 && exists && ::fchmod(fd, existing.st_mode & 07777) != 0)
      error = errno;
    if (error == 0 && ::fsync(fd) != 0)
      error = errno;
    if (::close(fd) != 0 && error == 0)
      error = errno;
    if (error != 0) {
      removeTemporaries();
      return reason("write", given, error);
    }
  }
  for (size_t i = 0; i < renames.size(); ++i)
    if (::rename(renames[i].first.c_str(), renames[i].second.c_str()) != 0) {
      int error = errno;
      for (size_t j = i; j < renames.size(); ++j)
        ::unlink(renames[j].first.c_str());
      return reason("replace", renames[i].second, error);
    }
  return std::nullopt;
}

std::optional<std::string> writeFileAtomically(const std::string &path,
                                               std::string_view bytes) {
  return writeFilesAtomically({{path, bytes}});
}

std::optional<DirectoryLock> DirectoryLock::lock(const std::string &directory,
                                                 bool wait,
                                                 std::string &error) {
  std::string path = directory + "/.parplan-lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = reason("lock", path, errno);
    return std::nullopt;
  }
  while (::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
    if (errno == EINTR)
      continue;
    int cause = errno;
    ::close(fd);
    error = cause == EWOULDBLOCK
                ? "'" + directory + "' is being written by another process"
                : reason("lock", path, cause);
    return std::nullopt;
  }
  return DirectoryLock(fd);
}

std::optional<DirectoryLock>
DirectoryLock::acquire(const std::string &directory, std::string &error) {
  return lock(directory, /*wait=*/true, error);
}

std::optional<DirectoryLock>
DirectoryLock::tryAcquire(const std::string &directory, std::string &error) {
  return lock(directory, /*wait=*/false, error);
}

DirectoryLock::~DirectoryLock() {
  if (fd >= 0)
    ::close(fd); // closing the descriptor releases the flock
}

} // namespace parplan
