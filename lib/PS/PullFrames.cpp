//===- PullFrames.cpp - Pull responses without copies of their rows -------===//

#include "heterps/PS/PullFrames.h"

#include "heterps/PS/Wire.h"

#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace heterps;
using namespace heterps::ps;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

namespace {

/// Field 1 (`rows` of PullResponse, `pulls` of PullManyResponse), length
/// delimited: the only tag either message holds.
constexpr uint32_t kField1Tag =
    (1 << 3) | WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
constexpr size_t kAlign = 64;
/// Buffers kept for reuse: enough for the calls a server answers at once
/// and a bounded amount of memory.
constexpr size_t kMaxIdleBuffers = 8;
constexpr size_t kMaxIdleBytes = size_t(256) << 20;

size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

Status malformedResponse(const std::string &what) {
  return Status::error(Code::Internal,
                       "the server's pull response is malformed: " + what);
}

} // namespace

struct RowBuffers::Buffer {
  std::shared_ptr<RowBuffers> owner;
  char *data;
  size_t capacity;
};

std::shared_ptr<RowBuffers> RowBuffers::create() {
  return std::shared_ptr<RowBuffers>(new RowBuffers());
}

grpc_slice RowBuffers::acquire(size_t bytes) {
  Buffer *buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    // The smallest idle buffer that holds the rows.
    auto best = idle.end();
    for (auto it = idle.begin(); it != idle.end(); ++it)
      if ((*it)->capacity >= bytes &&
          (best == idle.end() || (*it)->capacity < (*best)->capacity))
        best = it;
    if (best != idle.end()) {
      buffer = *best;
      idle.erase(best);
    }
  }
  if (!buffer) {
    size_t capacity = alignUp(std::max<size_t>(bytes, kAlign));
    char *data = static_cast<char *>(std::aligned_alloc(kAlign, capacity));
    if (!data)
      throw std::bad_alloc();
    buffer = new Buffer{nullptr, data, capacity};
  }
  buffer->owner = shared_from_this();
  return grpc_slice_new_with_user_data(buffer->data, bytes,
                                       &RowBuffers::release, buffer);
}

void RowBuffers::release(void *opaque) {
  auto *buffer = static_cast<Buffer *>(opaque);
  std::shared_ptr<RowBuffers> owner = std::move(buffer->owner);
  {
    std::lock_guard<std::mutex> lock(owner->mutex);
    size_t idleBytes = 0;
    for (const Buffer *b : owner->idle)
      idleBytes += b->capacity;
    if (owner->idle.size() < kMaxIdleBuffers &&
        idleBytes + buffer->capacity <= kMaxIdleBytes) {
      owner->idle.push_back(buffer);
      return;
    }
  }
  std::free(buffer->data);
  delete buffer;
}

size_t RowBuffers::idleBuffers() const {
  std::lock_guard<std::mutex> lock(mutex);
  return idle.size();
}

size_t RowBuffers::idleBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  size_t bytes = 0;
  for (const Buffer *b : idle)
    bytes += b->capacity;
  return bytes;
}

RowBuffers::~RowBuffers() {
  for (Buffer *b : idle) {
    std::free(b->data);
    delete b;
  }
}

PullResponseFrames::PullResponseFrames(RowBuffers &buffers,
                                       const std::vector<size_t> &rowBytes,
                                       bool many)
    : base(grpc_empty_slice()), sizes(rowBytes), many(many) {
  size_t total = 0;
  for (size_t bytes : rowBytes) {
    offsets.push_back(total);
    total += alignUp(bytes);
  }
  if (total)
    base = buffers.acquire(total);
}

PullResponseFrames::~PullResponseFrames() { grpc_slice_unref(base); }

char *PullResponseFrames::rows(size_t part) {
  return reinterpret_cast<char *>(GRPC_SLICE_START_PTR(base)) + offsets[part];
}

