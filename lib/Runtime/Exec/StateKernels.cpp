//===- StateKernels.cpp - Kernels that touch parameters and tables --------===//
//
// Parameter loads are views of the parameter's storage (no copy per step);
// updates and pushes go through the ParamStore and the EmbeddingStore, so
// these kernels are the same whether the tables are local or remote. The
// GPU column's loads and updates are views and updates of the parameter's
// device copy, through the DeviceRuntime, so that one pair of kernels
// serves every device.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Kernel.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/TableBatch.h"

#include <cstring>

using namespace heterps::runtime;

namespace {

class LoadParamKernel : public Kernel {
public:
  explicit LoadParamKernel(const OpInfo &op)
      : Kernel(op), name(op.getString("name")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &) override {
    return {info.outputTypes()[0].dims};
  }
  void run(const std::vector<const Tensor *> &,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    DenseParameter &p = ctx.params->get(name);
    res[0]->reset(p.value.dtype(), p.value.shape(), p.value.data());
  }
  bool outputsAreViews() const override { return true; }

private:
  std::string name;
};

class UpdateParamKernel : public Kernel {
public:
  explicit UpdateParamKernel(const OpInfo &op)
      : Kernel(op), name(op.getString("name")), config(updateOptimizerOf(op)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &) override { return {}; }
  void run(const std::vector<const Tensor *> &in, const std::vector<Tensor *> &,
           ExecContext &ctx) override {
    ctx.params->update(name, *in[0], config);
  }

private:
  std::string name;
  OptimizerConfig config;
};

/// The device's copy of a parameter, as a view in device memory.
class DeviceLoadParamKernel : public Kernel {
public:
  explicit DeviceLoadParamKernel(const OpInfo &op)
      : Kernel(op), name(op.getString("name")) {}
  std::vector<Shape> prepare(const std::vector<Shape> &) override {
    return {info.outputTypes()[0].dims};
  }
  void run(const std::vector<const Tensor *> &,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    DenseParameter &p = ctx.params->onDevice(name, deviceOf(info, ctx));
    res[0]->reset(p.deviceValue.dtype(), p.deviceValue.shape(),
                  p.deviceValue.data());
  }
  bool outputsAreViews() const override { return true; }

