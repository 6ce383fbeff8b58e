//===- Channels.cpp - Messages between the pipeline's workers -------------===//
//
// A value sent on a channel is copied into the receiving worker's inbox, in
// page-locked memory for a GPU stage; to a worker of another process it
// goes as a message tagged with the channel and the micro-batch, checked
// against the channel's type when it arrives.
//
//===----------------------------------------------------------------------===//

#include "PipelineState.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/PlanTypes.h"
#include "heterps/Support/CheckedMath.h"

#include <cstring>
#include <optional>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;

void PipelineExecutor::Impl::deliver(int stage, int64_t microBatch,
                                     int64_t channel, const Tensor &value) {
  auto &replicas = stages[stage];
  Worker &to = *replicas[microBatch % replicas.size()];
  if (to.local) {
    deliverLocal(to, microBatch, channel, value);
    return;
  }
  const Shape &shape = value.shape();
  int32_t header[2] = {static_cast<int32_t>(value.dtype()),
                       static_cast<int32_t>(shape.size())};
  size_t headerBytes = sizeof(header) + shape.size() * sizeof(int64_t);
  std::vector<char> message(headerBytes + value.byteSize());
  std::memcpy(message.data(), header, sizeof(header));
  std::memcpy(message.data() + sizeof(header), shape.data(),
              shape.size() * sizeof(int64_t));
  std::memcpy(message.data() + headerBytes, value.data(), value.byteSize());
  int64_t tag = channelPosition.at(channel) * tagStride + microBatch;
  processes->send(to.rank, static_cast<int>(tag), std::move(message));
}

void PipelineExecutor::Impl::deliverLocal(Worker &to, int64_t microBatch,
                                          int64_t channel,
                                          const Tensor &value) {
  Tensor message = to.onGpu && pinned ? pinned->copyOf(value) : value.clone();
  {
    std::lock_guard<std::mutex> lock(to.inbox.arrived.mutex);
    to.inbox.messages[{microBatch, channel}] = std::move(message);
    ++to.inbox.deliveries;
  }
  to.inbox.arrived.wake();
}

void PipelineExecutor::Impl::receiveRemote() {
  int from = 0, tag = 0;
  std::vector<char> message;
  while (processes->tryReceive(from, tag, message)) {
    int64_t position = tag / tagStride, microBatch = tag % tagStride;
    if (tag < 0 || position >= static_cast<int64_t>(channelList.size()) ||
        microBatch >= static_cast<int64_t>(microBatches.size()))
      fail("process ", from, " sent a message with tag ", tag,
           ", which names no channel and micro-batch of this step");
    const plan::Channel &channel = *channelList[position];
    int32_t header[2];
    if (message.size() < sizeof(header))
      fail("channel ", channel.id(), ": a message of ", message.size(),
           " bytes from process ", from);
    std::memcpy(header, message.data(), sizeof(header));
    int32_t rank = header[1];
    size_t headerBytes = sizeof(header) + std::max(rank, 0) * sizeof(int64_t);
    if (rank < 0 || rank > 8 || message.size() < headerBytes)
      fail("channel ", channel.id(), ": a message from process ", from,
           " has a tensor of rank ", rank);
    Shape shape(rank);
    std::memcpy(shape.data(), message.data() + sizeof(header),
                rank * sizeof(int64_t));
    std::optional<int64_t> product = checkedProduct(shape);
    if (!product)
      fail("channel ", channel.id(), ": a message from process ", from,
           " has a bad shape");
    int64_t elements = *product;
    DType dtype = static_cast<DType>(header[0]);
    TensorType expected = fromPlanType(channel.type());
    if (dtype != expected.dtype ||
        message.size() != headerBytes + elements * dtypeSize(dtype))
      fail("channel ", channel.id(), ": process ", from, " sent ",
           message.size(), " bytes, not a ", dtypeName(expected.dtype),
           " tensor of ", shapeString(shape));
    auto &replicas = stages[channel.to_stage()];
    Worker &to = *replicas[microBatch % replicas.size()];
    if (!to.local)
      fail("process ", from, " sent micro-batch ", microBatch, " of channel ",
           channel.id(), " to the wrong process");
    deliverLocal(to, microBatch, channel.id(),
                 Tensor::view(dtype, shape, message.data() + headerBytes));
  }
}

void PipelineExecutor::Impl::waitForDelivery(Worker &worker, uint64_t seen) {
  if (!processes) {
    worker.inbox.arrived.waitUntil(
        [&] { return aborted || worker.inbox.deliveries != seen; });
    return;
  }
  // Only this thread calls MPI: it polls, backing off to 50 us sleeps so
  // that processes sharing a core leave it to the one with work.
  for (int i = 0; !aborted && worker.inbox.deliveries == seen; ++i) {
    receiveRemote();
    if (worker.inbox.deliveries != seen)
      break;
    if (i < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}
