//===- CPUDevice.cpp - oneDNN state shared by the CPU kernels -------------===//

#include "CPUDevice.h"

#include "heterps/Runtime/Error.h"

#include <omp.h>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

CPUDevice &cpu::cpuDevice() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  thread_local CPUDevice device{engine, dnnl::stream(engine)};
  return device;
}

dnnl::memory::desc cpu::plainDesc(const Shape &shape,
                                  dnnl::memory::data_type type) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  if (dims.empty())
    dims.push_back(1);
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, type, strides);
}

dnnl::memory cpu::wrap(const dnnl::memory::desc &desc, const Tensor &tensor) {
  return dnnl::memory(desc, cpuDevice().engine, tensor.data());
}

SerialScope::SerialScope(bool serial) {
  if (!serial)
    return;
  saved = omp_get_max_threads();
  omp_set_num_threads(1);
}

SerialScope::~SerialScope() {
  if (saved)
    omp_set_num_threads(saved);
}
