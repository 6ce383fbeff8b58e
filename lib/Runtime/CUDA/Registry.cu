//===- Registry.cu - The GPU column of the kernel registry ----------------===//

#include "GPUDevice.h"

#include "heterps/Runtime/DeviceRuntime.h"

using namespace heterps::runtime;

void cuda::registerGPUKernels(KernelRegistry &r) {
  registerElementwiseKernels(r);
  registerLinalgKernels(r);
  registerReduceKernels(r);
  registerLossKernels(r);
  registerShapeKernels(r);
  registerGatherKernels(r);
  registerScatterKernels(r);
  registerScanKernels(r);
  registerResizeKernels(r);
  registerRecurrentKernels(r);
  registerSoftmaxKernels(r);
  registerNormKernels(r);
  registerConvKernels(r);
  registerPoolKernels(r);
  registerLogicKernels(r);
}
