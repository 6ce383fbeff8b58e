//===- Error.h - Runtime errors ---------------------------------*- C++ -*-===//
//
// The runtime reports bad input (a corrupt plan, a data file with a bad line,
// a shape that does not match) by throwing RuntimeError with a message that
// names the thing that is wrong; heterps-run prints it and exits non-zero.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_ERROR_H
#define HETERPS_RUNTIME_ERROR_H

#include <sstream>
#include <stdexcept>
#include <string>

namespace heterps::runtime {

class RuntimeError : public std::runtime_error {
public:
  explicit RuntimeError(const std::string &message)
      : std::runtime_error(message) {}
};

/// Builds a message with operator<< and throws it:
///   fail() << "table " << id << ": expected dim " << d;
class ErrorBuilder {
public:
  template <typename T> ErrorBuilder &operator<<(const T &v) {
    stream << v;
    return *this;
  }
  [[noreturn]] ~ErrorBuilder() noexcept(false) {
    throw RuntimeError(stream.str());
  }

private:
  std::ostringstream stream;
};

inline ErrorBuilder fail() { return ErrorBuilder(); }

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_ERROR_H
