//===- LibSVMReader.cpp - libsvm / svmlight sparse text -------------------===//
//
// `label idx:val idx:val ...` with 1-based indices, densified into
// f32 [B, denseFeatures]. Labels -1 are read as 0, so the binary sets of the
// libsvm collection (labels -1/+1) train like 0/1 data; note this also maps a
// regression target of exactly -1 to 0.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <algorithm>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {
class LibSVMReader : public TextSource {
public:
  explicit LibSVMReader(const DataOptions &options)
      : TextSource(options, "libsvm") {
    checkNoSparse(options, "libsvm");
    width = options.denseFeatures;
    if (width == 0) {
      // Without a width from the model, the widest index in the file is it.
      std::string_view line;
      while (lines.next(line))
        forEachFeature(line, [&](int64_t index, float) {
          width = std::max(width, index);
        });
      lines.rewind();
      if (width == 0)
        fail("libsvm ", options.path,
             ": no features in the file and denseFeatures is 0");
    }
  }

protected:
  void resizeBatch(Batch &batch, int64_t rows) override {
    resizeLabel(batch, options, rows);
    batch.dense.resize(DType::F32, {rows, width});
    batch.sparse = Tensor();
  }

  void parseLine(std::string_view line, Batch &batch, int64_t row) override {
    float *dense = batch.dense.as<float>() + row * width;
    // Buffers are reused between batches: absent features must be zeroed.
    std::fill(dense, dense + width, 0.0f);
    std::string_view label = forEachFeature(line, [&](int64_t index, float v) {
      if (index > width)
        fail(where(), "libsvm: feature index ", index, " exceeds the ", width,
             " dense features");
      dense[index - 1] = v;
    });
    storeLabel(batch, row, label, /*minusOneIsZero=*/true);
  }

private:
  /// Calls `fn(index, value)` for each feature of `line`; returns the label
  /// token. Blank lines and '#' comments have no features.
  template <typename Fn>
  std::string_view forEachFeature(std::string_view line, Fn fn) {
    line = line.substr(0, line.find('#'));
    std::string_view label;
    bool first = true;
    size_t pos = 0;
    int64_t previous = 0;
    while (pos < line.size()) {
      while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t'))
        ++pos;
      size_t end = pos;
      while (end < line.size() && line[end] != ' ' && line[end] != '\t')
        ++end;
      if (end == pos)
        break;
      std::string_view token = line.substr(pos, end - pos);
      pos = end;
      if (first) {
        label = token;
        first = false;
        continue;
      }
      size_t colon = token.find(':');
      if (colon == std::string_view::npos)
        fail(where(), "libsvm: expected index:value, found ", quote(token));
      std::string_view key = token.substr(0, colon);
      // Ranking files carry a query id; it is not a feature.
      if (key == "qid")
        continue;
      int64_t index;
      double value;
      if (!parseInt64(key, index))
        fail(where(), "libsvm: expected an integer feature index, found ",
             quote(key));
      if (index < 1)
        fail(where(), "libsvm: feature index ", index, ": indices are 1-based");
      // As libsvm and scikit-learn require: a repeated index would
      // otherwise keep one of its values in silence.
      if (index <= previous)
        fail(where(), "libsvm: feature index ", index, " after ", previous,
             ": indices must ascend, each at most once");
      previous = index;
      if (!parseDouble(token.substr(colon + 1), value))
        fail(where(), "libsvm: feature ", index,
             ": expected a finite number (f32), found ",
             quote(token.substr(colon + 1)));
      fn(index, static_cast<float>(value));
    }
    return label;
  }

  int64_t width = 0;
};
} // namespace

std::unique_ptr<DataSource> data::openLibSVM(const DataOptions &options) {
  return std::make_unique<LibSVMReader>(options);
}
