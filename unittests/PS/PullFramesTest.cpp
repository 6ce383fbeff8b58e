//===- PullFramesTest.cpp - Pull responses as raw gRPC byte buffers -------===//

#include "heterps/PS/PullFrames.h"
#include "heterps/PS/Wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

using namespace heterps::ps;

namespace {

std::string flatten(const grpc::ByteBuffer &buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice &s : slices)
    bytes.append(reinterpret_cast<const char *>(s.begin()), s.size());
  return bytes;
}

/// `bytes` as a buffer of slices of at most `chunk` bytes, as gRPC hands a
/// client what it read from the socket.
grpc::ByteBuffer chunked(const std::string &bytes, size_t chunk) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += chunk)
    slices.emplace_back(bytes.data() + at, std::min(chunk, bytes.size() - at));
  if (slices.empty())
    slices.emplace_back();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

/// A PullResponse of `rows` in a 16-bit `wire`, in 3-byte slices.
grpc::ByteBuffer sixteenBitResponse(v1::Wire wire,
                                    const std::vector<float> &rows) {
  std::string encoded;
  encodeFloats(wire, rows.data(), rows.size(), &encoded);
  v1::PullResponse message;
  message.set_rows(encoded);
  return chunked(message.SerializeAsString(), 3);
}

std::vector<float> iota(size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

/// A PullManyResponse with parts of these float counts (rows 0, 1, 2, ...
/// starting at 100 * part), written through the frames.
grpc::ByteBuffer manyFrames(RowBuffers &buffers,
                            const std::vector<size_t> &counts) {
  std::vector<size_t> bytes;
  for (size_t c : counts)
    bytes.push_back(c * sizeof(float));
  PullResponseFrames frames(buffers, bytes, /*many=*/true);
  for (size_t i = 0; i < counts.size(); ++i) {
    std::vector<float> rows = iota(counts[i], 100.0f * i);
    if (!rows.empty())
      std::memcpy(frames.rows(i), rows.data(), rows.size() * sizeof(float));
  }
  return frames.release();
}

TEST(PullFrames, AreTheBytesOfThePullMessages) {
  auto buffers = RowBuffers::create();
  {
    PullResponseFrames frames(*buffers, {3 * sizeof(float)}, /*many=*/false);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(frames.rows(0)) % 64, 0u);
    std::vector<float> rows = {1.5f, -2.0f, 3.25f};
    std::memcpy(frames.rows(0), rows.data(), sizeof(float) * 3);
    v1::PullResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(flatten(frames.release())));
    ASSERT_EQ(parsed.rows().size(), 3 * sizeof(float));
    EXPECT_EQ(std::memcmp(parsed.rows().data(), rows.data(), 12), 0);
  }
  // Parts of every size, an empty one among them, each aligned.
  grpc::ByteBuffer many = manyFrames(*buffers, {16, 0, 5, 1024});
  v1::PullManyResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(flatten(many)));
  ASSERT_EQ(parsed.pulls_size(), 4);
  std::vector<size_t> counts = {16, 0, 5, 1024};
  for (int i = 0; i < 4; ++i) {
    std::vector<float> want = iota(counts[i], 100.0f * i);
    ASSERT_EQ(parsed.pulls(i).rows().size(), want.size() * sizeof(float)) << i;
    EXPECT_EQ(std::memcmp(parsed.pulls(i).rows().data(), want.data(),
                          want.size() * sizeof(float)),
              0)
        << i;
  }
  // An empty response is an empty message, not no message.
  PullResponseFrames empty(*buffers, {0}, /*many=*/false);
  grpc::ByteBuffer none = empty.release();
  EXPECT_TRUE(none.Valid());
  EXPECT_EQ(none.Length(), 0u);
}

