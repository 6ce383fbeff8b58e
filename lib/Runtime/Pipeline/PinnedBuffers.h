//===- PinnedBuffers.h - Page-locked buffers for GPU messages ---*- C++ -*-===//
//
// The values a stage sends to a GPU stage go to the device as soon as the
// receiving segment starts. From page-locked memory that copy is a DMA
// transfer queued beside the device's kernels; from ordinary memory CUDA
// first copies the value through buffers of its own, on the thread that
// queues it. So a message to a GPU stage is written into a page-locked
// buffer, and the buffer comes back here when the message's last user
// lets it go, to carry a later message: page-locking memory costs
// milliseconds, so steady-state steps take only buffers given back.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_PIPELINE_PINNEDBUFFERS_H
#define HETERPS_LIB_RUNTIME_PIPELINE_PINNEDBUFFERS_H

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Tensor.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace heterps::runtime {

class PinnedBuffers : public std::enable_shared_from_this<PinnedBuffers> {
public:
  /// Buffers from `device`, which must outlive every tensor taken.
  static std::shared_ptr<PinnedBuffers> create(DeviceRuntime &device);

  /// A copy of `value` (in host memory) in a page-locked buffer: the
  /// smallest given back that holds it, or a new one, which replaces the
  /// largest given back (so the buffers number at most the messages ever
  /// in flight at once). Any thread may call it.
  Tensor copyOf(const Tensor &value);
  /// The buffers page-locked so far.
  size_t allocated();

private:
  explicit PinnedBuffers(DeviceRuntime &device) : device(device) {}
  void giveBack(size_t buffer);

  DeviceRuntime &device;
  std::mutex mutex;
  std::vector<Tensor> buffers;
  /// The buffers not in use, by their size in bytes.
  std::multimap<size_t, size_t> idle;
};

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_PIPELINE_PINNEDBUFFERS_H
