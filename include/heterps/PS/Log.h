//===- Log.h - The PS server's log ------------------------------*- C++ -*-===//
//
// A server's log lines carry a UTC timestamp and a level:
//
//   2026-12-03T14:40:01.123Z INFO PS server 0 of 2 serving on port 7000
//
// They go to standard output, or with setLogFile to a file (appended), and
// gRPC's own messages go through the same log.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_LOG_H
#define HETERPS_PS_LOG_H

#include <string>

namespace heterps::ps {

enum class LogLevel { Info, Warning, Error };

/// Appends the log to `path` from now on; throws naming it when it cannot
/// be opened.
void setLogFile(const std::string &path);
/// Writes one line (thread-safe).
void log(LogLevel level, const std::string &message);
/// Sends gRPC's messages (its gpr_log) to log(), at their level.
void routeGrpcLog();

} // namespace heterps::ps

#endif // HETERPS_PS_LOG_H
