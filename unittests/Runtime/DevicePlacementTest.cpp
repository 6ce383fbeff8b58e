//===- DevicePlacementTest.cpp - GPU stages and their transfers -----------===//
//
// A Program runs a GPU stage's ops on the GPU column with their values in
// device memory, copies values across wherever an op reads one from the
// other space, and refuses an op the column lacks unless --fallback=cpu.
//
// The placement is tested on every machine against a test device whose
// "device memory" is host memory marked as the device's, and a GPU column
// whose kernels are the CPU's behind a check that every operand and result
// is in device memory: a missing or misplaced copy fails the check. The
// test device's parameter loads and updates are the GPU column's own, so
// the parameters' life in device memory is tested here too. The GPU
// column's own arithmetic (UnaryMath.h, ConvIndex.h, PoolIndex.h,
// Indexing.h, BatchNormMath.h, CastValue.h) is held against the CPU column
// on the host. The GPU column itself runs against the CPU's in
// GPUColumnTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/Program.h"

#include "../../lib/Runtime/CPU/CastValue.h"
#include "../../lib/Runtime/CPU/KernelUtil.h"
#include "../../lib/Runtime/CUDA/BatchNormMath.h"
#include "../../lib/Runtime/CUDA/ConvIndex.h"
#include "../../lib/Runtime/CUDA/Indexing.h"
#include "../../lib/Runtime/CUDA/PoolIndex.h"
#include "../../lib/Runtime/CUDA/UnaryMath.h"
#include "CtrModel.h"
#include "CtrTraining.h"
#include "TestDevice.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::fixtures;

namespace {

/// The training plan of the CTR model (a table lookup, a host op, feeding
/// a concat and an MLP; BCE loss, `optimizer`), its one stage of kind
/// `kind`.
plan::Plan compile(const std::string &kind, const std::string &optimizer) {
  plan::Plan p = compileCtrModel(optimizer);
  EXPECT_EQ(p.stages_size(), 1);
  return placeStages(p, kind);
}

/// Sets the integer list attribute `key` of `op`.
void setInts(plan::Op &op, const char *key, const std::vector<int64_t> &v) {
  for (int64_t x : v)
    (*op.mutable_attrs())[key].mutable_ints()->add_values(x);
}

/// A tensor of `shape` drawn uniformly from [lo, hi).
Tensor uniform(const Shape &shape, std::mt19937 &rng, float lo = -1,
               float hi = 1) {
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] = std::uniform_real_distribution<float>(lo, hi)(rng);
  return t;
}

TEST(DevicePlacement, AGpuStageTrainsAsTheCpu) {
  plan::Plan cpuPlan = compile("cpu", "adam");
  plan::Plan gpuPlan = compile("gpu", "adam");
  std::vector<std::vector<float>> expected = trainCtr(cpuPlan, {}, 3);

  KernelRegistry registry = testRegistry({});
  HostMemoryDevice device;
  ProgramOptions options;
  options.registry = &registry;
  options.gpu = &device;
  DeviceCheckingKernel::runs() = 0;
  std::vector<std::vector<float>> got = trainCtr(gpuPlan, options, 3);
  EXPECT_EQ(got, expected);
  EXPECT_GT(DeviceCheckingKernel::runs(), 0);
  // In: the dense features, the looked-up rows, the labels, and the
  // parameters once. Out: the gradients the pushes read, the prediction,
  // and the parameters when the host reads them.
  EXPECT_GT(device.toDevice, 0);
  EXPECT_GT(device.toHost, 0);
  EXPECT_GT(device.allocations, 0);
  // One wait per step, and one per parameter after its first copy in.
  EXPECT_EQ(device.synchronizations, 3 + gpuPlan.params_size());
}

/// The ops of `plan` named `name`.
int countOps(const plan::Plan &plan, const std::string &name) {
  int count = 0;
  for (const plan::Stage &stage : plan.stages())
    for (const plan::Op &op : stage.ops())
      count += op.name() == name;
  return count;
}

/// Every parameter of `a` equals `b`'s, with its optimizer state.
void expectSameParameters(ParamStore &a, ParamStore &b) {
  for (auto &[name, p] : a.all()) {
    DenseParameter &q = b.get(name);
    EXPECT_EQ(std::memcmp(p.value.data(), q.value.data(), p.value.byteSize()),
              0)
        << "parameter " << name;
    ASSERT_EQ(p.state.shape(), q.state.shape()) << "state of " << name;
    EXPECT_EQ(std::memcmp(p.state.data(), q.state.data(), p.state.byteSize()),
              0)
        << "state of " << name;
    EXPECT_EQ(p.steps, q.steps) << "steps of " << name;
  }
}

