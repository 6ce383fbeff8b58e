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

/// Throws a RuntimeError whose message is `parts` written one after the
/// other with operator<<:
///   fail("table ", id, ": expected dim ", d);
/// The message is complete before anything is thrown.
template <typename... Parts> [[noreturn]] void fail(const Parts &...parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw RuntimeError(message.str());
}

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_ERROR_H
