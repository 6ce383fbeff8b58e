//===- ParamStore.cpp - Dense parameters and their optimizer state --------===//

#include "heterps/Runtime/ParamStore.h"

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Hash.h"
#include "heterps/Runtime/Initializer.h"
#include "heterps/Runtime/PlanTypes.h"

using namespace heterps;
using namespace heterps::runtime;

static uint64_t nameSeed(uint64_t seed, const std::string &name) {
  return fnv1a(name.data(), name.size(), kFnv1aOffset ^ seed);
}

ParamStore::ParamStore(const plan::Plan &plan, uint64_t seed) {
  for (const plan::DenseParam &p : plan.params()) {
    DenseParameter param;
    param.name = p.name();
    param.frozen = p.frozen();
    TensorType type = fromPlanType(p.type());
    if (type.dtype != DType::F32)
      fail("parameter '", p.name(), "' has element type ",
           dtypeName(type.dtype), "; the runtime trains f32 parameters");
    if (p.has_value()) {
      param.value = tensorFromData(p.value(), "parameter '" + p.name() + "'");
      if (param.value.dtype() != type.dtype || param.value.shape() != type.dims)
        fail("parameter '", p.name(), "': its value is ",
             param.value.typeString(), ", its type ",
             Tensor::view(type.dtype, type.dims, nullptr).typeString());
    } else {
      std::vector<double> args(p.init().args().begin(), p.init().args().end());
      if (std::string error = initializerError(p.init().kind(), args);
          !error.empty())
        fail("parameter '", p.name(), "': ", error);
      param.value = Tensor(DType::F32, type.dims);
      initializeTensor(param.value, p.init().kind(), args,
                       nameSeed(seed, p.name()));
    }
    params.emplace(p.name(), std::move(param));
  }
}

DenseParameter &ParamStore::find(const std::string &name) {
  auto it = params.find(name);
  if (it == params.end())
    fail("no dense parameter '", name, "' in the plan");
  return it->second;
}

void ParamStore::toHost(DenseParameter &p) {
  if (!p.hostCurrent) {
    p.device->copyToHost(p.deviceValue, p.value);
    if (!p.deviceState.empty()) {
      if (p.state.shape() != p.deviceState.shape())
        p.state = Tensor(DType::F32, p.deviceState.shape());
      p.device->copyToHost(p.deviceState, p.state);
    }
    p.hostCurrent = true;
  }
  p.deviceCurrent = false;
}

DenseParameter &ParamStore::get(const std::string &name) {
  std::lock_guard<std::mutex> lock(mutex);
  DenseParameter &p = find(name);
  toHost(p);
  return p;
}

std::map<std::string, DenseParameter> &ParamStore::all() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[name, p] : params)
    toHost(p);
  return params;
}

DenseParameter &ParamStore::onDevice(const std::string &name,
                                     DeviceRuntime &device) {
  std::lock_guard<std::mutex> lock(mutex);
  DenseParameter &p = find(name);
  if (p.deviceCurrent && p.device == &device)
    return p;
  if (p.device && p.device != &device) {
    // Another device's copies: the host takes the current value back, and
    // this device gets buffers of its own.
    toHost(p);
    p.deviceValue = Tensor();
    p.deviceState = Tensor();
  }
  p.device = &device;
  if (p.deviceValue.empty() || p.deviceValue.shape() != p.value.shape())
    p.deviceValue = device.allocate(DType::F32, p.value.shape());
  device.copyToDevice(p.value, p.deviceValue);
  if (p.state.empty()) {
    // The first update allocates the state its optimizer needs.
    p.deviceState = Tensor();
  } else {
    if (p.deviceState.empty() || p.deviceState.shape() != p.state.shape())
      p.deviceState = device.allocate(DType::F32, p.state.shape());
    device.copyToDevice(p.state, p.deviceState);
  }
  // The copies are on this thread's stream; the other workers' streams
  // read them once they are complete.
  device.synchronize();
  p.deviceCurrent = true;
  p.hostCurrent = false;
  return p;
}

void ParamStore::update(const std::string &name, const Tensor &grad,
                        const OptimizerConfig &config) {
  DenseParameter &p = get(name);
  if (grad.shape() != p.value.shape())
    fail("gradient of '", name, "' has shape ", shapeString(grad.shape()),
         ", the parameter ", shapeString(p.value.shape()));
  int slots = config.stateSlots();
  int64_t n = p.value.numElements();
  if (slots && (p.state.empty() || p.state.numElements() != slots * n))
    p.state = Tensor(DType::F32, {slots, n});
  ++p.steps;
  applyUpdate(config, p.value.as<float>(), grad.as<float>(),
              slots ? p.state.as<float>() : nullptr, p.value.numElements(),
              p.steps);
}
