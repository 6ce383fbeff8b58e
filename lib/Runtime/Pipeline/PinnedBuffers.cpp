//===- PinnedBuffers.cpp - Page-locked buffers for messages to GPUs -------===//

#include "PinnedBuffers.h"

#include <algorithm>
#include <cstring>

using namespace heterps::runtime;

std::shared_ptr<PinnedBuffers> PinnedBuffers::create(DeviceRuntime &device) {
  return std::shared_ptr<PinnedBuffers>(new PinnedBuffers(device));
}

Tensor PinnedBuffers::copyOf(const Tensor &value) {
  size_t bytes = std::max<size_t>(value.byteSize(), 1);
  size_t buffer = 0;
  void *data = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = idle.find(bytes);
    if (it != idle.end()) {
      buffer = it->second;
      idle.erase(it);
    } else {
      buffer = buffers.size();
      buffers.push_back(device.allocateHost(DType::U8, {int64_t(bytes)}));
    }
    data = buffers[buffer].data();
  }
  std::memcpy(data, value.data(), value.byteSize());
  // The tensor's last reference gives the buffer back; the buffers outlive
  // it through `self`.
  std::shared_ptr<void> handle(data, [self = shared_from_this(), buffer](
                                         void *) { self->giveBack(buffer); });
  return Tensor::adopt(value.dtype(), value.shape(), std::move(handle), bytes,
                       MemorySpace::Host);
}

size_t PinnedBuffers::allocated() {
  std::lock_guard<std::mutex> lock(mutex);
  return buffers.size();
}

void PinnedBuffers::giveBack(size_t buffer) {
  std::lock_guard<std::mutex> lock(mutex);
  idle.emplace(buffers[buffer].byteSize(), buffer);
}
