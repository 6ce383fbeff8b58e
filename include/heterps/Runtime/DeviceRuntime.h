//===- DeviceRuntime.h - What the executors need of a GPU -------*- C++ -*-===//
//
// The executors place every value of a step in host or device memory and
// move values across at the boundaries between CPU and GPU ops; they do so
// through this interface, so that they include no CUDA header. The CUDA
// library (lib/Runtime/CUDA) implements it over a stream per thread and
// CUDA's stream-ordered pool of device memory.
//
// Dense parameters that GPU ops load stay in device memory from step to
// step, with their optimizer state: the executors accumulate their
// gradients and apply their updates there (scaleAdd, applyUpdate), and the
// ParamStore copies them back when the host reads them.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DEVICERUNTIME_H
#define HETERPS_RUNTIME_DEVICERUNTIME_H

#include "heterps/Runtime/Kernel.h"
#include "heterps/Runtime/Optimizer.h"
#include "heterps/Runtime/Tensor.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heterps::runtime {

/// How the GPU column computes f32 products (GEMM, MatMul): in f32, within
/// 1e-5 of the CPU column (the default), or on tensor cores with operands
/// rounded to TF32 or BF16 and f32 sums (heterps-run --gpu-math).
enum class GpuMath { F32, TF32, BF16 };
/// "f32", "tf32", "bf16"; nullopt for any other name.
std::optional<GpuMath> parseGpuMath(const std::string &name);
const char *gpuMathName(GpuMath math);

/// A point in a device's queued work that the host can ask about or wait
/// for. Made once (DeviceRuntime::createFence) and recorded again at every
/// use, so that a steady-state step creates none.
class DeviceFence {
public:
  virtual ~DeviceFence();
  /// Whether the device has done the work before the fence's last
  /// recording (true for a fence never recorded). Does not wait.
  virtual bool reached() = 0;
  /// Returns once reached(); throws naming the device's error when the
  /// work before the fence failed.
  virtual void wait() = 0;
};

/// One copy of startCopiesToHost() or startCopiesToDevice(): `from` into
/// `to`, of the same type and shape, one in host and one in device memory.
struct Transfer {
  const Tensor *from = nullptr;
  Tensor *to = nullptr;
};

class DeviceRuntime {
public:
  virtual ~DeviceRuntime();

  /// "cuda:0 (NVIDIA H200)", for messages.
  virtual std::string describe() const = 0;
  /// A device tensor of this shape, zero-filled, from the device's pool.
  virtual Tensor allocate(DType dtype, const Shape &shape) = 0;
  /// A zero-filled host tensor in memory the device reads and writes
  /// directly (page-locked): copies from and to it are DMA transfers, and a
  /// copy to the device from it returns before the transfer ends. The
  /// executors keep the host ends of their copies in such buffers.
  virtual Tensor allocateHost(DType dtype, const Shape &shape) = 0;
  /// Queues the copy of a host tensor into a device tensor of the same
  /// type and shape on the calling thread's stream. `host` must not change
  /// until the stream has reached the copy (synchronize(), or a later copy
  /// to the host, returns): from page-locked memory the transfer runs after
  /// this returns.
  virtual void copyToDevice(const Tensor &host, Tensor &device) = 0;
  /// Copies a device tensor into a host tensor of the same type and shape,
  /// after the work queued before it on the calling thread's stream.
  /// Returns when the host copy is complete.
  virtual void copyToHost(const Tensor &device, Tensor &host) = 0;
  /// Waits for the work queued on the calling thread's stream.
  virtual void synchronize() = 0;
  /// A fence for startCopiesToHost(), never recorded.
  virtual std::unique_ptr<DeviceFence> createFence() = 0;
  /// Queues `copies` (device tensors into page-locked host tensors, from
  /// allocateHost) on the calling thread's stream of copies to the host,
  /// after the work queued so far on its stream, records `done` after them
  /// and returns: the kernels queued next run while the copies transfer.
  /// Neither end of a copy may change or be released, and no host end
  /// read, until `done` is reached; reaching it also means that the work
  /// queued before this call is done. With no copies, `done` marks that
  /// work alone.
  virtual void startCopiesToHost(const std::vector<Transfer> &copies,
                                 DeviceFence &done) = 0;
  /// Queues `copies` (host tensors into device tensors) on the calling
  /// thread's stream of copies to the device and makes the work queued
  /// next on its stream wait for them: they transfer while the kernels
  /// queued before still run. No queued work may use a device end (a
  /// device end freshly allocated is cleared by queued work:
  /// synchronize() first). A host end must stay as it is until the work
  /// queued after this call is done; from page-locked memory the call
  /// returns before the transfers end.
  virtual void startCopiesToDevice(const std::vector<Transfer> &copies) = 0;
  /// Sets how the products of every GPU kernel of this process compute,
  /// from their next run on.
  virtual void setMath(GpuMath math) = 0;
  /// Queues y = alpha * x + beta * y over two f32 device tensors of one
  /// shape on the calling thread's stream; with beta 0, y's old contents
  /// are not read (they may be NaN).
  virtual void scaleAdd(float alpha, const Tensor &x, float beta,
                        Tensor &y) = 0;
  /// Queues optimizer update number `step` (from 1) of the f32 device
  /// tensor `w` with gradient `g` (w's shape) and state `state`
  /// (config.stateSlots() x w's elements, or empty for SGD), by the rule
  /// applyUpdate() applies on the host.
  virtual void applyUpdate(const OptimizerConfig &config, Tensor &w,
                           const Tensor &g, Tensor &state, int64_t step) = 0;
};