TEST(PullFrames, BuffersAreReusedOnceGrpcReleasesThem) {
  auto buffers = RowBuffers::create();
  const char *first;
  {
    PullResponseFrames frames(*buffers, {4096}, /*many=*/false);
    first = frames.rows(0);
    grpc::ByteBuffer response = frames.release();
    // Still referenced by the response.
    EXPECT_EQ(buffers->idleBuffers(), 0u);
  }
  EXPECT_EQ(buffers->idleBuffers(), 1u);
  {
    PullResponseFrames frames(*buffers, {1024}, /*many=*/false);
    EXPECT_EQ(frames.rows(0), first);
    EXPECT_EQ(buffers->idleBuffers(), 0u);
  }
  // A response released after its pool's owner let go still frees
  // cleanly: the buffer holds the pool.
  grpc::ByteBuffer late;
  {
    auto pool = RowBuffers::create();
    late = manyFrames(*pool, {8});
  }
  EXPECT_EQ(late.Length(), 2 + 2 + 8 * sizeof(float));
  late.Clear();
}

TEST(PullFrames, ReaderReadsAcrossSlicesInEveryWire) {
  auto buffers = RowBuffers::create();
  std::string bytes = flatten(manyFrames(*buffers, {32, 0, 7}));
  for (size_t chunk : {1, 3, 7, 64, 4096}) {
    grpc::ByteBuffer buffer = chunked(bytes, chunk);
    PullResponseReader reader(buffer);
    std::vector<float> a(32), c(7);
    ASSERT_TRUE(reader.readPart(v1::WIRE_F32, {1, 4, 8, a.data()}).ok());
    ASSERT_TRUE(reader.readPart(v1::WIRE_F32, {2, 0, 8, nullptr}).ok());
    ASSERT_TRUE(reader.readPart(v1::WIRE_F32, {3, 7, 1, c.data()}).ok());
    ASSERT_TRUE(reader.finish(3).ok()) << chunk;
    EXPECT_EQ(a, iota(32, 0));
    EXPECT_EQ(c, iota(7, 200));
  }
  // 16-bit rows: the f16 bytes of 0.5, 1, ... read back as floats.
  for (v1::Wire wire : {v1::WIRE_F16, v1::WIRE_BF16}) {
    std::vector<float> rows = {0.5f, 1.0f, -2.0f, 4.0f};
    grpc::ByteBuffer buffer = sixteenBitResponse(wire, rows);
    std::vector<float> out(4);
    ASSERT_TRUE(PullResponseReader(buffer)
                    .readResponse(wire, {1, 2, 2, out.data()})
                    .ok());
    EXPECT_EQ(out, rows);
  }
}

TEST(PullFrames, ReaderWritesEachRowToItsPlace) {
  auto buffers = RowBuffers::create();
  // Part 1: 4 rows of 8 floats to rows 3, 0, 5, 1 of 6 (2 and 4 are not
  // written); part 3: 7 rows of 1 float in reverse.
  std::string bytes = flatten(manyFrames(*buffers, {32, 0, 7}));
  const std::vector<uint32_t> index = {3, 0, 5, 1},
                              reverse = {6, 5, 4, 3, 2, 1, 0};
  std::vector<float> want(48, -1.0f);
  for (size_t j = 0; j < 4; ++j)
    for (size_t d = 0; d < 8; ++d)
      want[index[j] * 8 + d] = static_cast<float>(j * 8 + d);
  for (size_t chunk : {1, 3, 7, 32, 33, 64, 4096}) {
    grpc::ByteBuffer buffer = chunked(bytes, chunk);
    PullResponseReader reader(buffer);
    std::vector<float> a(48, -1.0f), c(7);
    ASSERT_TRUE(
        reader.readPart(v1::WIRE_F32, {1, 4, 8, a.data(), index.data()}).ok());
    ASSERT_TRUE(reader.readPart(v1::WIRE_F32, {2, 0, 8, nullptr}).ok());
    ASSERT_TRUE(
        reader.readPart(v1::WIRE_F32, {3, 7, 1, c.data(), reverse.data()})
            .ok());
    ASSERT_TRUE(reader.finish(3).ok()) << chunk;
    EXPECT_EQ(a, want) << chunk;
    EXPECT_EQ(c, std::vector<float>({206, 205, 204, 203, 202, 201, 200}));
  }
  for (v1::Wire wire : {v1::WIRE_F16, v1::WIRE_BF16}) {
    std::vector<float> rows = {0.5f, 1.0f, -2.0f, 4.0f};
    grpc::ByteBuffer buffer = sixteenBitResponse(wire, rows);
    std::vector<float> out(6, 9.0f);
    const uint32_t to[] = {2, 0};
    ASSERT_TRUE(PullResponseReader(buffer)
                    .readResponse(wire, {1, 2, 2, out.data(), to})
                    .ok());
    EXPECT_EQ(out, std::vector<float>({-2.0f, 4.0f, 9.0f, 9.0f, 0.5f, 1.0f}));
  }
}

