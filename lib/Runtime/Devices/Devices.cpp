//===- Devices.cpp - The compute devices of this machine ------------------===//

#include "heterps/Runtime/Devices.h"

#include <sched.h>
#include <sstream>
#include <thread>

namespace heterps {
namespace runtime {

static int countUsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0)
      return count;
  }
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

DeviceInventory queryDevices() {
  DeviceInventory inventory;
  inventory.cpuCores = countUsableCores();
#ifdef HETERPS_HAVE_CUDA
  inventory.cudaBuilt = true;
  cuda::queryGpus(inventory);
#else
  inventory.gpuStatus = "built without CUDA (HETERPS_ENABLE_CUDA=OFF or no "
                        "nvcc at configure time)";
#endif
  return inventory;
}

std::string describeDevices(const DeviceInventory &inventory) {
  std::ostringstream os;
  os << "cpu: " << inventory.cpuCores << " cores\n";
  for (const GpuInfo &gpu : inventory.gpus)
    os << "gpu " << gpu.index << ": " << gpu.name << ", "
       << gpu.memoryBytes / (1024 * 1024) << " MiB, " << gpu.multiprocessors
       << " SMs, sm_" << gpu.computeMajor << gpu.computeMinor
       << (gpu.kernelsRun ? "" : " (kernels of this build do not run)") << "\n";
  if (!inventory.gpuStatus.empty())
    os << "gpu: " << inventory.gpuStatus << "\n";
  return os.str();
}

} // namespace runtime
} // namespace heterps
