//===- FileIO.cpp - Reading (possibly gzip-compressed) files --------------===//
//
// Everything goes through zlib: gzread passes files that are not gzip through
// unchanged, so one code path reads plain and compressed data.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

static constexpr size_t kBufferBytes = 1 << 20;

/// Opens a regular file only: a device (/dev/zero) would be read without
/// end, and a FIFO would block the reader for good. The open does not
/// block on a FIFO (O_NONBLOCK), so it is refused at once.
static gzFile openGz(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file (a device, FIFO or directory); data "
               "must be read from files");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  errno = 0;
  gzFile f = gzdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    fail(path,
         ": cannot open: ", (errno ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(f, kBufferBytes);
  return f;
}

static size_t readGz(gzFile f, const std::string &path, char *dst,
                     size_t bytes) {
  int got = gzread(f, dst, static_cast<unsigned>(bytes));
  int code = Z_OK;
  const char *msg = gzerror(f, &code);
  if (got < 0)
    fail(path,
         ": read error: ", (code == Z_ERRNO ? std::strerror(errno) : msg));
  // A gzip stream cut short (a copy that stopped, a full disk) ends
  // without its trailer: zlib stops with Z_BUF_ERROR rather than failing
  // the read, which would pass the data read so far off as the file.
  if (got == 0 && code == Z_BUF_ERROR)
    fail(path, ": the gzip stream ends early (", msg,
         "): the file is truncated");
  return static_cast<size_t>(got);
}

LineReader::LineReader(std::string path)
    : filePath(std::move(path)), file(openGz(filePath)), buffer(kBufferBytes) {}

LineReader::~LineReader() { gzclose(file); }

bool LineReader::refill() {
  pos = 0;
  end = atEof ? 0 : readGz(file, filePath, buffer.data(), buffer.size());
  if (end == 0)
    atEof = true;
  return end != 0;
}

static std::string_view stripCR(std::string_view s) {
  if (!s.empty() && s.back() == '\r')
    s.remove_suffix(1);
  return s;
}

bool LineReader::next(std::string_view &out) {
  if (carryReturned) {
    carry.clear();
    carryReturned = false;
  }
  for (;;) {
    if (pos == end && !refill()) {
      // The last line of a file without a final newline.
      if (carry.empty())
        return false;
      ++line;
      carryReturned = true;
      out = stripCR(carry);
      return true;
    }
    const char *begin = buffer.data() + pos;
    const void *nl = std::memchr(begin, '\n', end - pos);
    if (!nl) {
      carry.append(begin, end - pos);
      pos = end;
      continue;
    }
    size_t len = static_cast<const char *>(nl) - begin;
    pos += len + 1;
    ++line;
    if (carry.empty()) {
      out = stripCR(std::string_view(begin, len));
    } else {
      carry.append(begin, len);
      carryReturned = true;
      out = stripCR(carry);
    }
    return true;
  }
}

void LineReader::rewind() {
  if (gzrewind(file) != 0)
    fail(filePath, ": cannot rewind");
  pos = end = 0;
  atEof = false;
  carry.clear();
  carryReturned = false;
  line = 0;
}

std::vector<uint8_t> data::readWholeFile(const std::string &path) {
  gzFile f = openGz(path);
  std::vector<uint8_t> bytes;
  size_t size = 0;
  try {
    for (;;) {
      if (bytes.size() - size < kBufferBytes)
        bytes.resize(std::max(bytes.size() * 2, size + kBufferBytes));
      size_t got = readGz(
          f, path, reinterpret_cast<char *>(bytes.data()) + size, kBufferBytes);
      if (!got)
        break;
      size += got;
    }
  } catch (...) {
    gzclose(f);
    throw;
  }
  gzclose(f);
  bytes.resize(size);
  return bytes;
}
