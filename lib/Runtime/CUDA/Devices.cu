//===- Devices.cu - GPUs seen through the CUDA runtime --------------------===//

#include "heterps/Runtime/Devices.h"

#include <cuda_runtime.h>

namespace heterps {
namespace runtime {
namespace cuda {

__global__ void probeKernel(int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = 3 * i + 1;
}

/// Runs the probe kernel on the current device and checks its output: a
/// build for the wrong architecture fails here, not in the middle of a job.
static bool probe() {
  constexpr int n = 256;
  int *device = nullptr;
  if (cudaMalloc(&device, n * sizeof(int)) != cudaSuccess)
    return false;
  probeKernel<<<1, n>>>(device, n);
  int host[n] = {};
  bool ok = cudaGetLastError() == cudaSuccess &&
            cudaMemcpy(host, device, sizeof(host), cudaMemcpyDeviceToHost) ==
                cudaSuccess;
  cudaFree(device);
  for (int i = 0; ok && i < n; ++i)
    ok = host[i] == 3 * i + 1;
  return ok;
}

void queryGpus(DeviceInventory &inventory) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // cudaErrorNoDevice (100) and cudaErrorInsufficientDriver (35) are what a
    // machine without a GPU or driver answers: not an error for the runtime.
    inventory.gpuStatus = std::string("no usable GPU: ") +
                          cudaGetErrorString(status) + " (CUDA error " +
                          std::to_string(static_cast<int>(status)) + ")";
    cudaGetLastError();
    return;
  }
  if (count == 0) {
    inventory.gpuStatus = "no CUDA-capable device";
    return;
  }
  for (int index = 0; index < count; ++index) {
    cudaDeviceProp props;
    if (cudaGetDeviceProperties(&props, index) != cudaSuccess ||
        cudaSetDevice(index) != cudaSuccess) {
      inventory.gpuStatus = "cannot query GPU " + std::to_string(index);
      cudaGetLastError();
      continue;
    }
    GpuInfo gpu;
    gpu.index = index;
    gpu.name = props.name;
    gpu.memoryBytes = props.totalGlobalMem;
    gpu.multiprocessors = props.multiProcessorCount;
    gpu.computeMajor = props.major;
    gpu.computeMinor = props.minor;
    gpu.kernelsRun = probe();
    if (!gpu.kernelsRun)
      inventory.gpuStatus = "GPU " + std::to_string(index) +
                            " does not run kernels of this build: " +
                            cudaGetErrorString(cudaGetLastError());
    inventory.gpus.push_back(gpu);
  }
}

} // namespace cuda
} // namespace runtime
} // namespace heterps
