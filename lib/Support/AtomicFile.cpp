//===- AtomicFile.cpp - Files that are replaced whole or not at all -------===//

#include "heterps/Support/AtomicFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace heterps;

namespace {

std::string failure(const std::string &what, int error) {
  return what + ": " + (error ? std::strerror(error) : "the writer failed");
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

bool heterps::writeAll(int fd, const void *data, size_t size) {
  const char *bytes = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

std::string
heterps::writeFileAtomically(const std::string &path,
                             const std::function<bool(int fd)> &write) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  // O_NOFOLLOW: a link planted at the temporary name is not written through.
  // O_RDWR: a writer may read back what it wrote (a checksum of it).
  int fd = ::open(tmp.c_str(),
                  O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return failure("cannot create '" + tmp + "'", errno);
  // Each step's reason, then the temporary file removed.
  auto abandon = [&](const std::string &what, int error, bool open) {
    if (open)
      ::close(fd);
    ::unlink(tmp.c_str());
    return failure(what, error);
  };
  errno = 0;
  if (!write(fd))
    return abandon("cannot write '" + tmp + "'", errno, true);
  if (::fsync(fd) != 0)
    return abandon("cannot flush '" + tmp + "'", errno, true);
  if (::close(fd) != 0)
    return abandon("cannot close '" + tmp + "'", errno, false);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return abandon("cannot rename '" + tmp + "' to '" + path + "'", errno,
                   false);
  // The rename lasts once the directory's entry is on the disk.
  int dir =
      ::open(directoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return {};
}

std::string heterps::writeFileAtomically(const std::string &path,
                                         std::string_view data) {
  return writeFileAtomically(
      path, [&](int fd) { return writeAll(fd, data.data(), data.size()); });
}

bool heterps::isAtomicFileTemporary(std::string_view name) {
  size_t at = name.rfind(".tmp.");
  if (at == std::string_view::npos || at + 5 == name.size())
    return false;
  for (char c : name.substr(at + 5))
    if (c < '0' || c > '9')
      return false;
  return true;
}

std::string heterps::readSmallFile(const std::string &path, size_t maxBytes,
                                   std::string &data) {
  // O_NONBLOCK: opening a FIFO without a writer would wait for one.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return failure("cannot open '" + path + "'", errno);
  struct stat st;
  std::string error;
  if (::fstat(fd, &st) != 0)
    error = failure("cannot inspect '" + path + "'", errno);
  else if (!S_ISREG(st.st_mode))
    error = "'" + path +
            "' is not a regular file (a FIFO, device or "
            "directory)";
  else if (static_cast<uint64_t>(st.st_size) > maxBytes)
    error =
        "'" + path + "' is larger than " + std::to_string(maxBytes) + " bytes";
  data.clear();
  // Read to the end rather than st_size bytes: the file may grow or
  // shrink meanwhile; the limit holds either way.
  char buffer[1 << 14];
  while (error.empty()) {
    ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      error = failure("cannot read '" + path + "'", errno);
    else if (got == 0)
      break;
    else if (data.size() + static_cast<size_t>(got) > maxBytes)
      error = "'" + path + "' is larger than " + std::to_string(maxBytes) +
              " bytes";
    else
      data.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return error;
}
