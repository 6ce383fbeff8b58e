//===- MicroBatches.h - How a batch splits into micro-batches ---*- C++ -*-===//
//
// The pipelined executor splits a batch into micro-batches of nearly equal
// rows, the first ones one row longer; the data lanes of a job read their
// rows by the same rule.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_MICROBATCHES_H
#define HETERPS_RUNTIME_MICROBATCHES_H

#include <algorithm>
#include <cstdint>

namespace heterps::runtime {

/// The micro-batches a batch of `rows` rows splits into when `count` are
/// asked for (never more than the rows).
inline int64_t microBatchCount(int64_t rows, int64_t count) {
  return std::min(count, rows);
}

/// The rows of micro-batch `m` of `microBatchCount(rows, count)`.
inline int64_t microBatchRows(int64_t rows, int64_t count, int64_t m) {
  int64_t n = microBatchCount(rows, count);
  return rows / n + (m < rows % n ? 1 : 0);
}

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_MICROBATCHES_H
