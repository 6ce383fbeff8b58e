//===- GPUDevice.cu - CUDA state shared by the GPU kernels ----------------===//

#include "CublasLibrary.h"
#include "GPUDevice.h"

#include "heterps/Runtime/Error.h"

#include <atomic>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

void cuda::check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    fail(what, ": ", cudaGetErrorString(status), " (CUDA error ",
         static_cast<int>(status), ")");
}

void cuda::check(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(what, ": ", cublas().statusString(status), " (cuBLAS status ",
         static_cast<int>(status), ")");
}

namespace {
/// Owns a thread's streams, events and handle; destroyed when the thread ends.
struct ThreadDevice {
  GPUDevice device;
  ThreadDevice() {
    // First, so that a missing cuBLAS leaves no stream behind.
    const CublasLibrary &blas = cublas();
    check(cudaSetDevice(0), "cudaSetDevice(0)");
    check(cudaStreamCreateWithFlags(&device.stream, cudaStreamNonBlocking),
          "creating a CUDA stream");
    for (cudaStream_t *copies : {&device.copyStream, &device.uploadStream})
      check(cudaStreamCreateWithFlags(copies, cudaStreamNonBlocking),
            "creating a CUDA stream for copies");
    for (cudaEvent_t *event : {&device.queuedWork, &device.uploaded})
      check(cudaEventCreateWithFlags(event, cudaEventDisableTiming),
            "creating a CUDA event");
    check(blas.create(&device.blas), "creating a cuBLAS handle");
    check(blas.setStream(device.blas, device.stream),
          "binding cuBLAS to the stream");
    // TF32 stays off: f32 GEMMs match the CPU column within 1e-5.
    check(blas.setMathMode(device.blas, CUBLAS_DEFAULT_MATH),
          "setting cuBLAS's math mode");
  }
  ~ThreadDevice() {
    if (device.blas)
      cublas().destroy(device.blas);
    for (cudaEvent_t event : {device.queuedWork, device.uploaded})
      if (event)
        cudaEventDestroy(event);
    for (cudaStream_t copies : {device.copyStream, device.uploadStream})
      if (copies)
        cudaStreamDestroy(copies);
    if (device.stream)
      cudaStreamDestroy(device.stream);
  }
};
} // namespace

GPUDevice &cuda::gpuDevice() {
  thread_local ThreadDevice state;
  return state.device;
}

static std::atomic<GpuMath> &mathSetting() {
  static std::atomic<GpuMath> math{GpuMath::F32};
  return math;
}

void cuda::setProductMath(GpuMath math) { mathSetting().store(math); }

GpuMath cuda::productMath() { return mathSetting().load(); }

void cuda::checkLaunch(const OpInfo &op) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    fail(op.describe(),
         ": the GPU kernel did not launch: ", cudaGetErrorString(status));
}

void cuda::requireF32(const OpInfo &op) {
  auto check = [&](const std::vector<TensorType> &types) {
    for (const TensorType &t : types)
      if (isFloat(t.dtype) && t.dtype != DType::F32)
        fail(op.describe(), ": the GPU column computes in f32, the op ", "has ",
             dtypeName(t.dtype), " values");
  };
  check(op.inputTypes());
  check(op.outputTypes());
}

void cuda::requireF32OrInteger(const OpInfo &op, size_t operand) {
  DType t = op.inputTypes().at(operand).dtype;
  if (t != DType::F32 && t != DType::I32 && t != DType::I64)
    fail(op.describe(), ": the GPU column takes f32, i32 or i64 values ",
         "here, got ", dtypeName(t));
}

void cuda::requireWordElements(const OpInfo &op, DType dtype) {
  size_t bytes = dtypeSize(dtype);
  if (bytes != 4 && bytes != 8)
    fail(op.describe(), ": the GPU column moves 4- and 8-byte elements ",
         "here, got ", dtypeName(dtype));
}

void cuda::releaseDeviceMemory(void *p) {
  // Errors are ignored: at exit the device may be gone already.
  cudaDeviceSynchronize();
  cudaFree(p);
}

bool cuda::wideIndexOperand(const OpInfo &op, size_t operand) {
  DType index = op.inputTypes().at(operand).dtype;
  if (index != DType::I32 && index != DType::I64)
    fail(op.describe(), ": the GPU column takes i32 or i64 indices, ", "got ",
         dtypeName(index));
  return index == DType::I64;
}

void BadIndexFlag::arm() {
  if (!flag) {
    void *word = nullptr;
    check(cudaMalloc(&word, sizeof(unsigned long long)),
          "allocating an index check");
    flag.reset(static_cast<unsigned long long *>(word), releaseDeviceMemory);
  }
  check(cudaMemsetAsync(flag.get(), 0xff, sizeof(unsigned long long),
                        gpuDevice().stream),
        "arming an index check");
}

int64_t BadIndexFlag::first() {
  unsigned long long position = 0;
  check(cudaMemcpyAsync(&position, flag.get(), sizeof(position),
                        cudaMemcpyDeviceToHost, gpuDevice().stream),
        "reading an index check");
  check(cudaStreamSynchronize(gpuDevice().stream), "waiting for a kernel");
  return position == ~0ull ? -1 : static_cast<int64_t>(position);
}

int64_t BadIndexFlag::indexAt(const Tensor &indices, int64_t position,
                              bool wide) {
  int64_t value = 0;
  size_t es = wide ? sizeof(int64_t) : sizeof(int32_t);
  check(cudaMemcpy(&value,
                   static_cast<const char *>(indices.data()) + position * es,
                   es, cudaMemcpyDeviceToHost),
        "reading a bad index");
  return wide ? value : static_cast<int32_t>(value);
}
