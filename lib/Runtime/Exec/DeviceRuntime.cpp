//===- DeviceRuntime.cpp - Host and device placement of ops ---------------===//

#include "heterps/Runtime/DeviceRuntime.h"

#include "heterps/Runtime/Error.h"

#include <set>

using namespace heterps::runtime;

DeviceRuntime::~DeviceRuntime() = default;
DeviceFence::~DeviceFence() = default;

std::optional<GpuMath> heterps::runtime::parseGpuMath(const std::string &name) {
  if (name == "f32")
    return GpuMath::F32;
  if (name == "tf32")
    return GpuMath::TF32;
  if (name == "bf16")
    return GpuMath::BF16;
  return std::nullopt;
}

const char *heterps::runtime::gpuMathName(GpuMath math) {
  switch (math) {
  case GpuMath::F32:
    return "f32";
  case GpuMath::TF32:
    return "tf32";
  case GpuMath::BF16:
    return "bf16";
  }
  return "f32";
}

DeviceRuntime *heterps::runtime::gpuRuntime() {
#ifdef HETERPS_HAVE_CUDA
  return cuda::deviceRuntime();
#else
  return nullptr;
#endif
}

bool heterps::runtime::runsOnHost(const std::string &opName) {
  static const std::set<std::string> hostOps = {
      "heterps.embedding_lookup", "heterps.embedding_grad", "heterps.ps_pull",
      "heterps.ps_push",          "heterps.send",           "heterps.recv"};
  return hostOps.count(opName) != 0;
}

bool heterps::runtime::writesOperandInPlace(const std::string &opName,
                                            size_t operand) {
  return opName == "heterps.batch_norm" && (operand == 3 || operand == 4);
}

static bool onIntegersAlone(const OpInfo &op) {
  for (const TensorType &t : op.inputTypes())
    if (isFloat(t.dtype))
      return false;
  for (const TensorType &t : op.outputTypes())
    if (isFloat(t.dtype))
      return false;
  return true;
}

std::unique_ptr<Kernel>
heterps::runtime::createKernelFor(const KernelRegistry &registry,
                                  const OpInfo &op, DeviceKind stageKind,
                                  bool fallbackToCPU, DeviceKind &column) {
  column = DeviceKind::CPU;
  if (stageKind == DeviceKind::CPU || runsOnHost(op.name()) ||
      onIntegersAlone(op))
    return registry.create(op, DeviceKind::CPU);
  if (!registry.has(op.name(), DeviceKind::GPU)) {
    if (!fallbackToCPU)
      fail(op.describe(), ": the GPU column has no kernel for '", op.name(),
           "'; run with --fallback=cpu to execute it on the CPU, its "
           "operands copied to the host and its results back");
    return registry.create(op, DeviceKind::CPU);
  }
  try {
    std::unique_ptr<Kernel> kernel = registry.create(op, DeviceKind::GPU);
    column = DeviceKind::GPU;
    return kernel;
  } catch (const RuntimeError &error) {
    // A variant the GPU kernel refuses (an element type, a kind).
    if (!fallbackToCPU)
      throw RuntimeError(std::string(error.what()) +
                         "; run with --fallback=cpu to execute it on the CPU");
    return registry.create(op, DeviceKind::CPU);
  }
}

namespace {

class TransferKernel : public Kernel {
public:
  TransferKernel(const OpInfo &op, DeviceRuntime &device, MemorySpace to)
      : Kernel(op), device(device), to(to) {}

  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return {in[0]};
  }

  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &out, ExecContext &) override {
    MemorySpace from =
        to == MemorySpace::Device ? MemorySpace::Host : MemorySpace::Device;
    if (in[0]->space() != from || out[0]->space() != to)
      fail(info.describe(), ": a copy to the ",
           (to == MemorySpace::Device ? "device" : "host"),
           " was given tensors in the wrong memory spaces");
    if (to == MemorySpace::Device)
      device.copyToDevice(*in[0], *out[0]);
    else
      device.copyToHost(*in[0], *out[0]);
  }

private:
  DeviceRuntime &device;
  MemorySpace to;
};

} // namespace

std::unique_ptr<Kernel>
heterps::runtime::makeTransferKernel(const OpInfo &op, DeviceRuntime &device,
                                     MemorySpace to) {
  return std::make_unique<TransferKernel>(op, device, to);
}
