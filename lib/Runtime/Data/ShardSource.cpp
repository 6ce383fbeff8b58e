//===- ShardSource.cpp - Every k-th example of a source -------------------===//
//
// One worker's part of data that has fewer files than workers: example r of
// the stream goes to shard r mod k. Every shard reads the whole stream and
// keeps its own examples, so the shards together hold every example once.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {
class ShardSource : public DataSource {
public:
  ShardSource(std::unique_ptr<DataSource> inner, int64_t index, int64_t count)
      : inner(std::move(inner)), index(index), count(count) {}

  bool next(Batch &batch, int64_t batchSize) override {
    if (batchSize <= 0)
      fail(describe(), ": batch size must be positive, got ", batchSize);
    int64_t n = 0;
    while (n < batchSize) {
      if (inputPos >= input.size) {
        inputPos = 0;
        if (!inner->next(input, kNaturalBatch)) {
          input.size = 0;
          break;
        }
      }
      if (n == 0)
        shapeLike(batch, input, std::min(batchSize, input.size));
      for (; inputPos < input.size && n < batchSize; ++inputPos, ++record)
        if (record % count == index) {
          growRows(batch, n, n + 1, batchSize);
          copyRows(input, inputPos, batch, n++);
        }
    }
    setRows(batch, n);
    return n > 0;
  }

  void rewind() override {
    inner->rewind();
    input.size = 0;
    inputPos = 0;
    record = 0;
  }

  std::string describe() const override {
    return inner->describe() + ", examples " + std::to_string(index) + " mod " +
           std::to_string(count);
  }

private:
  std::unique_ptr<DataSource> inner;
  int64_t index, count;
  Batch input;
  int64_t inputPos = 0, record = 0;
};
} // namespace

std::unique_ptr<DataSource> data::wrapShard(std::unique_ptr<DataSource> inner,
                                            int64_t index, int64_t count) {
  return std::make_unique<ShardSource>(std::move(inner), index, count);
}
