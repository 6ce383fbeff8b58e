//===- Log.cpp - The PS server's log --------------------------------------===//

#include "heterps/PS/Log.h"

#include "heterps/Runtime/Error.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <grpc/support/log.h>
#include <mutex>

using namespace heterps;

namespace {
std::mutex logMutex;
FILE *logStream = nullptr;

const char *levelName(ps::LogLevel level) {
  switch (level) {
  case ps::LogLevel::Info:
    return "INFO";
  case ps::LogLevel::Warning:
    return "WARNING";
  case ps::LogLevel::Error:
    return "ERROR";
  }
  return "INFO";
}

void grpcLog(gpr_log_func_args *args) {
  ps::LogLevel level =
      args->severity == GPR_LOG_SEVERITY_ERROR  ? ps::LogLevel::Error
      : args->severity == GPR_LOG_SEVERITY_INFO ? ps::LogLevel::Info
                                                : ps::LogLevel::Warning;
  std::string file = args->file ? args->file : "";
  size_t slash = file.rfind('/');
  if (slash != std::string::npos)
    file = file.substr(slash + 1);
  ps::log(level, "grpc " + file + ":" + std::to_string(args->line) + ": " +
                     (args->message ? args->message : ""));
}
} // namespace

void ps::setLogFile(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "a");
  if (!f)
    runtime::fail("log file '", path, "' cannot be opened");
  std::lock_guard<std::mutex> lock(logMutex);
  if (logStream)
    std::fclose(logStream);
  logStream = f;
}

void ps::log(LogLevel level, const std::string &message) {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  int millis =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                           now.time_since_epoch())
                           .count() %
                       1000);
  std::tm utc;
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
  std::lock_guard<std::mutex> lock(logMutex);
  FILE *out = logStream ? logStream : stdout;
  std::fprintf(out, "%s.%03dZ %s %s\n", stamp, millis, levelName(level),
               message.c_str());
  std::fflush(out);
}

void ps::routeGrpcLog() { gpr_set_log_function(grpcLog); }
