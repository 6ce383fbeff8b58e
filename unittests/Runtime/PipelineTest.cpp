//===- PipelineTest.cpp - The pipelined executor --------------------------===//
//
// A synchronous pipelined step equals one worker's step on the whole batch:
// a two-stage CTR model, each stage with two replicas, trained for 20 steps
// under both schedules, leaves the parameters and the table rows where one
// worker leaves them (up to the order of float additions). A failing
// worker stops the step with an error that names its stage and replica. A
// GPU stage runs on the GPU column with copies at its boundaries (checked
// here with the host-memory test device of TestDevice.h).
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Pipeline.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/PS/Client.h"
#include "heterps/PS/LocalConnection.h"
#include "heterps/PS/Shard.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Target/Plan/PlanEmitter.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "../../lib/Runtime/Pipeline/PinnedBuffers.h"
#include "CtrTraining.h"
#include "TestDevice.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

using namespace heterps;
using namespace heterps::runtime;

namespace {

/// Inputs/ctr-two-stages.mlir: a CTR model placed by hand, the lookup and
/// the concat in stage 0, the MLP in stage 1, two units each.
const std::string &twoStageModel() {
  static const std::string text = [] {
    std::ifstream in(HETERPS_UNITTEST_INPUTS "/ctr-two-stages.mlir");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }();
  return text;
}

/// `model` trained with `optimizer`, outlined into its two stages (the
/// first with a backward part) with channels between them.
plan::Plan compile(const char *model, const std::string &optimizer) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(model, &context);
  EXPECT_TRUE(module);
  mlir::PassManager pm(&context);
  mlir::heterps::AutodiffPassOptions autodiff;
  autodiff.loss = mlir::heterps::AddedLoss::bce;
  autodiff.optimizer = *mlir::heterps::symbolizeOptimizerKind(optimizer);
  autodiff.learningRate = 0.05;
  pm.addPass(mlir::heterps::createAutodiffPass(autodiff));
  mlir::heterps::OutlineStagesPassOptions outline;
  outline.microBatches = 4;
  pm.addPass(mlir::heterps::createOutlineStagesPass(outline));
  pm.addPass(mlir::heterps::createInsertPipelineCommPass());
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  plan::Plan p;
  EXPECT_TRUE(mlir::succeeded(mlir::heterps::emitPlan(*module, {}, p)));
  return p;
}

/// Few ids, so that micro-batches and replicas push the same rows.
struct Batch : fixtures::CtrBatch {
  Batch(int64_t n, unsigned seed) : CtrBatch(n, seed, 20) {}
};

/// Largest |a - b| / max(|b|, 1e-3) over two tensors of one shape.
double relativeError(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0;
  for (int64_t i = 0; i < b.numElements(); ++i) {
    double x = a.as<float>()[i], y = b.as<float>()[i];
    worst = std::max(worst, std::fabs(x - y) / std::max(std::fabs(y), 1e-3));
  }
  return worst;
}

/// Runs one training step on `one` and on `pipeline`: the loss (output 0
/// of `outputs`) and the predictions (output 1) agree within 1e-5.
void expectSameStep(Program &one, PipelineExecutor &pipeline,
                    const std::vector<const Tensor *> &inputs,
                    const std::vector<int> &outputs, int step) {
  const std::vector<const Tensor *> &a = one.run(inputs, true, outputs);
  float oneLoss = a[0]->as<float>()[0];
  Tensor onePrediction = a[1]->clone();
  const std::vector<const Tensor *> &b = pipeline.run(inputs, true, outputs);
  EXPECT_NEAR(b[0]->as<float>()[0], oneLoss, 1e-5 * std::fabs(oneLoss))
      << "loss of step " << step;
  EXPECT_LT(relativeError(*b[1], onePrediction), 1e-5)
      << "predictions of step " << step;
}

struct Case {
  const char *optimizer;
  const char *schedule;
  int64_t batch;
  /// Adam and Adagrad divide by the gradient's running magnitude, which
  /// amplifies the float-order differences of near-zero gradients.
  double tolerance = 1e-5;
};