/// The error reading `bytes` as a PullManyResponse of parts with these
/// float counts ("" when it reads), each row written to its place by a
/// row index when `scatter`.
std::string manyError(const std::string &bytes,
                      const std::vector<size_t> &counts, bool scatter = false) {
  grpc::ByteBuffer buffer = chunked(bytes, 5);
  PullResponseReader reader(buffer);
  std::vector<float> rows(4096);
  std::vector<uint32_t> index(4096);
  std::iota(index.begin(), index.end(), 0u);
  for (size_t i = 0; i < counts.size(); ++i)
    if (Status s = reader.readPart(
            v1::WIRE_F32, {static_cast<uint32_t>(i + 1), counts[i], 1,
                           rows.data(), scatter ? index.data() : nullptr});
        !s.ok())
      return s.message;
  Status s = reader.finish(counts.size());
  return s.ok() ? "" : s.message;
}

TEST(PullFrames, ReaderRefusesWhatTheServerShouldNotHaveSent) {
  auto buffers = RowBuffers::create();
  std::string good = flatten(manyFrames(*buffers, {4, 2}));
  EXPECT_EQ(manyError(good, {4, 2}), "");
  EXPECT_NE(manyError(good, {4, 3})
                .find("8 bytes of rows of table 2 for 3 keys of dimension 1"),
            std::string::npos)
      << manyError(good, {4, 3});
  EXPECT_NE(manyError(good, {4}).find("more than 1 tables' rows"),
            std::string::npos);
  EXPECT_NE(manyError(good, {4, 2, 1}).find("only 2 tables' rows"),
            std::string::npos);
  // Cut anywhere, the message is refused, never read past its end.
  for (size_t cut = 1; cut < good.size(); ++cut) {
    EXPECT_NE(manyError(good.substr(0, cut), {4, 2}), "") << cut;
    EXPECT_NE(manyError(good.substr(0, cut), {4, 2}, /*scatter=*/true), "")
        << cut;
  }
  EXPECT_EQ(manyError(good, {4, 2}, /*scatter=*/true), "");
  // A field PullManyResponse does not have; a zero tag.
  EXPECT_NE(
      manyError(good + std::string("\x10\x01", 2), {4, 2}).find("more than 2"),
      std::string::npos);
  EXPECT_NE(manyError(std::string("\x00", 1) + good, {4, 2}).find("malformed"),
            std::string::npos);
  // A part whose rows field appears twice, or with another field.
  v1::PullManyResponse twice;
  twice.add_pulls()->set_rows(std::string(16, 'x'));
  std::string doubled = twice.SerializeAsString();
  // Part 0's length grows by the repeated field's 18 bytes.
  std::string inner =
      twice.pulls(0).SerializeAsString() + twice.pulls(0).SerializeAsString();
  std::string repeated = std::string("\x0a", 1) +
                         std::string(1, static_cast<char>(inner.size())) +
                         inner;
  EXPECT_EQ(manyError(doubled, {4}), "");
  EXPECT_NE(manyError(repeated, {4}).find("unexpected field"),
            std::string::npos);
  // A PullResponse whose rows are missing reads as no rows.
  grpc::ByteBuffer empty = chunked("", 1);
  std::vector<float> rows(4);
  Status s = PullResponseReader(empty).readResponse(v1::WIRE_F32,
                                                    {7, 2, 2, rows.data()});
  EXPECT_NE(s.message.find("0 bytes of rows of table 7 for 2 keys"),
            std::string::npos)
      << s.message;
  grpc::ByteBuffer none = chunked("", 1);
  EXPECT_TRUE(PullResponseReader(none)
                  .readResponse(v1::WIRE_F32, {7, 0, 2, nullptr})
                  .ok());
}

} // namespace
