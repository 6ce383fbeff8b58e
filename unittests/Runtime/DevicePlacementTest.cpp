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
// GPU column's own formulas (UnaryMath.h) are held against the CPU column
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
  // In: the dense features, the looked-up rows, the labels and the
  // parameters. Out: the gradients the host's updates and pushes read,
  // and the prediction.
  EXPECT_GT(device.toDevice, 0);
  EXPECT_GT(device.toHost, 0);
  EXPECT_GT(device.allocations, 0);
  EXPECT_EQ(device.synchronizations, 3);
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
    for (int64_t i = 0; i < n; ++i) {
      float xi = x.as<float>()[i], yi = y.as<float>()[i];
      EXPECT_NEAR(cuda::unaryForward(k, xi, p), yi,
                  1e-5f * std::max(1.0f, std::abs(yi)))
          << "x = " << xi;
      EXPECT_NEAR(cuda::unaryBackward(k, xi, yi, dy.as<float>()[i], p),
                  dx.as<float>()[i],
                  1e-5f * std::max(1.0f, std::abs(dx.as<float>()[i])))
          << "x = " << xi;
    }
  }
}

/// The GPU convolution's patches (ConvIndex.h) and its products per image
/// and group, computed here on the host, give the CPU column's convolution
/// and gradient: strides, uneven pads, dilations, groups, 1 to 3 spatial
/// dimensions.
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
  auto random = [&](const Shape &shape) {
    Tensor t(DType::F32, shape);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
    return t;
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(shapeString(c.x) + " * " + shapeString(c.w));
    plan::Op conv, grad;
    conv.set_name("heterps.conv");
    grad.set_name("heterps.conv_grad");
    for (plan::Op *op : {&conv, &grad}) {
      auto set = [&](const char *key, const std::vector<int64_t> &v) {
        for (int64_t x : v)
          (*op->mutable_attrs())[key].mutable_ints()->add_values(x);
      };
      set("strides", c.strides);
      set("pads", c.pads);
      set("dilations", c.dilations);
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

    // The GPU column's decomposition, on the host.
    int64_t images = c.x[0], groupFeatures = g.features / g.group,
            reduce = g.channels / g.group * g.taps;
    std::vector<float> col(g.channels * g.taps * g.outputs), dcol(col.size()),
        gotDw(w.numElements(), 0.0f), gotDb(g.features, 0);
    for (int64_t n = 0; n < images; ++n) {
      const float *xn = x.as<float>() + n * g.channels * g.inputs;
      const float *dyn = dy.as<float>() + n * g.features * g.outputs;
      for (int64_t e = 0; e < static_cast<int64_t>(col.size()); ++e)
        col[e] = cuda::patchElement(xn, e, g);
      for (int64_t gr = 0; gr < g.group; ++gr) {
        const float *wg = w.as<float>() + gr * groupFeatures * reduce;
        const float *colg = col.data() + gr * reduce * g.outputs;
        const float *dyg = dyn + gr * groupFeatures * g.outputs;
        float *dcolg = dcol.data() + gr * reduce * g.outputs;
        for (int64_t m = 0; m < groupFeatures; ++m)
          for (int64_t o = 0; o < g.outputs; ++o) {
            float sum = b.as<float>()[gr * groupFeatures + m];
            for (int64_t k = 0; k < reduce; ++k)
              sum += wg[m * reduce + k] * colg[k * g.outputs + o];
            float expected =
                y.as<float>()[(n * g.features + gr * groupFeatures + m) *
                                  g.outputs +
                              o];
            ASSERT_NEAR(sum, expected, 1e-4f) << "output " << m << ", " << o;
          }
        for (int64_t m = 0; m < groupFeatures; ++m)
          for (int64_t k = 0; k < reduce; ++k)
            for (int64_t o = 0; o < g.outputs; ++o)
              gotDw[(gr * groupFeatures + m) * reduce + k] +=
                  dyg[m * g.outputs + o] * colg[k * g.outputs + o];
        for (int64_t k = 0; k < reduce; ++k)
          for (int64_t o = 0; o < g.outputs; ++o) {
            float sum = 0;
            for (int64_t m = 0; m < groupFeatures; ++m)
              sum += wg[m * reduce + k] * dyg[m * g.outputs + o];
            dcolg[k * g.outputs + o] = sum;
          }
      }
      for (int64_t f = 0; f < g.features; ++f)
        for (int64_t o = 0; o < g.outputs; ++o)
          gotDb[f] += dyn[f * g.outputs + o];
      for (int64_t e = 0; e < g.channels * g.inputs; ++e)
        ASSERT_NEAR(cuda::foldedElement(dcol.data(), e, g),
                    dx.as<float>()[n * g.channels * g.inputs + e], 1e-4f)
            << "input gradient " << e << " of image " << n;
    }
    for (int64_t i = 0; i < w.numElements(); ++i)
      EXPECT_NEAR(gotDw[i], dw.as<float>()[i], 1e-4f)
          << "filter gradient " << i;
    for (int64_t f = 0; f < g.features; ++f)
      EXPECT_NEAR(gotDb[f], db.as<float>()[f], 1e-4f) << "bias gradient " << f;
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
        auto set = [&](const char *key, const Shape &v) {
          for (int64_t x : v)
            (*op->mutable_attrs())[key].mutable_ints()->add_values(x);
        };
        set("kernel_shape", c.kernel);
        set("strides", c.strides);
        set("pads", c.pads);
        set("dilations", c.dilations);
        (*op->mutable_attrs())["ceil_mode"].set_b(c.ceil);
        (*op->mutable_attrs())["count_include_pad"].set_b(c.includePad);
      }
      Tensor x(DType::F32, c.x);
      for (int64_t i = 0; i < x.numElements(); ++i)
        x.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
      OpInfo probe(pool, {{DType::F32, c.x}}, {});
      cpu::PoolShape shape(probe, c.x);
      cuda::PoolGeometry g =
          cuda::poolGeometryOf(shape, c.x, !max && c.includePad);
      Tensor dy(DType::F32, shape.output);
      for (int64_t i = 0; i < dy.numElements(); ++i)
        dy.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);

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
