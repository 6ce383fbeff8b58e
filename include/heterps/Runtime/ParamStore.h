//===- ParamStore.h - Dense parameters and optimizer state ------*- C++ -*-===//

#ifndef HETERPS_RUNTIME_PARAMSTORE_H
#define HETERPS_RUNTIME_PARAMSTORE_H

#include "heterps/Runtime/Initializer.h"
#include "heterps/Runtime/Optimizer.h"
#include "heterps/Runtime/Tensor.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace heterps::plan {
class Plan;
} // namespace heterps::plan

namespace heterps::runtime {

class DeviceRuntime;

struct DenseParameter {
  std::string name;
  /// The host copy of the value.
  Tensor value;
  bool frozen = false;
  /// Optimizer state (stateSlots() x value's elements) and its step count.
  Tensor state;
  int64_t steps = 0;
  /// The copies of value and state in the memory of `device`, which GPU
  /// ops load and update (empty until a GPU op loads the parameter).
  DeviceRuntime *device = nullptr;
  Tensor deviceValue, deviceState;
  /// Which copies hold the current value and state: the host's, the
  /// device's, or both.
  bool hostCurrent = true, deviceCurrent = false;
};

/// The dense parameters of a plan: initial values from the plan, or drawn
/// from their initializers with `seed`.
///
/// A parameter that GPU ops load lives in device memory while they train it:
/// onDevice() copies it there once, and get() copies it back when the host
/// reads it (a checkpoint, the end of training, a CPU op). Work that changes
/// the device copy has finished whenever no step is running (the executors
/// wait for the device before a step returns), so get() may run on any
/// thread. Safe to call from the workers of one pipeline at once.
class ParamStore {
public:
  ParamStore(const plan::Plan &plan, uint64_t seed);

  /// The parameter with its host copy current, copied back from the device
  /// when GPU work changed it. The device copy is stale from then on: the
  /// caller may write the host's.
  DenseParameter &get(const std::string &name);
  /// Every parameter, each as get() returns it.
  std::map<std::string, DenseParameter> &all();
  /// The parameter with its value and optimizer state current in
  /// `device`'s memory (deviceValue, deviceState), copied there when the
  /// host's are newer. The device copy is the current one from then on:
  /// GPU ops update it, batch normalisation writes its running statistics
  /// into it.
  DenseParameter &onDevice(const std::string &name, DeviceRuntime &device);

  /// One optimizer step on `name` with gradient `grad`, on the host.
  void update(const std::string &name, const Tensor &grad,
              const OptimizerConfig &config);

private:
  DenseParameter &find(const std::string &name);
  /// Brings `p`'s host copy up to date and marks its device copy stale.
  void toHost(DenseParameter &p);

  std::map<std::string, DenseParameter> params;
  std::mutex mutex;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PARAMSTORE_H