/// The parameters GPU ops load stay in device memory from step to step:
/// after the first step none is copied in, their updates run on the
/// device, and the host sees the device's values when it reads them, as
/// the device sees what the host writes.
TEST(DevicePlacement, ParametersStayOnTheDeviceBetweenSteps) {
  plan::Plan cpuPlan = compile("cpu", "adam"), gpuPlan = compile("gpu", "adam");
  KernelRegistry registry = testRegistry({});
  HostMemoryDevice device;
  ProgramOptions options;
  options.registry = &registry;
  options.gpu = &device;
  ParamStore cpuParams(cpuPlan, 1), gpuParams(gpuPlan, 1);
  LocalEmbeddingStore cpuTables(cpuPlan, 1), gpuTables(gpuPlan, 1);
  Program onCpu(cpuPlan, cpuParams, cpuTables, {});
  Program onGpu(gpuPlan, gpuParams, gpuTables, options);
  std::set<const void *> hostCopies;
  for (auto &[name, p] : gpuParams.all())
    hostCopies.insert(p.value.data());
  auto step = [&](int s) {
    CtrBatch batch(32, 100 + s);
    onCpu.run(batch.inputs(), true, {0});
    onGpu.run(batch.inputs(), true, {0});
  };
  step(0);
  size_t firstStep = device.copiedToDevice().size();
  int outAfterFirst = device.toHost;
  step(1);
  int inPerStep = device.toDevice - static_cast<int>(firstStep);
  int outPerStep = device.toHost - outAfterFirst;
  step(2);
  EXPECT_EQ(device.toDevice, static_cast<int>(firstStep) + 2 * inPerStep);
  EXPECT_EQ(device.toHost, outAfterFirst + 2 * outPerStep);
  // The copies of the steps after the first read and write page-locked
  // buffers of the memory plan, but for the step's own inputs (the dense
  // features and the labels, the caller's memory).
  int staged = device.stagedCopies();
  int hostBuffers = device.hostAllocations();
  EXPECT_GT(hostBuffers, 0);
  step(3);
  EXPECT_EQ(device.stagedCopies() - staged, inPerStep - 2 + outPerStep);
  EXPECT_EQ(device.hostAllocations(), hostBuffers);
  std::vector<const void *> sources = device.copiedToDevice();
  for (size_t i = firstStep; i < sources.size(); ++i)
    EXPECT_FALSE(hostCopies.count(sources[i]))
        << "copy " << i << " moved a parameter to the device again";
  EXPECT_EQ(device.updates, 4 * countOps(gpuPlan, "heterps.update_param"));
  EXPECT_EQ(device.updates, 4 * gpuPlan.params_size());
  expectSameParameters(cpuParams, gpuParams);

  // The host writes every parameter (as a restore does); the next steps
  // train from what it wrote.
  for (ParamStore *params : {&cpuParams, &gpuParams})
    for (auto &[name, p] : params->all())
      for (int64_t i = 0; i < p.value.numElements(); ++i)
        p.value.as<float>()[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
  step(4);
  step(5);
  expectSameParameters(cpuParams, gpuParams);
}

/// Trains the batch-norm model for 3 steps in one worker, after
/// `options`, and returns its parameter store's values.
std::map<std::string, std::vector<float>>
trainBatchNorm(const std::string &kind, const ProgramOptions &options) {
  plan::Plan p =
      placeStages(compileModel("batch-norm-model.mlir", "adam"), kind);
  EXPECT_EQ(p.inputs_size(), 2);
  ParamStore params(p, 1);
  LocalEmbeddingStore tables(p, 1);
  Program program(p, params, tables, options);
  for (int s = 0; s < 3; ++s) {
    CtrBatch batch(32, 200 + s);
    program.run({&batch.dense, &batch.label}, true, {0});
  }
  std::map<std::string, std::vector<float>> values;
  for (const auto &[name, param] : params.all())
    values[name].assign(param.value.as<float>(),
                        param.value.as<float>() + param.value.numElements());
  return values;
}

/// Batch normalisation's running statistics are parameters that its
/// training forward writes in place: on a GPU stage they are the device
/// copies, and under --fallback=cpu a CPU batch norm writes the host's
/// own (its loads move to the CPU), so that no update is lost either way.
TEST(DevicePlacement, RunningStatisticsAreUpdatedWhereverBatchNormRuns) {
  std::map<std::string, std::vector<float>> expected =
      trainBatchNorm("cpu", {});
  ASSERT_EQ(expected.count("mean"), 1u);
  EXPECT_NE(expected["mean"], std::vector<float>(6, 0.0f))
      << "training left the running mean at its initial value";
  HostMemoryDevice device;
  ProgramOptions options;
  options.gpu = &device;
  KernelRegistry withBatchNorm = testRegistry({});
  options.registry = &withBatchNorm;
  EXPECT_EQ(trainBatchNorm("gpu", options), expected);

  KernelRegistry withoutBatchNorm = testRegistry({"heterps.batch_norm"});
  options.registry = &withoutBatchNorm;
  options.fallbackToCPU = true;
  EXPECT_EQ(trainBatchNorm("gpu", options), expected);
}

/// Trains the bag model for 6 steps of 16 bags of 0 to 7 ids (so the ids'
/// count changes from step to step) and returns its parameters and table.
std::vector<float> trainBags(const std::string &kind,
                             const ProgramOptions &options) {
  plan::Plan p = placeStages(compileModel("bag-model.mlir", "adam"), kind);
  ParamStore params(p, 1);
  LocalEmbeddingStore tables(p, 1);
  Program program(p, params, tables, options);
  std::mt19937 rng(5);
  for (int step = 0; step < 6; ++step) {
    Tensor offsets(DType::I64, {16}), label(DType::F32, {16, 1});
    int64_t total = 0;
    for (int64_t b = 0; b < 16; ++b) {
      offsets.as<int64_t>()[b] = total;
      total += rng() % 8;
      label.as<float>()[b] = static_cast<float>(rng() % 2);
    }
    Tensor ids(DType::I64, {total});
    for (int64_t i = 0; i < total; ++i)
      ids.as<int64_t>()[i] = rng() % 100;
    program.run({&ids, &offsets, &label}, true, {0});
  }
  std::vector<float> state;
  for (const auto &[name, param] : params.all())
    state.insert(state.end(), param.value.as<float>(),
                 param.value.as<float>() + param.value.numElements());
  const Tensor &rows = tables.rows(0);
  state.insert(state.end(), rows.as<float>(),
               rows.as<float>() + rows.numElements());
  return state;
}

/// Bags of ids given by offsets, on a GPU stage: the rows, whose count
/// follows the ids, cross to the device and the bags' means and their
/// gradient run there, step after step, as on the CPU.
TEST(DevicePlacement, BagsOfChangingSizesTrainOnTheGpuAsOnTheCpu) {
  std::vector<float> expected = trainBags("cpu", {});
  KernelRegistry registry = testRegistry({});
  HostMemoryDevice device;
  ProgramOptions options;
  options.registry = &registry;
  options.gpu = &device;
  DeviceCheckingKernel::runs() = 0;
  EXPECT_EQ(trainBags("gpu", options), expected);
  EXPECT_GT(DeviceCheckingKernel::runs(), 0);
}

TEST(DevicePlacement, AStepOnTheGpuAllocatesNoDeviceMemory) {
  plan::Plan gpuPlan = compile("gpu", "sgd");
  KernelRegistry registry = testRegistry({});
  HostMemoryDevice device;
  ProgramOptions options;
  options.registry = &registry;
  options.gpu = &device;
  ParamStore params(gpuPlan, 1);
  LocalEmbeddingStore tables(gpuPlan, 1);
  Program program(gpuPlan, params, tables, options);
  CtrBatch batch(16, 1);
  program.run(batch.inputs(), true, {0});
  int planned = device.allocations;
  for (int s = 0; s < 3; ++s)
    program.run(batch.inputs(), true, {0});
  EXPECT_EQ(device.allocations, planned);
  // The prediction comes back to the host.
  const Tensor *out = program.run(batch.inputs(), false, {0})[0];
  EXPECT_EQ(out->space(), MemorySpace::Host);
  EXPECT_EQ(out->shape(), (Shape{16, 1}));
}

TEST(DevicePlacement, TheGpuMathOptionReachesTheDevice) {
  plan::Plan gpuPlan = compile("gpu", "sgd");
  KernelRegistry registry = testRegistry({});
  HostMemoryDevice device;
  ProgramOptions options;
  options.registry = &registry;
  options.gpu = &device;
  options.gpuMath = GpuMath::BF16;
  ParamStore params(gpuPlan, 1);
  LocalEmbeddingStore tables(gpuPlan, 1);
  Program program(gpuPlan, params, tables, options);
  EXPECT_EQ(device.math, GpuMath::BF16);
  EXPECT_EQ(parseGpuMath("tf32"), GpuMath::TF32);
  EXPECT_EQ(parseGpuMath("fp16"), std::nullopt);
}

TEST(DevicePlacement, AnOpTheGpuColumnLacksIsAnErrorWithoutFallback) {
  plan::Plan gpuPlan = compile("gpu", "sgd");
  KernelRegistry registry = testRegistry({"heterps.concat"});
  HostMemoryDevice device;
  ProgramOptions options;
  options.registry = &registry;
  options.gpu = &device;
  ParamStore params(gpuPlan, 1);
  LocalEmbeddingStore tables(gpuPlan, 1);
  try {
    Program program(gpuPlan, params, tables, options);
    FAIL() << "a GPU stage with an op the column lacks was accepted";
  } catch (const RuntimeError &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("heterps.concat"), std::string::npos) << message;
    EXPECT_NE(message.find("--fallback=cpu"), std::string::npos) << message;
  }

  // With the fallback the concat runs on the CPU between two copies, and
  // the step is the CPU's.
  options.fallbackToCPU = true;
  std::vector<std::vector<float>> got = trainCtr(gpuPlan, options, 2);
  EXPECT_EQ(got, trainCtr(compile("cpu", "sgd"), {}, 2));
}

