//===- PullAhead.h - The next step's rows, pulled ahead ---------*- C++ -*-===//
//
// Against PS servers over the network, a step of a CTR model waits for its
// rows: one round trip per server and the rows' bytes. The data reader is a
// batch ahead anyway, so the rows of step N+1 can travel while step N
// computes. PullAhead pulls them on its own thread into a second
// TableBatch; the executor takes that batch at step N+1 when it holds
// exactly the ids the step looks up.
//
// Step N pushes after the rows of N+1 were read. In the exact mode the
// rows of N+1 whose keys step N pushes are pulled again in the push's own
// requests (the servers answer them after applying the push), so training
// computes what it would without pulling ahead, with no extra round trip;
// in the stale mode they are used as pulled (one step old, as in
// asynchronous training).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PULLAHEAD_H
#define HETERPS_RUNTIME_PULLAHEAD_H

#include "heterps/Runtime/TableBatch.h"

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace heterps::runtime {

enum class PullAheadMode { Off, Exact, Stale };

/// "off", "exact" or "stale"; nullopt for anything else.
std::optional<PullAheadMode> parsePullAheadMode(std::string_view text);

class PullAhead {
public:
  /// `store` must take calls from two threads at once (the PS client
  /// does); throws otherwise.
  PullAhead(EmbeddingStore &store, PullAheadMode mode);
  /// Waits for a pull in flight.
  ~PullAhead();

  PullAheadMode mode() const { return pullMode; }
  /// Whether a pull was started and not yet taken.
  bool pending() const { return started; }

  /// Starts pulling, on the background thread, the rows of the lookups
  /// `lookups[i]` = (op, table) by the ids `ids[i]`. A pull that was not
  /// taken is waited for and dropped.
  void start(const std::vector<std::pair<const plan::Op *, int>> &lookups,
             const std::vector<const Tensor *> &ids);
  /// Sends the pushes `batch` holds. In the exact mode, with a pull in
  /// flight, first waits for it, and the rows it pulled of keys that the
  /// pushes touch are pulled again in the pushes' requests.
  void push(TableBatch &batch);
  /// Waits for the pull in flight (rethrowing its error). When it pulled
  /// exactly the lookups (op, table) by `ids` (in order), swaps the pulled
  /// batch into `batch` and returns true; otherwise drops it and returns
  /// false.
  bool take(std::unique_ptr<TableBatch> &batch,
            const std::vector<std::pair<const plan::Op *, int>> &lookups,
            const std::vector<const Tensor *> &ids);
  /// Waits for a pull in flight and drops it.
  void cancel();

  /// Rows pulled again by the exact mode, and the batches taken and
  /// dropped, since the start.
  int64_t refreshedRows() const { return refreshed; }
  int64_t batchesTaken() const { return taken; }
  int64_t batchesDropped() const { return dropped; }

private:
  void loop();
  /// Waits until the background thread is idle.
  void wait();

  EmbeddingStore &store;
  PullAheadMode pullMode;
  std::unique_ptr<TableBatch> next;
  /// (table, key mod vocabulary) of a step's pushes.
  std::vector<std::pair<int, uint64_t>> pushed;
  bool started = false;
  int64_t refreshed = 0, taken = 0, dropped = 0;

  std::thread worker;
  std::mutex mutex;
  std::condition_variable wake, idle;
  bool work = false, stop = false;
  std::exception_ptr error;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PULLAHEAD_H