class PipelineExactness : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineExactness, TwentyStepsEqualOneWorker) {
  const Case &c = GetParam();
  plan::Plan p = compile(twoStageModel().c_str(), c.optimizer);
  ASSERT_EQ(p.stages_size(), 2);
  ParamStore oneParams(p, 7), pipeParams(p, 7);
  LocalEmbeddingStore oneTables(p, 7), pipeTables(p, 7);
  Program one(p, oneParams, oneTables, ProgramOptions{});
  PipelineOptions options;
  options.schedule = parsePipelineSchedule(c.schedule);
  options.maxWorkers = 4;
  PipelineExecutor pipeline(p, pipeParams, pipeTables, ProgramOptions{},
                            options);
  ASSERT_EQ(pipeline.mapping().size(), 2u);
  EXPECT_EQ(pipeline.mapping()[0].replicas, 2);
  EXPECT_EQ(pipeline.mapping()[1].replicas, 2);
  EXPECT_EQ(pipeline.mapping()[0].segments, 2) << "forward and backward";
  EXPECT_EQ(pipeline.microBatches(), 4);

  int loss = p.training().loss_output();
  int prediction = loss == 0 ? 1 : 0;
  std::vector<int> outputs{loss, prediction};
  for (int step = 0; step < 20; ++step) {
    Batch batch(c.batch, 100 + step);
    expectSameStep(one, pipeline, batch.inputs(), outputs, step);
  }
  EXPECT_EQ(pipeline.steps(), 20);
  for (auto &[name, param] : oneParams.all())
    EXPECT_LT(relativeError(pipeParams.get(name).value, param.value),
              c.tolerance)
        << "parameter " << name;
  EXPECT_LT(relativeError(pipeTables.rows(0), oneTables.rows(0)), c.tolerance)
      << "table rows";
  // The rows moved: the comparison is not of two untouched tables.
  LocalEmbeddingStore untouched(p, 7);
  EXPECT_GT(relativeError(oneTables.rows(0), untouched.rows(0)), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, PipelineExactness,
    ::testing::Values(Case{"sgd", "1f1b", 64}, Case{"sgd", "gpipe", 64},
                      Case{"momentum", "gpipe", 64},
                      // 37 rows: micro-batches of 10, 9, 9 and 9.
                      Case{"sgd", "1f1b", 37}, Case{"adam", "1f1b", 64, 2e-4},
                      Case{"adagrad", "1f1b", 37, 2e-4}),
    [](const ::testing::TestParamInfo<Case> &info) {
      return std::string(info.param.optimizer) + "_" + info.param.schedule +
             "_batch" + std::to_string(info.param.batch);
    });

/// The CTR model with bags of different sizes (nn.EmbeddingBag with
/// offsets): every id's row, then a mean per bag, in stage 0.
const char *kBagModel = R"mlir(
module attributes {heterps.resources = [#heterps.device<"a", cpu>, #heterps.device<"b", cpu>]} {
heterps.embedding_table @t {vocab = 50 : i64, dim = 8 : i64, initializer = #heterps.init<uniform(-0.1, 0.1)>}
heterps.param @w1 : tensor<12x1xf32> = #heterps.init<xavier_uniform>
func.func @main(%dense: tensor<?x4xf32> {heterps.name = "dense"},
                %ids: tensor<?xi64> {heterps.name = "ids", heterps.bag_offsets = 2 : i64},
                %offsets: tensor<?xi32> {heterps.name = "offsets"}) -> tensor<?x1xf32> {
  %r = heterps.embedding_lookup @t[%ids] {heterps.device = #heterps.device<"a", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 2>} : (tensor<?xi64>) -> tensor<?x8xf32>
  %e = heterps.segment_reduce mean %r, %offsets {heterps.device = #heterps.device<"a", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 2>} : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  %x = heterps.concat %dense, %e {axis = 1 : i64, heterps.device = #heterps.device<"a", cpu>, heterps.stage = #heterps.stage_assignment<index = 0, units = 2>} : (tensor<?x4xf32>, tensor<?x8xf32>) -> tensor<?x12xf32>
  %w1 = heterps.load_param @w1 {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 1>} : tensor<12x1xf32>
  %z = heterps.matmul %x, %w1 {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 1>} : (tensor<?x12xf32>, tensor<12x1xf32>) -> tensor<?x1xf32>
  %p = heterps.sigmoid %z {heterps.device = #heterps.device<"b", cpu>, heterps.stage = #heterps.stage_assignment<index = 1, units = 1>} : tensor<?x1xf32>
  return %p : tensor<?x1xf32>
}
}
)mlir";

/// A batch of `n` bags of 0 to 6 ids each.
struct BagBatch {
  Tensor dense, ids, offsets, label;
  BagBatch(int64_t n, unsigned seed)
      : dense(DType::F32, {n, 4}), offsets(DType::I32, {n}),
        label(DType::F32, {n, 1}) {
    std::mt19937 rng(seed);
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) {
      offsets.as<int32_t>()[i] = static_cast<int32_t>(total);
      total += rng() % 7;
    }
    ids = Tensor(DType::I64, {total});
    for (int64_t i = 0; i < total; ++i)
      ids.as<int64_t>()[i] = rng() % 20;
    for (int64_t i = 0; i < n * 4; ++i)
      dense.as<float>()[i] = std::normal_distribution<float>()(rng);
    for (int64_t i = 0; i < n; ++i)
      label.as<float>()[i] = static_cast<float>(rng() % 2);
  }
  std::vector<const Tensor *> inputs() {
    return {&dense, &ids, &offsets, &label};
  }
};

TEST(Pipeline, BagsSplitByOffsetsTrainAsOneWorker) {
  // Micro-batches of 10, 9, 9 and 9 bags take the ids between their first
  // bag's start and the next micro-batch's; two replicas in stage 0.
  plan::Plan p = compile(kBagModel, "sgd");
  ASSERT_EQ(p.stages_size(), 2);
  ParamStore oneParams(p, 7), pipeParams(p, 7);
  LocalEmbeddingStore oneTables(p, 7), pipeTables(p, 7);
  Program one(p, oneParams, oneTables, ProgramOptions{});
  PipelineOptions options;
  options.maxWorkers = 4;
  PipelineExecutor pipeline(p, pipeParams, pipeTables, ProgramOptions{},
                            options);
  EXPECT_EQ(pipeline.microBatches(), 4);
  int loss = p.training().loss_output();
  std::vector<int> outputs{loss, loss == 0 ? 1 : 0};
  for (int step = 0; step < 10; ++step) {
    BagBatch batch(37, 200 + step);
    expectSameStep(one, pipeline, batch.inputs(), outputs, step);
  }
  for (auto &[name, param] : oneParams.all())
    EXPECT_LT(relativeError(pipeParams.get(name).value, param.value), 1e-5)
        << "parameter " << name;
  EXPECT_LT(relativeError(pipeTables.rows(0), oneTables.rows(0)), 1e-5)
      << "table rows";
  LocalEmbeddingStore untouched(p, 7);
  EXPECT_GT(relativeError(oneTables.rows(0), untouched.rows(0)), 1e-3);

  // Offsets that decrease are refused before the batch is split.
  BagBatch bad(8, 1);
  const int32_t decreasing[] = {0, 0, 1, 0, 1, 1, 1, 1};
  std::copy(std::begin(decreasing), std::end(decreasing),
            bad.offsets.as<int32_t>());
  try {
    pipeline.run(bad.inputs(), true, outputs);
    ADD_FAILURE() << "decreasing offsets were accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("input 'ids': the bag offsets "
                                         "decrease at offsets[3]"),
              std::string::npos)
        << e.what();
  }
}

/// Tables whose pulls fail after a number of calls, as a PS that goes away
/// mid-training does.
class FailingStore : public LocalEmbeddingStore {
public:
  FailingStore(const plan::Plan &plan, int pullsBeforeFailing)
      : LocalEmbeddingStore(plan, 1), left(pullsBeforeFailing) {}
  void pull(int table, const int64_t *keys, int64_t n, float *rows) override {
    if (left-- <= 0)
      fail("pulling table ", table, ": UNAVAILABLE");
    LocalEmbeddingStore::pull(table, keys, n, rows);
  }

private:
  std::atomic<int> left;
};

TEST(Pipeline, AFailingWorkerNamesItsStage) {
  plan::Plan p = compile(twoStageModel().c_str(), "sgd");
  ParamStore params(p, 1);
  FailingStore tables(p, 6);
  PipelineOptions options;
  options.maxWorkers = 4;
  PipelineExecutor pipeline(p, params, tables, ProgramOptions{}, options);
  Batch batch(64, 1);
  int loss = p.training().loss_output();
  pipeline.run(batch.inputs(), true, {loss});
  try {
    pipeline.run(batch.inputs(), true, {loss});
    FAIL() << "the second step pulls more than the store allows";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("stage 0 replica "), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("UNAVAILABLE"), std::string::npos)
        << e.what();
  }
  try {
    pipeline.run(batch.inputs(), true, {loss});
    FAIL() << "a pipeline that failed does not run again";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("stopped after an error"),
              std::string::npos)
        << e.what();
  }
}

