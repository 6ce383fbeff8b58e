//===- ExpirySweeper.h - Dropping rows whose TTL expired --------*- C++ -*-===//
//
// Tables with a time to live lose the rows nobody pulled or pushed for that
// long. A sweeper thread drops them, every half of the shortest TTL among
// the shard's tables (between 10 ms and 1 s; every 100 ms it looks for
// tables with one), for a network server and for the embedded one alike.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_EXPIRYSWEEPER_H
#define HETERPS_PS_EXPIRYSWEEPER_H

#include <condition_variable>
#include <mutex>
#include <thread>

namespace heterps::ps {

class Shard;

class ExpirySweeper {
public:
  /// Starts sweeping `shard`, which must outlive the sweeper.
  explicit ExpirySweeper(Shard &shard);
  /// Stops the thread (at once, not after its wait).
  ~ExpirySweeper();
  /// Looks at the tables' TTLs now (tables were created or restored):
  /// without it a new table's is found within 100 ms.
  void tablesChanged();
  ExpirySweeper(const ExpirySweeper &) = delete;
  ExpirySweeper &operator=(const ExpirySweeper &) = delete;

private:
  Shard &shard;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
};

} // namespace heterps::ps

#endif // HETERPS_PS_EXPIRYSWEEPER_H
