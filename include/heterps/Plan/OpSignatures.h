//===- OpSignatures.h - The ops a plan may hold -----------------*- C++ -*-===//
//
// Every op of the plan format with the operand and result counts the
// runtime's kernels rely on (the HeterPS dialect's ODS declares the same:
// the plan emitter verifies each plan it writes against this table).
// verifyPlan refuses an op that is not here or has other counts, so a
// kernel never indexes an operand that a corrupt plan left out, and an
// attribute the op does not have, so a misspelt one is not ignored.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLAN_OPSIGNATURES_H
#define HETERPS_PLAN_OPSIGNATURES_H

#include <string>
#include <string_view>
#include <vector>

namespace heterps::plan {

struct OpSignature {
  const char *name;
  /// Operands: at least minOperands, at most maxOperands (-1: any number,
  /// for variadic ops).
  int minOperands, maxOperands;
  int results;
  /// Bit i set: operand i is a float tensor, of the same float type as
  /// the op's other such operands (the kernels read them as one type).
  unsigned floatOperands;
  /// A character per result: its element type is operand '0'-'9''s, 'b'
  /// (bool), 'f' (f32: rows of an embedding table), 'l' (i64: indices), or
  /// '-' (not checked: the op's attributes say it). Kernels write results
  /// of these types, so a plan that declares another would have its
  /// buffers overrun.
  const char *resultTypes;
  /// A character per operand (the last repeats for further operands of a
  /// variadic op): its element type is operand '0'-'9''s, 'b' (bool), 'i'
  /// (an integer type: ids, labels, indices), or '-' (any). The kernels
  /// read such operands as one type.
  const char *operandTypes;
  /// The attributes the op may carry, space-separated: those the HeterPS
  /// dialect's ODS declares for it (operandSegmentSizes included; dropout
  /// also `dropout_id`, which the emitter writes for the discardable
  /// heterps.dropout_id). Every op may also carry `heterps.layer`. Kernels
  /// read attributes by name with defaults, so a misspelt one would
  /// otherwise be ignored.
  const char *attributes;
};

/// The signature of op `name` ("heterps.gemm"), or null when the plan
/// format has no such op.
const OpSignature *findOpSignature(const std::string &name);

/// The names of every op of the plan format, sorted.
std::vector<std::string> planOpNames();

/// Whether an op of `signature` may carry attribute `name`.
bool allowsAttribute(const OpSignature &signature, std::string_view name);

} // namespace heterps::plan

#endif // HETERPS_PLAN_OPSIGNATURES_H
