//===- Optimizer.h - Optimizer updates --------------------------*- C++ -*-===//
//
// The update rules of SGD, momentum, Adam and Adagrad, as PyTorch defines
// them (weight decay is L2 added to the gradient). Dense parameters and the
// rows of embedding tables share them; the state lives with the caller.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_OPTIMIZER_H
#define HETERPS_RUNTIME_OPTIMIZER_H

#include <cstdint>
#include <string>

namespace heterps::runtime {

struct OptimizerConfig {
  enum class Kind { SGD, Momentum, Adam, Adagrad };
  Kind kind = Kind::SGD;
  double learningRate = 0.01;
  double momentum = 0.0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double weightDecay = 0.0;

  /// Parses "sgd", "momentum", "adam", "adagrad"; throws naming `what`.
  static Kind parseKind(const std::string &kind, const std::string &what);
  /// The name parseKind() reads: "sgd", "momentum", "adam" or "adagrad".
  static const char *kindName(Kind kind);
  /// Slots of state per element: 0 (SGD), 1 (momentum, Adagrad), 2 (Adam).
  int stateSlots() const;
  /// What is wrong with the hyperparameters (a negative or non-finite
  /// learning rate, momentum outside [0, 1), Adam's betas outside (0, 1),
  /// a non-positive epsilon where it divides), or "" when nothing is.
  std::string problem() const;
};

/// Applies one update to `n` elements of `w` with gradient `g`. `state`
/// holds stateSlots() arrays of n floats, laid out one after the other;
/// `step` is the update count of these elements starting at 1 (Adam's bias
/// correction).
void applyUpdate(const OptimizerConfig &config, float *w, const float *g,
                 float *state, int64_t n, int64_t step);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_OPTIMIZER_H
