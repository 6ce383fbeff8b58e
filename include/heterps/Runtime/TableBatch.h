//===- TableBatch.h - A step's table traffic in few requests ----*- C++ -*-===//
//
// A step of a CTR model looks up and pushes to many tables; a PS service
// answers each call over the network. The executors gather a step's table
// traffic here: the rows of every lookup whose ids are known before the
// step (or segment) runs are pulled in one pullMany, which a PS client
// sends as one request per server, and the step's pushes are collected and
// sent in one pushMany after it. The kernels read their rows from here and
// leave their pushes here.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TABLEBATCH_H
#define HETERPS_RUNTIME_TABLEBATCH_H

#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace heterps::plan {
class Op;
} // namespace heterps::plan

namespace heterps::runtime {

/// Whether `op` reads rows of a table by the ids of its first operand
/// (heterps.embedding_lookup, heterps.ps_pull): what a batch can pull.
bool readsTableRows(const plan::Op &op);

class TableBatch {
public:
  /// Forgets the rows of the last pull.
  void clearPulls();
  /// Asks for the rows of `ids` (i32 or i64) of table `table`, for `op`.
  void addPull(const plan::Op *op, int table, const Tensor &ids);
  /// Pulls every row asked for since clearPulls(), in one pullMany.
  void pull(EmbeddingStore &store);
  /// The rows pulled for `op` (one per id, in order), or null.
  const float *rowsFor(const plan::Op *op) const;
  /// The lookups asked for since clearPulls(), in order.
  const std::vector<const plan::Op *> &pullOps() const { return order; }
  /// Whether the pull asked for `op` is of table `table` by exactly `ids`.
  bool holdsPull(const plan::Op *op, int table, const Tensor &ids) const;
  /// The requests that pull again the rows of this batch's keys in
  /// `stale` ((table, key mod the table's vocabulary) pairs, sorted) into
  /// scratch; applyStale() then puts them in place.
  const std::vector<TablePull> &
  stalePulls(const EmbeddingStore &store,
             const std::vector<std::pair<int, uint64_t>> &stale);
  /// Copies the rows the stalePulls() requests received into the batch;
  /// returns their number.
  int64_t applyStale(const EmbeddingStore &store);

  /// While set, kernels leave their pushes here instead of sending them.
  bool collectingPushes = false;
  /// Keeps a push of `n` keys and n x dim gradients.
  void addPush(int table, const int64_t *keys, int64_t n, int64_t dim,
               const float *grads);
  /// Forgets the pushes kept (a step that failed before sending them).
  void dropPushes() { pushCount = 0; }
  /// Sends the pushes kept, in one pushMany, and forgets them; the rows
  /// of `thenPull` are pulled after the pushes, in the same requests.
  void push(EmbeddingStore &store, const std::vector<TablePull> &thenPull = {});
  /// Appends (table, key mod the table's vocabulary) of every push kept.
  void pushKeys(const EmbeddingStore &store,
                std::vector<std::pair<int, uint64_t>> &out) const;

private:
  struct Pull {
    int table = 0;
    std::vector<int64_t> keys;
    std::vector<float> rows;
    // refresh(): the positions of stale keys, their keys and new rows.
    std::vector<int64_t> staleAt, staleKeys;
    std::vector<float> staleRows;
  };
  std::map<const plan::Op *, Pull> pulls;
  std::vector<const plan::Op *> order;
  struct Push {
    int table = 0;
    std::vector<int64_t> keys;
    std::vector<float> grads;
  };
  std::vector<Push> pushes;
  size_t pushCount = 0;
  // The requests, kept so that a steady-state step does not allocate.
  std::vector<TablePull> pullRequests, staleRequests;
  std::vector<TablePush> pushRequests;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_TABLEBATCH_H
