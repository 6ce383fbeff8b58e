//===- ParamStore.h - Dense parameters and optimizer state ------*- C++ -*-===//

#ifndef HETERPS_RUNTIME_PARAMSTORE_H
#define HETERPS_RUNTIME_PARAMSTORE_H

#include "heterps/Runtime/Optimizer.h"
#include "heterps/Runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace heterps::plan {
class Plan;
} // namespace heterps::plan

namespace heterps::runtime {

struct DenseParameter {
  std::string name;
  Tensor value;
  bool frozen = false;
  /// Optimizer state (stateSlots() x value's elements) and its step count.
  Tensor state;
  int64_t steps = 0;
};

/// The dense parameters of a plan: initial values from the plan, or drawn
/// from their initializers with `seed`.
class ParamStore {
public:
  ParamStore(const plan::Plan &plan, uint64_t seed);

  DenseParameter &get(const std::string &name);
  const std::map<std::string, DenseParameter> &all() const { return params; }
  std::map<std::string, DenseParameter> &all() { return params; }

  /// One optimizer step on `name` with gradient `grad`.
  void update(const std::string &name, const Tensor &grad,
              const OptimizerConfig &config);

private:
  std::map<std::string, DenseParameter> params;
};

/// Fills `t` (f32) from an initializer spec (#heterps.init kinds); fans come
/// from the shape as PyTorch computes them.
void initializeTensor(Tensor &t, const std::string &kind,
                      const std::vector<double> &args, uint64_t seed);
/// Fills `n` floats at `p` as initializeTensor fills a tensor of shape
/// `fanShape` (which only sets the fans): a table row draws its values with
/// the fans of the whole table.
void initializeValues(float *p, int64_t n, const Shape &fanShape,
                      const std::string &kind, const std::vector<double> &args,
                      uint64_t seed);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PARAMSTORE_H
