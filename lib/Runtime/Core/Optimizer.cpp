//===- Optimizer.cpp - Optimizer updates ----------------------------------===//

#include "heterps/Runtime/Optimizer.h"

#include "../OptimizerMath.h"

#include "heterps/Runtime/Error.h"

#include <cmath>
#include <sstream>

using namespace heterps::runtime;

OptimizerConfig::Kind OptimizerConfig::parseKind(const std::string &kind,
                                                 const std::string &what) {
  if (kind == "sgd" || kind.empty())
    return Kind::SGD;
  if (kind == "momentum")
    return Kind::Momentum;
  if (kind == "adam")
    return Kind::Adam;
  if (kind == "adagrad")
    return Kind::Adagrad;
  fail(what, ": unknown optimizer '", kind,
       "'; expected sgd, momentum, adam or adagrad");
}

const char *OptimizerConfig::kindName(Kind kind) {
  switch (kind) {
  case Kind::SGD:
    return "sgd";
  case Kind::Momentum:
    return "momentum";
  case Kind::Adam:
    return "adam";
  case Kind::Adagrad:
    return "adagrad";
  }
  return "sgd";
}

int OptimizerConfig::stateSlots() const {
  switch (kind) {
  case Kind::SGD:
    return 0;
  case Kind::Momentum:
  case Kind::Adagrad:
    return 1;
  case Kind::Adam:
    return 2;
  }
  return 0;
}

void heterps::runtime::applyUpdate(const OptimizerConfig &c, float *w,
                                   const float *g, float *state, int64_t n,
                                   int64_t step) {
  const UpdateCoefficients k = updateCoefficients(c, step);
  switch (c.kind) {
  case OptimizerConfig::Kind::SGD:
    for (int64_t i = 0; i < n; ++i)
      sgdElement(k, w[i], g[i]);
    return;
  case OptimizerConfig::Kind::Momentum:
    for (int64_t i = 0; i < n; ++i)
      momentumElement(k, w[i], g[i], state[i]);
    return;
  case OptimizerConfig::Kind::Adagrad:
    for (int64_t i = 0; i < n; ++i)
      adagradElement(k, w[i], g[i], state[i]);
    return;
  case OptimizerConfig::Kind::Adam: {
    float *m = state, *v = state + n;
    for (int64_t i = 0; i < n; ++i)
      adamElement(k, w[i], g[i], m[i], v[i]);
    return;
  }
  }
}

std::string OptimizerConfig::problem() const {
  std::ostringstream os;
  if (!std::isfinite(learningRate) || learningRate < 0)
    os << "learning rate must be finite and >= 0, got " << learningRate;
  else if (!std::isfinite(momentum) || momentum < 0 || momentum >= 1)
    os << "momentum must be in [0, 1), got " << momentum;
  else if (!std::isfinite(weightDecay) || weightDecay < 0)
    os << "weight decay must be finite and >= 0, got " << weightDecay;
  // The betas and epsilon matter to Adam (and epsilon to Adagrad): they
  // divide, so they must be positive and finite.
  else if (kind == Kind::Adam &&
           (!std::isfinite(beta1) || beta1 <= 0 || beta1 >= 1))
    os << "Adam's beta1 must be in (0, 1), got " << beta1;
  else if (kind == Kind::Adam &&
           (!std::isfinite(beta2) || beta2 <= 0 || beta2 >= 1))
    os << "Adam's beta2 must be in (0, 1), got " << beta2;
  else if ((kind == Kind::Adam || kind == Kind::Adagrad) &&
           (!std::isfinite(epsilon) || epsilon <= 0))
    os << "epsilon must be finite and > 0, got " << epsilon;
  return os.str();
}