TEST(DevicePlacement, UnaryFormulasOfTheGpuColumnAreTheCpuColumns) {
  std::mt19937 rng(5);
  const int64_t n = 257;
  for (const char *kind : {"relu", "sigmoid", "tanh", "erf", "exp", "log",
                           "sqrt", "neg", "abs", "leaky_relu", "clip"}) {
    SCOPED_TRACE(kind);
    bool positive = !std::strcmp(kind, "log") || !std::strcmp(kind, "sqrt");
    Tensor x(DType::F32, {n}), y(DType::F32, {n}), dy(DType::F32, {n}),
        dx(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i) {
      float v = std::uniform_real_distribution<float>(-3, 3)(rng);
      x.as<float>()[i] = positive ? std::abs(v) + 0.05f : v;
      dy.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
    }
    // The kinks, where the gradients pick a subgradient: 0, and clip's
    // bounds.
    if (!positive) {
      x.as<float>()[0] = 0.0f;
      x.as<float>()[1] = -1.0f;
      x.as<float>()[2] = 1.5f;
    }
    // NaN stays NaN, as in PyTorch and ONNX (oneDNN's relu, clip and exp
    // turned it into 0, the lower bound and inf).
    x.as<float>()[3] = std::numeric_limits<float>::quiet_NaN();
    plan::Op forward, backward;
    forward.set_name(std::string("heterps.") + kind);
    backward.set_name("heterps.unary_grad");
    (*backward.mutable_attrs())["kind"].set_s(kind);
    for (plan::Op *op : {&forward, &backward}) {
      (*op->mutable_attrs())["alpha"].set_f(0.2);
      if (!std::strcmp(kind, "clip")) {
        (*op->mutable_attrs())["min"].set_f(-1.0);
        (*op->mutable_attrs())["max"].set_f(1.5);
      }
    }
    TensorType type{DType::F32, {n}};
    OpInfo forwardInfo(forward, {type}, {type});
    OpInfo backwardInfo(backward, {type, type, type}, {type});
    ExecContext ctx;
    auto f = KernelRegistry::global().create(forwardInfo, DeviceKind::CPU);
    f->prepare({{n}});
    f->run({&x}, {&y}, ctx);
    auto b = KernelRegistry::global().create(backwardInfo, DeviceKind::CPU);
    b->prepare({{n}, {n}, {n}});
    b->run({&x, &y, &dy}, {&dx}, ctx);

    cuda::UnaryKind k = cuda::unaryKindOf(kind);
    ASSERT_NE(k, cuda::UnaryKind::Invalid);
    cuda::UnaryParams p;
    p.alpha = 0.2f;
    if (!std::strcmp(kind, "clip")) {
      p.lo = -1.0f;
      p.hi = 1.5f;
    }
    auto same = [](float got, float expected) {
      return got == expected || std::isnan(got)
                 ? got == expected || std::isnan(expected)
                 : std::abs(got - expected) <=
                       1e-5f * std::max(1.0f, std::abs(expected));
    };
    EXPECT_TRUE(std::isnan(y.as<float>()[3])) << y.as<float>()[3];
    for (int64_t i = 0; i < n; ++i) {
      float xi = x.as<float>()[i], yi = y.as<float>()[i];
      float forwardGpu = cuda::unaryForward(k, xi, p);
      EXPECT_TRUE(same(forwardGpu, yi))
          << "x = " << xi << ": " << forwardGpu << " against " << yi;
      // At NaN the gradients are not compared: the loss is NaN there
      // anyway, and PyTorch's own rules differ by op (relu passes dy,
      // leaky_relu scales it).
      if (i == 3)
        continue;
      float backwardGpu = cuda::unaryBackward(k, xi, yi, dy.as<float>()[i], p);
      EXPECT_TRUE(same(backwardGpu, dx.as<float>()[i]))
          << "x = " << xi << ": gradient " << backwardGpu << " against "
          << dx.as<float>()[i];
    }
  }
}