/// The two-stage model with stage 1 (the MLP, two replicas) on a GPU
/// resource, the lookup stage on the CPU: the heterogeneous plan of the
/// paper; with `allGpu`, stage 0 (the lookup and the concat) too.
plan::Plan withGpuMlp(const std::string &optimizer, bool allGpu = false) {
  plan::Plan p = compile(twoStageModel().c_str(), optimizer.c_str());
  p.mutable_stages(1)->set_kind("gpu");
  if (allGpu)
    p.mutable_stages(0)->set_kind("gpu");
  return p;
}

/// One step on each executor; the losses and predictions are equal.
void expectEqualSteps(PipelineExecutor &a, PipelineExecutor &b,
                      const std::vector<const Tensor *> &inputs,
                      const std::vector<int> &outputs, int step) {
  const std::vector<const Tensor *> &x = a.run(inputs, true, outputs);
  float loss = x[0]->as<float>()[0];
  Tensor prediction = x[1]->clone();
  const std::vector<const Tensor *> &y = b.run(inputs, true, outputs);
  EXPECT_EQ(y[0]->as<float>()[0], loss) << "loss of step " << step;
  ASSERT_EQ(y[1]->space(), MemorySpace::Host);
  EXPECT_EQ(relativeError(*y[1], prediction), 0) << "prediction of " << step;
}

