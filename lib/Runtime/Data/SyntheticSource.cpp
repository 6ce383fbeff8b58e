//===- SyntheticSource.cpp - A CTR generator with a learnable signal ------===//
//
// Example i of an epoch is drawn from a generator seeded by (seed, i), so the
// data set is fixed by the seed and rewind() replays the same examples: like
// a file, an epoch is the same syntheticExamples examples (shuffle them with
// DataOptions::shuffleBuffer). The hidden model does not depend on the seed,
// so a source with another seed is a held-out set of the same distribution.
//
// Dense features are N(0, 1); sparse ids are log-uniform in
// [0, syntheticVocab) (P(id = k) ~ 1/(k+1), id 0 the most frequent, like the
// skew of real categorical features). The hidden model is linear: fixed
// weights over the dense features plus an effect per (feature, id) derived by
// hashing, so no vocabulary-sized table exists. Binary labels are
// Bernoulli(sigmoid(logit)) with a bias of -1.5 (a quarter to a third
// positive, by the draw of the hidden model); with class labels and
// numClasses > 2 the label is the argmax of numClasses such scores plus
// N(0, 0.25) noise.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <algorithm>
#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {
constexpr uint64_t kModelKey = 0x4865746572505321ULL;
constexpr double kBias = -1.5;
// The expected standard deviation of the dense part and of the sparse part of
// the logit: strong enough that a model visibly learns each.
constexpr double kSignal = 1.5;
constexpr double kClassNoise = 0.5;
// Epochs up to this size are drawn once and replayed from memory.
constexpr int64_t kMaxCacheBytes = int64_t(1) << 30;
constexpr int64_t kMinCache = 4096;