/// Runs strided batches of row-major products (cuda::BatchedProduct, as
/// gemmBatched runs them on the GPU) on host operands, overwriting c.
void runProducts(const std::vector<cuda::BatchedProduct> &products,
                 const float *a, const float *b, float *c) {
  for (const cuda::BatchedProduct &p : products)
    for (int64_t i = 0; i < p.batch; ++i) {
      const float *ai = a + p.a + i * p.strideA, *bi = b + p.b + i * p.strideB;
      float *ci = c + p.c + i * p.strideC;
      for (int64_t r = 0; r < p.m; ++r)
        for (int64_t col = 0; col < p.n; ++col) {
          float sum = 0;
          for (int64_t k = 0; k < p.k; ++k)
            sum += (p.ta ? ai[k * p.lda + r] : ai[r * p.lda + k]) *
                   (p.tb ? bi[col * p.ldb + k] : bi[k * p.ldb + col]);
          ci[r * p.ldc + col] = sum;
        }
    }
}

/// The GPU convolution's patches (ConvIndex.h) and its strided batches of
/// products over chunks of images, computed here on the host, give the CPU
/// column's convolution and gradient: strides, uneven pads, dilations,
/// groups, 1 to 3 spatial dimensions.
TEST(DevicePlacement, ConvIndexOfTheGpuColumnBuildsTheCpuConvolution) {
  struct Case {
    Shape x, w;
    std::vector<int64_t> strides, pads, dilations;
    int64_t group;
  };
  const Case cases[] = {
      {{2, 4, 9, 8}, {6, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},
      {{2, 4, 10, 10}, {6, 2, 3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 2},
      {{2, 4, 9, 8}, {6, 2, 3, 3}, {2, 1}, {1, 0, 1, 2}, {1, 1}, 2},
      {{3, 5, 20}, {4, 5, 4}, {3}, {0, 2}, {1}, 1},
      {{2, 3, 16}, {5, 3, 3}, {2}, {1, 1}, {2}, 1},
      {{1, 2, 5, 6, 4},
       {3, 2, 2, 3, 2},
       {1, 2, 1},
       {0, 1, 0, 1, 0, 1},
       {1, 1, 2},
       1},
  };
  std::mt19937 rng(9);
  auto random = [&](const Shape &shape) { return uniform(shape, rng); };
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeString(c.x) + " * " + shapeString(c.w));
    plan::Op conv, grad;
    conv.set_name("heterps.conv");
    grad.set_name("heterps.conv_grad");
    for (plan::Op *op : {&conv, &grad}) {
      setInts(*op, "strides", c.strides);
      setInts(*op, "pads", c.pads);
      setInts(*op, "dilations", c.dilations);
      (*op->mutable_attrs())["group"].set_i(c.group);
    }
    Tensor x = random(c.x), w = random(c.w), b = random({c.w[0]});
    OpInfo probe(conv, {{DType::F32, c.x}, {DType::F32, c.w}}, {});
    cpu::ConvShape shape(probe, c.x, c.w);
    cuda::ConvGeometry g = cuda::convGeometryOf(shape, c.x);
    Tensor dy = random(shape.output);

    // The CPU column.
    ExecContext ctx;
    TensorType xt{DType::F32, c.x}, wt{DType::F32, c.w},
        bt{DType::F32, {c.w[0]}}, yt{DType::F32, shape.output};
    OpInfo convInfo(conv, {xt, wt, bt}, {yt});
    auto cpuConv = KernelRegistry::global().create(convInfo, DeviceKind::CPU);
    cpuConv->prepareChecked({c.x, c.w, {c.w[0]}});
    Tensor y(DType::F32, shape.output);
    cpuConv->run({&x, &w, &b}, {&y}, ctx);
    OpInfo gradInfo(grad, {xt, wt, yt}, {xt, wt, bt});
    auto cpuGrad = KernelRegistry::global().create(gradInfo, DeviceKind::CPU);
    cpuGrad->prepareChecked({c.x, c.w, shape.output});
    Tensor dx(DType::F32, c.x), dw(DType::F32, c.w), db(DType::F32, {c.w[0]});
    cpuGrad->run({&x, &w, &dy}, {&dx, &dw, &db}, ctx);

    // The GPU column's decomposition, on the host: chunks of one image, of
    // two and of the whole batch (products batched over the groups, over
    // the images, or both ways).
    int64_t images = c.x[0], imageIn = g.channels * g.inputs,
            imageOut = g.features * g.outputs,
            patch = g.channels * g.taps * g.outputs;
    for (int64_t chunk : {int64_t(1), int64_t(2), images}) {
      SCOPED_TRACE("chunks of " + std::to_string(chunk));
      std::vector<float> col(chunk * patch), dcol(col.size()),
          partial(chunk * w.numElements()), gotY(y.numElements()),
          gotDx(x.numElements()), gotDw(w.numElements(), 0.0f);
      for (int64_t n = 0; n < images; n += chunk) {
        int64_t count = std::min(chunk, images - n);
        for (int64_t e = 0; e < count * patch; ++e)
          col[e] = cuda::patchElement(x.as<float>() + (n + e / patch) * imageIn,
                                      e % patch, g);
        const float *dyn = dy.as<float>() + n * imageOut;
        runProducts(cuda::patchProducts(g, count), w.as<float>(), col.data(),
                    gotY.data() + n * imageOut);
        runProducts(cuda::filterProducts(g, count), dyn, col.data(),
                    partial.data());
        for (int64_t i = 0; i < count; ++i)
          for (int64_t e = 0; e < w.numElements(); ++e)
            gotDw[e] += partial[i * w.numElements() + e];
        runProducts(cuda::foldProducts(g, count), w.as<float>(), dyn,
                    dcol.data());
        for (int64_t e = 0; e < count * imageIn; ++e)
          gotDx[n * imageIn + e] = cuda::foldedElement(
              dcol.data() + (e / imageIn) * patch, e % imageIn, g);
      }
      for (int64_t i = 0; i < y.numElements(); ++i)
        ASSERT_NEAR(gotY[i] + b.as<float>()[(i / g.outputs) % g.features],
                    y.as<float>()[i], 1e-4f)
            << "output " << i;
      for (int64_t i = 0; i < x.numElements(); ++i)
        ASSERT_NEAR(gotDx[i], dx.as<float>()[i], 1e-4f)
            << "input gradient " << i;
      for (int64_t i = 0; i < w.numElements(); ++i)
        ASSERT_NEAR(gotDw[i], dw.as<float>()[i], 1e-4f)
            << "filter gradient " << i;
    }
  }
}

