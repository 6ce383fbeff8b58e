//===- RecurrentShape.h - Operands and sizes of recurrent ops ---*- C++ -*-===//
//
// heterps.rnn, gru and lstm and their gradients, as both columns read them:
// which operands are present (operandSegmentSizes), the attributes, and
// the operand shapes checked against them.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_RECURRENTSHAPE_H
#define HETERPS_LIB_RUNTIME_CPU_RECURRENTSHAPE_H

#include "../HostDevice.h"

#include "heterps/Runtime/Kernel.h"

#include <cstdint>
#include <vector>

namespace heterps::runtime::cpu {

enum class RecurrentCell { RNN, GRU, LSTM };

/// A layer's attributes and operand sizes: G = gates * H rows per
/// direction's weights.
struct RecurrentShape {
  RecurrentCell cell = RecurrentCell::RNN;
  int64_t gates = 1, hidden = 0, directions = 1;
  int64_t steps = 0, batch = 0, inputs = 0;
  bool linearBeforeReset = false, relu = false, reverseOnly = false;

  /// The attributes of `op`, checked (hidden_size, direction, activation).
  RecurrentShape(const OpInfo &op, RecurrentCell cell);

  HETERPS_HD int64_t rows() const { return gates * hidden; }
  HETERPS_HD bool reversed(int64_t d) const { return reverseOnly || d == 1; }
  Shape sequenceShape() const { return {steps, directions, batch, hidden}; }
  Shape stateShape() const { return {directions, batch, hidden}; }
};

/// Where each operand of a recurrent op is, from its segment sizes (-1: the
/// optional operand is absent). Operands 0..3 are x, w, r and the bias.
struct RecurrentOperandSlots {
  int lengths = -1, initialH = -1, initialC = -1, peepholes = -1;
  int yGrad = -1, yHGrad = -1, yCGrad = -1;
};

RecurrentOperandSlots readRecurrentOperands(const OpInfo &op,
                                            RecurrentCell cell, bool gradient);

/// Reads T, B and I from x and checks every operand's shape against them
/// and the attributes (for a gradient, the result gradients too).
void checkRecurrentOperands(const OpInfo &op, RecurrentShape &shape,
                            const std::vector<Shape> &in,
                            const RecurrentOperandSlots &o);

/// The results' shapes: y, the final state (and cell); for a gradient,
/// those of x, w, r, the bias, the initial state (and cell and peepholes).
std::vector<Shape> recurrentResultShapes(const RecurrentShape &shape,
                                         const std::vector<Shape> &in,
                                         bool gradient);

/// sequence_lens (i32 or i64, B values in 0..T) as i64 into `lengths`,
/// or T for every row when absent; throws naming the op and the row.
void readSequenceLengths(const OpInfo &op, const RecurrentShape &shape,
                         DType dtype, const void *values,
                         std::vector<int64_t> &lengths);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_RECURRENTSHAPE_H
