//===- FuzzPSAnswers.cpp - The PS client's reading of pull answers -*- C++
//-*-===//
//
// A pull's answer comes from the network, so the client reads it as
// untrusted bytes: PullResponseReader takes gRPC's receive slices and writes
// each part's rows to the caller's buffer, in order or each to the place a
// row index names. The input is a header and the answer's bytes:
//   byte 0: bits 0-1 the wire (f32, f16, bf16), bit 2 a PullManyResponse
//           (else a PullResponse), bit 3 rows to their places through a
//           row index (else in order);
//   byte 1: the parts asked for (1 + byte % 4; a PullResponse reads one);
//   byte 2: the size of the slices the bytes arrive in (1 + byte);
//   then per part a byte of keys (% 65) and one of dimension (1 + % 16);
//   the rest: the answer.
// The reader must return a status and never write outside the rows asked
// for; the buffers are exactly that size, so ASan reports any write past
// them.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "heterps/PS/PullFrames.h"

#include <grpcpp/support/byte_buffer.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

using namespace heterps;
using namespace heterps::ps;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::quietProtobuf();
  fuzz::InputReader in(data, size);
  uint8_t flags = in.byte();
  v1::Wire wire = static_cast<v1::Wire>(std::min(flags & 3, 2));
  bool many = flags & 4, scatter = flags & 8;
  size_t parts = many ? 1 + in.byte() % 4 : (in.byte(), 1);
  size_t chunk = 1 + in.byte();
  struct Part {
    size_t keys;
    uint32_t dim;
    std::unique_ptr<float[]> rows;
    std::vector<uint32_t> index;
  };
  std::vector<Part> asked(parts);
  for (Part &p : asked) {
    p.keys = in.byte() % 65;
    p.dim = 1 + in.byte() % 16;
    // Exactly the rows asked for, on the heap, so that ASan sees a write
    // past them.
    p.rows = std::make_unique<float[]>(p.keys * p.dim);
    // The client's index: every row once, the last key's row first.
    for (size_t j = 0; j < p.keys; ++j)
      p.index.push_back(static_cast<uint32_t>((j + p.keys - 1) % p.keys));
  }
  std::string answer = in.rest();
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < answer.size(); at += chunk)
    slices.emplace_back(answer.data() + at,
                        std::min(chunk, answer.size() - at));
  if (slices.empty())
    slices.emplace_back();
  grpc::ByteBuffer buffer(slices.data(), slices.size());
  PullResponseReader reader(buffer);
  Status status;
  for (size_t i = 0; i < parts && status.ok(); ++i) {
    Part &p = asked[i];
    PulledRows out{static_cast<uint32_t>(i), p.keys, p.dim, p.rows.get(),
                   scatter && p.keys ? p.index.data() : nullptr};
    status = many ? reader.readPart(wire, out) : reader.readResponse(wire, out);
  }
  if (status.ok() && many)
    status = reader.finish(parts);
  if (fuzz::verbose())
    std::fprintf(stderr, "%s answer of %zu bytes, %zu parts: %s\n",
                 many ? "PullMany" : "Pull", answer.size(), parts,
                 status.ok() ? "read" : status.message.c_str());
  return 0;
}