TEST(Pipeline, AGpuStageTrainsAsTheCpuWithCopiesAtItsBoundaries) {
  for (auto [optimizer, allGpu] :
       {std::pair("sgd", false), std::pair("adam", false),
        std::pair("adam", true)}) {
    SCOPED_TRACE(std::string(optimizer) + (allGpu ? ", all on the GPU" : ""));
    plan::Plan cpu = compile(twoStageModel().c_str(), optimizer),
               gpu = withGpuMlp(optimizer, allGpu);
    ParamStore cpuParams(cpu, 7), gpuParams(gpu, 7);
    LocalEmbeddingStore cpuTables(cpu, 7), gpuTables(gpu, 7);
    PipelineOptions options;
    options.maxWorkers = 4;
    PipelineExecutor onCpu(cpu, cpuParams, cpuTables, ProgramOptions{},
                           options);
    KernelRegistry registry = fixtures::testRegistry({});
    fixtures::HostMemoryDevice device;
    ProgramOptions gpuOptions;
    gpuOptions.registry = &registry;
    gpuOptions.gpu = &device;
    fixtures::DeviceCheckingKernel::runs() = 0;
    PipelineExecutor onGpu(gpu, gpuParams, gpuTables, gpuOptions, options);
    EXPECT_EQ(onGpu.mapping()[1].replicas, 2);

    int loss = cpu.training().loss_output();
    std::vector<int> outputs{loss, loss == 0 ? 1 : 0};
    for (int step = 0; step < 8; ++step) {
      Batch batch(64, 300 + step);
      int allocated = device.allocations, slots = device.fences;
      expectEqualSteps(onCpu, onGpu, batch.inputs(), outputs, step);
      // A step of the same size allocates device memory only for a slot
      // it uses for the first time (a slot makes its fence then): when a
      // micro-batch may overlap the one leaving the device depends on the
      // threads' timing, so the last slot can come in any step.
      if (step > 0 && device.fences == slots) {
        EXPECT_EQ(device.allocations, allocated) << "step " << step;
      }
      // The GPU stage uploads from ordinary memory only the caller's
      // inputs; the messages from stage 0 come page-locked.
      for (const void *source : device.takePageableUploads()) {
        bool input = false;
        for (const Tensor *t : batch.inputs()) {
          auto *first = static_cast<const char *>(t->data());
          input |= source >= first && source < first + t->byteSize();
        }
        EXPECT_TRUE(input) << "step " << step << " uploaded " << source;
      }
    }
    // The messages to the GPU stages (4 micro-batches a step on each
    // channel into one) reuse their page-locked buffers: fewer buffers
    // than messages, slot buffers included.
    int messagesToGpu = 0;
    for (const plan::Channel &channel : gpu.channels())
      messagesToGpu += gpu.stages(channel.to_stage()).kind() == "gpu" &&
                       channel.from_stage() != channel.to_stage();
    EXPECT_GT(messagesToGpu, 0);
    EXPECT_LT(device.hostAllocations(), 8 * 4 * messagesToGpu);
    // A last, smaller batch: micro-batches of 10, 9, 9 and 9 rows.
    Batch uneven(37, 400);
    expectEqualSteps(onCpu, onGpu, uneven.inputs(), outputs, 8);

    for (auto &[name, param] : cpuParams.all())
      EXPECT_EQ(relativeError(gpuParams.get(name).value, param.value), 0)
          << "parameter " << name;
    EXPECT_EQ(relativeError(gpuTables.rows(0), cpuTables.rows(0)), 0)
        << "table rows";
    // The MLP ran on the test GPU; the rows, the parameters and the
    // gradient from stage 0 went in, the gradients and outputs came out.
    EXPECT_GT(fixtures::DeviceCheckingKernel::runs(), 0);
    EXPECT_GT(device.toDevice, 0);
    EXPECT_GT(device.toHost, 0);
    // The MLP's gradients were summed and its parameters updated on the
    // device, once per parameter and step.
    int mlpUpdates = 0;
    for (const plan::Op &op : gpu.stages(1).ops())
      mlpUpdates += op.name() == "heterps.update_param";
    EXPECT_GT(mlpUpdates, 0);
    EXPECT_GT(device.sums, 0);
    EXPECT_EQ(device.updates, 9 * mlpUpdates);
    // The gradients sent back to stage 0 and the outputs leave the device
    // into page-locked slot buffers, on the copy stream: the test device
    // makes those copies only when a worker waits for them, so results
    // equal to the CPU's mean every hand-on waited, and no kernel wrote a
    // slot that was still being copied.
    EXPECT_GT(device.stagedCopies(), 0);
    EXPECT_GT(device.copyStarts, 0);
    // The rows from stage 0 and the gradient from stage 1 went over on the
    // stream of uploads, before the kernels that read them.
    EXPECT_GT(device.uploads, 0);
    // A slot's fence is made once: the 1F1B bound's slots per replica (2
    // in stage 0, 1 in stage 1) and one more for a micro-batch leaving.
    EXPECT_LE(device.fences, allGpu ? 10 : 4);
    // Stage 0's replicas have their next forward at hand (its inputs):
    // each queued its kernels before it waited for the copies of the one
    // before. (Stage 1's next micro-batch comes when stage 0 sends it.)
    if (allGpu) {
      EXPECT_GT(device.overlappedStarts, 0);
    }
  }
}

