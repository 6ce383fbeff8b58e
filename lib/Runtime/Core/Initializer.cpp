//===- Initializer.cpp - Initial values of parameters and table rows ------===//

#include "heterps/Runtime/Initializer.h"

#include "heterps/Runtime/Error.h"

#include <cmath>
#include <random>

using namespace heterps::runtime;

void heterps::runtime::initializeTensor(Tensor &t, const std::string &kind,
                                        const std::vector<double> &args,
                                        uint64_t seed) {
  initializeValues(t.as<float>(), t.numElements(), t.shape(), kind, args, seed);
}

void heterps::runtime::initializeValues(float *p, int64_t n, const Shape &s,
                                        const std::string &kind,
                                        const std::vector<double> &args,
                                        uint64_t seed) {
  std::mt19937_64 rng(seed);
  // PyTorch's fans: dimension 1 is fan-in and 0 fan-out, times the size of
  // the remaining (receptive field) dimensions.
  double receptive =
      s.size() > 2
          ? static_cast<double>(numElements(Shape(s.begin() + 2, s.end())))
          : 1.0;
  double fanIn = s.size() >= 2 ? s[1] * receptive : (s.empty() ? 1 : s[0]);
  double fanOut = s.size() >= 2 ? s[0] * receptive : (s.empty() ? 1 : s[0]);
  auto uniform = [&](double lo, double hi) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<float>(d(rng));
  };
  auto normal = [&](double mean, double std, bool truncated) {
    std::normal_distribution<double> d(mean, std);
    for (int64_t i = 0; i < n; ++i) {
      double v = d(rng);
      while (truncated && std::abs(v - mean) > 2 * std)
        v = d(rng);
      p[i] = static_cast<float>(v);
    }
  };
  auto arg = [&](size_t i, double dflt) {
    return i < args.size() ? args[i] : dflt;
  };
  if (kind == "zeros") {
    std::fill(p, p + n, 0.0f);
  } else if (kind == "ones") {
    std::fill(p, p + n, 1.0f);
  } else if (kind == "constant") {
    std::fill(p, p + n, static_cast<float>(arg(0, 0)));
  } else if (kind == "uniform") {
    uniform(arg(0, 0), arg(1, 1));
  } else if (kind == "normal") {
    normal(arg(0, 0), arg(1, 1), false);
  } else if (kind == "truncated_normal") {
    normal(arg(0, 0), arg(1, 1), true);
  } else if (kind == "xavier_uniform") {
    double a = std::sqrt(6.0 / (fanIn + fanOut));
    uniform(-a, a);
  } else if (kind == "xavier_normal") {
    normal(0, std::sqrt(2.0 / (fanIn + fanOut)), false);
  } else if (kind == "kaiming_uniform") {
    double a = std::sqrt(6.0 / fanIn);
    uniform(-a, a);
  } else if (kind == "kaiming_normal") {
    normal(0, std::sqrt(2.0 / fanIn), false);
  } else {
    fail("unknown initializer '", kind, "'");
  }
}