  static DeviceRuntime &deviceOf(const OpInfo &op, ExecContext &ctx) {
    if (!ctx.gpu)
      fail(op.describe(), " runs on the GPU column without a GPU");
    return *ctx.gpu;
  }

private:
  std::string name;
};

/// An optimizer step on the device's copy of a parameter, its gradient in
/// device memory.
class DeviceUpdateParamKernel : public Kernel {
public:
  explicit DeviceUpdateParamKernel(const OpInfo &op)
      : Kernel(op), name(op.getString("name")), config(updateOptimizerOf(op)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &) override { return {}; }
  void run(const std::vector<const Tensor *> &in, const std::vector<Tensor *> &,
           ExecContext &ctx) override {
    DeviceRuntime &device = DeviceLoadParamKernel::deviceOf(info, ctx);
    DenseParameter &p = ctx.params->onDevice(name, device);
    const Tensor &grad = *in[0];
    if (grad.shape() != p.deviceValue.shape())
      fail("gradient of '", name, "' has shape ", shapeString(grad.shape()),
           ", the parameter ", shapeString(p.deviceValue.shape()));
    int64_t slots = config.stateSlots(), n = p.deviceValue.numElements();
    if (slots &&
        (p.deviceState.empty() || p.deviceState.shape() != Shape{slots, n}))
      p.deviceState = device.allocate(DType::F32, {slots, n});
    ++p.steps;
    device.applyUpdate(config, p.deviceValue, grad, p.deviceState, p.steps);
  }

private:
  std::string name;
  OptimizerConfig config;
};

/// The ids as 64-bit keys: the tensor's own memory for i64 ids, else a copy
/// into `scratch` (whose capacity is kept from step to step).
const int64_t *keysOf(const Tensor &ids, std::vector<int64_t> &scratch) {
  if (ids.dtype() == DType::I64 || ids.dtype() == DType::U64)
    return ids.as<int64_t>();
  if (ids.dtype() != DType::I32)
    fail("embedding ids of element type ", dtypeName(ids.dtype()),
         "; expected i64 or i32");
  scratch.resize(ids.numElements());
  for (size_t i = 0; i < scratch.size(); ++i)
    scratch[i] = ids.as<int32_t>()[i];
  return scratch.data();
}

enum class Combiner { None, Sum, Mean };
Combiner combinerOf(const OpInfo &op) {
  std::string c = op.getString("combiner", "none");
  if (c == "sum")
    return Combiner::Sum;
  if (c == "mean")
    return Combiner::Mean;
  if (c == "none")
    return Combiner::None;
  fail(op.describe(), ": unknown combiner '", c, "'");
}

/// Resolves the table name to the store's id on first use.
class TableKernel : public Kernel {
public:
  TableKernel(const OpInfo &op)
      : Kernel(op), tableName(op.getString("table")) {}

protected:
  int tableOf(ExecContext &ctx) {
    if (tableId < 0) {
      tableId = ctx.tables->tableId(tableName);
      dim = ctx.tables->table(tableId).dim;
    }
    // The rows the op's types promise must be the table's: the kernels
    // copy `dim` floats per row into buffers planned from the types.
    if (rowDim != dim)
      fail(info.describe(), ": table '", tableName, "' has dim ", dim,
           ", the op's rows have ", rowDim);
    return tableId;
  }
  /// The row width of the op's result type (lookups, pulls).
  int64_t resultRowDim() const {
    const Shape &dims = info.outputTypes()[0].dims;
    if (dims.empty())
      fail(info.describe(), ": the result is a scalar");
    return dims.back();
  }
  std::string tableName;
  int tableId = -1;
  int64_t dim = 0, rowDim = -1;
};

class EmbeddingLookupKernel : public TableKernel {
public:
  explicit EmbeddingLookupKernel(const OpInfo &op)
      : TableKernel(op), combiner(combinerOf(op)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    int64_t d = rowDim = resultRowDim();
    Shape out = in[0];
    if (combiner == Combiner::None) {
      out.push_back(d);
    } else {
      if (out.empty())
        fail(info.describe(), ": a bag combiner needs ids of rank >= 1");
      bag = out.back();
      out.back() = d;
    }
    return {out};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    int id = tableOf(ctx);
    int64_t n = in[0]->numElements();
    const float *pulled =
        ctx.batch ? ctx.batch->rowsFor(&info.planOp()) : nullptr;
    if (combiner == Combiner::None) {
      if (pulled)
        std::memcpy(res[0]->data(), pulled, n * dim * sizeof(float));
      else
        ctx.tables->pull(id, keysOf(*in[0], keyScratch), n,
                         res[0]->as<float>());
      return;
    }
    const float *rows = pulled;
    if (!rows) {
      if (scratch.rank() != 2 || scratch.dim(0) != n || scratch.dim(1) != dim)
        scratch.resize(DType::F32, {n, dim});
      ctx.tables->pull(id, keysOf(*in[0], keyScratch), n, scratch.as<float>());
      rows = scratch.as<float>();
    }
    float *out = res[0]->as<float>();
    int64_t bags = bag ? n / bag : 0;
    float scale = combiner == Combiner::Mean && bag ? 1.0f / bag : 1.0f;
    for (int64_t b = 0; b < bags; ++b) {
      float *o = out + b * dim;
      std::fill(o, o + dim, 0.0f);
      for (int64_t j = 0; j < bag; ++j) {
        const float *r = rows + (b * bag + j) * dim;
        for (int64_t k = 0; k < dim; ++k)
          o[k] += r[k];
      }
      for (int64_t k = 0; k < dim; ++k)
        o[k] *= scale;
    }
  }

private:
  Combiner combiner;
  int64_t bag = 1;
  Tensor scratch;
  std::vector<int64_t> keyScratch;
};

/// heterps.embedding_grad: (ids, result_grad) -> (keys, rows).
class EmbeddingGradKernel : public Kernel {
public:
  explicit EmbeddingGradKernel(const OpInfo &op)
      : Kernel(op), combiner(combinerOf(op)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in[1].empty())
      fail(info.describe(), ": the gradient is a scalar");
    n = numElements(in[0]);
    dim = in[1].back();
    bool pooled = combiner != Combiner::None && !in[0].empty();
    bag = pooled ? in[0].back() : 1;
    // The gradient has the lookup's shape: one row per id, or per bag.
    Shape expected(in[0].begin(), in[0].end() - (pooled ? 1 : 0));
    expected.push_back(dim);
    if (in[1] != expected)
      fail(info.describe(), ": the gradient is ", shapeString(in[1]),
           ", ids of shape ", shapeString(in[0]), " need ",
           shapeString(expected));
    return {{n}, {n, dim}};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &) override {
    std::memcpy(res[0]->data(), keysOf(*in[0], keyScratch),
                n * sizeof(int64_t));
    const float *dy = in[1]->as<float>();
    float *rows = res[1]->as<float>();
    float scale = combiner == Combiner::Mean ? 1.0f / bag : 1.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float *src = dy + (i / bag) * dim;
      for (int64_t k = 0; k < dim; ++k)
        rows[i * dim + k] = src[k] * scale;
    }
  }

