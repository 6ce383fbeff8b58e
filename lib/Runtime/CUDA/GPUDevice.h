//===- GPUDevice.h - CUDA state shared by the GPU kernels -------*- C++ -*-===//
//
// The GPU column mirrors the CPU's: each thread that runs GPU kernels has
// its own stream and cuBLAS handle on GPU 0 (a handle is not safe to share
// between threads), and every kernel of the thread queues its work on that
// stream. Kernels do not wait for the device: the copies to the host and
// the end of a step do (DeviceRuntime.h). Two more streams per thread
// carry the copies that the pipelined executor overlaps with kernels: to
// the host after a segment, to the device before one.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_GPUDEVICE_H
#define HETERPS_LIB_RUNTIME_CUDA_GPUDEVICE_H

#include "Indexing.h"

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Kernel.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace heterps::runtime::cuda {

/// Throws a RuntimeError naming `what` and CUDA's reason when a call failed.
void check(cudaError_t status, const char *what);
void check(cublasStatus_t status, const char *what);

/// Frees device memory once the device is done with it. cudaFree does not
/// wait for queued work reading memory from cudaMallocAsync, and is only
/// said to "may" wait for cudaMalloc's: this waits for every stream of the
/// device first (buffers go when they grow or when their owner does, not
/// in steady-state steps). Any thread may call it.
void releaseDeviceMemory(void *p);

struct GPUDevice {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  /// Where the thread's copies to the host run beside its kernels
  /// (DeviceRuntime::startCopiesToHost), and the event that makes them
  /// wait for the kernels queued before them.
  cudaStream_t copyStream = nullptr;
  cudaEvent_t queuedWork = nullptr;
  /// Where its copies to the device run beside the kernels queued before
  /// them (DeviceRuntime::startCopiesToDevice), and the event that makes
  /// the kernels queued after them wait.
  cudaStream_t uploadStream = nullptr;
  cudaEvent_t uploaded = nullptr;
};

/// This thread's streams and cuBLAS handle on GPU 0, created on first use.
GPUDevice &gpuDevice();

/// How products compute (DeviceRuntime::setMath), for every thread.
void setProductMath(GpuMath math);
GpuMath productMath();

/// Checks that the last launch on this thread was accepted; `op` names the
/// op in the error.
void checkLaunch(const OpInfo &op);

/// A device word where kernels that read indices record the smallest
/// position of one out of range (atomicMin), read back after the launch, so
/// that a GPU op fails on a bad index as its CPU twin does.
class BadIndexFlag {
public:
  /// Marks the word "none seen" on this thread's stream, before a launch.
  void arm();
  unsigned long long *word() const { return flag.get(); }
  /// Waits for this thread's stream; the smallest bad position, or -1.
  int64_t first();

  /// Arms the word, calls `launch` with the indices typed (`const
  /// int64_t *` when `wide`, else `const int32_t *`), checks the launch
  /// and returns the smallest bad position with its index in `value`, or -1.
  template <typename F>
  int64_t launchChecked(const OpInfo &op, const Tensor &indices, bool wide,
                        F &&launch, int64_t &value) {
    arm();
    if (wide)
      launch(indices.as<int64_t>());
    else
      launch(indices.as<int32_t>());
    checkLaunch(op);
    int64_t position = first();
    if (position >= 0)
      value = indexAt(indices, position, wide);
    return position;
  }

private:
  static int64_t indexAt(const Tensor &indices, int64_t position, bool wide);

  std::shared_ptr<unsigned long long> flag;
};

/// Device values a kernel keeps between its launches (statistics, partial
/// sums, index offsets); grown when a larger input arrives, not at every
/// step.
template <typename T> class DeviceScratch {
public:
  void reserve(int64_t count, const char *what) {
    if (count <= size)
      return;
    void *p = nullptr;
    check(cudaMalloc(&p, count * sizeof(T)), what);
    buffer.reset(static_cast<T *>(p), releaseDeviceMemory);
    size = count;
  }
  T *get() const { return buffer.get(); }

private:
  std::shared_ptr<T> buffer;
  int64_t size = 0;
};

/// Row-major y = alpha * op(A) op(B) + beta * y over `batch` products of
/// op(A) m x k and op(B) k x n, through cuBLAS in the process's GpuMath
/// (strides between the batch's matrices in elements; a B stride of 0
/// shares one B; y's stride is m * n). `op` names the op in errors.
void gemm(const OpInfo &op, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t strideA, const float *b,
          int64_t strideB, float beta, float *y, int64_t batch);

/// Row-major c = op(a) op(b) + beta * c with leading dimensions (the
/// elements between rows of each matrix as stored), k > 0, through cuBLAS
/// in the process's GpuMath. `op` names the op in errors.
void gemmLeading(const OpInfo &op, bool ta, bool tb, int64_t m, int64_t n,
                 int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc);

/// `batch` row-major products c_i = op(a_i) op(b_i) + beta * c_i, k > 0,
/// with leading dimensions and the elements between the batch's matrices
/// (a stride of 0 shares one matrix), through cuBLAS in the process's
/// GpuMath.
void gemmBatched(const OpInfo &op, bool ta, bool tb, int64_t m, int64_t n,
                 int64_t k, const float *a, int64_t lda, int64_t strideA,
                 const float *b, int64_t ldb, int64_t strideB, float beta,
                 float *c, int64_t ldc, int64_t strideC, int64_t batch);

/// A grid-stride loop of `e` over [0, total): every thread of the grid
/// takes the elements its index names, then those a grid further on.
#define HETERPS_GRID_STRIDE(e, total)                                          \
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;             \
       e < (total); e += int64_t(gridDim.x) * blockDim.x)

