//===- TextOutput.cpp - JSON strings and atomic text files ----------------===//

#include "TextOutput.h"

#include "heterps/Runtime/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

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
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      int err = errno;
      std::remove(tmp.c_str());
      fail("cannot write ", what, " '", tmp, "': ", std::strerror(err));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    fail("cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
  }
}
