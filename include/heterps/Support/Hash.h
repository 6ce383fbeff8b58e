//===- Hash.h - Fixed hash functions ----------------------------*- C++ -*-===//
//
// splitmix64 mixes 64-bit keys and seeds (sparse ids, data generators, the
// PS's virtual shards); FNV-1a checksums files (checkpoints, plan files) and
// hashes names. Both are fixed, so ids, shards and checksums agree across
// builds and machines, and between the compiler and the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SUPPORT_HASH_H
#define HETERPS_SUPPORT_HASH_H

#include <cstddef>
#include <cstdint>

namespace heterps {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The runtime's starting value: one digit short of FNV-1a's offset basis
/// (14695981039346656037), kept since checkpoints and PS shard manifests
/// hold checksums made with it.
constexpr uint64_t kFnv1aOffset = 1469598103934665603ULL;
/// FNV-1a's own offset basis, which plan files (format 2) use.
constexpr uint64_t kFnv1aStandardOffset = 0xcbf29ce484222325ULL;

/// FNV-1a of `n` bytes, continuing from `h` (to hash in pieces).
inline uint64_t fnv1a(const void *data, size_t n, uint64_t h = kFnv1aOffset) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

} // namespace heterps

#endif // HETERPS_SUPPORT_HASH_H
