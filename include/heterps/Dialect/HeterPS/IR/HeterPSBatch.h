//===- HeterPSBatch.h - Dynamic dimensions against the batch ----*- C++ -*-===//
//
// A HeterPS tensor has at most one dynamic dimension, and it holds the
// batch: the batch itself, or the batch merged with other dimensions by a
// reshape (multi-head attention's B*H, a flattened T*B). The importer uses
// these multiples to resolve Reshape targets computed from the batch; the
// cost model uses them to cost an op on B*H rows as H times one on B.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_DIALECT_HETERPS_IR_HETERPSBATCH_H
#define HETERPS_DIALECT_HETERPS_IR_HETERPSBATCH_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Region.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace heterps {

/// A run-time size as a fraction of the batch size B: num / den * B,
/// reduced; num = 0 when it is not known how the size relates to B.
struct BatchMultiple {
  int64_t num = 0, den = 1;

  static BatchMultiple batch() { return {1, 1}; }
  bool known() const { return num > 0; }
  bool operator==(const BatchMultiple &other) const {
    return num == other.num && den == other.den;
  }
  /// This multiple times n / d; unknown when this is, when n or d is not
  /// positive, or when the result does not fit 64 bits.
  BatchMultiple scaled(int64_t n, int64_t d) const;
  /// "4", or "3/2" for a part of the batch.
  std::string str() const;
};

/// The multiple of the dynamic dimension of `result`, one of `op`'s
/// results, given those of `op`'s operands: a reshape scales it by the
/// ratio of the static element counts; a concat along the dynamic
/// dimension makes it unknown; every other op keeps the multiple its
/// operands with a dynamic dimension agree on.
BatchMultiple
inferBatchMultiple(Operation *op, Value result,
                   llvm::function_ref<BatchMultiple(Value)> multipleOf);

/// The multiples of the values of a region (a model function's body): the
/// entry block's dynamic arguments are the batch.
class BatchMultiples {
public:
  explicit BatchMultiples(Region &region);

  BatchMultiple lookup(Value value) const { return multiples.lookup(value); }
  /// The size `op`'s dynamic dimensions have for a batch of `batchSize`:
  /// that of its first result with one (else operand), rounded, at least 1;
  /// `batchSize` when the multiple is not known.
  int64_t batchSizeOf(Operation *op, int64_t batchSize) const;

private:
  llvm::DenseMap<Value, BatchMultiple> multiples;
};

} // namespace heterps
} // namespace mlir

#endif // HETERPS_DIALECT_HETERPS_IR_HETERPSBATCH_H
