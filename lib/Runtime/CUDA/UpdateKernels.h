//===- UpdateKernels.h - Gradient sums and optimizer steps ------*- C++ -*-===//
//
// The device work behind DeviceRuntime::scaleAdd and applyUpdate, queued on
// the calling thread's stream.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CUDA_UPDATEKERNELS_H
#define HETERPS_LIB_RUNTIME_CUDA_UPDATEKERNELS_H

#include "heterps/Runtime/Optimizer.h"
#include "heterps/Runtime/Tensor.h"

namespace heterps::runtime::cuda {

void scaleAdd(float alpha, const Tensor &x, float beta, Tensor &y);
void applyUpdate(const OptimizerConfig &config, Tensor &w, const Tensor &g,
                 Tensor &state, int64_t step);

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_CUDA_UPDATEKERNELS_H
