//===- RecurrentShape.cpp - The operands and sizes of recurrent ops -------===//

#include "RecurrentShape.h"

#include "heterps/Runtime/Error.h"

#include <algorithm>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

RecurrentShape::RecurrentShape(const OpInfo &op, RecurrentCell cell)
    : cell(cell), gates(cell == RecurrentCell::RNN   ? 1
                        : cell == RecurrentCell::GRU ? 3
                                                     : 4),
      hidden(op.getInt("hidden_size")),
      linearBeforeReset(op.getBool("linear_before_reset", false)) {
  std::string direction = op.getString("direction", "forward");
  if (direction == "bidirectional")
    directions = 2;
  else if (direction == "reverse")
    reverseOnly = true;
  else if (direction != "forward")
    fail(op.describe(), ": direction '", direction,
         "' is not forward, reverse or bidirectional");
  if (hidden <= 0)
    fail(op.describe(), ": hidden_size must be positive, got ", hidden);
  std::string activation = op.getString("activation", "tanh");
  if (activation != "tanh" && activation != "relu")
    fail(op.describe(), ": activation '", activation, "' is not tanh or relu");
  relu = activation == "relu";
}

RecurrentOperandSlots cpu::readRecurrentOperands(const OpInfo &op,
                                                 RecurrentCell cell,
                                                 bool gradient) {
  RecurrentOperandSlots o;
  int input = 0, weights = 0, recurrence = 0, bias = 0;
  std::vector<int *> slots{&input, &weights,   &recurrence,
                           &bias,  &o.lengths, &o.initialH};
  if (cell == RecurrentCell::LSTM) {
    slots.push_back(&o.initialC);
    slots.push_back(&o.peepholes);
  }
  if (gradient) {
    slots.push_back(&o.yGrad);
    slots.push_back(&o.yHGrad);
    if (cell == RecurrentCell::LSTM)
      slots.push_back(&o.yCGrad);
  }
  std::vector<int64_t> sizes = op.getInts("operandSegmentSizes");
  if (sizes.size() != slots.size())
    fail(op.describe(), ": operandSegmentSizes has ", sizes.size(),
         " entries, expected ", slots.size());
  int next = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (sizes[i] != 0 && sizes[i] != 1)
      fail(op.describe(), ": operandSegmentSizes[", i, "] is ", sizes[i],
           ", expected 0 or 1");
    if (i < 4 && sizes[i] != 1)
      fail(op.describe(), ": operand ", i, " is required");
    *slots[i] = sizes[i] ? next++ : -1;
  }
  if (static_cast<size_t>(next) != op.numInputs())
    fail(op.describe(), ": operandSegmentSizes count ", next,
         " operands, the op has ", op.numInputs());
  return o;
}

void cpu::checkRecurrentOperands(const OpInfo &op, RecurrentShape &s,
                                 const std::vector<Shape> &in,
                                 const RecurrentOperandSlots &o) {
  auto expect = [&](const Shape &actual, const Shape &expected,
                    const char *what) {
    if (actual != expected)
      fail(op.describe(), ": ", what, " has shape ", shapeString(actual),
           ", expected ", shapeString(expected));
  };
  const Shape &x = in[0];
  if (x.size() != 3)
    fail(op.describe(), ": input must be T x B x I, got ", shapeString(x));
  s.steps = x[0];
  s.batch = x[1];
  s.inputs = x[2];
  int64_t rows = s.rows();
  expect(in[1], {s.directions, rows, s.inputs}, "weights");
  expect(in[2], {s.directions, rows, s.hidden}, "recurrence");
  expect(in[3], {s.directions, 2 * rows}, "bias");
  if (o.lengths >= 0)
    expect(in[o.lengths], {s.batch}, "sequence_lens");
  for (int slot : {o.initialH, o.initialC})
    if (slot >= 0)
      expect(in[slot], s.stateShape(), "initial state");
  if (o.peepholes >= 0)
    expect(in[o.peepholes], {s.directions, 3 * s.hidden}, "peepholes");
  if (o.yGrad >= 0)
    expect(in[o.yGrad], s.sequenceShape(), "y_grad");
  for (int slot : {o.yHGrad, o.yCGrad})
    if (slot >= 0)
      expect(in[slot], s.stateShape(), "a final state gradient");
}

std::vector<Shape> cpu::recurrentResultShapes(const RecurrentShape &s,
                                              const std::vector<Shape> &in,
                                              bool gradient) {
  bool lstm = s.cell == RecurrentCell::LSTM;
  if (!gradient) {
    std::vector<Shape> out{s.sequenceShape(), s.stateShape()};
    if (lstm)
      out.push_back(s.stateShape());
    return out;
  }
  std::vector<Shape> out{in[0], in[1], in[2], in[3], s.stateShape()};
  if (lstm) {
    out.push_back(s.stateShape());
    out.push_back({s.directions, 3 * s.hidden});
  }
  return out;
}

void cpu::readSequenceLengths(const OpInfo &op, const RecurrentShape &s,
                              DType dtype, const void *values,
                              std::vector<int64_t> &lengths) {
  lengths.assign(s.batch, s.steps);
  if (!values)
    return;
  if (dtype != DType::I32 && dtype != DType::I64)
    fail(op.describe(), ": sequence_lens must be int32 or int64, got ",
         dtypeName(dtype));
  for (int64_t b = 0; b < s.batch; ++b) {
    int64_t len = dtype == DType::I32 ? static_cast<const int32_t *>(values)[b]
                                      : static_cast<const int64_t *>(values)[b];
    if (len < 0 || len > s.steps)
      fail(op.describe(), ": sequence_lens[", b, "] is ", len, ", expected 0..",
           s.steps);
    lengths[b] = len;
  }
}
