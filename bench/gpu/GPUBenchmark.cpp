//===- GPUBenchmark.cpp - The GPU column against cuBLAS and the CPU -------===//
//
// Three figures, each against a reference run in the same process:
// - TFLOP/s of the GPU column's heterps.gemm and heterps.matmul in each
//   --gpu-math (f32, tf32, bf16) against cuBLAS called directly on the same
//   operands with the same compute type (cublasGemmEx,
//   cublasGemmStridedBatchedEx): the cost of the kernel layer;
// - training samples/s of the plans in --plans (the DLRM-shaped CTR model
//   and the MLP, compiled at build time) with their stage on the GPU
//   against the same plan on the CPU column with --threads threads;
// - a DLRM with a wide top MLP as three solvers scheduled it on one GPU
//   machine (gpu-node.json) at one throughput target: the exact solver's
//   plan (lookups on a CPU core, the MLP on the GPU), the GPU alone and the
//   CPUs alone, each run as scheduled, against the cost model's predicted
//   samples/s and dollars per 10^8 samples;
//
//   heterps-gpu-bench [--plans=DIR] [--seconds=S] [--batches=4096,8192]
//                     [--threads=N] [--gemm=4096,8192]
//
// It links the runtime alone (no MLIR), as the GPU tests do, so that
// scripts/gpu-check.sh can carry it to a GPU machine.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Devices.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Runtime/Program.h"
#include "heterps/Support/Flags.h"
#include "heterps/plan.pb.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace heterps;
using namespace heterps::runtime;
using Clock = std::chrono::steady_clock;

namespace {

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    fail(what, ": ", cudaGetErrorString(status));
}
void check(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(what, ": cuBLAS status ", static_cast<int>(status));
}

/// Calls of `body` per second over about `seconds`, after two warm-up
/// calls; `sync` waits for the queued work.
double perSecond(double seconds, const std::function<void()> &body,
                 const std::function<void()> &sync) {
  body();
  body();
  sync();
  int64_t calls = 0;
  auto start = Clock::now();
  double elapsed = 0;
  do {
    for (int i = 0; i < 4; ++i, ++calls)
      body();
    sync();
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return static_cast<double>(calls) / elapsed;
}

/// A device tensor of `shape` filled with uniform values in [-1, 1].
Tensor randomDeviceTensor(DeviceRuntime &gpu, const Shape &shape,
                          uint32_t seed) {
  Tensor host(DType::F32, shape);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < host.numElements(); ++i)
    host.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  Tensor device = gpu.allocate(DType::F32, shape);
  gpu.copyToDevice(host, device);
  gpu.synchronize();
  return device;
}

/// One op of the GPU column on device operands.
struct ColumnOp {
  plan::Op op;
  std::unique_ptr<OpInfo> info;
  std::unique_ptr<Kernel> kernel;
  std::vector<Tensor> in, out;
  ExecContext ctx;

  ColumnOp(DeviceRuntime &gpu, const std::string &name,
           const std::vector<Shape> &shapes) {
    op.set_name(name);
    std::vector<TensorType> types;
    for (size_t i = 0; i < shapes.size(); ++i) {
      types.push_back({DType::F32, shapes[i]});
      in.push_back(randomDeviceTensor(gpu, shapes[i], 7 + i));
    }
    // The result's rank is the operands'; its dimensions come from prepare.
    Shape open(shapes[0].size(), -1);
    info = std::make_unique<OpInfo>(
        op, types, std::vector<TensorType>{{DType::F32, open}});
    kernel = KernelRegistry::global().create(*info, DeviceKind::GPU);
    std::vector<Shape> s = kernel->prepareChecked(shapes);
    out.push_back(gpu.allocate(DType::F32, s[0]));
  }
  void run() {
    std::vector<const Tensor *> inputs;
    for (const Tensor &t : in)
      inputs.push_back(&t);
    std::vector<Tensor *> outputs{&out[0]};
    kernel->run(inputs, outputs, ctx);
  }
};

