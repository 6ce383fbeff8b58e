//===- UpdateKernels.cu - Gradient sums and optimizer steps on the GPU ----===//
//
// What keeps a GPU stage's dense parameters in device memory: the sum of a
// step's weighted gradients (scaleAdd) and the optimizer step
// (applyUpdate), by the element rules the host applies (OptimizerMath.h).
//
//===----------------------------------------------------------------------===//

#include "GPUDevice.h"
#include "UpdateKernels.h"

#include "../OptimizerMath.h"

#include "heterps/Runtime/Error.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

__global__ void scaleAddKernel(float alpha, const float *x, float beta,
                               float *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = beta == 0.0f ? alpha * x[i] : alpha * x[i] + beta * y[i];
}

__global__ void updateKernel(UpdateCoefficients k, float *w, const float *g,
                             float *state, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    switch (k.kind) {
    case OptimizerConfig::Kind::SGD:
      sgdElement(k, w[i], g[i]);
      break;
    case OptimizerConfig::Kind::Momentum:
      momentumElement(k, w[i], g[i], state[i]);
      break;
    case OptimizerConfig::Kind::Adagrad:
      adagradElement(k, w[i], g[i], state[i]);
      break;
    case OptimizerConfig::Kind::Adam:
      adamElement(k, w[i], g[i], state[i], state[n + i]);
      break;
    }
  }
}

void requireDeviceF32(const Tensor &t, const char *what) {
  if (t.space() != MemorySpace::Device || t.dtype() != DType::F32)
    fail(what, " is ", t.typeString(), " in ",
         (t.space() == MemorySpace::Device ? "device" : "host"),
         " memory; expected f32 in device memory");
}

} // namespace

void cuda::scaleAdd(float alpha, const Tensor &x, float beta, Tensor &y) {
  requireDeviceF32(x, "the addend");
  requireDeviceF32(y, "the sum");
  if (x.shape() != y.shape())
    fail("adding ", x.typeString(), " into ", y.typeString());
  int64_t n = y.numElements();
  if (n == 0)
    return;
  scaleAddKernel<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(
      alpha, x.as<float>(), beta, y.as<float>(), n);
  check(cudaGetLastError(), "launching a gradient sum");
}

void cuda::applyUpdate(const OptimizerConfig &config, Tensor &w,
                       const Tensor &g, Tensor &state, int64_t step) {
  requireDeviceF32(w, "the parameter");
  requireDeviceF32(g, "its gradient");
  if (g.shape() != w.shape())
    fail("a gradient of ", g.typeString(), " for a parameter of ",
         w.typeString());
  int64_t n = w.numElements(), slots = config.stateSlots();
  if (slots) {
    requireDeviceF32(state, "the optimizer state");
    if (state.numElements() != slots * n)
      fail("the optimizer state is ", state.typeString(), ", ", slots, " x ", n,
           " elements expected");
  }
  if (n == 0)
    return;
  updateKernel<<<blocksFor(n), kBlock, 0, gpuDevice().stream>>>(
      updateCoefficients(config, step), w.as<float>(), g.as<float>(),
      slots ? state.as<float>() : nullptr, n);
  check(cudaGetLastError(), "launching an optimizer update");
}
