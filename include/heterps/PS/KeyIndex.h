//===- KeyIndex.h - A flat hash map from keys to row slots ------*- C++ -*-===//
//
// The index of a virtual shard: uint64 key -> uint32 slot, open addressing
// with linear probing in two flat arrays (no node per key, as
// std::unordered_map has), growing at half load, and backward-shift
// deletion (no tombstones), so lookups of hot tables stay one or two cache
// lines.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PS_KEYINDEX_H
#define HETERPS_PS_KEYINDEX_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace heterps::ps {

class KeyIndex {
public:
  static constexpr uint32_t kNone = UINT32_MAX;

  /// The slot of `key`, or kNone.
  uint32_t find(uint64_t key) const {
    if (count == 0)
      return kNone;
    for (size_t i = home(key);; i = (i + 1) & mask) {
      if (slots[i] == kNone)
        return kNone;
      if (keys[i] == key)
        return slots[i];
    }
  }

  /// Maps an absent `key` to `slot` (not kNone).
  void insert(uint64_t key, uint32_t slot) {
    if (2 * (count + 1) > slots.size())
      grow();
    place(key, slot);
    ++count;
  }

  /// Removes `key`; returns whether it was there.
  bool erase(uint64_t key) {
    if (count == 0)
      return false;
    size_t i = home(key);
    for (;; i = (i + 1) & mask) {
      if (slots[i] == kNone)
        return false;
      if (keys[i] == key)
        break;
    }
    // Shift the following entries of the run back over the hole, keeping
    // every entry reachable from its home position.
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
      if (slots[j] == kNone)
        break;
      size_t h = home(keys[j]);
      // Move j to i unless its home lies cyclically in (i, j].
      bool between = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (!between) {
        keys[i] = keys[j];
        slots[i] = slots[j];
        i = j;
      }
    }
    slots[i] = kNone;
    --count;
    return true;
  }

  /// Starts loading the entries `key`'s lookup reads first, so that a
  /// batch of lookups keeps several cache misses in flight.
  /// Always inlined: GCC 12's IPA mod-ref analysis finds a function whose
  /// only effect is a prefetch free of side effects and deletes its calls.
  __attribute__((always_inline)) void prefetch(uint64_t key) const {
    // An empty index has mask 0 and null arrays, and a prefetch of null is
    // harmless; `& 63` keeps its shift of 64 defined.
    size_t i =
        static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> (shift & 63)) &
        mask;
    __builtin_prefetch(slots.data() + i);
    __builtin_prefetch(keys.data() + i);
  }

  size_t size() const { return count; }
  /// Bytes of the two arrays.
  size_t bytes() const {
    return keys.capacity() * sizeof(uint64_t) +
           slots.capacity() * sizeof(uint32_t);
  }

  /// Calls fn(key, slot) for every entry; the index must not change meanwhile.
  template <typename Fn> void forEach(Fn fn) const {
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i] != kNone)
        fn(keys[i], slots[i]);
  }

private:
  size_t home(uint64_t key) const {
    // Fibonacci hashing: the top bits of the product. Keys are already
    // spread over virtual shards by splitmix64; this mixes them again
    // independently of that.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift);
  }
  void place(uint64_t key, uint32_t slot) {
    size_t i = home(key);
    while (slots[i] != kNone)
      i = (i + 1) & mask;
    keys[i] = key;
    slots[i] = slot;
  }
  void grow() {
    std::vector<uint64_t> oldKeys;
    std::vector<uint32_t> oldSlots;
    oldKeys.swap(keys);
    oldSlots.swap(slots);
    size_t capacity = oldSlots.empty() ? 16 : 2 * oldSlots.size();
    keys.assign(capacity, 0);
    slots.assign(capacity, kNone);
    mask = capacity - 1;
    shift = 64;
    for (size_t c = capacity; c > 1; c >>= 1)
      --shift;
    for (size_t i = 0; i < oldSlots.size(); ++i)
      if (oldSlots[i] != kNone)
        place(oldKeys[i], oldSlots[i]);
  }

  std::vector<uint64_t> keys;
  std::vector<uint32_t> slots;
  size_t count = 0, mask = 0;
  int shift = 64;
};

} // namespace heterps::ps

#endif // HETERPS_PS_KEYINDEX_H
