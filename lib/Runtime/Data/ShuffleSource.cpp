//===- ShuffleSource.cpp - A reservoir shuffle buffer ---------------------===//
//
// Fills a buffer of N examples, then emits a random one and puts the next
// example read in its place; at the end of the epoch the buffer drains in
// random order. An example moves at most about N places from its file
// position in expectation, which is why N should be large for sorted files.
// The generator is reseeded from (seed, epoch) at every rewind, so each epoch
// has its own order, and the order does not depend on how far a background
// reader had read ahead when the epoch was cut short.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <algorithm>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {
class ShuffleSource : public DataSource {
public:
  ShuffleSource(std::unique_ptr<DataSource> inner, int64_t capacity,
                uint64_t seed)
      : inner(std::move(inner)), capacity(capacity), seed(seed),
        rng(epochSeed(seed, 0)) {
    description = this->inner->describe() + ", shuffle buffer " +
                  std::to_string(capacity);
  }

  bool next(Batch &out, int64_t batchSize) override {
    if (batchSize <= 0)
      fail(describe(), ": batch size must be positive, got ", batchSize);
    while (filled < capacity && pull()) {
      int64_t k = std::min(capacity - filled, input.size - inputPos);
      // The buffer grows as it fills: one larger than the data holds the
      // data, not the flag's size.
      growRows(reservoir, filled, filled + k, capacity);
      copyRows(input, inputPos, reservoir, filled, k);
      inputPos += k;
      filled += k;
    }
    if (filled == 0) {
      setRows(out, 0);
      return false;
    }
    int64_t n = 0;
    shapeLike(out, reservoir, std::min(batchSize, filled));
    while (n < batchSize && filled > 0) {
      growRows(out, n, n + 1, batchSize);
      int64_t r = static_cast<int64_t>(rng.below(filled));
      copyRows(reservoir, r, out, n++);
      if (pull()) {
        copyRows(input, inputPos++, reservoir, r);
      } else {
        if (r != filled - 1)
          copyRows(reservoir, filled - 1, reservoir, r);
        --filled;
      }
    }
    setRows(out, n);
    return true;
  }

  void rewind() override {
    inner->rewind();
    filled = 0;
    input.size = 0;
    inputPos = 0;
    innerDone = false;
    rng = Rng(epochSeed(seed, ++epoch));
  }

  std::string describe() const override { return description; }

private:
  static uint64_t epochSeed(uint64_t seed, uint64_t epoch) {
    return splitmix64(seed ^ splitmix64(epoch ^ 0x73687566666c65ULL));
  }

  /// Makes input[inputPos] a valid example; false at the end of the epoch.
  bool pull() {
    while (inputPos >= input.size) {
      if (innerDone || !inner->next(input, kNaturalBatch)) {
        innerDone = true;
        return false;
      }
      inputPos = 0;
      if (!shaped) {
        shapeLike(reservoir, input, 0);
        shaped = true;
      }
    }
    return true;
  }

  std::unique_ptr<DataSource> inner;
  int64_t capacity;
  uint64_t seed;
  uint64_t epoch = 0;
  Rng rng;
  std::string description;
  Batch reservoir;
  bool shaped = false;
  int64_t filled = 0;
  Batch input;
  int64_t inputPos = 0;
  bool innerDone = false;
};
} // namespace

std::unique_ptr<DataSource> data::wrapShuffle(std::unique_ptr<DataSource> inner,
                                              int64_t bufferExamples,
                                              uint64_t seed) {
  return std::make_unique<ShuffleSource>(std::move(inner), bufferExamples,
                                         seed);
}
