//===- EmbeddingStore.h - Sparse embedding tables ---------------*- C++ -*-===//
//
// The runtime's only way to the rows of embedding tables. The in-process
// LocalEmbeddingStore implements it here; the parameter-server client
// implements it for remote tables, so the executor's lookups and pushes do
// not change when the tables move to a PS service.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_EMBEDDINGSTORE_H
#define HETERPS_RUNTIME_EMBEDDINGSTORE_H

#include "heterps/Runtime/Optimizer.h"
#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace heterps::plan {
class Plan;
} // namespace heterps::plan

namespace heterps::runtime {

struct TableInfo {
  int id = 0;
  std::string name;
  int64_t vocab = 0;
  int64_t dim = 0;
};

/// The key id `id` addresses in a table of vocabulary `vocab`: with none
/// (0) its 64 bits; else its row, id mod vocab, negative ids counted from
/// the end as ONNX's Gather and Python count them (-1 is the last row).
/// Every store and the PS client map ids through this.
inline uint64_t tableKey(int64_t id, uint64_t vocab) {
  if (vocab == 0)
    return static_cast<uint64_t>(id);
  if (id >= 0)
    return static_cast<uint64_t>(id) % vocab;
  // |id| without overflowing at INT64_MIN.
  uint64_t magnitude = static_cast<uint64_t>(-(id + 1)) + 1;
  uint64_t below = magnitude % vocab;
  return below == 0 ? 0 : vocab - below;
}

/// A table's part of a request of several tables.
struct TablePull {
  int table = 0;
  const int64_t *keys = nullptr;
  int64_t n = 0;
  /// n x dim, written.
  float *rows = nullptr;
};
struct TablePush {
  int table = 0;
  const int64_t *keys = nullptr;
  int64_t n = 0;
  /// n x dim gradients.
  const float *grads = nullptr;
};

class EmbeddingStore {
public:
  virtual ~EmbeddingStore();
  virtual int numTables() const = 0;
  virtual const TableInfo &table(int id) const = 0;
  /// The id of the table `name`; throws naming it when there is none.
  virtual int tableId(const std::string &name) const = 0;
  /// Writes the rows of `n` keys into `rows` (n x dim).
  virtual void pull(int table, const int64_t *keys, int64_t n, float *rows) = 0;
  /// Applies the table's optimizer to the rows of `n` keys with gradients
  /// `grads` (n x dim); duplicate keys are summed first.
  virtual void push(int table, const int64_t *keys, int64_t n,
                    const float *grads) = 0;
  /// Several tables' pulls or pushes at once: a remote store sends them in
  /// one request per server. By default, one call per table.
  virtual void pullMany(const std::vector<TablePull> &pulls);
  virtual void pushMany(const std::vector<TablePush> &pushes);
  /// pushMany, then pullMany of rows as the pushes left them; a remote
  /// store sends both in the same requests.
  virtual void pushManyThenPull(const std::vector<TablePush> &pushes,
                                const std::vector<TablePull> &pulls);
  /// Whether two threads may call the store at once (a pull ahead runs
  /// beside the step's own calls).
  virtual bool takesConcurrentCalls() const { return false; }

  // Dense tensors that the store keeps and updates (a PS's): the dense
  // parameters of asynchronous training. A store without them throws.
  /// Creates tensor `name` with `value` and `optimizer` unless it exists
  /// (with the same shape); returns whether it was created.
  virtual bool createDense(const std::string &name, const Tensor &value,
                           const OptimizerConfig &optimizer);
  /// Copies tensor `name` into `value` (of its shape).
  virtual void pullDense(const std::string &name, Tensor &value);
  /// Applies the tensor's optimizer with gradient `grad`.
  virtual void pushDense(const std::string &name, const Tensor &grad);
};

/// The tables of a plan in this process: one dense array per table, an id
/// addressing row tableKey(id, vocab) (so any 64-bit id is valid, and the
/// ids of an exported nn.Embedding address their own rows).
class LocalEmbeddingStore : public EmbeddingStore {
public:
  LocalEmbeddingStore(const plan::Plan &plan, uint64_t seed);

  int numTables() const override { return static_cast<int>(tables.size()); }
  const TableInfo &table(int id) const override;
  int tableId(const std::string &name) const override;
  void pull(int table, const int64_t *keys, int64_t n, float *rows) override;
  void push(int table, const int64_t *keys, int64_t n,
            const float *grads) override;

  /// The whole table (vocab x dim) and its optimizer state, for checkpoints.
  Tensor &rows(int table);
  Tensor &state(int table);
  std::vector<int64_t> &steps(int table);

private:
  struct Table {
    TableInfo info;
    OptimizerConfig optimizer;
    Tensor rows;
    Tensor state;               // stateSlots() x vocab x dim, lazily
    std::vector<int64_t> steps; // per row, Adam's bias correction
    std::mutex mutex;
    // Scratch of push(): merged rows, kept between pushes.
    std::vector<int32_t> mergeSlot; // per row: its merged index, or -1
    std::vector<int64_t> mergeOrder;
    std::vector<float> mergeRows;
  };
  std::vector<std::unique_ptr<Table>> tables;
  Table &get(int id);
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_EMBEDDINGSTORE_H