/// cuBLAS on its own handle and stream; the compute type of each call says
/// whether it may use TF32 or BF16 tensor cores, as in the GPU column.
struct DirectBlas {
  cudaStream_t stream = nullptr;
  cublasHandle_t handle = nullptr;
  DirectBlas() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "creating a stream");
    check(cublasCreate(&handle), "creating a cuBLAS handle");
    check(cublasSetStream(handle, stream), "binding cuBLAS to the stream");
    check(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "math mode");
  }
  ~DirectBlas() {
    cublasDestroy(handle);
    cudaStreamDestroy(stream);
  }
  void sync() { check(cudaStreamSynchronize(stream), "synchronizing"); }
};

cublasComputeType_t computeType(GpuMath math) {
  return math == GpuMath::TF32   ? CUBLAS_COMPUTE_32F_FAST_TF32
         : math == GpuMath::BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                 : CUBLAS_COMPUTE_32F;
}

void benchProducts(DeviceRuntime &gpu, const std::vector<int64_t> &sizes,
                   double seconds) {
  std::printf("f32 products in each --gpu-math: the GPU column against "
              "cuBLAS called directly\n\n%-28s %12s %12s %7s\n",
              "shape", "column TF/s", "cuBLAS TF/s", "ratio");
  DirectBlas blas;
  const float one = 1.0f, zero = 0.0f;
  auto row = [](const std::string &shape, double flops, double column,
                double direct) {
    std::printf("%-28s %12.2f %12.2f %7.2f\n", shape.c_str(),
                flops * column / 1e12, flops * direct / 1e12, column / direct);
  };
  for (GpuMath math : {GpuMath::F32, GpuMath::TF32, GpuMath::BF16}) {
    gpu.setMath(math);
    cublasComputeType_t compute = computeType(math);
    std::string suffix = std::string(" ") + gpuMathName(math);
    for (int64_t n : sizes) {
      ColumnOp gemm(gpu, "heterps.gemm", {{n, n}, {n, n}});
      double column = perSecond(
          seconds, [&] { gemm.run(); }, [&] { gpu.synchronize(); });
      const float *a = gemm.in[0].as<float>(), *b = gemm.in[1].as<float>();
      float *c = gemm.out[0].as<float>();
      int d = static_cast<int>(n);
      double direct = perSecond(
          seconds,
          [&] {
            check(cublasGemmEx(blas.handle, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d,
                               &one, b, CUDA_R_32F, d, a, CUDA_R_32F, d, &zero,
                               c, CUDA_R_32F, d, compute, CUBLAS_GEMM_DEFAULT),
                  "cublasGemmEx");
          },
          [&] { blas.sync(); });
      row("gemm " + std::to_string(n) + "^3" + suffix, 2.0 * n * n * n, column,
          direct);
    }
    const int64_t batch = 64, m = 512;
    ColumnOp matmul(gpu, "heterps.matmul", {{batch, m, m}, {batch, m, m}});
    double column = perSecond(
        seconds, [&] { matmul.run(); }, [&] { gpu.synchronize(); });
    const float *a = matmul.in[0].as<float>(), *b = matmul.in[1].as<float>();
    float *c = matmul.out[0].as<float>();
    int d = static_cast<int>(m);
    double direct = perSecond(
        seconds,
        [&] {
          check(cublasGemmStridedBatchedEx(
                    blas.handle, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, &one, b,
                    CUDA_R_32F, d, m * m, a, CUDA_R_32F, d, m * m, &zero, c,
                    CUDA_R_32F, d, m * m, batch, compute, CUBLAS_GEMM_DEFAULT),
                "cublasGemmStridedBatchedEx");
        },
        [&] { blas.sync(); });
    row("matmul 64 x 512^3" + suffix, 2.0 * batch * m * m * m, column, direct);
  }
  gpu.setMath(GpuMath::F32);
}

