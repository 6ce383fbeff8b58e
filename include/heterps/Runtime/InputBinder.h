//===- InputBinder.h - Data batches as a plan's inputs ----------*- C++ -*-===//
//
// Which plan input each column of a data batch feeds: the float input gets
// the dense features, the integer inputs the sparse ids in order, the
// label input the labels. The data readers are configured from it (how
// many dense and sparse features, class or binary labels), and each batch
// is bound as views where the types agree.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_INPUTBINDER_H
#define HETERPS_RUNTIME_INPUTBINDER_H

#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/Program.h"

#include <utility>
#include <vector>

namespace heterps::runtime {

class InputBinder {
public:
  explicit InputBinder(const Program &program);

  /// Sets the feature counts and the label kind of a reader's options;
  /// throws when data files cannot feed the plan (two float inputs), as
  /// bind() does.
  void configure(DataOptions &data) const;
  /// The inputs of a step, by input position; valid until the next bind.
  std::vector<const Tensor *> bind(Batch &batch);

  bool hasLabel() const { return labelInput >= 0; }
  /// The label's input position, or -1.
  int labelIndex() const { return labelInput; }

private:
  const Program &program;
  /// Throws when the plan has a second float input or a bag input, which
  /// data files do not feed.
  void requireDataFileInputs() const;

  int denseInput = -1, labelInput = -1, secondFloatInput = -1, bagInput = -1;
  int64_t denseWidth = 0, sparseWidth = 0;
  bool classLabels = false;
  /// The plan's loss is bce: labels are probabilities.
  bool unitLabels = false;
  std::vector<std::pair<int, int64_t>> sparseInputs;
  std::vector<Tensor> tensors, views;
};

/// The plan's outputs that are not the loss: what inference computes.
std::vector<int> predictionOutputs(const Program &program);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_INPUTBINDER_H
