//===- EmbeddingStore.cpp - In-process embedding tables -------------------===//

#include "heterps/Runtime/EmbeddingStore.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Initializer.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/PlanTypes.h"

#include <cmath>
#include <cstring>

using namespace heterps;
using namespace heterps::runtime;

EmbeddingStore::~EmbeddingStore() = default;

void EmbeddingStore::pullMany(const std::vector<TablePull> &pulls) {
  for (const TablePull &p : pulls)
    pull(p.table, p.keys, p.n, p.rows);
}

void EmbeddingStore::pushMany(const std::vector<TablePush> &pushes) {
  for (const TablePush &p : pushes)
    push(p.table, p.keys, p.n, p.grads);
}

void EmbeddingStore::pushManyThenPull(const std::vector<TablePush> &pushes,
                                      const std::vector<TablePull> &pulls) {
  pushMany(pushes);
  if (!pulls.empty())
    pullMany(pulls);
}

bool EmbeddingStore::createDense(const std::string &name, const Tensor &,
                                 const OptimizerConfig &) {
  fail("dense tensor '", name,
       "': these tables keep no dense tensors; asynchronous training "
       "keeps them in a PS service");
}

void EmbeddingStore::pullDense(const std::string &name, Tensor &) {
  fail("dense tensor '", name, "': these tables keep none");
}

void EmbeddingStore::pushDense(const std::string &name, const Tensor &) {
  fail("dense tensor '", name, "': these tables keep none");
}

static OptimizerConfig configOf(const plan::Optimizer &o,
                                const std::string &what) {
  OptimizerConfig c;
  c.kind = OptimizerConfig::parseKind(o.kind(), what);
  c.learningRate = o.learning_rate();
  c.momentum = o.momentum();
  c.beta1 = o.beta1();
  c.beta2 = o.beta2();
  c.epsilon = o.epsilon();
  c.weightDecay = o.weight_decay();
  return c;
}

LocalEmbeddingStore::LocalEmbeddingStore(const plan::Plan &plan,
                                         uint64_t seed) {
  for (const plan::SparseTable &t : plan.tables()) {
    auto table = std::make_unique<Table>();
    table->info = {t.id(), t.name(), t.vocab(), t.dim()};
    std::string what =
        "table " + std::to_string(t.id()) + " '" + t.name() + "'";
    table->optimizer = configOf(t.optimizer(), what);
    if (t.has_value()) {
      table->rows = tensorFromData(t.value(), what);
      if (table->rows.shape() != Shape{t.vocab(), t.dim()})
        fail(what, ": initial rows of shape ", shapeString(table->rows.shape()),
             ", expected ", t.vocab(), "x", t.dim());
    } else {
      std::vector<double> args(t.init().args().begin(), t.init().args().end());
      if (std::string error = initializerError(t.init().kind(), args);
          !error.empty())
        fail(what, ": ", error);
      table->rows = Tensor(DType::F32, {t.vocab(), t.dim()});
      initializeTensor(table->rows, t.init().kind(), args,
                       seed * 31 + static_cast<uint64_t>(t.id()));
    }
    tables.push_back(std::move(table));
  }
}

LocalEmbeddingStore::Table &LocalEmbeddingStore::get(int id) {
  if (id < 0 || id >= static_cast<int>(tables.size()))
    fail("unknown embedding table id ", id, " (the plan has ", tables.size(),
         ")");
  return *tables[id];
}

const TableInfo &LocalEmbeddingStore::table(int id) const {
  return const_cast<LocalEmbeddingStore *>(this)->get(id).info;
}

int LocalEmbeddingStore::tableId(const std::string &name) const {
  for (const auto &t : tables)
    if (t->info.name == name)
      return t->info.id;
  fail("no embedding table '", name, "' in the plan");
}

static int64_t rowOf(int64_t key, int64_t vocab) {
  return static_cast<int64_t>(tableKey(key, static_cast<uint64_t>(vocab)));
}

void LocalEmbeddingStore::pull(int id, const int64_t *keys, int64_t n,
                               float *out) {
  Table &t = get(id);
  int64_t dim = t.info.dim;
  const float *rows = t.rows.as<float>();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * dim, rows + rowOf(keys[i], t.info.vocab) * dim,
                dim * sizeof(float));
}

void LocalEmbeddingStore::push(int id, const int64_t *keys, int64_t n,
                               const float *grads) {
  Table &t = get(id);
  int64_t dim = t.info.dim;
  for (int64_t i = 0; i < n * dim; ++i)
    if (!std::isfinite(grads[i]))
      fail("table ", id, " '", t.info.name, "': non-finite gradient for key ",
           keys[i / dim]);
  std::lock_guard<std::mutex> lock(t.mutex);
  // Duplicates are merged so that one push is one optimizer step per row.
  // A row-indexed slot array finds a row's merged gradient in O(1); only the
  // slots this push touched are cleared afterwards. The buffers belong to
  // the table and keep their capacity between pushes.
  std::vector<int32_t> &slot = t.mergeSlot;
  std::vector<int64_t> &order = t.mergeOrder;
  std::vector<float> &merged = t.mergeRows;
  if (slot.empty())
    slot.assign(t.info.vocab, -1);
  order.clear();
  merged.resize(n * dim);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = rowOf(keys[i], t.info.vocab);
    const float *g = grads + i * dim;
    int32_t &k = slot[row];
    if (k < 0) {
      k = static_cast<int32_t>(order.size());
      order.push_back(row);
      std::copy(g, g + dim, merged.data() + k * dim);
    } else {
      float *dst = merged.data() + k * dim;
      for (int64_t j = 0; j < dim; ++j)
        dst[j] += g[j];
    }
  }
  for (int64_t row : order)
    slot[row] = -1;
  int slots = t.optimizer.stateSlots();
  if (slots && t.state.empty()) {
    t.state = Tensor(DType::F32, {t.info.vocab, slots * dim});
    t.steps.assign(t.info.vocab, 0);
  }
  float *rows = t.rows.as<float>();
  for (size_t k = 0; k < order.size(); ++k) {
    int64_t row = order[k];
    int64_t step = slots ? ++t.steps[row] : 1;
    applyUpdate(t.optimizer, rows + row * dim, merged.data() + k * dim,
                slots ? t.state.as<float>() + row * slots * dim : nullptr, dim,
                step);
  }
}

Tensor &LocalEmbeddingStore::rows(int id) { return get(id).rows; }
Tensor &LocalEmbeddingStore::state(int id) { return get(id).state; }
std::vector<int64_t> &LocalEmbeddingStore::steps(int id) {
  return get(id).steps;
}
