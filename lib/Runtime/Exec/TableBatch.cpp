//===- TableBatch.cpp - A step's table traffic in few requests ------------===//

#include "heterps/Runtime/TableBatch.h"

#include "heterps/Runtime/Error.h"
#include "heterps/plan.pb.h"

#include <algorithm>

using namespace heterps;
using namespace heterps::runtime;

bool runtime::readsTableRows(const plan::Op &op) {
  return op.name() == "heterps.embedding_lookup" ||
         op.name() == "heterps.ps_pull";
}

void TableBatch::clearPulls() {
  // The buffers are kept for the next step.
  for (auto &[op, pull] : pulls)
    pull.keys.clear();
  order.clear();
}

void TableBatch::addPull(const plan::Op *op, int table, const Tensor &ids) {
  Pull &pull = pulls[op];
  pull.table = table;
  int64_t n = ids.numElements();
  pull.keys.resize(n);
  if (ids.dtype() == DType::I64 || ids.dtype() == DType::U64)
    std::copy(ids.as<int64_t>(), ids.as<int64_t>() + n, pull.keys.begin());
  else if (ids.dtype() == DType::I32)
    std::copy(ids.as<int32_t>(), ids.as<int32_t>() + n, pull.keys.begin());
  else
    fail("ids of table ", table, " are ", ids.typeString(),
         "; expected i64 or i32");
  order.push_back(op);
}

void TableBatch::pull(EmbeddingStore &store) {
  if (order.empty())
    return;
  pullRequests.clear();
  for (const plan::Op *op : order) {
    Pull &pull = pulls[op];
    int64_t n = static_cast<int64_t>(pull.keys.size());
    pull.rows.resize(n * store.table(pull.table).dim);
    pullRequests.push_back({pull.table, pull.keys.data(), n, pull.rows.data()});
  }
  store.pullMany(pullRequests);
}

const float *TableBatch::rowsFor(const plan::Op *op) const {
  auto it = pulls.find(op);
  if (it == pulls.end() || it->second.keys.empty())
    return nullptr;
  return it->second.rows.data();
}

bool TableBatch::holdsPull(const plan::Op *op, int table,
                           const Tensor &ids) const {
  auto it = pulls.find(op);
  if (it == pulls.end() || it->second.table != table)
    return false;
  const std::vector<int64_t> &keys = it->second.keys;
  int64_t n = ids.numElements();
  if (static_cast<int64_t>(keys.size()) != n)
    return false;
  if (ids.dtype() == DType::I64 || ids.dtype() == DType::U64)
    return std::equal(keys.begin(), keys.end(), ids.as<int64_t>());
  if (ids.dtype() == DType::I32)
    return std::equal(keys.begin(), keys.end(), ids.as<int32_t>());
  return false;
}

/// The row a key addresses, as LocalEmbeddingStore and the PS client map
/// it.
static uint64_t canonicalKey(int64_t key, int64_t vocab) {
  return tableKey(key, vocab > 0 ? static_cast<uint64_t>(vocab) : 0);
}

const std::vector<TablePull> &
TableBatch::stalePulls(const EmbeddingStore &store,
                       const std::vector<std::pair<int, uint64_t>> &stale) {
  staleRequests.clear();
  for (const plan::Op *op : order) {
    Pull &pull = pulls[op];
    pull.staleAt.clear();
    pull.staleKeys.clear();
    if (stale.empty())
      continue;
    int64_t vocab = store.table(pull.table).vocab;
    for (size_t i = 0; i < pull.keys.size(); ++i)
      if (std::binary_search(
              stale.begin(), stale.end(),
              std::make_pair(pull.table, canonicalKey(pull.keys[i], vocab)))) {
        pull.staleAt.push_back(static_cast<int64_t>(i));
        pull.staleKeys.push_back(pull.keys[i]);
      }
    if (pull.staleKeys.empty())
      continue;
    int64_t n = static_cast<int64_t>(pull.staleKeys.size());
    pull.staleRows.resize(n * store.table(pull.table).dim);
    staleRequests.push_back(
        {pull.table, pull.staleKeys.data(), n, pull.staleRows.data()});
  }
  return staleRequests;
}

int64_t TableBatch::applyStale(const EmbeddingStore &store) {
  int64_t count = 0;
  for (const plan::Op *op : order) {
    Pull &pull = pulls[op];
    int64_t dim = store.table(pull.table).dim;
    for (size_t j = 0; j < pull.staleAt.size(); ++j)
      std::copy_n(pull.staleRows.data() + j * dim, dim,
                  pull.rows.data() + pull.staleAt[j] * dim);
    count += static_cast<int64_t>(pull.staleAt.size());
    pull.staleAt.clear();
  }
  return count;
}

void TableBatch::addPush(int table, const int64_t *keys, int64_t n, int64_t dim,
                         const float *grads) {
  if (pushCount == pushes.size())
    pushes.emplace_back();
  Push &push = pushes[pushCount++];
  push.table = table;
  push.keys.assign(keys, keys + n);
  push.grads.assign(grads, grads + n * dim);
}

void TableBatch::pushKeys(const EmbeddingStore &store,
                          std::vector<std::pair<int, uint64_t>> &out) const {
  for (size_t i = 0; i < pushCount; ++i) {
    int64_t vocab = store.table(pushes[i].table).vocab;
    for (int64_t key : pushes[i].keys)
      out.push_back({pushes[i].table, canonicalKey(key, vocab)});
  }
}

void TableBatch::push(EmbeddingStore &store,
                      const std::vector<TablePull> &thenPull) {
  if (pushCount == 0) {
    if (!thenPull.empty())
      store.pullMany(thenPull);
    return;
  }
  pushRequests.clear();
  for (size_t i = 0; i < pushCount; ++i)
    pushRequests.push_back({pushes[i].table, pushes[i].keys.data(),
                            static_cast<int64_t>(pushes[i].keys.size()),
                            pushes[i].grads.data()});
  pushCount = 0;
  if (thenPull.empty())
    store.pushMany(pushRequests);
  else
    store.pushManyThenPull(pushRequests, thenPull);
}
