//===- ProgramTest.cpp - The executor's memory plan -----------------------===//
//
// A steady-state training step allocates nothing: the memory plan of a
// batch size is built at its first step and reused, kernels keep their
// scratch. Counted with a replaced global operator new, so it covers the
// executor, the kernels and the table store; oneDNN's execute allocates a
// few objects per call itself (inside a ForeignCallScope), which are not
// counted.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Program.h"
#include "CtrModel.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/PS/Client.h"
#include "heterps/PS/LocalConnection.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Target/Plan/PlanEmitter.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <random>

/// Heap allocations made so far outside foreign calls
/// (CountingAllocator.cpp replaces the global operator new).
long heapAllocations();

using namespace heterps;
using namespace heterps::runtime;

namespace {

plan::Plan compile(const std::string &optimizer) {
  return fixtures::compileCtrModel(optimizer);
}

struct Batch {
  Tensor dense, ids, label;
  explicit Batch(int64_t n)
      : dense(DType::F32, {n, 4}), ids(DType::I64, {n, 3}),
        label(DType::F32, {n, 1}) {
    std::mt19937 rng(n);
    for (int64_t i = 0; i < n * 4; ++i)
      dense.as<float>()[i] = std::normal_distribution<float>()(rng);
    for (int64_t i = 0; i < n * 3; ++i)
      ids.as<int64_t>()[i] = rng() % 5000; // beyond vocab: hashed
    for (int64_t i = 0; i < n; ++i)
      label.as<float>()[i] = static_cast<float>(rng() % 2);
  }
  std::vector<const Tensor *> inputs() { return {&dense, &ids, &label}; }
};

class SteadyState : public ::testing::TestWithParam<const char *> {};

TEST_P(SteadyState, TrainingStepsAllocateNothing) {
  plan::Plan p = compile(GetParam());
  ParamStore params(p, 1);
  LocalEmbeddingStore tables(p, 1);
  Program program(p, params, tables, ProgramOptions{});
  Batch big(64), small(10);
  int loss = p.training().loss_output();
  // The first step of each batch size plans memory and creates primitives
  // (an epoch's last, smaller batch); coming back to a size reuses its plan.
  for (int i = 0; i < 2; ++i) {
    program.run(big.inputs(), true, {loss});
    program.run(small.inputs(), true, {loss});
  }
  program.run(big.inputs(), true, {loss});
  EXPECT_EQ(program.memoryPlans(), 2u);
  std::vector<const Tensor *> inputs = big.inputs();
  std::vector<int> outputs{loss};
  long before = heapAllocations();
  float first = 0, last = 0;
  for (int i = 0; i < 20; ++i) {
    const Tensor *l = program.run(inputs, true, outputs)[0];
    (i == 0 ? first : last) = l->as<float>()[0];
  }
  EXPECT_EQ(heapAllocations() - before, 0)
      << "allocations in 20 steady-state steps";
  EXPECT_LT(last, first) << "the loss of a repeated batch goes down";
}

// The same through the PS client and the embedded server, as heterps-run
// trains by default: lookups and pushes reuse the client's and the shard's
// buffers once every row exists.
TEST_P(SteadyState, StepsThroughTheEmbeddedPSAllocateNothing) {
  plan::Plan p = compile(GetParam());
  ParamStore params(p, 1);
  ps::Shard shard(ps::ShardOptions{});
  std::vector<std::unique_ptr<ps::Connection>> servers;
  servers.push_back(ps::connectLocal(shard));
  ps::Client tables(std::move(servers));
  tables.createTables(p, 1);
  Program program(p, params, tables, ProgramOptions{});
  Batch big(64);
  int loss = p.training().loss_output();
  for (int i = 0; i < 3; ++i)
    program.run(big.inputs(), true, {loss});
  std::vector<const Tensor *> inputs = big.inputs();
  std::vector<int> outputs{loss};
  long before = heapAllocations();
  for (int i = 0; i < 20; ++i)
    program.run(inputs, true, outputs);
  EXPECT_EQ(heapAllocations() - before, 0)
      << "allocations in 20 steady-state steps";
}

INSTANTIATE_TEST_SUITE_P(Optimizers, SteadyState,
                         ::testing::Values("sgd", "adam", "adagrad"));

/// nn.EmbeddingBag with offsets: every id's row, a sum per bag.
const char *kBagModel = R"mlir(
heterps.embedding_table @t {vocab = 100 : i64, dim = 4 : i64, initializer = #heterps.init<uniform(-0.5, 0.5)>}
func.func @main(%ids: tensor<?xi64> {heterps.name = "ids", heterps.bag_offsets = 1 : i64},
                %offsets: tensor<?xi64> {heterps.name = "offsets"}) -> tensor<?x4xf32> {
  %r = heterps.embedding_lookup @t[%ids] : (tensor<?xi64>) -> tensor<?x4xf32>
  %e = heterps.segment_reduce sum %r, %offsets : (tensor<?x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  return %e : tensor<?x4xf32>
}
)mlir";

TEST(Program, BagInputsShareMemoryPlansAcrossIdCounts) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kBagModel, &context);
  ASSERT_TRUE(module);
  plan::Plan p;
  ASSERT_TRUE(mlir::succeeded(mlir::heterps::emitPlan(*module, {}, p)));
  ParamStore params(p, 1);
  LocalEmbeddingStore tables(p, 1);
  Program program(p, params, tables, ProgramOptions{});
  const Tensor &rows = tables.rows(0);
  std::mt19937 rng(3);
  // 30 batches of 16 bags of 0 to 7 ids: 0 to 112 ids, two capacities.
  for (int step = 0; step < 30; ++step) {
    Tensor offsets(DType::I64, {16});
    int64_t total = 0;
    for (int64_t b = 0; b < 16; ++b) {
      offsets.as<int64_t>()[b] = total;
      total += rng() % 8;
    }
    Tensor ids(DType::I64, {total});
    for (int64_t i = 0; i < total; ++i)
      ids.as<int64_t>()[i] = rng() % 100;
    const Tensor &out = *program.run({&ids, &offsets}, false, {0})[0];
    ASSERT_EQ(out.shape(), (Shape{16, 4})) << "step " << step;
    for (int64_t b = 0; b < 16; ++b) {
      int64_t end = b + 1 < 16 ? offsets.as<int64_t>()[b + 1] : total;
      for (int64_t k = 0; k < 4; ++k) {
        float expected = 0;
        for (int64_t i = offsets.as<int64_t>()[b]; i < end; ++i)
          expected += rows.as<float>()[ids.as<int64_t>()[i] * 4 + k];
        EXPECT_FLOAT_EQ(out.as<float>()[b * 4 + k], expected)
            << "step " << step << ", bag " << b;
      }
    }
  }
  EXPECT_LE(program.memoryPlans(), 2u) << "one plan per capacity of ids";

  // Bags past the ids are refused, naming the op and the offset.
  Tensor ids(DType::I64, {3}), offsets(DType::I64, {2});
  offsets.as<int64_t>()[1] = 5;
  try {
    program.run({&ids, &offsets}, false, {0});
    ADD_FAILURE() << "offsets beyond the ids were accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "offsets[1] = 5 is beyond the 3 rows of the bags"),
              std::string::npos)
        << e.what();
  }
}

TEST(Program, InferenceSkipsLabelsAndUpdates) {
  plan::Plan p = compile("sgd");
  ParamStore params(p, 1);
  LocalEmbeddingStore tables(p, 1);
  Program program(p, params, tables, ProgramOptions{});
  Batch b(8);
  Tensor before = params.get("w1").value.clone();
  std::vector<const Tensor *> inputs = b.inputs();
  inputs[2] = nullptr; // no label
  const Tensor *y = program.run(inputs, false, {0})[0];
  EXPECT_EQ(y->shape(), (Shape{8, 1}));
  EXPECT_EQ(std::memcmp(before.data(), params.get("w1").value.data(),
                        before.byteSize()),
            0);
}

} // namespace
