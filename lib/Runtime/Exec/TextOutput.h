//===- TextOutput.h - JSON strings and atomic text files --------*- C++ -*-===//
//
// What the profile and trace writers share: JSON string literals, and a
// file written to a temporary name and renamed, so that a reader never
// sees half a file.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_EXEC_TEXTOUTPUT_H
#define HETERPS_LIB_RUNTIME_EXEC_TEXTOUTPUT_H

#include <string>

namespace heterps::runtime {

/// `s` as a JSON string literal, quotes included.
std::string jsonString(const std::string &s);

/// Writes `text` to `path` whole or not at all
/// (heterps/Support/AtomicFile.h); throws naming `what` and the file when
/// it cannot.
void writeTextFileAtomically(const std::string &path, const std::string &text,
                             const char *what);

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_EXEC_TEXTOUTPUT_H
