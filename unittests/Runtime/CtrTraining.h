//===- CtrTraining.h - Batches and steps of the CTR test model -*- C++ -*-===//
//
// The inputs of the CTR model of Inputs/ctr-model.mlir and
// Inputs/ctr-two-stages.mlir (4 dense features, a bag of 3 ids, a 0/1
// label) and a few training steps on it, for the tests that compare where
// it runs (CPU, a GPU, the test device, a pipeline). No MLIR: the GPU tests
// include it too.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_RUNTIME_CTRTRAINING_H
#define HETERPS_UNITTESTS_RUNTIME_CTRTRAINING_H

#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/Program.h"
#include "heterps/plan.pb.h"

#include <random>
#include <string>
#include <vector>

namespace heterps::fixtures {

/// `n` examples: normal dense features, ids below `vocab`, 0/1 labels.
struct CtrBatch {
  runtime::Tensor dense, ids, label;
  CtrBatch(int64_t n, uint32_t seed, int64_t vocab = 1000)
      : dense(runtime::DType::F32, {n, 4}), ids(runtime::DType::I64, {n, 3}),
        label(runtime::DType::F32, {n, 1}) {
    std::mt19937 rng(seed);
    for (int64_t i = 0; i < n * 4; ++i)
      dense.as<float>()[i] = std::normal_distribution<float>()(rng);
    for (int64_t i = 0; i < n * 3; ++i)
      ids.as<int64_t>()[i] = static_cast<int64_t>(rng() % vocab);
    for (int64_t i = 0; i < n; ++i)
      label.as<float>()[i] = static_cast<float>(rng() % 2);
  }
  std::vector<const runtime::Tensor *> inputs() {
    return {&dense, &ids, &label};
  }
};

/// Puts every stage of `plan` on a resource of kind `kind`.
inline plan::Plan placeStages(plan::Plan plan, const std::string &kind) {
  for (plan::Stage &stage : *plan.mutable_stages()) {
    stage.set_kind(kind);
    stage.set_resource(kind + "-pool");
  }
  return plan;
}

/// Trains `steps` steps of 32 examples in one worker and returns the
/// parameters and the row of id 7 of table `t`.
inline std::vector<std::vector<float>>
trainCtr(const plan::Plan &plan, const runtime::ProgramOptions &options,
         int steps) {
  runtime::ParamStore params(plan, 1);
  runtime::LocalEmbeddingStore tables(plan, 1);
  runtime::Program program(plan, params, tables, options);
  for (int s = 0; s < steps; ++s) {
    CtrBatch batch(32, 100 + s);
    program.run(batch.inputs(), true, {0});
  }
  std::vector<std::vector<float>> state;
  for (const auto &[name, param] : params.all())
    state.emplace_back(param.value.as<float>(),
                       param.value.as<float>() + param.value.numElements());
  std::vector<float> row(8);
  int64_t key = 7;
  tables.pull(tables.tableId("t"), &key, 1, row.data());
  state.push_back(row);
  return state;
}

} // namespace heterps::fixtures

#endif // HETERPS_UNITTESTS_RUNTIME_CTRTRAINING_H