/// The GPU transposed convolution as it decomposes (the geometry of the
/// convolution whose input gradient it is, products per image and group,
/// the fold), computed here on the host, gives the CPU column's transposed
/// convolution and its gradient: strides, pads, output_padding, groups,
/// dilations.
TEST(DevicePlacement, TransposedConvolutionOfTheGpuColumnIsTheCpus) {
  struct Case {
    Shape x, w;
    std::vector<int64_t> strides, pads, extra, dilations;
    int64_t group;
  };
  const Case cases[] = {
      {{2, 4, 5, 6}, {4, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 0}, {1, 1}, 1},
      {{3, 4, 7}, {4, 2, 3}, {3}, {0, 0}, {0}, {1}, 2},
      {{1, 2, 4, 3}, {2, 2, 2, 3}, {1, 2}, {0, 1, 1, 0}, {0, 1}, {2, 1}, 1},
  };
  std::mt19937 rng(19);
  auto random = [&](const Shape &shape) { return uniform(shape, rng); };
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeString(c.x) + " * " + shapeString(c.w));
    plan::Op conv, grad;
    conv.set_name("heterps.conv_transpose");
    grad.set_name("heterps.conv_transpose_grad");
    for (plan::Op *op : {&conv, &grad}) {
      setInts(*op, "strides", c.strides);
      setInts(*op, "pads", c.pads);
      setInts(*op, "output_padding", c.extra);
      setInts(*op, "dilations", c.dilations);
      (*op->mutable_attrs())["group"].set_i(c.group);
    }
    OpInfo probe(conv, {}, {});
    Shape ys = cpu::convTransposeOutput(probe, c.x, c.w);
    cpu::ConvShape shape(probe, ys, c.w);
    ASSERT_EQ(shape.output, c.x);
    cuda::ConvGeometry g = cuda::convGeometryOf(shape, ys);
    int64_t channels = ys[1];
    Tensor x = random(c.x), w = random(c.w), b = random({channels}),
           dy = random(ys);

    ExecContext ctx;
    TensorType xt{DType::F32, c.x}, wt{DType::F32, c.w},
        bt{DType::F32, {channels}}, yt{DType::F32, ys};
    OpInfo convInfo(conv, {xt, wt, bt}, {yt});
    auto cpuConv = KernelRegistry::global().create(convInfo, DeviceKind::CPU);
    cpuConv->prepareChecked({c.x, c.w, {channels}});
    Tensor y(DType::F32, ys);
    cpuConv->run({&x, &w, &b}, {&y}, ctx);
    OpInfo gradInfo(grad, {xt, wt, yt}, {xt, wt, bt});
    auto cpuGrad = KernelRegistry::global().create(gradInfo, DeviceKind::CPU);
    cpuGrad->prepareChecked({c.x, c.w, ys});
    Tensor dx(DType::F32, c.x), dw(DType::F32, c.w), db(DType::F32, {channels});
    cpuGrad->run({&x, &w, &dy}, {&dx, &dw, &db}, ctx);

    // The GPU column's decomposition: the convolution's input is the
    // transposed one's output (g.channels, g.inputs), its output the
    // transposed one's input (g.features, g.outputs); chunks of one image,
    // of two and of the whole batch.
    int64_t images = ys[0], imageIn = g.channels * g.inputs,
            imageOut = g.features * g.outputs,
            patch = g.channels * g.taps * g.outputs;
    for (int64_t chunk : {int64_t(1), int64_t(2), images}) {
      SCOPED_TRACE("chunks of " + std::to_string(chunk));
      std::vector<float> col(chunk * patch), partial(chunk * w.numElements()),
          gotY(y.numElements()), gotDx(x.numElements()),
          gotDw(w.numElements(), 0.0f);
      for (int64_t n = 0; n < images; n += chunk) {
        int64_t count = std::min(chunk, images - n);
        // The forward: the fold of w^T x.
        runProducts(cuda::foldProducts(g, count), w.as<float>(),
                    x.as<float>() + n * imageOut, col.data());
        for (int64_t e = 0; e < count * imageIn; ++e)
          gotY[n * imageIn + e] = cuda::foldedElement(
              col.data() + (e / imageIn) * patch, e % imageIn, g);
        // The gradient: the convolution of dy, and its filter gradient
        // against x.
        for (int64_t e = 0; e < count * patch; ++e)
          col[e] = cuda::patchElement(
              dy.as<float>() + (n + e / patch) * imageIn, e % patch, g);
        runProducts(cuda::patchProducts(g, count), w.as<float>(), col.data(),
                    gotDx.data() + n * imageOut);
        runProducts(cuda::filterProducts(g, count),
                    x.as<float>() + n * imageOut, col.data(), partial.data());
        for (int64_t i = 0; i < count; ++i)
          for (int64_t e = 0; e < w.numElements(); ++e)
            gotDw[e] += partial[i * w.numElements() + e];
      }
      for (int64_t i = 0; i < y.numElements(); ++i)
        ASSERT_NEAR(gotY[i] + b.as<float>()[(i / g.inputs) % g.channels],
                    y.as<float>()[i], 1e-4f)
            << "output " << i;
      for (int64_t i = 0; i < x.numElements(); ++i)
        ASSERT_NEAR(gotDx[i], dx.as<float>()[i], 1e-4f)
            << "input gradient " << i;
      for (int64_t i = 0; i < w.numElements(); ++i)
        ASSERT_NEAR(gotDw[i], dw.as<float>()[i], 1e-4f)
            << "filter gradient " << i;
    }
  }
}