/// Threads per block of the elementwise and reduction kernels.
constexpr int kBlock = 256;

/// Threads per warp: the kernels that give a row to a warp reduce it with
/// these shuffles (every lane of the warp must take part).
constexpr int kWarp = 32;

/// Rows per block of the kernels that give a row to a warp, and the blocks
/// for `rows` of them (capped; their loops stride over the rest).
constexpr int kRowsPerBlock = kBlock / kWarp;
inline unsigned blocksForRows(int64_t rows) {
  int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  return static_cast<unsigned>(blocks < 1       ? 1
                               : blocks > 65535 ? 65535
                                                : blocks);
}

#ifdef __CUDACC__
__device__ inline float warpSum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warpMax(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
#endif

/// Blocks for `n` elements, one element per thread, capped so that the
/// kernels' grid-stride loops cover the rest.
inline unsigned blocksFor(int64_t n) {
  int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 1       ? 1
                               : blocks > 65535 ? 65535
                                                : blocks);
}

/// Fails naming the op unless every float operand and result of the plan's
/// types is f32: the GPU column computes in f32.
void requireF32(const OpInfo &op);

/// Fails naming the op unless operand `operand`'s element type is f32, i32
/// or i64: the types of the GPU kernels that move and compare values
/// (pads, scatters, walks along an axis).
void requireF32OrInteger(const OpInfo &op, size_t operand);

/// Fails naming the op unless elements of `dtype` are 4 or 8 bytes, the
/// words that the GPU kernels which only move elements (slices, transposes,
/// gathers) copy. Called when the kernel is made, so that --fallback=cpu
/// takes the CPU's kernel for the others.
void requireWordElements(const OpInfo &op, DType dtype);

/// Calls f(T{}) with the C++ type of an element type that
/// requireF32OrInteger accepted.
template <typename F> void dispatchF32OrInteger(DType t, F &&f) {
  if (t == DType::F32)
    f(float{});
  else if (t == DType::I32)
    f(int32_t{});
  else
    f(int64_t{});
}

/// Fails naming the op unless operand `operand` (indices) is i32 or i64;
/// whether it is i64.
bool wideIndexOperand(const OpInfo &op, size_t operand);

/// Registers a kernel class of the GPU column.
template <typename K>
void addKernel(KernelRegistry &r, const std::string &name) {
  r.add(name, DeviceKind::GPU,
        [](const OpInfo &op) { return std::make_unique<K>(op); });
}

void registerElementwiseKernels(KernelRegistry &r);
void registerLinalgKernels(KernelRegistry &r);
void registerReduceKernels(KernelRegistry &r);
void registerLossKernels(KernelRegistry &r);
void registerShapeKernels(KernelRegistry &r);
void registerGatherKernels(KernelRegistry &r);
void registerScatterKernels(KernelRegistry &r);
void registerScanKernels(KernelRegistry &r);
void registerResizeKernels(KernelRegistry &r);
void registerRecurrentKernels(KernelRegistry &r);
void registerSoftmaxKernels(KernelRegistry &r);
void registerNormKernels(KernelRegistry &r);
void registerConvKernels(KernelRegistry &r);
void registerPoolKernels(KernelRegistry &r);
void registerLogicKernels(KernelRegistry &r);

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_GPUDEVICE_H
