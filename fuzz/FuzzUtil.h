//===- FuzzUtil.h - What the fuzz targets share -----------------*- C++ -*-===//
//
// A private scratch directory per process (readers take paths, so inputs
// become files there) and a reader of the input's leading bytes.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_FUZZ_FUZZUTIL_H
#define HETERPS_FUZZ_FUZZUTIL_H

#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace heterps::fuzz {

/// A directory of this process under $TMPDIR (or /tmp), removed at exit.
inline const std::string &scratchDir() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/heterps-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    static std::string removeAtExit;
    removeAtExit = pattern;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(removeAtExit, ec);
    });
    return pattern;
  }();
  return dir;
}

/// Protobuf logs every malformed UTF-8 string it parses; inputs are full
/// of them.
inline void quietProtobuf() { google::protobuf::SetLogHandler(nullptr); }

/// Writes `bytes` to `path`, replacing it; aborts when it cannot (that is
/// the machine's problem, not a finding).
inline void writeFile(const std::string &path, const void *bytes, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char *>(bytes),
            static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "cannot write '%s'\n", path.c_str());
    std::abort();
  }
}

/// HETERPS_FUZZ_VERBOSE=1 makes the targets say what each input reached,
/// for checking that seeds get past the first checks.
inline bool verbose() {
  static const bool on = std::getenv("HETERPS_FUZZ_VERBOSE") != nullptr;
  return on;
}

/// Consumes the input from the front.
class InputReader {
public:
  InputReader(const uint8_t *data, size_t size) : data(data), size(size) {}

  uint8_t byte() {
    if (size == 0)
      return 0;
    --size;
    return *data++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<uint32_t>(byte()) << (8 * i);
    return v;
  }
  /// At most `n` bytes.
  std::string bytes(size_t n) {
    n = n < size ? n : size;
    std::string s(reinterpret_cast<const char *>(data), n);
    data += n;
    size -= n;
    return s;
  }
  std::string rest() { return bytes(size); }
  size_t left() const { return size; }

private:
  const uint8_t *data;
  size_t size;
};

} // namespace heterps::fuzz

#endif // HETERPS_FUZZ_FUZZUTIL_H