/// The CTR model as one stage (the last one, bound to one micro-batch in
/// flight by 1F1B) on the test GPU, in 4 micro-batches: the worker queues
/// each micro-batch's kernels while the one before leaves the device, and
/// trains as the CPU does.
TEST(Pipeline, TheLastGpuStageQueuesAMicroBatchWhileTheOneBeforeLeaves) {
  std::string model = twoStageModel();
  for (const std::string &from :
       {std::string("index = 1, units = 2"),
        std::string("heterps.device = #heterps.device<\"b\", cpu>")}) {
    std::string to = from[0] == 'i'
                         ? "index = 0, units = 2"
                         : "heterps.device = #heterps.device<\"a\", cpu>";
    for (size_t at = model.find(from); at != std::string::npos;
         at = model.find(from, at + to.size()))
      model.replace(at, from.size(), to);
  }
  plan::Plan cpu = compile(model.c_str(), "adam");
  ASSERT_EQ(cpu.stages_size(), 1);
  plan::Plan gpu = cpu;
  gpu.mutable_stages(0)->set_kind("gpu");
  ParamStore cpuParams(cpu, 7), gpuParams(gpu, 7);
  LocalEmbeddingStore cpuTables(cpu, 7), gpuTables(gpu, 7);
  PipelineOptions options;
  options.maxWorkers = 1;
  options.microBatches = 4;
  PipelineExecutor onCpu(cpu, cpuParams, cpuTables, ProgramOptions{}, options);
  KernelRegistry registry = fixtures::testRegistry({});
  fixtures::HostMemoryDevice device;
  ProgramOptions gpuOptions;
  gpuOptions.registry = &registry;
  gpuOptions.gpu = &device;
  PipelineExecutor onGpu(gpu, gpuParams, gpuTables, gpuOptions, options);
  ASSERT_EQ(onGpu.mapping()[0].replicas, 1);
  ASSERT_EQ(onGpu.microBatches(), 4);
  int loss = cpu.training().loss_output();
  for (int step = 0; step < 3; ++step) {
    Batch batch(64, 500 + step);
    expectEqualSteps(onCpu, onGpu, batch.inputs(), {loss, loss == 0 ? 1 : 0},
                     step);
  }
  // Three of each step's four micro-batches started while the one before
  // was still leaving; two slots (two fences) serve them.
  EXPECT_EQ(device.overlappedStarts, 3 * 3);
  EXPECT_EQ(device.fences, 2);
}

