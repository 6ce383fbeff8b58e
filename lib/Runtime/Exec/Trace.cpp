//===- Trace.cpp - Chrome / Perfetto traces of training steps -------------===//

#include "heterps/Runtime/Trace.h"

#include "TextOutput.h"

#include "heterps/Runtime/Profile.h"

#include <cstdio>

using namespace heterps;
using namespace heterps::runtime;

namespace {

const char *categoryOf(SpanKind kind) {
  switch (kind) {
  case SpanKind::Op:
    return "op";
  case SpanKind::Forward:
    return "forward";
  case SpanKind::Backward:
    return "backward";
  case SpanKind::Step:
    return "forward+backward";
  case SpanKind::CopyOut:
    return "copy";
  case SpanKind::Send:
    return "send";
  case SpanKind::Wait:
    return "wait";
  case SpanKind::Update:
    return "update";
  }
  return "";
}

std::string spanName(const TraceSpan &span) {
  switch (span.kind) {
  case SpanKind::Op: {
    std::string name = opNameFromLocation(span.op->location());
    std::string op = span.op->name();
    if (op.rfind("heterps.", 0) == 0)
      op = op.substr(8);
    return name.empty() ? op : op + " " + name;
  }
  case SpanKind::Forward:
  case SpanKind::Backward:
  case SpanKind::Step:
    return std::string(categoryOf(span.kind)) + " mb" +
           std::to_string(span.microBatch);
  case SpanKind::CopyOut:
    return "copies to host mb" + std::to_string(span.microBatch);
  case SpanKind::Send:
    return "send channel " + std::to_string(span.index) + " mb" +
           std::to_string(span.microBatch);
  case SpanKind::Wait:
    return "wait";
  case SpanKind::Update:
    return "update";
  }
  return "";
}

} // namespace

int64_t
runtime::writeChromeTrace(const std::string &path,
                          const std::vector<const TraceThread *> &threads) {
  std::string text = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  int64_t written = 0;
  char buf[160];
  for (size_t tid = 0; tid < threads.size(); ++tid) {
    const TraceThread &thread = *threads[tid];
    std::snprintf(buf, sizeof(buf),
                  "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, "
                  "\"tid\": %zu, \"args\": {\"name\": ",
                  tid);
    text += (first ? "" : ",\n") + std::string(buf) + jsonString(thread.name) +
            "}}";
    first = false;
    for (const TraceSpan &span : thread.spans) {
      text += ",\n{\"ph\": \"X\", \"name\": " + jsonString(spanName(span));
      std::snprintf(buf, sizeof(buf),
                    ", \"cat\": \"%s\", \"pid\": 1, \"tid\": %zu, \"ts\": "
                    "%.3f, \"dur\": %.3f, \"args\": {\"step\": %lld",
                    categoryOf(span.kind), tid, span.start / 1e3,
                    span.duration / 1e3, static_cast<long long>(span.step));
      text += buf;
      if (span.microBatch >= 0)
        text += ", \"micro_batch\": " + std::to_string(span.microBatch);
      text += "}}";
      ++written;
    }
  }
  text += "\n]}\n";
  writeTextFileAtomically(path, text, "trace");
  return written;
}
