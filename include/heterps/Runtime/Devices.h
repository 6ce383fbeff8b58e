//===- Devices.h - The compute devices of this machine ----------*- C++ -*-===//
//
// What the runtime can run on here: CPU cores and, when the CUDA runtime was
// built, the GPUs the driver reports. No MLIR: the runtime reads plan files.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DEVICES_H
#define HETERPS_RUNTIME_DEVICES_H

#include <cstdint>
#include <string>
#include <vector>

namespace heterps {
namespace runtime {

struct GpuInfo {
  int index = 0;
  std::string name;
  std::uint64_t memoryBytes = 0;
  int multiprocessors = 0;
  int computeMajor = 0;
  int computeMinor = 0;
  /// Whether a kernel of this build ran on the GPU and gave the right answer
  /// (false, for example, when the build targets another architecture).
  bool kernelsRun = false;
};

struct DeviceInventory {
  /// Logical CPU cores this process may use.
  int cpuCores = 0;
  /// Whether this build has the CUDA runtime.
  bool cudaBuilt = false;
  std::vector<GpuInfo> gpus;
  /// Why there are no usable GPUs ("no CUDA-capable device", "built without
  /// CUDA", a driver error); empty when every GPU works.
  std::string gpuStatus;
};

/// Queries the devices of this machine. Never fails: a missing driver or GPU
/// is reported in `gpuStatus`.
DeviceInventory queryDevices();

/// Formats the inventory, one device a line.
std::string describeDevices(const DeviceInventory &inventory);

namespace cuda {
/// Fills `inventory.gpus` and `inventory.gpuStatus` from the CUDA driver and
/// runs a probe kernel on each GPU. Defined only when CUDA is built.
void queryGpus(DeviceInventory &inventory);
} // namespace cuda

} // namespace runtime
} // namespace heterps

#endif // HETERPS_RUNTIME_DEVICES_H
