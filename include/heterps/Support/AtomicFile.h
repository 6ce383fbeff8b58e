//===- AtomicFile.h - Files written and read whole --------------*- C++ -*-===//
//
// Plans, checkpoints, text outputs and port files are read by other
// processes, possibly while they are written or after a crash. Each is
// written into a temporary file beside it (`PATH.tmp.PID`), flushed to the
// disk, renamed over PATH and its directory flushed: a reader sees the old
// file or the new one, never a part, and a failed write leaves no temporary
// file behind. Small files (tokens, certificates, lists) are read whole
// here too, refusing what is not a regular file before it can block the
// reader (a FIFO) or never end (a device). This module depends on nothing
// but POSIX.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_ATOMICFILE_H
#define HETERPS_SUPPORT_ATOMICFILE_H

#include <functional>
#include <string>
#include <string_view>

namespace heterps {

/// Writes `data` to `path` as the banner says. Returns an empty string, or
/// what failed: the step, the file and the system's reason.
std::string writeFileAtomically(const std::string &path, std::string_view data);

/// The same, the contents written by `write` into the open temporary
/// file's descriptor (open for reading too); `write` returns false when it
/// failed (with errno set, or 0 for a failure of its own).
std::string writeFileAtomically(const std::string &path,
                                const std::function<bool(int fd)> &write);

/// Writes all of `size` bytes at `data` to `fd`, through short writes and
/// interruptions; false with errno set when a write fails.
bool writeAll(int fd, const void *data, size_t size);

/// Whether `name` is the name of one of writeFileAtomically's temporary
/// files (a directory's readers skip them).
bool isAtomicFileTemporary(std::string_view name);

/// Reads the whole of `path` into `data`: a regular file (symbolic links
/// followed) of at most `maxBytes` bytes. Returns an empty string, or what
/// is wrong: the file and the system's reason, not a regular file, or too
/// large.
std::string readSmallFile(const std::string &path, size_t maxBytes,
                          std::string &data);

} // namespace heterps

#endif // HETERPS_SUPPORT_ATOMICFILE_H