/// The GPU column's runtime on this machine: null when CUDA is not built
/// or no GPU runs this build's kernels.
DeviceRuntime *gpuRuntime();

namespace cuda {
/// The CUDA runtime of GPU 0, or null when it cannot run kernels. Defined
/// only when CUDA is built (lib/Runtime/CUDA).
DeviceRuntime *deviceRuntime();
/// Adds the GPU column. Defined only when CUDA is built.
void registerGPUKernels(KernelRegistry &registry);
} // namespace cuda

/// Ops that run where their state lives whatever their stage's kind: the
/// embedding tables and the channels between stages are host memory, so
/// lookups, pulls, pushes, sends and receives run on the CPU and their
/// operands move to the host. (Dense parameters follow the ops that load
/// them: registerDeviceStateKernels.)
bool runsOnHost(const std::string &opName);

/// Whether op `opName` writes its operand `operand` in place when training:
/// batch norm's running statistics (operands 3 and 4).
bool writesOperandInPlace(const std::string &opName, size_t operand);

/// Creates the kernel of `op` for a stage of kind `stageKind` and sets
/// `column` to the column it came from: the stage's own; the CPU for a host
/// op and for an op on integers alone (ids and shapes, which host ops
/// read); the CPU for an op or a variant of it that the GPU column lacks
/// when `fallbackToCPU`. Otherwise throws naming the op.
std::unique_ptr<Kernel> createKernelFor(const KernelRegistry &registry,
                                        const OpInfo &op, DeviceKind stageKind,
                                        bool fallbackToCPU, DeviceKind &column);

/// Moves every GPU heterps.load_param whose value a CPU op reads (one the
/// GPU column lacks, under --fallback=cpu) to the CPU column: such an op
/// may write the parameter in place (batch norm's running statistics), so
/// it must read the parameter itself, not a copy. `nodes` are an
/// executor's, before it places values (each with kernel, kind, inputs
/// and outputs).
template <typename Nodes>
void loadParametersWhereTheyAreWritten(Nodes &nodes,
                                       const KernelRegistry &registry) {
  for (auto &load : nodes) {
    if (load->kind != DeviceKind::GPU ||
        load->kernel->op().name() != "heterps.load_param")
      continue;
    for (auto &reader : nodes)
      if (reader->kind == DeviceKind::CPU &&
          std::count(reader->inputs.begin(), reader->inputs.end(),
                     load->outputs[0])) {
        load->kernel = registry.create(load->kernel->op(), DeviceKind::CPU);
        load->kind = DeviceKind::CPU;
        break;
      }
  }
}

/// Adds the GPU column's heterps.load_param and heterps.update_param: a
/// parameter that a GPU op loads is kept in the memory of the device in
/// ExecContext::gpu, with its optimizer state (ParamStore::onDevice), and
/// updated there through DeviceRuntime::applyUpdate. They are written once
/// for every DeviceRuntime, so that a test device runs the same kernels.
void registerDeviceStateKernels(KernelRegistry &registry);

/// Copies its operand between host and device memory: the executors insert
/// one wherever an op reads a value that lives in the other space. `op` is
/// the op the copy serves, for messages and profiles.
std::unique_ptr<Kernel>
makeTransferKernel(const OpInfo &op, DeviceRuntime &device, MemorySpace to);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_DEVICERUNTIME_H