/// The GPU kernels' flat-index arithmetic (Indexing.h) visits every
/// element's operands where the CPU column's odometer does: broadcasts of
/// each kind, a transpose, a reversed slice.
TEST(DevicePlacement, GpuIndexingMatchesTheCpuOdometer) {
  plan::Op op;
  op.set_name("heterps.add");
  OpInfo info(op, {}, {});
  struct Case {
    Shape out;
    std::vector<int64_t> a, b;
  };
  std::vector<Case> cases;
  for (auto [x, y] :
       std::vector<std::pair<Shape, Shape>>{{{7, 33}, {7, 33}},
                                            {{3, 5, 33}, {33}},
                                            {{4, 1}, {3, 4, 9}},
                                            {{6, 10}, {}},
                                            {{2, 1, 3, 1}, {1, 4, 1, 5}}}) {
    Shape out = cpu::broadcastShapes(x, y, info);
    cases.push_back(
        {out, cpu::broadcastStrides(x, out), cpu::broadcastStrides(y, out)});
  }
  cpu::TransposePlan transpose;
  transpose.compute({4, 7, 9}, {2, 0, 1}, info);
  cases.push_back({transpose.out, transpose.strides, transpose.strides});
  cpu::SliceIndex slice;
  slice.compute({10, 12, 5}, {9, 0, 2}, {-1, 12, 5}, {-2, 3, 1}, info);
  cases.push_back({slice.out, slice.strides, slice.strides});
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeString(c.out));
    cuda::Indexing ix = cuda::makeIndexing(c.out, c.a, c.b, info);
    int64_t visited = 0;
    cpu::forEachBroadcast(
        c.out, c.a, c.b, [&](int64_t o, int64_t a, int64_t b) {
          int64_t ga, gb;
          cuda::offsetsOf(o, ix, ga, gb);
          EXPECT_EQ(ga, a) << "element " << o;
          EXPECT_EQ(gb, b) << "element " << o;
          EXPECT_EQ(cuda::offsetOf(o, ix), a) << "element " << o;
          ++visited;
        });
    EXPECT_EQ(visited, numElements(c.out));
  }
}

