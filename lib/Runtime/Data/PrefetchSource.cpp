//===- PrefetchSource.cpp - Reading in a background thread ----------------===//
//
// A producer thread reads the inner source in batches of kNaturalBatch into a
// bounded queue; next() cuts the requested batch size from them. Batches go
// back to a spare list once consumed, so after the first few their buffers
// are reused. An exception in the producer ends the epoch there and is
// rethrown by next() (every call, until rewind()) once the batches read
// before it are consumed; the rows of the inner batch that failed are lost.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {
constexpr size_t kQueueBatches = 4;

class PrefetchSource : public DataSource {
public:
  explicit PrefetchSource(std::unique_ptr<DataSource> inner)
      : inner(std::move(inner)) {
    description = this->inner->describe();
    start();
  }

  ~PrefetchSource() override { stop(); }

  bool next(Batch &out, int64_t batchSize) override {
    if (batchSize <= 0)
      fail(describe(), ": batch size must be positive, got ", batchSize);
    int64_t n = 0;
    bool shaped = false;
    while (!epochDone && n < batchSize) {
      if (!haveCurrent || currentPos >= current.size) {
        std::unique_lock<std::mutex> lock(mu);
        if (haveCurrent) {
          spare.push_back(std::move(current));
          haveCurrent = false;
        }
        canPop.wait(lock, [&] { return !ready.empty() || producerDone; });
        if (ready.empty()) {
          if (error)
            std::rethrow_exception(error);
          epochDone = true;
          break;
        }
        current = std::move(ready.front());
        ready.pop_front();
        haveCurrent = true;
        currentPos = 0;
        lock.unlock();
        canPush.notify_one();
        continue;
      }
      int64_t k = std::min(batchSize - n, current.size - currentPos);
      if (!shaped) {
        shapeLike(out, current, k);
        shaped = true;
      }
      growRows(out, n, n + k, batchSize);
      copyRows(current, currentPos, out, n, k);
      n += k;
      currentPos += k;
    }
    setRows(out, n);
    return n > 0;
  }

  void rewind() override {
    stop();
    while (!ready.empty()) {
      spare.push_back(std::move(ready.front()));
      ready.pop_front();
    }
    if (haveCurrent)
      spare.push_back(std::move(current));
    haveCurrent = false;
    currentPos = 0;
    epochDone = false;
    try {
      inner->rewind();
    } catch (...) {
      // Keep next() from waiting for a producer that was never started.
      error = std::current_exception();
      producerDone = true;
      throw;
    }
    start();
  }

  std::string describe() const override { return description; }

private:
  void start() {
    stopping = false;
    producerDone = false;
    error = nullptr;
    thread = std::thread([this] { produce(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    canPush.notify_all();
    if (thread.joinable())
      thread.join();
  }

  void produce() {
    try {
      for (;;) {
        Batch batch;
        {
          std::unique_lock<std::mutex> lock(mu);
          canPush.wait(
              lock, [&] { return stopping || ready.size() < kQueueBatches; });
          if (stopping)
            return;
          if (!spare.empty()) {
            batch = std::move(spare.back());
            spare.pop_back();
          }
        }
        bool more = inner->next(batch, kNaturalBatch);
        std::lock_guard<std::mutex> lock(mu);
        if (!more) {
          spare.push_back(std::move(batch));
          producerDone = true;
          break;
        }
        ready.push_back(std::move(batch));
        canPop.notify_one();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      error = std::current_exception();
      producerDone = true;
    }
    canPop.notify_all();
  }

  std::unique_ptr<DataSource> inner;
  std::string description;

  std::mutex mu;
  std::condition_variable canPush, canPop;
  // Guarded by mu.
  std::deque<Batch> ready;
  std::vector<Batch> spare;
  bool producerDone = false;
  bool stopping = false;
  std::exception_ptr error;
  std::thread thread;

  // Touched by the consumer only.
  Batch current;
  int64_t currentPos = 0;
  bool haveCurrent = false;
  bool epochDone = false;
};
} // namespace

std::unique_ptr<DataSource>
data::wrapPrefetch(std::unique_ptr<DataSource> inner) {
  return std::make_unique<PrefetchSource>(std::move(inner));
}
