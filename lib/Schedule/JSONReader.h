//===- JSONReader.h - Errors that name the file and the JSON path -*- C++ -*-=//
//
// Shared by the readers of cluster files and profile tables: every error
// says which file, where in it (a JSONPath such as $.resources[1].units) and
// what was expected. A key the format does not have is an error naming the
// nearest one: a misspelled optional key would otherwise be ignored.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_SCHEDULE_JSONREADER_H
#define HETERPS_LIB_SCHEDULE_JSONREADER_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace heterps {
namespace schedule {

/// Reads the file at `path` (a `what`, for the error message).
inline llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readTextFile(llvm::StringRef path, llvm::StringRef what) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read %s '%s': %s",
                                   what.str().c_str(), path.str().c_str(),
                                   buffer.getError().message().c_str());
  return std::move(*buffer);
}

class JSONReader {
public:
  explicit JSONReader(llvm::StringRef fileName) : fileName(fileName.str()) {}

  llvm::Error error(const std::string &path, const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fileName + ": " + path + ": " + message);
  }

  /// Parses `text`; a syntax error names the line and column, a key that
  /// an object repeats its path and line.
  llvm::Expected<llvm::json::Value> parse(llvm::StringRef text) {
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
    if (!value)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          fileName + ": not valid JSON: " + llvm::toString(value.takeError()));
    if (llvm::Error e = checkDuplicateKeys(text))
      return e;
    return value;
  }

  /// An error for the first key that an object of `text` (valid JSON)
  /// repeats.
  llvm::Error checkDuplicateKeys(llvm::StringRef text);

  /// Reads the number `key` of `object`; it must be finite and non-negative,
  /// or positive when `positive`.
  llvm::Error number(const llvm::json::Object &object, llvm::StringRef key,
                     const std::string &path, double &out, bool positive) {
    std::string where = path + "." + key.str();
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return error(where, "missing");
    std::optional<double> number = value->getAsNumber();
    if (!number || !std::isfinite(*number))
      return error(where, "expected a number");
    if (positive ? !(*number > 0) : *number < 0)
      return error(where, std::string("expected a ") +
                              (positive ? "positive" : "non-negative") +
                              " number, got " + std::to_string(*number));
    out = *number;
    return llvm::Error::success();
  }

  /// A positive whole number `key` of `object`, at most `max` (a count: of
  /// units, of samples in a batch).
  llvm::Error count(const llvm::json::Object &object, llvm::StringRef key,
                    const std::string &path, int64_t &out,
                    int64_t max = int64_t(1) << 40) {
    double number = 0;
    if (llvm::Error e = this->number(object, key, path, number, true))
      return e;
    std::string where = path + "." + key.str();
    if (number != std::floor(number))
      return error(where,
                   "expected a whole number, got " + std::to_string(number));
    if (number > static_cast<double>(max))
      return error(where, "expected at most " + std::to_string(max) + ", got " +
                              std::to_string(number));
    out = static_cast<int64_t>(number);
    return llvm::Error::success();
  }

  /// Fails on the first key of `object` (at `path`) that is not one of
  /// `known`, naming the nearest known key.
  llvm::Error knownKeys(const llvm::json::Object &object,
                        const std::string &path,
                        llvm::ArrayRef<llvm::StringRef> known) {
    // In key order, so that the error does not depend on hashing.
    std::vector<std::string> keys;
    for (const auto &entry : object)
      keys.push_back(entry.first.str());
    std::sort(keys.begin(), keys.end());
    for (const std::string &key : keys) {
      if (llvm::is_contained(known, key))
        continue;
      llvm::StringRef nearest;
      unsigned distance = ~0u;
      for (llvm::StringRef candidate : known) {
        unsigned d = llvm::StringRef(key).edit_distance(candidate, true);
        if (d < distance) {
          distance = d;
          nearest = candidate;
        }
      }
      std::string message = "unknown key";
      // Close enough to be a typo, and not a rewrite of the whole key.
      if (distance <= std::max<size_t>(2, key.size() / 3) &&
          distance < key.size())
        message += "; did you mean '" + nearest.str() + "'?";
      message += " (known: " + llvm::join(known, ", ") + ")";
      return error(path + "." + key, message);
    }
    return llvm::Error::success();
  }

private:
  std::string fileName;
};

} // namespace schedule
} // namespace heterps

#endif // HETERPS_LIB_SCHEDULE_JSONREADER_H