private:
  Combiner combiner;
  int64_t n = 0, dim = 0, bag = 1;
  std::vector<int64_t> keyScratch;
};

class PSPullKernel : public TableKernel {
public:
  using TableKernel::TableKernel;
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    rowDim = resultRowDim();
    return {{numElements(in[0]), rowDim}};
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &res, ExecContext &ctx) override {
    int id = tableOf(ctx);
    int64_t n = in[0]->numElements();
    if (const float *pulled =
            ctx.batch ? ctx.batch->rowsFor(&info.planOp()) : nullptr) {
      std::memcpy(res[0]->data(), pulled, n * dim * sizeof(float));
      return;
    }
    ctx.tables->pull(id, keysOf(*in[0], keyScratch), n, res[0]->as<float>());
  }

private:
  std::vector<int64_t> keyScratch;
};

class PSPushKernel : public TableKernel {
public:
  using TableKernel::TableKernel;
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    if (in[1].size() != 2 || in[1][0] != numElements(in[0]))
      fail(info.describe(), ": ", numElements(in[0]),
           " keys but gradients of shape ", shapeString(in[1]));
    rowDim = in[1][1];
    return {};
  }
  void run(const std::vector<const Tensor *> &in, const std::vector<Tensor *> &,
           ExecContext &ctx) override {
    int id = tableOf(ctx);
    if (ctx.batch && ctx.batch->collectingPushes) {
      ctx.batch->addPush(id, keysOf(*in[0], keyScratch), in[0]->numElements(),
                         dim, in[1]->as<float>());
      return;
    }
    ctx.tables->push(id, keysOf(*in[0], keyScratch), in[0]->numElements(),
                     in[1]->as<float>());
  }

private:
  std::vector<int64_t> keyScratch;
};

template <typename K> void add(KernelRegistry &r, const std::string &name) {
  r.add(name, DeviceKind::CPU,
        [](const OpInfo &op) { return std::make_unique<K>(op); });
}

} // namespace

namespace heterps::runtime {
OptimizerConfig updateOptimizerOf(const OpInfo &op) {
  OptimizerConfig config;
  config.kind = OptimizerConfig::parseKind(op.getString("kind"), op.describe());
  config.learningRate = op.getFloat("learning_rate");
  config.momentum = op.getFloat("momentum", 0.0);
  config.beta1 = op.getFloat("beta1", 0.9);
  config.beta2 = op.getFloat("beta2", 0.999);
  config.epsilon = op.getFloat("epsilon", 1e-8);
  config.weightDecay = op.getFloat("weight_decay", 0.0);
  if (std::string problem = config.problem(); !problem.empty())
    fail(op.describe(), ": ", problem);
  return config;
}

void registerStateKernels(KernelRegistry &r) {
  add<LoadParamKernel>(r, "heterps.load_param");
  add<UpdateParamKernel>(r, "heterps.update_param");
  add<EmbeddingLookupKernel>(r, "heterps.embedding_lookup");
  add<EmbeddingGradKernel>(r, "heterps.embedding_grad");
  add<PSPullKernel>(r, "heterps.ps_pull");
  add<PSPushKernel>(r, "heterps.ps_push");
}

void registerDeviceStateKernels(KernelRegistry &r) {
  r.add("heterps.load_param", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<DeviceLoadParamKernel>(op);
  });
  r.add("heterps.update_param", DeviceKind::GPU, [](const OpInfo &op) {
    return std::make_unique<DeviceUpdateParamKernel>(op);
  });
}
} // namespace heterps::runtime
