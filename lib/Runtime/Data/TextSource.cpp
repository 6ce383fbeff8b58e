//===- TextSource.cpp - Readers of one example per line -------------------===//

#include "Readers.h"

#include <charconv>
#include <cmath>
#include <limits>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

std::string_view data::trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' ||
                        s.front() == '\r' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' ||
                        s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

std::string data::quote(std::string_view s) {
  constexpr size_t kMax = 40;
  if (s.size() > kMax)
    return "'" + std::string(s.substr(0, kMax)) + "...'";
  return "'" + std::string(s) + "'";
}

// from_chars rejects a leading '+', which libsvm labels ("+1") use.
static std::string_view stripPlus(std::string_view s) {
  if (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+')
    s.remove_prefix(1);
  return s;
}

bool data::parseInt64(std::string_view s, int64_t &value) {
  s = stripPlus(s);
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && p == s.data() + s.size();
}

bool data::parseDouble(std::string_view s, double &value) {
  s = stripPlus(s);
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && p == s.data() + s.size() &&
         std::abs(value) <= std::numeric_limits<float>::max();
}

TextSource::TextSource(const DataOptions &options, std::string format)
    : options(options), format(std::move(format)), lines(options.path) {}

std::string TextSource::describe() const { return format + " " + options.path; }

std::string TextSource::where() const {
  return lines.path() + ":" + std::to_string(lines.lineNumber()) + ": ";
}

void TextSource::storeLabel(Batch &batch, int64_t row, std::string_view text,
                            bool minusOneIsZero) {
  double v;
  if (!parseDouble(text, v))
    fail(where(), format,
         ": expected a finite number (f32) as the label, found ", quote(text));
  if (minusOneIsZero && v == -1.0)
    v = 0.0;
  if (!options.classLabels) {
    if (options.unitLabels && !(v >= 0 && v <= 1))
      fail(where(), format,
           ": expected a label in [0, 1] (the plan's loss is bce), found ",
           quote(text));
    batch.label.as<float>()[row] = static_cast<float>(v);
    return;
  }
  if (v != std::floor(v) || v < 0 || v >= options.numClasses)
    fail(where(), format, ": expected a class label in [0, ",
         options.numClasses, "), found ", quote(text));
  batch.label.as<int64_t>()[row] = static_cast<int64_t>(v);
}

bool TextSource::next(Batch &batch, int64_t batchSize) {
  if (batchSize <= 0)
    fail(describe(), ": batch size must be positive, got ", batchSize);
  resizeBatch(batch, std::min(batchSize, kNaturalBatch));
  int64_t n = 0;
  std::string_view line;
  while (n < batchSize && lines.next(line)) {
    // Blank lines (a trailing empty line, say) are not examples.
    if (trim(line).empty())
      continue;
    growRows(batch, n, n + 1, batchSize);
    parseLine(line, batch, n);
    ++n;
  }
  setRows(batch, n);
  return n > 0;
}
