//===- TextOutput.cpp - JSON strings and atomic text files ----------------===//

#include "TextOutput.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Support/AtomicFile.h"

#include <cerrno>
#include <cstdio>

using namespace heterps;
using namespace heterps::runtime;

std::string runtime::jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

void runtime::writeTextFileAtomically(const std::string &path,
                                      const std::string &text,
                                      const char *what) {
  std::string error = writeFileAtomically(path, text);
  if (!error.empty())
    fail("writing ", what, ": ", error);
}
