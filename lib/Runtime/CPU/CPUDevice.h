//===- CPUDevice.h - oneDNN state shared by the CPU kernels -----*- C++ -*-===//

#ifndef HETERPS_LIB_RUNTIME_CPU_CPUDEVICE_H
#define HETERPS_LIB_RUNTIME_CPU_CPUDEVICE_H

#include "heterps/Runtime/Kernel.h"

#include <dnnl.hpp>

namespace heterps::runtime::cpu {

/// The oneDNN engine and stream of the CPU column. The engine is one per
/// process; each thread has its own stream on it, because a stream is not
/// safe to use from several threads and the pipelined executor runs a stage
/// replica per thread.
struct CPUDevice {
  dnnl::engine engine;
  dnnl::stream stream;
};

/// This thread's device.
CPUDevice &cpuDevice();

/// Runs a small primitive on one thread: waking OpenMP workers costs tens of
/// microseconds, more than a GEMM of a CTR model's head takes, and made two
/// threads slower than one. Used around both creating a primitive (oneDNN
/// sizes its work split then) and executing it.
class SerialScope {
public:
  explicit SerialScope(bool serial);
  ~SerialScope();
  SerialScope(const SerialScope &) = delete;
  SerialScope &operator=(const SerialScope &) = delete;

private:
  int saved = 0;
};

/// Multiply-adds below which a primitive runs on one thread.
constexpr double kSerialWork = 1 << 22;

/// oneDNN memory over a runtime tensor of f32 with the plain (row-major)
/// layout of its shape.
dnnl::memory::desc
plainDesc(const Shape &shape,
          dnnl::memory::data_type type = dnnl::memory::data_type::f32);
dnnl::memory wrap(const dnnl::memory::desc &desc, const Tensor &tensor);

/// Kernels of the convolution, pooling and normalisation families
/// (ConvKernels.cpp, PoolKernels.cpp, NormKernels.cpp).
void registerCNNKernels(KernelRegistry &registry);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_CPUDEVICE_H
