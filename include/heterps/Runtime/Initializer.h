//===- Initializer.h - Initial values of parameters and rows ----*- C++ -*-===//
//
// The #heterps.init kinds (zeros, ones, constant, uniform, normal, truncated
// normal, Xavier and Kaiming) as PyTorch's init functions draw them, for the
// dense parameters (ParamStore) and for the rows the PS creates.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_INITIALIZER_H
#define HETERPS_RUNTIME_INITIALIZER_H

#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace heterps::runtime {

/// What is wrong with an initializer spec as #heterps.init's verifier
/// checks it (kind, argument count, finite arguments, low < high, a
/// positive standard deviation); empty when it is valid.
std::string initializerError(const std::string &kind,
                             const std::vector<double> &args);
/// Fills `t` (f32) from an initializer spec (#heterps.init kinds); fans come
/// from the shape as PyTorch computes them.
void initializeTensor(Tensor &t, const std::string &kind,
                      const std::vector<double> &args, uint64_t seed);
/// Fills `n` floats at `p` as initializeTensor fills a tensor of shape
/// `fanShape` (which only sets the fans): a table row draws its values with
/// the fans of the whole table.
void initializeValues(float *p, int64_t n, const Shape &fanShape,
                      const std::string &kind, const std::vector<double> &args,
                      uint64_t seed);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_INITIALIZER_H
