//===- DevicesTest.cpp - The device inventory -----------------------------===//

#include "heterps/Runtime/Devices.h"

#include <gtest/gtest.h>

using namespace heterps::runtime;

TEST(DevicesTest, CountsUsableCpuCores) {
  DeviceInventory inventory = queryDevices();
  EXPECT_GE(inventory.cpuCores, 1);
  EXPECT_NE(describeDevices(inventory).find("cpu: "), std::string::npos);
}

TEST(DevicesTest, GpusWorkOrTheReasonIsGiven) {
  DeviceInventory inventory = queryDevices();
#ifdef HETERPS_HAVE_CUDA
  EXPECT_TRUE(inventory.cudaBuilt);
#else
  EXPECT_FALSE(inventory.cudaBuilt);
#endif
  // Either every GPU found runs this build's kernels, or the inventory says
  // why there is none that does: a machine without a GPU is not an error.
  bool allRun = !inventory.gpus.empty();
  for (const GpuInfo &gpu : inventory.gpus) {
    allRun = allRun && gpu.kernelsRun;
    EXPECT_FALSE(gpu.name.empty());
    EXPECT_GT(gpu.memoryBytes, 0u);
  }
  if (allRun)
    EXPECT_TRUE(inventory.gpuStatus.empty()) << inventory.gpuStatus;
  else
    EXPECT_FALSE(inventory.gpuStatus.empty());
  std::cout << describeDevices(inventory);
}