grpc::ByteBuffer PullResponseFrames::release() {
  std::vector<grpc::Slice> slices;
  slices.reserve(2 * sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    // PullManyResponse: field 1 holding a PullResponse; PullResponse: field
    // 1 holding the rows (left out when empty, as protobuf would).
    uint8_t header[2 * (1 + 10)];
    uint8_t *end = header;
    size_t rows = sizes[i];
    size_t inner = rows ? 1 + CodedOutputStream::VarintSize64(rows) + rows : 0;
    if (many) {
      end = CodedOutputStream::WriteTagToArray(kField1Tag, end);
      end = CodedOutputStream::WriteVarint64ToArray(inner, end);
    }
    if (rows) {
      end = CodedOutputStream::WriteTagToArray(kField1Tag, end);
      end = CodedOutputStream::WriteVarint64ToArray(rows, end);
    }
    if (end != header)
      slices.emplace_back(header, static_cast<size_t>(end - header));
    if (rows)
      slices.emplace_back(grpc_slice_sub(base, offsets[i], offsets[i] + rows),
                          grpc::Slice::STEAL_REF);
  }
  grpc_slice_unref(base);
  base = grpc_empty_slice();
  sizes.clear();
  offsets.clear();
  // An empty message is one empty slice: a buffer without slices would
  // be no message at all.
  if (slices.empty())
    slices.emplace_back();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

PullResponseReader::PullResponseReader(grpc::ByteBuffer &buffer)
    : stream(&buffer), in(&stream) {}

Status PullResponseReader::readResponse(v1::Wire wire, const PulledRows &out) {
  size_t expected = wireBytes(wire, out.keys * out.dim);
  bool seen = false;
  for (;;) {
    uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (!in.ConsumedEntireMessage())
        return malformedResponse("a zero tag or a truncated field");
      break;
    }
    if (tag != kField1Tag || seen)
      return malformedResponse("unexpected field (tag " + std::to_string(tag) +
                               ") in the rows of table " +
                               std::to_string(out.table));
    seen = true;
    uint64_t bytes;
    if (!in.ReadVarint64(&bytes) || bytes > INT32_MAX)
      return malformedResponse("bad length");
    if (bytes != expected)
      return Status::error(Code::Internal,
                           "the server answered " + std::to_string(bytes) +
                               " bytes of rows of table " +
                               std::to_string(out.table) + " for " +
                               std::to_string(out.keys) +
                               " keys of dimension " + std::to_string(out.dim) +
                               " (expected " + std::to_string(expected) + ")");
    if (Status s = readRows(wire, out, bytes); !s.ok())
      return s;
  }
  if (!seen && expected != 0)
    return Status::error(Code::Internal,
                         "the server answered 0 bytes of rows of table " +
                             std::to_string(out.table) + " for " +
                             std::to_string(out.keys) + " keys");
  return {};
}

Status PullResponseReader::readRows(v1::Wire wire, const PulledRows &out,
                                    size_t bytes) {
  if (bytes == 0)
    return {};
  if (wire != v1::WIRE_F32) {
    thread_local std::vector<char> staging;
    staging.resize(bytes);
    if (!in.ReadRaw(staging.data(), static_cast<int>(bytes)))
      return malformedResponse("truncated rows");
    decodeRows(wire, staging.data(), out.keys, out.dim, out.rows, out.rowIndex);
    return {};
  }
  if (!out.rowIndex) {
    if (!in.ReadRaw(out.rows, static_cast<int>(bytes)))
      return malformedResponse("truncated rows");
    return {};
  }
  // Each row straight from gRPC's receive slices to its place; a row split
  // between two slices is read across them.
  const size_t rowBytes = out.dim * sizeof(float);
  for (size_t j = 0; j < out.keys;) {
    const void *data;
    int size;
    if (!in.GetDirectBufferPointer(&data, &size))
      return malformedResponse("truncated rows");
    size_t whole = std::min(static_cast<size_t>(size) / rowBytes, out.keys - j);
    if (whole == 0) {
      if (!in.ReadRaw(out.rows + static_cast<size_t>(out.rowIndex[j]) * out.dim,
                      static_cast<int>(rowBytes)))
        return malformedResponse("truncated rows");
      ++j;
      continue;
    }
    const char *from = static_cast<const char *>(data);
    for (size_t k = 0; k < whole; ++k, ++j)
      std::memcpy(out.rows + static_cast<size_t>(out.rowIndex[j]) * out.dim,
                  from + k * rowBytes, rowBytes);
    in.Skip(static_cast<int>(whole * rowBytes));
  }
  return {};
}

Status PullResponseReader::readPart(v1::Wire wire, const PulledRows &out) {
  uint32_t tag = in.ReadTag();
  if (tag == 0) {
    if (!in.ConsumedEntireMessage())
      return malformedResponse("a zero tag or a truncated field");
    return Status::error(Code::Internal, "the server answered only " +
                                             std::to_string(partsRead) +
                                             " tables' rows");
  }
  if (tag != kField1Tag)
    return malformedResponse("unexpected field (tag " + std::to_string(tag) +
                             ")");
  uint32_t length;
  if (!in.ReadVarint32(&length) || length > INT32_MAX)
    return malformedResponse("bad length");
  auto limit = in.PushLimit(static_cast<int>(length));
  if (Status s = readResponse(wire, out); !s.ok())
    return s;
  in.PopLimit(limit);
  ++partsRead;
  return {};
}

Status PullResponseReader::finish(size_t parts) {
  uint32_t tag = in.ReadTag();
  if (tag != 0)
    return Status::error(Code::Internal, "the server answered more than " +
                                             std::to_string(parts) +
                                             " tables' rows");
  if (!in.ConsumedEntireMessage())
    return malformedResponse("a zero tag or a truncated field");
  if (partsRead != parts)
    return Status::error(Code::Internal,
                         "the server answered " + std::to_string(partsRead) +
                             " tables' rows for " + std::to_string(parts));
  return {};
}
