//===- Metrics.cpp - Loss, AUC and accuracy over a window -----------------===//

#include "heterps/Runtime/Metrics.h"

#include <algorithm>
#include <cstdio>

using namespace heterps;
using namespace heterps::runtime;

void Metrics::addLoss(double loss, int64_t n) {
  lossSum += loss * n;
  samples += n;
}

void Metrics::add(const Tensor &pred, const Tensor &label,
                  const std::vector<char> &present) {
  if (pred.dtype() != DType::F32)
    return;
  int64_t n = pred.rank() ? pred.dim(0) : 1;
  if (n == 0)
    return;
  int64_t width = pred.numElements() / n;
  const float *p = pred.as<float>();
  if (label.dtype() == DType::F32 && width == 1 && label.numElements() == n) {
    const float *y = label.as<float>();
    for (int64_t i = 0; i < n; ++i)
      if (present.empty() || present[i])
        scores.emplace_back(p[i], y[i]);
    return;
  }
  if (label.dtype() == DType::I64 && label.numElements() == n && width > 1) {
    const int64_t *y = label.as<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (!present.empty() && !present[i])
        continue;
      const float *row = p + i * width;
      int64_t best = std::max_element(row, row + width) - row;
      correct += best == y[i];
      ++counted;
    }
  }
}

void Metrics::reset() { *this = Metrics(); }

double Metrics::auc() const { return computeAUC(scores); }

double runtime::computeAUC(std::vector<std::pair<float, float>> s) {
  std::sort(s.begin(), s.end());
  double pos = 0, neg = 0, rankSum = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && s[j].first == s[i].first)
      ++j;
    double avgRank = (i + 1 + j) / 2.0;
    for (size_t k = i; k < j; ++k) {
      if (s[k].second > 0.5) {
        rankSum += avgRank;
        ++pos;
      } else {
        ++neg;
      }
    }
    i = j;
  }
  if (pos == 0 || neg == 0)
    return 0.5;
  return (rankSum - pos * (pos + 1) / 2) / (pos * neg);
}

std::string runtime::metricsText(const Metrics &m) {
  char buf[128];
  if (m.hasAUC())
    std::snprintf(buf, sizeof(buf), "auc %.4f", m.auc());
  else if (m.hasAccuracy())
    std::snprintf(buf, sizeof(buf), "accuracy %.4f", m.accuracy());
  else
    buf[0] = 0;
  return buf;
}