/// A client of `shard` with the plan's tables.
std::unique_ptr<EmbeddingStore> embeddedClient(ps::Shard &shard,
                                               const plan::Plan &p) {
  std::vector<std::unique_ptr<ps::Connection>> servers;
  servers.push_back(ps::connectLocal(shard));
  auto client = std::make_unique<ps::Client>(std::move(servers));
  client->createTables(p, 7);
  return client;
}

/// Asynchronous training with the MLP's stage on the GPU, against the
/// embedded PS (which keeps the dense parameters in this mode): the stage's
/// gradients leave the device for the store, its own updates between pulls
/// run on the device, and the store's parameters come back in. One replica
/// per stage, so that the order of the store's updates, and the result,
/// are the CPU's.
TEST(Pipeline, AGpuStageTrainsAsynchronouslyAsTheCpu) {
  for (int staleness : {0, 2}) {
    SCOPED_TRACE("staleness " + std::to_string(staleness));
    plan::Plan cpu = compile(twoStageModel().c_str(), "adam"),
               gpu = withGpuMlp("adam");
    ParamStore cpuParams(cpu, 7), gpuParams(gpu, 7);
    ps::Shard cpuShard(ps::ShardOptions{}), gpuShard(ps::ShardOptions{});
    std::unique_ptr<EmbeddingStore> cpuTables = embeddedClient(cpuShard, cpu),
                                    gpuTables = embeddedClient(gpuShard, gpu);
    PipelineOptions options;
    options.maxWorkers = 2;
    options.sync = SyncMode::Async;
    options.maxStaleness = staleness;
    options.tablesPerWorker = [&] { return embeddedClient(cpuShard, cpu); };
    PipelineExecutor onCpu(cpu, cpuParams, *cpuTables, ProgramOptions{},
                           options);
    KernelRegistry registry = fixtures::testRegistry({});
    fixtures::HostMemoryDevice device;
    ProgramOptions gpuOptions;
    gpuOptions.registry = &registry;
    gpuOptions.gpu = &device;
    options.tablesPerWorker = [&] { return embeddedClient(gpuShard, gpu); };
    PipelineExecutor onGpu(gpu, gpuParams, *gpuTables, gpuOptions, options);
    ASSERT_EQ(onGpu.mapping()[1].replicas, 1);
    int loss = cpu.training().loss_output();
    for (int step = 0; step < 6; ++step) {
      Batch batch(64, 600 + step);
      expectEqualSteps(onCpu, onGpu, batch.inputs(), {loss, loss == 0 ? 1 : 0},
                       step);
    }
    onCpu.synchronize();
    onGpu.synchronize();
    for (auto &[name, param] : cpuParams.all())
      EXPECT_EQ(relativeError(gpuParams.get(name).value, param.value), 0)
          << "parameter " << name;
    // Between pulls the replica applied its own updates on the device.
    EXPECT_EQ(device.updates > 0, staleness > 0);
  }
}

TEST(Pipeline, AGpuStageLackingAnOpIsAnErrorWithoutFallback) {
  plan::Plan gpu = withGpuMlp("sgd");
  KernelRegistry registry = fixtures::testRegistry({"heterps.gemm"});
  fixtures::HostMemoryDevice device;
  ProgramOptions gpuOptions;
  gpuOptions.registry = &registry;
  gpuOptions.gpu = &device;
  PipelineOptions options;
  options.maxWorkers = 4;
  ParamStore params(gpu, 7);
  LocalEmbeddingStore tables(gpu, 7);
  try {
    PipelineExecutor pipeline(gpu, params, tables, gpuOptions, options);
    FAIL() << "a GPU stage with an op the column lacks was accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("heterps.gemm"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--fallback=cpu"), std::string::npos)
        << e.what();
  }
  // With the fallback the GEMM runs on the CPU between copies.
  gpuOptions.fallbackToCPU = true;
  plan::Plan cpu = compile(twoStageModel().c_str(), "sgd");
  ParamStore cpuParams(cpu, 7);
  LocalEmbeddingStore cpuTables(cpu, 7);
  PipelineExecutor onCpu(cpu, cpuParams, cpuTables, ProgramOptions{}, options);
  PipelineExecutor onGpu(gpu, params, tables, gpuOptions, options);
  int loss = cpu.training().loss_output();
  for (int step = 0; step < 3; ++step) {
    Batch batch(64, 500 + step);
    expectEqualSteps(onCpu, onGpu, batch.inputs(), {loss, loss == 0 ? 1 : 0},
                     step);
  }
  for (auto &[name, param] : cpuParams.all())
    EXPECT_EQ(relativeError(params.get(name).value, param.value), 0)
        << "parameter " << name;
}