/// N(0, 1) from one 64-bit hash (Box-Muller on its two halves).
double gaussian(uint64_t h) {
  double u1 = ((h >> 32) + 1.0) * 0x1.0p-32; // (0, 1]
  double u2 = (h & 0xffffffffu) * 0x1.0p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

class SyntheticSource : public DataSource {
public:
  explicit SyntheticSource(const DataOptions &options)
      : options(options), dense(options.denseFeatures),
        sparse(options.sparseFeatures) {
    if (dense < 0 || sparse < 0 || dense + sparse == 0)
      fail("synthetic: expected dense or sparse features, found ", dense,
           " dense and ", sparse, " sparse");
    if (sparse > 0 && options.syntheticVocab < 1)
      fail("synthetic: expected a positive vocabulary, found ",
           options.syntheticVocab);
    if (options.syntheticExamples < 0)
      fail("synthetic: expected a non-negative example count, found ",
           options.syntheticExamples);
    if (options.classLabels && options.numClasses < 2)
      fail("synthetic: expected at least 2 classes, found ",
           options.numClasses);
    multiclass = options.classLabels && options.numClasses > 2;
    scores = multiclass ? options.numClasses : 1;
    weights.resize(scores * dense);
    for (int64_t c = 0; c < scores; ++c)
      for (int64_t k = 0; k < dense; ++k)
        weights[c * dense + k] =
            kSignal *
            gaussian(splitmix64(kModelKey ^ splitmix64(c * dense + k))) /
            std::sqrt(double(dense));
    sparseScale = sparse ? kSignal / std::sqrt(double(sparse)) : 0.0;
    // An epoch is a fixed data set: keep it when it is small enough.
    int64_t rowBytes = 4 * (dense + 1) + 8 * sparse;
    cacheEnabled = options.syntheticExamples * rowBytes <= kMaxCacheBytes;
    seedKey = splitmix64(options.seed ^ 0x73796e7468657469ULL);
  }

  bool next(Batch &batch, int64_t batchSize) override {
    if (batchSize <= 0)
      fail(describe(), ": batch size must be positive, got ", batchSize);
    int64_t n = std::min(batchSize, options.syntheticExamples - cursor);
    resizeLabel(batch, options, n);
    // A batch reused from another source must not keep a column this one
    // lacks.
    if (dense)
      batch.dense.resize(DType::F32, {n, dense});
    else
      batch.dense = Tensor();
    if (sparse)
      batch.sparse.resize(DType::I64, {n, sparse});
    else
      batch.sparse = Tensor();
    batch.size = n;
    // Rows already drawn are copied from the cache; the rest are drawn and
    // cached, so every epoch after the first costs a copy.
    int64_t cached = std::clamp<int64_t>(cachedRows - cursor, 0, n);
    if (cached)
      copyRows(cache, cursor, batch, 0, cached);
    for (int64_t i = cached; i < n; ++i)
      generate(cursor + i, batch, i);
    if (cacheEnabled && cursor + cached == cachedRows && n > cached) {
      reserveCache(cachedRows + n - cached, batch);
      copyRows(batch, cached, cache, cachedRows, n - cached);
      cachedRows += n - cached;
    }
    cursor += n;
    return n > 0;
  }

  void rewind() override { cursor = 0; }

  std::string describe() const override {
    return "synthetic " + std::to_string(options.syntheticExamples) +
           " examples, seed " + std::to_string(options.seed);
  }

private:
  /// Room in the cache for `rows` rows shaped like `batch`. The cache grows
  /// by doubling as rows are drawn: an epoch's worth at once (up to 1 GiB,
  /// zeroed) would stall the first step of a short run.
  void reserveCache(int64_t rows, const Batch &batch) {
    if (rows <= cache.size)
      return;
    int64_t capacity = std::min(options.syntheticExamples,
                                std::max({rows, 2 * cache.size, kMinCache}));
    Batch grown;
    shapeLike(grown, batch, capacity);
    if (cachedRows)
      copyRows(cache, 0, grown, 0, cachedRows);
    cache = std::move(grown);
  }

  /// The effect of id `id` of sparse feature `f` on score `c`.
  double effect(int64_t c, int64_t f, int64_t id) const {
    uint64_t column = splitmix64(kModelKey + 1 + uint64_t(c * sparse + f));
    return sparseScale * gaussian(splitmix64(column ^ uint64_t(id)));
  }

  void generate(int64_t index, Batch &batch, int64_t row) {
    Rng rng(splitmix64(seedKey ^ splitmix64(uint64_t(index))));
    float *x = dense ? batch.dense.as<float>() + row * dense : nullptr;
    int64_t *ids = sparse ? batch.sparse.as<int64_t>() + row * sparse : nullptr;
    for (int64_t k = 0; k < dense; ++k)
      x[k] = static_cast<float>(gaussian(rng.next()));
    const double vocab = double(options.syntheticVocab);
    for (int64_t f = 0; f < sparse; ++f) {
      int64_t id = int64_t(std::pow(vocab + 1.0, rng.uniform())) - 1;
      ids[f] = std::min<int64_t>(std::max<int64_t>(id, 0),
                                 options.syntheticVocab - 1);
    }

    int64_t best = 0;
    double bestScore = -INFINITY, logit = 0;
    for (int64_t c = 0; c < scores; ++c) {
      double s = multiclass ? 0.0 : kBias;
      for (int64_t k = 0; k < dense; ++k)
        s += weights[c * dense + k] * x[k];
      for (int64_t f = 0; f < sparse; ++f)
        s += effect(c, f, ids[f]);
      if (multiclass)
        s += kClassNoise * gaussian(rng.next());
      if (s > bestScore) {
        bestScore = s;
        best = c;
      }
      logit = s;
    }
    if (!multiclass)
      best = rng.uniform() < 1.0 / (1.0 + std::exp(-logit)) ? 1 : 0;
    if (options.classLabels)
      batch.label.as<int64_t>()[row] = best;
    else
      batch.label.as<float>()[row] = static_cast<float>(best);
  }

  DataOptions options;
  int64_t dense, sparse;
  bool multiclass = false;
  int64_t scores = 1;
  std::vector<double> weights;
  double sparseScale = 0;
  uint64_t seedKey = 0;
  int64_t cursor = 0;
  bool cacheEnabled = false;
  Batch cache;
  int64_t cachedRows = 0;
};
} // namespace

std::unique_ptr<DataSource> data::openSynthetic(const DataOptions &options) {
  return std::make_unique<SyntheticSource>(options);
}
