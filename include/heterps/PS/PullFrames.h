//===- PullFrames.h - Pull responses without copies of rows -----*- C++ -*-===//
//
// The rows of a pull are most of the bytes a server sends. Through protobuf
// they would be copied twice more than a transport needs (into gRPC's
// buffer on the server, out of it into a string on the client), into memory
// allocated and zeroed afresh for every call. Pull and PullMany therefore
// travel as raw gRPC byte buffers holding exactly the bytes of ps.proto's
// PullResponse and PullManyResponse: the server looks rows up straight into
// a reused, aligned buffer that gRPC sends as it is, and the client reads
// them from gRPC's receive slices straight into its own rows. Clients built
// from ps.proto see ordinary messages.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_PULLFRAMES_H
#define HETERPS_PS_PULLFRAMES_H

#include "heterps/PS/Protocol.h"
#include "heterps/ps.pb.h"

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <google/protobuf/io/coded_stream.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace heterps::ps {

/// Buffers for the rows of pull responses, kept for reuse when gRPC has
/// sent them, so a steady stream of pulls allocates nothing.
class RowBuffers : public std::enable_shared_from_this<RowBuffers> {
public:
  static std::shared_ptr<RowBuffers> create();
  ~RowBuffers();
  RowBuffers(const RowBuffers &) = delete;
  RowBuffers &operator=(const RowBuffers &) = delete;

  /// A slice of `bytes` bytes, 64-byte aligned, that returns its buffer
  /// here when gRPC releases its last reference.
  grpc_slice acquire(size_t bytes);

  /// Buffers kept for reuse and their bytes.
  size_t idleBuffers() const;
  size_t idleBytes() const;

private:
  RowBuffers() = default;
  struct Buffer;
  static void release(void *buffer);

  mutable std::mutex mutex;
  std::vector<Buffer *> idle;
};

/// The bytes of a PullResponse (one part) or a PullManyResponse (one
/// PullResponse per part), laid out so that each part's rows are written
/// in place: the caller fills rows(i) with the part's rows in its wire
/// format and hands the result to gRPC.
class PullResponseFrames {
public:
  /// `rowBytes[i]`: the bytes of part i's rows.
  PullResponseFrames(RowBuffers &buffers, const std::vector<size_t> &rowBytes,
                     bool many);
  ~PullResponseFrames();
  PullResponseFrames(const PullResponseFrames &) = delete;
  PullResponseFrames &operator=(const PullResponseFrames &) = delete;

  /// Where part i's rows go (64-byte aligned).
  char *rows(size_t part);
  /// The response; the frames are empty afterwards.
  grpc::ByteBuffer release();

private:
  grpc_slice base;
  std::vector<size_t> offsets, sizes;
  bool many;
};

/// One part of a pull as the client expects it: the rows of `keys` keys
/// of table `table` (dimension `dim`), into `rows`: key j's row at row j,
/// or with `rowIndex` at row rowIndex[j] (the client writes each row
/// straight to the first place the caller asked for it).
struct PulledRows {
  uint32_t table;
  size_t keys;
  uint32_t dim;
  float *rows;
  const uint32_t *rowIndex = nullptr;
};

/// Reads a PullResponse or PullManyResponse from gRPC's receive slices,
/// strictly: parts in order, each of exactly the size asked for, nothing
/// else.
class PullResponseReader {
public:
  explicit PullResponseReader(grpc::ByteBuffer &buffer);

  /// A PullResponse's rows, sent as `wire`.
  Status readResponse(v1::Wire wire, const PulledRows &out);
  /// The next PullResponse of a PullManyResponse.
  Status readPart(v1::Wire wire, const PulledRows &out);
  /// Checks that the PullManyResponse held exactly `parts` parts.
  Status finish(size_t parts);

private:
  /// A part's `bytes` bytes of rows (as many as it asked for) to their
  /// places.
  Status readRows(v1::Wire wire, const PulledRows &out, size_t bytes);

  grpc::ProtoBufferReader stream;
  google::protobuf::io::CodedInputStream in;
  size_t partsRead = 0;
};

} // namespace heterps::ps

#endif // HETERPS_PS_PULLFRAMES_H