TEST(Pipeline, RefusesWhatItCannotSplit) {
  plan::Plan p = compile(twoStageModel().c_str(), "sgd");
  ParamStore params(p, 1);
  LocalEmbeddingStore tables(p, 1);
  PipelineExecutor pipeline(p, params, tables, ProgramOptions{},
                            PipelineOptions{});
  Batch batch(8, 1);
  std::vector<const Tensor *> inputs = batch.inputs();
  Tensor shortIds(DType::I64, {7, 3});
  inputs[1] = &shortIds;
  EXPECT_THROW(pipeline.run(inputs, true, {0}), RuntimeError);
  EXPECT_THROW(pipeline.run(batch.inputs(), false, {0}), RuntimeError);
  EXPECT_THROW(parsePipelineSchedule("zigzag"), RuntimeError);
}

/// The two-stage model with a batch norm in stage 1 (two replicas): it
/// normalises the dense features, beside the rows, in training with the
/// micro-batch's statistics, and updates its running statistics in place.
std::string modelWithBatchNorm() {
  std::string text = twoStageModel();
  auto replace = [&](const std::string &from, const std::string &to) {
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos)
      text.replace(at, from.size(), to);
  };
  const std::string stage1 =
      "heterps.device = #heterps.device<\"b\", cpu>, heterps.stage = "
      "#heterps.stage_assignment<index = 1, units = 2>";
  replace("heterps.param @w1 : tensor<12x16xf32>",
          "heterps.param @gamma : tensor<4xf32> = #heterps.init<ones>\n"
          "heterps.param @beta : tensor<4xf32> = #heterps.init<zeros>\n"
          "heterps.param frozen @mean : tensor<4xf32> = #heterps.init<zeros>\n"
          "heterps.param frozen @var : tensor<4xf32> = #heterps.init<ones>\n"
          "heterps.param @w1 : tensor<16x16xf32>");
  replace("  %w1 = heterps.load_param @w1",
          "  %gamma = heterps.load_param @gamma {" + stage1 +
              "} : tensor<4xf32>\n"
              "  %beta = heterps.load_param @beta {" +
              stage1 +
              "} : tensor<4xf32>\n"
              "  %mean = heterps.load_param @mean {" +
              stage1 +
              "} : tensor<4xf32>\n"
              "  %var = heterps.load_param @var {" +
              stage1 +
              "} : tensor<4xf32>\n"
              "  %dn = heterps.batch_norm %dense, %gamma, %beta, %mean, %var "
              "{" +
              stage1 +
              "} : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, "
              "tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>\n"
              "  %x2 = heterps.concat %x, %dn {axis = 1 : i64, " +
              stage1 +
              "} : (tensor<?x12xf32>, tensor<?x4xf32>) -> "
              "tensor<?x16xf32>\n"
              "  %w1 = heterps.load_param @w1");
  replace("} : tensor<12x16xf32>", "} : tensor<16x16xf32>");
  replace("%h = heterps.gemm %x, %w1, %b1", "%h = heterps.gemm %x2, %w1, %b1");
  replace("(tensor<?x12xf32>, tensor<12x16xf32>, tensor<16xf32>)",
          "(tensor<?x16xf32>, tensor<16x16xf32>, tensor<16xf32>)");
  return text;
}

