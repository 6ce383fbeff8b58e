//===- TestDevice.h - A GPU made of host memory and CPU kernels -*- C++ -*-===//
//
// What the tests of GPU placement run on every machine: a device whose
// "device memory" is host memory marked as the device's, and a GPU column
// whose kernels are the CPU's behind a check that every operand and result
// is in device memory, so that a missing or misplaced copy fails the check.
// Shared by the tests of the one-worker Program and of the pipelined
// executor.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_RUNTIME_TESTDEVICE_H
#define HETERPS_UNITTESTS_RUNTIME_TESTDEVICE_H

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace heterps::fixtures {

using namespace heterps::runtime;

/// Fences recorded and not waited for yet, per thread that recorded them.
class UnwaitedFences {
public:
  void add(std::thread::id thread, int delta) {
    std::lock_guard<std::mutex> lock(mutex);
    count[thread] += delta;
  }
  int of(std::thread::id thread) {
    std::lock_guard<std::mutex> lock(mutex);
    return count[thread];
  }

private:
  std::mutex mutex;
  std::map<std::thread::id, int> count;
};

/// The fence of HostMemoryDevice: the copies started before it are made
/// only when the host waits for it, the latest a GPU's copy stream may make
/// them. An executor that reads a host end before waiting reads what was
/// there before; one that lets a kernel overwrite a device end before
/// waiting copies the new contents: either way its results differ from the
/// CPU's.
class LazyCopyFence : public DeviceFence {
public:
  explicit LazyCopyFence(UnwaitedFences &unwaited) : unwaited(unwaited) {}
  ~LazyCopyFence() override {
    if (recorded)
      unwaited.add(recorder, -1);
  }
  /// Never before the host waits.
  bool reached() override { return !recorded; }
  void wait() override {
    if (!recorded)
      return;
    for (const auto &[to, from, bytes] : copies)
      std::memcpy(to, from, bytes);
    copies.clear();
    recorded = false;
    unwaited.add(recorder, -1);
  }
  void record(const std::vector<Transfer> &started) {
    if (recorded)
      ADD_FAILURE() << "a fence recorded again before it was reached";
    for (const Transfer &c : started)
      copies.push_back({c.to->data(), c.from->data(), c.to->byteSize()});
    recorded = true;
    recorder = std::this_thread::get_id();
    unwaited.add(recorder, 1);
  }

private:
  UnwaitedFences &unwaited;
  bool recorded = false;
  std::thread::id recorder;
  std::vector<std::tuple<void *, const void *, size_t>> copies;
};

/// Device memory that is host memory marked as the device's; counts the
/// copies.
class HostMemoryDevice : public DeviceRuntime {
public:
  std::string describe() const override { return "host-memory test device"; }
  Tensor allocate(DType dtype, const Shape &shape) override {
    size_t bytes = std::max<size_t>(numElements(shape) * dtypeSize(dtype), 1);
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, rounded);
    std::memset(p, 0, rounded);
    ++allocations;
    return Tensor::adopt(dtype, shape, std::shared_ptr<void>(p, std::free),
                         rounded, MemorySpace::Device);
  }
  Tensor allocateHost(DType dtype, const Shape &shape) override {
    Tensor t(dtype, shape);
    std::lock_guard<std::mutex> lock(mutex);
    hostBuffers.insert(t.data());
    return t;
  }
  void copyToDevice(const Tensor &host, Tensor &device) override {
    copy(host, MemorySpace::Host, device, MemorySpace::Device);
    ++toDevice;
    std::lock_guard<std::mutex> lock(mutex);
    sources.push_back(host.data());
    staged += hostBuffers.count(host.data());
  }
  void copyToHost(const Tensor &device, Tensor &host) override {
    copy(device, MemorySpace::Device, host, MemorySpace::Host);
    ++toHost;
    std::lock_guard<std::mutex> lock(mutex);
    staged += hostBuffers.count(host.data());
  }
  void synchronize() override { ++synchronizations; }
  std::unique_ptr<DeviceFence> createFence() override {
    ++fences;
    return std::make_unique<LazyCopyFence>(unwaited);
  }
  void startCopiesToHost(const std::vector<Transfer> &copies,
                         DeviceFence &done) override {
    auto *fence = dynamic_cast<LazyCopyFence *>(&done);
    ASSERT_NE(fence, nullptr);
    for (const Transfer &c : copies) {
      ASSERT_EQ(c.from->space(), MemorySpace::Device);
      ASSERT_EQ(c.to->space(), MemorySpace::Host);
      ASSERT_EQ(c.from->shape(), c.to->shape());
      ASSERT_EQ(c.from->dtype(), c.to->dtype());
    }
    // Another fence of this thread still unwaited: the thread queued more
    // work before waiting for its earlier copies.
    overlappedStarts += unwaited.of(std::this_thread::get_id()) > 0;
    fence->record(copies);
    toHost += static_cast<int>(copies.size());
    ++copyStarts;
    std::lock_guard<std::mutex> lock(mutex);
    for (const Transfer &c : copies)
      staged += hostBuffers.count(c.to->data());
  }
  /// Copies at once: the kernels, which run when they are queued, follow.
  void startCopiesToDevice(const std::vector<Transfer> &copies) override {
    for (const Transfer &c : copies) {
      copy(*c.from, MemorySpace::Host, *c.to, MemorySpace::Device);
      ++toDevice;
      std::lock_guard<std::mutex> lock(mutex);
      sources.push_back(c.from->data());
      if (hostBuffers.count(c.from->data()))
        ++staged;
      else
        pageable.push_back(c.from->data());
    }
    uploads += static_cast<int>(copies.size());
  }
  void setMath(GpuMath m) override { math = m; }
  void scaleAdd(float alpha, const Tensor &x, float beta, Tensor &y) override {
    requireDevice(x);
    requireDevice(y);
    ASSERT_EQ(x.shape(), y.shape());
    const float *a = x.as<float>();
    float *b = y.as<float>();
    for (int64_t i = 0, n = y.numElements(); i < n; ++i)
      b[i] = beta == 0.0f ? alpha * a[i] : alpha * a[i] + beta * b[i];
    ++sums;
  }
  void applyUpdate(const OptimizerConfig &config, Tensor &w, const Tensor &g,
                   Tensor &state, int64_t step) override {
    requireDevice(w);
    requireDevice(g);
    if (config.stateSlots())
      requireDevice(state);
    runtime::applyUpdate(config, w.as<float>(), g.as<float>(),
                         state.empty() ? nullptr : state.as<float>(),
                         w.numElements(), step);
    ++updates;
  }

  // Atomic: the pipelined executor's workers share one device.
  std::atomic<int> allocations{0}, toDevice{0}, toHost{0}, synchronizations{0},
      sums{0}, updates{0};
  /// Fences made; startCopiesToHost() calls, and those made while the
  /// thread's earlier copies were not waited for yet.
  std::atomic<int> fences{0}, copyStarts{0}, overlappedStarts{0};
  /// Copies made by startCopiesToDevice().
  std::atomic<int> uploads{0};
  UnwaitedFences unwaited;

  /// Copies whose host end came from allocateHost().
  int stagedCopies() {
    std::lock_guard<std::mutex> lock(mutex);
    return staged;
  }
  int hostAllocations() {
    std::lock_guard<std::mutex> lock(mutex);
    return static_cast<int>(hostBuffers.size());
  }

  /// The host memory that startCopiesToDevice() read and allocateHost()
  /// did not give, since the last call.
  std::vector<const void *> takePageableUploads() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::move(pageable);
  }

  /// The host memory every copy to the device read, in order.
  std::vector<const void *> copiedToDevice() {
    std::lock_guard<std::mutex> lock(mutex);
    return sources;
  }
  std::atomic<GpuMath> math{GpuMath::F32};

