//===- TableBatch.cpp - A step's table traffic in few requests ------------===//

#include "heterps/Runtime/TableBatch.h"

#include "heterps/Runtime/Error.h"
#include "heterps/plan.pb.h"

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
    fail() << "ids of table " << table << " are " << ids.typeString()
           << "; expected i64 or i32";
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

void TableBatch::addPush(int table, const int64_t *keys, int64_t n, int64_t dim,
                         const float *grads) {
  if (pushCount == pushes.size())
    pushes.emplace_back();
  Push &push = pushes[pushCount++];
  push.table = table;
  push.keys.assign(keys, keys + n);
  push.grads.assign(grads, grads + n * dim);
}

void TableBatch::push(EmbeddingStore &store) {
  if (pushCount == 0)
    return;
  pushRequests.clear();
  for (size_t i = 0; i < pushCount; ++i)
    pushRequests.push_back({pushes[i].table, pushes[i].keys.data(),
                            static_cast<int64_t>(pushes[i].keys.size()),
                            pushes[i].grads.data()});
  pushCount = 0;
  store.pushMany(pushRequests);
}