/// The replicas of a stage in one process share its parameters, but batch
/// norm writes its running statistics in place: the first replica writes
/// them, the others their own copies, refreshed from the first's before
/// each step (as DistributedDataParallel broadcasts rank 0's buffers). So
/// the statistics are the first replica's micro-batches' (0 and 2 of each
/// step's 4), in order, whatever the timing, on the CPU and on the GPU.
TEST(Pipeline, ReplicatedBatchNormKeepsTheFirstReplicasRunningStatistics) {
  std::string model = modelWithBatchNorm();
  for (bool onGpu : {false, true}) {
    SCOPED_TRACE(onGpu ? "stage 1 on the test GPU" : "on the CPU");
    plan::Plan p = compile(model.c_str(), "sgd");
    if (onGpu)
      p.mutable_stages(1)->set_kind("gpu");
    ParamStore params(p, 7);
    LocalEmbeddingStore tables(p, 7);
    PipelineOptions options;
    options.maxWorkers = 4;
    KernelRegistry registry = fixtures::testRegistry({});
    fixtures::HostMemoryDevice device;
    ProgramOptions programOptions;
    if (onGpu) {
      programOptions.registry = &registry;
      programOptions.gpu = &device;
    }
    PipelineExecutor pipeline(p, params, tables, programOptions, options);
    ASSERT_EQ(pipeline.mapping()[1].replicas, 2);
    ASSERT_EQ(pipeline.microBatches(), 4);
    std::vector<double> mean(4, 0.0), var(4, 1.0);
    int loss = p.training().loss_output();
    for (int step = 0; step < 6; ++step) {
      Batch batch(64, 900 + step);
      pipeline.run(batch.inputs(), true, {loss});
      for (int64_t microBatch : {0, 2}) {
        const float *x = batch.dense.as<float>() + microBatch * 16 * 4;
        for (int c = 0; c < 4; ++c) {
          double sum = 0, squares = 0;
          for (int r = 0; r < 16; ++r)
            sum += x[r * 4 + c];
          double m = sum / 16;
          for (int r = 0; r < 16; ++r)
            squares += (x[r * 4 + c] - m) * (x[r * 4 + c] - m);
          mean[c] = 0.9 * mean[c] + 0.1 * m;
          var[c] = 0.9 * var[c] + 0.1 * squares / 15;
        }
      }
      const Tensor &gotMean = params.get("mean").value,
                   &gotVar = params.get("var").value;
      for (int c = 0; c < 4; ++c) {
        EXPECT_NEAR(gotMean.as<float>()[c], mean[c], 1e-5)
            << "step " << step << ", channel " << c;
        EXPECT_NEAR(gotVar.as<float>()[c], var[c], 1e-5 * var[c])
            << "step " << step << ", channel " << c;
      }
    }
  }
}

/// A message's page-locked buffer, given back, carries a later message that
/// fits; one still held does not; the buffers outlive their pool while a
/// message holds one.
TEST(PinnedBuffers, CarryTheNextMessageOnceGivenBack) {
  fixtures::HostMemoryDevice device;
  std::shared_ptr<PinnedBuffers> buffers = PinnedBuffers::create(device);
  Tensor value(DType::F32, {4, 3});
  for (int64_t i = 0; i < value.numElements(); ++i)
    value.as<float>()[i] = 0.5f * i;
  Tensor first = buffers->copyOf(value);
  ASSERT_EQ(first.space(), MemorySpace::Host);
  ASSERT_EQ(first.shape(), value.shape());
  EXPECT_EQ(relativeError(first, value), 0);
  const void *firstBuffer = first.data();
  EXPECT_EQ(device.hostAllocations(), 1);

  first = Tensor();
  Tensor second = buffers->copyOf(value);
  EXPECT_EQ(second.data(), firstBuffer);
  EXPECT_EQ(relativeError(second, value), 0);
  Tensor third = buffers->copyOf(value);
  EXPECT_NE(third.data(), firstBuffer);
  Tensor other = buffers->copyOf(Tensor(DType::I64, {5}));
  EXPECT_EQ(other.dtype(), DType::I64);
  const void *otherBuffer = other.data();
  EXPECT_EQ(buffers->allocated(), 3u);
  EXPECT_EQ(device.hostAllocations(), 3);

  // A smaller message takes the smallest idle buffer that holds it; a
  // larger one than any idle replaces the largest idle buffer.
  other = Tensor();
  second = Tensor();
  Tensor small = buffers->copyOf(Tensor(DType::F32, {3}));
  EXPECT_EQ(small.data(), otherBuffer) << "the 40-byte buffer, not the 48";
  Tensor large = buffers->copyOf(Tensor(DType::F32, {100}));
  EXPECT_EQ(buffers->allocated(), 3u);
  EXPECT_EQ(device.hostAllocations(), 4);

  buffers.reset();
  EXPECT_EQ(relativeError(third, value), 0);
}

} // namespace