private:
  std::mutex mutex;
  std::vector<const void *> sources, pageable;
  std::set<const void *> hostBuffers;
  int staged = 0;

  static void requireDevice(const Tensor &t) {
    ASSERT_EQ(t.space(), MemorySpace::Device);
    ASSERT_EQ(t.dtype(), DType::F32);
  }
  static void copy(const Tensor &from, MemorySpace fromSpace, Tensor &to,
                   MemorySpace toSpace) {
    ASSERT_EQ(from.space(), fromSpace);
    ASSERT_EQ(to.space(), toSpace);
    ASSERT_EQ(from.shape(), to.shape());
    ASSERT_EQ(from.dtype(), to.dtype());
    std::memcpy(to.data(), from.data(), from.byteSize());
  }
};

/// A CPU kernel that checks that its operands and results are in device
/// memory, as a GPU kernel would need them.
class DeviceCheckingKernel : public Kernel {
public:
  DeviceCheckingKernel(const OpInfo &op, std::unique_ptr<Kernel> inner)
      : Kernel(op), inner(std::move(inner)) {}
  std::vector<Shape> prepare(const std::vector<Shape> &in) override {
    return inner->prepare(in);
  }
  void run(const std::vector<const Tensor *> &in,
           const std::vector<Tensor *> &out, ExecContext &ctx) override {
    for (const Tensor *t : in)
      if (t->space() != MemorySpace::Device)
        fail(info.describe(), " read a host operand on the GPU");
    for (const Tensor *t : out)
      if (t->space() != MemorySpace::Device)
        fail(info.describe(), " wrote a host result on the GPU");
    inner->run(in, out, ctx);
    ++runs();
  }
  bool outputsAreViews() const override { return inner->outputsAreViews(); }
  static std::atomic<int> &runs() {
    static std::atomic<int> count{0};
    return count;
  }

private:
  std::unique_ptr<Kernel> inner;
};

/// The CPU column of this binary, and a GPU column of device-checking
/// twins of every CPU kernel but host ops and `missing`, with the GPU
/// column's own parameter loads and updates (which keep parameters in the
/// device's memory).
inline KernelRegistry testRegistry(const std::set<std::string> &missing) {
  KernelRegistry r;
  registerDeviceStateKernels(r);
  for (const std::string &name :
       KernelRegistry::global().opNames(DeviceKind::CPU)) {
    r.add(name, DeviceKind::CPU, [](const OpInfo &op) {
      return KernelRegistry::global().create(op, DeviceKind::CPU);
    });
    if (runsOnHost(name) || missing.count(name) || r.has(name, DeviceKind::GPU))
      continue;
    r.add(name, DeviceKind::GPU, [](const OpInfo &op) {
      return std::make_unique<DeviceCheckingKernel>(
          op, KernelRegistry::global().create(op, DeviceKind::CPU));
    });
  }
  return r;
}

} // namespace heterps::fixtures

#endif // HETERPS_UNITTESTS_RUNTIME_TESTDEVICE_H
