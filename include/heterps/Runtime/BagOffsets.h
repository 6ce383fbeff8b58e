//===- BagOffsets.h - Inputs of bags of different sizes ---------*- C++ -*-===//
//
// nn.EmbeddingBag with offsets feeds a model two inputs: the ids of all
// the batch's bags, concatenated (N of them), and where each bag starts (B
// offsets, one per example). The ids input's dimension 0 is therefore not
// the batch: the plan marks it (Value.bag_offsets), the executors split a
// batch into micro-batches by offset ranges, and the memory plans size its
// buffers for a capacity of ids instead of one plan per N.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_BAGOFFSETS_H
#define HETERPS_RUNTIME_BAGOFFSETS_H

#include "heterps/Runtime/Tensor.h"
#include "heterps/plan.pb.h"

#include <string>
#include <vector>

namespace heterps::runtime {

/// For each input position of `plan`, the position of the input that holds
/// the starts of its bags, or -1 for an input whose dimension 0 is the
/// batch. Throws when a mark names no input or a second-level bag input.
std::vector<int> bagOffsetsInputs(const plan::Plan &plan);

/// The starts of `offsets` (a 1-D integer tensor) as i64 in `starts`,
/// checked against the `rows` the bags cover: the first is 0 and none
/// decreases or lies beyond `rows`. Throws naming `what` and the entry.
void readBagOffsets(const Tensor &offsets, int64_t rows,
                    const std::string &what, std::vector<int64_t> &starts);

/// The rows a memory plan holds for `rows` ragged rows: a power of two, at
/// least 64, so that a few plans serve every step.
int64_t raggedCapacity(int64_t rows);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_BAGOFFSETS_H
