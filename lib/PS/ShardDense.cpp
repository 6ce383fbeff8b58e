//===- ShardDense.cpp - A PS shard's dense tensors ------------------------===//
//
// The dense parameters the asynchronous mode keeps on a PS server, with
// their optimizer state.
//
//===----------------------------------------------------------------------===//

#include "ShardState.h"

#include "heterps/Support/CheckedMath.h"

#include <cmath>
#include <optional>

using namespace heterps;
using namespace heterps::ps;
using namespace heterps::ps::detail;

//===----------------------------------------------------------------------===//
// Dense tensors
//===----------------------------------------------------------------------===//

Status Shard::createDense(const v1::DenseTensor &tensor,
                          const v1::Optimizer &optimizer, bool *created) {
  const std::string &name = tensor.name();
  if (serverOfName(name, opts.count) != opts.index)
    return Status::error(Code::FailedPrecondition,
                         str("dense tensor '", name, "' belongs to PS server ",
                             serverOfName(name, opts.count), " of ",
                             opts.count));
  std::optional<int64_t> elements = checkedProduct(tensor.shape());
  if (!elements || *elements > (int64_t(1) << 36))
    return Status::error(Code::InvalidArgument,
                         str("dense tensor '", name,
                             "': its dimensions are negative or make more "
                             "than 2^36 elements"));
  size_t n = static_cast<size_t>(*elements);
  if (tensor.values().size() != static_cast<size_t>(n) * sizeof(float))
    return Status::error(Code::InvalidArgument,
                         str("dense tensor '", name, "': ", n,
                             " elements need ", n * 4, " bytes of values, got ",
                             tensor.values().size()));
  auto d = std::make_shared<Dense>();
  if (Status s =
          toOptimizer(optimizer, "dense tensor '" + name + "'", &d->optimizer);
      !s.ok())
    return s;
  d->optimizerProto = optimizer;
  d->shape.assign(tensor.shape().begin(), tensor.shape().end());
  d->value.resize(n);
  if (n)
    std::memcpy(d->value.data(), tensor.values().data(), n * sizeof(float));
  d->state.assign(n * d->optimizer.stateSlots(), 0.0f);
  std::lock_guard<std::mutex> lock(denseMutex);
  if (auto it = dense.find(name); it != dense.end()) {
    if (it->second->shape != d->shape)
      return Status::error(
          Code::AlreadyExists,
          str("dense tensor '", name, "' exists with another shape"));
    *created = false;
    return {};
  }
  dense[name] = std::move(d);
  *created = true;
  return {};
}

Status Shard::findDense(const std::string &name, std::shared_ptr<Dense> *d) {
  std::lock_guard<std::mutex> lock(denseMutex);
  auto it = dense.find(name);
  if (it == dense.end())
    return Status::error(Code::NotFound, str("no dense tensor '", name,
                                             "' on PS server ", opts.index));
  *d = it->second;
  return {};
}

Status Shard::pullDense(const std::string &name, v1::DenseTensor *tensor) {
  std::shared_ptr<Dense> d;
  if (Status s = findDense(name, &d); !s.ok())
    return s;
  std::lock_guard<std::mutex> l(d->mutex);
  tensor->set_name(name);
  for (int64_t s : d->shape)
    tensor->add_shape(s);
  tensor->set_values(d->value.data(), d->value.size() * sizeof(float));
  return {};
}

Status Shard::pushDense(const std::string &name, const float *grads, size_t n,
                        uint64_t client, uint64_t seq,
                        v1::PushResponse *response) {
  std::shared_ptr<Dense> d;
  if (Status s = findDense(name, &d); !s.ok())
    return s;
  if (n != d->value.size())
    return Status::error(Code::InvalidArgument,
                         str("dense tensor '", name, "': gradient of ", n,
                             " elements, the tensor has ", d->value.size()));
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(grads[i]))
      return Status::error(Code::InvalidArgument,
                           str("dense tensor '", name, "': gradient ", grads[i],
                               " at element ", i, "; rejected"));
  std::unique_lock<std::mutex> cl;
  if (client) {
    ClientSeq &c = clientSeq(client);
    cl = std::unique_lock<std::mutex>(c.mutex);
    if (seq <= c.last) {
      response->set_duplicate(true);
      return {};
    }
    if (Status s = checkSequence(client, c.last, seq); !s.ok())
      return s;
    c.last = seq;
  }
  std::lock_guard<std::mutex> l(d->mutex);
  runtime::applyUpdate(d->optimizer, d->value.data(), grads,
                       d->state.empty() ? nullptr : d->state.data(), n,
                       ++d->steps);
  return {};
}