/// The GPU pooling's window arithmetic (PoolIndex.h), run on the host,
/// gives the CPU column's pooling and its gradient: max, averages with and
/// without the padding, ceil_mode, strides, dilations, 1 to 3 spatial
/// dimensions.
TEST(DevicePlacement, PoolIndexOfTheGpuColumnPoolsAsTheCpu) {
  struct Case {
    Shape x, kernel, strides, pads, dilations;
    bool ceil;
    bool includePad;
  };
  const Case cases[] = {
      {{2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false},
      {{2, 3, 9, 8}, {3, 2}, {2, 3}, {1, 0, 0, 1}, {1, 1}, true, true},
      {{1, 2, 10, 11}, {2, 3}, {1, 2}, {0, 1, 0, 1}, {2, 2}, true, false},
      {{3, 2, 17}, {4}, {3}, {2, 1}, {1}, true, true},
      {{1, 2, 5, 6, 4},
       {2, 3, 2},
       {2, 2, 1},
       {0, 1, 0, 1, 1, 0},
       {1, 1, 1},
       false,
       true},
  };
  std::mt19937 rng(13);
  for (const Case &c : cases) {
    for (const char *kind : {"max", "avg"}) {
      SCOPED_TRACE(shapeString(c.x) + " " + kind + (c.ceil ? " ceil" : "") +
                   (c.includePad ? " pad" : ""));
      bool max = !std::strcmp(kind, "max");
      plan::Op pool, grad;
      pool.set_name(max ? "heterps.max_pool" : "heterps.avg_pool");
      grad.set_name("heterps.pool_grad");
      (*grad.mutable_attrs())["kind"].set_s(kind);
      for (plan::Op *op : {&pool, &grad}) {
        setInts(*op, "kernel_shape", c.kernel);
        setInts(*op, "strides", c.strides);
        setInts(*op, "pads", c.pads);
        setInts(*op, "dilations", c.dilations);
        (*op->mutable_attrs())["ceil_mode"].set_b(c.ceil);
        (*op->mutable_attrs())["count_include_pad"].set_b(c.includePad);
      }
      Tensor x = uniform(c.x, rng);
      OpInfo probe(pool, {{DType::F32, c.x}}, {});
      cpu::PoolShape shape(probe, c.x);
      cuda::PoolGeometry g =
          cuda::poolGeometryOf(shape, c.x, !max && c.includePad);
      Tensor dy = uniform(shape.output, rng);

      ExecContext ctx;
      TensorType xt{DType::F32, c.x}, yt{DType::F32, shape.output};
      OpInfo poolInfo(pool, {xt}, {yt});
      auto cpuPool = KernelRegistry::global().create(poolInfo, DeviceKind::CPU);
      cpuPool->prepareChecked({c.x});
      Tensor y(DType::F32, shape.output);
      cpuPool->run({&x}, {&y}, ctx);
      OpInfo gradInfo(grad, {xt, yt, yt}, {xt});
      auto cpuGrad = KernelRegistry::global().create(gradInfo, DeviceKind::CPU);
      cpuGrad->prepareChecked({c.x, shape.output, shape.output});
      Tensor dx(DType::F32, c.x);
      cpuGrad->run({&x, &y, &dy}, {&dx}, ctx);

      int64_t planes = c.x[0] * c.x[1];
      for (int64_t p = 0; p < planes; ++p) {
        const float *xp = x.as<float>() + p * g.inputs;
        for (int64_t o = 0; o < g.outputs; ++o)
          ASSERT_NEAR(cuda::pooledElement(xp, o, g, max),
                      y.as<float>()[p * g.outputs + o], 1e-5f)
              << "output " << o << " of plane " << p;
        for (int64_t i = 0; i < g.inputs; ++i)
          ASSERT_NEAR(cuda::poolGradElement(xp, dy.as<float>() + p * g.outputs,
                                            i, g, max),
                      dx.as<float>()[p * g.inputs + i], 1e-5f)
              << "input gradient " << i << " of plane " << p;
      }
    }
  }
}

/// The GPU batch norm's arithmetic (BatchNormMath.h), with its per-channel
/// two-pass statistics done here on the host, gives the CPU column's batch
/// norm in training (output and running statistics), inference, and its
/// gradient, for inputs of rank 2 to 6.
TEST(DevicePlacement, BatchNormMathOfTheGpuColumnNormalisesAsTheCpu) {
  std::mt19937 rng(17);
  for (Shape xs : {Shape{33, 9}, Shape{6, 5, 4, 3}, Shape{3, 4, 2, 3, 2, 5}}) {
    SCOPED_TRACE(shapeString(xs));
    plan::Op norm, grad;
    norm.set_name("heterps.batch_norm");
    grad.set_name("heterps.batch_norm_grad");
    const float epsilon = 1e-3f, momentum = 0.8f;
    for (plan::Op *op : {&norm, &grad})
      (*op->mutable_attrs())["epsilon"].set_f(epsilon);
    (*norm.mutable_attrs())["momentum"].set_f(momentum);
    OpInfo probe(norm, {}, {});
    cpu::BatchNormShape shape(probe, xs);
    int64_t channels = shape.channels, count = shape.count();
    auto draw = [&](const Shape &shape, float lo, float hi) {
      return uniform(shape, rng, lo, hi);
    };
    Tensor x = draw(xs, -2, 2), dy = draw(xs, -1, 1);
    Tensor scale = draw({channels}, 0.5f, 1.5f), bias = draw({channels}, -1, 1);
    Tensor mean = draw({channels}, -1, 1), variance = draw({channels}, 0.5f, 2);
    Tensor runningMean = mean.clone(), runningVariance = variance.clone();

    TensorType xt{DType::F32, xs}, ct{DType::F32, {channels}};
    OpInfo normInfo(norm, {xt, ct, ct, ct, ct}, {xt});
    auto cpuNorm = KernelRegistry::global().create(normInfo, DeviceKind::CPU);
    cpuNorm->prepareChecked(
        {xs, {channels}, {channels}, {channels}, {channels}});
    Tensor inference(DType::F32, xs), training(DType::F32, xs);
    ExecContext ctx;
    cpuNorm->run({&x, &scale, &bias, &mean, &variance}, {&inference}, ctx);
    ctx.training = true;
    cpuNorm->run({&x, &scale, &bias, &runningMean, &runningVariance},
                 {&training}, ctx);
    OpInfo gradInfo(grad, {xt, ct, xt}, {xt, ct, ct});
    auto cpuGrad = KernelRegistry::global().create(gradInfo, DeviceKind::CPU);
    cpuGrad->prepareChecked({xs, {channels}, xs});
    Tensor dx(DType::F32, xs), dscale(DType::F32, {channels}),
        dbias(DType::F32, {channels});
    cpuGrad->run({&x, &scale, &dy}, {&dx, &dscale, &dbias}, ctx);

    const float *xv = x.as<float>(), *dyv = dy.as<float>();
    std::vector<float> batchMean(channels), batchVariance(channels),
        sumDy(channels), sumDyXhat(channels);
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0, squares = 0;
      for (int64_t i = 0; i < count; ++i)
        sum += xv[cuda::channelOffset(i, c, channels, shape.inner)];
      batchMean[c] = static_cast<float>(sum / count);
      for (int64_t i = 0; i < count; ++i) {
        double d =
            xv[cuda::channelOffset(i, c, channels, shape.inner)] - batchMean[c];
        squares += d * d;
      }
      batchVariance[c] = static_cast<float>(squares / count);
      float rstd = 1.0f / std::sqrt(batchVariance[c] + epsilon);
      for (int64_t i = 0; i < count; ++i) {
        int64_t at = cuda::channelOffset(i, c, channels, shape.inner);
        sumDy[c] += dyv[at];
        sumDyXhat[c] += dyv[at] * (xv[at] - batchMean[c]) * rstd;
      }
      float unbias = static_cast<float>(count) / static_cast<float>(count - 1);
      EXPECT_NEAR(
          cuda::runningStatistic(mean.as<float>()[c], batchMean[c], momentum),
          runningMean.as<float>()[c], 1e-5f)
          << "running mean of channel " << c;
      EXPECT_NEAR(cuda::runningStatistic(variance.as<float>()[c],
                                         batchVariance[c] * unbias, momentum),
                  runningVariance.as<float>()[c], 1e-5f)
          << "running variance of channel " << c;
      EXPECT_NEAR(sumDyXhat[c], dscale.as<float>()[c], 1e-4f) << "dscale " << c;
      EXPECT_NEAR(sumDy[c], dbias.as<float>()[c], 1e-4f) << "dbias " << c;
    }
    int reported = 0;
    for (int64_t i = 0; i < x.numElements() && reported < 5; ++i) {
      int64_t c = cuda::channelAt(i, channels, shape.inner);
      float s = scale.as<float>()[c], b = bias.as<float>()[c];
      float inferred = cuda::batchNormalized(
          xv[i], mean.as<float>()[c], variance.as<float>()[c], epsilon, s, b);
      float trained = cuda::batchNormalized(xv[i], batchMean[c],
                                            batchVariance[c], epsilon, s, b);
      float rstd = 1.0f / std::sqrt(batchVariance[c] + epsilon);
      float gradient =
          cuda::batchNormInputGrad(xv[i], dyv[i], s, batchMean[c], rstd,
                                   sumDyXhat[c], sumDy[c], 1.0f / count);
      bool ok = std::abs(inferred - inference.as<float>()[i]) <= 1e-5f &&
                std::abs(trained - training.as<float>()[i]) <= 1e-5f &&
                std::abs(gradient - dx.as<float>()[i]) <= 1e-4f;
      if (!ok) {
        ADD_FAILURE() << "element " << i << ": inference " << inferred
                      << " against " << inference.as<float>()[i]
                      << ", training " << trained << " against "
                      << training.as<float>()[i] << ", gradient " << gradient
                      << " against " << dx.as<float>()[i];
        ++reported;
      }
    }
  }
}

