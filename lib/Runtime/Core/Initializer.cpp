//===- Initializer.cpp - Initial values of parameters and table rows ------===//

#include "heterps/Runtime/Initializer.h"

#include "heterps/Runtime/Error.h"

#include <cmath>
#include <random>
#include <sstream>

using namespace heterps::runtime;

std::string
heterps::runtime::initializerError(const std::string &kind,
                                   const std::vector<double> &args) {
  size_t expected;
  if (kind == "constant")
    expected = 1;
  else if (kind == "uniform" || kind == "normal" || kind == "truncated_normal")
    expected = 2;
  else if (kind == "zeros" || kind == "ones" || kind == "xavier_uniform" ||
           kind == "xavier_normal" || kind == "kaiming_uniform" ||
           kind == "kaiming_normal")
    expected = 0;
  else
    return "unknown initializer '" + kind +
           "'; expected zeros, ones, constant, uniform, normal, "
           "truncated_normal, xavier_uniform, xavier_normal, "
           "kaiming_uniform or kaiming_normal";
  std::ostringstream err;
  if (args.size() != expected) {
    err << "initializer " << kind << " takes " << expected
        << " argument(s), got " << args.size();
    return err.str();
  }
  for (double a : args)
    if (!std::isfinite(a)) {
      err << "initializer " << kind << " has the argument " << a
          << "; expected finite numbers";
      return err.str();
    }
  if (kind == "uniform" && !(args[0] < args[1])) {
    err << "uniform initializer needs low < high, got (" << args[0] << ", "
        << args[1] << ")";
    return err.str();
  }
  if ((kind == "normal" || kind == "truncated_normal") && !(args[1] > 0)) {
    err << kind << " initializer needs a positive standard deviation, got "
        << args[1];
    return err.str();
  }
  return "";
}

void heterps::runtime::initializeTensor(Tensor &t, const std::string &kind,
                                        const std::vector<double> &args,
                                        uint64_t seed) {
  initializeValues(t.as<float>(), t.numElements(), t.shape(), kind, args, seed);
}

void heterps::runtime::initializeValues(float *p, int64_t n, const Shape &s,
                                        const std::string &kind,
                                        const std::vector<double> &args,
                                        uint64_t seed) {
  if (std::string error = initializerError(kind, args); !error.empty())
    fail(error);
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
  if (kind == "zeros") {
    std::fill(p, p + n, 0.0f);
  } else if (kind == "ones") {
    std::fill(p, p + n, 1.0f);
  } else if (kind == "constant") {
    std::fill(p, p + n, static_cast<float>(args[0]));
  } else if (kind == "uniform") {
    uniform(args[0], args[1]);
  } else if (kind == "normal") {
    normal(args[0], args[1], false);
  } else if (kind == "truncated_normal") {
    normal(args[0], args[1], true);
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
  }
}
