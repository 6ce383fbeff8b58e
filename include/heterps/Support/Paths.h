//===- Paths.h - The path a user's directory argument names -----*- C++ -*-===//
//
// `--save=run/` and `--save=run` name one directory; taken as written,
// "run/" has an empty file name, so its parent is "run" itself and a
// sibling made by appending to it ("run/.tmp") lands inside it.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_PATHS_H
#define HETERPS_SUPPORT_PATHS_H

#include <filesystem>
#include <string>

namespace heterps {

/// The absolute, normal form of `path` without a trailing separator.
inline std::filesystem::path directoryPath(const std::string &path) {
  std::error_code ec;
  std::filesystem::path full =
      std::filesystem::absolute(path, ec).lexically_normal();
  if (!full.has_filename())
    full = full.parent_path();
  return full;
}

} // namespace heterps

#endif // HETERPS_SUPPORT_PATHS_H
