//===- PullAhead.cpp - The next step's rows, pulled while this one runs ---===//

#include "heterps/Runtime/PullAhead.h"

#include "heterps/Runtime/Error.h"

#include <algorithm>

using namespace heterps;
using namespace heterps::runtime;

std::optional<PullAheadMode>
runtime::parsePullAheadMode(std::string_view text) {
  if (text == "off")
    return PullAheadMode::Off;
  if (text == "exact")
    return PullAheadMode::Exact;
  if (text == "stale")
    return PullAheadMode::Stale;
  return std::nullopt;
}

PullAhead::PullAhead(EmbeddingStore &store, PullAheadMode mode)
    : store(store), pullMode(mode), next(std::make_unique<TableBatch>()) {
  if (!store.takesConcurrentCalls())
    fail("pulling rows ahead needs an embedding store that takes calls "
         "from two threads at once (the PS client)");
}

PullAhead::~PullAhead() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  wake.notify_all();
  if (worker.joinable())
    worker.join();
}

void PullAhead::loop() {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    wake.wait(lock, [&] { return work || stop; });
    if (stop)
      return;
    lock.unlock();
    std::exception_ptr failure;
    try {
      next->pull(store);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    error = failure;
    work = false;
    idle.notify_all();
  }
}

void PullAhead::wait() {
  std::unique_lock<std::mutex> lock(mutex);
  idle.wait(lock, [&] { return !work; });
}

void PullAhead::start(
    const std::vector<std::pair<const plan::Op *, int>> &lookups,
    const std::vector<const Tensor *> &ids) {
  cancel();
  next->clearPulls();
  for (size_t i = 0; i < lookups.size(); ++i)
    next->addPull(lookups[i].first, lookups[i].second, *ids[i]);
  if (!worker.joinable())
    worker = std::thread([this] { loop(); });
  {
    std::lock_guard<std::mutex> lock(mutex);
    work = true;
    error = nullptr;
  }
  started = true;
  wake.notify_all();
}

void PullAhead::push(TableBatch &batch) {
  if (!started || pullMode != PullAheadMode::Exact) {
    batch.push(store);
    return;
  }
  // The rows of the pull in flight are rewritten below: it must be done.
  wait();
  pushed.clear();
  batch.pushKeys(store, pushed);
  std::sort(pushed.begin(), pushed.end());
  pushed.erase(std::unique(pushed.begin(), pushed.end()), pushed.end());
  batch.push(store, next->stalePulls(store, pushed));
  refreshed += next->applyStale(store);
}

void PullAhead::cancel() {
  if (!started)
    return;
  wait();
  started = false;
  ++dropped;
  // A dropped pull's error does not concern the step that runs instead.
  error = nullptr;
}

bool PullAhead::take(
    std::unique_ptr<TableBatch> &batch,
    const std::vector<std::pair<const plan::Op *, int>> &lookups,
    const std::vector<const Tensor *> &ids) {
  if (!started)
    return false;
  wait();
  started = false;
  bool same = next->pullOps().size() == lookups.size();
  for (size_t i = 0; same && i < lookups.size(); ++i)
    same = next->pullOps()[i] == lookups[i].first &&
           next->holdsPull(lookups[i].first, lookups[i].second, *ids[i]);
  if (!same) {
    ++dropped;
    error = nullptr;
    return false;
  }
  if (error) {
    std::exception_ptr e = error;
    error = nullptr;
    std::rethrow_exception(e);
  }
  std::swap(batch, next);
  ++taken;
  return true;
}
