//===- Trace.h - Chrome / Perfetto traces of training steps -----*- C++ -*-===//
//
// heterps-run --trace=FILE records what every worker did when: each op's
// kernel, each forward and backward segment of a micro-batch, each channel
// send, the waits for channels, and the step's updates; the file is the
// Chrome trace-event JSON that chrome://tracing and ui.perfetto.dev open,
// one thread per worker (stage and replica).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRACE_H
#define HETERPS_RUNTIME_TRACE_H

#include "heterps/plan.pb.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace heterps::runtime {

enum class SpanKind : uint8_t {
  Op,
  /// A micro-batch's forward part, its backward part, or both (a stage
  /// without a backward part of its own: the last one).
  Forward,
  Backward,
  Step,
  /// Waiting for the copies of a GPU segment's sends and outputs to the
  /// host (the device's work before them included).
  CopyOut,
  Send,
  Wait,
  Update
};

struct TraceSpan {
  SpanKind kind = SpanKind::Op;
  /// The op of an Op span; the channel of a Send span; the segment of a
  /// Forward, Backward or CopyOut span.
  const plan::Op *op = nullptr;
  int64_t index = -1;
  int64_t step = 0, microBatch = -1;
  /// Nanoseconds since the trace's origin.
  int64_t start = 0, duration = 0;
};

/// The spans of one worker, in the order they ended.
class TraceThread {
public:
  /// Spans kept per thread at most; later ones are counted, not kept.
  static constexpr size_t kMaxSpans = 1 << 20;

  TraceThread(std::string name, std::chrono::steady_clock::time_point origin)
      : name(std::move(name)), origin(origin) {}

  int64_t now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now() - origin)
        .count();
  }
  /// Adds `span` as running from `begin` to `end`.
  void add(TraceSpan span, std::chrono::steady_clock::time_point begin,
           std::chrono::steady_clock::time_point end) {
    using std::chrono::nanoseconds;
    span.start =
        std::chrono::duration_cast<nanoseconds>(begin - origin).count();
    span.duration =
        std::chrono::duration_cast<nanoseconds>(end - begin).count();
    add(span);
  }
  void add(const TraceSpan &span) {
    if (spans.size() < kMaxSpans)
      spans.push_back(span);
    else
      ++dropped;
  }

  std::string name;
  std::chrono::steady_clock::time_point origin;
  std::vector<TraceSpan> spans;
  int64_t dropped = 0;
};

/// Writes the threads' spans as Chrome trace-event JSON (atomically);
/// returns the spans written.
int64_t writeChromeTrace(const std::string &path,
                         const std::vector<const TraceThread *> &threads);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_TRACE_H
