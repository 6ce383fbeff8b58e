//===- CriteoReader.cpp - Criteo Display Advertising TSV ------------------===//
//
// `label \t I1..I13 \t C1..C26`: integer counts (possibly empty or negative)
// and categorical features hashed to 8 hex digits (possibly empty). The
// transform is the one of DLRM's reference input pipeline: dense =
// log(1 + max(x, 0)), categorical values become ids by hashing, so the
// embedding tables are sized by the model, not by a vocabulary pass.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <charconv>
#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

static constexpr int64_t kDense = 13;
static constexpr int64_t kSparse = 26;
static constexpr int64_t kColumns = 1 + kDense + kSparse;
static constexpr uint64_t kIdMask = (uint64_t(1) << 63) - 1;

int64_t heterps::runtime::criteoCategoricalId(int64_t column, uint32_t value) {
  uint64_t key = (static_cast<uint64_t>(column) << 32) | value;
  return static_cast<int64_t>(splitmix64(key) & kIdMask);
}

int64_t heterps::runtime::criteoMissingId(int64_t column) {
  uint64_t key = (uint64_t(0xffffffffu) << 32) | static_cast<uint32_t>(column);
  return static_cast<int64_t>(splitmix64(key) & kIdMask);
}

namespace {
class CriteoReader : public TextSource {
public:
  explicit CriteoReader(const DataOptions &options)
      : TextSource(options, "criteo") {
    if (options.denseFeatures != 0 && options.denseFeatures != kDense)
      fail("criteo ", options.path, ": the model expects ",
           options.denseFeatures, " dense features, the Criteo format has ",
           kDense);
    if (options.sparseFeatures != 0 && options.sparseFeatures != kSparse)
      fail("criteo ", options.path, ": the model expects ",
           options.sparseFeatures, " sparse features, the Criteo format has ",
           kSparse);
    if (options.classLabels && options.numClasses < 2)
      fail("criteo ", options.path, ": labels are 0/1, but the model has ",
           options.numClasses, " classes");
  }

protected:
  void resizeBatch(Batch &batch, int64_t rows) override {
    resizeLabel(batch, options, rows);
    batch.dense.resize(DType::F32, {rows, kDense});
    batch.sparse.resize(DType::I64, {rows, kSparse});
  }

  void parseLine(std::string_view line, Batch &batch, int64_t row) override {
    std::string_view fields[kColumns];
    int64_t count = 0;
    size_t start = 0;
    for (;;) {
      size_t tab = line.find('\t', start);
      std::string_view field = line.substr(start, tab == std::string_view::npos
                                                      ? std::string_view::npos
                                                      : tab - start);
      if (count < kColumns)
        fields[count] = field;
      ++count;
      if (tab == std::string_view::npos)
        break;
      start = tab + 1;
    }
    if (count != kColumns)
      fail(where(), "criteo: expected ", kColumns,
           " tab-separated columns (label, 13 integer, 26 categorical), "
           "found ",
           count);

    int64_t label;
    if (!parseInt64(fields[0], label) || (label != 0 && label != 1))
      fail(where(), "criteo: expected label 0 or 1, found ", quote(fields[0]));
    if (options.classLabels)
      batch.label.as<int64_t>()[row] = label;
    else
      batch.label.as<float>()[row] = static_cast<float>(label);

    float *dense = batch.dense.as<float>() + row * kDense;
    for (int64_t i = 0; i < kDense; ++i) {
      std::string_view f = fields[1 + i];
      int64_t x = 0;
      if (!f.empty() && !parseInt64(f, x))
        fail(where(), "criteo: column I", i + 1,
             ": expected an integer or nothing, found ", quote(f));
      dense[i] =
          static_cast<float>(std::log1p(static_cast<double>(x > 0 ? x : 0)));
    }

    int64_t *sparse = batch.sparse.as<int64_t>() + row * kSparse;
    for (int64_t j = 0; j < kSparse; ++j) {
      std::string_view f = fields[1 + kDense + j];
      if (f.empty()) {
        sparse[j] = criteoMissingId(j);
        continue;
      }
      uint32_t value = 0;
      auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), value, 16);
      if (f.size() > 8 || ec != std::errc() || p != f.data() + f.size())
        fail(where(), "criteo: column C", j + 1,
             ": expected up to 8 hex digits or nothing, found ", quote(f));
      sparse[j] = criteoCategoricalId(j, value);
    }
  }
};
} // namespace

std::unique_ptr<DataSource> data::openCriteo(const DataOptions &options) {
  return std::make_unique<CriteoReader>(options);
}
