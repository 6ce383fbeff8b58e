//===- ExpirySweeper.cpp - Dropping rows whose TTL expired ----------------===//

#include "heterps/PS/ExpirySweeper.h"

#include "heterps/PS/Shard.h"

#include <algorithm>
#include <chrono>

using namespace heterps::ps;

ExpirySweeper::ExpirySweeper(Shard &shard) : shard(shard) {
  thread = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      // A row lives at most its TTL and half of it more; without a table
      // of a TTL yet, one created soon is found soon.
      double ttl = this->shard.shortestTtlSeconds();
      double seconds = ttl > 0 ? std::clamp(ttl / 2, 0.01, 1.0) : 0.1;
      wake.wait_for(lock, std::chrono::duration<double>(seconds));
      if (stopping)
        break;
      lock.unlock();
      this->shard.evictExpired();
      lock.lock();
    }
  });
}

void ExpirySweeper::tablesChanged() { wake.notify_all(); }

ExpirySweeper::~ExpirySweeper() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  thread.join();
}
