//===- Kernel.h - Kernels and their registry --------------------*- C++ -*-===//
//
// One registry keyed by (op name, device kind) holds every kernel, so the CPU
// (oneDNN) and CUDA implementations are two columns of one table. A kernel is
// created once per op of a stage; `prepare` sees the input shapes of a new
// input signature (a new batch size), returns the output shapes and may
// create and cache primitives for them; `run` executes on buffers that the
// executor planned for that signature, so a steady-state step allocates
// nothing.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_KERNEL_H
#define HETERPS_RUNTIME_KERNEL_H

#include "heterps/Runtime/OpInfo.h"
#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace heterps::runtime {

enum class DeviceKind { CPU, GPU };
const char *deviceKindName(DeviceKind kind);

class DeviceRuntime;
class EmbeddingStore;
class ParamStore;
class TableBatch;

/// What a kernel may touch besides its operands.
struct ExecContext {
  ParamStore *params = nullptr;
  EmbeddingStore *tables = nullptr;
  /// Training step (dropout, batch-norm statistics, optimizers) or inference.
  bool training = false;
  /// Steps taken so far; the optimizers' step count.
  int64_t step = 0;
  /// Seed of this run; kernels that draw (dropout) derive their streams from
  /// (seed, step, op) so that a backward kernel can redraw the same mask.
  uint64_t seed = 1;
  int threads = 1;
  /// Device-specific state (the oneDNN engine and stream for the CPU).
  void *device = nullptr;
  /// The GPU of the program's GPU ops (null when it has none): where the
  /// parameters they load live.
  DeviceRuntime *gpu = nullptr;
  /// The step's pulled rows and collected pushes (null: kernels call the
  /// tables themselves).
  TableBatch *batch = nullptr;
};

class Kernel {
public:
  explicit Kernel(const OpInfo &info) : info(info) {}
  virtual ~Kernel();

  /// Returns the output shapes for these input shapes. The default replaces
  /// every dynamic dimension of the plan's output types with dimension 0 of
  /// the first input (the batch).
  virtual std::vector<Shape> prepare(const std::vector<Shape> &inputShapes);
  /// prepare(), then the results checked against the plan's types: as many
  /// as the op has, each of its rank, with its static dimensions. The
  /// executors allocate from these shapes, so a kernel that computes
  /// another shape from attributes a corrupt plan set is an error here.
  std::vector<Shape> prepareChecked(const std::vector<Shape> &inputShapes);
  virtual void run(const std::vector<const Tensor *> &inputs,
                   const std::vector<Tensor *> &outputs,
                   ExecContext &context) = 0;
  /// True when `run` points its outputs at memory it does not write (a
  /// parameter, its input, a constant): the memory plan then gives them no
  /// buffer of their own.
  virtual bool outputsAreViews() const { return false; }

  const OpInfo &op() const { return info; }

protected:
  OpInfo info;
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const OpInfo &)>;

class KernelRegistry {
public:
  /// The registry with every kernel compiled into this binary.
  static KernelRegistry &global();

  void add(const std::string &opName, DeviceKind kind, KernelFactory factory);
  bool has(const std::string &opName, DeviceKind kind) const;
  /// Throws a RuntimeError naming the op and its location when no kernel of
  /// that kind exists.
  std::unique_ptr<Kernel> create(const OpInfo &op, DeviceKind kind) const;
  std::vector<std::string> opNames(DeviceKind kind) const;

private:
  std::map<std::pair<std::string, DeviceKind>, KernelFactory> factories;
};

/// Counts the calls into libraries that manage their own memory (oneDNN's
/// execute allocates small objects on every call), so that a test of the
/// memory plan can tell the runtime's allocations from theirs.
class ForeignCallScope {
public:
  ForeignCallScope() { ++depthRef(); }
  ~ForeignCallScope() { --depthRef(); }
  static int depth() { return depthRef(); }

private:
  static int &depthRef() {
    static thread_local int depth = 0;
    return depth;
  }
};

/// Adds the CPU column (lib/Runtime/CPU).
void registerCPUKernels(KernelRegistry &registry);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_KERNEL_H
