//===- JSONReader.cpp - Duplicate keys in JSON text -----------------------===//
//
// llvm::json keeps one value of a key that an object repeats, so a cluster
// file with "units" twice would be read as if it had one of them. The text
// is scanned again for repeated keys after it parsed.
//
//===----------------------------------------------------------------------===//

#include "JSONReader.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ConvertUTF.h"

using namespace heterps::schedule;

namespace {

/// Where the scanner is: an object (its keys so far) or an array (its
/// index), and the path to it.
struct Frame {
  bool object;
  std::string path;
  llvm::StringSet<> keys;
  size_t index = 0;
  std::string pendingKey;
};

/// Reads the string literal starting at text[at] (the opening quote) into
/// `out`, decoding escapes; returns the index after the closing quote. The
/// text has parsed, so the literal is well formed.
size_t readString(llvm::StringRef text, size_t at, std::string &out) {
  out.clear();
  size_t i = at + 1;
  while (i < text.size() && text[i] != '"') {
    if (text[i] != '\\') {
      out += text[i++];
      continue;
    }
    char c = i + 1 < text.size() ? text[i + 1] : '\0';
    i += 2;
    switch (c) {
    case 'b':
      out += '\b';
      break;
    case 'f':
      out += '\f';
      break;
    case 'n':
      out += '\n';
      break;
    case 'r':
      out += '\r';
      break;
    case 't':
      out += '\t';
      break;
    case 'u': {
      unsigned code = 0;
      if (i + 4 <= text.size() && !text.substr(i, 4).getAsInteger(16, code)) {
        i += 4;
        // A surrogate pair is one code point.
        unsigned low = 0;
        if (code >= 0xD800 && code < 0xDC00 && i + 6 <= text.size() &&
            text[i] == '\\' && text[i + 1] == 'u' &&
            !text.substr(i + 2, 4).getAsInteger(16, low) && low >= 0xDC00 &&
            low < 0xE000) {
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          i += 6;
        }
        char utf8[UNI_MAX_UTF8_BYTES_PER_CODE_POINT];
        char *end = utf8;
        if (llvm::ConvertCodePointToUTF8(code, end))
          out.append(utf8, end);
      }
      break;
    }
    default: // '"', '\\', '/'
      out += c;
    }
  }
  return i + 1;
}

std::string quotedKey(const std::string &key) {
  bool plain = !key.empty() && !llvm::isDigit(key[0]);
  for (char c : key)
    plain &= llvm::isAlnum(c) || c == '_';
  return plain ? "." + key : "['" + key + "']";
}

} // namespace

llvm::Error JSONReader::checkDuplicateKeys(llvm::StringRef text) {
  std::vector<Frame> stack;
  std::string literal;
  // The path of the value that starts next.
  auto valuePath = [&]() -> std::string {
    if (stack.empty())
      return "$";
    Frame &f = stack.back();
    return f.object ? f.path + quotedKey(f.pendingKey)
                    : f.path + "[" + std::to_string(f.index) + "]";
  };
  // In an object, a string is a key when no key is pending.
  bool expectKey = false;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '{' || c == '[') {
      Frame f;
      f.object = c == '{';
      f.path = valuePath();
      stack.push_back(std::move(f));
      expectKey = c == '{';
      ++i;
    } else if (c == '}' || c == ']') {
      stack.pop_back();
      expectKey = false;
      ++i;
    } else if (c == ',') {
      if (!stack.empty()) {
        if (stack.back().object)
          expectKey = true;
        else
          ++stack.back().index;
      }
      ++i;
    } else if (c == '"') {
      size_t next = readString(text, i, literal);
      if (expectKey && !stack.empty() && stack.back().object) {
        Frame &f = stack.back();
        if (!f.keys.insert(literal).second) {
          size_t line = 1 + text.take_front(i).count('\n');
          return error(f.path, "the key '" + literal +
                                   "' appears twice (line " +
                                   std::to_string(line) + ")");
        }
        f.pendingKey = literal;
        expectKey = false;
      }
      i = next;
    } else {
      ++i;
    }
  }
  return llvm::Error::success();
}
