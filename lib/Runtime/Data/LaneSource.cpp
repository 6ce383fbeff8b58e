//===- LaneSource.cpp - A step's batch from the data lanes ----------------===//
//
// Each lane is its own shard of the data with its own reader, shuffle and
// background thread. A step asks every lane read for the rows of its
// micro-batches and lays them out in micro-batch order; rows of lanes this
// process does not read stay zero and are marked absent.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include "heterps/Runtime/MicroBatches.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {

void zeroRows(Tensor &t, int64_t row, int64_t count) {
  if (t.empty() || count == 0)
    return;
  size_t rowBytes = t.byteSize() / std::max<int64_t>(t.dim(0), 1);
  std::memset(static_cast<char *>(t.data()) + row * rowBytes, 0,
              count * rowBytes);
}

class LaneSource : public DataSource {
public:
  LaneSource(const DataOptions &options, LaneLayout layout)
      : layout(std::move(layout)) {
    int64_t lanes = this->layout.lanes;
    if (lanes < 1 || this->layout.microBatches < 1 ||
        this->layout.microBatches % lanes != 0)
      fail("data lanes: ", this->layout.microBatches,
           " micro-batches per step do not divide into ", lanes, " lanes");
    if (this->layout.read.size() != static_cast<size_t>(lanes))
      fail("data lanes: ", this->layout.read.size(), " read flags for ", lanes,
           " lanes");
    sources.resize(lanes);
    parts.resize(lanes);
    // The lanes read, runs of them as ranges ("0-3,6").
    std::string read;
    int64_t readCount = 0;
    for (int64_t l = 0; l < lanes; ++l) {
      if (!this->layout.read[l])
        continue;
      DataOptions lane = options;
      lane.shardIndex = l;
      lane.shardCount = lanes;
      sources[l] = openDataSource(lane);
      ++readCount;
      if (description.empty())
        description = sources[l]->describe();
      if (l > 0 && this->layout.read[l - 1]) {
        if (l + 1 == lanes || !this->layout.read[l + 1])
          read += "-" + std::to_string(l);
        continue;
      }
      read += (read.empty() ? "" : ",") + std::to_string(l);
    }
    if (read.empty())
      fail("data lanes: this process reads none of the ", lanes);
    description += "; lane" + std::string(readCount == 1 ? " " : "s ") + read +
                   " of " + std::to_string(lanes);
  }

  bool next(Batch &batch, int64_t batchSize) override {
    if (batchSize <= 0)
      fail(describe(), ": batch size must be positive, got ", batchSize);
    int64_t lanes = layout.lanes;
    int64_t count = microBatchCount(batchSize, layout.microBatches);
    // A lane without a micro-batch of its own would never be read.
    if (count < lanes)
      fail("data lanes: a batch of ", batchSize, " examples makes ", count,
           " micro-batch", count == 1 ? "" : "es", ", fewer than the ", lanes,
           " lanes that each give one: use at most ", count,
           " lanes or a larger batch");
    // Each lane's rows: the micro-batches that are its own.
    laneRows.assign(lanes, 0);
    for (int64_t m = 0; m < count; ++m)
      laneRows[m % lanes] += microBatchRows(batchSize, count, m);
    bool full = true;
    for (int64_t l = 0; l < lanes; ++l) {
      if (!sources[l])
        continue;
      if (laneRows[l] == 0) {
        setRows(parts[l], 0);
        continue;
      }
      full = full && sources[l]->next(parts[l], laneRows[l]) &&
             parts[l].size == laneRows[l];
    }
    if (layout.allHaveData)
      full = layout.allHaveData(full);
    if (!full) {
      setRows(batch, 0);
      return false;
    }
    const Batch *shape = nullptr;
    for (int64_t l = 0; l < lanes && !shape; ++l)
      if (sources[l] && parts[l].size)
        shape = &parts[l];
    if (!shape) {
      setRows(batch, 0);
      return false;
    }
    shapeLike(batch, *shape, batchSize);
    batch.present.assign(batchSize, 0);
    taken.assign(lanes, 0);
    int64_t row = 0;
    for (int64_t m = 0; m < count; ++m) {
      int64_t l = m % lanes, rows = microBatchRows(batchSize, count, m);
      if (sources[l]) {
        copyRows(parts[l], taken[l], batch, row, rows);
        std::fill_n(batch.present.begin() + row, rows, 1);
      } else {
        zeroRows(batch.label, row, rows);
        zeroRows(batch.dense, row, rows);
        zeroRows(batch.sparse, row, rows);
      }
      taken[l] += rows;
      row += rows;
    }
    return true;
  }

  void rewind() override {
    for (auto &source : sources)
      if (source)
        source->rewind();
  }

  std::string describe() const override { return description; }

private:
  LaneLayout layout;
  std::vector<std::unique_ptr<DataSource>> sources;
  std::vector<Batch> parts;
  std::string description;
  // Per step: each lane's rows, and how many of them are laid out.
  std::vector<int64_t> laneRows, taken;
};

} // namespace

std::unique_ptr<DataSource>
heterps::runtime::openLaneSource(const DataOptions &options,
                                 LaneLayout layout) {
  return std::make_unique<LaneSource>(options, std::move(layout));
}