/// Inputs for every input of `plan` at `batch`: floats in [0, 1) (dense
/// features and BCE labels), integer labels in [0, 10) (classes), other
/// integers (ids) uniform over the smallest table's vocabulary.
std::vector<Tensor> syntheticInputs(const plan::Plan &plan, int64_t batch,
                                    uint32_t seed) {
  std::mt19937_64 rng(seed);
  int64_t vocab = 0;
  for (const plan::SparseTable &t : plan.tables())
    vocab = vocab ? std::min(vocab, t.vocab()) : t.vocab();
  std::vector<Tensor> inputs;
  for (int i = 0; i < plan.inputs_size(); ++i) {
    const plan::Value &value = plan.values(plan.inputs(i));
    TensorType type = fromPlanType(value.type());
    bool label = false;
    for (int id : plan.training().label_inputs())
      label |= id == plan.inputs(i);
    int64_t range = label || vocab < 1 ? 10 : vocab;
    Shape shape = type.dims;
    for (int64_t &d : shape)
      if (d < 0)
        d = batch;
    Tensor t(type.dtype, shape);
    for (int64_t e = 0; e < t.numElements(); ++e) {
      if (type.dtype == DType::F32)
        t.as<float>()[e] = std::uniform_real_distribution<float>(0, 1)(rng);
      else if (type.dtype == DType::I64)
        t.as<int64_t>()[e] = static_cast<int64_t>(rng() % range);
      else if (type.dtype == DType::I32)
        t.as<int32_t>()[e] = static_cast<int32_t>(rng() % range);
      else
        fail("input '", value.name(), "' of type ", dtypeName(type.dtype),
             ": no synthetic data for it");
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

/// Training samples/s of `executor` on synthetic batches of `batch`.
double trainingRate(StepExecutor &executor, const plan::Plan &plan,
                    int64_t batch, double seconds) {
  std::vector<std::vector<Tensor>> batches;
  for (uint32_t s = 0; s < 4; ++s)
    batches.push_back(syntheticInputs(plan, batch, 1 + s));
  int64_t step = 0;
  double steps = perSecond(
      seconds,
      [&] {
        std::vector<const Tensor *> in;
        for (const Tensor &t : batches[step++ % batches.size()])
          in.push_back(&t);
        executor.run(in, true, {});
      },
      [] {});
  return steps * static_cast<double>(batch);
}

/// Training samples/s of `plan` with every stage of `kind`, in one worker.
double oneWorkerRate(plan::Plan plan, const std::string &kind, int64_t batch,
                     int threads, double seconds) {
  for (plan::Stage &stage : *plan.mutable_stages()) {
    stage.set_kind(kind);
    stage.set_resource(kind + "-pool");
  }
  ParamStore params(plan, threads);
  LocalEmbeddingStore tables(plan, threads);
  ProgramOptions options;
  options.threads = threads;
  Program program(plan, params, tables, options);
  return trainingRate(program, plan, batch, seconds);
}

/// "node-cpu x1 > node-gpu x1": a plan's stages, their types and units.
std::string describeStages(const plan::Plan &plan) {
  std::string out;
  for (const plan::Stage &stage : plan.stages())
    out += (out.empty() ? "" : " > ") + stage.resource() + " x" +
           std::to_string(stage.units());
  return out;
}

/// The wide DLRM's plans as the solvers scheduled them on gpu-node.json,
/// each run as scheduled: one worker for one stage of one unit, else the
/// pipelined executor with a replica per unit.
void benchScheduledPlans(const std::string &plans, int threads,
                         double seconds) {
  std::printf("\nthe wide DLRM scheduled on bench/gpu/gpu-node.json at 5000 "
              "samples/s: the cost model's prediction against this "
              "machine\n\n%-9s %-28s %12s %8s %10s %12s %10s\n",
              "solver", "stages", "predicted/s", "$/hour", "$/1e8 pred",
              "measured/s", "$/1e8 here");
  for (const char *solver : {"dp", "gpu-only", "cpu-only"}) {
    plan::Plan plan =
        loadPlan(plans + "/wide-dlrm-" + std::string(solver) + ".plan");
    ParamStore params(plan, threads);
    LocalEmbeddingStore tables(plan, threads);
    ProgramOptions options;
    options.threads = threads;
    std::unique_ptr<StepExecutor> executor;
    if (plan.stages_size() == 1 && plan.stages(0).units() <= 1) {
      executor = std::make_unique<Program>(plan, params, tables, options);
    } else {
      PipelineOptions pipeline;
      pipeline.maxWorkers = threads;
      executor = std::make_unique<PipelineExecutor>(plan, params, tables,
                                                    options, pipeline);
    }
    int64_t batch = plan.batch_size() > 0 ? plan.batch_size() : 4096;
    double measured = trainingRate(*executor, plan, batch, seconds);
    const plan::Prediction &p = plan.prediction();
    double perHour = p.cost_per_hour();
    std::printf("%-9s %-28s %12.0f %8.3f %10.3f %12.0f %10.3f\n", solver,
                describeStages(plan).c_str(), p.throughput(), perHour,
                perHour * 1e8 / p.throughput() / 3600, measured,
                perHour * 1e8 / measured / 3600);
  }
}

void benchTraining(const std::string &plans,
                   const std::vector<int64_t> &batches, int threads,
                   double seconds) {
  std::printf("\ntraining samples/s: the plan's stage on the GPU against the "
              "CPU column with %d threads\n\n%-12s %6s %14s %14s %7s\n",
              threads, "model", "batch", "GPU", "CPU", "ratio");
  for (const char *model : {"dlrm", "mlp"}) {
    std::string path = plans + "/" + model + ".plan";
    plan::Plan plan = loadPlan(path);
    for (int64_t batch : batches) {
      double onGpu = oneWorkerRate(plan, "gpu", batch, threads, seconds);
      double onCpu = oneWorkerRate(plan, "cpu", batch, threads, seconds);
      std::printf("%-12s %6lld %14.0f %14.0f %7.2f\n", model,
                  static_cast<long long>(batch), onGpu, onCpu, onGpu / onCpu);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string plans = HETERPS_GPU_BENCH_PLANS;
  double seconds = 2.0;
  std::vector<int64_t> batches{4096, 8192}, gemmSizes{4096, 8192};
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  Flags flags("heterps-gpu-bench",
              "usage: heterps-gpu-bench [options]\n\n"
              "TFLOP/s of the GPU column's products against cuBLAS called "
              "directly, and\ntraining samples/s of the DLRM-shaped CTR model "
              "and the MLP on the GPU\nagainst the CPU column, in one "
              "process.\n");
  flags.option("--plans", plans, "DIR",
               "the folder holding dlrm.plan and mlp.plan (default: the "
               "build's)");
  flags.option("--seconds", seconds, "S", "seconds per figure (default 2)", 0,
               3600, /*minExclusive=*/true);
  flags.option("--batches", batches, "N,...",
               "training batch sizes (default 4096,8192)", 1, 1 << 20);
  flags.option("--threads", threads, "N",
               "CPU threads of both runs (default: every core)", 1, 4096);
  flags.option("--gemm", gemmSizes, "N,...",
               "square GEMM sizes (default 4096,8192)", 1, 1 << 15);
  flags.parse(argc, argv);
  try {
    DeviceInventory inventory = queryDevices();
    std::printf("%s\n", describeDevices(inventory).c_str());
    DeviceRuntime *gpu = gpuRuntime();
    if (!gpu) {
      std::fprintf(stderr, "heterps-gpu-bench: %s\n",
                   inventory.gpuStatus.c_str());
      return 1;
    }
    std::printf("on %s, %d CPU threads\n\n", gpu->describe().c_str(), threads);
    benchProducts(*gpu, gemmSizes, seconds);
    benchTraining(plans, batches, threads, seconds);
    benchScheduledPlans(plans, threads, seconds);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "heterps-gpu-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