/// heterps.cast's element conversion, shared by both columns: nonzero
/// (NaN and the infinities too) is true; floats beyond an integer's range
/// clamp to it; NaN is 0.
TEST(DevicePlacement, CastValueIsDefinedForEveryFloat) {
  EXPECT_TRUE(castValue<bool>(NAN));
  EXPECT_TRUE(castValue<bool>(-INFINITY));
  EXPECT_TRUE(castValue<bool>(0.25f));
  EXPECT_FALSE(castValue<bool>(-0.0f));
  EXPECT_EQ(castValue<int32_t>(1e10f), INT32_MAX);
  EXPECT_EQ(castValue<int32_t>(-1e10f), INT32_MIN);
  EXPECT_EQ(castValue<int32_t>(-2.75f), -2);
  EXPECT_EQ(castValue<int64_t>(3e19f), INT64_MAX);
  EXPECT_EQ(castValue<int64_t>(-3e19f), INT64_MIN);
  EXPECT_EQ(castValue<int64_t>(NAN), 0);
  EXPECT_EQ(castValue<int64_t>(INFINITY), INT64_MAX);
  EXPECT_EQ(castValue<uint8_t>(300.0), 255);
  EXPECT_EQ(castValue<uint8_t>(-4.0), 0);
  EXPECT_EQ(castValue<int8_t>(-200.0), -128);
  EXPECT_EQ(castValue<float>(int64_t(7)), 7.0f);
  EXPECT_EQ(castValue<float>(true), 1.0f);
}

} // namespace
