//===- PinnedBuffers.cpp - Page-locked buffers for messages to GPUs -------===//

#include "PinnedBuffers.h"

#include <algorithm>
#include <cstring>
#include <iterator>

using namespace heterps::runtime;

std::shared_ptr<PinnedBuffers> PinnedBuffers::create(DeviceRuntime &device) {
  return std::shared_ptr<PinnedBuffers>(new PinnedBuffers(device));
}

Tensor PinnedBuffers::copyOf(const Tensor &value) {
  size_t bytes = std::max<size_t>(value.byteSize(), 1);
  size_t buffer = 0;
  void *data = nullptr;
  size_t capacity = 0;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto fits = idle.lower_bound(bytes);
    if (fits != idle.end()) {
      buffer = fits->second;
      idle.erase(fits);
    } else if (!idle.empty()) {
      // None is large enough: the largest idle one is replaced, so that
      // there are never more buffers than messages once in flight.
      auto largest = std::prev(idle.end());
      buffer = largest->second;
      idle.erase(largest);
      fresh = true;
    } else {
      buffer = buffers.size();
      buffers.emplace_back();
      fresh = true;
    }
    data = buffers[buffer].data();
    capacity = buffers[buffer].byteSize();
  }
  if (fresh) {
    // Page-locking takes milliseconds: not under the lock. The buffer is
    // this thread's until it is given back.
    Tensor pinned = device.allocateHost(DType::U8, {int64_t(bytes)});
    data = pinned.data();
    capacity = bytes;
    Tensor replaced; // freed after the lock is released
    std::lock_guard<std::mutex> lock(mutex);
    replaced = std::move(buffers[buffer]);
    buffers[buffer] = std::move(pinned);
  }
  std::memcpy(data, value.data(), value.byteSize());
  // The tensor's last reference gives the buffer back; the buffers outlive
  // it through `self`.
  std::shared_ptr<void> handle(data, [self = shared_from_this(), buffer](
                                         void *) { self->giveBack(buffer); });
  return Tensor::adopt(value.dtype(), value.shape(), std::move(handle),
                       capacity, MemorySpace::Host);
}

size_t PinnedBuffers::allocated() {
  std::lock_guard<std::mutex> lock(mutex);
  return buffers.size();
}

void PinnedBuffers::giveBack(size_t buffer) {
  std::lock_guard<std::mutex> lock(mutex);
  idle.emplace(buffers[buffer].byteSize(), buffer);
}
