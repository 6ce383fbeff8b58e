//===- Registry.cpp - The registry of every kernel in this binary ---------===//

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Kernel.h"

using namespace heterps::runtime;

namespace heterps::runtime {
void registerStateKernels(KernelRegistry &registry);
} // namespace heterps::runtime

KernelRegistry &KernelRegistry::global() {
  // Columns register explicitly: static registration objects in static
  // libraries are dropped by the linker when nothing references them.
  static KernelRegistry *registry = [] {
    auto *r = new KernelRegistry();
    registerCPUKernels(*r);
    registerStateKernels(*r);
#ifdef HETERPS_HAVE_CUDA
    cuda::registerGPUKernels(*r);
    registerDeviceStateKernels(*r);
#endif
    return r;
  }();
  return *registry;
}
