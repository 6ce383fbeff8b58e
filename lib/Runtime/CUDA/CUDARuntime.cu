//===- CUDARuntime.cu - Device memory and transfers for the executors -----===//
//
// Device buffers come from CUDA's stream-ordered pool (cudaMallocAsync): a
// memory plan takes its buffers once per input signature and gives them
// back when it is destroyed, so a steady-state step allocates nothing. The
// host ends of the executors' copies are page-locked (cudaHostAlloc), so
// that the copies are DMA transfers.
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"
#include "UpdateKernels.h"

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Devices.h"
#include "heterps/Runtime/Error.h"

#include <algorithm>
#include <cstring>
#include <mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

/// A CUDA event; reached when the stream it was last recorded on passes it.
class CUDAFence : public DeviceFence {
public:
  CUDAFence() {
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
          "creating a CUDA event");
  }
  ~CUDAFence() override { cudaEventDestroy(event); }
  bool reached() override {
    cudaError_t status = cudaEventQuery(event);
    if (status == cudaErrorNotReady)
      return false;
    check(status, "copying to the host");
    return true;
  }
  void wait() override {
    check(cudaEventSynchronize(event), "copying to the host");
  }

  cudaEvent_t event = nullptr;
};

class CUDARuntime : public DeviceRuntime {
public:
  explicit CUDARuntime(std::string name) : name(std::move(name)) {}

  std::string describe() const override { return "cuda:0 (" + name + ")"; }

  Tensor allocate(DType dtype, const Shape &shape) override {
    size_t bytes = numElements(shape) * dtypeSize(dtype);
    size_t rounded = ((bytes + 255) / 256) * 256;
    if (rounded == 0)
      rounded = 256;
    GPUDevice &device = gpuDevice();
    void *p = nullptr;
    check(cudaMallocAsync(&p, rounded, device.stream),
          "allocating device memory");
    check(cudaMemsetAsync(p, 0, rounded, device.stream),
          "clearing device memory");
    // The last reference can go on any thread, at exit after a worker's
    // stream is gone, and while work queued on a copy stream reads it.
    std::shared_ptr<void> buffer(p, releaseDeviceMemory);
    return Tensor::adopt(dtype, shape, std::move(buffer), rounded,
                         MemorySpace::Device);
  }

  Tensor allocateHost(DType dtype, const Shape &shape) override {
    size_t bytes = std::max<size_t>(numElements(shape) * dtypeSize(dtype), 1);
    void *p = nullptr;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable),
          "allocating page-locked host memory");
    std::memset(p, 0, bytes);
    std::shared_ptr<void> buffer(p, [](void *q) { cudaFreeHost(q); });
    return Tensor::adopt(dtype, shape, std::move(buffer), bytes,
                         MemorySpace::Host);
  }

  void copyToDevice(const Tensor &host, Tensor &device) override {
    requireSame(host, device);
    check(cudaMemcpyAsync(device.data(), host.data(), host.byteSize(),
                          cudaMemcpyHostToDevice, gpuDevice().stream),
          "copying to the device");
  }

  void copyToHost(const Tensor &device, Tensor &host) override {
    requireSame(device, host);
    cudaStream_t stream = gpuDevice().stream;
    check(cudaMemcpyAsync(host.data(), device.data(), device.byteSize(),
                          cudaMemcpyDeviceToHost, stream),
          "copying to the host");
    check(cudaStreamSynchronize(stream), "waiting for the device");
  }

  void synchronize() override {
    check(cudaStreamSynchronize(gpuDevice().stream), "waiting for the device");
  }

  std::unique_ptr<DeviceFence> createFence() override {
    return std::make_unique<CUDAFence>();
  }

  void startCopiesToHost(const std::vector<Transfer> &copies,
                         DeviceFence &done) override {
    auto *fence = dynamic_cast<CUDAFence *>(&done);
    if (!fence)
      fail("a fence of another device given to ", describe());
    GPUDevice &device = gpuDevice();
    check(cudaEventRecord(device.queuedWork, device.stream),
          "marking the queued kernels");
    check(cudaStreamWaitEvent(device.copyStream, device.queuedWork, 0),
          "ordering copies after kernels");
    for (const Transfer &copy : copies) {
      requireSame(*copy.from, *copy.to);
      check(cudaMemcpyAsync(copy.to->data(), copy.from->data(),
                            copy.from->byteSize(), cudaMemcpyDeviceToHost,
                            device.copyStream),
            "copying to the host");
    }
    check(cudaEventRecord(fence->event, device.copyStream),
          "marking the copies to the host");
  }

  void startCopiesToDevice(const std::vector<Transfer> &copies) override {
    if (copies.empty())
      return;
    GPUDevice &device = gpuDevice();
    for (const Transfer &copy : copies) {
      requireSame(*copy.from, *copy.to);
      check(cudaMemcpyAsync(copy.to->data(), copy.from->data(),
                            copy.from->byteSize(), cudaMemcpyHostToDevice,
                            device.uploadStream),
            "copying to the device");
    }
    check(cudaEventRecord(device.uploaded, device.uploadStream),
          "marking the copies to the device");
    check(cudaStreamWaitEvent(device.stream, device.uploaded, 0),
          "ordering kernels after copies");
  }

  void setMath(GpuMath math) override { setProductMath(math); }

  void scaleAdd(float alpha, const Tensor &x, float beta, Tensor &y) override {
    cuda::scaleAdd(alpha, x, beta, y);
  }

  void applyUpdate(const OptimizerConfig &config, Tensor &w, const Tensor &g,
                   Tensor &state, int64_t step) override {
    cuda::applyUpdate(config, w, g, state, step);
  }

private:
  static void requireSame(const Tensor &from, const Tensor &to) {
    if (from.dtype() != to.dtype() || from.shape() != to.shape())
      fail("copy between host and device of ", from.typeString(), " into ",
           to.typeString());
  }

  std::string name;
};

} // namespace

DeviceRuntime *cuda::deviceRuntime() {
  static std::once_flag once;
  static CUDARuntime *runtime = nullptr;
  std::call_once(once, [] {
    DeviceInventory inventory;
    queryGpus(inventory);
    if (!inventory.gpus.empty() && inventory.gpus[0].kernelsRun)
      runtime = new CUDARuntime(inventory.gpus[0].name);
  });
  return runtime;
}
